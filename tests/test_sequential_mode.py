"""The ``sequential`` mode (GOAT-Bench's protocol, SPEC §11): loader, task, observations,
oracle, records and replay, with expected values computed by hand.

Scene: the open 12 m x 12 m room of ``open_room`` (geodesic = Euclidean; tolerance 0.05 m).
Start at the origin facing -Z; three right turns face +X; a forward step is 0.25 m.
Targets: chairs 101 @ x=1, 102 @ x=3, 103 @ x=5 (z=0), table 201 @ (0, 0, 3), no view
points (each target's only view point is its navigable position). success_distance 0.25 m.
``seq-0`` (conftest.SEQUENTIAL_EPISODES): subtask 0 object "chair" [101], subtask 1
description "Find a table." [201], subtask 2 description "Find brown chairs." [102].
"""

import json
import math
import os

import pytest

import habitat
import habitat_mosnav
from conftest import SEQUENTIAL_EPISODES
from habitat_mosnav.datasets.schema import DatasetFormatError, load_scene_dir
from habitat_mosnav.evaluation.durable import ResultFileError
from habitat_mosnav.evaluation.observations import ObservationBuilder
from habitat_mosnav.evaluation.records import SUBTASK_METRIC_FIELDS, check_record
from habitat_mosnav.evaluation.rollout import run_episode
from habitat_mosnav.prompts import action_lines
from habitat_mosnav.sensors import decode_goal_text
from mosnav_fixtures import base_documents, quick_eval_args, write_dataset

pytestmark = pytest.mark.py39

T = 150
RIGHT3 = ["turn_right"] * 3
TOL = 0.05


def fwd(n):
    return ["move_forward"] * n


@pytest.fixture(scope="module")
def env(sequential_room):
    data, scenes = sequential_room
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        [
            f"habitat.dataset.data_path={data}",
            f"habitat.dataset.scenes_dir={scenes}",
            "habitat.dataset.target_modes=[sequential]",
            # sequential episodes carry their own goal types: not filtered by goal_type
            "habitat.dataset.goal_type=object",
            f"habitat.environment.max_episode_steps={T}",
            "habitat.task.mosnav_space_coverage_samples=0",
            "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
            "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
        ],
    )
    e = habitat.Env(cfg)
    yield e
    e.close()


def episode(env, eid):
    return next(e for e in env.episodes if e.episode_id == eid)


def run(env, eid, actions):
    env.current_episode = episode(env, eid)
    obs = [env.reset()]
    for a in actions:
        assert not env.episode_over, a
        obs.append(env.step({"action": a}))
    return env.task.mos_state, obs


# ----------------------------------------------------------------------------- loader
def _docs_with(edit):
    docs = base_documents()
    seq = json.loads(json.dumps(SEQUENTIAL_EPISODES[0]))
    edit(seq, docs)
    docs["episodes.json"]["episodes"].append(seq)
    return docs


def _sub(i, key, value):
    def edit(seq, docs):
        seq["subtasks"][i][key] = value

    return edit


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda s, d: s.pop("subtasks"), "subtasks", "missing"),
        (lambda s, d: s.update(subtasks=[]), "subtasks", "empty"),
        (_sub(1, "goal_type", "video"), "goal_type", "unknown goal type 'video'"),
        (_sub(1, "query_id", "q9"), "query_id", "'q9' is not in queries.json"),
        (_sub(2, "goal_type", "object"), "goal_type", "pure category query"),
        (_sub(0, "goal_type", "image"), "goal_type", "has none"),
        (_sub(0, "target_object_ids", [103]), "target_object_ids", "not in the episode's"),
        (_sub(0, "target_object_ids", []), "target_object_ids", "empty"),
        (lambda s, d: s.update(query_id="q2"), "query_id", "not the first subtask's"),
        (
            lambda s, d: s.update(target_object_ids=[101, 201, 102, 103]),
            "target_object_ids",
            "no subtask's target",
        ),
        (
            lambda s, d: d["episodes.json"]["episodes"][0].update(
                subtasks=SEQUENTIAL_EPISODES[0]["subtasks"]
            ),
            "subtasks",
            "only a 'sequential' episode",
        ),
    ],
)
def test_schema_errors_are_one_line(tmp_path, edit, field, words):
    data, _ = write_dataset(tmp_path, _docs_with(edit))
    with pytest.raises(DatasetFormatError) as err:
        load_scene_dir(os.path.join(data, "testScene01"))
    msg = str(err.value)
    assert "\n" not in msg
    assert "episodes.json" in msg and "episode '" in msg
    assert f"field '{field}'" in msg and words in msg


