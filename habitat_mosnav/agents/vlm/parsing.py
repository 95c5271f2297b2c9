"""Turn a model's chat reply into an action id (SPEC §2).

Two layers, because users of VLM agents expect both: a *strict* format the system prompt
asks for (``ACTION: <id>`` or a JSON object ``{"action": <id or name>}``), and a
*tolerant* fallback for models that answer in prose (the last action name mentioned, else
the last standalone action id). A strict answer with an id outside SPEC §2 is not rescued
by the fallback: the model said something explicit and wrong, so the reply is unparseable.

A reply is whatever a server sent, so parsing takes time linear in its length: the
reasoning blocks are found in one left-to-right pass over fixed-width tags (no pattern that
looks for a closing tag from every opening one), the strict ``ACTION: <id>`` form is read
in a window of :data:`STRICT_WINDOW` characters after each ``action`` keyword, and the
other patterns are applied once each, every unbounded repeat in them followed by
characters it cannot take (so a failed attempt gives back at most one run). Numbers longer
than 9 digits are no action id (and never reach ``int``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from habitat_mosnav.api import Action

__all__ = [
    "VALID_ACTION_IDS",
    "ACTION_NAMES",
    "STRICT_WINDOW",
    "ParsedReply",
    "parse_action",
    "strip_reasoning",
]

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
    # "not after a letter or digit" is checked behind the first word, not before it, so
    # that the engine can jump from one occurrence of the word to the next.
    words = [re.escape(w) for w in phrase.split()]
    return (
        words[0]
        + rf"(?<![a-z0-9]{words[0]})"
        + r"".join(r"[\s_\-]+" + w for w in words[1:])
        + r"(?![a-z0-9])"
    )


_NAME_PATTERNS = [
    (action_id, re.compile(_phrase_regex(p), re.IGNORECASE))
    for action_id, phrases in _NAME_PHRASES.items()
    for p in phrases
]
#: Characters after the word ``action`` in which a strict answer must be complete.
STRICT_WINDOW = 64
# "ACTION: 3", "action = 3", "**Action:** 3", "Action: [3]"; the last one wins. Found as a
# keyword (fixed width), then read from there within STRICT_WINDOW characters; after the
# separator one run of spaces and stars ([\s*]*), then an optional bracket: no two
# repeats that could share a character (the old \s*\**\s*[...]?\s* took cubic time
# on a long run of spaces).
_STRICT_KEY_RE = re.compile(r"\baction\b", re.IGNORECASE)
_STRICT_TAIL_RE = re.compile(r"\W{0,6}?\s*[:=][\s*]*(?:[\[(\"']\s*)?(-?\d+)")
# A standalone integer: not part of a word, a decimal ("0.25") or a unit ("30°", "30 deg").
_DIGIT_RE = re.compile(
    r"(?<![\w.\-])(\d+)(?![\w°]|\.\d|\s*(?:deg|degrees|m\b|cm\b|meters|metres|%))", re.IGNORECASE
)
# An opening or closing reasoning tag: fixed width, so one finditer pass is linear.
_TAG_RE = re.compile(r"<(/?)(think|thinking|reasoning)>", re.IGNORECASE)
#: Longest number read as an action id; longer ones are no id (and never reach int()).
_MAX_ID_DIGITS = 9
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
    A block ends at the first closing tag of its own name (``<think>`` ... ``</think>``,
    case-insensitive) and becomes one space; tags inside a block are part of it. One pass
    over the tags, each closing tag looked up once: linear in the length of the reply.
    """
    tags = list(_TAG_RE.finditer(text))
    closings: Dict[str, List[int]] = {}  # name -> indices in ``tags`` of its closing tags
    for i, tag in enumerate(tags):
        if tag.group(1):
            closings.setdefault(tag.group(2).casefold(), []).append(i)
    next_closing = {name: 0 for name in closings}  # openings come in order: never look back
    out: List[str] = []
    pos = 0
    for i, tag in enumerate(tags):
        if tag.group(1) or tag.start() < pos:
            continue  # a closing tag, or a tag inside a block already dropped
        name = tag.group(2).casefold()
        ends = closings.get(name, [])
        k = next_closing.get(name, 0)
        while k < len(ends) and ends[k] < i:
            k += 1
        next_closing[name] = k
        out.append(text[pos : tag.start()])
        if k == len(ends):  # never closed: the reply was cut inside it
            return "".join(out)
        out.append(" ")
        pos = tags[ends[k]].end()
    out.append(text[pos:])
    return "".join(out)


def _as_id(digits: str) -> Optional[int]:
    """``int(digits)``, or None for a number too long to be an action id."""
    return int(digits) if len(digits.lstrip("-")) <= _MAX_ID_DIGITS else None


def _name_to_id(value: str) -> Optional[int]:
    value = value.strip()
    if re.fullmatch(r"-?\d+", value):
        return _as_id(value)
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
            shown = value if len(value) <= 40 else value[:40] + "..."
            return ParsedReply(None, "json", f"JSON action {shown!r} names no action")
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

    strict = None
    for key in _STRICT_KEY_RE.finditer(text):
        m = _STRICT_TAIL_RE.match(text, key.end(), key.end() + STRICT_WINDOW)
        if m:
            strict = m.group(1)
    if strict is not None:
        aid = _as_id(strict)
        if aid in VALID_ACTION_IDS:
            return ParsedReply(aid, "strict")
        shown = strict if len(strict) <= 12 else strict[:12] + "..."
        return ParsedReply(None, "strict", f"ACTION: {shown} is not a valid action id")

    parsed = _json_action(text)
    if parsed is not None:
        return parsed
    if not tolerant:
        return ParsedReply(None, "none", "no 'ACTION: <id>' line or JSON action")

    # "ACTION: MOVE_FORWARD" and other prose: the last action name mentioned.
    hits = [(m.start(), aid) for aid, rx in _NAME_PATTERNS for m in rx.finditer(text)]
    if hits:
        return ParsedReply(max(hits)[1], "name")
    digits = [_as_id(m.group(1)) for m in _DIGIT_RE.finditer(text)]
    digits = [d for d in digits if d in VALID_ACTION_IDS]
    if digits:
        return ParsedReply(digits[-1], "digit")
    return ParsedReply(None, "none", "no action id or action name found")
