"""``--agent api`` against a hostile chat server (issue 30): a reply that trickles in, a
reply built to make parsing slow, a reply of megabytes, a redirect to another host.

Every server runs on 127.0.0.1; every request loop is bounded (``retries`` is 0 or 1)."""

import json
import random
import re
import sys
import time

import pytest

from chat_server import ChatServer, Reply

from habitat_mosnav.agents.vlm import parsing
from habitat_mosnav.agents.vlm.parsing import parse_action, strip_reasoning
from habitat_mosnav.chat import APIRequestError, APIUnavailableError, ChatClient

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
KEY = "sk-hostile-test-key-0123456789"


# ----------------------------------------------------------------------------- a total deadline
@pytest.mark.parametrize(
    "headers_first", [True, False], ids=["body-trickles", "everything-trickles"]
)
def test_reply_trickling_one_byte_at_a_time_ends_at_the_timeout(server, headers_first):
    # One byte every 0.2 s: no single read ever waits 1 s, so only a deadline on the whole
    # attempt ends it. The server gives up after 50 bytes (10 s), so without one the test
    # fails in bounded time (with a 'connection' error, after 10 s).
    server.script("ACTION: 1", Reply.trickle(0.2, max_bytes=50, headers_first=headers_first))
    client = ChatClient(server.api_base, KEY, timeout=1.0, retries=0, backoff=0.0)
    client.complete(PAYLOAD)  # the first request imports the SDK (seconds on a cold Python 3.9)
    t0 = time.monotonic()
    with pytest.raises(APIUnavailableError, match=r"--api-timeout 1s") as info:
        client.complete(PAYLOAD)
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0 + 1.5, elapsed  # the timeout plus slack, far below the 10 s trickle
    assert [e["error"] for e in info.value.attempt_log] == ["timeout"]
    assert info.value.attempts == 1


def test_trickling_reply_is_retried_and_the_next_answer_used(server):
    server.script(Reply.trickle(0.2, max_bytes=50), "ACTION: 4")
    result = ChatClient(server.api_base, timeout=0.8, retries=1, backoff=0.0).complete(PAYLOAD)
    assert result.text == "ACTION: 4" and result.attempts == 2
    assert result.attempt_log[0]["error"] == "timeout"


# ----------------------------------------------------------------------------- redirects
def test_redirect_to_another_origin_is_refused_and_the_key_never_leaves(server):
    with ChatServer(default=Reply.text("ACTION: 5")) as other:
        server.script(Reply.redirect(f"http://127.0.0.1:{other.port}/v1/chat/completions"))
        client = ChatClient(server.api_base, KEY, timeout=5.0, retries=1, backoff=0.0)
        with pytest.raises(APIRequestError) as info:
            client.complete(PAYLOAD)
        message = str(info.value)
        assert f"127.0.0.1:{other.port}" in message and "redirect" in message
        assert "\n" not in message and KEY not in message
        assert other.requests == []  # never contacted: no Authorization header, no body
        assert len(server.chat_requests()) == 1  # not retried either


def test_redirect_to_the_same_origin_is_followed(server):
    server.script(Reply.redirect(f"{server.api_base}/moved/chat/completions"), "ACTION: 3")
    result = ChatClient(server.api_base, KEY, timeout=5.0, retries=0).complete(PAYLOAD)
    assert result.text == "ACTION: 3"
    second = server.chat_requests()[1]
    assert second.path.endswith("/moved/chat/completions")
    assert second.headers["Authorization"] == f"Bearer {KEY}"


# ----------------------------------------------------------------------------- linear parsing
def _old_strip_reasoning(text):
    """The regex strip_reasoning replaced (quadratic on many unclosed tags): the reference."""
    text = re.sub(
        r"<(think|thinking|reasoning)>.*?</\1>", " ", text, flags=re.IGNORECASE | re.DOTALL
    )
    m = re.search(r"<(think|thinking|reasoning)>", text, re.IGNORECASE)
    return text[: m.start()] if m else text


