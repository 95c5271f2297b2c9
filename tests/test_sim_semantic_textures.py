"""HM3D v0.2 semantic textures on both simulators, on an HM3D-format fixture written byte by
byte (tests/glb_fixtures.py ``textured_semantic_scene``): a Z-up ``semantic.glb`` whose every
primitive has COLOR_0 and a base colour texture; the wall's texture paints a picture (object
3) that has no vertex of its own; the chair (object 4) is in two pieces.

Camera used throughout: 64 x 64, hfov 90, 1 m above the agent's feet; the agent at the
origin facing -z sees the wall (z = -2) at 16 px per metre; the picture's texels (columns
24..39, rows 10..21 of 64 x 40 over 4 m x 2.5 m) cover x -0.5..0.5, y 1.125..1.875.
Tests marked ``habitat_sim`` compare with habitat-sim's ``Sim-v0`` (gpu_device_id=-1)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (habitat placeholders before habitat)
from glb_fixtures import textured_semantic_scene, write_scene_dataset_config
from habitat_mosnav.sims import render

needs_egl = pytest.mark.skipif(not render.egl_available(), reason="no headless EGL")

W = H = 64
POSES = [  # (position, yaw in degrees about +y): facing the wall, turned, looking at the chair
    ([0.0, 0.0, 0.0], 0.0),
    ([0.4, 0.0, 0.3], 20.0),
    ([-0.5, 0.0, 0.5], -35.0),
]


def _quat(yaw_deg):
    import quaternion  # noqa: F401

    a = np.deg2rad(yaw_deg) / 2
    return np.quaternion(np.cos(a), 0.0, np.sin(a), 0.0)


def _make(backend, scene_glb, sdc):
    from habitat.sims import make_sim

    from habitat_mosnav.dataset_building.geometry import CameraSpec, make_sim_config

    cam = CameraSpec(width=W, height=H, hfov=90, sensor_height=1.0, rgb=False)
    cfg = make_sim_config(scene_glb, backend, cam, sdc, up_axis="z")
    if backend == "habitat-sim":
        cfg.habitat_sim_v0.gpu_device_id = -1
    else:
        import habitat_mosnav.sims  # noqa: F401  (registers MosNavMeshSim-v0)

        cfg.scene_dataset = sdc  # the CPU simulator reads has_semantic_textures from it too
    return make_sim(cfg.type, config=cfg)


def _frame(sim, pos, yaw):
    obs = sim.get_observations_at(
        position=np.asarray(pos, np.float32), rotation=_quat(yaw), keep_agent_at_new_pose=False
    )
    return np.asarray(obs["semantic"]).reshape(H, W).astype(np.int64)


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    root = tmp_path_factory.mktemp("semtex")
    d, sid = textured_semantic_scene(root)
    rel = [f"{os.path.basename(d)}/{sid}.glb"]
    return {
        "glb": os.path.join(d, sid + ".glb"),
        "dir": d,
        "sid": sid,
        "textures": write_scene_dataset_config(root / "tex.scene_dataset_config.json", rel, True),
        "vertices": write_scene_dataset_config(root / "vert.scene_dataset_config.json", rel, False),
    }


@pytest.fixture(scope="module")
def cpu(scene):
    sims = {mode: _make("mosnav", scene["glb"], scene[mode]) for mode in ("textures", "vertices")}
    yield sims
    for s in sims.values():
        s.close()


# ------------------------------------------------------------------ CPU simulator alone
@needs_egl
def test_semantic_camera_reads_the_texture_texel_by_texel(cpu):
    """The picture exists only as texels: the camera facing the wall sees it exactly where
    its texels are (x -0.5..0.5 -> columns 24..39; y 1.875..1.125 at 1 m camera height ->
    rows 32 - 0.875 * 16 = 18 .. 32 - 0.125 * 16 = 30), 16 x 12 pixels, the wall around it."""
    img = _frame(cpu["textures"], *POSES[0])
    pic = img == 3
    assert pic.sum() == 16 * 12
    rows, cols = np.nonzero(pic)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (18, 29, 24, 39)
    assert img[17, 30] == 2 and img[30, 30] == 2 and img[24, 23] == 2 and img[24, 40] == 2
    assert (img == 4).sum() > 100 and img[63, 5] == 1  # the chair (textured) and the floor


@needs_egl
def test_without_semantic_textures_the_vertex_colours_decide(cpu):
    """has_semantic_textures false in the scene dataset config: as habitat-sim, each face
    takes its vertices' COLOR_0 object, so the picture (texels only) is wall."""
    img = _frame(cpu["vertices"], *POSES[0])
    assert (img == 3).sum() == 0 and img[24, 30] == 2


