"""A small OpenAI-compatible chat-completions client for the ``attributes`` and
``language`` stages (stdlib ``urllib`` only).

Settings come from the environment, then a ``.env`` file (the environment wins):
``MOSNAV_API_KEY`` (or ``OPENAI_API_KEY``), ``MOSNAV_API_BASE`` (or ``OPENAI_BASE_URL`` /
``OPENAI_API_BASE``; default ``https://api.openai.com/v1``), ``MOSNAV_VLM_MODEL`` for image
prompts and ``MOSNAV_LLM_MODEL`` for text prompts (both fall back to ``OPENAI_MODEL``, then
``gpt-4o-mini``). The key is sent in the ``Authorization`` header and nowhere else: it is
never logged, never written to a cache file, and redacted from any error text.

Failures are retried with exponential back-off (HTTP 429, 5xx, timeouts, connection
errors, malformed replies); requests are spaced by a minimum interval (rate limit). A bad
key (401/403) stops the stage with a clear message, since every request would fail.
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from habitat_mosnav.dataset_building.common import ATTRIBUTE_FIELDS, BuildError, log

DEFAULT_BASE = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"


def read_dotenv(path: Path) -> Dict[str, str]:
    """KEY=VALUE lines of a ``.env`` file (python-dotenv when installed)."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        from dotenv import dotenv_values  # type: ignore

        return {k: v for k, v in dotenv_values(path).items() if v is not None}
    except ImportError:
        pass
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        k = k.strip()
        if k.startswith("export "):
            k = k[len("export "):].strip()
        out[k] = v.strip().strip("'\"")
    return out


@dataclass
class ApiSettings:
    """Where and how to call the chat API. ``repr`` hides the key."""

    base_url: str = DEFAULT_BASE
    api_key: str = field(default="", repr=False)
    vlm_model: str = DEFAULT_MODEL
    llm_model: str = DEFAULT_MODEL
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_s: float = 2.0
    min_interval_s: float = 0.0
    max_tokens: int = 300

    @classmethod
    def from_env(cls, env_file: Optional[Path] = None, **overrides) -> "ApiSettings":
        dot = read_dotenv(Path(env_file) if env_file else Path.cwd() / ".env")

        def get(*names: str, default: str = "") -> str:
            for n in names:
                if os.environ.get(n):
                    return os.environ[n]
            for n in names:
                if dot.get(n):
                    return dot[n]
            return default

        model = get("OPENAI_MODEL", default=DEFAULT_MODEL)
        s = cls(base_url=get("MOSNAV_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_BASE", default=DEFAULT_BASE),
                api_key=get("MOSNAV_API_KEY", "OPENAI_API_KEY"),
                vlm_model=get("MOSNAV_VLM_MODEL", default=model),
                llm_model=get("MOSNAV_LLM_MODEL", default=model))
        for k, v in overrides.items():
            if v is not None:
                setattr(s, k, v)
        return s


class ApiError(Exception):
    """A request that failed after all retries (message already key-redacted)."""


class ApiAuthError(BuildError):
    """401/403: the key or the endpoint is wrong; stopping beats failing every goal."""


class MalformedReply(ValueError):
    """The model answered, but not with what was asked for."""


