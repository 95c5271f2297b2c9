"""habitat-sim style ``PathFinder`` and ``ShortestPath`` over a :class:`NavGrid`."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.sims.navgrid import INF, NavGrid


def navigable_extent(pathfinder) -> Tuple[np.ndarray, np.ndarray]:
    """(lo, hi) float64 of the navigable surface of any pathfinder: this package's
    (:meth:`PathFinder.navigable_extent`) or habitat-sim's (its navmesh triangles'
    vertices; its ``get_bounds`` are the tile header's, as wide as the file says), else
    ``get_bounds()``."""
    own = getattr(pathfinder, "navigable_extent", None)
    if callable(own):
        lo, hi = own()
        return np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    build = getattr(pathfinder, "build_navmesh_vertices", None)
    if callable(build):
        v = np.array([tuple(p) for p in build()], np.float64).reshape(-1, 3)
        v = v[np.isfinite(v).all(axis=1)]
        if len(v):
            return v.min(axis=0), v.max(axis=0)
    lo, hi = pathfinder.get_bounds()
    return np.asarray(lo, np.float64), np.asarray(hi, np.float64)


class ShortestPath:
    """Mirrors ``habitat_sim.ShortestPath``: set ``requested_start``/``requested_end``."""

    def __init__(self) -> None:
        self.requested_start = np.zeros(3, np.float32)
        self.requested_end = np.zeros(3, np.float32)
        self.points: List[np.ndarray] = []
        self.geodesic_distance: float = INF


class MultiGoalShortestPath:
    """Mirrors ``habitat_sim.MultiGoalShortestPath``: several ``requested_ends``."""

    def __init__(self) -> None:
        self.requested_start = np.zeros(3, np.float32)
        self.requested_ends: List[np.ndarray] = []
        self.points: List[np.ndarray] = []
        self.geodesic_distance: float = INF
        self.closest_end_point_index: int = -1


class PathFinder:
    """The subset of habitat-sim's PathFinder that habitat-lab and this plugin use."""

    def __init__(self, grid: Optional[NavGrid] = None, seed: int = 0) -> None:
        self._grid = grid
        self._rng = np.random.default_rng(seed)

    def set_grid(self, grid: Optional[NavGrid]) -> None:
        self._grid = grid

    @property
    def grid(self) -> NavGrid:
        if self._grid is None:
            raise RuntimeError("MosNavMeshSim-v0 pathfinder: no scene loaded")
        return self._grid

    @property
    def is_loaded(self) -> bool:
        return self._grid is not None and self._grid.is_loaded

    def seed(self, new_seed: int) -> None:
        self._rng = np.random.default_rng(int(new_seed))

    def get_bounds(self):
        lo, hi = self.grid.bounds
        return lo.copy(), hi.copy()

    def navigable_extent(self):
        """(lo, hi) of the navigable surface itself: a navmesh's polygons (``get_bounds`` is
        habitat-sim's, the tile header's bounds, which a file may set anywhere), else the
        navigable cells (the same as ``get_bounds``)."""
        lo, hi = getattr(self.grid, "extent", None) or self.grid.bounds
        return lo.copy(), hi.copy()

    def is_navigable(self, pt: Sequence[float], max_y_delta: float = 0.5) -> bool:
        return self.grid.is_navigable(pt, max_y_delta)

    def snap_point(self, pt: Sequence[float], island_index: int = -1) -> np.ndarray:
        """Nearest navigable point (of island ``island_index`` when it is >= 0, as
        habitat-sim 0.3.3); NaNs when there is none."""
        g = self.grid
        loc = g.snap(pt) if island_index < 0 else g.snap_to_island(pt, int(island_index))
        if loc is None:
            return np.full(3, np.nan, np.float32)
        return loc.xyz()

    def get_random_navigable_point(self, max_tries: int = 10, island_index: int = -1) -> np.ndarray:
        return self.grid.random_point(self._rng, island_index)

    def get_random_navigable_point_near(
        self, circle_center, radius: float, max_tries: int = 100, island_index: int = -1
    ):
        c = np.asarray(circle_center, np.float64)
        isl = self.get_island(c) if island_index < 0 else island_index
        for _ in range(max_tries):
            ang = self._rng.uniform(0, 2 * np.pi)
            rad = radius * np.sqrt(self._rng.random())
            p = c + np.array([np.cos(ang) * rad, 0.0, np.sin(ang) * rad])
            if self.grid.is_navigable(p):
                loc = self.grid.snap(p)
                if loc is not None and (isl < 0 or loc.island == isl):
                    return loc.xyz()
        return np.full(3, np.nan, np.float32)

    def get_island(self, pt) -> int:
        return self.grid.island_of(pt)

    @property
    def num_islands(self) -> int:
        return self.grid.num_islands

    def island_area(self, island_index: int = -1) -> float:
        area = self.grid.island_area
        return float(area.sum() if island_index < 0 else area[island_index])

    @property
    def navigable_area(self) -> float:
        return float(self.grid.island_area.sum())

    def island_radius(self, pt) -> float:
        return self.grid.island_radius(pt)

    def distance_to_closest_obstacle(self, pt, max_search_radius: float = 2.0) -> float:
        return self.grid.distance_to_closest_obstacle(pt, max_search_radius)

    def try_step(self, start, end) -> np.ndarray:
        return self.grid.try_step(start, end, sliding=True)

    def try_step_no_sliding(self, start, end) -> np.ndarray:
        return self.grid.try_step(start, end, sliding=False)

    def geodesic_distance(self, start, ends) -> float:
        return self.grid.geodesic_distance(start, ends)

    def find_path(self, path) -> bool:
        """Fill ``path.points`` and ``path.geodesic_distance``; False when unreachable."""
        if hasattr(path, "requested_ends"):
            ends = np.asarray(path.requested_ends, np.float64).reshape(-1, 3)
        else:
            ends = np.asarray(path.requested_end, np.float64).reshape(-1, 3)
        pts, dist = self.grid.find_path(np.asarray(path.requested_start, np.float64), ends)
        path.points = pts
        path.geodesic_distance = float(dist)
        if hasattr(path, "closest_end_point_index"):
            if pts:
                last = np.asarray(pts[-1], np.float64)
                d = np.linalg.norm(ends[:, [0, 2]] - last[[0, 2]], axis=1)
                path.closest_end_point_index = int(np.argmin(d))
            else:
                path.closest_end_point_index = -1
        return bool(pts) and dist < INF

    def get_topdown_view(
        self, meters_per_pixel: float, height: float, eps: float = 0.5
    ) -> np.ndarray:
        """Bool map (rows = z, columns = x from ``get_bounds()[0]``) of navigable cells."""
        return self.grid.topdown(meters_per_pixel, height, eps)
