"""habitat.Env runs MultiObjectNav-v1 on the CPU simulator; every measure on scripted
trajectories, with expected values computed by hand from SPEC §3-§4.

Scene: an open 12 m x 12 m room, so geodesic = Euclidean (up to the fast-marching grid's
error; tolerances 0.05 m). Start at the origin facing -Z; three right turns face +X.
Targets (fixture): chairs 101 @ x=1, 102 @ x=3, 103 @ x=5 (z=0), table 201 @ (0, 0, 3).
"""
import math

import pytest

import habitat_mosnav
import habitat
from habitat_mosnav.sims.toy_scenes import export_boxes, room_boxes

from mosnav_fixtures import base_documents, write_dataset

T = 60  # max_episode_steps in these tests
ALL_MEASURES = [
    "mos_targets_found", "mos_precision", "mos_recall", "mos_f1", "mos_success",
    "trajectory_length", "optimal_subset_distance", "agent_subset_distance", "spl_multi",
    "path_efficiency", "target_selection_efficiency", "rtsr", "false_termination",
    "oer_target", "oer_space", "space_coverage", "distance_to_nearest_unclaimed_target",
    "mos_reward", "mos_report_events",
]
RIGHT3 = ["turn_right"] * 3


def fwd(n):
    return ["move_forward"] * n


def make_env(paths, extra=()):
    data, scenes = paths
    cfg = habitat_mosnav.get_config("benchmark/nav/mosnav/mos_demo.yaml", [
        f"habitat.dataset.data_path={data}", f"habitat.dataset.scenes_dir={scenes}",
        "habitat.dataset.target_modes=[]",
        f"habitat.environment.max_episode_steps={T}",
        "habitat.task.mosnav_space_coverage_samples=0",
        "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
        "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
        *extra,
    ])
    return habitat.Env(cfg)


def run(env, episode_id, actions):
    env.current_episode = next(e for e in env.episodes if e.episode_id == episode_id)
    env.reset()
    for a in actions:
        assert not env.episode_over, f"episode ended before {a}"
        env.step(a)
    return env.get_metrics()


@pytest.fixture(scope="module")
def env(open_room):
    e = make_env(open_room)
    yield e
    e.close()


def test_action_ids_follow_spec(env):
    assert list(env.task.actions) == ["stop", "move_forward", "turn_left", "turn_right",
                                      "look_up", "look_down", "target_found"]


def test_many_true_false_and_repeated_claims(env):
    # steps 1-3 turn, 4-7 walk to x=1, 8 claim 101 (TP), 9 repeat (FP), 10-17 walk to x=3,
    # 18 claim 102 (TP; F=2=target_count), 19 FINISH.
    m = run(env, "q0-many-0",
            RIGHT3 + fwd(4) + ["target_found", "target_found"] + fwd(8) + ["target_found",
                                                                          "stop"])
    assert env.episode_over
    events = m["mos_report_events"]
    assert [e["step"] for e in events] == [8, 9, 18]
    assert events[0]["new_targets"] == [101] and events[0]["is_true_positive"]
    assert events[1]["new_targets"] == [] and events[1]["duplicate_targets"] == [101]
    assert events[1]["is_false_positive"]
    assert events[2]["new_targets"] == [102] and events[2]["near_targets"] == [102]
    assert m["mos_targets_found"] == 2
    assert m["mos_precision"] == pytest.approx(2 / 3)
    assert m["mos_recall"] == 1.0
    assert m["mos_f1"] == pytest.approx(0.8)          # 2*(2/3)*1 / (2/3 + 1)
    assert m["mos_success"] == 1.0                    # many: F >= target_count
    assert m["trajectory_length"] == pytest.approx(3.0, abs=1e-6)   # 12 x 0.25 m
    assert m["optimal_subset_distance"] == pytest.approx(3.0, abs=0.05)  # 0->1->3
    assert m["agent_subset_distance"] == pytest.approx(3.0, abs=0.05)
    assert m["spl_multi"] == pytest.approx(1.0, abs=0.02)
    assert m["path_efficiency"] == pytest.approx(1.0, abs=0.02)
    assert m["target_selection_efficiency"] == pytest.approx(1.0, abs=0.02)
    assert m["rtsr"] == pytest.approx(1 / 3)          # S = [101, 101, 102]
    assert math.isnan(m["false_termination"])         # not 'all'
    assert m["oer_target"] == pytest.approx((19 - 18) / T)
    assert math.isnan(m["oer_space"]) and math.isnan(m["space_coverage"])  # oracle off
    assert m["distance_to_nearest_unclaimed_target"] == pytest.approx(2.0, abs=0.05)
    assert env.task.mos_state.ended_by == "finish"


def test_false_alarm_far_from_targets(env):
    m = run(env, "q0-many-0", ["turn_left"] * 3 + fwd(8) + ["target_found"])  # x = -2
    ev = m["mos_report_events"][0]
    assert ev == {"step": 12, "near_targets": [], "new_targets": [], "duplicate_targets": [],
                  "is_true_positive": False, "is_false_positive": True}
    assert m["mos_precision"] == 0.0 and m["mos_recall"] == 0.0 and m["mos_f1"] == 0.0
    assert math.isnan(m["agent_subset_distance"]) and math.isnan(m["path_efficiency"])
    assert math.isnan(m["target_selection_efficiency"])
    assert m["rtsr"] == 0.0                           # no claim had near targets
    assert not env.episode_over                       # 6 never ends many/all


