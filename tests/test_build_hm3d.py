"""HM3D v0.2 semantic files read as habitat-sim reads them, on fixtures written byte by byte
(tests/glb_fixtures.py, not the package's writer): objects painted into a texture are found
with their true extent, COLOR_0 is read linear or sRGB (whichever matches semantic.txt),
raw HM3D category names are normalised, ObjectNav HM3D v2 goals are imported and checked."""

import gzip
import json
from collections import Counter

import numpy as np
import pytest

from glb_fixtures import box_mesh, glb, png, srgb8_to_linear
from habitat_mosnav.dataset_building.common import BuildError, scene_files
from habitat_mosnav.dataset_building.extract import ExtractOptions, parse_objects
from habitat_mosnav.dataset_building.semantic import AnnotatedObject
from habitat_mosnav.scenes.io import write_semantic_txt

SID = "abcDEF12345"
CAB, PIC, CHAIR, WALL = 0x3366CC, 0xE0A010, 0x11AA55, 0x808080


def _scene(tmp_path, primitives, images=(), records=None, materials=None):
    d = tmp_path / f"00000-{SID}"
    d.mkdir()
    glb(d / f"{SID}.semantic.glb", primitives, images, materials)
    glb(d / f"{SID}.glb", primitives, images, materials)  # render mesh: only needs to exist
    write_semantic_txt(
        str(d / f"{SID}.semantic.txt"),
        records
        or [
            (1, CAB, "kitchen cabinet, lower", 0),
            (2, PIC, "picture", 0),
            (3, CHAIR, "chair", 0),
            (4, WALL, "wall /outside", 0),
        ],
    )
    return scene_files(d)


def _rgb(c):
    return [(c >> 16) & 255, (c >> 8) & 255, c & 255]


def _wall_texture():
    """64 x 32 texels: cabinet everywhere, the picture at columns 16..31, rows 8..15."""
    img = np.tile(np.array(_rgb(CAB), np.uint8), (32, 64, 1))
    img[8:16, 16:32] = _rgb(PIC)
    return img


# a 4 m x 2 m vertical quad at z = 1 (Y up file), two triangles; u = x / 4, v = 1 - y / 2
QUAD = {
    "positions": [[0, 0, 1], [4, 0, 1], [4, 2, 1], [0, 2, 1]],
    "faces": [[0, 1, 2], [0, 2, 3]],
    "uv": [[0, 1], [1, 1], [1, 0], [0, 0]],
    "material": 0,
}


def test_texture_objects_are_found_per_texel_with_their_true_extent(tmp_path):
    """The picture has no vertex of its own (painted into the wall's texture) and both
    triangles span cabinet and picture texels: each object's box is the box of its texel
    centres' surface points, exactly (texel (i, j) centre: x = (i + .5) / 16, y = 2 - (j + .5) / 16)."""
    v, f = box_mesh(2.5, 0.0, 2.0, 3.0, 0.9, 2.5)
    chair = {
        "positions": v,
        "faces": f,
        "color0": srgb8_to_linear(np.tile(_rgb(CHAIR), (8, 1))).astype(np.float32),
    }
    scene = _scene(tmp_path, [QUAD, chair], [png(_wall_texture())])
    objs, counts = parse_objects(scene, ExtractOptions(up_axis="y", min_size=0.1))
    by = {o.object_id: o for o in objs}
    assert sorted(by) == [1, 2, 3] and counts["dropped_category_annotator_note"] == 1
    pic = by[2]
    assert pic.samples == 16 * 8
    np.testing.assert_allclose(pic.lo, [16.5 / 16, 2 - 15.5 / 16, 1.0], atol=1e-9)
    np.testing.assert_allclose(pic.hi, [31.5 / 16, 2 - 8.5 / 16, 1.0], atol=1e-9)
    cab = by[1]
    assert cab.category == "kitchen cabinet" and cab.samples == 64 * 32 - 128
    np.testing.assert_allclose(cab.lo, [0.5 / 16, 2 - 31.5 / 16, 1.0], atol=1e-9)
    np.testing.assert_allclose(cab.hi, [63.5 / 16, 2 - 0.5 / 16, 1.0], atol=1e-9)
    np.testing.assert_allclose(by[3].lo, [2.5, 0.0, 2.0], atol=1e-6)  # vertex-coloured primitive
    np.testing.assert_allclose(by[3].hi, [3.0, 0.9, 2.5], atol=1e-6)
    assert counts["texels"] == 64 * 32 and counts["texels_unmatched"] == 0
    assert counts["primitives_textured"] == 1 and counts["primitives_vertex_colours"] == 1
    assert counts["color_encoding"] == "linear"


