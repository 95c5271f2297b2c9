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

from operator import attrgetter

from habitat_mosnav.sims.grid.cells import INF, AgentShape, Layer, Location
from habitat_mosnav.sims.grid.clearance import Clearance
from habitat_mosnav.sims.grid.corners import CornerGraph
from habitat_mosnav.sims.grid.fastmarch import FastMarching
from habitat_mosnav.sims.grid.geodesics import DistanceField, Geodesics
from habitat_mosnav.sims.grid.motion import Motion
from habitat_mosnav.sims.grid.surface import Surface, sample_surface

__all__ = ["INF", "AgentShape", "DistanceField", "Layer", "Location", "NavGrid", "sample_surface"]


class NavGrid:
    """Navigable area of one scene for one agent shape, built from the arguments of
    :class:`~.grid.surface.Surface` (triangles ``(F, 3, 3)``, agent, cell, ...)."""

    def __init__(self, *args, **kwargs):
        self.surface = Surface(*args, **kwargs)
        self.clearance = Clearance(self.surface)
        self.graph = CornerGraph(self.surface, self.clearance)
        self.motion = Motion(self.surface)
        self.fast_marching = FastMarching(self.surface, self.motion.snap)
        self.geodesics = Geodesics(
            self.surface, self.clearance, self.graph, self.motion, self.fast_marching
        )

    # ------------------------------------------------------------ what was built (read-only)
    agent = property(attrgetter("surface.agent"))
    cell = property(attrgetter("surface.cell"))
    H = property(attrgetter("surface.H"))
    W = property(attrgetter("surface.W"))
    layers = property(attrgetter("surface.layers"))
    bounds = property(attrgetter("surface.bounds"))
    total_cells = property(attrgetter("surface.total_cells"))
    num_islands = property(attrgetter("surface.num_islands"))
    island_area = property(attrgetter("surface.island_area"))
    island_y = property(attrgetter("surface.island_y"))
    largest_island = property(attrgetter("surface.largest_island"))
    num_nodes = property(attrgetter("graph.num_nodes"))

    @property
    def is_loaded(self) -> bool:
        return self.surface.total_cells > 0

    @property
    def field_cache_size(self) -> int:
        return self.geodesics.field_cache_size

    @field_cache_size.setter
    def field_cache_size(self, n: int) -> None:
        self.geodesics.field_cache_size = int(n)

    # ------------------------------------------------------------ points and steps (the parts'
    # own methods, so their signatures and defaults have one home)
    snap = property(attrgetter("motion.snap"))
    snap_cached = property(attrgetter("motion.snap_cached"))
    snap_to_island = property(attrgetter("motion.snap_to_island"))
    is_navigable = property(attrgetter("motion.is_navigable"))
    island_of = property(attrgetter("motion.island_of"))
    island_radius = property(attrgetter("motion.island_radius"))
    random_point = property(attrgetter("motion.random_point"))
    try_step = property(attrgetter("motion.try_step"))
    distance_to_closest_obstacle = property(attrgetter("motion.distance_to_closest_obstacle"))
    topdown = property(attrgetter("surface.topdown"))

    # ------------------------------------------------------------ geodesics
    distance_field = property(attrgetter("geodesics.distance_field"))
    field_value = property(attrgetter("geodesics.field_value"))
    geodesic_distance = property(attrgetter("geodesics.geodesic_distance"))
    find_path = property(attrgetter("geodesics.find_path"))
