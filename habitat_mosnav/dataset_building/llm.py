"""The attributes and language stages' use of the chat API: settings, prompts, reply
parsing. The HTTP client (retries, back-off, rate limit, key redaction) is
:mod:`habitat_mosnav.chat`, the same one the VLM agent uses.

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

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from habitat_mosnav.chat import (
    APIAuthError,
    APIError,
    ChatClient,
    ChatResult,
    MalformedReply,
    env_value,
    png_data_url,
)
from habitat_mosnav.dataset_building.common import ATTRIBUTE_FIELDS, BuildError, log

__all__ = [
    "APIError",
    "ApiAuthError",
    "ApiSettings",
    "MalformedReply",
    "StageClient",
    "attribute_messages",
    "parse_attribute_reply",
]

DEFAULT_BASE = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"


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
        env_file = Path(env_file) if env_file else Path.cwd() / ".env"

        def get(*names: str, default: str = "") -> str:
            return env_value(*names, env_file=env_file, default=default)

        model = get("OPENAI_MODEL", default=DEFAULT_MODEL)
        s = cls(
            base_url=get(
                "MOSNAV_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_BASE", default=DEFAULT_BASE
            ),
            api_key=get("MOSNAV_API_KEY", "OPENAI_API_KEY"),
            vlm_model=get("MOSNAV_VLM_MODEL", default=model),
            llm_model=get("MOSNAV_LLM_MODEL", default=model),
        )
        for k, v in overrides.items():
            if v is not None:
                setattr(s, k, v)
        return s


class ApiAuthError(BuildError):
    """401/403: the key or the endpoint is wrong; stopping beats failing every goal."""


class StageClient:
    """The stages' handle on one :class:`~habitat_mosnav.chat.ChatClient`: the models of
    the settings, and a bad key as a one-line :class:`BuildError`."""

    def __init__(self, settings: ApiSettings, sleep: Callable[[float], None] = time.sleep):
        if not settings.api_key:
            raise BuildError(
                "no API key: set MOSNAV_API_KEY (or OPENAI_API_KEY) in the environment "
                "or a .env file, or run with --offline"
            )
        self.s = settings
        self.client = ChatClient(
            settings.base_url,
            settings.api_key,
            timeout=settings.timeout_s,
            retries=settings.max_retries,
            backoff=settings.backoff_s,
            min_interval=settings.min_interval_s,
            sleep=sleep,
            user_agent="habitat_mosnav-build",
        )

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def chat(
        self,
        messages: List[Dict[str, Any]],
        model: str,
        parse: Optional[Callable[[str], Any]] = None,
    ) -> ChatResult:
        """Send the messages; ``result.value`` is ``parse(content)``. A reply that fails
        ``parse`` (:class:`MalformedReply`) is retried; after every retry an
        :class:`APIError` is raised (its ``attempt_log`` lists the failed attempts)."""
        payload = {
            "model": model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.s.max_tokens,
        }
        try:
            return self.client.complete(payload, parse=parse)
        except APIAuthError as e:
            raise ApiAuthError(f"{e} (check the API key and base URL)") from None

    def complete_text(self, system: str, user: str, cache_key: str = "") -> Optional[str]:
        """A text-only completion (language stage); None when it fails."""
        try:
            return self.chat(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                self.s.llm_model,
                parse=_nonempty,
            ).value
        except ApiAuthError:
            raise
        except APIError as e:
            log.warning("language: %s: %s", cache_key, e)
            return None


def _nonempty(text: Optional[str]) -> str:
    if not text or not text.strip():
        raise MalformedReply("empty reply")
    return text


ATTRIBUTE_SYSTEM = (
    "You describe household objects in images for a navigation benchmark. "
    "Answer with a single JSON object and nothing else."
)


def attribute_prompt(category: str) -> str:
    return (
        f"The images show the same {category} (outlined in the centre of each crop). "
        "Give its visible attributes as JSON: "
        '{"color": [main colours, 1-2 words each], "material": [main materials], '
        '"feature": [distinctive visible parts or properties, short phrases], '
        '"caption": "one short sentence describing it"}. '
        "Use simple common words. Use [] when unsure."
    )


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
