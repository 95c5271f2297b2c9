"""Scene geometry for the CPU simulator: one flat triangle soup per scene, read with trimesh.

A scene is ``<id>.glb`` (render mesh with vertex colours). When ``<id>.semantic.glb`` and
``<id>.semantic.txt`` lie beside it (HM3D's annotation pair), the semantic mesh is read too
and each vertex gets the object id whose annotation colour it carries (0 = no object).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np


class SceneLoadError(RuntimeError):
    """A scene file that cannot be read; the message names the file."""


@dataclass
class MeshData:
    """Triangle soup in world coordinates (Y up), ready for navigability and rendering."""

    vertices: np.ndarray  # (V, 3) float32
    faces: np.ndarray  # (F, 3) int64
    colors: np.ndarray  # (V, 4) uint8
    ids: Optional[np.ndarray] = None  # (V,) int32 object ids (semantic mesh only)

    @property
    def triangles(self) -> np.ndarray:
        return self.vertices[self.faces]


def _geometry_colors(geom) -> np.ndarray:
    """Per-vertex RGBA of one trimesh geometry (vertex colours, texture sampled, or grey)."""
    n = len(geom.vertices)
    visual = getattr(geom, "visual", None)
    try:
        if visual is not None and visual.kind == "vertex":
            col = np.asarray(visual.vertex_colors, dtype=np.uint8)
            if col.shape == (n, 4):
                return col
        if visual is not None and visual.kind is not None:
            col = np.asarray(visual.to_color().vertex_colors, dtype=np.uint8)
            if col.ndim == 2 and col.shape[0] == n:
                if col.shape[1] == 3:
                    col = np.concatenate([col, np.full((n, 1), 255, np.uint8)], 1)
                return col
            if col.ndim == 1 and col.shape[0] in (3, 4):  # one colour for the whole mesh
                out = np.full((n, 4), 255, np.uint8)
                out[:, : col.shape[0]] = col
                return out
    except Exception:  # noqa: BLE001 - odd materials fall back to grey
        pass
    return np.full((n, 4), 180, np.uint8)


def load_mesh(path: str) -> MeshData:
    """Read a .glb/.obj/.ply scene into one world-frame triangle soup."""
    import trimesh

    if not os.path.isfile(path):
        raise SceneLoadError(f"scene file not found: {path}")
    try:
        loaded = trimesh.load(path, force="scene", process=False)
    except Exception as exc:  # noqa: BLE001
        try:  # e.g. HM3D's Basis-compressed textures: keep the geometry, drop materials
            loaded = trimesh.load(path, force="scene", process=False, skip_materials=True)
        except Exception:  # noqa: BLE001
            first = (str(exc).strip().splitlines() or [""])[0]
            raise SceneLoadError(f"cannot read scene mesh {path}: {type(exc).__name__}: {first}") from None
    verts, faces, cols = [], [], []
    offset = 0
    for node in loaded.graph.nodes_geometry:
        transform, geom_name = loaded.graph[node]
        geom = loaded.geometry[geom_name]
        if not hasattr(geom, "faces") or len(geom.faces) == 0:
            continue
        v = np.asarray(geom.vertices, dtype=np.float64)
        v = v @ transform[:3, :3].T + transform[:3, 3]
        f = np.asarray(geom.faces, dtype=np.int64)
        if np.linalg.det(transform[:3, :3]) < 0:  # mirrored node: keep faces outward
            f = f[:, ::-1]
        verts.append(v.astype(np.float32))
        faces.append(f + offset)
        cols.append(_geometry_colors(geom))
        offset += len(v)
    if not faces:
        raise SceneLoadError(f"scene mesh {path} has no triangles")
    return MeshData(
        vertices=np.concatenate(verts),
        faces=np.concatenate(faces),
        colors=np.concatenate(cols),
    )


_SEM_LINE = re.compile(r'^\s*(\d+)\s*,\s*([0-9A-Fa-f]{6})\s*,\s*"(.*)"\s*,\s*(-?\d+)\s*$')


def read_semantic_txt(path: str) -> Dict[int, Tuple[int, str, int]]:
    """HM3D ``<id>.semantic.txt`` -> {rgb packed as 0xRRGGBB: (object_id, category, region)}."""
    table: Dict[int, Tuple[int, str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip() or (lineno == 1 and not line[0].isdigit()):
                continue
            m = _SEM_LINE.match(line)
            if m is None:
                raise SceneLoadError(
                    f"{path}:{lineno}: expected object_id,HEXCOLOR,\"category\",region_id, "
                    f"got {line.strip()!r}"
                )
            table[int(m.group(2), 16)] = (int(m.group(1)), m.group(3), int(m.group(4)))
    return table


def semantic_paths(scene_path: str) -> Optional[Tuple[str, str]]:
    """(semantic.glb, semantic.txt) beside a scene, or None. Handles ``x.basis.glb`` too."""
    d, base = os.path.split(scene_path)
    stem = base
    for suffix in (".basis.glb", ".glb", ".obj", ".ply"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    glb = os.path.join(d, stem + ".semantic.glb")
    txt = os.path.join(d, stem + ".semantic.txt")
    if os.path.isfile(glb) and os.path.isfile(txt):
        return glb, txt
    return None


def load_semantic_mesh(scene_path: str) -> Optional[MeshData]:
    """The semantic mesh with per-vertex object ids, or None when the pair is absent."""
    paths = semantic_paths(scene_path)
    if paths is None:
        return None
    glb, txt = paths
    table = read_semantic_txt(txt)
    mesh = load_mesh(glb)
    rgb = mesh.colors[:, :3].astype(np.int64)
    packed = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    keys = np.array(sorted(table), dtype=np.int64)
    vals = np.array([table[k][0] for k in keys], dtype=np.int32)
    ids = np.zeros(len(packed), np.int32)
    if len(keys):
        pos = np.clip(np.searchsorted(keys, packed), 0, len(keys) - 1)
        hit = keys[pos] == packed
        ids[hit] = vals[pos[hit]]
    mesh.ids = ids
    return mesh
