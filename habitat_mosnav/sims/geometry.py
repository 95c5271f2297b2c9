"""Scene geometry for the CPU simulator: one flat triangle soup per scene, read with trimesh.

A scene is ``<id>.glb`` (render mesh with vertex colours). When ``<id>.semantic.glb`` and
``<id>.semantic.txt`` lie beside it (HM3D's annotation pair), the semantic mesh is read too
and each vertex gets the object id whose annotation colour it carries (0 = no object).
"""

from __future__ import annotations

import importlib.util

import io
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from habitat_mosnav.scenes.io import (
    Z_UP_TO_Y_UP,
    SceneFormatError,
    file_to_world,
    mesh_stem,
    meta_up_axis,
    read_semantic_txt,
)
from habitat_mosnav.scenes.io import SemanticObject as SemanticRecord
from habitat_mosnav.scenes.io import scene_up_axis as _io_scene_up_axis

__all__ = [
    "Z_UP_TO_Y_UP",
    "MeshData",
    "SceneLoadError",
    "load_mesh",
    "load_semantic_mesh",
    "scene_up_axis",
    "read_semantic_table",
    "semantic_paths",
    "semantic_textures_of",
    "SemanticScene",
    "SemanticObject",
    "SemanticRegion",
    "SemanticCategory",
    "AABB",
    "OBB",
    "object_boxes",
]


logger = logging.getLogger(__name__)


class SceneLoadError(RuntimeError):
    """A scene file that cannot be read; the message names the file."""


@dataclass
class MeshData:
    """Triangle soup in world coordinates (Y up), ready for navigability and rendering."""

    vertices: np.ndarray  # (V, 3) float32
    faces: np.ndarray  # (F, 3) int64
    colors: np.ndarray  # (V, 4) uint8
    ids: Optional[np.ndarray] = None  # (V,) int32 object ids (semantic mesh only)
    uv: Optional[np.ndarray] = None  # (V, 2) float32 texture coordinates (OpenGL: v up)
    face_texture: Optional[np.ndarray] = None  # (F,) int32 index into ``textures``, -1 none
    textures: List[np.ndarray] = field(default_factory=list)  # RGBA uint8 (H, W, 4), row 0 = top
    #: semantic mesh only: object id per texel (H, W) float32, row 0 = top; with them ``uv``
    #: holds glTF UVs (v down) and ``face_texture`` indexes these
    id_textures: List[np.ndarray] = field(default_factory=list)

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
        up = _io_scene_up_axis(scene_path, option)
        declared = None
        if (option or "auto").strip().lower() != "auto":
            meta = os.path.join(
                os.path.dirname(scene_path), mesh_stem(scene_path) + ".mosnav_meta.json"
            )
            declared = meta_up_axis(meta) if os.path.isfile(meta) else None
    except SceneFormatError as exc:
        raise SceneLoadError(str(exc)) from None
    except ValueError as exc:
        raise ValueError(f"habitat.simulator.mosnav_mesh.{exc}") from None
    if declared is not None and declared != up and (scene_path, up) not in _WARNED_UP:
        _WARNED_UP.add((scene_path, up))
        logger.warning(
            "habitat.simulator.mosnav_mesh.up_axis=%s contradicts %s (up_axis %s): the scene is "
            "loaded rotated; use up_axis=auto",
            up,
            meta,
            declared,
        )
    return up


_WARNED_UP: set = set()


_BASIS_EXT = ("KHR_texture_basisu", "GOOGLE_texture_basis")
_BASIS_MIME = ("image/ktx2", "image/x-basis")


def _decode_basis(data: bytes) -> np.ndarray:
    """RGBA uint8 (H, W, 4) of a KTX2 (Basis payload) or ``.basis`` image (opengl_basisu)."""
    import opengl_basisu

    tex = opengl_basisu.open(bytes(data))
    img = tex.transcode(opengl_basisu.Target.RGBA8)
    return np.asarray(img.data, np.uint8).reshape(img.height, img.width, 4)


