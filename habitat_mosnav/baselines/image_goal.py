"""``MosNavGoalImageInput``: ``mosnav_goal_image`` to the goal-image input of habitat-baselines'
``PointNavResNetPolicy``.

``PointNavResNetNet`` encodes an observation under ``InstanceImageGoalSensor``'s uuid
(``instance_imagegoal``) with a ResNet of its own (its output through a linear layer into
the RNN input) and keeps it out of the ResNet of the agent's camera; any other (H, W, 3)
observation would be stacked onto the camera's channels instead. This observation
transformer renames the key (space and batches alike, the pixels untouched), so the
unchanged policy takes image goals the way it takes habitat's instance image goals.
"""

from __future__ import annotations

from dataclasses import dataclass

from gym import spaces
from habitat.tasks.nav.instance_image_nav_task import InstanceImageGoalSensor
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.common.obs_transformers import ObservationTransformer
from habitat_baselines.config.default_structured_configs import ObsTransformConfig

from habitat_mosnav.config.default_structured_configs import store_obs_transform_config

#: The lab sensor's uuid (``habitat.task.lab_sensors.mosnav_goal_image``).
GOAL_IMAGE_UUID = "mosnav_goal_image"
#: The uuid whose image ``PointNavResNetNet`` gives a goal encoder of its own.
POLICY_GOAL_IMAGE_UUID = InstanceImageGoalSensor.cls_uuid


@dataclass
class MosNavGoalImageInputConfig(ObsTransformConfig):
    """``image_uuid`` (the sensor's) becomes ``policy_uuid`` (the policy's goal-image key)."""

    type: str = "MosNavGoalImageInput"
    image_uuid: str = GOAL_IMAGE_UUID
    policy_uuid: str = POLICY_GOAL_IMAGE_UUID


store_obs_transform_config("mosnav_goal_image", MosNavGoalImageInputConfig)


@baseline_registry.register_obs_transformer()
class MosNavGoalImageInput(ObservationTransformer):
    """Renames ``image_uuid`` to ``policy_uuid`` (see the module docstring); a batch or a
    space without ``image_uuid`` passes unchanged."""

    def __init__(
        self, image_uuid: str = GOAL_IMAGE_UUID, policy_uuid: str = POLICY_GOAL_IMAGE_UUID
    ) -> None:
        super().__init__()
        self.image_uuid = image_uuid
        self.policy_uuid = policy_uuid

    @classmethod
    def from_config(cls, config) -> "MosNavGoalImageInput":
        return cls(image_uuid=config.image_uuid, policy_uuid=config.policy_uuid)

    def transform_observation_space(self, observation_space: spaces.Dict, **kwargs):
        if self.image_uuid not in observation_space.spaces:
            return observation_space
        if self.policy_uuid in observation_space.spaces:
            raise ValueError(
                f"obs transform MosNavGoalImageInput: the observations already hold "
                f"{self.policy_uuid!r}; {self.image_uuid!r} cannot take its place"
            )
        space = observation_space.spaces[self.image_uuid]
        if len(space.shape) != 3 or space.shape[2] != 3:
            raise ValueError(
                f"obs transform MosNavGoalImageInput: {self.image_uuid!r} must be an "
                f"(H, W, 3) image, its space has shape {space.shape}"
            )
        new = {k: v for k, v in observation_space.spaces.items() if k != self.image_uuid}
        new[self.policy_uuid] = space
        return spaces.Dict(new)

    def forward(self, observations):
        if self.image_uuid in observations:
            image = observations[self.image_uuid]
            del observations[self.image_uuid]
            observations[self.policy_uuid] = image
        return observations


from habitat_mosnav.baselines.non_scalar import mark_non_scalar_measures  # noqa: E402

mark_non_scalar_measures()
