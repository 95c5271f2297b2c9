"""Read the walkable triangles of a Recast/Detour ``.navmesh`` (habitat-sim's binary file).

habitat-sim saves a ``MSET`` set header (version 1, or 2 with its NavMeshSettings), then
per tile a small header (tile ref, data size) and the Detour tile data: ``dtMeshHeader``
(magic ``DNAV``, version 7), vertices, polygons, links, detail meshes, detail vertices and
detail triangles. Tiles are located by their ``DNAV`` magic so that the set-header
variants (settings block, 32/64-bit tile refs) need no guessing; each tile's sizes are
checked against its declared data size.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import List, Tuple

import numpy as np

from habitat_mosnav.api import AGENT_HEIGHT, AGENT_RADIUS

_SET_MAGIC = (ord("M") << 24) | (ord("S") << 16) | (ord("E") << 8) | ord("T")
_TILE_MAGIC = (ord("D") << 24) | (ord("N") << 16) | (ord("A") << 8) | ord("V")
_TILE_VERSION = 7
_HEADER = struct.Struct("<5iI9i3f3f3ff")  # dtMeshHeader, 100 bytes
_POLY = 32  # dtPoly with DT_VERTS_PER_POLYGON = 6
_DETAIL = 12  # dtPolyDetail (10 bytes, 4-aligned)
_BVNODE = 16
_OFFMESH = 36
_POLYTYPE_OFFMESH = 1
_EXT_LINK = 0x8000  # dtPoly.neis flag: the neighbour is in another tile


class NavMeshError(RuntimeError):
    """A .navmesh that cannot be read; the message names the file and the problem."""


class NavMeshUnsupported(NavMeshError):
    """A well-formed .navmesh of a kind this reader does not answer on (another set
    version, several tiles): the CPU simulator may compute navigability from the mesh."""


def _a4(n: int) -> int:
    return (n + 3) & ~3


@dataclass
class NavMeshTile:
    """One Detour tile: polygons over shared vertices, their neighbours and detail meshes."""

    verts: np.ndarray  # (V, 3) float32 polygon vertices
    polys: List[Tuple[int, ...]]  # vertex indices of each ground polygon (3..6, Detour's order)
    neis: List[
        Tuple[int, ...]
    ]  # per edge j (verts[j] -> verts[j+1]): neighbour poly, -1 wall, -2 other tile
    detail: List[np.ndarray]  # per polygon (k, 3, 3) float32 detail triangles (the surface heights)
    detail_flags: List[Tuple[int, ...]]  # per detail triangle: Detour's edge flags byte
    bmin: np.ndarray  # (3,) tile bounds
    bmax: np.ndarray
    walkable_climb: float


@dataclass
class NavMeshData:
    """A habitat-sim ``.navmesh``: its tiles as written (one for every navmesh habitat-sim builds)."""

    path: str
    tiles: List[NavMeshTile] = field(default_factory=list)

    def triangles(self) -> np.ndarray:
        """Walkable detail triangles (T, 3, 3) float32 of every tile."""
        return np.concatenate([d for t in self.tiles for d in t.detail]).astype(np.float32)


#: vertex coordinates beyond this (m) are refused: no scene is 100 km wide, and squares of
#: larger ones overflow the float32 arithmetic of areas and distances
MAX_COORDINATE = 1e5
#: tiles a navmesh set may declare (habitat-sim writes one; Detour allocates all of them)
MAX_TILES = 1 << 12
#: a polygon corner may turn the wrong way by this much (sine of the angle): float rounding
#: of collinear corners, never a concave polygon
_CONVEX_SLACK = 1e-3
#: a vertex may lie this far (m) outside its tile's bounds (float rounding)
_BOUNDS_SLACK = 0.01


def read_navmesh(path: str) -> NavMeshData:
    """Parse a habitat-sim/Recast ``.navmesh`` set file and validate it as Detour needs it
    (one-line :class:`NavMeshError` naming the file, tile and field otherwise)."""
    out = NavMeshData(path)
    for raw, _where in _checked_tiles(path):
        out.tiles.append(_build_tile(raw))
    return out


def validate_navmesh(path: str, detour: bool = False) -> int:
    """The checks of :func:`read_navmesh` without building its per-polygon lists (cheap:
    numpy over the file's arrays); returns the number of walkable polygons. ``detour``:
    also what only Detour (habitat-sim) reads, the BV tree's quantised boxes, which must
    hold their polygons relative to the tile's ``bmin`` (else its queries miss them)."""
    tiles = _checked_tiles(path)
    if detour:
        for k, (raw, where) in enumerate(tiles):
            _check_bv_tree(path, k, where, raw)
    return sum(len(raw.ground) for raw, _ in tiles)


def _check_bv_tree(path: str, number: int, where: int, raw: "_RawTile") -> None:
    if not len(raw.bv_nodes):
        return
    # the tree is the root's span (its escape index); Detour allocates more nodes than it
    # fills and leaves the rest zero
    root = int(raw.bv_nodes[0, 6])
    nodes = raw.bv_nodes[: -root if root < 0 else 1]
    nodes = nodes[nodes[:, 6] >= 0]
    q = raw.bv_quant
    v = raw.verts.astype(np.float64)
    for node in nodes:
        p = int(node[6])
        pts = v[raw.polys[p, : int(raw.nverts[p])]]
        qx = (pts[:, 0] - raw.bmin[0]) * q
        qz = (pts[:, 2] - raw.bmin[2]) * q
        if (
            qx.min() < node[0] - 2
            or qx.max() > node[3] + 2
            or qz.min() < node[2] - 2
            or qz.max() > node[5] + 2
        ):
            raise NavMeshError(
                f"{path}: tile {number} (byte {where}): field 'bvTree': the box of polygon "
                f"{p} does not hold it relative to the tile's bmin {_fmt(raw.bmin)} "
                "(bounds edited after the tree was built?); Detour's queries would miss it"
            )


def _checked_tiles(path: str):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise NavMeshError(f"cannot read navmesh {path}: {exc}") from None
    if len(data) < 40 or struct.unpack_from("<i", data, 0)[0] != _SET_MAGIC:
        raise NavMeshError(f"{path}: not a Recast/Detour navmesh set (magic 'MSET' missing)")
    version, num_tiles = struct.unpack_from("<ii", data, 4)
    if version not in (1, 2):
        raise NavMeshUnsupported(f"{path}: navmesh set version {version} is not supported (1 or 2)")
    orig = struct.unpack_from("<3f", data, 12)
    tile_w, tile_h, max_tiles, max_polys = struct.unpack_from("<ffii", data, 24)
    if not all(math.isfinite(v) for v in orig + (tile_w, tile_h)) or not (
        tile_w > 0 and tile_h > 0
    ):
        raise NavMeshError(
            f"{path}: set header: field 'params' (origin {orig}, tile size "
            f"{tile_w} x {tile_h}) must be finite, the tile size > 0"
        )
    if not 1 <= max_tiles <= MAX_TILES or max_polys < 1:
        raise NavMeshError(
            f"{path}: set header: fields 'maxTiles' {max_tiles} / 'maxPolys' {max_polys} "
            f"must be in 1..{MAX_TILES} / >= 1"
        )
    if (max_tiles - 1).bit_length() + (max_polys - 1).bit_length() > 22:
        raise NavMeshError(
            f"{path}: set header: fields 'maxTiles' {max_tiles} and 'maxPolys' {max_polys} "
            "leave Detour's polygon references fewer than 10 salt bits"
        )
    magic = struct.pack("<i", _TILE_MAGIC)
    tiles = []
    pos = data.find(magic, 12)
    while pos >= 4:
        data_size = struct.unpack_from("<i", data, pos - 4)[0]
        tile = data[pos : pos + data_size]
        if data_size < _HEADER.size or len(tile) != data_size:
            raise NavMeshError(
                f"{path}: tile {len(tiles)} (byte {pos}): field 'dataSize' {data_size}: "
                "the tile is truncated"
            )
        raw = _read_tile(path, tile, pos, len(tiles))
        if len(raw.polys) > max_polys:
            raise NavMeshError(
                f"{path}: tile {len(tiles)}: field 'polyCount' {len(raw.polys)} exceeds "
                f"the set header's 'maxPolys' {max_polys}"
            )
        tiles.append((raw, pos))
        pos = data.find(magic, pos + data_size)
    if not tiles:
        raise NavMeshError(f"{path}: no Detour tiles ('DNAV') found")
    if len(tiles) != num_tiles or num_tiles > max_tiles:
        raise NavMeshError(
            f"{path}: set header: field 'numTiles' {num_tiles} does not match the "
            f"{len(tiles)} tile(s) in the file (maxTiles {max_tiles})"
        )
    if not any(len(raw.ground) for raw, _ in tiles):
        raise NavMeshError(f"{path}: navmesh has no walkable polygons")
    return tiles


def read_navmesh_triangles(path: str) -> np.ndarray:
    """Walkable triangles (T, 3, 3) float32 of a habitat-sim/Recast ``.navmesh`` file."""
    return read_navmesh(path).triangles()


@dataclass
class _RawTile:
    """One tile's arrays as stored, validated (see :func:`_read_tile`)."""

    verts: np.ndarray  # (V, 3) float32
    polys: np.ndarray  # (P, 6) vertex indices
    neis: np.ndarray  # (P, 6) Detour's neighbour words
    nverts: np.ndarray  # (P,) corners per polygon
    ground: List[int]  # ground polygons (not off-mesh connections), in index order
    vert_base: np.ndarray  # per detail mesh
    tri_base: np.ndarray
    tri_count: np.ndarray
    dverts: np.ndarray  # (DV, 3) float32
    dtris: np.ndarray  # (DT, 4) uint8: three corner indices and the edge flags
    bmin: np.ndarray
    bmax: np.ndarray
    walkable_climb: float
    bv_nodes: np.ndarray  # (N, 7): quantised bmin (3), bmax (3), polygon or -escape
    bv_quant: float


def _read_tile(path: str, tile: bytes, where: int, number: int = 0) -> _RawTile:
    """Parse one Detour tile and check what the simulators (and Detour) index with: finite
    coordinates inside the tile's bounds, vertex, neighbour, detail-mesh, BV-tree and
    off-mesh indices in range, convex polygons (positive area: clockwise seen from +Y)."""

    def fail(fld: str, msg: str) -> NavMeshError:
        return NavMeshError(f"{path}: tile {number} (byte {where}): field '{fld}': {msg}")

    h = _HEADER.unpack_from(tile, 0)
    (
        magic,
        version,
        _x,
        _y,
        _layer,
        _uid,
        poly_count,
        vert_count,
        max_links,
        dm_count,
        dv_count,
        dt_count,
        bv_count,
        om_count,
        om_base,
    ) = h[:15]
    if magic != _TILE_MAGIC or version != _TILE_VERSION:
        raise NavMeshError(
            f"{path}: tile {number} (byte {where}): Detour version {version}, "
            f"expected {_TILE_VERSION}"
        )
    counts = (
        ("polyCount", poly_count),
        ("vertCount", vert_count),
        ("maxLinkCount", max_links),
        ("detailMeshCount", dm_count),
        ("detailVertCount", dv_count),
        ("detailTriCount", dt_count),
        ("bvNodeCount", bv_count),
        ("offMeshConCount", om_count),
        ("offMeshBase", om_base),
    )
    for name, value in counts:
        if value < 0:
            raise fail(name, f"{value} is negative")
    floats = (
        ("walkableHeight", h[15]),
        ("walkableRadius", h[16]),
        ("walkableClimb", h[17]),
        ("bmin", h[18:21]),
        ("bmax", h[21:24]),
        ("bvQuantFactor", h[24]),
    )
    for name, value in floats:
        vals = value if isinstance(value, tuple) else (value,)
        if not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in vals):
            raise fail(name, f"{_fmt(vals)} must be finite (within ±{MAX_COORDINATE:g})")
    climb = float(h[17])
    bmin, bmax = np.array(h[18:21], np.float64), np.array(h[21:24], np.float64)
    if climb < 0 or h[15] < 0 or h[16] < 0:
        raise fail("walkableClimb", "the agent's height, radius and climb must be >= 0")
    if (bmin > bmax).any():
        raise fail("bmin", f"{_fmt(bmin)} exceeds bmax {_fmt(bmax)}")
    fixed = (
        _a4(_HEADER.size)
        + _a4(12 * vert_count)
        + _a4(_POLY * poly_count)
        + _a4(_DETAIL * dm_count)
        + _a4(12 * dv_count)
        + _a4(4 * dt_count)
        + _a4(_BVNODE * bv_count)
        + _a4(_OFFMESH * om_count)
    )
    link = None
    for size in (12, 16):  # dtLink with 32- or 64-bit poly refs
        if fixed + _a4(size * max_links) == len(tile):
            link = size
    if link is None:
        raise fail("dataSize", "the section sizes of the header's counts do not add up to it")
    off = _a4(_HEADER.size)
    verts = np.frombuffer(tile, np.float32, 3 * vert_count, off).reshape(-1, 3)
    off += _a4(12 * vert_count)
    poly_raw = np.frombuffer(tile, np.uint8, _POLY * poly_count, off).reshape(-1, _POLY)
    off += _a4(_POLY * poly_count)
    off += _a4(link * max_links)
    dm = np.frombuffer(tile, np.uint8, _DETAIL * dm_count, off).reshape(-1, _DETAIL)
    off += _a4(_DETAIL * dm_count)
    dverts = np.frombuffer(tile, np.float32, 3 * dv_count, off).reshape(-1, 3)
    off += _a4(12 * dv_count)
    dtris = np.frombuffer(tile, np.uint8, 4 * dt_count, off).reshape(-1, 4)
    off += _a4(4 * dt_count)
    bv_raw = np.frombuffer(tile, np.uint8, _BVNODE * bv_count, off).reshape(-1, _BVNODE)
    bv_index = bv_raw[:, 12:16].copy().view("<i4").reshape(-1).astype(np.int64)
    bv_nodes = np.concatenate(
        [bv_raw[:, 0:12].copy().view("<u2").reshape(-1, 6).astype(np.int64), bv_index[:, None]],
        axis=1,
    )
    off += _a4(_BVNODE * bv_count)
    om_poly = np.frombuffer(tile, "<u2", _OFFMESH // 2 * om_count, off).reshape(-1, _OFFMESH // 2)[
        :, 14
    ]

    for name, arr in (("verts", verts), ("detailVerts", dverts)):
        bad = np.flatnonzero(~(np.abs(arr.astype(np.float64)) <= MAX_COORDINATE).all(axis=1))
        if len(bad):
            i = int(bad[0])
            raise fail(
                name,
                f"vertex {i} is {_fmt(arr[i])}: coordinates must be finite "
                f"(within ±{MAX_COORDINATE:g} m){_more(bad)}",
            )
        out_xz = np.flatnonzero(
            (
                (arr[:, [0, 2]] < bmin[[0, 2]] - _BOUNDS_SLACK)
                | (arr[:, [0, 2]] > bmax[[0, 2]] + _BOUNDS_SLACK)
            ).any(axis=1)
        )
        if len(out_xz):
            i = int(out_xz[0])
            raise fail(
                name,
                f"vertex {i} {_fmt(arr[i])} lies outside the tile bounds "
                f"{_fmt(bmin)}..{_fmt(bmax)} in x/z{_more(out_xz)}",
            )

    pverts = poly_raw[:, 4:16].copy().view("<u2").reshape(-1, 6).astype(np.int64)
    pneis = poly_raw[:, 16:28].copy().view("<u2").reshape(-1, 6).astype(np.int64)
    pvcount = poly_raw[:, 30].astype(np.int64)
    ptype = poly_raw[:, 31] >> 6
    if (ptype > _POLYTYPE_OFFMESH).any():
        i = int(np.flatnonzero(ptype > _POLYTYPE_OFFMESH)[0])
        raise fail("polys", f"polygon {i} has type {int(ptype[i])} (0 ground, 1 off-mesh)")
    bad = np.flatnonzero((pvcount < 3) | (pvcount > 6))
    if len(bad):
        raise fail(
            "polys",
            f"polygon {int(bad[0])} has {int(pvcount[bad[0]])} vertices (3 to 6){_more(bad)}",
        )
    used = np.arange(6)[None, :] < pvcount[:, None]
    bad = np.flatnonzero((used & (pverts >= vert_count)).any(axis=1))
    if len(bad):
        raise fail(
            "polys",
            f"polygon {int(bad[0])} has a vertex index >= vertCount {vert_count}{_more(bad)}",
        )
    inner = used & (pneis != 0) & ((pneis & _EXT_LINK) == 0)
    bad = np.flatnonzero((inner & (pneis - 1 >= poly_count)).any(axis=1))
    if len(bad):
        raise fail(
            "polys",
            f"polygon {int(bad[0])} has a neighbour index >= polyCount {poly_count}{_more(bad)}",
        )
    ground = np.flatnonzero(ptype != _POLYTYPE_OFFMESH)
    if len(ground) and int(ground[-1]) >= dm_count:
        raise fail("detailMeshCount", f"{dm_count} does not cover ground polygon {int(ground[-1])}")
    _check_convex(fail, verts, pverts, pvcount, ground)

    vert_base = dm[:, 0:4].copy().view("<u4").reshape(-1).astype(np.int64)
    tri_base = dm[:, 4:8].copy().view("<u4").reshape(-1).astype(np.int64)
    dvc = dm[:, 8].astype(np.int64)
    tri_count = dm[:, 9].astype(np.int64)
    g_vb, g_dvc, g_tb, g_tc = vert_base[ground], dvc[ground], tri_base[ground], tri_count[ground]
    bad = np.flatnonzero(g_vb + g_dvc > dv_count)
    if len(bad):
        raise fail(
            "detailMeshes",
            f"polygon {int(ground[bad[0]])}: detail vertices {int(g_vb[bad[0]])}"
            f"+{int(g_dvc[bad[0]])} beyond detailVertCount {dv_count}{_more(bad)}",
        )
    bad = np.flatnonzero(g_tb + g_tc > dt_count)
    if len(bad):
        raise fail(
            "detailMeshes",
            f"polygon {int(ground[bad[0]])}: detail triangles {int(g_tb[bad[0]])}"
            f"+{int(g_tc[bad[0]])} beyond detailTriCount {dt_count}{_more(bad)}",
        )
    total = int(g_tc.sum())
    if total:
        owner = np.repeat(np.arange(len(ground)), g_tc)
        first = np.repeat(np.cumsum(g_tc) - g_tc, g_tc)
        rows = g_tb[owner] + (np.arange(total) - first)
        limit = pvcount[ground][owner] + g_dvc[owner]
        bad = np.flatnonzero((dtris[rows, :3].astype(np.int64) >= limit[:, None]).any(axis=1))
        if len(bad):
            raise fail(
                "detailTris",
                f"triangle {int(rows[bad[0]])} of polygon {int(ground[owner[bad[0]]])} "
                f"indexes a vertex beyond its polygon's and detail vertices{_more(bad)}",
            )
    bad = np.flatnonzero((bv_index >= poly_count) | (-bv_index > bv_count))
    if len(bad):
        raise fail(
            "bvTree",
            f"node {int(bad[0])} index {int(bv_index[bad[0]])} is out of range{_more(bad)}",
        )
    bad = np.flatnonzero(om_poly >= poly_count)
    if len(bad) or om_base > poly_count:
        raise fail(
            "offMeshCons", f"an off-mesh connection's polygon is beyond polyCount {poly_count}"
        )
    return _RawTile(
        verts,
        pverts,
        pneis,
        pvcount,
        ground.tolist(),
        vert_base,
        tri_base,
        tri_count,
        dverts,
        dtris,
        bmin,
        bmax,
        climb,
        bv_nodes,
        float(h[24]),
    )


