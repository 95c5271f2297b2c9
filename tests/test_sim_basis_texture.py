"""HM3D-style ``.basis.glb``: a KTX2 (Basis Universal) base-colour texture under
``KHR_texture_basisu`` is decoded (opengl_basisu) and sampled at the UVs by the renderer.
The glTF bytes are written here by hand; the KTX2 payload comes from alktx2's Basis
Universal encoder."""

from __future__ import annotations

import json
import logging
import struct

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (before habitat)
from habitat_mosnav.sims import render
from habitat_mosnav.sims.geometry import load_mesh

from test_sim_navigation import make_sim

needs_egl = pytest.mark.skipif(not render.egl_available(), reason="no headless EGL")

RED, BLUE, GREEN = (220, 30, 30), (30, 40, 220), (30, 200, 40)


def _texture(w=64, h=64) -> np.ndarray:
    """Left half red, right half blue, top quarter green (row 0 = top of the image)."""
    img = np.zeros((h, w, 4), np.uint8)
    img[..., 3] = 255
    img[:, : w // 2, :3] = RED
    img[:, w // 2 :, :3] = BLUE
    img[: h // 4, :, :3] = GREEN
    return img


def _ktx2(img: np.ndarray) -> bytes:
    alktx2 = pytest.importorskip("alktx2")
    return alktx2.encode_raw_rgba_to_ktx2(
        img.tobytes(), img.shape[1], img.shape[0], False, codec="uastc", quality=128
    )


def write_basis_glb(
    path: str, image: bytes, mime: str = "image/ktx2", ext: str = "KHR_texture_basisu"
) -> str:
    """Y-up glTF: a 6 m floor at y = 0 (no material) and a 4 m x 2.5 m wall at z = -2 facing
    +z whose texture spans it (u = 0 at x = -2, v = 0 at the top)."""
    floor = np.array([[-3, 0, -3], [3, 0, -3], [3, 0, 3], [-3, 0, 3]], np.float32)
    wall = np.array([[-2, 0, -2], [2, 0, -2], [2, 2.5, -2], [-2, 2.5, -2]], np.float32)
    wall_uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    idx = np.array([0, 2, 1, 0, 3, 2], np.uint16)  # floor, facing up
    widx = np.array([0, 1, 2, 0, 2, 3], np.uint16)  # wall, facing +z
    parts = [
        floor.tobytes(),
        idx.tobytes(),
        wall.tobytes(),
        wall_uv.tobytes(),
        widx.tobytes(),
        image,
    ]
    views, blob = [], b""
    for p in parts:
        blob += b"\0" * (-len(blob) % 4)
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(p)})
        blob += p
    blob += b"\0" * (-len(blob) % 4)

    def acc(view, count, ctype, typ, lo=None, hi=None):
        a = {"bufferView": view, "componentType": ctype, "count": count, "type": typ}
        if lo is not None:
            a["min"], a["max"] = lo, hi
        return a

    gltf = {
        "asset": {"version": "2.0"},
        "extensionsUsed": [ext],
        "extensionsRequired": [ext],
        "buffers": [{"byteLength": len(blob)}],
        "bufferViews": views,
        "accessors": [
            acc(0, 4, 5126, "VEC3", floor.min(0).tolist(), floor.max(0).tolist()),
            acc(1, 6, 5123, "SCALAR"),
            acc(2, 4, 5126, "VEC3", wall.min(0).tolist(), wall.max(0).tolist()),
            acc(3, 4, 5126, "VEC2"),
            acc(4, 6, 5123, "SCALAR"),
        ],
        "images": [{"bufferView": 5, "mimeType": mime}],
        "textures": [{"extensions": {ext: {"source": 0}}}],
        "materials": [
            {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0}}
        ],
        "meshes": [
            {
                "primitives": [
                    {"attributes": {"POSITION": 0}, "indices": 1},
                    {"attributes": {"POSITION": 2, "TEXCOORD_0": 3}, "indices": 4, "material": 0},
                ]
            }
        ],
        "nodes": [{"mesh": 0}],
        "scenes": [{"nodes": [0]}],
        "scene": 0,
    }
    js = json.dumps(gltf).encode()
    js += b" " * (-len(js) % 4)
    body = (
        struct.pack("<II", len(js), 0x4E4F534A)
        + js
        + struct.pack("<II", len(blob), 0x004E4942)
        + blob
    )
    with open(path, "wb") as f:
        f.write(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)
    return path


