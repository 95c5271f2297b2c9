"""habitat-lab's own tools on the task (issue 24): ``habitat.Benchmark`` (its class, from
site-packages, unchanged) evaluates an agent and gives the SPEC §5 aggregates; habitat's
standard measures (success, spl, distance_to_goal) sit next to ours in records without
either being dropped."""

import math

import pytest

import habitat_mosnav
import habitat
from habitat_mosnav.metrics.aggregate import aggregate

from test_plugin_env import RIGHT3, fwd, make_env

# claim 101 at x = 1, walk to x = 3, claim 102, FINISH (single/any end at the first claim)
SCRIPT = RIGHT3 + fwd(4) + ["target_found"] + fwd(8) + ["target_found", "stop"]


class ScriptedAgent(habitat.Agent):
    """A habitat.Agent (habitat's own interface: observations dict in, action out)."""

    def reset(self):
        self.step = 0

    def act(self, observations):
        self.step += 1
        return {"action": SCRIPT[min(self.step, len(SCRIPT)) - 1]}


def _benchmark_yaml(tmp_path, open_room):
    data, scenes = open_room
    path = tmp_path / "mosnav_bench.yaml"
    path.write_text(f"""# @package _global_
defaults:
  - /benchmark/nav/mosnav/base/demo
  - _self_
habitat:
  environment:
    max_episode_steps: 60
  dataset:
    data_path: {data}
    scenes_dir: {scenes}
    target_modes: []
""")
    return str(path)


def test_habitat_benchmark_gives_the_spec_aggregates(tmp_path, open_room):
    bench = habitat.Benchmark(_benchmark_yaml(tmp_path, open_room))
    env = bench._env
    seen = []  # what each episode ended with, read through the env's public API
    stock_get_metrics = env.get_metrics

    def spy():
        seen.append(
            (
                env.current_episode.target_mode,
                dict(env.task.mos_state.metrics()),
                len(env.task.mos_state.events),
            )
        )
        return stock_get_metrics()

    env.get_metrics = spy
    result = bench.evaluate(ScriptedAgent())  # all 4 episodes: many, all, any, single
    env.close()
    assert sorted(m for m, _, _ in seen) == ["all", "any", "many", "single"]
    expected = aggregate((m, metrics) for m, metrics, _ in seen)
    assert expected["tse_mos"] is not None and expected["ftr"] == 1.0  # the script's cases
    agg = {k.split("/", 1)[1]: v for k, v in result.items() if k.startswith("mos_aggregates/")}
    for name, value in expected.items():
        if value is None:
            assert name not in agg, name  # SPEC null: absent, not NaN
        else:
            assert agg[name] == pytest.approx(value, abs=1e-9), name
    assert all(math.isfinite(v) for v in agg.values())
    assert agg["num_episodes"] == 4 and agg["tse"] == agg["tse_mos"]
    # the list-valued events measure averages as claims per episode: 2 + 2 + 1 + 1
    assert result["mos_report_events"] == pytest.approx(sum(n for _, _, n in seen) / 4) == 1.5
    assert result["mos_success"] == pytest.approx(sum(m["success"] for _, m, _ in seen) / 4)


@pytest.fixture(scope="module")
def room_with_view_points(tmp_path_factory):
    """The open room with one view point per goal at its navigable position (habitat's
    DistanceToGoal with VIEW_POINTS reads ``goal.view_points``)."""
    from mosnav_fixtures import base_documents, write_dataset
    from habitat_mosnav.sims.toy_scenes import export_boxes, room_boxes

    root = tmp_path_factory.mktemp("room_vp")
    docs = base_documents()
    for g in docs["goals.json"]["goals"]:
        g["view_points"] = [
            {"position": g["navigable_position"], "rotation": [0, 0, 0, 1], "iou": 0.5}
        ]
    glb = export_boxes(str(root / "room.glb"), room_boxes(-6, -6, 6, 6))
    return write_dataset(root, docs, scene_file=glb)


def test_records_keep_habitat_success_and_spl_next_to_ours(room_with_view_points):
    from habitat_mosnav.evaluation.rollout import episode_metrics_record

    env = make_env(room_with_view_points, ["+habitat/task/mosnav_extras=habitat_nav_measures"])
    try:
        env.current_episode = next(e for e in env.episodes if e.episode_id == "q0-many-0")
        env.reset()
        for action in SCRIPT:
            env.step(action)
        habitat_metrics = env.get_metrics()
        record = episode_metrics_record(env)
    finally:
        env.close()
    ours = env.task.mos_state.metrics()
    assert record["success"] == ours["success"] == 1.0  # many: 2 of 2 claimed
    assert record["spl"] == pytest.approx(ours["spl_multi"]) == pytest.approx(2.75 / 3, abs=0.02)
    # habitat's: FINISH at a goal; SPL against the start to the nearest view point (1 m of 3 m)
    assert record["habitat_success"] == habitat_metrics["success"] == 1.0
    assert (
        record["habitat_spl"]
        == pytest.approx(habitat_metrics["spl"])
        == pytest.approx(1 / 3, abs=0.02)
    )
    assert record["distance_to_goal"] == pytest.approx(habitat_metrics["distance_to_goal"])
    assert math.isfinite(record["distance_to_goal"])
    assert "mos_aggregates" not in record and not any(
        k.startswith("mos_aggregates") for k in record
    )


def test_habitat_nav_measures_group_sets_view_points_and_success_distance():
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml", ["+habitat/task/mosnav_extras=habitat_nav_measures"]
    )
    m = cfg.habitat.task.measurements
    assert m.distance_to_goal.distance_to == "VIEW_POINTS"
    assert m.success.success_distance == cfg.habitat.task.mosnav_success_distance == 0.25
    assert "spl" in m


def test_gym_ids_make_habitats_gym_env_with_finite_bounds_of_ours():
    import warnings

    import gym
    from gym.utils import env_checker

    from habitat_mosnav.gym_envs import GYM_CONFIGS

    assert {"HabitatMosNavMosDemo-v0", "HabitatMosNavMocHM3D-v0"} <= set(GYM_CONFIGS)
    env = gym.make(
        "HabitatMosNavMosDemo-v0",
        override_options=[
            "habitat.task.mosnav_space_coverage_samples=0",
            "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
        ],
    )
    try:
        space = env.observation_space
        assert space["mosnav_target_count"].high[0] == 100  # finite (was inf)
        obs = env.reset()
        assert all(space[k].contains(v) for k, v in obs.items())
        for key in [k for k in space.spaces if k.startswith("mosnav_")]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                env_checker._check_box_obs(space[key], key)
            assert not caught, (key, [str(w.message) for w in caught])
    finally:
        env.close()


@pytest.mark.parametrize("first", ["gym", "habitat_mosnav"])
def test_gym_ids_exist_after_import_habitat_mosnav_without_habitat(first):
    """``import gym; import habitat_mosnav; gym.make(id)`` found no id (``NameNotFound``) until
    habitat was imported: the ids are registered when gym is, in either import order, and
    registering them imports neither habitat nor torch (a fresh interpreter)."""
    import subprocess
    import sys

    second = "habitat_mosnav" if first == "gym" else "gym"
    code = (
        f"import sys, {first}, {second}, gym\n"
        "spec = gym.spec('HabitatMosNavMosDemo-v0')\n"
        "print(spec.entry_point, spec.kwargs['cfg_file_path'], "
        "'habitat' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "habitat_mosnav.gym_envs:make_gym_env",
        "benchmark/nav/mosnav/mos_demo.yaml",
        "False",
        "False",
    ]
