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
    """A camera the renderer must draw (``kind`` in {rgb, depth, semantic}); before habitat's
    sensor class in the bases, so that the config may come positionally, as habitat passes it,
    and the renderer's image is the observation unless the class says otherwise."""

    kind: str = ""

    def __init__(self, config) -> None:
        super().__init__(config=config)

    def _image_space(self, low, high, channels: int, dtype) -> spaces.Box:
        return spaces.Box(
            low=low, high=high, shape=(self.config.height, self.config.width, channels), dtype=dtype
        )

    def get_observation(self, sim_obs: Dict[str, Any], *args: Any, **kwargs: Any) -> np.ndarray:
        obs = sim_obs.get(self.uuid)
        if obs is None:
            raise RuntimeError(f"MosNavMeshSim-v0 produced no observation for sensor '{self.uuid}'")
        return obs


@registry.register_sensor(name="MosNavRGBSensor")
class MosNavRGBSensor(MosNavVisualSensor, RGBSensor):
    kind = "rgb"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return self._image_space(0, 255, 3, np.uint8)


@registry.register_sensor(name="MosNavDepthSensor")
class MosNavDepthSensor(MosNavVisualSensor, DepthSensor):
    kind = "depth"

    def __init__(self, config) -> None:
        self.min_depth_value = float(config.min_depth)
        self.max_depth_value = float(config.max_depth)
        self.normalize_depth = bool(config.normalize_depth)
        super().__init__(config)

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        if self.normalize_depth:
            return self._image_space(0, 1, 1, np.float32)
        return self._image_space(self.min_depth_value, self.max_depth_value, 1, np.float32)

    def get_observation(self, sim_obs, *args: Any, **kwargs: Any):
        obs = np.clip(super().get_observation(sim_obs), self.min_depth_value, self.max_depth_value)
        obs = obs.reshape(obs.shape[0], obs.shape[1], 1).astype(np.float32, copy=False)
        if self.normalize_depth:
            obs = (obs - self.min_depth_value) / (self.max_depth_value - self.min_depth_value)
        return obs


@registry.register_sensor(name="MosNavSemanticSensor")
class MosNavSemanticSensor(MosNavVisualSensor, SemanticSensor):
    kind = "semantic"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        # habitat's HabitatSimSemanticSensor uses uint32 bounds, which wrap to -1 in int32
        return self._image_space(0, np.iinfo(np.int32).max, 1, np.int32)

    def get_observation(self, sim_obs, *args: Any, **kwargs: Any):
        obs = super().get_observation(sim_obs)
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
