"""Navigability grid, islands, fast-marching geodesics and sliding motion.

The mesh is sampled into a 2.5D grid of ``cell`` metres: a cell holds one *node* per
standable surface (an up-facing surface within ``max_slope`` with no geometry between
``floor + max_climb`` and ``floor + height``; geometry above the agent, e.g. ceilings, is
ignored). Nodes that touch with a height step ≤ ``max_climb`` are connected. Connected
pieces are packed into 2D *layers* (several floors of a house land in different layers),
eroded by the agent radius, and split into *islands*. Geodesic distances are fast-marching
(scikit-fmm) distance fields over an island, one field per goal set, cached (LRU).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

INF = float("inf")


@dataclass
class AgentShape:
    height: float = 1.5
    radius: float = 0.1
    max_climb: float = 0.2
    max_slope: float = 45.0

    def key(self) -> tuple:
        return (round(self.height, 4), round(self.radius, 4), round(self.max_climb, 4),
                round(self.max_slope, 3))


@dataclass
class Layer:
    """One 2D slab of nodes (cropped to its bounding box at grid offset ``r0, c0``)."""

    r0: int
    c0: int
    height: np.ndarray  # (h, w) float32, nan where no node
    nav: np.ndarray  # (h, w) bool, navigable after erosion
    island: np.ndarray  # (h, w) int32 global island id, -1 if not navigable
    clear: np.ndarray  # (h, w) float32 metres to the nearest non-navigable cell
    near_r: np.ndarray  # (h, w) int32 row of the nearest navigable cell (layer-local)
    near_c: np.ndarray


@dataclass
class Location:
    """A point snapped onto the grid."""

    layer: int
    island: int
    x: float
    z: float
    y: float

    def xyz(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z], dtype=np.float32)


@dataclass
class DistanceField:
    """Fast-marching distances to one goal set, per island it reaches."""

    # island id -> (layer index, r0, c0 (grid offsets of the crop), field (h, w) with inf off-island)
    parts: Dict[int, Tuple[int, int, int, np.ndarray]] = field(default_factory=dict)
    goals: Dict[int, np.ndarray] = field(default_factory=dict)  # island -> (k, 2) goal xz


def _lattice(n: int) -> np.ndarray:
    """Barycentric weights (m, 3) of the triangle lattice with n subdivisions per edge."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = (i + j) <= n
    i, j = i[keep], j[keep]
    return np.stack([n - i - j, i, j], axis=1).astype(np.float32) / float(n)


