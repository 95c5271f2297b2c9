"""Stage ``image-goals``: each query's ``image_goal``, the camera of goal type ``image``.

An image goal is a picture of one instance the query matches (an exemplar, SPEC §1). The
stage renders the semantic camera at every view point of every matched instance (the
agent's camera: ``sensor_height`` above the view point, facing as the view point does) and
keeps the one where the instance covers the largest share of the frame; ties go to the
lower object id, then the earlier view point. It stores camera parameters, never pixels:
``{object_id, position (the eye), rotation, hfov, width: null, height: null, coverage}``;
null sizes take the agent's RGB camera's when the simulator renders the picture at reset
(``sensors/sensors.py`` ``MosNavGoalImageSensor``). A query whose matched instances have
no view point from which any pixel shows keeps no ``image_goal`` (counted).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from habitat_mosnav.dataset_building.common import rounded


def frame_coverage(semantic: np.ndarray, object_id: int) -> float:
    """Share of the frame's pixels that show ``object_id``."""
    sem = np.asarray(semantic)
    return float(np.count_nonzero(sem == int(object_id))) / float(sem.size)


def best_view(
    geo, goal: Dict[str, Any], cache: Dict[Tuple[int, int], float]
) -> Optional[Tuple[float, int]]:
    """(coverage, view point index) of the goal's view point that shows it largest, or None
    when no view point shows a pixel of it."""
    best: Optional[Tuple[float, int]] = None
    oid = int(goal["object_id"])
    for j, vp in enumerate(goal.get("view_points") or []):
        key = (oid, j)
        if key not in cache:
            cache[key] = frame_coverage(geo.semantic(vp["position"], vp["rotation"]), oid)
        cov = cache[key]
        if cov > 0.0 and (best is None or cov > best[0]):
            best = (cov, j)
    return best


def image_goal_for(
    geo, query: Dict[str, Any], goals: Dict[int, Dict[str, Any]], cache, camera
) -> Optional[Dict[str, Any]]:
    """The query's ``image_goal`` (see the module docstring), or None."""
    best = None  # (coverage, object id, view index); ids ascending, so ties keep the lower
    for oid in sorted(int(o) for o in query["matched_object_ids"]):
        found = best_view(geo, goals[oid], cache)
        if found is None:
            continue
        cov, j = found
        if best is None or cov > best[0]:
            best = (cov, oid, j)
    if best is None:
        return None
    cov, oid, j = best
    vp = goals[oid]["view_points"][j]
    eye = np.asarray(vp["position"], np.float64) + np.array([0.0, camera.sensor_height, 0.0])
    return {
        "object_id": oid,
        "position": rounded(eye),
        "rotation": [float(v) for v in vp["rotation"]],
        "hfov": float(camera.hfov),
        "width": None,
        "height": None,
        "coverage": round(cov, 4),
    }


def add_image_goals(
    geo, queries: List[Dict[str, Any]], goals: List[Dict[str, Any]], camera, counts: Counter, bar
) -> List[Dict[str, Any]]:
    """``queries`` with ``image_goal`` set (or removed where no instance shows)."""
    by_id = {int(g["object_id"]): g for g in goals}
    cache: Dict[Tuple[int, int], float] = {}
    out = []
    for q in queries:
        q = dict(q)
        ig = image_goal_for(geo, q, by_id, cache, camera)
        if ig is None:
            q.pop("image_goal", None)
            counts["no_image_goal"] += 1
        else:
            q["image_goal"] = ig
            counts["image_goals"] += 1
        out.append(q)
        bar.update(1)
    counts["views_rendered"] = len(cache)
    return out
