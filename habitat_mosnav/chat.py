"""The one OpenAI-compatible chat-completions client (vLLM, SGLang, llama.cpp, hosted APIs),
used by the VLM agent (``--agent api``) and by ``mosnav-build``'s attributes/language stages.

The HTTP request, the ``Authorization`` header, time-outs and the mapping of HTTP errors to
exception classes are the ``openai`` SDK's; the ``.env`` file is read by python-dotenv.
Two limits are ours, on the SDK's httpx client: ``timeout`` bounds each whole attempt
(httpx's time-outs are per connect and per read, so a server sending one byte a second
never ends): at the deadline a watchdog shuts the attempt's socket, which httpcore hands
over through its ``trace`` extension, and every attempt gets a connection of its own (no
keep-alive, so no socket is shared between attempts); and a redirect to another origin
(scheme, host or port) is refused before anything is sent there, so the key never leaves
the configured server (same-origin redirects are followed, at most :data:`MAX_REDIRECTS`).
Retries are tenacity's (a ``Retrying`` per call), with the SDK's own off (``max_retries=0``:
its waits are fixed and it cannot retry a reply the caller's ``parse`` refuses): the back-off
is injectable (``sleep``) and bounded (``max_backoff``), every failed attempt is logged
(``ChatResult.errors`` / ``attempt_log``), a reply that is not JSON, has no choices or fails
``parse`` is retried like a 5xx, and requests can be spaced (``min_interval``).

Errors are typed so a run can record a clear outcome: :class:`APIUnavailableError` (the
server stayed down or kept failing after every retry), :class:`APIRequestError` (the server
refused the request: 4xx, unknown model — retrying would not help) and its subclass
:class:`APIAuthError` (401/403). The key goes in the ``Authorization`` header only; it is
masked in every message and never shown by ``repr``.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import re
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tenacity

from habitat_mosnav.safety import mask_secrets, register_secret

__all__ = [
    "APIAuthError",
    "APIError",
    "APIRequestError",
    "APIUnavailableError",
    "ChatClient",
    "ChatResult",
    "MAX_REDIRECTS",
    "MalformedReply",
    "chat_completions_url",
    "data_url",
    "env_value",
    "load_api_key",
    "png_data_url",
    "read_env_file",
]

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_RETRY_STATUS = {408, 409, 425, 429}
_MAX_ERROR_BODY = 300
#: Same-origin redirects followed per attempt.
MAX_REDIRECTS = 5


class APIError(RuntimeError):
    """Base class of chat-server errors.

    ``attempts`` is the number of HTTP requests the failed call sent; ``attempt_log`` one
    dict per failed attempt (see :attr:`ChatResult.attempt_log`).
    """

    attempts: int = 1
    attempt_log: List[Dict[str, Any]] = []
    status: Optional[int] = None  #: the HTTP status of a rejected request


class APIUnavailableError(APIError):
    """The server could not be reached or kept failing (5xx, time-outs, unusable replies)
    after all retries."""


class APIRequestError(APIError):
    """The server rejected the request (4xx other than rate limits) or returned an error."""


class APIAuthError(APIRequestError):
    """HTTP 401/403: the key or the endpoint is wrong."""


class MalformedReply(ValueError):
    """The model answered, but not with what was asked for (raised by a ``parse`` callback;
    the request is retried)."""


@dataclass
class ChatResult:
    """One successful completion: the assistant text (and ``parse(text)``) plus its cost."""

    text: Optional[str]
    attempts: int
    latency_s: float
    usage: Dict[str, Any] = field(default_factory=dict)
    finish_reason: Optional[str] = None
    #: One line per failed attempt.
    errors: List[str] = field(default_factory=list)
    #: Per failed attempt ``{"attempt", "error": http|timeout|connection|malformed,
    #: "detail", "status"?, "raw"?}`` (``raw``: the reply text that failed ``parse``).
    attempt_log: List[Dict[str, Any]] = field(default_factory=list)
    value: Any = None


def chat_completions_url(api_base: str) -> str:
    """``http://host:8000/v1`` -> ``http://host:8000/v1/chat/completions`` (idempotent)."""
    base = api_base.strip().rstrip("/")
    if not re.match(r"^https?://", base, re.IGNORECASE):
        raise ValueError(f"--api-base {api_base!r}: expected an http:// or https:// URL")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


def read_env_file(path) -> Dict[str, str]:
    """The values of a ``.env`` file (python-dotenv), without touching ``os.environ``."""
    from dotenv import dotenv_values

    path = Path(path)
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def env_value(*names: str, env_file=".env", default: Optional[str] = None) -> Optional[str]:
    """The first non-empty of ``names`` in the environment, else in ``env_file`` (the
    environment wins), else ``default``."""
    for name in names:
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    values = read_env_file(env_file) if env_file else {}
    for name in names:
        if (values.get(name) or "").strip():
            return values[name].strip()
    return default