def test_texture_frame_turn_and_wrapped_uvs(tmp_path):
    """Z-up files are turned as habitat-sim turns them ((x, y, z) -> (x, z, -y)); UVs past 1
    wrap (glTF's default sampler): the quad's u in [1, 2] reads the same texture."""
    quad = dict(QUAD, uv=[[1, 1], [2, 1], [2, 0], [1, 0]])
    scene = _scene(tmp_path, [quad], [png(_wall_texture())])
    objs, _ = parse_objects(scene, ExtractOptions(up_axis="z", min_size=0.1))
    pic = {o.object_id: o for o in objs}[2]
    np.testing.assert_allclose(pic.lo, [16.5 / 16, 1.0, -(2 - 8.5 / 16)], atol=1e-9)
    np.testing.assert_allclose(pic.hi, [31.5 / 16, 1.0, -(2 - 15.5 / 16)], atol=1e-9)


def test_big_triangles_are_split_into_chunks_with_the_same_result(tmp_path, monkeypatch):
    from habitat_mosnav.dataset_building import semantic

    scene = _scene(tmp_path, [QUAD], [png(_wall_texture())])
    ref, _ = parse_objects(scene, ExtractOptions(up_axis="y", min_size=0.1))
    monkeypatch.setattr(semantic, "TEXEL_CHUNK", 100)  # many texel chunks
    monkeypatch.setattr(semantic, "ROW_CHUNK", 5)  # many triangle chunks
    got, c = parse_objects(scene, ExtractOptions(up_axis="y", min_size=0.1))
    assert c["texels"] == 64 * 32
    for a, b in zip(ref, got):
        assert a.samples == b.samples and np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)


@pytest.mark.parametrize("encoding", ["linear", "srgb"])
def test_color0_with_a_material_reads_linear_or_srgb_and_says_which(tmp_path, encoding):
    """COLOR_0 next to a material without a base colour (what crashes trimesh) is read;
    stored linear float (habitat-sim's reading) or as raw sRGB bytes, the encoding that
    matches semantic.txt is chosen and reported."""
    v1, f1 = box_mesh(0, 0, 0, 1, 1, 0.5)
    v2, f2 = box_mesh(2, 0, 0, 2.5, 0.8, 0.5)
    rgb = np.array([_rgb(CAB)] * 8 + [_rgb(CHAIR)] * 8, np.uint8)
    color0 = srgb8_to_linear(rgb).astype(np.float32) if encoding == "linear" else rgb
    prim = {
        "positions": np.concatenate([v1, v2]),
        "faces": np.concatenate([f1, np.asarray(f2) + 8]),
        "color0": np.concatenate(
            [color0, np.full((16, 1), 1.0 if encoding == "linear" else 255, color0.dtype)], axis=1
        ),
        "material": 0,
    }
    scene = _scene(tmp_path, [prim], materials=[{"pbrMetallicRoughness": {"metallicFactor": 0.0}}])
    objs, counts = parse_objects(scene, ExtractOptions(up_axis="y"))
    assert counts["color_encoding"] == encoding
    by = {o.object_id: o for o in objs}
    assert sorted(by) == [1, 3]
    np.testing.assert_allclose(by[3].lo, [2, 0, 0], atol=1e-6)
    np.testing.assert_allclose(by[3].hi, [2.5, 0.8, 0.5], atol=1e-6)
    assert counts["dropped_no_geometry"] == 1  # the picture has no colour in this file


