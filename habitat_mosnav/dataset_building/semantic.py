"""Reading HM3D semantic annotations: ``<id>.semantic.txt`` and the vertex colours of
``<id>.semantic.glb``.

``semantic.txt`` is a header line (``HM3D Semantic Annotations``) then one line per object,
``object_id,HEXCOLOR,"category",region_id``. In ``semantic.glb`` each object's vertices
carry its colour, so the object's geometry is the set of vertices of that colour.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from habitat_mosnav.dataset_building.common import BuildError, norm_text
from habitat_mosnav.scenes import io as scene_io

UP_AXIS_CHOICES = ("auto", "y", "z")


@dataclass
class AnnotatedObject:
    """One ``semantic.txt`` line plus what the build adds: its geometry and canonical category."""

    object_id: int
    color_hex: str
    raw_category: str
    region_id: int
    vertices: Optional[np.ndarray] = None  # (N, 3) world coordinates, Y up
    category: str = ""  # canonical category (after the category map), set by extract

    @property
    def aabb_min(self) -> np.ndarray:
        return self.vertices.min(axis=0)

    @property
    def aabb_max(self) -> np.ndarray:
        return self.vertices.max(axis=0)


def read_annotations(path: Path) -> List[AnnotatedObject]:
    """``<id>.semantic.txt`` through the one parser (``habitat_mosnav.scenes.io``); a bad
    file is a one-line ``BuildError`` naming the file, line and field."""
    try:
        records = scene_io.read_semantic_txt(str(path))
    except scene_io.SceneFormatError as e:
        raise BuildError(str(e)) from None
    return [AnnotatedObject(r.object_id, r.color_hex, r.category.strip(), r.region_id) for r in records]


def resolve_up_axis(render_glb: Path, option: str = "auto") -> str:
    """'y'/'z': the up axis of a scene's meshes, decided as the simulator decides it.

    'auto' (default): the ``up_axis`` of ``<id>.mosnav_meta.json`` when present, else Z up for
    a ``.glb`` as in habitat-sim, which is right for HM3D and MP3D without any flag.
    """
    try:
        return scene_io.scene_up_axis(str(render_glb), option)
    except scene_io.SceneFormatError as e:
        raise BuildError(str(e)) from None
    except ValueError:
        raise BuildError(f"--up-axis must be one of {', '.join(UP_AXIS_CHOICES)}, got {option!r}") from None


def load_colored_vertices(path: Path, up_axis: str = "z"):
    """World-space (Y up) vertices and their RGB colours (uint8) of every mesh in a glb;
    ``up_axis`` is the file's ('z': HM3D and generated scenes, turned as habitat-sim does)."""
    import trimesh

    if up_axis not in scene_io.UP_AXES:
        raise BuildError(f"up axis must be 'y' or 'z', got {up_axis!r}")
    path = Path(path)
    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as e:  # trimesh raises many types on bad files
        raise BuildError(f"{path}: cannot read mesh ({type(e).__name__}: {e})") from None
    verts, cols = [], []
    for node in scene.graph.nodes_geometry:
        transform, geom_name = scene.graph[node]
        geom = scene.geometry[geom_name]
        if not hasattr(geom, "vertices") or len(geom.vertices) == 0:
            continue
        visual = geom.visual
        if getattr(visual, "kind", None) == "vertex":
            c = np.asarray(visual.vertex_colors)[:, :3]
        elif getattr(visual, "kind", None) == "texture":
            c = np.asarray(visual.to_color().vertex_colors)[:, :3]
        else:
            continue
        v = trimesh.transformations.transform_points(np.asarray(geom.vertices, dtype=np.float64), transform)
        verts.append(v)
        cols.append(c.astype(np.uint8))
    if not verts:
        raise BuildError(f"{path}: no vertex colours found (expected a semantic mesh with per-object vertex colours)")
    return scene_io.file_to_world(np.concatenate(verts), up_axis), np.concatenate(cols)


def attach_vertices(objects: List[AnnotatedObject], vertices: np.ndarray, colors: np.ndarray,
                    tolerance: int = 2) -> Dict[str, int]:
    """Give each object the vertices of its colour; returns counts (matched / unmatched).

    Colours are matched exactly, then (for exporters that round) to the nearest annotation
    colour within ``tolerance`` per channel.
    """
    key = colors[:, 0].astype(np.int64) << 16 | colors[:, 1].astype(np.int64) << 8 | colors[:, 2]
    by_key = {int(o.color_hex, 16): o for o in objects}
    uniq, inverse = np.unique(key, return_inverse=True)
    ann = np.array(sorted(by_key), dtype=np.int64)
    ann_rgb = np.stack([(ann >> 16) & 255, (ann >> 8) & 255, ann & 255], axis=1) if len(ann) else np.zeros((0, 3))
    groups: Dict[int, List[int]] = {}
    unmatched = 0
    for ui, k in enumerate(uniq):
        k = int(k)
        target = k if k in by_key else None
        if target is None and len(ann):
            rgb = np.array([(k >> 16) & 255, (k >> 8) & 255, k & 255])
            d = np.abs(ann_rgb - rgb).max(axis=1)
            j = int(np.argmin(d))
            if d[j] <= tolerance:
                target = int(ann[j])
        if target is None:
            unmatched += int((inverse == ui).sum())
            continue
        groups.setdefault(target, []).append(ui)
    for k, uis in groups.items():
        mask = np.isin(inverse, uis)
        by_key[k].vertices = vertices[mask]
    return {"vertices_unmatched": unmatched,
            "objects_without_geometry": sum(1 for o in objects if o.vertices is None)}


DEFAULT_DROP = ("wall", "floor", "ceiling", "unknown", "misc", "objects", "void", "unlabeled",
                "door frame", "window frame", "frame", "beam", "column", "pillar",
                "baseboard", "wall trim", "ceiling trim", "stairs", "railing")


def map_category(raw: str, category_map: Dict[str, Optional[str]]) -> Optional[str]:
    """Canonical category (None = drop) through the user's map; default lower-cased text."""
    name = norm_text(raw)
    if name in category_map:
        mapped = category_map[name]
        return norm_text(mapped) if mapped else None
    return name or None
