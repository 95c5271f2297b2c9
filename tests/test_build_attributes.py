"""Dataset building, ``attributes``: a real HTTP round trip to a local server that speaks
the OpenAI chat-completions protocol, with malformed replies, a 500 and a bad key."""

import base64
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from chat_server import ChatServer, Reply
from conftest import clear_chat_env
from habitat_mosnav.dataset_building.attributes import cache_path, online_attributes
from habitat_mosnav.dataset_building.common import BuildError
from habitat_mosnav.dataset_building.llm import (
    ApiAuthError,
    ApiSettings,
    MalformedReply,
    StageClient,
    parse_attribute_reply,
)

KEY = "sk-test-SECRET-4f9a1c"


EMPTY_ATTRIBUTES = '{"color": [], "material": [], "feature": []}'


def build_server(script=(), default=EMPTY_ATTRIBUTES):
    """The shared local chat server, scripted with ``(status, content)`` pairs: 200 sends
    ``content`` as the assistant message, another status an error body."""

    def reply(status, content):
        return (
            Reply.text(content)
            if status == 200
            else Reply.status(status, content or "server error")
        )

    server = ChatServer(
        default=Reply.text(default) if isinstance(default, str) else reply(*default)
    )
    server.script(*(reply(*item) for item in script))
    return server


def _settings(base_url, **kw):
    s = ApiSettings(
        base_url=base_url,
        api_key=KEY,
        vlm_model="test-vlm",
        llm_model="test-llm",
        timeout_s=10,
        max_retries=2,
        backoff_s=0.01,
    )
    for k, v in kw.items():
        setattr(s, k, v)
    return s


class StubGeometry:
    """Renders a flat image whose central square is the object ``position[0]`` (the test
    puts each goal's id there), so no simulator is needed."""

    def rgb_semantic(self, position, rotation):
        rgb = np.full((64, 64, 3), 90, np.uint8)
        sem = np.zeros((64, 64), np.int32)
        sem[20:40, 24:44] = int(position[0])
        rgb[20:40, 24:44] = (150, 90, 40)
        return rgb, sem

    def close(self):
        pass


def _goal(oid):
    return {
        "object_id": oid,
        "category": "chair",
        "view_points": [{"position": [oid, 0, 0], "rotation": [0, 0, 0, 1], "iou": 0.5}] * 2,
        "attributes": {"color": [], "material": [], "feature": []},
        "caption": "",
    }


GOOD = '```json\n{"color": ["Brown"], "material": ["timber"], "feature": ["armrest"], "caption": "a chair"}\n```'


