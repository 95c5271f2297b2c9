"""Reading and validating ``dataset_semantic/<scene_id>/{goals,queries,episodes}.json``.

Every problem becomes one :class:`DatasetFormatError` line naming the file, the record
(goal / query / episode id) and the field (SPEC §6). No habitat import: the dataset
building pipeline validates its own output with these functions too.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from habitat_mosnav.api import EPISODE_MODES, GOAL_TYPES, SEQUENTIAL
from habitat_mosnav.keys import KEY_SEP
from habitat_mosnav.metrics.open_path import solver_refusal

SCHEMA_VERSION = 1
FILES = ("goals.json", "queries.json", "episodes.json")
#: The most digits an integer in a dataset file may have (a 64-bit integer has 19).
MAX_INT_DIGITS = 20
#: How deeply a free-form value (an episode's ``info``, a goal's ``attributes``, a query
#: condition's ``value``) may nest.
MAX_NESTING = 32


class DatasetFormatError(ValueError):
    """A one-line, user-facing problem with a dataset file."""


class _Unreadable(ValueError):
    """A number the JSON reader refuses (raised by its hooks, named with the file)."""


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Unreadable(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _fail(path: str, record: str, field: str, problem: str) -> None:
    where = f"{record}: " if record else ""
    raise DatasetFormatError(f"{path}: {where}field '{field}': {problem}")


def read_json(path: str) -> Any:
    """A dataset file's JSON; every problem is one line naming the file: not JSON, not
    UTF-8, an integer of more than :data:`MAX_INT_DIGITS` digits, nesting deeper than
    Python reads. (NaN and Infinity are read, and refused by the field that holds them,
    naming the record: :func:`field`, :func:`vector`, :func:`free_form`.)"""
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
        return json.loads(data.decode("utf-8"), parse_int=_parse_int)
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


def _type_name(types) -> str:
    names = {
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        bool: "a boolean",
    }
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(names.get(t, t.__name__) for t in types)


def field(
    obj: Dict[str, Any],
    name: str,
    types,
    path: str,
    record: str,
    optional: bool = False,
    default: Any = None,
) -> Any:
    """``obj[name]`` checked against ``types`` (bool is never accepted as a number)."""
    if not isinstance(obj, dict):
        raise DatasetFormatError(f"{path}: {record}: expected an object, got {type(obj).__name__}")
    if name not in obj or (optional and obj[name] is None):
        if optional:
            return default
        _fail(path, record, name, "missing")
    value = obj[name]
    types_t = types if isinstance(types, tuple) else (types,)
    numeric = float in types_t and isinstance(value, int)
    if (
        isinstance(value, bool)
        and bool not in types_t
        or not (isinstance(value, types_t) or numeric)
    ):
        _fail(path, record, name, f"expected {_type_name(types)}, got {json.dumps(value)[:60]}")
    if isinstance(value, float) and not math.isfinite(value):  # JSON's NaN / Infinity
        _fail(path, record, name, f"expected a finite number, got {value}")
    return value


def one_of(obj: Dict[str, Any], name: str, choices, noun: str, path: str, record: str) -> str:
    """``obj[name]``, a string among ``choices`` (``unknown <noun> 'x' (expected one of
    ...)`` otherwise)."""
    value = field(obj, name, str, path, record)
    if value not in choices:
        _fail(
            path, record, name, f"unknown {noun} '{value}' (expected one of {', '.join(choices)})"
        )
    return value


def _query_id(obj: Dict[str, Any], queries, path: str, record: str) -> str:
    """``obj["query_id"]``, a query of queries.json."""
    qid = field(obj, "query_id", str, path, record)
    if qid not in queries:
        _fail(path, record, "query_id", f"'{qid}' is not in queries.json")
    return qid


#: The largest coordinate a dataset may give (metres; scenes span tens of metres): a
#: 1e308 start position is a dataset error at load, not an error episode.
MAX_COORDINATE = 1e6


def vector(
    obj: Dict[str, Any], name: str, size: int, path: str, record: str, optional: bool = False
) -> Optional[List[float]]:
    value = field(obj, name, list, path, record, optional=optional)
    if value is None:
        return None
    if len(value) != size or not all(
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and abs(v) <= MAX_COORDINATE
        for v in value
    ):
        _fail(
            path,
            record,
            name,
            f"expected {size} finite numbers within ±{MAX_COORDINATE:g}, "
            f"got {json.dumps(value)[:80]}",
        )
    return [float(v) for v in value]


def free_form(
    obj: Dict[str, Any],
    name: str,
    types,
    path: str,
    record: str,
    optional: bool = False,
    default: Any = None,
) -> Any:
    """``obj[name]`` checked as :func:`field`, and, inside it, every number finite (SPEC §6)
    and at most :data:`MAX_NESTING` levels (an episode's ``info``, a goal's
    ``attributes``); a problem names the value's place (``info.a[2]``)."""
    value = field(obj, name, types, path, record, optional=optional, default=default)
    todo = [(value, name, 0)]
    while todo:
        item, where, depth = todo.pop()
        if depth > MAX_NESTING:
            _fail(path, record, where[:120], f"nested deeper than {MAX_NESTING} levels")
        if isinstance(item, float) and not math.isfinite(item):
            _fail(path, record, where[:120], f"expected a finite number, got {item}")
        if isinstance(item, dict):
            todo += [(v, f"{where}.{k}", depth + 1) for k, v in item.items()]
        elif isinstance(item, list):
            todo += [(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item)]
    return value


