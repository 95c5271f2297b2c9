"""Geodesic queries: distance fields of goal sets, look-ups from a point, paths.

A goal set's *field* is one multi-source Dijkstra over the corner graph (each goal joined
to the nodes of its patch that see it; cached, LRU); a query is ``min |p - v| + D(v)``
over the nodes and goals ``v`` that ``p`` sees, tried in increasing order of that sum,
and the path is the Dijkstra chain, so distances are those of the continuous free space
up to millimetres. Slopes and stairs count in 3D (segment lengths with their height
change). A fast-marching field (:mod:`.fastmarch`) is the fallback for a point that sees
no node.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from habitat_mosnav.sims.grid.cells import INF, Location
from habitat_mosnav.sims.grid.corners import (
    BIN,
    BIN_MARGIN,
    RAYS,
    first_seen,
    len3,
    reach_at,
    reach_tables,
    sees_cols,
)


@dataclass
class DistanceField:
    """Distances to one goal set: exact at the corner nodes (``node_d``); fast-marching
    ``parts`` per patch only in a fallback field (``fmm``)."""

    # patch id -> (layer index, R0, C0 (grid offsets of the crop), field (h, w), inf off-patch)
    parts: Dict[int, Tuple[int, int, int, np.ndarray]] = field(default_factory=dict)
    goals: Dict[int, np.ndarray] = field(default_factory=dict)  # patch -> (k, 2) goal xz
    goal_y: Dict[int, np.ndarray] = field(default_factory=dict)  # patch -> (k,) goal heights
    goal_id: Dict[int, np.ndarray] = field(default_factory=dict)  # patch -> (k,) graph ids
    goal_pos: Dict[int, Tuple[float, float, float]] = field(default_factory=dict)  # id -> x, z, y
    num_nodes: int = 0
    node_d: Optional[np.ndarray] = None  # (num_nodes,) distance of each corner node
    pred: Optional[np.ndarray] = None  # Dijkstra predecessors (-9999 at a goal)
    fmm: Optional["DistanceField"] = None  # fast-marching fallback, built on demand
    goal_rays: Dict[int, np.ndarray] = field(default_factory=dict)  # patch -> (k, RAYS) visibility
    cands: Dict[int, tuple] = field(default_factory=dict)  # patch -> reached nodes (query cache)


#: a look-up in a patch of more than 4 * WIDE reached nodes tries the WIDE nearest (by
#: |p - v| + D(v)) before all of them, when none of the first 48 sees the point
WIDE = 512


class Geodesics:
    """Fields, look-ups and paths over a surface ``s``, its clearance ``c``, corner graph
    ``g``, motion ``m`` (snapping) and fast-marching fallback ``fm``."""

    def __init__(self, surface, clearance, graph, motion, fmm) -> None:
        self.s, self.c, self.g, self.m, self.fm = surface, clearance, graph, motion, fmm
        self.field_cache: "OrderedDict[bytes, DistanceField]" = OrderedDict()
        self.field_cache_size = 256
        self._last_field: Tuple[Optional[bytes], Optional[DistanceField]] = (None, None)
        self._lock = threading.Lock()

    def compute_field(self, goals: np.ndarray) -> DistanceField:
        """Exact distances from the goal set to every corner node: each goal is joined to
        the nodes of its patch it sees, then one multi-source Dijkstra (scipy)."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import dijkstra

        df = DistanceField()
        N = self.g.num_nodes
        rows, cols, wts = list(map(list, ([self.g.edges[0]], [self.g.edges[1]], [self.g.edges[2]])))
        k = 0
        per_patch: Dict[int, List[Tuple[float, float, float, int]]] = {}
        for g in goals:
            loc = self.m.snap(g)
            if loc is None or loc.patch < 0:
                continue
            loc, _ = self.c.lift(loc)  # as a query point is (d(a, b) = d(b, a))
            gid = N + k
            k += 1
            per_patch.setdefault(loc.patch, []).append((loc.x, loc.z, loc.y, gid))
        for p, lst in per_patch.items():
            arr = np.asarray(lst, np.float64)
            rays = self.g.cast(int(self.s.patch_layer[p]), arr[:, :2])
            df.goal_rays[p] = rays
            if not len(self.g.patch_nodes.get(p, ())):
                continue
            L = self.s.layers[int(self.s.patch_layer[p])]
            tab = self.g.node_tables()
            for j, (gx, gz, gy, gid) in enumerate(lst):
                # the nodes that see the goal: the same test as a query's, so d(a, b) = d(b, a)
                slack = self.see_slack(L, gx, gz)
                sub = self.g.may_see(p, gx, gz, slack)
                vis = sub[
                    sees_cols(
                        tab,
                        sub * RAYS,
                        self.g.node_xz[sub, 0],
                        self.g.node_xz[sub, 1],
                        float(gx),
                        float(gz),
                        slack,
                    )[0]
                ]
                rows.append(np.full(len(vis), int(gid), np.int64))
                cols.append(vis)
                wts.append(
                    np.maximum(
                        len3(np.array([gx, gz]), gy, self.g.node_xz[vis], self.g.node_y[vis]), 1e-6
                    )
                )
        for p, lst in per_patch.items():
            arr = np.asarray(lst, np.float64)
            df.goals[p] = arr[:, :2]
            df.goal_y[p] = arr[:, 2]
            df.goal_id[p] = arr[:, 3].astype(np.int64)
        df.num_nodes = N
        if k == 0:
            df.node_d = np.full(N, np.inf)
            df.pred = np.full(N, -9999, np.int64)
            return df
        r, c, w = np.concatenate(rows), np.concatenate(cols), np.concatenate(wts)
        graph = coo_matrix((w, (r, c)), shape=(N + k, N + k)).tocsr()
        dist, pred = dijkstra(
            graph,
            directed=False,
            indices=np.arange(N, N + k),
            min_only=True,
            return_predecessors=True,
        )[:2]
        df.node_d = dist[:N]
        df.pred = pred
        df.goal_pos = {int(i): (x, z, y) for lst in per_patch.values() for (x, z, y, i) in lst}
        return df

    def see_slack(self, L, x: float, z: float) -> float:
        """How far outside a visibility polygon a point still counts as seen: 1 cm, plus
        (1 + sqrt 2) times the point's clearance short of the radius (a ray towards it
        stops that much sooner, the clearance being sqrt 2-Lipschitz). Goals and query
        points take the same test, so that d(a, b) = d(b, a)."""
        return (1.0 + math.sqrt(2.0)) * max(self.c.erode - self.c.sdf_point(L, x, z), 0.0) + 0.01

    def candidates(
        self, df: DistanceField, p: int, x: Optional[float] = None, z: Optional[float] = None
    ):
        """(node ids, their xz, y, D, then float64 x, z, y columns and ray-table offsets) of
        the nodes of patch ``p`` the goal set reaches (cached per field); with a point
        (x, z), only those that may see it (its bin, :meth:`.CornerGraph.bin_nodes`)."""
        key = p if x is None else (p, math.floor(x / BIN), math.floor(z / BIN))
        c = df.cands.get(key)
        if c is None:
            if x is None:
                idx = self.g.patch_nodes.get(p, np.zeros(0, np.int64))
            else:
                idx = self.g.bin_nodes(p, x, z)
            idx = idx[np.isfinite(df.node_d[idx])] if len(idx) else idx
            xz, ys = self.g.node_xz[idx], self.g.node_y[idx]
            cols = np.ascontiguousarray(np.asarray(xz, np.float64).T)
            c = (
                idx,
                xz,
                ys,
                df.node_d[idx],
                cols[0],
                cols[1],
                np.asarray(ys, np.float64),
                idx.astype(np.int64) * RAYS,
            )
            df.cands[key] = c
        return c

    def best_goal(
        self, df: DistanceField, loc: Location, best: float, arg: int, slack: float
    ) -> Tuple[float, int]:
        """The goal part of :meth:`best_corner` for a few goals, in plain Python (the same
        operations as the vectorised part, np.hypot / np.arctan2 kept)."""
        p, mx, mz, my = loc.patch, loc.x, loc.z, loc.y
        gx, gz, gy, (A, B), gbase = self.goal_cols(df, p)
        dx, dz = mx - gx, mz - gz
        dist, ang = np.hypot(dx, dz).tolist(), np.arctan2(dz, dx).tolist()
        keys, vis, edge = [], [], []
        for t, (x, z, y, b) in enumerate(
            zip(gx.tolist(), gz.tolist(), gy.tolist(), gbase.tolist())
        ):
            ex, ez, ey = x - mx, z - mz, y - my
            k = math.sqrt(ex * ex + ez * ez + ey * ey)
            d = dist[t]
            reach = reach_at(A, B, b, ang[t])
            v = reach >= d - slack or d <= slack
            if not v and k < best and reach - d > -0.5:
                edge.append(t)  # just outside its polygon: the segment itself decides
            keys.append(k)
            vis.append(v)
        if edge:
            ok = self.c.los(
                loc.layer, np.repeat(np.array([[mx, mz]]), len(edge), 0), df.goals[p][edge]
            )
            for t, v in zip(edge, ok.tolist()):
                vis[t] = v
        j, kj = -1, INF
        for t, k in enumerate(keys):
            if vis[t] and (j < 0 or k < kj):
                j, kj = t, k
        if j >= 0 and kj <= best:
            best, arg = kj, int(df.goal_id[p][j])
        return best, arg

    def goal_cols(self, df: DistanceField, p: int):
        """(x, z, y float64 columns, flat ray table, its offsets) of the goals of patch ``p``."""
        c = df.cands.get(("goals", p))
        if c is None:
            gxz = np.asarray(df.goals[p], np.float64)
            c = (
                np.ascontiguousarray(gxz[:, 0]),
                np.ascontiguousarray(gxz[:, 1]),
                np.asarray(df.goal_y[p], np.float64),
                reach_tables(df.goal_rays[p]),
                np.arange(len(gxz), dtype=np.int64) * RAYS,
            )
            df.cands[("goals", p)] = c
        return c

    def best_corner(self, df: DistanceField, loc: Location) -> Tuple[float, int]:
        """(distance, first node or goal id): min |loc - v| + D(v) over the nodes and goals
        ``v`` whose visibility polygon holds ``loc`` (table look-ups, no search)."""
        loc, lifted = self.c.lift(loc)
        p = loc.patch
        mx, mz, my = loc.x, loc.z, loc.y
        slack = self.see_slack(self.s.layers[loc.layer], mx, mz)
        best, arg = INF, -1
        # the nodes of its bin, unless the slack reaches past the bins' margin (all of them)
        idx, _, _, dn, fx, fz, fy, base = (
            self.candidates(df, p, mx, mz) if slack <= BIN_MARGIN else self.candidates(df, p)
        )
        n = len(idx)
        if n:
            # |loc - v| + D(v), as _len3 computes it (float64, same operation order)
            key = np.subtract(fx, mx)
            key *= key
            t = np.subtract(fz, mz)
            t *= t
            key += t
            np.subtract(fy, my, out=t)
            t *= t
            key += t
            np.sqrt(key, out=key)
            key += dn
            # the first node seen in increasing key order wins: look at the 48 smallest
            # keys first (almost always enough), all of them only if none of those is seen
            tab = self.g.node_tables()
            sub = np.argpartition(key, 47)[:48] if n > 64 else np.arange(n)
            # in increasing key order (stable: ties as argmin takes them), one at a time
            cs = sub[np.argsort(key[sub], kind="stable")]
            dx, dz = mx - fx[cs], mz - fz[cs]
            dist, ang = np.hypot(dx, dz), np.arctan2(dz, dx)
            # the first few one at a time (the winner is often among them), then the rest at once
            j = first_seen(tab, base[cs[:8]].tolist(), dist[:8].tolist(), ang[:8].tolist(), slack)
            if j < 0 and len(cs) > 8:
                vis = sees_cols(tab, base[cs[8:]], fx[cs[8:]], fz[cs[8:]], mx, mz, slack)[0]
                if vis.any():
                    j = 8 + int(np.argmax(vis))
            if j >= 0:
                j = int(cs[j])
            elif len(sub) < n:
                if n > 4 * WIDE:  # a big patch: the WIDE smallest keys next, in order, then all
                    wide = np.argpartition(key, WIDE - 1)[:WIDE]
                    wide = wide[np.argsort(key[wide], kind="stable")]
                    vis = sees_cols(tab, base[wide], fx[wide], fz[wide], mx, mz, slack)[0]
                    if vis.any():
                        j = int(wide[int(np.argmax(vis))])
                if j < 0:
                    vis = sees_cols(tab, base, fx, fz, mx, mz, slack)[0]
                    if vis.any():
                        j = int(np.argmin(np.where(vis, key, np.inf)))
            if j < 0:
                # no polygon holds it: the nodes it lies just outside of (rays are 2 degrees
                # apart; e.g. a point on the line of the wall a corner ends) get their
                # segments tested, the nearest by key that sees it wins
                short = sees_cols(tab, base, fx, fz, mx, mz, slack)[1]
                near = np.nonzero(short > -0.5)[0]
                if len(near):
                    ok = self.c.los(
                        loc.layer,
                        np.repeat([[mx, mz]], len(near), 0),
                        np.stack([fx[near], fz[near]], axis=1),
                    )
                    if ok.any():
                        j = int(near[ok][int(np.argmin(key[near[ok]]))])
            if j >= 0:
                best, arg = float(key[j]), int(idx[j])
        if p in df.goals:
            gx, gz, gy, gtab, gbase = self.goal_cols(df, p)
            if len(gx) <= 32:
                best, arg = self.best_goal(df, loc, best, arg, slack)
            else:
                key = np.sqrt((gx - mx) ** 2 + (gz - mz) ** 2 + (gy - my) ** 2)
                vis, short = sees_cols(gtab, gbase, gx, gz, mx, mz, slack)
                # a goal just outside its polygon (rays are 2 degrees apart) but closer than the
                # best found: test the segment itself, as from the other end (symmetry)
                edge = np.nonzero(~vis & (key < best) & (short > -0.5))[0]
                if len(edge):
                    vis = vis.copy()
                    me = np.array([mx, mz])
                    vis[edge] = self.c.los(
                        loc.layer, np.repeat(me[None], len(edge), 0), df.goals[p][edge]
                    )
                if vis.any():
                    j = int(np.argmin(np.where(vis, key, np.inf)))
                    if key[j] <= best:
                        best, arg = float(key[j]), int(df.goal_id[p][j])
        if arg == -1:
            # -2: sees nothing it could reach through; the caller falls back to fast marching
            return INF, (-2 if (len(self.candidates(df, p)[0]) or p in df.goals) else -1)
        return best + lifted, arg

    def best_corner_los(
        self, df: DistanceField, loc: Location, binned: bool = False
    ) -> Tuple[float, int]:
        """As :meth:`best_corner`, with every candidate's segment tested (no visibility
        tables): candidates in increasing order of |loc - v| + D(v), the first one seen wins.
        Slower; for paths, whose first leg must be free exactly. ``binned``: only the nodes
        of the point's bin (and the goals)."""
        loc, lifted = self.c.lift(loc)
        p = loc.patch
        me = np.array([loc.x, loc.z])
        idx, xz, ys, dn = (
            self.candidates(df, p, loc.x, loc.z) if binned else self.candidates(df, p)
        )[:4]
        ids, pts, key = [idx], [xz], [len3(me, loc.y, xz, ys) + dn + lifted]
        if p in df.goals:
            ids.append(df.goal_id[p])
            pts.append(df.goals[p])
            key.append(len3(me, loc.y, df.goals[p], df.goal_y[p]) + lifted)
        ids, pts, key = np.concatenate(ids), np.concatenate(pts), np.concatenate(key)
        if not len(ids):
            return INF, -1
        order = np.argsort(key, kind="stable")
        for s in range(0, len(order), 64):
            o = order[s : s + 64]
            vis = self.c.los(loc.layer, np.repeat(me[None], len(o), 0), pts[o])
            if vis.any():
                j = int(o[int(np.argmax(vis))])
                return float(key[j]), int(ids[j])
        return INF, -2

    def field_value(self, df: DistanceField, loc: Location) -> float:
        val, first = self.best_corner(df, loc)
        if first == -2:
            # no polygon holds it, nor lies within half a metre of it (e.g. across a pinch
            # the clearance rays stop at): the segments to the reached nodes of its bin
            # decide; fast marching (a field over the whole island) only when it sees none
            val, first = self.best_corner_los(df, loc, binned=True)
            if first == -2:
                return self.fm.value(self.fmm(df), loc)
        return val

    def fmm(self, df: DistanceField) -> DistanceField:
        if df.fmm is None:
            goals = [(x, y, z) for (x, z, y) in df.goal_pos.values()]
            df.fmm = self.fm.field(np.asarray(goals, np.float64).reshape(-1, 3))
        return df.fmm

    def distance_field(self, goals) -> DistanceField:
        """The cached field of a goal set (points rounded to 1 mm form the key)."""
        g = np.asarray(goals, dtype=np.float64).reshape(-1, 3)
        raw = g.tobytes()
        last = self._last_field
        if last[0] == raw:  # the same points as the last call (each step asks the same set)
            return last[1]
        key = np.round(g, 3).tobytes()
        with self._lock:  # scenes are shared by the simulators of a process
            df = self.field_cache.get(key)
            if df is not None:
                self.field_cache.move_to_end(key)
                self._last_field = (raw, df)
                return df
        df = self.compute_field(g)
        with self._lock:
            self.field_cache[key] = df
            while len(self.field_cache) > max(1, self.field_cache_size):
                self.field_cache.popitem(last=False)
            self._last_field = (raw, df)
        return df

    def geodesic_distance(self, a, goals) -> float:
        loc = self.m.snap_cached(a)
        if loc is None or loc.patch < 0:
            return INF
        g = np.asarray(goals, dtype=np.float64)
        if g.ndim == 1:
            g = g[None]
        if len(g) == 0:
            return INF
        return self.field_value(self.distance_field(g), loc)

    def find_path(self, a, goals) -> Tuple[List[np.ndarray], float]:
        """Shortest polyline: the start, the corner nodes of the graph path, the goal."""
        loc = self.m.snap(a)
        g = np.asarray(goals, dtype=np.float64).reshape(-1, 3)
        if loc is None or loc.patch < 0 or len(g) == 0:
            return [], INF
        df = self.distance_field(g)
        val, j = self.best_corner_los(df, loc)
        if j == -2:
            return self.fm.path(loc, self.fmm(df))
        if not val < INF:
            return [], INF
        pts = [np.array([loc.x, loc.y, loc.z], np.float32)]
        N = df.num_nodes
        for _ in range(N + 1):
            if j >= N:
                x, z, y = df.goal_pos[j]
                pts.append(np.array([x, y, z], np.float32))
                break
            if j < 0:
                break
            pts.append(
                np.array([self.g.node_xz[j, 0], self.g.node_y[j], self.g.node_xz[j, 1]], np.float32)
            )
            j = int(df.pred[j])
        return pts, val