def load_api_key(
    env_var: str = "OPENAI_API_KEY", env_file: Optional[str] = ".env"
) -> Optional[str]:
    """The key from the environment variable ``env_var``, else from ``env_file``; None if absent.

    A missing key is not an error: local servers (vLLM, SGLang) usually need none.
    """
    return env_value(env_var, env_file=env_file)


def data_url(data: bytes, mime: str) -> str:
    """``data:<mime>;base64,...`` of encoded image bytes."""
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def png_data_url(image: np.ndarray) -> str:
    """A ``data:image/png;base64,...`` URL of an (H, W, 3) uint8 image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(np.asarray(image)[..., :3]).astype(np.uint8)).save(
        buf, format="PNG"
    )
    return data_url(buf.getvalue(), "image/png")


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in _LOOPBACK or host.startswith("127.")


def _short(text: str, limit: int = _MAX_ERROR_BODY, secrets: Tuple[str, ...] = ()) -> str:
    """One line of at most ``limit`` characters, masked *before* it is cut (a cut must
    never leave the start of a key behind)."""
    text = " ".join(mask_secrets(text, *secrets).split())
    return text if len(text) <= limit else text[:limit] + "..."


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(self, kind: str, message: str, retry_after=None, status=None, raw=None):
        super().__init__(message)
        self.kind, self.retry_after, self.status, self.raw = kind, retry_after, status, raw


class _OffOrigin(Exception):
    """Internal: a redirect pointed to another origin; raised before anything is sent there."""

    def __init__(self, target: str):
        super().__init__(target)
        self.target = target


def _origin(url: Any) -> Tuple[str, str, int]:
    """(scheme, host, port) of an httpx URL, the port made explicit."""
    scheme = url.scheme.lower()
    return scheme, (url.host or "").lower(), url.port or {"http": 80, "https": 443}.get(scheme, 0)


def _httpx_module():
    """The httpx package the installed openai SDK builds its clients from (``httpx``, or
    ``httpx2`` in newer SDKs)."""
    import openai

    for cls in openai.DefaultHttpxClient.__mro__[1:]:
        if cls.__name__ == "Client":
            return sys.modules[cls.__module__.split(".")[0]]
    raise ImportError(
        "openai.DefaultHttpxClient is not built on an httpx Client"
    )  # pragma: no cover


class _Deadline:
    """The total time limit of one attempt.

    A watchdog timer fires ``seconds`` after :meth:`start`; it shuts down (both ways) every
    socket the attempt opened, which wakes a blocked read or write at once with an end of
    stream. The sockets come from httpcore's ``trace`` extension (:meth:`trace`, set on
    each request by the client's request hook): at ``connect_tcp.complete`` the socket is
    duplicated (a TLS wrapper takes over the original; the duplicate still shuts the same
    connection). A connect still in progress is bounded by the per-operation connect
    time-out (the same ``seconds``) and shut as soon as it completes.
    """

    def __init__(self, seconds: float):
        self.expired = False
        self._lock = threading.Lock()
        self._socks: List[socket.socket] = []
        self._done = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def start(self) -> "_Deadline":
        self._timer.start()
        return self

    def finish(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True
            socks, self._socks = self._socks, []
        for sock in socks:
            sock.close()

    def trace(self, event: str, info: Dict[str, Any]) -> None:
        if not event.endswith("connect_tcp.complete"):
            return
        stream = info.get("return_value")
        raw = stream.get_extra_info("socket") if stream is not None else None
        if raw is None:
            return
        try:
            sock = raw.dup()
        except OSError:
            return
        with self._lock:
            if self._done:
                sock.close()
                return
            self._socks.append(sock)
            expired = self.expired
        if expired:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the other side


class ChatClient:
    """Chat-completions requests with time-outs, exponential back-off and spacing.

    ``timeout`` bounds each whole attempt, from connect to the last byte of the reply
    (also each connect and each read); an attempt gets at most
    ``retries`` repeats after 5xx/408/409/425/429, time-outs, dropped connections, a reply
    that is not a completion or fails ``parse``, waiting ``backoff * 2**k`` seconds (capped
    at ``max_backoff``, plus up to 10% jitter, at least a ``Retry-After``). Requests start at
    least ``min_interval`` seconds apart (a client-side rate limit). So a dead server never
    hangs a run.
    """

    def __init__(
        self,
        api_base: str,
        api_key: Optional[str] = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        min_interval: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str = "habitat_mosnav",
    ):
        if timeout <= 0:
            raise ValueError(f"--api-timeout must be > 0, got {timeout}")
        if retries < 0:
            raise ValueError(f"--api-retries must be >= 0, got {retries}")
        if backoff < 0:
            raise ValueError(f"--api-backoff must be >= 0, got {backoff}")
        self.url = chat_completions_url(api_base)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.min_interval = float(min_interval or 0.0)
        self.requests_sent = 0
        self._sleep = sleep
        self._key = api_key or None
        if self._key:
            register_secret(self._key)  # masked in everything written or printed
        self._user_agent = user_agent
        self._sdk = None
        self._local = threading.local()  # the running attempt's _Deadline, per thread
        self._lock = threading.Lock()
        self._last_start: Optional[float] = None

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(url={self._scrub(self.url)!r}, timeout={self.timeout}, retries={self.retries})"

    @property
    def secrets(self) -> Tuple[str, ...]:
        """What :func:`~habitat_mosnav.safety.mask_secrets` must hide for this client."""
        return (self._key,) if self._key else ()

    @property
    def has_key(self) -> bool:
        return self._key is not None

    @property
    def is_loopback(self) -> bool:
        """The server runs on this machine (no proxy, and usually no key needed)."""
        return _is_loopback(self.url)

    def complete(
        self, payload: Dict[str, Any], parse: Optional[Callable[[str], Any]] = None
    ) -> ChatResult:
        """Send one request (``payload``: model, messages, ...); return the assistant text
        and ``parse(text)`` as ``value``, or raise an :class:`APIError`."""
        log: List[Dict[str, Any]] = []  # one entry per failed attempt
        t0 = time.monotonic()
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retries + 1),
            retry=tenacity.retry_if_exception_type(_Retryable),
            wait=self._wait,
            sleep=self._sleep,
            after=lambda state: log.append(self._log_entry(state)),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    text, usage, finish, value = self._extract(self._post(payload), parse)
                    n, errors = attempt.retry_state.attempt_number, [e["detail"] for e in log]
                    return ChatResult(
                        text, n, time.monotonic() - t0, usage, finish, errors, log, value
                    )
        except _Retryable:  # the last attempt failed too
            exc = APIUnavailableError(
                self._scrub(
                    f"chat server {self.url} unavailable after {len(log)} attempt(s) "
                    f"in {time.monotonic() - t0:.1f}s; last error: {log[-1]['detail']}"
                )
            )
        except APIError as refused:  # retrying would not help
            exc = refused
            exc.args = (self._scrub(str(exc)),)
            log.append(self._log_entry(attempt.retry_state))
        exc.attempts = len(log)
        exc.attempt_log = log
        raise exc from None

    # ----------------------------------------------------------------- internals
    def _scrub(self, text: str) -> str:
        """Mask the key (and its prefixes) should a server echo it back, URL credentials
        and bearer tokens (:func:`~habitat_mosnav.safety.mask_secrets`)."""
        return mask_secrets(text, *self.secrets)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """Before retry k (from 0): ``backoff * 2**k`` capped at ``max_backoff``, plus up to
        10% jitter; at least the server's ``Retry-After`` seconds, capped the same."""
        delay = tenacity.wait_exponential(multiplier=self.backoff, max=self.max_backoff)(state)
        delay += random.uniform(0.0, 0.1 * delay)
        try:
            return max(delay, min(self.max_backoff, float(state.outcome.exception().retry_after)))
        except (TypeError, ValueError):  # no Retry-After (or an HTTP date): the back-off
            return delay

    def _log_entry(self, state: tenacity.RetryCallState) -> Dict[str, Any]:
        """The :attr:`ChatResult.attempt_log` entry of a failed attempt, masked."""
        exc = state.outcome.exception()
        entry = {"attempt": state.attempt_number - 1, "error": getattr(exc, "kind", "http")}
        entry["detail"] = self._scrub(str(exc))
        for key in ("status", "raw"):
            if getattr(exc, key, None) is not None:
                entry[key] = getattr(exc, key)
        return entry

    def _client(self):
        if self._sdk is None:
            import openai

            httpx = _httpx_module()
            http_client = openai.DefaultHttpxClient(
                trust_env=not self.is_loopback,  # a local model server is never reached through a proxy
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=0),
                max_redirects=MAX_REDIRECTS,
                event_hooks={"request": [self._on_request]},
            )
            self._sdk = openai.OpenAI(
                base_url=self.url[: -len("/chat/completions")],
                api_key=self._key or "unused",
                timeout=self.timeout,
                max_retries=0,
                http_client=http_client,
                default_headers={"User-Agent": self._user_agent},
            )
        return self._sdk

    def _on_request(self, request: Any) -> None:
        """httpx request hook: refuse another origin (only a redirect leads there), and hand
        the attempt's deadline the sockets its connections open."""
        origin = _origin(request.url)
        if origin != _origin(_httpx_module().URL(self.url)):
            raise _OffOrigin("{}://{}:{}".format(*origin))
        deadline = getattr(self._local, "deadline", None)
        if deadline is not None:
            request.extensions["trace"] = deadline.trace

    def _throttle(self) -> None:
        with self._lock:
            if self._last_start is not None and self.min_interval > 0:
                wait = self._last_start + self.min_interval - time.monotonic()
                if wait > 0:
                    self._sleep(wait)
            self._last_start = time.monotonic()
            self.requests_sent += 1

    def _post(self, payload: Dict[str, Any]) -> Any:
        import openai

        body = dict(payload)
        model, messages = body.pop("model"), body.pop("messages")
        headers = {} if self._key else {"Authorization": openai.Omit()}
        self._throttle()
        client = self._client()
        deadline = self._local.deadline = _Deadline(self.timeout).start()
        try:
            raw = client.chat.completions.with_raw_response.create(
                model=model, messages=messages, extra_body=body or None, extra_headers=headers
            )
            text = raw.http_response.text
        except openai.APIStatusError as exc:
            code = exc.status_code
            detail = exc.body.get("message") if isinstance(exc.body, dict) else exc.response.text
            reason = exc.response.reason_phrase or ""
            message = f"HTTP {code} {reason}".rstrip() + (
                f": {_short(detail, secrets=self.secrets)}" if detail else ""
            )
            if code >= 500 or code in _RETRY_STATUS:
                raise _Retryable(
                    "http", message, exc.response.headers.get("Retry-After"), code
                ) from None
            cls = APIAuthError if code in (401, 403) else APIRequestError
            err = cls(f"chat server {self.url} rejected the request: {message}")
            err.status = code
            raise err from None
        except (openai.APIConnectionError, _OffOrigin, _httpx_module().TransportError) as exc:
            # APITimeoutError is an APIConnectionError; a hook's exception may come wrapped
            # (older SDKs) or as it is; a body read cut by the deadline may be a bare httpx error.
            cause = exc if not isinstance(exc, openai.APIConnectionError) else exc.__cause__
            if isinstance(cause, _OffOrigin):
                raise APIRequestError(
                    f"chat server {self.url} redirected the request to another origin, {cause.target}: "
                    "not followed (redirects are followed only on the same scheme, host and port, "
                    "so the key never leaves the configured server)"
                ) from None
            if deadline.expired:
                raise _Retryable(
                    "timeout",
                    f"no complete reply within --api-timeout {self.timeout:g}s "
                    "(the whole attempt: connect and every read)",
                ) from None
            if isinstance(exc, (openai.APITimeoutError, _httpx_module().TimeoutException)):
                raise _Retryable(
                    "timeout", f"no reply within --api-timeout {self.timeout:g}s"
                ) from None
            why = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            raise _Retryable("connection", f"connection failed: {why}") from None
        finally:
            self._local.deadline = None
            deadline.finish()
        try:
            return json.loads(text)
        except ValueError:
            raise _Retryable(
                "malformed", f"reply is not JSON: {_short(text, 120, self.secrets)!r}"
            ) from None

    def _extract(self, data: Any, parse: Optional[Callable[[str], Any]]) -> Tuple[Any, ...]:
        """(text, usage, finish_reason, ``parse(text)``) of a reply; :class:`_Retryable` if it
        is no completion or ``parse`` refuses it."""
        if not isinstance(data, dict):
            raise _Retryable("malformed", "reply JSON is not an object")
        if "error" in data and not data.get("choices"):
            err = data["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise APIRequestError(
                f"chat server {self.url} returned an error: {_short(str(msg), secrets=self.secrets)}"
            )
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Retryable("malformed", "reply has no choices[0]")
        message = choices[0].get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(
                str(p.get("text", ""))
                for p in content
                if isinstance(p, dict) and p.get("type") in (None, "text")
            )
        if content is not None and not isinstance(content, str):
            content = str(content)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        try:
            value = None if parse is None else parse(content)
        except MalformedReply as exc:
            raw = self._scrub(content or "")[:2000]  # masked before it is cut
            raise _Retryable("malformed", f"malformed reply: {exc}", raw=raw) from None
        return content, usage, choices[0].get("finish_reason"), value
