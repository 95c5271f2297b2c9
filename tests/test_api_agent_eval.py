"""``mosnav-eval --agent api`` end to end on the demo episodes against a local chat server.

- a full run completes and writes ok records, a prompt log beside them, no key anywhere;
- the server killed mid-run gives an ``APIUnavailableError`` error record (not a hang), and
  the run continues with ``--resume`` against a restarted server.
"""
import json
import os
import re
import threading
import time

import pytest

try:
    from chat_server import ChatServer, Reply
except ImportError:  # tests/ imported as a package
    from tests.chat_server import ChatServer, Reply

import habitat_mosnav  # noqa: E402

DEMO_DATA = os.path.join(os.path.dirname(os.path.abspath(habitat_mosnav.__file__)), "data", "demo",
                         "dataset_semantic")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.isdir(DEMO_DATA), reason=f"demo dataset not built yet ({DEMO_DATA})"),
]

KEY = "sk-e2e-secret-7f3a9c"
N = 4
FAST = ["--max-steps", "30", "--space-coverage-samples", "20", "--no-progress", "--num-episodes", str(N),
        "--seed", "3"]
# Replies in the formats a VLM produces; the step number comes from the prompt.
_CYCLE = ["ACTION: 1", '{"action": 1}', "I will turn left.\nACTION: 2", "move forward", "ACTION: 6", "ACTION: 3"]


def scripted_model(payload):
    """A deterministic 'model': cycles through actions and sends FINISH at the 8th action."""
    text = " ".join(p.get("text", "") for m in payload["messages"] if isinstance(m["content"], list)
                    for p in m["content"] if p.get("type") == "text")
    match = re.search(r"Actions taken so far: (\d+)", text)
    k = int(match.group(1)) if match else 0
    return Reply.text("ACTION: 0" if k >= 7 else _CYCLE[k % len(_CYCLE)])


def api_args(server, out, *extra):
    return ["--agent", "api", "--api-base", server.api_base, "--model", "m", "--api-backoff", "0.01",
            "--api-retries", "1", "--api-timeout", "10", "--output-dir", out, "--log-prompts", *FAST, *extra]


def read_records(out):
    with open(os.path.join(out, "rank_00000", "episodes.jsonl")) as f:
        return [json.loads(line) for line in f]


def assert_key_nowhere(root):
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                assert KEY.encode() not in f.read(), os.path.join(dirpath, name)


@pytest.fixture(autouse=True)
def api_key(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)  # no stray .env from the working directory


def main(argv):
    from habitat_mosnav.evaluation.cli import main as eval_main

    return eval_main(argv)


def test_api_agent_completes_demo_episodes(tmp_path):
    out = str(tmp_path / "run")
    with ChatServer(default=scripted_model) as server:
        assert main(api_args(server, out)) == 0
        requests = server.chat_requests()
    recs = read_records(out)
    assert len(recs) == N and all(r["status"] == "ok" for r in recs), [r.get("error_type") for r in recs]
    assert all(r["terminated_by"] == "finish" and r["steps_taken"] == 8 for r in recs)
    assert recs[0]["action_trace"] == [1, 1, 2, 1, 6, 3, 1, 0]
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["status"] == "complete" and summary["ok_episode_count"] == N
    assert len(requests) == 8 * N
    assert all(r.headers.get("Authorization") == f"Bearer {KEY}" for r in requests)
    assert all(len(r.image_urls()) == 1 for r in requests)
    log = [json.loads(x) for x in open(os.path.join(out, "rank_00000", "prompts.jsonl"))]
    assert len(log) == 8 * N
    assert [x["action"] for x in log[:8]] == [1, 1, 2, 1, 6, 3, 1, 0]
    assert log[0]["episode_key"] == recs[0]["episode_key"]
    assert_key_nowhere(out)


def test_server_killed_mid_run_gives_error_record_then_resume_finishes(tmp_path):
    out = str(tmp_path / "run")
    server = ChatServer(default=scripted_model).start()
    served = {"n": 0}

    def dying_model(payload):
        served["n"] += 1
        if served["n"] == 8 + 4:  # the 4th action of the 2nd episode: the server goes away
            threading.Thread(target=server.stop, daemon=True).start()
        if served["n"] >= 8 + 4:  # a request that races the shutdown is dropped too
            return Reply.drop()
        return scripted_model(payload)

    server.default = dying_model
    t0 = time.monotonic()
    try:
        code = main(api_args(server, out, "--fail-fast"))
    finally:
        server.stop()
    assert time.monotonic() - t0 < 120  # no hang on a dead server
    assert code == 0
    recs = read_records(out)
    assert [r["status"] for r in recs] == ["ok", "error"]
    assert recs[1]["error_type"] == "APIUnavailableError"
    assert json.load(open(os.path.join(out, "summary.json")))["status"] == "incomplete"
    first_key = recs[0]["episode_key"]

    with ChatServer(default=scripted_model) as server2:
        assert main(api_args(server2, out, "--resume")) == 0
    recs2 = read_records(out)
    assert recs2[:2] == recs  # earlier records kept as they were
    keys = {r["episode_key"] for r in recs2}
    assert len(keys) == N and first_key in keys
    assert all(r["status"] == "ok" for r in recs2[2:])
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["status"] in ("complete", "completed_with_errors")
    assert summary["unique_record_count"] == N
    assert_key_nowhere(out)