def test_no_matching_colour_is_one_line_naming_the_file(tmp_path):
    v, f = box_mesh(0, 0, 0, 1, 1, 1)
    scene = _scene(
        tmp_path, [{"positions": v, "faces": f, "color0": np.full((8, 4), 0.3, np.float32)}]
    )
    with pytest.raises(BuildError, match=r"semantic\.glb: no texel or vertex colour matches") as e:
        parse_objects(scene, ExtractOptions(up_axis="y"))
    assert "\n" not in str(e.value)
    (tmp_path / "b").mkdir()
    scene2 = _scene(tmp_path / "b", [{"positions": v, "faces": f}])
    with pytest.raises(BuildError, match="no primitive has COLOR_0 or a base colour texture"):
        parse_objects(scene2, ExtractOptions(up_axis="y"))
    import struct

    data = scene.semantic_glb.read_bytes()  # a Draco-compressed file: refused, not misread
    jlen = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20 : 20 + jlen])
    doc["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    rest = data[20 + jlen :]
    scene.semantic_glb.write_bytes(
        struct.pack("<4sII", b"glTF", 2, 20 + len(js) + len(rest))
        + struct.pack("<I4s", len(js), b"JSON")
        + js
        + rest
    )
    with pytest.raises(
        BuildError, match=r"semantic\.glb: extensionsRequired: KHR_draco_mesh_compression"
    ):
        parse_objects(scene, ExtractOptions(up_axis="y"))
    bad = scene.semantic_glb
    bad.write_bytes(bad.read_bytes()[:40])
    with pytest.raises(BuildError, match=r"semantic\.glb: .*truncated"):
        parse_objects(scene, ExtractOptions(up_axis="y"))


def test_category_table_normalises_raw_hm3d_names():
    from habitat_mosnav.dataset_building.categories import CategoryNormalizer

    n = CategoryNormalizer()
    cases = {
        "shower wall": (None, "structural"),
        "wall panel": (None, "structural"),
        "wall /outside": (None, "annotator_note"),
        "cabinet /otherroom": (None, "annotator_note"),
        "unknown/remove": (None, "annotator_note"),
        "Unknown": (None, "unknown"),
        "misc": (None, "unknown"),
        "kitchen cabinet, lower": ("kitchen cabinet", "mapped"),
        "couch": ("sofa", "mapped"),
        "TV": ("tv", "kept"),
        "chairs": ("chair", "mapped"),
        "door frame": (None, "structural"),
        "wall lamp": ("wall lamp", "kept"),
        "ceiling lamp": ("ceiling lamp", "kept"),
        "floor": (None, "structural"),
        "potted plant": ("plant", "mapped"),
        "frog statue": ("frog statue", "kept_unlisted"),
        "table (broken)": ("table", "mapped"),
    }
    for raw, want in cases.items():
        assert n.normalize(raw) == want, raw
    assert n.mpcat40("tv") == "tv_monitor" and n.mpcat40("kitchen cabinet") == "cabinet"
    # the generator's (demo) categories pass unchanged
    for c in (
        "bath mat",
        "bathtub",
        "bed",
        "cabinet",
        "chair",
        "desk",
        "lamp",
        "mirror",
        "picture",
        "plant",
        "refrigerator",
        "shelf",
        "sink",
        "sofa",
        "stove",
        "table",
        "toilet",
        "towel",
        "tv",
    ):
        assert n.normalize(c) == (c, "kept"), c
    user = CategoryNormalizer(user_map={"wall /outside": "facade", "Chair": None}, drop=["tv"])
    assert user.normalize("wall /outside") == ("facade", "mapped")
    assert user.normalize("chair") == (None, "user_map") and user.normalize("television") == (
        None,
        "drop_list",
    )


def test_drops_are_counted_per_reason_and_the_table_is_overridable(tmp_path):
    from habitat_mosnav.dataset_building.cli import main

    v, f = box_mesh(0, 0, 0, 1, 1, 1)
    recs = [
        (1, CAB, "kitchen cabinet, lower", 0),
        (2, PIC, "unknown/remove", 0),
        (3, CHAIR, "shower wall", 0),
        (4, WALL, "cabinet /otherroom", 0),
    ]
    prims = [
        {
            "positions": v + [2 * i, 0, 0],
            "faces": f,
            "color0": srgb8_to_linear(np.tile(_rgb(c), (8, 1))).astype(np.float32),
        }
        for i, c in enumerate((CAB, PIC, CHAIR, WALL))
    ]
    scene = _scene(tmp_path, prims, records=recs)
    objs, c = parse_objects(scene, ExtractOptions(up_axis="y"))
    assert [o.category for o in objs] == ["kitchen cabinet"]
    assert (
        c["dropped_category"],
        c["dropped_category_annotator_note"],
        c["dropped_category_structural"],
    ) == (3, 2, 1)
    table = tmp_path / "table.json"
    table.write_text(
        json.dumps(
            {
                "vocabulary": {"cabinet": "cabinet"},
                "synonyms": {"kitchen cabinet": "cabinet"},
                "structural": [],
                "notes": [],
            }
        )
    )
    objs, c = parse_objects(
        scene,
        ExtractOptions(
            up_axis="y", category_table=str(table), category_map={"unknown/remove": None}
        ),
    )
    assert sorted(o.category for o in objs) == ["cabinet", "cabinet", "shower wall"]
    assert c["dropped_category_user_map"] == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"structural": "wall"}')
    rc = main(
        [
            "extract",
            "--scenes",
            str(tmp_path),
            "--out",
            str(tmp_path / "ds"),
            "--category-table",
            str(bad),
            "--no-progress",
        ]
    )
    assert rc == 2


