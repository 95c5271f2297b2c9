"""Stage ``extract``: semantic annotations + navigability -> goals.json (SPEC §6).

Per annotated object: category (through a configurable map), drop list (structure such as
walls and floors, unknown labels, objects too small to be a navigation target), region,
AABB from the vertices of its semantic colour, ``navigable_position`` (the navigable point
nearest the object's footprint) and dense ``view_points`` (SPEC §3): the navigable agent
positions on a square grid (``view_spacing``, default 0.25 m, aligned to the world origin)
within ``view_radius`` (default 1.0 m, horizontal) of the object's box from which a camera
at the agent's sensor height, turned towards the object, sees at least ``min_pixels`` of
it. So "near" (geodesic ≤ success distance to a view point) means "within about a metre of
the object, with it in view". Visibility is measured with the simulator's semantic sensor,
so walls and furniture in between occlude as they do for the agent; ``iou`` (visible
pixels against the unoccluded box's silhouette) is informative and orders the view points,
best first. An object without a single view point cannot be found by looking and is
dropped (counted).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.dataset_building.common import (
    ATTRIBUTE_FIELDS,
    SceneFiles,
    rounded,
    yaw_facing,
    yaw_to_quat,
)
from habitat_mosnav.dataset_building.geometry import CameraSpec, SceneGeometry
from habitat_mosnav.dataset_building.categories import DEFAULT_TABLE, CategoryNormalizer, load_table
from habitat_mosnav.dataset_building.semantic import (
    DEFAULT_DROP,
    AnnotatedObject,
    attach_geometry,
    read_annotations,
    resolve_up_axis,
)


@dataclass
class ExtractOptions:
    """Knobs of ``extract`` (all in metres / pixels)."""

    category_map: Dict[str, Optional[str]] = field(default_factory=dict)  # user overrides
    drop: Sequence[str] = DEFAULT_DROP  # extra clean names to drop
    category_table: str = str(DEFAULT_TABLE)  # raw -> clean normalisation (categories.py)
    min_size: float = 0.15  # largest AABB side below this: too small
    max_size: Optional[float] = None  # largest AABB side above this: too big (None: no limit)
    view_radius: float = 1.0  # view points within this (horizontal) of the AABB
    view_spacing: float = 0.25  # grid spacing of the view point candidates
    min_pixels: int = 30  # object pixels for a view to count as seeing it
    max_view_points: Optional[int] = None  # keep only the best this many (None: all)
    max_snap_offset: float = 0.05  # a grid point must itself be navigable (within this)
    max_drop: float = 2.0  # view point floor at most this far below the object
    min_island_radius: float = 1.5  # ignore navmesh islands smaller than this (furniture tops)
    up_axis: str = "auto"  # of the scene meshes: auto (meta file, else Z up as HM3D), y or z

    def params(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["drop"] = sorted(self.drop)
        d["category_table"] = _file_digest(self.category_table)
        return d


def _file_digest(path: str) -> str:
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return f"missing:{path}"


def parse_objects(
    scene: SceneFiles, opts: ExtractOptions, progress: bool = False
) -> Tuple[List[AnnotatedObject], Counter]:
    """Objects of the scene that survive category normalisation and size limits, with their
    boxes from the semantic mesh (texels or vertex colours); drops counted per reason."""
    counts: Counter = Counter()
    objects = read_annotations(scene.semantic_txt)
    counts["annotated"] = len(objects)
    norm = CategoryNormalizer(load_table(opts.category_table), opts.category_map, opts.drop)
    named = []
    for o in objects:
        cat, reason = norm.normalize(o.raw_category)
        if cat is None:
            counts["dropped_category"] += 1
            counts[f"dropped_category_{reason}"] += 1
            continue
        counts[f"category_{reason}"] += 1
        o.category = cat
        named.append(o)
    geo = attach_geometry(
        objects,
        scene.semantic_glb,
        resolve_up_axis(scene.render_glb, opts.up_axis),
        wanted={o.object_id for o in named},
        progress=progress,
    )
    for k, v in geo.items():
        counts[k] = v
    kept = []
    for o in named:
        if o.samples < 3:
            counts["dropped_no_geometry"] += 1
            continue
        size = o.aabb_max - o.aabb_min
        if float(size.max()) < opts.min_size:
            counts["dropped_too_small"] += 1
            continue
        if opts.max_size is not None and float(size.max()) > opts.max_size:
            counts["dropped_too_big"] += 1
            continue
        kept.append(o)
    return kept, counts


def grid_candidates(
    lo: np.ndarray, hi: np.ndarray, radius: float, spacing: float
) -> List[np.ndarray]:
    """(x, z) points of the world grid of ``spacing`` within ``radius`` (horizontal) of the
    box footprint [lo, hi] (inside the footprint included)."""
    if spacing <= 0 or radius < 0:
        raise ValueError(f"view point grid: spacing {spacing} must be > 0 and radius {radius} >= 0")
    i0, i1 = int(np.floor((lo[0] - radius) / spacing)), int(np.ceil((hi[0] + radius) / spacing))
    k0, k1 = int(np.floor((lo[2] - radius) / spacing)), int(np.ceil((hi[2] + radius) / spacing))
    pts = []
    for i in range(i0, i1 + 1):
        for k in range(k0, k1 + 1):
            x, z = i * spacing, k * spacing
            if footprint_distance((x, 0.0, z), lo, hi) <= radius + 1e-9:
                pts.append(np.array([x, z]))
    return pts


def projected_box_mask(corners: np.ndarray, cam_pos: np.ndarray, yaw: float, cam: CameraSpec):
    """Image mask of the (unoccluded) AABB's silhouette hull seen from the camera, and the
    hull's full area in pixels (larger than the mask when the object leaves the frame)."""
    import cv2

    right = np.array([np.cos(yaw), 0.0, -np.sin(yaw)])
    fwd = np.array([-np.sin(yaw), 0.0, -np.cos(yaw)])
    up = np.array([0.0, 1.0, 0.0])
    d = corners - cam_pos
    z = d @ fwd
    mask = np.zeros((cam.height, cam.width), dtype=np.uint8)
    if np.any(z < 0.05):
        # The box reaches behind the camera: far too close to judge; score it low.
        mask[:] = 1
        return mask, float(4 * cam.width * cam.height)
    f = (cam.width / 2.0) / np.tan(np.deg2rad(cam.hfov) / 2.0)
    u = cam.width / 2.0 + f * (d @ right) / z
    v = cam.height / 2.0 - f * (d @ up) / z
    pts = np.stack([u, v], axis=1).astype(np.float32)
    hull = cv2.convexHull(pts)
    area = float(cv2.contourArea(hull))
    clipped = np.clip(hull, -4 * cam.width, 5 * cam.width).round().astype(np.int32)
    cv2.fillConvexPoly(mask, clipped, 1)
    return mask, max(area, 1.0)


