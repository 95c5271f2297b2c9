"""habitat.Env runs MultiObjectNav-v1 on the CPU simulator; every measure on scripted
trajectories, with expected values computed by hand from SPEC §3-§4.

Scene: an open 12 m x 12 m room, so geodesic = Euclidean (up to the fast-marching grid's
error; tolerances 0.05 m). Start at the origin facing -Z; three right turns face +X.
Targets (fixture): chairs 101 @ x=1, 102 @ x=3, 103 @ x=5 (z=0), table 201 @ (0, 0, 3),
no view points (so each target's only view point is its navigable position). Success
distance d = 0.25 m (the default), so the legs of SPEC §4 are s_j = |start - j| - 0.25 and
c_ij = |i - j| - 0.5: s = 0.75, 2.75, 4.75 (101, 102, 103), c(101,102) = c(102,103) = 1.5,
c(101,103) = 3.5; table: s_201 = 2.75. Along an order the bound is L_first = s_first,
L_j = max(s_j, L_i + c_ij); l and a are its minimum over subsets and orders.
"""

import math

import pytest

import habitat_mosnav
import habitat
from habitat_mosnav.sims.toy_scenes import export_boxes, room_boxes

from habitat_mosnav.metrics.measure_table import NON_SCALAR_MEASURES

from conftest import room_overrides
from mosnav_fixtures import base_documents, write_dataset

# py39: habitat-lab v0.3.3's Env
pytestmark = pytest.mark.py39

T = 60  # max_episode_steps in these tests
ALL_MEASURES = [
    "mos_targets_found",
    "mos_precision",
    "mos_recall",
    "mos_f1",
    "mos_success",
    "trajectory_length",
    "optimal_subset_distance",
    "agent_subset_distance",
    "spl_multi",
    "path_efficiency",
    "target_selection_efficiency",
    "rtsr",
    "false_termination",
    "oer_target",
    "oer_space",
    "space_coverage",
    "distance_to_nearest_unclaimed_target",
    "mos_reward",
    "mos_report_events",
    "mos_aggregates",
]
RIGHT3 = ["turn_right"] * 3


def fwd(n):
    return ["move_forward"] * n


def make_env(paths, extra=()):
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        room_overrides(
            paths,
            T,
            "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
            "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
            *extra,
        ),
    )
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
    assert list(env.task.actions) == [
        "stop",
        "move_forward",
        "turn_left",
        "turn_right",
        "look_up",
        "look_down",
        "target_found",
    ]


def test_many_true_false_and_repeated_claims(env):
    # steps 1-3 turn, 4-7 walk to x=1, 8 claim 101 (TP), 9 repeat (FP), 10-17 walk to x=3,
    # 18 claim 102 (TP; F=2=target_count), 19 FINISH.
    m = run(
        env,
        "q0-many-0",
        RIGHT3 + fwd(4) + ["target_found", "target_found"] + fwd(8) + ["target_found", "stop"],
    )
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
    assert m["mos_f1"] == pytest.approx(0.8)  # 2*(2/3)*1 / (2/3 + 1)
    assert m["mos_success"] == 1.0  # many: F >= target_count
    assert m["trajectory_length"] == pytest.approx(3.0, abs=1e-6)  # 12 x 0.25 m
    # l: 101,102 max(s_102 = 2.75, 0.75 + 1.5) = 2.75 (102,101: max(0.75, 4.25); 101,103:
    # max(4.75, 4.25); ...): best 2 of 3; a: the same two targets
    assert m["optimal_subset_distance"] == pytest.approx(2.75, abs=0.05)
    assert m["agent_subset_distance"] == pytest.approx(2.75, abs=0.05)
    assert m["spl_multi"] == pytest.approx(2.75 / 3.0, abs=0.02)  # l / p
    assert m["path_efficiency"] == pytest.approx(2.75 / 3.0, abs=0.02)
    assert m["target_selection_efficiency"] == pytest.approx(1.0, abs=0.02)
    assert m["rtsr"] == pytest.approx(1 / 3)  # S = [101, 101, 102]
    assert math.isnan(m["false_termination"])  # not 'all'
    assert m["oer_target"] == pytest.approx((19 - 18) / T)
    assert math.isnan(m["oer_space"]) and math.isnan(m["space_coverage"])  # oracle off
    assert m["distance_to_nearest_unclaimed_target"] == pytest.approx(2.0, abs=0.05)
    assert env.task.mos_state.ended_by == "finish"


