"""The rollout and Evaluator through a real habitat.Env (CPU simulator, an open 12 m room).

Targets (tests/mosnav_fixtures.py): chairs 101 @ x=1, 102 @ x=3, 103 @ x=5 (z=0), table
201 @ (0, 0, 3); every episode starts at the origin facing -Z. Three right turns face +X,
four 0.25 m steps reach x=1 (near 101). Expected values follow by hand from SPEC §2-§4.
"""

import json
import math

import numpy as np
import pytest

import habitat_mosnav
import habitat
from habitat_mosnav.evaluation import EvaluationConfig, Evaluator, episode_seed, summarize
from habitat_mosnav.evaluation.evaluator import EvaluationSetupError
from habitat_mosnav.pose import start_frame_pose

from conftest import read_records as records
from conftest import room_overrides, sensor_sizes
from mosnav_fixtures import EPISODE_KEYS

T = 40
KEYS = EPISODE_KEYS
# goat: walk to 101, claim, walk to 102, claim, FINISH (many: F = 2 = target_count).
MANY_PLAN = [3, 3, 3, 1, 1, 1, 1, 6, 1, 1, 1, 1, 1, 1, 1, 1, 6, 0]


@pytest.fixture(scope="module")
def env(open_room):
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml", room_overrides(open_room, T, *sensor_sizes(32, 32))
    )
    e = habitat.Env(cfg)
    yield e
    e.close()


class Scripted:
    """Plays a fixed action list per episode id (default: turn left forever)."""

    def __init__(self, plans=None, default=2):
        self.plans = plans or {}
        self.default = default
        self.calls = []
        self.observations = []

    def seed(self, s):
        self.calls.append(("seed", s))

    def bind_env(self, env):
        self.calls.append(("bind_env", env.current_episode.episode_id))

    def reset(self):
        self.calls.append(("reset",))
        self.i = 0

    def act(self, obs):
        self.observations.append(obs)
        plan = self.plans.get(obs.episode_id)
        a = plan[self.i] if plan is not None and self.i < len(plan) else self.default
        self.i += 1
        if isinstance(a, BaseException):
            raise a
        return a


def evaluate(env, agent, out, **kw):
    kw.setdefault("progress", False)
    return Evaluator(agent, env=env, config=EvaluationConfig(output_dir=str(out), **kw)).run()


def test_start_frame_pose_math():
    # Start facing -Z rotated 90° left (yaw +pi/2, facing -X); a point 1 m ahead of it.
    q = [0, math.sin(math.pi / 4), 0, math.cos(math.pi / 4)]
    gps, compass = start_frame_pose([-1.0, 0.0, 0.0], q, [0, 0, 0], q)
    assert gps == pytest.approx([0.0, -1.0], abs=1e-6) and compass == pytest.approx(0.0)
    right = [0, math.sin(-math.pi / 4), 0, math.cos(-math.pi / 4)]  # turned right by 90°
    gps, compass = start_frame_pose([0.0, 0.0, 2.0], right, [0, 0, 0], [0, 0, 0, 1])
    assert gps == pytest.approx([0.0, 2.0], abs=1e-6) and compass == pytest.approx(-math.pi / 2)


def test_gps_compass_from_habitat_sensors_equal_the_pose_math():
    from types import SimpleNamespace

    from habitat_mosnav.evaluation.observations import ObservationBuilder

    # Start at the origin facing -Z; now at x = 1, z = -2 (1 m right, 2 m ahead), turned
    # 30 degrees left: gps [x, z] = [1, -2], compass +pi/6. Habitat's sensors: [-z, x], pi/6.
    episode = SimpleNamespace(
        target_mode="many",
        target_count=2,
        goal_type="description",
        goal_text="Find the chairs.",
        episode_id="e",
        scene_id="s.glb",
        start_position=[0.0, 0.0, 0.0],
        start_rotation=[0.0, 0.0, 0.0, 1.0],
    )
    half = math.pi / 12
    pose = {"position": [1.0, 0.0, -2.0], "rotation": [0.0, math.sin(half), 0.0, math.cos(half)]}
    builder = ObservationBuilder(max_steps=10)
    from_pose = builder.build({}, episode, pose, 1, 1)
    from_sensors = builder.build(
        {"gps": np.array([2.0, 1.0], np.float32), "compass": np.array([math.pi / 6], np.float32)},
        episode,
        pose,
        1,
        1,
    )
    for o in (from_pose, from_sensors):
        assert o.gps.dtype == np.float32 and o.gps == pytest.approx([1.0, -2.0], abs=1e-6)
        assert o.compass == pytest.approx(math.pi / 6, abs=1e-6)


