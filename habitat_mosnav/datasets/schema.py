"""Reading and validating ``dataset_semantic/<scene_id>/{goals,queries,episodes}.json``.

Every problem becomes one :class:`DatasetFormatError` line naming the file, the record
(goal / query / episode id) and the field (SPEC §6). The structure is the JSON Schema
``habitat_mosnav/schemas/dataset.schema.json``; this module adds what a schema cannot
say (ids unique and known to the other files, counts in range, non-zero rotations). No
habitat import: the dataset building pipeline validates its own output with it too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from habitat_mosnav.api import SEQUENTIAL
from habitat_mosnav.keys import KEY_SEP
from habitat_mosnav.metrics.open_path import solver_refusal
from habitat_mosnav.schemas import first_error

SCHEMA_VERSION = 1
FILES = ("goals.json", "queries.json", "episodes.json")
#: The most digits an integer in a dataset file may have (a 64-bit integer has 19).
MAX_INT_DIGITS = 20
#: How deeply a dataset file may nest (free-form values: an episode's ``info``, a goal's
#: ``attributes``, a query condition's ``value``; a dataset itself nests 6 levels).
MAX_NESTING = 40
#: A record's name (``goal 7``, or ``goal #3`` without a valid id) by its list in a file.
_RECORDS = {
    "goals": ("goal {}", "object_id"),
    "queries": ("query '{}'", "query_id"),
    "episodes": ("episode '{}'", "episode_id"),
}


class DatasetFormatError(ValueError):
    """A one-line, user-facing problem with a dataset file."""


class _Unreadable(ValueError):
    """A number the JSON reader refuses (raised by its hooks, named with the file)."""


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Unreadable(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _fail(path: str, record: str, field: str, problem: str):
    where = f"{record}: " if record else ""
    raise DatasetFormatError(f"{path}: {where}field '{field}': {problem}")


def read_json(path: str) -> Any:
    """A dataset file's JSON; every problem is one line naming the file: not JSON, not
    UTF-8, an integer of more than :data:`MAX_INT_DIGITS` digits, nesting deeper than
    :data:`MAX_NESTING`. (NaN and Infinity are read, and refused by the schema, naming the
    record and field.)"""
    if not os.path.lexists(path):
        raise DatasetFormatError(f"{path}: file not found")
    from habitat_mosnav.safety import MAX_DATASET_BYTES, InputFileError, read_input

    try:  # a regular file, bounded: a FIFO or a link to /dev/zero is refused at once
        data = read_input(path, MAX_DATASET_BYTES)
    except InputFileError as e:
        raise DatasetFormatError(str(e)) from None
    except OSError as e:
        raise DatasetFormatError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        doc = json.loads(data.decode("utf-8"), parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise DatasetFormatError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None
    except UnicodeDecodeError as e:
        raise DatasetFormatError(f"{path}: not UTF-8 text ({e.reason})") from None
    except _Unreadable as e:
        raise DatasetFormatError(f"{path}: not a dataset file: {e}") from None
    except RecursionError:
        raise DatasetFormatError(
            f"{path}: not a dataset file: JSON nested deeper than Python "
            f"reads (a dataset nests a few levels)"
        ) from None
    todo = [(doc, 0)]
    while todo:  # before the schema, whose checks recurse
        item, depth = todo.pop()
        if depth > MAX_NESTING:
            raise DatasetFormatError(
                f"{path}: not a dataset file: nested deeper than {MAX_NESTING} levels"
            )
        if isinstance(item, (dict, list)):
            todo += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return doc


def _record(doc: Any, path: List[Any]) -> Tuple[str, int]:
    """The record an instance path lies in (``goals[3]`` -> ``goal 7``) for the schema's
    messages, and how many parts of the path name it."""
    if len(path) < 2 or path[0] not in _RECORDS:
        return "", 0
    shown, key = _RECORDS[path[0]]
    item = doc[path[0]][path[1]]
    rid = item.get(key) if isinstance(item, dict) else None
    named = type(rid) is int if key == "object_id" else isinstance(rid, str) and rid.strip()
    return (shown.format(rid) if named else f"{shown.split()[0]} #{path[1]}"), 2


#: (definition, digest of the document) of the dataset documents that met the schema in this
#: process: the same scene loaded again (another env, a replay) skips the schema's walk,
#: which takes about 25 times as long as the digest of the document's JSON.
_MET: set = set()


def _checked(doc: Any, path: str, definition: str, record=lambda p: ("", 0)) -> Any:
    """``doc`` if it meets the schema's ``definition``; a DatasetFormatError otherwise."""
    key = (definition, hashlib.sha256(json.dumps(doc).encode()).digest())
    if key in _MET:
        return doc
    problem = first_error(doc, "dataset", path, definition, record)
    if problem is not None:
        raise DatasetFormatError(problem)
    _MET.add(key)
    return doc