def quaternion(obj: Dict[str, Any], name: str, path: str, record: str) -> List[float]:
    """A rotation ``[x, y, z, w]``: 4 finite numbers, not of zero length."""
    q = vector(obj, name, 4, path, record)
    if math.sqrt(sum(v * v for v in q)) < 1e-6:
        _fail(
            path,
            record,
            name,
            f"a zero-length quaternion {json.dumps(obj[name])} is no "
            "rotation (the identity is [0, 0, 0, 1])",
        )
    return q


def _header(doc: Any, path: str, key: str, scene_id: str) -> List[Any]:
    if not isinstance(doc, dict):
        raise DatasetFormatError(f"{path}: expected a JSON object at the top level")
    version = field(doc, "schema_version", int, path, "")
    if version != SCHEMA_VERSION:
        _fail(path, "", "schema_version", f"unsupported version {version} (expected 1)")
    sid = field(doc, "scene_id", str, path, "")
    if sid != scene_id:
        _fail(path, "", "scene_id", f"'{sid}' does not match its directory '{scene_id}'")
    return field(doc, key, list, path, "")


def parse_goals(path: str, scene_id: str) -> Dict[int, Dict[str, Any]]:
    """goals.json -> {object_id: goal dict with validated, normalised fields}."""
    goals: Dict[int, Dict[str, Any]] = {}
    for i, g in enumerate(_header(read_json(path), path, "goals", scene_id)):
        rec = f"goal #{i}"
        oid = field(g, "object_id", int, path, rec)
        rec = f"goal {oid}"
        if oid in goals:
            _fail(path, rec, "object_id", "duplicate object id")
        category = field(g, "category", str, path, rec)
        position = vector(g, "position", 3, path, rec)
        nav = vector(g, "navigable_position", 3, path, rec)
        view_points = []
        for j, vp in enumerate(field(g, "view_points", list, path, rec, optional=True, default=[])):
            vrec = f"{rec} view_points[{j}]"
            view_points.append(
                {
                    "position": vector(vp, "position", 3, path, vrec),
                    "rotation": quaternion(vp, "rotation", path, vrec),
                    "iou": field(vp, "iou", float, path, vrec, optional=True),
                }
            )
        aabb = field(g, "aabb", dict, path, rec, optional=True)
        if aabb is not None:
            aabb = {
                "center": vector(aabb, "center", 3, path, f"{rec} aabb"),
                "size": vector(aabb, "size", 3, path, f"{rec} aabb"),
            }
        attributes = free_form(g, "attributes", dict, path, rec, optional=True, default={})
        goals[oid] = {
            "object_id": oid,
            "category": category,
            "position": position,
            "navigable_position": nav,
            "view_points": view_points,
            "aabb": aabb,
            "region_id": field(g, "region_id", int, path, rec, optional=True),
            "attributes": attributes,
            "caption": field(g, "caption", str, path, rec, optional=True),
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
    for i, q in enumerate(_header(read_json(path), path, "queries", scene_id)):
        qid = field(q, "query_id", str, path, f"query #{i}")
        rec = f"query '{qid}'"
        program = field(q, "query_program", dict, path, rec)
        where = field(program, "where", list, path, f"{rec} query_program")
        conditions = []
        for j, c in enumerate(where):
            crec = f"{rec} query_program.where[{j}]"
            conditions.append(
                (
                    field(c, "field", str, path, crec),
                    field(c, "op", str, path, crec),
                    free_form(
                        c, "value", (str, int, float, bool, list, dict), path, crec, optional=True
                    ),
                )
            )
        matched = field(q, "matched_object_ids", list, path, rec)
        queries[qid] = {
            "query_id": qid,
            "where": conditions,
            "instruction": field(q, "instruction", str, path, rec),
            "matched_object_ids": matched,
            "image_goal": parse_image_goal(q, matched, path, rec),
        }
    return queries


#: Largest goal image side a dataset may ask for (pixels).
#: The goal image sizes and fields of view that render (issue 39): below 16 pixels a side
#: an instance is a few pixels at best, above 2048 the render needs GPU memory a goal image
#: never warrants; an hfov of 150 degrees or more degenerates the pinhole projection (at
#: 179.999 everything lands outside the frame: an all-black picture), below 5 it is a zoom
#: on a few texels.
MIN_IMAGE_SIDE = 16
MAX_IMAGE_SIDE = 2048
HFOV_RANGE = (5.0, 150.0)


def parse_image_goal(
    query: Dict[str, Any], matched: List[Any], path: str, rec: str
) -> Optional[Dict[str, Any]]:
    """A query's ``image_goal`` (goal type ``image``, SPEC §1): the camera that pictures one
    matching instance, ``{object_id, position, rotation, hfov, width, height, coverage,
    frame_coverage, object_coverage}`` (the three shares informative and optional;
    ``object_coverage`` may exceed 1 in GOAT-Bench's files, so only >= 0 is checked);
    ``position`` is the camera's (the eye, not the feet); ``hfov`` / ``width`` / ``height``
    null take the agent's RGB camera's. None when absent (``mosnav-build image-goals``
    adds it)."""
    ig = field(query, "image_goal", dict, path, rec, optional=True)
    if ig is None:
        return None
    irec = f"{rec} image_goal"
    oid = field(ig, "object_id", int, path, irec)
    if oid not in matched:
        _fail(path, irec, "object_id", f"{oid} is not one of the query's matched_object_ids")
    hfov = field(ig, "hfov", float, path, irec, optional=True)
    if hfov is not None and not HFOV_RANGE[0] <= hfov <= HFOV_RANGE[1]:
        _fail(
            path,
            irec,
            "hfov",
            f"expected degrees in [{HFOV_RANGE[0]:g}, {HFOV_RANGE[1]:g}] (what renders), got {hfov}",
        )
    size = {}
    for name in ("width", "height"):
        v = field(ig, name, int, path, irec, optional=True)
        if v is not None and not MIN_IMAGE_SIDE <= v <= MAX_IMAGE_SIDE:
            _fail(
                path,
                irec,
                name,
                f"expected pixels in {MIN_IMAGE_SIDE}..{MAX_IMAGE_SIDE} (what renders), got {v}",
            )
        size[name] = v
    shares = {}
    for name, top in (("coverage", 1.0), ("frame_coverage", 1.0), ("object_coverage", None)):
        v = field(ig, name, float, path, irec, optional=True)
        if v is not None and not (0.0 <= v and (top is None or v <= top)):
            want = "a share in [0, 1]" if top is not None else "a number >= 0"
            _fail(path, irec, name, f"expected {want}, got {v}")
        shares[name] = None if v is None else float(v)
    return {
        "object_id": oid,
        "position": vector(ig, "position", 3, path, irec),
        "rotation": quaternion(ig, "rotation", path, irec),
        "hfov": None if hfov is None else float(hfov),
        "width": size["width"],
        "height": size["height"],
        **shares,
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


def parse_episodes(
    path: str, scene_id: str, goals: Dict[int, Dict[str, Any]], queries: Dict[str, Dict[str, Any]]
) -> List[Dict[str, Any]]:
    """episodes.json -> validated episode dicts (targets in goals, counts in range)."""
    episodes = []
    seen = set()
    for i, e in enumerate(_header(read_json(path), path, "episodes", scene_id)):
        eid = field(e, "episode_id", str, path, f"episode #{i}")
        if not eid.strip():
            _fail(path, f"episode #{i}", "episode_id", "empty")
        if KEY_SEP in eid:
            _fail(
                path,
                f"episode '{eid}'",
                "episode_id",
                f"must not contain '{KEY_SEP}' (keys are <split>{KEY_SEP}<scene_id>"
                f"{KEY_SEP}<episode_id>)",
            )
        rec = f"episode '{eid}'"
        if eid in seen:
            _fail(path, rec, "episode_id", "duplicate episode id")
        seen.add(eid)
        qid = _query_id(e, queries, path, rec)
        mode = one_of(e, "target_mode", EPISODE_MODES, "mode", path, rec)
        targets = field(e, "target_object_ids", list, path, rec)
        if not targets:
            _fail(path, rec, "target_object_ids", "empty")
        for t in targets:
            if isinstance(t, bool) or not isinstance(t, int):
                _fail(path, rec, "target_object_ids", f"{json.dumps(t)} is not an integer")
            if t not in goals:
                _fail(path, rec, "target_object_ids", f"object {t} is not in goals.json")
        if len(set(targets)) != len(targets):
            _fail(path, rec, "target_object_ids", "repeated object id")
        count = field(e, "target_count", int, path, rec, optional=True)
        if mode == "many":
            if count is None:
                _fail(path, rec, "target_count", "missing (required for target_mode 'many')")
            if not 1 <= count <= len(targets):
                _fail(
                    path,
                    rec,
                    "target_count",
                    f"{count} is out of range 1..{len(targets)} (number of targets)",
                )
        elif mode == "single" and len(targets) != 1:
            _fail(
                path,
                rec,
                "target_object_ids",
                f"target_mode 'single' needs exactly 1 target, got {len(targets)}",
            )
        subtasks = None
        if mode == SEQUENTIAL:
            subtasks = parse_subtasks(e, targets, queries, path, rec)
            if subtasks[0]["query_id"] != qid:
                _fail(
                    path,
                    rec,
                    "query_id",
                    f"'{qid}' is not the first subtask's query '{subtasks[0]['query_id']}'",
                )
        elif "subtasks" in e and e["subtasks"] is not None:
            _fail(path, rec, "subtasks", f"only a 'sequential' episode has subtasks, not '{mode}'")
        # The exact solver computes the optimal path at every reset (after len(targets)**2
        # geodesics): an episode it refuses is refused here. A sequential episode computes
        # no such path (SPEC §11: one subtask at a time).
        refusal = (
            None
            if mode == SEQUENTIAL
            else solver_refusal(len(targets), {"all": len(targets), "many": count}.get(mode, 1))
        )
        if refusal is not None:
            _fail(
                path,
                rec,
                "target_object_ids",
                f"{len(targets)} targets in a '{mode}' episode: {refusal}",
            )
        episodes.append(
            {
                "episode_id": eid,
                "query_id": qid,
                "target_mode": mode,
                "target_count": count if mode == "many" else None,
                "target_object_ids": targets,
                "start_position": vector(e, "start_position", 3, path, rec),
                "start_rotation": quaternion(e, "start_rotation", path, rec),
                "info": free_form(e, "info", dict, path, rec, optional=True, default={}),
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
    """A ``sequential`` episode's ``subtasks`` (SPEC §11): each ``{query_id, goal_type,
    target_object_ids}``, its query in queries.json and usable with its goal type (an
    ``object`` subtask needs a pure ``category ==`` query, an ``image`` subtask a query with
    an ``image_goal``), its targets among the episode's; every episode target belongs to
    some subtask."""
    items = field(e, "subtasks", list, path, rec)
    if not items:
        _fail(path, rec, "subtasks", "empty (a sequential episode has at least one subtask)")
    out = []
    used = set()
    for k, st in enumerate(items):
        srec = f"{rec} subtasks[{k}]"
        qid = _query_id(st, queries, path, srec)
        goal_type = one_of(st, "goal_type", GOAL_TYPES, "goal type", path, srec)
        query = queries[qid]
        if goal_type == "object":
            category = pure_category(query)
            if category is None:
                _fail(
                    path,
                    srec,
                    "goal_type",
                    f"'object' needs a pure category query (one condition category == "
                    f"<name>), query '{qid}' is not one",
                )
        if goal_type == "image" and query["image_goal"] is None:
            _fail(
                path,
                srec,
                "goal_type",
                f"'image' needs a query with an image_goal, query '{qid}' has none "
                "(add it with mosnav-build image-goals)",
            )
        ids = field(st, "target_object_ids", list, path, srec)
        if not ids:
            _fail(path, srec, "target_object_ids", "empty")
        for t in ids:
            if isinstance(t, bool) or not isinstance(t, int):
                _fail(path, srec, "target_object_ids", f"{json.dumps(t)} is not an integer")
            if t not in targets:
                _fail(
                    path,
                    srec,
                    "target_object_ids",
                    f"object {t} is not in the episode's target_object_ids",
                )
        if len(set(ids)) != len(ids):
            _fail(path, srec, "target_object_ids", "repeated object id")
        used.update(ids)
        out.append({"query_id": qid, "goal_type": goal_type, "target_object_ids": list(ids)})
    unused = [t for t in targets if t not in used]
    if unused:
        _fail(
            path,
            rec,
            "target_object_ids",
            f"object {unused[0]} is no subtask's target (the episode's targets are its "
            "subtasks' targets)",
        )
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
                _fail(
                    qpath,
                    f"query '{q['query_id']}'",
                    "matched_object_ids",
                    f"object {oid} is not in goals.json",
                )
    episodes = parse_episodes(os.path.join(scene_dir, "episodes.json"), scene_id, goals, queries)
    return goals, queries, episodes
