"""Readers for the scene files: HM3D ``.semantic.txt`` and ``.mosnav_meta.json``.

Shared by dataset building and the simulator's semantic sensor. Every error is a
``SceneFormatError`` naming the file, the line or record and the field.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Tuple

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
            raise SceneFormatError(f'{path}:{no}: line: expected object_id,HEXCOLOR,"category",region_id, got {line!r}')
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


def semantic_color_to_id(objects: List[SemanticObject]) -> Dict[int, int]:
    """Map a packed 0xRRGGBB colour to its object id (for a semantic sensor)."""
    return {int(o.color_hex, 16): o.object_id for o in objects}


def _check(cond, path, where, field, msg):
    if not cond:
        raise SceneFormatError(f"{path}: {where}: {field}: {msg}")


def _vec3(v):
    return isinstance(v, list) and len(v) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)


def _check_aabb(path, where, box):
    _check(isinstance(box, dict), path, where, "aabb", "expected an object with center and size")
    for k in ("center", "size"):
        _check(_vec3(box.get(k)), path, where, f"aabb.{k}", "expected 3 numbers")


def load_scene_meta(path: str) -> dict:
    """Load and validate ``<id>.mosnav_meta.json``; returns the parsed document."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as e:
        raise SceneFormatError(f"{path}: cannot read scene metadata: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise SceneFormatError(f"{path}:{e.lineno}: bad JSON: {e.msg}") from None
    _check(isinstance(doc, dict), path, "document", "root", "expected a JSON object")
    _check(isinstance(doc.get("schema_version"), int), path, "document", "schema_version", "expected an integer")
    _check(doc["schema_version"] == 1, path, "document", "schema_version", f"unsupported version {doc['schema_version']}")
    _check(isinstance(doc.get("scene_id"), str) and doc["scene_id"], path, "document", "scene_id", "expected a string")
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
        _check(isinstance(oid, int) and not isinstance(oid, bool), path, where, "object_id", "expected an integer")
        where = f"object {oid}"
        _check(oid not in seen, path, where, "object_id", "duplicate id")
        seen.add(oid)
        _check(isinstance(o.get("category"), str) and o["category"], path, where, "category", "expected a string")
        _check(isinstance(o.get("region_id"), int), path, where, "region_id", "expected an integer")
        _check(o["region_id"] in region_ids, path, where, "region_id", f"unknown region {o['region_id']}")
        for k in ("color", "material", "feature"):
            v = o.get(k)
            _check(isinstance(v, list) and all(isinstance(x, str) for x in v), path, where, k, "expected a list of strings")
        _check(_vec3(o.get("position")), path, where, "position", "expected 3 numbers")
        _check_aabb(path, where, o.get("aabb"))
    return doc


def scene_files(scene_dir: str) -> Dict[str, str]:
    """Paths of a scene directory ``NNNNN-<id>``'s files, keyed glb/semantic_glb/semantic_txt/meta."""
    name = os.path.basename(os.path.normpath(scene_dir))
    scene_id = name.split("-", 1)[1] if "-" in name else name
    base = os.path.join(scene_dir, scene_id)
    return {"scene_id": scene_id, "glb": base + ".glb", "semantic_glb": base + ".semantic.glb",
            "semantic_txt": base + ".semantic.txt", "meta": base + ".mosnav_meta.json"}
