"""Exact shortest paths on one floor of a scene mesh (tests and benchmarks only).

Independent of :mod:`.navgrid`: the free space at the agent radius is built with shapely
from the triangles themselves and paths are shortest paths in its visibility graph.

* floor: up-facing triangles (normal within ``max_slope``) whose height is within
  ``max_climb`` of ``floor_y``, projected onto (x, z) and merged; where such surfaces
  overlap (a plinth on the floor) the higher one is the floor;
* obstacles: every triangle part between ``h + max_climb`` and ``h + height`` (less 1 mm:
  geometry at exactly head height does not block) over (within ``r`` of) the floor
  piece at height ``h``
  (clipped to that slab, projected; walls project to segments);
* free space = (floor eroded by ``r``) minus (obstacles dilated by ``r``): the set of
  agent centres whose disk of radius ``r`` stays on the floor and off the obstacles, the
  area a Recast/Detour navmesh erodes to. Circles are polygons of ``4 * quad_segs`` sides
  whose vertices lie on the circle.
* geodesic(a, b) = shortest polyline in the free-space component holding both points;
  its corners are reflex vertices of the free space (visibility graph + Dijkstra).
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence

import numpy as np

INF = float("inf")


def _clip_slab(tri: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The part of a triangle (3, 3) with lo <= y <= hi (Sutherland-Hodgman, two planes)."""
    poly = [p for p in tri]
    for plane, keep_above in ((lo, True), (hi, False)):
        out = []
        n = len(poly)
        for i in range(n):
            p, q = poly[i], poly[(i + 1) % n]
            ip = p[1] >= plane if keep_above else p[1] <= plane
            iq = q[1] >= plane if keep_above else q[1] <= plane
            if ip:
                out.append(p)
            if ip != iq:
                t = (plane - p[1]) / (q[1] - p[1])
                out.append(p + t * (q - p))
        poly = out
        if not poly:
            break
    return np.asarray(poly, np.float64).reshape(-1, 3)


def _flat(poly3: np.ndarray):
    import shapely
    from shapely.geometry import LineString, Point, Polygon

    xz = poly3[:, [0, 2]]
    if len(xz) >= 3:
        p = Polygon(xz)
        if p.is_valid and p.area > 1e-10:
            return p
        p = shapely.make_valid(p)
        if p.area > 1e-10:
            return p
    uniq = np.unique(np.round(xz, 9), axis=0)
    if len(uniq) == 1:
        return Point(uniq[0])
    # degenerate (a wall seen from above): the segment between its two extreme points
    d = uniq - uniq.mean(0)
    axis = np.linalg.svd(d, full_matrices=False)[2][0]
    t = d @ axis
    return LineString([uniq[int(np.argmin(t))], uniq[int(np.argmax(t))]])


