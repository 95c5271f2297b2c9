"""``mosnav-eval --agent api`` end to end on the committed demo episodes against a local chat
server: a full run completes and writes ok records, a prompt log beside them, no key
anywhere. (A server killed mid-run, then ``--resume``: tests/test_api_agent_cli.py.)
"""

import json
import os

import pytest

from chat_server import ChatServer
from conftest import API_KEY as KEY
from conftest import api_agent_args, assert_key_nowhere, read_records, scripted_model

from habitat_mosnav.evaluation.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("api_key")]

N = 4
FAST = [
    "--max-steps",
    "30",
    "--space-coverage-samples",
    "20",
    "--no-progress",
    "--num-episodes",
    str(N),
    "--seed",
    "3",
]
# Replies in the formats a VLM produces; the step number comes from the prompt.
_CYCLE = [
    "ACTION: 1",
    '{"action": 1}',
    "I will turn left.\nACTION: 2",
    "move forward",
    "ACTION: 6",
    "ACTION: 3",
]
#: A deterministic 'model': cycles through actions and sends FINISH at the 8th action.
demo_model = scripted_model(lambda k: "ACTION: 0" if k >= 7 else _CYCLE[k % len(_CYCLE)])


def api_args(server, out, *extra):
    return api_agent_args(server, "--output-dir", out, "--log-prompts", *FAST, *extra)


def test_api_agent_completes_demo_episodes(tmp_path):
    out = str(tmp_path / "run")
    with ChatServer(default=demo_model) as server:
        assert main(api_args(server, out)) == 0
        requests = server.chat_requests()
    recs = read_records(out)
    assert len(recs) == N and all(r["status"] == "ok" for r in recs), [
        r.get("error_type") for r in recs
    ]
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


def test_api_agent_on_image_goals_sends_the_goal_before_each_frame(tmp_path):
    """mosnav-eval on image goals (habitat.dataset.goal_type=image): each request holds the episode's goal picture, then
    the current frame (docs/EVALUATION.md §6); the goal is the same all episode long, the
    frames are not; the records and summary are of goal type image."""
    import base64

    out = str(tmp_path / "run")
    with ChatServer(default=demo_model) as server:
        args = api_args(server, out, "--set", "habitat.dataset.goal_type=image")
        args[args.index("--num-episodes") + 1] = "2"
        assert main(args) == 0
        requests = server.chat_requests()
    recs = read_records(out)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert {r["episode"]["goal_type"] for r in recs} == {"image"}
    assert list(json.load(open(os.path.join(out, "summary.json")))["by_goal_type"]) == ["image"]
    assert len(requests) == 8 * 2
    for episode in (requests[:8], requests[8:]):
        labels = [[p["text"] for p in r.json["messages"][1]["content"][1::2]] for r in episode]
        assert labels == [["Goal image:", "Current camera view:"]] * 8
        goals = {r.image_urls()[0] for r in episode}
        frames = [r.image_urls()[1] for r in episode]
        assert len(goals) == 1 and goals.isdisjoint(frames)
        assert len(set(frames)) > 1  # the agent moved: the frames change, the goal does not
        assert "The first image is the goal image" in episode[0].texts()[1]
    picture = base64.b64decode(requests[0].image_urls()[0].split(",", 1)[1])
    assert picture[:8] == b"\x89PNG\r\n\x1a\n"
    log = [json.loads(x) for x in open(os.path.join(out, "rank_00000", "prompts.jsonl"))]
    assert [im["role"] for im in log[0]["images"]] == ["goal", "rgb"]
    assert "base64" not in open(os.path.join(out, "rank_00000", "prompts.jsonl")).read()
