"""Scene geometry for the CPU simulator: one flat triangle soup per scene, read with trimesh.

A scene is ``<id>.glb`` (render mesh with vertex colours). When ``<id>.semantic.glb`` and
``<id>.semantic.txt`` lie beside it (HM3D's annotation pair), the semantic mesh is read too
and each vertex gets the object id whose annotation colour it carries (0 = no object).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

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


#: habitat-sim's frame for ``.glb`` stages (MP3D, HM3D): gravity -Z, front +Y, turned into
#: habitat's Y-up / -Z-forward world: (x, y, z)_file -> (x, z, -y)_world
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def _stem(scene_path: str) -> str:
    base = os.path.basename(scene_path)
    for suffix in (".basis.glb", ".glb", ".gltf", ".obj", ".ply"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return os.path.splitext(base)[0]


def scene_up_axis(scene_path: str, option: str = "auto") -> str:
    """'y' or 'z': the file's up axis.

    ``option`` 'y'/'z' wins. 'auto' follows habitat-sim: a ``.glb`` stage is Z-up (MP3D and
    HM3D files are), anything else Y-up; a generator metadata file beside the scene
    (``<id>.mosnav_meta.json``) overrides this with its ``up_axis`` or ``units`` field.
    """
    opt = (option or "auto").strip().lower()
    if opt in ("y", "z"):
        return opt
    if opt != "auto":
        raise ValueError(f"habitat.simulator.mosnav_mesh.up_axis must be auto, y or z, got {option!r}")
    meta = os.path.join(os.path.dirname(scene_path), _stem(scene_path) + ".mosnav_meta.json")
    if os.path.isfile(meta):
        import json

        try:
            with open(meta, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as exc:
            raise SceneLoadError(f"cannot read {meta}: {exc}") from None
        up = str(doc.get("up_axis", "")).strip().lower()
        if up in ("y", "z"):
            return up
        units = str(doc.get("units", "")).lower()
        if "z up" in units or "z-up" in units:
            return "z"
        if "y up" in units or "y-up" in units:
            return "y"
    return "z" if scene_path.lower().endswith((".glb", ".gltf")) else "y"


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
    allv = np.concatenate(verts)
    if up == "z":
        allv = (allv.astype(np.float64) @ Z_UP_TO_Y_UP.T).astype(np.float32)
    return MeshData(
        vertices=allv,
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
    d = os.path.dirname(scene_path)
    stem = _stem(scene_path)
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
    glb, txt = paths
    table = read_semantic_txt(txt)
    mesh = load_mesh(glb, up)
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
        table = read_semantic_txt(paths[1])
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
        for oid, cat, region in sorted(table.values()):
            c = cats.setdefault(cat, _Category(len(cats), cat))
            box = boxes.get(oid)
            objects.append(SemanticObject(oid, c, region, _AABB(*box) if box else None))
        return cls(objects, list(cats.values()))