def test_ktx2_texture_is_decoded_with_its_uvs(tmp_path):
    path = write_basis_glb(str(tmp_path / "wall.basis.glb"), _ktx2(_texture()))
    mesh = load_mesh(path, "y")
    assert len(mesh.textures) == 1 and mesh.textures[0].shape == (64, 64, 4)
    tex = mesh.textures[0].astype(int)
    assert np.abs(tex[40, 10, :3] - RED).max() < 30 and np.abs(tex[40, 50, :3] - BLUE).max() < 30
    assert np.abs(tex[5, 10, :3] - GREEN).max() < 30
    assert (mesh.face_texture == 0).sum() == 2 and (mesh.face_texture == -1).sum() == 2


@needs_egl
def test_rendered_wall_shows_the_texture_colours(tmp_path):
    from habitat.config.default_structured_configs import HabitatSimRGBSensorConfig

    path = write_basis_glb(str(tmp_path / "wall.basis.glb"), _ktx2(_texture()))
    rgb = {
        "rgb_sensor": HabitatSimRGBSensorConfig(
            width=64, height=64, hfov=90, position=[0.0, 1.25, 0.0]
        )
    }
    sim, _ = make_sim(path, start=[0.0, 0.0, 0.0], sensors=rgb, up_axis="y")
    img = sim.get_observations_at()["rgb"][..., :3].astype(float)

    def hue(px):  # dominant channel, shading only scales the colour
        return int(np.argmax(px))

    # facing -z: the wall fills the middle rows; its left half red, right half blue, the
    # top quarter of the texture (y > 1.875 m) green near the top of the wall
    assert hue(img[40, 12]) == 0 and hue(img[40, 52]) == 2
    assert hue(img[17, 12]) == 1 and hue(img[17, 52]) == 1
    assert img[40, 12, 0] > 2 * img[40, 12, 2] and img[40, 52, 2] > 2 * img[40, 52, 0]


def test_undecodable_texture_warns_in_one_line_and_keeps_the_geometry(tmp_path, caplog):
    pytest.importorskip("opengl_basisu")  # the hm3d extra: Python 3.10+ (its wheels)
    path = write_basis_glb(
        str(tmp_path / "bad.basis.glb"), b"\xabKTX 20\xbb\r\n\x1a\n" + b"\0" * 40
    )
    with caplog.at_level(logging.WARNING):
        mesh = load_mesh(path, "y")
    msgs = [r.getMessage() for r in caplog.records if "cannot be decoded" in r.getMessage()]
    assert len(msgs) == 1 and "\n" not in msgs[0]
    assert "bad.basis.glb" in msgs[0] and "image 0" in msgs[0] and "image/ktx2" in msgs[0]
    assert len(mesh.faces) == 4 and mesh.textures == []


def test_without_the_optional_basis_decoder_the_error_names_the_extra(tmp_path, monkeypatch):
    """opengl-basisu is an optional extra (HM3D textures only): without it a Basis scene
    is one line saying what to install, not an ImportError deep in the loader."""
    import importlib.util

    from habitat_mosnav.scenes.io import SceneFormatError
    from habitat_mosnav.sims.geometry import basis_glb_to_png_glb

    path = write_basis_glb(
        str(tmp_path / "wall.basis.glb"), b"\xabKTX 20\xbb\r\n\x1a\n" + b"\0" * 40
    )
    stock = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "opengl_basisu" else stock(name, *a),
    )
    with open(path, "rb") as f:
        data = f.read()
    with pytest.raises(
        SceneFormatError, match=r"wall\.basis\.glb: .*pip install 'habitat_mosnav\[hm3d\]'"
    ):
        basis_glb_to_png_glb(path, data)
