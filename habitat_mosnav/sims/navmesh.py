"""Read the walkable triangles of a Recast/Detour ``.navmesh`` (habitat-sim's binary file).

habitat-sim saves a ``MSET`` set header (version 1, or 2 with its NavMeshSettings), then
per tile a small header (tile ref, data size) and the Detour tile data: ``dtMeshHeader``
(magic ``DNAV``, version 7), vertices, polygons, links, detail meshes, detail vertices and
detail triangles. Tiles are located by their ``DNAV`` magic so that the set-header
variants (settings block, 32/64-bit tile refs) need no guessing; each tile's sizes are
checked against its declared data size.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import List, Tuple

import numpy as np

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


def _a4(n: int) -> int:
    return (n + 3) & ~3


@dataclass
class NavMeshTile:
    """One Detour tile: polygons over shared vertices, their neighbours and detail meshes."""

    verts: np.ndarray  # (V, 3) float32 polygon vertices
    polys: List[Tuple[int, ...]]  # vertex indices of each ground polygon (3..6, Detour's order)
    neis: List[Tuple[int, ...]]  # per edge j (verts[j] -> verts[j+1]): neighbour poly, -1 wall, -2 other tile
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


def read_navmesh(path: str) -> NavMeshData:
    """Parse a habitat-sim/Recast ``.navmesh`` set file (one-line :class:`NavMeshError` otherwise)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise NavMeshError(f"cannot read navmesh {path}: {exc}") from None
    if len(data) < 12 or struct.unpack_from("<i", data, 0)[0] != _SET_MAGIC:
        raise NavMeshError(f"{path}: not a Recast/Detour navmesh set (magic 'MSET' missing)")
    version = struct.unpack_from("<i", data, 4)[0]
    if version not in (1, 2):
        raise NavMeshError(f"{path}: navmesh set version {version} is not supported (1 or 2)")
    magic = struct.pack("<i", _TILE_MAGIC)
    out = NavMeshData(path)
    pos = data.find(magic, 12)
    while pos >= 4:
        data_size = struct.unpack_from("<i", data, pos - 4)[0]
        tile = data[pos : pos + data_size]
        if data_size < _HEADER.size or len(tile) != data_size:
            raise NavMeshError(f"{path}: tile at byte {pos} is truncated")
        out.tiles.append(_read_tile(path, tile, pos))
        pos = data.find(magic, pos + data_size)
    if not out.tiles:
        raise NavMeshError(f"{path}: no Detour tiles ('DNAV') found")
    if not any(t.polys for t in out.tiles):
        raise NavMeshError(f"{path}: navmesh has no walkable polygons")
    return out


def read_navmesh_triangles(path: str) -> np.ndarray:
    """Walkable triangles (T, 3, 3) float32 of a habitat-sim/Recast ``.navmesh`` file."""
    return read_navmesh(path).triangles()