def png_data_url(image: np.ndarray) -> str:
    """A ``data:image/png;base64,...`` URL of an (H, W, 3) uint8 image."""
    import imageio.v3 as iio

    buf = io.BytesIO()
    iio.imwrite(buf, np.ascontiguousarray(image[..., :3]).astype(np.uint8), extension=".png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class ChatClient:
    """Chat-completions over HTTP with retries, back-off and a rate limit."""

    def __init__(self, settings: ApiSettings, sleep: Callable[[float], None] = time.sleep):
        if not settings.api_key:
            raise BuildError("no API key: set MOSNAV_API_KEY (or OPENAI_API_KEY) in the environment "
                             "or a .env file, or run with --offline")
        self.s = settings
        self._sleep = sleep
        self._last = 0.0
        self._lock = threading.Lock()
        self.requests_sent = 0

    def _redact(self, text: str) -> str:
        if self.s.api_key:
            text = text.replace(self.s.api_key, "***")
        return re.sub(r"(?i)bearer\s+\S+", "Bearer ***", text)

    def _throttle(self) -> None:
        with self._lock:
            wait = self._last + self.s.min_interval_s - time.monotonic()
            if wait > 0:
                self._sleep(wait)
            self._last = time.monotonic()

    def _post(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        url = self.s.base_url.rstrip("/")
        if not url.endswith("/chat/completions"):  # a base URL, as the OpenAI clients take
            url += "/chat/completions"
        data = json.dumps(payload).encode("utf-8")
        req = urllib.request.Request(url, data=data, method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.s.api_key}"})
        self._throttle()
        self.requests_sent += 1
        with urllib.request.urlopen(req, timeout=self.s.timeout_s) as resp:
            body = resp.read().decode("utf-8", errors="replace")
        try:
            return json.loads(body)
        except json.JSONDecodeError:
            raise MalformedReply(f"response is not JSON: {body[:200]!r}") from None

    def chat(self, messages: List[Dict[str, Any]], model: str,
             parse: Optional[Callable[[str], Any]] = None,
             attempts_log: Optional[List[Dict[str, Any]]] = None) -> Any:
        """Send the messages; return ``parse(content)`` (or the content).

        Every failed attempt (HTTP error, timeout, malformed reply) is appended to
        ``attempts_log`` and retried after ``backoff_s * 2**i`` seconds; after
        ``max_retries`` retries an ApiError is raised.
        """
        payload = {"model": model, "messages": messages, "temperature": 0,
                   "max_tokens": self.s.max_tokens}
        last_err = "no attempt"
        for attempt in range(self.s.max_retries + 1):
            if attempt:
                self._sleep(self.s.backoff_s * (2 ** (attempt - 1)))
            record: Dict[str, Any] = {"attempt": attempt}
            try:
                reply = self._post(payload)
                content = _content_of(reply)
                record["raw"] = content[:2000]
                result = parse(content) if parse else content
                return result
            except urllib.error.HTTPError as e:
                body = ""
                try:
                    body = e.read().decode("utf-8", errors="replace")[:300]
                except Exception:
                    pass
                last_err = self._redact(f"HTTP {e.code}: {body}".strip())
                record.update(error="http", status=e.code, detail=last_err)
                if e.code in (401, 403):
                    raise ApiAuthError(f"{self.s.base_url}: HTTP {e.code} (check the API key "
                                       "and base URL)") from None
                if e.code not in (408, 409, 425, 429) and e.code < 500:
                    if attempts_log is not None:
                        attempts_log.append(record)
                    raise ApiError(last_err) from None
            except MalformedReply as e:
                last_err = self._redact(f"malformed reply: {e}")
                record.update(error="malformed", detail=last_err)
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                reason = getattr(e, "reason", e)
                last_err = self._redact(f"connection error: {reason}")
                record.update(error="connection", detail=last_err)
            finally:
                if attempts_log is not None and "error" in record and record not in attempts_log:
                    attempts_log.append(record)
        raise ApiError(f"gave up after {self.s.max_retries + 1} attempts; last: {last_err}")

    # -- conveniences for the stages ---------------------------------------------------
    def complete_text(self, system: str, user: str, cache_key: str = "") -> Optional[str]:
        """A text-only completion (language stage); None when it fails."""
        try:
            return self.chat([{"role": "system", "content": system},
                              {"role": "user", "content": user}], self.s.llm_model,
                             parse=_nonempty)
        except ApiError as e:
            log.warning("language: %s: %s", cache_key, e)
            return None


def _nonempty(text: str) -> str:
    if not text or not text.strip():
        raise MalformedReply("empty reply")
    return text


def _content_of(reply: Any) -> str:
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise MalformedReply("no choices[0].message.content in the response") from None
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise MalformedReply("message content is not text")
    return content


ATTRIBUTE_SYSTEM = ("You describe household objects in images for a navigation benchmark. "
                    "Answer with a single JSON object and nothing else.")


def attribute_prompt(category: str) -> str:
    return (f"The images show the same {category} (outlined in the centre of each crop). "
            "Give its visible attributes as JSON: "
            '{"color": [main colours, 1-2 words each], "material": [main materials], '
            '"feature": [distinctive visible parts or properties, short phrases], '
            '"caption": "one short sentence describing it"}. '
            "Use simple common words. Use [] when unsure.")


def parse_attribute_reply(text: str) -> Dict[str, Any]:
    """The JSON object in a model reply (code fences and chatter around it tolerated).

    Raises MalformedReply unless it holds ``color``, ``material``, ``feature`` as a string or
    a list of strings, and an optional string ``caption``.
    """
    if not isinstance(text, str) or not text.strip():
        raise MalformedReply("empty reply")
    m = re.search(r"\{.*\}", text, flags=re.S)
    if not m:
        raise MalformedReply(f"no JSON object in reply: {text[:120]!r}")
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError as e:
        raise MalformedReply(f"invalid JSON in reply ({e.msg})") from None
    if not isinstance(obj, dict):
        raise MalformedReply("reply JSON is not an object")
    out: Dict[str, Any] = {}
    for k in ATTRIBUTE_FIELDS:
        v = obj.get(k, obj.get(k + "s"))
        if v is None:
            raise MalformedReply(f"reply has no '{k}'")
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise MalformedReply(f"reply field '{k}' is not a list of strings")
        out[k] = [x for x in v if x.strip()]
    cap = obj.get("caption", "")
    out["caption"] = cap if isinstance(cap, str) else ""
    return out


def attribute_messages(category: str, images: Sequence[np.ndarray]) -> List[Dict[str, Any]]:
    content: List[Dict[str, Any]] = [{"type": "text", "text": attribute_prompt(category)}]
    for im in images:
        content.append({"type": "image_url", "image_url": {"url": png_data_url(im)}})
    return [{"role": "system", "content": ATTRIBUTE_SYSTEM}, {"role": "user", "content": content}]
