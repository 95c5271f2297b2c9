"""glTF 2.0 binary files written byte by byte (struct/json/numpy) for tests, independent of
the package's own reader and writer, plus habitat-sim's colour rule for checking files.

``glb(path, primitives, images)``: each primitive is a dict with ``positions`` (N, 3),
``faces`` (F, 3) and optionally ``color0`` (an array stored with its own dtype: float32 is
stored as floats, uint8 / uint16 as normalised integers), ``uv`` (N, 2) float32, ``material``
(index into the materials the function writes: one per image, base colour texture = that
image, plus any extra ``materials`` given), ``translation`` of its node.
"""

import io
import json
import struct

import numpy as np

_CT = {
    np.dtype("float32"): 5126,
    np.dtype("uint8"): 5121,
    np.dtype("uint16"): 5123,
    np.dtype("uint32"): 5125,
}
_TYPE = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}


def srgb8_to_linear(rgb8):
    """sRGB bytes -> linear floats (the IEC 61966-2-1 curve, written out independently)."""
    c = np.asarray(rgb8, dtype=np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb8(lin):
    """habitat-sim's rule for a .glb's COLOR_0: linear -> sRGB, then to bytes."""
    c = np.clip(np.asarray(lin, dtype=np.float64), 0, 1)
    s = np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)
    return np.rint(s * 255).astype(np.uint8)


def png(rgb):
    """PNG bytes of an (H, W, 3) uint8 image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgb, dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def glb(path, primitives, images=(), materials=None, extensions_used=()):
    binary = bytearray()
    views, accessors = [], []

    def add(arr, target=None):
        arr = np.ascontiguousarray(arr)
        while len(binary) % 4:
            binary.append(0)
        views.append(
            {
                "buffer": 0,
                "byteOffset": len(binary),
                "byteLength": arr.nbytes,
                **({"target": target} if target else {}),
            }
        )
        binary.extend(arr.tobytes())
        return len(views) - 1

    def accessor(arr, normalized=False):
        arr = np.asarray(arr)
        k = 1 if arr.ndim == 1 else arr.shape[1]
        acc = {
            "bufferView": add(arr, 34962),
            "componentType": _CT[arr.dtype],
            "count": int(arr.shape[0]),
            "type": _TYPE[k],
        }
        if normalized:
            acc["normalized"] = True
        if arr.dtype == np.float32 and k == 3:
            acc["min"] = arr.min(0).tolist()
            acc["max"] = arr.max(0).tolist()
        accessors.append(acc)
        return len(accessors) - 1

    img_docs = []
    for data in images:
        img_docs.append(
            {"bufferView": add(np.frombuffer(data, dtype=np.uint8)), "mimeType": "image/png"}
        )
    mats = [
        {"pbrMetallicRoughness": {"baseColorTexture": {"index": i}, "metallicFactor": 0.0}}
        for i in range(len(images))
    ] + list(materials or [])
    meshes, nodes = [], []
    for p in primitives:
        attrs = {"POSITION": accessor(np.asarray(p["positions"], dtype=np.float32))}
        if p.get("color0") is not None:
            c = np.asarray(p["color0"])
            attrs["COLOR_0"] = accessor(c, normalized=c.dtype != np.float32)
        if p.get("uv") is not None:
            attrs["TEXCOORD_0"] = accessor(np.asarray(p["uv"], dtype=np.float32))
        idx = np.asarray(p["faces"], dtype=np.uint32).reshape(-1)
        accessors.append(
            {
                "bufferView": add(idx, 34963),
                "componentType": 5125,
                "count": int(len(idx)),
                "type": "SCALAR",
            }
        )
        prim = {"attributes": attrs, "indices": len(accessors) - 1, "mode": 4}
        if p.get("material") is not None:
            prim["material"] = p["material"]
        meshes.append({"primitives": [prim]})
        node = {"mesh": len(meshes) - 1}
        if p.get("translation") is not None:
            node["translation"] = list(p["translation"])
        nodes.append(node)
    doc = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": list(range(len(nodes)))}],
        "nodes": nodes,
        "meshes": meshes,
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": len(binary)}],
    }
    if images:
        doc["images"] = img_docs
        doc["textures"] = [{"source": i} for i in range(len(images))]
        doc["samplers"] = [{"magFilter": 9728, "minFilter": 9728}]
    if mats:
        doc["materials"] = mats
    if extensions_used:
        doc["extensionsUsed"] = list(extensions_used)
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    while len(binary) % 4:
        binary.append(0)
    out = struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(js) + 8 + len(binary))
    out += (
        struct.pack("<I4s", len(js), b"JSON")
        + js
        + struct.pack("<I4s", len(binary), b"BIN\x00")
        + bytes(binary)
    )
    with open(path, "wb") as f:
        f.write(out)
    return path


def read_color0(path):
    """COLOR_0 of the first primitive of a .glb as stored, normalised to [0, 1] (the
    accessor decoded here, independently of the package)."""
    data = open(path, "rb").read()
    jlen = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20 : 20 + jlen])
    binary = data[20 + jlen + 8 :]
    acc = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["COLOR_0"]]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype = {5126: np.float32, 5121: np.uint8, 5123: np.uint16}[acc["componentType"]]
    k = {"VEC3": 3, "VEC4": 4}[acc["type"]]
    start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    arr = np.frombuffer(binary, dtype=dtype, count=acc["count"] * k, offset=start).reshape(-1, k)
    return arr.astype(np.float64) / (1.0 if dtype == np.float32 else np.iinfo(dtype).max)


# ------------------------------------------------------------ HM3D v0.2-style textured scene
#: Objects of :func:`textured_semantic_scene` (id, sRGB colour, raw category, region).
TEX_FLOOR, TEX_WALL, TEX_PICTURE, TEX_CHAIR, TEX_LAMP = (
    0x5A3C1E,
    0x808080,
    0xE0A010,
    0x11AA55,
    0x2255EE,
)
TEX_OBJECTS = [
    (1, TEX_FLOOR, "floor", 0),
    (2, TEX_WALL, "wall", 0),
    (3, TEX_PICTURE, "picture", 0),
    (4, TEX_CHAIR, "chair", 0),
    (5, TEX_LAMP, "lamp", 0),
]


def _rgb8(c):
    return np.array([(c >> 16) & 255, (c >> 8) & 255, c & 255], np.uint8)


def _color0(c, n):
    """COLOR_0 of ``n`` vertices painted ``c``: linear float32, as HM3D's .glb files store it."""
    return srgb8_to_linear(np.tile(_rgb8(c), (n, 1))).astype(np.float32)


