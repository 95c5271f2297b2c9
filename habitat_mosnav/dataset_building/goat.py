"""``mosnav-build import-goat``: a GOAT-Bench v1 split as a SPEC §6 dataset (SPEC §11).

Reads ``SPLIT_DIR/<split>.json.gz`` (split = the folder's name; its ``episodes`` are
usually empty) and every ``SPLIT_DIR/content/<scene>.json.gz`` (``episodes`` + ``goals``),
as goat-bench's loader does, and writes ``<out>/<scene_id>/{goals,queries,episodes}.json``
and ``<out>/categories.json``. No simulator is opened: GOAT's view points are the goals'.

Per scene:

- goals.json: one goal per GOAT instance; ``object_id`` = the integer after the last ``_``
  of GOAT's ``object_id`` (``plant_14`` -> 14; two instances with one id are an error);
  view points = GOAT's (agent position, rotation, iou); ``navigable_position`` = the first
  view point's position; ``caption`` = ``lang_desc``.
- an ``object`` task -> a pure ``category == name`` query whose matched ids are every
  instance of the category and of its ``children_object_categories`` (one level, the
  children of the category's first instance, as goat-bench's loader adds them; a child
  without goals is skipped as there) -> an ``all`` episode, and a ``many`` episode when
  there are 3 or more instances, ``target_count`` drawn from 2..N-1 as ``mosnav-build
  episodes`` draws it (a seeded, stable draw: ``--seed``, scene, query, GOAT episode).
  An ``all`` / ``many`` episode the exact solver would refuse at reset (too many targets,
  SPEC §4) is skipped and counted.
- a ``description`` task -> a query on that instance (``category ==`` and ``object_id ==``)
  with ``lang_desc`` as instruction -> a ``single`` episode. Descriptions over 55 words
  are dropped as goat-bench drops them (its count: the spaces + 1), from the sequential
  episode too.
- an ``image`` task -> a query on that instance whose ``image_goal`` is GOAT's camera
  ``image_goals[index]``: position, rotation ``[x, y, z, w]``, hfov, ``width`` =
  ``image_dimensions[1]``, ``height`` = ``image_dimensions[0]`` (GOAT's ``[H, W]``, as
  habitat-sim's resolution) -> a ``single`` episode.
- every GOAT episode -> one ``sequential`` episode with its (kept) subtasks in order.

Every per-task episode starts at its GOAT episode's start. Identical queries share one id
(``q0000``..., numbered in a sorted order).

Coverage: SPEC §6's ``image_goal.coverage`` is the share of the frame the exemplar covers,
which is GOAT's ``frame_coverage`` (in [0, 1]); GOAT's ``object_coverage`` (the share of
the object in view, which its generator requires to be >= 0.7 and which may exceed 1) is
another quantity and is kept beside it as ``object_coverage`` (informative, not read);
``frame_coverage`` is written too, as ``mosnav-build image-goals`` writes both.
Category and description queries also get an ``image_goal`` (the GOAT camera of a matched
instance with the largest ``frame_coverage``, the rule of ``mosnav-build image-goals``),
so every query works with each goal type as in a built dataset; a query whose instances
have no GOAT image has none (counted).

Repeated subtasks (goat-bench issue #34: a task listed twice in one episode): kept in the
sequential episode, since goat-bench's evaluator scores each repeat as a subtask of its
own (numbers stay comparable with GOAT's); the per-task episode it would repeat (same
query, mode and start) is written once. Both are counted.

A scene missing from ``--scene-root`` (HM3D v0.2 layout ``<NNNNN-id>/<id>.basis.glb``;
GOAT's ``scene_id`` such as ``hm3d/val//00800-TEEsavR23oF/TEEsavR23oF.basis.glb``, ``//``
tolerated): goat-bench's users meet it as a habitat-sim failure when an episode of that
scene loads; here its episodes are skipped and counted by reason, so a partial HM3D copy
gives a smaller dataset that says so (and a different fingerprint). No scene left is an
error.

Bad input (a task naming an object or category the goals lack, a missing or mistyped
field, a file that is not gzip or not JSON) is one :class:`BuildError` line naming the
file, the episode and the field; nothing is written then. The output is written into a
fresh folder that replaces ``--out`` only when complete, with sorted keys and rounded
floats, so the same split (and seed) gives byte-identical files.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from habitat_mosnav.dataset_building.common import SCHEMA_VERSION, BuildError, rng_for
from habitat_mosnav.metrics.open_path import solver_refusal
from habitat_mosnav.safety import MAX_DATASET_BYTES, InputFileError, open_input, read_limited
from habitat_mosnav.schemas import HFOV_RANGE, MAX_COORDINATE, MAX_IMAGE_SIDE, MIN_IMAGE_SIDE


GOAT_TASK_TYPES = ("object", "description", "image")
#: goat-bench drops description tasks with more words than this (its count: spaces + 1).
MAX_DESCRIPTION_WORDS = 55
#: Decimals of every float written (positions in metres, quaternions, coverages).
FLOAT_DECIMALS = 6
SOURCE = "goat-bench-v1"


class GoatFormatError(BuildError):
    """Bad GOAT input: one line naming the file, the record and the field."""


def _fail(path: str, record: str, name: str, problem: str):
    where = f"{record}: " if record else ""
    raise GoatFormatError(f"{path}: {where}field '{name}': {problem}")


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ----------------------------------------------------------------------------- reading
#: The most a GOAT file may decompress to (GOAT-Bench v1's largest content file is tens of
#: MB): a gzip bomb stops here, in bounded time and memory.
MAX_GOAT_JSON_BYTES = 512 << 20


def read_gz_json(path: Path) -> Any:
    """A gzip-compressed JSON document; a missing file, a non-gzip file or bad JSON is one
    line naming the file."""
    if not path.exists():
        raise GoatFormatError(f"{path}: file not found")
    try:
        # a regular file of bounded size (never a FIFO or a device), and a bounded
        # decompressed size: a gzip bomb stops at the bound instead of filling memory
        with open_input(str(path), MAX_DATASET_BYTES) as compressed:
            with gzip.GzipFile(fileobj=compressed, mode="rb") as f:
                raw = read_limited(f, MAX_GOAT_JSON_BYTES, str(path), "it may decompress to")
    except InputFileError as e:
        raise GoatFormatError(str(e)) from None
    except (OSError, EOFError, zlib.error) as e:
        raise GoatFormatError(f"{path}: not a gzip file ({e})") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise GoatFormatError(f"{path}: not UTF-8 text ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise GoatFormatError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None
    except RecursionError:
        raise GoatFormatError(f"{path}: not valid JSON (nested too deeply)") from None


def _get(obj: Any, name: str, types, path: str, record: str, optional: bool = False) -> Any:
    if not isinstance(obj, dict):
        raise GoatFormatError(f"{path}: {record}: expected an object, got {_show(obj)}")
    if name not in obj or obj[name] is None:
        if optional:
            return None
        _fail(path, record, name, "missing")
    value = obj[name]
    types_t = types if isinstance(types, tuple) else (types,)
    ok = isinstance(value, types_t) and not (isinstance(value, bool) and bool not in types_t)
    if float in types_t and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        names = {int: "an integer", float: "a number", str: "a string", list: "a list"}
        names[dict] = "an object"
        want = " or ".join(names.get(t, t.__name__) for t in types_t)
        _fail(path, record, name, f"expected {want}, got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        _fail(path, record, name, f"expected a finite number, got {value}")
    return value


def _vector(obj: Any, name: str, size: int, path: str, record: str) -> List[float]:
    value = _get(obj, name, list, path, record)
    if len(value) != size or not all(
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and abs(v) <= MAX_COORDINATE
        for v in value
    ):
        _fail(path, record, name, f"expected {size} finite numbers, got {_show(value)}")
    return [round(float(v), FLOAT_DECIMALS) for v in value]


def _quaternion(obj: Any, name: str, path: str, record: str) -> List[float]:
    q = _vector(obj, name, 4, path, record)
    if math.sqrt(sum(v * v for v in q)) < 1e-6:
        _fail(path, record, name, f"a zero-length quaternion {_show(obj[name])}")
    return q


def semantic_id(object_id: Any, path: str, record: str) -> int:
    """``plant_14`` -> 14: habitat-sim's HM3D object names end with the semantic id."""
    tail = object_id.rsplit("_", 1)[-1] if isinstance(object_id, str) else ""
    if not tail.isdigit() or not tail.isascii():
        _fail(
            path,
            record,
            "object_id",
            f"expected '<name>_<semantic id>', got {_show(object_id)}",
        )
    return int(tail)


