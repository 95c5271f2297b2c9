"""A small binary glTF (``.glb``) reader and semantic-mesh writer, numpy only.

Why not trimesh for semantic meshes: trimesh turns ``COLOR_0`` into 8-bit sRGB-agnostic
bytes (a float linear colour loses the precision needed to recover the annotation hex),
cannot hand back a primitive's texture together with its UVs for texel work, and crashes on
some files (a ``COLOR_0`` plus a material without a base colour factor raises
``TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'``). This module reads
exactly what the semantic build needs: per triangle primitive the node-transformed
positions, the indices, ``COLOR_0`` as stored (normalised to [0, 1]), ``TEXCOORD_n`` and
the base colour texture, decoded lazily (HM3D semantic textures are large).

Colour encodings: habitat-sim treats a ``.glb``'s ``COLOR_0`` as *linear* and converts it to
sRGB before looking the hex up in ``semantic.txt`` (:func:`linear_to_srgb8`). Texture texels
are compared as stored. :func:`write_semantic_glb` writes ``COLOR_0`` linear as float32 (exact
round trip of every 8-bit sRGB value), i.e. what habitat-sim reads.

Every problem is a :class:`~habitat_mosnav.scenes.io.SceneFormatError` naming the file and
the glTF field (``accessors[3].componentType``...). Nothing is read before the document
passed :func:`~habitat_mosnav.scenes.gltf_checks.validate_document` (byte ranges, node
graph, triangle budget, external URIs: hostile files, issue #30).
"""

from __future__ import annotations

import json
import os
import stat
import struct
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from habitat_mosnav.scenes.gltf_checks import (
    COMPONENT_TYPES,
    MAX_IMAGE_BYTES,
    TYPE_SIZES,
    parse_json,
    read_uri,
)
from habitat_mosnav.scenes.gltf_checks import validate_document
from habitat_mosnav.scenes.io import SceneFormatError, mesh_stem

GLB_MAGIC = 0x46546C67  # b"glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942

_COMPONENTS = {k: np.dtype(v).type for k, v in COMPONENT_TYPES.items()}
_SIZES = TYPE_SIZES
#: Compression extensions whose data this reader cannot decode (geometry would be wrong).
_UNSUPPORTED = {"KHR_draco_mesh_compression", "EXT_meshopt_compression"}
_NORM_MAX = {
    np.int8: 127.0,
    np.uint8: 255.0,
    np.int16: 32767.0,
    np.uint16: 65535.0,
    np.uint32: 4294967295.0,
}


def linear_to_srgb(c: np.ndarray) -> np.ndarray:
    """The sRGB transfer function (IEC 61966-2-1) on values in [0, 1]."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1.0 / 2.4) - 0.055)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """Inverse of :func:`linear_to_srgb`."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.04045, c / 12.92, np.power((c + 0.055) / 1.055, 2.4))


def linear_to_srgb8(c: np.ndarray) -> np.ndarray:
    """Linear [0, 1] colours -> 8-bit sRGB, rounded (what habitat-sim compares with the hex)."""
    return np.rint(linear_to_srgb(c) * 255.0).astype(np.uint8)


def raw8(c: np.ndarray) -> np.ndarray:
    """[0, 1] colours taken as already sRGB -> 8-bit, rounded."""
    return np.rint(np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0) * 255.0).astype(np.uint8)


def pack_rgb(rgb8: np.ndarray) -> np.ndarray:
    """(..., >=3) uint8 -> 0xRRGGBB int64."""
    rgb = np.asarray(rgb8)
    out = rgb[..., 0].astype(np.int64) << 16
    out |= rgb[..., 1].astype(np.int64) << 8
    out |= rgb[..., 2]
    return out


