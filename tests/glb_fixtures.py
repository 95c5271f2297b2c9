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

_CT = {np.dtype("float32"): 5126, np.dtype("uint8"): 5121, np.dtype("uint16"): 5123, np.dtype("uint32"): 5125}
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


def glb(path, primitives, images=(), materials=None):
    binary = bytearray()
    views, accessors = [], []

    def add(arr, target=None):
        arr = np.ascontiguousarray(arr)
        while len(binary) % 4:
            binary.append(0)
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": arr.nbytes,
                      **({"target": target} if target else {})})
        binary.extend(arr.tobytes())
        return len(views) - 1

    def accessor(arr, normalized=False):
        arr = np.asarray(arr)
        k = 1 if arr.ndim == 1 else arr.shape[1]
        acc = {"bufferView": add(arr, 34962), "componentType": _CT[arr.dtype], "count": int(arr.shape[0]),
               "type": _TYPE[k]}
        if normalized:
            acc["normalized"] = True
        if arr.dtype == np.float32 and k == 3:
            acc["min"] = arr.min(0).tolist()
            acc["max"] = arr.max(0).tolist()
        accessors.append(acc)
        return len(accessors) - 1

    img_docs = []
    for data in images:
        img_docs.append({"bufferView": add(np.frombuffer(data, dtype=np.uint8)), "mimeType": "image/png"})
    mats = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": i}, "metallicFactor": 0.0}}
            for i in range(len(images))] + list(materials or [])
    meshes, nodes = [], []
    for p in primitives:
        attrs = {"POSITION": accessor(np.asarray(p["positions"], dtype=np.float32))}
        if p.get("color0") is not None:
            c = np.asarray(p["color0"])
            attrs["COLOR_0"] = accessor(c, normalized=c.dtype != np.float32)
        if p.get("uv") is not None:
            attrs["TEXCOORD_0"] = accessor(np.asarray(p["uv"], dtype=np.float32))
        idx = np.asarray(p["faces"], dtype=np.uint32).reshape(-1)
        accessors.append({"bufferView": add(idx, 34963), "componentType": 5125, "count": int(len(idx)),
                          "type": "SCALAR"})
        prim = {"attributes": attrs, "indices": len(accessors) - 1, "mode": 4}
        if p.get("material") is not None:
            prim["material"] = p["material"]
        meshes.append({"primitives": [prim]})
        node = {"mesh": len(meshes) - 1}
        if p.get("translation") is not None:
            node["translation"] = list(p["translation"])
        nodes.append(node)
    doc = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": list(range(len(nodes)))}],
           "nodes": nodes, "meshes": meshes, "accessors": accessors, "bufferViews": views,
           "buffers": [{"byteLength": len(binary)}]}
    if images:
        doc["images"] = img_docs
        doc["textures"] = [{"source": i} for i in range(len(images))]
        doc["samplers"] = [{"magFilter": 9728, "minFilter": 9728}]
    if mats:
        doc["materials"] = mats
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    while len(binary) % 4:
        binary.append(0)
    out = struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(js) + 8 + len(binary))
    out += struct.pack("<I4s", len(js), b"JSON") + js + struct.pack("<I4s", len(binary), b"BIN\x00") + bytes(binary)
    with open(path, "wb") as f:
        f.write(out)
    return path


def read_color0(path):
    """COLOR_0 of the first primitive of a .glb as stored, normalised to [0, 1] (the
    accessor decoded here, independently of the package)."""
    data = open(path, "rb").read()
    jlen = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + jlen])
    binary = data[20 + jlen + 8:]
    acc = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["COLOR_0"]]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype = {5126: np.float32, 5121: np.uint8, 5123: np.uint16}[acc["componentType"]]
    k = {"VEC3": 3, "VEC4": 4}[acc["type"]]
    start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    arr = np.frombuffer(binary, dtype=dtype, count=acc["count"] * k, offset=start).reshape(-1, k)
    return arr.astype(np.float64) / (1.0 if dtype == np.float32 else np.iinfo(dtype).max)