def description_words(text: str) -> int:
    """Words as goat-bench counts them for its 55-word filter: the single spaces + 1."""
    return text.count(" ") + 1


# ----------------------------------------------------------------------------- model
@dataclass
class _Instance:
    goat_id: str
    object_id: int
    category: str
    raw: Dict[str, Any]
    path: str
    record: str
    goal: Dict[str, Any]
    cameras: Optional[List[Dict[str, Any]]] = None  # every image goal, parsed once


@dataclass
class _Doc:
    """One GOAT file with episodes: its goals indexed by category."""

    path: str
    rel: str
    scene_id: str
    by_category: Dict[str, List[_Instance]]
    instances: Dict[int, _Instance]
    episodes: List[Dict[str, Any]]


@dataclass
class _Subtask:
    goal_type: str
    query: Dict[str, Any]  # without query_id
    targets: List[int]
    task_index: int


@dataclass
class ImportReport:
    split: str
    out: str
    scenes: List[str] = field(default_factory=list)
    missing_scenes: List[str] = field(default_factory=list)
    goat_episodes: int = 0
    counts: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    fingerprint: str = ""

    def summary(self) -> str:
        modes = ", ".join(
            f"{m}={self.counts.get('episodes_' + m, 0)}"
            for m in ("all", "many", "single", "sequential")
        )
        lines = [
            f"import-goat: GOAT-Bench v1 {self.split}: {self.goat_episodes} GOAT episode(s), "
            f"{len(self.scenes)} scene(s) -> {self.counts.get('episodes', 0)} episodes "
            f"({modes}), {self.counts.get('queries', 0)} queries, "
            f"{self.counts.get('goals', 0)} goals",
            "  skipped: "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items())) or "nothing"),
        ]
        if self.missing_scenes:
            lines.append(f"  scenes not in --scene-root: {', '.join(self.missing_scenes)}")
        lines += [
            f"  wrote {self.out}",
            f"  fingerprint: {self.fingerprint}",
        ]
        return "\n".join(lines)


