"""Structured configs of habitat_mosnav, stored in Hydra's ConfigStore.

Modelled on ``habitat_baselines/config/default_structured_configs.py``: one dataclass per
registered entity, stored under the groups that habitat's own ``TaskConfig`` and
``HabitatConfig`` type-check against (``habitat/task/measurements``, ``habitat/task/
lab_sensors``, ``habitat/task/actions``, ``habitat/dataset``, ``habitat/simulator``), plus a
``SearchPathPlugin`` so that YAML ``defaults:`` lists find ``pkg://habitat_mosnav/config``.
Every plugin-specific option starts with ``mosnav_`` where it sits inside a habitat node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

from habitat.config.default_structured_configs import (
    ActionConfig,
    DatasetConfig,
    LabSensorConfig,
    MeasurementConfig,
    TaskConfig,
)
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import II

from habitat_mosnav.config.simulator import MosNavMeshOptions, MosNavMeshSimConfig
from habitat_mosnav.metrics.measure_table import MEASURES
from habitat_mosnav.metrics.legs import SUCCESS_DISTANCE

__all__ = [
    "MultiObjectNavDatasetConfig",
    "MultiObjectNavTaskConfig",
    "MosNavConfigPlugin",
    "MosNavMeshOptions",
    "MosNavMeshSimConfig",
]


# ----------------------------------------------------------------------------- dataset
@dataclass
class MultiObjectNavDatasetConfig(DatasetConfig):
    """``data_path`` is the ``dataset_semantic`` directory (``{split}`` is substituted);
    ``scenes_dir`` holds ``<NNNNN-id>/<id>[.basis].glb``."""

    type: str = "MultiObjectNav-v1"
    split: str = "val"
    data_path: str = "${mosnav_pkg:data/demo/dataset_semantic}"
    scenes_dir: str = "${mosnav_pkg:data/demo/scenes}"
    #: ``description`` (natural-language instruction), ``object`` (category name,
    #: pure-category queries only) or ``image`` (a picture of one matching instance, from
    #: each query's ``image_goal``; ``get_config`` then adds the ``mosnav_goal_image``
    #: sensor).
    goal_type: str = "description"
    #: Keep only these target modes (empty = all of single, any, many, all).
    target_modes: List[str] = field(default_factory=list)
    #: habitat-sim scene dataset config put into every episode (``habitat.Env`` copies the
    #: episode's value over ``habitat.simulator.scene_dataset``); HM3D:
    #: ``hm3d_annotated_basis.scene_dataset_config.json``, so semantics load.
    scene_dataset_config: str = "default"


# ----------------------------------------------------------------------------- task
@dataclass
class MultiObjectNavTaskConfig(TaskConfig):
    type: str = "MultiObjectNav-v1"
    #: A target is near when the geodesic distance to its nearest view point is <= this
    #: (SPEC §3; GOAT-Bench's Habitat setting).
    mosnav_success_distance: float = SUCCESS_DISTANCE
    #: Space oracle: navigable samples on the start's island (0 disables it) and the
    #: radius within which the agent explores a sample.
    mosnav_space_coverage_samples: int = 200
    mosnav_space_coverage_radius: float = 1.5
    #: The episode step limit T used by OER (follows the environment's limit).
    mosnav_max_steps: int = II("habitat.environment.max_episode_steps")
    goal_sensor_uuid: str = "mosnav_goal_text"


# ----------------------------------------------------------------------------- actions
@dataclass
class TargetFoundActionConfig(ActionConfig):
    """Claim one matching target near the agent (SPEC §3); id 6 after look_down."""

    type: str = "TargetFoundAction"


# ----------------------------------------------------------------------------- sensors
@dataclass
class GoalTextSensorConfig(LabSensorConfig):
    """The goal text as fixed-length UTF-8 bytes (zero padded); see ``decode_goal_text``."""

    type: str = "MosNavGoalTextSensor"
    max_length: int = 256


@dataclass
class MosNavObjectGoalSensorConfig(LabSensorConfig):
    """uuid ``objectgoal``: index of the goal category in the dataset's category list,
    so habitat-baselines' PointNavResNetPolicy object-goal embedding works unchanged."""

    type: str = "MosNavObjectGoalSensor"


