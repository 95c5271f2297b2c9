"""Habitat sensors of the CPU simulator: uuids ``rgb``, ``depth``, ``semantic`` as HabitatSim.

They read habitat's own sensor configs (``HabitatSimRGBSensorConfig`` & co.); the renderer
fills ``sim_obs[uuid]`` and these classes turn it into the observation, with habitat-sim's
dtypes, shapes and depth clipping/normalisation.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
from gym import spaces

from habitat.core.registry import registry
from habitat.core.simulator import DepthSensor, RGBSensor, SemanticSensor


class MosNavVisualSensor:
    """Marker: a camera the renderer must draw; ``kind`` in {rgb, depth, semantic}."""

    kind: str = ""


def _get(sim_obs: Dict[str, Any], sensor) -> np.ndarray:
    obs = sim_obs.get(sensor.uuid)
    if obs is None:
        raise RuntimeError(f"MosNavMeshSim-v0 produced no observation for sensor '{sensor.uuid}'")
    return obs


@registry.register_sensor(name="MosNavRGBSensor")
class MosNavRGBSensor(RGBSensor, MosNavVisualSensor):
    kind = "rgb"

    def __init__(self, config) -> None:
        super().__init__(config=config)

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return spaces.Box(
            low=0, high=255, shape=(self.config.height, self.config.width, 3), dtype=np.uint8
        )

    def get_observation(self, sim_obs, *args: Any, **kwargs: Any):
        return _get(sim_obs, self)


@registry.register_sensor(name="MosNavDepthSensor")
class MosNavDepthSensor(DepthSensor, MosNavVisualSensor):
    kind = "depth"

    def __init__(self, config) -> None:
        self.min_depth_value = float(config.min_depth)
        self.max_depth_value = float(config.max_depth)
        self.normalize_depth = bool(config.normalize_depth)
        super().__init__(config=config)

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        shape = (self.config.height, self.config.width, 1)
        if self.normalize_depth:
            return spaces.Box(low=0, high=1, shape=shape, dtype=np.float32)
        return spaces.Box(
            low=self.min_depth_value, high=self.max_depth_value, shape=shape, dtype=np.float32
        )

    def get_observation(self, sim_obs, *args: Any, **kwargs: Any):
        obs = np.clip(_get(sim_obs, self), self.min_depth_value, self.max_depth_value)
        obs = obs.reshape(obs.shape[0], obs.shape[1], 1).astype(np.float32, copy=False)
        if self.normalize_depth:
            obs = (obs - self.min_depth_value) / (self.max_depth_value - self.min_depth_value)
        return obs


@registry.register_sensor(name="MosNavSemanticSensor")
class MosNavSemanticSensor(SemanticSensor, MosNavVisualSensor):
    kind = "semantic"

    def __init__(self, config) -> None:
        super().__init__(config=config)

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        # habitat's HabitatSimSemanticSensor uses uint32 bounds, which wrap to -1 in int32
        return spaces.Box(
            low=0,
            high=np.iinfo(np.int32).max,
            shape=(self.config.height, self.config.width, 1),
            dtype=np.int32,
        )

    def get_observation(self, sim_obs, *args: Any, **kwargs: Any):
        obs = _get(sim_obs, self)
        return obs.reshape(obs.shape[0], obs.shape[1], 1).astype(np.int32, copy=False)


#: habitat sensor config ``type`` -> sensor class of this backend
SENSOR_TYPES = {
    "HabitatSimRGBSensor": MosNavRGBSensor,
    "HabitatSimDepthSensor": MosNavDepthSensor,
    "HabitatSimSemanticSensor": MosNavSemanticSensor,
    "MosNavRGBSensor": MosNavRGBSensor,
    "MosNavDepthSensor": MosNavDepthSensor,
    "MosNavSemanticSensor": MosNavSemanticSensor,
}