def test_false_alarm_far_from_targets(env):
    m = run(env, "q0-many-0", ["turn_left"] * 3 + fwd(8) + ["target_found"])  # x = -2
    ev = m["mos_report_events"][0]
    assert ev == {
        "step": 12,
        "near_targets": [],
        "new_targets": [],
        "duplicate_targets": [],
        "is_true_positive": False,
        "is_false_positive": True,
    }
    assert m["mos_precision"] == 0.0 and m["mos_recall"] == 0.0 and m["mos_f1"] == 0.0
    assert math.isnan(m["agent_subset_distance"]) and math.isnan(m["path_efficiency"])
    assert math.isnan(m["target_selection_efficiency"])
    assert m["rtsr"] == 0.0  # no claim had near targets
    assert not env.episode_over  # 6 never ends many/all


def test_moc_all_found_without_finish_is_failure(env):
    acts = (
        RIGHT3 + fwd(4) + ["target_found"] + fwd(8) + ["target_found"] + fwd(8) + ["target_found"]
    )  # claims at steps 8, 17, 26
    acts += ["turn_left"] * (T - len(acts))  # run out the clock
    m = run(env, "q0-all-0", acts)
    assert env.episode_over and env.task.mos_state.ended_by is None
    assert m["mos_targets_found"] == 3 and m["mos_recall"] == 1.0
    assert m["mos_success"] == 0.0  # MOC needs FINISH
    assert m["spl_multi"] == 0.0
    assert math.isnan(m["false_termination"])  # never sent FINISH
    assert m["oer_target"] == pytest.approx((T - 26) / T)  # finish_step = T
    # 101,102,103: 0.75 -> max(2.75, 2.25) = 2.75 -> max(4.75, 4.25) = 4.75
    assert m["optimal_subset_distance"] == pytest.approx(4.75, abs=0.05)


def test_moc_finish_with_all_found_succeeds(env):
    m = run(
        env,
        "q0-all-0",
        RIGHT3
        + fwd(4)
        + ["target_found"]
        + fwd(8)
        + ["target_found"]
        + fwd(8)
        + ["target_found", "stop"],
    )
    assert m["mos_success"] == 1.0 and m["false_termination"] == 0.0
    assert m["spl_multi"] == pytest.approx(4.75 / 5.0, abs=0.02)  # l = 4.75, p = 5.0
    assert m["oer_target"] == pytest.approx(1 / T)  # found at 26, FINISH at 27


def test_moc_early_finish_is_false_termination(env):
    m = run(env, "q0-all-0", RIGHT3 + fwd(4) + ["target_found", "stop"])
    assert m["false_termination"] == 1.0 and m["mos_success"] == 0.0
    assert m["mos_recall"] == pytest.approx(1 / 3)
    assert math.isnan(m["oer_target"])  # R targets never all found
    assert m["path_efficiency"] == pytest.approx(0.75 / 1.0, abs=0.02)  # a = s_101, p = 1
    assert math.isnan(m["target_selection_efficiency"])  # F = 1 < R = 3: not comparable


def test_single_ends_on_target_found_near_target(env):
    # table 201 at (0, 0, 3): face +Z (six turns), walk 2.75 m -> 0.25 m away (= d: near
    # up to the grid error, so walk 3.0 m onto it); 0.5 m away is not near.
    m = run(env, "q2-single-0", ["turn_left"] * 6 + fwd(10) + ["target_found"])
    assert m["mos_success"] == 0.0  # 0.5 m > d = 0.25 m
    m = run(env, "q2-single-0", ["turn_left"] * 6 + fwd(12) + ["target_found"])
    assert env.episode_over and env.task.mos_state.ended_by == "target_found"
    assert m["mos_success"] == 1.0 and m["mos_targets_found"] == 1
    assert m["optimal_subset_distance"] == pytest.approx(2.75, abs=0.05)  # 3.0 - d
    assert m["spl_multi"] == pytest.approx(2.75 / 3.0, abs=0.02)  # l / p


