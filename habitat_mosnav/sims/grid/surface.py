"""The walkable surface: floor cells, layers, patches and islands.

The mesh is sampled into a 2.5D grid of ``cell`` metres: a cell holds one *node* per
standable surface (an up-facing surface within ``max_slope`` with no geometry between
``floor + max_climb`` and ``floor + height``; geometry above the agent, e.g. ceilings, is
ignored). Nodes that touch with a height step <= ``max_climb`` are connected. Connected
pieces that overlap themselves (two floors joined by a stair) are cut by height; pieces
are packed into 2D *layers* (pieces closer than the agent radius apart in different
ones), eroded by the agent radius (:mod:`.clearance`). Navigable cells form *patches*;
patches joined by seams (*portals*) form an *island*. A Recast/Detour navmesh can stand
in for the mesh (``walkable_only``: every triangle is floor, no erosion).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from habitat_mosnav.sims.grid.cells import (
    CLIMB_EPS,
    HEAD_EPS,
    AgentShape,
    Layer,
    Location,
    run_offsets,
)
from habitat_mosnav.sims.grid.clearance import layer_clearance


#: triangles whose normal is this close to horizontal (|n_y| below it: steeper than 72.5
#: degrees) are sampled by :func:`sample_walls`, along lines WALL_RISE metres apart in height
WALL_NY = 0.3
WALL_RISE = 0.1


def _chunks(per: np.ndarray, max_points: int):
    """Consecutive runs of triangle indices (one triangle at least) whose point counts
    ``per`` sum to at most ``max_points``: the samplers' chunks, bounding their memory."""
    cum = np.cumsum(per)
    start = 0
    while start < len(per):
        stop = max(
            start + 1,
            int(np.searchsorted(cum, (cum[start - 1] if start else 0) + max_points, "right")),
        )
        yield np.arange(start, min(stop, len(per)))
        start = stop


def sample_surface(tris: np.ndarray, spacing: float, max_points: int = 4_000_000):
    """Points covering every triangle with at most ``spacing`` gaps: a lattice along the
    two edges at the triangle's widest angle (each cut into pieces <= ``spacing``, so a
    long thin strip gets few rows, not a lattice as dense along both edges as its longest
    one), plus points <= ``spacing`` apart along the third edge.

    Yields (points, triangle index per point, triangles in this chunk)."""
    tris = np.asarray(tris)
    if len(tris) == 0:
        return
    opp = np.stack(
        [
            np.linalg.norm(tris[:, 2] - tris[:, 1], axis=1),
            np.linalg.norm(tris[:, 0] - tris[:, 2], axis=1),
            np.linalg.norm(tris[:, 1] - tris[:, 0], axis=1),
        ],
        axis=1,
    )  # edge opposite vertex k
    o = np.argmax(opp, axis=1)  # the widest angle faces the longest edge
    f = np.arange(len(tris))
    a, b, c = tris[f, o], tris[f, (o + 1) % 3], tris[f, (o + 2) % 3]
    n1 = np.maximum(1, np.ceil(opp[f, (o + 2) % 3] / spacing)).astype(np.int64)  # edge a-b
    n2 = np.maximum(1, np.ceil(opp[f, (o + 1) % 3] / spacing)).astype(np.int64)  # edge a-c
    m = np.maximum(1, np.ceil(opp[f, o] / spacing)).astype(np.int64)  # edge b-c
    # lattice rows i = 0..n1 hold j = 0..floor(n2 (n1 - i) / n1); then m + 1 points on b-c
    per = (n1 + 1) * (n2 + 2) // 2 + m + 2  # points per triangle, at most
    for t in _chunks(per, max_points):
        ti = np.repeat(t, n1[t] + 1)  # one entry per lattice row
        i = run_offsets(n1[t] + 1)
        cnt = (n2[ti] * (n1[ti] - i)) // n1[ti] + 1
        # each row starts on edge a-b and steps along a-c
        row0 = a[ti] + (b[ti] - a[ti]) * (i / n1[ti]).astype(np.float32)[:, None]
        step = (c[ti] - a[ti]) / n2[ti].astype(np.float32)[:, None]
        row = np.repeat(np.arange(len(ti)), cnt)
        j = run_offsets(cnt).astype(np.float32)
        lat = row0[row] + step[row] * j[:, None]
        pi = ti[row]
        ei = np.repeat(t, m[t] + 1)
        k = run_offsets(m[t] + 1)
        w = (k / m[ei]).astype(np.float32)[:, None]
        edge = b[ei] + (c[ei] - b[ei]) * w
        yield np.concatenate([lat, edge]).astype(np.float32), np.concatenate([pi, ei]), len(t)


