"""Nothing written or printed carries a key (issue #23): one masking function
(habitat_mosnav.safety.mask_secrets) covers the key, its prefixes of >= 8 characters and URL
credentials, and runs before anything is cut; no parser takes an abbreviation, so
``--api-key sk-...`` is refused instead of read as ``--api-key-env``. The HTTP side is the real
local chat server of tests/chat_server.py."""

import ast
import os

import pytest

from habitat_mosnav.evaluation.cli import main

from chat_server import ChatServer, Reply
from conftest import API_KEY, ROOM_RUN_ARGS, api_agent_args, room_args

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_api(capsys, open_room, server, out, *extra):
    rc = main(
        [
            *api_agent_args(server),
            "--log-prompts",
            "--output-dir",
            str(out),
            "--num-episodes",
            "1",
            *room_args(open_room, *ROOM_RUN_ARGS, "--max-steps", "2"),
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def _nowhere(root, text, printed):
    assert text not in printed
    found = []
    for d, _, names in os.walk(str(root)):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                if text.encode() in f.read():
                    found.append(os.path.join(d, n))
    assert not found, found


@pytest.mark.parametrize("echo", [API_KEY, API_KEY[:12]], ids=["whole key", "partial echo"])
def test_a_key_echoed_in_a_normal_reply_is_masked_in_the_prompt_log(
    capsys, open_room, api_key, tmp_path, echo
):
    with ChatServer(default=Reply.text(f"ACTION: 1 (you sent {echo})")) as server:
        rc, printed = _run_api(capsys, open_room, server, tmp_path / "run")
    assert rc == 0, printed
    log = (tmp_path / "run" / "rank_00000" / "prompts.jsonl").read_text()
    assert "you sent ***" in log
    _nowhere(tmp_path / "run", echo, printed)


def test_a_key_late_in_an_error_body_is_masked_before_the_message_is_cut(
    capsys, open_room, api_key, tmp_path
):
    with ChatServer(default=Reply.status(400, "x" * 290 + API_KEY)) as server:
        rc, printed = _run_api(capsys, open_room, server, tmp_path / "run")
    assert rc == 0 and "APIRequestError" in printed, printed
    _nowhere(tmp_path / "run", API_KEY[:8], printed)


def test_a_password_in_the_api_base_is_never_shown(capsys, open_room, api_key, tmp_path):
    with ChatServer(default=Reply.status(500)) as server:
        base = server.api_base.replace("http://", "http://alice:hunter2secret@")
        rc, printed = _run_api(capsys, open_room, server, tmp_path / "run", "--api-base", base)
    assert "APIUnavailableError" in printed, printed
    assert "alice:***@" in printed or "***:***@" in printed
    _nowhere(tmp_path / "run", "hunter2secret", printed)


def test_api_key_flag_is_refused_not_taken_for_api_key_env(
    capsys, open_room, server, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    secret = "sk-live-abcdefghijklmnop"
    rc, printed = _run_api(capsys, open_room, server, tmp_path / "run", "--api-key", secret)
    assert rc == 2, printed
    lines = [line for line in printed.splitlines() if line.startswith("mosnav-eval")]
    assert len(lines) == 1 and "unrecognized arguments: --api-key" in lines[0], lines
    assert secret[:8] not in printed and not server.chat_requests()
    assert not (tmp_path / "run").exists()


def _parser_calls(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("ArgumentParser", "add_parser", "_Parser"):
                yield node


def test_every_parser_refuses_abbreviations():
    calls = []
    for top in ("habitat_mosnav", "benchmarks", "tests", "examples"):
        for d, _, names in os.walk(os.path.join(REPO, top)):
            calls += [
                (os.path.join(d, n), c)
                for n in names
                if n.endswith(".py")
                for c in _parser_calls(os.path.join(d, n))
            ]
    assert len(calls) >= 10
    bad = [
        f"{os.path.relpath(p, REPO)}:{c.lineno}"
        for p, c in calls
        if not any(
            k.arg == "allow_abbrev" and getattr(k.value, "value", None) is False for k in c.keywords
        )
        and not os.path.basename(p).startswith("test_")
    ]
    assert not bad, bad
    from habitat_mosnav.evaluation import aggregate_cli
    from habitat_mosnav.evaluation.report import cli as report

    for parser, argv in (
        (report.build_parser(), ["run", "--out", "o", "--boot", "5"]),
        (aggregate_cli.build_parser(), ["run", "--expected", "3"]),
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)


def test_mask_secrets_covers_prefixes_urls_and_runs_before_a_cut():
    from habitat_mosnav.chat import _short
    from habitat_mosnav.safety import mask_secrets

    key = "sk-proj-0123456789abcdef"
    assert mask_secrets(f"a {key} b", key) == "a *** b"
    assert mask_secrets(f"echo {key[:8]}!", key) == "echo ***!"
    assert key[:7] in mask_secrets(f"echo {key[:7]}", key)  # 7 characters say nothing
    assert mask_secrets("GET http://bob:pw@h:1/v1 failed") == "GET http://***:***@h:1/v1 failed"
    cut = _short("x" * 290 + key, secrets=(key,))
    assert key[:8] not in cut and cut.startswith("x" * 290 + "***")


def test_log_lines_of_mosnav_build_are_masked_and_escaped():
    """mosnav-build logs through logging: its handlers print masked, escaped lines."""
    import io
    import logging

    from habitat_mosnav.safety import mask_log_handlers, register_secret

    secret = "sk-build-0123456789abcdef"
    register_secret(secret)
    logger = logging.getLogger("mosnav-test-masking")
    stream = io.StringIO()
    logger.addHandler(logging.StreamHandler(stream))
    logger.propagate = False
    mask_log_handlers(logger)
    logger.warning("language: server said %s\x1b[2J", secret[:10] + " tail")
    assert stream.getvalue() == "language: server said *** tail\\x1b[2J\n"