def free_space(
    triangles: np.ndarray,
    radius: float,
    height: float,
    max_climb: float,
    floor_y: float = 0.0,
    max_slope: float = 45.0,
    quad_segs: int = 8,
    height_step: float = 0.001,
    grid_size: Optional[float] = None,
    fill_holes: float = 0.0,
):
    """Shapely (Multi)Polygon of agent centres on the floor at ``floor_y`` (see module doc).

    ``height_step``: floor pieces are grouped by their height rounded to it (a scan's
    jittered floor is one piece at a coarser step, not thousands); ``grid_size``: the
    unions run on that precision grid (GEOS's robust overlay, for noisy meshes);
    ``fill_holes``: holes in the floor smaller than this (m²) are floor (a scan's cracks
    and flipped slivers, which a 5 cm raster such as Recast's or the grid's does not see)."""
    import shapely

    tris = np.asarray(triangles, np.float64).reshape(-1, 3, 3)
    nrm = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    nl = np.linalg.norm(nrm, axis=1)
    up = np.zeros(len(tris))
    ok = nl > 1e-12
    up[ok] = nrm[ok, 1] / nl[ok]
    ymin, ymax = tris[:, :, 1].min(1), tris[:, :, 1].max(1)
    walk = (np.abs(up) >= math.cos(math.radians(max_slope))) & (
        np.abs(tris[:, :, 1] - floor_y).max(1) <= max_climb
    )
    walk &= up > 0
    # floor pieces by height, the top one wins where they overlap (a plinth on the floor);
    # each is blocked by what lies in the slab above its own height
    fy = np.round(np.round(tris[walk, :, 1].mean(1) / height_step) * height_step, 6)
    floor = None
    obst = []
    for h in sorted(set(fy.tolist()), reverse=True):
        piece = shapely.union_all([_flat(t) for t in tris[walk][fy == h]], grid_size=grid_size)
        if floor is not None:
            piece = piece.difference(floor)
        if piece.is_empty:
            continue
        floor = piece if floor is None else floor.union(piece)
        lo, hi = h + max_climb + 1e-6, h + height - 1e-3
        x0, z0, x1, z1 = piece.buffer(radius).bounds
        near = (
            (ymax > lo)
            & (ymin < hi)
            & (tris[:, :, 0].max(1) >= x0)
            & (tris[:, :, 0].min(1) <= x1)
            & (tris[:, :, 2].max(1) >= z0)
            & (tris[:, :, 2].min(1) <= z1)
        )
        parts = [
            _flat(q) for q in (_clip_slab(tris[i], lo, hi) for i in np.nonzero(near)[0]) if len(q)
        ]
        if parts:
            obst.append(
                shapely.union_all(parts, grid_size=grid_size).intersection(
                    piece.buffer(radius + 1e-3)
                )
            )
    if floor is None:
        return shapely.Polygon()
    if fill_holes > 0:
        from shapely.geometry import MultiPolygon, Polygon

        floor = MultiPolygon(
            [
                Polygon(g.exterior, [h for h in g.interiors if Polygon(h).area >= fill_holes])
                for g in getattr(floor, "geoms", [floor])
            ]
        )
    free = floor.buffer(-radius, quad_segs=quad_segs)
    if obst:
        free = free.difference(
            shapely.union_all(obst, grid_size=grid_size).buffer(radius, quad_segs=quad_segs)
        )
    return free


