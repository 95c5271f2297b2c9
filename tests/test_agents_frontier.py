"""FrontierAgent (habitat_mosnav.agents.frontier) in small box scenes built here, through a real
habitat.Env on the CPU simulator with the ground-truth semantic detector.

Scenes (tests build them with habitat_mosnav.sims.toy_scenes): two 4 m x 4 m rooms side by
side (x in [0, 4] and [4, 8], z in [0, 4]), the shared wall at x = 4 with a 1 m door at
z in [1.5, 2.5], or no door. Box i of a scene is semantic object i + 1.
"""

import json
import math
import os

import numpy as np
import pytest

import habitat_mosnav
from habitat_mosnav.agents.frontier import (
    SEMANTIC_SENSOR_OVERRIDE,
    CameraModel,
    FrontierAgent,
    GroundTruthDetector,
)
from habitat_mosnav.evaluation import EvaluationConfig, Evaluator
from habitat_mosnav.sims.toy_scenes import export_scene_with_semantics, two_rooms_boxes

from conftest import make_observation, room_overrides, sensor_sizes
from mosnav_fixtures import write_dataset

SCENE = "frontierScene"
T = 400
# Facing -X (yaw +90 degrees): the door is behind the agent at the start.
FACING_MINUS_X = [0.0, math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4)]


def _view_points(lo, hi, x_range, z_range, radius=0.2):
    """Grid points (0.25 m) within 1 m of the footprint [lo, hi], inside the room ranges,
    clear of the box by the agent radius: the SPEC §3 view-point rule in an empty room."""
    pts = []
    for x in np.arange(x_range[0], x_range[1] + 1e-9, 0.25):
        for z in np.arange(z_range[0], z_range[1] + 1e-9, 0.25):
            dx = max(lo[0] - x, 0.0, x - hi[0])
            dz = max(lo[2] - z, 0.0, z - hi[2])
            d = math.hypot(dx, dz)
            if radius <= d <= 1.0:
                pts.append([round(float(x), 3), 0.0, round(float(z), 3)])
    return pts


def _goal(oid, lo, hi, view_points):
    centre = [(a + b) / 2 for a, b in zip(lo, hi)]
    size = [b - a for a, b in zip(lo, hi)]
    return {
        "object_id": oid,
        "category": "cabinet",
        "region_id": 0,
        "position": centre,
        "aabb": {"center": centre, "size": size},
        "navigable_position": view_points[0],
        "view_points": [{"position": p, "rotation": [0, 0, 0, 1], "iou": 0.5} for p in view_points],
        "attributes": {},
        "caption": "a cabinet",
    }


def _build(root, boxes, targets, episodes):
    """Scene ``boxes`` + cabinets ``targets`` ({oid: (lo, hi, x_range, z_range)}), written as
    a SPEC §6 dataset with ``episodes``; returns a habitat config."""
    scene_dir = os.path.join(str(root), "build")
    glb = export_scene_with_semantics(scene_dir, SCENE, boxes)
    goals = [
        _goal(oid, lo, hi, _view_points(lo, hi, xr, zr))
        for oid, (lo, hi, xr, zr) in targets.items()
    ]
    ids = sorted(targets)
    docs = {
        "goals.json": {"schema_version": 1, "scene_id": SCENE, "goals": goals},
        "queries.json": {
            "schema_version": 1,
            "scene_id": SCENE,
            "queries": [
                {
                    "query_id": "q0",
                    "query_program": {
                        "select": "object",
                        "where": [{"field": "category", "op": "==", "value": "cabinet"}],
                    },
                    "instruction": "Find the cabinets.",
                    "matched_object_ids": ids,
                }
            ],
        },
        "episodes.json": {"schema_version": 1, "scene_id": SCENE, "episodes": episodes},
    }
    data, scenes = write_dataset(root, docs, scene=SCENE, scene_file=glb)
    # the semantic pair lies beside the render mesh, as in HM3D
    target_dir = os.path.join(scenes, f"00000-{SCENE}")
    for ext in (".semantic.glb", ".semantic.txt"):
        with (
            open(os.path.join(scene_dir, SCENE + ext), "rb") as src,
            open(os.path.join(target_dir, SCENE + ext), "wb") as dst,
        ):
            dst.write(src.read())
    return habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        room_overrides((data, scenes), T, SEMANTIC_SENSOR_OVERRIDE, *sensor_sizes(32, 128)),
    )


