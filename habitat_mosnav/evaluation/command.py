"""What ``mosnav-eval`` and ``mosnav-replay`` share as commands: the one-line usage error
(exit 2), the parser that raises it, the flags both take, the rank and world size, and
:func:`run_command`, the loop that turns errors and signals into one stderr line and the
exit status (SPEC §8)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Callable, Optional, Tuple

from habitat_mosnav.evaluation import interrupts
from habitat_mosnav.evaluation.durable import ResultWriteError
from habitat_mosnav.safety import safe_line


class UsageError(Exception):
    """A problem with the command line or its inputs: one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit code 2."""

    def error(self, message):  # noqa: D401
        raise UsageError(f"{message} (see {self.prog} --help)")


def _key_value(text: str) -> str:
    if text.startswith("~") and len(text) > 1:
        return text  # Hydra deletion: ~KEY
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE (or ~KEY to delete), got {text!r}")
    return text


#: argparse's keywords of ``--set KEY=VALUE`` (Hydra syntax, repeatable) of mosnav-eval,
#: mosnav-replay and the maps (mosnav-report --maps).
SET_FLAG = dict(dest="overrides", action="append", type=_key_value, default=[], metavar="KEY=VALUE")
#: argparse's keywords of ``--save-video [mp4|gif]`` of both commands.
SAVE_VIDEO_FLAG = {"nargs": "?", "const": "mp4", "choices": ("mp4", "gif")}


def rank_world(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    """(rank, world size): the flags where given, else the launcher's variables
    (torchrun's RANK/WORLD_SIZE, SLURM's), else (0, 1)."""
    from habitat_mosnav.evaluation.selection import launcher_rank_world

    try:
        return launcher_rank_world(None, rank, world_size)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_command(prog: str, run: Callable[[dict], int]) -> int:
    """``run(ctx)``'s status, never an exception for bad input, a full disk or a signal:
    UsageError is one ``PROG: error:`` line and 2, ResultWriteError one line and 3;
    SIGINT/SIGTERM are noted while it runs (:func:`interrupts.guarded`) and end it with
    130/143 and the line of :func:`interrupts.say_interrupted` with ``ctx["kept"]`` (what
    ``run`` set once it wrote something; none: "nothing was written"). The package's
    warnings are one ``warning: ...`` line each on stderr meanwhile."""
    ctx: dict = {}
    warnings_out = logging.StreamHandler(sys.stderr)
    warnings_out.setLevel(logging.WARNING)
    warnings_out.setFormatter(logging.Formatter("warning: %(message)s"))
    package_log = logging.getLogger("habitat_mosnav")
    package_log.addHandler(warnings_out)
    try:
        with interrupts.guarded((signal.SIGINT, signal.SIGTERM)):
            try:
                code = run(ctx)
            except UsageError as exc:
                error, code = exc, 2
            except ResultWriteError as exc:  # a full disk, a planted link
                error, code = exc, 3
            else:
                error = None
            interrupts.check()  # a signal noted meanwhile wins over that line and status
            if error is not None:
                print(safe_line(f"{prog}: error: {error}"), file=sys.stderr)
    except KeyboardInterrupt as exc:
        code = interrupts.say_interrupted(prog, exc, ctx.get("kept"))
    finally:
        package_log.removeHandler(warnings_out)
    return code