# ----------------------------------------------------------------------------- goals
def _parse_goal(inst: Any, path: str, record: str) -> Tuple[str, int, str, Dict[str, Any]]:
    goat_id = _get(inst, "object_id", str, path, record)
    oid = semantic_id(goat_id, path, record)
    category = _get(inst, "object_category", str, path, record)
    if not category.strip():
        _fail(path, record, "object_category", "empty")
    position = _vector(inst, "position", 3, path, record)
    vps = _get(inst, "view_points", list, path, record)
    if not vps:
        _fail(path, record, "view_points", "empty (a goal is reached at its view points)")
    view_points = []
    for j, vp in enumerate(vps):
        vrec = f"{record} view_points[{j}]"
        state = _get(vp, "agent_state", dict, path, vrec)
        arec = f"{vrec}.agent_state"
        point = {
            "position": _vector(state, "position", 3, path, arec),
            "rotation": _quaternion(state, "rotation", path, arec),
        }
        iou = _get(vp, "iou", float, path, vrec, optional=True)
        if iou is not None:
            point["iou"] = round(float(iou), FLOAT_DECIMALS)
        view_points.append(point)
    caption = _get(inst, "lang_desc", str, path, record, optional=True)
    children = _get(inst, "children_object_categories", list, path, record, optional=True)
    for c in children or []:
        if not isinstance(c, str):
            _fail(path, record, "children_object_categories", f"expected strings, got {_show(c)}")
    goal = {
        "object_id": oid,
        "category": category,
        "position": position,
        "navigable_position": list(view_points[0]["position"]),
        "view_points": view_points,
        "attributes": {},
    }
    if caption is not None:
        goal["caption"] = caption
    return goat_id, oid, category, goal


