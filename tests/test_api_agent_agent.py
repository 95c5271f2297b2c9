"""APIAgent end to end against a scripted local chat server (no simulator)."""

import argparse
import base64
import io
import json
import time

import numpy as np
import pytest
from PIL import Image

from chat_server import Reply
from conftest import make_observation

from habitat_mosnav.agents.vlm import APIAgent, APIUnavailableError, UnparseableReplyError
from habitat_mosnav.api import Observation

KEY = "sk-secret-KEY-do-not-log-4242"


def make_obs(
    step=0, rgb=None, depth=True, prompt="Find two brown chairs. Send 6 at each, 0 when done."
):
    rgb = (
        rgb
        if rgb is not None
        else np.random.default_rng(step).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    )
    return make_observation(
        rgb=rgb,
        depth=np.full((24, 32, 1), 2.0, np.float32) if depth else None,
        goal_text="brown chairs",
        episode_id="q1-many-0",
        scene_id="SCENE",
        step_count=step,
        max_steps=50,
        task_prompt=prompt,
        extras={"episode_key": "val::SCENE::q1-many-0"},
    )


def make_agent(server, **kw):
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    agent = APIAgent("test-model", server.api_base, KEY, **kw)
    agent.reset()
    return agent


def _image(url):
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))


def test_request_carries_prompt_goal_image_and_settings(server):
    server.script("ACTION: 3")
    agent = make_agent(server, temperature=0.2, max_tokens=77, extra_body={"top_p": 0.5})
    obs = make_obs()
    assert agent.act(obs) == 3
    (req,) = server.chat_requests()
    body = req.json
    assert body["model"] == "test-model" and body["temperature"] == 0.2
    assert body["max_tokens"] == 77 and body["top_p"] == 0.5
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    user = req.texts()[1]
    assert "Find two brown chairs." in user and "ACTION: <number>" in user
    assert "no depth image" in user
    (url,) = req.image_urls()  # RGB only: --send-depth is off
    assert url.startswith("data:image/png;base64,")
    assert np.array_equal(_image(url), obs.rgb)


def test_send_depth_adds_a_second_image(server):
    agent = make_agent(server, send_depth=True)
    agent.act(make_obs())
    urls = server.chat_requests()[0].image_urls()
    assert len(urls) == 2 and _image(urls[1]).shape == (24, 32, 3)
    assert "depth view" in server.chat_requests()[0].texts()[1]


def _with_goal_image(obs, goal):
    return Observation(**{**obs.__dict__, "goal_image": goal, "goal_type": "image"})


GOAL = np.random.default_rng(99).integers(0, 256, (20, 16, 3), dtype=np.uint8)


def test_goal_image_is_sent_labelled_between_the_task_and_the_frame(server):
    """docs/EVALUATION.md §6's order over real HTTP: task text, goal image, current view,
    depth view, each image after a text part naming it."""
    agent = make_agent(server, send_depth=True)
    obs = _with_goal_image(make_obs(), GOAL)
    agent.act(obs)
    agent.act(_with_goal_image(make_obs(step=1), GOAL))
    first, second = server.chat_requests()
    user = first.json["messages"][1]["content"]
    assert [p["type"] for p in user] == ["text"] + ["text", "image_url"] * 3
    assert [p["text"] for p in user[1::2]] == ["Goal image:", "Current camera view:", "Depth view:"]
    assert "The first image is the goal image" in user[0]["text"]
    assert "The third image is the depth view" in user[0]["text"]
    goal_url, rgb_url, depth_url = first.image_urls()
    assert np.array_equal(_image(goal_url), GOAL) and np.array_equal(_image(rgb_url), obs.rgb)
    assert _image(depth_url).shape == (24, 32, 3)
    assert second.image_urls()[0] == goal_url  # the same goal at every step
    assert second.image_urls()[1] != rgb_url


def test_goal_image_without_depth_and_without_goal_image(server):
    agent = make_agent(server)
    agent.act(_with_goal_image(make_obs(), GOAL))
    agent.act(make_obs(step=1))  # no goal image: the request is as before, unlabelled
    with_goal, without = server.chat_requests()
    assert len(with_goal.image_urls()) == 2 and "No depth image is sent." in with_goal.texts()[1]
    assert [p["type"] for p in without.json["messages"][1]["content"]] == ["text", "image_url"]
    with pytest.raises(ValueError, match=r"observation\.goal_image: expected an \(H, W, 3\)"):
        agent.act(_with_goal_image(make_obs(step=2), np.zeros((4, 4), np.uint8)))


