"""Habitat's observation dict -> the agent's :class:`~habitat_mosnav.api.Observation`
(SPEC §7): goal text, depth in metres, gps/compass in the episode-start frame, task prompt.

Imports neither habitat nor torch.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from habitat_mosnav.api import SEQUENTIAL, Observation
from habitat_mosnav.keys import episode_scene_name
from habitat_mosnav.pose import start_frame_pose, wrap_angle
from habitat_mosnav.prompts import build_task_prompt

__all__ = ["ObservationBuilder"]


def _decode_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        from habitat_mosnav.sensors import decode_goal_text  # the plugin's own decoder

        return str(decode_goal_text(value))
    except ImportError:
        arr = np.asarray(value, dtype=np.uint8).reshape(-1)
        return bytes(arr).split(b"\x00", 1)[0].decode("utf-8", errors="replace")


def depth_normalization(depth_cfg) -> Optional[Tuple[float, float]]:
    """``(min_depth, max_depth)`` of a depth sensor that normalises to [0, 1], else None
    (its depth is already in metres)."""
    if depth_cfg is None or not bool(_cfg_get(depth_cfg, "normalize_depth", False)):
        return None
    return float(_cfg_get(depth_cfg, "min_depth", 0.0)), float(
        _cfg_get(depth_cfg, "max_depth", 10.0)
    )


def depth_limits(depth_cfg) -> Tuple[float, float]:
    """The depth sensor's ``(min_depth, max_depth)`` in metres (habitat's defaults 0 and
    10 without a config): the range of the video's depth colour scale."""
    return float(_cfg_get(depth_cfg, "min_depth", 0.0)), float(
        _cfg_get(depth_cfg, "max_depth", 10.0)
    )


def depth_in_metres(
    depth: Optional[np.ndarray], depth_range: Optional[Tuple[float, float]]
) -> Optional[np.ndarray]:
    """Habitat depth (H, W, 1), normalised to [0, 1] over ``depth_range`` (see
    :func:`depth_normalization`) or already in metres (None), as (H, W) metres."""
    if depth is None:
        return None
    d = np.asarray(depth, dtype=np.float32)
    if d.ndim == 3 and d.shape[-1] == 1:
        d = d[..., 0]
    if depth_range is not None:
        lo, hi = depth_range
        d = lo + d * (hi - lo)
    return d


def _cfg_get(node, key, default=None):
    if node is None:
        return default
    try:
        value = node.get(key, default) if hasattr(node, "get") else getattr(node, key, default)
    except Exception:
        return default
    return default if value is None else value


def _gps_compass(obs: Mapping[str, Any], pose: Mapping[str, Any], episode):
    """``Observation.gps`` / ``compass``: habitat's own ``EpisodicGPSSensor`` (``[-z, x]``,
    reordered to ``[x, z]``) and ``EpisodicCompassSensor`` when the task has them (the
    MultiObjectNav-v1 task does), else the same values computed from the agent's pose."""
    if "gps" in obs and "compass" in obs:
        g = np.asarray(obs["gps"], dtype=np.float32).reshape(-1)
        if g.size == 2:
            compass = float(np.asarray(obs["compass"], dtype=np.float64).reshape(-1)[0])
            return np.array([g[1], -g[0]], dtype=np.float32), wrap_angle(compass)
    return start_frame_pose(
        pose["position"], pose["rotation"], episode.start_position, episode.start_rotation
    )


def goal_image(obs: Mapping[str, Any], goal_type: str) -> Optional[np.ndarray]:
    """``Observation.goal_image``: the ``mosnav_goal_image`` sensor's picture for an image
    goal (a read-only view: the sensor repeats it every step); None otherwise."""
    if goal_type != "image":
        return None
    img = obs.get("mosnav_goal_image")
    if img is None:
        raise RuntimeError(
            "goal type image without the mosnav_goal_image sensor in the observations "
            "(habitat.task.lab_sensors.mosnav_goal_image; habitat_mosnav.get_config adds it "
            "for goal type image, and for sequential episodes when the agent has an RGB "
            "camera)"
        )
    out = np.asarray(img)
    if out.flags.writeable:
        out = out.view()
        out.flags.writeable = False
    return out


