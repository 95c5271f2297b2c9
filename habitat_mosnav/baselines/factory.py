"""``MosNavVectorEnvFactory``: ``habitat_baselines.vector_env_factory._target_`` for mosnav.

The stock ``HabitatVectorEnvFactory`` hands ``habitat.gym.make_gym_from_config`` to its
forkserver workers, which therefore never import the plugin. This factory passes
:func:`habitat_mosnav.baselines.envs.make_mosnav_env` instead, and

* for training splits the scenes over the environments (every environment gets all scenes,
  each with its own seed, when there are fewer scenes than environments);
* for evaluation keeps ``num_environments`` and shards the *episodes* — sorted by episode
  key, the first ``test_episode_count`` of them (−1: all) — over the environments, so a
  one-scene dataset is still evaluated in parallel and no episode runs twice (the stock
  factory cuts the environments to the number of scenes). Episodes are visited in key
  order (no shuffling) so an evaluation is reproducible.
"""

from __future__ import annotations

import os
import random
from typing import List, Optional

from habitat import ThreadedVectorEnv, VectorEnv, logger
from habitat.config import read_write
from habitat_baselines.common.env_factory import VectorEnvFactory

from habitat_mosnav.baselines.envs import make_mosnav_env, scene_and_episode_keys
from habitat_mosnav.evaluation.selection import select_episodes


class MosNavVectorEnvFactory(VectorEnvFactory):
    """``habitat_baselines.vector_env_factory._target_`` for the mosnav plugin."""

    def construct_envs(
        self,
        config,
        workers_ignore_signals: bool = False,
        enforce_scenes_greater_eq_environments: bool = False,
        is_first_rank: bool = True,
    ) -> VectorEnv:
        num_envs = int(config.habitat_baselines.num_environments)
        if num_envs < 1:
            raise RuntimeError(f"habitat_baselines.num_environments must be >= 1, got {num_envs}")
        evaluating = bool(enforce_scenes_greater_eq_environments)
        scenes, pairs = scene_and_episode_keys(config)
        if not pairs:
            raise RuntimeError(
                f"habitat.dataset: no episodes to load from {config.habitat.dataset.data_path} "
                f"(split {config.habitat.dataset.split!r}, target_modes "
                f"{list(config.habitat.dataset.target_modes)}, content_scenes "
                f"{list(config.habitat.dataset.content_scenes)})"
            )

        shards: List[Optional[List[str]]]
        scene_splits: List[List[str]]
        if evaluating:
            limit = int(config.habitat_baselines.test_episode_count)
            chosen = [
                key
                for _, key in select_episodes([k for k, _ in pairs], 0, limit if limit >= 0 else -1)
            ]
            if not chosen:
                raise RuntimeError("habitat_baselines.test_episode_count=0: no episode to evaluate")
            num_envs = min(num_envs, len(chosen))
            shards = [chosen[i::num_envs] for i in range(num_envs)]
            scene_of = dict(pairs)
            scene_splits = [sorted({scene_of[k] for k in shard}) for shard in shards]
        else:
            shards = [None] * num_envs
            if len(scenes) >= num_envs:
                order = list(scenes)
                random.Random(int(config.habitat.seed)).shuffle(order)
                scene_splits = [sorted(order[i::num_envs]) for i in range(num_envs)]
            else:
                logger.warn(
                    f"{len(scenes)} scene(s) for {num_envs} environments: every "
                    "environment uses all scenes (with its own seed)"
                )
                scene_splits = [list(scenes) for _ in range(num_envs)]

        rank0_only = list(config.habitat.task.rank0_measure_names)
        rank0_env0_only = list(config.habitat.task.rank0_env0_measure_names)
        env_args = []
        for index in range(num_envs):
            proc_config = config.copy()
            with read_write(proc_config):
                task_config = proc_config.habitat
                task_config.seed = task_config.seed + index
                drop = set()
                if not is_first_rank:
                    drop.update(rank0_only)
                if index != 0 or not is_first_rank:
                    drop.update(rank0_env0_only)
                task_config.task.measurements = {
                    k: v for k, v in task_config.task.measurements.items() if k not in drop
                }
                task_config.dataset.content_scenes = scene_splits[index]
                if evaluating:
                    task_config.environment.iterator_options.shuffle = False
            env_args.append((proc_config, shards[index]))

        if int(os.environ.get("HABITAT_ENV_DEBUG", 0)):
            logger.warn("HABITAT_ENV_DEBUG=1: in-process ThreadedVectorEnv (debugging only)")
            vector_env_cls = ThreadedVectorEnv
        else:
            vector_env_cls = VectorEnv
        envs = vector_env_cls(
            make_env_fn=make_mosnav_env,
            env_fn_args=tuple(env_args),
            workers_ignore_signals=workers_ignore_signals,
        )
        if config.habitat.simulator.renderer.enable_batch_renderer:
            envs.initialize_batch_renderer(config)
        return envs


from habitat_mosnav.baselines.non_scalar import mark_non_scalar_measures  # noqa: E402

mark_non_scalar_measures()