def sample_walls(tris: np.ndarray, spacing: float, rise: float, max_points: int = 4_000_000):
    """Points on steep triangles (walls, furniture sides) along horizontal lines every
    ``rise`` metres of height, both end heights included, ``spacing`` apart along each
    line: as dense as :func:`sample_surface` across (x, z), where clearance is measured,
    sparser in height, where only "is there geometry in this height slab" is asked. For a
    face steeper than ``WALL_NY`` a line's points lie within ``rise * 0.32`` of the next
    line's in (x, z).

    Yields (points, triangle index per point, triangles in this chunk)."""
    order = np.argsort(tris[:, :, 1], axis=1, kind="stable")
    v = np.take_along_axis(tris, order[:, :, None], axis=1).astype(np.float64)  # by height
    y0, y1, y2 = v[:, 0, 1], v[:, 1, 1], v[:, 2, 1]
    nlev = np.ceil((y2 - y0) / rise).astype(np.int64) + 1
    reach = np.linalg.norm(v[:, 2] - v[:, 0], axis=1) + np.linalg.norm(v[:, 1] - v[:, 0], axis=1)
    est = nlev * (np.ceil(reach / spacing).astype(np.int64) + 1)  # points per triangle, at most
    for idx in _chunks(est, max_points):
        ti = np.repeat(idx, nlev[idx])
        k = run_offsets(nlev[idx])
        t = np.where(nlev[ti] > 1, k / np.maximum(nlev[ti] - 1, 1), 0.0)
        yl = y0[ti] + t * (y2[ti] - y0[ti])
        a, b, c = v[ti, 0], v[ti, 1], v[ti, 2]
        P = a + (c - a) * t[:, None]  # on the long edge (lowest to highest vertex)
        lo_h, hi_h = y1[ti] - y0[ti], y2[ti] - y1[ti]
        s1 = np.clip((yl - y0[ti]) / np.where(lo_h > 0, lo_h, 1.0), 0.0, 1.0)
        s2 = np.clip((yl - y1[ti]) / np.where(hi_h > 0, hi_h, 1.0), 0.0, 1.0)
        lower = (yl <= y1[ti]) & (lo_h > 0)
        Q = np.where(
            lower[:, None],
            a + (b - a) * s1[:, None],
            np.where((hi_h > 0)[:, None], b + (c - b) * s2[:, None], b),
        )
        m = np.ceil(np.linalg.norm(Q - P, axis=1) / spacing).astype(np.int64) + 1
        li = np.repeat(np.arange(len(ti)), m)
        u = run_offsets(m) / np.maximum(m[li] - 1, 1)
        pts = (P[li] + (Q[li] - P[li]) * u[:, None]).astype(np.float32)
        yield pts, ti[li], len(idx)


