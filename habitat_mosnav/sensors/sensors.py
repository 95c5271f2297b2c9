"""Lab sensors of MultiObjectNav-v1.

Text does not fit habitat's numeric observation spaces (``batch_obs`` cannot batch strings),
so the goal text travels as fixed-length UTF-8 bytes; ``decode_goal_text`` turns it back.
None of them tells the agent how many targets remain (SPEC §1).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from gym import spaces
from habitat.core.registry import registry
from habitat.core.simulator import Sensor, SensorTypes

from habitat_mosnav.api import SEQUENTIAL, TARGET_MODES


def current_goal(episode, task=None) -> Any:
    """What the goal sensors show: the episode itself (``goal_text``, ``object_category``,
    ``image_goal``), or in a ``sequential`` episode the current subtask (SPEC §11: its
    :class:`~habitat_mosnav.datasets.episode.SubtaskGoal`; the first one at reset, before
    the task's state of this episode exists)."""
    if getattr(episode, "target_mode", None) != SEQUENTIAL or not episode.subtasks:
        return episode
    state = getattr(task, "mos_state", None)
    if state is None or getattr(state, "episode", None) is not episode:
        return episode.subtasks[0]
    return state.current_subtask


def subtask_index(episode, task=None) -> Optional[int]:
    """The current subtask's index in a ``sequential`` episode (0 at reset), else None."""
    if getattr(episode, "target_mode", None) != SEQUENTIAL:
        return None
    state = getattr(task, "mos_state", None)
    if state is None or getattr(state, "episode", None) is not episode:
        return 0
    return min(state.subtask_index, len(episode.subtasks) - 1)


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
    """``mosnav_goal_text``: the instruction (description) or category name (object); the
    current subtask's in a ``sequential`` episode."""

    cls_uuid = "mosnav_goal_text"
    sensor_type = SensorTypes.TEXT

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return spaces.Box(low=0, high=255, shape=(self.config.max_length,), dtype=np.uint8)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        goal = current_goal(episode, kwargs.get("task"))
        return encode_goal_text(goal.goal_text, self.config.max_length)


@registry.register_sensor
class MosNavObjectGoalSensor(_MosSensor):
    """uuid ``objectgoal``: the goal category's index in the dataset's category list (the
    current subtask's in a ``sequential`` episode)."""

    cls_uuid = "objectgoal"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        n = max(1, len(getattr(self._dataset, "categories", []) or []))
        return spaces.Box(low=0, high=n - 1, shape=(1,), dtype=np.int64)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        goal = current_goal(episode, kwargs.get("task"))
        return np.array([self._dataset.category_index(goal.object_category)], dtype=np.int64)


@registry.register_sensor
class MosNavTargetModeSensor(_MosSensor):
    """``mosnav_target_mode``: one-hot over (single, any, many, all); all zeros in a
    ``sequential`` episode (four entries, so trained policies keep their input space)."""

    cls_uuid = "mosnav_target_mode"

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return spaces.Box(low=0.0, high=1.0, shape=(len(TARGET_MODES),), dtype=np.float32)

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        out = np.zeros((len(TARGET_MODES),), dtype=np.float32)
        if episode.target_mode in TARGET_MODES:
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


def agent_rgb_camera(sim_config) -> Any:
    """The agent's RGB sensor config (width, height, hfov) in ``habitat.simulator``; None
    when the agent has none."""
    agents = sim_config.agents
    agent = agents["main_agent"] if "main_agent" in agents else next(iter(agents.values()))
    for key, scfg in agent.sim_sensors.items():
        if key == "rgb_sensor" or "RGB" in str(scfg.get("type", "")):
            return scfg
    return None


def dataset_image_goal_sizes(dataset) -> set:
    """The ``(height, width)`` pairs that the image goals of a dataset's episodes (and of
    their subtasks) give; a goal that leaves its size to the sensor gives none."""
    sizes = set()
    for ep in getattr(dataset, "episodes", None) or ():
        goals = [getattr(ep, "image_goal", None)]
        goals += [s.image_goal for s in getattr(ep, "subtasks", None) or ()]
        for ig in goals:
            if ig and ig.get("width") is not None and ig.get("height") is not None:
                sizes.add((int(ig["height"]), int(ig["width"])))
    return sizes


@registry.register_sensor
class MosNavGoalImageSensor(_MosSensor):
    """``mosnav_goal_image``: goal type ``image``'s picture, (H, W, 3) uint8: the simulator
    renders the episode's ``image_goal`` camera (position, rotation; hfov, width, height
    where the dataset gives them, else this sensor's config, else the agent's RGB camera's)
    once per episode, at reset, and every later step repeats it. Zeros for an episode of
    another goal type (no render). In a ``sequential`` episode the current subtask's picture:
    rendered when an image subtask begins, once per subtask (kept per subtask for the
    episode).

    The sensor's size (its observation space: one shape for every episode, as batching
    needs) is the config's width/height when set, else the one size that the dataset's
    image goals give (GOAT-Bench's ``image_dimensions``, SPEC §11: the agent sees the picture
    at the size the dataset gives, not at its RGB camera's), else the RGB camera's. A goal of
    another size than the sensor's is an error."""

    cls_uuid = "mosnav_goal_image"
    sensor_type = SensorTypes.COLOR

    def __init__(self, sim, config, dataset=None, *args: Any, **kwargs: Any):
        rgb = agent_rgb_camera(sim.habitat_config)

        def pick(own, name, cast):
            if own is not None and own > 0:
                return cast(own)
            if rgb is None:
                raise ValueError(
                    f"habitat.task.lab_sensors.mosnav_goal_image.{name}: not set and the "
                    "agent has no RGB sensor to take it from"
                )
            return cast(rgb[name])

        own_h, own_w = config.height, config.width
        if not (own_w is not None and own_w > 0) and not (own_h is not None and own_h > 0):
            sizes = dataset_image_goal_sizes(dataset)
            if len(sizes) == 1:
                own_h, own_w = next(iter(sizes))
        self.width = pick(own_w, "width", int)
        self.height = pick(own_h, "height", int)
        self.hfov = pick(config.hfov, "hfov", float)
        #: renders so far (the once-per-episode contract is tested on it)
        self.render_count = 0
        self._key: Any = None
        self._image: Any = None
        super().__init__(sim, config, dataset, *args, **kwargs)

    def _get_observation_space(self, *args: Any, **kwargs: Any):
        return spaces.Box(low=0, high=255, shape=(self.height, self.width, 3), dtype=np.uint8)

    def camera(self, episode, image_goal=None) -> dict:
        """The episode's goal camera (or ``image_goal``'s, a subtask's) with every
        parameter filled in."""
        ig = episode.image_goal if image_goal is None else image_goal
        cam = {
            "position": list(ig["position"]),
            "rotation": list(ig["rotation"]),
            "hfov": self.hfov if ig.get("hfov") is None else float(ig["hfov"]),
            "width": self.width if ig.get("width") is None else int(ig["width"]),
            "height": self.height if ig.get("height") is None else int(ig["height"]),
        }
        if (cam["height"], cam["width"]) != (self.height, self.width):
            raise ValueError(
                f"episode {episode.episode_id!r} (query {episode.query_id!r}): image_goal is "
                f"{cam['width']}x{cam['height']} but the mosnav_goal_image sensor is "
                f"{self.width}x{self.height} (habitat.task.lab_sensors.mosnav_goal_image."
                "width/height)"
            )
        return cam

    def get_observation(self, observations, episode, *args: Any, **kwargs: Any):
        from habitat_mosnav.sims.camera import render_camera

        key = (getattr(episode, "episode_key", ""), episode.scene_id, episode.episode_id)
        index = subtask_index(episode, kwargs.get("task"))
        if key != self._key:
            self._per_subtask: dict = {}
            self._key = key
            self._image = None
        if index is not None:  # sequential: the current subtask's picture
            if index not in self._per_subtask:
                ig = episode.subtasks[index].image_goal
                if ig is None:
                    img = np.zeros((self.height, self.width, 3), np.uint8)
                else:
                    cam = self.camera(episode, ig)
                    img = self._checked(
                        render_camera(self._sim, "rgb", **cam),
                        episode,
                        cam,
                        episode.subtasks[index].query_id,
                    )
                    self.render_count += 1
                self._per_subtask[index] = img
            return self._per_subtask[index]
        if self._image is None:
            if getattr(episode, "image_goal", None) is None:
                self._image = np.zeros((self.height, self.width, 3), np.uint8)
            else:
                cam = self.camera(episode)
                self._image = self._checked(
                    render_camera(self._sim, "rgb", **cam), episode, cam, episode.query_id
                )
                self.render_count += 1
        return self._image

    def _checked(self, img, episode, cam: dict, query_id):
        """``img``, unless the simulator renders and the picture is empty (every pixel 0:
        nothing in view, e.g. a camera far outside the scene or a degenerate field of view):
        an error naming the query, never a silently black goal image."""
        renders = getattr(self._sim, "_renderer", True) is not None  # CPU sim, render off: zeros
        if renders and not np.asarray(img).any():
            raise ValueError(
                f"episode {episode.episode_id!r} (query {query_id!r}): its image_goal "
                f"renders empty (nothing in view from position "
                f"{[round(float(v), 3) for v in cam['position']]}, hfov {cam['hfov']:g}): "
                "fix the query's image_goal camera"
            )
        return img