def _index_goals(goals: Any, path: str) -> Tuple[Dict[str, List[_Instance]], Dict[int, _Instance]]:
    """GOAT's ``goals`` (key -> instance list) indexed by the category of each list's first
    instance, as goat-bench looks a task's category up."""
    if not isinstance(goals, dict):
        _fail(path, "", "goals", f"expected an object of goal lists, got {_show(goals)}")
    by_category: Dict[str, List[_Instance]] = {}
    by_id: Dict[int, _Instance] = {}
    for key in sorted(goals):
        insts = goals[key]
        if not isinstance(insts, list) or not insts:
            _fail(path, "", f"goals.{key}", f"expected a non-empty list, got {_show(insts)}")
        parsed = []
        for j, inst in enumerate(insts):
            record = f"goals.{key}[{j}]"
            goat_id, oid, category, goal = _parse_goal(inst, path, record)
            if oid in by_id:
                _fail(
                    path,
                    record,
                    "object_id",
                    f"semantic id {oid} ({goat_id}) is also {by_id[oid].record} "
                    f"({by_id[oid].goat_id})",
                )
            item = _Instance(goat_id, oid, category, inst, path, record, goal)
            by_id[oid] = item
            parsed.append(item)
        category = parsed[0].category
        if category in by_category:
            _fail(path, "", f"goals.{key}", f"a second goal list for category '{category}'")
        by_category[category] = parsed
    return by_category, by_id


# ----------------------------------------------------------------------------- scenes
def scene_of(scene_id: Any, path: str, record: str) -> Tuple[str, str, str]:
    """GOAT's ``scene_id`` -> (folder ``00800-TEEsavR23oF``, file ``TEEsavR23oF.basis.glb``,
    short id ``TEEsavR23oF``); empty parts (``//``) are ignored."""
    if not isinstance(scene_id, str):
        _fail(path, record, "scene_id", f"expected a string, got {_show(scene_id)}")
    parts = [p for p in scene_id.replace("\\", "/").split("/") if p]
    name = parts[-1] if parts else ""
    for suffix in (".basis.glb", ".glb"):
        if name.endswith(suffix) and len(name) > len(suffix):
            folder = parts[-2] if len(parts) >= 2 else ""
            return folder, name, name[: -len(suffix)]
    _fail(
        path, record, "scene_id", f"expected a path ending <scene>.basis.glb, got {_show(scene_id)}"
    )
    raise AssertionError  # unreachable


def find_scene(scene_root: Path, folder: str, name: str, sid: str) -> Optional[Path]:
    """``<root>/<folder>/<name>`` as GOAT names it, else HM3D v0.2's ``<root>/<NNNNN-sid>/``
    (another numeric prefix); None when absent."""
    if folder and (scene_root / folder / name).is_file():
        return scene_root / folder / name
    if scene_root.is_dir():
        for d in sorted(scene_root.iterdir()):
            if d.name == sid or d.name.endswith("-" + sid):
                for n in (name, f"{sid}.basis.glb"):
                    if (d / n).is_file():
                        return d / n
    return None


# ----------------------------------------------------------------------------- queries
def _where(category: str, object_id: Optional[int] = None) -> Dict[str, Any]:
    conds: List[Dict[str, Any]] = [{"field": "category", "op": "==", "value": category}]
    if object_id is not None:
        conds.append({"field": "object_id", "op": "==", "value": object_id})
    return {"select": "object", "where": conds}


