"""Clearance: how far each point of the floor is from the nearest obstacle.

Erosion is by exactly the agent radius: each cell centre's clearance is its distance to
the nearest obstacle point (surface samples in the agent's height slab off the floor,
floor-edge mid-points; a KD-tree per layer), and a cell is navigable when some point of
it has clearance >= radius. :class:`Clearance` answers the questions built on that
signed clearance: the value at a point (bilinear), whether a segment keeps the agent's
clearance (line of sight), and the lift of a point just short of it onto the free space.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np
from scipy import ndimage

from habitat_mosnav.sims.grid.cells import CLIMB_EPS, HEAD_EPS, INF, Layer, Location, run_offsets

#: slack (m) on the clearance along a segment: chords between corner points, interpolation
LOS_TOL = 0.005
#: coarse sample spacing (m) of visibility tests, and how far clearance is measured
#: beyond the radius (it certifies coarse intervals in the open)
LOS_COARSE = 0.2
SDF_CAP = 0.5


def layer_clearance(
    s,
    r0: int,
    r1: int,
    c0: int,
    c1: int,
    height: np.ndarray,
    present: np.ndarray,
    ghost: np.ndarray,
    lr: np.ndarray,
    lc: np.ndarray,
    flags: np.ndarray,
    samples,
    er: float,
):
    """Signed clearance of one layer's cell centres, the KD-tree of its obstacle points
    and the navigable cells: floor cells with a point of clearance >= ``er`` (the centre,
    or one of 6 x 6 points of a cell whose centre falls short by less than 0.75 cell, so
    that a gap a little wider than the agent stays open). ``s``: the surface being built
    (its frame ``x0, z0, W, cell``, ``agent`` and ``ymin``).

    Obstacle points: the (x, z) of every surface sample in a cell off this layer's floor
    lying between (floor + max_climb) and (floor + height), floor = the nearest floor
    cell's height, and the mid-point of each floor-cell side with no climbable neighbour
    and no such sample behind it (a floor edge or a drop). Seams are not obstacles."""
    from scipy.spatial import cKDTree

    cell, ag = s.cell, s.agent
    h, w = present.shape
    skey, sx, sz, span = samples
    dist_p, ind = ndimage.distance_transform_edt(~present, return_indices=True)
    hf = height[ind[0], ind[1]]
    reach = er / cell + 3.0
    # the samples of each cell around this layer's floor that lie in the agent's slab
    # above the nearest floor height: one slice of the (cell, height)-sorted samples
    cr, ccl = np.nonzero(~present & ~ghost & (dist_p <= reach))
    base = ((cr + r0) * s.W + (ccl + c0)) * span + (hf[cr, ccl].astype(np.float64) - s.ymin)
    lo_i = np.searchsorted(skey, base + ag.max_climb + CLIMB_EPS, side="right")
    cnt = np.maximum(np.searchsorted(skey, base + ag.height - HEAD_EPS, side="left") - lo_i, 0)
    m = np.repeat(lo_i, cnt) + run_offsets(cnt)
    blocked = np.zeros((h, w), bool)
    blocked[cr[cnt > 0], ccl[cnt > 0]] = True
    pts = [np.stack([sx[m], sz[m]], axis=1).astype(np.float64)]
    for k, (dr, dc) in enumerate(((0, 1), (0, -1), (1, 0), (-1, 0))):
        bad = np.nonzero(~flags[:, k])[0]
        nr, nc = lr[bad] + dr, lc[bad] + dc
        inside = (nr >= 0) & (nr < h) & (nc >= 0) & (nc < w)
        behind = np.zeros(len(bad), bool)
        behind[inside] = blocked[nr[inside], nc[inside]] | ghost[nr[inside], nc[inside]]
        b = bad[~behind]
        pts.append(
            np.stack(
                [
                    s.x0 + (c0 + lc[b] + 0.5 + 0.5 * dc) * cell,
                    s.z0 + (r0 + lr[b] + 0.5 + 0.5 * dr) * cell,
                ],
                axis=1,
            )
        )
    p = np.concatenate(pts)
    cap = er + SDF_CAP
    sdf = np.full((h, w), -cap, np.float32)
    if len(p) == 0:
        sdf[present] = cap
        return sdf, None, present.copy()
    q = np.round(p * 1000.0).astype(np.int64)  # one point per square millimetre
    _, first = np.unique(q[:, 0] * 100_000_000 + q[:, 1], return_index=True)
    p = p[first]
    tree = cKDTree(p)
    qr, qc = np.nonzero(present | (dist_p <= 1.5))
    centres = np.stack([s.x0 + (c0 + qc + 0.5) * cell, s.z0 + (r0 + qr + 0.5) * cell], axis=1)
    d, _ = tree.query(centres, distance_upper_bound=cap)
    d = np.minimum(d, cap)
    sdf[qr, qc] = np.where(present[qr, qc], d, -d)
    nav = present & (sdf >= er - 1e-6)
    if er > 0:
        pr, pc = np.nonzero(present & ~nav & (sdf >= er - 0.75 * cell))
        if len(pr):
            sub = (np.arange(6) + 0.5) / 6.0
            ox, oz = (o.reshape(-1) for o in np.meshgrid(sub, sub))
            # clearance is 1-Lipschitz: a point ``off`` from the centre has at most the
            # centre's clearance + off, so only those that could reach er are asked
            off = np.hypot(ox - 0.5, oz - 0.5) * cell
            cand = sdf[pr, pc][:, None] + off[None, :] >= er - 1e-6
            ci, si = np.nonzero(cand)
            px = s.x0 + (c0 + pc[ci] + ox[si]) * cell
            pz = s.z0 + (r0 + pr[ci] + oz[si]) * cell
            ds, _ = tree.query(np.stack([px, pz], axis=1), distance_upper_bound=er + 1e-3)
            hit = np.zeros(len(pr), bool)
            hit[ci[ds >= er]] = True
            nav[pr[hit], pc[hit]] = True
    return sdf, tree, nav


class Clearance:
    """Queries on the signed clearance of a built surface (its layers' ``sdf`` and the
    per-layer KD-trees of obstacle points, ``surface.trees``)."""

    def __init__(self, surface) -> None:
        self.s = surface
        self.layers: List[Layer] = surface.layers
        self.trees: List[Any] = surface.trees
        self.erode = surface.erode
        self.cell = surface.cell
        self._last_lift: Tuple[Optional[Location], Any] = (None, None)

    def tree(self, li: int):
        """Layer ``li``'s obstacle KD-tree, None when nothing erodes (a navmesh)."""
        return self.trees[li] if self.erode > 0 and li < len(self.trees) else None

    def _uv(self, L: Layer, x: np.ndarray, z: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Points (x, z) in layer ``L``'s cell-centre frame: column and row, fractional,
        0 at the centre of its first cell."""
        return (x - self.s.x0) / self.cell - 0.5 - L.c0, (z - self.s.z0) / self.cell - 0.5 - L.r0

    def sdf_at(self, L: Layer, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Bilinear signed clearance at points (x, z) of a layer (-inf off its crop)."""
        S = L.sdf
        h, w = S.shape
        u, v = self._uv(L, x, z)
        c = np.floor(u).astype(np.int64)
        r = np.floor(v).astype(np.int64)
        fu, fv = u - c, v - r
        ok = (c >= 0) & (r >= 0) & (c < w - 1) & (r < h - 1)
        np.clip(c, 0, w - 2, out=c)
        np.clip(r, 0, h - 2, out=r)
        i = r * w + c  # flat: one gather per corner
        flat = S.reshape(-1)
        gu, gv = 1 - fu, 1 - fv
        val = (
            flat.take(i) * gu * gv
            + flat.take(i + 1) * fu * gv
            + flat.take(i + w) * gu * fv
            + flat.take(i + (w + 1)) * fu * fv
        )
        val[~ok] = -np.inf
        return val

    def sdf_point(self, L: Layer, x: float, z: float) -> float:
        """:meth:`sdf_at` for one point (plain Python: the per-step query path)."""
        S = L.sdf
        u = (x - self.s.x0) / self.cell - 0.5 - L.c0
        v = (z - self.s.z0) / self.cell - 0.5 - L.r0
        c, r = int(math.floor(u)), int(math.floor(v))
        h, w = S.shape
        if not (0 <= c < w - 1 and 0 <= r < h - 1):
            return -INF
        fu, fv = u - c, v - r
        # float32 values widened to float, as numpy's float32 scalar * float does
        return float(
            S.item(r, c) * (1 - fu) * (1 - fv)
            + S.item(r, c + 1) * fu * (1 - fv)
            + S.item(r + 1, c) * (1 - fu) * fv
            + S.item(r + 1, c + 1) * fu * fv
        )

    def exact_free(
        self,
        li: int,
        px: np.ndarray,
        pz: np.ndarray,
        free: np.ndarray,
        sv: np.ndarray,
        thr: np.ndarray,
    ) -> None:
        """Interpolation cuts the clearance short on a ridge (the middle of a gap just
        wider than the agent): decide the samples within 0.75 cell under ``thr`` exactly
        on the obstacle tree, in place in ``free``."""
        tree = self.tree(li)
        if tree is None:
            return
        near = np.nonzero(~free & (sv >= thr - 0.75 * self.cell))[0]
        if len(near):
            near = near[self._may_clear(self.layers[li], px[near], pz[near], thr[near])]
        if len(near):
            # only "at least thr" is asked: a bound just over the largest thr prunes the search
            ub = float(thr[near].max()) + 1e-6
            dq, _ = tree.query(np.stack([px[near], pz[near]], axis=1), distance_upper_bound=ub)
            free[near] = dq >= thr[near]

    def _may_clear(self, L: Layer, x: np.ndarray, z: np.ndarray, thr: np.ndarray) -> np.ndarray:
        """False where the point's distance to the obstacles is surely below ``thr``: it is
        at most a surrounding cell centre's (exact, where not capped) plus the way there
        (the triangle inequality on the same obstacle points)."""
        S = L.sdf
        h, w = S.shape
        cap = self.erode + SDF_CAP - 1e-4
        u, v = self._uv(L, x, z)
        c0 = np.clip(np.floor(u).astype(np.int64), 0, w - 2)
        r0 = np.clip(np.floor(v).astype(np.int64), 0, h - 2)
        bound = np.full(len(x), np.inf)
        for dr in (0, 1):
            for dc in (0, 1):
                d = np.abs(S[r0 + dr, c0 + dc]).astype(np.float64)
                way = np.hypot((u - c0 - dc) * self.cell, (v - r0 - dr) * self.cell)
                bound = np.minimum(bound, np.where(d < cap, d + way, np.inf))
        return bound + 1e-6 >= thr

    def los(self, li: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Which segments A[i] -> B[i] of layer ``li`` keep the agent's clearance (within
        ``LOS_TOL``). Near an end point whose own clearance is short of the radius (a
        query point between cell centres), the bound is relaxed by that shortfall minus
        the distance travelled from it (clearance grows at most 1 m per metre).

        Coarse samples every ``LOS_COARSE`` metres first: the interpolated clearance is
        sqrt(2)-Lipschitz, so a coarse interval whose two ends clear the bound by enough
        is free without looking inside; only the other intervals get fine samples."""
        L = self.layers[li]
        A = np.asarray(A, np.float64).reshape(-1, 2)
        B = np.asarray(B, np.float64).reshape(-1, 2)
        m = len(A)
        if m == 0:
            return np.zeros(0, bool)
        er = self.erode
        d = B - A
        ln = np.hypot(d[:, 0], d[:, 1])
        def_a = np.maximum(er - self.sdf_at(L, A[:, 0], A[:, 1]), 0.0)
        def_b = np.maximum(er - self.sdf_at(L, B[:, 0], B[:, 1]), 0.0)

        def bound(seg, ta):
            relax = np.maximum(np.maximum(def_a[seg] - ta, def_b[seg] - (ln[seg] - ta)), 0.0)
            return er - LOS_TOL - relax

        n = np.maximum(np.ceil(ln / LOS_COARSE).astype(np.int64), 1) + 1
        off = np.r_[0, np.cumsum(n)[:-1]]
        seg = np.repeat(np.arange(m), n)
        t = (np.arange(int(n.sum())) - off[seg]) / (n[seg] - 1)
        ta = ln[seg] * t
        s = self.sdf_at(L, A[seg, 0] + d[seg, 0] * t, A[seg, 1] + d[seg, 1] * t)
        margin = (s - bound(seg, ta)) / (1.0 + math.sqrt(2.0))
        ok = np.ones(m, bool)
        ok[seg[margin < -0.75 * self.cell]] = False  # a coarse sample inside an obstacle
        # coarse intervals (k, k + 1) of one segment not covered by their ends' margins
        k = np.arange(len(seg) - 1)
        k = k[(seg[k] == seg[k + 1]) & ok[seg[k]]]
        gap = ln[seg[k]] / (n[seg[k]] - 1)
        open_ = k[~((margin[k] >= 0) & (margin[k + 1] >= 0) & (margin[k] + margin[k + 1] >= gap))]
        if len(open_):
            sg = seg[open_]
            nf = int(math.ceil(LOS_COARSE / (0.5 * self.cell))) + 1
            u = np.linspace(0.0, 1.0, nf)
            tt = (t[open_][:, None] + (t[open_ + 1] - t[open_])[:, None] * u[None]).ravel()
            sf = np.repeat(sg, nf)
            px = A[sf, 0] + d[sf, 0] * tt
            pz = A[sf, 1] + d[sf, 1] * tt
            thr = bound(sf, ln[sf] * tt)
            sv = self.sdf_at(L, px, pz)
            good = sv >= thr
            if not good.all():
                self.exact_free(li, px, pz, good, sv, thr)
            ok[sf[~good]] = False
        return ok

    def lift(self, loc: Location) -> Tuple[Location, float]:
        """A query point closer than the radius to an obstacle (the agent may stand between
        cell centres there) moved straight away from it onto the eroded free space, as a
        navmesh point always is: (that point, the distance moved)."""
        er = self.erode
        tree = self.tree(loc.layer)
        if (
            tree is None
            or self.sdf_point(self.layers[loc.layer], loc.x, loc.z) >= er + 0.5 * LOS_TOL
        ):
            return loc, 0.0
        last = self._last_lift
        if last[0] == loc:  # the same point again (several goal sets asked from one position)
            return last[1]
        px, pz = loc.x, loc.z
        data = tree.data
        for _ in range(3):
            d, i = tree.query([px, pz])
            if d >= er:
                break
            if d > 1e-9:
                s = (er + 1e-3) / max(d, 1e-9)
                ox, oz = data[i].tolist()
                px, pz = ox + (px - ox) * s, oz + (pz - oz) * s
        moved = float(math.hypot(px - loc.x, pz - loc.z))
        if moved > 2 * self.cell:  # not a small shortfall: leave it
            out = (loc, 0.0)
        else:
            out = (Location(loc.layer, loc.patch, loc.island, float(px), float(pz), loc.y), moved)
        self._last_lift = (loc, out)
        return out