def box_mesh(x0, y0, z0, x1, y1, z1):
    """A closed box from (x0, y0, z0) to (x1, y1, z1): 8 shared vertices, 12 triangles."""
    v = np.array([[x, y, z] for x in (x0, x1) for y in (y0, y1) for z in (z0, z1)], np.float32)
    f = [
        [0, 1, 3],
        [0, 3, 2],
        [4, 6, 7],
        [4, 7, 5],
        [0, 4, 5],
        [0, 5, 1],
        [2, 3, 7],
        [2, 7, 6],
        [0, 2, 6],
        [0, 6, 4],
        [1, 5, 7],
        [1, 7, 3],
    ]
    return v, f


def textured_semantic_scene(root, sid="texSCENE001", picture=(24, 40, 10, 22)):
    """An HM3D v0.2-style scene folder ``root/00000-<sid>/`` (Z-up files): ``<sid>.glb`` (render
    mesh), ``<sid>.semantic.glb`` where every primitive has ``COLOR_0`` (linear) and a base
    colour texture whose texels are the objects' colours, ``<sid>.semantic.txt``.

    World (Y up, habitat's frame; file (x, y, z) -> world (x, z, -y)): a 6 m floor at y = 0
    (object 1); a 4 m x 2.5 m wall at z = -2 facing +z (object 2, COLOR_0 = the wall's colour)
    whose 64 x 40 texture paints the picture (object 3: texels ``picture`` = (col0, col1,
    row0, row1), no vertex of its own); a chair (object 4) in two pieces, a 0.5 x 0.9 x 0.5 m
    box at x 0.5..1, z -1.3..-0.8 and a 0.2 m cube at x -2..-1.8, z 1.8..2; a lamp (object 5)
    that exists only in semantic.txt. Returns (scene dir, sid)."""
    import os

    d = os.path.join(str(root), f"00000-{sid}")
    os.makedirs(d, exist_ok=True)
    floor = {
        "positions": [[-3, -3, 0], [3, -3, 0], [3, 3, 0], [-3, 3, 0]],
        "faces": [[0, 1, 2], [0, 2, 3]],
        "uv": [[0, 1], [1, 1], [1, 0], [0, 0]],
        "material": 0,
        "color0": _color0(TEX_FLOOR, 4),
    }
    # wall in the file plane y = 2 (world z = -2): u = (x + 2) / 4, v = 1 - z / 2.5
    wall = {
        "positions": [[-2, 2, 0], [2, 2, 0], [2, 2, 2.5], [-2, 2, 2.5]],
        "faces": [[0, 1, 2], [0, 2, 3]],
        "uv": [[0, 1], [1, 1], [1, 0], [0, 0]],
        "material": 1,
        "color0": _color0(TEX_WALL, 4),
    }
    prims = [floor, wall]
    for box in ((0.5, 0.8, 0.0, 1.0, 1.3, 0.9), (-2.0, -2.0, 0.0, -1.8, -1.8, 0.2)):
        v, f = box_mesh(*box)
        uv = np.array(
            [[(i % 2) * 0.9 + 0.05, (i // 2 % 2) * 0.9 + 0.05] for i in range(8)], np.float32
        )
        prims.append(
            {"positions": v, "faces": f, "uv": uv, "material": 2, "color0": _color0(TEX_CHAIR, 8)}
        )
    wall_tex = np.tile(_rgb8(TEX_WALL), (40, 64, 1))
    c0, c1, r0, r1 = picture
    wall_tex[r0:r1, c0:c1] = _rgb8(TEX_PICTURE)
    images = [
        png(np.tile(_rgb8(TEX_FLOOR), (8, 8, 1))),
        png(wall_tex),
        png(np.tile(_rgb8(TEX_CHAIR), (4, 4, 1))),
    ]
    glb(os.path.join(d, f"{sid}.semantic.glb"), prims, images)
    # the render mesh is unlit (KHR_materials_unlit): habitat-sim then draws it with its flat
    # shader instead of building PBR image-based lighting (half a minute on llvmpipe)
    render = [dict(p, color0=None, uv=None, material=0) for p in prims]
    unlit = {
        "pbrMetallicRoughness": {"baseColorFactor": [0.6, 0.6, 0.6, 1.0]},
        "extensions": {"KHR_materials_unlit": {}},
    }
    glb(
        os.path.join(d, f"{sid}.glb"),
        render,
        materials=[unlit],
        extensions_used=["KHR_materials_unlit"],
    )
    with open(os.path.join(d, f"{sid}.semantic.txt"), "w") as fh:
        fh.write("HM3D Semantic Annotations\n")
        for oid, col, cat, reg in TEX_OBJECTS:
            fh.write(f'{oid},{col:06X},"{cat}",{reg}\n')
    return d, sid


def write_scene_dataset_config(path, glb_paths, semantic_textures=True):
    """A habitat-sim scene dataset config like HM3D's: Z-up stages (render and semantic),
    ``<stage>.semantic.glb`` / ``.semantic.txt`` beside each stage, ``has_semantic_textures``."""
    attrs = {
        "up": [0, 0, 1],
        "front": [0, 1, 0],
        "origin": [0, 0, 0],
        "semantic_up": [0, 0, 1],
        "semantic_front": [0, 1, 0],
        "semantic_asset": "%%CONFIG_NAME_AS_ASSET_FILENAME%%.semantic.glb",
        "semantic_descriptor_filename": "%%CONFIG_NAME_AS_ASSET_FILENAME%%.semantic.txt",
        "has_semantic_textures": bool(semantic_textures),
    }
    doc = {"stages": {"default_attributes": attrs, "paths": {".glb": list(glb_paths)}}}
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
    return str(path)


# ------------------------------------------------------------ hostile edits of existing files
def edit_glb(path, change):
    """Rewrite the JSON chunk of the ``.glb`` at ``path`` in place (the BIN chunk kept as it
    is): ``change(doc)`` edits the parsed document, and may return a string to store as the
    JSON text instead (for text no ``json.dumps`` would write, e.g. 100,000 nested arrays)."""
    data = open(path, "rb").read()
    jlen = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20 : 20 + jlen])
    rest = data[20 + jlen :]  # the BIN chunk with its header, if any
    text = change(doc)
    js = (json.dumps(doc) if text is None else text).encode()
    js += b" " * (-len(js) % 4)
    body = struct.pack("<I4s", len(js), b"JSON") + js + rest
    with open(path, "wb") as f:
        f.write(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    return path


def copy_demo_scenes(dst):
    """A copy of the bundled demo scene root (``habitat_mosnav/data/demo/scenes``) at ``dst``,
    to edit; returns ``dst`` as a string."""
    import os
    import shutil

    import habitat_mosnav

    src = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo", "scenes")
    shutil.copytree(src, str(dst))
    return str(dst)