def _run(cfg, agent, out):
    Evaluator(agent, cfg, EvaluationConfig(output_dir=str(out), progress=False)).run()
    with open(os.path.join(str(out), "rank_00000", "episodes.jsonl")) as f:
        return {json.loads(line)["episode"]["episode_id"]: json.loads(line) for line in f}


class Recorder:
    """Wraps an object and logs every attribute read as a dotted path; ``sim`` and
    ``current_episode`` of the env are wrapped too, so their reads are logged in full."""

    def __init__(self, target, log, prefix="", deep=("sim", "current_episode")):
        object.__setattr__(self, "_t", target)
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_deep", deep)

    def __getattr__(self, name):
        value = getattr(self._t, name)
        path = self._prefix + name
        self._log.add(path)
        if name in self._deep:
            return Recorder(value, self._log, path + ".", ())
        return value


class Recorded:
    """Hands the agent recorded views of the env and of every Observation."""

    def __init__(self, agent):
        self.agent = agent
        self.env_reads, self.obs_reads = set(), set()

    def bind_env(self, env):
        self.agent.bind_env(Recorder(env, self.env_reads))

    def reset(self):
        self.agent.reset()

    def act(self, observation):
        return self.agent.act(Recorder(observation, self.obs_reads, deep=()))

    def episode_stats(self):
        return self.agent.episode_stats()


class NoDetector:
    def detect(self, observation):
        return []


# Room 2 cabinet right behind the wall beside the door: hidden from room 1.
HIDDEN = ((4.2, 0.0, 0.2), (4.7, 0.9, 0.7), (4.3, 7.7), (0.3, 3.7))


@pytest.fixture(scope="module")
def corner(tmp_path_factory):
    root = tmp_path_factory.mktemp("frontier_corner")
    boxes = two_rooms_boxes(door_width=1.0, door_z=2.0)
    oid = len(boxes) + 1
    boxes.append((HIDDEN[0], HIDDEN[1], (90, 60, 30, 255)))
    start = {"start_position": [1.0, 0.0, 2.0], "start_rotation": FACING_MINUS_X}
    episodes = [
        {
            "episode_id": "q0-many-0",
            "query_id": "q0",
            "target_mode": "many",
            "target_count": 1,
            "target_object_ids": [oid],
            **start,
        }
    ]
    return _build(root, boxes, {oid: HIDDEN}, episodes), oid


def test_finds_a_target_behind_a_corner_and_reads_only_config_and_detector(corner, tmp_path):
    cfg, oid = corner
    agent = Recorded(FrontierAgent())
    rec = _run(cfg, agent, tmp_path / "run")["q0-many-0"]
    assert rec["status"] == "ok"
    m = rec["metrics"]
    assert m["success"] == 1.0 and m["targets_found"] == 1
    events = rec["report_events"]
    assert len(events) == 1 and events[0]["new_targets"] == [oid]
    assert rec["terminated_by"] == "finish" and rec["action_trace"][-1] == 0
    # it went through the door: the start room has x < 4
    assert rec["final_agent_state"]["position"][0] > 4.0
    # privileges: the env's configuration and what the GT detector reads, nothing else
    assert agent.env_reads == {
        "sim",
        "sim.habitat_config",
        "sim.get_observations_at",
        "current_episode",
        "current_episode.target_object_ids",
        "current_episode.object_category",  # the goal's category (an image goal's exemplar's)
    }
    assert agent.obs_reads <= {
        "depth",
        "gps",
        "compass",
        "target_mode",
        "target_count",
        "step_count",
        "max_steps",
        "subtask_index",  # None here; a sequential episode's goal changes with it
    }
    assert {"depth", "gps", "compass"} <= agent.obs_reads


def test_without_a_detector_it_reads_only_the_config_and_never_claims(corner, tmp_path):
    cfg, _ = corner
    agent = Recorded(FrontierAgent(detector=NoDetector()))
    rec = _run(cfg, agent, tmp_path / "run")["q0-many-0"]
    assert agent.env_reads == {"sim", "sim.habitat_config"}
    assert rec["report_events"] == [] and 6 not in rec["action_trace"]
    # both rooms explored, then FINISH with nothing found: the map was exhausted
    assert rec["terminated_by"] == "finish" and rec["steps_taken"] < T
    assert rec["extras"]["agent"]["finish_reason"] == "map exhausted"


