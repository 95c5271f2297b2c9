"""``mosnav-make-scenes`` and the scene-file readers' error messages."""

import json
import os

import numpy as np
import pytest

from habitat_mosnav.scenes import SceneFormatError, load_scene_meta, read_semantic_txt
from habitat_mosnav.scenes.cli import main


def test_cli_writes_n_scenes(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--num-scenes", "2", "--seed", "9"]) == 0
    dirs = sorted(os.listdir(tmp_path))
    assert len(dirs) == 2 and dirs[0].startswith("00000-") and dirs[1].startswith("00001-")
    for d in dirs:
        sid = d.split("-", 1)[1]
        assert sorted(os.listdir(tmp_path / d)) == sorted(
            [f"{sid}.glb", f"{sid}.semantic.glb", f"{sid}.semantic.txt", f"{sid}.mosnav_meta.json"]
        )
    assert "2 rooms" not in capsys.readouterr().out  # apartments have 4-6 rooms


@pytest.mark.parametrize(
    "argv,word",
    [
        (["--num-scenes", "2"], "--out"),
        (["--out", "X", "--num-scenes", "two"], "--num-scenes"),
        (["--out", "X", "--num-scenes", "-1"], "--num-scenes"),
        (["--out", "X", "--seed", "-3"], "--seed"),
        (["--out", "X", "--rooms", "3"], "--rooms"),
        (["--out", "X", "--floors", "0"], "--floors"),
        (["--out", "X", "--scan-edge", "-0.1"], "--scan-edge"),
        (["--out", "X", "--jitter", "lots"], "--jitter"),
    ],
)
def test_cli_bad_arguments_one_line_exit_2(tmp_path, capsys, argv, word):
    argv = [str(tmp_path / "o") if a == "X" else a for a in argv]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "o").exists()


def test_cli_rooms_floors_and_scan_options(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "a"), "--rooms", "8", "--floors", "2"]) == 0
    assert "17 rooms" in capsys.readouterr().out  # 2 x 8 rooms and the stair hall
    assert (
        main(["--out", str(tmp_path / "b"), "--scan", "--scan-edge", "0.5", "--clutter", "5"]) == 0
    )
    [d] = os.listdir(tmp_path / "b")
    meta = load_scene_meta(str(tmp_path / "b" / d / (d.split("-", 1)[1] + ".mosnav_meta.json")))
    assert meta["generator"]["options"] == {
        "rooms": None,
        "floors": 1,
        "scan_edge": 0.5,
        "jitter": 0.015,
        "clutter": 5,
    }


def test_cli_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit) as e:
        main(["--out", str(f)])
    assert e.value.code == 2
    assert "not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text,where",
    [
        ('HM3D Annotations\n1,FF0000,"chair",0\n', ":1: header"),
        ('HM3D Semantic Annotations\n1,FF00,"chair",0\n', ":2: color"),
        ('HM3D Semantic Annotations\n1,FF0000,"chair",0\nx,00FF00,"sofa",1\n', ":3: object_id"),
        ('HM3D Semantic Annotations\n1,FF0000,"chair",a\n', ":2: region_id"),
        (
            'HM3D Semantic Annotations\n1,FF0000,"chair",0\n1,00FF00,"sofa",1\n',
            ":3: object_id: duplicate",
        ),
        ("HM3D Semantic Annotations\n1,FF0000,chair\n", ":2: line"),
    ],
)
def test_semantic_txt_errors_name_file_line_field(tmp_path, text, where):
    p = tmp_path / "x.semantic.txt"
    p.write_text(text)
    with pytest.raises(SceneFormatError, match=str(p).replace("\\", "\\\\") + where):
        read_semantic_txt(str(p))


def test_semantic_txt_parses_hm3d_lines(tmp_path):
    p = tmp_path / "x.semantic.txt"
    p.write_text('HM3D Semantic Annotations\n1,9f5f3a,"bath mat",0\n2,00FF01,"wall",3\n')
    objs = read_semantic_txt(str(p))
    assert [(o.object_id, o.color_hex, o.category, o.region_id) for o in objs] == [
        (1, "9F5F3A", "bath mat", 0),
        (2, "00FF01", "wall", 3),
    ]
    assert objs[0].rgb == (0x9F, 0x5F, 0x3A)


def _meta(**over):
    doc = {
        "schema_version": 1,
        "scene_id": "abc",
        "regions": [
            {"region_id": 0, "name": "kitchen", "aabb": {"center": [0, 1, 0], "size": [2, 2, 2]}}
        ],
        "objects": [
            {
                "object_id": 7,
                "category": "chair",
                "region_id": 0,
                "color": ["red"],
                "material": ["wood"],
                "feature": [],
                "position": [0, 0.4, 0],
                "aabb": {"center": [0, 0.4, 0], "size": [1, 1, 1]},
            }
        ],
    }
    doc.update(over)
    return doc


