"""``habitat_mosnav.get_config``: compose a mosnav YAML from any working directory.

Like ``habitat_baselines.config.default.get_config``: registers the search-path plugins and
passes this package's config directory as ``configs_dir``, so
``get_config("benchmark/nav/mosnav/mos_demo.yaml")`` works wherever Python runs.
"""

from __future__ import annotations

import os.path as osp
from typing import List, Optional

from habitat.config.default import get_config as _habitat_get_config
from habitat.config.default_structured_configs import register_hydra_plugin
from omegaconf import DictConfig, OmegaConf

from habitat_mosnav.config.default_structured_configs import MosNavConfigPlugin

MOSNAV_CONFIG_DIR = osp.dirname(osp.abspath(__file__))
PACKAGE_DIR = osp.dirname(MOSNAV_CONFIG_DIR)


def package_path(relative: str) -> str:
    """Absolute path of a file shipped inside the package (resolver ``mosnav_pkg``)."""
    return osp.join(PACKAGE_DIR, relative)


def config_path(relative: str) -> str:
    """Absolute path of a shipped config (``"benchmark/nav/mosnav/mos_demo.yaml"``), for
    habitat tools that take a file path and compose it themselves (``habitat.Benchmark``)."""
    path = osp.join(MOSNAV_CONFIG_DIR, relative)
    if not osp.isfile(path):
        raise FileNotFoundError(f"config_path: no config {relative!r} in {MOSNAV_CONFIG_DIR}")
    return path


def register_configs() -> None:
    """Register the YAML search path and the ``${mosnav_pkg:...}`` and
    ``${mosnav_gpu_device:}`` resolvers (idempotent)."""
    register_hydra_plugin(MosNavConfigPlugin)
    if not OmegaConf.has_resolver("mosnav_pkg"):
        OmegaConf.register_new_resolver("mosnav_pkg", package_path)
    if not OmegaConf.has_resolver("mosnav_gpu_device"):
        from habitat_mosnav.config.simulator import default_gpu_device_id

        OmegaConf.register_new_resolver("mosnav_gpu_device", default_gpu_device_id)


def get_config(
    config_path: str, overrides: Optional[List[str]] = None, configs_dir: str = MOSNAV_CONFIG_DIR
) -> DictConfig:
    """Compose ``config_path`` (absolute, cwd-relative, or relative to this package's
    config directory) with Hydra ``overrides`` such as ``["habitat.seed=1"]``."""
    register_configs()
    cfg = _habitat_get_config(config_path, overrides, configs_dir)
    return with_goal_image_sensor(cfg)


def with_goal_image_sensor(cfg: DictConfig) -> DictConfig:
    """Goal type ``image`` (and ``sequential`` episodes, whose subtasks may be image goals)
    needs the ``mosnav_goal_image`` lab sensor: added (with its defaults) when the config
    lacks it, so every entry point (``mosnav-eval``, a benchmark
    setting, training) gets it; other goal types are left as they are (the sensor would
    change a policy's inputs)."""
    from habitat.config import read_write

    from habitat_mosnav.config.default_structured_configs import GoalImageSensorConfig

    hab = cfg.get("habitat") if "habitat" in cfg else None
    if hab is None or "dataset" not in hab:
        return cfg
    if hab.dataset.get("goal_type") != "image":
        # A sequential episode (SPEC §11) may have image subtasks whatever the goal type:
        # the sensor is added there too, where the agent has an RGB camera to size it.
        from habitat_mosnav.api import SEQUENTIAL
        from habitat_mosnav.sensors.sensors import agent_rgb_camera

        modes = list(hab.dataset.get("target_modes") or [])
        if SEQUENTIAL not in modes or agent_rgb_camera(hab.simulator) is None:
            return cfg
    if "mosnav_goal_image" in hab.task.lab_sensors:
        return cfg
    with read_write(cfg):
        hab.task.lab_sensors["mosnav_goal_image"] = OmegaConf.structured(GoalImageSensorConfig)
    return cfg
