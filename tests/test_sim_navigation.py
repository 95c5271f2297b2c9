"""MosNavMeshSim-v0 navigation: navigability from meshes, fast-marching geodesics against
hand-computed shortest paths, sliding collisions, the habitat config path. No rendering."""

from __future__ import annotations

import math

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (before habitat)
from habitat_mosnav.sims import MosNavMeshSim, MultiGoalShortestPath, ShortestPath
from habitat_mosnav.sims import toy_scenes as ts
from habitat_mosnav.sims.geometry import load_mesh
from habitat_mosnav.sims.navgrid import AgentShape, NavGrid


def make_sim(scene, start=None, rot=(0, 0, 0, 1), radius=0.1, sensors=None, seed=7, **opts):
    from omegaconf import OmegaConf
    from habitat.config.default_structured_configs import AgentConfig

    from habitat_mosnav.config.simulator import MosNavMeshOptions, MosNavMeshSimConfig

    agent = AgentConfig(radius=radius, sim_sensors=sensors or {})
    if start is not None:
        agent.is_set_start_state = True
        agent.start_position = list(start)
        agent.start_rotation = list(rot)
    cfg = OmegaConf.structured(
        MosNavMeshSimConfig(
            scene=str(scene),
            seed=seed,
            agents_order=["main_agent"],
            agents={"main_agent": agent},
            forward_step_size=0.25,
            turn_angle=30,
            mosnav_mesh=MosNavMeshOptions(**opts),
        )
    )
    return MosNavMeshSim(cfg), cfg


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    d = tmp_path_factory.mktemp("simscenes")
    return {
        "door": ts.export_boxes(str(d / "door.glb"), ts.two_rooms_boxes(door_width=1.0)),
        "closed": ts.export_boxes(str(d / "closed.glb"), ts.two_rooms_boxes(door_width=None)),
        "narrow": ts.export_boxes(str(d / "narrow.glb"), ts.two_rooms_boxes(door_width=0.15)),
        "corridor": ts.export_boxes(str(d / "corridor.glb"), ts.l_corridor_boxes(1.0, 6.0)),
        "room": ts.export_boxes(str(d / "room.glb"), ts.room_boxes(0.0, 0.0, 4.0, 4.0)),
    }


def test_wall_blocks_and_door_passes(scenes):
    sim, _ = make_sim(scenes["closed"], start=[1.0, 0.0, 2.0])
    assert math.isinf(sim.geodesic_distance([1.0, 0.0, 2.0], [7.0, 0.0, 2.0]))
    assert sim.island_radius([1.0, 0, 2.0]) < 3.0  # one room only: radius ~ half its diagonal
    # facing +x (yaw -90 deg): walk into the middle wall; never crosses x = 3.95
    yaw = -math.pi / 2
    rot = [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)]
    sim.set_agent_state([1.0, 0.0, 2.0], rot)
    for _ in range(20):
        sim.step("move_forward")
    pos = sim.get_agent_state().position
    assert 3.6 < pos[0] < 3.95
    assert sim.previous_step_collided

    sim2, _ = make_sim(scenes["door"], start=[1.0, 0.0, 2.0])
    d = sim2.geodesic_distance([1.0, 0.0, 2.0], [7.0, 0.0, 2.0])
    assert d == pytest.approx(6.0, rel=0.01)  # straight through the door
    sim2.set_agent_state([1.0, 0.0, 2.0], rot)
    for _ in range(16):  # 4 m east along z = 2, through the 1 m door
        sim2.step(1)
    pos = sim2.get_agent_state().position
    assert pos[0] == pytest.approx(5.0, abs=1e-3) and pos[2] == pytest.approx(2.0, abs=1e-3)
    assert not sim2.previous_step_collided
    # a door narrower than the agent (0.15 m < 2 x 0.1 m radius) does not pass
    sim3, _ = make_sim(scenes["narrow"], start=[1.0, 0.0, 2.0])
    assert math.isinf(sim3.geodesic_distance([1.0, 0.0, 2.0], [7.0, 0.0, 2.0]))


