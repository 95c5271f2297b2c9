"""Top-down maps of evaluated episodes (``mosnav-eval --save-maps``, ``mosnav-report --maps``).

The navigable area comes from habitat's own map utilities
(:func:`habitat.utils.visualizations.maps.get_topdown_map` over ``sim.pathfinder``), so the
same code draws maps on habitat-sim and on the CPU simulator ``MosNavMeshSim-v0``. World
points become pixels with :func:`habitat.utils.visualizations.maps.to_grid`
(``to_grid(z, x, map_shape, pathfinder=...) -> (row, col)``); nothing is rescaled, so a
pixel of the saved PNG is a pixel of that grid shifted by a margin of ``margin_px`` on every
side (targets against the walls lie partly outside the navigable bounds that habitat's grid
covers; the legend is a panel to the right).

On the map: the navigable area (habitat's grey/white/border colours), every target (its
bounding box, or a dot without one; dark green once claimed, magenta otherwise) with its
view points (light red dots), the start (a blue disc with a white tick toward its heading),
the trajectory coloured by time (viridis, start dark blue → end yellow), each claim at the
agent's position at its step (green = true positive, orange = duplicate, red = false;
claims at one spot are spread on a ring and counted, ``x9``), and the end point (a black
square for FINISH, grey otherwise). The legend panel opens with a banner saying SUCCESS,
FAILURE or ERROR and how the episode ended, then the goal text, mode and claims, the
markers, the time colour bar and a scale bar (pixels of the map's own size); an image
goal's picture stands right of the legend (``goal_image``: its rows and columns). The PNG
carries a ``mosnav_map`` text chunk (JSON: ``meters_per_pixel``, ``map_shape`` (habitat's
grid), ``margin_px``, ``bounds``, ``height``, and what is drawn: ``outcome``, ``header``,
``goal_text``, ``legend``, ``banner``, ``scale_bar``, ``start_px``, ``claim_groups``) so the
pixel of any world point can be recomputed: ``to_grid(z, x, map_shape, pathfinder) +
margin_px``.

A record's ``positions`` (``[x, y, z]`` after each step, index 0 = start; see
docs/EVALUATION.md) gives the trajectory and the claim positions; a record without them
(an older run) still gets targets, start and end point.

    python -m habitat_mosnav.evaluation.maps RUN_DIR [--out DIR] [--config CFG] [--set K=V]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.evaluation.command import SET_FLAG
from habitat_mosnav.evaluation.defaults import DEFAULT_CONFIG
from habitat_mosnav.pose import wrap_angle, yaw_of
from habitat_mosnav.safety import mask_secrets, safe_line
from habitat_mosnav.versions import add_version_argument

__all__ = [
    "CLAIM_COLORS",
    "END_COLOR",
    "FINISH_COLOR",
    "OUTCOME_COLORS",
    "START_COLOR",
    "MapGrid",
    "EpisodeMapPainter",
    "claim_groups",
    "claim_kind",
    "episode_file_stem",
    "read_map_info",
    "record_header",
    "render_run_maps",
    "save_map_png",
    "save_record_map",
    "trajectory_color",
]

#: RGB colours of the claim markers by kind.
CLAIM_COLORS = {"true": (40, 200, 40), "duplicate": (255, 150, 0), "false": (230, 30, 30)}
TARGET_FOUND_COLOR = (0, 110, 0)
TARGET_MISSED_COLOR = (170, 0, 170)
VIEW_POINT_COLOR = (245, 150, 150)  # habitat's MAP_VIEW_POINT_INDICATOR colour
FINISH_COLOR = (0, 0, 0)
END_COLOR = (110, 110, 110)
#: The start marker (a disc; the agent itself is habitat's sprite, on the video's map only).
START_COLOR = (20, 90, 230)
#: The legend banner's colour by outcome.
OUTCOME_COLORS = {"success": (30, 140, 50), "failure": (200, 40, 40), "error": (110, 110, 110)}
SCALE_BAR_COLOR = (0, 0, 0)
SCALE_BAR_THICKNESS = 5
#: Scale bar lengths to choose from (metres).
SCALE_BAR_METERS = (0.25, 0.5, 1, 2, 5, 10, 20, 50, 100)
#: Claims closer than this (pixels, each axis; a dot is 11 px wide) share one spot: drawn on a
#: ring and counted.
CLAIM_STACK_PX = 8
CLAIM_RING_MAX = 12
BANNER_HEIGHT = 28
LEGEND_WIDTH = 300
MAP_INFO_KEY = "mosnav_map"


#: A key part that maps to itself in a file name (no ``__``, no leading/trailing ``_``).
_PLAIN_PART = re.compile(r"[A-Za-z0-9.-]+(?:_[A-Za-z0-9.-]+)*")
#: File name stems are at most this long (a 300-character id still gets its map).
MAX_STEM = 120


def episode_file_stem(key: str) -> str:
    """File name (no extension) for an episode key: ``val::scene::ep`` → ``val__scene__ep``.

    Distinct keys get distinct names: a key whose parts are not plain (``a b``, ``a/b``,
    ``a__b``, ...) or whose name would be longer than :data:`MAX_STEM` gets ``~`` and 10 hex
    digits of its sha256 (``~`` never appears in a sanitised name)."""
    key = str(key)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", key.replace("::", "__")).strip("_") or "episode"
    plain = all(_PLAIN_PART.fullmatch(part) for part in key.split("::"))
    if plain and len(stem) <= MAX_STEM and not stem.startswith("."):
        return stem
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return stem[: MAX_STEM - 11] + "~" + digest


def claim_kind(event: Mapping[str, Any]) -> str:
    """``true`` (a new target), ``duplicate`` (only already-claimed targets near) or ``false``."""
    if event.get("is_true_positive"):
        return "true"
    if event.get("duplicate_targets"):
        return "duplicate"
    return "false"


def trajectory_color(fraction: float) -> Tuple[int, int, int]:
    """Viridis colour (RGB) of a trajectory segment at ``fraction`` ∈ [0, 1] of the episode."""
    import cv2

    value = np.uint8(round(255 * min(1.0, max(0.0, float(fraction)))))
    bgr = cv2.applyColorMap(np.array([[value]], np.uint8), cv2.COLORMAP_VIRIDIS)[0, 0]
    return int(bgr[2]), int(bgr[1]), int(bgr[0])


def _map_angle(rotation) -> float:
    """The ``agent_rotation`` habitat's ``draw_agent`` expects (its TopDownMap's polar angle)."""
    return wrap_angle(yaw_of(rotation) + math.pi)


#: cells a top-down grid may have (a 4096 x 4096 map; a 50 m scene at 0.1 m is 500 x 500)
MAX_MAP_CELLS = 4096 * 4096


class MapTooLarge(ValueError):
    """The navigable surface is too wide for a top-down map at the asked resolution."""


def _auto_meters_per_pixel(bounds, longest_side_px: int) -> float:
    lo, hi = bounds
    extent = max(float(hi[0] - lo[0]), float(hi[2] - lo[2]), 1e-3)
    if not math.isfinite(extent):
        return 0.1
    return min(0.1, max(0.01, extent / float(longest_side_px)))


def _cells(bounds, meters_per_pixel: float) -> float:
    lo, hi = bounds
    n = (float(hi[0] - lo[0]) / meters_per_pixel) * (float(hi[2] - lo[2]) / meters_per_pixel)
    return n if math.isfinite(n) else float("inf")


class _ExtentPathfinder:
    """A pathfinder seen through the window of its navigable surface's extent
    (``sims.pathfinder.navigable_extent``): ``get_bounds`` is that window, so habitat's
    ``get_topdown_map`` and ``to_grid`` work in it; the top-down view is computed over the
    window only (this package's navmesh pathfinder; habitat-sim's view covers its tile
    bounds whatever they are, and is refused when that is too large). Everything else is
    the pathfinder's own."""

    def __init__(self, pathfinder) -> None:
        from habitat_mosnav.sims.pathfinder import navigable_extent

        self._pf = pathfinder
        self._full = tuple(np.asarray(b, np.float64) for b in pathfinder.get_bounds())
        lo, hi = navigable_extent(pathfinder)
        self._window = (np.asarray(lo, np.float32), np.asarray(hi, np.float32))

    def __getattr__(self, name):
        return getattr(self._pf, name)

    def describe(self) -> str:
        lo, hi = self._window
        return f"({float(lo[0]):.6g}, {float(lo[2]):.6g})..({float(hi[0]):.6g}, {float(hi[2]):.6g})"

    def get_bounds(self):
        return self._window[0].copy(), self._window[1].copy()

    def get_topdown_view(
        self, meters_per_pixel: float, height: float, eps: float = 0.5
    ) -> np.ndarray:
        grid = getattr(self._pf, "grid", None)
        if grid is not None and getattr(grid, "extent", None) is not None:
            return grid.topdown(meters_per_pixel, height, eps, bounds=self._window)
        if _cells(self._full, meters_per_pixel) > MAX_MAP_CELLS:
            raise MapTooLarge(
                f"the pathfinder's bounds {self._full[0].tolist()}..{self._full[1].tolist()} "
                f"are too wide for a top-down map at {meters_per_pixel:g} m per pixel"
            )
        view = np.asarray(self._pf.get_topdown_view(meters_per_pixel, height))
        lo = self._full[0]
        c0 = max(int((float(self._window[0][0]) - lo[0]) / meters_per_pixel), 0)
        r0 = max(int((float(self._window[0][2]) - lo[2]) / meters_per_pixel), 0)
        nx = int((float(self._window[1][0]) - float(self._window[0][0])) / meters_per_pixel)
        nz = int((float(self._window[1][2]) - float(self._window[0][2])) / meters_per_pixel)
        out = np.zeros((max(nz, 0), max(nx, 0)), bool)
        part = view[r0 : r0 + nz, c0 : c0 + nx]
        out[: part.shape[0], : part.shape[1]] = part
        return out


