"""Fast marching (scikit-fmm, or scipy where it has no wheel: ``eikonal``): the fallback distance field of a goal set.

Used only for a point that sees no corner node nor goal (the corner graph's look-up
returns -2): each patch gets a fast-marching run from its goals and seam seeds, and the
runs are propagated across seams patch by patch (at most 3 runs per patch). Slopes and
stairs count in 3D (a speed of 1 / sqrt(1 + |grad h|^2)).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from scipy import ndimage

from habitat_mosnav.sims.grid.cells import INF, Layer, Location
from habitat_mosnav.sims.grid.eikonal import travel_time
from habitat_mosnav.sims.grid.geodesics import DistanceField


class FastMarching:
    """Fast-marching fields over a surface's patches; ``snap`` puts a goal on the grid."""

    def __init__(self, surface, snap: Callable) -> None:
        self.s = surface
        self.snap = snap

    def patch_field(
        self, patch: int, sources: List[Tuple[float, float, float]]
    ) -> Tuple[int, int, int, np.ndarray]:
        """Fast marching over one patch from point sources ``(x, z, start value)``.

        Sources are grouped in bands of start values (≤ 1 m apart); each band is one
        fast-marching run whose front starts as the exact ``min(|x - s| + v)`` around the
        sources, so the result is sub-cell accurate near them.
        """
        cell = self.s.cell
        li = int(self.s.patch_layer[patch])
        L = self.s.layers[li]
        a0, a1, b0, b1 = self.s.patch_bbox[patch]
        a0, b0 = max(a0 - 1, 0), max(b0 - 1, 0)
        a1, b1 = min(a1 + 1, L.nav.shape[0]), min(b1 + 1, L.nav.shape[1])
        mask = L.patch[a0:a1, b0:b1] == patch
        xs = self.s.x0 + (L.c0 + b0 + np.arange(b1 - b0) + 0.5) * cell
        zs = self.s.z0 + (L.r0 + a0 + np.arange(a1 - a0) + 0.5) * cell
        r0_m = 0.75 * cell
        src = sorted(sources, key=lambda s: s[2])
        bands: List[List[Tuple[float, float, float]]] = []
        for s in src:
            if bands and s[2] <= bands[-1][0][2] + 1.0:
                bands[-1].append(s)
            else:
                bands.append([s])
        speed = self.patch_speed(L, a0, a1, b0, b1, mask)
        out = np.full(mask.shape, np.inf)
        for band in bands:
            T = max(v for _, _, v in band) + r0_m
            direct = np.full(mask.shape, np.inf)
            for gx, gz, v in band:
                rad = (T - v) + 3 * cell
                c_lo = max(int((gx - rad - xs[0]) / cell), 0)
                c_hi = min(int((gx + rad - xs[0]) / cell) + 2, len(xs))
                r_lo = max(int((gz - rad - zs[0]) / cell), 0)
                r_hi = min(int((gz + rad - zs[0]) / cell) + 2, len(zs))
                if c_lo >= c_hi or r_lo >= r_hi:
                    continue
                d = np.sqrt((xs[None, c_lo:c_hi] - gx) ** 2 + (zs[r_lo:r_hi, None] - gz) ** 2) + v
                sub = direct[r_lo:r_hi, c_lo:c_hi]
                np.minimum(sub, d, out=sub)
            phi = direct - T
            phi[~np.isfinite(phi)] = 3 * cell
            inside = mask & (phi < 0)
            if not inside.any():
                rr, cc = np.nonzero(mask)
                k = int(np.argmin(phi[rr, cc]))
                phi[rr[k], cc[k]] = -1e-3
                inside[rr[k], cc[k]] = True
                direct[rr[k], cc[k]] = T
            ma = np.ma.MaskedArray(phi, mask=~mask)
            try:
                # speed: slopes and stairs in 3D path length, as on habitat-sim's navmesh
                d = travel_time(ma, cell, speed)
                f = np.ma.filled(d, np.inf).astype(np.float64) + T
            except ValueError:
                f = np.where(mask, direct, np.inf)
            f[inside] = direct[inside]
            np.minimum(out, f, out=out)
        out[~mask] = np.inf
        return li, L.r0 + a0, L.c0 + b0, out

    def patch_speed(
        self, L: Layer, a0: int, a1: int, b0: int, b1: int, mask: np.ndarray
    ) -> Optional[np.ndarray]:
        """1 / sqrt(1 + |grad h|^2) over a sloped patch (None when it is flat), so that
        fast marching measures the 3D length of a path; heights are smoothed over ~0.3 m
        so that a stair reads as its mean slope."""
        hh = L.height[a0:a1, b0:b1]
        vals = hh[mask]
        if len(vals) == 0 or float(vals.max() - vals.min()) < 0.05:
            return None
        sigma = max(1.0, 0.15 / self.s.cell)
        m = mask.astype(np.float64)
        h0 = np.where(mask, hh, 0.0).astype(np.float64)
        num = ndimage.gaussian_filter(h0, sigma, mode="nearest")
        den = ndimage.gaussian_filter(m, sigma, mode="nearest")
        hs = np.where(den > 1e-6, num / np.maximum(den, 1e-6), 0.0)
        gz, gx = np.gradient(hs, self.s.cell)
        g2 = np.minimum(gx**2 + gz**2, 4.0)  # at most a 63 degree slope
        speed = 1.0 / np.sqrt(1.0 + g2)
        return np.where(mask, speed, 1.0)

    def field(self, goals: np.ndarray) -> DistanceField:
        """Fast-marching distance field of a goal set (fallback), propagated across seams patch by patch."""
        import heapq

        df = DistanceField()
        goal_src: Dict[int, List[Tuple[float, float, float]]] = {}
        for g in goals:
            loc = self.snap(g)
            if loc is None or loc.patch < 0:
                continue
            goal_src.setdefault(loc.patch, []).append((loc.x, loc.z, 0.0))
        for p, lst in goal_src.items():
            df.goals[p] = np.asarray([(x, z) for x, z, _ in lst])
        seeds: Dict[int, Dict[Tuple[int, int], float]] = {}
        heap = [(0.0, p) for p in goal_src]
        heapq.heapify(heap)
        runs: Dict[int, int] = {}
        while heap:
            _, p = heapq.heappop(heap)
            if runs.get(p, 0) >= 3:
                continue
            runs[p] = runs.get(p, 0) + 1
            src = list(goal_src.get(p, []))
            for (R, C), v in seeds.get(p, {}).items():
                src.append(
                    (self.s.x0 + (C + 0.5) * self.s.cell, self.s.z0 + (R + 0.5) * self.s.cell, v)
                )
            part = self.patch_field(p, src)
            df.parts[p] = part
            _, R0, C0, f = part
            dirty: Dict[int, float] = {}
            for ra, ca, q, rb, cb in self.s.portals.get(p, ()):
                val = float(f[ra - R0, ca - C0])
                if not val < INF:
                    continue
                val += self.s.cell if (ra == rb or ca == cb) else self.s.cell * math.sqrt(2)
                sq = seeds.setdefault(q, {})
                if val < sq.get((rb, cb), INF) - 1e-4:
                    sq[(rb, cb)] = val
                    dirty[q] = min(dirty.get(q, INF), val)
            for q, v in dirty.items():
                heapq.heappush(heap, (v, q))
        return df

    def value(self, df: DistanceField, loc: Location) -> float:
        part = df.parts.get(loc.patch)
        if part is None:
            return INF
        _, R0, C0, f = part
        # bilinear over valid cell centres
        u = (loc.x - self.s.x0) / self.s.cell - 0.5 - C0
        v = (loc.z - self.s.z0) / self.s.cell - 0.5 - R0
        c = int(math.floor(u))
        r = int(math.floor(v))
        fu, fv = u - c, v - r
        h, w = f.shape
        tot = 0.0
        wsum = 0.0
        for dr, dc, wt in (
            (0, 0, (1 - fu) * (1 - fv)),
            (0, 1, fu * (1 - fv)),
            (1, 0, (1 - fu) * fv),
            (1, 1, fu * fv),
        ):
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < w:
                val = f[rr, cc]
                if val < INF and wt > 0:
                    tot += wt * val
                    wsum += wt
        if wsum > 1e-9:
            val = tot / wsum
        else:
            rr = min(max(int(round(v)), 0), h - 1)
            cc = min(max(int(round(u)), 0), w - 1)
            val = float(f[rr, cc])
            if not val < INF:
                return INF
        # within a cell or so of a goal, the straight distance is exact
        gp = df.goals.get(loc.patch)
        if gp is not None:
            dmin = float(np.min(np.hypot(gp[:, 0] - loc.x, gp[:, 1] - loc.z)))
            if dmin < 1.5 * self.s.cell:
                return dmin
        return float(val)

    def path(self, loc: Location, df: DistanceField) -> Tuple[List[np.ndarray], float]:
        """Fallback polyline: steepest descent of a fast-marching field, string-pulled."""
        dist = self.value(df, loc)
        if not dist < INF:
            return [], INF

        def value(p, R, C):
            part = df.parts.get(p)
            if part is None:
                return INF
            _, R0, C0, f = part
            r, c = R - R0, C - C0
            if 0 <= r < f.shape[0] and 0 <= c < f.shape[1]:
                return float(f[r, c])
            return INF

        R, C = self.s.rc(loc.x, loc.z)
        p = loc.patch
        nodes = [(p, R, C)]
        seen = {(p, R, C)}
        cur = value(p, R, C)
        for _ in range(self.s.H * self.s.W):
            best, nxt = cur, None
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    if dr or dc:
                        v = value(p, R + dr, C + dc)
                        if v < best:
                            best, nxt = v, (p, R + dr, C + dc)
            for q, Rq, Cq in self.s.portal_map.get((p, R, C), ()):
                v = value(q, Rq, Cq)
                if v < best:
                    best, nxt = v, (q, Rq, Cq)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            nodes.append(nxt)
            p, R, C = nxt
            cur = best
        gp = df.goals.get(p)
        # runs of one patch, each string-pulled on its own
        runs: List[Tuple[int, List[np.ndarray]]] = []
        for i, (q, Rq, Cq) in enumerate(nodes):
            xz = (
                np.array([loc.x, loc.z])
                if i == 0
                else np.array(
                    [self.s.x0 + (Cq + 0.5) * self.s.cell, self.s.z0 + (Rq + 0.5) * self.s.cell]
                )
            )
            if not runs or runs[-1][0] != q:
                runs.append((q, []))
            runs[-1][1].append(xz)
        if gp is not None:
            last = runs[-1][1][-1]
            end = gp[int(np.argmin(np.hypot(gp[:, 0] - last[0], gp[:, 1] - last[1])))]
            runs[-1][1].append(np.asarray(end, dtype=np.float64))
        pts: List[np.ndarray] = []
        for q, xz in runs:
            li = int(self.s.patch_layer[q])
            idx = [0]
            i = 0
            while i < len(xz) - 1:
                j = i + 1
                while j + 1 < len(xz) and self.s.segment_ok(li, q, xz[i], xz[j + 1]):
                    j += 1
                idx.append(j)
                i = j
            # local refinement: move each corner to the descent point between its
            # neighbours that shortens the polyline (the greedy pull cuts corners late)
            for _ in range(2):
                for k in range(1, len(idx) - 1):
                    a, c = xz[idx[k - 1]], xz[idx[k + 1]]
                    best_m = idx[k]
                    best_len = np.linalg.norm(xz[best_m] - a) + np.linalg.norm(c - xz[best_m])
                    for m in range(idx[k - 1] + 1, idx[k + 1]):
                        ln = np.linalg.norm(xz[m] - a) + np.linalg.norm(c - xz[m])
                        if (
                            ln < best_len - 1e-9
                            and self.s.segment_ok(li, q, a, xz[m])
                            and self.s.segment_ok(li, q, xz[m], c)
                        ):
                            best_m, best_len = m, ln
                    idx[k] = best_m
            out = [xz[i] for i in idx]
            for pt in out:
                y = self.s.height_at(li, pt[0], pt[1], loc.y)
                pts.append(np.array([pt[0], y, pt[1]], dtype=np.float32))
        return pts, dist