def _read(path: str, key: str, scene_id: str) -> List[Any]:
    """The records (``key``: goals, queries, episodes) of a dataset file of ``scene_id``."""
    doc = read_json(path)
    _checked(doc, path, f"{key}_file", lambda p: _record(doc, p))
    if doc["scene_id"] != scene_id:
        _fail(
            path, "", "scene_id", f"'{doc['scene_id']}' does not match its directory '{scene_id}'"
        )
    return doc[key]


def floats(values: List[Any]) -> List[float]:
    return [float(v) for v in values]


def quaternion(q: List[Any], path: str, record: str, name: str) -> List[float]:
    """A rotation ``[x, y, z, w]`` (the schema checked 4 finite numbers) that is one: not of
    zero length."""
    if math.sqrt(sum(v * v for v in q)) < 1e-6:
        why = (
            f"a zero-length quaternion {json.dumps(q)} is no "
            "rotation (the identity is [0, 0, 0, 1])"
        )
        _fail(path, record, name, why)
    return floats(q)


def parse_goals(path: str, scene_id: str) -> Dict[int, Dict[str, Any]]:
    """goals.json -> {object_id: goal dict with validated, normalised fields}."""
    goals: Dict[int, Dict[str, Any]] = {}
    for g in _read(path, "goals", scene_id):
        oid = g["object_id"]
        rec = f"goal {oid}"
        if oid in goals:
            _fail(path, rec, "object_id", "duplicate object id")
        aabb = g.get("aabb")
        goals[oid] = {
            "object_id": oid,
            "category": g["category"],
            "position": floats(g["position"]),
            "navigable_position": floats(g["navigable_position"]),
            "view_points": [
                {
                    "position": floats(vp["position"]),
                    "rotation": quaternion(
                        vp["rotation"], path, f"{rec} view_points[{j}]", "rotation"
                    ),
                    "iou": vp.get("iou"),
                }
                for j, vp in enumerate(g.get("view_points") or [])
            ],
            "aabb": aabb and {"center": floats(aabb["center"]), "size": floats(aabb["size"])},
            "region_id": g.get("region_id"),
            "attributes": g.get("attributes") or {},
            "caption": g.get("caption"),
        }
    return goals


def parse_categories(path: str) -> List[str]:
    """``categories.json``: a JSON list of distinct, non-empty category names; the index of
    a name is its ``objectgoal`` id in every split."""
    doc = read_json(path)
    if not isinstance(doc, list):
        raise DatasetFormatError(f"{path}: expected a JSON list of category names")
    seen = set()
    for i, c in enumerate(doc):
        if not isinstance(c, str) or not c.strip():
            raise DatasetFormatError(
                f"{path}: entry [{i}]: expected a non-empty string, got {json.dumps(c)[:60]}"
            )
        if c in seen:
            raise DatasetFormatError(f"{path}: entry [{i}]: duplicate category '{c}'")
        seen.add(c)
    return list(doc)


