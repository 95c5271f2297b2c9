"""The chat-completions client against a scripted local server: retries, time-outs, errors, key."""

import random
import time

import pytest

from chat_server import Reply

from habitat_mosnav.chat import (
    APIRequestError,
    APIUnavailableError,
    ChatClient,
    chat_completions_url,
    load_api_key,
)

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _client(server, sleeps=None, **kw):
    kw.setdefault("timeout", 5.0)
    kw.setdefault("retries", 3)
    kw.setdefault("backoff", 0.05)
    sleep = (lambda d: (sleeps.append(d), time.sleep(d))) if sleeps is not None else time.sleep
    return ChatClient(server.api_base, kw.pop("api_key", None), sleep=sleep, **kw)


def test_url_gets_the_chat_completions_path():
    assert chat_completions_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
    with pytest.raises(ValueError, match="--api-base"):
        chat_completions_url("h:8000/v1")


def test_retries_after_500_with_exponential_backoff(server):
    server.script(Reply.status(500), Reply.status(503), "ACTION: 4")
    sleeps = []
    result = _client(server, sleeps).complete(PAYLOAD)
    assert result.text == "ACTION: 4"
    assert result.attempts == 3 and len(server.chat_requests()) == 3
    assert len(sleeps) == 2
    assert (
        0.05 <= sleeps[0] <= 0.056 and 0.1 <= sleeps[1] <= 0.111
    )  # 0.05 * 2**k plus <= 10% jitter
    assert "HTTP 500" in result.errors[0] and "HTTP 503" in result.errors[1]


@pytest.mark.parametrize("jitter", [0.0, 0.1])
def test_backoff_doubles_up_to_max_backoff_plus_the_jitter_drawn(server, monkeypatch, jitter):
    # the jitter's draw pinned at either end of its range, [0, 10%] of the wait
    monkeypatch.setattr(random, "uniform", lambda lo, hi: lo + (hi - lo) * jitter / 0.1)
    server.script(Reply.status(503), Reply.status(503), Reply.status(503), "ACTION: 4")
    sleeps = []
    result = _client(server, sleeps, max_backoff=0.15).complete(PAYLOAD)
    assert result.text == "ACTION: 4" and result.attempts == 4
    # 0.05 * 2**k for k = 0, 1, 2, the last capped at --max-backoff 0.15
    assert sleeps == pytest.approx([w * (1 + jitter) for w in (0.05, 0.1, 0.15)])


def test_server_that_keeps_failing_raises_unavailable_after_all_retries(server):
    server.default = Reply.status(500)
    sleeps = []
    with pytest.raises(
        APIUnavailableError, match=r"unavailable after 3 attempt\(s\).*HTTP 500"
    ) as info:
        _client(server, sleeps, retries=2).complete(PAYLOAD)
    assert info.value.attempts == 3
    assert len(server.chat_requests()) == 3
    assert len(sleeps) == 2  # no wait after the last attempt


def test_slow_reply_beyond_the_timeout_is_abandoned_and_retried(server):
    server.script(Reply.slow(5.0, "ACTION: 1"), "ACTION: 2")
    t0 = time.monotonic()
    result = _client(server, timeout=0.4, retries=1).complete(PAYLOAD)
    elapsed = time.monotonic() - t0
    assert result.text == "ACTION: 2" and result.attempts == 2
    assert "--api-timeout 0.4" in result.errors[0]
    assert elapsed < 2.0  # did not wait for the 5 s reply


def test_slow_server_with_no_retries_fails_within_the_timeout(server):
    server.default = Reply.slow(5.0)
    t0 = time.monotonic()
    with pytest.raises(APIUnavailableError, match="--api-timeout"):
        _client(server, timeout=0.3, retries=0).complete(PAYLOAD)
    assert time.monotonic() - t0 < 1.5


