"""End to end on the bundled demo data (default config: MOS + MOC, CPU simulator).

- the privileged oracle solves every many/all episode (SR = 1, SPL-multi > 0.8);
- the random agent almost never succeeds;
- a run killed with SIGKILL and resumed holds each selected key once and the same summary
  metrics as an uninterrupted run with the same seed;
- 3 ranks + mosnav-aggregate give the same summary as 1 rank;
- the acceptance command through the installed console script.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import read_records, read_summary

import habitat_mosnav
from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.aggregate_cli import main as aggregate_main

DEMO = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo")

N = 6  # episodes of the resume / sharding tests
FAST = ["--max-steps", "40", "--space-coverage-samples", "20", "--no-progress"]
SLOW_AGENT = textwrap.dedent("""
    import time
    from habitat_mosnav.agents.random_agent import RandomAgent

    class SlowRandom(RandomAgent):
        '''RandomAgent that takes a little time per step, so a run can be killed mid-way.'''
        def act(self, observation):
            time.sleep(0.01)
            return super().act(observation)
""")


def slow_run_args(agent, out, *extra):
    """``mosnav-eval`` flags of the resume / sharding runs: N episodes, seed 7, into ``out``."""
    return [
        "--agent",
        agent,
        "--num-episodes",
        str(N),
        "--seed",
        "7",
        "--output-dir",
        out,
        *extra,
        *FAST,
    ]


def test_committed_demo_data_is_present():
    # The demo ships with the package (pyproject.toml package-data): missing files are a packaging
    # bug, so this fails rather than skipping the demo tests.
    scenes = sorted(os.listdir(os.path.join(DEMO, "scenes")))
    datasets = sorted(os.listdir(os.path.join(DEMO, "dataset_semantic")))
    scene_ids = [d.split("-", 1)[1] for d in scenes if "-" in d]
    assert scene_ids and set(scene_ids) <= set(datasets), (scenes, datasets)
    for sid in scene_ids:
        for name in ("goals.json", "queries.json", "episodes.json"):
            assert os.path.isfile(os.path.join(DEMO, "dataset_semantic", sid, name)), (sid, name)


@pytest.fixture(scope="module")
def slow_agent(tmp_path_factory):
    d = tmp_path_factory.mktemp("agents")
    (d / "slow_agent.py").write_text(SLOW_AGENT)
    return f"{d / 'slow_agent.py'}:SlowRandom"


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, slow_agent):
    out = str(tmp_path_factory.mktemp("full") / "run")
    assert main(slow_run_args(slow_agent, out)) == 0
    return out


@pytest.mark.slow
def test_oracle_solves_every_demo_episode(tmp_path, capsys):
    out = str(tmp_path / "oracle")
    assert main(["--agent", "oracle", "--output-dir", out, "--no-progress"]) == 0
    recs = read_records(out)
    assert recs and {r["episode"]["target_mode"] for r in recs} <= {"many", "all"}
    assert {r["episode"]["target_mode"] for r in recs} == {"many", "all"}
    for r in recs:
        assert r["status"] == "ok", r.get("error_message")
        assert r["metrics"]["success"] == 1.0, r["episode_key"]
        assert r["terminated_by"] == "finish" and r["metrics"]["fp"] == 0
    s = read_summary(out)
    assert s["status"] == "complete" and s["metrics"]["sr"] == 1.0
    assert s["metrics"]["f1"] == 1.0 and s["metrics"]["spl_multi"] > 0.8
    assert s["metrics"]["sr_mos"] == 1.0 and s["metrics"]["sr_moc"] == 1.0


@pytest.mark.slow
def test_random_agent_rarely_succeeds(tmp_path):
    out = str(tmp_path / "random")
    assert (
        main(
            [
                "--agent",
                "random",
                "--output-dir",
                out,
                "--max-steps",
                "100",
                "--space-coverage-samples",
                "0",
                "--no-progress",
            ]
        )
        == 0
    )
    s = read_summary(out)
    assert s["ok_episode_count"] >= 4
    assert s["metrics"]["sr"] <= 0.2


@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted(tmp_path, slow_agent, full_run):
    out = str(tmp_path / "killed")
    cmd = [sys.executable, "-m", "habitat_mosnav.eval", *slow_run_args(slow_agent, out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = os.path.join(out, "rank_00000", "episodes.jsonl")
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            if os.path.exists(jsonl) and open(jsonl).read().count("\n") >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = open(jsonl).read().count("\n")
    assert 2 <= lines < N
    assert not os.path.exists(os.path.join(out, "rank_00000", "done.json"))
    with open(jsonl, "a") as f:  # what a kill in the middle of a write leaves behind
        f.write('{"episode_key": "val::torn')
    assert main(slow_run_args(slow_agent, out, "--resume")) == 0

    keys = [r["episode_key"] for r in read_records(out)]
    full_keys = [r["episode_key"] for r in read_records(full_run)]
    assert len(keys) == len(set(keys)) == N and sorted(keys) == sorted(full_keys)
    resumed, full = read_summary(out), read_summary(full_run)
    assert resumed["status"] == "complete" and resumed["record_count"] == N
    assert resumed["metrics"] == full["metrics"]
    by_key = {r["episode_key"]: r for r in read_records(full_run)}
    for r in read_records(out):  # each episode replays identically
        assert r["action_trace"] == by_key[r["episode_key"]]["action_trace"]
        assert r["metrics"] == by_key[r["episode_key"]]["metrics"]


@pytest.mark.slow
def test_three_ranks_plus_aggregate_equal_one_rank(tmp_path, slow_agent, full_run, capsys):
    out = str(tmp_path / "ranks")
    for rank in range(3):
        assert main(slow_run_args(slow_agent, out, "--rank", str(rank), "--world-size", "3")) == 0
    os.remove(os.path.join(out, "summary.json"))  # written by the last rank; rebuild it
    assert aggregate_main([out]) == 0
    merged, full = read_summary(out), read_summary(full_run)
    assert merged["status"] == "complete" and merged["unique_record_count"] == N
    assert merged["metrics"] == full["metrics"]
    assert sorted(r["episode_key"] for r in read_records(out)) == sorted(
        r["episode_key"] for r in read_records(full_run)
    )


@pytest.mark.py39
@pytest.mark.slow
def test_acceptance_command_console_script(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "mosnav-eval")
    out = str(tmp_path / "x")
    res = subprocess.run(
        [
            exe,
            "--agent",
            "random",
            "--num-episodes",
            "6",
            "--output-dir",
            out,
            "--max-steps",
            "50",
            "--space-coverage-samples",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    s = read_summary(out)
    assert s["status"] == "complete" and s["record_count"] == 6
    assert "SR (many+all)" in res.stdout
    assert "mosnav-eval rank 0" in res.stderr and "SR=" in res.stderr  # tqdm bar on stderr


def test_python_api_evaluator_with_a_config(tmp_path):
    import habitat  # noqa: F401

    from habitat_mosnav import get_config
    from habitat_mosnav.agents.oracle import OracleAgent
    from habitat_mosnav.evaluation import Evaluator

    cfg = get_config(
        "benchmark/nav/mosnav/moc_demo.yaml", ["habitat.task.mosnav_space_coverage_samples=0"]
    )
    out = str(tmp_path / "api")
    summary = Evaluator(OracleAgent(), cfg, output_dir=out, num_episodes=2, progress=False).run()
    assert summary == read_summary(out)
    assert summary["status"] == "complete" and summary["metrics"]["num_episodes_all"] == 2
    assert summary["metrics"]["sr_moc"] == 1.0 and summary["metrics"]["num_episodes_many"] == 0
