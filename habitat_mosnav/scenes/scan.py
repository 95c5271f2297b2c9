"""Make a generated mesh look like a scan: dense triangles and noisy surfaces.

HM3D scenes are reconstructions: hundreds of thousands of small triangles, walls and
floors a centimetre or two off flat. :func:`scan_like` subdivides every triangle to at
most ``max_edge`` metres (trimesh) and moves every vertex by a uniform random offset of
at most ``jitter`` metres per axis, the same offset for vertices at the same place (so
faces that met still meet).
"""

from __future__ import annotations

from typing import Tuple

import numpy as np


def scan_like(
    vertices: np.ndarray,
    faces: np.ndarray,
    max_edge: float,
    jitter: float,
    rng: np.random.Generator,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, faces, source face of each new face) of the subdivided, jittered mesh."""
    import trimesh

    if max_edge <= 0:
        raise ValueError(f"scan_like: max_edge must be > 0, got {max_edge}")
    v, f, src = trimesh.remesh.subdivide_to_size(
        np.asarray(vertices, np.float64),
        np.asarray(faces, np.int64),
        max_edge=max_edge,
        max_iter=20,
        return_index=True,
    )
    if jitter > 0:
        key = np.round(v * 1e4).astype(np.int64)  # vertices within 0.1 mm are one place
        _, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        offset = rng.uniform(-jitter, jitter, (int(inv.max()) + 1, 3))
        v = v + offset[inv]
    return v.astype(np.float32), f.astype(np.int64), np.asarray(src, np.int64)
