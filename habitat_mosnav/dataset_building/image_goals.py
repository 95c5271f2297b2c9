"""Stage ``image-goals``: each query's ``image_goal``, the camera of goal type ``image``.

An image goal is a picture of one instance the query matches (an exemplar, SPEC §1), chosen
as habitat's InstanceImageNav / GOAT-Bench generators choose theirs: most of the instance in
view, and the instance a moderate part of the picture, so that a person (or an agent) can
tell which object it is and where it stands. The candidates are the semantic camera at every
view point of every matched instance (the agent's camera: ``sensor_height`` above the view
point, facing as the view point does), level and tilted by each of ``PITCHES_DEG`` (up
and down 15° and 30°: a picture high on a wall or a bathtub at one's feet is cut by a
level camera's frame). Per candidate:

- ``frame_coverage``: the instance's pixels / the frame's pixels;
- ``object_coverage``: the instance's visible pixels / the pixels it covers drawn alone
  (nothing in front of it) with the same camera on the image plane extended by a frame
  width on every side, so occluders and the frame's border both lower it (1.0: the whole
  instance in view). GOAT-Bench's generator measures the same share as surface area from
  back-projected points and keeps views with ``object_coverage >= 0.7``.

A candidate qualifies with ``object_coverage >= MIN_OBJECT_COVERAGE`` (0.7, GOAT's
``min_object_coverage``) and ``frame_coverage`` in ``FRAME_COVERAGE_BAND`` [0.03, 0.5]:
below 3 % (about 28 x 28 pixels of the 160 x 160 build camera, 44 x 44 of a 256 x 256 goal
image) the instance is a speck (GOAT's own floor is 2 % plus 2.3 % per m² of surface);
above 50 % it is a close-up with too little room around it to place it, and a surface
filling the frame shows nothing one could recognise. The chosen camera is the qualifying
one that shows the most of the instance (object coverage to the percent), then the one
where it is largest (detail); ties go to the lower object id, then the earlier view point,
then the pitch earlier in ``PITCHES_DEG``. When none qualifies the
stage falls back (counted ``image_goal_fallback``, warned) to the candidate ranked by: in
the band first, then larger object coverage, then frame coverage nearer the band, then
object id, view point and pitch.

It stores camera parameters, never pixels: ``{object_id, position (the eye), rotation,
hfov, width: null, height: null, coverage, frame_coverage, object_coverage}``
(``coverage`` = ``frame_coverage``, SPEC §6's older name); null sizes take the agent's RGB
camera's when the simulator renders the picture at reset (``sensors/sensors.py``
``MosNavGoalImageSensor``). On a simulator that cannot draw one object alone (habitat-sim)
``object_coverage`` is null and only the band applies (counted
``object_coverage_unmeasured``). A query whose matched instances have no view point from
which any pixel shows keeps no ``image_goal`` (counted).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from habitat_mosnav.dataset_building.common import rounded

#: GOAT-Bench's ``min_object_coverage``: at least this share of the instance in view.
MIN_OBJECT_COVERAGE = 0.7
#: The share of the frame the instance may cover (inclusive).
FRAME_COVERAGE_BAND = (0.03, 0.5)
#: Camera pitches tried at each view point (degrees, up positive), in tie-break order.
PITCHES_DEG = (0.0, 15.0, -15.0, 30.0, -30.0)
#: Frame widths added on every side when the instance is drawn alone (its parts outside
#: the frame count as not visible).
ALONE_MARGIN = 1


def frame_coverage(semantic: np.ndarray, object_id: int) -> float:
    """Share of the frame's pixels that show ``object_id``."""
    sem = np.asarray(semantic)
    return float(np.count_nonzero(sem == int(object_id))) / float(sem.size)


def pitched(rotation, pitch_deg: float) -> List[float]:
    """``[x, y, z, w]`` of ``rotation`` tilted about its own X axis by ``pitch_deg``
    (up positive: the -Z forward turns towards +Y), rounded as view points are."""
    x, y, z, w = (float(v) for v in rotation)
    h = np.radians(float(pitch_deg)) / 2.0
    px, pw = float(np.sin(h)), float(np.cos(h))  # (px, 0, 0, pw): about X
    out = [w * px + x * pw, y * pw + z * px, z * pw - y * px, w * pw - x * px]
    return [round(v, 6) + 0.0 for v in out]