def basis_glb_to_png_glb(path: str, data: bytes) -> bytes:
    """A ``.glb`` whose Basis Universal textures (``KHR_texture_basisu`` / image/ktx2, and
    ``GOOGLE_texture_basis`` / image/x-basis, as habitat-sim's importer takes) are decoded
    and stored again as PNG, so that trimesh reads them. A texture that cannot be decoded
    is dropped with one warning line naming the file and the image."""
    from PIL import Image

    from habitat_mosnav.scenes.gltf import pack_glb, split_glb

    try:
        gltf, bin_chunk = split_glb(path, data)
    except SceneFormatError:
        return data  # not a glTF binary: trimesh says what it makes of it
    used = set(gltf.get("extensionsUsed", [])) | set(gltf.get("extensionsRequired", []))
    if not used & set(_BASIS_EXT):
        return data
    if importlib.util.find_spec("opengl_basisu") is None:
        raise SceneFormatError(
            f"{path}: Basis Universal textures need the optional package "
            "opengl-basisu: pip install 'habitat_mosnav[hm3d]' (Python 3.10+; "
            "on Python 3.9 run it on habitat-sim: --simulator habitat-sim)"
        )
    blob = bytearray(bin_chunk)
    views = gltf.setdefault("bufferViews", [])
    images = gltf.setdefault("images", [])
    decoded: Dict[int, Optional[int]] = {}

    def png_image(src: int) -> Optional[int]:
        if src in decoded:
            return decoded[src]
        decoded[src] = None
        im = images[src] if 0 <= src < len(images) else {}
        try:
            if "bufferView" not in im:
                raise ValueError("only images inside the .glb are read")
            bv = views[im["bufferView"]]
            raw = bytes(
                bin_chunk[bv.get("byteOffset", 0) : bv.get("byteOffset", 0) + bv["byteLength"]]
            )
            rgba = _decode_basis(raw)
        except Exception as exc:  # noqa: BLE001 - one line, the texture is dropped
            logger.warning(
                "%s: image %d (%s) cannot be decoded (%s); its faces render untextured",
                path,
                src,
                im.get("mimeType", "?"),
                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
            )
            return None
        buf = io.BytesIO()
        Image.fromarray(rgba, "RGBA").save(buf, format="PNG", compress_level=1)
        png = buf.getvalue()
        while len(blob) % 4:
            blob.append(0)
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(png)})
        blob.extend(png)
        images.append({"bufferView": len(views) - 1, "mimeType": "image/png"})
        decoded[src] = len(images) - 1
        return decoded[src]

    for tex in gltf.get("textures", []):
        ext = tex.get("extensions", {})
        for name in _BASIS_EXT:
            if name in ext:
                new = png_image(int(ext[name].get("source", -1)))
                ext.pop(name)
                if new is None:
                    tex.pop("source", None)
                else:
                    tex["source"] = new
        if (
            "source" in tex
            and 0 <= tex["source"] < len(images)
            and images[tex["source"]].get("mimeType") in _BASIS_MIME
        ):
            new = png_image(int(tex["source"]))
            if new is None:
                tex.pop("source")
            else:
                tex["source"] = new
        if not ext:
            tex.pop("extensions", None)
    for key in ("extensionsUsed", "extensionsRequired"):
        if key in gltf:
            gltf[key] = [e for e in gltf[key] if e not in _BASIS_EXT]
            if not gltf[key]:
                gltf.pop(key)
    if gltf.get("buffers"):
        gltf["buffers"][0]["byteLength"] = len(blob)
    elif blob:
        gltf["buffers"] = [{"byteLength": len(blob)}]
    return pack_glb(gltf, bytes(blob) if blob else None)


