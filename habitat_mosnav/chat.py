"""A small chat-completions client for OpenAI-compatible servers (vLLM, SGLang, hosted APIs).

Standard library only (urllib), so ``--agent api`` needs no SDK. Why not the SDK: we want
exact control of time-outs, retries and what is logged, and the key must never leave this
module except in the ``Authorization`` header.

Errors are typed so the rollout can record an episode as ``error`` with a clear
``error_type``: :class:`APIUnavailableError` (the server stayed down / kept failing after
every retry) and :class:`APIRequestError` (the server refused the request: 4xx, bad
credentials, unknown model — retrying would not help).
"""
from __future__ import annotations

import json
import os
import random
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = [
    "APIError",
    "APIUnavailableError",
    "APIRequestError",
    "ChatResult",
    "ChatClient",
    "chat_completions_url",
    "load_api_key",
    "read_env_file",
]

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_RETRY_STATUS = {408, 409, 425, 429}
_MAX_ERROR_BODY = 300


class APIError(RuntimeError):
    """Base class of chat-server errors.

    ``attempts`` is the number of HTTP requests the failed call sent.
    """

    attempts: int = 1


class APIUnavailableError(APIError):
    """The server could not be reached or kept failing (5xx, time-outs) after all retries."""


class APIRequestError(APIError):
    """The server rejected the request (4xx other than rate limits) or sent no usable reply."""


@dataclass
class ChatResult:
    """One successful completion: the assistant text plus what it cost."""

    text: Optional[str]
    attempts: int
    latency_s: float
    usage: Dict[str, Any] = field(default_factory=dict)
    finish_reason: Optional[str] = None
    errors: List[str] = field(default_factory=list)


def chat_completions_url(api_base: str) -> str:
    """``http://host:8000/v1`` -> ``http://host:8000/v1/chat/completions`` (idempotent)."""
    base = api_base.strip().rstrip("/")
    if not re.match(r"^https?://", base, re.IGNORECASE):
        raise ValueError(f"--api-base {api_base!r}: expected an http:// or https:// URL")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


def read_env_file(path: Path) -> Dict[str, str]:
    """Values of a ``.env`` file, without touching ``os.environ``.

    Uses python-dotenv when installed; otherwise a small parser for ``KEY=VALUE`` lines
    (optional ``export``, quotes, ``#`` comments).
    """
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        from dotenv import dotenv_values  # type: ignore
    except ImportError:
        dotenv_values = None
    if dotenv_values is not None:
        return {k: v for k, v in dotenv_values(path).items() if v is not None}
    values: Dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", key):
            continue
        value = value.strip()
        if value[:1] in ("'", '"'):
            quote = value[0]
            end = value.find(quote, 1)
            value = value[1:end] if end > 0 else value[1:]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        values[key] = value
    return values


def load_api_key(env_var: str = "OPENAI_API_KEY", env_file: Optional[str] = ".env") -> Optional[str]:
    """The key from the environment variable ``env_var``, else from ``env_file``; None if absent.

    A missing key is not an error: local servers (vLLM, SGLang) usually need none.
    """
    value = os.environ.get(env_var)
    if value:
        return value.strip()
    if env_file:
        value = read_env_file(Path(env_file)).get(env_var)
        if value:
            return value.strip()
    return None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in _LOOPBACK or host.startswith("127.")


def _short(text: str, limit: int = _MAX_ERROR_BODY) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(self, message: str, retry_after: Optional[float] = None):
        super().__init__(message)
        self.retry_after = retry_after