class ExactGeodesics:
    """Shortest paths in one free-space (Multi)Polygon: ``distance(a, b)`` in metres (inf
    when the points lie in different components or outside it)."""

    def __init__(self, free) -> None:
        import shapely
        from shapely.geometry.polygon import orient
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import dijkstra

        self.polys = [orient(p, 1.0) for p in getattr(free, "geoms", [free]) if p.area > 0]
        self._test = [p.buffer(1e-7) for p in self.polys]
        for p in self._test:
            shapely.prepare(p)
        verts, prevs, nexts, comp = [], [], [], []
        for ci, poly in enumerate(self.polys):
            for ring in [poly.exterior, *poly.interiors]:
                c = np.asarray(ring.coords)[:-1]
                # repeated points would hide the corner they sit on
                c = c[np.r_[True, np.hypot(*(c[1:] - c[:-1]).T) > 1e-9]]
                if len(c) > 1 and np.hypot(*(c[0] - c[-1])) <= 1e-9:
                    c = c[:-1]
                if len(c) < 3:
                    continue
                pv, nx = np.roll(c, 1, 0), np.roll(c, -1, 0)
                cross = (c[:, 0] - pv[:, 0]) * (nx[:, 1] - c[:, 1]) - (c[:, 1] - pv[:, 1]) * (
                    nx[:, 0] - c[:, 0]
                )
                reflex = cross < -1e-12  # free space is on the left of every oriented ring
                verts.append(c[reflex])
                prevs.append(pv[reflex])
                nexts.append(nx[reflex])
                comp.append(np.full(int(reflex.sum()), ci))
        self.v = np.concatenate(verts) if verts else np.zeros((0, 2))
        self.vp = np.concatenate(prevs) if prevs else np.zeros((0, 2))
        self.vn = np.concatenate(nexts) if nexts else np.zeros((0, 2))
        self.comp = np.concatenate(comp).astype(int) if comp else np.zeros(0, int)
        n = len(self.v)
        rows, cols, w = [], [], []
        for ci in range(len(self.polys)):
            idx = np.nonzero(self.comp == ci)[0]
            if len(idx) < 2:
                continue
            ii, jj = np.triu_indices(len(idx), 1)
            a, b = idx[ii], idx[jj]
            keep = self._tangent(a, self.v[b]) & self._tangent(b, self.v[a])
            a, b = a[keep], b[keep]
            vis = self._visible(ci, self.v[a], self.v[b])
            a, b = a[vis], b[vis]
            rows.append(a)
            cols.append(b)
            w.append(np.linalg.norm(self.v[a] - self.v[b], axis=1))
        if rows:
            r, c, ww = np.concatenate(rows), np.concatenate(cols), np.concatenate(w)
            g = coo_matrix((np.r_[ww, ww], (np.r_[r, c], np.r_[c, r])), shape=(n, n)).tocsr()
            self.D, self._pred = dijkstra(g, directed=False, return_predecessors=True)
        else:
            self.D, self._pred = np.full((n, n), INF), np.full((n, n), -9999)
        np.fill_diagonal(self.D, 0.0)

    def _tangent(self, i: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Segment vertex i -> other can be part of a shortest path: it does not enter the
        wedge of the vertex's two edges (both neighbours on one side of the line)."""
        d = other - self.v[i]
        s1 = d[:, 0] * (self.vp[i, 1] - self.v[i, 1]) - d[:, 1] * (self.vp[i, 0] - self.v[i, 0])
        s2 = d[:, 0] * (self.vn[i, 1] - self.v[i, 1]) - d[:, 1] * (self.vn[i, 0] - self.v[i, 0])
        return s1 * s2 >= -1e-12

    def _visible(self, ci: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        import shapely

        if len(a) == 0:
            return np.zeros(0, bool)
        lines = shapely.linestrings(np.stack([a, b], axis=1))
        return np.asarray(shapely.covers(self._test[ci], lines), bool)

    def component(self, p: Sequence[float]) -> int:
        import shapely

        pt = shapely.points(float(p[0]), float(p[1]))
        for ci, poly in enumerate(self._test):
            if poly.covers(pt):
                return ci
        return -1

    def distance(self, a: Sequence[float], b: Sequence[float]) -> float:
        """Geodesic between two (x, z) points."""
        return self.path(a, b)[1]

    def path(self, a: Sequence[float], b: Sequence[float]):
        """(polyline (k, 2) from a to b, its length); ([], inf) when unreachable."""
        d, i, j = self._solve(a, b)
        if not d < INF:
            return np.zeros((0, 2)), INF
        a, b = np.asarray(a, np.float64)[:2], np.asarray(b, np.float64)[:2]
        if i < 0:
            return np.stack([a, b]), d
        chain = [j]
        while chain[-1] != i:
            chain.append(int(self._pred[i, chain[-1]]))
        return np.concatenate([a[None], self.v[chain[::-1]], b[None]]), d

    def _solve(self, a, b):
        a = np.asarray(a, np.float64)[:2]
        b = np.asarray(b, np.float64)[:2]
        ca, cb = self.component(a), self.component(b)
        if ca < 0 or ca != cb:
            return INF, -1, -1
        if self._visible(ca, a[None], b[None])[0]:
            return float(np.linalg.norm(a - b)), -1, -1
        idx = np.nonzero(self.comp == ca)[0]
        if len(idx) == 0:
            return INF, -1, -1
        va = idx[self._tangent(idx, np.repeat(a[None], len(idx), 0))]
        va = va[self._visible(ca, np.repeat(a[None], len(va), 0), self.v[va])]
        vb = idx[self._tangent(idx, np.repeat(b[None], len(idx), 0))]
        vb = vb[self._visible(ca, np.repeat(b[None], len(vb), 0), self.v[vb])]
        if len(va) == 0 or len(vb) == 0:
            return INF, -1, -1
        da = np.linalg.norm(self.v[va] - a, axis=1)
        db = np.linalg.norm(self.v[vb] - b, axis=1)
        tot = da[:, None] + self.D[np.ix_(va, vb)] + db[None, :]
        k = int(np.argmin(tot))
        return float(tot.flat[k]), int(va[k // len(vb)]), int(vb[k % len(vb)])

    def sample(
        self, rng: np.random.Generator, n: int, component: Optional[int] = None
    ) -> np.ndarray:
        """``n`` uniform points (x, z) of the free space (of one component if given)."""
        import shapely

        polys: List = self.polys if component is None else [self.polys[component]]
        geom = shapely.union_all(polys)
        x0, z0, x1, z1 = geom.bounds
        shapely.prepare(geom)
        out = []
        while len(out) < n:
            p = rng.uniform([x0, z0], [x1, z1], size=(4 * n, 2))
            inside = shapely.contains_xy(geom, p[:, 0], p[:, 1])
            out.extend(p[inside].tolist())
        return np.asarray(out[:n])
