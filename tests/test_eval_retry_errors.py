"""``mosnav-eval`` loose ends between the CLI and agents (fast, small open room, no sensors):

- ``--resume --retry-errors`` re-runs exactly the keys whose last record is an error;
- an agent's ``episode_stats()`` lands in every record as ``extras.agent`` (JSON-safe);
- ``--log-prompts`` hands an agent with ``set_log_path`` ``<out>/rank_XXXXX/prompts.jsonl``
  (also with the default output directory) and prints the task prompt for other agents.
"""

import glob
import json
import os
import textwrap

import pytest

from habitat_mosnav.evaluation.cli import main

from conftest import NO_IMAGES, room_args
from conftest import read_records as records
from mosnav_fixtures import EPISODE_KEYS

# An agent that fails the episodes named in the file $FLAKY_FAIL (as a model server that
# is down would), counts its calls and keeps its own prompt log when asked to.
FLAKY = textwrap.dedent("""
    import os
    import numpy as np

    class Flaky:
        def __init__(self):
            self.calls = 0
            self.log_path = None

        def set_log_path(self, path):
            self.log_path = path

        def reset(self):
            self.calls = 0

        def episode_stats(self):
            return {"calls": np.int64(self.calls), "latency_s": np.float32(0.5),
                    "ratio": float("nan"), "tags": ("a", "b")}

        def act(self, obs):
            self.calls += 1
            if self.log_path is not None:
                with open(self.log_path, "a") as f:
                    f.write(obs.episode_id + "\\n")
            flag = os.environ.get("FLAKY_FAIL", "")
            if flag and os.path.exists(flag) and obs.episode_id in open(flag).read().split():
                raise ConnectionError("model server at http://127.0.0.1:9/v1 is down")
            return 2 if self.calls == 1 else 0  # turn left, then FINISH

    class Plain:
        def act(self, obs):
            return 0
""")
KEYS = EPISODE_KEYS


@pytest.fixture
def agent_file(tmp_path):
    path = tmp_path / "flaky_agent.py"
    path.write_text(FLAKY)
    return path


def argv(room, agent, *extra):
    return room_args(
        room, *NO_IMAGES, "--target-modes", "many,all,single,any", "--agent", agent, *extra
    )


def test_retry_errors_reruns_only_failed_keys(open_room, agent_file, tmp_path, monkeypatch, capsys):
    flag = tmp_path / "down.txt"
    flag.write_text("q0-many-0 q2-single-0")
    monkeypatch.setenv("FLAKY_FAIL", str(flag))
    out = str(tmp_path / "run")
    base = argv(open_room, f"{agent_file}:Flaky", "--output-dir", out)

    assert main(base) == 0
    first = records(out)
    assert [r["episode_key"] for r in first] == KEYS
    assert [r["status"] for r in first] == ["ok", "error", "ok", "error"]
    assert first[1]["error_type"] == "ConnectionError" and "127.0.0.1" not in json.dumps(first)
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert (summary["status"], summary["error_episode_count"]) == ("completed_with_errors", 2)

    # --retry-errors is meaningless without --resume: a usage error, nothing written.
    capsys.readouterr()
    assert main(base + ["--retry-errors"]) == 2
    assert "--retry-errors needs --resume" in capsys.readouterr().err
    # Plain --resume: error records count as recorded, nothing runs again.
    flag.write_text("")  # the server is back
    assert main(base + ["--resume"]) == 0
    assert records(out) == first

    assert main(base + ["--resume", "--retry-errors"]) == 0
    recs = records(out)
    assert recs[:4] == first  # earlier lines untouched
    assert [(r["episode_key"], r["status"]) for r in recs[4:]] == [(KEYS[1], "ok"), (KEYS[3], "ok")]
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["status"] == "complete"
    assert (summary["record_count"], summary["unique_record_count"]) == (6, 4)
    assert (summary["ok_episode_count"], summary["error_episode_count"]) == (4, 0)
    done = json.load(open(os.path.join(out, "rank_00000", "done.json")))
    assert (done["status"], done["record_count"], done["error_count"]) == ("complete", 6, 0)

    # Nothing failed any more: a second retry runs nothing.
    assert main(base + ["--resume", "--retry-errors"]) == 0
    assert len(records(out)) == 6


def test_episode_stats_land_in_ok_and_error_records(open_room, agent_file, tmp_path, monkeypatch):
    flag = tmp_path / "down.txt"
    flag.write_text("q0-many-0")
    monkeypatch.setenv("FLAKY_FAIL", str(flag))
    out = str(tmp_path / "run")
    assert (
        main(argv(open_room, f"{agent_file}:Flaky", "--output-dir", out, "--num-episodes", "2"))
        == 0
    )
    ok, err = records(out)
    assert ok["status"] == "ok" and err["status"] == "error"
    # numpy scalars become plain numbers, NaN becomes null, tuples lists.
    assert ok["extras"] == {
        "agent": {"calls": 2, "latency_s": 0.5, "ratio": None, "tags": ["a", "b"]}
    }
    assert err["extras"]["agent"]["calls"] == 1  # it failed on its first act()
    # An agent without episode_stats gets no extras at all.
    out2 = str(tmp_path / "plain")
    assert (
        main(argv(open_room, f"{agent_file}:Plain", "--output-dir", out2, "--num-episodes", "1"))
        == 0
    )
    assert "extras" not in records(out2)[0]


def test_log_prompts_gives_agents_the_rank_directory(
    open_room, agent_file, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the default output directory goes under ./mosnav_results
    monkeypatch.delenv("FLAKY_FAIL", raising=False)
    assert main(argv(open_room, f"{agent_file}:Flaky", "--num-episodes", "2", "--log-prompts")) == 0
    (run,) = glob.glob(str(tmp_path / "mosnav_results" / "Flaky-*"))
    log = os.path.join(run, "rank_00000", "prompts.jsonl")
    assert open(log).read().split() == ["q0-all-0", "q0-all-0", "q0-many-0", "q0-many-0"]
    err = capsys.readouterr().err
    assert "--- prompt for" not in err  # the agent keeps its own log: nothing printed

    out = str(tmp_path / "plain")
    assert (
        main(
            argv(
                open_room,
                f"{agent_file}:Plain",
                "--num-episodes",
                "1",
                "--output-dir",
                out,
                "--log-prompts",
            )
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "--- prompt for val::testScene01::q0-all-0 ---" in err and "Find the chairs." in err
    assert not os.path.exists(os.path.join(out, "rank_00000", "prompts.jsonl"))


def test_python_api_exports_and_retry_errors_needs_resume(tmp_path):
    import habitat_mosnav.evaluation as evaluation
    from habitat_mosnav.evaluation import evaluator

    assert evaluation.Evaluator is evaluator.Evaluator
    assert evaluation.EvaluationConfig is evaluator.EvaluationConfig
    assert evaluation.EvaluationSetupError is evaluator.EvaluationSetupError
    cfg = evaluation.EvaluationConfig(output_dir=str(tmp_path / "x"), retry_errors=True)
    with pytest.raises(evaluation.EvaluationSetupError, match="needs resume"):
        evaluation.Evaluator(object(), env=object(), config=cfg)