def _check_convex(fail, verts, pverts, pvcount, ground) -> None:
    """Every corner of every ground polygon turns the way Detour's polygons do (its convex
    polygons have positive x/z area in ``navmesh_query._tri_area2``'s sign): a concave or
    reversed polygon breaks point-in-polygon, the fan areas random points are drawn by and
    the funnel."""
    if not len(ground):
        return
    nv = pvcount[ground][:, None]
    j = np.arange(6)[None, :]
    idx = pverts[ground]
    rows = np.arange(len(ground))[:, None]
    v = verts.astype(np.float64)
    a = v[idx[rows, (j - 1) % nv]]
    b = v[idx[rows, j % nv]]
    c = v[idx[rows, (j + 1) % nv]]
    area2 = (c[..., 0] - a[..., 0]) * (b[..., 2] - a[..., 2]) - (b[..., 0] - a[..., 0]) * (
        c[..., 2] - a[..., 2]
    )
    lab = np.hypot(b[..., 0] - a[..., 0], b[..., 2] - a[..., 2])
    lbc = np.hypot(c[..., 0] - b[..., 0], c[..., 2] - b[..., 2])
    bad_corner = (j < nv) & (area2 < -_CONVEX_SLACK * lab * lbc - 1e-9)
    # the fan (0, k-1, k) too: a polygon winding twice turns one way at every corner
    f1 = v[idx[rows, np.clip(j - 1, 1, None) % nv]]
    f2 = v[idx[rows, np.clip(j, 2, None) % nv]]
    v0 = v[idx[:, 0]][:, None, :]
    fan = (f2[..., 0] - v0[..., 0]) * (f1[..., 2] - v0[..., 2]) - (f1[..., 0] - v0[..., 0]) * (
        f2[..., 2] - v0[..., 2]
    )
    bad_fan = (j >= 2) & (j < nv) & (fan < -1e-9)
    bad = np.flatnonzero((bad_corner | bad_fan).any(axis=1))
    if len(bad):
        p = int(ground[bad[0]])
        raise fail(
            "polys",
            f"polygon {p} is not convex with positive area (Detour's polygons are convex, "
            f"clockwise seen from +Y){_more(bad)}",
        )