def _camera(inst: _Instance, index: int, record: str) -> Dict[str, Any]:
    """GOAT's ``image_goals[index]`` of an instance as SPEC §6's ``image_goal``."""
    path = inst.path
    images = _get(inst.raw, "image_goals", list, path, inst.record)
    if not 0 <= index < len(images):
        _fail(
            path,
            record,
            "tasks",
            f"image index {index} is out of range: {inst.goat_id} has {len(images)} image goals",
        )
    ig = images[index]
    irec = f"{inst.record} image_goals[{index}]"
    hfov = float(_get(ig, "hfov", float, path, irec))
    if not HFOV_RANGE[0] <= hfov <= HFOV_RANGE[1]:
        _fail(
            path,
            irec,
            "hfov",
            f"expected degrees in [{HFOV_RANGE[0]:g}, {HFOV_RANGE[1]:g}] (what renders), got {hfov}",
        )
    dims = _get(ig, "image_dimensions", list, path, irec)
    if len(dims) != 2 or not all(
        isinstance(v, int) and not isinstance(v, bool) and MIN_IMAGE_SIDE <= v <= MAX_IMAGE_SIDE
        for v in dims
    ):
        _fail(
            path,
            irec,
            "image_dimensions",
            f"expected [height, width] in {MIN_IMAGE_SIDE}..{MAX_IMAGE_SIDE}, got {_show(dims)}",
        )
    cam = {
        "object_id": inst.object_id,
        "position": _vector(ig, "position", 3, path, irec),
        "rotation": _quaternion(ig, "rotation", path, irec),
        "hfov": round(hfov, FLOAT_DECIMALS),
        "width": dims[1],
        "height": dims[0],
        "coverage": None,
    }
    frame = _get(ig, "frame_coverage", float, path, irec, optional=True)
    if frame is not None:
        if not 0.0 <= frame <= 1.0:
            _fail(path, irec, "frame_coverage", f"expected a share in [0, 1], got {frame}")
        cam["coverage"] = cam["frame_coverage"] = round(float(frame), FLOAT_DECIMALS)
    obj_cov = _get(ig, "object_coverage", float, path, irec, optional=True)
    if obj_cov is not None:
        cam["object_coverage"] = round(float(obj_cov), FLOAT_DECIMALS)
    return cam


def _best_camera(insts: Sequence[_Instance]) -> Optional[Dict[str, Any]]:
    """The GOAT camera of these instances with the largest frame coverage (ties: the
    lowest object id, then image index), or None when they have no image goal."""
    best = None
    for inst in sorted(insts, key=lambda i: i.object_id):
        if inst.cameras is None:
            images = _get(inst.raw, "image_goals", list, inst.path, inst.record, optional=True)
            inst.cameras = [_camera(inst, k, inst.record) for k in range(len(images or []))]
        for cam in inst.cameras:
            cov = -1.0 if cam["coverage"] is None else cam["coverage"]
            if best is None or cov > best[0]:
                best = (cov, cam)
    return None if best is None else best[1]


def _query_key(q: Dict[str, Any]) -> str:
    return json.dumps(q, sort_keys=True, ensure_ascii=False)


# ----------------------------------------------------------------------------- import
def _load_doc(path: Path, rel: str, doc: Any, expect_scene: Optional[str]) -> Optional[_Doc]:
    p = str(path)
    if not isinstance(doc, dict):
        raise GoatFormatError(f"{p}: expected a JSON object at the top level")
    episodes = _get(doc, "episodes", list, p, "")
    if not episodes:
        return None
    by_category, by_id = _index_goals(_get(doc, "goals", dict, p, ""), p)
    scene = None
    for i, ep in enumerate(episodes):
        rec = f"episode #{i}"
        _folder, _name, sid = scene_of(_get(ep, "scene_id", str, p, rec), p, rec)
        if expect_scene is not None and sid != expect_scene:
            _fail(p, rec, "scene_id", f"scene '{sid}' in the content file of '{expect_scene}'")
        if scene is not None and sid != scene:
            _fail(p, rec, "scene_id", f"scene '{sid}' in a file of scene '{scene}'")
        scene = sid
    return _Doc(p, rel, scene, by_category, by_id, episodes)


def _candidates(d: _Doc, category: str, rec: str, name: str) -> List[_Instance]:
    """The instances a task of ``category`` looks among: the category's and those of its
    children categories (goat-bench appends the children's goals)."""
    insts = d.by_category.get(category)
    if insts is None:
        _fail(d.path, rec, name, f"category '{category}' is not among the file's goals")
    out = list(insts)
    seen = {i.object_id for i in out}
    for child in insts[0].raw.get("children_object_categories") or []:
        for inst in d.by_category.get(child, []):
            if inst.object_id not in seen:
                seen.add(inst.object_id)
                out.append(inst)
    return out


