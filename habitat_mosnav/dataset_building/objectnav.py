"""Reading habitat's ObjectNav HM3D v2 goals and taking their view points into goals.json.

Format (``objectnav_hm3d_v2/<split>/content/<scene>.json.gz``)::

    {"goals_by_category": {"<scene>.basis.glb_<category>": [
        {"object_id": 12, "object_category": "chair", "position": [x, y, z],
         "view_points": [{"agent_state": {"position": [x, y, z], "rotation": [x, y, z, w]},
                          "iou": 0.31}, ...]}, ...]}, "episodes": [...]}

Each goal is validated by the field checks of our own files (:mod:`habitat_mosnav.datasets.schema`:
a non-finite number, a zero quaternion, a missing field is one ``BuildError`` line naming
the file, the ``goals_by_category`` key and index, the object and the field). ``mosnav-build extract --objectnav-goals PATH`` then uses
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

from habitat_mosnav.safety import MAX_DATASET_BYTES, InputFileError, open_input, read_limited
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


#: The most an ObjectNav goals file may hold once decompressed (HM3D v2's largest scene
#: file is a few MB): a gzip bomb is refused in one line instead of ending in MemoryError.
MAX_GOALS_BYTES = 512 * 2**20


def _load(path: Path) -> Any:
    try:
        # a regular file of bounded size (never a FIFO or a device), then a bounded read
        with open_input(str(path), MAX_DATASET_BYTES) as raw:
            try:
                if path.name.endswith(".gz"):
                    with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                        data = read_limited(f, MAX_GOALS_BYTES, str(path))
                else:
                    data = read_limited(raw, MAX_GOALS_BYTES, str(path))
            except InputFileError:
                raise BuildError(
                    f"{path}: more than {MAX_GOALS_BYTES // 2**20} MiB once decompressed; "
                    "not an ObjectNav goals file (a gzip bomb?)"
                ) from None
        return json.loads(data.decode("utf-8"))
    except InputFileError as e:
        raise BuildError(str(e)) from None
    except (OSError, EOFError) as e:
        raise BuildError(f"{path}: cannot read ({e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BuildError(f"{path}: not valid JSON ({e})") from None


def read_objectnav_goals(path: Path, scene_id: str) -> Dict[int, Dict[str, Any]]:
    """{object_id: {"category", "view_points": [{position, rotation, iou}]}} of ``scene_id``."""
    from habitat_mosnav.datasets.schema import DatasetFormatError, quaternion
    from habitat_mosnav.schemas import first_error

    doc = _load(Path(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("goals_by_category"), dict):
        raise BuildError(f"{path}: field 'goals_by_category': missing or not an object")
    out: Dict[int, Dict[str, Any]] = {}
    fpath = str(path)
    for key, goals in doc["goals_by_category"].items():
        scene, _, category = str(key).partition("_")
        if mesh_stem(scene) != scene_id:
            continue
        if not category:
            raise BuildError(
                f"{path}: goals_by_category key {key!r}: expected '<scene>_<category>'"
            )
        if not isinstance(goals, list):
            raise BuildError(f"{path}: goals_by_category[{key!r}]: expected a list of goals")
        for i, g in enumerate(goals):
            rec = f"goals_by_category[{key!r}][{i}]"
            oid = g.get("object_id") if isinstance(g, dict) else None
            if isinstance(oid, int) and not isinstance(oid, bool):
                rec = f"{rec} (object {oid})"
            problem = first_error(g, "dataset", fpath, "objectnav_goal", lambda p: (rec, 0))
            if problem is not None:
                raise BuildError(problem)
            parsed = []
            for j, vp in enumerate(g["view_points"]):
                state = vp["agent_state"]
                try:
                    rot = quaternion(
                        state["rotation"], fpath, f"{rec} view_points[{j}].agent_state", "rotation"
                    )
                except DatasetFormatError as e:
                    raise BuildError(str(e)) from None
                norm = math.sqrt(sum(x * x for x in rot))
                parsed.append(
                    {
                        "position": rounded(state["position"]),
                        "rotation": rounded([x / norm for x in rot], 6),
                        "iou": round(float(vp["iou"]), 4),
                    }
                )
            if oid in out:
                out[oid]["view_points"].extend(parsed)
            else:
                out[oid] = {"category": category, "view_points": parsed}
    return out


def apply_objectnav(
    goals: List[Dict[str, Any]],
    imported: Dict[int, Dict[str, Any]],
    annotated_ids: set,
    counts: Counter,
    objects: Optional[list] = None,
) -> List[Dict[str, Any]]:
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