@dataclass
class MapGrid:
    """habitat's top-down grid of one floor: ``codes`` (MAP_INVALID/VALID/BORDER values)."""

    codes: np.ndarray
    pathfinder: Any
    meters_per_pixel: float
    height: float
    #: Pixels of empty border around habitat's grid (``codes`` includes it).
    margin_px: int = 0

    @classmethod
    def from_pathfinder(
        cls,
        pathfinder,
        height: float,
        meters_per_pixel: Optional[float] = None,
        longest_side_px: int = 512,
        margin_m: float = 0.75,
    ) -> "MapGrid":
        """The navigable area at ``height`` (habitat's ``get_topdown_map``); by default the
        longer side of the scene bounds gets about ``longest_side_px`` pixels, with
        ``margin_m`` of empty border so that targets beyond the navigable bounds show whole."""
        from habitat.utils.visualizations import maps

        auto = meters_per_pixel is None
        if auto:
            meters_per_pixel = _auto_meters_per_pixel(pathfinder.get_bounds(), longest_side_px)
        if _cells(pathfinder.get_bounds(), meters_per_pixel) > MAX_MAP_CELLS:
            # tile bounds far wider than the polygons (a navmesh may say 2 km around a flat):
            # the grid covers the navigable surface's own extent instead
            pathfinder = _ExtentPathfinder(pathfinder)
            if auto:
                meters_per_pixel = _auto_meters_per_pixel(pathfinder.get_bounds(), longest_side_px)
            cells = _cells(pathfinder.get_bounds(), meters_per_pixel)
            if cells > MAX_MAP_CELLS:
                raise MapTooLarge(
                    f"a top-down map of the navigable surface {pathfinder.describe()} "
                    f"at {meters_per_pixel:g} m per pixel would have {cells:.3g} cells "
                    f"(over {MAX_MAP_CELLS})"
                )
        codes = maps.get_topdown_map(
            pathfinder, float(height), meters_per_pixel=float(meters_per_pixel)
        )
        margin = int(math.ceil(max(0.0, margin_m) / float(meters_per_pixel)))
        codes = np.pad(codes, margin, mode="constant", constant_values=maps.MAP_INVALID_POINT)
        return cls(
            codes=codes,
            pathfinder=pathfinder,
            meters_per_pixel=float(meters_per_pixel),
            height=float(height),
            margin_px=margin,
        )

    @property
    def shape(self) -> Tuple[int, int]:
        """habitat's grid shape (what ``to_grid`` takes), without the margin."""
        m = 2 * self.margin_px
        return int(self.codes.shape[0]) - m, int(self.codes.shape[1]) - m

    def to_pixel(self, position: Sequence[float]) -> Tuple[int, int]:
        """``(row, col)`` of a world point ``[x, y, z]`` (habitat's ``to_grid``)."""
        from habitat.utils.visualizations import maps

        r, c = maps.to_grid(
            float(position[2]), float(position[0]), self.shape, pathfinder=self.pathfinder
        )
        return r + self.margin_px, c + self.margin_px

    def info(self) -> Dict[str, Any]:
        lo, hi = self.pathfinder.get_bounds()
        return {
            "meters_per_pixel": self.meters_per_pixel,
            "map_shape": list(self.shape),
            "margin_px": self.margin_px,
            "bounds": [[float(v) for v in lo], [float(v) for v in hi]],
            "height": self.height,
        }


