"""Which parts of a scene a camera can see: spatial chunks, frustum and occlusion tests.

The renderer (:mod:`.render`) splits each scene at load into chunks: the faces whose
centroids fall in one cell of a 3-D grid (``cell`` metres), and within a chunk one piece
per texture, so that a draw call keeps one draw state. The vertex buffer holds the faces in
chunk order, then texture, then the file's order; a frame draws the pieces it keeps in that
one buffer order, so drawing fewer pieces cannot change which of two equally deep
fragments wins (the earlier one, with the depth test ``<``).

A chunk is skipped only when none of its triangles can give a fragment of the frame:

- frustum: all eight corners of its bounding box lie outside one clip plane (the box holds
  every triangle of the chunk, so each triangle is clipped away); the far plane is the
  renderer's (``Renderer.far``), which every colour and depth pixel shares;
- occlusion: its box, padded, drawn with the depth test ``<=`` against the depth of the
  nearest chunks (their front faces: any subset of the scene's triangles hides less,
  never more), passes no sample (see :func:`box_padding`); boxes the camera may be in
  are kept untested.

The colour pass then starts from the occluders' depth instead of a cleared buffer
(``Culling.prefill``), so that llvmpipe's early depth test skips the shading of what they
hide. The occluders were drawn with a polygon offset (``Renderer.prefill_units`` units of
depth resolution, the boxes without), so each prefilled depth lies strictly behind the
colour pass's own depth of the same triangle; the nearest colour fragment at a pixel is
never nearer than the nearest occluder, so it passes the test ``<`` as on a cleared
buffer, and the first of equally deep fragments still wins: the same pixels.

Back faces are not culled in the colour pass by default: a scan is not closed and its
surfaces are seen from both sides (on the generated scan-like scene culling them changes
most frames although its winding is consistent), so only an opt-in switch does it.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

#: box corners in the order of :data:`BOX_INDICES`' vertex numbers (bit 0: x, 1: y, 2: z)
_CORNER_BITS = np.array([[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], np.float64)
#: the 12 triangles of a box over its 8 corners (shared vertices: the box is watertight)
BOX_INDICES = np.array(
    [
        0,
        2,
        1,
        1,
        2,
        3,  # z = lo
        4,
        5,
        6,
        5,
        7,
        6,  # z = hi
        0,
        1,
        4,
        1,
        5,
        4,  # y = lo
        2,
        6,
        3,
        3,
        6,
        7,  # y = hi
        0,
        4,
        2,
        2,
        4,
        6,  # x = lo
        1,
        3,
        5,
        3,
        7,
        5,  # x = hi
    ],
    np.int32,
)


class Chunks:
    """A scene's faces in spatial chunks with bounds, and the draw pieces (chunk, texture).

    ``order``: the face permutation of the vertex buffer; ``lo``/``hi``: (C, 3) bounds of
    each chunk's vertices; pieces as arrays ``piece_chunk``, ``piece_tex``, ``piece_first``
    and ``piece_count`` (in vertices: three per face), in buffer order; ``chunk_faces``:
    faces per chunk."""

    def __init__(
        self,
        vertices: np.ndarray,
        faces: np.ndarray,
        face_texture: Optional[np.ndarray],
        cell: float = 2.0,
    ) -> None:
        F = len(faces)
        ft = (
            np.full(F, -1, np.int64) if face_texture is None else np.asarray(face_texture, np.int64)
        )
        if F == 0:
            self.order = np.zeros(0, np.int64)
            self.lo = self.hi = np.zeros((0, 3))
            self.piece_chunk = self.piece_tex = self.piece_first = self.piece_count = np.zeros(
                0, np.int64
            )
            self.chunk_faces = np.zeros(0, np.int64)
            return
        tris = np.asarray(vertices, np.float64)[faces]  # (F, 3, 3)
        if cell > 0:
            cen = tris.mean(axis=1)
            ijk = np.floor((cen - cen.min(axis=0)) / cell).astype(np.int64)
            dims = ijk.max(axis=0) + 1
            key = (ijk[:, 0] * dims[1] + ijk[:, 1]) * dims[2] + ijk[:, 2]
        else:
            key = np.zeros(F, np.int64)
        _, chunk = np.unique(key, return_inverse=True)
        chunk = chunk.reshape(-1)
        # buffer order: chunk, then texture, then the file's order (lexsort: last key first)
        order = np.lexsort((np.arange(F), ft, chunk))
        self.order = order
        ch, tx = chunk[order], ft[order]
        C = int(chunk.max()) + 1
        lo = np.full((C, 3), np.inf)
        hi = np.full((C, 3), -np.inf)
        tmin, tmax = tris.min(axis=1), tris.max(axis=1)
        np.minimum.at(lo, chunk, tmin)
        np.maximum.at(hi, chunk, tmax)
        self.lo, self.hi = lo, hi
        self.chunk_faces = np.bincount(chunk, minlength=C)
        cut = np.r_[0, np.nonzero((np.diff(ch) != 0) | (np.diff(tx) != 0))[0] + 1, F]
        a, b = cut[:-1], cut[1:]
        self.piece_chunk = ch[a]
        self.piece_tex = tx[a]
        self.piece_first = 3 * a
        self.piece_count = 3 * (b - a)

    @property
    def num_chunks(self) -> int:
        return len(self.lo)

    def corners(self, pad: Optional[np.ndarray] = None) -> np.ndarray:
        """(C, 8, 3) box corners, each box grown by ``pad`` (C,) metres."""
        lo, hi = self.lo, self.hi
        if pad is not None:
            lo, hi = lo - pad[:, None], hi + pad[:, None]
        return lo[:, None, :] + _CORNER_BITS[None] * (hi - lo)[:, None, :]


def frustum_keep(chunks: Chunks, mvp: np.ndarray, margin: float = 1e-3) -> np.ndarray:
    """(C,) bool: chunks whose box (grown by ``margin`` m) is not wholly outside one of the
    six clip planes of ``mvp`` (OpenGL clip space: -w <= x, y, z <= w)."""
    if chunks.num_chunks == 0:
        return np.zeros(0, bool)
    c = chunks.corners(np.full(chunks.num_chunks, margin))
    clip = c @ mvp[:, :3].T + mvp[:, 3]  # (C, 8, 4)
    x, y, z, w = clip[..., 0], clip[..., 1], clip[..., 2], clip[..., 3]
    out = (
        (x > w).all(1)
        | (x < -w).all(1)
        | (y > w).all(1)
        | (y < -w).all(1)
        | (z > w).all(1)
        | (z < -w).all(1)
    )
    return ~out


def box_distance(chunks: Chunks, eye: np.ndarray) -> np.ndarray:
    """(C,) distance from ``eye`` to each chunk's box (0 inside)."""
    d = np.maximum(np.maximum(chunks.lo - eye, eye - chunks.hi), 0.0)
    return np.sqrt((d * d).sum(axis=1))


