"""Stage ``language``: one natural-language instruction per query.

Templates by default (several phrasings, chosen deterministically from the seed and the
query id), or an LLM through the same OpenAI-compatible settings as ``attributes``. The
instruction names every condition of the program and never a count: the agent is not told
how many targets there are (SPEC §1), so a query matching one object reads "the brown
chair" and one matching several reads "brown chairs" whatever the target mode.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

from habitat_mosnav.dataset_building.common import rng_for

SINGULAR_TEMPLATES = (
    "Find the {np}.",
    "Go to the {np}.",
    "Locate the {np}.",
    "Look for the {np}.",
    "Navigate to the {np}.",
    "Search the house for the {np}.",
)
PLURAL_TEMPLATES = (
    "Find {np}.",
    "Look for {np}.",
    "Locate {np}.",
    "Search the house for {np}.",
    "Go find {np}.",
    "Navigate to {np}.",
)

MATERIAL_ADJ = {"wood": "wooden", "wool": "woolen", "gold": "golden"}
_IRREGULAR = {
    "shelf": "shelves",
    "bookshelf": "bookshelves",
    "knife": "knives",
    "leaf": "leaves",
    "person": "people",
    "foot": "feet",
    "mouse": "mice",
    "tv": "tvs",
    "couch": "couches",
    "fish": "fish",
    "sheep": "sheep",
    "series": "series",
    "scissors": "scissors",
    "clothes": "clothes",
    "glasses": "glasses",
    "stairs": "stairs",
    "drawers": "drawers",
}
_ADJ_WORDS = {
    "round",
    "square",
    "rectangular",
    "oval",
    "tall",
    "short",
    "small",
    "large",
    "big",
    "long",
    "low",
    "high",
    "wide",
    "narrow",
    "open",
    "closed",
    "modern",
    "vintage",
    "antique",
    "plain",
    "striped",
    "patterned",
    "floral",
    "folding",
    "cushioned",
    "padded",
    "upholstered",
    "glossy",
    "matte",
    "shiny",
    "soft",
    "hanging",
    "framed",
    "empty",
    "full",
    "double",
    "single",
    "wall-mounted",
}


def pluralize(noun: str) -> str:
    """English plural of a (possibly multi-word) category name: "bath mat" -> "bath mats"."""
    noun = noun.strip()
    if " of " in noun:  # "chest of drawers" -> "chests of drawers"
        head, tail = noun.split(" of ", 1)
        return f"{pluralize(head)} of {tail}"
    words = noun.split(" ")
    last = words[-1]
    low = last.lower()
    if low in _IRREGULAR:
        plural = _IRREGULAR[low]
    elif re.search(r"(s|x|z|ch|sh)$", low):
        plural = last + "es"
    elif re.search(r"[^aeiou]y$", low):
        plural = last[:-1] + "ies"
    else:
        plural = last + "s"
    return " ".join(words[:-1] + [plural])


def _is_adjective(feature: str) -> bool:
    if feature.startswith(("with ", "on ", "in ", "without ")):
        return False
    if "-" in feature and " " not in feature:  # "three-seat", "wall-mounted"
        return True
    if " " in feature:
        return False
    return feature in _ADJ_WORDS or bool(re.search(r"(ed|ing|al|ar|ic|ful|ous|less|ish)$", feature))


def _is_plural(phrase: str) -> bool:
    last = phrase.split(" ")[-1]
    return last.endswith("s") and not last.endswith(("ss", "us", "is"))


def with_article(phrase: str) -> str:
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def _feature_phrase(feature: str, plural: bool) -> str:
    """ "glass door" -> "with a glass door" / "with glass doors"; "on a stand" unchanged."""
    if feature.startswith(("with ", "on ", "in ", "without ")):
        return feature
    if _is_plural(feature):
        return f"with {feature}"
    return f"with {pluralize(feature)}" if plural else f"with {with_article(feature)}"


_DISPLAY = {"tv": "TV", "tvs": "TVs"}


def noun_phrase(program: Dict[str, Any], plural: bool) -> str:
    """ "brown wooden chairs with armrests" from a query program."""
    cats, colors, materials, features = [], [], [], []
    for c in program.get("where") or []:
        {"category": cats, "color": colors, "material": materials, "feature": features}.get(
            c["field"],
            [],  # object_id (an instance query) adds no words
        ).append(c["value"])
    noun = cats[0] if cats else "object"
    # A feature naming a kind of the category ("table lamp" of a lamp) replaces the noun.
    for f in list(features):
        if f != noun and f.endswith(" " + noun):
            noun = f
            features.remove(f)
            break
    noun = pluralize(noun) if plural else noun
    noun = " ".join(_DISPLAY.get(w, w) for w in noun.split(" "))
    pre = [f for f in features if _is_adjective(f)]
    post = [f for f in features if not _is_adjective(f)]
    adjs = pre + colors + [MATERIAL_ADJ.get(m, m) for m in materials]
    words = " ".join(adjs + [noun])
    if post:
        words += " " + " and ".join(_feature_phrase(p, plural) for p in post)
    return words


def template_instruction(query: Dict[str, Any], seed: int = 0, scene_id: str = "") -> str:
    plural = len(query.get("matched_object_ids") or []) != 1
    templates: Sequence[str] = PLURAL_TEMPLATES if plural else SINGULAR_TEMPLATES
    i = int(rng_for("language", seed, scene_id, query["query_id"]).integers(len(templates)))
    return templates[i].format(np=noun_phrase(query["query_program"], plural))


LLM_SYSTEM = (
    "You write short instructions for a household robot that searches for objects. "
    "Reply with one imperative sentence only."
)


def llm_prompt(query: Dict[str, Any]) -> str:
    plural = len(query.get("matched_object_ids") or []) != 1
    conds = "; ".join(f"{c['field']} is {c['value']}" for c in query["query_program"]["where"])
    return (
        f"Write one natural instruction asking the robot to find {'objects' if plural else 'the object'} "
        f"with these properties: {conds}. Mention every property, do not mention how many "
        f"there are, and use {'the plural' if plural else 'the singular'}."
    )


def clean_llm_instruction(text: Optional[str]) -> Optional[str]:
    """First non-empty line, quotes stripped, ending with a full stop; None if unusable."""
    if not text:
        return None
    for line in str(text).strip().splitlines():
        line = line.strip().strip("\"'` ").strip()
        if line:
            if len(line) > 200:
                return None
            return line if line[-1] in ".!?" else line + "."
    return None


def build_instructions(
    queries: List[Dict[str, Any]],
    *,
    seed: int = 0,
    scene_id: str = "",
    client=None,
    counts: Optional[Dict[str, int]] = None,
) -> List[Dict[str, Any]]:
    """Fill ``instruction`` of every query: LLM when ``client`` is given (falling back to the
    template when a reply is unusable), else templates."""
    out = []
    for q in queries:
        q = dict(q)
        text = None
        if client is not None:
            text = clean_llm_instruction(
                client.complete_text(
                    LLM_SYSTEM, llm_prompt(q), cache_key=f"{scene_id}-{q['query_id']}"
                )
            )
            if counts is not None:
                counts["llm" if text else "llm_fallback"] = (
                    counts.get("llm" if text else "llm_fallback", 0) + 1
                )
        q["instruction"] = text or template_instruction(q, seed, scene_id)
        out.append(q)
    return out