def test_observations_and_records_of_a_goat_many_episode(env, tmp_path):
    agent = Scripted({"q0-many-0": MANY_PLAN})
    summary = evaluate(env, agent, tmp_path / "o", num_episodes=2, offset=0, seed=3)
    recs = {r["episode_key"]: r for r in records(tmp_path / "o")}
    assert set(recs) == set(KEYS[:2]) and summary["status"] == "complete"

    obs = [o for o in agent.observations if o.episode_id == "q0-many-0"]
    o0, last = obs[0], obs[-1]
    assert o0.rgb.shape == (32, 32, 3) and o0.rgb.dtype == np.uint8
    assert o0.depth.shape == (32, 32) and o0.depth.dtype == np.float32
    assert 0.5 <= float(o0.depth.min()) and float(o0.depth.max()) <= 5.0 + 1e-4
    assert float(o0.depth.max()) > 1.0  # metres, not Habitat's normalised [0, 1]
    assert o0.goal_text == "Find the chairs." and o0.goal_type == o0.subtask_type == "description"
    assert (o0.target_mode, o0.target_count, o0.max_steps) == ("many", 2, T)
    assert (o0.scene_id, o0.step_count, o0.previous_action) == ("testScene01", 0, None)
    assert "find 2 different objects" in o0.task_prompt and "Find the chairs." in o0.task_prompt
    assert o0.extras["episode_key"] == KEYS[1]
    # Last observation: after 3 right turns and 12 steps forward -> x = 3 m, facing +X.
    assert last.step_count == len(MANY_PLAN) - 1 and last.previous_action == 6
    assert last.gps == pytest.approx([3.0, 0.0], abs=1e-3)
    assert last.compass == pytest.approx(-math.pi / 2, abs=1e-6)
    all_obs = [o for o in agent.observations if o.episode_id == "q0-all-0"]
    assert all_obs[0].target_count is None and len(all_obs) == T

    many = recs[KEYS[1]]
    assert many["status"] == "ok" and many["terminated_by"] == "finish"
    assert many["steps_taken"] == len(MANY_PLAN) and many["action_trace"] == MANY_PLAN
    assert many["seed"] == episode_seed(3, KEYS[1])
    m = many["metrics"]
    assert (m["tp"], m["fp"], m["fn"], m["success"]) == (2, 0, 0, 1.0)
    assert m["trajectory_length"] == pytest.approx(3.0, abs=1e-6)
    # l (SPEC §4, d = 0.25): 101,102 max(s_102 = 2.75, s_101 + c = 0.75 + 1.5) = 2.75
    assert m["spl_multi"] == pytest.approx(2.75 / 3.0, abs=0.02)
    assert m["false_termination"] is None and m["oer_space"] is None  # JSON null
    assert [e["new_targets"] for e in many["report_events"]] == [[101], [102]]
    assert many["initial_agent_state"]["position"] == pytest.approx([0, 0, 0])
    assert many["final_agent_state"]["position"] == pytest.approx([3.0, 0.0, 0.0], abs=1e-3)
    assert many["episode"] == {
        "scene_id": "testScene01",
        "episode_id": "q0-many-0",
        "query_id": "q0",
        "target_mode": "many",
        "goal_type": "description",
        "target_count": 2,
        "target_object_ids": [101, 102, 103],
        "max_steps": T,
    }
    allr = recs[KEYS[0]]
    assert allr["terminated_by"] == "max_steps" and allr["steps_taken"] == T
    assert allr["metrics"]["success"] == 0.0
    # seed, bind_env and reset come before the first act of each episode, in that order.
    assert agent.calls[:3] == [
        ("seed", episode_seed(3, KEYS[0])),
        ("bind_env", "q0-all-0"),
        ("reset",),
    ]


def test_legacy_protocol_zero_claims_nine_finishes(env, tmp_path):
    legacy = [0 if a == 6 else 9 if a == 0 else a for a in MANY_PLAN]
    evaluate(
        env,
        Scripted({"q0-many-0": legacy}),
        tmp_path / "l",
        offset=1,
        num_episodes=1,
        action_protocol="legacy",
    )
    (rec,) = records(tmp_path / "l")
    assert rec["metrics"]["success"] == 1.0 and rec["metrics"]["tp"] == 2
    assert rec["terminated_by"] == "finish" and rec["action_trace"] == legacy
    # The same ids under goat: the first 0 is FINISH (after 7 steps, one target short).
    evaluate(env, Scripted({"q0-many-0": legacy}), tmp_path / "g", offset=1, num_episodes=1)
    (rec,) = records(tmp_path / "g")
    assert rec["steps_taken"] == 8 and rec["terminated_by"] == "finish"
    assert rec["metrics"]["success"] == 0.0 and rec["metrics"]["tp"] == 0


def test_single_ends_with_target_found(env, tmp_path):
    plan = [2] * 6 + [1] * 12 + [6]  # face +Z, 3 m onto the table's point at z = 3
    evaluate(env, Scripted({"q2-single-0": plan}), tmp_path / "s", offset=3, num_episodes=1)
    (rec,) = records(tmp_path / "s")
    assert rec["terminated_by"] == "target_found" and rec["steps_taken"] == 19
    assert rec["metrics"]["success"] == 1.0