def _textures(geom, cache: Dict[int, int], textures: List[np.ndarray]):
    """(uv (V, 2) or None, texture index or -1) of a trimesh geometry's base colour image."""
    visual = getattr(geom, "visual", None)
    if visual is None or getattr(visual, "kind", None) != "texture":
        return None, -1
    uv = getattr(visual, "uv", None)
    mat = getattr(visual, "material", None)
    img = getattr(mat, "baseColorTexture", None) or getattr(mat, "image", None)
    if uv is None or img is None or len(uv) != len(geom.vertices):
        return None, -1
    key = id(img)
    if key not in cache:
        cache[key] = len(textures)
        textures.append(np.asarray(img.convert("RGBA"), np.uint8))
    return np.asarray(uv, np.float32), cache[key]


def load_mesh(path: str, up: str = "y") -> MeshData:
    """Read a .glb/.obj/.ply scene into one world-frame (Y up) triangle soup; ``up='z'``
    turns a Z-up file into habitat's frame as habitat-sim does. Textures (Basis ones
    decoded, see :func:`basis_glb_to_png_glb`) come with per-vertex UVs."""
    import trimesh

    from habitat_mosnav.scenes.gltf import read_checked

    if not os.path.isfile(path):
        raise SceneLoadError(f"scene file not found: {path}")
    raw = b""
    if path.lower().endswith((".glb", ".gltf")):  # trimesh only reads checked files (issue #30)
        try:
            raw = read_checked(path)
        except SceneFormatError as exc:
            raise SceneLoadError(str(exc)) from None
    try:
        if path.lower().endswith(".glb"):
            raw = basis_glb_to_png_glb(path, raw)
            loaded = trimesh.load(io.BytesIO(raw), file_type="glb", force="scene", process=False)
        else:
            loaded = trimesh.load(path, force="scene", process=False)
    except Exception as exc:  # noqa: BLE001
        try:  # e.g. HM3D's Basis-compressed textures: keep the geometry, drop materials
            loaded = trimesh.load(path, force="scene", process=False, skip_materials=True)
        except Exception:  # noqa: BLE001
            first = (str(exc).strip().splitlines() or [""])[0]
            raise SceneLoadError(
                f"cannot read scene mesh {path}: {type(exc).__name__}: {first}"
            ) from None
    verts, faces, cols, uvs, ftex = [], [], [], [], []
    textures: List[np.ndarray] = []
    tex_cache: Dict[int, int] = {}
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
        uv, ti = _textures(geom, tex_cache, textures)
        uvs.append(uv if uv is not None else np.zeros((len(v), 2), np.float32))
        ftex.append(np.full(len(f), ti, np.int32))
        offset += len(v)
    if not faces:
        raise SceneLoadError(f"scene mesh {path} has no triangles")
    allv = file_to_world(np.concatenate(verts), up).astype(np.float32)
    return MeshData(
        vertices=allv,
        faces=np.concatenate(faces),
        colors=np.concatenate(cols),
        uv=np.concatenate(uvs) if textures else None,
        face_texture=np.concatenate(ftex) if textures else None,
        textures=textures,
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


def _packed_colors(glb, keys: np.ndarray) -> List[np.ndarray]:
    """Per primitive the 0xRRGGBB colour of each vertex, as habitat-sim reads a semantic
    ``.glb``: ``COLOR_0`` (linear, turned into sRGB; sRGB bytes when that matches more
    vertices to semantic.txt, see ``gltf.decide_color_encoding``); a textured primitive
    without ``COLOR_0`` takes the texel under each vertex; otherwise black (object 0)."""
    from habitat_mosnav.scenes import gltf

    with_c = [p.color0 for p in glb.primitives if p.color0 is not None]
    encoding = gltf.decide_color_encoding(np.concatenate(with_c), keys)[0] if with_c else None
    to8 = gltf.raw8 if encoding == "srgb" else gltf.linear_to_srgb8
    out = []
    for p in glb.primitives:
        if p.color0 is not None:
            out.append(gltf.pack_rgb(to8(p.color0)[:, :3]))
        elif p.image is not None:
            img = glb.image(p.image)
            h, w = img.shape[:2]
            x = np.clip(np.floor(p.uv[:, 0] * w).astype(np.int64), 0, w - 1)
            y = np.clip(np.floor(p.uv[:, 1] * h).astype(np.int64), 0, h - 1)
            out.append(gltf.pack_rgb(img[y, x, :3]))
        else:
            out.append(np.zeros(len(p.positions), np.int64))
    return out


def _semantic_ids(
    packed: np.ndarray, table: Dict[int, SemanticRecord]
) -> Tuple[np.ndarray, Dict[int, int]]:
    """Object id per vertex colour as habitat-sim assigns them (``GenericSemanticMeshData``):
    a semantic.txt colour -> its object, black -> 0 (the Unknown object), any other colour
    -> a new id after the largest one, in order of first appearance. Returns (ids, {colour:
    id} of those extra colours)."""
    ids = np.zeros(len(packed), np.int32)
    keys = np.array(sorted(table), dtype=np.int64)
    vals = np.array([table[k].object_id for k in keys], dtype=np.int32)
    hit = np.zeros(len(packed), bool)
    if len(keys):
        pos = np.clip(np.searchsorted(keys, packed), 0, len(keys) - 1)
        hit = keys[pos] == packed
        ids[hit] = vals[pos[hit]]
    extra: Dict[int, int] = {}
    rest = ~hit & (packed != 0)
    if rest.any():
        uniq, first = np.unique(packed[rest], return_index=True)
        nxt = max([0] + [r.object_id for r in table.values()]) + 1
        for k, colour in enumerate(uniq[np.argsort(first)]):
            extra[int(colour)] = nxt + k
        ks = np.array(sorted(extra), dtype=np.int64)
        vs = np.array([extra[int(k)] for k in ks], dtype=np.int32)
        ids[rest] = vs[np.searchsorted(ks, packed[rest])]
    return ids, extra


def _id_texture(
    img: np.ndarray, lookup: Tuple[np.ndarray, np.ndarray], block: int = 512
) -> np.ndarray:
    """(H, W) float32 object id of every texel (row 0 = top of the image), as habitat-sim's
    ``convertRGBToSemanticId``: the texel's RGB as stored (no colour-space conversion) looked
    up among the object colours, 0 where none matches."""
    from habitat_mosnav.scenes import gltf

    keys, vals = lookup
    out = np.zeros(img.shape[:2], np.float32)
    for r in range(0, img.shape[0], block):
        idx = gltf.lookup_colors(gltf.pack_rgb(img[r : r + block, :, :3]), keys)
        out[r : r + block] = np.where(idx >= 0, vals[np.maximum(idx, 0)], 0)
    return out


def semantic_textures_of(scene_dataset: str, scene_path: str) -> Optional[bool]:
    """``has_semantic_textures`` of the stage in a habitat-sim scene dataset config (the
    stage ``default_attributes``, as HM3D's config sets it), or None when ``scene_dataset``
    is not a readable JSON file (habitat-sim's "default" included)."""
    import json

    if not scene_dataset or not os.path.isfile(scene_dataset):
        return None
    try:
        with open(scene_dataset, "r", encoding="utf-8") as fh:
            doc = json.load(fh)
        value = doc.get("stages", {}).get("default_attributes", {}).get("has_semantic_textures")
    except (OSError, ValueError, AttributeError) as exc:
        raise SceneLoadError(
            f"{scene_dataset}: cannot read has_semantic_textures of the stages "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return None if value is None else bool(value)


def load_semantic_mesh(
    scene_path: str, up: str = "y", textures: Optional[bool] = None
) -> Optional[MeshData]:
    """The semantic mesh, or None when the pair is absent: per-vertex colours and object ids
    (habitat-sim's rules, for boxes and untextured faces) and, with semantic textures, one
    (H, W) object-id image per base colour texture (``id_textures``) with the faces'
    ``face_texture`` and glTF UVs (``uv``, v down), which the renderer samples texel-exact.

    ``textures``: habitat-sim's ``has_semantic_textures``; None = whenever a primitive has a
    base colour texture (HM3D v0.2's semantic.glb)."""
    paths = semantic_paths(scene_path)
    if paths is None:
        return None
    from habitat_mosnav.scenes import gltf

    glb_path, txt = paths
    table = read_semantic_table(txt)
    keys = np.array(sorted(table), dtype=np.int64)
    try:
        g = gltf.read_glb(glb_path)
        if not g.primitives:
            raise SceneFormatError(f"{glb_path}: meshes: no triangle primitive")
        # habitat-sim concatenates primitives in node order (the order new colours get ids in)
        g.primitives.sort(key=lambda p: p.node)
        packed = _packed_colors(g, keys)
        use_tex = (
            any(p.image is not None for p in g.primitives) if textures is None else bool(textures)
        )
        allp = np.concatenate(packed)
        ids, extra = _semantic_ids(allp, table)
        verts, faces, uvs, ftex, off = [], [], [], [], 0
        tex_index: Dict[int, int] = {}
        id_textures: List[np.ndarray] = []
        if use_tex:  # texel colour -> id: the largest id with that colour, extra colours included
            colour_id = {k: table[k].object_id for k in table}
            colour_id.update(extra)
            colour_id.pop(0, None)
            lk = np.array(sorted(colour_id), dtype=np.int64)
            lookup = (lk, np.array([colour_id[int(k)] for k in lk], dtype=np.float32))
        for p in g.primitives:
            verts.append(p.positions)
            faces.append(p.faces + off)
            off += len(p.positions)
            ti = -1
            if use_tex and p.image is not None:
                if p.image not in tex_index:
                    tex_index[p.image] = len(id_textures)
                    id_textures.append(_id_texture(g.image(p.image), lookup))
                    g.forget_image(p.image)
                ti = tex_index[p.image]
            uvs.append(
                p.uv.astype(np.float32) if ti >= 0 else np.zeros((len(p.positions), 2), np.float32)
            )
            ftex.append(np.full(len(p.faces), ti, np.int32))
    except SceneFormatError as exc:
        raise SceneLoadError(str(exc)) from None
    rgb8 = np.stack(
        [(allp >> 16) & 255, (allp >> 8) & 255, allp & 255, np.full_like(allp, 255)], 1
    ).astype(np.uint8)
    return MeshData(
        vertices=file_to_world(np.concatenate(verts), up).astype(np.float32),
        faces=np.concatenate(faces),
        colors=rgb8,
        ids=ids,
        uv=np.concatenate(uvs) if id_textures else None,
        face_texture=np.concatenate(ftex) if id_textures else None,
        id_textures=id_textures,
    )


class SemanticCategory:
    """Like habitat-sim's ``HM3DObjectCategory``: ``index()`` and ``name()`` (mapping ignored)."""

    def __init__(self, index: int, name: str) -> None:
        self._index = index
        self._name = name

    def name(self, mapping: str = "") -> str:
        return self._name

    def index(self, mapping: str = "") -> int:
        return self._index

    def __repr__(self) -> str:
        return f"SemanticCategory({self._index}, {self._name!r})"


class _Vec3(np.ndarray):
    """A 3-vector that can also be called (``aabb.center`` and ``aabb.center()`` both work,
    as code written against habitat-sim uses either)."""

    def __call__(self) -> np.ndarray:
        return np.asarray(self)


def _vec3(v) -> _Vec3:
    return np.asarray(v, np.float32).reshape(3).view(_Vec3)


class AABB:
    """Axis-aligned box in the world frame: ``center``, ``sizes``, ``min``, ``max``."""

    def __init__(self, lo, hi) -> None:
        lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        self.min, self.max = _vec3(lo), _vec3(hi)
        self.center = _vec3((lo + hi) / 2)
        self.sizes = _vec3(hi - lo)

    def size(self) -> np.ndarray:
        return np.asarray(self.sizes)

    def __repr__(self) -> str:
        return f"AABB(center={self.center.tolist()}, sizes={self.sizes.tolist()})"


class OBB:
    """habitat-sim's ``geo.OBB`` of a semantic object (axis-aligned here, as habitat-sim
    builds them for HM3D): ``center``, ``sizes``, ``half_extents``, ``volume``. An object
    without a vertex of its own has habitat-sim's default: centre 0, sizes 0."""

    def __init__(self, center, sizes) -> None:
        self.center = np.asarray(center, np.float32).reshape(3)
        self.sizes = np.asarray(sizes, np.float32).reshape(3)
        self.half_extents = self.sizes / 2
        self.volume = float(np.prod(self.sizes.astype(np.float64)))

    def __repr__(self) -> str:
        return f"OBB(center={self.center.tolist()}, sizes={self.sizes.tolist()})"


def object_boxes(mesh: MeshData) -> Dict[int, AABB]:
    """{packed colour: box} as habitat-sim 0.3.3 builds HM3D object boxes
    (``SemanticScene::buildSemanticOBBsFromCCs`` with ``ccLargestVolToUseForBBox_ = 1``):
    vertices merged by (position, colour) like ``MeshTools::removeDuplicates``, joined by
    triangle edges between vertices of one colour; per colour the connected component
    whose box has the largest volume (ties: the component found last, walking vertices in
    order), so a stray fragment elsewhere in the house does not stretch the box."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    colors = mesh.colors[:, :3].astype(np.int64)
    packed = (colors[:, 0] << 16) | (colors[:, 1] << 8) | colors[:, 2]
    v = np.ascontiguousarray(mesh.vertices, np.float32)
    rows = np.concatenate([v.view(np.int32).reshape(-1, 3), packed[:, None].astype(np.int32)], 1)
    _, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    order = np.argsort(first, kind="stable")  # unique vertices in order of first appearance
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    node = rank[inv]
    n = len(order)
    pos = v[first[order]]
    col = packed[first[order]]
    f = node[mesh.faces]
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 0]])
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 2]])
    keep = col[a] == col[b]
    graph = coo_matrix((np.ones(int(keep.sum()), np.int8), (a[keep], b[keep])), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    # components numbered in order of their first vertex, as habitat-sim's DFS finds them
    _, cfirst, cinv = np.unique(comp, return_index=True, return_inverse=True)
    corder = np.argsort(cfirst, kind="stable")
    crank = np.empty(len(corder), np.int64)
    crank[corder] = np.arange(len(corder))
    comp = crank[cinv.reshape(-1)]
    nc = len(corder)
    lo = np.full((nc, 3), np.inf, np.float32)
    hi = np.full((nc, 3), -np.inf, np.float32)
    np.minimum.at(lo, comp, pos)
    np.maximum.at(hi, comp, pos)
    vol = np.prod((hi - lo).astype(np.float32), axis=1)
    ccol = np.zeros(nc, np.int64)
    ccol[comp] = col
    boxes: Dict[int, AABB] = {}
    best: Dict[int, float] = {}
    for c in range(nc):  # later components win ties (habitat-sim's multimap crbegin)
        k = int(ccol[c])
        if k not in best or vol[c] >= best[k]:
            best[k] = float(vol[c])
            boxes[k] = AABB(lo[c], hi[c])
    return boxes


def _union(boxes) -> Optional[AABB]:
    boxes = [b for b in boxes if b is not None]
    if not boxes:
        return None
    return AABB(np.min([b.min for b in boxes], 0), np.max([b.max for b in boxes], 0))


class SemanticRegion:
    """Like habitat-sim's HM3D region: ``index`` (the region id of semantic.txt, -1 for the
    Unknown object's), ``id`` (its string), ``objects``, ``aabb`` (union of its objects'),
    ``category`` (None: HM3D regions have none), ``level`` (None)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = str(index)
        self.objects: List["SemanticObject"] = []
        self.category = None
        self.level = None
        self.aabb: Optional[AABB] = None


class SemanticObject:
    """Like habitat-sim's ``HM3DObjectInstance``: ``semantic_id`` (the id in semantic.txt),
    ``id`` = ``"{category}_{semantic_id}"``, ``category`` (``name()``, ``index()``),
    ``region`` (and ``region_id``), ``aabb`` (world frame, None when the semantic mesh has
    no vertex of the object, e.g. one painted only into a semantic texture), ``obb`` (the
    same box as habitat-sim's ``obb``; centre 0 and sizes 0 without vertices, as there).

    habitat-sim 0.3.3's own ``aabb`` is a magnum ``Range3D`` joined with the world origin
    (``OBB::toAABB`` starts from an empty range at 0) and has no ``sizes``: here ``aabb`` is
    the object's true box, the one both simulators agree on through ``obb``."""

    def __init__(
        self,
        semantic_id: int,
        category: SemanticCategory,
        region: SemanticRegion,
        aabb: Optional[AABB],
    ) -> None:
        self.semantic_id = semantic_id
        self.id = f"{category.name()}_{semantic_id}"
        self.category = category
        self.region = region
        self.region_id = region.index
        self.aabb = aabb
        self.obb = (
            OBB(aabb.center, aabb.sizes) if aabb is not None else OBB(np.zeros(3), np.zeros(3))
        )


class SemanticScene:
    """habitat-sim's ``SemanticScene`` as its HM3D loader builds it from ``semantic.txt``:
    ``objects`` sorted by id with an ``Unknown`` object (id 0, region -1) first, so that
    ``objects[i]`` is object ``i`` when the ids run 1..N (habitat's top_down_map relies on
    it); ``categories`` by first appearance (``Unknown`` = 0); ``regions`` sorted by id;
    ``levels`` empty (HM3D has none); ``aabb`` of all annotated objects."""

    def __init__(
        self,
        objects: List[SemanticObject],
        categories: List[SemanticCategory],
        regions: List[SemanticRegion],
    ) -> None:
        self.objects = objects
        self.categories = categories
        self.regions = regions
        self.levels: List[Any] = []
        self.aabb = _union(o.aabb for o in objects if o.semantic_id != 0)

    @classmethod
    def from_mesh(cls, scene_path: str, mesh: Optional[MeshData]) -> "SemanticScene":
        paths = semantic_paths(scene_path)
        if paths is None:
            return cls([], [], [])
        table = read_semantic_table(paths[1])
        by_colour: Dict[int, AABB] = {}
        if mesh is not None and len(mesh.faces):
            by_colour = object_boxes(mesh)
        boxes = {r.object_id: by_colour[k] for k, r in table.items() if k in by_colour}
        if 0 in by_colour:
            boxes.setdefault(0, by_colour[0])  # the Unknown object: black vertices
        records = [(0, "Unknown", -1)] + sorted(
            ((r.object_id, r.category, r.region_id) for r in table.values() if r.object_id != 0)
        )
        cats: Dict[str, SemanticCategory] = {}
        regions: Dict[int, SemanticRegion] = {}
        objects = []
        for oid, cat, rid in records:
            c = cats.setdefault(cat, SemanticCategory(len(cats), cat))
            reg = regions.setdefault(rid, SemanticRegion(rid))
            obj = SemanticObject(oid, c, reg, boxes.get(oid))
            reg.objects.append(obj)
            objects.append(obj)
        for reg in regions.values():
            reg.aabb = _union(o.aabb for o in reg.objects)
        return cls(objects, list(cats.values()), [regions[k] for k in sorted(regions)])
