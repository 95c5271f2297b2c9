"""Reading habitat's ObjectNav HM3D v2 goals and taking their view points into goals.json.

Format (``objectnav_hm3d_v2/<split>/content/<scene>.json.gz``)::

    {"goals_by_category": {"<scene>.basis.glb_<category>": [
        {"object_id": 12, "object_category": "chair", "position": [x, y, z],
         "view_points": [{"agent_state": {"position": [x, y, z], "rotation": [x, y, z, w]},
                          "iou": 0.31}, ...]}, ...]}, "episodes": [...]}

Each goal is validated like our own files (a non-finite number, a zero quaternion, a
missing field is one ``BuildError`` line naming the file, the ``goals_by_category`` key and
index, the object and the field). ``mosnav-build extract --objectnav-goals PATH`` then uses
those view points (position, rotation, iou) for the goals with the same ``object_id`` (our
own ``navigable_position`` and box stay), and adds as goals the objects our view-point
search dropped but ObjectNav lists.
"""
from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

from habitat_mosnav.dataset_building.common import BuildError, rounded
from habitat_mosnav.scenes.io import mesh_stem


def find_objectnav_file(path: Path, scene_id: str) -> Optional[Path]:
    """``path`` itself when it is a file, else ``<path>[/content]/<scene_id>.json[.gz]``."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise BuildError(f"{path}: --objectnav-goals: no such file or directory")
    for d in (path, path / "content"):
        for name in (f"{scene_id}.json.gz", f"{scene_id}.json"):
            if (d / name).is_file():
                return d / name
    return None


def _load(path: Path) -> Any:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, EOFError) as e:
        raise BuildError(f"{path}: cannot read ({e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BuildError(f"{path}: not valid JSON ({e})") from None


def _numbers(obj: Any, name: str, size: int, where: str) -> List[float]:
    v = obj.get(name) if isinstance(obj, dict) else None
    if v is None:
        raise BuildError(f"{where}: field '{name}': missing")
    if not isinstance(v, list) or len(v) != size or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        raise BuildError(f"{where}: field '{name}': expected {size} finite numbers, got {json.dumps(v)[:80]}")
    return [float(x) for x in v]


def read_objectnav_goals(path: Path, scene_id: str) -> Dict[int, Dict[str, Any]]:
    """{object_id: {"category", "view_points": [{position, rotation, iou}]}} of ``scene_id``."""
    doc = _load(Path(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("goals_by_category"), dict):
        raise BuildError(f"{path}: field 'goals_by_category': missing or not an object")
    out: Dict[int, Dict[str, Any]] = {}
    for key, goals in doc["goals_by_category"].items():
        scene, _, category = str(key).partition("_")
        if mesh_stem(scene) != scene_id:
            continue
        if not category:
            raise BuildError(f"{path}: goals_by_category key {key!r}: expected '<scene>_<category>'")
        if not isinstance(goals, list):
            raise BuildError(f"{path}: goals_by_category[{key!r}]: expected a list of goals")
        for i, g in enumerate(goals):
            where = f"{path}: goals_by_category[{key!r}][{i}]"
            if not isinstance(g, dict):
                raise BuildError(f"{where}: expected an object")
            oid = g.get("object_id")
            if isinstance(oid, bool) or not isinstance(oid, int):
                raise BuildError(f"{where}: field 'object_id': expected an integer, got {json.dumps(oid)[:40]}")
            where = f"{where} (object {oid})"
            vps = g.get("view_points")
            if not isinstance(vps, list):
                raise BuildError(f"{where}: field 'view_points': expected a list")
            parsed = []
            for j, vp in enumerate(vps):
                w = f"{where} view_points[{j}]"
                state = vp.get("agent_state") if isinstance(vp, dict) else None
                if not isinstance(state, dict):
                    raise BuildError(f"{w}: field 'agent_state': expected an object")
                pos = _numbers(state, "position", 3, f"{w}.agent_state")
                rot = _numbers(state, "rotation", 4, f"{w}.agent_state")
                norm = math.sqrt(sum(x * x for x in rot))
                if norm < 1e-6:
                    raise BuildError(f"{w}.agent_state: field 'rotation': zero-length quaternion")
                iou = vp.get("iou")
                if isinstance(iou, bool) or not isinstance(iou, (int, float)) or not math.isfinite(iou):
                    raise BuildError(f"{w}: field 'iou': expected a finite number, got {json.dumps(iou)}")
                parsed.append({"position": rounded(pos), "rotation": rounded([x / norm for x in rot], 6),
                               "iou": round(float(iou), 4)})
            if oid in out:
                out[oid]["view_points"].extend(parsed)
            else:
                out[oid] = {"category": category, "view_points": parsed}
    return out


def apply_objectnav(goals: List[Dict[str, Any]], imported: Dict[int, Dict[str, Any]],
                    annotated_ids: set, counts: Counter, objects: Optional[list] = None) -> List[Dict[str, Any]]:
    """Our goals with ObjectNav's view points where it lists the same object.

    ``objects``: the annotated objects that passed our category and size filters
    (``AnnotatedObject``); one that our view-point search dropped but ObjectNav lists with
    view points becomes a goal with those view points (its ``navigable_position`` is the
    view point nearest its footprint, since every view point is navigable). Counts
    ``objectnav_goals``, ``objectnav_applied``, ``objectnav_added`` and, per reason,
    ``objectnav_no_view_points``, ``objectnav_not_a_goal`` (dropped by our category / size
    filters) and ``objectnav_unknown_object`` (not in semantic.txt)."""
    from habitat_mosnav.dataset_building.extract import goal_record, nearest_view_point

    counts["objectnav_goals"] += len(imported)
    by_id = {int(g["object_id"]): g for g in goals}
    kept = {int(o.object_id): o for o in (objects or [])}
    added = []
    for oid, g in sorted(imported.items()):
        vps = sorted(g["view_points"], key=lambda v: -v["iou"])
        if oid not in annotated_ids:
            counts["objectnav_unknown_object"] += 1
        elif not vps:
            counts["objectnav_no_view_points"] += 1
        elif oid in by_id:
            by_id[oid]["view_points"] = vps
            counts["objectnav_applied"] += 1
        elif oid in kept:
            o = kept[oid]
            nav = nearest_view_point(vps, o.aabb_min, o.aabb_max)["position"]
            added.append(goal_record(o, nav, vps))
            counts["objectnav_added"] += 1
            counts["goals"] += 1
        else:
            counts["objectnav_not_a_goal"] += 1
    return goals + added
