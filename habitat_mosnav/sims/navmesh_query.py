"""habitat-sim's PathFinder semantics over a ``.navmesh`` (Recast/Detour polygons).

When a scene has habitat-sim's navmesh (HM3D's ``<id>.basis.navmesh``), both simulators
must answer the same questions on the same surface. This module answers them the way
habitat-sim 0.3.3 does on top of Detour, re-derived in Python:

- *projection* (``snap``): the nearest polygon within a (2, 4, 2) m box; a point above a
  polygon closer than the climb height counts as on it (Detour's ``findNearestPoly``);
- *navigable*: the projection moves the point by <= 1 cm in x/z and <= ``max_y_delta`` in y;
- *geodesic distance*: A* over polygons whose node positions are the midpoints of the edges
  they were first entered through (Detour's ``findPath``), then the shortest path through
  that corridor's portals (the funnel, ``findStraightPath``), measured in 3D; several goals:
  each in order of its lower bound, skipping those that cannot beat the best
  (``MultiGoalShortestPath``), with the same answer from fewer paths computed (a second
  lower bound, via the doorways every path must pass: :meth:`NavMeshQuery._bounds`);
- *motion* (``try_step``): a breadth-first walk over the polygons touching the segment,
  stopping at (sliding along, with ``sliding``) the wall it hits (``moveAlongSurface``);
- *islands*: polygons joined through shared edges, radius = largest distance of an island's
  polygon vertices from their mean, area = its detail triangles' area.

Everything is read from the polygons as written; nothing is rasterised, so the navmesh
costs memory in proportion to its polygons (a few MB for an HM3D scene).
"""

from __future__ import annotations

import bisect
import heapq
import math
from typing import List, Optional, Tuple

import numpy as np

from habitat_mosnav.sims.navmesh import NavMeshData, NavMeshError, NavMeshUnsupported

INF = float("inf")
#: half extents (m) of the box searched for the nearest polygon (habitat-sim's projectToPoly)
PICK_EXTENTS = (2.0, 4.0, 2.0)
#: A* heuristic scale (Detour's H_SCALE)
H_SCALE = 0.999
#: points closer than this are equal (Detour's dtVequal)
_EQUAL_SQ = (1.0 / 16384.0) ** 2
#: polygons a corridor may have (habitat-sim's MAX_POLYS)
MAX_POLYS = 256
#: slack (m) of the doorway lower bound: the funnel may skip a first portal within 1 mm of
#: its start, and float sums round; 1 cm covers both with room to spare
BOUND_SLACK = 0.01
#: navmeshes up to this many polygons get the doorway bound (its table costs one
#: connected-components pass per shared edge)
BOUND_MAX_POLYS = 1024
#: cells a top-down view may have (habitat-sim's would allocate whatever the tile bounds
#: ask for: 40000 x 40000 for bounds 2 km wide at 0.1 m); larger ones are refused
TOPDOWN_MAX_CELLS = 1 << 26
#: polygons a move may visit, its search stack (Detour's tiny node pool and MAX_STACK)
_MOVE_NODES = 64
_MOVE_STACK = 48


class NavPoint:
    """A point projected onto the navmesh: its polygon and island (habitat-sim's
    ``snap_point`` / ``get_island`` read these)."""

    __slots__ = ("poly", "island", "x", "y", "z", "over")

    def __init__(self, poly: int, island: int, x: float, y: float, z: float, over: bool):
        self.poly, self.island, self.x, self.y, self.z, self.over = poly, island, x, y, z, over

    def xyz(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z], dtype=np.float32)


def _tri_area2(a, b, c) -> float:
    """Twice the signed x/z area of (a, b, c), Detour's sign convention."""
    return (c[0] - a[0]) * (b[2] - a[2]) - (b[0] - a[0]) * (c[2] - a[2])


def _seg_dist2(px: float, pz: float, a, b) -> Tuple[float, float]:
    """Squared x/z distance of (px, pz) to segment ab and the segment parameter."""
    dx, dz = b[0] - a[0], b[2] - a[2]
    ex, ez = px - a[0], pz - a[2]
    d = dx * dx + dz * dz
    t = dx * ex + dz * ez
    if d > 0:
        t /= d
    t = 0.0 if t < 0 else (1.0 if t > 1 else t)
    fx, fz = a[0] + t * dx - px, a[2] + t * dz - pz
    return fx * fx + fz * fz, t


def _in_poly(px: float, pz: float, vs) -> bool:
    """Even-odd rule in x/z (Detour's dtPointInPolygon)."""
    inside = False
    j = len(vs) - 1
    for i in range(len(vs)):
        vi, vj = vs[i], vs[j]
        if (vi[2] > pz) != (vj[2] > pz) and px < (vj[0] - vi[0]) * (pz - vi[2]) / (
            vj[2] - vi[2]
        ) + vi[0]:
            inside = not inside
        j = i
    return inside


def _seg_seg(ap, aq, bp, bq) -> Optional[Tuple[float, float]]:
    """Parameters (s on a, t on b) where the x/z lines of two segments cross, None if parallel."""
    ux, uz = aq[0] - ap[0], aq[2] - ap[2]
    vx, vz = bq[0] - bp[0], bq[2] - bp[2]
    wx, wz = ap[0] - bp[0], ap[2] - bp[2]
    d = ux * vz - uz * vx
    if abs(d) < 1e-6:
        return None
    return (vx * wz - vz * wx) / d, (ux * wz - uz * wx) / d


def _lerp(a, b, t: float) -> Tuple[float, float, float]:
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)


_dist = math.dist  # 3D length of a segment


def _fmt3(v) -> str:
    return "(" + ", ".join(f"{float(c):.6g}" for c in v) + ")"