def _all_text(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_attributes_round_trip_malformed_500_and_resume(tmp_path):
    script = [
        (200, "I think it is a brown chair."),  # goal 7: malformed, then fine
        (200, GOOD),
        (500, "overloaded"),  # goal 8: server error, then fine
        (200, GOOD),
        (200, '{"color": "red"}'),  # goal 9: malformed three times -> failed
        (200, "not json"),
        (200, '{"color": 3, "material": [], "feature": []}'),
    ]
    goals = [_goal(7), _goal(8), _goal(9)]
    counts = Counter()
    with build_server(script) as srv:
        client = StageClient(_settings(srv.api_base))
        out = online_attributes(goals, "SCENE", tmp_path / "work", client, StubGeometry, 2, counts)
        reqs = srv.chat_requests()

    assert [g["attributes"] for g in out[:2]] == [
        {"color": ["Brown"], "material": ["timber"], "feature": ["armrest"]}
    ] * 2
    assert out[0]["caption"] == "a chair"
    assert out[2]["attributes"] == {"color": [], "material": [], "feature": []}
    assert counts["ok"] == 2 and counts["failed"] == 1 and counts["malformed_replies"] == 4
    assert len(reqs) == 7
    c7 = json.loads(cache_path(tmp_path / "work", "SCENE", 7).read_text())
    assert c7["status"] == "ok" and c7["attempts"][0]["error"] == "malformed"
    assert "brown chair" in c7["attempts"][0]["raw"]
    c8 = json.loads(cache_path(tmp_path / "work", "SCENE", 8).read_text())
    assert c8["status"] == "ok" and c8["attempts"][0]["status"] == 500
    c9 = json.loads(cache_path(tmp_path / "work", "SCENE", 9).read_text())
    assert c9["status"] == "failed" and [a["error"] for a in c9["attempts"]] == ["malformed"] * 3

    # The protocol: POST /v1/chat/completions, bearer key, model, PNG images as data URLs.
    r = reqs[0]
    assert r.path == "/v1/chat/completions"
    assert r.headers["Authorization"] == f"Bearer {KEY}"
    assert r.json["model"] == "test-vlm"
    parts = r.json["messages"][1]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 2 and all(u.startswith("data:image/png;base64,") for u in images)
    assert base64.b64decode(images[0].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    # The key is never written.
    assert KEY not in _all_text(tmp_path)

    # Resume: the two good goals come from the cache, only the failed one is asked again.
    counts2 = Counter()
    with build_server([(200, GOOD)]) as srv:
        client = StageClient(_settings(srv.api_base))
        out2 = online_attributes(
            goals, "SCENE", tmp_path / "work", client, StubGeometry, 2, counts2
        )
        assert len(srv.chat_requests()) == 1
    assert counts2["cached"] == 2 and counts2["ok"] == 3
    assert out2[2]["attributes"]["material"] == ["timber"]


def test_bad_key_stops_with_one_line_error_without_the_key(tmp_path):
    with build_server([(401, "invalid api key")]) as srv:
        client = StageClient(_settings(srv.api_base))
        with pytest.raises(ApiAuthError) as err:
            online_attributes([_goal(7)], "S", tmp_path, client, StubGeometry, 1, Counter())
    assert "HTTP 401" in str(err.value) and KEY not in str(err.value)
    assert isinstance(err.value, BuildError)


def test_rate_limit_spaces_requests():
    slept = []
    with build_server([(200, "a"), (200, "b")]) as srv:
        client = StageClient(_settings(srv.api_base, min_interval_s=30.0), sleep=slept.append)
        assert client.complete_text("sys", "one") == "a"
        assert client.complete_text("sys", "two") == "b"
    assert len(slept) == 1 and 29.0 < slept[0] <= 30.0  # second request waited for its slot


def test_settings_from_env_file(tmp_path, monkeypatch):
    clear_chat_env(monkeypatch)
    env = tmp_path / ".env"
    env.write_text(f"MOSNAV_API_KEY={KEY}\nMOSNAV_API_BASE=http://h:1/v1\nOPENAI_MODEL=m1\n")
    s = ApiSettings.from_env(env)
    assert (s.api_key, s.base_url, s.vlm_model, s.llm_model) == (KEY, "http://h:1/v1", "m1", "m1")
    assert KEY not in repr(s)
    monkeypatch.setenv("MOSNAV_VLM_MODEL", "vlm2")  # the environment wins over .env
    assert ApiSettings.from_env(env).vlm_model == "vlm2"
    monkeypatch.setenv("MOSNAV_API_KEY", "")
    with pytest.raises(BuildError, match="--offline"):
        StageClient(ApiSettings.from_env(tmp_path / "missing.env"))


def test_parse_attribute_reply():
    assert parse_attribute_reply('Sure! {"color": "red", "material": [], "feature": ["lid"]}') == {
        "color": ["red"],
        "material": [],
        "feature": ["lid"],
        "caption": "",
    }
    for bad in (
        "",
        "no json here",
        '{"color": []}',
        "[1, 2]",
        '{"color": [1], "material": [], "feature": []}',
    ):
        with pytest.raises(MalformedReply):
            parse_attribute_reply(bad)


def test_language_from_llm_with_template_fallback():
    from habitat_mosnav.dataset_building.language import build_instructions, template_instruction

    prog = {
        "select": "object",
        "where": [
            {"field": "category", "op": "==", "value": "chair"},
            {"field": "color", "op": "==", "value": "red"},
        ],
    }
    qs = [
        {"query_id": "q0000", "query_program": prog, "matched_object_ids": [1, 2]},
        {"query_id": "q0001", "query_program": prog, "matched_object_ids": [3]},
    ]
    counts = {}
    # q0000: the model answers; q0001: three empty replies -> the template is used
    with build_server(
        [(200, '"Please find the red chairs"\n'), (200, ""), (200, " "), (200, "")]
    ) as srv:
        client = StageClient(_settings(srv.api_base))
        out = build_instructions(qs, seed=0, scene_id="S", client=client, counts=counts)
        body = srv.chat_requests()[0].json
    assert out[0]["instruction"] == "Please find the red chairs."
    assert out[1]["instruction"] == template_instruction(qs[1], 0, "S")
    assert counts == {"llm": 1, "llm_fallback": 1}
    assert body["model"] == "test-llm" and "red" in body["messages"][1]["content"]