def test_boxes_come_from_the_largest_vertex_piece_and_texels_give_none(cpu):
    """habitat-sim's HM3D boxes: per object colour the vertex-connected piece with the
    largest box; the chair's 0.2 m cube at (-2, 2) does not stretch its box. The picture has
    no vertex: no box (obb centre 0, sizes 0, as habitat-sim's)."""
    objs = {o.semantic_id: o for o in cpu["textures"].semantic_annotations().objects}
    assert [objs[i].id for i in range(6)] == [
        "Unknown_0",
        "floor_1",
        "wall_2",
        "picture_3",
        "chair_4",
        "lamp_5",
    ]
    chair = objs[4]
    np.testing.assert_allclose(chair.aabb.min, [0.5, 0.0, -1.3], atol=1e-6)
    np.testing.assert_allclose(chair.aabb.max, [1.0, 0.9, -0.8], atol=1e-6)
    np.testing.assert_allclose(chair.obb.center, [0.75, 0.45, -1.05], atol=1e-6)
    np.testing.assert_allclose(chair.obb.sizes, [0.5, 0.9, 0.5], atol=1e-6)
    np.testing.assert_allclose(objs[2].obb.center, [0.0, 1.25, -2.0], atol=1e-6)
    np.testing.assert_allclose(objs[2].obb.sizes, [4.0, 2.5, 0.0], atol=1e-6)
    for oid in (3, 5):
        assert objs[oid].aabb is None
        assert objs[oid].obb.sizes.tolist() == [0, 0, 0] and objs[oid].obb.center.tolist() == [
            0,
            0,
            0,
        ]


@needs_egl
def test_mosnav_build_gives_a_texture_only_object_view_points(scene):
    """extract on the CPU backend: the picture (found per texel) is seen by the semantic
    camera, so it becomes a goal with view points instead of ``dropped_no_view_point``."""
    from pathlib import Path

    from habitat_mosnav.dataset_building.common import scene_files
    from habitat_mosnav.dataset_building.extract import ExtractOptions, extract_goals, parse_objects
    from habitat_mosnav.dataset_building.geometry import CameraSpec, open_scene

    files = scene_files(Path(scene["dir"]))
    opts = ExtractOptions(up_axis="z", min_size=0.1)
    objects, counts = parse_objects(files, opts)
    assert 3 in {o.object_id for o in objects}
    geo = open_scene(files, "mosnav", CameraSpec(width=96, height=96, rgb=False), up_axis="z")
    try:
        goals = extract_goals(geo, [o for o in objects if o.object_id == 3], opts, counts)
    finally:
        geo.close()
    assert counts["dropped_no_view_point"] == 0 and [g["object_id"] for g in goals] == [3]
    pts = np.array([v["position"] for v in goals[0]["view_points"]])
    # within 1 m of the picture's footprint (x -0.5..0.5, z = -2); several in front of the
    # wall (the fixture's wall is a single quad, seen from both sides)
    assert np.all(np.abs(pts[:, 0]) <= 1.5 + 1e-6) and np.all(np.abs(pts[:, 2] + 2.0) <= 1.0 + 1e-6)
    assert np.count_nonzero(pts[:, 2] > -2.0) >= 3