def _fmt(values) -> str:
    return "(" + ", ".join(f"{float(v):.6g}" for v in values) + ")"


def _more(bad) -> str:
    return f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""


def _build_tile(raw: _RawTile) -> NavMeshTile:
    """The per-polygon lists the simulators use, from a validated tile."""
    index = {p: k for k, p in enumerate(raw.ground)}
    polys, neis, detail, flags = [], [], [], []
    verts, dverts, dtris = raw.verts, raw.dverts, raw.dtris
    for i in raw.ground:
        nv = int(raw.nverts[i])
        pv = raw.polys[i, :nv]
        polys.append(tuple(int(v) for v in pv))
        row = []
        for j in range(nv):
            n = int(raw.neis[i, j])
            if n == 0:
                row.append(-1)
            elif n & _EXT_LINK:
                row.append(-2)
            else:
                row.append(index.get(n - 1, -1))
        neis.append(tuple(row))
        tb, tc, vb = int(raw.tri_base[i]), int(raw.tri_count[i]), int(raw.vert_base[i])
        t = dtris[tb : tb + tc].astype(np.int64)
        corners = (
            np.concatenate([verts[pv], dverts[vb : vb + int(t[:, :3].max(initial=-1)) + 1 - nv]])
            if tc
            else np.zeros((0, 3), np.float32)
        )
        detail.append(corners[t[:, :3]].astype(np.float32).reshape(-1, 3, 3))
        flags.append(tuple(int(f) for f in t[:, 3]))
    return NavMeshTile(
        verts.astype(np.float32), polys, neis, detail, flags, raw.bmin, raw.bmax, raw.walkable_climb
    )


