"""Checks of a glTF 2 document before any of its data is read (issue #30: hostile scene files).

Scene files come from downloads the user did not make. Every number that decides where
bytes are read or how much is allocated is checked here first, against the lengths that
are really there: each ``bufferView`` lies inside its buffer, each accessor (offset, stride,
count, component type, type, sparse parts) inside its ``bufferView``, the node graph has
no cycle, and the triangles and vertices that the node graph instantiates stay within
:data:`MAX_TRIANGLES` / :data:`MAX_VERTICES`. External ``uri`` files must be regular files
inside the scene's folder (:func:`resolve_uri`) and are read with a bound
(:func:`read_uri`). Both readers rely on it: the package's own (``scenes/gltf.py``) and
trimesh (``sims/geometry.py``, ``scenes/preview.py``), which is handed a file only once
:func:`validate_document` passed.

Every problem is a :class:`~habitat_mosnav.scenes.io.SceneFormatError` of one line naming
the file and the field (``bufferViews[0].byteStride``, ``nodes[3].children``...).
"""

from __future__ import annotations

import base64
import json
import math
import os
import stat
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

from habitat_mosnav.scenes.io import SceneFormatError

#: Most triangles one scene file may instantiate: every primitive of every mesh instance of
#: its node graph (all scenes), counted from the JSON before anything is read. HM3D's largest
#: ``.basis.glb`` and ``.semantic.glb`` have a few million triangles; 20 million leaves room
#: for denser scans, while a file that instances one mesh thousands of times, or declares an
#: absurd accessor count, is refused before it is allocated.
MAX_TRIANGLES = 20_000_000
#: Most vertices one scene file may instantiate (as :data:`MAX_TRIANGLES`; three per
#: triangle, the count of a triangle soup without shared vertices). Also the largest count
#: of an accessor without a ``bufferView`` (zeros, allocated from its count alone).
MAX_VERTICES = 3 * MAX_TRIANGLES
#: Largest image file an ``images[i].uri`` may name (HM3D's textures are a few MB each).
MAX_IMAGE_BYTES = 512 * 2**20
#: Padding allowed after a buffer's ``byteLength`` in its file or data: URI (glTF pads to 4).
_PAD = 3

#: glTF componentType -> numpy dtype name; ``type`` -> components per element.
COMPONENT_TYPES = {
    5120: "int8",
    5121: "uint8",
    5122: "int16",
    5123: "uint16",
    5125: "uint32",
    5126: "float32",
}
_COMPONENT_BYTES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
TYPE_SIZES = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_INDEX_TYPES = (5121, 5123, 5125)
_TEXTURE_INFOS = ("normalTexture", "occlusionTexture", "emissiveTexture")
_PBR_TEXTURES = ("baseColorTexture", "metallicRoughnessTexture")


def fail(path: str, where: str, msg: str) -> SceneFormatError:
    """The one-line error: ``<file>: <field>: <why>``."""
    return SceneFormatError(f"{path}: {where}: {msg}")