def _xy(pixel: Tuple[int, int]) -> Tuple[int, int]:
    """cv2 wants (x=col, y=row)."""
    return int(pixel[1]), int(pixel[0])


def _goal_fields(
    goal,
) -> Tuple[int, Optional[Mapping[str, Any]], Sequence[float], List[Sequence[float]]]:
    """(object_id, aabb or None, position, view point positions) of a dataset goal object
    or a goals.json-style dict."""
    get = goal.get if isinstance(goal, Mapping) else (lambda k, d=None: getattr(goal, k, d))
    oid = get("object_id")
    aabb = get("aabb")
    position = get("position")
    views = []
    for vp in get("view_points") or []:
        if isinstance(vp, Mapping):
            views.append(vp.get("position") or (vp.get("agent_state") or {}).get("position"))
        else:
            state = getattr(vp, "agent_state", None)
            views.append(getattr(state, "position", None) if state is not None else None)
    return oid, aabb, position, [v for v in views if v is not None]


class EpisodeMapPainter:
    """Draws one episode on a :class:`MapGrid`: :meth:`base` once (area, targets, view
    points, start), then :meth:`draw` for any prefix of the trajectory (the video's growing
    map) or the whole episode (the saved map)."""

    def __init__(
        self,
        grid: MapGrid,
        goals: Iterable[Any],
        start_position: Sequence[float],
        start_rotation: Optional[Sequence[float]] = None,
    ) -> None:
        self.grid = grid
        self.goals = [_goal_fields(g) for g in goals]
        self.start_position = [float(v) for v in start_position]
        self.start_rotation = start_rotation
        self._base: Optional[np.ndarray] = None

    def _area(self) -> np.ndarray:
        from habitat.utils.visualizations import maps

        return maps.colorize_topdown_map(self.grid.codes)

    def base(self, found: Iterable[int] = ()) -> np.ndarray:
        """The navigable area with every target and its view points (RGB uint8)."""
        import cv2

        found = {int(f) for f in found}
        img = self._area()
        for oid, aabb, position, views in self.goals:
            for v in views:
                cv2.circle(img, _xy(self.grid.to_pixel(v)), 1, VIEW_POINT_COLOR, -1)
        for oid, aabb, position, views in self.goals:
            color = (
                TARGET_FOUND_COLOR if oid is not None and int(oid) in found else TARGET_MISSED_COLOR
            )
            if aabb and aabb.get("center") is not None and aabb.get("size") is not None:
                c, s = aabb["center"], aabb["size"]
                a = self.grid.to_pixel([c[0] - s[0] / 2, 0.0, c[2] - s[2] / 2])
                b = self.grid.to_pixel([c[0] + s[0] / 2, 0.0, c[2] + s[2] / 2])
                cv2.rectangle(img, _xy(a), _xy(b), color, 2)
            elif position is not None:
                cv2.circle(img, _xy(self.grid.to_pixel(position)), 4, color, -1)
        return img

    def draw(
        self,
        positions: Sequence[Sequence[float]],
        events: Sequence[Mapping[str, Any]] = (),
        *,
        total_steps: Optional[int] = None,
        end: Optional[str] = None,
        end_position: Optional[Sequence[float]] = None,
        agent_rotation: Optional[Sequence[float]] = None,
    ) -> np.ndarray:
        """The map after ``positions`` (``positions[k]`` = position after step k), with the
        claims of ``events`` whose step is reached. ``total_steps`` fixes the colour scale
        (default: this trajectory's length); ``end`` = ``"finish"`` or another termination
        draws the end point; ``agent_rotation`` draws habitat's agent sprite at the last
        position (the video's growing map). The start is always its own marker (a blue
        disc with a white heading tick), never the agent sprite. The claim spots drawn are
        kept in :attr:`claim_groups` (``{"row", "col", "kinds"}``, map pixels)."""
        import cv2
        from habitat.utils.visualizations import maps

        found = {int(t) for ev in events for t in (ev.get("new_targets") or [])}
        img = self.base(found)
        pixels = [self.grid.to_pixel(p) for p in positions]
        n = max(1, int(total_steps if total_steps else len(pixels) - 1))
        for k in range(1, len(pixels)):
            maps.draw_path(
                img, [pixels[k - 1], pixels[k]], color=trajectory_color(k / n), thickness=2
            )
        radius = max(4, int(round(0.2 / self.grid.meters_per_pixel)))
        start_px = self.grid.to_pixel(self.start_position)
        draw_start_marker(img, _xy(start_px), self._heading_px(), radius)
        if end is not None:
            where = (
                end_position if end_position is not None else (positions[-1] if positions else None)
            )
            if where is not None:
                px = self.grid.to_pixel(where)
                half = radius + 2
                color = FINISH_COLOR if end == "finish" else END_COLOR
                cv2.rectangle(
                    img, (px[1] - half, px[0] - half), (px[1] + half, px[0] + half), color, 2
                )
        self.claim_groups = (
            claim_groups(pixels, events, reached_only=end is None) if positions else []
        )
        for group in self.claim_groups:
            draw_claim_group(img, group)
        if agent_rotation is not None and positions:
            maps.draw_agent(img, pixels[-1], _map_angle(agent_rotation), radius)
        return img

    def _heading_px(self) -> Optional[Tuple[float, float]]:
        """Unit (dx, dy) in image axes of the start heading, or None without a rotation."""
        if self.start_rotation is None:
            return None
        yaw = yaw_of(self.start_rotation)  # 0 = facing -Z, positive turning left
        p = self.start_position
        a = self.grid.to_pixel(p)
        b = self.grid.to_pixel([p[0] - 5.0 * math.sin(yaw), p[1], p[2] - 5.0 * math.cos(yaw)])
        dx, dy = float(b[1] - a[1]), float(b[0] - a[0])
        norm = math.hypot(dx, dy)
        return (dx / norm, dy / norm) if norm > 0 else None