def _subtask(
    d: _Doc, ep_index: int, t_index: int, task: Any, counts: Counter, skipped: Counter
) -> Optional[_Subtask]:
    p = d.path
    rec = f"episode #{ep_index}"
    name = f"tasks[{t_index}]"
    if not isinstance(task, list) or len(task) < 3:
        _fail(
            p, rec, name, f"expected [category, type, object_id(, image index)], got {_show(task)}"
        )
    category, kind, goat_id = task[0], task[1], task[2]
    if not isinstance(category, str):
        _fail(p, rec, f"{name}[0]", f"expected a category name, got {_show(category)}")
    if kind not in GOAT_TASK_TYPES:
        _fail(
            p, rec, f"{name}[1]", f"expected one of {', '.join(GOAT_TASK_TYPES)}, got {_show(kind)}"
        )
    cands = _candidates(d, category, rec, f"{name}[0]")
    if kind == "object":
        if goat_id is not None and not isinstance(goat_id, str):
            _fail(p, rec, f"{name}[2]", f"expected an object id or null, got {_show(goat_id)}")
        ids = sorted(i.object_id for i in cands)
        query = {
            "query_program": _where(category),
            "instruction": f"Find {_plural(category)}.",
            "matched_object_ids": ids,
            "pure_category": True,
            "image_goal": _best_camera(cands),
        }
        return _Subtask("object", query, ids, t_index)
    if not isinstance(goat_id, str):
        _fail(p, rec, f"{name}[2]", f"expected an object id, got {_show(goat_id)}")
    inst = next((i for i in cands if i.goat_id == goat_id), None)
    if inst is None:
        _fail(
            p,
            rec,
            f"{name}[2]",
            f"object '{goat_id}' is not among the goals of category '{category}'",
        )
    program = _where(inst.category, inst.object_id)
    if kind == "description":
        text = _get(inst.raw, "lang_desc", str, p, inst.record)
        if description_words(text) > MAX_DESCRIPTION_WORDS:
            skipped["description_over_55_words"] += 1
            return None
        query = {
            "query_program": program,
            "instruction": text,
            "matched_object_ids": [inst.object_id],
            "pure_category": False,
            "image_goal": _best_camera([inst]),
        }
        return _Subtask("description", query, [inst.object_id], t_index)
    if len(task) < 4 or isinstance(task[3], bool) or not isinstance(task[3], int):
        _fail(p, rec, f"{name}[3]", f"expected the image index, got {_show(task[3:4])}")
    query = {
        "query_program": program,
        "instruction": f"Find the {inst.category}.",
        "matched_object_ids": [inst.object_id],
        "pure_category": False,
        "image_goal": _camera(inst, task[3], rec),
    }
    return _Subtask("image", query, [inst.object_id], t_index)


def _plural(category: str) -> str:
    from habitat_mosnav.dataset_building.language import pluralize

    return pluralize(category)


@dataclass
class _Scene:
    scene_id: str
    goals: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    queries: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # content key -> query
    episodes: List[Tuple[Tuple, Dict[str, Any]]] = field(default_factory=list)  # (sort key, ep)


