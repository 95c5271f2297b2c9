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
from typing import List

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


class NavMeshError(RuntimeError):
    """A .navmesh that cannot be read; the message names the file and the problem."""


def _a4(n: int) -> int:
    return (n + 3) & ~3


def read_navmesh_triangles(path: str) -> np.ndarray:
    """Walkable triangles (T, 3, 3) float32 of a habitat-sim/Recast ``.navmesh`` file."""
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
    tris: List[np.ndarray] = []
    pos = data.find(magic, 12)
    ntiles = 0
    while pos >= 0:
        if pos < 4:
            break
        data_size = struct.unpack_from("<i", data, pos - 4)[0]
        tile = data[pos : pos + data_size]
        if data_size < _HEADER.size or len(tile) != data_size:
            raise NavMeshError(f"{path}: tile at byte {pos} is truncated")
        tris.append(_tile_triangles(path, tile, pos))
        ntiles += 1
        pos = data.find(magic, pos + data_size)
    if ntiles == 0:
        raise NavMeshError(f"{path}: no Detour tiles ('DNAV') found")
    out = np.concatenate(tris) if tris else np.zeros((0, 3, 3), np.float32)
    if len(out) == 0:
        raise NavMeshError(f"{path}: navmesh has no walkable polygons")
    return out.astype(np.float32)


def _tile_triangles(path: str, tile: bytes, where: int) -> np.ndarray:
    h = _HEADER.unpack_from(tile, 0)
    (magic, version, _x, _y, _layer, _uid, poly_count, vert_count, max_links, dm_count,
     dv_count, dt_count, bv_count, om_count, _om_base) = h[:15]
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
    pvcount = poly_raw[:, 30]
    ptype = poly_raw[:, 31] >> 6
    vert_base = dm[:, 0:4].copy().view("<u4").reshape(-1)
    tri_base = dm[:, 4:8].copy().view("<u4").reshape(-1)
    tri_count = dm[:, 9]
    out = []
    for i in range(min(poly_count, dm_count)):
        if ptype[i] == _POLYTYPE_OFFMESH:
            continue
        nv = int(pvcount[i])
        for j in range(int(tri_count[i])):
            t = dtris[int(tri_base[i]) + j]
            corners = []
            for k in range(3):
                v = int(t[k])
                if v < nv:
                    corners.append(verts[pverts[i, v]])
                else:
                    corners.append(dverts[int(vert_base[i]) + v - nv])
            out.append(corners)
    if not out:
        return np.zeros((0, 3, 3), np.float32)
    return np.asarray(out, np.float32)


def write_navmesh(path: str, polygons: List[np.ndarray], link_size: int = 12) -> None:
    """Write convex polygons (each (n ≤ 6, 3), counter-clockwise seen from +Y) as a
    one-tile navmesh set in the layout read above (for tests and tools)."""
    verts: List[np.ndarray] = []
    polys = bytearray()
    details = bytearray()
    dtris = bytearray()
    ntri = 0
    for poly in polygons:
        poly = np.asarray(poly, np.float32)
        n = len(poly)
        if not 3 <= n <= 6:
            raise ValueError("navmesh polygons need 3 to 6 vertices")
        base = sum(len(v) for v in verts)
        verts.append(poly)
        idx = list(range(base, base + n)) + [0xFFFF] * (6 - n)
        polys += struct.pack("<I6H6HHBB", 0, *idx, *([0] * 6), 1, n, 0)
        details += struct.pack("<IIBBxx", 0, ntri, 0, n - 2)
        for k in range(1, n - 1):  # fan triangulation, local indices
            dtris += struct.pack("<4B", 0, k, k + 1, 0)
        ntri += n - 2
    v = np.concatenate(verts).astype(np.float32)
    bmin, bmax = v.min(0), v.max(0)
    header = _HEADER.pack(_TILE_MAGIC, _TILE_VERSION, 0, 0, 0, 0, len(polygons), len(v), 0,
                          len(polygons), 0, ntri, 0, 0, len(polygons), 0.88, 0.18, 0.2,
                          *bmin.tolist(), *bmax.tolist(), 1.0)
    tile = bytearray(header)
    tile += v.tobytes()
    tile += polys
    tile += details
    tile += dtris
    params = struct.pack("<3fffii", *bmin.tolist(), 1000.0, 1000.0, 1, len(polygons))
    with open(path, "wb") as fh:
        fh.write(struct.pack("<iii", _SET_MAGIC, 1, 1) + params)
        fh.write(struct.pack("<Ii", 1, len(tile)))
        fh.write(bytes(tile))