def test_loader_builds_subtasks(env):
    ep = episode(env, "seq-0")
    assert ep.target_mode == "sequential" and ep.target_count is None
    assert [(s.goal_type, s.goal_text, s.target_object_ids) for s in ep.subtasks] == [
        ("object", "chair", [101]),
        ("description", "Find a table.", [201]),
        ("description", "Find brown chairs.", [102]),
    ]
    assert [s.object_category for s in ep.subtasks] == ["chair", "table", "chair"]
    assert sorted(g.object_id for g in ep.goals) == [101, 102, 201]
    # episode-level goal fields: the first subtask's
    assert (ep.goal_type, ep.goal_text, ep.query_id) == ("object", "chair", "q0")
    # goal_type=object in the config filters nothing here (SPEC §11)
    assert {e.episode_id for e in env.episodes} == {"seq-0", "seq-1"}


# ----------------------------------------------------------------------------- task
def test_scripted_subtasks(env):
    # face +X, 4 steps to x=1 (on 101): stop -> s_0 = 1; d_0 = 1.0, p_0 = 1.0.
    # stop again at once, 3.16 m from the table: s_1 = 0, d_1 = sqrt(1 + 9), p_1 = 0.
    # 8 steps to x=3 (on 102): stop -> s_2 = 1; d_2 = 2.0, p_2 = 2.0; the episode ends.
    actions = RIGHT3 + fwd(4) + ["target_found", "target_found"] + fwd(8) + ["target_found"]
    state, obs = run(env, "seq-0", actions)
    assert env.episode_over and state.ended_by == "target_found"
    sm = state.subtask_metrics()
    assert sm["subtask_success"] == [1, 0, 1]
    assert sm["stop_step"] == [8, 9, 18]
    assert sm["goal_types"] == ["object", "description", "description"]
    for got, want in zip(sm["start_distance"], [1.0, math.sqrt(10), 2.0]):
        assert got == pytest.approx(want, abs=TOL)
    assert sm["path_length"] == pytest.approx([1.0, 0.0, 2.0], abs=1e-6)
    # spl_i = s_i d_i / max(d_i, p_i) = [1, 0, 1]
    assert sm["spl_by_subtask"] == pytest.approx([1.0, 0.0, 1.0], abs=TOL)
    m = state.metrics()
    assert m["task_success"] == 0 and m["composite_success"] == 0 and m["success"] == 0
    assert m["partial_success"] == pytest.approx(2 / 3)
    assert m["object_success"] == 1.0 and m["description_success"] == 0.5
    assert m["image_success"] is None
    assert m["composite_spl"] == pytest.approx(2 / 3, abs=TOL) and m["spl"] == m["composite_spl"]
    assert m["trajectory_length"] == pytest.approx(3.0)
    assert m["precision"] is None and m["optimal_subset_distance"] is None
    # the stops are SPEC §3-shaped events
    assert [(e["step"], e["subtask_index"], e["is_true_positive"]) for e in state.events] == [
        (8, 0, True),
        (9, 1, False),
        (18, 2, True),
    ]
    # every scalar measure reads it without error (NaN for the None fields)
    measures = env.get_metrics()
    assert measures["mos_success"] == 0.0 and math.isnan(measures["mos_precision"])


def test_finish_ends_the_episode_without_judging(env):
    # the stop at x=1 succeeds; action 0 then ends the episode: s = [1, 0, 0], subtask 1
    # began (d_1 = sqrt(10)), subtask 2 never did (d_2 None, p_2 0).
    state, _ = run(env, "seq-0", RIGHT3 + fwd(4) + ["target_found", "stop"])
    assert env.episode_over and state.ended_by == "finish"
    sm = state.subtask_metrics()
    assert sm["subtask_success"] == [1, 0, 0] and sm["stop_step"] == [8, None, None]
    assert sm["start_distance"][1] == pytest.approx(math.sqrt(10), abs=TOL)
    assert sm["start_distance"][2] is None and sm["path_length"][2] == 0.0
    assert state.metrics()["task_success"] == 0


def test_step_budget_ends_it(env):
    env.task.max_steps = 6  # from the next reset
    try:
        state, _ = run(env, "seq-0", RIGHT3 + fwd(3))
        assert env.episode_over and state.ended_by is None
        sm = state.subtask_metrics()
        # 0.75 m walked toward 101, never stopped
        assert sm["subtask_success"] == [0, 0, 0] and sm["stop_step"] == [None] * 3
        assert sm["path_length"] == pytest.approx([0.75, 0.0, 0.0])
        assert sm["start_distance"][0] == pytest.approx(1.0, abs=TOL)
        assert sm["start_distance"][1:] == [None, None]
        m = state.metrics()
        assert m["task_success"] == 0 and m["composite_spl"] == 0.0
    finally:
        env.task.max_steps = T