@dataclass(frozen=True)
class View:
    """One candidate camera: view point ``index`` of instance ``object_id``, tilted by
    ``PITCHES_DEG[pitch]``."""

    object_id: int
    index: int
    pitch: int
    frame_coverage: float
    #: None: not measurable on this simulator
    object_coverage: Optional[float]

    def qualifies(self) -> bool:
        lo, hi = FRAME_COVERAGE_BAND
        oc_ok = self.object_coverage is None or self.object_coverage >= MIN_OBJECT_COVERAGE
        return oc_ok and lo <= self.frame_coverage <= hi

    def rank(self) -> Tuple:
        """Smaller is better: qualifying views by object coverage (to the percent), most
        complete first, then by frame coverage, largest first."""
        oc = 1.0 if self.object_coverage is None else self.object_coverage
        return (-round(oc, 2), -self.frame_coverage, self.object_id, self.index, self.pitch)

    def fallback_rank(self) -> Tuple:
        """Smaller is better when no view qualifies (see the module docstring)."""
        lo, hi = FRAME_COVERAGE_BAND
        fc = self.frame_coverage
        outside = max(lo - fc, fc - hi, 0.0)
        oc = -1.0 if self.object_coverage is None else self.object_coverage
        return (outside > 0.0, -oc, outside, self.object_id, self.index, self.pitch)


def camera_of(vp: Dict[str, Any], pitch: int, sensor_height: float):
    """(eye, rotation) of the candidate camera at view point ``vp``, pitch index ``pitch``."""
    eye = np.asarray(vp["position"], np.float64) + np.array([0.0, sensor_height, 0.0])
    rot = [float(v) for v in vp["rotation"]]
    if PITCHES_DEG[pitch] != 0.0:
        rot = pitched(rot, PITCHES_DEG[pitch])
    return rounded(eye), rot


def measure_view(geo, oid: int, index: int, pitch: int, vp: Dict[str, Any]) -> View:
    """Frame and object coverage of instance ``oid`` from one candidate camera."""
    eye, rot = camera_of(vp, pitch, geo.camera.sensor_height)
    sem = geo.camera_semantic(eye, rot)
    visible = int(np.count_nonzero(sem == oid))
    fc = float(visible) / float(sem.size)
    oc: Optional[float] = None
    if visible:
        alone = geo.unoccluded_pixels(eye, rot, oid, ALONE_MARGIN)
        if alone is not None:
            # alone >= visible (a superset of fragments); max() guards a stray edge pixel
            oc = float(visible) / float(max(alone, visible))
    return View(oid, index, pitch, fc, oc)


def views_of(geo, goal: Dict[str, Any], cache: Dict[Tuple[int, int, int], View]) -> List[View]:
    """The goal's candidate cameras (those showing at least a pixel of it)."""
    oid = int(goal["object_id"])
    out = []
    for j, vp in enumerate(goal.get("view_points") or []):
        for p in range(len(PITCHES_DEG)):
            key = (oid, j, p)
            if key not in cache:
                cache[key] = measure_view(geo, oid, j, p, vp)
            if cache[key].frame_coverage > 0.0:
                out.append(cache[key])
    return out


def choose_view(views: List[View]) -> Tuple[Optional[View], bool]:
    """(chosen view, whether it qualified); (None, False) without candidates."""
    good = [v for v in views if v.qualifies()]
    if good:
        return min(good, key=View.rank), True
    if views:
        return min(views, key=View.fallback_rank), False
    return None, False


def image_goal_for(
    geo,
    query: Dict[str, Any],
    goals: Dict[int, Dict[str, Any]],
    cache,
    camera,
    counts: Optional[Counter] = None,
) -> Optional[Dict[str, Any]]:
    """The query's ``image_goal`` (see the module docstring), or None."""
    counts = Counter() if counts is None else counts
    views: List[View] = []
    for oid in sorted(int(o) for o in query["matched_object_ids"]):
        views += views_of(geo, goals[oid], cache)
    best, qualified = choose_view(views)
    if best is None:
        return None
    if not qualified:
        counts["image_goal_fallback"] += 1
    if best.object_coverage is None:
        counts["object_coverage_unmeasured"] += 1
    vp = goals[best.object_id]["view_points"][best.index]
    eye, rot = camera_of(vp, best.pitch, camera.sensor_height)
    fc = round(best.frame_coverage, 4)
    oc = best.object_coverage
    return {
        "object_id": best.object_id,
        "position": eye,
        "rotation": rot,
        "hfov": float(camera.hfov),
        "width": None,
        "height": None,
        "coverage": fc,
        "frame_coverage": fc,
        "object_coverage": None if oc is None else round(oc, 4),
    }


def add_image_goals(
    geo, queries: List[Dict[str, Any]], goals: List[Dict[str, Any]], camera, counts: Counter, bar
) -> List[Dict[str, Any]]:
    """``queries`` with ``image_goal`` set (or removed where no instance shows)."""
    by_id = {int(g["object_id"]): g for g in goals}
    cache: Dict[Tuple[int, int, int], View] = {}
    out = []
    for q in queries:
        q = dict(q)
        ig = image_goal_for(geo, q, by_id, cache, camera, counts)
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


def selection_params() -> Dict[str, Any]:
    """The selection rule, recorded in the stage's markers (a change reruns the stage)."""
    return {
        "min_object_coverage": MIN_OBJECT_COVERAGE,
        "frame_coverage_band": list(FRAME_COVERAGE_BAND),
        "alone_margin": ALONE_MARGIN,
        "pitches_deg": list(PITCHES_DEG),
    }