def test_single_finish_far_from_target_fails(env):
    m = run(env, "q2-single-0", fwd(2) + ["stop"])
    assert env.episode_over and env.task.mos_state.ended_by == "finish"
    assert m["mos_success"] == 0.0
    assert m["mos_report_events"][0]["is_false_positive"]  # FINISH claims in single


def test_any_nearest_of_several(env):
    m = run(env, "q1-any-0", RIGHT3 + fwd(12) + ["target_found"])  # at x=3: 102 near
    assert m["mos_success"] == 1.0
    assert m["mos_report_events"][0]["new_targets"] == [102]
    assert m["optimal_subset_distance"] == pytest.approx(0.75, abs=0.05)  # nearest: s_101


def test_every_measure_present(env):
    m = run(env, "q0-many-0", ["move_forward"])
    assert set(ALL_MEASURES) <= set(m)
    for k in ALL_MEASURES:
        if k not in NON_SCALAR_MEASURES:
            assert isinstance(m[k], float), k
    assert isinstance(m["mos_report_events"], list) and isinstance(m["mos_aggregates"], dict)


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
    env.step("move_forward")  # 0.25 m closer to 101
    r = env.get_metrics()["mos_reward"]
    assert r == pytest.approx(0.25 - 0.01, abs=0.02)
    for a in fwd(3):
        env.step(a)
    env.step("target_found")  # true claim: +2.5 - 0.01
    assert env.get_metrics()["mos_reward"] == pytest.approx(2.5 - 0.01)
    env.step("target_found")  # repeat: -1.0 - 0.01
    assert env.get_metrics()["mos_reward"] == pytest.approx(-1.0 - 0.01)


# ----------------------------------------------------------------------------- view points
# Same room and start (origin), d = 0.25. View points (x, z):
#   101: (1, 1), (1.5, 0)     102: (2.5, 0), (3, -1)     103: (5, 0)
# g_j(start): 101 min(sqrt 2, 1.5) = 1.4142, 102 min(2.5, sqrt 10) = 2.5, 103 5.0
#   -> s = 1.1642, 2.25, 4.75
# min over view point pairs: 101-102 |(1.5,0)-(2.5,0)| = 1.0, 101-103 |(1.5,0)-(5,0)| = 3.5,
#   102-103 |(3,-1)-(5,0)| = sqrt 5 = 2.2361  -> c = 0.5, 3.0, 1.7361
# Bound along an order: L_first = s_first, L_j = max(s_j, L_i + c_ij).
# many (k=2): 101,102 max(2.25, 1.1642 + 0.5) = 2.25 (102,101 max(1.1642, 2.75) = 2.75;
#   101,103 / 103,101 / 102,103 / 103,102 >= 4.75)                    -> l = 2.25
# all: 101,102,103 1.1642 -> 2.25 -> max(4.75, 2.25 + 1.7361) = 4.75 (every other order
#   ends at >= 4.75 too)                                                 -> l = 4.75
VP = {101: [(1.0, 1.0), (1.5, 0.0)], 102: [(2.5, 0.0), (3.0, -1.0)], 103: [(5.0, 0.0)]}


@pytest.fixture(scope="module")
def vp_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("vproom")
    docs = base_documents()
    for g in docs["goals.json"]["goals"]:
        g["view_points"] = [
            {"position": [x, 0.0, z], "rotation": [0, 0, 0, 1], "iou": 0.5}
            for x, z in VP.get(g["object_id"], [])
        ]
    glb = export_boxes(str(root / "room.glb"), room_boxes(-6, -6, 6, 6))
    e = make_env(write_dataset(root, docs, scene_file=glb))
    yield e
    e.close()