def import_goat(
    goat: Path,
    scene_root: Path,
    seed: int = 0,
    categories: Optional[Sequence[str]] = None,
) -> Tuple[Dict[str, Dict[str, Any]], List[str], ImportReport]:
    """Read and convert a GOAT split in memory: ({scene id: {file name: document}},
    categories.json's list, report). Raises GoatFormatError on bad input."""
    goat = Path(goat)
    scene_root = Path(scene_root)
    if not goat.is_dir():
        raise GoatFormatError(f"{goat}: --goat: not a directory (a GOAT-Bench v1 split folder)")
    if not scene_root.is_dir():
        raise GoatFormatError(f"{scene_root}: --scene-root: not a directory (HM3D v0.2 split)")
    split = goat.resolve().name
    report = ImportReport(split=split, out="")
    docs: List[_Doc] = []
    top = goat / f"{split}.json.gz"
    d = _load_doc(top, top.name, read_gz_json(top), None)
    if d is not None:
        docs.append(d)
    content = goat / "content"
    if content.is_dir():
        for f in sorted(content.glob("*.json.gz")):
            d = _load_doc(f, f"content/{f.name}", read_gz_json(f), f.name[: -len(".json.gz")])
            if d is not None:
                docs.append(d)
    if not docs:
        raise GoatFormatError(f"{goat}: no GOAT episodes in {top.name} or content/*.json.gz")
    seen_scene: Dict[str, str] = {}
    for d in docs:
        if d.scene_id in seen_scene:
            raise GoatFormatError(
                f"{d.path}: field 'scene_id': scene '{d.scene_id}' also has episodes in "
                f"{seen_scene[d.scene_id]}"
            )
        seen_scene[d.scene_id] = d.path

    scenes: Dict[str, _Scene] = {}
    for d in docs:
        report.goat_episodes += len(d.episodes)
        first = d.episodes[0]
        folder, name, sid = scene_of(first["scene_id"], d.path, "episode #0")
        if find_scene(scene_root, folder, name, sid) is None:
            report.skipped["goat_episodes_of_missing_scene"] += len(d.episodes)
            report.skipped["missing_scene"] += 1
            report.missing_scenes.append(sid)
            continue
        sc = scenes[sid] = _Scene(sid)
        sc.goals = {oid: inst.goal for oid, inst in d.instances.items()}
        _convert_doc(d, sc, split, seed, report)
        if not sc.episodes:
            del scenes[sid]
            report.skipped["scene_without_episodes"] += 1
    if not scenes:
        raise GoatFormatError(
            f"{scene_root}: --scene-root: none of the split's scenes is there (expected "
            "<NNNNN-scene>/<scene>.basis.glb, HM3D v0.2's layout)"
        )
    files: Dict[str, Dict[str, Any]] = {}
    used_categories = set()
    for sid in sorted(scenes):
        sc = scenes[sid]
        ordered = sorted(sc.queries.values(), key=_query_sort_key)
        ids = {}
        queries = []
        for i, q in enumerate(ordered):
            qid = f"q{i:04d}"
            ids[_query_key(q)] = qid
            out_q = {"query_id": qid}
            out_q.update({k: v for k, v in q.items() if not (k == "image_goal" and v is None)})
            if q["image_goal"] is None:
                report.skipped["image_goal_of_query_without_goat_image"] += 1
            queries.append(out_q)
        episodes = []
        for _key, ep in sorted(sc.episodes, key=lambda kv: kv[0]):
            ep = dict(ep)
            ep["query_id"] = ids[ep.pop("_query")]
            if "subtasks" in ep:
                ep["subtasks"] = [
                    {
                        "query_id": ids[s["_query"]],
                        "goal_type": s["goal_type"],
                        "target_object_ids": s["target_object_ids"],
                    }
                    for s in ep["subtasks"]
                ]
            episodes.append(ep)
            report.counts[f"episodes_{ep['target_mode']}"] += 1
        goals = [sc.goals[oid] for oid in sorted(sc.goals)]
        used_categories.update(g["category"] for g in goals)
        files[sid] = {
            "goals.json": _doc(sid, "goals", goals),
            "queries.json": _doc(sid, "queries", queries),
            "episodes.json": _doc(sid, "episodes", episodes),
        }
        report.counts["episodes"] += len(episodes)
        report.counts["queries"] += len(queries)
        report.counts["goals"] += len(goals)
    report.scenes = sorted(scenes)
    cats = list(categories or [])
    cats += sorted(used_categories - set(cats))
    return files, cats, report


def _query_sort_key(q: Dict[str, Any]):
    kinds = {True: 0, False: 1}
    ig = q.get("image_goal") or {}
    return (
        kinds[bool(q["pure_category"])],
        q["query_program"]["where"][0]["value"],
        q["matched_object_ids"],
        q["instruction"],
        _query_key(ig),
    )


def _doc(sid: str, key: str, items: list) -> Dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "scene_id": sid, key: items}


