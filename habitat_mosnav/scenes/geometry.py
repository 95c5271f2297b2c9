"""Mesh primitives and baked vertex colours for the procedural scenes.

Every primitive has unshared vertices per flat face, so colours baked from face
normals (a fixed sky light) survive loading with ``process=False`` and look 3-D in
renderers without lighting, like HM3D's baked textures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Sequence

import numpy as np

# Fixed light used to bake shading into vertex colours (world frame, Y up).
_LIGHT = np.array([0.35, 1.0, 0.55])
_LIGHT = _LIGHT / np.linalg.norm(_LIGHT)

# RGB (0..1) of the colour names used in attributes.
COLOR_RGB = {
    "brown": (0.45, 0.28, 0.15),
    "white": (0.92, 0.92, 0.90),
    "black": (0.10, 0.10, 0.11),
    "gray": (0.52, 0.53, 0.55),
    "red": (0.74, 0.13, 0.12),
    "blue": (0.16, 0.32, 0.70),
    "green": (0.22, 0.55, 0.22),
    "yellow": (0.92, 0.80, 0.22),
    "beige": (0.85, 0.77, 0.60),
    "orange": (0.90, 0.50, 0.16),
    "pink": (0.94, 0.62, 0.70),
    "gold": (0.83, 0.68, 0.26),
    "silver": (0.76, 0.77, 0.80),
}

# How each material changes a colour: (ambient, diffuse, per-vertex noise, tint rgb, tint weight).
_MATERIAL = {
    "wood": (0.55, 0.45, 0.07, (0.55, 0.36, 0.20), 0.15),
    "metal": (0.45, 0.65, 0.03, (0.75, 0.76, 0.78), 0.20),
    "fabric": (0.68, 0.32, 0.04, (0.5, 0.5, 0.5), 0.05),
    "leather": (0.50, 0.50, 0.03, (0.20, 0.12, 0.08), 0.20),
    "plastic": (0.58, 0.42, 0.02, (1.0, 1.0, 1.0), 0.03),
    "glass": (0.70, 0.35, 0.02, (0.70, 0.85, 0.92), 0.55),
    "ceramic": (0.62, 0.42, 0.02, (1.0, 1.0, 1.0), 0.10),
    "marble": (0.62, 0.40, 0.08, (0.90, 0.90, 0.88), 0.35),
    "paint": (0.60, 0.40, 0.015, (1.0, 1.0, 1.0), 0.0),
    "tile": (0.60, 0.40, 0.05, (0.85, 0.85, 0.85), 0.10),
    "floor_wood": (0.62, 0.38, 0.012, (0.55, 0.36, 0.20), 0.10),
    "floor_tile": (0.62, 0.38, 0.01, (0.85, 0.85, 0.85), 0.05),
    "leaf": (0.50, 0.50, 0.10, (0.15, 0.45, 0.15), 0.10),
    "paper": (0.60, 0.40, 0.04, (1.0, 1.0, 1.0), 0.0),
}


@dataclass
class Part:
    """Triangles of one primitive in an object's local frame, with its look."""

    vertices: np.ndarray  # (n, 3) float64
    faces: np.ndarray  # (m, 3) int64
    normals: np.ndarray  # (n, 3) per-vertex normals used for shading
    rgb: Sequence[float]
    material: str


@dataclass
class MeshData:
    """Concatenated triangles with per-vertex RGBA colours and owning object ids."""

    vertices: List[np.ndarray] = field(default_factory=list)
    faces: List[np.ndarray] = field(default_factory=list)
    colors: List[np.ndarray] = field(default_factory=list)
    owners: List[np.ndarray] = field(default_factory=list)
    _count: int = 0

    def add(self, vertices, faces, colors, owner: int) -> None:
        self.vertices.append(vertices)
        self.faces.append(faces + self._count)
        self.colors.append(colors)
        self.owners.append(np.full(len(vertices), owner, dtype=np.int64))
        self._count += len(vertices)

    def arrays(self):
        return (
            np.concatenate(self.vertices).astype(np.float32),
            np.concatenate(self.faces).astype(np.int64),
            np.concatenate(self.colors).astype(np.uint8),
            np.concatenate(self.owners),
        )


_BOX_FACES = [
    # (normal, 4 corner sign triples, counter-clockwise seen from outside)
    ((1, 0, 0), [(1, -1, -1), (1, 1, -1), (1, 1, 1), (1, -1, 1)]),
    ((-1, 0, 0), [(-1, -1, 1), (-1, 1, 1), (-1, 1, -1), (-1, -1, -1)]),
    ((0, 1, 0), [(-1, 1, -1), (-1, 1, 1), (1, 1, 1), (1, 1, -1)]),
    ((0, -1, 0), [(-1, -1, 1), (-1, -1, -1), (1, -1, -1), (1, -1, 1)]),
    ((0, 0, 1), [(-1, -1, 1), (1, -1, 1), (1, 1, 1), (-1, 1, 1)]),
    ((0, 0, -1), [(1, -1, -1), (-1, -1, -1), (-1, 1, -1), (1, 1, -1)]),
]
_BOX_SIGNS = np.array([c for _, cs in _BOX_FACES for c in cs], dtype=np.float64)
_BOX_NORMALS = np.repeat(np.array([n for n, _ in _BOX_FACES], dtype=np.float64), 4, axis=0)
_BOX_TRIS = np.array(
    [t for i in range(6) for t in ((4 * i, 4 * i + 1, 4 * i + 2), (4 * i, 4 * i + 2, 4 * i + 3))],
    dtype=np.int64,
)