def test_moc_all_found_without_finish_is_failure(env):
    acts = RIGHT3 + fwd(4) + ["target_found"] + fwd(8) + ["target_found"] + fwd(8) + [
        "target_found"]                                # claims at steps 8, 17, 26
    acts += ["turn_left"] * (T - len(acts))            # run out the clock
    m = run(env, "q0-all-0", acts)
    assert env.episode_over and env.task.mos_state.ended_by is None
    assert m["mos_targets_found"] == 3 and m["mos_recall"] == 1.0
    assert m["mos_success"] == 0.0                    # MOC needs FINISH
    assert m["spl_multi"] == 0.0
    assert math.isnan(m["false_termination"])         # never sent FINISH
    assert m["oer_target"] == pytest.approx((T - 26) / T)   # finish_step = T
    assert m["optimal_subset_distance"] == pytest.approx(5.0, abs=0.05)


def test_moc_finish_with_all_found_succeeds(env):
    m = run(env, "q0-all-0", RIGHT3 + fwd(4) + ["target_found"] + fwd(8) + [
        "target_found"] + fwd(8) + ["target_found", "stop"])
    assert m["mos_success"] == 1.0 and m["false_termination"] == 0.0
    assert m["spl_multi"] == pytest.approx(1.0, abs=0.02)   # p = 5.0 = l
    assert m["oer_target"] == pytest.approx(1 / T)          # found at 26, FINISH at 27


def test_moc_early_finish_is_false_termination(env):
    m = run(env, "q0-all-0", RIGHT3 + fwd(4) + ["target_found", "stop"])
    assert m["false_termination"] == 1.0 and m["mos_success"] == 0.0
    assert m["mos_recall"] == pytest.approx(1 / 3)
    assert math.isnan(m["oer_target"])                 # R targets never all found


def test_single_ends_on_target_found_near_target(env):
    # table 201 at (0, 0, 3): face +Z (six turns), walk 2.25 m -> 0.75 m away (< 1.0).
    m = run(env, "q2-single-0", ["turn_left"] * 6 + fwd(9) + ["target_found"])
    assert env.episode_over and env.task.mos_state.ended_by == "target_found"
    assert m["mos_success"] == 1.0 and m["mos_targets_found"] == 1
    assert m["optimal_subset_distance"] == pytest.approx(3.0, abs=0.05)
    assert m["spl_multi"] == pytest.approx(1.0, abs=0.02)   # p = 2.25 < l


def test_single_finish_far_from_target_fails(env):
    m = run(env, "q2-single-0", fwd(2) + ["stop"])
    assert env.episode_over and env.task.mos_state.ended_by == "finish"
    assert m["mos_success"] == 0.0
    assert m["mos_report_events"][0]["is_false_positive"]   # FINISH claims in single


def test_any_nearest_of_several(env):
    m = run(env, "q1-any-0", RIGHT3 + fwd(12) + ["target_found"])  # at x=3: 102 near
    assert m["mos_success"] == 1.0
    assert m["mos_report_events"][0]["new_targets"] == [102]
    assert m["optimal_subset_distance"] == pytest.approx(1.0, abs=0.05)  # nearest: 101


def test_every_measure_present(env):
    m = run(env, "q0-many-0", ["move_forward"])
    assert set(ALL_MEASURES) <= set(m)
    for k in ALL_MEASURES:
        if k != "mos_report_events":
            assert isinstance(m[k], float), k


def test_space_oracle_in_small_room(tmp_path):
    # 2 m x 2 m room: every navigable point is within 1.5 m of the centre, so the space is
    # exhausted at step 0 and oer_space = (finish_step - 0) / T.
    glb = export_boxes(str(tmp_path / "small.glb"), room_boxes(-1, -1, 1, 1))
    docs = base_documents()
    for g in docs["goals.json"]["goals"]:
        g["navigable_position"] = [0.5, 0.0, 0.5]
    paths = write_dataset(tmp_path, docs, scene_file=glb)
    env = make_env(paths, ["habitat.task.mosnav_space_coverage_samples=30"])
    try:
        m = run(env, "q0-all-0", ["turn_left", "stop"])
        assert m["space_coverage"] == 1.0
        assert env.task.mos_state.space_exhausted_step == 0
        assert m["oer_space"] == pytest.approx(2 / T)
    finally:
        env.close()


def test_reward_progress_and_claims(env):
    env.current_episode = next(e for e in env.episodes if e.episode_id == "q0-many-0")
    env.reset()
    for a in RIGHT3:
        env.step(a)
    env.step("move_forward")                      # 0.25 m closer to 101
    r = env.get_metrics()["mos_reward"]
    assert r == pytest.approx(0.25 - 0.01, abs=0.02)
    for a in fwd(3):
        env.step(a)
    env.step("target_found")                      # true claim: +2.5 - 0.01
    assert env.get_metrics()["mos_reward"] == pytest.approx(2.5 - 0.01)
    env.step("target_found")                      # repeat: -1.0 - 0.01
    assert env.get_metrics()["mos_reward"] == pytest.approx(-1.0 - 0.01)
