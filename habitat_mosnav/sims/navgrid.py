"""Navigability grid, islands, exact geodesics and sliding motion.

The mesh is sampled into a 2.5D grid of ``cell`` metres: a cell holds one *node* per
standable surface (an up-facing surface within ``max_slope`` with no geometry between
``floor + max_climb`` and ``floor + height``; geometry above the agent, e.g. ceilings, is
ignored). Nodes that touch with a height step <= ``max_climb`` are connected. Connected
pieces that overlap themselves (two floors joined by a stair) are cut by height; pieces
are packed into 2D *layers* (pieces closer than the agent radius apart in different
ones). Erosion is by exactly the agent radius: each cell centre's clearance is its
distance to the nearest obstacle point (surface samples in the agent's height slab off
the floor, floor-edge mid-points; a KD-tree), and a cell is navigable when some point of
it has clearance >= radius. Navigable cells form *patches*; patches joined by seams form
an *island*.

Geodesics: shortest paths in the eroded free space bend only on the arcs it makes around
obstacle corners. Nodes sit on those arcs (every 7.5 degrees, exactly the radius from the
corner) and on seam portals; node pairs that see each other (clearance along the segment,
``LOS_TOL`` slack) are the edges of a graph built at load. A goal set's *field* is one
multi-source Dijkstra over that graph (cached, LRU); a query is ``min |p - v| + D(v)`` over
the nodes and goals ``v`` that ``p`` sees, tried in increasing order of that sum, and the
path is the Dijkstra chain, so distances are those of the continuous free space up to
millimetres. Slopes and stairs count in 3D (segment lengths with their height change).
A fast-marching field (scikit-fmm) is the fallback for a point that sees no node. A
Recast/Detour navmesh can stand in for the mesh (``walkable_only``: no erosion).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

INF = float("inf")
#: slack on max_climb so that a riser of exactly max_climb (float rounding) is climbable
CLIMB_EPS = 0.01
#: geometry within this of the agent's head height (a table top at exactly that height)
#: does not block it
HEAD_EPS = 1e-3
#: a boundary cell is a corner when the clearance there curves by more than this (1/m):
#: an obstacle corner gives 1/radius, a straight wall 0, a round table of radius R 1/(R + r)
CORNER_CURVATURE = 0.5
#: corner edges must leave a corner within this |cos| of its boundary tangent
TANGENT_COS = 0.35
#: slack (m) on the clearance along a segment: chords between corner points, interpolation
LOS_TOL = 0.005
#: coarse sample spacing (m) of visibility tests, and how far clearance is measured
#: beyond the radius (it certifies coarse intervals in the open)
LOS_COARSE = 0.2
SDF_CAP = 0.5
#: rays per visibility polygon and their reach (m)
RAYS = 180
RAY_MAX = 15.0
#: patches with more node pairs than this only get edges shorter than LONG_EDGE (m)
MAX_NODE_PAIRS = 4_000_000
LONG_EDGE = 6.0


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
    patch: np.ndarray  # (h, w) int32 global patch id, -1 if not navigable
    clear: np.ndarray  # (h, w) float32 metres to the nearest non-navigable cell
    near_r: np.ndarray  # (h, w) int32 row of the nearest navigable cell (layer-local)
    near_c: np.ndarray
    # (h, w) float32 signed clearance of the cell centre: metres to the nearest obstacle
    # (> 0 on the floor, < 0 off it), capped at radius + SDF_CAP
    sdf: Optional[np.ndarray] = None


@dataclass
class Location:
    """A point snapped onto the grid: its layer, patch (2D connected region of one layer)
    and island (patches joined through seams, e.g. two floors and their stairs)."""

    layer: int
    patch: int
    island: int
    x: float
    z: float
    y: float

    def xyz(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z], dtype=np.float32)


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


def _lattice(n: int) -> np.ndarray:
    """Barycentric weights (m, 3) of the triangle lattice with n subdivisions per edge."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = (i + j) <= n
    i, j = i[keep], j[keep]
    return np.stack([n - i - j, i, j], axis=1).astype(np.float32) / float(n)


def sample_surface(tris: np.ndarray, spacing: float, max_points: int = 4_000_000):
    """Points covering every triangle with at most ``spacing`` gaps.

    Yields (points, triangle index per point, triangles in this chunk)."""
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
            yield pts, np.repeat(chunk, len(w)), len(chunk)


