"""``NavGrid``: the navigable area of one scene for one agent shape, and its queries.

A small query surface (as habitat-sim's ``PathFinder`` over its navmesh) over structures
built in :mod:`habitat_mosnav.sims.grid`, in this order:

1. :class:`~.grid.surface.Surface`: the mesh sampled into 2.5D floor cells, packed into
   layers, eroded by exactly the agent radius (:mod:`.grid.clearance`), labelled into
   patches and islands;
2. :class:`~.grid.clearance.Clearance`: signed clearance and line of sight on it;
3. :class:`~.grid.corners.CornerGraph`: nodes where shortest paths bend (around obstacle
   corners, at the radius) and seam portals, their visibility edges and polygons;
4. :class:`~.grid.motion.Motion`: snapping and stepping (sliding);
5. :class:`~.grid.geodesics.Geodesics`: goal-set fields (Dijkstra over the graph),
   look-ups, paths, with :class:`~.grid.fastmarch.FastMarching` as the fallback.

:mod:`.pathfinder` and :mod:`.mosnav_sim` use only the methods and attributes below.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.sims.grid.cells import INF, AgentShape, Layer, Location
from habitat_mosnav.sims.grid.clearance import Clearance
from habitat_mosnav.sims.grid.corners import CornerGraph
from habitat_mosnav.sims.grid.fastmarch import FastMarching
from habitat_mosnav.sims.grid.geodesics import DistanceField, Geodesics
from habitat_mosnav.sims.grid.motion import Motion
from habitat_mosnav.sims.grid.surface import Surface, sample_surface

__all__ = ["INF", "AgentShape", "DistanceField", "Layer", "Location", "NavGrid", "sample_surface"]


class NavGrid:
    """Navigable area of one scene for one agent shape."""

    def __init__(
        self,
        triangles: np.ndarray,
        agent: AgentShape,
        cell: float = 0.05,
        progress: bool = False,
        drop_roofs: bool = True,
        desc: str = "",
        walkable_only: bool = False,
    ):
        tris = np.asarray(triangles, dtype=np.float32)
        if tris.ndim != 3 or tris.shape[1:] != (3, 3) or len(tris) == 0:
            raise ValueError("NavGrid needs triangles of shape (F, 3, 3)")
        self.surface = Surface(tris, agent, cell, progress, drop_roofs, desc, walkable_only)
        self.clearance = Clearance(self.surface)
        self.graph = CornerGraph(self.surface, self.clearance)
        self.motion = Motion(self.surface)
        self.fast_marching = FastMarching(self.surface, self.motion.snap)
        self.geodesics = Geodesics(
            self.surface, self.clearance, self.graph, self.motion, self.fast_marching
        )

    # ------------------------------------------------------------ what was built
    @property
    def agent(self) -> AgentShape:
        return self.surface.agent

    @property
    def cell(self) -> float:
        return self.surface.cell

    @property
    def H(self) -> int:
        return self.surface.H

    @property
    def W(self) -> int:
        return self.surface.W

    @property
    def layers(self) -> List[Layer]:
        return self.surface.layers

    @property
    def bounds(self) -> Tuple[np.ndarray, np.ndarray]:
        return self.surface.bounds

    @property
    def is_loaded(self) -> bool:
        return self.surface.total_cells > 0

    @property
    def total_cells(self) -> int:
        return self.surface.total_cells

    @property
    def num_islands(self) -> int:
        return self.surface.num_islands

    @property
    def island_area(self) -> np.ndarray:
        return self.surface.island_area

    @property
    def island_y(self) -> List[float]:
        return self.surface.island_y

    @property
    def largest_island(self) -> int:
        return self.surface.largest_island

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def field_cache_size(self) -> int:
        return self.geodesics.field_cache_size

    @field_cache_size.setter
    def field_cache_size(self, n: int) -> None:
        self.geodesics.field_cache_size = int(n)

    # ------------------------------------------------------------ points and steps
    def snap(self, p: Sequence[float], max_y_delta: float = INF) -> Optional[Location]:
        return self.motion.snap(p, max_y_delta)

    def snap_cached(self, p) -> Optional[Location]:
        return self.motion.snap_cached(p)

    def snap_to_island(self, p: Sequence[float], island: int) -> Optional[Location]:
        return self.motion.snap_to_island(p, island)

    def is_navigable(self, p: Sequence[float], max_y_delta: float = 0.5) -> bool:
        return self.motion.is_navigable(p, max_y_delta)

    def island_of(self, p) -> int:
        return self.motion.island_of(p)

    def island_radius(self, p) -> float:
        return self.motion.island_radius(p)

    def random_point(self, rng: np.random.Generator, island: int = -1) -> np.ndarray:
        return self.motion.random_point(rng, island)

    def try_step(self, start, end, sliding: bool = True) -> np.ndarray:
        return self.motion.try_step(start, end, sliding)

    def distance_to_closest_obstacle(self, p, max_search_radius: float = 2.0) -> float:
        return self.motion.distance_to_closest_obstacle(p, max_search_radius)

    def topdown(self, meters_per_pixel: float, height: float, eps: float = 0.5) -> np.ndarray:
        return self.surface.topdown(meters_per_pixel, height, eps)

    # ------------------------------------------------------------ geodesics
    def distance_field(self, goals) -> DistanceField:
        return self.geodesics.distance_field(goals)

    def field_value(self, df: DistanceField, loc: Location) -> float:
        return self.geodesics.field_value(df, loc)

    def geodesic_distance(self, a, goals) -> float:
        return self.geodesics.geodesic_distance(a, goals)

    def find_path(self, a, goals) -> Tuple[List[np.ndarray], float]:
        return self.geodesics.find_path(a, goals)
