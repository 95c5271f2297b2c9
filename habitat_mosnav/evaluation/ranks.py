"""How the ranks of one launch meet at the end (SPEC §8), through the output directory only.

torchrun (``RANK``/``WORLD_SIZE``) and SLURM (``SLURM_PROCID``/``SLURM_NTASKS``) start the
ranks; nothing else connects them. Each rank writes ``rank_XXXXX/done.json`` atomically
when its shard is finished, then looks for the others' done.json: the last rank to finish
finds them all and writes ``summary.json``. Rank 0 additionally waits (polling, up to a
timeout) for the others, so the process that reports the run ends with the summary over all
ranks even when the file system shows another rank's done.json late (NFS), and says which
rank never finished. Standard library only.
"""

from __future__ import annotations

import os
import time
from typing import Callable, List, Optional

from habitat_mosnav.evaluation.rank_files import DONE_FILE, rank_dir
from habitat_mosnav.evaluation.summary import SUMMARY_FILE

__all__ = [
    "LAUNCHER_RANK_TIMEOUT",
    "SUMMARY_GRACE",
    "missing_ranks",
    "rank_timeout",
    "summary_after_ranks",
    "wait_for_ranks",
    "wait_for_summary",
]

#: Seconds rank 0 waits for the other ranks when a launcher (torchrun, SLURM) started them.
LAUNCHER_RANK_TIMEOUT = 3600.0
#: Seconds rank 0, having waited, gives the last rank to write summary.json after its
#: done.json appeared (it summarises all records first) before writing it itself.
SUMMARY_GRACE = 60.0


def rank_timeout(timeout: Optional[float], from_launcher: bool) -> float:
    """How long rank 0 waits: ``timeout`` when given; else :data:`LAUNCHER_RANK_TIMEOUT`
    when rank/world size came from the launcher's variables (the ranks run at the same
    time), and 0 for ranks given by hand (they may run one after the other)."""
    if timeout is not None:
        return float(timeout)
    return LAUNCHER_RANK_TIMEOUT if from_launcher else 0.0


def missing_ranks(out_dir: str, world_size: int) -> List[int]:
    """The ranks of ``0..world_size-1`` without a done.json in ``out_dir``."""
    return [
        r
        for r in range(int(world_size))
        if not os.path.exists(os.path.join(rank_dir(out_dir, r), DONE_FILE))
    ]


def wait_for_ranks(
    out_dir: str,
    world_size: int,
    timeout: float,
    poll: float = 1.0,
    log: Optional[Callable[[str], None]] = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> List[int]:
    """Poll until every rank has a done.json or ``timeout`` seconds passed; returns the
    ranks still missing (empty: all finished). ``log`` gets one line when waiting starts."""
    missing = missing_ranks(out_dir, world_size)
    if not missing or timeout <= 0:
        return missing
    if log is not None:
        log(
            f"waiting up to {timeout:g} s for rank(s) {_ranks_text(missing)} to finish "
            f"(their {DONE_FILE} in {out_dir})"
        )
    deadline = clock() + float(timeout)
    while missing:
        left = deadline - clock()
        if left <= 0:
            break
        sleep(min(float(poll), left))
        missing = missing_ranks(out_dir, world_size)
    return missing


def summary_after_ranks(out_dir: str, world_size: int) -> bool:
    """summary.json exists and is no older than every rank's done.json."""
    try:
        written = os.stat(os.path.join(out_dir, SUMMARY_FILE)).st_mtime_ns
        return all(
            os.stat(os.path.join(rank_dir(out_dir, r), DONE_FILE)).st_mtime_ns <= written
            for r in range(int(world_size))
        )
    except OSError:
        return False


def wait_for_summary(
    out_dir: str,
    world_size: int,
    grace: float = SUMMARY_GRACE,
    poll: float = 0.2,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Poll up to ``grace`` seconds for the summary the last rank writes after its
    done.json (:func:`summary_after_ranks`); False when it did not come (that rank died
    while summarising: the caller writes it)."""
    deadline = clock() + float(grace)
    while not summary_after_ranks(out_dir, world_size):
        left = deadline - clock()
        if left <= 0:
            return False
        sleep(min(float(poll), left))
    return True


def _ranks_text(ranks: List[int]) -> str:
    return ", ".join(str(r) for r in ranks)