def test_prompt_log_keeps_goal_image_references_and_saves_it_once(server, tmp_path):
    agent = make_agent(server, log_images=True)
    log = tmp_path / "prompts.jsonl"
    agent.set_log_path(log)
    agent.act(_with_goal_image(make_obs(), GOAL))
    agent.act(_with_goal_image(make_obs(step=1), GOAL))
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [[im["role"] for im in line["images"]] for line in lines] == [["goal", "rgb"]] * 2
    parts = lines[0]["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "image_ref", "text", "image_ref"]
    assert "base64" not in log.read_text()
    saved = sorted(p.name for p in tmp_path.rglob("*.png"))
    assert saved == ["goal.png", "step_0001_rgb.png", "step_0002_rgb.png"]
    assert np.array_equal(np.asarray(Image.open(log.parent / lines[1]["images"][0]["path"])), GOAL)


def test_depth_in_metres_is_not_mistaken_for_normalised(server):
    agent = make_agent(server, send_depth=True, max_depth=10.0)
    obs = make_obs()
    close_wall = np.full((24, 32), 0.5, np.float32)  # 0.5 m everywhere, as the rollout sends it
    agent.act(
        Observation(
            **{
                **obs.__dict__,
                "depth": close_wall,
                "extras": {"episode_key": "k", "depth_units": "metres"},
            }
        )
    )
    pixel = _image(server.chat_requests()[0].image_urls()[1])[0, 0].astype(int)
    assert pixel[0] > 200 and pixel[1] > 180  # yellow-ish = near, not the teal of 0.5 "normalised"


def test_history_is_bounded_to_the_last_n_actions(server):
    server.script(*[f"ACTION: {a}" for a in (1, 2, 3, 1, 2, 3)])
    agent = make_agent(server, history_length=3)
    actions = [agent.act(make_obs(step=k)) for k in range(6)]
    assert actions == [1, 2, 3, 1, 2, 3]
    last = server.chat_requests()[-1].texts()[1]
    assert "- step 2:" not in last
    assert "- step 3: 3 TURN_RIGHT\n- step 4: 1 MOVE_FORWARD\n- step 5: 2 TURN_LEFT" in last
    agent.reset()  # a new episode starts with no history
    agent.act(make_obs())
    assert "Previous actions: none" in server.chat_requests()[-1].texts()[1]


def test_unparseable_reply_is_reasked_then_defaulted_and_counted(server):
    server.script("hmm", "still thinking", "no idea", "ACTION: 1")
    agent = make_agent(server, on_unparseable="retry", unparseable_retries=2, default_action=5)
    assert agent.act(make_obs()) == 5
    stats = agent.episode_stats()
    assert stats["unparseable_replies"] == 3 and stats["reasks"] == 2
    assert stats["defaulted_actions"] == 1 and stats["api_calls"] == 3 and stats["api_retries"] == 0
    reask = server.chat_requests()[1].json["messages"]
    assert reask[-2] == {"role": "assistant", "content": "hmm"}
    assert "could not be read as an action" in reask[-1]["content"]
    assert agent.act(make_obs(step=1)) == 1  # the next step parses normally
    assert (
        "- step 1: 5 LOOK_DOWN (default, reply unparseable)"
        in server.chat_requests()[-1].texts()[1]
    )


def test_reask_that_succeeds_is_not_a_default(server):
    server.script("I am unsure", "ACTION: 6")
    agent = make_agent(server)
    assert agent.act(make_obs()) == 6
    assert agent.episode_stats()["unparseable_replies"] == 1
    assert agent.episode_stats()["defaulted_actions"] == 0


def test_default_policy_uses_the_default_at_once(server):
    server.script("???", "ACTION: 1")
    agent = make_agent(server, on_unparseable="default", default_action=2)
    assert agent.act(make_obs()) == 2
    assert len(server.chat_requests()) == 1
    assert agent.episode_stats()["defaulted_actions"] == 1


def test_error_policy_raises(server):
    server.script("???")
    agent = make_agent(server, on_unparseable="error")
    with pytest.raises(UnparseableReplyError, match="no valid action"):
        agent.act(make_obs())


def test_stats_are_per_episode_and_count_transport_retries(server):
    server.script(Reply.status(500), "ACTION: 1", "walk forward", "ACTION: 1")
    agent = make_agent(server)
    agent.act(make_obs())
    agent.act(make_obs(step=1))  # "walk forward" names no action: re-asked
    stats = agent.episode_stats()
    assert (stats["api_calls"], stats["api_retries"], stats["unparseable_replies"]) == (4, 1, 1)
    assert (
        stats["prompt_tokens"] == 30 and stats["completion_tokens"] == 9
    )  # 3 completions x (10, 3)
    agent.reset()
    assert agent.episode_stats()["api_calls"] == 0
    assert agent.total_stats()["api_calls"] == 4


def test_server_down_raises_unavailable_within_the_bound(server, tmp_path):
    agent = make_agent(server, retries=2, timeout=1.0, log_path=tmp_path / "prompts.jsonl")
    agent.act(make_obs())
    server.stop()
    t0 = time.monotonic()
    with pytest.raises(APIUnavailableError, match="unavailable after 3 attempt"):
        agent.act(make_obs(step=1))
    assert time.monotonic() - t0 < 2.0
    assert agent.episode_stats()["api_calls"] == 4
    lines = [json.loads(x) for x in (tmp_path / "prompts.jsonl").read_text().splitlines()]
    assert lines[-1]["error"]["type"] == "APIUnavailableError" and lines[-1]["action"] is None


def test_prompt_log_has_one_line_per_step_and_never_the_key_or_pixels(
    server, tmp_path, monkeypatch
):
    monkeypatch.setenv("MOSNAV_TEST_KEY", KEY)
    args = argparse.Namespace(
        api_base=server.api_base,
        model="m",
        api_key_env="MOSNAV_TEST_KEY",
        env_file=str(tmp_path / "none.env"),
        api_backoff=0.01,
        send_depth=True,
        log_prompt_images=True,
    )
    agent = APIAgent.from_args(args)
    assert agent.client.has_key
    log = tmp_path / "out" / "prompts.jsonl"
    agent.set_log_path(log)
    server.script("ACTION: 2", "nonsense", "ACTION: 6")
    agent.reset()
    assert [agent.act(make_obs(step=0)), agent.act(make_obs(step=1))] == [2, 6]
    assert server.chat_requests()[0].headers["Authorization"] == f"Bearer {KEY}"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == 2
    first, second = lines
    assert first["step"] == 1 and first["reply"] == "ACTION: 2" and first["action"] == 2
    assert first["episode_key"] == "val::SCENE::q1-many-0"
    assert "Find two brown chairs." in first["messages"][1]["content"][0]["text"]
    assert [a["reply"] for a in second["attempts"]] == ["nonsense", "ACTION: 6"]
    sent = server.chat_requests()[0].image_urls()[0]
    assert (
        first["images"][0]["sha256"]
        == __import__("hashlib").sha256(base64.b64decode(sent.split(",", 1)[1])).hexdigest()
    )
    saved = log.parent / first["images"][0]["path"]
    assert np.array_equal(np.asarray(Image.open(saved)), _image(sent))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 5  # the log + 2 steps x (rgb, depth)
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in data, path
    assert "base64" not in log.read_text()


def test_cli_flags_parse_without_clashes(tmp_path, monkeypatch):
    parser = argparse.ArgumentParser()
    for flag in (
        "--agent",
        "--seed",
        "--max-steps",
        "--log-prompts",
        "--out",
        "--limit",
        "--config",
    ):
        parser.add_argument(flag)
    APIAgent.add_arguments(parser)
    (tmp_path / ".env").write_text(
        "OPENAI_API_KEY=from-dotenv\nOPENAI_BASE_URL=http://127.0.0.1:1/v1\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    args = parser.parse_args(
        [
            "--agent",
            "api",
            "--model",
            "m",
            "--default-action",
            "turn_right",
            "--history-length",
            "2",
            "--api-timeout",
            "7",
            "--on-unparseable",
            "default",
            "--api-extra-body",
            '{"top_k": 5}',
            "--image-size",
            "0",
        ]
    )
    agent = APIAgent.from_args(args)
    assert agent.client.url == "http://127.0.0.1:1/v1/chat/completions"  # from .env
    assert agent.client.has_key and "from-dotenv" not in repr(agent)
    assert (agent.default_action, agent.history_length, agent.client.timeout) == (3, 2, 7.0)
    assert agent.on_unparseable == "default" and agent.extra_body == {"top_k": 5}
    with pytest.raises(SystemExit):
        parser.parse_args(["--default-action", "7"])
    with pytest.raises(ValueError, match="--model"):
        APIAgent.from_args(parser.parse_args([]))
    with pytest.raises(ValueError, match="--api-extra-body"):
        APIAgent.from_args(parser.parse_args(["--model", "m", "--api-extra-body", "{bad"]))


def test_legacy_call_signature(server):
    server.script("ACTION: 4")
    agent = make_agent(server)
    assert agent.act(rgb=make_obs().rgb, depth=None, prompt="Find a sink.") == 4
    assert "Find a sink." in server.chat_requests()[0].texts()[1]


def test_missing_key_for_a_remote_server_is_warned(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    args = argparse.Namespace(
        model="m", api_base="https://example.invalid/v1", api_key_env="NO_SUCH_KEY_VAR"
    )
    agent = APIAgent.from_args(args)
    assert not agent.client.has_key
    assert "no API key in $NO_SUCH_KEY_VAR" in capsys.readouterr().err
    APIAgent.from_args(
        argparse.Namespace(
            model="m", api_base="http://127.0.0.1:1/v1", api_key_env="NO_SUCH_KEY_VAR"
        )
    )
    assert capsys.readouterr().err == ""  # a local server needs no key


def test_from_args_leaves_the_prompt_log_to_the_evaluator(server, tmp_path, monkeypatch, capsys):
    """One mechanism: ``--log-prompts`` reaches the agent only through ``set_log_path``
    (called by the evaluator with the rank directory), never from ``--output-dir`` here."""
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(
        api_base=server.api_base,
        model="m",
        log_prompts=True,
        output_dir=str(tmp_path / "out"),
        rank=0,
    )
    agent = APIAgent.from_args(args)
    assert agent.log_path is None and capsys.readouterr().err == ""
    server.script("ACTION: 1")
    agent.reset()
    assert agent.act(make_obs()) == 1
    assert not any(tmp_path.rglob("prompts.jsonl"))