def parse_queries(path: str, scene_id: str) -> Dict[str, Dict[str, Any]]:
    """queries.json -> {query_id: query dict}."""
    queries: Dict[str, Dict[str, Any]] = {}
    for q in _read(path, "queries", scene_id):
        rec = f"query '{q['query_id']}'"
        queries[q["query_id"]] = {
            "query_id": q["query_id"],
            "where": [(c["field"], c["op"], c.get("value")) for c in q["query_program"]["where"]],
            "instruction": q["instruction"],
            "matched_object_ids": q["matched_object_ids"],
            "image_goal": parse_image_goal(q, q["matched_object_ids"], path, rec),
        }
    return queries


_SHARES = ("coverage", "frame_coverage", "object_coverage")


def parse_image_goal(
    query: Dict[str, Any], matched: List[Any], path: str, rec: str
) -> Optional[Dict[str, Any]]:
    """A query's ``image_goal`` (goal type ``image``, SPEC §1; the schema's ``image_goal``):
    the camera that pictures one matching instance. None when absent (``mosnav-build
    image-goals`` adds it)."""
    ig = _checked(query.get("image_goal"), path, "image_goal", lambda p: (f"{rec} image_goal", 0))
    if ig is None:
        return None
    irec = f"{rec} image_goal"
    if ig["object_id"] not in matched:
        why = f"{ig['object_id']} is not one of the query's matched_object_ids"
        _fail(path, irec, "object_id", why)
    share = {k: None if ig.get(k) is None else float(ig[k]) for k in _SHARES}
    return {
        "object_id": ig["object_id"],
        "position": floats(ig["position"]),
        "rotation": quaternion(ig["rotation"], path, irec, "rotation"),
        "hfov": None if ig.get("hfov") is None else float(ig["hfov"]),
        "width": ig.get("width"),
        "height": ig.get("height"),
        **share,
    }


def pure_category(query: Dict[str, Any]) -> Optional[str]:
    """The category of a pure-category query (one condition ``category == name``)."""
    where: Sequence[Tuple[str, str, Any]] = query["where"]
    if (
        len(where) == 1
        and where[0][0] == "category"
        and where[0][1] == "=="
        and isinstance(where[0][2], str)
    ):
        return where[0][2]
    return None


def query_category(query: Dict[str, Any]) -> Optional[str]:
    """The category named by a query's ``category ==`` condition, if any."""
    for fld, op, value in query["where"]:
        if fld == "category" and op == "==" and isinstance(value, str):
            return value
    return None


def _query_id(obj: Dict[str, Any], queries, path: str, record: str) -> str:
    if obj["query_id"] not in queries:
        _fail(path, record, "query_id", f"'{obj['query_id']}' is not in queries.json")
    return obj["query_id"]


def parse_episodes(
    path: str, scene_id: str, goals: Dict[int, Dict[str, Any]], queries: Dict[str, Dict[str, Any]]
) -> List[Dict[str, Any]]:
    """episodes.json -> validated episode dicts (targets in goals, counts in range)."""
    episodes = []
    seen = set()
    for e in _read(path, "episodes", scene_id):
        eid, mode, targets = e["episode_id"], e["target_mode"], e["target_object_ids"]
        rec = f"episode '{eid}'"
        if KEY_SEP in eid:
            why = (
                f"must not contain '{KEY_SEP}' (keys are <split>"
                f"{KEY_SEP}<scene_id>{KEY_SEP}<episode_id>)"
            )
            _fail(path, rec, "episode_id", why)
        if eid in seen:
            _fail(path, rec, "episode_id", "duplicate episode id")
        seen.add(eid)
        qid = _query_id(e, queries, path, rec)
        for t in targets:
            if t not in goals:
                _fail(path, rec, "target_object_ids", f"object {t} is not in goals.json")
        count = e.get("target_count")
        if mode == "many" and not 1 <= count <= len(targets):
            why = f"{count} is out of range 1..{len(targets)} (number of targets)"
            _fail(path, rec, "target_count", why)
        subtasks = None
        if mode == SEQUENTIAL:
            subtasks = parse_subtasks(e, targets, queries, path, rec)
            if subtasks[0]["query_id"] != qid:
                why = f"'{qid}' is not the first subtask's query '{subtasks[0]['query_id']}'"
                _fail(path, rec, "query_id", why)
        # The exact solver computes the optimal path at every reset (after len(targets)**2
        # geodesics): an episode it refuses is refused here. A sequential episode computes
        # no such path (SPEC §11: one subtask at a time).
        refusal = (
            None
            if mode == SEQUENTIAL
            else solver_refusal(len(targets), {"all": len(targets), "many": count}.get(mode, 1))
        )
        if refusal is not None:
            why = f"{len(targets)} targets in a '{mode}' episode: {refusal}"
            _fail(path, rec, "target_object_ids", why)
        episodes.append(
            {
                "episode_id": eid,
                "query_id": qid,
                "target_mode": mode,
                "target_count": count if mode == "many" else None,
                "target_object_ids": targets,
                "start_position": floats(e["start_position"]),
                "start_rotation": quaternion(e["start_rotation"], path, rec, "start_rotation"),
                "info": e.get("info") or {},
                "subtasks": subtasks,
            }
        )
    return episodes