@dataclass
class TargetModeSensorConfig(LabSensorConfig):
    type: str = "MosNavTargetModeSensor"


@dataclass
class TargetCountSensorConfig(LabSensorConfig):
    """``max_count``: the observation space's upper bound (an episode asking for more
    targets is an error)."""

    type: str = "MosNavTargetCountSensor"
    max_count: int = 100


@dataclass
class GoalImageSensorConfig(LabSensorConfig):
    """uuid ``mosnav_goal_image``: the image goal's picture, rendered once per episode.
    ``width`` / ``height`` <= 0 take the one size the dataset's image goals give (GOAT-Bench's
    ``image_dimensions``), else the agent's RGB camera's; ``hfov`` <= 0 the RGB camera's. A
    dataset ``image_goal`` that gives its own hfov wins, one that gives another size is an
    error.
    ``get_config`` adds this sensor when ``habitat.dataset.goal_type`` is ``image``."""

    type: str = "MosNavGoalImageSensor"
    width: int = -1
    height: int = -1
    hfov: float = -1.0


# ----------------------------------------------------------------------------- measures
def _measure(type_name: str, doc: str):
    """A ``MeasurementConfig`` subclass for a measure without options. It is bound as a
    module attribute so that configs pickle (VectorEnv sends them to worker processes)."""
    name = f"{type_name}MeasurementConfig"
    cls = dataclass(
        type(
            name,
            (MeasurementConfig,),
            {
                "__annotations__": {"type": str},
                "type": type_name,
                "__doc__": doc,
                "__module__": __name__,
                "__qualname__": name,
            },
        )
    )
    globals()[name] = cls
    return cls


#: One config dataclass per option-less measure of the table (mos_reward has options).
_MEASURE_CONFIGS = {m.name: _measure(m.type, m.doc) for m in MEASURES if m.name != "mos_reward"}


@dataclass
class MosRewardMeasurementConfig(MeasurementConfig):
    __doc__ = next(m.doc for m in MEASURES if m.name == "mos_reward")

    type: str = "MosReward"
    progress_weight: float = 1.0
    true_claim_reward: float = 2.5
    false_claim_penalty: float = 1.0
    success_reward: float = 5.0
    slack_reward: float = -0.01


# ----------------------------------------------------------------------------- store
class MosNavConfigPlugin(SearchPathPlugin):
    """Lets ``defaults:`` lists find this package's YAML files."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="habitat_mosnav", path="pkg://habitat_mosnav/config")


def _store() -> None:
    cs = ConfigStore.instance()
    cs.store(
        group="habitat/dataset",
        name="mosnav_dataset_schema",
        package="habitat.dataset",
        node=MultiObjectNavDatasetConfig,
    )
    cs.store(
        group="habitat/task",
        name="mosnav_task_config_base",
        package="habitat.task",
        node=MultiObjectNavTaskConfig,
    )
    cs.store(
        group="habitat/simulator",
        name="mosnav_mesh_sim",
        package="habitat.simulator",
        node=MosNavMeshSimConfig,
    )
    entities = {
        "actions": {"target_found": TargetFoundActionConfig},
        "lab_sensors": {
            "mosnav_goal_text": GoalTextSensorConfig,
            "mosnav_objectgoal": MosNavObjectGoalSensorConfig,
            "mosnav_target_mode": TargetModeSensorConfig,
            "mosnav_target_count": TargetCountSensorConfig,
            "mosnav_goal_image": GoalImageSensorConfig,
        },
        "measurements": {**_MEASURE_CONFIGS, "mos_reward": MosRewardMeasurementConfig},
    }
    for kind, nodes in entities.items():
        for name, node in nodes.items():
            cs.store(
                group=f"habitat/task/{kind}",
                name=name,
                package=f"habitat.task.{kind}.{name}",
                node=node,
            )


_store()


def store_obs_transform_config(name: str, node) -> None:
    """Stores an observation transformer's config where habitat-baselines' configs pick
    them (``habitat_baselines.rl.policy.<agent>.obs_transforms.<name>``)."""
    ConfigStore.instance().store(
        group="habitat_baselines/rl/policy/obs_transforms", name=name, node=node
    )