def _corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )


def view_points_of(
    geo: SceneGeometry, obj: AnnotatedObject, opts: ExtractOptions
) -> List[Dict[str, Any]]:
    """Dense view points of one object (SPEC §3), best (highest IoU) first."""
    lo, hi = obj.aabb_min, obj.aabb_max
    center = (lo + hi) / 2.0
    corners = _corners(lo, hi)
    cam = geo.camera
    found = []
    seen_xz = set()
    for x, z in grid_candidates(lo, hi, opts.view_radius, opts.view_spacing):
        p = np.array([x, lo[1], z])
        q = geo.snap(p)
        if q is None:
            continue
        if np.hypot(q[0] - p[0], q[2] - p[2]) > opts.max_snap_offset:
            continue  # not itself navigable
        if footprint_distance(q, lo, hi) > opts.view_radius + 1e-6:
            continue
        if not (lo[1] - opts.max_drop <= q[1] <= lo[1] + 0.5):
            continue
        key = (round(float(q[0]), 2), round(float(q[2]), 2))
        if key in seen_xz:
            continue
        seen_xz.add(key)
        if geo.island_radius(q) < opts.min_island_radius:
            continue
        yaw = yaw_facing(q, center)
        rot = yaw_to_quat(yaw)
        sem = geo.semantic(q, rot)
        visible = sem == obj.object_id
        pixels = int(visible.sum())
        if pixels < opts.min_pixels:
            continue
        cam_pos = q + np.array([0.0, cam.sensor_height, 0.0])
        box, box_area = projected_box_mask(corners, cam_pos, yaw, cam)
        inter = float((box.astype(bool) & visible).sum())
        # IoU of the visible pixels with the whole projected box (also the part outside the
        # frame): high when the object is in view, unoccluded and not cut by the border.
        iou = min(1.0, inter / (box_area + pixels - inter))
        found.append(
            {"position": rounded(q), "rotation": rot, "iou": round(iou, 4), "_pixels": pixels}
        )
    found.sort(key=lambda v: (-v["iou"], -v["_pixels"], v["position"]))
    return found