def _read_tile(path: str, tile: bytes, where: int) -> NavMeshTile:
    h = _HEADER.unpack_from(tile, 0)
    (magic, version, _x, _y, _layer, _uid, poly_count, vert_count, max_links, dm_count,
     dv_count, dt_count, bv_count, om_count, _om_base) = h[:15]
    climb = float(h[17])
    bmin, bmax = np.array(h[18:21], np.float64), np.array(h[21:24], np.float64)
    if magic != _TILE_MAGIC or version != _TILE_VERSION:
        raise NavMeshError(f"{path}: tile at byte {where}: Detour version {version}, expected {_TILE_VERSION}")
    fixed = (_a4(_HEADER.size) + _a4(12 * vert_count) + _a4(_POLY * poly_count) + _a4(_DETAIL * dm_count)
             + _a4(12 * dv_count) + _a4(4 * dt_count) + _a4(_BVNODE * bv_count) + _a4(_OFFMESH * om_count))
    link = None
    for size in (12, 16):  # dtLink with 32- or 64-bit poly refs
        if fixed + _a4(size * max_links) == len(tile):
            link = size
    if link is None:
        raise NavMeshError(f"{path}: tile at byte {where}: section sizes do not add up to its data size")
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

    pverts = poly_raw[:, 4:16].copy().view("<u2").reshape(-1, 6)
    pneis = poly_raw[:, 16:28].copy().view("<u2").reshape(-1, 6)
    pvcount = poly_raw[:, 30]
    ptype = poly_raw[:, 31] >> 6
    vert_base = dm[:, 0:4].copy().view("<u4").reshape(-1)
    tri_base = dm[:, 4:8].copy().view("<u4").reshape(-1)
    tri_count = dm[:, 9]
    # ground polygons keep their index order; off-mesh connections (never written by
    # habitat-sim) are not walkable surface
    keep = [i for i in range(min(poly_count, dm_count)) if ptype[i] != _POLYTYPE_OFFMESH]
    index = {p: k for k, p in enumerate(keep)}
    polys, neis, detail, flags = [], [], [], []
    for i in keep:
        nv = int(pvcount[i])
        if not 3 <= nv <= 6 or int(pverts[i, :nv].max()) >= vert_count:
            raise NavMeshError(f"{path}: tile at byte {where}: polygon {i} has bad vertices")
        polys.append(tuple(int(v) for v in pverts[i, :nv]))
        row = []
        for j in range(nv):
            n = int(pneis[i, j])
            if n == 0:
                row.append(-1)
            elif n & _EXT_LINK:
                row.append(-2)
            else:
                row.append(index.get(n - 1, -1))
        neis.append(tuple(row))
        tris, fl = [], []
        for j in range(int(tri_count[i])):
            t = dtris[int(tri_base[i]) + j]
            corners = []
            for k in range(3):
                v = int(t[k])
                corners.append(verts[pverts[i, v]] if v < nv else dverts[int(vert_base[i]) + v - nv])
            tris.append(corners)
            fl.append(int(t[3]))
        detail.append(np.asarray(tris, np.float32).reshape(-1, 3, 3))
        flags.append(tuple(fl))
    return NavMeshTile(verts.astype(np.float32), polys, neis, detail, flags, bmin, bmax, climb)


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
        polys += struct.pack("<I6H6HHBB", 0, *(row + [0xFFFF] * (6 - n)), *(neis + [0] * (6 - n)), 1, n, 0)
        details += struct.pack("<IIBBxx", 0, ntri, 0, n - 2)
        for k in range(1, n - 1):  # fan (0, k, k+1); flag the edges that are polygon edges
            flags = (int(k == 1) << 0) | (1 << 2) | (int(k + 1 == n - 1) << 4)
            dtris += struct.pack("<4B", 0, k, k + 1, flags)
        ntri += n - 2
    v = np.asarray(verts, np.float32)
    bmin, bmax = v.min(0), v.max(0)
    header = _HEADER.pack(_TILE_MAGIC, _TILE_VERSION, 0, 0, 0, 0, len(idx), len(v), nlinks,
                          len(idx), 0, ntri, 0, 0, len(idx), 0.88, 0.18, 0.2,
                          *bmin.tolist(), *bmax.tolist(), 1.0)
    tile = bytearray(header) + v.tobytes() + polys + bytes(12 * nlinks) + details + dtris
    tile += bytes(_a4(len(tile)) - len(tile))
    max_polys = 1 << max(1, (len(idx) - 1).bit_length())
    params = struct.pack("<3fffii", *bmin.tolist(), 1000.0, 1000.0, 1, max_polys)
    tile_ref = 1 << (max_polys.bit_length() - 1)  # salt 1, tile 0, poly 0
    with open(path, "wb") as fh:
        fh.write(struct.pack("<iii", _SET_MAGIC, 1, 1) + params)
        fh.write(struct.pack("<Ii", tile_ref, len(tile)))
        fh.write(bytes(tile))