def box(center, size, rgb, material: str) -> Part:
    """Axis-aligned box (12 triangles) from its centre and full size."""
    c = np.asarray(center, dtype=np.float64)
    h = np.asarray(size, dtype=np.float64) / 2.0
    return Part(c + _BOX_SIGNS * h, _BOX_TRIS.copy(), _BOX_NORMALS.copy(), rgb, material)


def box_from_bounds(lo, hi, rgb, material: str) -> Part:
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    return box((lo + hi) / 2.0, hi - lo, rgb, material)


def cylinder(
    base,
    radius,
    height,
    rgb,
    material: str,
    segments: int = 12,
    top_radius: float | None = None,
    caps: bool = True,
) -> Part:
    """Vertical cylinder or frustum standing on ``base`` (x, y, z): flat-shaded sides."""
    r0, r1 = float(radius), float(radius if top_radius is None else top_radius)
    bx, by, bz = (float(v) for v in base)
    ang = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    ca, sa = np.cos(ang), np.sin(ang)
    verts, norms, tris = [], [], []
    slope = (r0 - r1) / max(height, 1e-9)
    for i in range(segments):
        a, b = i, i + 1
        quad = [
            (bx + r0 * ca[a], by, bz + r0 * sa[a]),
            (bx + r0 * ca[b], by, bz + r0 * sa[b]),
            (bx + r1 * ca[b], by + height, bz + r1 * sa[b]),
            (bx + r1 * ca[a], by + height, bz + r1 * sa[a]),
        ]
        mid = (ang[a] + ang[b]) / 2.0
        n = np.array([np.cos(mid), slope, np.sin(mid)])
        n /= np.linalg.norm(n)
        k = len(verts)
        verts.extend(quad)
        norms.extend([n] * 4)
        # outward facing: (0, 2, 1) order gives +radial normals for this winding
        tris.extend([(k, k + 2, k + 1), (k, k + 3, k + 2)])
    if caps:
        for y, r, up in ((by + height, r1, 1.0), (by, r0, -1.0)):
            if r <= 0:
                continue
            k = len(verts)
            verts.append((bx, y, bz))
            norms.append((0.0, up, 0.0))
            for i in range(segments):
                verts.append((bx + r * ca[i], y, bz + r * sa[i]))
                norms.append((0.0, up, 0.0))
            for i in range(segments):
                a, b = k + 1 + i, k + 1 + (i + 1) % segments
                tris.append((k, b, a) if up > 0 else (k, a, b))
    return Part(
        np.array(verts, dtype=np.float64),
        np.array(tris, dtype=np.int64),
        np.array(norms, dtype=np.float64),
        rgb,
        material,
    )


_ICO_CACHE = {}


def sphere(center, radii, rgb, material: str, subdivisions: int = 1) -> Part:
    """Ellipsoid from an icosphere (80 triangles at subdivision 1), smooth normals."""
    import trimesh

    if subdivisions not in _ICO_CACHE:
        ico = trimesh.creation.icosphere(subdivisions=subdivisions)
        _ICO_CACHE[subdivisions] = (
            np.asarray(ico.vertices, dtype=np.float64),
            np.asarray(ico.faces, dtype=np.int64),
        )
    v, f = _ICO_CACHE[subdivisions]
    radii = np.asarray(radii, dtype=np.float64)
    n = v / radii
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return Part(np.asarray(center, dtype=np.float64) + v * radii, f.copy(), n, rgb, material)


def yaw_matrix(yaw: float) -> np.ndarray:
    """Rotation about +Y by ``yaw`` radians: local +Z maps to (sin yaw, 0, cos yaw)."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def bake_colors(normals: np.ndarray, rgb, material: str, rng: np.random.Generator) -> np.ndarray:
    """RGBA uint8 vertex colours: a colour lit by the fixed light, modulated by material."""
    amb, dif, noise, tint, tint_w = _MATERIAL[material]
    base = (1.0 - tint_w) * np.asarray(rgb, dtype=np.float64) + tint_w * np.asarray(tint)
    lam = np.clip(normals @ _LIGHT, 0.0, 1.0)
    shade = amb + dif * lam
    if material == "metal":  # a little highlight on surfaces facing the light
        shade = shade + 0.25 * lam**8
    jitter = 1.0 + noise * rng.standard_normal(len(normals))
    col = base[None, :] * (shade * jitter)[:, None]
    out = np.empty((len(normals), 4), dtype=np.uint8)
    out[:, :3] = np.clip(np.round(col * 255.0), 0, 255).astype(np.uint8)
    out[:, 3] = 255
    return out