def extract_goals(
    geo: SceneGeometry,
    objects: List[AnnotatedObject],
    opts: ExtractOptions,
    counts: Counter,
    progress=None,
) -> List[Dict[str, Any]]:
    """goals.json records for the objects that have view points."""
    goals = []
    for obj in objects:
        if progress is not None:
            progress.update(1)
        vps = view_points_of(geo, obj, opts)
        if not vps:
            counts["dropped_no_view_point"] += 1
            continue
        # All view points must be mutually reachable with the navigable position: keep
        # those on the island of the best one.
        best = vps[0]["position"]
        vps = [v for v in vps if v is vps[0] or np.isfinite(geo.geodesic(v["position"], best))]
        nav = _navigable_position(geo, obj, vps, opts)
        for v in vps:
            v.pop("_pixels", None)
        goals.append(
            goal_record(obj, nav, vps[: opts.max_view_points] if opts.max_view_points else vps)
        )
        counts["goals"] += 1
    return goals


def goal_record(
    obj: AnnotatedObject, nav: Sequence[float], view_points: List[Dict[str, Any]]
) -> Dict[str, Any]:
    """The goals.json record of ``obj`` with its navigable position and view points (no
    attributes or caption yet: later stages fill them)."""
    lo, hi = obj.aabb_min, obj.aabb_max
    center = rounded((lo + hi) / 2.0)
    return {
        "object_id": int(obj.object_id),
        "category": obj.category,
        "region_id": int(obj.region_id),
        "position": center,
        "aabb": {"center": center, "size": rounded(hi - lo)},
        "navigable_position": rounded(nav),
        "view_points": view_points,
        "attributes": {k: [] for k in ATTRIBUTE_FIELDS},
        "caption": "",
    }


def nearest_view_point(
    view_points: List[Dict[str, Any]], lo: np.ndarray, hi: np.ndarray
) -> Dict[str, Any]:
    """The view point nearest the box footprint [lo, hi] (ties: the smaller position)."""
    return min(
        view_points, key=lambda v: (footprint_distance(v["position"], lo, hi), v["position"])
    )


def footprint_distance(p: Sequence[float], lo: np.ndarray, hi: np.ndarray) -> float:
    """Horizontal distance from ``p`` to the object's AABB footprint (0 inside)."""
    dx = max(lo[0] - p[0], 0.0, p[0] - hi[0])
    dz = max(lo[2] - p[2], 0.0, p[2] - hi[2])
    return float(np.hypot(dx, dz))


def _navigable_position(
    geo: SceneGeometry,
    obj: AnnotatedObject,
    view_points: List[Dict[str, Any]],
    opts: ExtractOptions,
) -> np.ndarray:
    """The navigable point nearest the object's footprint, on its view points' island.

    Snapping the footprint centre can land on the wrong side of a wall, on another floor or
    on a furniture top; then the view point nearest the object is used (it is navigable and
    sees the object).
    """
    lo, hi = obj.aabb_min, obj.aabb_max
    center = (lo + hi) / 2.0
    best = np.asarray(view_points[0]["position"], dtype=np.float64)
    q = geo.snap([center[0], lo[1], center[2]])
    if q is not None:
        if (
            footprint_distance(q, lo, hi) <= 1.0
            and lo[1] - opts.max_drop <= q[1] <= lo[1] + 0.5
            and geo.island_radius(q) >= opts.min_island_radius
            and np.isfinite(geo.geodesic(q, best))
        ):
            return q
    return np.asarray(nearest_view_point(view_points, lo, hi)["position"], dtype=np.float64)
