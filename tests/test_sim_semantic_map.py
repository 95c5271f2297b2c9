"""habitat's own top_down_map measure (draw_goal_aabbs) and habitat.utils.visualizations.maps
on MosNavMeshSim-v0, through a real habitat.Env on a MultiObjectNav-v1 episode: the
semantic scene has habitat-sim's HM3D layout, so the goal boxes land on the right cells."""

from __future__ import annotations

import numpy as np
import pytest

import habitat_mosnav
import habitat
from habitat.utils.visualizations import maps

from habitat_mosnav.sims import toy_scenes as ts
from mosnav_fixtures import SCENE, base_documents, goal, write_dataset

CHAIR = ((1.0, 0.0, -1.5), (1.5, 0.8, -1.0), (150, 40, 40, 255))
TABLE = ((-2.0, 0.0, 0.5), (-1.0, 0.75, 1.3), (120, 80, 40, 255))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("semmap")
    boxes = ts.room_boxes(-3.0, -3.0, 3.0, 3.0) + [CHAIR, TABLE]
    cats = ["floor", "wall", "wall", "wall", "wall", "ceiling", "chair", "table"]
    chair_id, table_id = 7, 8  # box i is semantic object i + 1
    ts.export_scene_with_semantics(str(root / "scenes" / f"00000-{SCENE}"), SCENE, boxes, cats)
    docs = base_documents()
    docs["goals.json"]["goals"] = [
        goal(chair_id, "chair", [1.25, 0.0, -0.5]),
        goal(table_id, "table", [-1.5, 0.0, 1.8]),
    ]
    docs["queries.json"]["queries"] = [
        {
            "query_id": "q0",
            "query_program": {"select": "object", "where": []},
            "instruction": "Find the chair and the table.",
            "matched_object_ids": [chair_id, table_id],
        }
    ]
    docs["episodes.json"]["episodes"] = [
        {
            "episode_id": "q0-all-0",
            "query_id": "q0",
            "target_mode": "all",
            "target_object_ids": [chair_id, table_id],
            "start_position": [0.0, 0.0, 0.0],
            "start_rotation": [0, 0, 0, 1],
        }
    ]
    data, scenes = write_dataset(root, docs)
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        [
            f"habitat.dataset.data_path={data}",
            f"habitat.dataset.scenes_dir={scenes}",
            "habitat.dataset.target_modes=[]",
            "habitat.task.mosnav_space_coverage_samples=0",
            "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
            "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
            "+habitat/task/measurements@habitat.task.measurements.top_down_map=top_down_map",
            "habitat.task.measurements.top_down_map.draw_goal_aabbs=True",
            "habitat.task.measurements.top_down_map.map_resolution=256",
        ],
    )
    e = habitat.Env(cfg)
    yield e
    e.close()


def _cells(sim, shape, lo, hi):
    """Map cells of a box's four corners, by habitat's own world-to-map conversion."""
    return [
        maps.to_grid(z, x, shape, sim=sim)
        for x, z in ((lo[0], lo[2]), (lo[0], hi[2]), (hi[0], hi[2]), (hi[0], lo[2]))
    ]


def test_top_down_map_draws_the_goal_boxes_where_the_objects_are(env):
    env.reset()
    sim = env.sim
    scene = sim.semantic_annotations()
    chair = scene.objects[7]
    assert chair.id == "chair_7" and chair.semantic_id == 7
    assert np.allclose(chair.aabb.center(), [1.25, 0.4, -1.25], atol=1e-4)
    top = env.get_metrics()["top_down_map"]["map"]
    assert top.shape[0] > 100 and (top == maps.MAP_VALID_POINT).any()
    for lo, hi in (CHAIR[:2], TABLE[:2]):
        corners = _cells(sim, top.shape[:2], lo, hi)
        for r, c in corners:
            assert top[r, c] == maps.MAP_TARGET_BOUNDING_BOX, (lo, hi, r, c)
        # only the outline is drawn: the box's middle stays free
        mid = maps.to_grid((lo[2] + hi[2]) / 2, (lo[0] + hi[0]) / 2, top.shape[:2], sim=sim)
        assert top[mid] != maps.MAP_TARGET_BOUNDING_BOX
    # the box colour appears only on those two outlines (nowhere else on the map)
    rows, cols = np.nonzero(top == maps.MAP_TARGET_BOUNDING_BOX)
    pts = np.stack([rows, cols], 1)
    boxes = [np.array(_cells(sim, top.shape[:2], lo, hi)) for lo, hi in (CHAIR[:2], TABLE[:2])]
    inside = np.zeros(len(pts), bool)
    for b in boxes:
        (r0, c0), (r1, c1) = b.min(0) - 3, b.max(0) + 3
        inside |= (pts[:, 0] >= r0) & (pts[:, 0] <= r1) & (pts[:, 1] >= c0) & (pts[:, 1] <= c1)
    assert inside.all()


def test_maps_helpers_run_on_the_cpu_simulator(env):
    env.reset()
    sim = env.sim
    top = maps.get_topdown_map_from_sim(sim, map_resolution=128)
    lo, hi = sim.pathfinder.get_bounds()
    # the room is 6 m with 0.1 m walls; the agent radius (0.18) erodes the navigable area
    assert lo[0] == pytest.approx(-3.0 + 0.1 + 0.18, abs=0.06) and hi[2] == pytest.approx(
        3.0 - 0.1 - 0.18, abs=0.06
    )
    r, c = maps.to_grid(0.0, 0.0, top.shape, sim=sim)
    assert top[r, c] == maps.MAP_VALID_POINT
    r, c = maps.to_grid(-1.25, 1.25, top.shape, sim=sim)  # under the chair
    assert top[r, c] != maps.MAP_VALID_POINT
    assert sim.pathfinder.island_radius([0.0, 0.0, 0.0]) > 2.0
    assert np.allclose(sim.pathfinder.snap_point([0.3, 0.0, 0.2]), [0.3, 0.0, 0.2], atol=1e-5)