def parse_subtasks(
    e: Dict[str, Any],
    targets: List[int],
    queries: Dict[str, Dict[str, Any]],
    path: str,
    rec: str,
) -> List[Dict[str, Any]]:
    """A ``sequential`` episode's ``subtasks`` (SPEC §11; their shape is the schema's): each
    query in queries.json and usable with its goal type (an ``object`` subtask needs a pure
    ``category ==`` query, an ``image`` subtask a query with an ``image_goal``), its targets
    among the episode's; every episode target belongs to some subtask."""
    out = []
    used = set()
    for k, st in enumerate(e["subtasks"]):
        srec = f"{rec} subtasks[{k}]"
        qid = _query_id(st, queries, path, srec)
        goal_type, ids = st["goal_type"], st["target_object_ids"]
        if goal_type == "object" and pure_category(queries[qid]) is None:
            why = (
                f"'object' needs a pure category query (one condition "
                f"category == <name>), query '{qid}' is not one"
            )
            _fail(path, srec, "goal_type", why)
        if goal_type == "image" and queries[qid]["image_goal"] is None:
            why = (
                f"'image' needs a query with an image_goal, query "
                f"'{qid}' has none (add it with mosnav-build image-goals)"
            )
            _fail(path, srec, "goal_type", why)
        for t in ids:
            if t not in targets:
                why = f"object {t} is not in the episode's target_object_ids"
                _fail(path, srec, "target_object_ids", why)
        used.update(ids)
        out.append({"query_id": qid, "goal_type": goal_type, "target_object_ids": list(ids)})
    unused = [t for t in targets if t not in used]
    if unused:
        why = (
            f"object {unused[0]} is no subtask's target (the "
            "episode's targets are its subtasks' targets)"
        )
        _fail(path, rec, "target_object_ids", why)
    return out


def load_scene_dir(
    scene_dir: str,
) -> Tuple[Dict[int, Dict[str, Any]], Dict[str, Dict[str, Any]], List[Dict[str, Any]]]:
    """Validate and parse the three files of one ``dataset_semantic/<scene_id>/``."""
    scene_id = os.path.basename(os.path.normpath(scene_dir))
    goals = parse_goals(os.path.join(scene_dir, "goals.json"), scene_id)
    queries = parse_queries(os.path.join(scene_dir, "queries.json"), scene_id)
    qpath = os.path.join(scene_dir, "queries.json")
    for q in queries.values():
        for oid in q["matched_object_ids"]:
            if oid not in goals:
                why = f"object {oid} is not in goals.json"
                _fail(qpath, f"query '{q['query_id']}'", "matched_object_ids", why)
    episodes = parse_episodes(os.path.join(scene_dir, "episodes.json"), scene_id, goals, queries)
    return goals, queries, episodes