def test_moc_finishes_when_the_map_is_exhausted(tmp_path):
    """Two rooms without a door: one cabinet in the start room, one behind the wall. The
    agent claims the first, explores its room and sends FINISH (F = 1 < R = 2: a false
    termination by SPEC §4) well before the step budget."""
    boxes = two_rooms_boxes(door_width=None)
    near = ((0.3, 0.0, 3.2), (0.8, 0.9, 3.7), (0.3, 3.7), (0.3, 3.7))
    far = ((6.0, 0.0, 1.5), (6.5, 0.9, 2.0), (4.3, 7.7), (0.3, 3.7))
    a, b = len(boxes) + 1, len(boxes) + 2
    boxes += [(near[0], near[1], (90, 60, 30, 255)), (far[0], far[1], (90, 60, 30, 255))]
    start = {"start_position": [2.5, 0.0, 1.0], "start_rotation": [0, 0, 0, 1]}
    episodes = [
        {
            "episode_id": "q0-all-0",
            "query_id": "q0",
            "target_mode": "all",
            "target_object_ids": [a, b],
            **start,
        }
    ]
    cfg = _build(tmp_path, boxes, {a: near, b: far}, episodes)
    rec = _run(cfg, FrontierAgent(), tmp_path / "run")["q0-all-0"]
    assert rec["status"] == "ok"
    assert [e["new_targets"] for e in rec["report_events"]] == [[a]]
    assert rec["terminated_by"] == "finish" and rec["steps_taken"] < T - 1
    assert rec["extras"]["agent"]["finish_reason"] == "map exhausted"
    m = rec["metrics"]
    assert m["targets_found"] == 1 and m["success"] == 0.0 and m["false_termination"] == 1.0


def test_camera_model_reads_the_habitat_config(corner):
    cfg, _ = corner
    cam = CameraModel.from_habitat_config(cfg.habitat.simulator)
    assert cam == CameraModel(
        hfov_deg=79.0,
        sensor_height=0.88,
        min_depth=0.5,
        max_depth=5.0,
        agent_radius=0.18,
        agent_height=0.88,
        turn_angle_deg=30.0,
        forward_step=0.25,
    )


def test_depth_projection_puts_a_wall_where_it_is():
    """A flat wall 2 m ahead fills the depth image (planar depth = 2 everywhere): the
    obstacle cells lie on the line z = -2 (start frame, facing -Z), the floor in front is
    free, and nothing beyond the wall is known."""
    agent = FrontierAgent(detector=NoDetector(), spin_at_start=False)
    depth = np.full((64, 64), 2.0, np.float32)
    agent._integrate_depth(depth, np.zeros(2), 0.0)
    m = agent.map
    rows, cols = np.nonzero(m.obstacle)
    z = m.origin + (rows + 0.5) * m.cs
    x = m.origin + (cols + 0.5) * m.cs
    assert np.all(np.abs(z + 2.0) <= m.cs)
    # the wall spans the field of view at 2 m: |x| <= 2 tan(79/2) = 1.65 m
    assert x.min() < -1.5 and x.max() > 1.5 and np.all(np.abs(x) <= 1.66 + m.cs)
    assert m.free[m.cell((0.0, -1.5))] and not m.free[m.cell((0.0, -2.5))]
    assert not m.obstacle[m.cell((0.0, -2.5))]


def test_ground_truth_detector_needs_a_semantic_sensor(tmp_path):
    class Env:
        class current_episode:
            target_object_ids = [3]

        class sim:
            @staticmethod
            def get_observations_at():
                return {"rgb": np.zeros((4, 4, 3), np.uint8)}

    det = GroundTruthDetector()
    det.bind_env(Env)
    with pytest.raises(RuntimeError, match="no 'semantic' sensor.*mosnav_semantic_sensor"):
        det.detect(None)


def _observation(depth, step=0, mode="all", count=None):
    return make_observation(
        rgb=None,
        depth=depth,
        goal_text="cabinet",
        goal_type="object",
        subtask_type="object",
        target_mode=mode,
        target_count=count,
        episode_id="e",
        scene_id="s",
        step_count=step,
        max_steps=T,
        task_prompt=None,
        extras=None,
    )


def test_an_obstacle_marked_under_the_agent_does_not_end_the_episode():
    """A wall 3 m ahead leaves unknown space on both sides (frontiers). An obstacle cell
    under the agent (a mis-placed collision mark) must not cut the agent off its own map:
    it moves on instead of reporting the map exhausted (FINISH)."""
    depth = np.full((64, 64), 3.0, np.float32)
    agent = FrontierAgent(detector=NoDetector(), spin_at_start=False)
    agent.act(_observation(depth))
    agent.map.mark_disk(agent.map.obstacle, (0.0, 0.0), 0.06)
    action = agent.act(_observation(depth, step=1))
    assert action in (1, 2, 3)
    assert agent.stats["finish_reason"] == ""
