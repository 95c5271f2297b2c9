"""Scene geometry for the CPU simulator: one flat triangle soup per scene, read with trimesh.

A scene is ``<id>.glb`` (render mesh with vertex colours). When ``<id>.semantic.glb`` and
``<id>.semantic.txt`` lie beside it (HM3D's annotation pair), the semantic mesh is read too
and each vertex gets the object id whose annotation colour it carries (0 = no object).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from habitat_mosnav.scenes.io import Z_UP_TO_Y_UP, SceneFormatError, file_to_world, mesh_stem, read_semantic_txt
from habitat_mosnav.scenes.io import SemanticObject as SemanticRecord
from habitat_mosnav.scenes.io import scene_up_axis as _io_scene_up_axis

__all__ = ["Z_UP_TO_Y_UP", "MeshData", "SceneLoadError", "load_mesh", "load_semantic_mesh", "scene_up_axis",
           "read_semantic_table", "semantic_paths", "SemanticScene", "SemanticObject"]


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


def scene_up_axis(scene_path: str, option: str = "auto") -> str:
    """'y' or 'z': the scene file's up axis (``habitat.simulator.mosnav_mesh.up_axis``).

    Same rule as habitat-sim and dataset building (``habitat_mosnav.scenes.io.scene_up_axis``):
    'y'/'z' win; 'auto' reads a ``.glb`` as Z up unless ``<id>.mosnav_meta.json`` beside it
    declares its ``up_axis``.
    """
    try:
        return _io_scene_up_axis(scene_path, option)
    except SceneFormatError as exc:
        raise SceneLoadError(str(exc)) from None
    except ValueError as exc:
        raise ValueError(f"habitat.simulator.mosnav_mesh.{exc}") from None


def load_mesh(path: str, up: str = "y") -> MeshData:
    """Read a .glb/.obj/.ply scene into one world-frame (Y up) triangle soup; ``up='z'``
    turns a Z-up file into habitat's frame as habitat-sim does."""
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
    allv = file_to_world(np.concatenate(verts), up).astype(np.float32)
    return MeshData(
        vertices=allv,
        faces=np.concatenate(faces),
        colors=np.concatenate(cols),
    )


def read_semantic_table(path: str) -> Dict[int, SemanticRecord]:
    """HM3D ``<id>.semantic.txt`` -> {rgb packed as 0xRRGGBB: its annotation line}, read by
    the one parser in ``habitat_mosnav.scenes.io``; errors become ``SceneLoadError``."""
    try:
        objects = read_semantic_txt(path)
    except SceneFormatError as exc:
        raise SceneLoadError(str(exc)) from None
    return {int(o.color_hex, 16): o for o in objects}


def semantic_paths(scene_path: str) -> Optional[Tuple[str, str]]:
    """(semantic.glb, semantic.txt) beside a scene, or None. Handles ``x.basis.glb`` too."""
    d = os.path.dirname(scene_path)
    stem = mesh_stem(scene_path)
    glb = os.path.join(d, stem + ".semantic.glb")
    txt = os.path.join(d, stem + ".semantic.txt")
    if os.path.isfile(glb) and os.path.isfile(txt):
        return glb, txt
    return None


def load_semantic_mesh(scene_path: str, up: str = "y") -> Optional[MeshData]:
    """The semantic mesh with per-vertex object ids, or None when the pair is absent."""
    paths = semantic_paths(scene_path)
    if paths is None:
        return None
    from habitat_mosnav.scenes.gltf import read_semantic_vertices

    glb, txt = paths
    table = read_semantic_table(txt)
    keys = np.array(sorted(table), dtype=np.int64)
    try:  # COLOR_0 read as linear (habitat-sim's reading of a .glb) or sRGB, whichever matches
        v, f, rgb8, _ = read_semantic_vertices(glb, keys)
    except SceneFormatError as exc:
        raise SceneLoadError(str(exc)) from None
    mesh = MeshData(vertices=file_to_world(v, up).astype(np.float32), faces=f,
                    colors=np.concatenate([rgb8, np.full((len(rgb8), 1), 255, np.uint8)], axis=1))
    rgb = rgb8.astype(np.int64)
    packed = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    vals = np.array([table[k].object_id for k in keys], dtype=np.int32)
    ids = np.zeros(len(packed), np.int32)
    if len(keys):
        pos = np.clip(np.searchsorted(keys, packed), 0, len(keys) - 1)
        hit = keys[pos] == packed
        ids[hit] = vals[pos[hit]]
    mesh.ids = ids
    return mesh


class _Category:
    def __init__(self, index: int, name: str) -> None:
        self._index = index
        self._name = name

    def name(self, mapping: str = "") -> str:
        return self._name

    def index(self, mapping: str = "") -> int:
        return self._index


class _AABB:
    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.center = ((lo + hi) / 2).astype(np.float32)
        self.sizes = (hi - lo).astype(np.float32)


class SemanticObject:
    """Like ``habitat_sim.scene.SemanticObject``: ``semantic_id``, ``id``, ``category``,
    ``aabb`` (``center``, ``sizes``; world frame) and ``region_id``."""

    def __init__(self, semantic_id: int, category: _Category, region_id: int, aabb: Optional[_AABB]):
        self.semantic_id = semantic_id
        self.id = f"{semantic_id}"
        self.category = category
        self.region_id = region_id
        self.aabb = aabb


class SemanticScene:
    """The subset of ``habitat_sim.scene.SemanticScene`` built from the HM3D pair."""

    def __init__(self, objects: List[SemanticObject], categories: List[_Category]) -> None:
        self.objects = objects
        self.categories = categories

    @classmethod
    def from_mesh(cls, scene_path: str, mesh: Optional[MeshData]) -> "SemanticScene":
        paths = semantic_paths(scene_path)
        if paths is None:
            return cls([], [])
        table = read_semantic_table(paths[1])
        cats: Dict[str, _Category] = {}
        boxes: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        if mesh is not None and mesh.ids is not None and len(mesh.ids):
            ids = mesh.ids
            order = np.argsort(ids, kind="stable")
            sid = ids[order]
            cuts = np.r_[0, np.nonzero(np.diff(sid))[0] + 1, len(sid)]
            for a, b in zip(cuts[:-1], cuts[1:]):
                v = mesh.vertices[order[a:b]]
                boxes[int(sid[a])] = (v.min(0), v.max(0))
        objects = []
        for rec in sorted(table.values(), key=lambda r: r.object_id):
            c = cats.setdefault(rec.category, _Category(len(cats), rec.category))
            box = boxes.get(rec.object_id)
            objects.append(SemanticObject(rec.object_id, c, rec.region_id, _AABB(*box) if box else None))
        return cls(objects, list(cats.values()))
