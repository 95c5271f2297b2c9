"""The worker side of the mosnav vector environments (no habitat-baselines import).

habitat-baselines starts its ``VectorEnv`` workers with ``forkserver``: each worker is a
fresh interpreter that unpickles ``make_env_fn`` by module path. :func:`make_mosnav_env`
lives here, so unpickling it imports ``habitat_mosnav`` (registering the plugin) in the
worker, and nothing heavier: this module does not import habitat-baselines.

Each worker's env is wrapped in :class:`MosNavEpisodeInfo`, which, when an episode ends,
adds the per-episode record data (SPEC §4 metrics, claim events, end reason, poses; a
``sequential`` episode's GOAT-Bench scalars and per-subtask lists, SPEC §11) to
``info`` as a JSON string (habitat-baselines' scalar extraction skips strings).
The factory that starts the workers is :mod:`habitat_mosnav.baselines.factory`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gym

import habitat_mosnav  # noqa: F401  (must precede habitat)
from habitat import make_dataset  # importing habitat registers the plugin in this process

from habitat_mosnav.evaluation.records import to_jsonable

#: ``info`` key of the per-episode payload (a JSON string), present on the final step only.
EPISODE_INFO_KEY = "mosnav_episode"


def _habitat_env(env):
    """The ``habitat.Env`` inside a gym wrapper stack (HabGymWrapper → RLTaskEnv → Env)."""
    inner = env
    for _ in range(8):
        if hasattr(inner, "habitat_env"):
            return inner.habitat_env
        if not hasattr(inner, "env"):
            break
        inner = inner.env
    return None


def _pose(habitat_env) -> Optional[Dict[str, List[float]]]:
    from habitat_mosnav.pose import agent_pose

    try:
        return agent_pose(habitat_env)
    except Exception:  # a pose is informative only; never fail an episode for it
        return None


class MosNavEpisodeInfo(gym.Wrapper):
    """Adds ``info["mosnav_episode"]`` (JSON) on the step that ends an episode.

    The VectorEnv worker resets the env right after a final step, so the episode's task
    state must be read here, before that reset.
    """

    def __init__(self, env):
        super().__init__(env)
        self._initial: Optional[Dict[str, Any]] = None
        self._actions: List[int] = []  # this episode's action ids, for the record's replay block

    @property
    def process_id(self) -> int:
        """The worker's pid (``envs.call_at(i, "process_id")``)."""
        return os.getpid()

    def reset(self, **kwargs):
        obs = self.env.reset(**kwargs)
        henv = _habitat_env(self.env)
        self._initial = None
        self._actions = []
        if henv is not None:
            from habitat_mosnav.evaluation.records import scalar_metrics

            self._initial = {
                "agent_state": _pose(henv),
                "metrics": scalar_metrics(henv.get_metrics()),
            }
        return obs

    def step(self, action):
        self._actions.append(_action_id(action))
        obs, reward, done, info = self.env.step(action)
        if done:
            henv = _habitat_env(self.env)
            if henv is not None:
                info = dict(info)
                info[EPISODE_INFO_KEY] = json.dumps(self._payload(henv), allow_nan=False)
        return obs, reward, done, info

    def _payload(self, henv) -> Dict[str, Any]:
        from habitat_mosnav.evaluation.rollout import episode_metrics_record, terminated_by

        episode = henv.current_episode
        state = getattr(henv.task, "mos_state", None)
        max_steps = int(henv._max_episode_steps) if hasattr(henv, "_max_episode_steps") else 0
        steps = int(getattr(state, "step", 0) or 0)
        summary = (
            episode.summary()
            if hasattr(episode, "summary")
            else {"scene_id": getattr(episode, "scene_id", None), "episode_id": episode.episode_id}
        )
        summary["max_steps"] = max_steps
        events = list(getattr(state, "events", []) or [])
        # sequential (SPEC §11): the per-subtask lists, the record's ``subtask_metrics``
        per_subtask = getattr(state, "subtask_metrics", None)
        initial = self._initial or {}
        from habitat_mosnav.evaluation.replay_data import motion_settings, replay_block

        replay = replay_block(
            self._actions,
            "goat",
            initial.get("agent_state"),
            motion_settings(henv, getattr(henv, "_config", None)),
        )
        return to_jsonable(
            {
                "episode_key": getattr(episode, "episode_key", ""),
                "episode": summary,
                "steps_taken": steps,
                "terminated_by": terminated_by(state),
                "metrics": episode_metrics_record(henv),
                "initial_metrics": initial.get("metrics", {}),
                "report_events": events,
                "initial_agent_state": initial.get("agent_state"),
                "final_agent_state": _pose(henv),
                "replay": replay,
                "subtask_metrics": per_subtask() if callable(per_subtask) else None,
            },
            "mosnav_episode",
        )


def _action_id(action) -> int:
    """The task action index a policy sent (an int, a 0-d/1-element array or habitat's
    ``{"action": ...}``): under the goat protocol it is the agent's action id."""
    if isinstance(action, dict):
        action = action.get("action")
    try:
        import numpy as np

        return int(np.asarray(action).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return int(action)


def make_mosnav_env(config, episode_keys: Optional[Sequence[str]] = None):
    """``make_env_fn`` of the VectorEnv workers (runs in the worker process).

    Importing this module has registered the plugin. ``episode_keys``, when given, keeps
    only those episodes (evaluation sharding), in sorted key order.
    """
    from habitat.gym import make_gym_from_config

    dataset = None
    if episode_keys is not None:
        dataset = make_dataset(config.habitat.dataset.type, config=config.habitat.dataset)
        wanted = set(episode_keys)
        dataset.episodes = sorted(
            (e for e in dataset.episodes if e.episode_key in wanted), key=lambda e: e.episode_key
        )
        missing = wanted - {e.episode_key for e in dataset.episodes}
        if missing:
            raise RuntimeError(
                f"habitat.dataset: episodes {sorted(missing)[:3]} not found "
                f"in {config.habitat.dataset.data_path}"
            )
    return MosNavEpisodeInfo(make_gym_from_config(config, dataset=dataset))


def scene_and_episode_keys(config) -> Tuple[List[str], List[Tuple[str, str]]]:
    """(scene names, [(episode_key, scene name)]) of the configured dataset."""
    dataset = make_dataset(config.habitat.dataset.type, config=config.habitat.dataset)
    pairs = [
        (
            getattr(e, "episode_key", "") or f"{e.scene_id}::{e.episode_id}",
            getattr(e, "scene_name", "") or dataset.scene_from_scene_path(e.scene_id),
        )
        for e in dataset.episodes
    ]
    scenes = sorted({scene for _, scene in pairs})
    return scenes, pairs


def episode_payload(info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The decoded ``info["mosnav_episode"]`` of a final step, or None."""
    raw = info.get(EPISODE_INFO_KEY) if isinstance(info, dict) else None
    if not raw:
        return None
    return json.loads(raw)