def test_geodesic_l_corridor_matches_analytic(scenes):
    sim, _ = make_sim(scenes["corridor"], start=[0.5, 0.0, 0.5])
    a, b = [0.5, 0.0, 0.5], [5.5, 0.0, 5.5]
    # shortest path hugs the inner corner (5, 1): |A-K| + |K-B| = 2 * hypot(4.5, 0.5)
    expected = 2 * math.hypot(4.5, 0.5)  # 9.0554
    d = sim.geodesic_distance(a, b)
    assert abs(d - expected) / expected < 0.03
    # symmetric, and a goal list takes the minimum
    assert sim.geodesic_distance(b, a) == pytest.approx(d, rel=0.02)
    near = [3.5, 0.0, 0.5]
    assert sim.geodesic_distance(a, [b, near]) == pytest.approx(3.0, rel=0.02)
    # find_path: a polyline from a to b whose length matches the geodesic
    path = ShortestPath()
    path.requested_start, path.requested_end = np.array(a), np.array(b)
    assert sim.pathfinder.find_path(path)
    pts = np.asarray(path.points)
    length = float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())
    assert abs(length - expected) / expected < 0.03
    assert np.allclose(pts[0][[0, 2]], a[::2], atol=0.05) and np.allclose(
        pts[-1][[0, 2]], b[::2], atol=0.05
    )
    assert 3 <= len(pts) <= 6  # string-pulled: start, around the corner, end
    assert path.geodesic_distance == pytest.approx(d, rel=1e-6)
    mg = MultiGoalShortestPath()
    mg.requested_start = np.array(a)
    mg.requested_ends = [np.array(b), np.array(near)]
    assert sim.pathfinder.find_path(mg) and mg.closest_end_point_index == 1


def test_geodesic_two_rooms_through_door(scenes):
    sim, _ = make_sim(scenes["door"], start=[1.0, 0.0, 0.5])
    # door spans z in [1.5, 2.5] in the wall x in [3.95, 4.05]; with the agent radius
    # r = 0.1 the path passes the jamb corners at z = 1.5 + r:
    # 2 * hypot(2.95, 1.1) + 0.1 = 6.3968
    expected = 2 * math.hypot(2.95, 1.1) + 0.1
    d = sim.geodesic_distance([1.0, 0.0, 0.5], [7.0, 0.0, 0.5])
    assert abs(d - expected) / expected < 0.03
    # inside one room the geodesic is the straight line (sub-cell accurate)
    d2 = sim.geodesic_distance([0.73, 0.0, 0.61], [3.21, 0.0, 3.37])
    assert d2 == pytest.approx(math.hypot(2.48, 2.76), rel=0.01)
    # the per-goal-set field is cached: a second query with the same goal is a lookup
    grid = sim.navgrid
    n = len(grid.geodesics.field_cache)
    sim.geodesic_distance([2.0, 0.0, 2.0], [7.0, 0.0, 0.5])
    assert len(grid.geodesics.field_cache) == n


def test_sliding_along_wall(scenes):
    # room x, z in [0, 4], walls 0.1 thick: facing 45 deg between -z and +x, the agent hits
    # the north wall (z = 0.1) and slides east along it
    yaw = -math.pi / 4
    rot = [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)]
    sim, _ = make_sim(scenes["room"], start=[1.0, 0.0, 0.6], rot=rot)
    x0 = 1.0
    collided = []
    for _ in range(8):
        sim.step("move_forward")
        collided.append(sim.previous_step_collided)
    pos = sim.get_agent_state().position
    # it stops at the wall (z ~ 0.1 + radius), yet keeps moving east: sliding, not stopping
    assert pos[2] < 0.35
    assert pos[0] - x0 > 8 * 0.25 * math.cos(math.pi / 4) * 0.9
    assert collided[0] is False and collided[-1] is True
    # without sliding, the same step stops at the wall
    stop = sim.pathfinder.try_step_no_sliding(pos, pos + np.array([0.2, 0.0, -0.2]))
    assert stop[0] - pos[0] < 0.05