class ChatClient:
    """POSTs chat-completions requests with time-outs and exponential back-off.

    ``timeout`` bounds each attempt (connect, wait for the reply, read the body); an
    attempt gets at most ``retries`` repeats after 5xx/408/429, time-outs, dropped
    connections or an unreadable body, waiting ``backoff * 2**k`` seconds (capped at
    ``max_backoff``, plus up to 10% jitter). So one call waits at most about
    ``(retries + 1) * timeout + sum(back-offs)`` seconds: a dead server never hangs a run.
    """

    def __init__(
        self,
        api_base: str,
        api_key: Optional[str] = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str = "habitat_mosnav-api-agent",
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
        self._sleep = sleep
        self._key = api_key or None
        self._user_agent = user_agent
        handlers = []
        if _is_loopback(self.url):
            # A local model server must not be routed through an HTTP(S)_PROXY.
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(url={self.url!r}, timeout={self.timeout}, retries={self.retries})"

    @property
    def has_key(self) -> bool:
        return self._key is not None

    @property
    def is_loopback(self) -> bool:
        """The server runs on this machine (no proxy, and usually no key needed)."""
        return _is_loopback(self.url)

    def max_wait_s(self) -> float:
        """Upper bound of the seconds one :meth:`complete` call can take (approximately)."""
        waits = sum(min(self.max_backoff, self.backoff * 2 ** k) * 1.1 for k in range(self.retries))
        # Each attempt: the socket time-out for the reply plus the body deadline.
        return (self.retries + 1) * 2 * self.timeout + waits

    def complete(self, payload: Dict[str, Any]) -> ChatResult:
        """Send one request; return the assistant text or raise an :class:`APIError`."""
        body = json.dumps(payload).encode("utf-8")
        errors: List[str] = []
        t0 = time.monotonic()
        for attempt in range(self.retries + 1):
            try:
                data = self._post(body)
                text, usage, finish = self._extract(data)
                return ChatResult(text, attempt + 1, time.monotonic() - t0, usage, finish, errors)
            except APIError as exc:
                exc.args = (self._scrub(str(exc)),)
                exc.attempts = attempt + 1
                raise
            except _Retryable as exc:
                errors.append(str(exc))
                if attempt >= self.retries:
                    break
                delay = min(self.max_backoff, self.backoff * 2 ** attempt)
                delay += random.uniform(0.0, 0.1 * delay)
                if exc.retry_after is not None:
                    delay = max(delay, min(self.max_backoff, exc.retry_after))
                self._sleep(delay)
        exc = APIUnavailableError(self._scrub(
            f"chat server {self.url} unavailable after {self.retries + 1} attempt(s) "
            f"in {time.monotonic() - t0:.1f}s; last error: {errors[-1]}"
        ))
        exc.attempts = self.retries + 1
        raise exc

    # ----------------------------------------------------------------- internals
    def _scrub(self, text: str) -> str:
        """Mask the key should a server echo it back in an error body."""
        return text.replace(self._key, "***") if self._key else text

    def _headers(self) -> Dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self._user_agent,
        }
        if self._key:
            headers["Authorization"] = "Bearer " + self._key
        return headers

    def _post(self, body: bytes) -> Any:
        request = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        deadline = time.monotonic() + self.timeout
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = self._read_body(response, deadline)
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                detail = _short(exc.read().decode("utf-8", errors="replace"))
            except Exception:  # noqa: BLE001 - the body is only for the message
                pass
            message = f"HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else "")
            if exc.code >= 500 or exc.code in _RETRY_STATUS:
                retry_after = None
                value = exc.headers.get("Retry-After") if exc.headers else None
                if value:
                    try:
                        retry_after = float(value)
                    except ValueError:
                        retry_after = None
                raise _Retryable(message, retry_after) from None
            raise APIRequestError(f"chat server {self.url} rejected the request: {message}") from None
        except (socket.timeout, TimeoutError) as exc:
            raise _Retryable(f"no reply within --api-timeout {self.timeout:g}s ({exc or 'timed out'})") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise _Retryable(f"no reply within --api-timeout {self.timeout:g}s") from None
            raise _Retryable(f"connection failed: {reason}") from None
        except (HTTPException, ConnectionError, OSError) as exc:
            raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}") from None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _Retryable(f"reply is not JSON: {_short(raw.decode('utf-8', errors='replace'), 120)!r}") from None

    def _read_body(self, response: Any, deadline: float) -> bytes:
        chunks = []
        while True:
            if time.monotonic() > deadline:
                raise socket.timeout("reply body not complete within the time-out")
            chunk = response.read(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def _extract(self, data: Any) -> Tuple[Optional[str], Dict[str, Any], Optional[str]]:
        if not isinstance(data, dict):
            raise _Retryable("reply JSON is not an object")
        if "error" in data and not data.get("choices"):
            err = data["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise APIRequestError(f"chat server {self.url} returned an error: {_short(str(msg))}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Retryable("reply has no choices[0]")
        message = choices[0].get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in (None, "text")
            )
        if content is not None and not isinstance(content, str):
            content = str(content)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return content, usage, choices[0].get("finish_reason")