def write_navmesh(path: str, polygons: List[np.ndarray]) -> None:
    """Write convex polygons (each (3..6, 3), positive Detour area: clockwise seen from +Y)
    as a one-tile navmesh set that habitat-sim loads: shared vertices, neighbours across
    shared edges, one fan of detail triangles per polygon (for tests and tools)."""
    vid: dict = {}
    verts: List[Tuple[float, float, float]] = []
    idx: List[List[int]] = []
    for poly in polygons:
        poly = np.asarray(poly, np.float32)
        if poly.ndim != 2 or poly.shape[1] != 3 or not 3 <= len(poly) <= 6:
            raise ValueError("navmesh polygons need 3 to 6 vertices of 3 coordinates")
        row = []
        for v in poly.tolist():
            key = tuple(round(c, 6) for c in v)
            if key not in vid:
                vid[key] = len(verts)
                verts.append(tuple(v))
            row.append(vid[key])
        idx.append(row)
    edge_owner: dict = {}
    for p, row in enumerate(idx):
        for j in range(len(row)):
            edge_owner.setdefault(frozenset((row[j], row[(j + 1) % len(row)])), []).append(p)
    polys, details, dtris = bytearray(), bytearray(), bytearray()
    ntri = nlinks = 0
    for p, row in enumerate(idx):
        n = len(row)
        neis = []
        for j in range(n):
            owners = [q for q in edge_owner[frozenset((row[j], row[(j + 1) % n]))] if q != p]
            neis.append(owners[0] + 1 if owners else 0)
        nlinks += sum(1 for q in neis if q)
        polys += struct.pack(
            "<I6H6HHBB", 0, *(row + [0xFFFF] * (6 - n)), *(neis + [0] * (6 - n)), 1, n, 0
        )
        details += struct.pack("<IIBBxx", 0, ntri, 0, n - 2)
        for k in range(1, n - 1):  # fan (0, k, k+1); flag the edges that are polygon edges
            flags = (int(k == 1) << 0) | (1 << 2) | (int(k + 1 == n - 1) << 4)
            dtris += struct.pack("<4B", 0, k, k + 1, flags)
        ntri += n - 2
    v = np.asarray(verts, np.float32)
    bmin, bmax = v.min(0), v.max(0)
    header = _HEADER.pack(
        _TILE_MAGIC,
        _TILE_VERSION,
        0,
        0,
        0,
        0,
        len(idx),
        len(v),
        nlinks,
        len(idx),
        0,
        ntri,
        0,
        0,
        len(idx),
        AGENT_HEIGHT,
        AGENT_RADIUS,
        0.2,
        *bmin.tolist(),
        *bmax.tolist(),
        1.0,
    )
    tile = bytearray(header) + v.tobytes() + polys + bytes(12 * nlinks) + details + dtris
    tile += bytes(_a4(len(tile)) - len(tile))
    max_polys = 1 << max(1, (len(idx) - 1).bit_length())
    params = struct.pack("<3fffii", *bmin.tolist(), 1000.0, 1000.0, 1, max_polys)
    tile_ref = 1 << (max_polys.bit_length() - 1)  # salt 1, tile 0, poly 0
    with open(path, "wb") as fh:
        fh.write(struct.pack("<iii", _SET_MAGIC, 1, 1) + params)
        fh.write(struct.pack("<Ii", tile_ref, len(tile)))
        fh.write(bytes(tile))