@pytest.mark.parametrize(
    "mutate,where",
    [
        (lambda d: d["objects"][0].pop("category"), "object 7: category"),
        (lambda d: d["objects"][0].update(color="red"), "object 7: color"),
        (lambda d: d["objects"][0].update(region_id=4), "object 7: region_id"),
        (lambda d: d["objects"][0]["aabb"].update(size=[1, 1]), "object 7: aabb.size"),
        (lambda d: d.pop("regions"), "document: regions"),
        (lambda d: d.update(up_axis="x"), "document: up_axis"),
    ],
)
def test_meta_errors_name_record_and_field(tmp_path, mutate, where):
    doc = _meta()
    mutate(doc)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SceneFormatError, match=where):
        load_scene_meta(str(p))
    assert load_scene_meta  # the good document loads
    p.write_text(json.dumps(_meta()))
    assert load_scene_meta(str(p))["objects"][0]["object_id"] == 7


def test_meta_bad_json_and_missing_file(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("{bad")
    with pytest.raises(SceneFormatError, match="m.json:1: bad JSON"):
        load_scene_meta(str(p))
    with pytest.raises(SceneFormatError, match="cannot read"):
        load_scene_meta(str(tmp_path / "nope.json"))


def test_topdown_preview_draws_a_known_square():
    """A 1 m red square on the floor at x, z in [0, 1] fills 50x50 pixels at 2 cm/pixel."""
    import numpy as np

    from habitat_mosnav.scenes.preview import render_topdown

    v = np.array(
        [[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1], [0, 3, 0], [1, 3, 1], [0, 3, 1]], dtype=float
    )
    f = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6]])  # the last triangle is a "ceiling": cut
    c = np.array([[255, 0, 0, 255]] * 4 + [[0, 255, 0, 255]] * 3)
    img = render_topdown(v, f, c, meters_per_pixel=0.02)
    assert img.shape == (51, 51, 3)
    red = (img[:, :, 0] == 255) & (img[:, :, 1] == 0)
    assert 50 * 50 <= red.sum() <= 51 * 51 and not (img[:, :, 1] == 255).any()


def test_cli_preview_writes_png(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--num-scenes", "1", "--seed", "4", "--preview"]) == 0
    (d,) = os.listdir(tmp_path)
    sid = d.split("-", 1)[1]
    assert os.path.getsize(tmp_path / d / f"{sid}.topdown.png") > 1000
    # the Z-up file is turned into the world first: the image spans the floor plan (x by z),
    # not a side view whose height would be the 2.5 m walls
    import imageio.v2 as imageio

    img = imageio.imread(tmp_path / d / f"{sid}.topdown.png")
    meta = json.loads((tmp_path / d / f"{sid}.mosnav_meta.json").read_text())
    lo = np.min(
        [
            np.subtract(r["aabb"]["center"], np.divide(r["aabb"]["size"], 2))
            for r in meta["regions"]
        ],
        0,
    )
    hi = np.max(
        [np.add(r["aabb"]["center"], np.divide(r["aabb"]["size"], 2)) for r in meta["regions"]], 0
    )
    assert (
        abs(img.shape[0] - (hi[2] - lo[2]) / 0.02) <= 15
        and abs(img.shape[1] - (hi[0] - lo[0]) / 0.02) <= 15
    )


def test_write_semantic_txt_round_trips_through_the_reader(tmp_path):
    """One writer (generator and toy scenes) and one reader for semantic.txt."""
    from habitat_mosnav.scenes.io import SemanticObject, write_semantic_txt

    p = tmp_path / "w.semantic.txt"
    write_semantic_txt(
        str(p),
        [
            (1, 0x00FF80, "chair", 0),
            (2, "a0b1c2", "dining table", 3),
            SemanticObject(5, "0000FF", "wall", 1),
        ],
    )
    assert p.read_text().splitlines() == [
        "HM3D Semantic Annotations",
        '1,00FF80,"chair",0',
        '2,A0B1C2,"dining table",3',
        '5,0000FF,"wall",1',
    ]
    got = read_semantic_txt(str(p))
    assert [(o.object_id, o.color_hex, o.category, o.region_id) for o in got] == [
        (1, "00FF80", "chair", 0),
        (2, "A0B1C2", "dining table", 3),
        (5, "0000FF", "wall", 1),
    ]
    with pytest.raises(ValueError, match=r"object 3: color"):
        write_semantic_txt(str(p), [(3, "red", "chair", 0)])