def test_allow_sliding_false_stops_at_the_wall(scenes):
    # habitat.simulator.habitat_sim_v0.allow_sliding=False (the ObjectNav challenge setting)
    # drives the CPU simulator too: the same diagonal walk stops instead of sliding east.
    from omegaconf import open_dict

    yaw = -math.pi / 4
    rot = [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)]
    sim, cfg = make_sim(scenes["room"], start=[1.0, 0.0, 0.6], rot=rot)
    with open_dict(cfg):
        cfg.habitat_sim_v0.allow_sliding = False
    sim.reconfigure(cfg)
    for _ in range(8):
        sim.step("move_forward")
    pos = sim.get_agent_state().position
    assert pos[2] < 0.35 and sim.previous_step_collided
    assert pos[0] - 1.0 < 0.5  # with sliding it travels > 1.27 m east (test above)


def test_navigability_ignores_ceiling_and_reports_bounds(scenes):
    grid = NavGrid(load_mesh(scenes["room"], "z").triangles, AgentShape(1.5, 0.1, 0.2, 45.0), 0.05)
    # one island (the floor); the ceiling's top is not a floor
    assert grid.num_islands == 1
    lo, hi = grid.bounds
    assert lo[1] == pytest.approx(0.0) and hi[1] == pytest.approx(0.0)
    # eroded by about the radius (0.1) from the 0.1 m walls
    assert 0.15 <= lo[0] <= 0.3 and 3.7 <= hi[0] <= 3.85
    area = float(grid.island_area[0])
    assert 3.45**2 <= area <= 3.7**2
    assert grid.is_navigable([2.0, 0.0, 2.0]) and not grid.is_navigable([2.0, 2.5, 2.0])
    assert not grid.is_navigable([0.05, 0.0, 2.0])


def test_scene_without_ceiling_keeps_its_floor(tmp_path):
    # nothing above the floor: the open-sky rule (drop roofs) must not drop the only floor
    scene = ts.export_boxes(
        str(tmp_path / "open.glb"), ts.room_boxes(0.0, 0.0, 4.0, 4.0, ceiling=False)
    )
    grid = NavGrid(load_mesh(scene, "z").triangles, AgentShape(1.5, 0.1, 0.2, 45.0), 0.05)
    assert grid.is_navigable([2.0, 0.0, 2.0])
    assert 3.45**2 <= float(grid.island_area.max()) <= 3.7**2


def test_snap_and_random_points_and_topdown(scenes):
    sim, _ = make_sim(scenes["door"], start=[1.0, 0.0, 2.0])
    pf = sim.pathfinder
    assert pf.is_loaded
    snapped = pf.snap_point([4.0, 1.0, 0.5])  # inside the wall, 1 m up
    assert snapped[1] == pytest.approx(0.0) and pf.is_navigable(snapped)
    assert abs(snapped[0] - 4.0) < 0.3
    pf.seed(3)
    a = [pf.get_random_navigable_point() for _ in range(5)]
    pf.seed(3)
    b = [pf.get_random_navigable_point() for _ in range(5)]
    assert np.array_equal(np.array(a), np.array(b))
    assert all(sim.is_navigable(p) for p in a)
    lo, hi = pf.get_bounds()
    td = pf.get_topdown_view(0.1, 0.0)
    assert td.dtype == bool and td.shape == (
        math.ceil((hi[2] - lo[2]) / 0.1),
        math.ceil((hi[0] - lo[0]) / 0.1),
    )
    assert 0.8 < td.mean() <= 1.0
    assert not pf.get_topdown_view(0.1, 3.0).any()  # no floor at 3 m


def test_turns_and_tilt_and_agent_state(scenes):
    sim, _ = make_sim(scenes["room"], start=[2.0, 0.0, 2.0])
    st = sim.get_agent_state()
    assert st.position.dtype == np.float32 and st.position.shape == (3,)
    assert isinstance(st.rotation, np.quaternion)
    for _ in range(3):
        sim.step("turn_left")  # 3 x 30 = 90 deg left: facing -x
    sim.step("move_forward")
    pos = sim.get_agent_state().position
    assert pos[0] == pytest.approx(1.75, abs=1e-4) and pos[2] == pytest.approx(2.0, abs=1e-4)
    sim.step(3)
    sim.step(3)
    sim.step(3)  # back to -z
    sim.step(1)
    assert sim.get_agent_state().position[2] == pytest.approx(1.75, abs=1e-4)
    sim.step("look_up")
    sim.tilt_camera(100)
    assert sim.camera_tilt == 90.0
    sim.step(5)
    assert sim.camera_tilt == 60.0
    sim.reset()  # back to the start state, sensors un-tilted
    assert sim.camera_tilt == 0.0
    assert np.allclose(sim.get_agent_state().position, [2.0, 0.0, 2.0])
    assert sim.get_agent(0).state.position[1] == pytest.approx(0.0)
    sim.step_physics(0.1)  # no-op


