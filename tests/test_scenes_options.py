"""Generator options for bigger test scenes: rooms per floor, storeys joined by a stair
hall, and scan-like meshes (subdivided, jittered, cluttered)."""

import json

import numpy as np
import pytest

from habitat_mosnav.scenes.generator import SceneOptions, generate_scene
from habitat_mosnav.scenes.generator import RECIPES
from habitat_mosnav.scenes.scan import scan_like
from habitat_mosnav.scenes.stairs import FLOOR_PITCH, HALL_DEPTH, HALL_LENGTH
from habitat_mosnav.sims.geometry import load_mesh, scene_up_axis


def _meta(info):
    with open(info.meta, encoding="utf-8") as fh:
        return json.load(fh)


def _connected(n, doors):
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in doors:
        parent[find(a)] = find(b)
    return len({find(i) for i in range(n)}) == 1


def test_forty_rooms_on_one_floor_all_furnished_and_connected(tmp_path):
    info = generate_scene(str(tmp_path), 4, 0, SceneOptions(rooms=40))
    meta = _meta(info)
    assert info.num_regions == len(meta["regions"]) == 40
    assert all(r["name"] in RECIPES for r in meta["regions"])
    assert _connected(40, [d["regions"] for d in meta["doors"]])
    floor = sum(r["aabb"]["size"][0] * r["aabb"]["size"][2] for r in meta["regions"])
    assert floor > 350  # m2: HM3D-sized
    assert len({o["region_id"] for o in meta["objects"]}) >= 35  # furniture almost everywhere


def test_two_storeys_repeat_the_plan_with_a_stair_hall(tmp_path):
    one = _meta(generate_scene(str(tmp_path / "a"), 2, 0, SceneOptions(rooms=8)))
    info = generate_scene(str(tmp_path / "b"), 2, 0, SceneOptions(rooms=8, floors=2))
    meta = _meta(info)
    assert meta["floors"] == [
        {"level": 0, "floor_height": 0.0},
        {"level": 1, "floor_height": FLOOR_PITCH},
    ]
    regions = meta["regions"]
    assert len(regions) == 2 * 8 + 1 and regions[-1]["name"] == "stairs"
    hall = regions[-1]["aabb"]
    assert hall["size"][0] == pytest.approx(HALL_LENGTH) and hall["size"][2] == pytest.approx(
        HALL_DEPTH
    )
    # level 1 is level 0's plan, FLOOR_PITCH higher, region ids numbered on
    for low, high in zip(regions[:8], regions[8:16]):
        assert high["region_id"] == low["region_id"] + 8 and high["name"] == low["name"]
        assert high["aabb"]["center"][1] == pytest.approx(low["aabb"]["center"][1] + FLOOR_PITCH)
    assert [r["name"] for r in one["regions"]] == [r["name"] for r in regions[:8]]
    # one door per level opens onto the hall; all rooms of both floors reach it
    stair_doors = [d for d in meta["doors"] if 16 in d["regions"]]
    assert sorted(d["center"][1] for d in stair_doors) == [0.0, FLOOR_PITCH]
    assert _connected(17, [d["regions"] for d in meta["doors"]])
    assert len({d["door_id"] for d in meta["doors"]}) == len(meta["doors"])
    # furniture on both floors, at its floor's height
    ys = {
        o["region_id"] >= 8: o["aabb"]["center"][1] - o["aabb"]["size"][1] / 2
        for o in meta["objects"]
    }
    assert ys[False] < FLOOR_PITCH <= ys[True] + 1.0
    tris = load_mesh(info.glb, scene_up_axis(info.glb)).triangles
    assert tris[..., 1].max() == pytest.approx(FLOOR_PITCH + 2.55, abs=1e-3)  # two storeys tall


def test_scan_like_mesh_is_dense_jittered_and_keeps_the_furniture(tmp_path):
    plain = generate_scene(str(tmp_path / "p"), 6, 0)
    opts = SceneOptions(scan_edge=0.3, jitter=0.015, clutter=30)
    scan = generate_scene(str(tmp_path / "s"), 6, 0, opts)
    assert scan.num_triangles > 8 * plain.num_triangles
    tris = load_mesh(scan.glb, scene_up_axis(scan.glb)).triangles.astype(np.float64)
    edges = np.linalg.norm(tris - np.roll(tris, 1, axis=1), axis=2)
    assert edges.max() <= 0.3 + 2 * np.sqrt(3) * 0.015
    # the same furniture with the clutter boxes added; the files say how they were made
    pm, sm = _meta(plain), _meta(scan)
    furniture = [(o["category"], o["position"]) for o in sm["objects"] if o["category"] != "box"]
    assert furniture == [(o["category"], o["position"]) for o in pm["objects"]]
    boxes = [o for o in sm["objects"] if o["category"] == "box"]
    assert 10 <= len(boxes) <= 30 and all(o["aabb"]["size"][1] <= 0.46 for o in boxes)
    assert sm["generator"]["options"]["scan_edge"] == 0.3 and "options" not in pm["generator"]


def test_scan_like_jitters_each_place_once_within_the_bound():
    # two squares side by side as separate triangle pairs: their shared edge's vertices are
    # duplicated, and must stay together
    v = np.array(
        [[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1], [1, 0, 0], [2, 0, 0], [2, 0, 1], [1, 0, 1]],
        float,
    )
    f = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]])
    nv, nf, src = scan_like(v, f, 0.1, 0.015, np.random.default_rng(0))
    assert len(nf) >= 4 * 4**4 and set(src.tolist()) == {0, 1, 2, 3}
    assert np.abs(nv[:, 1]).max() <= 0.015 and nv[:, 1].std() > 0.006
    orig = scan_like(v, f, 0.1, 0.0, np.random.default_rng(0))[0]  # the same places, unjittered
    seam = np.abs(orig[:, 0] - 1.0) < 1e-9
    groups = {}
    for p, q in zip(np.round(orig[seam], 4), nv[seam]):
        groups.setdefault(tuple(p), set()).add(tuple(q))
    assert len(groups) >= 17 and sum(seam) > len(
        groups
    )  # seam places held by both squares' vertices
    assert all(len(g) == 1 for g in groups.values())  # one offset per place: no crack


@pytest.mark.parametrize(
    "opts,word",
    [
        (SceneOptions(rooms=3), "rooms"),
        (SceneOptions(floors=0), "floors"),
        (SceneOptions(scan_edge=-1.0), "scan_edge"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, opts, word):
    with pytest.raises(ValueError, match=word):
        generate_scene(str(tmp_path), 0, 0, opts)