def sample_surface(tris: np.ndarray, spacing: float, max_points: int = 4_000_000):
    """Points covering every triangle with at most ``spacing`` gaps; yields (points, tri_idx)."""
    edges = np.stack(
        [
            np.linalg.norm(tris[:, 1] - tris[:, 0], axis=1),
            np.linalg.norm(tris[:, 2] - tris[:, 1], axis=1),
            np.linalg.norm(tris[:, 0] - tris[:, 2], axis=1),
        ],
        axis=1,
    ).max(axis=1)
    nsub = np.maximum(1, np.ceil(edges / spacing)).astype(np.int64)
    for n in np.unique(nsub):
        idx = np.nonzero(nsub == n)[0]
        w = _lattice(int(n))
        per = max(1, max_points // len(w))
        for s in range(0, len(idx), per):
            chunk = idx[s : s + per]
            pts = np.matmul(w[None], tris[chunk]).reshape(-1, 3)
            yield pts, np.repeat(chunk, len(w))


class NavGrid:
    """Navigable area of one scene for one agent shape."""

    def __init__(self, triangles: np.ndarray, agent: AgentShape, cell: float = 0.05,
                 progress: bool = False, drop_roofs: bool = True):
        tris = np.asarray(triangles, dtype=np.float32)
        if tris.ndim != 3 or tris.shape[1:] != (3, 3) or len(tris) == 0:
            raise ValueError("NavGrid needs triangles of shape (F, 3, 3)")
        self.cell = float(cell)
        self.agent = agent
        self.drop_roofs = drop_roofs
        lo = tris.reshape(-1, 3).min(0)
        hi = tris.reshape(-1, 3).max(0)
        pad = 3
        self.x0 = float(lo[0]) - pad * self.cell
        self.z0 = float(lo[2]) - pad * self.cell
        self.W = int(math.ceil((hi[0] - lo[0]) / self.cell)) + 2 * pad + 1
        self.H = int(math.ceil((hi[2] - lo[2]) / self.cell)) + 2 * pad + 1
        self.layers: List[Layer] = []
        self._build(tris, progress)
        self._field_cache: "OrderedDict[bytes, DistanceField]" = OrderedDict()
        self.field_cache_size = 256
        self._last_snap: Tuple[Optional[bytes], Optional[Location]] = (None, None)

    # ------------------------------------------------------------------ build
    def _build(self, tris: np.ndarray, progress: bool) -> None:
        ag = self.agent
        cell = self.cell
        e1 = tris[:, 1] - tris[:, 0]
        e2 = tris[:, 2] - tris[:, 0]
        nrm = np.cross(e1, e2)
        nlen = np.linalg.norm(nrm, axis=1)
        ok = nlen > 1e-12
        ny = np.zeros(len(tris), np.float32)
        ny[ok] = nrm[ok, 1] / nlen[ok]
        walkable_tri = ny >= math.cos(math.radians(min(ag.max_slope, 89.0)))

        keys_all, y_all, keys_walk, y_walk = [], [], [], []
        for pts, tidx in sample_surface(tris, 0.5 * cell):
            c = np.floor((pts[:, 0] - self.x0) / cell).astype(np.int64)
            r = np.floor((pts[:, 2] - self.z0) / cell).astype(np.int64)
            k = r * self.W + c
            keys_all.append(k)
            y_all.append(pts[:, 1])
            w = walkable_tri[tidx]
            keys_walk.append(k[w])
            y_walk.append(pts[w, 1])
        ka = np.concatenate(keys_all)
        ya = np.concatenate(y_all).astype(np.float64)
        kw = np.concatenate(keys_walk)
        yw = np.concatenate(y_walk).astype(np.float64)
        self.ymin = float(ya.min()) if len(ya) else 0.0
        self.ymax = float(ya.max()) if len(ya) else 0.0
        span = self.ymax - self.ymin + 10.0

        # floor candidates: walkable samples per cell, merged when within max_climb (top kept)
        if len(kw) == 0:
            self._finish_empty()
            return
        order = np.lexsort((yw, kw))
        kw, yw = kw[order], yw[order]
        brk = np.ones(len(kw), bool)
        brk[1:] = (kw[1:] != kw[:-1]) | ((yw[1:] - yw[:-1]) > ag.max_climb)
        grp = np.cumsum(brk) - 1
        last = np.r_[np.nonzero(brk)[0][1:] - 1, len(kw) - 1]
        ck = kw[last]
        cy = yw[last]
        del grp

        # clearance: no sample in (floor + max_climb, floor + height)
        skey = np.sort(ka * span + (ya - self.ymin))
        base = ck * span + (cy - self.ymin)
        lo_i = np.searchsorted(skey, base + ag.max_climb, side="right")
        hi_i = np.searchsorted(skey, base + ag.height, side="left")
        stand = hi_i <= lo_i
        # covered: some geometry above the agent's head in the cell (indoors); roofs are not
        cell_end = np.searchsorted(skey, ck * span + (span - 1e-3), side="left")
        covered = (cell_end > hi_i)[stand]
        nk = ck[stand]
        ny_ = cy[stand].astype(np.float32)
        if self.drop_roofs and covered.any():
            # islands under open sky (a roof, the top of a ceiling slab) are dropped when
            # the scene has a roofed floor; scenes without any ceiling keep everything
            self._covered = covered
        else:
            self._covered = None
        if len(nk) == 0:
            self._finish_empty()
            return

        # connect 4-neighbour nodes whose heights differ by at most max_climb
        n = len(nk)
        start = np.searchsorted(nk, nk, side="left")  # nk sorted by key already
        rows, cols = [np.arange(n)], [np.arange(n)]
        for off in (1, self.W):
            nb = nk + off
            s = np.searchsorted(nk, nb, side="left")
            e = np.searchsorted(nk, nb, side="right")
            for j in range(int((e - s).max(initial=0))):
                idx = s + j
                valid = idx < e
                src = np.nonzero(valid)[0]
                dst = idx[valid]
                close = np.abs(ny_[dst] - ny_[src]) <= ag.max_climb
                rows.append(src[close])
                cols.append(dst[close])
        del start
        rr = np.concatenate(rows)
        cc = np.concatenate(cols)
        graph = coo_matrix((np.ones(len(rr), np.int8), (rr, cc)), shape=(n, n)).tocsr()
        ncomp, comp = connected_components(graph, directed=False)

        if self._covered is not None:
            frac = ndimage.mean(self._covered.astype(np.float64), comp, np.arange(ncomp))
            keep_comp = np.asarray(frac) >= 0.5
            if keep_comp.any() and not keep_comp.all():
                keep = keep_comp[comp]
                idx = np.nonzero(keep)[0]
                nk, ny_ = nk[idx], ny_[idx]
                graph = graph[idx][:, idx]
                ncomp, comp = connected_components(graph, directed=False)
        pieces = self._split_overlaps(nk, ny_, graph, comp, ncomp)
        self._pack_layers(nk, ny_, pieces)

    def _split_overlaps(self, nk, ny_, graph, comp, ncomp) -> List[np.ndarray]:
        """Node index arrays, each covering a cell at most once (floors cut apart)."""
        order = np.argsort(comp, kind="stable")
        bounds = np.searchsorted(comp[order], np.arange(ncomp + 1))
        out: List[np.ndarray] = []
        stack = [(order[bounds[i] : bounds[i + 1]], 0) for i in range(ncomp)]
        while stack:
            nodes, depth = stack.pop()
            keys = nk[nodes]
            uniq, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
            if len(uniq) == len(nodes):
                out.append(nodes)
                continue
            if depth < 8:
                multi = counts[inv] > 1
                lo = ndimage.minimum(ny_[nodes][multi], inv[multi], np.unique(inv[multi]))
                hi = ndimage.maximum(ny_[nodes][multi], inv[multi], np.unique(inv[multi]))
                cut = float(np.median((np.asarray(lo) + np.asarray(hi)) * 0.5))
                parts = [nodes[ny_[nodes] < cut], nodes[ny_[nodes] >= cut]]
            else:  # give up cutting: split by rank of height within the cell
                srt = np.lexsort((ny_[nodes], keys))
                ranks = np.empty(len(nodes), np.int64)
                first = np.r_[0, np.nonzero(np.diff(keys[srt]))[0] + 1]
                start_of = np.repeat(first, np.diff(np.r_[first, len(srt)]))
                ranks[srt] = np.arange(len(srt)) - start_of
                parts = [nodes[ranks == r] for r in range(int(ranks.max()) + 1)]
            for part in parts:
                if len(part) == 0:
                    continue
                sub = graph[part][:, part]
                nc, lab = connected_components(sub, directed=False)
                o = np.argsort(lab, kind="stable")
                b = np.searchsorted(lab[o], np.arange(nc + 1))
                for i in range(nc):
                    stack.append((part[o[b[i] : b[i + 1]]], depth + 1))
        return out

    def _pack_layers(self, nk, ny_, pieces: List[np.ndarray]) -> None:
        cell = self.cell
        ag = self.agent
        pieces = sorted(pieces, key=len, reverse=True)
        occ: List[np.ndarray] = []  # per layer: piece id grid (H*W) int32, -1 empty
        heights_flat: List[np.ndarray] = []
        for pid, nodes in enumerate(pieces):
            keys = nk[nodes]
            for li, grid in enumerate(occ):
                if (grid[keys] < 0).all():
                    break
            else:
                occ.append(np.full(self.H * self.W, -1, np.int32))
                heights_flat.append(np.full(self.H * self.W, np.nan, np.float32))
                li = len(occ) - 1
            occ[li][keys] = pid
            heights_flat[li][keys] = ny_[nodes]

        need = max(ag.radius / cell, 1.0)  # centre-to-blocked-centre, in cells
        island_base = 0
        self.island_layer: List[int] = []
        self.island_cells: List[int] = []
        self.island_center: List[Tuple[float, float]] = []
        self.island_radius_m: List[float] = []
        self.island_y: List[float] = []
        for li, grid in enumerate(occ):
            pidg = grid.reshape(self.H, self.W)
            hg = heights_flat[li].reshape(self.H, self.W)
            present = pidg >= 0
            rows_any = np.nonzero(present.any(1))[0]
            cols_any = np.nonzero(present.any(0))[0]
            r0, r1 = max(rows_any[0] - 1, 0), min(rows_any[-1] + 2, self.H)
            c0, c1 = max(cols_any[0] - 1, 0), min(cols_any[-1] + 2, self.W)
            p = pidg[r0:r1, c0:c1]
            hh = hg[r0:r1, c0:c1]
            core = p >= 0
            # cells touching a different piece (a height step) are edges as well
            for axis in (0, 1):
                for sh in (1, -1):
                    q = np.roll(p, sh, axis=axis)
                    core &= ~((q >= 0) & (q != p))
            edt = ndimage.distance_transform_edt(core)
            nav = edt >= need
            lab, nlab = ndimage.label(nav)
            island = np.where(nav, lab - 1 + island_base, -1).astype(np.int32)
            if nlab:
                idx = np.arange(1, nlab + 1)
                rr, cc = np.nonzero(nav)
                ll = lab[rr, cc]
                cnt = np.bincount(ll, minlength=nlab + 1)[1:]
                mx = np.bincount(ll, weights=cc, minlength=nlab + 1)[1:] / cnt
                mz = np.bincount(ll, weights=rr, minlength=nlab + 1)[1:] / cnt
                dist2 = (cc - mx[ll - 1]) ** 2 + (rr - mz[ll - 1]) ** 2
                rad = np.sqrt(ndimage.maximum(dist2, ll, idx)) * cell
                my = ndimage.mean(hh[rr, cc], ll, idx)
                for i in range(nlab):
                    self.island_layer.append(li)
                    self.island_cells.append(int(cnt[i]))
                    self.island_center.append((self.x0 + (c0 + mx[i] + 0.5) * cell,
                                               self.z0 + (r0 + mz[i] + 0.5) * cell))
                    self.island_radius_m.append(float(np.atleast_1d(rad)[i]))
                    self.island_y.append(float(np.atleast_1d(my)[i]))
            island_base += nlab
            if nav.any():
                clear = (ndimage.distance_transform_edt(nav) * cell).astype(np.float32)
                _, ind = ndimage.distance_transform_edt(~nav, return_indices=True)
                near_r, near_c = ind[0].astype(np.int32), ind[1].astype(np.int32)
            else:
                clear = np.zeros(nav.shape, np.float32)
                near_r = np.full(nav.shape, -1, np.int32)
                near_c = np.full(nav.shape, -1, np.int32)
            self.layers.append(Layer(r0, c0, hh, nav, island, clear, near_r, near_c))
        self.num_islands = island_base
        self._finish()

    def _finish_empty(self) -> None:
        self.island_layer, self.island_cells, self.island_center = [], [], []
        self.island_radius_m, self.island_y = [], []
        self.num_islands = 0
        self._finish()

    def _finish(self) -> None:
        self.island_area = np.asarray(self.island_cells, np.float64) * self.cell ** 2
        cells = [(li, np.argwhere(L.nav)) for li, L in enumerate(self.layers)]
        self._nav_index = cells  # for random sampling
        self.total_cells = int(sum(len(c) for _, c in cells))
        if self.total_cells:
            lo = np.array([np.inf, np.inf, np.inf])
            hi = -lo
            for li, L in enumerate(self.layers):
                if not L.nav.any():
                    continue
                rr, cc = np.nonzero(L.nav)
                ys = L.height[rr, cc]
                lo = np.minimum(lo, [self.x0 + (L.c0 + cc.min()) * self.cell, ys.min(),
                                     self.z0 + (L.r0 + rr.min()) * self.cell])
                hi = np.maximum(hi, [self.x0 + (L.c0 + cc.max() + 1) * self.cell, ys.max(),
                                     self.z0 + (L.r0 + rr.max() + 1) * self.cell])
            self.bounds = (lo.astype(np.float32), hi.astype(np.float32))
        else:
            self.bounds = (np.zeros(3, np.float32), np.zeros(3, np.float32))

    # --------------------------------------------------------------- queries
    @property
    def is_loaded(self) -> bool:
        return self.total_cells > 0

    def _rc(self, x: float, z: float) -> Tuple[int, int]:
        return int(math.floor((z - self.z0) / self.cell)), int(math.floor((x - self.x0) / self.cell))

    def cell_center(self, layer: int, r: int, c: int) -> Tuple[float, float]:
        L = self.layers[layer]
        return (self.x0 + (L.c0 + c + 0.5) * self.cell, self.z0 + (L.r0 + r + 0.5) * self.cell)

    def snap(self, p: Sequence[float], max_y_delta: float = INF) -> Optional[Location]:
        """Nearest navigable point (3D distance, floors told apart by height); None if none."""
        x, y, z = float(p[0]), float(p[1]), float(p[2])
        R, C = self._rc(x, z)
        best = None
        best_d = INF
        for li, L in enumerate(self.layers):
            r, c = R - L.r0, C - L.c0
            h, w = L.nav.shape
            if 0 <= r < h and 0 <= c < w and L.nav[r, c]:
                dy = abs(float(L.height[r, c]) - y)
                if dy <= 0.5:
                    return Location(li, int(L.island[r, c]), x, z, float(L.height[r, c]))
                d = dy
                cand = (li, r, c, x, z)
            else:
                rc_ = min(max(r, 0), h - 1)
                cc_ = min(max(c, 0), w - 1)
                nr, nc = int(L.near_r[rc_, cc_]), int(L.near_c[rc_, cc_])
                if nr < 0:
                    continue
                cx, cz = self.cell_center(li, nr, nc)
                d = math.sqrt((cx - x) ** 2 + (cz - z) ** 2 + (float(L.height[nr, nc]) - y) ** 2)
                cand = (li, nr, nc, cx, cz)
            if d < best_d:
                best_d, best = d, cand
        if best is None:
            return None
        li, r, c, cx, cz = best
        L = self.layers[li]
        hy = float(L.height[r, c])
        if abs(hy - y) > max_y_delta:
            return None
        return Location(li, int(L.island[r, c]), cx, cz, hy)

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
        R, C = self._rc(x, z)
        for L in self.layers:
            r, c = R - L.r0, C - L.c0
            h, w = L.nav.shape
            if 0 <= r < h and 0 <= c < w and L.nav[r, c] and abs(float(L.height[r, c]) - y) <= max_y_delta:
                return True
        return False

    def island_of(self, p) -> int:
        loc = self.snap(p)
        return -1 if loc is None else loc.island

    def island_radius(self, p) -> float:
        loc = self.snap(p)
        if loc is None or loc.island < 0:
            return 0.0
        return float(self.island_radius_m[loc.island])

    def random_point(self, rng: np.random.Generator, island: int = -1) -> np.ndarray:
        """Uniform over the navigable area (of one island when ``island`` ≥ 0)."""
        if not self.total_cells:
            return np.full(3, np.nan, np.float32)
        if island >= 0:
            li = self.island_layer[island]
            L = self.layers[li]
            cells = np.argwhere(L.island == island)
            r, c = cells[rng.integers(len(cells))]
        else:
            k = int(rng.integers(self.total_cells))
            for li, cells in self._nav_index:
                if k < len(cells):
                    r, c = cells[k]
                    break
                k -= len(cells)
        L = self.layers[li]
        jx, jz = rng.random(2)
        x = self.x0 + (L.c0 + c + 0.1 + 0.8 * jx) * self.cell
        z = self.z0 + (L.r0 + r + 0.1 + 0.8 * jz) * self.cell
        return np.array([x, L.height[r, c], z], dtype=np.float32)

    def _ok(self, layer: Layer, island: int, x: float, z: float) -> bool:
        r = int(math.floor((z - self.z0) / self.cell)) - layer.r0
        c = int(math.floor((x - self.x0) / self.cell)) - layer.c0
        h, w = layer.nav.shape
        return 0 <= r < h and 0 <= c < w and layer.island[r, c] == island

    def _segment_ok(self, layer: Layer, island: int, a, b) -> bool:
        d = math.hypot(b[0] - a[0], b[1] - a[1])
        n = max(2, int(math.ceil(d / (0.3 * self.cell))) + 1)
        t = np.linspace(0.0, 1.0, n)
        xs = a[0] + (b[0] - a[0]) * t
        zs = a[1] + (b[1] - a[1]) * t
        r = np.floor((zs - self.z0) / self.cell).astype(np.int64) - layer.r0
        c = np.floor((xs - self.x0) / self.cell).astype(np.int64) - layer.c0
        h, w = layer.nav.shape
        if r.min() < 0 or c.min() < 0 or r.max() >= h or c.max() >= w:
            return False
        return bool((layer.island[r, c] == island).all())

    def _normal(self, layer: Layer, x: float, z: float) -> np.ndarray:
        """Unit vector (x, z) pointing away from the nearest navmesh edge."""
        r = int(math.floor((z - self.z0) / self.cell)) - layer.r0
        c = int(math.floor((x - self.x0) / self.cell)) - layer.c0
        h, w = layer.clear.shape
        r = min(max(r, 1), h - 2)
        c = min(max(c, 1), w - 2)
        g = layer.clear
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
        L = self.layers[loc.layer]
        isl = loc.island
        p = np.array([loc.x, loc.z])
        if not self._ok(L, isl, p[0], p[1]):  # snapped to a cell centre outside: use it
            pass
        tgt = np.array([float(end[0]), float(end[2])])
        delta = tgt - p
        dist = float(np.hypot(*delta))
        if dist > 0:
            if self._segment_ok(L, isl, p, tgt):
                p = tgt
            else:
                nsub = max(1, int(math.ceil(dist / (0.25 * self.cell))))
                d = delta / nsub
                for _ in range(nsub):
                    q = p + d
                    if self._ok(L, isl, q[0], q[1]):
                        p = q
                        continue
                    if not sliding:
                        break
                    moved = False
                    n = self._normal(L, p[0], p[1])
                    cands = []
                    dn = float(d @ n)
                    if dn < 0:
                        cands.append(d - dn * n)
                    cands.append(np.array([d[0], 0.0]))
                    cands.append(np.array([0.0, d[1]]))
                    cands.sort(key=lambda v: -float(v @ d))
                    for v in cands:
                        if float(v @ d) <= 1e-12:
                            continue
                        q = p + v
                        if self._ok(L, isl, q[0], q[1]):
                            p = q
                            moved = True
                            break
                    if not moved:
                        break
        r, c = self._rc(p[0], p[1])
        r -= L.r0
        c -= L.c0
        h, w = L.nav.shape
        y = float(L.height[min(max(r, 0), h - 1), min(max(c, 0), w - 1)])
        if not np.isfinite(y):
            y = loc.y
        return np.array([p[0], y, p[1]], dtype=np.float32)

    def distance_to_closest_obstacle(self, p, max_search_radius: float = 2.0) -> float:
        loc = self.snap(p)
        if loc is None:
            return 0.0
        L = self.layers[loc.layer]
        r, c = self._rc(loc.x, loc.z)
        r, c = r - L.r0, c - L.c0
        h, w = L.clear.shape
        if not (0 <= r < h and 0 <= c < w):
            return 0.0
        return float(min(max(float(L.clear[r, c]) - 0.5 * self.cell, 0.0), max_search_radius))

    # ------------------------------------------------------------- geodesics
    def _compute_field(self, goals: np.ndarray) -> DistanceField:
        import skfmm

        df = DistanceField()
        by_island: Dict[int, List[Tuple[float, float]]] = {}
        for g in goals:
            loc = self.snap(g)
            if loc is None or loc.island < 0:
                continue
            by_island.setdefault(loc.island, []).append((loc.x, loc.z))
        cell = self.cell
        r0_m = 0.75 * cell
        for isl, pts in by_island.items():
            li = self.island_layer[isl]
            L = self.layers[li]
            mask_full = L.island == isl
            rows = np.nonzero(mask_full.any(1))[0]
            cols = np.nonzero(mask_full.any(0))[0]
            a0, a1 = max(rows[0] - 1, 0), min(rows[-1] + 2, mask_full.shape[0])
            b0, b1 = max(cols[0] - 1, 0), min(cols[-1] + 2, mask_full.shape[1])
            mask = mask_full[a0:a1, b0:b1]
            xs = self.x0 + (L.c0 + b0 + np.arange(b1 - b0) + 0.5) * cell
            zs = self.z0 + (L.r0 + a0 + np.arange(a1 - a0) + 0.5) * cell
            gp = np.asarray(pts)
            phi = np.full(mask.shape, np.inf)
            for gx, gz in gp:
                d = np.sqrt((xs[None, :] - gx) ** 2 + (zs[:, None] - gz) ** 2)
                np.minimum(phi, d, out=phi)
            phi -= r0_m
            if not (phi[mask] < 0).any():
                # goal circle misses every cell centre: seed its nearest cell
                rr, cc = np.nonzero(mask)
                k = int(np.argmin(phi[rr, cc]))
                phi[rr[k], cc[k]] = -1e-3
            ma = np.ma.MaskedArray(phi, mask=~mask)
            try:
                d = skfmm.distance(ma, dx=cell, order=2)
                f = np.ma.filled(d, np.inf).astype(np.float64) + r0_m
            except ValueError:
                f = np.where(mask, phi + r0_m, np.inf)
            inside = mask & (phi < 0)
            f[inside] = phi[inside] + r0_m
            f[~mask] = np.inf
            df.parts[isl] = (li, L.r0 + a0, L.c0 + b0, f)
            df.goals[isl] = gp
        return df

    def distance_field(self, goals) -> DistanceField:
        g = np.asarray(goals, dtype=np.float64).reshape(-1, 3)
        key = np.round(g, 3).tobytes()
        df = self._field_cache.get(key)
        if df is None:
            df = self._compute_field(g)
            self._field_cache[key] = df
            while len(self._field_cache) > self.field_cache_size:
                self._field_cache.popitem(last=False)
        else:
            self._field_cache.move_to_end(key)
        return df

    def field_value(self, df: DistanceField, loc: Location) -> float:
        part = df.parts.get(loc.island)
        if part is None:
            return INF
        _, R0, C0, f = part
        # bilinear over valid cell centres
        u = (loc.x - self.x0) / self.cell - 0.5 - C0
        v = (loc.z - self.z0) / self.cell - 0.5 - R0
        c = int(math.floor(u))
        r = int(math.floor(v))
        fu, fv = u - c, v - r
        h, w = f.shape
        tot = 0.0
        wsum = 0.0
        for dr, dc, wt in ((0, 0, (1 - fu) * (1 - fv)), (0, 1, fu * (1 - fv)),
                           (1, 0, (1 - fu) * fv), (1, 1, fu * fv)):
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
        # within a cell of a goal, the straight distance is exact
        gp = df.goals[loc.island]
        dmin = float(np.min(np.hypot(gp[:, 0] - loc.x, gp[:, 1] - loc.z)))
        if dmin < 1.5 * self.cell:
            return dmin
        return float(val)

    def geodesic_distance(self, a, goals) -> float:
        loc = self.snap_cached(a)
        if loc is None or loc.island < 0:
            return INF
        g = np.asarray(goals, dtype=np.float64)
        if g.ndim == 1:
            g = g[None]
        if len(g) == 0:
            return INF
        return self.field_value(self.distance_field(g), loc)

    def find_path(self, a, goals) -> Tuple[List[np.ndarray], float]:
        """Polyline (string-pulled descent of the field) and its geodesic distance."""
        loc = self.snap(a)
        g = np.asarray(goals, dtype=np.float64).reshape(-1, 3)
        if loc is None or loc.island < 0 or len(g) == 0:
            return [], INF
        df = self.distance_field(g)
        dist = self.field_value(df, loc)
        if not dist < INF:
            return [], INF
        _, R0, C0, f = df.parts[loc.island]
        L = self.layers[loc.layer]
        gp = df.goals[loc.island]
        r = int(math.floor((loc.z - self.z0) / self.cell)) - R0
        c = int(math.floor((loc.x - self.x0) / self.cell)) - C0
        h, w = f.shape
        cells = [(r, c)]
        seen = {(r, c)}
        for _ in range(h * w):
            best = f[r, c]
            nxt = None
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    if (dr or dc) and 0 <= rr < h and 0 <= cc < w and f[rr, cc] < best:
                        best, nxt = f[rr, cc], (rr, cc)
            if nxt is None or nxt in seen:
                break
            r, c = nxt
            seen.add(nxt)
            cells.append(nxt)
        xz = [np.array([loc.x, loc.z])]
        for rr, cc in cells[1:]:
            xz.append(np.array([self.x0 + (C0 + cc + 0.5) * self.cell,
                                self.z0 + (R0 + rr + 0.5) * self.cell]))
        end = gp[int(np.argmin(np.hypot(gp[:, 0] - xz[-1][0], gp[:, 1] - xz[-1][1])))]
        xz.append(np.asarray(end, dtype=np.float64))
        # string pulling: keep a point only when the straight line to the next breaks
        out = [xz[0]]
        i = 0
        while i < len(xz) - 1:
            j = i + 1
            while j + 1 < len(xz) and self._segment_ok(L, loc.island, xz[i], xz[j + 1]):
                j += 1
            out.append(xz[j])
            i = j
        pts = []
        for p in out:
            rr, cc = self._rc(p[0], p[1])
            rr -= L.r0
            cc -= L.c0
            hh, ww = L.height.shape
            yv = float(L.height[min(max(rr, 0), hh - 1), min(max(cc, 0), ww - 1)])
            if not np.isfinite(yv):
                yv = loc.y
            pts.append(np.array([p[0], yv, p[1]], dtype=np.float32))
        return pts, dist

    def topdown(self, meters_per_pixel: float, height: float, eps: float = 0.5) -> np.ndarray:
        lo, hi = self.bounds
        nz = max(1, int(math.ceil((hi[2] - lo[2]) / meters_per_pixel)))
        nx = max(1, int(math.ceil((hi[0] - lo[0]) / meters_per_pixel)))
        zs = lo[2] + (np.arange(nz) + 0.5) * meters_per_pixel
        xs = lo[0] + (np.arange(nx) + 0.5) * meters_per_pixel
        R = np.floor((zs - self.z0) / self.cell).astype(np.int64)
        C = np.floor((xs - self.x0) / self.cell).astype(np.int64)
        out = np.zeros((nz, nx), bool)
        for L in self.layers:
            h, w = L.nav.shape
            r = R - L.r0
            c = C - L.c0
            vr = (r >= 0) & (r < h)
            vc = (c >= 0) & (c < w)
            if not vr.any() or not vc.any():
                continue
            sub_nav = L.nav[np.ix_(r[vr], c[vc])]
            sub_h = L.height[np.ix_(r[vr], c[vc])]
            ok = sub_nav & (np.abs(sub_h - height) <= eps)
            blk = out[np.ix_(vr, vc)] | ok
            out[np.ix_(np.nonzero(vr)[0], np.nonzero(vc)[0])] = blk
        return out
