"""MosNavMeshSim-v0 sensors: shapes, dtypes, ranges, metric depth, semantic ids, camera
pose/tilt, determinism, and the no-EGL paths."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (before habitat)
from habitat_mosnav.sims import render
from habitat_mosnav.sims import toy_scenes as ts

from test_sim_navigation import make_sim

needs_egl = pytest.mark.skipif(
    not render.egl_available(),
    reason="no headless EGL (apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri)",
)

# room_boxes order -> object ids: floor 1, north wall (z in [0, 0.1]) 2, south wall 3,
# west wall 4, east wall 5, ceiling 6
FLOOR, NORTH = 1, 2


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    d = tmp_path_factory.mktemp("renderscene")
    return ts.export_scene_with_semantics(
        str(d / "00000-room"), "room", ts.room_boxes(0.0, 0.0, 4.0, 4.0)
    )


def sensors(w=64, h=48, hfov=90, normalize=True, orientation=(0.0, 0.0, 0.0)):
    from habitat.config.default_structured_configs import (
        HabitatSimDepthSensorConfig,
        HabitatSimRGBSensorConfig,
        HabitatSimSemanticSensorConfig,
    )

    pos = [0.0, 1.25, 0.0]
    ori = list(orientation)
    return {
        "rgb_sensor": HabitatSimRGBSensorConfig(
            width=w, height=h, hfov=hfov, position=pos, orientation=ori
        ),
        "depth_sensor": HabitatSimDepthSensorConfig(
            width=w,
            height=h,
            hfov=hfov,
            position=pos,
            orientation=ori,
            min_depth=0.5,
            max_depth=5.0,
            normalize_depth=normalize,
        ),
        "semantic_sensor": HabitatSimSemanticSensorConfig(
            width=w, height=h, hfov=hfov, position=pos, orientation=ori
        ),
    }


@needs_egl
def test_shapes_dtypes_ranges(room):
    sim, _ = make_sim(room, start=[2.0, 0.0, 2.0], sensors=sensors(64, 48))
    spaces = sim.sensor_suite.observation_spaces.spaces
    assert spaces["rgb"].shape == (48, 64, 3) and spaces["rgb"].dtype == np.uint8
    assert spaces["depth"].shape == (48, 64, 1) and spaces["depth"].dtype == np.float32
    assert spaces["semantic"].shape == (48, 64, 1) and spaces["semantic"].dtype == np.int32
    obs = sim.reset()
    assert obs["rgb"].shape == (48, 64, 3) and obs["rgb"].dtype == np.uint8
    assert obs["depth"].shape == (48, 64, 1) and obs["depth"].dtype == np.float32
    assert obs["semantic"].shape == (48, 64, 1) and obs["semantic"].dtype == np.int32
    assert 0.0 <= obs["depth"].min() and obs["depth"].max() <= 1.0
    assert obs["rgb"].std() > 5  # lit geometry, not a blank frame
    for k, v in obs.items():
        assert spaces[k].contains(v), k


@needs_egl
def test_metric_depth_and_semantic_ids(room):
    # facing -z from (2, 0, 2): the north wall's inner face is at z = 0.1, i.e. 1.9 m away
    sim, _ = make_sim(room, start=[2.0, 0.0, 2.0], sensors=sensors(65, 49, normalize=False))
    obs = sim.reset()
    depth = obs["depth"][..., 0]
    assert depth[24, 32] == pytest.approx(1.9, abs=0.02)
    # planar depth: constant across the frontal wall (hfov 90 sees x in [0.1, 3.9] at 1.9 m)
    assert np.allclose(depth[24, 12:53], 1.9, atol=0.03)
    sem = obs["semantic"][..., 0]
    assert sem[24, 32] == NORTH
    assert sem[47, 32] == FLOOR  # bottom row sees the floor
    rgb = obs["rgb"][24, 32].astype(int)
    assert rgb[0] >= rgb[2]  # wall colour (220, 220, 210): red channel first, blue last
    # depth clipping to [min_depth, max_depth] = [0.5, 5.0]
    assert depth.min() >= 0.5 and depth.max() <= 5.0


@needs_egl
def test_tilt_and_sensor_orientation(room):
    sim, _ = make_sim(room, start=[2.0, 0.0, 2.0], sensors=sensors(33, 33, normalize=False))
    sim.reset()
    for _ in range(3):
        obs = sim.step("look_down")  # 3 x 30 = 90 deg down: the camera sees the floor
    assert sim.camera_tilt == -90.0
    assert obs["depth"][16, 16, 0] == pytest.approx(1.25, abs=0.02)
    assert obs["semantic"][16, 16, 0] == FLOOR
    sim.tilt_camera(+60.0)  # 30 deg down: the centre ray would meet the floor 2.17 m out,
    # so it hits the north wall (1.9 m away, 0.15 m up): planar depth 1.9 / cos 30 = 2.194
    obs = sim.get_observations_at()
    assert obs["depth"][16, 16, 0] == pytest.approx(1.9 / math.cos(math.radians(30)), abs=0.03)
    assert obs["semantic"][16, 16, 0] == NORTH
    # a sensor mounted pitched down by the config's orientation (radians) sees the floor too
    sim2, _ = make_sim(
        room,
        start=[2.0, 0.0, 2.0],
        sensors=sensors(33, 33, normalize=False, orientation=(-math.pi / 2, 0.0, 0.0)),
    )
    obs2 = sim2.reset()
    assert obs2["depth"][16, 16, 0] == pytest.approx(1.25, abs=0.02)


@needs_egl
def test_same_seed_same_observations(room):
    a, _ = make_sim(room, sensors=sensors(32, 32), seed=11)
    b, _ = make_sim(room, sensors=sensors(32, 32), seed=11)
    oa, ob = a.reset(), b.reset()
    assert np.array_equal(a.get_agent_state().position, b.get_agent_state().position)
    for act in ["move_forward", "turn_left", "move_forward", "look_up"]:
        oa, ob = a.step(act), b.step(act)
    for k in ("rgb", "depth", "semantic"):
        assert np.array_equal(oa[k], ob[k]), k
    # get_observations_at does not move the agent unless asked to
    pos = a.get_agent_state().position.copy()
    a.get_observations_at([1.0, 0.0, 1.0], [0, 0, 0, 1])
    assert np.array_equal(a.get_agent_state().position, pos)
    a.get_observations_at([1.0, 0.0, 1.0], [0, 0, 0, 1], keep_agent_at_new_pose=True)
    assert np.allclose(a.get_agent_state().position, [1.0, 0.0, 1.0])


def test_render_disabled_gives_zero_images_without_gl(room):
    sim, _ = make_sim(room, start=[2.0, 0.0, 2.0], sensors=sensors(16, 8), render=False)
    assert sim._renderer is None
    obs = sim.step("move_forward")
    assert obs["rgb"].shape == (8, 16, 3) and not obs["rgb"].any()
    assert obs["semantic"].dtype == np.int32


def test_missing_egl_error_names_packages(monkeypatch):
    import moderngl

    def boom(*_a, **_k):
        raise Exception("eglGetDisplay failed\nmore lines")

    monkeypatch.setattr(moderngl, "create_context", boom)
    with pytest.raises(render.RenderError) as info:
        render.Renderer()
    msg = str(info.value)
    assert "\n" not in msg
    assert "libegl1 libegl-mesa0 libgl1-mesa-dri" in msg and "render=False" in msg


def test_semantic_annotations_objects_and_aabbs(room):
    sim, _ = make_sim(room, start=[2.0, 0.0, 2.0], render=False)
    scene = sim.semantic_annotations()
    # habitat-sim's HM3D layout: Unknown object 0 first, objects[i] is object i
    ids = [o.semantic_id for o in scene.objects]
    assert ids == [0, 1, 2, 3, 4, 5, 6]
    assert scene.objects[0].id == "Unknown_0" and scene.objects[0].region.index == -1
    north = scene.objects[NORTH]
    assert north.id == f"box2_{NORTH}" and north.category.name() == "box2"
    assert north.category.index() == NORTH  # categories by first appearance, Unknown = 0
    assert [c.name() for c in scene.categories][:3] == ["Unknown", "box1", "box2"]
    assert [r.index for r in scene.regions] == [-1, 0] and north in scene.regions[1].objects
    assert scene.levels == []
    # aabb.center works as an attribute and as habitat's top_down_map calls it
    assert np.allclose(north.aabb.center(), north.aabb.center)
    # the north wall box spans x in [0, 4], y in [0, 2.5], z in [0, 0.1] (world frame)
    assert np.allclose(north.aabb.center, [2.0, 1.25, 0.05], atol=1e-4)
    assert np.allclose(north.aabb.sizes, [4.0, 2.5, 0.1], atol=1e-4)


# ---------------------------------------------------------------- culling (issue 34)
def _cull_cameras(size=48):
    from types import SimpleNamespace

    from habitat_mosnav.sims.render import CameraSpec

    cfg = SimpleNamespace(
        width=size, height=size, hfov=79, position=[0.0, 0.0, 0.0], orientation=[0.0, 0.0, 0.0]
    )
    return [CameraSpec("rgb", "rgb", cfg), CameraSpec("depth", "depth", cfg)]


def _cull_poses(mesh, n, seed):
    """Camera poses spread over the scene's bounds (some inside walls and furniture, all
    heights from the floor to the ceiling), any yaw, pitched -60..+45 degrees."""
    rng = np.random.default_rng(seed)
    lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
    out = []
    for _ in range(n):
        pos = lo + rng.uniform(0.05, 0.95, 3) * (hi - lo)
        yaw, pitch = rng.uniform(0, 2 * math.pi), math.radians(rng.uniform(-60, 45))
        out.append((pos, render._ry(yaw) @ render._rx(pitch)))
    return out


def _frames(renderer, entry, cams, poses, culling):
    renderer.culling = culling
    got, stats = [], []
    for pos, rot in poses:
        o = renderer.render(entry, cams, {c.uuid: (pos, rot) for c in cams})
        got.append((o["rgb"].copy(), o["depth"].copy()))
        stats.append(dict(renderer.stats))
    return got, stats


def _culling_scenes(tmp_path_factory):
    from habitat_mosnav.scenes.generator import SceneOptions, generate_scene

    d = tmp_path_factory.mktemp("cullscenes")
    scan = generate_scene(str(d), 0, 0, SceneOptions(rooms=4, scan_edge=0.4, clutter=10)).glb
    demo = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo", "scenes")
    glbs = sorted(
        os.path.join(demo, s, s.split("-", 1)[1] + ".glb")
        for s in os.listdir(demo)
        if os.path.isdir(os.path.join(demo, s))
    )
    return [scan] + glbs


@pytest.fixture(scope="module")
def culling_scenes(tmp_path_factory):
    return _culling_scenes(tmp_path_factory)


@needs_egl
@pytest.mark.parametrize("which", [0, 1, 2, 3], ids=["scan-like", "demo0", "demo1", "demo2"])
def test_culling_gives_identical_frames(culling_scenes, which):
    """Every culling step on and off (and the colour pass started from the occluders'
    depth or from a cleared one): identical RGB and depth, bit for bit, at 40 poses of a
    generated scan-like scene and of each demo scene (chunked although small, so that
    culling has something to skip; back faces stay drawn: the scan's surfaces are seen
    from both sides)."""
    from types import SimpleNamespace

    from habitat_mosnav.sims.geometry import load_mesh

    glb = culling_scenes[which]
    mesh = load_mesh(glb, "z")
    entry = SimpleNamespace(mesh=mesh, semantic=None, gl={})
    renderer = render.get_renderer()
    saved = renderer.culling
    cams = _cull_cameras()
    poses = _cull_poses(mesh, 40, seed=which)
    try:
        layout = dict(cell=1.0, min_faces=0, occlusion_min_chunks=2)
        ref, ref_stats = _frames(
            renderer, entry, cams, poses, render.Culling(frustum=False, occlusion=False, **layout)
        )
        assert all(s["drawn"] == s["chunks"] > 1 for s in ref_stats)
        for kw in (dict(occlusion=False), dict(frustum=False), dict(prefill=False), {}):
            got, stats = _frames(renderer, entry, cams, poses, render.Culling(**kw, **layout))
            for i, (a, b) in enumerate(zip(got, ref)):
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), (kw, i)
            assert sum(s["drawn"] for s in stats) < 0.8 * sum(s["chunks"] for s in stats), (
                kw
            )  # it culled
        if which == 0:  # the occlusion test hid chunks that the frustum kept
            assert sum(s["frustum"] - s["drawn"] for s in stats) > 0
    finally:
        renderer.culling = saved
        renderer.release(entry)


def test_chunks_partition_faces_and_bound_them():
    from habitat_mosnav.sims import render_cull

    rng = np.random.default_rng(0)
    v = rng.uniform(-5, 5, (3000, 3))
    f = rng.integers(0, len(v), (2000, 3))
    ft = rng.integers(-1, 3, len(f))
    ch = render_cull.Chunks(v, f, ft, cell=2.0)
    assert sorted(ch.order.tolist()) == list(range(len(f)))
    # pieces tile the buffer in order; each piece is one chunk and one texture
    assert ch.piece_first[0] == 0 and np.array_equal(
        ch.piece_first[1:], np.cumsum(ch.piece_count)[:-1]
    )
    assert ch.piece_count.sum() == 3 * len(f)
    for c, t, a, n in zip(ch.piece_chunk, ch.piece_tex, ch.piece_first, ch.piece_count):
        faces = ch.order[a // 3 : (a + n) // 3]
        assert (ft[faces] == t).all()
        tris = v[f[faces]].reshape(-1, 3)
        assert (tris >= ch.lo[c] - 1e-12).all() and (tris <= ch.hi[c] + 1e-12).all()
    # within a (chunk, texture) piece the file's order is kept
    for a, n in zip(ch.piece_first, ch.piece_count):
        faces = ch.order[a // 3 : (a + n) // 3]
        assert (np.diff(faces) > 0).all()
    one = render_cull.Chunks(v, f, ft, cell=0.0)  # one chunk: textures in the file's order
    assert one.num_chunks == 1 and np.array_equal(one.order, np.argsort(ft, kind="stable"))


def test_frustum_keeps_every_chunk_with_a_vertex_in_view():
    from habitat_mosnav.sims import render_cull

    rng = np.random.default_rng(1)
    v = rng.uniform(-10, 10, (6000, 3))
    f = np.arange(6000).reshape(-1, 3)
    ch = render_cull.Chunks(v, f, None, cell=1.5)
    chunk_of = np.empty(len(f), np.int64)
    for c, a, n in zip(ch.piece_chunk, ch.piece_first, ch.piece_count):
        chunk_of[ch.order[a // 3 : (a + n) // 3]] = c
    for _ in range(20):
        pos = rng.uniform(-3, 3, 3)
        rot = render._ry(rng.uniform(0, 6.3)) @ render._rx(rng.uniform(-1, 1))
        proj = render._perspective(79, 64, 64, 0.01, 100.0)
        mvp = proj @ render._view(pos, rot)
        keep = render_cull.frustum_keep(ch, mvp)
        clip = np.c_[v, np.ones(len(v))] @ mvp.T
        inside = (np.abs(clip[:, :3]) <= clip[:, 3:]).all(axis=1)
        seen = np.unique(chunk_of[inside.reshape(-1, 3).any(axis=1)])
        assert keep[seen].all()
        assert not keep.all()  # and it culls


def test_face_shade_is_the_two_light_formula():
    """0.45 + 0.4 |n.L1| + 0.15 |n.L2|, L1 = (0.35, 1, 0.25) / |..|, L2 = (-0.5, 0.3, -0.8)
    / |..|, two-sided: by hand for +y (1 / sqrt(1.185) and 0.3 / sqrt(0.98)), -y the same,
    and +x (0.35 / sqrt(1.185), 0.5 / sqrt(0.98))."""
    up = 0.45 + 0.4 / math.sqrt(1.185) + 0.15 * 0.3 / math.sqrt(0.98)
    side = 0.45 + 0.4 * 0.35 / math.sqrt(1.185) + 0.15 * 0.5 / math.sqrt(0.98)
    got = render.face_shade(np.array([[0, 1, 0], [0, -1, 0], [1, 0, 0]], np.float64))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [up, up, side], rtol=1e-6)


def test_winding_report():
    from habitat_mosnav.sims import render_cull

    quad = np.array([[0, 1, 2], [0, 2, 3]])
    assert render_cull.winding_report(quad) == (1, 0)  # the shared edge runs opposite ways
    assert render_cull.winding_report(np.array([[0, 1, 2], [0, 3, 2]])) == (1, 1)


def test_occlusion_boxes_are_closed_and_wound_outwards():
    """The occlusion test draws the boxes' front faces only: their 12 triangles must close
    the box with every edge run both ways, normals pointing out."""
    from habitat_mosnav.sims import render_cull

    tri = render_cull.BOX_INDICES.reshape(-1, 3)
    assert render_cull.winding_report(tri) == (18, 0)
    c = render_cull._CORNER_BITS - 0.5
    for a, b, d in tri:
        n = np.cross(c[b] - c[a], c[d] - c[a])
        assert np.dot(n, (c[a] + c[b] + c[d]) / 3) > 0
