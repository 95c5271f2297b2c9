"""Dataset building, the stages without geometry: normalize, queries, language."""

from collections import Counter

import pytest

from habitat_mosnav.dataset_building.common import BuildError
from habitat_mosnav.dataset_building.language import (
    PLURAL_TEMPLATES,
    build_instructions,
    noun_phrase,
    pluralize,
    template_instruction,
)
from habitat_mosnav.dataset_building.normalize import normalize_attributes, normalize_values
from habitat_mosnav.dataset_building.queries import build_queries, check_program, execute


# ----------------------------------------------------------------------------- normalize
def test_normalize_synonyms_and_multiple_values():
    dropped = Counter()
    assert normalize_values("Grey", "color") == ["gray"]
    assert normalize_values(["dark brown", "GREY"], "color") == ["brown", "gray"]
    assert normalize_values("White/Black", "color") == ["white", "black"]
    assert normalize_values("timber", "material") == ["wood"]
    assert normalize_values("wood and metal", "material") == ["wood", "metal"]
    assert normalize_values(["Wooden", "oak", "stainless steel"], "material") == ["wood", "metal"]
    assert normalize_values("sparkly unobtainium", "material", dropped) == []
    assert dropped == Counter({"material:sparkly unobtainium": 1})


def test_normalize_features_kept_as_phrases_and_idempotent():
    raw = {
        "color": ["Light-Grey", "navy"],
        "material": "Marble, glass",
        "feature": ["Glass Door", " with books ", "glass door"],
    }
    once = normalize_attributes(raw)
    assert once == {
        "color": ["gray", "blue"],
        "material": ["stone", "glass"],
        "feature": ["glass door", "with books"],
    }
    assert normalize_attributes(once) == once


# ----------------------------------------------------------------------------- queries
def _goal(oid, cat, color=(), material=(), feature=()):
    return {
        "object_id": oid,
        "category": cat,
        "attributes": {"color": list(color), "material": list(material), "feature": list(feature)},
    }


GOALS = [
    _goal(1, "chair", ["brown"], ["wood"], ["armrest"]),
    _goal(2, "chair", ["brown"], ["wood"]),
    _goal(3, "chair", ["white"], ["metal"]),
    _goal(4, "table", ["brown"], ["wood"]),
]


def _conds(q):
    return tuple((c["field"], c["value"]) for c in q["query_program"]["where"])


def test_queries_programs_matches_and_pure_category():
    queries, counts = build_queries(GOALS, seed=0)
    by = {_conds(q): q for q in queries}
    assert by[(("category", "chair"),)]["matched_object_ids"] == [1, 2, 3]
    assert by[(("category", "chair"),)]["pure_category"] is True
    assert by[(("category", "chair"), ("color", "brown"))]["matched_object_ids"] == [1, 2]
    assert by[(("category", "chair"), ("feature", "armrest"))]["matched_object_ids"] == [1]
    assert by[(("category", "chair"), ("color", "brown"))]["pure_category"] is False
    # brown+wood chairs = brown chairs = wooden chairs: the combination adds nothing.
    assert (("category", "chair"), ("color", "brown"), ("material", "wood")) not in by
    # every table is brown and wooden: only the pure-category query survives for tables.
    assert [c for c in by if ("category", "table") in c] == [(("category", "table"),)]
    assert counts["redundant"] > 0 and counts["kept"] == len(queries)
    assert [q["query_id"] for q in queries] == [f"q{i:04d}" for i in range(len(queries))]
    # pure-category queries come first
    assert [q["pure_category"] for q in queries[:2]] == [True, True]


def test_queries_execute_and_program_errors():
    prog = {"select": "object", "where": [{"field": "category", "op": "==", "value": "sofa"}]}
    assert execute(prog, GOALS) == []
    prog = {"select": "object", "where": [{"field": "material", "op": "==", "value": "wood"}]}
    assert execute(prog, GOALS) == [1, 2, 4]
    with pytest.raises(BuildError, match=r"where\[0\]\.op"):
        check_program(
            {"select": "object", "where": [{"field": "color", "op": "~", "value": "red"}]}
        )
    with pytest.raises(BuildError, match=r"where\[0\]\.field"):
        check_program(
            {"select": "object", "where": [{"field": "size", "op": "==", "value": "big"}]}
        )


def test_queries_keep_redundant_and_max_queries_deterministic():
    all_q, _ = build_queries(GOALS, seed=0, drop_redundant=False)
    assert any(_conds(q) == (("category", "table"), ("color", "brown")) for q in all_q)
    a, _ = build_queries(GOALS, seed=5, max_queries=3)
    b, _ = build_queries(GOALS, seed=5, max_queries=3)
    assert a == b and len(a) == 3
    picks = {
        tuple(_conds(q) for q in build_queries(GOALS, seed=s, max_queries=3)[0]) for s in range(8)
    }
    assert len(picks) > 1  # the seed decides which queries are kept


# ----------------------------------------------------------------------------- language
def test_pluralize():
    assert pluralize("chair") == "chairs"
    assert pluralize("bath mat") == "bath mats"
    assert pluralize("shelf") == "shelves"
    assert pluralize("couch") == "couches"
    assert pluralize("box") == "boxes"
    assert pluralize("chest of drawers") == "chests of drawers"
    assert pluralize("toy library") == "toy libraries"


def _prog(*conds):
    return {"select": "object", "where": [{"field": f, "op": "==", "value": v} for f, v in conds]}


def test_noun_phrase_orders_attributes():
    p = _prog(
        ("category", "chair"), ("color", "brown"), ("material", "wood"), ("feature", "armrest")
    )
    assert noun_phrase(p, plural=True) == "brown wooden chairs with armrests"
    assert noun_phrase(p, plural=False) == "brown wooden chair with an armrest"
    assert (
        noun_phrase(_prog(("category", "tv"), ("feature", "on a stand")), True) == "TVs on a stand"
    )
    assert (
        noun_phrase(_prog(("category", "lamp"), ("feature", "table lamp")), False) == "table lamp"
    )
    assert (
        noun_phrase(_prog(("category", "sofa"), ("feature", "three-seat")), False)
        == "three-seat sofa"
    )


def test_template_instructions_singular_plural_and_seeded():
    q1 = {
        "query_id": "q0001",
        "query_program": _prog(("category", "chair"), ("color", "brown")),
        "matched_object_ids": [1, 2],
    }
    q2 = {
        "query_id": "q0002",
        "query_program": _prog(
            ("category", "sofa"),
        ),
        "matched_object_ids": [7],
    }
    t1 = template_instruction(q1, seed=0, scene_id="S")
    assert t1 in {t.format(np="brown chairs") for t in PLURAL_TEMPLATES}
    assert "the sofa" in template_instruction(q2, seed=0, scene_id="S")
    assert template_instruction(q1, seed=0, scene_id="S") == t1  # deterministic
    variants = {template_instruction(q1, seed=s, scene_id="S") for s in range(20)}
    assert len(variants) >= 3  # several phrasings
    out = build_instructions([q1, q2], seed=0, scene_id="S")
    assert out[0]["instruction"] == t1 and out[0] is not q1 and "instruction" not in q1