def draw_start_marker(
    img: np.ndarray, center: Tuple[int, int], heading: Optional[Tuple[float, float]], radius: int
) -> None:
    """The start pose: a blue disc ringed in white, a white tick toward its heading
    (``center`` and ``heading`` in image x/y)."""
    import cv2

    cv2.circle(img, center, radius + 2, (255, 255, 255), -1)
    cv2.circle(img, center, radius, START_COLOR, -1)
    if heading is not None:
        tip = (
            int(round(center[0] + heading[0] * radius)),
            int(round(center[1] + heading[1] * radius)),
        )
        cv2.line(img, center, tip, (255, 255, 255), max(1, radius // 3))


def claim_groups(
    pixels: Sequence[Tuple[int, int]],
    events: Sequence[Mapping[str, Any]],
    reached_only: bool = False,
) -> List[Dict[str, Any]]:
    """Claims at one spot (within :data:`CLAIM_STACK_PX` pixels of a group's first claim)
    as ``{"row", "col", "kinds"}``; a claim after the last position sits at the last one
    (or, with ``reached_only``, is left out: the growing map)."""
    groups: List[Dict[str, Any]] = []
    for ev in sorted(events, key=lambda e: int(e.get("step", 0))):
        step = int(ev.get("step", 0))
        if step >= len(pixels):
            if reached_only:
                continue
            step = len(pixels) - 1
        r, c = (int(v) for v in pixels[step])
        for g in groups:
            if max(abs(g["row"] - r), abs(g["col"] - c)) <= CLAIM_STACK_PX:
                g["kinds"].append(claim_kind(ev))
                break
        else:
            groups.append({"row": r, "col": c, "kinds": [claim_kind(ev)]})
    return groups


def _claim_dot(img: np.ndarray, center: Tuple[int, int], color) -> None:
    import cv2

    cv2.circle(img, center, 5, (0, 0, 0), -1)
    cv2.circle(img, center, 4, color, -1)


def draw_claim_group(img: np.ndarray, group: Mapping[str, Any]) -> None:
    """One claim: a dot at its spot. Several at one spot: their dots spread on a ring
    around it (at most :data:`CLAIM_RING_MAX`) and their count beside the ring."""
    kinds = list(group["kinds"])
    row, col = int(group["row"]), int(group["col"])
    if len(kinds) == 1:
        _claim_dot(img, (col, row), CLAIM_COLORS[kinds[0]])
        return
    shown = kinds[:CLAIM_RING_MAX]
    ring = int(min(18, max(7, math.ceil(len(shown) * 11 / (2 * math.pi)))))
    for i, kind in enumerate(shown):
        a = 2 * math.pi * i / len(shown) - math.pi / 2
        _claim_dot(
            img,
            (col + int(round(ring * math.cos(a))), row + int(round(ring * math.sin(a)))),
            CLAIM_COLORS[kind],
        )
    _text(img, f"x{len(kinds)}", (col + ring + 6, row - ring + 4), 0.45, outline=(255, 255, 255))


def _text(
    img: np.ndarray,
    text: str,
    org: Tuple[int, int],
    scale: float = 0.4,
    color=(0, 0, 0),
    thickness: int = 1,
    outline=None,
) -> None:
    """``outline``: a colour drawn 2 px thicker underneath, legible on any background."""
    import cv2

    font, line = cv2.FONT_HERSHEY_SIMPLEX, cv2.LINE_AA
    if outline is not None:
        cv2.putText(img, text, org, font, scale, outline, thickness + 2, line)
    cv2.putText(img, text, org, font, scale, color, thickness, line)


def scale_bar_length(meters_per_pixel: float, max_px: int) -> float:
    """The longest of :data:`SCALE_BAR_METERS` that spans at most ``max_px`` pixels (the
    shortest when none does)."""
    fits = [m for m in SCALE_BAR_METERS if m / meters_per_pixel <= max_px]
    return float(fits[-1] if fits else SCALE_BAR_METERS[0])


def _legend(
    height: int,
    banner: str,
    outcome: str,
    lines: Sequence[str],
    meters_per_pixel: float,
    map_width: int,
) -> Tuple[np.ndarray, Dict[str, Any]]:
    """The panel right of the map: outcome banner, header lines, marker legend, the
    trajectory colour bar and a scale bar at the map's own pixel size; with its layout
    (``legend`` labels, ``banner`` and ``scale_bar`` rows/columns in panel pixels)."""
    import cv2

    items = [
        ("start (white tick: heading)", "start", START_COLOR),
        ("claim: true", "dot", CLAIM_COLORS["true"]),
        ("claim: duplicate", "dot", CLAIM_COLORS["duplicate"]),
        ("claim: false", "dot", CLAIM_COLORS["false"]),
        ("xN: N claims at one spot (ring)", "ring", CLAIM_COLORS["false"]),
        ("target (claimed)", "box", TARGET_FOUND_COLOR),
        ("target (not claimed)", "box", TARGET_MISSED_COLOR),
        ("view point", "small", VIEW_POINT_COLOR),
        ("end: FINISH", "square", FINISH_COLOR),
        ("end: max steps / other", "square", END_COLOR),
    ]
    rows = max(height, BANNER_HEIGHT + 18 * (len(lines) + len(items)) + 110)
    panel = np.full((rows, LEGEND_WIDTH, 3), 255, np.uint8)
    cv2.rectangle(panel, (0, 0), (LEGEND_WIDTH - 1, BANNER_HEIGHT - 1), OUTCOME_COLORS[outcome], -1)
    _text(panel, banner[:30], (8, BANNER_HEIGHT - 8), 0.6, (255, 255, 255), 2)
    y = BANNER_HEIGHT + 16
    for text in lines:
        _text(panel, text[:46], (6, y))
        y += 18
    y += 6
    for label, kind, color in items:
        c = (14, y - 4)
        if kind == "start":
            draw_start_marker(panel, c, (0.0, -1.0), 6)
        elif kind == "dot":
            _claim_dot(panel, c, color)
        elif kind == "ring":
            for dx in (-5, 5):
                _claim_dot(panel, (c[0] + dx, c[1]), color)
        elif kind == "small":
            cv2.circle(panel, c, 2, color, -1)
        else:  # box, square
            cv2.rectangle(panel, (8, y - 10), (20, y + 2), color, 2)
        _text(panel, label, (30, y))
        y += 18
    for i in range(LEGEND_WIDTH - 40):  # time colour bar
        cv2.line(panel, (8 + i, y - 8), (8 + i, y), trajectory_color(i / (LEGEND_WIDTH - 41)), 1)
    _text(panel, "trajectory: start -> end (colour = time)", (8, y + 14))
    y += 34
    meters = scale_bar_length(meters_per_pixel, min(LEGEND_WIDTH - 90, max(20, map_width // 3)))
    length = int(round(meters / meters_per_pixel))
    x0, x1 = 8, 8 + length
    cv2.rectangle(panel, (x0, y), (x1 - 1, y + SCALE_BAR_THICKNESS - 1), SCALE_BAR_COLOR, -1)
    for x in (x0, x1 - 1):
        cv2.line(panel, (x, y - 4), (x, y + SCALE_BAR_THICKNESS + 3), SCALE_BAR_COLOR, 1)
    _text(panel, f"{meters:g} m", (x1 + 8, y + SCALE_BAR_THICKNESS + 1), 0.45)
    layout = {
        "legend": [label for label, _, _ in items],
        "banner": {"rows": [0, BANNER_HEIGHT], "color": list(OUTCOME_COLORS[outcome])},
        "scale_bar": {
            "meters": meters,
            "pixels": length,
            "rows": [y, y + SCALE_BAR_THICKNESS],
            "cols": [x0, x1],
        },
    }
    return panel, layout


def _fmt(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


_ENDS = {
    "finish": "FINISH",
    "target_found": "TARGET_FOUND (ends single/any)",
    "max_steps": "max steps reached",
}


def record_header(
    record: Mapping[str, Any], goal_text: Optional[str] = None
) -> Tuple[str, str, List[str]]:
    """``(outcome, banner, lines)`` of a record's map: outcome ``success``/``failure``
    (SPEC §4's success) or ``error``; the banner says it in capitals with how the episode
    ended; the lines give the targets found, the metrics, the goal, mode and claims."""
    import textwrap

    ep = record.get("episode") or {}
    m = record.get("metrics") or {}
    kinds = [claim_kind(ev) for ev in record.get("report_events") or []]
    steps = record.get("steps_taken")
    limit = ep.get("max_steps")
    at = f"step {steps}" + (f" of {limit}" if limit else "")
    if record.get("status") != "ok":
        outcome, banner = "error", f"ERROR: {record.get('error_type') or 'error'}"
        lines = [f"the episode failed at {at}"]
    else:
        outcome = "success" if m.get("success") == 1 else "failure"
        end = record.get("terminated_by")
        banner = outcome.upper()
        if ep.get("target_mode") == "sequential":  # GOAT's protocol and metrics (SPEC §11)
            done = (record.get("subtask_metrics") or {}).get("subtask_success") or []
            ends = dict(_ENDS, target_found="the last subtask's SUBTASK_STOP")
            lines = [
                f"{ends.get(end, str(end))} at {at}",
                f"subtasks {sum(done)} of {len(done)} succeeded",
                f"partial {_fmt(m.get('partial_success'))}  "
                f"composite spl {_fmt(m.get('composite_spl'))}",
            ]
        else:
            lines = [
                f"{_ENDS.get(end, str(end))} at {at}",
                f"found {m.get('targets_found')} of {m.get('required_target_count')} required",
                f"f1 {_fmt(m.get('f1'))}  spl-multi {_fmt(m.get('spl_multi'))}  "
                f"pe {_fmt(m.get('pe'))}",
            ]
    if goal_text:
        wrapped = textwrap.wrap(f'goal: "{goal_text}"', 44)
        lines += wrapped[:3] + (["  ..."] if len(wrapped) > 3 else [])
    lines += [
        f"mode {ep.get('target_mode')}  targets {len(ep.get('target_object_ids') or [])}"
        + (f"  need {ep.get('target_count')}" if ep.get("target_mode") == "many" else ""),
        f"{ep.get('scene_id', '')} / {ep.get('episode_id', record.get('episode_key', ''))}",
        f"claims {len(kinds)}: {kinds.count('true')} true, "
        f"{kinds.count('duplicate')} dup, {kinds.count('false')} false",
    ]
    if not record.get("positions"):
        lines.append("(no per-step positions in this record)")
    return outcome, banner, lines


def episode_goal_image(env, episode) -> Optional[np.ndarray]:
    """The goal image of an image-goal episode, from the task's ``mosnav_goal_image``
    sensor (the picture the agent got: its cached render, or a render at this episode's
    camera); None for other goal types or without the sensor."""
    if getattr(episode, "image_goal", None) is None:
        return None
    task = getattr(env, "task", None)
    sensor = None if task is None else task.sensor_suite.sensors.get("mosnav_goal_image")
    if sensor is None:
        return None
    return np.asarray(sensor.get_observation(None, episode))


def goal_image_panel(image: np.ndarray, height: int) -> Tuple[np.ndarray, List[int]]:
    """The goal image on a white panel ``height`` rows tall, shrunk by an integer factor
    (nearest pixel) to at most :data:`LEGEND_WIDTH` wide, under a "goal image" caption;
    returns the panel and the picture's ``[row0, row1, col0, col1]`` in it."""
    img = np.asarray(image, dtype=np.uint8)[..., :3]
    caption = 24
    step = max(
        1,
        -(-img.shape[1] // (LEGEND_WIDTH - 20)),
        -(-img.shape[0] // max(1, height - caption - 10)),
    )
    small = img[::step, ::step]
    h, w = small.shape[:2]
    panel = np.full((max(height, h + caption + 10), w + 20, 3), 255, np.uint8)
    r0, c0 = caption, 10
    panel[r0 : r0 + h, c0 : c0 + w] = small
    _text(panel, "goal image", (c0, 16))
    return panel, [r0, r0 + h, c0, c0 + w]


def render_record_map(
    grid: MapGrid,
    goals: Iterable[Any],
    record: Mapping[str, Any],
    goal_text: Optional[str] = None,
    goal_image: Optional[np.ndarray] = None,
) -> Tuple[np.ndarray, Dict[str, Any]]:
    """The saved map of one record (map on the left in grid pixels, legend on the right,
    an image goal's picture right of that) and what it shows (outcome, header lines,
    legend labels, scale bar, claim spots, start, goal image: PNG pixels), which
    :func:`save_record_map` stores in the PNG."""
    start = record.get("initial_agent_state") or {}
    final = record.get("final_agent_state") or {}
    positions = record.get("positions") or []
    start_position = start.get("position") or (positions[0] if positions else None)
    if start_position is None:
        raise ValueError(
            f"record {record.get('episode_key')}: field 'initial_agent_state.position' "
            "is missing (nothing to draw)"
        )
    painter = EpisodeMapPainter(grid, goals, start_position, start.get("rotation"))
    img = painter.draw(
        positions,
        record.get("report_events") or [],
        end=record.get("terminated_by"),
        end_position=final.get("position") or (positions[-1] if positions else None),
    )
    outcome, banner, lines = record_header(record, goal_text)
    legend, layout = _legend(
        img.shape[0], banner, outcome, lines, grid.meters_per_pixel, img.shape[1]
    )
    if legend.shape[0] > img.shape[0]:
        pad = np.full((legend.shape[0] - img.shape[0], img.shape[1], 3), 255, np.uint8)
        img = np.concatenate([img, pad], axis=0)
    width = img.shape[1]
    bar = layout["scale_bar"]
    meta = {
        "outcome": outcome,
        "header": [banner] + lines,
        "goal_text": goal_text,
        "legend": layout["legend"],
        "legend_col": width,
        "banner": {
            "rows": layout["banner"]["rows"],
            "cols": [width, width + LEGEND_WIDTH],
            "color": layout["banner"]["color"],
        },
        "scale_bar": dict(bar, cols=[c + width for c in bar["cols"]]),
        "start_px": list(grid.to_pixel(start_position)),
        "claim_groups": painter.claim_groups,
    }
    parts = [img, legend]
    if goal_image is not None:
        panel, (r0, r1, c0, c1) = goal_image_panel(goal_image, img.shape[0])
        rows = max(img.shape[0], panel.shape[0])
        parts = [_pad_rows(p, rows) for p in parts + [panel]]
        left = width + legend.shape[1]
        meta["goal_image"] = {"rows": [r0, r1], "cols": [left + c0, left + c1]}
    return np.concatenate(parts, axis=1), meta


def _pad_rows(img: np.ndarray, rows: int) -> np.ndarray:
    """``img`` with white rows below it up to ``rows``."""
    if img.shape[0] >= rows:
        return img
    pad = np.full((rows - img.shape[0], img.shape[1], 3), 255, np.uint8)
    return np.concatenate([img, pad], axis=0)


def save_map_png(path: str, image: np.ndarray, info: Mapping[str, Any]) -> str:
    """Write an RGB map as PNG with the ``mosnav_map`` JSON text chunk."""
    from PIL import Image, PngImagePlugin

    from habitat_mosnav.safety import replacing

    meta = PngImagePlugin.PngInfo()
    meta.add_text(MAP_INFO_KEY, json.dumps(dict(info)))
    with replacing(path, suffix=".png") as tmp:  # never through a planted link
        Image.fromarray(np.ascontiguousarray(image, dtype=np.uint8)).save(
            tmp, format="PNG", pnginfo=meta
        )
    return path


def read_map_info(path: str) -> Dict[str, Any]:
    """The ``mosnav_map`` JSON of a saved map."""
    from PIL import Image

    with Image.open(path) as im:
        text = im.text.get(MAP_INFO_KEY) if hasattr(im, "text") else None
    if not text:
        raise ValueError(f"{path}: no {MAP_INFO_KEY} text chunk (not a mosnav map)")
    return json.loads(text)


def save_record_map(
    path: str,
    grid: MapGrid,
    goals: Iterable[Any],
    record: Mapping[str, Any],
    goal_text: Optional[str] = None,
    goal_image: Optional[np.ndarray] = None,
) -> Dict[str, Any]:
    """Write the record's map; returns the ``mosnav_map`` JSON stored in it (the grid's
    :meth:`MapGrid.info`, the episode key and :func:`render_record_map`'s layout)."""
    image, meta = render_record_map(grid, goals, record, goal_text, goal_image)
    info = dict(grid.info(), episode_key=record.get("episode_key"), **meta)
    save_map_png(path, image, info)
    return info


def start_height(record: Mapping[str, Any], episode=None) -> float:
    start = (record.get("initial_agent_state") or {}).get("position")
    if start is None and episode is not None:
        start = episode.start_position
    return float(start[1]) if start is not None else 0.0


# ----------------------------------------------------------------------------- runs


def _manifest(run_dir: str) -> Dict[str, Any]:
    """The run's ``run.json`` (written by ``mosnav-eval``), or {} for an older run."""
    from habitat_mosnav.evaluation.durable import read_json_object

    path = os.path.join(run_dir, "run.json")
    return read_json_object(path) if os.path.exists(path) else {}


def _config_source(run_dir: str, config: Optional[str], overrides: Sequence[str]):
    """(config path, overrides): the flags when given, else the run's manifest, else the
    demo config."""
    if config is not None:
        return config, list(overrides)
    manifest = _manifest(run_dir)
    cfg = manifest.get("config")
    if isinstance(cfg, Mapping):  # {"path": ..., "overrides": [...]}
        path, ov = cfg.get("path"), cfg.get("overrides") or []
    else:
        path = cfg
        ov = manifest.get("config_overrides") or manifest.get("overrides") or []
    if not isinstance(path, str) or not path:
        path = DEFAULT_CONFIG
    return path, [str(o) for o in ov] + list(overrides)


def render_run_maps(
    run_dir: str,
    out_dir: Optional[str] = None,
    *,
    config: Optional[str] = None,
    overrides: Sequence[str] = (),
    keys: Optional[Iterable[str]] = None,
    progress: bool = True,
    stream=None,
) -> Dict[str, str]:
    """Draw ``<out_dir>/<episode>.png`` (default ``<run_dir>/maps``) for every latest
    record of a run (or only ``keys``); returns key -> path. The scenes are loaded through
    ``habitat.Env`` with the run's config (``config``/``overrides`` win; else the
    manifest's; else the demo config). Episodes missing from that dataset are an error."""
    from tqdm import tqdm

    from habitat_mosnav import get_config
    from habitat_mosnav.evaluation.rank_files import latest_records

    out_dir = out_dir or os.path.join(run_dir, "maps")
    records = {k: rec for k, (_, rec) in latest_records(run_dir).items()}
    if keys is not None:
        records = {k: records[k] for k in keys if k in records}
    if not records:
        return {}
    path, ov = _config_source(run_dir, config, overrides)
    try:
        cfg = get_config(path, list(ov) + ["habitat.task.mosnav_space_coverage_samples=0"])
    except Exception as exc:  # Hydra/OmegaConf errors: one line naming the config
        raise ValueError(
            f"config {path}: {type(exc).__name__}: {' '.join(mask_secrets(exc).split())[:300]}"
        ) from None
    import habitat

    hcfg = cfg.habitat if "habitat" in cfg else cfg
    env = habitat.Env(config=hcfg)
    try:
        by_key = {getattr(ep, "episode_key", ""): ep for ep in env.episodes}
        missing = [k for k in records if k not in by_key]
        if missing:
            raise ValueError(
                f"{run_dir}: record {missing[0]} is not an episode of config {path} "
                f"({len(missing)} missing); pass the run's --config/--set"
            )
        order = sorted(records, key=lambda k: (by_key[k].scene_id, k))
        written: Dict[str, str] = {}
        grid, scene, grid_height = None, None, None
        for key in tqdm(
            order,
            desc="maps",
            unit="ep",
            disable=not progress,
            file=stream if stream is not None else sys.stderr,
        ):
            ep = by_key[key]
            rec = records[key]
            height = start_height(rec, ep)
            if ep.scene_id != scene:
                env.current_episode = ep
                env.reset()
                scene, grid = ep.scene_id, None
            if grid is None or abs(grid_height - height) > 0.5:
                grid = MapGrid.from_pathfinder(env.sim.pathfinder, height)
                grid_height = height
            target = os.path.join(out_dir, episode_file_stem(key) + ".png")
            save_record_map(
                target,
                grid,
                ep.goals,
                rec,
                getattr(ep, "goal_text", None),
                episode_goal_image(env, ep),
            )
            written[key] = target
        return written
    finally:
        env.close()


def add_map_source_arguments(p: argparse.ArgumentParser, when: str = "") -> None:
    """``--config``, ``--set`` and ``--no-progress``: where a run's scenes come from when its
    maps are drawn (shared by this module's CLI and ``mosnav-report --maps``)."""
    p.add_argument(
        "--config",
        default=None,
        help=f"{when}the run's habitat config (default: from RUN_DIR/run.json, else the demo config)",
    )
    p.add_argument(
        "--set",
        **SET_FLAG,
        help=f"{when}habitat config override, repeatable (e.g. the run's dataset paths)",
    )
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def map_source_options(args: argparse.Namespace) -> Dict[str, Any]:
    """The keywords of :func:`render_run_maps` that :func:`add_map_source_arguments` parsed."""
    return {"config": args.config, "overrides": args.overrides, "progress": args.progress}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m habitat_mosnav.evaluation.maps",
        description="Draw the top-down map of every episode of a mosnav-eval run.",
    )
    add_version_argument(p)
    p.add_argument("run_dir", help="a mosnav-eval --output-dir")
    p.add_argument("--out", default=None, help="where the PNGs go (default: RUN_DIR/maps)")
    add_map_source_arguments(p)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    from habitat_mosnav.evaluation.durable import ResultFileError

    try:
        written = render_run_maps(args.run_dir, args.out, **map_source_options(args))
    except (ResultFileError, ValueError, OSError) as exc:
        print(safe_line(f"maps: error: {' '.join(str(exc).split())}"), file=sys.stderr)
        return 2
    print(f"wrote {len(written)} map(s) to {args.out or os.path.join(args.run_dir, 'maps')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