def _objectnav(path, scene, goals):
    doc = {
        "goals_by_category": {f"{scene}.basis.glb_{cat}": gs for cat, gs in goals.items()},
        "episodes": [],
    }
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def _vp(pos, iou, rot=(0, 0.7071068, 0, 0.7071068)):
    return {"agent_state": {"position": list(pos), "rotation": list(rot)}, "iou": iou}


def test_objectnav_goals_are_read_and_validated(tmp_path):
    from habitat_mosnav.dataset_building.objectnav import (
        apply_objectnav,
        find_objectnav_file,
        read_objectnav_goals,
    )

    content = tmp_path / "content"
    content.mkdir()
    p = _objectnav(
        content / f"{SID}.json.gz",
        SID,
        {
            "chair": [
                {
                    "object_id": 3,
                    "object_category": "chair",
                    "position": [1, 0, 1],
                    "view_points": [_vp([1, 0, 2], 0.2), _vp([2, 0, 1], 0.6, (0, 0, 0, 2))],
                }
            ],
            "tv_monitor": [{"object_id": 9, "view_points": [_vp([0, 0, 0], 0.1)]}],
            "bed": [{"object_id": 5, "view_points": [_vp([9, 0, 9], 0.3), _vp([4.5, 0, 3], 0.1)]}],
            "sofa": [{"object_id": 6, "view_points": [_vp([0, 0, 0], 0.1)]}],
        },
    )
    assert find_objectnav_file(tmp_path, SID) == p
    got = read_objectnav_goals(p, SID)
    assert sorted(got) == [3, 5, 6, 9] and got[9]["category"] == "tv_monitor"
    assert got[3]["view_points"][1] == {
        "position": [2.0, 0.0, 1.0],
        "rotation": [0.0, 0.0, 0.0, 1.0],
        "iou": 0.6,
    }
    ours = [
        {
            "object_id": 3,
            "view_points": [{"position": [5, 0, 5], "rotation": [0, 0, 0, 1], "iou": 0.9}],
        }
    ]
    # object 5 passed our filters but our view-point search found none: ObjectNav's make it a goal
    bed = AnnotatedObject(
        5,
        "AABBCC",
        "bed",
        2,
        lo=np.array([4.0, 0.0, 1.0]),
        hi=np.array([6.0, 0.5, 2.0]),
        samples=100,
        category="bed",
    )
    c = Counter()
    out = apply_objectnav(ours, got, annotated_ids={3, 5, 6}, counts=c, objects=[bed])
    assert [v["iou"] for v in out[0]["view_points"]] == [0.6, 0.2]  # ObjectNav's, best first
    assert c == Counter(
        objectnav_goals=4,
        objectnav_applied=1,
        objectnav_added=1,
        goals=1,
        objectnav_unknown_object=1,
        objectnav_not_a_goal=1,
    )
    new = out[1]
    assert (new["object_id"], new["category"], new["region_id"]) == (5, "bed", 2)
    assert new["aabb"] == {"center": [5.0, 0.25, 1.5], "size": [2.0, 0.5, 1.0]}
    assert new["navigable_position"] == [4.5, 0.0, 3.0]  # the view point nearest the footprint
    assert [v["iou"] for v in new["view_points"]] == [0.3, 0.1]
    for bad, field in (
        ({"object_id": 3, "view_points": [_vp([1, 0, 2], float("nan"))]}, "'iou'"),
        ({"object_id": 3, "view_points": [_vp([1, 0, float("inf")], 0.3)]}, "'position'"),
        ({"object_id": 3, "view_points": [_vp([1, 0, 2], 0.3, (0, 0, 0, 0))]}, "zero-length"),
        ({"object_id": "3", "view_points": []}, "'object_id'"),
    ):
        _objectnav(p, SID, {"chair": [bad]})
        with pytest.raises(BuildError) as e:
            read_objectnav_goals(p, SID)
        msg = str(e.value)
        assert (
            msg.startswith(str(p)) and "goals_by_category['abcDEF12345.basis.glb_chair'][0]" in msg
        )
        assert field in msg and "\n" not in msg