def current_subtask(episode, env=None):
    """``(index, SubtaskGoal)`` of a ``sequential`` episode's current subtask (SPEC §11),
    read from the task's state (``env.task.mos_state``; the first subtask before it
    exists); None in the other modes."""
    if str(getattr(episode, "target_mode", "")) != SEQUENTIAL or not episode.subtasks:
        return None
    state = getattr(getattr(env, "task", None), "mos_state", None)
    if state is None or getattr(state, "episode", None) is not episode:
        return 0, episode.subtasks[0]
    index = min(int(state.subtask_index), len(episode.subtasks) - 1)
    return index, episode.subtasks[index]


class ObservationBuilder:
    """Builds the agent's :class:`Observation` from Habitat's observation dict.

    ``protocol`` only changes the action table in ``task_prompt``; ``depth_cfg`` is the
    habitat depth sensor config (to report depth in metres).
    """

    def __init__(
        self,
        max_steps: int,
        protocol: str = "goat",
        depth_cfg=None,
        extras_fn: Optional[Callable[[Any, Any], Optional[dict]]] = None,
    ) -> None:
        self.max_steps = int(max_steps)
        self.protocol = protocol
        self.depth_cfg = depth_cfg
        self._depth_range = depth_normalization(depth_cfg)  # read once, not at every step
        self.extras_fn = extras_fn
        self._prompt_cache: Dict[Any, str] = {}

    def goal_text(self, obs: Mapping[str, Any], episode, goal=None) -> str:
        """The goal sensor's text (the current subtask's in a sequential episode), else
        ``goal``'s (a subtask) or the episode's ``goal_text``."""
        text = _decode_text(obs.get("mosnav_goal_text")) if "mosnav_goal_text" in obs else ""
        return text or str(getattr(goal or episode, "goal_text", "") or "")

    def task_prompt(
        self, episode, goal_text: str, goal_type: Optional[str] = None, subtask=None
    ) -> str:
        """The prompt of the episode (of its current subtask: ``subtask`` = ``(index,
        count)``, ``goal_type`` the subtask's)."""
        mode = str(getattr(episode, "target_mode", "single"))
        count = getattr(episode, "target_count", None) if mode == "many" else None
        if goal_type is None:
            goal_type = str(getattr(episode, "goal_type", "description") or "description")
        index, total = subtask if subtask is not None else (None, None)
        key = (goal_text, goal_type, mode, count, index, total)
        if key not in self._prompt_cache:
            self._prompt_cache[key] = build_task_prompt(
                goal_text,
                goal_type,
                mode,
                count,
                self.max_steps,
                self.protocol,
                subtask_index=index,
                subtask_count=total,
            )
        return self._prompt_cache[key]

    def build(
        self,
        obs: Mapping[str, Any],
        episode,
        pose: Mapping[str, Any],
        step_count: int,
        previous_action: Optional[int],
        env=None,
    ) -> Observation:
        mode = str(getattr(episode, "target_mode", "single"))
        goal_type = str(getattr(episode, "goal_type", "description") or "description")
        sub = current_subtask(episode, env)
        goal = None
        index = count = None
        if sub is not None:  # sequential: the current subtask's goal (SPEC §11)
            index, goal = sub
            count = len(episode.subtasks)
            goal_type = str(goal.goal_type)
        goal_text = self.goal_text(obs, episode, goal)
        rgb = obs.get("rgb")
        if rgb is not None:
            rgb = np.asarray(rgb)
            if rgb.ndim == 3 and rgb.shape[-1] == 4:
                rgb = rgb[..., :3]
        gps, compass = _gps_compass(obs, pose, episode)
        extras = {
            "episode_key": getattr(episode, "episode_key", ""),
            "query_id": getattr(goal or episode, "query_id", ""),
            "depth_units": "metres",
        }
        if self.extras_fn is not None:
            extras.update(self.extras_fn(env, episode) or {})
        return Observation(
            rgb=rgb,
            depth=depth_in_metres(obs.get("depth"), self._depth_range),
            goal_text=goal_text,
            goal_embedding=None,
            goal_image=goal_image(obs, goal_type),
            goal_type=goal_type,
            subtask_type=goal_type,
            target_mode=mode,
            target_count=int(episode.target_count) if mode == "many" else None,
            episode_id=str(episode.episode_id),
            scene_id=episode_scene_name(episode),
            step_count=int(step_count),
            gps=gps,
            compass=compass,
            max_steps=self.max_steps,
            task_prompt=self.task_prompt(
                episode, goal_text, goal_type, None if sub is None else (index, count)
            ),
            previous_action=previous_action,
            extras=extras,
            subtask_index=index,
            subtask_count=count,
        )