def test_legs_go_between_nearest_view_points(vp_env):
    # claim 101 at (1.5, 0) (its view point), 102 at (2.5, 0): p = 2.5 m
    m = run(vp_env, "q0-many-0", RIGHT3 + fwd(6) + ["target_found"] + fwd(4) + ["target_found"])
    state = vp_env.task.mos_state
    assert list(state.start_dist) == pytest.approx([1.1642, 2.25, 4.75], abs=0.05)
    assert state.pair_dist[0, 1] == pytest.approx(0.5, abs=0.05)
    assert state.pair_dist[0, 2] == pytest.approx(3.0, abs=0.05)
    assert state.pair_dist[1, 2] == pytest.approx(1.7361, abs=0.05)
    assert m["mos_targets_found"] == 2 and m["mos_success"] == 1.0
    assert m["optimal_subset_distance"] == pytest.approx(2.25, abs=0.05)
    assert m["trajectory_length"] == pytest.approx(2.5, abs=1e-6)
    assert m["spl_multi"] == pytest.approx(2.25 / 2.5, abs=0.02)
    m = run(vp_env, "q0-all-0", ["move_forward"])
    assert m["optimal_subset_distance"] == pytest.approx(4.75, abs=0.05)


def test_geodesic_queries_per_step(vp_env, monkeypatch):
    sim = vp_env.sim
    calls = []
    original = sim.geodesic_distance

    def counting(a, b, episode=None):
        calls.append(1)
        return original(a, b, episode=episode)

    monkeypatch.setattr(sim, "geodesic_distance", counting)
    vp_env.task.leg_cache.clear()
    vp_env.current_episode = next(e for e in vp_env.episodes if e.episode_id == "q0-all-0")
    vp_env.reset()
    # 3 start queries + per pair one per view point of the smaller side: 2 + 1 + 1
    # (space oracle off); the first step's distance query happens in reset_metric.
    assert len(calls) == 3 + 4 + 1
    calls.clear()
    vp_env.current_episode = next(e for e in vp_env.episodes if e.episode_id == "q0-all-0")
    vp_env.reset()  # same targets: pair legs come from the cache
    assert len(calls) == 3 + 1
    per_step = []
    for a in RIGHT3 + fwd(6) + ["look_up", "look_down", "turn_left", "turn_right"]:
        calls.clear()
        vp_env.step(a)
        per_step.append(len(calls))
    # plain steps: one multi-goal query after a move, none when the agent stayed put
    assert per_step == [0] * 3 + [1] * 6 + [0] * 4
    calls.clear()
    vp_env.step("target_found")  # at (1.5, 0): claims 101
    assert vp_env.task.mos_state.claimed == [101]
    assert len(calls) == 3  # per-target distances at a claim only
    calls.clear()
    vp_env.step("move_forward")
    assert len(calls) == 1
    assert vp_env.get_metrics()["distance_to_nearest_unclaimed_target"] == pytest.approx(
        0.75, abs=0.05
    )  # (1.75, 0) -> 102's view point (2.5, 0)


def test_report_events_copied_only_when_they_change(vp_env):
    vp_env.current_episode = next(e for e in vp_env.episodes if e.episode_id == "q0-many-0")
    vp_env.reset()
    for a in RIGHT3 + fwd(6) + ["target_found"]:
        vp_env.step(a)
    first = vp_env.get_metrics()["mos_report_events"]
    vp_env.step("move_forward")
    assert vp_env.get_metrics()["mos_report_events"] is first  # nothing new: no copy
    first[0]["new_targets"].append(999)  # a reader's change ...
    assert vp_env.task.mos_state.events[0]["new_targets"] == [101]  # ... stays out
    vp_env.step("target_found")
    events = vp_env.get_metrics()["mos_report_events"]
    assert events is not first and len(events) == 2 and len(first) == 1


def test_per_step_metrics_equal_a_full_recomputation(vp_env):
    # metrics() updates only the path-length fields per step; it must always equal
    # episode_metrics() over the whole outcome.
    from habitat_mosnav.metrics import episode_metrics

    vp_env.current_episode = next(e for e in vp_env.episodes if e.episode_id == "q0-all-0")
    vp_env.reset()
    state = vp_env.task.mos_state
    for a in (
        RIGHT3
        + fwd(6)
        + ["target_found", "target_found"]
        + fwd(4)
        + ["turn_left", "target_found"]
        + fwd(3)
        + ["stop"]
    ):
        vp_env.step(a)
        assert state.metrics() == episode_metrics(state.outcome()), (state.step, a)
    assert state.metrics()["targets_found"] == 2 and state.metrics()["false_termination"] == 1.0