# ----------------------------------------------------------------------------- observations
def test_observation_follows_the_subtask(env):
    builder = ObservationBuilder(T)
    env.current_episode = ep = episode(env, "seq-0")
    obs = env.reset()
    o = builder.build(obs, ep, {"position": [0, 0, 0], "rotation": [0, 0, 0, 1]}, 0, None, env)
    assert (o.goal_type, o.goal_text, o.subtask_index, o.subtask_count) == ("object", "chair", 0, 3)
    assert o.target_mode == "sequential" and o.target_count is None
    assert "subtask 1 of 3" in o.task_prompt and "6 = SUBTASK_STOP" in o.task_prompt
    assert obs["mosnav_target_mode"].tolist() == [0.0] * 4  # four entries, none set
    chair = int(obs["objectgoal"][0])
    obs = env.step({"action": "target_found"})  # far from 101: fails, subtask 1 begins
    assert decode_goal_text(obs["mosnav_goal_text"]) == "Find a table."
    assert int(obs["objectgoal"][0]) != chair
    o = builder.build(obs, ep, {"position": [0, 0, 0], "rotation": [0, 0, 0, 1]}, 1, 6, env)
    assert (o.goal_type, o.goal_text, o.subtask_index) == ("description", "Find a table.", 1)
    assert "subtask 2 of 3" in o.task_prompt and 'Goal (description): "Find a table."' in (
        o.task_prompt
    )
    # a reset of the same episode starts at its first subtask again
    obs = env.reset()
    assert decode_goal_text(obs["mosnav_goal_text"]) == "chair"


def test_prompt_action_table():
    lines = action_lines("sequential", "legacy")
    assert lines[0].startswith("0 = FINISH") and lines[-1].startswith("6 = SUBTASK_STOP")


# ----------------------------------------------------------------------------- agents
@pytest.mark.parametrize("eid", ["seq-0", "seq-1"])
def test_oracle_succeeds(env, eid):
    from habitat_mosnav.agents.oracle import OracleAgent

    r = run_episode(env, OracleAgent(), episode(env, eid), ObservationBuilder(T), seed=0)
    assert r.ok, r.error
    assert r.terminated_by == "target_found"
    assert r.metrics["task_success"] == 1 and r.metrics["success"] == 1
    assert r.subtask_metrics["subtask_success"] == [1] * len(episode(env, eid).subtasks)
    assert all(s > 0.9 for s in r.subtask_metrics["spl_by_subtask"])


def test_random_agent_runs(env):
    from habitat_mosnav.agents.random_agent import RandomAgent

    r = run_episode(env, RandomAgent(), episode(env, "seq-0"), ObservationBuilder(T), seed=3)
    assert r.ok, r.error
    assert set(r.subtask_metrics) == set(SUBTASK_METRIC_FIELDS)


# ----------------------------------------------------------------------------- records
def test_check_record_subtask_metrics():
    block = {
        "subtask_success": [1, 0],
        "spl_by_subtask": [0.5, 0.0],
        "goal_types": ["object", "image"],
        "start_distance": [1.0, None],
        "path_length": [2.0, 0.0],
        "stop_step": [4, None],
    }
    rec = {"episode_key": "k", "status": "ok", "subtask_metrics": block}
    assert check_record(rec, "f.jsonl", 3) is rec
    bad = dict(block, path_length=[2.0])
    with pytest.raises(ResultFileError, match=r"^f\.jsonl:3: field 'subtask_metrics\.path_length'"):
        check_record(dict(rec, subtask_metrics=bad), "f.jsonl", 3)
    bad = dict(block, spl_by_subtask=["0.5", 0.0])
    with pytest.raises(ResultFileError, match=r"subtask_metrics\.spl_by_subtask\[0\]"):
        check_record(dict(rec, subtask_metrics=bad), "f.jsonl", 3)


def test_cli_run_and_replay(tmp_path, sequential_room):
    from conftest import read_records
    from habitat_mosnav.evaluation.cli import main
    from habitat_mosnav.evaluation.replay_cli import main as replay_main

    data, scenes = sequential_room
    out = tmp_path / "run"
    argv = quick_eval_args(data, scenes, "--target-modes", "sequential", "--agent", "oracle")
    assert main(argv + ["--output-dir", str(out)]) == 0
    records = read_records(out)
    assert len(records) == 2
    for rec in records:
        assert rec["episode"]["target_mode"] == "sequential"
        assert rec["metrics"]["task_success"] == 1
        assert set(rec["subtask_metrics"]) == set(SUBTASK_METRIC_FIELDS)
        check_record(rec, "episodes.jsonl", 1)
    rc = replay_main(
        [str(out), "--no-progress", "--verify", "--dataset-dir", data, "--scene-root", scenes]
    )
    assert rc == 0
