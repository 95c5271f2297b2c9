"""Lab sensors of MultiObjectNav-v1.

Text does not fit habitat's numeric observation spaces (``batch_obs`` cannot batch strings),
so the goal text travels as fixed-length UTF-8 bytes; ``decode_goal_text`` turns it back.
None of them tells the agent how many targets remain (SPEC §1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gym import spaces
from habitat.core.registry import registry
from habitat.core.simulator import Sensor, SensorTypes

from habitat_mosnav.api import TARGET_MODES


def encode_goal_text(text: str, max_length: int) -> np.ndarray:
    """UTF-8 bytes of ``text`` zero-padded to ``max_length`` (cut at a character boundary)."""
    data = text.encode("utf-8")[:max_length]
    data = data.decode("utf-8", errors="ignore").encode("utf-8")
    out = np.zeros((max_length,), dtype=np.uint8)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def decode_goal_text(observation: np.ndarray) -> str:
    """Inverse of :func:`encode_goal_text` (accepts any array-like of byte values)."""
    data = np.asarray(observation).astype(np.uint8).reshape(-1).tobytes()
    return data.split(b"\x00", 1)[0].decode("utf-8", errors="replace")


class _MosSensor(Sensor):
    cls_uuid: str = ""
    sensor_type: SensorTypes = SensorTypes.TENSOR

    def __init__(self, sim, config, dataset=None, *args: Any, **kwargs: Any):
        self._sim = sim
        self._dataset = dataset
        super().__init__(config=config)

    def _get_uuid(self, *args: Any, **kwargs: Any) -> str:
        return self.cls_uuid

    def _get_sensor_type(self, *args: Any, **kwargs: Any):
        return type(self).sensor_type


@registry.register_sensor
class MosNavGoalTextSensor(_MosSensor):
    """``mosnav_goal_text``: the instruction (description) or category name (object)."""

    cls_uuid = "mosnav_goal_text"
    sensor_type = SensorTypes.TEXT

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return spaces.Box(low=0, high=255, shape=(self.config.max_length,), dtype=np.uint8)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        return encode_goal_text(episode.goal_text, self.config.max_length)


@registry.register_sensor
class MosNavObjectGoalSensor(_MosSensor):
    """uuid ``objectgoal``: the goal category's index in the dataset's category list."""

    cls_uuid = "objectgoal"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        n = max(1, len(getattr(self._dataset, "categories", []) or []))
        return spaces.Box(low=0, high=n - 1, shape=(1,), dtype=np.int64)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        return np.array([self._dataset.category_index(episode.object_category)], dtype=np.int64)


@registry.register_sensor
class MosNavTargetModeSensor(_MosSensor):
    """``mosnav_target_mode``: one-hot over (single, any, many, all)."""

    cls_uuid = "mosnav_target_mode"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return spaces.Box(low=0.0, high=1.0, shape=(len(TARGET_MODES),), dtype=np.float32)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        out = np.zeros((len(TARGET_MODES),), dtype=np.float32)
        out[TARGET_MODES.index(episode.target_mode)] = 1.0
        return out


@registry.register_sensor
class MosNavTargetCountSensor(_MosSensor):
    """``mosnav_target_count``: the required count N in ``many``; 0 otherwise (in ``all``
    the number of instances is for the agent to find out)."""

    cls_uuid = "mosnav_target_count"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        # Finite bounds (config max_count): gym's checker and policies that normalise by the
        # space's bounds need them.
        return spaces.Box(low=0.0, high=float(self.config.max_count), shape=(1,), dtype=np.float32)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        count = episode.target_count if episode.target_mode == "many" else 0
        if (count or 0) > self.config.max_count:
            raise ValueError(
                f"episode {episode.episode_id!r}: target_count {count} exceeds the "
                f"mosnav_target_count sensor's max_count {self.config.max_count} "
                "(habitat.task.lab_sensors.mosnav_target_count.max_count)"
            )
        return np.array([float(count or 0)], dtype=np.float32)