# ------------------------------------------------------------------ against habitat-sim
def _habitat_sim_or_skip():
    try:
        import habitat_sim  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"needs habitat-sim ({exc})")


DEMO = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "habitat_mosnav",
    "data",
    "demo",
    "scenes",
)
GOALS = [
    (4, [0.75, 0.0, -1.05]),
    (2, [0.0, 0.0, -2.0]),
]  # chair and wall: habitat's goal (object_id, position)


def _demo_scenes(root):
    """The bundled demo scenes' semantic.glb / semantic.txt (vertex-coloured, Z up) beside a
    small unlit stand-in render mesh (the semantic camera draws only the semantic mesh, in
    both simulators), a Z-up scene dataset config, and poses: each region's centre at floor
    height, facing -z and +x."""
    import json
    import shutil

    from glb_fixtures import glb

    unlit = {
        "pbrMetallicRoughness": {"baseColorFactor": [0.6, 0.6, 0.6, 1.0]},
        "extensions": {"KHR_materials_unlit": {}},
    }
    floor = {
        "positions": [[-20, -20, 0], [20, -20, 0], [20, 20, 0], [-20, 20, 0]],
        "faces": [[0, 1, 2], [0, 2, 3]],
        "material": 0,
    }
    out = []
    for name in sorted(n for n in os.listdir(DEMO) if os.path.isdir(os.path.join(DEMO, n))):
        sid = name.split("-", 1)[1]
        d = os.path.join(str(root), name)
        os.makedirs(d)
        for ext in (".semantic.glb", ".semantic.txt"):
            shutil.copy(os.path.join(DEMO, name, sid + ext), d)
        glb(
            os.path.join(d, sid + ".glb"),
            [floor],
            materials=[unlit],
            extensions_used=["KHR_materials_unlit"],
        )
        sdc = write_scene_dataset_config(
            os.path.join(str(root), f"{sid}.scene_dataset_config.json"),
            [f"{name}/{sid}.glb"],
            False,
        )
        with open(os.path.join(DEMO, name, sid + ".mosnav_meta.json")) as fh:
            regions = json.load(fh)["regions"]
        poses = [
            ([r["aabb"]["center"][0], 0.0, r["aabb"]["center"][2]], yaw)
            for r in regions
            for yaw in (0.0, -90.0)
        ]
        out.append({"scene": os.path.join(d, sid + ".glb"), "dataset": sdc, "poses": poses})
    return out