def _equal(a, b) -> bool:
    return (a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2 < _EQUAL_SQ


class StartMemo:
    """What one caller's queries from its last start share: the start's projection and
    the path to each goal point asked from it. One per simulator: the query object is
    shared by all simulators of the process (the scene cache), and a memo shared between
    them would be raced by threads and would hand one agent's paths to another standing
    on the very same point (two envs replaying the same actions, as bench_env's do)."""

    __slots__ = ("start", "sloc", "paths")

    def __init__(self) -> None:
        self.start: Optional[tuple] = None
        self.sloc: Optional[NavPoint] = None
        self.paths: dict = {}


class NavMeshQuery:
    """Navigability, projection, geodesics, motion and islands of one ``.navmesh``.

    The public queries, as habitat-sim's ``PathFinder.h`` states them. Points are
    ``(x, y, z)`` sequences in the navmesh's frame (Y up); none raises for a point off the
    mesh or a non-finite one: each has a failure value, named under *Fails*.

    ================================  =====================================================
    ``nearest(pt, island=-1)``        Detour's nearest polygon point (habitat-sim's
                                      ``snapPoint``): a :class:`NavPoint`, or None
    ``snap(pt, max_y_delta=inf)``     ``nearest``, None when it moves y by > max_y_delta
    ``snap_to_island(pt, island)``    ``nearest`` on one island
    ``is_navigable(pt, max_y_delta)`` ``isNavigable``: bool
    ``island_of(pt)``                 ``getIsland``: island index, -1 off the mesh
    ``island_radius(pt)``             ``islandRadius``: metres, 0.0 off the mesh
    ``random_point(rng, island=-1)``  ``getRandomNavigablePoint``: NaNs when none
    ``distance_to_closest_obstacle``  ``distanceToClosestObstacle``: metres
    ``find_path(a, goals, memo)``     ``findPath(MultiGoalShortestPath)``: ([], inf) when
                                      no goal is reachable
    ``geodesic_distance(a, goals)``   its length (inf when unreachable)
    ``try_step(start, end, sliding)`` ``tryStep`` / ``tryStepNoSliding``: ``start`` when
                                      it cannot move
    ``topdown(mpp, height, eps)``     ``getTopDownView``: bool image
    ================================  =====================================================

    :func:`walk_find_path` is habitat-sim's multi-goal walk written plainly, the reference
    ``find_path`` must equal (``tests/test_navmesh_query_paths.py``).
    """

    def __init__(self, mesh: NavMeshData):
        if len(mesh.tiles) != 1:
            raise NavMeshUnsupported(
                f"{mesh.path}: {len(mesh.tiles)} tiles; only single-tile navmeshes "
                "(the kind habitat-sim builds and HM3D ships) are supported"
            )
        tile = mesh.tiles[0]
        self.path = mesh.path
        self.climb = float(tile.walkable_climb)
        V = [tuple(float(c) for c in v) for v in tile.verts]
        #: per polygon: its corner points (x, y, z) in Detour's order
        self.poly_verts: List[List[Tuple[float, float, float]]] = [
            [V[i] for i in p] for p in tile.polys
        ]
        self.neis = tile.neis
        # per polygon: its detail triangles as point tuples, and the boundary detail edges
        self.detail = [
            [tuple(tuple(float(c) for c in v) for v in t) for t in d] for d in tile.detail
        ]
        self.boundary: List[List[Tuple[tuple, tuple]]] = []
        for tris, flags in zip(self.detail, tile.detail_flags):
            edges = []
            for t, f in zip(tris, flags):
                for j, k in ((2, 0), (0, 1), (1, 2)):
                    if (f >> (2 * j)) & 1:  # DT_DETAIL_EDGE_BOUNDARY of edge j -> j+1
                        edges.append((t[j], t[k]))
            self.boundary.append(edges)
        # per polygon: (neighbour, edge index, portal left, portal right, portal mid-point)
        self.links: List[List[Tuple[int, int, tuple, tuple, tuple]]] = []
        for p, vs in enumerate(self.poly_verts):
            row = []
            for j, q in enumerate(self.neis[p]):
                if q >= 0:
                    a, b = vs[j], vs[(j + 1) % len(vs)]
                    row.append((q, j, a, b, _lerp(a, b, 0.5)))
            self.links.append(row)
        # (p, q) -> the portal p -> q (p's edge), the first such link (two polygons share one edge)
        self._portal_of: "dict" = {}
        for p, row in enumerate(self.links):
            for q, _j, a, b, _m in row:
                self._portal_of.setdefault((p, q), (a, b))
        # the same portals as rows of an array of x/z end points (the lower bounds' table)
        self._portal_row = {pq: k for k, pq in enumerate(self._portal_of)}
        self._portal_ends = np.array(
            [[(a[0], a[2]), (b[0], b[2])] for a, b in self._portal_of.values()], np.float64
        ).reshape(-1, 2, 2)
        n = len(self.poly_verts)
        lo = np.full((n, 3), np.inf)
        hi = np.full((n, 3), -np.inf)
        for p in range(n):
            pts = np.asarray(
                self.poly_verts[p] + [v for t in self.detail[p] for v in t], np.float64
            )
            lo[p], hi[p] = pts.min(0), pts.max(0)
        self._lo, self._hi = lo, hi
        #: the polygons' own extent: the tile header's bounds (``bounds``, what habitat-sim's
        #: get_bounds returns) are whatever the file says, as wide as it likes
        self.extent = (lo.min(0).astype(np.float32), hi.max(0).astype(np.float32))
        # corners padded to 6 by repeating the last one (zero-length edges never cross):
        # the even-odd test of many polygons at once
        pv = np.zeros((n, 6, 3))
        for p, vs in enumerate(self.poly_verts):
            pv[p, : len(vs)] = vs
            pv[p, len(vs) :] = vs[-1]
        self._pv = pv
        self._pv_prev = np.roll(pv, 1, axis=1)
        self._goal_cache: "dict" = {}
        self.bounds = (tile.bmin.astype(np.float32), tile.bmax.astype(np.float32))
        self._islands()
        # 2D areas of the polygons (random points are area-weighted, as Detour's)
        self._area2d = np.array(
            [
                max(sum(_tri_area2(vs[0], vs[i - 1], vs[i]) for i in range(2, len(vs))), 0.0)
                for vs in self.poly_verts
            ]
        )
        self._memo = StartMemo()  # for callers without their own (see find_path)
        self._bridges = None  # built at the first query that needs it (see _bridge_table)
        self._doorways: "dict" = {}  # (start polygon, goal polygon) -> rows of _portal_ends
        # goal point -> (its projection, x/z clamped into its polygon, distance to every portal)
        self._goal_ends: "dict" = {}
        self.field_cache_size = 0  # no per-goal fields here (kept for the simulator's option)

    # ------------------------------------------------------------------ islands
    def _islands(self) -> None:
        n = len(self.poly_verts)
        island = [-1] * n
        radius: List[float] = []
        area: List[float] = []
        for s in range(n):
            if island[s] >= 0:
                continue
            k = len(radius)
            island[s] = k
            stack, members = [s], []
            while stack:
                p = stack.pop()
                members.append(p)
                for q, *_ in self.links[p]:
                    if island[q] < 0:
                        island[q] = k
                        stack.append(q)
            pts = np.asarray([v for p in members for v in self.poly_verts[p]], np.float64)
            radius.append(float(np.linalg.norm(pts - pts.mean(0), axis=1).max()))
            tris = np.asarray([t for p in members for t in self.detail[p]], np.float64).reshape(
                -1, 3, 3
            )
            area.append(
                float(
                    0.5
                    * np.linalg.norm(
                        np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1
                    ).sum()
                )
            )
        self.poly_island = island
        self._island_arr = np.asarray(island, np.int64)
        self.num_islands = len(radius)
        self.island_radius_m = radius
        self.island_area = np.asarray(area, np.float64)
        self.largest_island = int(np.argmax(self.island_area)) if area else -1

    @property
    def is_loaded(self) -> bool:
        """``isLoaded``: True when the navmesh has at least one polygon."""
        return bool(self.poly_verts)

    # --------------------------------------------------------------- projection
    def _height(self, p: int, x: float, z: float) -> Optional[float]:
        """Surface height of polygon ``p`` at (x, z), None when (x, z) is outside it."""
        if not _in_poly(x, z, self.poly_verts[p]):
            return None
        for a, b, c in self.detail[p]:
            v0x, v0y, v0z = c[0] - a[0], c[1] - a[1], c[2] - a[2]
            v1x, v1y, v1z = b[0] - a[0], b[1] - a[1], b[2] - a[2]
            v2x, v2z = x - a[0], z - a[2]
            den = v0x * v1z - v0z * v1x
            if abs(den) < 1e-6:
                continue
            u = v1z * v2x - v1x * v2z
            v = v0x * v2z - v0z * v2x
            if den < 0:
                den, u, v = -den, -u, -v
            if u >= 0 and v >= 0 and u + v <= den:
                return a[1] + (v0y * u + v1y * v) / den
        # on an edge between detail triangles: the nearest detail edge's height
        best, hy = INF, None
        for a, b, c in self.detail[p]:
            for e0, e1 in ((c, a), (a, b), (b, c)):
                d, t = _seg_dist2(x, z, e0, e1)
                if d < best:
                    best, hy = d, e0[1] + (e1[1] - e0[1]) * t
        return hy

    def _closest_on_poly(self, p: int, pt, outside: bool = False) -> Tuple[tuple, bool]:
        """Closest point of polygon ``p`` to ``pt`` and whether ``pt`` is above/below it
        (``outside``: the caller knows it is not)."""
        h = None if outside else self._height(p, pt[0], pt[2])
        if h is not None:
            return (pt[0], h, pt[2]), True
        best, out = INF, None
        for a, b in self.boundary[p]:
            d, t = _seg_dist2(pt[0], pt[2], a, b)
            if d < best:
                best, out = d, _lerp(a, b, t)
        if out is None:  # no boundary edge flagged: the polygon's own edges
            vs = self.poly_verts[p]
            for j in range(len(vs)):
                d, t = _seg_dist2(pt[0], pt[2], vs[j], vs[(j + 1) % len(vs)])
                if d < best:
                    best, out = d, _lerp(vs[j], vs[(j + 1) % len(vs)], t)
        return out, False

    def nearest(self, pt, island: int = -1) -> Optional[NavPoint]:
        """Detour's nearest polygon in the pick box around ``pt`` (of ``island`` when >= 0):
        a polygon under/over ``pt`` scores its height gap beyond the climb (0 within it), any
        other its 3D distance; the first lowest wins. Polygons whose boxes are farther than
        the best so far are not looked at.

        Parameters: ``pt`` the query point; ``island`` an island index, or -1 for any.
        Returns: the :class:`NavPoint` (its polygon, island, the point on the surface and
        whether ``pt`` was above/below that polygon). Fails: None when ``pt`` is not
        finite or no polygon (of that island) touches the 2 x 4 x 2 m pick box
        (habitat-sim then returns NaNs)."""
        x, y, z = float(pt[0]), float(pt[1]), float(pt[2])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            return None
        ex, ey, ez = PICK_EXTENTS
        lo, hi = self._lo, self._hi
        inbox = (
            (lo[:, 0] <= x + ex)
            & (hi[:, 0] >= x - ex)
            & (lo[:, 1] <= y + ey)
            & (hi[:, 1] >= y - ey)
            & (lo[:, 2] <= z + ez)
            & (hi[:, 2] >= z - ez)
        )
        if island >= 0:
            inbox &= self._island_arr == island
        cand = np.nonzero(inbox)[0]
        if len(cand) == 0:
            return None
        vi, vj = self._pv[cand], self._pv_prev[cand]
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = ((vi[..., 2] > z) != (vj[..., 2] > z)) & (
                x
                < (vj[..., 0] - vi[..., 0]) * (z - vi[..., 2]) / (vj[..., 2] - vi[..., 2])
                + vi[..., 0]
            )
        over = np.logical_xor.reduce(cross, axis=1)
        best, out = INF, None
        for k in np.nonzero(over)[0].tolist():
            p = int(cand[k])
            h = self._height(p, x, z)
            if h is None:
                continue
            d = abs(y - h) - self.climb
            d = d * d if d > 0 else 0.0
            if d < best:
                best, out, first = d, NavPoint(p, self.poly_island[p], x, h, z, True), k
                if d == 0.0:
                    break
        if best > 0.0:
            # the others: nearest boundary point, in box-distance order (a box farther than
            # the best cannot hold a nearer point)
            c_lo, c_hi = lo[cand], hi[cand]
            q = np.array([x, y, z])
            gap = np.maximum(np.maximum(c_lo - q, q - c_hi), 0.0)
            lb = (gap * gap).sum(axis=1)
            for k in np.argsort(lb, kind="stable").tolist():
                if lb[k] >= best:
                    break
                if over[k]:
                    continue
                p = int(cand[k])
                c, _ = self._closest_on_poly(p, (x, y, z), outside=True)
                d = (x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2
                if d < best or (d == best and out is not None and k < first):
                    best, out, first = (
                        d,
                        NavPoint(p, self.poly_island[p], c[0], c[1], c[2], False),
                        k,
                    )
        return out

    def _goal(self, pt) -> Optional[NavPoint]:
        """Projections of goal points, cached: an episode's view points are asked for at
        every query of its measures."""
        key = (float(pt[0]), float(pt[1]), float(pt[2]))
        loc = self._goal_cache.get(key, False)
        if loc is False:
            if len(self._goal_cache) > 100_000:
                self._goal_cache.clear()
            loc = self._goal_cache[key] = self.nearest(key)
        return loc

    def snap(self, pt, max_y_delta: float = INF) -> Optional[NavPoint]:
        """:meth:`nearest` (any island), refused when it moves ``pt`` by more than
        ``max_y_delta`` metres in y (the grid simulator's ``snap`` takes the same limit).
        Fails: None (as :meth:`nearest`, or a larger y change)."""
        loc = self.nearest(pt)
        if loc is not None and not abs(loc.y - float(pt[1])) <= max_y_delta:
            return None
        return loc

    def snap_to_island(self, pt, island: int) -> Optional[NavPoint]:
        """:meth:`nearest` among the polygons of ``island`` (habitat-sim's ``snapPoint``
        with an island index). Fails: None (no polygon of that island in the pick box)."""
        return self.nearest(pt, island)

    def is_navigable(self, pt, max_y_delta: float = 0.5) -> bool:
        """habitat-sim's ``isNavigable``: True when the projection of ``pt`` moves it by
        at most 1 cm in x/z and at most ``max_y_delta`` metres in y. Fails: False."""
        loc = self.nearest(pt)
        if loc is None:
            return False
        return (
            abs(loc.y - float(pt[1])) <= max_y_delta
            and math.hypot(float(pt[0]) - loc.x, float(pt[2]) - loc.z) <= 1e-2
        )

    def island_of(self, pt) -> int:
        """``getIsland``: the island index of ``pt``'s projection. Fails: -1."""
        loc = self.nearest(pt)
        return -1 if loc is None else loc.island

    def island_radius(self, pt) -> float:
        """``islandRadius``: the largest distance (m) of the island's polygon corners from
        their mean, for the island under ``pt``. Fails: 0.0 (off the mesh)."""
        loc = self.nearest(pt)
        return 0.0 if loc is None else self.island_radius_m[loc.island]

    def random_point(self, rng: np.random.Generator, island: int = -1) -> np.ndarray:
        """A point of a polygon drawn by area, uniform inside it (Detour's findRandomPoint),
        from ``rng``; of ``island`` when >= 0. Returns float32 ``[x, y, z]`` on the surface.
        Fails: NaNs (no polygon of positive area, or none on that island)."""
        w = self._area2d.copy()
        if island >= 0:
            w[np.asarray(self.poly_island) != island] = 0.0
        if not w.sum() > 0:
            return np.full(3, np.nan, np.float32)
        p = int(rng.choice(len(w), p=w / w.sum()))
        vs = self.poly_verts[p]
        tri = [_tri_area2(vs[0], vs[i - 1], vs[i]) for i in range(2, len(vs))]
        tri = np.maximum(np.asarray(tri, np.float64), 0.0)  # collinear corners: -0.0 at most
        k = int(rng.choice(len(tri), p=tri / tri.sum())) + 2 if tri.sum() > 0 else 2
        a, b, c = vs[0], vs[k - 1], vs[k]
        s, t = math.sqrt(float(rng.random())), float(rng.random())
        x = a[0] * (1 - s) + b[0] * s * (1 - t) + c[0] * s * t
        z = a[2] * (1 - s) + b[2] * s * (1 - t) + c[2] * s * t
        h = self._height(p, x, z)
        return np.array([x, a[1] if h is None else h, z], np.float32)

    def distance_to_closest_obstacle(self, pt, max_search_radius: float = 2.0) -> float:
        """``distanceToClosestObstacle``: the x/z distance (m) from ``pt``'s projection to
        the nearest wall edge (a polygon edge without a neighbour), at most
        ``max_search_radius``. Fails: 0.0 (off the mesh); ``max_search_radius`` when no
        wall is that near."""
        loc = self.nearest(pt)
        if loc is None:
            return 0.0
        best = max_search_radius**2
        for p in self._polys_near(loc.x, loc.z, max_search_radius, loc.island):
            vs = self.poly_verts[p]
            for j, q in enumerate(self.neis[p]):
                if q < 0:
                    d, _ = _seg_dist2(loc.x, loc.z, vs[j], vs[(j + 1) % len(vs)])
                    best = min(best, d)
        return float(math.sqrt(best))

    def _polys_near(self, x: float, z: float, r: float, island: int) -> List[int]:
        lo, hi = self._lo, self._hi
        cand = np.nonzero(
            (lo[:, 0] <= x + r) & (hi[:, 0] >= x - r) & (lo[:, 2] <= z + r) & (hi[:, 2] >= z - r)
        )[0]
        return [p for p in cand.tolist() if self.poly_island[p] == island]

    # ---------------------------------------------------------------- geodesics
    def _corridor(self, s: int, e: int, sp, ep) -> List[int]:
        """Polygons from ``s`` to ``e``: A* over polygons, node positions the mid-points of
        the edges they were first entered through, costs and heuristic in 3D (Detour).
        (The hot loop of every geodesic: names are bound locally.)"""
        if s == e:
            return [s]
        links, dist = self.links, _dist
        push, pop = heapq.heappush, heapq.heappop
        h0 = dist(sp, ep) * H_SCALE
        n = len(links)
        # per polygon (None / False: not reached); lists, not dicts: the polygons are numbered
        pos: list = [None] * n
        cost: list = [None] * n
        total: list = [None] * n
        parent: list = [None] * n
        closed = [False] * n
        pos[s], cost[s], total[s], parent[s] = sp, 0.0, h0, -1
        heap = [(h0, 0, s)]
        tick = 1
        best_node, best_h = s, h0
        while heap:
            tot, _, p = pop(heap)
            if closed[p] or tot != total[p]:
                continue
            closed[p] = True
            if p == e:
                best_node = e
                break
            par = parent[p]
            pp, pc = pos[p], cost[p]
            for q, _j, _a, _b, mid in links[p]:
                if q == par:
                    continue
                qpos = pos[q]
                if qpos is None:
                    qpos = pos[q] = mid
                if q == e:
                    c = pc + dist(pp, qpos) + dist(qpos, ep)
                    h = 0.0
                else:
                    c = pc + dist(pp, qpos)
                    h = dist(qpos, ep) * H_SCALE
                t = c + h
                old = total[q]
                if old is not None and t >= old:
                    continue
                parent[q], cost[q], total[q] = p, c, t
                closed[q] = False
                push(heap, (t, tick, q))
                tick += 1
                if h < best_h:
                    best_h, best_node = h, q
        path = []
        p = best_node
        while p >= 0:
            path.append(p)
            p = parent[p]
        path.reverse()
        return path[:MAX_POLYS]

    def _clamp_to_poly(self, p: int, pt) -> tuple:
        """``pt`` when inside polygon ``p`` in x/z, else the nearest point of its edges
        (Detour's closestPointOnPolyBoundary: the polygon's own edges, their heights)."""
        vs = self.poly_verts[p]
        if _in_poly(pt[0], pt[2], vs):
            return (pt[0], pt[1], pt[2])
        best, out = INF, None
        for j in range(len(vs)):
            d, t = _seg_dist2(pt[0], pt[2], vs[j], vs[(j + 1) % len(vs)])
            if d < best:
                best, out = d, _lerp(vs[j], vs[(j + 1) % len(vs)], t)
        return out

    def _straight(self, start, end, corridor: List[int]) -> List[tuple]:
        """The shortest polyline through the corridor's portals (the funnel algorithm).
        The portals are looked up once (the funnel walks back to its apex and over them
        again); the x/z area and the point equality tests of the funnel's sides are written
        out in the loop, the same arithmetic as ``_tri_area2`` and ``_equal``."""
        cs = self._clamp_to_poly(corridor[0], start)
        ce = self._clamp_to_poly(corridor[-1], end)
        pts = [cs]

        def add(pt) -> None:  # a corner, unless it is the last one again
            if not _equal(pts[-1], pt):
                pts.append(pt)

        n = len(corridor)
        if n > 1:
            portal_of = self._portal_of
            portals = []
            for i in range(n - 1):
                portal = portal_of.get((corridor[i], corridor[i + 1]))
                if portal is None:
                    break
                portals.append(portal)
            broken = len(portals)  # the first step without a portal (n - 1: none)
            apex = left = right = cs
            apex_i = left_i = right_i = 0
            i = 0
            while i < n:
                if i + 1 < n:
                    if i == broken:  # a broken corridor: end at its last polygon
                        add(self._clamp_to_poly(corridor[i], end))
                        return pts
                    pl, pr = portals[i]
                    if i == 0 and _seg_dist2(apex[0], apex[2], pl, pr)[0] < 0.001**2:
                        i += 1
                        continue
                else:
                    pl = pr = ce
                # _tri_area2(apex, right, pr) <= 0
                if (pr[0] - apex[0]) * (right[2] - apex[2]) - (right[0] - apex[0]) * (
                    pr[2] - apex[2]
                ) <= 0.0:
                    if (
                        (apex[0] - right[0]) ** 2
                        + (apex[1] - right[1]) ** 2
                        + (apex[2] - right[2]) ** 2
                        < _EQUAL_SQ
                    ) or (
                        (pr[0] - apex[0]) * (left[2] - apex[2])
                        - (left[0] - apex[0]) * (pr[2] - apex[2])
                        > 0.0
                    ):
                        right, right_i = pr, i
                    else:
                        apex = left
                        apex_i = left_i
                        add(apex)
                        left = right = apex
                        left_i = right_i = apex_i
                        i = apex_i + 1
                        continue
                # _tri_area2(apex, left, pl) >= 0
                if (pl[0] - apex[0]) * (left[2] - apex[2]) - (left[0] - apex[0]) * (
                    pl[2] - apex[2]
                ) >= 0.0:
                    if (
                        (apex[0] - left[0]) ** 2
                        + (apex[1] - left[1]) ** 2
                        + (apex[2] - left[2]) ** 2
                        < _EQUAL_SQ
                    ) or (
                        (pl[0] - apex[0]) * (right[2] - apex[2])
                        - (right[0] - apex[0]) * (pl[2] - apex[2])
                        < 0.0
                    ):
                        left, left_i = pl, i
                    else:
                        apex = right
                        apex_i = right_i
                        add(apex)
                        left = right = apex
                        left_i = right_i = apex_i
                        i = apex_i + 1
                        continue
                i += 1
        add(ce)
        return pts

    def _path_to(
        self, start, sloc: NavPoint, end, eloc: NavPoint
    ) -> Optional[Tuple[float, List[tuple]]]:
        sp, ep = (sloc.x, sloc.y, sloc.z), (eloc.x, eloc.y, eloc.z)
        if sp == ep:
            return 0.0, [sp, ep]
        if sloc.island != eloc.island:
            return None
        corridor = self._corridor(sloc.poly, eloc.poly, sp, ep)
        pts = self._straight(start, end, corridor)
        return sum(_dist(a, b) for a, b in zip(pts, pts[1:])), pts

    def new_memo(self) -> "StartMemo":
        """A memo for one caller's queries (see :class:`StartMemo`)."""
        return StartMemo()

    def find_path(
        self, a, goals, memo: Optional["StartMemo"] = None
    ) -> Tuple[List[np.ndarray], float]:
        """Shortest path to the nearest of ``goals`` as habitat-sim's MultiGoalShortestPath:
        goals in order of their straight-line distance ("lower"), stopping at the first
        whose lower is longer than the best path found before it; the best is the first
        shortest.

        The same answer from fewer paths: when that walk goes past its first goal, every
        goal also gets a lower bound of its path length (:meth:`_bounds`), and paths are
        computed shortest bound first, only where a path could stop the walk earlier or
        be the best; a goal whose bound rules out both is never computed, whatever its
        length. The start's projection and the path to each goal point are kept in
        ``memo`` (the caller's; else one of this object's) while the start stays the same:
        the task asks several goal sets from the agent's one position (all targets left
        for the measures, then one target at a time for a claim), which share points.

        Parameters: ``a`` the start; ``goals`` one goal point or an (n, 3) array of them;
        ``memo`` the caller's :class:`StartMemo` (:meth:`new_memo`), or None.
        Returns: (float32 path points from the start's projection to the goal's, length in
        m), equal to :func:`walk_find_path`'s. Fails: ``([], inf)`` when the start is off
        the mesh, ``goals`` is empty or no goal is reachable (another island)."""
        start = tuple(float(v) for v in np.asarray(a, np.float64).reshape(3))
        memo = self._memo if memo is None else memo
        if memo.start != start:
            memo.start, memo.sloc, memo.paths = start, self.nearest(start), {}
        sloc, paths = memo.sloc, memo.paths
        g = np.asarray(goals, np.float64).reshape(-1, 3)
        if sloc is None or len(g) == 0:
            return [], INF
        lower = np.linalg.norm(g - np.asarray(start), axis=1)
        order = np.argsort(lower, kind="stable")
        lows = lower[order].tolist()
        g = g[order]
        ends = [tuple(g[0].tolist())]  # the goals in walk order, as far as needed
        best, best_rank, best_pts = INF, -1, []
        known = INF  # the shortest path computed so far (all of them lie before the walk)

        def compute(rank: int) -> None:
            nonlocal best, best_rank, best_pts, known
            end = ends[rank]
            eloc = self._goal(end)
            if eloc is None:
                return
            res = paths.get(end, False)
            if res is False:
                res = paths[end] = self._path_to(start, sloc, end, eloc)
            if res is not None:
                known = min(known, res[0])
                if res[0] < best or (res[0] == best and rank < best_rank):
                    best, best_rank, best_pts = res[0], rank, res[1]

        compute(0)  # the walk always computes its first goal
        if len(order) > 1 and lows[1] <= known:
            # the walk can only pass goals whose lower is within the first path found
            reach = bisect.bisect_right(lows, known)
            ends.extend(map(tuple, g[1:reach].tolist()))
            bounds = self._bounds(start, sloc, ends)
            pending: List[Tuple[float, int]] = []  # (bound, rank) passed, not computed
            for rank in range(1, reach):
                # the walk stops here when a goal before this one has a path shorter
                # than this one's lower: compute those whose bound allows it
                while known >= lows[rank] and pending and pending[0][0] < lows[rank]:
                    compute(heapq.heappop(pending)[1])
                if lows[rank] > known:
                    break
                heapq.heappush(pending, (bounds[rank], rank))
            # the best of the goals passed: only those whose bound does not exceed it
            while pending and pending[0][0] <= best:
                compute(heapq.heappop(pending)[1])
        return [np.asarray(p, np.float32) for p in best_pts], best

    # ------------------------------------------------------------ lower bounds
    def _bridge_table(self):
        """Per shared edge {p, q} whose removal splits its island (a doorway-like
        "bridge" of the polygon graph): (p, q, component of every polygon without it).
        False where the bound does not hold (see :meth:`_bounds`) or the navmesh is too
        large for the table."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        n = len(self.links)
        both_ways = all((q, p) in self._portal_of for p, q in self._portal_of)
        sizes = np.bincount(self._island_arr) if n else np.zeros(0, np.int64)
        if not both_ways or n > BOUND_MAX_POLYS or (n and int(sizes.max()) > MAX_POLYS):
            return False
        edges = sorted({(min(p, q), max(p, q)) for p, q in self._portal_of})
        _, base = connected_components(
            coo_matrix(
                (np.ones(len(edges)), tuple(np.array(edges, np.int64).reshape(-1, 2).T)),
                shape=(n, n),
            ),
            directed=False,
        )
        table = []
        for k, (p, q) in enumerate(edges):
            rest = edges[:k] + edges[k + 1 :]
            arr = np.array(rest, np.int64).reshape(-1, 2)
            _, comp = connected_components(
                coo_matrix((np.ones(len(rest)), (arr[:, 0], arr[:, 1])), shape=(n, n)),
                directed=False,
            )
            if comp[p] != comp[q]:
                table.append((p, q, comp))
        return table

    def _doorway_portals(self, s: int, e: int) -> List[int]:
        """Rows of ``_portal_ends`` of the portals that every corridor from polygon ``s``
        to polygon ``e`` crosses, as the funnel uses them (the portal of the side nearer
        ``s``), cached per pair."""
        key = (s, e)
        got = self._doorways.get(key)
        if got is None:
            got = self._doorways[key] = [
                self._portal_row[(p, q) if comp[p] == comp[s] else (q, p)]
                for p, q, comp in self._bridges
                if comp[s] != comp[e]
            ]
        return got

    def _portal_distances(self, x: float, z: float) -> List[float]:
        """x/z distance from (x, z) to every portal (rows of ``_portal_ends``)."""
        a = self._portal_ends[:, 0]
        d = self._portal_ends[:, 1] - a
        dd = (d * d).sum(axis=1)
        t = ((x - a[:, 0]) * d[:, 0] + (z - a[:, 1]) * d[:, 1]) / np.where(dd > 0, dd, 1.0)
        t = np.clip(t, 0.0, 1.0)
        return np.hypot(a[:, 0] + t * d[:, 0] - x, a[:, 1] + t * d[:, 1] - z).tolist()

    def _bounds(self, start, sloc: NavPoint, ends: List[tuple]) -> List[float]:
        """For each goal point, a lower bound of ``_path_to``'s length to it (INF: no path,
        -INF: no bound known).

        The path the funnel returns runs in x/z from the start clamped into its polygon (x)
        to the goal clamped into its (y), through every portal of its corridor; so for a
        portal P that every corridor between the two polygons crosses (a bridge of the
        polygon graph), its length is at least |x - z| + |z - y| for some z on P, so at
        least dist(x, P) + dist(P, y). The bound is the largest of these and |x - y|,
        less BOUND_SLACK; dist(P, y) is kept per goal point, dist(x, P) computed once per
        query for all portals. It holds only when every corridor A* returns reaches its
        goal polygon: links both ways and no island over MAX_POLYS polygons (else -INF)."""
        if self._bridges is None:
            self._bridges = self._bridge_table()
        out = [-INF] * len(ends)
        if self._bridges is False:
            return out
        s = sloc.poly
        cs = self._clamp_to_poly(s, start)
        dx: Optional[List[float]] = None
        for rank, end in enumerate(ends):
            info = self._goal_ends.get(end)
            if info is None:
                eloc = self._goal(end)
                c = None if eloc is None else self._clamp_to_poly(eloc.poly, end)
                if len(self._goal_ends) > 100_000:  # as _goal_cache: goal points, not starts
                    self._goal_ends.clear()
                info = self._goal_ends[end] = (
                    eloc,
                    None if c is None else (c[0], c[2]),
                    None if c is None else self._portal_distances(c[0], c[2]),
                )
            eloc, ce, dy = info
            if eloc is None or (
                eloc.island != sloc.island and (eloc.x, eloc.y, eloc.z) != (sloc.x, sloc.y, sloc.z)
            ):
                out[rank] = INF
            elif eloc.poly == s or (eloc.x, eloc.y, eloc.z) == (sloc.x, sloc.y, sloc.z):
                continue  # no corridor to bound (or the path of length 0)
            else:
                bound = math.hypot(ce[0] - cs[0], ce[1] - cs[2])
                rows = self._doorway_portals(s, eloc.poly)
                if rows:
                    if dx is None:
                        dx = self._portal_distances(cs[0], cs[2])
                    bound = max(bound, max([dx[r] + dy[r] for r in rows]))
                out[rank] = bound - BOUND_SLACK
        return out

    def geodesic_distance(self, a, goals, memo: Optional["StartMemo"] = None) -> float:
        """The length (m) of :meth:`find_path`'s path. Fails: inf."""
        return self.find_path(a, goals, memo)[1]

    # ------------------------------------------------------------------- motion
    def try_step(self, start, end, sliding: bool = True) -> np.ndarray:
        """habitat-sim's ``tryStep`` (``sliding``) / ``tryStepNoSliding``: move along the
        surface from ``start`` toward ``end``; with sliding the reachable point nearest
        ``end``, without it the point where the segment meets a wall. Returns float32
        ``[x, y, z]`` on the surface. Fails: ``start`` unchanged (either end off the mesh,
        or the ends on different islands)."""
        s = tuple(float(v) for v in np.asarray(start, np.float64).reshape(3))
        e = tuple(float(v) for v in np.asarray(end, np.float64).reshape(3))
        sloc, eloc = self.nearest(s), self.nearest(e)
        if sloc is None or eloc is None or sloc.island != eloc.island:
            return np.asarray(start, np.float32)
        sp = (sloc.x, sloc.y, sloc.z)
        res, visited = self._move(sloc.poly, sp, e, sliding)
        if not visited:
            return np.asarray(start, np.float32)
        last = visited[-1]
        h = self._height(last, res[0], res[2])
        res = (res[0], res[1] if h is None else h, res[2])
        # a point on an edge shared with another island (a "thin wall") is nudged 0.1 mm
        # into the polygon the walk ended in
        chk = self.nearest(res)
        if chk is None or chk.island != sloc.island:
            vs = self.poly_verts[last]
            cx = sum(v[0] for v in vs) / len(vs)
            cy = sum(v[1] for v in vs) / len(vs)
            cz = sum(v[2] for v in vs) / len(vs)
            d = np.array([cx - res[0], cy - res[1], cz - res[2]])
            nrm = float(np.linalg.norm(d))
            if nrm > 0:
                res = tuple(np.asarray(res) + 1e-4 * d / nrm)
        return np.asarray(res, np.float32)

    def _move(self, start_poly: int, sp, ep, sliding: bool) -> Tuple[tuple, List[int]]:
        """Detour's moveAlongSurface: the reachable point nearest to ``ep`` (x/z) within the
        circle through ``sp`` and ``ep``; without sliding, where the segment meets a wall."""
        parent = {start_poly: -1}
        stack = [start_poly]
        best_pos, best_d, best_node = sp, INF, None
        cx, cz = (sp[0] + ep[0]) * 0.5, (sp[2] + ep[2]) * 0.5
        rad2 = (_dist(sp, ep) / 2.0 + 0.001) ** 2
        while stack:
            p = stack.pop(0)
            vs = self.poly_verts[p]
            if _in_poly(ep[0], ep[2], vs):
                best_node, best_pos = p, ep
                break
            nv = len(vs)
            nb = {j: q for q, j, *_ in self.links[p]}
            for i in range(nv):
                j = (i - 1) % nv  # edge vj -> vi as Detour walks it
                vj, vi = vs[j], vs[i]
                q = nb.get(j)
                if q is None:
                    if not sliding:
                        st = _seg_seg(vj, vi, sp, ep)
                        if st is not None and 0 <= st[0] <= 1 and 0 <= st[1] <= 1:
                            hit = _lerp(vj, vi, st[0])
                            d = (hit[0] - ep[0]) ** 2 + (hit[2] - ep[2]) ** 2
                            if d < best_d:
                                best_pos, best_d, best_node = hit, d, p
                    else:
                        d, t = _seg_dist2(ep[0], ep[2], vj, vi)
                        if d < best_d:
                            best_pos, best_d, best_node = _lerp(vj, vi, t), d, p
                    continue
                if q in parent or len(parent) >= _MOVE_NODES:
                    continue
                if _seg_dist2(cx, cz, vj, vi)[0] > rad2:
                    continue
                if not sliding:
                    st = _seg_seg(vj, vi, sp, ep)
                    if st is None or not (0 <= st[0] <= 1 and 0 <= st[1] <= 1):
                        continue
                if len(stack) < _MOVE_STACK:
                    parent[q] = p
                    stack.append(q)
        visited: List[int] = []
        p = best_node if best_node is not None else -1
        while p >= 0:
            visited.append(p)
            p = parent[p]
        visited.reverse()
        return best_pos, visited

    # -------------------------------------------------------------------- maps
    def topdown(
        self,
        meters_per_pixel: float,
        height: float,
        eps: float = 0.5,
        bounds: Optional[Tuple[np.ndarray, np.ndarray]] = None,
    ) -> np.ndarray:
        """habitat-sim's top-down view: pixel (h, w) is the point (x0 + w m, z0 + h m) from the
        bounds' lower corner (m = metres per pixel); navigable when it lies on a polygon whose
        surface there is within ``eps`` of ``height``, or within 1 cm of a polygon's edge
        (what ``is_navigable`` accepts), vectorised per polygon. ``bounds``: another window
        than the tile's (e.g. ``extent``); a view over TOPDOWN_MAX_CELLS is refused."""
        lo, hi = self.bounds if bounds is None else bounds
        if not (meters_per_pixel > 0 and math.isfinite(meters_per_pixel)):
            raise ValueError(f"top-down view: meters_per_pixel must be > 0, got {meters_per_pixel}")
        nx = int((float(hi[0]) - float(lo[0])) / meters_per_pixel)
        nz = int((float(hi[2]) - float(lo[2])) / meters_per_pixel)
        if max(nx, 0) * max(nz, 0) > TOPDOWN_MAX_CELLS:
            raise NavMeshError(
                f"{self.path}: a top-down view of {nz} x {nx} cells at {meters_per_pixel:g} m "
                f"over its bounds {_fmt3(lo)}..{_fmt3(hi)} is too large (over "
                f"{TOPDOWN_MAX_CELLS} cells); the polygons span {_fmt3(self.extent[0])}.."
                f"{_fmt3(self.extent[1])}"
            )
        out = np.zeros((max(nz, 0), max(nx, 0)), bool)
        if out.size == 0:
            return out
        xs = float(lo[0]) + np.arange(nx, dtype=np.float64) * meters_per_pixel
        zs = float(lo[2]) + np.arange(nz, dtype=np.float64) * meters_per_pixel
        m = 1e-2
        for p, vs in enumerate(self.poly_verts):
            if self._lo[p, 1] > height + eps or self._hi[p, 1] < height - eps:
                continue
            c0, c1 = np.searchsorted(xs, [self._lo[p, 0] - m, self._hi[p, 0] + m])
            r0, r1 = np.searchsorted(zs, [self._lo[p, 2] - m, self._hi[p, 2] + m])
            if c0 >= c1 or r0 >= r1:
                continue
            X, Z = np.meshgrid(xs[c0:c1], zs[r0:r1])
            inside = np.zeros(X.shape, bool)
            near = np.zeros(X.shape, bool)
            for j in range(len(vs)):
                a, b = vs[j - 1], vs[j]
                cross = ((b[2] > Z) != (a[2] > Z)) & (
                    X < (a[0] - b[0]) * (Z - b[2]) / ((a[2] - b[2]) or 1e-30) + b[0]
                )
                inside ^= cross
                dx, dz = b[0] - a[0], b[2] - a[2]
                L = dx * dx + dz * dz
                t = (
                    np.clip(((X - a[0]) * dx + (Z - a[2]) * dz) / L, 0.0, 1.0)
                    if L > 0
                    else np.zeros(X.shape)
                )
                near |= (a[0] + t * dx - X) ** 2 + (a[2] + t * dz - Z) ** 2 <= m * m
            ok = inside | near
            if not ok.any():
                continue
            ys = np.full(X.shape, np.nan)
            for a, b, c in self.detail[p]:
                v0x, v0z, v1x, v1z = c[0] - a[0], c[2] - a[2], b[0] - a[0], b[2] - a[2]
                den = v0x * v1z - v0z * v1x
                if abs(den) < 1e-6:
                    continue
                u = (v1z * (X - a[0]) - v1x * (Z - a[2])) / den
                v = (v0x * (Z - a[2]) - v0z * (X - a[0])) / den
                w = (u >= -1e-6) & (v >= -1e-6) & (u + v <= 1 + 1e-6) & np.isnan(ys)
                ys[w] = (a[1] + (c[1] - a[1]) * u + (b[1] - a[1]) * v)[w]
            ys = np.where(np.isnan(ys), float(np.mean([v[1] for v in vs])), ys)
            out[r0:r1, c0:c1] |= ok & (np.abs(ys - height) <= eps)
        return out


def walk_find_path(q: NavMeshQuery, start, goals) -> Tuple[List[np.ndarray], float, int]:
    """habitat-sim's multi-goal walk, written plainly: the reference of
    :meth:`NavMeshQuery.find_path` (same points, same length), without its lower bounds or
    memo. Goals in order of straight-line distance from ``start``; each goal's path is
    computed until that distance exceeds the best length found; the first shortest wins.
    Returns (points, length, paths computed); ``([], inf, n)`` when none is reachable."""
    s = tuple(float(v) for v in np.asarray(start, np.float64).reshape(3))
    sloc = q.nearest(s)
    g = np.asarray(goals, np.float64).reshape(-1, 3)
    if sloc is None or len(g) == 0:
        return [], INF, 0
    lower = np.linalg.norm(g - np.asarray(s), axis=1)
    best, pts, n = INF, [], 0
    for i in np.argsort(lower, kind="stable"):
        if lower[i] > best:
            break
        end = tuple(g[i].tolist())
        eloc = q.nearest(end)
        if eloc is None:
            continue
        n += 1
        res = q._path_to(s, sloc, end, eloc)
        if res is not None and res[0] < best:
            best, pts = res
    return [np.asarray(p, np.float32) for p in pts], best, n