def test_agent_errors_become_records_and_the_run_goes_on(env, tmp_path):
    agent = Scripted(
        {
            "q0-all-0": [1, ZeroDivisionError("/home/me/secret.py broke")],
            "q0-many-0": [1, 1, 7],
            "q1-any-0": [1, np.float32(2.0)],
            "q2-single-0": [6],
        }
    )
    summary = evaluate(env, agent, tmp_path / "e")
    recs = {r["episode_key"]: r for r in records(tmp_path / "e")}
    assert len(recs) == 4
    zero, seven, flt, ok = (recs[k] for k in KEYS)
    assert zero["status"] == "error" and zero["error_type"] == "ZeroDivisionError"
    assert zero["terminated_by"] == "error" and zero["steps_taken"] == 1
    assert "secret" not in json.dumps(zero) and "Traceback" not in json.dumps(zero)
    assert seven["error_type"] == "InvalidAction" and "returned action 7" in seven["error_message"]
    assert seven["steps_taken"] == 2
    assert flt["error_type"] == "InvalidAction" and "not an integer" in flt["error_message"]
    assert ok["status"] == "ok"
    assert summary["status"] == "completed_with_errors"
    assert (summary["ok_episode_count"], summary["error_episode_count"]) == (1, 3)
    done = json.load(open(tmp_path / "e" / "rank_00000" / "done.json"))
    assert (done["status"], done["record_count"], done["error_count"]) == (
        "completed_with_errors",
        4,
        3,
    )


def test_fail_fast_stops_after_writing_the_error(env, tmp_path):
    agent = Scripted({"q0-all-0": [RuntimeError("x")]})
    summary = evaluate(env, agent, tmp_path / "f", fail_fast=True)
    recs = records(tmp_path / "f")
    assert [r["episode_key"] for r in recs] == KEYS[:1] and recs[0]["status"] == "error"
    assert summary["status"] == "incomplete"


def test_resume_skips_recorded_keys_and_refuses_without_flag(env, tmp_path):
    out = tmp_path / "r"
    evaluate(env, Scripted(), out, seed=1)
    with pytest.raises(EvaluationSetupError, match="pass --resume"):
        evaluate(env, Scripted(), out, seed=1)
    # a crash after the first two records: the last two lines and done.json are gone
    path = out / "rank_00000" / "episodes.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))
    (out / "rank_00000" / "done.json").unlink()
    agent = Scripted()
    summary = evaluate(env, agent, out, seed=1, resume=True)
    keys = [r["episode_key"] for r in records(out)]
    assert sorted(keys) == KEYS and len(keys) == 4
    assert {c[1] for c in agent.calls if c[0] == "bind_env"} == {"q1-any-0", "q2-single-0"}
    assert summary["status"] == "complete" and summary["unique_record_count"] == 4


def test_three_ranks_equal_one_rank(env, tmp_path):
    plans = {"q0-many-0": MANY_PLAN, "q2-single-0": [2] * 6 + [1] * 9 + [6]}
    one = evaluate(env, Scripted(plans), tmp_path / "one", seed=5)
    partial = []
    for rank in range(3):
        partial.append(
            evaluate(env, Scripted(plans), tmp_path / "three", seed=5, rank=rank, world_size=3)
        )
    assert [p.get("status") for p in partial[:2]] == ["rank_finished", "rank_finished"]
    three = summarize(str(tmp_path / "three"))
    # the last rank to finish writes the summary (with the software that wrote it)
    assert {k: v for k, v in partial[2].items() if k != "software"} == three
    assert partial[2]["software"]["habitat_mosnav"] == habitat_mosnav.__version__
    assert three["metrics"] == one["metrics"] and three["status"] == "complete"
    assert three["metrics"]["sr"] == pytest.approx(0.5)  # many succeeds, all does not
    per_rank = [[r["episode_key"] for r in records(tmp_path / "three", k)] for k in range(3)]
    assert per_rank == [[KEYS[0], KEYS[3]], [KEYS[1]], [KEYS[2]]]  # stride sharding
    assert [r["episode_index"] for r in records(tmp_path / "three", 0)] == [0, 3]


def test_scene_and_episode_limits_and_offsets(env, tmp_path):
    ev = Evaluator(
        Scripted(),
        env=env,
        config=EvaluationConfig(
            output_dir=str(tmp_path / "x"), episode_limit=3, offset=1, num_episodes=1
        ),
    )
    mine, pool, total = ev.select(env.episodes)
    assert sorted(pool) == KEYS[:3] and total == 1 and mine == [(0, KEYS[1])]
    ev.config.scene_limit = 0
    assert ev.select(env.episodes)[2] == 0