def test_strip_reasoning_matches_the_old_regex_on_random_tag_soup():
    tokens = [
        "<think>",
        "</think>",
        "<THINK>",
        "</Think>",
        "<thinking>",
        "</thinking>",
        "<reasoning>",
        "</REASONING>",
        "<thinkin>",
        "</ think>",
        "a",
        " ",
        "ACTION: 1",
        "<",
        ">",
        "/",
    ]
    rng = random.Random(30)
    for _ in range(3000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 14)))
        assert strip_reasoning(text) == _old_strip_reasoning(text), text


def _regex_tree():
    try:
        from re import _parser as sre_parse  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python 3.9/3.10
        import sre_parse
    return sre_parse


def _is_bounded_width(pattern):
    """A regex whose matches are at most 64 characters long and that has no back-reference:
    each attempt is bounded, so a finditer pass costs O(length of the text)."""
    sre_parse = _regex_tree()
    tree = sre_parse.parse(pattern.pattern, pattern.flags)
    return tree.getwidth()[1] <= 64 and "GROUPREF" not in str(tree)


#: Patterns allowed to run over the whole reply although a match may be long: each of their
#: unbounded repeats is a single character class followed by a character it cannot take
#: (``[^{}]*\}``, ``\d+`` then not a digit), so a failed attempt gives back at most one run.
#: ``_NAME_PATTERNS`` (word-led phrases, one pass each) are not module globals and not recorded.
LINEAR_PASSES = {parsing._DIGIT_RE.pattern, parsing._JSON_RE.pattern, r"-?\d+"}


def _check(pattern, args, allowed):
    """Refuse, before it runs, a regex call that could cost more than linear time: a
    pattern of unbounded width over the whole reply that is not one of ``allowed``."""
    if _is_bounded_width(pattern) or pattern.pattern in allowed:
        return
    if len(args) == 3 and args[2] - args[1] <= parsing.STRICT_WINDOW:
        return  # pattern.match(text, pos, endpos): a bounded window
    raise AssertionError(f"unbounded pattern {pattern.pattern!r} applied to the whole reply")


class _Recorder:
    """Stands in for a compiled pattern of parsing.py: checks and counts every use."""

    def __init__(self, pattern, calls, allowed):
        self._pattern, self._calls, self._allowed = pattern, calls, allowed

    def __getattr__(self, name):
        method = getattr(self._pattern, name)
        if not callable(method):
            return method

        def call(*args, **kwargs):
            _check(self._pattern, args, self._allowed)
            self._calls.append((self._pattern, name, args))
            return method(*args, **kwargs)

        return call


class _ReModule:
    """Stands in for parsing.py's ``re`` module: module-level functions are checked too."""

    def __init__(self, calls, allowed):
        self._calls, self._allowed = calls, allowed

    def __getattr__(self, name):
        attr = getattr(re, name)
        if name in ("search", "match", "fullmatch", "finditer", "findall", "sub", "split"):

            def call(pattern, text, *args, **kwargs):
                compiled = re.compile(pattern, kwargs.get("flags", 0))
                _check(compiled, (text,), self._allowed)
                self._calls.append((compiled, name, (text,)))
                return attr(pattern, text, *args, **kwargs)

            return call
        return attr


def _record_regex_use(monkeypatch, allowed=frozenset()):
    calls = []
    for name, value in vars(parsing).items():
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(parsing, name, _Recorder(value, calls, allowed))
    monkeypatch.setattr(parsing, "re", _ReModule(calls, allowed))
    return calls