def lookup_colors(packed: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each packed colour in the sorted ``keys``, -1 when absent."""
    if not len(keys):
        return np.full(np.shape(packed), -1, dtype=np.int64)
    pos = np.clip(np.searchsorted(keys, packed), 0, len(keys) - 1)
    return np.where(keys[pos] == packed, pos, -1)


def decide_color_encoding(color0: np.ndarray, keys: np.ndarray):
    """('linear' | 'srgb' | None, counts): the reading of ``COLOR_0`` ([0, 1] values) that
    matches more vertices to the sorted annotation colours ``keys`` (a tie goes to linear,
    habitat-sim's reading of a .glb); None when neither matches any vertex."""
    lin = int(np.count_nonzero(lookup_colors(pack_rgb(linear_to_srgb8(color0)), keys) >= 0))
    raw = int(np.count_nonzero(lookup_colors(pack_rgb(raw8(color0)), keys) >= 0))
    stats = {"vertices_matched_linear": lin, "vertices_matched_srgb": raw}
    if lin == 0 and raw == 0:
        return None, stats
    return ("linear" if lin >= raw else "srgb"), stats


@dataclass
class Primitive:
    """One triangle primitive, positions already through its node's world transform
    (glTF/file frame: turn it into habitat's world with ``io.file_to_world``)."""

    where: str  # "meshes[i].primitives[j]" (for messages)
    positions: np.ndarray  # (N, 3) float64
    faces: np.ndarray  # (F, 3) int64
    color0: Optional[np.ndarray] = None  # (N, 4) float64 in [0, 1], as stored
    uv: Optional[np.ndarray] = None  # (N, 2) float64, TEXCOORD of the base colour texture
    image: Optional[int] = None  # index into GlbFile.images
    material: Optional[int] = None
    node: int = -1  # index of the node that instances it


@dataclass
class GlbFile:
    path: str
    primitives: List[Primitive]
    image_names: List[str] = field(default_factory=list)
    _loaders: List[Callable[[], np.ndarray]] = field(default_factory=list, repr=False)
    _cache: Dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def image(self, index: int) -> np.ndarray:
        """Texture ``index`` decoded to (H, W, 3|4) uint8 (cached)."""
        if index not in self._cache:
            self._cache[index] = self._loaders[index]()
        return self._cache[index]

    def forget_image(self, index: Optional[int]) -> None:
        """Drop a decoded texture from the cache (it is decoded again if asked for)."""
        self._cache.pop(index, None)


def _err(path, where, msg):
    return SceneFormatError(f"{path}: {where}: {msg}")


def glb_header(path: str, head: bytes, size: int) -> int:
    """The length a .glb's 12-byte header declares, checked against the file's ``size``
    (a SceneFormatError naming ``path`` when it is no glTF 2 binary or is truncated)."""
    if len(head) < 12 or size < 20:
        raise _err(path, "header", "file too short for a binary glTF")
    magic, version, length = struct.unpack_from("<III", head, 0)
    if magic != GLB_MAGIC:
        raise _err(path, "header", "not a binary glTF (.glb) file (bad magic)")
    if version != 2:
        raise _err(path, "header", f"glTF version {version} is not supported (expected 2)")
    if length > size:
        raise _err(path, "header", f"declares {length} bytes but the file has {size} (truncated?)")
    return length


def split_glb(path: str, data: bytes):
    """(JSON document, first BIN chunk or b"") of a .glb's bytes; a SceneFormatError
    naming ``path`` and the part when they are not a glTF 2 binary."""
    length = glb_header(path, data[:12], len(data))
    off, doc, binary = 12, None, b""
    while off + 8 <= length:
        clen, ctype = struct.unpack_from("<II", data, off)
        chunk = data[off + 8 : off + 8 + clen]
        if len(chunk) < clen:
            raise _err(path, f"chunk at byte {off}", "truncated")
        if ctype == CHUNK_JSON and doc is None:
            doc = parse_json(path, chunk)
        elif ctype == CHUNK_BIN and not binary:
            binary = chunk
        off += 8 + clen
    if not isinstance(doc, dict):
        raise _err(path, "JSON chunk", "missing or not an object")
    return doc, binary


def read_document(path: str, data: bytes):
    """:func:`split_glb`, then :func:`~habitat_mosnav.scenes.gltf_checks.validate_document`:
    (JSON document, BIN chunk) safe to read, or to hand to another glTF reader."""
    doc, binary = split_glb(path, data)
    validate_document(path, doc, binary)
    return doc, binary


def read_checked(path: str) -> bytes:
    """The bytes of a ``.glb`` (or ``.gltf``: JSON) file whose document passed
    :func:`~habitat_mosnav.scenes.gltf_checks.validate_document`: what may be handed to
    another glTF reader (trimesh). A one-line SceneFormatError otherwise."""
    data = _read_file(path)
    if str(path).lower().endswith(".gltf"):
        validate_document(path, parse_json(path, data, "JSON"), None)
    else:
        read_document(path, data)
    return data


def check_scene_files(scene_path: str) -> None:
    """:func:`read_checked` on a scene's glTF files that exist: the scene ``.glb``/``.gltf``
    and the ``<id>.semantic.glb`` beside it. For readers that take the files themselves
    (habitat-sim loads them natively, where a hostile file can crash the process)."""
    semantic = os.path.join(os.path.dirname(scene_path), mesh_stem(scene_path) + ".semantic.glb")
    for path in (scene_path, semantic):
        if str(path).lower().endswith((".glb", ".gltf")) and os.path.isfile(path):
            read_checked(str(path))


def _read_file(path: str) -> bytes:
    """The bytes of a regular file (never a device, FIFO or socket: /dev/zero, a pipe)."""
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise SceneFormatError(f"{path}: not a regular file")
            return f.read()
    except OSError as e:
        raise SceneFormatError(f"{path}: cannot read: {e.strerror}") from None


def _get(lst, i, path, name):
    if not isinstance(lst, list) or not isinstance(i, int) or not 0 <= i < len(lst):
        raise _err(path, name, f"index {i!r} out of range")
    return lst[i]


class _Reader:
    def __init__(self, path: str, doc: dict, binary: bytes):
        self.path, self.doc, self.bin = path, doc, binary
        self.buffers: Dict[int, bytes] = {}

    def buffer(self, i: int) -> bytes:
        if i not in self.buffers:
            b = _get(self.doc.get("buffers"), i, self.path, f"buffers[{i}]")
            uri = b.get("uri") if isinstance(b, dict) else None
            if uri is None:
                data = self.bin
            else:
                data = read_uri(self.path, uri, f"buffers[{i}].uri", expected=b["byteLength"])
            if len(data) < int(b.get("byteLength", 0)):
                raise _err(
                    self.path,
                    f"buffers[{i}]",
                    f"byteLength {b.get('byteLength')} exceeds the {len(data)} bytes present",
                )
            self.buffers[i] = data
        return self.buffers[i]

    def view_bytes(self, i: int):
        where = f"bufferViews[{i}]"
        v = _get(self.doc.get("bufferViews"), i, self.path, where)
        buf = self.buffer(v.get("buffer", 0))
        start, n = int(v.get("byteOffset", 0)), int(v.get("byteLength", -1))
        if n < 0 or start + n > len(buf):
            raise _err(
                self.path,
                where,
                f"byteOffset+byteLength {start}+{n} outside its buffer ({len(buf)} bytes)",
            )
        return memoryview(buf)[start : start + n], v.get("byteStride")

    def accessor(self, i: int, normalize_ints: bool = False) -> np.ndarray:
        where = f"accessors[{i}]"
        a = _get(self.doc.get("accessors"), i, self.path, where)
        ctype = a.get("componentType")
        if ctype not in _COMPONENTS:
            raise _err(self.path, f"{where}.componentType", f"unknown component type {ctype!r}")
        if a.get("type") not in _SIZES:
            raise _err(self.path, f"{where}.type", f"unknown type {a.get('type')!r}")
        if "sparse" in a:
            raise _err(self.path, f"{where}.sparse", "sparse accessors are not supported")
        dtype = np.dtype(_COMPONENTS[ctype]).newbyteorder("<")
        k, count = _SIZES[a["type"]], int(a.get("count", 0))
        if "bufferView" not in a:
            out = np.zeros((count, k), dtype=dtype)
        else:
            data, stride = self.view_bytes(a["bufferView"])
            off = int(a.get("byteOffset", 0))
            elem = dtype.itemsize * k
            stride = int(stride or elem)
            need = off + (count - 1) * stride + elem if count else 0
            if need > len(data):
                raise _err(
                    self.path,
                    where,
                    f"{count} elements need {need} bytes, its bufferView has {len(data)}",
                )
            if stride == elem:
                out = np.frombuffer(data, dtype=dtype, count=count * k, offset=off).reshape(
                    count, k
                )
            else:  # numpy checks that the strided rows lie inside ``data``
                rows = np.ndarray(
                    (count, elem), dtype=np.uint8, buffer=data, offset=off, strides=(stride, 1)
                )
                out = np.ascontiguousarray(rows).view(dtype).reshape(count, k)
        if (normalize_ints or a.get("normalized")) and dtype.kind in "iu":
            out = out.astype(np.float64) / _NORM_MAX[dtype.type]
            if dtype.kind == "i":
                out = np.maximum(out, -1.0)
        return out

    def image_loader(self, i: int) -> Callable[[], np.ndarray]:
        where = f"images[{i}]"
        img = _get(self.doc.get("images"), i, self.path, where)

        def load():
            if "bufferView" in img:
                data = bytes(self.view_bytes(img["bufferView"])[0])
            elif "uri" in img:
                data = read_uri(self.path, img["uri"], f"{where}.uri", limit=MAX_IMAGE_BYTES)
            else:
                raise _err(self.path, where, "neither bufferView nor uri")
            mime = str(img.get("mimeType", ""))
            if mime in ("image/ktx2", "image/x-basis") or data[:4] in (b"\xabKTX", b"sB\x00\x00"):
                raise _err(
                    self.path,
                    where,
                    f"{mime or 'KTX2/Basis'} textures cannot be decoded here "
                    "(use the uncompressed semantic .glb)",
                )
            import imageio.v3 as iio

            try:
                arr = np.asarray(iio.imread(data))
            except Exception as e:  # noqa: BLE001 - imageio raises many types
                raise _err(
                    self.path, where, f"cannot decode image ({type(e).__name__}: {e})"
                ) from None
            if arr.ndim == 2:
                arr = np.stack([arr] * 3, axis=-1)
            if arr.dtype != np.uint8:
                arr = (
                    (arr.astype(np.float64) * (255.0 / np.iinfo(arr.dtype).max))
                    .round()
                    .astype(np.uint8)
                    if arr.dtype.kind in "iu"
                    else np.clip(arr * 255.0, 0, 255).round().astype(np.uint8)
                )
            return arr

        return load


def _node_matrix(node: dict) -> np.ndarray:
    if "matrix" in node:
        return np.asarray(node["matrix"], dtype=np.float64).reshape(4, 4).T  # column-major
    m = np.eye(4)
    t = node.get("translation", [0, 0, 0])
    x, y, z, w = node.get("rotation", [0, 0, 0, 1])
    s = node.get("scale", [1, 1, 1])
    r = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    m[:3, :3] = r * np.asarray(s, dtype=np.float64)[None, :]
    m[:3, 3] = t
    return m


def read_glb(path: str) -> GlbFile:
    """Parse a ``.glb``: every triangle primitive of every mesh instance of the default scene."""
    path = str(path)
    doc, binary = read_document(path, _read_file(path))
    unsupported = sorted(set(doc.get("extensionsRequired", []) or []) & _UNSUPPORTED)
    if unsupported:
        raise _err(
            path,
            "extensionsRequired",
            f"{', '.join(unsupported)} is not supported (decompress the file, e.g. gltf-transform)",
        )
    r = _Reader(path, doc, binary)
    nodes = doc.get("nodes", [])
    scenes = doc.get("scenes")
    if isinstance(scenes, list) and scenes:
        scene = _get(scenes, int(doc.get("scene", 0)), path, "scene")
        roots = list(scene.get("nodes", []))
    else:
        children = {c for n in nodes for c in n.get("children", [])}
        roots = [i for i in range(len(nodes)) if i not in children]
    images = doc.get("images", []) or []
    out = GlbFile(
        path,
        [],
        [str(im.get("name", i)) for i, im in enumerate(images)],
        [r.image_loader(i) for i in range(len(images))],
    )
    stack = [(i, np.eye(4)) for i in roots]  # a forest without cycles: validate_document
    while stack:
        ni, parent = stack.pop()
        node = _get(nodes, ni, path, f"nodes[{ni}]")
        m = parent @ _node_matrix(node)
        stack.extend((c, m) for c in node.get("children", []))
        if "mesh" in node:
            mesh = _get(doc.get("meshes"), node["mesh"], path, f"nodes[{ni}].mesh")
            for j, prim in enumerate(mesh.get("primitives", [])):
                p = _primitive(r, prim, f"meshes[{node['mesh']}].primitives[{j}]", m)
                if p is not None:
                    p.node = ni
                    out.primitives.append(p)
    return out


def _primitive(r: _Reader, prim: dict, where: str, m: np.ndarray) -> Optional[Primitive]:
    path, doc = r.path, r.doc
    ext = sorted(set(prim.get("extensions", {}) or {}) & _UNSUPPORTED)
    if ext:
        raise _err(
            path, f"{where}.extensions", f"{', '.join(ext)} is not supported (decompress the file)"
        )
    if prim.get("mode", 4) != 4:
        return None  # points / lines / strips carry no surface we label
    attrs = prim.get("attributes", {})
    if "POSITION" not in attrs:
        raise _err(path, f"{where}.attributes", "no POSITION")
    pos = r.accessor(attrs["POSITION"]).astype(np.float64)
    if pos.shape[1] != 3:
        raise _err(path, f"{where}.attributes.POSITION", "expected VEC3")
    pos = pos @ m[:3, :3].T + m[:3, 3]
    if "indices" in prim:
        idx = r.accessor(prim["indices"]).reshape(-1).astype(np.int64)
    else:
        idx = np.arange(len(pos), dtype=np.int64)
    if len(idx) % 3:
        raise _err(path, f"{where}.indices", f"{len(idx)} indices is not a multiple of 3")
    if len(idx) and (idx.min() < 0 or idx.max() >= len(pos)):
        raise _err(
            path, f"{where}.indices", f"index {int(idx.max())} outside its {len(pos)} vertices"
        )
    faces = idx.reshape(-1, 3)
    if np.linalg.det(m[:3, :3]) < 0:
        faces = faces[:, ::-1]
    p = Primitive(where, pos, faces, material=prim.get("material"))
    if "COLOR_0" in attrs:
        c = r.accessor(attrs["COLOR_0"], normalize_ints=True).astype(np.float64)
        if c.shape[0] != len(pos) or c.shape[1] not in (3, 4):
            raise _err(
                path,
                f"{where}.attributes.COLOR_0",
                f"expected {len(pos)} VEC3/VEC4 colours, got {c.shape}",
            )
        if not np.all(np.isfinite(c)):
            raise _err(path, f"{where}.attributes.COLOR_0", "non-finite colour values")
        if c.shape[1] == 3:
            c = np.concatenate([c, np.ones((len(c), 1))], axis=1)
        p.color0 = np.clip(c, 0.0, 1.0)
    mat_i = prim.get("material")
    if mat_i is not None:
        mat = _get(doc.get("materials"), mat_i, path, f"{where}.material")
        tex_ref = (mat.get("pbrMetallicRoughness") or {}).get("baseColorTexture")
        if tex_ref is not None:
            tex = _get(
                doc.get("textures"),
                tex_ref.get("index"),
                path,
                f"materials[{mat_i}].baseColorTexture.index",
            )
            src = tex.get("source")
            if src is None:
                ext = tex.get("extensions") or {}
                if ext:
                    raise _err(
                        path,
                        f"textures[{tex_ref.get('index')}]",
                        f"only compressed sources ({', '.join(sorted(ext))}); cannot decode them here",
                    )
                raise _err(path, f"textures[{tex_ref.get('index')}].source", "missing")
            _get(doc.get("images"), src, path, f"textures[{tex_ref.get('index')}].source")
            if "KHR_texture_transform" in (tex_ref.get("extensions") or {}):
                raise _err(
                    path,
                    f"materials[{mat_i}].baseColorTexture.extensions",
                    "KHR_texture_transform is not supported",
                )
            key = f"TEXCOORD_{int(tex_ref.get('texCoord', 0))}"
            if key not in attrs:
                raise _err(
                    path,
                    f"{where}.attributes",
                    f"material {mat_i} has a base colour texture but no {key}",
                )
            uv = r.accessor(attrs[key], normalize_ints=True).astype(np.float64)
            if uv.shape != (len(pos), 2) or not np.all(np.isfinite(uv)):
                raise _err(
                    path, f"{where}.attributes.{key}", f"expected {len(pos)} finite VEC2 values"
                )
            p.uv, p.image = uv, int(src)
    return p


# ----------------------------------------------------------------------------- writer
def write_semantic_glb(
    path: str, positions: np.ndarray, faces: np.ndarray, srgb8: np.ndarray
) -> None:
    """One triangle mesh with per-vertex ``COLOR_0``: the 8-bit sRGB annotation colours
    ``srgb8`` (N, 3|4) are stored *linear* as float32 VEC4, as habitat-sim reads a .glb
    (it converts back to sRGB before matching semantic.txt; the round trip is exact)."""
    pos = np.ascontiguousarray(positions, dtype="<f4")
    idx = np.ascontiguousarray(np.asarray(faces).reshape(-1), dtype="<u4")
    rgb = np.asarray(srgb8, dtype=np.float64)[:, :3] / 255.0
    col = np.ones((len(pos), 4), dtype="<f4")
    col[:, :3] = srgb_to_linear(rgb)
    blobs, views, offset = [], [], 0
    for arr, target in ((pos, 34962), (col, 34962), (idx, 34963)):
        b = arr.tobytes()
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(b), "target": target})
        pad = (-len(b)) % 4
        blobs.append(b + b"\x00" * pad)
        offset += len(b) + pad
    binary = b"".join(blobs)
    lo, hi = (pos.min(0), pos.max(0)) if len(pos) else (np.zeros(3), np.zeros(3))
    doc = {
        "asset": {"version": "2.0", "generator": "habitat_mosnav.scenes"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [
            {"primitives": [{"attributes": {"POSITION": 0, "COLOR_0": 1}, "indices": 2, "mode": 4}]}
        ],
        "buffers": [{"byteLength": len(binary)}],
        "bufferViews": views,
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": len(pos),
                "type": "VEC3",
                "min": [float(v) for v in lo],
                "max": [float(v) for v in hi],
            },
            {"bufferView": 1, "componentType": 5126, "count": len(col), "type": "VEC4"},
            {"bufferView": 2, "componentType": 5125, "count": len(idx), "type": "SCALAR"},
        ],
    }
    with open(path, "wb") as f:
        f.write(pack_glb(doc, binary))


def pack_glb(doc: dict, binary: Optional[bytes]) -> bytes:
    """The bytes of a glTF 2 binary: ``doc`` as the JSON chunk (space-padded), ``binary``
    as the BIN chunk (zero-padded to 4 bytes; no BIN chunk when None)."""
    js = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    js += b" " * ((-len(js)) % 4)
    out = struct.pack("<II", len(js), CHUNK_JSON) + js
    if binary is not None:
        binary = bytes(binary) + b"\x00" * ((-len(binary)) % 4)
        out += struct.pack("<II", len(binary), CHUNK_BIN) + binary
    return struct.pack("<III", GLB_MAGIC, 2, 12 + len(out)) + out
