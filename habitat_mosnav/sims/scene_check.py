"""Cheap checks of the scene files a run will load, made before its first episode.

A broken scene file is bad input: ``mosnav-eval`` checks every scene the selected episodes
need up front (one line naming the file, exit 2) instead of failing at that scene's first
reset, maybe hours in, with one error record per episode. The checks are cheap: the
``.glb`` files' binary header and JSON chunk (not their buffers) and the ``.navmesh``
validated as :func:`~habitat_mosnav.sims.navmesh.read_navmesh` does (numpy over its
arrays, no per-polygon structures). What only a full load finds still fails at reset.
"""

from __future__ import annotations

import os
import struct
from typing import Optional

from habitat_mosnav.scenes.gltf import CHUNK_JSON, glb_header
from habitat_mosnav.scenes.gltf_checks import parse_json
from habitat_mosnav.scenes.io import SceneFormatError, mesh_stem
from habitat_mosnav.sims.navmesh import NavMeshError, NavMeshUnsupported, validate_navmesh

__all__ = ["SceneFormatError", "NavMeshError", "check_glb_header", "check_scene", "scene_navmesh"]

#: a JSON chunk larger than this is refused (HM3D's are a few MB)
MAX_JSON_CHUNK = 256 << 20


def check_glb_header(path: str) -> None:
    """A binary glTF 2 whose declared length fits the file and whose first chunk is a JSON
    object (SceneFormatError naming the file and the part otherwise); reads the header and
    the JSON chunk only, with :mod:`~habitat_mosnav.scenes.gltf`'s own checks of both."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(20)
            length = glb_header(path, head[:12], size if len(head) == 20 else 0)
            clen, ctype = struct.unpack_from("<II", head, 12)
            if ctype != CHUNK_JSON:
                raise SceneFormatError(f"{path}: chunk at byte 12: the first chunk must be JSON")
            if clen > length - 20 or clen > MAX_JSON_CHUNK:
                raise SceneFormatError(
                    f"{path}: JSON chunk: length {clen} exceeds the file "
                    f"(or {MAX_JSON_CHUNK} bytes)"
                )
            chunk = fh.read(clen)
    except OSError as exc:
        raise SceneFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    parse_json(path, chunk)


def scene_navmesh(scene_path: str, option: str = "") -> Optional[str]:
    """The ``.navmesh`` the simulators read for ``scene_path`` (as ``MosNavMeshSim-v0``'s
    ``navmesh`` option: "none" = none, a path, or ``<scene>.navmesh`` beside it)."""
    if option and option.lower() == "none":
        return None
    if option:
        return option
    cand = os.path.splitext(scene_path)[0] + ".navmesh"
    return cand if os.path.isfile(cand) else None


def check_scene(scene_path: str, navmesh_option: str = "", detour: bool = False) -> None:
    """The cheap checks of one scene's files: its ``.glb`` and ``.semantic.glb`` headers and
    its ``.navmesh`` (SceneFormatError / NavMeshError, one line naming the file; ``detour``:
    habitat-sim reads it, see :func:`~habitat_mosnav.sims.navmesh.validate_navmesh`). A
    file that is not there is left to the dataset's own check (it names the missing scene)."""
    if os.path.isfile(scene_path):
        check_glb_header(scene_path)
    semantic = os.path.join(os.path.dirname(scene_path), mesh_stem(scene_path) + ".semantic.glb")
    if os.path.isfile(semantic):
        check_glb_header(semantic)
    navmesh = scene_navmesh(scene_path, navmesh_option)
    if navmesh is not None:
        try:
            validate_navmesh(navmesh, detour=detour)
        except NavMeshUnsupported:
            if navmesh_option:
                raise
            # beside the scene: the CPU simulator warns and computes navigability from the mesh
