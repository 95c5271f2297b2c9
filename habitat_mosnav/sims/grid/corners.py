"""The corner graph: where shortest paths bend, and who sees whom.

Shortest paths in the eroded free space bend only on the arcs it makes around obstacle
corners. Nodes sit on those arcs (every 7.5 degrees, exactly the radius from the corner)
and on seam portals; node pairs that see each other (clearance along the segment,
``LOS_TOL`` slack, :meth:`.Clearance.los`) and leave both corners tangentially are the
edges. Each node also keeps its visibility polygon (free length along ``RAYS``
directions), so that "does this point see that node" is a table look-up
(:func:`reach_tables`, :func:`sees_cols`), not a ray march.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import numpy as np

from habitat_mosnav.sims.grid.cells import run_offsets
from habitat_mosnav.sims.grid.clearance import LOS_TOL

#: a boundary cell is a corner when the clearance there curves by more than this (1/m):
#: an obstacle corner gives 1/radius, a straight wall 0, a round table of radius R 1/(R + r)
CORNER_CURVATURE = 0.5
#: degrees between the nodes on the arc round an obstacle corner
ARC_STEP = 15.0
#: corner edges must leave a corner within this |cos| of its boundary tangent
TANGENT_COS = 0.35
#: rays per visibility polygon and their reach (m)
RAYS = 180
RAY_MAX = 15.0
#: node pairs looked at per block when finding the edges (bounds the build's memory)
PAIR_BLOCK = 2_000_000
#: a pair is tested for line of sight when one end's visibility polygon reaches the other
#: within this (m; None: every tangential pair is tested)
SEE_SLACK = 0.5
#: side (m) of the square bins of :meth:`CornerGraph.bin_nodes`, and how far beyond a
#: visibility polygon's bounding box a node is still listed in a bin (the slack of a
#: "sees" test up to it)
BIN = 1.0
BIN_MARGIN = 0.05


_NONE = np.zeros(0, np.int64)


def len3(a, ya, b, yb):
    """3D lengths of segments given as (x, z) points and heights (float64)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = b - a
    dy = np.asarray(yb, np.float64) - np.asarray(ya, np.float64)
    return np.sqrt(d[..., 0] ** 2 + d[..., 1] ** 2 + dy**2)


