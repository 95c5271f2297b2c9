"""Readers and writers for the scene files: HM3D ``.semantic.txt``, ``.mosnav_meta.json``,
and the file-frame convention of the ``.glb`` meshes.

The one implementation shared by the generator, the simulator and dataset building, so the
three cannot disagree. Every error is a ``SceneFormatError`` naming the file, the line or
record and the field.

Frames: habitat's world is Y up, -Z forward. MP3D/HM3D meshes are Z up: their scene dataset
configs tell habitat-sim so (it reads a *bare* ``.glb`` as Y up) and it turns them into the
world with file (x, y, z) -> world (x, z, -y); the generator writes its meshes Z up the same
way, with such a config (:mod:`habitat_mosnav.sims.habitat_sim_assets`) (world (x, y, z) ->
file (x, -z, y)) and says so with ``"up_axis": "z"`` in ``<id>.mosnav_meta.json``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

SEMANTIC_HEADER = "HM3D Semantic Annotations"
_HEX = re.compile(r"^[0-9A-Fa-f]{6}$")
_LINE = re.compile(r'^\s*([^,]*),\s*([^,]*),\s*"(.*)"\s*,\s*([^,]*?)\s*$')


class SceneFormatError(ValueError):
    """A scene file does not follow the format; the message says where and why."""


@dataclass(frozen=True)
class SemanticObject:
    """One line of ``<id>.semantic.txt``."""

    object_id: int
    color_hex: str  # 6 upper-case hex digits, no '#'
    category: str
    region_id: int

    @property
    def rgb(self) -> Tuple[int, int, int]:
        v = int(self.color_hex, 16)
        return (v >> 16) & 255, (v >> 8) & 255, v & 255


def read_semantic_txt(path: str) -> List[SemanticObject]:
    """Parse an HM3D semantic annotation file (``object_id,HEX,"category",region_id``).

    Objects come back in file order; ids and colours must be unique.
    """
    try:
        with open(path, "r", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise SceneFormatError(f"{path}: cannot read semantic annotations: {e.strerror}") from None
    if not lines or lines[0].strip() != SEMANTIC_HEADER:
        raise SceneFormatError(f"{path}:1: header: expected '{SEMANTIC_HEADER}'")
    out: List[SemanticObject] = []
    ids, colors = set(), set()
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise SceneFormatError(
                f'{path}:{no}: line: expected object_id,HEXCOLOR,"category",region_id, got {line!r}'
            )
        sid, hexcol, cat, sreg = m.groups()
        try:
            oid = int(sid)
        except ValueError:
            raise SceneFormatError(f"{path}:{no}: object_id: not an integer: {sid!r}") from None
        if not _HEX.match(hexcol.strip()):
            raise SceneFormatError(f"{path}:{no}: color: expected 6 hex digits, got {hexcol!r}")
        try:
            reg = int(sreg)
        except ValueError:
            raise SceneFormatError(f"{path}:{no}: region_id: not an integer: {sreg!r}") from None
        hexcol = hexcol.strip().upper()
        if oid in ids:
            raise SceneFormatError(f"{path}:{no}: object_id: duplicate id {oid}")
        if hexcol in colors:
            raise SceneFormatError(f"{path}:{no}: color: duplicate colour {hexcol}")
        ids.add(oid)
        colors.add(hexcol)
        out.append(SemanticObject(oid, hexcol, cat, reg))
    return out


def write_semantic_txt(path: str, objects: Iterable) -> None:
    """Write an HM3D annotation file from ``SemanticObject``s or
    ``(object_id, color, category, region_id)`` tuples (colour: 0xRRGGBB int or hex text)."""
    lines = [SEMANTIC_HEADER]
    for o in objects:
        if isinstance(o, SemanticObject):
            oid, col, cat, reg = o.object_id, o.color_hex, o.category, o.region_id
        else:
            oid, col, cat, reg = o
        hexcol = (
            f"{int(col):06X}"
            if isinstance(col, (int, np.integer))
            else str(col).lstrip("#").upper()
        )
        if not _HEX.match(hexcol):
            raise ValueError(f"{path}: object {oid}: color: expected 6 hex digits, got {col!r}")
        if '"' in str(cat) or "\n" in str(cat):
            raise ValueError(
                f"{path}: object {oid}: category: no quotes or newlines allowed, got {cat!r}"
            )
        lines.append(f'{int(oid)},{hexcol},"{cat}",{int(reg)}')
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("\n".join(lines) + "\n")


def semantic_color_to_id(objects: List[SemanticObject]) -> Dict[int, int]:
    """Map a packed 0xRRGGBB colour to its object id (for a semantic sensor)."""
    return {int(o.color_hex, 16): o.object_id for o in objects}


def _check(cond, path, where, field, msg):
    if not cond:
        raise SceneFormatError(f"{path}: {where}: {field}: {msg}")


def _vec3(v):
    return (
        isinstance(v, list)
        and len(v) == 3
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
    )


def _check_aabb(path, where, box):
    _check(isinstance(box, dict), path, where, "aabb", "expected an object with center and size")
    for k in ("center", "size"):
        _check(_vec3(box.get(k)), path, where, f"aabb.{k}", "expected 3 numbers")


def _read_meta_json(path: str):
    """The parsed ``<id>.mosnav_meta.json``; a one-line SceneFormatError if unreadable."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as e:
        raise SceneFormatError(f"{path}: cannot read scene metadata: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise SceneFormatError(f"{path}:{e.lineno}: bad JSON: {e.msg}") from None


def load_scene_meta(path: str) -> dict:
    """Load and validate ``<id>.mosnav_meta.json``; returns the parsed document."""
    doc = _read_meta_json(path)
    _check(isinstance(doc, dict), path, "document", "root", "expected a JSON object")
    _check(
        isinstance(doc.get("schema_version"), int),
        path,
        "document",
        "schema_version",
        "expected an integer",
    )
    _check(
        doc["schema_version"] == 1,
        path,
        "document",
        "schema_version",
        f"unsupported version {doc['schema_version']}",
    )
    _check(
        isinstance(doc.get("scene_id"), str) and doc["scene_id"],
        path,
        "document",
        "scene_id",
        "expected a string",
    )
    if "up_axis" in doc:
        _check(
            doc["up_axis"] in UP_AXES,
            path,
            "document",
            "up_axis",
            f"expected 'y' or 'z', got {doc['up_axis']!r}",
        )
    _check(isinstance(doc.get("regions"), list), path, "document", "regions", "expected a list")
    _check(isinstance(doc.get("objects"), list), path, "document", "objects", "expected a list")
    region_ids = set()
    for i, r in enumerate(doc["regions"]):
        where = f"regions[{i}]"
        _check(isinstance(r, dict), path, where, "region", "expected an object")
        _check(isinstance(r.get("region_id"), int), path, where, "region_id", "expected an integer")
        _check(isinstance(r.get("name"), str), path, where, "name", "expected a string")
        _check_aabb(path, where, r.get("aabb"))
        region_ids.add(r["region_id"])
    seen = set()
    for i, o in enumerate(doc["objects"]):
        where = f"objects[{i}]"
        _check(isinstance(o, dict), path, where, "object", "expected an object")
        oid = o.get("object_id")
        _check(
            isinstance(oid, int) and not isinstance(oid, bool),
            path,
            where,
            "object_id",
            "expected an integer",
        )
        where = f"object {oid}"
        _check(oid not in seen, path, where, "object_id", "duplicate id")
        seen.add(oid)
        _check(
            isinstance(o.get("category"), str) and o["category"],
            path,
            where,
            "category",
            "expected a string",
        )
        _check(isinstance(o.get("region_id"), int), path, where, "region_id", "expected an integer")
        _check(
            o["region_id"] in region_ids,
            path,
            where,
            "region_id",
            f"unknown region {o['region_id']}",
        )
        for k in ("color", "material", "feature"):
            v = o.get(k)
            _check(
                isinstance(v, list) and all(isinstance(x, str) for x in v),
                path,
                where,
                k,
                "expected a list of strings",
            )
        _check(_vec3(o.get("position")), path, where, "position", "expected 3 numbers")
        _check_aabb(path, where, o.get("aabb"))
    return doc


def scene_files(scene_dir: str) -> Dict[str, str]:
    """Paths of a scene directory ``NNNNN-<id>``'s files, keyed glb/semantic_glb/semantic_txt/meta."""
    name = os.path.basename(os.path.normpath(scene_dir))
    scene_id = name.split("-", 1)[1] if "-" in name else name
    base = os.path.join(scene_dir, scene_id)
    return {
        "scene_id": scene_id,
        "glb": base + ".glb",
        "semantic_glb": base + ".semantic.glb",
        "semantic_txt": base + ".semantic.txt",
        "meta": base + ".mosnav_meta.json",
    }


# ------------------------------------------------------------------ file frames
UP_AXES = ("y", "z")

#: Z-up file -> habitat's Y-up world, as habitat-sim reads a ``.glb`` stage declared Z up (gravity -Z,
#: front +Y): (x, y, z)_file -> (x, z, -y)_world. Its transpose goes world -> file.
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def world_to_file(v: np.ndarray) -> np.ndarray:
    """World (x, y, z) points -> Z-up file frame (x, -z, y); exact (a signed permutation)."""
    v = np.asarray(v)
    return np.stack([v[..., 0], -v[..., 2], v[..., 1]], axis=-1)


def file_to_world(v: np.ndarray, up_axis: str) -> np.ndarray:
    """File points -> world: unchanged for a Y-up file, (x, z, -y) for a Z-up one."""
    v = np.asarray(v)
    if up_axis == "y":
        return v
    if up_axis == "z":
        return np.stack([v[..., 0], v[..., 2], -v[..., 1]], axis=-1) + 0.0  # + 0.0: no -0.0
    raise ValueError(f"up axis must be 'y' or 'z', got {up_axis!r}")


def mesh_stem(path: str) -> str:
    """``.../<id>.basis.glb`` / ``<id>.glb`` / ``<id>.semantic.glb`` -> ``<id>``."""
    base = os.path.basename(path)
    for suffix in (".semantic.glb", ".basis.glb", ".glb", ".gltf", ".obj", ".ply"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return os.path.splitext(base)[0]


def meta_up_axis(meta_path: str) -> Optional[str]:
    """The up axis a ``<id>.mosnav_meta.json`` declares ('y'/'z'), None when it says none.

    ``up_axis`` wins; older files only had ``units`` (e.g. "meters, Y up")."""
    doc = _read_meta_json(meta_path)
    if not isinstance(doc, dict):
        raise SceneFormatError(f"{meta_path}: document: root: expected a JSON object")
    if "up_axis" in doc:
        up = str(doc["up_axis"]).strip().lower()
        if up not in UP_AXES:
            raise SceneFormatError(
                f"{meta_path}: document: up_axis: expected 'y' or 'z', got {doc['up_axis']!r}"
            )
        return up
    units = str(doc.get("units", "")).lower()
    if "z up" in units or "z-up" in units:
        return "z"
    if "y up" in units or "y-up" in units:
        return "y"
    return None


def scene_up_axis(scene_path: str, option: str = "auto") -> str:
    """'y' or 'z': the up axis of a scene mesh file (render or semantic ``.glb``).

    ``option`` 'y'/'z' wins. 'auto' follows habitat-sim: a ``.glb``/``.gltf`` is Z up (MP3D
    and HM3D files are, and so are the generator's), anything else Y up; a
    ``<id>.mosnav_meta.json`` beside the file overrides this with its ``up_axis`` (or, in
    older files, ``units``). A bad ``option`` is a ``ValueError`` naming the accepted values.
    """
    opt = (option or "auto").strip().lower()
    if opt in UP_AXES:
        return opt
    if opt != "auto":
        raise ValueError(f"up_axis must be auto, y or z, got {option!r}")
    meta = os.path.join(os.path.dirname(scene_path), mesh_stem(scene_path) + ".mosnav_meta.json")
    if os.path.isfile(meta):
        up = meta_up_axis(meta)
        if up is not None:
            return up
    return "z" if scene_path.lower().endswith((".glb", ".gltf")) else "y"
