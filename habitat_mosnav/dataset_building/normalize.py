"""Stage ``normalize``: canonical colour / material vocabularies, synonyms, multiple values.

VLM replies (and hand-written metadata) say "grey", "Dark Brown", "timber", "wood and
metal" or "white/black". Queries only work when the same thing is spelled the same way, so
every value is mapped onto a small canonical vocabulary; values that map to nothing are
dropped (and counted) rather than inventing a query nobody can phrase.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Tuple

from habitat_mosnav.dataset_building.common import ATTRIBUTE_FIELDS, norm_text

COLORS = (
    "black",
    "white",
    "gray",
    "brown",
    "beige",
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "gold",
    "silver",
)

COLOR_SYNONYMS = {
    "grey": "gray",
    "dark gray": "gray",
    "light gray": "gray",
    "charcoal": "gray",
    "slate": "gray",
    "ash": "gray",
    "dark brown": "brown",
    "light brown": "brown",
    "walnut": "brown",
    "chocolate": "brown",
    "mahogany": "brown",
    "chestnut": "brown",
    "oak": "brown",
    "espresso": "brown",
    "coffee": "brown",
    "tan": "beige",
    "cream": "beige",
    "ivory": "beige",
    "khaki": "beige",
    "off white": "white",
    "off-white": "white",
    "eggshell": "white",
    "crimson": "red",
    "maroon": "red",
    "burgundy": "red",
    "scarlet": "red",
    "navy": "blue",
    "navy blue": "blue",
    "teal": "blue",
    "turquoise": "blue",
    "cyan": "blue",
    "sky blue": "blue",
    "light blue": "blue",
    "dark blue": "blue",
    "olive": "green",
    "lime": "green",
    "dark green": "green",
    "light green": "green",
    "mint": "green",
    "violet": "purple",
    "lavender": "purple",
    "magenta": "pink",
    "rose": "pink",
    "golden": "gold",
    "brass": "gold",
    "chrome": "silver",
    "metallic": "silver",
    "ebony": "black",
    "jet black": "black",
}

MATERIALS = (
    "wood",
    "metal",
    "glass",
    "fabric",
    "leather",
    "plastic",
    "stone",
    "ceramic",
    "paper",
    "rubber",
    "wicker",
)

MATERIAL_SYNONYMS = {
    "timber": "wood",
    "wooden": "wood",
    "oak": "wood",
    "pine": "wood",
    "walnut": "wood",
    "plywood": "wood",
    "mdf": "wood",
    "bamboo": "wood",
    "hardwood": "wood",
    "steel": "metal",
    "iron": "metal",
    "aluminum": "metal",
    "aluminium": "metal",
    "brass": "metal",
    "chrome": "metal",
    "metallic": "metal",
    "stainless steel": "metal",
    "copper": "metal",
    "cloth": "fabric",
    "textile": "fabric",
    "cotton": "fabric",
    "linen": "fabric",
    "velvet": "fabric",
    "upholstery": "fabric",
    "upholstered": "fabric",
    "wool": "fabric",
    "polyester": "fabric",
    "canvas": "fabric",
    "suede": "leather",
    "faux leather": "leather",
    "vinyl": "plastic",
    "acrylic": "plastic",
    "resin": "plastic",
    "marble": "stone",
    "granite": "stone",
    "concrete": "stone",
    "slate": "stone",
    "porcelain": "ceramic",
    "tile": "ceramic",
    "clay": "ceramic",
    "terracotta": "ceramic",
    "cardboard": "paper",
    "rattan": "wicker",
    "mirror": "glass",
    "glassy": "glass",
}

_SPLIT = re.compile(r"\s*(?:,|/|;|\band\b|\bor\b|\bwith\b|&|\+)\s*")
_FILLER = re.compile(
    r"\b(?:mostly|mainly|partly|some|a|an|the|colou?red|toned?|painted|"
    r"finish|shade|of|made)\b"
)


def _pieces(value: Any) -> List[str]:
    """Split one raw value ("wood and metal", ["White/Black"]) into lower-case pieces."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        out: List[str] = []
        for v in value:
            out.extend(_pieces(v))
        return out
    text = norm_text(str(value))
    return [p for p in (norm_text(x) for x in _SPLIT.split(text)) if p]


def _canonical(piece: str, vocab: Tuple[str, ...], synonyms: Dict[str, str]) -> Optional[str]:
    if piece in vocab:
        return piece
    if piece in synonyms:
        return synonyms[piece]
    stripped = re.sub(r"\s+", " ", _FILLER.sub(" ", piece)).strip()
    if stripped in vocab:
        return stripped
    if stripped in synonyms:
        return synonyms[stripped]
    # "dark wooden", "light-grey": try the last word, then any word.
    words = re.split(r"[\s-]+", stripped)
    for w in [words[-1]] + words[:-1] if words else []:
        if w in vocab:
            return w
        if w in synonyms:
            return synonyms[w]
    return None


def normalize_values(value: Any, kind: str, dropped: Optional[Counter] = None) -> List[str]:
    """Canonical, de-duplicated values (in first-seen order) of one attribute field.

    ``kind`` is ``color``, ``material`` or ``feature``. Colours and materials outside the
    vocabulary are dropped (counted in ``dropped``); features are free text, tidied up.
    """
    out: List[str] = []
    if kind == "feature":
        # Features are phrases ("armrests", "glass doors"): only tidy, never split on "and".
        raw = value if isinstance(value, (list, tuple)) else ([] if value is None else [value])
        for v in raw:
            t = norm_text(v)
            if t and t not in out:
                out.append(t)
        return out
    vocab, syn = (COLORS, COLOR_SYNONYMS) if kind == "color" else (MATERIALS, MATERIAL_SYNONYMS)
    for piece in _pieces(value):
        c = _canonical(piece, vocab, syn)
        if c is None:
            if dropped is not None:
                dropped[f"{kind}:{piece}"] += 1
            continue
        if c not in out:
            out.append(c)
    return out


def normalize_attributes(attrs: Any, dropped: Optional[Counter] = None) -> Dict[str, List[str]]:
    """All three fields of one goal's attributes, canonical."""
    attrs = attrs if isinstance(attrs, dict) else {}
    return {k: normalize_values(attrs.get(k), k, dropped) for k in ATTRIBUTE_FIELDS}


def normalize_goals(
    goals: Iterable[Dict[str, Any]], dropped: Optional[Counter] = None
) -> List[Dict[str, Any]]:
    """Copies of the goals with normalized attributes (idempotent)."""
    out = []
    for g in goals:
        g = dict(g)
        g["attributes"] = normalize_attributes(g.get("attributes"), dropped)
        out.append(g)
    return out