def test_constructs_from_structured_config_and_reconfigure(scenes):
    from habitat.core.registry import registry

    assert registry.get_simulator("MosNavMeshSim-v0") is MosNavMeshSim
    sim, cfg = make_sim(scenes["door"], start=[1.0, 0.0, 2.0])
    assert sim.sensor_suite.observation_spaces.spaces == {}
    grid = sim.navgrid
    from habitat.config import read_write

    with read_write(cfg):
        cfg.agents.main_agent.start_position = [6.0, 0.0, 1.0]
    sim.reconfigure(cfg)
    assert sim.navgrid is grid  # same scene, same agent: cached
    assert np.allclose(sim.get_agent_state().position, [6.0, 0.0, 1.0])
    with read_write(cfg):
        cfg.scene = scenes["corridor"]
    sim.reconfigure(cfg)
    assert sim.navgrid is not grid
    with read_write(cfg):
        cfg.scene = "/nonexistent/x.glb"
    with pytest.raises(FileNotFoundError, match="x.glb"):
        sim.reconfigure(cfg)


def test_two_storeys_joined_by_stairs(tmp_path):
    scene = ts.export_boxes(str(tmp_path / "storey.glb"), ts.two_storey_boxes())
    sim, _ = make_sim(scene, start=[2.0, 0.0, 2.0])
    pf = sim.pathfinder
    # the same (x, z) exists on both floors: snapping picks the level nearest the query's y
    assert pf.snap_point([2.0, 2.7, 2.0])[1] == pytest.approx(2.6)
    assert pf.snap_point([2.0, 0.1, 2.0])[1] == pytest.approx(0.0)
    assert pf.is_navigable([2.0, 2.6, 2.0]) and pf.is_navigable([2.0, 0.0, 2.0])
    assert not pf.is_navigable([2.0, 1.3, 2.0])
    # the floors are one island through the stair; the geodesic goes ground (2, 2) ->
    # stair foot near (7.5, 1.3) -> up the stair (3.6 m run, 2.6 m rise: 4.4 m in 3D, as
    # habitat-sim measures on its navmesh) -> stair top (4, 1.2) -> (2, 2):
    # about 5.6 + 4.4 + 2.2 = 12.2 m (11.3 m if the climb were ignored)
    a, b = [2.0, 0.0, 2.0], [2.0, 2.6, 2.0]
    assert pf.get_island(a) == pf.get_island(b)
    d = sim.geodesic_distance(a, b)
    assert 11.7 < d < 12.8
    assert sim.geodesic_distance(b, a) == pytest.approx(d, rel=0.03)
    path = ShortestPath()
    path.requested_start, path.requested_end = np.array(a), np.array(b)
    assert pf.find_path(path)
    ys = [p[1] for p in path.points]
    assert ys[0] == pytest.approx(0.0) and ys[-1] == pytest.approx(2.6)
    assert all(y2 >= y1 - 1e-5 for y1, y2 in zip(ys, ys[1:]))  # climbs, never drops
    # walking up the stair: facing -x at its foot, 18 steps forward end on the upper floor
    yaw = math.pi / 2
    sim.set_agent_state([7.85, 0.0, 0.7], [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)])
    for _ in range(18):
        sim.step("move_forward")
    pos = sim.get_agent_state().position
    assert pos[1] == pytest.approx(2.6) and pos[0] < 4.0
    # top-down maps per floor
    assert pf.get_topdown_view(0.1, 2.6).sum() < pf.get_topdown_view(0.1, 0.0).sum()