def _convert_doc(d: _Doc, sc: _Scene, split: str, seed: int, report: ImportReport) -> None:
    counts, skipped = report.counts, report.skipped
    seen_episodes = set()
    for i, ep in enumerate(d.episodes):
        rec = f"episode #{i}"
        start = _vector(ep, "start_position", 3, d.path, rec)
        rotation = _quaternion(ep, "start_rotation", d.path, rec)
        tasks = _get(ep, "tasks", list, d.path, rec)
        subtasks: List[_Subtask] = []
        for t, task in enumerate(tasks):
            s = _subtask(d, i, t, task, counts, skipped)
            if s is not None:
                subtasks.append(s)
        base = f"goat{i:04d}"
        source = {"source": SOURCE, "split": split, "file": d.rel, "episode_index": i}
        if not subtasks:
            skipped["goat_episode_without_subtasks"] += 1
            continue
        previous = set()
        for s in subtasks:
            key = _query_key(s.query)
            sc.queries.setdefault(key, s.query)
            if key in previous:
                skipped["repeated_subtask_kept_in_sequential"] += 1
            previous.add(key)
            modes: List[Tuple[str, Optional[int]]] = []
            n = len(s.targets)
            if s.goal_type == "object":
                modes.append(("all", None))
                if n >= 3:
                    rng = rng_for("goat-many", seed, sc.scene_id, key, i)
                    modes.append(("many", int(rng.integers(2, n))))
            else:
                modes.append(("single", None))
            for mode, count in modes:
                dedup = (key, mode, tuple(start), tuple(rotation))
                if dedup in seen_episodes:
                    skipped[f"duplicate_{mode}_episode"] += 1
                    continue
                refusal = solver_refusal(n, {"all": n, "many": count}.get(mode, 1))
                if refusal is not None:
                    skipped[f"{mode}_over_solver_limit"] += 1
                    continue
                seen_episodes.add(dedup)
                ep_out = {
                    "episode_id": f"{base}-t{s.task_index:02d}-{mode}",
                    "_query": key,
                    "target_mode": mode,
                    "target_count": count,
                    "target_object_ids": list(s.targets),
                    "start_position": start,
                    "start_rotation": rotation,
                    "info": dict(source, task_index=s.task_index, goal_type=s.goal_type),
                }
                if mode != "many":
                    del ep_out["target_count"]
                order = ("all", "many", "single").index(mode)
                sc.episodes.append(((i, 1, s.task_index, order), ep_out))
        union: List[int] = []
        for s in subtasks:
            union += [t for t in s.targets if t not in union]
        sc.episodes.append(
            (
                (i, 0, 0, 0),
                {
                    "episode_id": f"{base}-sequential",
                    "_query": _query_key(subtasks[0].query),
                    "target_mode": "sequential",
                    "target_count": None,
                    "target_object_ids": union,
                    "subtasks": [
                        {
                            "_query": _query_key(s.query),
                            "goal_type": s.goal_type,
                            "target_object_ids": list(s.targets),
                        }
                        for s in subtasks
                    ],
                    "start_position": start,
                    "start_rotation": rotation,
                    "info": dict(
                        source,
                        goat_tasks=len(tasks),
                        task_indices=[s.task_index for s in subtasks],
                    ),
                },
            )
        )


# ----------------------------------------------------------------------------- writing
def dumps(obj: Any) -> str:
    """The one serialisation of every file: sorted keys, no NaN, a final newline."""
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_dataset(
    out: Path, files: Dict[str, Dict[str, Any]], categories: List[str], overwrite: bool
) -> None:
    """Fill a fresh folder beside ``out`` and rename it into place: on any error ``out`` is
    left as it was and no partial folder stays."""
    from habitat_mosnav.safety import open_file, replacing_dir

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out}: --out: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise BuildError(f"{out}: --out: not empty (use --overwrite to replace it)")
    with replacing_dir(str(out)) as tmp:
        with open_file(os.path.join(tmp, "categories.json")) as f:
            f.write(dumps(categories))
        for sid, docs in sorted(files.items()):
            os.mkdir(os.path.join(tmp, sid))
            for name, doc in sorted(docs.items()):
                with open_file(os.path.join(tmp, sid, name)) as f:
                    f.write(dumps(doc))


def run_import(
    goat: Path,
    scene_root: Path,
    out: Path,
    *,
    seed: int = 0,
    categories: Optional[Path] = None,
    overwrite: bool = False,
) -> ImportReport:
    """``mosnav-build import-goat``: convert, write atomically, fingerprint the result."""
    from habitat_mosnav.datasets.fingerprint import dataset_fingerprint

    base = None
    if categories is not None:
        from habitat_mosnav.dataset_building.categories import read_categories

        base = read_categories(Path(categories))
    files, cats, report = import_goat(goat, scene_root, seed=seed, categories=base)
    write_dataset(Path(out), files, cats, overwrite)
    report.out = str(out)
    report.fingerprint = dataset_fingerprint(str(out))
    return report
