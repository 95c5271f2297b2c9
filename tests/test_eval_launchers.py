"""Ranks started by a launcher end with one summary over all of them (SPEC §8).

- torchrun with 2 ranks on the demo: ``summary.json`` covers both shards, written when the
  last rank finished;
- SLURM's variables (as ``srun`` sets them): rank 0 waits for rank 1 up to
  ``--rank-timeout``; when rank 1 never comes, one line names it and the summary says
  incomplete; when rank 1 finishes later, it rewrites the summary complete;
- the wait itself, on a fake clock.
"""

import json
import os
import subprocess
import sys

import habitat  # noqa: F401  (habitat's logger binds stderr here, not to a test's capsys)
import pytest

import habitat_mosnav
from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.ranks import missing_ranks, rank_timeout, wait_for_ranks
from habitat_mosnav.evaluation.rank_files import write_done
from conftest import read_records

# py39: torchrun of torch 2.8
pytestmark = pytest.mark.py39

REPO = os.path.dirname(os.path.dirname(os.path.abspath(habitat_mosnav.__file__)))
BIN = os.path.dirname(sys.executable)
FAST = ["--agent", "random", "--max-steps", "8", "--space-coverage-samples", "0", "--no-progress"]
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS")


def summary_of(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def _torchrun_eval(*args):
    """``torchrun --nproc_per_node 2 mosnav-eval FAST *args`` in a clean launcher
    environment, this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    return subprocess.run(
        [
            os.path.join(BIN, "torchrun"),
            "--standalone",
            "--nproc_per_node",
            "2",
            "--no-python",
            "mosnav-eval",
            *FAST,
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_torchrun_two_ranks_end_with_one_summary(tmp_path):
    out = str(tmp_path / "torchrun")
    proc = _torchrun_eval("--num-episodes", "3", "--output-dir", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    summary = summary_of(out)
    assert summary["status"] == "complete"
    assert (
        summary["expected_episode_count"],
        summary["unique_record_count"],
        summary["ok_episode_count"],
    ) == (3, 3, 3)
    by_rank = {r: read_records(out, r) for r in (0, 1)}
    assert [len(by_rank[0]), len(by_rank[1])] == [2, 1]  # stride sharding of 3 keys
    assert all(rec["rank"] == r for r, recs in by_rank.items() for rec in recs)
    assert sorted(rec["episode_index"] for recs in by_rank.values() for rec in recs) == [0, 1, 2]
    assert "status: complete" in proc.stdout  # the summary table, printed by the last rank


def _slurm(monkeypatch, rank, world):
    for name in LAUNCHER_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_PROCID", str(rank))
    monkeypatch.setenv("SLURM_NTASKS", str(world))


def test_slurm_rank_that_never_finishes_then_finishes(tmp_path, monkeypatch, capsys):
    out = str(tmp_path / "slurm")
    args = [*FAST, "--num-episodes", "2", "--output-dir", out, "--rank-timeout", "1.5"]
    _slurm(monkeypatch, 0, 2)
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "waiting up to 1.5 s for rank(s) 1 to finish" in captured.err
    lines = [ln for ln in captured.err.splitlines() if "did not finish" in ln]
    assert len(lines) == 1 and lines[0].startswith(
        "warning: rank(s) 1 of 2 did not finish within 1.5 s"
    )
    summary = summary_of(out)
    assert summary["status"] == "incomplete"
    assert (summary["expected_episode_count"], summary["unique_record_count"]) == (2, 1)

    _slurm(monkeypatch, 1, 2)  # rank 1 finishes later: it is the last, so it writes the summary
    assert main(args) == 0
    assert "status: complete" in capsys.readouterr().out
    summary = summary_of(out)
    assert summary["status"] == "complete"
    assert (summary["expected_episode_count"], summary["unique_record_count"]) == (2, 2)


def test_wait_for_ranks_polls_until_done_or_timeout(tmp_path):
    out = str(tmp_path)
    now = [0.0]
    slept = []

    def sleep(dt):
        slept.append(dt)
        now[0] += dt
        if now[0] >= 3.0:  # rank 1 finishes 3 s into the wait
            write_done(out, 1, expected_count=1, record_count=1, error_count=0)

    write_done(out, 0, expected_count=1, record_count=1, error_count=0)
    assert missing_ranks(out, 3) == [1, 2]
    lines = []
    missing = wait_for_ranks(
        out, 3, timeout=5.0, poll=1.0, log=lines.append, clock=lambda: now[0], sleep=sleep
    )
    assert missing == [2] and slept == [1.0] * 5 and len(lines) == 1
    write_done(out, 2, expected_count=1, record_count=1, error_count=0)
    assert wait_for_ranks(out, 3, timeout=5.0, clock=lambda: now[0], sleep=sleep) == []


def test_rank_0_gives_the_last_rank_time_to_write_the_summary(tmp_path):
    """Rank 0 stops waiting when the last done.json appears, but that rank writes
    summary.json only after summarising every record: rank 0 polls for a summary no older
    than every done.json (it printed a second summary when it looked too soon, under
    load), and gives up after the grace (that rank died while summarising)."""
    from habitat_mosnav.evaluation.ranks import summary_after_ranks, wait_for_summary
    from habitat_mosnav.evaluation.summary import SUMMARY_FILE

    out = str(tmp_path)
    now, slept = [0.0], []

    def sleep(dt):
        slept.append(dt)
        now[0] += dt
        if len(slept) == 3:  # the last rank's summary lands 0.6 s after its done.json
            with open(os.path.join(out, SUMMARY_FILE), "w") as fh:
                fh.write("{}")

    for r in (0, 1):
        write_done(out, r, expected_count=1, record_count=1, error_count=0)
    assert not summary_after_ranks(out, 2)
    assert wait_for_summary(out, 2, grace=10.0, poll=0.2, clock=lambda: now[0], sleep=sleep)
    assert slept == [0.2] * 3 and summary_after_ranks(out, 2)
    write_done(out, 1, expected_count=1, record_count=1, error_count=0)  # newer than the summary
    os.utime(os.path.join(out, SUMMARY_FILE), ns=(1, 1))
    slept.clear()
    assert not wait_for_summary(
        out,
        2,
        grace=1.0,
        poll=0.2,
        clock=lambda: now[0],
        sleep=lambda dt: (slept.append(dt), now.__setitem__(0, now[0] + dt)),
    )
    assert sum(slept) == pytest.approx(1.0)


def test_rank_timeout_defaults():
    assert rank_timeout(None, from_launcher=True) == 3600.0
    assert rank_timeout(None, from_launcher=False) == 0.0
    assert rank_timeout(2.5, from_launcher=False) == 2.5


@pytest.mark.slow
def test_torchrun_prints_the_summary_once_when_rank_0_waits(tmp_path):
    """Rank 0 finishes first and waits; rank 1 finishes last and writes the summary: the
    summary table is printed once (issue 24), rank 0 says where it is."""
    agent = tmp_path / "slow_rank1.py"
    agent.write_text(
        "import os, time\n\n"
        "class SlowOnRank1:\n"
        "    def act(self, observation):\n"
        "        if os.environ.get('RANK') == '1' and observation.step_count == 0:\n"
        "            time.sleep(4)\n"
        "        return 0\n"
    )
    out = str(tmp_path / "torchrun_wait")
    proc = _torchrun_eval(
        "--agent", f"{agent}:SlowOnRank1", "--num-episodes", "2", "--output-dir", out
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.count("status: complete") == 1, proc.stdout
    assert "rank 0: 1 records (0 errors)" in proc.stdout and "all ranks finished" in proc.stdout
    assert "Gym has been unmaintained" not in proc.stderr