def _reach_tables(rays: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
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


def _reach_at(A: np.ndarray, B: np.ndarray, base: int, ang: float) -> float:
    """One source's reach (its tables A, B from offset ``base``) towards angle ``ang``
    (an np.arctan2 value): :meth:`NavGrid._sees_cols` for one point, in plain Python."""
    a = (ang + 2 * math.pi if ang < 0 else (ang if ang > 0 else 0.0)) * (RAYS / (2 * math.pi))  # np.mod
    fl = math.floor(a)
    k = base + fl % RAYS
    return float(A[k]) + (a - fl) * float(B[k])


class NavGrid:
    """Navigable area of one scene for one agent shape."""

    def __init__(self, triangles: np.ndarray, agent: AgentShape, cell: float = 0.05,
                 progress: bool = False, drop_roofs: bool = True, desc: str = "",
                 walkable_only: bool = False):
        tris = np.asarray(triangles, dtype=np.float32)
        if tris.ndim != 3 or tris.shape[1:] != (3, 3) or len(tris) == 0:
            raise ValueError("NavGrid needs triangles of shape (F, 3, 3)")
        self.cell = float(cell)
        self.agent = agent
        self.drop_roofs = drop_roofs
        self.desc = desc
        # walkable_only: the triangles are a navmesh (already the agent's walkable, eroded
        # area): every triangle is floor, no clearance test, no erosion
        self.walkable_only = walkable_only
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
        self._last_field: Tuple[Optional[bytes], Optional[DistanceField]] = (None, None)
        self._last_lift: Tuple[Optional[Location], Any] = (None, None)
        self._lock = threading.Lock()
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
        if self.walkable_only:
            walkable_tri[:] = True

        keys_all, y_all, keys_walk, y_walk, x_all, z_all = [], [], [], [], [], []
        bar = None
        if progress or len(tris) > 200_000:
            from tqdm import tqdm

            bar = tqdm(total=len(tris), desc=f"navigability {self.desc}".strip(), unit="tri",
                       leave=False, mininterval=1.0)
        for pts, tidx, ntri in sample_surface(tris, 0.7 * cell):
            if bar is not None:
                bar.update(ntri)
            c = np.floor((pts[:, 0] - self.x0) / cell).astype(np.int64)
            r = np.floor((pts[:, 2] - self.z0) / cell).astype(np.int64)
            k = r * self.W + c
            keys_all.append(k)
            y_all.append(pts[:, 1])
            x_all.append(pts[:, 0])
            z_all.append(pts[:, 2])
            w = walkable_tri[tidx]
            keys_walk.append(k[w])
            y_walk.append(pts[w, 1])
        if bar is not None:
            bar.close()
        ka = np.concatenate(keys_all)
        ya = np.concatenate(y_all).astype(np.float64)
        # every surface sample (cell key, x, z, y): obstacles at sub-cell precision
        self._samples = (ka, np.concatenate(x_all), np.concatenate(z_all), ya)
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
        brk[1:] = (kw[1:] != kw[:-1]) | ((yw[1:] - yw[:-1]) > ag.max_climb + CLIMB_EPS)
        grp = np.cumsum(brk) - 1
        last = np.r_[np.nonzero(brk)[0][1:] - 1, len(kw) - 1]
        ck = kw[last]
        cy = yw[last]
        del grp

        # clearance: no sample in (floor + max_climb, floor + height)
        skey = np.sort(ka * span + (ya - self.ymin))
        base = ck * span + (cy - self.ymin)
        lo_i = np.searchsorted(skey, base + ag.max_climb + CLIMB_EPS, side="right")
        hi_i = np.searchsorted(skey, base + ag.height - HEAD_EPS, side="left")
        stand = hi_i <= lo_i
        if self.walkable_only:
            stand[:] = True
        # covered: some geometry above the agent's head in the cell (indoors); roofs are not
        cell_end = np.searchsorted(skey, ck * span + (span - 1e-3), side="left")
        covered = (cell_end > hi_i)[stand]
        nk = ck[stand]
        ny_ = cy[stand].astype(np.float32)
        if self.drop_roofs and covered.any() and not self.walkable_only:
            # islands under open sky (a roof, the top of a ceiling slab) are dropped when
            # the scene has a roofed floor; scenes without any ceiling keep everything
            self._covered = covered
        else:
            self._covered = None
        if len(nk) == 0:
            self._finish_empty()
            return

        src, dst = self._edges(nk, ny_)
        n = len(nk)
        graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n)).tocsr()
        ncomp, comp = connected_components(graph, directed=False)

        if self._covered is not None:
            frac = np.asarray(ndimage.mean(self._covered.astype(np.float64), comp, np.arange(ncomp)))
            size = np.bincount(comp, minlength=ncomp)
            keep_comp = frac >= 0.5
            # only a scene with a real roofed floor (>= 1 m2) loses its open-sky pieces
            roofed_floor = (keep_comp & (size * self.cell ** 2 >= 1.0)).any()
            if roofed_floor and not keep_comp.all():
                idx = np.nonzero(keep_comp[comp])[0]
                nk, ny_ = nk[idx], ny_[idx]
                src, dst = self._edges(nk, ny_)
                n = len(nk)
                graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n)).tocsr()
                ncomp, comp = connected_components(graph, directed=False)
        pieces = self._split_overlaps(nk, ny_, graph, comp, ncomp)
        self._pack_layers(nk, ny_, pieces, src, dst)

    def _edges(self, nk: np.ndarray, ny_: np.ndarray):
        """One-directional edges (+x and +z neighbours) between nodes within max_climb."""
        srcs, dsts = [], []
        self._edge_dir = []
        for d, off in enumerate((1, self.W)):
            nb = nk + off
            s = np.searchsorted(nk, nb, side="left")
            e = np.searchsorted(nk, nb, side="right")
            for j in range(int((e - s).max(initial=0))):
                idx = s + j
                valid = idx < e
                sv = np.nonzero(valid)[0]
                dv = idx[valid]
                close = np.abs(ny_[dv] - ny_[sv]) <= self.agent.max_climb + CLIMB_EPS
                srcs.append(sv[close])
                dsts.append(dv[close])
                self._edge_dir.append(np.full(int(close.sum()), d, np.int8))
        if not srcs:
            self._edge_dir = np.zeros(0, np.int8)
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        self._edge_dir = np.concatenate(self._edge_dir)
        return np.concatenate(srcs), np.concatenate(dsts)

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

    def _pack_layers(self, nk, ny_, pieces: List[np.ndarray], src, dst) -> None:
        """Place pieces into 2D layers, erode by the radius, label patches, link seams."""
        cell = self.cell
        ag = self.agent
        n = len(nk)
        HW = self.H * self.W
        pieces = sorted(pieces, key=len, reverse=True)
        node_piece = np.empty(n, np.int64)
        occ: List[np.ndarray] = []  # per layer: occupied cells (H*W) bool
        piece_layer = np.empty(len(pieces), np.int64)
        # pieces that come closer than the erosion reach (e.g. a sofa seat next to the
        # floor) go to different layers, so that each one sees the other as an obstacle
        gap = int(math.ceil(ag.radius / cell)) + 4 if not self.walkable_only else 1
        for pid, nodes in enumerate(pieces):
            node_piece[nodes] = pid
            keys = nk[nodes]
            pr, pc = np.divmod(keys, self.W)
            a0, b0 = max(int(pr.min()) - gap, 0), max(int(pc.min()) - gap, 0)
            crop = np.zeros((min(int(pr.max()) + gap + 1, self.H) - a0, min(int(pc.max()) + gap + 1, self.W) - b0), bool)
            crop[pr - a0, pc - b0] = True
            crop = ndimage.binary_dilation(crop, iterations=gap)
            dr, dc = np.nonzero(crop)
            near = (dr + a0) * self.W + (dc + b0)
            for li, grid in enumerate(occ):
                if not grid[near].any():
                    break
            else:
                occ.append(np.zeros(HW, bool))
                li = len(occ) - 1
            occ[li][keys] = True
            piece_layer[pid] = li
        del occ
        node_layer = piece_layer[node_piece]
        # a node is interior ("core") when it has all four neighbours at a climbable step
        d = self._edge_dir
        flags = np.zeros((n, 4), bool)
        flags[src[d == 0], 0] = True
        flags[dst[d == 0], 1] = True
        flags[src[d == 1], 2] = True
        flags[dst[d == 1], 3] = True
        core_node = flags.all(1)
        seam = node_piece[src] != node_piece[dst]
        seam_src, seam_dst = src[seam], dst[seam]
        seam_nodes = np.unique(np.concatenate([seam_src, seam_dst]))
        any_core = np.zeros(HW, bool)
        any_core[nk[core_node]] = True

        # erosion by exactly the agent radius: clearance of each cell centre is its
        # distance to the nearest obstacle sample / floor-edge point (sub-cell), not a
        # count of blocked cells
        er = 0.0 if self.walkable_only else float(ag.radius)
        self.erode = er
        need = er / cell
        pad = int(math.ceil(need)) + 3
        ka, sx, sz, sy = self._samples
        # samples sorted by (cell, height): a cell's samples in a height slab are one slice
        span = self.ymax - self.ymin + 10.0
        skey = ka * span + (sy - self.ymin)
        order = np.argsort(skey, kind="stable")
        skey, sx, sz = skey[order], sx[order], sz[order]
        del order, ka, sy
        self._trees: List[Any] = []
        self.layers = []
        patch_layer: List[int] = []
        patch_bbox: List[Tuple[int, int, int, int]] = []
        base = 0
        rows_all, cols_all, patch_all, y_all = [], [], [], []
        nrows, ncols = np.divmod(nk, self.W)
        for li in range(int(node_layer.max()) + 1 if n else 0):
            sel = np.nonzero(node_layer == li)[0]
            r_, c_ = nrows[sel], ncols[sel]
            r0, r1 = max(int(r_.min()) - pad, 0), min(int(r_.max()) + pad + 1, self.H)
            c0, c1 = max(int(c_.min()) - pad, 0), min(int(c_.max()) + pad + 1, self.W)
            h, w = r1 - r0, c1 - c0
            lr, lc = r_ - r0, c_ - c0
            height = np.full((h, w), np.nan, np.float32)
            height[lr, lc] = ny_[sel]
            present = np.zeros((h, w), bool)
            present[lr, lc] = True
            ghost = np.zeros((h, w), bool)
            here = seam_nodes[node_layer[seam_nodes] == li]
            if len(here):
                # across a seam (a floor cut from the stairs above it) the free space goes
                # on in another layer: no obstacles there
                sm = np.ones((h, w), bool)
                sm[nrows[here] - r0, ncols[here] - c0] = False
                near = ndimage.distance_transform_edt(sm) <= need + 1
                ghost = near & ~present & any_core.reshape(self.H, self.W)[r0:r1, c0:c1]
            sdf, tree, nav = self._clearance(r0, r1, c0, c1, height, present, ghost, lr, lc, flags[sel],
                                             (skey, sx, sz, span), er)
            self._trees.append(tree)
            lab, nlab = ndimage.label(nav)
            patch = np.where(nav, lab - 1 + base, -1).astype(np.int32)
            for sl in ndimage.find_objects(lab):
                patch_layer.append(li)
                patch_bbox.append((sl[0].start, sl[0].stop, sl[1].start, sl[1].stop))
            base += nlab
            if nav.any():
                clear = (ndimage.distance_transform_edt(nav) * cell).astype(np.float32)
                _, ind = ndimage.distance_transform_edt(~nav, return_indices=True)
                near_r, near_c = ind[0].astype(np.int32), ind[1].astype(np.int32)
                rr, cc = np.nonzero(nav)
                rows_all.append(rr + r0)
                cols_all.append(cc + c0)
                patch_all.append(patch[rr, cc])
                y_all.append(height[rr, cc])
            else:
                clear = np.zeros((h, w), np.float32)
                near_r = np.full((h, w), -1, np.int32)
                near_c = np.full((h, w), -1, np.int32)
            self.layers.append(Layer(r0, c0, height, nav, patch, clear, near_r, near_c, sdf))
        self.num_patches = base
        self.patch_layer = np.asarray(patch_layer, np.int64)
        self.patch_bbox = patch_bbox

        # portals: seam edges whose two ends are both navigable, in different patches
        def patch_at(nodes):
            out = np.full(len(nodes), -1, np.int64)
            for li, L in enumerate(self.layers):
                m = node_layer[nodes] == li
                if m.any():
                    out[m] = L.patch[nrows[nodes[m]] - L.r0, ncols[nodes[m]] - L.c0]
            return out

        pu, pv = patch_at(seam_src), patch_at(seam_dst)
        ok = (pu >= 0) & (pv >= 0) & (pu != pv)
        pu, pv = pu[ok], pv[ok]
        ru, cu = nrows[seam_src[ok]], ncols[seam_src[ok]]
        rv, cv = nrows[seam_dst[ok]], ncols[seam_dst[ok]]
        self.portals: Dict[int, List[Tuple[int, int, int, int, int]]] = {}
        self.portal_map: Dict[Tuple[int, int, int], List[Tuple[int, int, int]]] = {}
        for a, ra, ca, b, rb, cb in zip(pu.tolist(), ru.tolist(), cu.tolist(),
                                        pv.tolist(), rv.tolist(), cv.tolist()):
            self.portals.setdefault(a, []).append((ra, ca, b, rb, cb))
            self.portals.setdefault(b, []).append((rb, cb, a, ra, ca))
            self.portal_map.setdefault((a, ra, ca), []).append((b, rb, cb))
            self.portal_map.setdefault((b, rb, cb), []).append((a, ra, ca))
        # islands: patches joined through portals (union-find)
        parent = list(range(self.num_patches))

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for a, b in zip(pu.tolist(), pv.tolist()):
            ra_, rb_ = find(a), find(b)
            if ra_ != rb_:
                parent[max(ra_, rb_)] = min(ra_, rb_)
        roots = np.array([find(i) for i in range(self.num_patches)], np.int64)
        uniq, self.patch_island = np.unique(roots, return_inverse=True)
        self.num_islands = len(uniq)
        self.patch_neighbors = {p: sorted({q for (_, _, q, _, _) in lst}) for p, lst in self.portals.items()}
        if rows_all:
            R = np.concatenate(rows_all)
            C = np.concatenate(cols_all)
            isl = self.patch_island[np.concatenate(patch_all)]
            Y = np.concatenate(y_all)
            cnt = np.bincount(isl, minlength=self.num_islands)
            mx = np.bincount(isl, weights=C, minlength=self.num_islands) / cnt
            mz = np.bincount(isl, weights=R, minlength=self.num_islands) / cnt
            d2 = (C - mx[isl]) ** 2 + (R - mz[isl]) ** 2
            rad = np.sqrt(np.asarray(ndimage.maximum(d2, isl, np.arange(self.num_islands)))) * cell
            self.island_cells = cnt.tolist()
            self.island_center = [(self.x0 + (mx[i] + 0.5) * cell, self.z0 + (mz[i] + 0.5) * cell)
                                  for i in range(self.num_islands)]
            self.island_radius_m = np.atleast_1d(rad).astype(float).tolist()
            self.island_y = np.atleast_1d(ndimage.mean(Y, isl, np.arange(self.num_islands))).tolist()
        else:
            self.island_cells, self.island_center, self.island_radius_m, self.island_y = [], [], [], []
        self._build_corner_graph()
        del self._samples
        self._finish()

    def _clearance(self, r0: int, r1: int, c0: int, c1: int, height: np.ndarray, present: np.ndarray,
                   ghost: np.ndarray, lr: np.ndarray, lc: np.ndarray, flags: np.ndarray, samples,
                   er: float):
        """Signed clearance of one layer's cell centres, the KD-tree of its obstacle points
        and the navigable cells: floor cells with a point of clearance >= ``er`` (the centre,
        or one of 6 x 6 points of a cell whose centre falls short by less than 0.75 cell, so
        that a gap a little wider than the agent stays open).

        Obstacle points: the (x, z) of every surface sample in a cell off this layer's floor
        lying between (floor + max_climb) and (floor + height), floor = the nearest floor
        cell's height, and the mid-point of each floor-cell side with no climbable neighbour
        and no such sample behind it (a floor edge or a drop). Seams are not obstacles."""
        from scipy.spatial import cKDTree

        cell, ag = self.cell, self.agent
        h, w = present.shape
        skey, sx, sz, span = samples
        dist_p, ind = ndimage.distance_transform_edt(~present, return_indices=True)
        hf = height[ind[0], ind[1]]
        reach = er / cell + 3.0
        # the samples of each cell around this layer's floor that lie in the agent's slab
        # above the nearest floor height: one slice of the (cell, height)-sorted samples
        cr, ccl = np.nonzero(~present & ~ghost & (dist_p <= reach))
        base = ((cr + r0) * self.W + (ccl + c0)) * span + (hf[cr, ccl].astype(np.float64) - self.ymin)
        lo_i = np.searchsorted(skey, base + ag.max_climb + CLIMB_EPS, side="right")
        cnt = np.maximum(np.searchsorted(skey, base + ag.height - HEAD_EPS, side="left") - lo_i, 0)
        tot = int(cnt.sum())
        m = np.repeat(lo_i - np.cumsum(cnt) + cnt, cnt) + np.arange(tot)
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
            pts.append(np.stack([self.x0 + (c0 + lc[b] + 0.5 + 0.5 * dc) * cell,
                                 self.z0 + (r0 + lr[b] + 0.5 + 0.5 * dr) * cell], axis=1))
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
        centres = np.stack([self.x0 + (c0 + qc + 0.5) * cell, self.z0 + (r0 + qr + 0.5) * cell], axis=1)
        d, _ = tree.query(centres, distance_upper_bound=cap)
        d = np.minimum(d, cap)
        sdf[qr, qc] = np.where(present[qr, qc], d, -d)
        nav = present & (sdf >= er - 1e-6)
        if er > 0:
            pr, pc = np.nonzero(present & ~nav & (sdf >= er - 0.75 * cell))
            if len(pr):
                sub = (np.arange(6) + 0.5) / 6.0
                ox, oz = np.meshgrid(sub, sub)
                px = self.x0 + (c0 + pc[:, None] + ox.reshape(1, -1)) * cell
                pz = self.z0 + (r0 + pr[:, None] + oz.reshape(1, -1)) * cell
                ds, _ = tree.query(np.stack([px.ravel(), pz.ravel()], axis=1), distance_upper_bound=er + 1e-3)
                hit = (ds.reshape(len(pr), -1) >= er).any(axis=1)
                nav[pr[hit], pc[hit]] = True
        return sdf, tree, nav

    # --------------------------------------------------------- corner graph
    def _build_corner_graph(self) -> None:
        """Nodes: points on the boundary of the eroded free space where it bends around an
        obstacle corner (the corners seen from cells next to the boundary where the
        clearance is curved; nodes on the arc of the radius around each), and the portal
        cells of seams. Edges: node pairs of one patch
        that see each other (straight segment with clearance >= radius) and leave both
        corners tangentially, plus the seam crossings. Shortest paths of the free space
        bend only at such corners, so Dijkstra over this graph gives the geodesic."""
        from scipy.spatial import cKDTree

        cell, er = self.cell, self.erode
        xz, ys, pat, nrm = [], [], [], []
        for li, L in enumerate(self.layers):
            S = L.sdf
            if S is None or not L.nav.any():
                continue
            lap = np.zeros_like(S)
            lap[1:-1, 1:-1] = (S[2:, 1:-1] + S[:-2, 1:-1] + S[1:-1, 2:] + S[1:-1, :-2] - 4 * S[1:-1, 1:-1]) / cell ** 2
            band = L.nav & (S <= er + 1.5 * cell) & (lap > CORNER_CURVATURE)
            rr, cc = np.nonzero(band)
            if not len(rr):
                continue
            p = np.stack([self.x0 + (L.c0 + cc + 0.5) * cell, self.z0 + (L.r0 + rr + 0.5) * cell], axis=1)
            tree = self._trees[li]
            if tree is None:
                continue
            d, idx = tree.query(p)
            if er > 0:
                # the obstacle corners these cells see; nodes all around each corner at
                # exactly the radius (every 7.5 degrees), where that corner is the nearest
                # obstacle, i.e. on the arc the eroded boundary makes there
                oc = np.unique(idx)
                o = tree.data[oc]
                ang = np.radians(np.arange(0.0, 360.0, 7.5))
                dirn = np.stack([np.cos(ang), np.sin(ang)], axis=1)
                q = (o[:, None, :] + (er + 1e-3) * dirn[None]).reshape(-1, 2)
                dq, _ = tree.query(q, distance_upper_bound=er + 0.01)
                keep = dq >= er - 1e-4
                q, qn = q[keep], np.tile(dirn, (len(o), 1))[keep]
                qr = np.floor((q[:, 1] - self.z0) / cell).astype(np.int64) - L.r0
                qc = np.floor((q[:, 0] - self.x0) / cell).astype(np.int64) - L.c0
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
        for a, lst in self.portals.items():
            for ra, ca, b, rb, cb in lst:
                for key in ((a, ra, ca), (b, rb, cb)):
                    if key not in seen:
                        seen[key] = len(pxz)
                        q, R, C = key
                        L = self.layers[int(self.patch_layer[q])]
                        pxz.append((self.x0 + (C + 0.5) * cell, self.z0 + (R + 0.5) * cell))
                        py.append(float(L.height[R - L.r0, C - L.c0]))
                        ppat.append(q)
                i, j = seen[(a, ra, ca)], seen[(b, rb, cb)]
                pairs.add((min(i, j), max(i, j)))
        if xz:
            cxz, cy, cp, cn = (np.concatenate(xz), np.concatenate(ys), np.concatenate(pat), np.concatenate(nrm))
            # one node per half cell of boundary
            key = np.stack([cp, np.floor(cxz[:, 0] / (0.5 * cell)), np.floor(cxz[:, 1] / (0.5 * cell))], axis=1)
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
        cuts = np.searchsorted(self.node_patch[order], np.arange(self.num_patches + 1))
        self.patch_nodes = {p: order[cuts[p]:cuts[p + 1]] for p in range(self.num_patches)
                            if cuts[p + 1] > cuts[p]}
        rows, cols, wts = [], [], []
        for (i, j) in sorted(pairs):
            rows.append(nc_ + i)
            cols.append(nc_ + j)
            wts.append(max(self._len3(self.node_xz[nc_ + i], self.node_y[nc_ + i],
                                      self.node_xz[nc_ + j], self.node_y[nc_ + j]), 1e-6))
        er_ = [np.asarray(rows, np.int64)], [np.asarray(cols, np.int64)], [np.asarray(wts, np.float64)]
        self.graph_truncated = False
        for p, idx in self.patch_nodes.items():
            m = len(idx)
            if m < 2:
                continue
            if m * (m - 1) // 2 <= MAX_NODE_PAIRS:
                ii, jj = np.triu_indices(m, 1)
            else:  # very large patches: edges up to a few metres (the field fills in)
                self.graph_truncated = True
                pr = cKDTree(self.node_xz[idx]).query_pairs(LONG_EDGE, output_type="ndarray")
                ii, jj = pr[:, 0], pr[:, 1]
            a, b = idx[ii], idx[jj]
            keep = self._tangent(a, self.node_xz[b]) & self._tangent(b, self.node_xz[a])
            a, b = a[keep], b[keep]
            li = int(self.patch_layer[p])
            for s in range(0, len(a), 20000):
                aa, bb = a[s:s + 20000], b[s:s + 20000]
                vis = self._los(li, self.node_xz[aa], self.node_xz[bb])
                aa, bb = aa[vis], bb[vis]
                er_[0].append(aa)
                er_[1].append(bb)
                er_[2].append(np.maximum(self._len3(self.node_xz[aa], self.node_y[aa],
                                                    self.node_xz[bb], self.node_y[bb]), 1e-6))
        self._edges_base = tuple(np.concatenate(x) for x in er_)
        # each node's visibility polygon, as free length along RAYS directions: a query
        # point sees a node when it lies within it (a table look-up, no ray marching)
        self.node_rays = np.zeros((self.num_nodes, RAYS), np.float32)
        for p, idx in self.patch_nodes.items():
            self.node_rays[idx] = self._cast(int(self.patch_layer[p]), self.node_xz[idx])

    @staticmethod
    def _len3(a, ya, b, yb):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        d = b - a
        dy = np.asarray(yb, np.float64) - np.asarray(ya, np.float64)
        return np.sqrt(d[..., 0] ** 2 + d[..., 1] ** 2 + dy ** 2)

    def _tangent(self, i: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Segments from nodes ``i`` towards ``other`` that leave a corner along its
        boundary (a shortest path bends around a corner, it does not turn back there)."""
        d = other - self.node_xz[i]
        ln = np.hypot(d[:, 0], d[:, 1])
        dot = np.abs(d[:, 0] * self.node_nrm[i, 0] + d[:, 1] * self.node_nrm[i, 1])
        return dot <= TANGENT_COS * np.maximum(ln, 1e-12)

    def _sdf_at(self, L: Layer, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Bilinear signed clearance at points (x, z) of a layer (-inf off its crop)."""
        S = L.sdf
        h, w = S.shape
        u = (x - self.x0) / self.cell - 0.5 - L.c0
        v = (z - self.z0) / self.cell - 0.5 - L.r0
        c = np.floor(u).astype(np.int64)
        r = np.floor(v).astype(np.int64)
        fu, fv = u - c, v - r
        ok = (c >= 0) & (r >= 0) & (c < w - 1) & (r < h - 1)
        c, r = np.clip(c, 0, w - 2), np.clip(r, 0, h - 2)
        val = (S[r, c] * (1 - fu) * (1 - fv) + S[r, c + 1] * fu * (1 - fv)
               + S[r + 1, c] * (1 - fu) * fv + S[r + 1, c + 1] * fu * fv)
        return np.where(ok, val, -np.inf)

    def _sdf_point(self, L: Layer, x: float, z: float) -> float:
        """:meth:`_sdf_at` for one point (plain Python: the per-step query path)."""
        S = L.sdf
        u = (x - self.x0) / self.cell - 0.5 - L.c0
        v = (z - self.z0) / self.cell - 0.5 - L.r0
        c, r = int(math.floor(u)), int(math.floor(v))
        h, w = S.shape
        if not (0 <= c < w - 1 and 0 <= r < h - 1):
            return -INF
        fu, fv = u - c, v - r
        # float32 values widened to float, as numpy's float32 scalar * float does
        return float(S.item(r, c) * (1 - fu) * (1 - fv) + S.item(r, c + 1) * fu * (1 - fv)
                     + S.item(r + 1, c) * (1 - fu) * fv + S.item(r + 1, c + 1) * fu * fv)

    def _los(self, li: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
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
        def_a = np.maximum(er - self._sdf_at(L, A[:, 0], A[:, 1]), 0.0)
        def_b = np.maximum(er - self._sdf_at(L, B[:, 0], B[:, 1]), 0.0)

        def bound(seg, ta):
            relax = np.maximum(np.maximum(def_a[seg] - ta, def_b[seg] - (ln[seg] - ta)), 0.0)
            return er - LOS_TOL - relax

        n = np.maximum(np.ceil(ln / LOS_COARSE).astype(np.int64), 1) + 1
        off = np.r_[0, np.cumsum(n)[:-1]]
        seg = np.repeat(np.arange(m), n)
        t = (np.arange(int(n.sum())) - off[seg]) / (n[seg] - 1)
        ta = ln[seg] * t
        s = self._sdf_at(L, A[seg, 0] + d[seg, 0] * t, A[seg, 1] + d[seg, 1] * t)
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
            sv = self._sdf_at(L, px, pz)
            good = sv >= thr
            tree = self._trees[li] if er > 0 else None
            if tree is not None and not good.all():
                # interpolation cuts the clearance short on a ridge (the middle of a gap
                # just wider than the agent): decide near-threshold samples exactly
                near = np.nonzero(~good & (sv >= thr - 0.75 * self.cell))[0]
                if len(near):
                    dq, _ = tree.query(np.stack([px[near], pz[near]], axis=1), distance_upper_bound=er + 1.0)
                    good[near] = dq >= thr[near]
            ok[sf[~good]] = False
        return ok

    def _cast(self, li: int, origins: np.ndarray) -> np.ndarray:
        """Free length (m, up to ``RAY_MAX``) of ``RAYS`` rays from each origin on layer
        ``li``: sphere tracing on the clearance (steps of its margin over the radius, at
        least half a cell, each sample checked as in :meth:`_los`)."""
        L = self.layers[li]
        o = np.asarray(origins, np.float64).reshape(-1, 2)
        n = len(o)
        out = np.zeros((n, RAYS), np.float32)
        if n == 0:
            return out
        er = self.erode
        ang = np.arange(RAYS) * (2 * math.pi / RAYS)
        dx, dz = np.tile(np.cos(ang), n), np.tile(np.sin(ang), n)
        ox, oz = np.repeat(o[:, 0], RAYS), np.repeat(o[:, 1], RAYS)
        deficit = np.repeat(np.maximum(er - self._sdf_at(L, o[:, 0], o[:, 1]), 0.0), RAYS)
        t = np.zeros(n * RAYS)
        last = np.zeros(n * RAYS)
        act = np.arange(n * RAYS)
        tree = self._trees[li] if er > 0 else None
        step_min = 0.5 * self.cell
        for _ in range(int(RAY_MAX / step_min) + 2):
            if not len(act):
                break
            ta = t[act]
            px, pz = ox[act] + dx[act] * ta, oz[act] + dz[act] * ta
            sv = self._sdf_at(L, px, pz)
            thr = er - LOS_TOL - np.maximum(deficit[act] - ta, 0.0)
            free = sv >= thr
            if tree is not None:
                near = np.nonzero(~free & (sv >= thr - 0.75 * self.cell))[0]
                if len(near):
                    dq, _ = tree.query(np.stack([px[near], pz[near]], axis=1), distance_upper_bound=er + 1.0)
                    free[near] = dq >= thr[near]
            last[act[free]] = ta[free]
            step = np.maximum((sv - thr) / (1.0 + math.sqrt(2.0)), step_min)
            t[act] = ta + step
            act = act[free & (ta + step <= RAY_MAX)]
        out[:] = last.reshape(n, RAYS)
        return out

    @staticmethod
    def _sees_cols(tab, base: np.ndarray, sx: np.ndarray, sz: np.ndarray, px: float, pz: float, slack: float):
        """Which sources see point (px, pz): it lies in their visibility polygon, within
        ``slack``; and by how much (reach - distance). ``tab``: flat reach tables
        (:func:`_reach_tables`; ray k of a source at ``base + k``); ``sx, sz``: float64
        source columns."""
        dx, dz = px - sx, pz - sz
        dist = np.hypot(dx, dz)
        a = np.mod(np.arctan2(dz, dx), 2 * math.pi) * (RAYS / (2 * math.pi))
        fl = np.floor(a)
        k = base + fl.astype(np.int64) % RAYS
        reach = tab[0][k] + (a - fl) * tab[1][k]
        return (reach >= dist - slack) | (dist <= slack), reach - dist

    def _finish_empty(self) -> None:
        self.layers = []
        self.num_patches = 0
        self.patch_layer = np.zeros(0, np.int64)
        self.patch_bbox = []
        self.patch_island = np.zeros(0, np.int64)
        self.portals, self.portal_map, self.patch_neighbors = {}, {}, {}
        self.island_cells, self.island_center = [], []
        self.island_radius_m, self.island_y = [], []
        self.num_islands = 0
        self.erode = 0.0
        self.node_xz, self.node_nrm = np.zeros((0, 2)), np.zeros((0, 2))
        self.node_y, self.node_patch = np.zeros(0), np.zeros(0, np.int64)
        self.num_nodes, self.patch_nodes, self.graph_truncated = 0, {}, False
        self._edges_base = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        self._finish()

    def _finish(self) -> None:
        self.island_area = np.asarray(self.island_cells, np.float64) * self.cell ** 2
        self.largest_island = int(np.argmax(self.island_area)) if len(self.island_area) else -1
        cells = [(li, np.argwhere(L.nav)) for li, L in enumerate(self.layers)]
        self._nav_index = cells  # for random sampling
        self._island_index: Dict[int, List[Tuple[int, np.ndarray]]] = {}
        self.total_cells = int(sum(len(c) for _, c in cells))
        if self.total_cells:
            lo = np.array([np.inf, np.inf, np.inf])
            hi = -lo
            for L in self.layers:
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

    def _loc(self, li: int, r: int, c: int, x: float, z: float) -> Location:
        L = self.layers[li]
        p = int(L.patch[r, c])
        return Location(li, p, int(self.patch_island[p]), x, z, float(L.height[r, c]))

    def snap(self, p: Sequence[float], max_y_delta: float = INF) -> Optional[Location]:
        """Nearest navigable point (3D distance, floors told apart by height); None if none."""
        x, y, z = float(p[0]), float(p[1]), float(p[2])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            return None
        R, C = self._rc(x, z)
        best = None
        best_d = INF
        for li, L in enumerate(self.layers):
            r, c = R - L.r0, C - L.c0
            h, w = L.nav.shape
            if 0 <= r < h and 0 <= c < w and L.nav[r, c]:
                dy = abs(float(L.height[r, c]) - y)
                if dy <= 0.5:
                    return self._loc(li, r, c, x, z)
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
        if abs(float(self.layers[li].height[r, c]) - y) > max_y_delta:
            return None
        return self._loc(li, r, c, cx, cz)

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

    def _island_cells(self, island: int) -> List[Tuple[int, np.ndarray]]:
        out = self._island_index.get(island)
        if out is None:
            patches = np.nonzero(self.patch_island == island)[0]
            out = []
            for li, L in enumerate(self.layers):
                cells = np.argwhere(np.isin(L.patch, patches[self.patch_layer[patches] == li]))
                if len(cells):
                    out.append((li, cells))
            self._island_index[island] = out
        return out

    def snap_to_island(self, p: Sequence[float], island: int) -> Optional[Location]:
        """Nearest navigable point of one island (3D distance to its cell centres; the
        point itself when it is navigable there); None when the island does not exist."""
        loc = self.snap(p)
        if loc is not None and loc.island == island and self.is_navigable(p):
            return loc
        if not 0 <= island < self.num_islands:
            return None
        x, y, z = (float(v) for v in np.asarray(p, np.float64).reshape(-1)[:3])
        best, arg = INF, None
        for li, cells in self._island_cells(island):
            L = self.layers[li]
            cx = self.x0 + (L.c0 + cells[:, 1] + 0.5) * self.cell
            cz = self.z0 + (L.r0 + cells[:, 0] + 0.5) * self.cell
            d = (cx - x) ** 2 + (cz - z) ** 2 + (L.height[cells[:, 0], cells[:, 1]] - y) ** 2
            k = int(np.argmin(d))
            if d[k] < best:
                best, arg = float(d[k]), (li, int(cells[k, 0]), int(cells[k, 1]), float(cx[k]), float(cz[k]))
        if arg is None:
            return None
        return self._loc(*arg)

    def random_point(self, rng: np.random.Generator, island: int = -1) -> np.ndarray:
        """Uniform over the navigable area (of one island when ``island`` ≥ 0)."""
        if not self.total_cells or island >= self.num_islands:
            return np.full(3, np.nan, np.float32)
        groups = self._nav_index if island < 0 else self._island_cells(island)
        total = sum(len(c) for _, c in groups)
        k = int(rng.integers(total))
        for li, cells in groups:
            if k < len(cells):
                r, c = cells[k]
                break
            k -= len(cells)
        L = self.layers[li]
        jx, jz = rng.random(2)
        x = self.x0 + (L.c0 + c + 0.1 + 0.8 * jx) * self.cell
        z = self.z0 + (L.r0 + r + 0.1 + 0.8 * jz) * self.cell
        return np.array([x, L.height[r, c], z], dtype=np.float32)

    def _patch_at(self, li: int, x: float, z: float) -> int:
        L = self.layers[li]
        r = int(math.floor((z - self.z0) / self.cell)) - L.r0
        c = int(math.floor((x - self.x0) / self.cell)) - L.c0
        h, w = L.nav.shape
        if 0 <= r < h and 0 <= c < w:
            return int(L.patch[r, c])
        return -1

    def _move_ok(self, li: int, patch: int, x: float, z: float) -> Optional[Tuple[int, int]]:
        """(layer, patch) reached at (x, z) from ``patch``: the same, or one across a seam."""
        if self._patch_at(li, x, z) == patch:
            return li, patch
        for q in self.patch_neighbors.get(patch, ()):
            lq = int(self.patch_layer[q])
            if self._patch_at(lq, x, z) == q:
                return lq, q
        return None

    def _segment_ok(self, li: int, patch: int, a, b) -> bool:
        L = self.layers[li]
        d = math.hypot(b[0] - a[0], b[1] - a[1])
        n = max(2, int(math.ceil(d / (0.3 * self.cell))) + 1)
        t = np.linspace(0.0, 1.0, n)
        xs = a[0] + (b[0] - a[0]) * t
        zs = a[1] + (b[1] - a[1]) * t
        r = np.floor((zs - self.z0) / self.cell).astype(np.int64) - L.r0
        c = np.floor((xs - self.x0) / self.cell).astype(np.int64) - L.c0
        h, w = L.nav.shape
        if r.min() < 0 or c.min() < 0 or r.max() >= h or c.max() >= w:
            return False
        return bool((L.patch[r, c] == patch).all())

    def _normal(self, li: int, x: float, z: float) -> np.ndarray:
        """Unit vector (x, z) pointing away from the nearest navmesh edge."""
        L = self.layers[li]
        r = int(math.floor((z - self.z0) / self.cell)) - L.r0
        c = int(math.floor((x - self.x0) / self.cell)) - L.c0
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

    def _height_at(self, li: int, x: float, z: float, default: float) -> float:
        L = self.layers[li]
        r = int(math.floor((z - self.z0) / self.cell)) - L.r0
        c = int(math.floor((x - self.x0) / self.cell)) - L.c0
        h, w = L.height.shape
        y = float(L.height[min(max(r, 0), h - 1), min(max(c, 0), w - 1)])
        return y if np.isfinite(y) else default

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
            if self._segment_ok(li, patch, p, tgt):
                p = tgt
            else:
                nsub = max(1, int(math.ceil(dist / (0.25 * self.cell))))
                d = delta / nsub
                for _ in range(nsub):
                    q = p + d
                    hit = self._move_ok(li, patch, q[0], q[1])
                    if hit is not None:
                        li, patch = hit
                        p = q
                        continue
                    if not sliding:
                        break
                    n = self._normal(li, p[0], p[1])
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
                        hit = self._move_ok(li, patch, q[0], q[1])
                        if hit is not None:
                            li, patch = hit
                            p = q
                            moved = True
                            break
                    if not moved:
                        break
        y = self._height_at(li, p[0], p[1], loc.y)
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
    def _patch_field(self, patch: int, sources: List[Tuple[float, float, float]]) -> Tuple[int, int, int, np.ndarray]:
        """Fast marching over one patch from point sources ``(x, z, start value)``.

        Sources are grouped in bands of start values (≤ 1 m apart); each band is one
        fast-marching run whose front starts as the exact ``min(|x - s| + v)`` around the
        sources, so the result is sub-cell accurate near them.
        """
        import skfmm

        cell = self.cell
        li = int(self.patch_layer[patch])
        L = self.layers[li]
        a0, a1, b0, b1 = self.patch_bbox[patch]
        a0, b0 = max(a0 - 1, 0), max(b0 - 1, 0)
        a1, b1 = min(a1 + 1, L.nav.shape[0]), min(b1 + 1, L.nav.shape[1])
        mask = L.patch[a0:a1, b0:b1] == patch
        xs = self.x0 + (L.c0 + b0 + np.arange(b1 - b0) + 0.5) * cell
        zs = self.z0 + (L.r0 + a0 + np.arange(a1 - a0) + 0.5) * cell
        r0_m = 0.75 * cell
        src = sorted(sources, key=lambda s: s[2])
        bands: List[List[Tuple[float, float, float]]] = []
        for s in src:
            if bands and s[2] <= bands[-1][0][2] + 1.0:
                bands[-1].append(s)
            else:
                bands.append([s])
        speed = self._patch_speed(L, a0, a1, b0, b1, mask)
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
                if speed is None:
                    d = skfmm.distance(ma, dx=cell, order=2)
                else:  # slopes and stairs: 3D path length, as on habitat-sim's navmesh
                    d = skfmm.travel_time(ma, speed, dx=cell, order=2)
                f = np.ma.filled(d, np.inf).astype(np.float64) + T
            except ValueError:
                f = np.where(mask, direct, np.inf)
            f[inside] = direct[inside]
            np.minimum(out, f, out=out)
        out[~mask] = np.inf
        return li, L.r0 + a0, L.c0 + b0, out

    def _patch_speed(self, L: Layer, a0: int, a1: int, b0: int, b1: int,
                     mask: np.ndarray) -> Optional[np.ndarray]:
        """1 / sqrt(1 + |grad h|^2) over a sloped patch (None when it is flat), so that
        fast marching measures the 3D length of a path; heights are smoothed over ~0.3 m
        so that a stair reads as its mean slope."""
        hh = L.height[a0:a1, b0:b1]
        vals = hh[mask]
        if len(vals) == 0 or float(vals.max() - vals.min()) < 0.05:
            return None
        sigma = max(1.0, 0.15 / self.cell)
        m = mask.astype(np.float64)
        h0 = np.where(mask, hh, 0.0).astype(np.float64)
        num = ndimage.gaussian_filter(h0, sigma, mode="nearest")
        den = ndimage.gaussian_filter(m, sigma, mode="nearest")
        hs = np.where(den > 1e-6, num / np.maximum(den, 1e-6), 0.0)
        gz, gx = np.gradient(hs, self.cell)
        g2 = np.minimum(gx ** 2 + gz ** 2, 4.0)  # at most a 63 degree slope
        speed = 1.0 / np.sqrt(1.0 + g2)
        return np.where(mask, speed, 1.0)

    def _fmm_field(self, goals: np.ndarray) -> DistanceField:
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
                src.append((self.x0 + (C + 0.5) * self.cell, self.z0 + (R + 0.5) * self.cell, v))
            part = self._patch_field(p, src)
            df.parts[p] = part
            _, R0, C0, f = part
            dirty: Dict[int, float] = {}
            for (ra, ca, q, rb, cb) in self.portals.get(p, ()):
                val = float(f[ra - R0, ca - C0])
                if not val < INF:
                    continue
                val += self.cell if (ra == rb or ca == cb) else self.cell * math.sqrt(2)
                sq = seeds.setdefault(q, {})
                if val < sq.get((rb, cb), INF) - 1e-4:
                    sq[(rb, cb)] = val
                    dirty[q] = min(dirty.get(q, INF), val)
            for q, v in dirty.items():
                heapq.heappush(heap, (v, q))
        return df

    def _compute_field(self, goals: np.ndarray) -> DistanceField:
        """Exact distances from the goal set to every corner node: each goal is joined to
        the nodes of its patch it sees, then one multi-source Dijkstra (scipy)."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import dijkstra

        df = DistanceField()
        N = self.num_nodes
        rows, cols, wts = list(map(list, ([self._edges_base[0]], [self._edges_base[1]], [self._edges_base[2]])))
        k = 0
        per_patch: Dict[int, List[Tuple[float, float, float, int]]] = {}
        for g in goals:
            loc = self.snap(g)
            if loc is None or loc.patch < 0:
                continue
            loc, _ = self._lift(loc)  # as a query point is (d(a, b) = d(b, a))
            gid = N + k
            k += 1
            per_patch.setdefault(loc.patch, []).append((loc.x, loc.z, loc.y, gid))
        for p, lst in per_patch.items():
            arr = np.asarray(lst, np.float64)
            rays = self._cast(int(self.patch_layer[p]), arr[:, :2])
            df.goal_rays[p] = rays
            idx = self.patch_nodes.get(p)
            if idx is None or not len(idx):
                continue
            L = self.layers[int(self.patch_layer[p])]
            tab, base = self._node_tables(), idx.astype(np.int64) * RAYS
            sx, sz = self.node_xz[idx, 0], self.node_xz[idx, 1]
            for j, (gx, gz, gy, gid) in enumerate(lst):
                # the nodes that see the goal: the same test as a query's, so d(a, b) = d(b, a)
                slack = (1.0 + math.sqrt(2.0)) * max(self.erode - self._sdf_point(L, gx, gz), 0.0) + 0.01
                vis = idx[self._sees_cols(tab, base, sx, sz, float(gx), float(gz), slack)[0]]
                rows.append(np.full(len(vis), int(gid), np.int64))
                cols.append(vis)
                wts.append(np.maximum(self._len3(np.array([gx, gz]), gy, self.node_xz[vis], self.node_y[vis]), 1e-6))
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
        dist, pred = dijkstra(graph, directed=False, indices=np.arange(N, N + k), min_only=True,
                              return_predecessors=True)[:2]
        df.node_d = dist[:N]
        df.pred = pred
        df.goal_pos = {int(i): (x, z, y) for lst in per_patch.values() for (x, z, y, i) in lst}
        return df

    def _candidates(self, df: DistanceField, p: int):
        """(node ids, their xz, y, D, then float64 x, z, y columns and ray-table offsets) of
        the nodes of patch ``p`` the goal set reaches (cached per field)."""
        c = df.cands.get(p)
        if c is None:
            idx = self.patch_nodes.get(p, np.zeros(0, np.int64))
            idx = idx[np.isfinite(df.node_d[idx])] if len(idx) else idx
            xz, ys = self.node_xz[idx], self.node_y[idx]
            cols = np.ascontiguousarray(np.asarray(xz, np.float64).T)
            c = (idx, xz, ys, df.node_d[idx], cols[0], cols[1], np.asarray(ys, np.float64),
                 idx.astype(np.int64) * RAYS)
            df.cands[p] = c
        return c

    def _node_tables(self) -> Tuple[np.ndarray, np.ndarray]:
        tab = getattr(self, "_node_tab", None)
        if tab is None or len(tab[0]) != self.node_rays.size:
            tab = self._node_tab = _reach_tables(self.node_rays)
        return tab

    @staticmethod
    def _first_seen(tab, base: list, dist: list, ang: list, slack: float) -> int:
        """Index of the first source that sees the point (:meth:`_sees_cols`, in plain
        Python from its distances and np.arctan2 angles), -1 if none."""
        A, B = tab
        for t, d in enumerate(dist):
            if d <= slack or _reach_at(A, B, base[t], ang[t]) >= d - slack:
                return t
        return -1

    def _best_goal(self, df: DistanceField, loc: Location, best: float, arg: int) -> Tuple[float, int]:
        """The goal part of :meth:`_best_corner` for a few goals, in plain Python (the same
        operations as the vectorised part, np.hypot / np.arctan2 kept)."""
        p, mx, mz, my, slack = loc.patch, loc.x, loc.z, loc.y, 0.01
        gx, gz, gy, (A, B), gbase = self._goal_cols(df, p)
        dx, dz = mx - gx, mz - gz
        dist, ang = np.hypot(dx, dz).tolist(), np.arctan2(dz, dx).tolist()
        keys, vis, edge = [], [], []
        for t, (x, z, y, b) in enumerate(zip(gx.tolist(), gz.tolist(), gy.tolist(), gbase.tolist())):
            ex, ez, ey = x - mx, z - mz, y - my
            k = math.sqrt(ex * ex + ez * ez + ey * ey)
            d = dist[t]
            reach = _reach_at(A, B, b, ang[t])
            v = reach >= d - slack or d <= slack
            if not v and k < best and reach - d > -0.5:
                edge.append(t)  # just outside its polygon: the segment itself decides
            keys.append(k)
            vis.append(v)
        if edge:
            ok = self._los(loc.layer, np.repeat(np.array([[mx, mz]]), len(edge), 0), df.goals[p][edge])
            for t, v in zip(edge, ok.tolist()):
                vis[t] = v
        j, kj = -1, INF
        for t, k in enumerate(keys):
            if vis[t] and (j < 0 or k < kj):
                j, kj = t, k
        if j >= 0 and kj <= best:
            best, arg = kj, int(df.goal_id[p][j])
        return best, arg

    def _goal_cols(self, df: DistanceField, p: int):
        """(x, z, y float64 columns, flat ray table, its offsets) of the goals of patch ``p``."""
        c = df.cands.get(("goals", p))
        if c is None:
            gxz = np.asarray(df.goals[p], np.float64)
            c = (np.ascontiguousarray(gxz[:, 0]), np.ascontiguousarray(gxz[:, 1]),
                 np.asarray(df.goal_y[p], np.float64), _reach_tables(df.goal_rays[p]),
                 np.arange(len(gxz), dtype=np.int64) * RAYS)
            df.cands[("goals", p)] = c
        return c

    def _best_corner(self, df: DistanceField, loc: Location) -> Tuple[float, int]:
        """(distance, first node or goal id): min |loc - v| + D(v) over the nodes and goals
        ``v`` whose visibility polygon holds ``loc`` (table look-ups, no search)."""
        loc, lifted = self._lift(loc)
        p = loc.patch
        mx, mz, my = loc.x, loc.z, loc.y
        slack = 0.01
        best, arg = INF, -1
        idx, _, _, dn, fx, fz, fy, base = self._candidates(df, p)
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
            tab = self._node_tables()
            sub = np.argpartition(key, 47)[:48] if n > 64 else np.arange(n)
            # in increasing key order (stable: ties as argmin takes them), one at a time
            cs = sub[np.argsort(key[sub], kind="stable")]
            dx, dz = mx - fx[cs], mz - fz[cs]
            dist, ang = np.hypot(dx, dz), np.arctan2(dz, dx)
            # the first few one at a time (the winner is often among them), then the rest at once
            j = self._first_seen(tab, base[cs[:8]].tolist(), dist[:8].tolist(), ang[:8].tolist(), slack)
            if j < 0 and len(cs) > 8:
                vis = self._sees_cols(tab, base[cs[8:]], fx[cs[8:]], fz[cs[8:]], mx, mz, slack)[0]
                if vis.any():
                    j = 8 + int(np.argmax(vis))
            if j >= 0:
                j = int(cs[j])
            elif len(sub) < n:
                vis = self._sees_cols(tab, base, fx, fz, mx, mz, slack)[0]
                if vis.any():
                    j = int(np.argmin(np.where(vis, key, np.inf)))
            if j >= 0:
                best, arg = float(key[j]), int(idx[j])
        if p in df.goals:
            gx, gz, gy, gtab, gbase = self._goal_cols(df, p)
            if len(gx) <= 32:
                best, arg = self._best_goal(df, loc, best, arg)
            else:
                key = np.sqrt((gx - mx) ** 2 + (gz - mz) ** 2 + (gy - my) ** 2)
                vis, short = self._sees_cols(gtab, gbase, gx, gz, mx, mz, slack)
                # a goal just outside its polygon (rays are 2 degrees apart) but closer than the
                # best found: test the segment itself, as from the other end (symmetry)
                edge = np.nonzero(~vis & (key < best) & (short > -0.5))[0]
                if len(edge):
                    vis = vis.copy()
                    me = np.array([mx, mz])
                    vis[edge] = self._los(loc.layer, np.repeat(me[None], len(edge), 0), df.goals[p][edge])
                if vis.any():
                    j = int(np.argmin(np.where(vis, key, np.inf)))
                    if key[j] <= best:
                        best, arg = float(key[j]), int(df.goal_id[p][j])
        if arg == -1:
            # -2: sees nothing it could reach through; the caller falls back to fast marching
            return INF, (-2 if (n or p in df.goals) else -1)
        return best + lifted, arg

    def _lift(self, loc: Location) -> Tuple[Location, float]:
        """A query point closer than the radius to an obstacle (the agent may stand between
        cell centres there) moved straight away from it onto the eroded free space, as a
        navmesh point always is: (that point, the distance moved)."""
        er = self.erode
        tree = self._trees[loc.layer] if er > 0 and loc.layer < len(self._trees) else None
        if tree is None or self._sdf_point(self.layers[loc.layer], loc.x, loc.z) >= er + 0.5 * LOS_TOL:
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

    def _best_corner_los(self, df: DistanceField, loc: Location) -> Tuple[float, int]:
        """As :meth:`_best_corner`, with every candidate's segment tested (no visibility
        tables): candidates in increasing order of |loc - v| + D(v), the first one seen wins.
        Slower; for paths, whose first leg must be free exactly."""
        loc, lifted = self._lift(loc)
        p = loc.patch
        me = np.array([loc.x, loc.z])
        idx, xz, ys, dn = self._candidates(df, p)[:4]
        ids, pts, key = [idx], [xz], [self._len3(me, loc.y, xz, ys) + dn + lifted]
        if p in df.goals:
            ids.append(df.goal_id[p])
            pts.append(df.goals[p])
            key.append(self._len3(me, loc.y, df.goals[p], df.goal_y[p]) + lifted)
        ids, pts, key = np.concatenate(ids), np.concatenate(pts), np.concatenate(key)
        if not len(ids):
            return INF, -1
        order = np.argsort(key, kind="stable")
        for s in range(0, len(order), 64):
            o = order[s:s + 64]
            vis = self._los(loc.layer, np.repeat(me[None], len(o), 0), pts[o])
            if vis.any():
                j = int(o[int(np.argmax(vis))])
                return float(key[j]), int(ids[j])
        return INF, -2

    def field_value(self, df: DistanceField, loc: Location) -> float:
        val, first = self._best_corner(df, loc)
        if first == -2 or (self.graph_truncated and val < INF):
            fm = self._fmm_value(self._fmm(df), loc)
            return fm if first == -2 else min(val, fm)
        return val

    def _fmm(self, df: DistanceField) -> DistanceField:
        if df.fmm is None:
            goals = [(x, y, z) for (x, z, y) in df.goal_pos.values()]
            df.fmm = self._fmm_field(np.asarray(goals, np.float64).reshape(-1, 3))
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
            df = self._field_cache.get(key)
            if df is not None:
                self._field_cache.move_to_end(key)
                self._last_field = (raw, df)
                return df
        df = self._compute_field(g)
        with self._lock:
            self._field_cache[key] = df
            while len(self._field_cache) > max(1, self.field_cache_size):
                self._field_cache.popitem(last=False)
            self._last_field = (raw, df)
        return df

    def _fmm_value(self, df: DistanceField, loc: Location) -> float:
        part = df.parts.get(loc.patch)
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
        # within a cell or so of a goal, the straight distance is exact
        gp = df.goals.get(loc.patch)
        if gp is not None:
            dmin = float(np.min(np.hypot(gp[:, 0] - loc.x, gp[:, 1] - loc.z)))
            if dmin < 1.5 * self.cell:
                return dmin
        return float(val)

    def geodesic_distance(self, a, goals) -> float:
        loc = self.snap_cached(a)
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
        loc = self.snap(a)
        g = np.asarray(goals, dtype=np.float64).reshape(-1, 3)
        if loc is None or loc.patch < 0 or len(g) == 0:
            return [], INF
        df = self.distance_field(g)
        val, j = self._best_corner_los(df, loc)
        if j == -2:
            return self._fmm_path(loc, self._fmm(df))
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
            pts.append(np.array([self.node_xz[j, 0], self.node_y[j], self.node_xz[j, 1]], np.float32))
            j = int(df.pred[j])
        return pts, val

    def _fmm_path(self, loc: Location, df: DistanceField) -> Tuple[List[np.ndarray], float]:
        """Fallback polyline: steepest descent of a fast-marching field, string-pulled."""
        dist = self._fmm_value(df, loc)
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

        R, C = self._rc(loc.x, loc.z)
        p = loc.patch
        nodes = [(p, R, C)]
        seen = {(p, R, C)}
        cur = value(p, R, C)
        for _ in range(self.H * self.W):
            best, nxt = cur, None
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    if dr or dc:
                        v = value(p, R + dr, C + dc)
                        if v < best:
                            best, nxt = v, (p, R + dr, C + dc)
            for q, Rq, Cq in self.portal_map.get((p, R, C), ()):
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
            xz = (np.array([loc.x, loc.z]) if i == 0 else
                  np.array([self.x0 + (Cq + 0.5) * self.cell, self.z0 + (Rq + 0.5) * self.cell]))
            if not runs or runs[-1][0] != q:
                runs.append((q, []))
            runs[-1][1].append(xz)
        if gp is not None:
            last = runs[-1][1][-1]
            end = gp[int(np.argmin(np.hypot(gp[:, 0] - last[0], gp[:, 1] - last[1])))]
            runs[-1][1].append(np.asarray(end, dtype=np.float64))
        pts: List[np.ndarray] = []
        for q, xz in runs:
            li = int(self.patch_layer[q])
            idx = [0]
            i = 0
            while i < len(xz) - 1:
                j = i + 1
                while j + 1 < len(xz) and self._segment_ok(li, q, xz[i], xz[j + 1]):
                    j += 1
                idx.append(j)
                i = j
            # local refinement: move each corner to the descent point between its
            # neighbours that shortens the polyline (the greedy pull cuts corners late)
            for _ in range(2):
                for k in range(1, len(idx) - 1):
                    a, c = xz[idx[k - 1]], xz[idx[k + 1]]
                    best_m = idx[k]
                    best_len = (np.linalg.norm(xz[best_m] - a) + np.linalg.norm(c - xz[best_m]))
                    for m in range(idx[k - 1] + 1, idx[k + 1]):
                        ln = np.linalg.norm(xz[m] - a) + np.linalg.norm(c - xz[m])
                        if ln < best_len - 1e-9 and self._segment_ok(li, q, a, xz[m]) \
                                and self._segment_ok(li, q, xz[m], c):
                            best_m, best_len = m, ln
                    idx[k] = best_m
            out = [xz[i] for i in idx]
            for pt in out:
                y = self._height_at(li, pt[0], pt[1], loc.y)
                pts.append(np.array([pt[0], y, pt[1]], dtype=np.float32))
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
            vr = np.nonzero((r >= 0) & (r < h))[0]
            vc = np.nonzero((c >= 0) & (c < w))[0]
            if not len(vr) or not len(vc):
                continue
            sub_nav = L.nav[np.ix_(r[vr], c[vc])]
            sub_h = L.height[np.ix_(r[vr], c[vc])]
            ok = sub_nav & (np.abs(sub_h - height) <= eps)
            out[np.ix_(vr, vc)] |= ok
        return out
