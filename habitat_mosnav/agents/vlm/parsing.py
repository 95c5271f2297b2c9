"""Turn a model's chat reply into an action id (SPEC §2).

Two layers, because users of VLM agents expect both: a *strict* format the system prompt
asks for (``ACTION: <id>`` or a JSON object ``{"action": <id or name>}``), and a
*tolerant* fallback for models that answer in prose (the last action name mentioned, else
the last standalone action id). A strict answer with an id outside SPEC §2 is not rescued
by the fallback: the model said something explicit and wrong, so the reply is unparseable.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from habitat_mosnav.api import Action

__all__ = ["VALID_ACTION_IDS", "ACTION_NAMES", "ParsedReply", "parse_action", "strip_reasoning"]

#: Ids a reply may name: 0-6 and the legacy FINISH alias 9 (SPEC §2).
VALID_ACTION_IDS = frozenset(int(a) for a in Action)

#: Canonical names shown to the model, by id.
ACTION_NAMES = {int(a): a.name for a in Action}

# Phrases accepted by the tolerant fallback, per id. Separators between words may be a
# space, an underscore or a hyphen ("move forward", "MOVE_FORWARD", "move-forward").
# Single bare words such as "left" or "done" are deliberately absent: in prose they are
# far more often descriptions ("the chair on the left") than decisions.
_NAME_PHRASES = {
    0: ["finish", "stop", "end episode", "end the episode"],
    1: ["move forward", "go forward", "move ahead", "go straight"],
    2: ["turn left", "rotate left"],
    3: ["turn right", "rotate right"],
    4: ["look up", "tilt up"],
    5: ["look down", "tilt down"],
    6: ["target found", "found target", "subtask stop"],
    9: ["legacy finish"],
}


def _phrase_regex(phrase: str) -> str:
    words = [re.escape(w) for w in phrase.split()]
    return r"(?<![a-z0-9])" + r"[\s_\-]+".join(words) + r"(?![a-z0-9])"


_NAME_PATTERNS = [
    (action_id, re.compile(_phrase_regex(p), re.IGNORECASE))
    for action_id, phrases in _NAME_PHRASES.items()
    for p in phrases
]
# "ACTION: 3", "action = 3", "**Action:** 3", "Action: [3]"; the last one wins.
_STRICT_RE = re.compile(r"\baction\b\W{0,6}?\s*[:=]\s*\**\s*[\[(\"']?\s*(-?\d+)", re.IGNORECASE)
# A standalone integer: not part of a word, a decimal ("0.25") or a unit ("30°", "30 deg").
_DIGIT_RE = re.compile(r"(?<![\w.\-])(\d+)(?![\w°]|\.\d|\s*(?:deg|degrees|m\b|cm\b|meters|metres|%))",
                       re.IGNORECASE)
_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_JSON_RE = re.compile(r"\{[^{}]*\}", re.DOTALL)


@dataclass(frozen=True)
class ParsedReply:
    """The outcome of parsing one reply: ``action`` is None when unparseable."""

    action: Optional[int]
    method: str  # "strict", "json", "name", "digit" or "none"
    reason: str = ""


def strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` blocks (reasoning models served by vLLM/SGLang).

    An unclosed ``<think>`` (the reply was cut at max_tokens) drops everything after it.
    """
    text = _THINK_RE.sub(" ", text)
    m = re.search(r"<(think|thinking|reasoning)>", text, re.IGNORECASE)
    if m:
        text = text[: m.start()]
    return text


def _name_to_id(value: str) -> Optional[int]:
    value = value.strip()
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    hits = [(m.start(), aid) for aid, rx in _NAME_PATTERNS for m in rx.finditer(value)]
    if not hits:
        return None
    return max(hits)[1]


def _json_action(text: str) -> Optional[ParsedReply]:
    """The last JSON object in the text that has an ``action`` key."""
    found = None
    for m in _JSON_RE.finditer(text):
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        key = next((k for k in obj if str(k).lower() in ("action", "action_id")), None)
        if key is None:
            continue
        found = obj[key]
    if found is None:
        return None
    value: Any = found
    if isinstance(value, bool):
        return ParsedReply(None, "json", f"JSON action is a boolean ({value!r})")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        aid: Optional[int] = value
    elif isinstance(value, str):
        aid = _name_to_id(value)
        if aid is None:
            return ParsedReply(None, "json", f"JSON action {value!r} names no action")
    else:
        return ParsedReply(None, "json", f"JSON action has type {type(value).__name__}")
    if aid not in VALID_ACTION_IDS:
        return ParsedReply(None, "json", f"JSON action {aid} is not a valid action id")
    return ParsedReply(aid, "json")


def parse_action(reply: Optional[str], tolerant: bool = True) -> ParsedReply:
    """Parse a reply: strict ``ACTION: <id>`` / JSON first, then (if ``tolerant``) prose."""
    if reply is None or not str(reply).strip():
        return ParsedReply(None, "none", "empty reply")
    text = strip_reasoning(str(reply))
    if not text.strip():
        return ParsedReply(None, "none", "reply holds only reasoning, no answer")

    strict = list(_STRICT_RE.finditer(text))
    if strict:
        aid = int(strict[-1].group(1))
        if aid in VALID_ACTION_IDS:
            return ParsedReply(aid, "strict")
        return ParsedReply(None, "strict", f"ACTION: {aid} is not a valid action id")

    parsed = _json_action(text)
    if parsed is not None:
        return parsed
    if not tolerant:
        return ParsedReply(None, "none", "no 'ACTION: <id>' line or JSON action")

    # "ACTION: MOVE_FORWARD" and other prose: the last action name mentioned.
    hits = [(m.start(), aid) for aid, rx in _NAME_PATTERNS for m in rx.finditer(text)]
    if hits:
        return ParsedReply(max(hits)[1], "name")
    digits = [int(m.group(1)) for m in _DIGIT_RE.finditer(text)]
    digits = [d for d in digits if d in VALID_ACTION_IDS]
    if digits:
        return ParsedReply(digits[-1], "digit")
    return ParsedReply(None, "none", "no action id or action name found")