def test_navmesh_file_defines_navigability(tmp_path):
    from habitat_mosnav.sims.navmesh import NavMeshError, read_navmesh_triangles, write_navmesh

    scene = ts.export_boxes(str(tmp_path / "room.glb"), ts.room_boxes(0.0, 0.0, 4.0, 4.0))
    y = 0.05  # Recast's detail mesh sits a little above the floor
    polys = [
        np.array([[0.5, y, 0.5], [0.5, y, 1.5], [2.5, y, 1.5], [2.5, y, 0.5]]),
        np.array([[2.5, y, 0.5], [2.5, y, 1.5], [3.5, y, 1.5], [3.5, y, 0.5]]),
        np.array([[2.5, y, 1.5], [2.5, y, 3.5], [3.5, y, 3.5], [3.5, y, 1.5]]),
    ]
    write_navmesh(str(tmp_path / "room.navmesh"), polys)
    tris = read_navmesh_triangles(str(tmp_path / "room.navmesh"))
    assert tris.shape == (6, 3, 3)
    sim, _ = make_sim(scene, start=[1.0, 0.0, 1.0])  # finds room.navmesh beside room.glb
    assert sim.is_navigable([1.0, y, 1.0]) and sim.is_navigable([3.0, y, 3.0])
    assert not sim.is_navigable([1.0, y, 3.0])  # floor, but not on the navmesh
    # around the L's inner corner (2.5, 1.5): 2 * hypot(1.5, 0.5) = 3.162 (no extra erosion)
    d = sim.geodesic_distance([1.0, y, 1.0], [3.0, y, 3.0])
    assert d == pytest.approx(2 * math.hypot(1.5, 0.5), abs=1e-5)
    # "none" voxelises the mesh instead: the whole room is navigable
    sim2, _ = make_sim(scene, start=[1.0, 0.0, 1.0], navmesh="none")
    assert sim2.is_navigable([1.0, 0.0, 3.0])
    (tmp_path / "bad.navmesh").write_bytes(b"MSET-not-really")
    with pytest.raises(NavMeshError, match="bad.navmesh"):
        read_navmesh_triangles(str(tmp_path / "bad.navmesh"))
    with pytest.raises(NavMeshError, match="bad.navmesh"):
        make_sim(scene, start=[1.0, 0.0, 1.0], navmesh=str(tmp_path / "bad.navmesh"))


def test_a_turn_puts_the_agent_on_the_navmesh_as_habitat_sims_step_filter(tmp_path):
    """habitat-sim passes every body action, turns too, through tryStep (its step_filter):
    a start on the floor (y 0) below the navmesh (y 0.05) is lifted by the first turn, with
    x/z unchanged; look actions and reset leave the position alone."""
    from habitat_mosnav.sims.navmesh import write_navmesh

    scene = ts.export_boxes(str(tmp_path / "room.glb"), ts.room_boxes(0.0, 0.0, 4.0, 4.0))
    y = 0.05
    write_navmesh(
        str(tmp_path / "room.navmesh"),
        [np.array([[0.5, y, 0.5], [0.5, y, 3.5], [3.5, y, 3.5], [3.5, y, 0.5]])],
    )
    sim, _ = make_sim(scene, start=[1.0, 0.0, 1.0])
    sim.step("look_up")
    assert list(sim.get_agent_state().position) == [1.0, 0.0, 1.0]
    sim.step("turn_right")
    assert sim.get_agent_state().position == pytest.approx([1.0, y, 1.0], abs=1e-6)
    assert not sim.previous_step_collided
    sim.reset()
    assert list(sim.get_agent_state().position) == [1.0, 0.0, 1.0]


