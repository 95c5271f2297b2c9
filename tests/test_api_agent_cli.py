"""``mosnav-eval --agent api`` in process on a small open-room dataset (fast).

A scripted local chat server plays the model. Checks: records written, one prompt-log line
per step beside them, images and key in the requests only, the key in no output file; a
server killed mid-run gives an ``APIUnavailableError`` error record quickly, and ``--resume``
against a restarted server finishes the run.
"""

import json
import os
import threading
import time

import pytest

from chat_server import ChatServer, Reply
from conftest import API_KEY as KEY
from conftest import api_agent_args, assert_key_nowhere, room_args
from conftest import read_records as records
from conftest import scripted_model as model_answering

from habitat_mosnav.evaluation import cli as eval_cli

pytestmark = pytest.mark.usefixtures("api_key")

ACTIONS = [2, 1, 0]  # per episode: TURN_LEFT, MOVE_FORWARD, FINISH (0 ends every mode)
REPLIES = ["I see a wall.\nACTION: 2", '{"action": "move_forward"}', "ACTION: 0"]
#: Answers REPLIES[k] at step k (the step number stated in the prompt).
scripted_model = model_answering(lambda k: REPLIES[min(k, len(REPLIES) - 1)])


def argv(room, server, out, *extra):
    return room_args(
        room,
        "--target-modes",
        "many,all,single,any",
        "--max-steps",
        "10",
        *api_agent_args(server, "--output-dir", out, *extra),
    )


def test_api_agent_run_writes_records_and_prompt_log(open_room, tmp_path):
    out = str(tmp_path / "run")
    with ChatServer(default=scripted_model) as server:
        assert eval_cli.main(argv(open_room, server, out, "--log-prompts", "--send-depth")) == 0
        reqs = server.chat_requests()
    recs = records(out)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    assert all(r["action_trace"] == ACTIONS and r["terminated_by"] == "finish" for r in recs)
    assert len(reqs) == 4 * len(ACTIONS)
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in reqs)
    assert all(len(r.image_urls()) == 2 for r in reqs)  # RGB + depth
    assert "Find the chairs." in reqs[0].texts()[1]
    log = [json.loads(x) for x in open(os.path.join(out, "rank_00000", "prompts.jsonl"))]
    assert len(log) == 4 * len(ACTIONS)
    assert [x["action"] for x in log] == ACTIONS * 4
    assert [x["episode_key"] for x in log[::3]] == [r["episode_key"] for r in recs]
    assert [x["step"] for x in log[:3]] == [1, 2, 3]
    assert_key_nowhere(out)


def test_server_killed_mid_run_then_resume(open_room, tmp_path):
    out = str(tmp_path / "run")
    server = ChatServer().start()
    served = {"n": 0}

    def dying_model(payload):
        served["n"] += 1
        if served["n"] == len(ACTIONS) + 2:  # the 2nd action of the 2nd episode
            threading.Thread(target=server.stop, daemon=True).start()
        if served["n"] >= len(ACTIONS) + 2:
            return Reply.drop()
        return scripted_model(payload)

    server.default = dying_model
    t0 = time.monotonic()
    try:
        code = eval_cli.main(argv(open_room, server, out, "--fail-fast", "--log-prompts"))
    finally:
        server.stop()
    assert code == 1 and time.monotonic() - t0 < 60  # --fail-fast stopped the run: exit 1 (SPEC §8)
    recs = records(out)
    assert [r["status"] for r in recs] == ["ok", "error"]
    assert recs[1]["error_type"] == "APIUnavailableError" and recs[1]["steps_taken"] == 1
    assert json.load(open(os.path.join(out, "summary.json")))["status"] == "incomplete"
    log = [json.loads(x) for x in open(os.path.join(out, "rank_00000", "prompts.jsonl"))]
    assert log[-1]["error"]["type"] == "APIUnavailableError"
    first_key = recs[0]["episode_key"]

    with ChatServer(default=scripted_model) as server2:
        assert eval_cli.main(argv(open_room, server2, out, "--resume")) == 0
    recs2 = records(out)
    assert recs2[:2] == recs  # earlier records kept as they were
    keys = {r["episode_key"] for r in recs2}
    assert len(keys) == 4 and first_key in keys
    assert all(r["status"] == "ok" for r in recs2[2:])
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["unique_record_count"] == 4
    assert summary["status"] in ("complete", "completed_with_errors")
    assert_key_nowhere(out)


def test_server_down_error_records_then_resume_retry_errors(open_room, tmp_path):
    """The model server is down for the whole run (the circuit breaker off): every episode
    gets an error record with the agent's counters; after a restart ``--resume
    --retry-errors`` re-runs exactly those."""
    out = str(tmp_path / "run")
    with ChatServer(default=Reply.status(503, "model loading")) as server:
        assert (
            eval_cli.main(
                argv(open_room, server, out, "--log-prompts", "--max-unavailable-episodes", "0")
            )
            == 0
        )
    recs = records(out)
    assert [r["status"] for r in recs] == ["error"] * 4
    assert {r["error_type"] for r in recs} == {"APIUnavailableError"}
    # --api-retries 1: two HTTP requests per episode, the second one a retry.
    assert all(
        r["extras"]["agent"]["api_calls"] == 2 and r["extras"]["agent"]["api_retries"] == 1
        for r in recs
    )
    assert json.load(open(os.path.join(out, "summary.json")))["status"] == "completed_with_errors"

    with ChatServer(default=scripted_model) as server2:
        assert eval_cli.main(argv(open_room, server2, out, "--resume")) == 0  # errors count as done
        assert server2.chat_requests() == []
        assert (
            eval_cli.main(
                argv(open_room, server2, out, "--resume", "--retry-errors", "--log-prompts")
            )
            == 0
        )
        assert len(server2.chat_requests()) == 4 * len(ACTIONS)
    recs2 = records(out)
    assert recs2[:4] == recs
    assert [r["episode_key"] for r in recs2[4:]] == [r["episode_key"] for r in recs]
    assert all(r["status"] == "ok" and r["action_trace"] == ACTIONS for r in recs2[4:])
    assert all(
        r["extras"]["agent"]["api_calls"] == len(ACTIONS)
        and r["extras"]["agent"]["api_retries"] == 0
        for r in recs2[4:]
    )
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["status"] == "complete"
    assert (summary["record_count"], summary["unique_record_count"]) == (8, 4)
    log = [json.loads(x) for x in open(os.path.join(out, "rank_00000", "prompts.jsonl"))]
    assert len(log) == 4 + 4 * len(ACTIONS)  # one failed step per episode, then the re-runs
    assert [x["error"]["type"] for x in log[:4]] == ["APIUnavailableError"] * 4
    assert_key_nowhere(out)
