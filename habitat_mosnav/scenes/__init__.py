"""Procedural apartments in HM3D's file layout, and readers for those files.

numpy/trimesh/scipy only: no habitat import, so dataset building and tests can use it
on any machine.
"""

from habitat_mosnav.scenes.generator import SceneInfo, generate_scene, generate_scenes, scene_id_for
from habitat_mosnav.scenes.io import (
    SEMANTIC_HEADER,
    SceneFormatError,
    SemanticObject,
    load_scene_meta,
    read_semantic_txt,
    scene_files,
    scene_up_axis,
    semantic_color_to_id,
    write_semantic_txt,
)

__all__ = [
    "SceneInfo",
    "generate_scene",
    "generate_scenes",
    "scene_id_for",
    "SEMANTIC_HEADER",
    "SceneFormatError",
    "SemanticObject",
    "load_scene_meta",
    "read_semantic_txt",
    "scene_files",
    "semantic_color_to_id",
    "scene_up_axis",
    "write_semantic_txt",
]
