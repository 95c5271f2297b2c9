"""Stage ``queries``: structured query programs from categories and attributes.

A query program is ``{"select": "object", "where": [{"field", "op": "==", "value"}]}``;
conditions are AND-ed; ``category`` compares with the goal's category, the attribute fields
(``color``, ``material``, ``feature``) test membership in the goal's value list. Programs
are executed against goals.json to fill ``matched_object_ids``; a program matching nothing
is dropped. ``pure_category`` marks the programs usable for object-goal (GOAT-style)
episodes: exactly one condition, ``category == <name>`` (SPEC §1).
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.dataset_building.common import ATTRIBUTE_FIELDS, BuildError, rng_for

FIELDS = ("category",) + ATTRIBUTE_FIELDS
OPS = ("==",)


def condition(field: str, value: str) -> Dict[str, str]:
    return {"field": field, "op": "==", "value": value}


def check_program(program: Any, where: str = "query_program") -> None:
    """Raise a one-line BuildError naming the bad part of a program."""
    if not isinstance(program, dict) or program.get("select") != "object":
        raise BuildError(f"{where}: 'select' must be \"object\"")
    conds = program.get("where")
    if not isinstance(conds, list) or not conds:
        raise BuildError(f"{where}: 'where' must be a non-empty list")
    for i, c in enumerate(conds):
        if not isinstance(c, dict):
            raise BuildError(f"{where}.where[{i}]: must be an object")
        if c.get("field") not in FIELDS:
            raise BuildError(f"{where}.where[{i}].field: {c.get('field')!r} not one of {FIELDS}")
        if c.get("op") not in OPS:
            raise BuildError(f"{where}.where[{i}].op: {c.get('op')!r} not one of {OPS}")
        if not isinstance(c.get("value"), str) or not c["value"]:
            raise BuildError(f"{where}.where[{i}].value: must be a non-empty string")


def goal_matches(goal: Dict[str, Any], program: Dict[str, Any]) -> bool:
    attrs = goal.get("attributes") or {}
    for c in program["where"]:
        f, v = c["field"], c["value"]
        if f == "category":
            if goal.get("category") != v:
                return False
        elif v not in (attrs.get(f) or []):
            return False
    return True


def execute(program: Dict[str, Any], goals: Iterable[Dict[str, Any]]) -> List[int]:
    """Object ids of the goals the program selects, sorted."""
    check_program(program)
    return sorted(int(g["object_id"]) for g in goals if goal_matches(g, program))


def is_pure_category(program: Dict[str, Any]) -> bool:
    w = program.get("where") or []
    return len(w) == 1 and w[0].get("field") == "category" and w[0].get("op") == "=="


def _key(conds: Sequence[Tuple[str, str]]) -> Tuple[Tuple[str, str], ...]:
    order = {f: i for i, f in enumerate(FIELDS)}
    return tuple(sorted(conds, key=lambda c: (order[c[0]], c[1])))


def candidate_programs(
    goals: Sequence[Dict[str, Any]], combos: bool = True
) -> List[Tuple[Tuple[str, str], ...]]:
    """Condition tuples: pure category; category + one attribute value; category + colour +
    material (combinations that occur on some goal)."""
    cands = set()
    for g in goals:
        cat = g.get("category")
        if not cat:
            continue
        attrs = g.get("attributes") or {}
        cands.add(_key([("category", cat)]))
        for f in ATTRIBUTE_FIELDS:
            for v in attrs.get(f) or []:
                cands.add(_key([("category", cat), (f, v)]))
        if combos:
            for col, mat in itertools.product(
                attrs.get("color") or [], attrs.get("material") or []
            ):
                cands.add(_key([("category", cat), ("color", col), ("material", mat)]))
            for col, feat in itertools.product(
                attrs.get("color") or [], attrs.get("feature") or []
            ):
                cands.add(_key([("category", cat), ("color", col), ("feature", feat)]))
    return sorted(cands)


def build_queries(
    goals: Sequence[Dict[str, Any]],
    *,
    seed: int = 0,
    scene_id: str = "",
    max_queries: Optional[int] = None,
    drop_redundant: bool = True,
    combos: bool = True,
    min_matches: int = 1,
    max_matches: Optional[int] = None,
) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    """Queries (without instructions) for one scene, and counts of what was dropped.

    ``drop_redundant``: a program whose matched set equals that of a program with fewer
    conditions adds words but no discrimination ("brown chairs" when every chair is brown)
    and is dropped. ``max_queries`` keeps a seed-determined, balanced subset: pure-category
    and attribute queries alternate, and within each, queries matching 1, 2 and ≥3 objects
    alternate, so every target mode gets candidates.
    """
    counts = {"candidates": 0, "empty": 0, "redundant": 0, "too_many": 0, "too_few": 0}
    progs = candidate_programs(goals, combos)
    counts["candidates"] = len(progs)
    matched: Dict[Tuple, Tuple[int, ...]] = {}
    for conds in progs:
        program = {"select": "object", "where": [condition(f, v) for f, v in conds]}
        matched[conds] = tuple(execute(program, goals))
    kept = []
    for conds in progs:
        ids = matched[conds]
        if not ids:
            counts["empty"] += 1
            continue
        if len(ids) < min_matches:
            counts["too_few"] += 1
            continue
        if max_matches is not None and len(ids) > max_matches:
            counts["too_many"] += 1
            continue
        if drop_redundant and len(conds) > 1:
            parents = [c for c in matched if len(c) < len(conds) and set(c) <= set(conds)]
            if any(matched[p] == ids for p in parents):
                counts["redundant"] += 1
                continue
        kept.append(conds)
    if max_queries is not None and len(kept) > max_queries:
        kept = _balanced_subset(kept, matched, max_queries, rng_for("queries", seed, scene_id))
    kept.sort(key=lambda c: (len(c), c))
    queries = []
    for i, conds in enumerate(kept):
        program = {"select": "object", "where": [condition(f, v) for f, v in conds]}
        queries.append(
            {
                "query_id": f"q{i:04d}",
                "query_program": program,
                "instruction": "",
                "matched_object_ids": list(matched[conds]),
                "pure_category": is_pure_category(program),
            }
        )
    counts["kept"] = len(queries)
    return queries, counts


def _balanced_subset(kept, matched, n, rng: np.random.Generator):
    buckets: Dict[Tuple[bool, int], List] = {}
    for conds in kept:
        size = min(len(matched[conds]), 3)
        buckets.setdefault((len(conds) == 1, size), []).append(conds)
    for b in buckets.values():
        rng.shuffle(b)
    order = sorted(
        buckets, key=lambda k: (-k[1], not k[0])
    )  # >=3 matches first: many/all need them
    chosen = []
    while len(chosen) < n and any(buckets[k] for k in order):
        for k in order:
            if buckets[k] and len(chosen) < n:
                chosen.append(buckets[k].pop())
    return chosen


def validate_queries(queries: Sequence[Dict[str, Any]], goal_ids: set, path: str) -> None:
    """Check the fields a queries.json record must have (SPEC §6)."""
    seen = set()
    for i, q in enumerate(queries):
        qid = q.get("query_id") if isinstance(q, dict) else None
        where = f"{path}: query {qid or i}"
        if not isinstance(q, dict) or not isinstance(qid, str):
            raise BuildError(f"{where}: field 'query_id' must be a string")
        if qid in seen:
            raise BuildError(f"{where}: duplicate query_id")
        seen.add(qid)
        check_program(q.get("query_program"), f"{where}: query_program")
        ids = q.get("matched_object_ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(x, int) for x in ids):
            raise BuildError(
                f"{where}: field 'matched_object_ids' must be a non-empty list of ints"
            )
        bad = [x for x in ids if x not in goal_ids]
        if bad:
            raise BuildError(f"{where}: matched object {bad[0]} is not in goals.json")
        if not isinstance(q.get("instruction"), str):
            raise BuildError(f"{where}: field 'instruction' must be a string")