def test_dropped_connection_and_malformed_envelope_are_retried(server):
    server.script(
        Reply.drop(),
        Reply.raw(b"<html>bad gateway</html>"),
        Reply.raw(b'{"choices": []}'),
        "ACTION: 6",
    )
    result = _client(server).complete(PAYLOAD)
    assert result.text == "ACTION: 6" and result.attempts == 4
    assert "connection failed" in result.errors[0]
    assert "not JSON" in result.errors[1]
    assert "no choices" in result.errors[2]


def test_client_errors_are_not_retried(server):
    server.script(Reply.status(404, "model 'x' does not exist"))
    with pytest.raises(APIRequestError, match="HTTP 404.*model 'x' does not exist"):
        _client(server).complete(PAYLOAD)
    assert len(server.chat_requests()) == 1


@pytest.mark.parametrize(
    "retry_after, low, high",
    [
        ("0.3", 0.3, 0.3),  # longer than the back-off (0.05 plus <= 10%): it wins
        ("0.01", 0.05, 0.055),  # shorter: the back-off
        ("5", 0.4, 0.4),  # capped at --max-backoff
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.05, 0.055),  # a date is not read: the back-off
    ],
)
def test_rate_limit_honours_retry_after(server, retry_after, low, high):
    server.script(Reply.status(429, "slow down", headers={"Retry-After": retry_after}), "ACTION: 1")
    sleeps = []
    assert _client(server, sleeps, max_backoff=0.4).complete(PAYLOAD).text == "ACTION: 1"
    assert len(sleeps) == 1 and low <= sleeps[0] <= high


def test_key_goes_in_the_header_only_and_is_masked_in_errors(server):
    key = "sk-test-0123456789abcdef"
    server.script("ACTION: 1", Reply.status(401, f"invalid key {key}"))
    client = _client(server, api_key=key)
    client.complete(PAYLOAD)
    assert server.chat_requests()[0].headers["Authorization"] == f"Bearer {key}"
    assert key not in server.chat_requests()[0].body.decode()
    assert key not in repr(client)
    with pytest.raises(APIRequestError) as info:
        client.complete(PAYLOAD)
    assert key not in str(info.value) and "***" in str(info.value)


def test_no_key_sends_no_authorization_header(server):
    _client(server).complete(PAYLOAD)
    assert "Authorization" not in server.chat_requests()[0].headers


def test_loopback_server_bypasses_http_proxy(server, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert _client(server, retries=0).complete(PAYLOAD).text == "ACTION: 1"


def test_key_from_env_var_then_dotenv(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text('# comment\nexport MY_KEY="from-file" # trailing\nOTHER=x\n')
    monkeypatch.delenv("MY_KEY", raising=False)
    assert load_api_key("MY_KEY", str(env_file)) == "from-file"
    monkeypatch.setenv("MY_KEY", "from-env")
    assert load_api_key("MY_KEY", str(env_file)) == "from-env"  # the environment wins
    assert load_api_key("ABSENT_KEY_VAR", str(env_file)) is None
    assert load_api_key("ABSENT_KEY_VAR", str(tmp_path / "missing.env")) is None


def test_dotenv_comment_is_not_part_of_the_key_for_eval_and_build(tmp_path, monkeypatch):
    from habitat_mosnav.dataset_building.llm import ApiSettings

    for var in ("OPENAI_API_KEY", "MOSNAV_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_API_KEY=sk-abc # my key\n")
    assert load_api_key("OPENAI_API_KEY", str(env_file)) == "sk-abc"  # mosnav-eval --agent api
    assert ApiSettings.from_env(env_file).api_key == "sk-abc"  # mosnav-build


def test_parse_failure_is_retried_and_logged(server):
    from habitat_mosnav.chat import MalformedReply

    def parse(text):
        if not text.startswith("{"):
            raise MalformedReply("not an object")
        return text

    server.script("nope", "{}")
    result = _client(server).complete(PAYLOAD, parse=parse)
    assert result.value == "{}" and result.attempts == 2
    assert result.attempt_log == [
        {
            "attempt": 0,
            "error": "malformed",
            "detail": "malformed reply: not an object",
            "raw": "nope",
        }
    ]