def test_one_downloaded_scene_is_enough_for_limit_1(tmp_path, capsys):
    """mosnav-eval --limit 1 needs only the scene it selects; selecting a scene whose file
    is absent is one line naming it (exit 2)."""
    import os
    import shutil

    from habitat_mosnav.evaluation.cli import main as eval_main
    from mosnav_fixtures import base_documents, write_dataset, write_open_room_dataset

    data, scenes = write_open_room_dataset(tmp_path)
    write_dataset(tmp_path, base_documents("zzMissing01"), scene="zzMissing01")
    shutil.rmtree(os.path.join(scenes, "00000-zzMissing01"))
    base = [
        "--dataset-dir",
        data,
        "--scene-root",
        scenes,
        "--agent",
        "oracle",
        "--space-coverage-samples",
        "0",
        "--no-progress",
    ]
    assert eval_main(base + ["--limit", "1", "--output-dir", str(tmp_path / "one")]) == 0
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert (
        summary["status"] == "complete"
        and summary["ok_episode_count"] == summary["expected_episode_count"] > 0
    )
    capsys.readouterr()
    assert eval_main(base + ["--limit", "2", "--output-dir", str(tmp_path / "two")]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert (
        len(err) == 1
        and err[0].startswith("mosnav-eval: error: ")
        and "scene 'zzMissing01' not found" in err[0]
    )


def test_offline_on_hm3d_says_why_in_one_line(tmp_path, capsys):
    """HM3D scenes have no <id>.mosnav_meta.json: --offline attributes cannot run there."""
    from habitat_mosnav.dataset_building.cli import main

    v, f = box_mesh(0, 0, 0, 1, 1, 1)
    scenes = tmp_path / "scenes"  # the output beside the scenes, never inside (issue 39)
    scenes.mkdir()
    scene = _scene(
        scenes,
        [
            {
                "positions": v,
                "faces": f,
                "color0": srgb8_to_linear(np.tile(_rgb(CHAIR), (8, 1))).astype(np.float32),
            }
        ],
    )
    out = tmp_path / "ds"
    (out / SID).mkdir(parents=True)
    (out / SID / "goals.json").write_text(
        json.dumps({"schema_version": 1, "scene_id": SID, "goals": []})
    )
    assert (
        main(
            [
                "attributes",
                "--offline",
                "--scenes",
                str(scenes),
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and f"--offline needs {SID}.mosnav_meta.json" in err[0]
        and str(scene.directory) in err[0]
    )


def test_scene_ids_resolve_only_the_selected_scenes(tmp_path):
    """--scene-ids: another scene folder with only its semantic annotations downloaded (no
    .basis.glb) does not stop the build; without the selection it is a one-line error."""
    from habitat_mosnav.dataset_building.common import discover_scenes

    v, f = box_mesh(0, 0, 0, 1, 1, 1)
    _scene(tmp_path, [{"positions": v, "faces": f}])
    part = tmp_path / "00001-zzzPartial1"
    part.mkdir()
    write_semantic_txt(str(part / "zzzPartial1.semantic.txt"), [(1, CAB, "chair", 0)])
    glb(part / "zzzPartial1.semantic.glb", [{"positions": v, "faces": f}])
    assert [s.scene_id for s in discover_scenes(tmp_path, [SID])] == [SID]
    with pytest.raises(
        BuildError, match=r"00001-zzzPartial1: missing render mesh zzzPartial1\.basis\.glb"
    ):
        discover_scenes(tmp_path)


def test_node_transforms_and_uint16_colours(tmp_path):
    """A node's translation moves its primitive; COLOR_0 as normalised uint16 sRGB values."""
    v, f = box_mesh(0, 0, 0, 1, 1, 1)
    rgb16 = (np.tile(_rgb(CHAIR), (8, 1)).astype(np.uint32) * 257).astype(np.uint16)
    scene = _scene(
        tmp_path, [{"positions": v, "faces": f, "color0": rgb16, "translation": [10, 0, -2]}]
    )
    (chair,), counts = parse_objects(scene, ExtractOptions(up_axis="y"))
    assert counts["color_encoding"] == "srgb" and chair.object_id == 3
    np.testing.assert_allclose(chair.lo, [10, 0, -2], atol=1e-6)
    np.testing.assert_allclose(chair.hi, [11, 1, -1], atol=1e-6)


def test_habitat_sim_backend_finds_hm3ds_scene_dataset_config(tmp_path):
    """--backend habitat-sim on an HM3D scene without --scene-dataset uses the one annotated
    config next to the scenes, and says so in one line when there is none or several."""
    from habitat_mosnav.dataset_building.pipeline import BuildConfig

    v, f = box_mesh(0, 0, 0, 1, 1, 1)
    root = tmp_path / "hm3d"
    (root / "val").mkdir(parents=True)
    scene = _scene(root / "val", [{"positions": v, "faces": f}])
    cfg = BuildConfig(out=tmp_path / "ds", scenes=root / "val", backend="habitat-sim")
    with pytest.raises(BuildError, match="needs --scene-dataset .*found none"):
        cfg.resolved_scene_dataset(scene)
    sdc = root / "hm3d_annotated_basis.scene_dataset_config.json"
    sdc.write_text("{}")
    assert BuildConfig(
        out=tmp_path / "ds", scenes=root / "val", backend="habitat-sim"
    ).resolved_scene_dataset(scene) == str(sdc)
    (root / "val" / "other.scene_dataset_config.json").write_text("{}")
    with pytest.raises(BuildError, match="found .*hm3d_annotated_basis.*, .*other"):
        BuildConfig(
            out=tmp_path / "ds", scenes=root / "val", backend="habitat-sim"
        ).resolved_scene_dataset(scene)
    explicit = BuildConfig(
        out=tmp_path / "ds", scenes=root / "val", backend="habitat-sim", scene_dataset=str(sdc)
    )
    assert explicit.resolved_scene_dataset(scene) == str(sdc)
    assert (
        BuildConfig(out=tmp_path / "ds", scenes=root / "val").resolved_scene_dataset(scene)
        == "default"
    )
