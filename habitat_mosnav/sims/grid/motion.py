"""Motion on the walkable surface: snapping points onto it, and stepping with sliding.

``snap`` finds the nearest navigable cell (3D distance, floors told apart by height);
``try_step`` moves in sub-steps of a quarter cell and, where the next one leaves the
patch (or crosses a seam into a neighbour patch), slides along the edge as habitat-sim's
``allow_sliding`` does: the move's component along the edge (the clearance gradient),
else its x or z part.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.sims.grid.cells import INF, Location


class Motion:
    """Point queries and steps over a :class:`~.surface.Surface`."""

    def __init__(self, surface) -> None:
        self.s = surface
        self._last_snap: Tuple[Optional[bytes], Optional[Location]] = (None, None)

    def snap(self, p: Sequence[float], max_y_delta: float = INF) -> Optional[Location]:
        """Nearest navigable point (3D distance, floors told apart by height); None if none."""
        x, y, z = float(p[0]), float(p[1]), float(p[2])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            return None
        R, C = self.s.rc(x, z)
        best = None
        best_d = INF
        for li, L in enumerate(self.s.layers):
            r, c = R - L.r0, C - L.c0
            h, w = L.nav.shape
            if 0 <= r < h and 0 <= c < w and L.nav[r, c]:
                dy = abs(float(L.height[r, c]) - y)
                if dy <= 0.5:
                    return self.s.loc(li, r, c, x, z)
                d = dy
                cand = (li, r, c, x, z)
            else:
                rc_ = min(max(r, 0), h - 1)
                cc_ = min(max(c, 0), w - 1)
                nr, nc = int(L.near_r[rc_, cc_]), int(L.near_c[rc_, cc_])
                if nr < 0:
                    continue
                cx, cz = self.s.cell_center(li, nr, nc)
                d = math.sqrt((cx - x) ** 2 + (cz - z) ** 2 + (float(L.height[nr, nc]) - y) ** 2)
                cand = (li, nr, nc, cx, cz)
            if d < best_d:
                best_d, best = d, cand
        if best is None:
            return None
        li, r, c, cx, cz = best
        if abs(float(self.s.layers[li].height[r, c]) - y) > max_y_delta:
            return None
        return self.s.loc(li, r, c, cx, cz)

    def snap_cached(self, p) -> Optional[Location]:
        arr = np.asarray(p, dtype=np.float64).reshape(-1)[:3]
        key = arr.tobytes()
        if self._last_snap[0] == key:
            return self._last_snap[1]
        loc = self.snap(arr)
        self._last_snap = (key, loc)
        return loc

    def is_navigable(self, p: Sequence[float], max_y_delta: float = 0.5) -> bool:
        x, y, z = float(p[0]), float(p[1]), float(p[2])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            return False
        R, C = self.s.rc(x, z)
        for L in self.s.layers:
            r, c = R - L.r0, C - L.c0
            h, w = L.nav.shape
            if (
                0 <= r < h
                and 0 <= c < w
                and L.nav[r, c]
                and abs(float(L.height[r, c]) - y) <= max_y_delta
            ):
                return True
        return False

    def island_of(self, p) -> int:
        loc = self.snap(p)
        return -1 if loc is None else loc.island

    def island_radius(self, p) -> float:
        loc = self.snap(p)
        if loc is None or loc.island < 0:
            return 0.0
        return float(self.s.island_radius_m[loc.island])

    def island_cells(self, island: int) -> List[Tuple[int, np.ndarray]]:
        out = self.s.island_index.get(island)
        if out is None:
            patches = np.nonzero(self.s.patch_island == island)[0]
            out = []
            for li, L in enumerate(self.s.layers):
                cells = np.argwhere(np.isin(L.patch, patches[self.s.patch_layer[patches] == li]))
                if len(cells):
                    out.append((li, cells))
            self.s.island_index[island] = out
        return out

    def snap_to_island(self, p: Sequence[float], island: int) -> Optional[Location]:
        """Nearest navigable point of one island (3D distance to its cell centres; the
        point itself when it is navigable there); None when the island does not exist."""
        loc = self.snap(p)
        if loc is not None and loc.island == island and self.is_navigable(p):
            return loc
        if not 0 <= island < self.s.num_islands:
            return None
        x, y, z = (float(v) for v in np.asarray(p, np.float64).reshape(-1)[:3])
        best, arg = INF, None
        for li, cells in self.island_cells(island):
            L = self.s.layers[li]
            cx = self.s.x0 + (L.c0 + cells[:, 1] + 0.5) * self.s.cell
            cz = self.s.z0 + (L.r0 + cells[:, 0] + 0.5) * self.s.cell
            d = (cx - x) ** 2 + (cz - z) ** 2 + (L.height[cells[:, 0], cells[:, 1]] - y) ** 2
            k = int(np.argmin(d))
            if d[k] < best:
                best, arg = (
                    float(d[k]),
                    (li, int(cells[k, 0]), int(cells[k, 1]), float(cx[k]), float(cz[k])),
                )
        if arg is None:
            return None
        return self.s.loc(*arg)

    def random_point(self, rng: np.random.Generator, island: int = -1) -> np.ndarray:
        """Uniform over the navigable area (of one island when ``island`` ≥ 0)."""
        if not self.s.total_cells or island >= self.s.num_islands:
            return np.full(3, np.nan, np.float32)
        groups = self.s.nav_index if island < 0 else self.island_cells(island)
        total = sum(len(c) for _, c in groups)
        k = int(rng.integers(total))
        for li, cells in groups:
            if k < len(cells):
                r, c = cells[k]
                break
            k -= len(cells)
        L = self.s.layers[li]
        jx, jz = rng.random(2)
        x = self.s.x0 + (L.c0 + c + 0.1 + 0.8 * jx) * self.s.cell
        z = self.s.z0 + (L.r0 + r + 0.1 + 0.8 * jz) * self.s.cell
        return np.array([x, L.height[r, c], z], dtype=np.float32)

    def move_ok(self, li: int, patch: int, x: float, z: float) -> Optional[Tuple[int, int]]:
        """(layer, patch) reached at (x, z) from ``patch``: the same, or one across a seam."""
        if self.s.patch_at(li, x, z) == patch:
            return li, patch
        for q in self.s.patch_neighbors.get(patch, ()):
            lq = int(self.s.patch_layer[q])
            if self.s.patch_at(lq, x, z) == q:
                return lq, q
        return None

    def normal(self, li: int, x: float, z: float) -> np.ndarray:
        """Unit vector (x, z) pointing away from the nearest navmesh edge."""
        L = self.s.layers[li]
        r = int(math.floor((z - self.s.z0) / self.s.cell)) - L.r0
        c = int(math.floor((x - self.s.x0) / self.s.cell)) - L.c0
        h, w = L.clear.shape
        r = min(max(r, 1), h - 2)
        c = min(max(c, 1), w - 2)
        g = L.clear
        gx = float(g[r, c + 1] - g[r, c - 1])
        gz = float(g[r + 1, c] - g[r - 1, c])
        n = math.hypot(gx, gz)
        if n < 1e-9:
            return np.zeros(2)
        return np.array([gx / n, gz / n])

    def try_step(self, start, end, sliding: bool = True) -> np.ndarray:
        """Move from ``start`` toward ``end`` on the navigable area; slide along edges."""
        loc = self.snap(start)
        if loc is None:
            return np.asarray(start, dtype=np.float32)
        li, patch = loc.layer, loc.patch
        p = np.array([loc.x, loc.z])
        tgt = np.array([float(end[0]), float(end[2])])
        delta = tgt - p
        dist = float(np.hypot(*delta))
        if dist > 0:
            if self.s.segment_ok(li, patch, p, tgt):
                p = tgt
            else:
                nsub = max(1, int(math.ceil(dist / (0.25 * self.s.cell))))
                d = delta / nsub
                for _ in range(nsub):
                    q = p + d
                    hit = self.move_ok(li, patch, q[0], q[1])
                    if hit is not None:
                        li, patch = hit
                        p = q
                        continue
                    if not sliding:
                        break
                    n = self.normal(li, p[0], p[1])
                    cands = []
                    dn = float(d @ n)
                    if dn < 0:
                        cands.append(d - dn * n)
                    cands.append(np.array([d[0], 0.0]))
                    cands.append(np.array([0.0, d[1]]))
                    cands.sort(key=lambda v: -float(v @ d))
                    moved = False
                    for v in cands:
                        if float(v @ d) <= 1e-12:
                            continue
                        q = p + v
                        hit = self.move_ok(li, patch, q[0], q[1])
                        if hit is not None:
                            li, patch = hit
                            p = q
                            moved = True
                            break
                    if not moved:
                        break
        y = self.s.height_at(li, p[0], p[1], loc.y)
        return np.array([p[0], y, p[1]], dtype=np.float32)

    def distance_to_closest_obstacle(self, p, max_search_radius: float = 2.0) -> float:
        loc = self.snap(p)
        if loc is None:
            return 0.0
        L = self.s.layers[loc.layer]
        r, c = self.s.rc(loc.x, loc.z)
        r, c = r - L.r0, c - L.c0
        h, w = L.clear.shape
        if not (0 <= r < h and 0 <= c < w):
            return 0.0
        return float(min(max(float(L.clear[r, c]) - 0.5 * self.s.cell, 0.0), max_search_radius))