def reach_tables(rays: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Flat tables (A, B) of ray tables (n, RAYS): the reach of a visibility polygon
    between rays k and k + 1 at ``frac`` of the angle from k is ``A[k] + frac * B[k]``:
    along the chord of their end points (a wall seen at an angle) when they are about as
    long, else the shorter one (B = 0; a shadow edge: the chord would cut behind the
    occluder). Linear in the angle: within 0.03 % of the chord for rays 2 degrees apart."""
    r0 = np.ascontiguousarray(rays, np.float32)
    r1 = np.roll(r0, -1, axis=1)
    chord = np.abs(r0 - r1) <= 0.2 * np.minimum(r0, r1) + 0.1
    a = np.where(chord, r0, np.minimum(r0, r1)).astype(np.float32)
    b = np.where(chord, r1 - r0, np.float32(0.0)).astype(np.float32)
    return a.reshape(-1), b.reshape(-1)


def reach_at(A: np.ndarray, B: np.ndarray, base: int, ang: float) -> float:
    """One source's reach (its tables A, B from offset ``base``) towards angle ``ang``
    (an np.arctan2 value): :func:`sees_cols` for one point, in plain Python."""
    a = (ang + 2 * math.pi if ang < 0 else (ang if ang > 0 else 0.0)) * (
        RAYS / (2 * math.pi)
    )  # np.mod
    fl = math.floor(a)
    k = base + fl % RAYS
    return float(A[k]) + (a - fl) * float(B[k])


def sees_cols(
    tab, base: np.ndarray, sx: np.ndarray, sz: np.ndarray, px: float, pz: float, slack: float
):
    """Which sources see point (px, pz): it lies in their visibility polygon, within
    ``slack``; and by how much (reach - distance). ``tab``: flat reach tables
    (:func:`reach_tables`; ray k of a source at ``base + k``); ``sx, sz``: float64
    source columns."""
    dx, dz = px - sx, pz - sz
    dist = np.hypot(dx, dz)
    a = np.mod(np.arctan2(dz, dx), 2 * math.pi) * (RAYS / (2 * math.pi))
    fl = np.floor(a)
    k = base + fl.astype(np.int64) % RAYS
    reach = tab[0][k] + (a - fl) * tab[1][k]
    return (reach >= dist - slack) | (dist <= slack), reach - dist


def first_seen(tab, base: list, dist: list, ang: list, slack: float) -> int:
    """Index of the first source that sees the point (:func:`sees_cols`, in plain
    Python from its distances and np.arctan2 angles), -1 if none."""
    A, B = tab
    for t, d in enumerate(dist):
        if d <= slack or reach_at(A, B, base[t], ang[t]) >= d - slack:
            return t
    return -1


class CornerGraph:
    """Corner nodes (``node_xz``, ``node_y``, ``node_patch``, ``node_nrm`` their boundary
    normals), per-patch node lists (``patch_nodes``), the visibility edges (``edges``:
    rows, cols, 3D lengths) and each node's visibility polygon (``node_rays``)."""

    def __init__(self, surface, clearance) -> None:
        self.s = surface
        self.c = clearance
        if surface.layers:
            self._build()
        else:
            self.node_xz, self.node_nrm = np.zeros((0, 2)), np.zeros((0, 2))
            self.node_y, self.node_patch = np.zeros(0), np.zeros(0, np.int64)
            self.num_nodes, self.patch_nodes = 0, {}
            self.edges = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
            self.node_rays = np.zeros((0, RAYS), np.float32)
            self.bins = {}

    def _build(self) -> None:
        """Nodes: points on the boundary of the eroded free space where it bends around an
        obstacle corner (the corners seen from cells next to the boundary where the
        clearance is curved; nodes on the arc of the radius around each), and the portal
        cells of seams. Edges: node pairs of one patch
        that see each other (straight segment with clearance >= radius) and leave both
        corners tangentially, plus the seam crossings. Shortest paths of the free space
        bend only at such corners, so Dijkstra over this graph gives the geodesic."""
        s = self.s
        cell, er = s.cell, self.c.erode
        xz, ys, pat, nrm = [], [], [], []
        for li, L in enumerate(self.s.layers):
            S = L.sdf
            if S is None or not L.nav.any():
                continue
            lap = np.zeros_like(S)
            lap[1:-1, 1:-1] = (
                S[2:, 1:-1] + S[:-2, 1:-1] + S[1:-1, 2:] + S[1:-1, :-2] - 4 * S[1:-1, 1:-1]
            ) / cell**2
            band = L.nav & (S <= er + 1.5 * cell) & (lap > CORNER_CURVATURE)
            rr, cc = np.nonzero(band)
            if not len(rr):
                continue
            p = np.stack(
                [self.s.x0 + (L.c0 + cc + 0.5) * cell, self.s.z0 + (L.r0 + rr + 0.5) * cell], axis=1
            )
            tree = s.trees[li]
            if tree is None:
                continue
            d, idx = tree.query(p)
            if er > 0:
                # the obstacle corners these cells see; nodes all around each corner at
                # exactly the radius (every ARC_STEP degrees), where that corner is the nearest
                # obstacle, i.e. on the arc the eroded boundary makes there
                oc = np.unique(idx)
                o = tree.data[oc]
                ang = np.radians(np.arange(0.0, 360.0, ARC_STEP))
                dirn = np.stack([np.cos(ang), np.sin(ang)], axis=1)
                q = (o[:, None, :] + (er + 1e-3) * dirn[None]).reshape(-1, 2)
                dq, _ = tree.query(q, distance_upper_bound=er + 0.01)
                keep = dq >= er - 1e-4
                q, qn = q[keep], np.tile(dirn, (len(o), 1))[keep]
                qr = np.floor((q[:, 1] - self.s.z0) / cell).astype(np.int64) - L.r0
                qc = np.floor((q[:, 0] - self.s.x0) / cell).astype(np.int64) - L.c0
                h, w = L.nav.shape
                ok = (qr >= 0) & (qr < h) & (qc >= 0) & (qc < w)
                q, qn, qr, qc = q[ok], qn[ok], qr[ok], qc[ok]
                nr_, nc_ = L.near_r[qr, qc], L.near_c[qr, qc]  # the nearest navigable cell
                ok = (nr_ >= 0) & (np.abs(nr_ - qr) <= 1) & (np.abs(nc_ - qc) <= 1)
                q, qn, nr_, nc_ = q[ok], qn[ok], nr_[ok], nc_[ok]
                xz.append(q)
                ys.append(L.height[nr_, nc_].astype(np.float64))
                pat.append(L.patch[nr_, nc_].astype(np.int64))
                nrm.append(qn)
                continue
            o = tree.data[idx]
            xz.append(p)
            ys.append(L.height[rr, cc].astype(np.float64))
            pat.append(L.patch[rr, cc].astype(np.int64))
            nrm.append((p - o) / np.maximum(d, 1e-9)[:, None])
        # portal cells
        seen: Dict[Tuple[int, int, int], int] = {}
        pxz, py, ppat = [], [], []
        pairs = set()
        for a, lst in self.s.portals.items():
            for ra, ca, b, rb, cb in lst:
                for key in ((a, ra, ca), (b, rb, cb)):
                    if key not in seen:
                        seen[key] = len(pxz)
                        q, R, C = key
                        L = self.s.layers[int(self.s.patch_layer[q])]
                        pxz.append((self.s.x0 + (C + 0.5) * cell, self.s.z0 + (R + 0.5) * cell))
                        py.append(float(L.height[R - L.r0, C - L.c0]))
                        ppat.append(q)
                i, j = seen[(a, ra, ca)], seen[(b, rb, cb)]
                pairs.add((min(i, j), max(i, j)))
        if xz:
            cxz, cy, cp, cn = (
                np.concatenate(xz),
                np.concatenate(ys),
                np.concatenate(pat),
                np.concatenate(nrm),
            )
            # one node per half cell of boundary
            key = np.stack(
                [cp, np.floor(cxz[:, 0] / (0.5 * cell)), np.floor(cxz[:, 1] / (0.5 * cell))], axis=1
            )
            _, first = np.unique(key, axis=0, return_index=True)
            first = np.sort(first)
            cxz, cy, cp, cn = cxz[first], cy[first], cp[first], cn[first]
        else:
            cxz, cy, cp, cn = np.zeros((0, 2)), np.zeros(0), np.zeros(0, np.int64), np.zeros((0, 2))
        nc_ = len(cxz)
        self.node_xz = np.concatenate([cxz, np.asarray(pxz, np.float64).reshape(-1, 2)])
        self.node_y = np.concatenate([cy, np.asarray(py, np.float64)])
        self.node_patch = np.concatenate([cp, np.asarray(ppat, np.int64)])
        self.node_nrm = np.concatenate([cn, np.zeros((len(pxz), 2))])
        self.num_nodes = len(self.node_xz)
        order = np.argsort(self.node_patch, kind="stable")
        cuts = np.searchsorted(self.node_patch[order], np.arange(self.s.num_patches + 1))
        self.patch_nodes = {
            p: order[cuts[p] : cuts[p + 1]]
            for p in range(self.s.num_patches)
            if cuts[p + 1] > cuts[p]
        }
        rows, cols, wts = [], [], []
        for i, j in sorted(pairs):
            rows.append(nc_ + i)
            cols.append(nc_ + j)
            wts.append(
                max(
                    len3(
                        self.node_xz[nc_ + i],
                        self.node_y[nc_ + i],
                        self.node_xz[nc_ + j],
                        self.node_y[nc_ + j],
                    ),
                    1e-6,
                )
            )
        er_ = (
            [np.asarray(rows, np.int64)],
            [np.asarray(cols, np.int64)],
            [np.asarray(wts, np.float64)],
        )
        # each node's visibility polygon, as free length along RAYS directions: a query
        # point sees a node when it lies within it (a table look-up, no ray marching)
        self.node_rays = np.zeros((self.num_nodes, RAYS), np.float32)
        for p, idx in self.patch_nodes.items():
            self.node_rays[idx] = self.cast(
                int(self.s.patch_layer[p]), self.node_xz[idx], self.node_nrm[idx]
            )
        self._build_bins()
        for p, idx in self.patch_nodes.items():
            if len(idx) < 2:
                continue
            aa, bb = self._patch_edges(int(self.s.patch_layer[p]), idx)
            er_[0].append(aa)
            er_[1].append(bb)
            er_[2].append(
                np.maximum(
                    len3(self.node_xz[aa], self.node_y[aa], self.node_xz[bb], self.node_y[bb]), 1e-6
                )
            )
        self.edges = tuple(np.concatenate(x) for x in er_)

    def _bin_entries(
        self, nodes: np.ndarray, margin: float
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position in ``nodes``, bin x, bin z) of every ``BIN`` bin the bounding box of a
        node's visibility polygon, grown by ``margin``, overlaps; in ``nodes`` order."""
        n = len(nodes)
        ang = np.arange(RAYS + 1) * (2 * math.pi / RAYS)
        # between rays k and k + 1 the polygon reaches at most the longer of the two: the
        # polygon lies in the fan of those arcs, inside the polygon through their tangents
        r = self.node_rays[nodes].astype(np.float64)
        far = np.maximum(r, np.roll(r, -1, axis=1)) / math.cos(math.pi / RAYS)
        ex = np.concatenate(
            [far * np.cos(ang[:-1]), far * np.cos(ang[1:]), np.zeros((n, 1))], axis=1
        )
        ez = np.concatenate(
            [far * np.sin(ang[:-1]), far * np.sin(ang[1:]), np.zeros((n, 1))], axis=1
        )
        x, z = self.node_xz[nodes, 0], self.node_xz[nodes, 1]
        bx0 = np.floor((x + ex.min(1) - margin) / BIN).astype(np.int64)
        bx1 = np.floor((x + ex.max(1) + margin) / BIN).astype(np.int64)
        bz0 = np.floor((z + ez.min(1) - margin) / BIN).astype(np.int64)
        bz1 = np.floor((z + ez.max(1) + margin) / BIN).astype(np.int64)
        nx, nz = bx1 - bx0 + 1, bz1 - bz0 + 1
        cnt = nx * nz
        pos = np.repeat(np.arange(n), cnt)
        k = run_offsets(cnt)
        return pos, bx0[pos] + k % nx[pos], bz0[pos] + k // nx[pos]

    def _build_bins(self) -> None:
        """Square ``BIN`` bins of the floor, each listing (in node order) the nodes of a patch
        whose visibility polygon, grown by ``BIN_MARGIN``, overlaps it: a point sees no node
        outside its bin's list, so a look-up looks only there (the patch may hold thousands)."""
        n = self.num_nodes
        self.bins: Dict[Tuple[int, int, int], np.ndarray] = {}
        if n == 0:
            return
        node, bx, bz = self._bin_entries(np.arange(n), BIN_MARGIN)
        key = np.stack([self.node_patch[node], bx, bz, node], axis=1)
        key = key[np.lexsort(key.T[::-1])]
        cut = np.r_[0, np.nonzero(np.any(key[1:, :3] != key[:-1, :3], axis=1))[0] + 1, len(key)]
        for a, b in zip(cut[:-1].tolist(), cut[1:].tolist()):
            self.bins[(int(key[a, 0]), int(key[a, 1]), int(key[a, 2]))] = key[a:b, 3]

    def bin_nodes(self, patch: int, x: float, z: float) -> np.ndarray:
        """The nodes of ``patch`` that may see point (x, z) (every one whose polygon holds
        it within ``BIN_MARGIN``), in node order."""
        return self.bins.get((patch, math.floor(x / BIN), math.floor(z / BIN)), _NONE)

    def may_see(self, patch: int, x: float, z: float, slack: float) -> np.ndarray:
        """The nodes of ``patch`` whose polygon may hold point (x, z) within ``slack``: its
        bin's (:meth:`bin_nodes`) when ``slack`` <= ``BIN_MARGIN``, else all of them."""
        return (
            self.bin_nodes(patch, x, z)
            if slack <= BIN_MARGIN
            else self.patch_nodes.get(patch, _NONE)
        )

    def _patch_edges(self, li: int, idx: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The visibility edges (a, b), a < b in ``idx`` order, among one patch's nodes: every
        pair that could pass (:meth:`_pair_blocks`, a block at a time: memory stays
        bounded), kept when it leaves both corners tangentially, one of the two visibility
        polygons holds the other end within ``SEE_SLACK`` (a cheap, generous filter), and
        the segment keeps the clearance."""
        xz, nrm = self.node_xz[idx], self.node_nrm[idx]
        tab = self.node_tables()
        base = idx.astype(np.int64) * RAYS
        out_a, out_b = [], []
        for ii, jj in self._pair_blocks(idx):
            d = xz[jj] - xz[ii]
            ln = np.hypot(d[:, 0], d[:, 1])
            lim = TANGENT_COS * np.maximum(ln, 1e-12)
            keep = np.abs(d[:, 0] * nrm[ii, 0] + d[:, 1] * nrm[ii, 1]) <= lim
            keep &= np.abs(d[:, 0] * nrm[jj, 0] + d[:, 1] * nrm[jj, 1]) <= lim
            ii, jj, d, ln = ii[keep], jj[keep], d[keep], ln[keep]
            if SEE_SLACK is not None and len(ii):
                seen = self._reach(tab, base[ii], d[:, 0], d[:, 1]) >= ln - SEE_SLACK
                seen |= self._reach(tab, base[jj], -d[:, 0], -d[:, 1]) >= ln - SEE_SLACK
                ii, jj = ii[seen], jj[seen]
            for c in range(0, len(ii), 20000):
                a, b = idx[ii[c : c + 20000]], idx[jj[c : c + 20000]]
                vis = self.c.los(li, self.node_xz[a], self.node_xz[b])
                out_a.append(a[vis])
                out_b.append(b[vis])
        if not out_a:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(out_a), np.concatenate(out_b)

    def _pair_blocks(self, idx: np.ndarray):
        """Blocks (ii, jj), ii < jj, of the pairs of positions in ``idx`` the polygon filter
        may pass, in (ii, jj) order: one end lies in the bounding box of the other's polygon
        grown by ``SEE_SLACK`` (a node whose ray ran to ``RAY_MAX`` pairs with all), found
        by a join on ``BIN`` bins; every pair when there is no filter or the join would
        not be smaller (an open hall)."""
        m = len(idx)
        if SEE_SLACK is not None and m > 64:
            pos, bx, bz = self._bin_entries(idx, SEE_SLACK)
            x0, z0 = int(bx.min()), int(bz.min())
            wz = int(bz.max()) - z0 + 1
            code = (bx - x0) * wz + (bz - z0)
            order = np.argsort(code, kind="stable")
            code, pos = code[order], pos[order]
            mx = np.floor(self.node_xz[idx, 0] / BIN).astype(np.int64) - x0
            mz = np.floor(self.node_xz[idx, 1] / BIN).astype(np.int64) - z0
            inside = (mx >= 0) & (mz >= 0) & (mz < wz)
            mine = np.where(inside, mx * wz + mz, -1)
            lo_i = np.searchsorted(code, mine, "left")
            cnt = np.where(inside, np.searchsorted(code, mine, "right") - lo_i, 0)
            if int(cnt.sum()) <= m * (m - 1) // 2:
                me = np.repeat(np.arange(m), cnt)
                other = pos[np.repeat(lo_i, cnt) + run_offsets(cnt)]
                wide = np.nonzero(self.node_rays[idx].max(axis=1) >= RAY_MAX - 0.2)[0]
                if len(wide):  # reach is unbounded there: every pair of theirs
                    me = np.concatenate([me, np.repeat(wide, m)])
                    other = np.concatenate([other, np.tile(np.arange(m), len(wide))])
                lo, hi = np.minimum(me, other), np.maximum(me, other)
                key = np.unique(lo[lo < hi] * m + hi[lo < hi])  # sorted: (ii, jj) order
                for s in range(0, len(key), PAIR_BLOCK):
                    yield np.divmod(key[s : s + PAIR_BLOCK], m)
                return
        rows = max(1, PAIR_BLOCK // max(m, 1))
        for s in range(0, m - 1, rows):
            i = np.arange(s, min(s + rows, m - 1))
            cnt = m - 1 - i
            ii = np.repeat(i, cnt)
            yield ii, run_offsets(cnt) + ii + 1

    @staticmethod
    def _reach(tab, base: np.ndarray, dx: np.ndarray, dz: np.ndarray) -> np.ndarray:
        """Reach of the polygons at ray offsets ``base`` toward directions (dx, dz); inf
        where the rays ran to ``RAY_MAX`` (free as far as they looked: no length cap)."""
        a = np.mod(np.arctan2(dz, dx), 2 * math.pi) * (RAYS / (2 * math.pi))
        fl = np.floor(a)
        k = base + fl.astype(np.int64) % RAYS
        reach = tab[0][k] + (a - fl) * tab[1][k]
        return np.where(reach >= RAY_MAX - 0.2, np.inf, reach)

    def tangent(self, i: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Segments from nodes ``i`` towards ``other`` that leave a corner along its
        boundary (a shortest path bends around a corner, it does not turn back there)."""
        d = other - self.node_xz[i]
        ln = np.hypot(d[:, 0], d[:, 1])
        dot = np.abs(d[:, 0] * self.node_nrm[i, 0] + d[:, 1] * self.node_nrm[i, 1])
        return dot <= TANGENT_COS * np.maximum(ln, 1e-12)

    def cast(
        self, li: int, origins: np.ndarray, normals: Optional[np.ndarray] = None
    ) -> np.ndarray:
        """Free length (m, up to ``RAY_MAX``) of ``RAYS`` rays from each origin on layer
        ``li``: sphere tracing on the clearance (steps of its margin over the radius, at
        least half a cell, each sample checked as in :meth:`.Clearance.los`). ``normals``:
        of corner nodes (unit, away from their corner; zero for none), whose rays into the
        corner are 0 without tracing."""
        L = self.c.layers[li]
        o = np.asarray(origins, np.float64).reshape(-1, 2)
        n = len(o)
        out = np.zeros((n, RAYS), np.float32)
        if n == 0:
            return out
        er = self.c.erode
        ang = np.arange(RAYS) * (2 * math.pi / RAYS)
        dx, dz = np.tile(np.cos(ang), n), np.tile(np.sin(ang), n)
        ox, oz = np.repeat(o[:, 0], RAYS), np.repeat(o[:, 1], RAYS)
        deficit = np.repeat(np.maximum(er - self.c.sdf_at(L, o[:, 0], o[:, 1]), 0.0), RAYS)
        t = np.zeros(n * RAYS)
        last = np.zeros(n * RAYS)
        act = np.arange(n * RAYS)
        if normals is not None and er > 0:
            # a node is er from its corner along its normal: a ray more than 60 degrees
            # from the normal enters the corner's disc at once (free for < 2 LOS_TOL)
            nd = dx * np.repeat(normals[:, 0], RAYS) + dz * np.repeat(normals[:, 1], RAYS)
            act = act[nd >= -0.5]
        step_min = 0.5 * self.c.cell
        for _ in range(int(RAY_MAX / step_min) + 2):
            if not len(act):
                break
            ta = t[act]
            px, pz = ox[act] + dx[act] * ta, oz[act] + dz[act] * ta
            sv = self.c.sdf_at(L, px, pz)
            short = np.maximum(deficit[act] - ta, 0.0)
            thr = er - LOS_TOL - short
            free = sv >= thr
            self.c.exact_free(li, px, pz, free, sv, thr)
            last[act[free]] = ta[free]
            # sphere tracing: the interpolated clearance is sqrt(2)-Lipschitz, the bound
            # rises 1 m per metre while a deficit is being paid off
            step = np.maximum(
                (sv - thr) / np.where(short > 0, 1.0 + math.sqrt(2.0), math.sqrt(2.0)), step_min
            )
            t[act] = ta + step
            act = act[free & (ta + step <= RAY_MAX)]
        out[:] = last.reshape(n, RAYS)
        return out

    def node_tables(self) -> Tuple[np.ndarray, np.ndarray]:
        tab = getattr(self, "_node_tab", None)
        if tab is None or len(tab[0]) != self.node_rays.size:
            tab = self._node_tab = reach_tables(self.node_rays)
        return tab