def parse_json(path: str, raw: bytes, where: str = "JSON chunk") -> dict:
    """A glTF JSON document; a one-line error for bad UTF-8 or JSON, nesting too deep for
    the parser, numbers it refuses (Python's digit limit), or a document not an object."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise fail(path, where, f"not UTF-8 ({e.reason} at byte {e.start})") from None
    except RecursionError:
        raise fail(path, where, "nested too deeply to be a glTF document") from None
    except ValueError as e:  # JSONDecodeError, and int() refusing a number with too many digits
        raise fail(path, where, f"not valid JSON ({str(e).splitlines()[0][:200]})") from None
    if not isinstance(doc, dict):
        raise fail(path, where, "missing or not an object")
    return doc


# ----------------------------------------------------------------------------- URIs
def resolve_uri(path: str, uri, where: str) -> Tuple[str, int]:
    """(real path, size) of the file an external ``uri`` names: a relative path
    (percent-decoded) to a regular file inside the folder of ``path`` once every link is
    resolved; absolute paths, other schemes, ``..`` escapes, links out of the folder and
    device files or FIFOs are refused."""
    if not isinstance(uri, str) or not uri:
        raise fail(path, where, f"expected a non-empty string, got {uri!r}")
    shown = uri if len(uri) <= 120 else uri[:117] + "..."
    try:
        scheme = urlsplit(uri).scheme
    except ValueError:
        scheme = "?"
    if scheme or uri.startswith("//"):
        raise fail(
            path,
            where,
            f"{shown!r}: only data: URIs and relative paths inside the scene's folder are read",
        )
    rel = unquote(uri)
    if "\x00" in rel or os.path.isabs(rel):
        raise fail(
            path,
            where,
            f"{shown!r}: an absolute path; only relative paths inside the scene's folder are read",
        )
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    full = os.path.realpath(os.path.join(folder, rel))
    if os.path.commonpath([folder, full]) != folder:
        raise fail(path, where, f"{shown!r} resolves outside the scene's folder {folder}")
    try:
        st = os.stat(full)
    except OSError as e:
        raise fail(path, where, f"cannot read {full}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise fail(path, where, f"{full} is not a regular file")
    return full, st.st_size


def _check_size(path: str, where: str, size: int, expected: Optional[int], limit: int) -> int:
    """The number of bytes to take from ``size`` present: ``expected`` (up to _PAD bytes of
    padding after it allowed), or all of them up to ``limit``."""
    if expected is not None:
        if not expected <= size <= expected + _PAD:
            raise fail(path, where, f"{size} bytes, but its byteLength is {expected}")
        return expected
    if size > limit:
        raise fail(path, where, f"{size} bytes, over the limit of {limit} bytes")
    return size


def _data_uri(path: str, uri: str, where: str) -> Tuple[str, int]:
    """(base64 payload, the size it decodes to) of a data: URI, before decoding it."""
    header, comma, payload = uri[5:].partition(",")
    if not comma or not header.endswith(";base64"):
        raise fail(path, where, "only base64 data: URIs (data:<type>;base64,...) are read")
    return payload, len(payload) // 4 * 3 - payload[-2:].count("=")


def read_uri(
    path: str, uri, where: str, expected: Optional[int] = None, limit: int = MAX_IMAGE_BYTES
) -> bytes:
    """The bytes of a ``uri`` (a base64 data: URI, or a file as :func:`resolve_uri` allows
    it), at most ``expected`` (a buffer's byteLength; the data must have that length) or
    ``limit`` bytes."""
    if isinstance(uri, str) and uri.startswith("data:"):
        payload, size = _data_uri(path, uri, where)
        _check_size(path, where, size, expected, limit)
        try:
            data = base64.b64decode(payload, validate=True)
        except ValueError:  # binascii.Error
            raise fail(path, where, "bad base64 in the data: URI") from None
        return data[: _check_size(path, where, len(data), expected, limit)]
    full, size = resolve_uri(path, uri, where)
    n = _check_size(path, where, size, expected, limit)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(full, flags)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise fail(path, where, f"{full} is not a regular file")
            data = f.read(n)
    except OSError as e:
        raise fail(path, where, f"cannot read {full}: {e.strerror}") from None
    if len(data) != n:
        raise fail(path, where, f"{full} changed while read ({len(data)} of {n} bytes)")
    return data


# ----------------------------------------------------------------------------- the document
class _Checker:
    """Type and range checks of one document's fields, every error naming the field."""

    def __init__(self, path: str, doc: dict):
        self.path, self.doc = path, doc

    def fail(self, where: str, msg: str) -> SceneFormatError:
        return fail(self.path, where, msg)

    def array(self, key: str) -> List[dict]:
        """A top-level array of objects (empty when absent)."""
        value = self.doc.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, f"expected an array, got {type(value).__name__}")
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}]", f"expected an object, got {type(item).__name__}")
        return value

    def obj(self, value, where: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {type(value).__name__}")
        return value

    def integer(self, value, where: str, lo: int = 0, hi: Optional[int] = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected an integer, got {_show(value)}")
        if value < lo or (hi is not None and value > hi):
            rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
            raise self.fail(where, f"{value} is not {rng}")
        return value

    def field(
        self, obj: dict, key: str, where: str, default=None, lo: int = 0, hi: Optional[int] = None
    ):
        """``obj[key]`` as an integer in range, ``default`` when absent (None: required)."""
        if key not in obj:
            if default is None:
                raise self.fail(f"{where}.{key}", "missing")
            return default
        return self.integer(obj[key], f"{where}.{key}", lo, hi)

    def index(self, value, key: str, where: str) -> int:
        """An index into the top-level array ``key``."""
        n = len(self.doc.get(key) or [])
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise self.fail(where, f"index {_show(value)} out of range ({key} has {n})")
        return value

    def numbers(self, value, n: int, where: str) -> None:
        if (
            not isinstance(value, list)
            or len(value) != n
            or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                for v in value
            )
        ):
            raise self.fail(where, f"expected {n} finite numbers, got {_show(value)}")


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_document(path: str, doc: dict, binary: Optional[bytes]) -> None:
    """Check ``doc`` (the glTF JSON of ``path``; ``binary`` its GLB BIN chunk, None for a
    ``.gltf``) before anything reads its data: structure, every index, the byte ranges of
    buffers, bufferViews and accessors, external URIs (:func:`resolve_uri`), the node graph
    (no cycle) and the triangles and vertices it instantiates (:data:`MAX_TRIANGLES`,
    :data:`MAX_VERTICES`). Raises a one-line SceneFormatError."""
    c = _Checker(path, doc)
    for key in ("extensionsUsed", "extensionsRequired"):
        names = doc.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise c.fail(key, f"expected an array of extension names, got {_show(names)}")
    buffers = _check_buffers(c, binary)
    views = _check_views(c, buffers)
    counts = _check_accessors(c, views)
    _check_images_textures_materials(c)
    mesh_cost = _check_meshes(c, counts)
    _check_nodes(c, mesh_cost)


def _check_buffers(c: _Checker, binary: Optional[bytes]) -> List[int]:
    lengths = []
    for i, b in enumerate(c.array("buffers")):
        where = f"buffers[{i}]"
        n = c.field(b, "byteLength", where)
        if "uri" in b:
            uri = b["uri"]
            if isinstance(uri, str) and uri.startswith("data:"):
                size = _data_uri(c.path, uri, f"{where}.uri")[1]
            else:
                size = resolve_uri(c.path, uri, f"{where}.uri")[1]
            _check_size(c.path, f"{where}.uri", size, n, 0)
        elif i != 0 or binary is None:
            raise c.fail(where, "no uri, and only buffers[0] of a .glb may use its BIN chunk")
        elif n > len(binary):
            raise c.fail(
                f"{where}.byteLength", f"{n} exceeds the {len(binary)} bytes of the BIN chunk"
            )
        lengths.append(n)
    return lengths


def _check_views(c: _Checker, buffers: List[int]) -> List[Tuple[int, Optional[int]]]:
    """(byteLength, byteStride) of every bufferView."""
    out = []
    for i, v in enumerate(c.array("bufferViews")):
        where = f"bufferViews[{i}]"
        b = c.index(v.get("buffer"), "buffers", f"{where}.buffer")
        off = c.field(v, "byteOffset", where, default=0)
        n = c.field(v, "byteLength", where)
        if off + n > buffers[b]:
            raise c.fail(
                where, f"byteOffset+byteLength {off}+{n} outside buffers[{b}] ({buffers[b]} bytes)"
            )
        stride = None
        if "byteStride" in v:
            stride = c.integer(v["byteStride"], f"{where}.byteStride", 4, 252)
        out.append((n, stride))
    return out


def _check_accessors(c: _Checker, views: List[Tuple[int, Optional[int]]]) -> List[int]:
    """The element count of every accessor."""
    counts = []
    for i, a in enumerate(c.array("accessors")):
        where = f"accessors[{i}]"
        ctype = a.get("componentType")
        if isinstance(ctype, bool) or ctype not in _COMPONENT_BYTES:
            raise c.fail(f"{where}.componentType", f"unknown component type {_show(ctype)}")
        if not isinstance(a.get("type"), str) or a["type"] not in TYPE_SIZES:
            raise c.fail(f"{where}.type", f"unknown type {_show(a.get('type'))}")
        if not isinstance(a.get("normalized", False), bool):
            raise c.fail(
                f"{where}.normalized", f"expected true or false, got {_show(a['normalized'])}"
            )
        count = c.field(a, "count", where)
        elem = _COMPONENT_BYTES[ctype] * TYPE_SIZES[a["type"]]
        if "bufferView" in a:
            _check_range(c, where, a, views, elem, count)
        elif count > MAX_VERTICES:
            raise c.fail(
                f"{where}.count",
                f"{count} elements without a bufferView (zeros) exceed the limit "
                f"of {MAX_VERTICES:,} vertices per scene file",
            )
        else:
            c.field(a, "byteOffset", where, default=0)
        if "sparse" in a:
            _check_sparse(
                c, f"{where}.sparse", c.obj(a["sparse"], f"{where}.sparse"), views, elem, count
            )
        counts.append(count)
    return counts


def _check_range(c: _Checker, where: str, a: dict, views, elem: int, count: int) -> None:
    """The ``count`` elements of ``elem`` bytes at ``a``'s byteOffset lie inside its bufferView."""
    vi = c.index(a.get("bufferView"), "bufferViews", f"{where}.bufferView")
    off = c.field(a, "byteOffset", where, default=0)
    length, stride = views[vi]
    if stride is not None and stride < elem:
        raise c.fail(
            f"bufferViews[{vi}].byteStride",
            f"{stride} is smaller than the {elem}-byte elements of {where}",
        )
    need = off + (count - 1) * (stride or elem) + elem if count else off
    if need > length:
        raise c.fail(
            where,
            f"{count} elements from byteOffset {off} need {need} bytes, "
            f"bufferViews[{vi}] has {length}",
        )


def _check_sparse(c: _Checker, where: str, sparse: dict, views, elem: int, count: int) -> None:
    n = c.field(sparse, "count", where, lo=1, hi=count)
    idx = c.obj(sparse.get("indices"), f"{where}.indices")
    if idx.get("componentType") not in _INDEX_TYPES or isinstance(idx.get("componentType"), bool):
        raise c.fail(
            f"{where}.indices.componentType",
            f"expected 5121, 5123 or 5125, got {_show(idx.get('componentType'))}",
        )
    _check_range(c, f"{where}.indices", idx, views, _COMPONENT_BYTES[idx["componentType"]], n)
    _check_range(
        c, f"{where}.values", c.obj(sparse.get("values"), f"{where}.values"), views, elem, n
    )


def _check_texture_info(c: _Checker, info, where: str) -> None:
    info = c.obj(info, where)
    if info:
        c.index(info.get("index"), "textures", f"{where}.index")
        c.field(info, "texCoord", where, default=0, hi=31)
        c.obj(info.get("extensions"), f"{where}.extensions")


def _check_images_textures_materials(c: _Checker) -> None:
    for i, im in enumerate(c.array("images")):
        where = f"images[{i}]"
        if "bufferView" in im:
            c.index(im["bufferView"], "bufferViews", f"{where}.bufferView")
        elif "uri" in im:
            if not (isinstance(im["uri"], str) and im["uri"].startswith("data:")):
                _check_size(
                    c.path,
                    f"{where}.uri",
                    resolve_uri(c.path, im["uri"], f"{where}.uri")[1],
                    None,
                    MAX_IMAGE_BYTES,
                )
        if not isinstance(im.get("mimeType", ""), str):
            raise c.fail(f"{where}.mimeType", f"expected a string, got {_show(im['mimeType'])}")
    for i, tex in enumerate(c.array("textures")):
        where = f"textures[{i}]"
        if "source" in tex:
            c.index(tex["source"], "images", f"{where}.source")
        if "sampler" in tex:
            c.index(tex["sampler"], "samplers", f"{where}.sampler")
        for name, ext in c.obj(tex.get("extensions"), f"{where}.extensions").items():
            ext = c.obj(ext, f"{where}.extensions.{name}")
            if "source" in ext:
                c.index(ext["source"], "images", f"{where}.extensions.{name}.source")
    c.array("samplers")
    for i, mat in enumerate(c.array("materials")):
        where = f"materials[{i}]"
        pbr = c.obj(mat.get("pbrMetallicRoughness"), f"{where}.pbrMetallicRoughness")
        if "baseColorFactor" in pbr:
            c.numbers(pbr["baseColorFactor"], 4, f"{where}.pbrMetallicRoughness.baseColorFactor")
        for key in _PBR_TEXTURES:
            _check_texture_info(c, pbr.get(key), f"{where}.pbrMetallicRoughness.{key}")
        for key in _TEXTURE_INFOS:
            _check_texture_info(c, mat.get(key), f"{where}.{key}")
        c.obj(mat.get("extensions"), f"{where}.extensions")


def _check_meshes(c: _Checker, counts: List[int]) -> List[Tuple[int, int]]:
    """(triangles, vertices) of one instance of every mesh."""
    out = []
    for m, mesh in enumerate(c.array("meshes")):
        prims = mesh.get("primitives")
        if not isinstance(prims, list):
            raise c.fail(f"meshes[{m}].primitives", f"expected an array, got {_show(prims)}")
        tris = verts = 0
        for j, prim in enumerate(prims):
            where = f"meshes[{m}].primitives[{j}]"
            prim = c.obj(prim, where)
            attrs = c.obj(prim.get("attributes"), f"{where}.attributes")
            n = None
            for name, acc in attrs.items():
                k = c.index(acc, "accessors", f"{where}.attributes.{name}")
                if n is not None and counts[k] != n:
                    raise c.fail(
                        f"{where}.attributes.{name}",
                        f"{counts[k]} elements, other attributes have {n}",
                    )
                n = counts[k]
            mode = c.field(prim, "mode", where, default=4, hi=6)
            if "indices" in prim:
                n_idx = counts[c.index(prim["indices"], "accessors", f"{where}.indices")]
            else:
                n_idx = n or 0
            if "material" in prim:
                c.index(prim["material"], "materials", f"{where}.material")
            c.obj(prim.get("extensions"), f"{where}.extensions")
            verts += n or 0
            tris += n_idx // 3 if mode == 4 else max(n_idx - 2, 0) if mode in (5, 6) else 0
        out.append((tris, verts))
    return out


def _check_nodes(c: _Checker, mesh_cost: List[Tuple[int, int]]) -> None:
    """Node fields, no cycle, and the triangles/vertices all scenes instantiate."""
    nodes = c.array("nodes")
    children: List[List[int]] = []
    for i, node in enumerate(nodes):
        where = f"nodes[{i}]"
        kids = node.get("children", [])
        if not isinstance(kids, list):
            raise c.fail(f"{where}.children", f"expected an array, got {_show(kids)}")
        kids = [c.index(k, "nodes", f"{where}.children[{j}]") for j, k in enumerate(kids)]
        if len(set(kids)) != len(kids):
            raise c.fail(f"{where}.children", "a node listed twice")
        children.append(kids)
        if "mesh" in node:
            c.index(node["mesh"], "meshes", f"{where}.mesh")
        for key, n in (("matrix", 16), ("translation", 3), ("rotation", 4), ("scale", 3)):
            if key in node:
                c.numbers(node[key], n, f"{where}.{key}")
    roots = _roots(c, children)
    order = _topological(c, children)
    parent: Dict[int, int] = {}
    for i in order:
        for k in children[i]:
            if k in parent:  # a second parent would make the graph a DAG that instances k twice
                raise c.fail(
                    f"nodes[{i}].children",
                    f"node {k} is already a child of node {parent[k]} "
                    "(glTF nodes have at most one parent)",
                )
            parent[k] = i
    instances = [0] * len(nodes)
    for r in roots:
        instances[r] += 1
    cap = MAX_VERTICES + 1
    for i in order:  # parents before children
        for k in children[i]:
            instances[k] = min(cap, instances[k] + instances[i])
    used = set()
    tris = verts = 0
    for i, node in enumerate(nodes):
        if "mesh" in node:
            used.add(node["mesh"])
            t, v = mesh_cost[node["mesh"]]
            tris, verts = tris + instances[i] * t, verts + instances[i] * v
    for m, (t, v) in enumerate(
        mesh_cost
    ):  # meshes no node places: a reader may still take them once
        if m not in used:
            tris, verts = tris + t, verts + v
    if tris > MAX_TRIANGLES or verts > MAX_VERTICES:
        raise c.fail(
            "nodes",
            f"the node graph instantiates {tris:,} triangles and {verts:,} vertices; the "
            f"limit is {MAX_TRIANGLES:,} triangles and {MAX_VERTICES:,} vertices per scene file",
        )


def _roots(c: _Checker, children: List[List[int]]) -> List[int]:
    """The root nodes of every scene (``scenes[i].nodes``), or without scenes the nodes
    that are nobody's child."""
    scenes = c.array("scenes")
    if scenes and "scene" in c.doc:
        c.index(c.doc["scene"], "scenes", "scene")
    if not scenes:
        has_parent = {k for kids in children for k in kids}
        return [i for i in range(len(children)) if i not in has_parent]
    roots = []
    for s, scene in enumerate(scenes):
        listed = scene.get("nodes", [])
        if not isinstance(listed, list):
            raise c.fail(f"scenes[{s}].nodes", f"expected an array, got {_show(listed)}")
        roots.extend(c.index(n, "nodes", f"scenes[{s}].nodes[{j}]") for j, n in enumerate(listed))
    return roots


def _topological(c: _Checker, children: List[List[int]]) -> List[int]:
    """Every node, parents before children (iterative depth-first search); a cycle is a
    one-line error naming a node on it."""
    state: Dict[int, int] = {}  # 1 = on the current path, 2 = done
    post: List[int] = []
    for start in range(len(children)):
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(children[start]))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[node] = 2
                post.append(node)
            elif state.get(nxt) == 1:
                what = (
                    "its own child"
                    if nxt == node
                    else f"an ancestor of node {node}, which lists it as a child"
                )
                raise c.fail(
                    f"nodes[{node}].children", f"node {nxt} is {what}: the node graph has a cycle"
                )
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(children[nxt])))
    return post[::-1]