def test_bad_scene_files_give_one_line_errors(tmp_path):
    from habitat_mosnav.sims.geometry import SceneLoadError, read_semantic_table

    bad = tmp_path / "broken.glb"
    bad.write_bytes(b"glTF but not really")
    with pytest.raises(SceneLoadError, match="broken.glb"):
        make_sim(str(bad), start=[0.0, 0.0, 0.0])
    txt = tmp_path / "x.semantic.txt"
    txt.write_text('HM3D Semantic Annotations\n1,FF0000,"chair",0\n2,nothex,"table",1\n')
    with pytest.raises(SceneLoadError, match=r"x\.semantic\.txt:3: color"):
        read_semantic_table(str(txt))
    # the simulator reads semantic.txt with the scenes' parser: same records, keyed by colour
    txt.write_text('HM3D Semantic Annotations\n7,00FF80,"chair",2\n')
    (rec,) = read_semantic_table(str(txt)).values()
    assert read_semantic_table(str(txt)) == {0x00FF80: rec}
    assert (rec.object_id, rec.category, rec.region_id) == (7, "chair", 2)


def test_up_axis_follows_habitat_sim_glb_convention(tmp_path):
    import json

    from habitat_mosnav.sims import clear_scene_cache
    from habitat_mosnav.sims.geometry import SceneLoadError

    boxes = ts.room_boxes(0.0, 0.0, 4.0, 4.0)
    ts.export_boxes(str(tmp_path / "zup.glb"), boxes)  # default: Z-up file like MP3D/HM3D
    (tmp_path / "yup").mkdir()
    yup = ts.export_boxes(str(tmp_path / "yup" / "yup.glb"), boxes, up="y")
    clear_scene_cache()
    sim, _ = make_sim(str(tmp_path / "zup.glb"), start=[2.0, 0.0, 2.0])
    assert sim.is_navigable([2.0, 0.0, 2.0])
    # a Y-up file read as habitat-sim would (Z-up) has its floor standing on edge
    sim_wrong, _ = make_sim(yup, start=[2.0, 0.0, 2.0])
    assert not sim_wrong.is_navigable([2.0, 0.0, 2.0])
    sim_y, _ = make_sim(yup, start=[2.0, 0.0, 2.0], up_axis="y")
    assert sim_y.is_navigable([2.0, 0.0, 2.0])
    # the generator's metadata beside the scene can declare Y up (older files: in "units")
    (tmp_path / "yup" / "yup.mosnav_meta.json").write_text(json.dumps({"units": "meters, Y up"}))
    clear_scene_cache()
    sim_meta, _ = make_sim(yup, start=[2.0, 0.0, 2.0])
    assert sim_meta.is_navigable([2.0, 0.0, 2.0])
    (tmp_path / "yup" / "yup.mosnav_meta.json").write_text(
        json.dumps({"units": "meters", "up_axis": "y"})
    )
    clear_scene_cache()
    assert make_sim(yup, start=[2.0, 0.0, 2.0])[0].is_navigable([2.0, 0.0, 2.0])
    (tmp_path / "yup" / "yup.mosnav_meta.json").write_text(json.dumps({"up_axis": "sideways"}))
    clear_scene_cache()
    with pytest.raises(SceneLoadError, match=r"yup\.mosnav_meta\.json.*up_axis"):
        make_sim(yup, start=[2.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="up_axis"):
        make_sim(yup, start=[2.0, 0.0, 2.0], up_axis="x")


def test_forcing_up_axis_against_the_meta_file_warns_once_in_one_line(tmp_path, caplog):
    import json
    import logging

    from habitat_mosnav.sims import clear_scene_cache

    yup = ts.export_boxes(str(tmp_path / "room.glb"), ts.room_boxes(0.0, 0.0, 4.0, 4.0), up="y")
    (tmp_path / "room.mosnav_meta.json").write_text(json.dumps({"up_axis": "y"}))
    clear_scene_cache()
    with caplog.at_level(logging.WARNING):
        make_sim(yup, start=[2.0, 0.0, 2.0], up_axis="y")  # agrees: silent
        make_sim(yup, start=[2.0, 0.0, 2.0])  # auto: silent
        assert not [r for r in caplog.records if "contradicts" in r.getMessage()]
        make_sim(yup, start=[2.0, 0.0, 2.0], up_axis="z")
        make_sim(yup, start=[2.0, 0.0, 2.0], up_axis="z")  # once per scene and axis
    msgs = [r.getMessage() for r in caplog.records if "contradicts" in r.getMessage()]
    assert len(msgs) == 1 and "\n" not in msgs[0]
    assert (
        "up_axis=z" in msgs[0] and "room.mosnav_meta.json" in msgs[0] and "(up_axis y)" in msgs[0]
    )


def test_islands_snap_and_sample_like_habitat_sim(scenes):
    # two rooms without a door: two islands; snap_point(island_index=...) snaps onto the
    # asked island (habitat-sim 0.3.3), random points stay on theirs
    sim, _ = make_sim(scenes["closed"], start=[1.0, 0.0, 1.0])
    pf = sim.pathfinder
    west, east = pf.get_island([1.0, 0.0, 1.0]), pf.get_island([7.0, 0.0, 1.0])
    assert west != east and west >= 0 and east >= 0
    # from the west room onto the east island: its nearest point, just east of the wall
    p = pf.snap_point([3.0, 0.0, 2.0], island_index=east)
    assert 4.05 + 0.1 - 0.06 < p[0] < 4.05 + 0.1 + 0.06 and abs(p[2] - 2.0) < 0.06
    assert np.allclose(
        pf.snap_point([3.0, 0.0, 2.0], island_index=west), [3.0, 0.0, 2.0], atol=1e-5
    )
    assert np.isnan(pf.snap_point([3.0, 0.0, 2.0], island_index=99)).all()
    pts = [pf.get_random_navigable_point(island_index=east) for _ in range(30)]
    assert all(pf.get_island(q) == east and q[0] > 4.05 for q in pts)


def test_unknown_actions_are_errors(scenes):
    sim, _ = make_sim(scenes["room"], start=[2.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="unknown action 'jump'"):
        sim.step("jump")
    with pytest.raises(ValueError, match="action id 9"):
        sim.step(9)
    pos = sim.get_agent_state().position.copy()
    sim.step(None)  # habitat's EmbodiedTask steps the sim with None: observations only
    sim.step("stop")
    assert np.array_equal(sim.get_agent_state().position, pos)


def test_generated_z_up_scene_loads_with_floor_at_y0(tmp_path):
    """mosnav-make-scenes writes Z-up .glb files (meta up_axis z); ``auto`` turns them into
    the Y-up world: floor at y = 0, ceiling at 2.5 m, objects where the meta file says."""
    import json

    from habitat_mosnav.scenes import generate_scene
    from habitat_mosnav.sims import clear_scene_cache, get_scene
    from habitat_mosnav.sims.geometry import scene_up_axis

    info = generate_scene(str(tmp_path), seed=3, index=0)
    meta = json.loads(open(info.meta).read())
    assert meta["up_axis"] == "z" and scene_up_axis(info.glb) == "z"
    clear_scene_cache()
    entry = get_scene(info.glb)
    v = entry.mesh.vertices
    assert v[:, 1].min() == pytest.approx(-0.05, abs=0.06) and v[:, 1].max() == pytest.approx(
        2.55, abs=0.06
    )
    tri = entry.mesh.triangles
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    up = (n[:, 1] > 0.99) & (np.abs(tri[:, :, 1]).max(1) < 1e-6)
    assert up.sum() >= 2 * len(meta["regions"])  # upward faces at y = 0: each room's floor
    o = meta["objects"][0]
    room = next(r for r in meta["regions"] if r["region_id"] == o["region_id"])
    c = np.array(room["aabb"]["center"])
    sim, _ = make_sim(info.glb, start=[float(c[0]), 0.0, float(c[2])])
    # furniture tops are islands of their own (as on a navmesh); the start's island is the floor
    pf = sim.pathfinder
    isl = pf.get_island(sim.get_agent_state().position)
    p = np.asarray(pf.get_random_navigable_point(island_index=isl))
    assert abs(p[1]) < 0.05 and sim.is_navigable(p)  # the agent walks on the floor
    ids = entry.semantic.ids
    sv = entry.semantic.vertices[ids == o["object_id"]]
    want_c, want_s = np.array(o["aabb"]["center"]), np.array(o["aabb"]["size"])
    assert np.allclose(sv.min(0), want_c - want_s / 2, atol=2e-3)
    assert np.allclose(sv.max(0), want_c + want_s / 2, atol=2e-3)