@pytest.fixture(scope="module")
def hsim(scene, tmp_path_factory):
    """habitat-sim's results, from tests/habitat_sim_probe.py in one child process (see
    there why): the fixture with and without semantic textures (the latter with habitat's
    top_down_map), then the demo scenes."""
    import json
    import subprocess
    import sys

    _habitat_sim_or_skip()
    tmp = tmp_path_factory.mktemp("hsim")
    demo = _demo_scenes(tmp_path_factory.mktemp("demo"))
    runs = [
        {"scene": scene["glb"], "dataset": scene["textures"], "poses": POSES},
        {
            "scene": scene["glb"],
            "dataset": scene["vertices"],
            "poses": POSES,
            "goals": GOALS,
            "map_resolution": 128,
        },
    ] + demo
    job = {"width": W, "height": H, "hfov": 90, "sensor_height": 1.0, "runs": runs}
    (tmp / "job.json").write_text(json.dumps(job))
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.dirname(here), here, os.environ.get("PYTHONPATH", "")]),
    )
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(here, "habitat_sim_probe.py"),
            str(tmp / "job.json"),
            str(tmp / "out.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((tmp / "out.json").read_text())
    for r in res:
        r["frames"] = [np.asarray(f) for f in r["frames"]]
    return {"textures": res[0], "vertices": res[1], "demo": list(zip(demo, res[2:]))}


@pytest.mark.habitat_sim
@needs_egl
def test_semantic_ids_agree_with_habitat_sim_vertex_semantics(cpu, hsim):
    for pos, yaw in POSES:
        a, b = (
            hsim["vertices"]["frames"][POSES.index((pos, yaw))],
            _frame(cpu["vertices"], pos, yaw),
        )
        assert len(np.unique(a)) >= 3, (pos, yaw)  # the view holds several objects
        assert (a == b).mean() >= 0.99, (pos, yaw, (a == b).mean())


@pytest.mark.habitat_sim
def test_object_boxes_agree_with_habitat_sim(cpu, hsim):
    """Every object's box (habitat-sim's ``obb``: centre, sizes) is the same on both, the
    largest-piece rule and the no-vertex objects included. habitat-sim's ``aabb`` itself is
    a magnum Range3D joined with the world origin and has no ``sizes`` (so habitat's
    top_down_map ``draw_goal_aabbs`` draws nothing on Sim-v0): pinned here."""
    theirs = hsim["vertices"]["objects"]
    ours = {o.id: o for o in cpu["vertices"].semantic_annotations().objects}
    assert sorted(theirs) == sorted(ours)
    for name, o in ours.items():
        np.testing.assert_allclose(theirs[name]["center"], o.obb.center, atol=1e-4, err_msg=name)
        np.testing.assert_allclose(theirs[name]["sizes"], o.obb.sizes, atol=1e-4, err_msg=name)
    chair = theirs["chair_4"]
    assert chair["aabb_has_sizes"] is False
    np.testing.assert_allclose(
        chair["aabb_min"], [0.0, 0.0, -1.3], atol=1e-4
    )  # joined with the origin
    np.testing.assert_allclose(chair["aabb_max"], [1.0, 0.9, 0.0], atol=1e-4)


@pytest.mark.habitat_sim
@needs_egl
@pytest.mark.xfail(
    strict=True,
    reason="habitat-sim 0.3.3 here (llvmpipe) renders has_semantic_textures scenes "
    "as all 0 and builds no boxes (cf. habitat-sim#2524)",
)
def test_semantic_ids_agree_with_habitat_sim_texture_semantics(cpu, hsim):
    for pos, yaw in POSES:
        a, b = (
            hsim["textures"]["frames"][POSES.index((pos, yaw))],
            _frame(cpu["textures"], pos, yaw),
        )
        assert (a == b).mean() >= 0.99, (pos, yaw, (a == b).mean())


@pytest.mark.habitat_sim
@needs_egl
def test_demo_scenes_semantic_ids_and_boxes_agree_with_habitat_sim(hsim):
    """The bundled demo scenes (vertex semantics): at every region centre, two headings,
    >= 99.5 % of all semantic pixels equal and >= 98 % in each frame (a frame may hold a
    seam where two objects' faces meet at equal depth, e.g. a bed standing on the floor,
    which the two rasterisers break differently); every object's box equal within 1e-4 m."""
    equal = total = 0
    worst = 1.0
    for spec, theirs in hsim["demo"]:
        sim = _make("mosnav", spec["scene"], spec["dataset"])
        try:
            for (pos, yaw), a in zip(spec["poses"], theirs["frames"]):
                b = _frame(sim, pos, yaw)
                pairs = sorted(set(zip(a[a != b].tolist(), b[a != b].tolist())))
                assert (a == b).mean() >= 0.98, (spec["scene"], pos, yaw, (a == b).mean(), pairs)
                worst = min(worst, (a == b).mean())
                equal, total = equal + int((a == b).sum()), total + a.size
            ours = {o.id: o for o in sim.semantic_annotations().objects}
        finally:
            sim.close()
        assert sorted(ours) == sorted(theirs["objects"]) and len(ours) > 10
        for name, o in ours.items():
            np.testing.assert_allclose(
                theirs["objects"][name]["center"], o.obb.center, atol=1e-4, err_msg=name
            )
            np.testing.assert_allclose(
                theirs["objects"][name]["sizes"], o.obb.sizes, atol=1e-4, err_msg=name
            )
    print(
        f"demo semantic frames: {equal / total:.4%} of {total} pixels equal, worst frame {worst:.2%}"
    )
    assert equal / total >= 0.995


@pytest.mark.habitat_sim
def test_top_down_map_goal_boxes(cpu, hsim):
    """habitat's own top_down_map measure (draw_goal_aabbs) on both simulators. On Sim-v0 it
    draws no goal box: habitat-lab reads ``aabb.sizes``, which habitat-sim 0.3.3's Range3D
    lacks (the AttributeError is swallowed). On the CPU simulator it draws the chair's and
    the wall's boxes exactly where habitat's drawing code puts habitat-sim's own boxes
    (``obb``) on the same map; the picture (no vertex, no box) is drawn by neither."""
    from habitat.tasks.nav.nav import MAP_THICKNESS_SCALAR
    from habitat.utils.visualizations import maps

    from habitat_sim_probe import top_down_map

    theirs = np.asarray(hsim["vertices"]["map"])
    assert theirs.shape[0] > 50 and (theirs == maps.MAP_VALID_POINT).any()
    assert not (theirs == maps.MAP_TARGET_BOUNDING_BOX).any()
    sim = cpu["vertices"]
    ours = top_down_map(sim, GOALS + [(3, [0.0, 0.0, -2.0])], POSES[0][0], 128)
    expected = np.zeros(ours.shape[:2], np.uint8)
    thickness = int(np.round(128 * 2 / MAP_THICKNESS_SCALAR))
    for oid, _ in GOALS:
        box = hsim["vertices"]["objects"][{4: "chair_4", 2: "wall_2"}[oid]]
        c, half = np.asarray(box["center"]), np.asarray(box["sizes"]) / 2
        corners = [
            c + np.array([x, 0, z])
            for x, z in (
                (-half[0], -half[2]),
                (-half[0], half[2]),
                (half[0], half[2]),
                (half[0], -half[2]),
                (-half[0], -half[2]),
            )
        ]
        maps.draw_path(
            expected,
            [maps.to_grid(p[2], p[0], expected.shape, sim=sim) for p in corners],
            1,
            thickness,
        )
    drawn = ours == maps.MAP_TARGET_BOUNDING_BOX
    assert drawn.sum() > 20 and np.array_equal(drawn, expected.astype(bool))


def test_colour_to_id_rules_are_habitat_sims():
    """Vertex colours -> ids as habitat-sim's GenericSemanticMeshData: a semantic.txt colour
    -> its object, black -> 0, other colours -> new ids after the largest (7 here), in order of
    first appearance; texels: the same table, colours it lacks -> 0."""
    from habitat_mosnav.scenes.io import SemanticObject
    from habitat_mosnav.sims.geometry import _id_texture, _semantic_ids

    table = {
        0x112233: SemanticObject(3, "112233", "chair", 0),
        0x445566: SemanticObject(7, "445566", "bed", 1),
    }
    packed = np.array([0x445566, 0x000000, 0xABCDEF, 0x112233, 0x010101, 0xABCDEF, 0x445566])
    ids, extra = _semantic_ids(packed, table)
    assert ids.tolist() == [7, 0, 8, 3, 9, 8, 7] and extra == {0xABCDEF: 8, 0x010101: 9}
    keys = np.array(sorted([0x112233, 0x445566, 0xABCDEF]))
    img = np.array(
        [[[0x11, 0x22, 0x33], [0xAB, 0xCD, 0xEF], [0x00, 0x00, 0x00], [0x12, 0x34, 0x56]]], np.uint8
    )
    assert _id_texture(img, (keys, np.array([3, 7, 8], np.float32))).tolist() == [[3, 8, 0, 0]]