class Surface:
    """The navigable cells of one scene for one agent shape, in layers, patches and
    islands, with the portals between patches and the obstacle KD-trees (``trees``)."""

    def __init__(
        self,
        triangles: np.ndarray,
        agent: AgentShape,
        cell: float = 0.05,
        progress: bool = False,
        drop_roofs: bool = True,
        desc: str = "",
        walkable_only: bool = False,
    ):
        self.cell = float(cell)
        self.agent = agent
        self.drop_roofs = drop_roofs
        self.desc = desc
        # walkable_only: the triangles are a navmesh (already the agent's walkable, eroded
        # area): every triangle is floor, no clearance test, no erosion
        self.walkable_only = walkable_only
        tris = np.asarray(triangles, dtype=np.float32)
        if tris.ndim != 3 or tris.shape[1:] != (3, 3) or len(tris) == 0:
            raise ValueError("NavGrid needs triangles of shape (F, 3, 3)")
        lo = tris.reshape(-1, 3).min(0)
        hi = tris.reshape(-1, 3).max(0)
        pad = 3
        self.x0 = float(lo[0]) - pad * self.cell
        self.z0 = float(lo[2]) - pad * self.cell
        self.W = int(math.ceil((hi[0] - lo[0]) / self.cell)) + 2 * pad + 1
        self.H = int(math.ceil((hi[2] - lo[2]) / self.cell)) + 2 * pad + 1
        self.layers: List[Layer] = []
        self._build(tris, progress)

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

        keys_all, y_all, walk_all, x_all, z_all = [], [], [], [], []
        bar = None
        if progress or len(tris) > 200_000:
            from tqdm import tqdm

            bar = tqdm(
                total=len(tris),
                desc=f"navigability {self.desc}".strip(),
                unit="tri",
                leave=False,
                mininterval=1.0,
            )
        # steep faces by lines (most of a scene's area: walls), the rest by a lattice
        steep = np.abs(ny) < WALL_NY
        if self.walkable_only:
            steep[:] = False
        lat, lin = np.nonzero(~steep)[0], np.nonzero(steep)[0]
        chunks = [
            ((p, lat[t], n) for p, t, n in sample_surface(tris[lat], 0.7 * cell)),
            ((p, lin[t], n) for p, t, n in sample_walls(tris[lin], 0.7 * cell, WALL_RISE)),
        ]
        for pts, tidx, ntri in (c for gen in chunks for c in gen):
            if bar is not None:
                bar.update(ntri)
            c = np.floor((pts[:, 0] - self.x0) / cell).astype(np.int64)
            r = np.floor((pts[:, 2] - self.z0) / cell).astype(np.int64)
            k = r * self.W + c
            keys_all.append(k)
            y_all.append(pts[:, 1])
            x_all.append(pts[:, 0])
            z_all.append(pts[:, 2])
            walk_all.append(walkable_tri[tidx])
        if bar is not None:
            bar.close()
        ka = np.concatenate(keys_all)
        ya = np.concatenate(y_all)
        del keys_all, y_all
        self.ymin = float(ya.min()) if len(ya) else 0.0
        self.ymax = float(ya.max()) if len(ya) else 0.0
        span = self.ymax - self.ymin + 10.0
        # every surface sample sorted once by (cell, height): a cell's samples in a height
        # slab are one slice (stable: the generation order breaks ties)
        skey = ka * span + (ya.astype(np.float64) - self.ymin)
        order = np.argsort(skey, kind="stable")
        skey = skey[order]
        walk = order[np.concatenate(walk_all)[order]]
        del walk_all
        # obstacles at sub-cell precision: the samples' (x, z) in that order
        samples = (skey, np.concatenate(x_all)[order], np.concatenate(z_all)[order], span)
        del x_all, z_all, order

        # floor candidates: walkable samples per cell, merged when within max_climb (top kept)
        if len(walk) == 0:
            self._finish_empty()
            return
        kw, yw = ka[walk], ya[walk].astype(np.float64)
        del ka, ya, walk
        brk = np.ones(len(kw), bool)
        brk[1:] = (kw[1:] != kw[:-1]) | ((yw[1:] - yw[:-1]) > ag.max_climb + CLIMB_EPS)
        last = np.r_[np.nonzero(brk)[0][1:] - 1, len(kw) - 1]
        ck = kw[last]
        cy = yw[last]
        del kw, yw, brk

        # clearance: no sample in (floor + max_climb, floor + height)
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
            frac = np.asarray(
                ndimage.mean(self._covered.astype(np.float64), comp, np.arange(ncomp))
            )
            size = np.bincount(comp, minlength=ncomp)
            keep_comp = frac >= 0.5
            # only a scene with a real roofed floor (>= 1 m2) loses its open-sky pieces
            roofed_floor = (keep_comp & (size * self.cell**2 >= 1.0)).any()
            if roofed_floor and not keep_comp.all():
                idx = np.nonzero(keep_comp[comp])[0]
                nk, ny_ = nk[idx], ny_[idx]
                src, dst = self._edges(nk, ny_)
                n = len(nk)
                graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n)).tocsr()
                ncomp, comp = connected_components(graph, directed=False)
        pieces = self._split_overlaps(nk, ny_, graph, comp, ncomp)
        self._pack_layers(nk, ny_, pieces, src, dst, samples)

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

    def _pack_layers(self, nk, ny_, pieces: List[np.ndarray], src, dst, samples) -> None:
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
            crop = np.zeros(
                (
                    min(int(pr.max()) + gap + 1, self.H) - a0,
                    min(int(pc.max()) + gap + 1, self.W) - b0,
                ),
                bool,
            )
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
        skey, sx, sz, span = samples  # sorted by (cell, height)
        del samples
        self.trees: List[Any] = []
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
            sdf, tree, nav = layer_clearance(
                self,
                r0,
                r1,
                c0,
                c1,
                height,
                present,
                ghost,
                lr,
                lc,
                flags[sel],
                (skey, sx, sz, span),
                er,
            )
            self.trees.append(tree)
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
        for a, ra, ca, b, rb, cb in zip(
            pu.tolist(), ru.tolist(), cu.tolist(), pv.tolist(), rv.tolist(), cv.tolist()
        ):
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
        self.patch_neighbors = {
            p: sorted({q for (_, _, q, _, _) in lst}) for p, lst in self.portals.items()
        }
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
            self.island_center = [
                (self.x0 + (mx[i] + 0.5) * cell, self.z0 + (mz[i] + 0.5) * cell)
                for i in range(self.num_islands)
            ]
            self.island_radius_m = np.atleast_1d(rad).astype(float).tolist()
            self.island_y = np.atleast_1d(
                ndimage.mean(Y, isl, np.arange(self.num_islands))
            ).tolist()
        else:
            self.island_cells, self.island_center, self.island_radius_m, self.island_y = (
                [],
                [],
                [],
                [],
            )
        self._finish()

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
        self.trees = []
        self._finish()

    def _finish(self) -> None:
        self.island_area = np.asarray(self.island_cells, np.float64) * self.cell**2
        self.largest_island = int(np.argmax(self.island_area)) if len(self.island_area) else -1
        cells = [(li, np.argwhere(L.nav)) for li, L in enumerate(self.layers)]
        self.nav_index = cells  # for random sampling
        self.island_index: Dict[int, List[Tuple[int, np.ndarray]]] = {}
        self.total_cells = int(sum(len(c) for _, c in cells))
        if self.total_cells:
            lo = np.array([np.inf, np.inf, np.inf])
            hi = -lo
            for L in self.layers:
                if not L.nav.any():
                    continue
                rr, cc = np.nonzero(L.nav)
                ys = L.height[rr, cc]
                lo = np.minimum(
                    lo,
                    [
                        self.x0 + (L.c0 + cc.min()) * self.cell,
                        ys.min(),
                        self.z0 + (L.r0 + rr.min()) * self.cell,
                    ],
                )
                hi = np.maximum(
                    hi,
                    [
                        self.x0 + (L.c0 + cc.max() + 1) * self.cell,
                        ys.max(),
                        self.z0 + (L.r0 + rr.max() + 1) * self.cell,
                    ],
                )
            self.bounds = (lo.astype(np.float32), hi.astype(np.float32))
        else:
            self.bounds = (np.zeros(3, np.float32), np.zeros(3, np.float32))

    # ------------------------------------------------------------ cell look-ups
    def rc(self, x: float, z: float) -> Tuple[int, int]:
        return int(math.floor((z - self.z0) / self.cell)), int(
            math.floor((x - self.x0) / self.cell)
        )

    def cell_center(self, layer: int, r: int, c: int) -> Tuple[float, float]:
        L = self.layers[layer]
        return (self.x0 + (L.c0 + c + 0.5) * self.cell, self.z0 + (L.r0 + r + 0.5) * self.cell)

    def loc(self, li: int, r: int, c: int, x: float, z: float) -> Location:
        L = self.layers[li]
        p = int(L.patch[r, c])
        return Location(li, p, int(self.patch_island[p]), x, z, float(L.height[r, c]))

    def patch_at(self, li: int, x: float, z: float) -> int:
        L = self.layers[li]
        r = int(math.floor((z - self.z0) / self.cell)) - L.r0
        c = int(math.floor((x - self.x0) / self.cell)) - L.c0
        h, w = L.nav.shape
        if 0 <= r < h and 0 <= c < w:
            return int(L.patch[r, c])
        return -1

    def height_at(self, li: int, x: float, z: float, default: float) -> float:
        L = self.layers[li]
        r = int(math.floor((z - self.z0) / self.cell)) - L.r0
        c = int(math.floor((x - self.x0) / self.cell)) - L.c0
        h, w = L.height.shape
        y = float(L.height[min(max(r, 0), h - 1), min(max(c, 0), w - 1)])
        return y if np.isfinite(y) else default

    def segment_ok(self, li: int, patch: int, a, b) -> bool:
        """Whether the straight segment a -> b (x, z) stays on the cells of one patch."""
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

    def topdown(self, meters_per_pixel: float, height: float, eps: float = 0.5) -> np.ndarray:
        """Bool map (rows = z, columns = x from ``bounds[0]``) of navigable cells within
        ``eps`` of ``height``."""
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
