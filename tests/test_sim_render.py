"""MosNavMeshSim-v0 sensors: shapes, dtypes, ranges, metric depth, semantic ids, camera
pose/tilt, determinism, and the no-EGL paths."""
from __future__ import annotations

import math

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (before habitat)
from habitat_mosnav.sims import render
from habitat_mosnav.sims import toy_scenes as ts

from test_sim_navigation import make_sim

needs_egl = pytest.mark.skipif(not render.egl_available(),
                               reason="no headless EGL (apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri)")

# room_boxes order -> object ids: floor 1, north wall (z in [0, 0.1]) 2, south wall 3,
# west wall 4, east wall 5, ceiling 6
FLOOR, NORTH = 1, 2


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    d = tmp_path_factory.mktemp("renderscene")
    return ts.export_scene_with_semantics(str(d / "00000-room"), "room", ts.room_boxes(0.0, 0.0, 4.0, 4.0))


def sensors(w=64, h=48, hfov=90, normalize=True, orientation=(0.0, 0.0, 0.0)):
    from habitat.config.default_structured_configs import (
        HabitatSimDepthSensorConfig, HabitatSimRGBSensorConfig, HabitatSimSemanticSensorConfig)

    pos = [0.0, 1.25, 0.0]
    ori = list(orientation)
    return {
        "rgb_sensor": HabitatSimRGBSensorConfig(width=w, height=h, hfov=hfov, position=pos, orientation=ori),
        "depth_sensor": HabitatSimDepthSensorConfig(width=w, height=h, hfov=hfov, position=pos,
                                                    orientation=ori, min_depth=0.5, max_depth=5.0,
                                                    normalize_depth=normalize),
        "semantic_sensor": HabitatSimSemanticSensorConfig(width=w, height=h, hfov=hfov, position=pos,
                                                          orientation=ori),
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
    sim2, _ = make_sim(room, start=[2.0, 0.0, 2.0],
                       sensors=sensors(33, 33, normalize=False, orientation=(-math.pi / 2, 0.0, 0.0)))
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