def box_padding(far_dist: np.ndarray, near: float) -> np.ndarray:
    """Padding (m) of an occlusion box whose far corner is ``far_dist`` m from the eye.

    A pixel that a chunk's triangle wins sees the padded box's front face at that pixel
    nearer by at least about 0.65 x the padding (rays within the frustum's half diagonal);
    the query passes with the depth test ``<=`` whenever the window depths, computed in
    float32 with a few units of 2^-24 of error near 1, keep that order. A window depth
    step of z is near / z^2 per metre, so the padding grows with z^2: 2 cm plus
    3e-4 m^-1 z^2 * (0.01 / near) keeps the gap above 40 units of 2^-24 at every z."""
    return 0.02 + 3e-4 * (0.01 / near) * far_dist * far_dist


def box_vertices(chunks: Chunks, idx: np.ndarray, pad: np.ndarray) -> np.ndarray:
    """(len(idx) * 8, 3) float32 corners of the padded boxes of chunks ``idx``."""
    lo, hi = chunks.lo[idx] - pad[:, None], chunks.hi[idx] + pad[:, None]
    c = lo[:, None, :] + _CORNER_BITS[None] * (hi - lo)[:, None, :]
    return np.ascontiguousarray(c.reshape(-1, 3), np.float32)


def box_index_buffer(n: int) -> np.ndarray:
    """Indices of ``n`` boxes of 8 vertices each (36 per box)."""
    return (BOX_INDICES[None, :] + 8 * np.arange(n, dtype=np.int32)[:, None]).reshape(-1)


def camera_inside(chunks: Chunks, pad: np.ndarray, eye: np.ndarray, reach: float) -> np.ndarray:
    """(C,) bool: the eye lies within ``reach`` m of a padded box (a box that the near
    plane may cut cannot be tested by drawing it)."""
    lo, hi = chunks.lo - pad[:, None] - reach, chunks.hi + pad[:, None] + reach
    return ((eye >= lo) & (eye <= hi)).all(axis=1)


def winding_report(faces: np.ndarray) -> Tuple[int, int]:
    """(edges shared by exactly two faces, of those the ones both faces run the same way):
    a consistently wound surface has no such edge."""
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    lo = np.minimum(e[:, 0], e[:, 1])
    hi = np.maximum(e[:, 0], e[:, 1])
    fwd = e[:, 0] < e[:, 1]
    key = lo.astype(np.int64) * (int(faces.max()) + 1 if len(faces) else 1) + hi
    order = np.argsort(key, kind="stable")
    k = key[order]
    _, start, count = np.unique(k, return_index=True, return_counts=True)
    two = start[count == 2]
    same = fwd[order][two] == fwd[order][two + 1]
    return int(len(two)), int(same.sum())