def _line_events(fn, text):
    """Lines of parsing.py executed by ``fn(text)``: a deterministic count of its Python work."""
    count = [0]
    target = parsing.__file__

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != target:
            return None
        if event == "line":
            count[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn(text)
    finally:
        sys.settrace(None)
    return count[0]


HOSTILE = {
    "20k-unclosed-think": lambda n: "<think>" * n,
    "opened-and-closed": lambda n: "<think>a</think><THINKING>b" * n + "ACTION: 1",
    "unclosed-names-mixed": lambda n: "<reasoning>x</think>" * n,
}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_strip_reasoning_is_one_pass_of_a_bounded_pattern(monkeypatch, shape):
    # Structural: every regex strip_reasoning applies to the reply matches at most 64
    # characters and has no back-reference (the old '<think>.*?</\1>' had neither bound:
    # from each of 20,000 unclosed tags it scanned to the end, 28 s per reply), the number
    # of regex calls does not grow with the reply, and its Python work grows linearly:
    # doubling the reply at most doubles the lines executed (plus a constant).
    make = HOSTILE[shape]
    calls = _record_regex_use(monkeypatch)  # no unbounded pattern allowed
    strip_reasoning(make(20_000))
    assert calls
    n_calls = len(calls)
    del calls[:]
    strip_reasoning(make(40_000))
    assert len(calls) == n_calls
    small, large = (
        _line_events(strip_reasoning, make(5_000)),
        _line_events(strip_reasoning, make(10_000)),
    )
    assert large <= 2 * small + 20, (small, large)


@pytest.mark.parametrize(
    "reply, action",
    [
        ("<think>" * 20_000, None),  # cut inside the reasoning: unparseable, at once
        ("<think>" + "I think the chair is left. " * 40_000 + "</think>\nACTION: 3", 3),  # 1 MB
        ("I see a sofa. " * 75_000 + "ACTION: 2", 2),  # 1 MB without tags
        ("ACTION:" + " " * 1_000_000 + "x", None),  # the old strict pattern was cubic on this
        ("ACTION: " + "7" * 1_000_000, None),  # an id of a million digits: no int() of it
    ],
)
def test_long_hostile_replies_parse_with_linear_work(monkeypatch, reply, action):
    # Every regex call is checked before it runs: a pattern that may match more than 64
    # characters is given at most the STRICT_WINDOW after a keyword, or is one of the
    # LINEAR_PASSES over the whole reply (the old strict pattern, cubic on a long run of
    # spaces after 'ACTION:', was neither); the calls over the whole reply are a fixed few.
    calls = _record_regex_use(monkeypatch, LINEAR_PASSES)
    assert parse_action(reply).action == action
    passes = [c for c in calls if len(c[2]) < 3 and not _is_bounded_width(c[0])]
    assert len(passes) <= 3


# ----------------------------------------------------------------------------- the prompt log
def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_prompt_log_caps_every_text_field(server, tmp_path):
    from habitat_mosnav.agents.vlm import agent as agent_module
    from test_api_agent_agent import make_obs

    LOG_FIELD_LIMIT = getattr(agent_module, "LOG_FIELD_LIMIT", 64 * 1024)  # the stated 64 KiB
    assert LOG_FIELD_LIMIT == 64 * 1024

    # A 2 MB reply naming no action, then a 2 MB one that does: unparsed, it is sent back in
    # the re-ask and was written four times (messages, two attempts, reply): 8 MB a step.
    junk = "a" * (LOG_FIELD_LIMIT - 1) + "é" + "blah " * 400_000  # 'é' (2 bytes) across the limit
    server.script(junk, junk + "\nACTION: 2")
    log = tmp_path / "prompts.jsonl"
    agent = agent_module.APIAgent(
        "m", server.api_base, KEY, timeout=10.0, backoff=0.0, unparseable_retries=1, log_path=log
    )
    agent.reset()
    assert agent.act(make_obs()) == 2
    raw = log.read_text(encoding="utf-8")
    (line,) = [json.loads(x) for x in raw.splitlines()]
    assert len(raw.encode("utf-8")) < 5 * LOG_FIELD_LIMIT + 20_000
    cut = [s for s in _strings(line) if s.endswith("bytes left out]")]
    assert len(cut) == 4  # the re-asked assistant message, both attempts' replies, the reply
    full = len(junk.encode("utf-8"))
    for text in cut:
        kept, marker = text.rsplit("...[", 1)
        assert kept == "a" * (LOG_FIELD_LIMIT - 1)  # cut before the character it would split
        left_out = int(marker.split()[0])
        assert left_out in (full - len(kept), full + len("\nACTION: 2") - len(kept))
    assert all(len(s.encode("utf-8")) <= LOG_FIELD_LIMIT + 40 for s in _strings(line))
    assert line["action"] == 2 and line["parsed_action"] == 2
