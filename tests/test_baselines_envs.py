"""MosNavVectorEnvFactory with real forkserver worker processes (not HABITAT_ENV_DEBUG):
the workers know the plugin, training splits nothing away, evaluation shards episodes,
and a final step carries the episode's record payload."""

import os

import pytest

import habitat_mosnav
import habitat_mosnav.baselines as mb

# py39: habitat-baselines v0.3.3's vector envs
pytestmark = [pytest.mark.baselines, pytest.mark.slow, pytest.mark.py39]
pytest.importorskip("torch")
pytest.importorskip("habitat_baselines", reason="the [baselines] extra is not installed")
mb.register()

from habitat_mosnav.baselines.envs import EPISODE_INFO_KEY, episode_payload  # noqa: E402
from habitat_mosnav.baselines.factory import MosNavVectorEnvFactory  # noqa: E402

from conftest import room_overrides, sensor_sizes  # noqa: E402
from mosnav_fixtures import EPISODE_KEYS  # noqa: E402

KEYS = EPISODE_KEYS


def config(room, *extra):
    from habitat.config.default_structured_configs import register_hydra_plugin
    from habitat_baselines.config.default_structured_configs import (
        HabitatBaselinesConfigPlugin,
    )

    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    return habitat_mosnav.get_config(
        "baselines/ppo_mos_demo.yaml", room_overrides(room, 5, *sensor_sizes(32, 32), *extra)
    )


def test_training_envs_run_in_worker_processes_that_know_the_plugin(open_room, monkeypatch):
    monkeypatch.delenv("HABITAT_ENV_DEBUG", raising=False)
    envs = MosNavVectorEnvFactory().construct_envs(config(open_room))
    try:
        assert envs.num_envs == 2
        pids = {envs.call_at(i, "process_id") for i in range(2)}
        assert len(pids) == 2 and os.getpid() not in pids
        # one scene, two environments: both get every episode
        assert envs.count_episodes() == [4, 4]
        obs = envs.reset()
        assert {"rgb", "depth", "mosnav_goal_text", "mosnav_target_mode", "gps", "compass"} <= set(
            obs[0]
        )
        assert "objectgoal" not in obs[0]  # description goals: text only (gym.obs_keys)
        # 5 steps of TURN_LEFT reach max_episode_steps: the last info has the payload
        for step in range(5):
            outs = envs.step([2, 2])
        for _obs, _reward, done, info in outs:
            assert done
            payload = episode_payload(info)
            assert payload["episode_key"] in KEYS
            assert payload["steps_taken"] == 5 and payload["terminated_by"] == "max_steps"
            assert payload["metrics"]["trajectory_length"] == 0.0
            assert payload["episode"]["max_steps"] == 5
            assert isinstance(info[EPISODE_INFO_KEY], str)  # skipped by scalar extraction
    finally:
        envs.close()


def test_eval_envs_shard_sorted_episodes_without_repeats(open_room):
    cfg = config(open_room, "habitat_baselines.test_episode_count=3")
    envs = MosNavVectorEnvFactory().construct_envs(cfg, enforce_scenes_greater_eq_environments=True)
    try:
        assert envs.num_envs == 2
        shards = [[e.episode_key for e in envs.call_at(i, "episodes")] for i in range(2)]
        # the first 3 keys in sorted order, dealt round-robin
        assert shards == [[KEYS[0], KEYS[2]], [KEYS[1]]]
    finally:
        envs.close()
