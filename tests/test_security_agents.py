"""Nothing an agent does ends the run, loses records or changes the exit codes (issue #23):
huge integers in PolicyStep.info or episode_stats(), asyncio.CancelledError and
GeneratorExit from act() are error records (or a warning) and the run goes on; sys.exit()
in the agent's module is a one-line exit 2; os.chdir() in reset() does not move the
results; SIGTERM ignored at import still ends the run with 143; a non-daemon thread left
running does not hold the exit."""

import json
import os
import signal
import textwrap
import time

import pytest

from habitat_mosnav.evaluation.cli import main

from conftest import ALL_MODES, read_records, read_summary, spawn_eval
from mosnav_fixtures import EPISODE_KEYS, quick_eval_args

AGENTS = textwrap.dedent("""
    import asyncio, os, threading, time
    from habitat_mosnav.evaluation.policy import PolicyStep

    class HugeInfo:
        def act(self, obs):
            return PolicyStep(action=1, info={"n": 10 ** 5000})

    class HugeStats:
        def act(self, obs):
            return 2
        def episode_stats(self):
            return {"n": 10 ** 5000}

    class Cancelled:
        def act(self, obs):
            raise asyncio.CancelledError()

    class GenExit:
        def act(self, obs):
            raise GeneratorExit()

    class Wanders:
        def reset(self):
            os.makedirs("elsewhere", exist_ok=True)
            os.chdir("elsewhere")
        def act(self, obs):
            return 2

    class Slow:
        def act(self, obs):
            open(os.environ["MOSNAV_TEST_MARKER"], "w").close()
            time.sleep(0.05)
            return 2

    class LeavesAThread:
        def __init__(self):
            threading.Thread(target=time.sleep, args=(3600,), name="agent-worker").start()
        def act(self, obs):
            return 0
""")


@pytest.fixture
def agent_file(tmp_path):
    path = tmp_path / "hostile_agents.py"
    path.write_text(AGENTS)
    return path


def _run(capsys, open_room, out, agent, *extra):
    rc = main(
        quick_eval_args(
            *open_room,
            *ALL_MODES,
            "--max-steps",
            "3",
            "--agent",
            agent,
            "--output-dir",
            str(out),
            *extra,
        )
    )
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return rc, captured.err


@pytest.mark.parametrize(
    "cls, error_type",
    [("HugeInfo", "InvalidAction"), ("Cancelled", "CancelledError"), ("GenExit", "GeneratorExit")],
)
def test_agent_failures_of_any_kind_are_error_records(
    capsys, open_room, tmp_path, agent_file, cls, error_type
):
    out = tmp_path / "run"
    rc, err = _run(capsys, open_room, out, f"{agent_file}:{cls}")
    assert rc == 0, err
    records = read_records(out)
    assert sorted(r["episode_key"] for r in records) == EPISODE_KEYS
    assert {(r["status"], r["error_type"]) for r in records} == {("error", error_type)}
    assert read_summary(out)["error_episode_count"] == 4


def test_huge_episode_stats_cost_a_warning_not_the_record(capsys, open_room, tmp_path, agent_file):
    out = tmp_path / "run"
    rc, err = _run(capsys, open_room, out, f"{agent_file}:HugeStats")
    assert rc == 0, err
    records = read_records(out)
    assert len(records) == 4 and all(r["status"] == "ok" and "extras" not in r for r in records)
    assert "agent.episode_stats() left out of the record" in err and "too large" in err


@pytest.mark.parametrize("code", [0, 3])
def test_sys_exit_in_the_agent_module_is_exit_2(capsys, open_room, tmp_path, code):
    agent = tmp_path / "exits.py"
    agent.write_text(f"import sys\nsys.exit({code})\nclass A:\n    pass\n")
    out = tmp_path / "run"
    rc, err = _run(capsys, open_room, out, f"{agent}:A")
    lines = [line for line in err.splitlines() if line.startswith("mosnav-eval")]
    assert rc == 2 and len(lines) == 1 and f"SystemExit: {code}" in lines[0], err
    assert not out.exists()


def test_chdir_in_reset_does_not_move_the_results(
    capsys, open_room, tmp_path, agent_file, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    rc, err = _run(capsys, open_room, "run", f"{agent_file}:Wanders")
    assert rc == 0, err
    assert (tmp_path / "run" / "summary.json").exists()
    assert (tmp_path / "run" / "rank_00000" / "done.json").exists()
    assert read_summary(tmp_path / "run")["status"] == "complete"
    assert not any("run" in dirs for _, dirs, _ in os.walk(tmp_path / "elsewhere"))


@pytest.mark.slow
def test_sigterm_ignored_at_import_still_ends_the_run_with_143(open_room, tmp_path):
    agent = tmp_path / "ignores_sigterm.py"
    agent.write_text("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + AGENTS)
    marker = tmp_path / "acting"
    proc = spawn_eval(
        tmp_path,
        "--agent",
        f"{agent}:Slow",
        *quick_eval_args(*open_room, "--max-steps", "400"),
        "--output-dir",
        str(tmp_path / "run"),
        env={"MOSNAV_TEST_MARKER": str(marker)},
    )
    try:
        deadline = time.time() + 120
        while not marker.exists():
            assert proc.poll() is None and time.time() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "interrupted by SIGTERM" in err


@pytest.mark.slow
def test_a_lingering_agent_thread_does_not_hold_the_exit(open_room, tmp_path, agent_file):
    out = tmp_path / "run"
    proc = spawn_eval(
        tmp_path,
        "--agent",
        f"{agent_file}:LeavesAThread",
        *quick_eval_args(*open_room, "--max-steps", "3"),
        "--output-dir",
        str(out),
    )
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert json.loads((out / "summary.json").read_text())["status"] == "complete"
    assert "1 thread(s) started during the run are still running (agent-worker)" in err
