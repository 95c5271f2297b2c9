"""The ``MultiObjectNav-v1`` task and its actions.

``single``/``any`` end on TARGET_FOUND (6) or FINISH (0, habitat's ``stop``), both counting
as a claim at the final position; ``many``/``all`` end only on FINISH or the step limit, and
TARGET_FOUND claims one near target without ending the episode (SPEC §1-§3). In a
``sequential`` episode (SPEC §11) 6 is SUBTASK_STOP: it ends the current subtask, and the
episode after the last one (:mod:`habitat_mosnav.tasks.sequential`).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
from habitat.core.embodied_task import SimulatorTaskAction
from habitat.core.registry import registry
from habitat.tasks.nav.nav import (
    LookDownAction,
    LookUpAction,
    NavigationTask,
    StopAction,
)

from habitat_mosnav.api import MULTI_MODES, SEQUENTIAL
from habitat_mosnav.tasks.sequential import SequentialEpisodeState
from habitat_mosnav.tasks.state import EpisodeState, MosEpisodeState


def _resolve_measure_interpolations(config) -> None:
    """habitat copies each measure's config out of the tree (``OmegaConf.create``) before
    the measure reads it, where an interpolation no longer resolves: resolve them here,
    while the tree is whole (``mosnav_extras/habitat_nav_measures.yaml``: habitat's
    ``success`` measure reads the task's ``mosnav_success_distance``)."""
    from habitat.config import read_write
    from omegaconf import OmegaConf

    measures = config.get("measurements", None) if hasattr(config, "get") else None
    if not measures:
        return
    pending = [
        (node, key)
        for node in measures.values()
        if OmegaConf.is_config(node)
        for key in node.keys()
        if OmegaConf.is_interpolation(node, key)
    ]
    if pending:
        with read_write(config):
            for node, key in pending:
                node[key] = node[key]


@registry.register_task(name="MultiObjectNav-v1")
class MultiObjectNavTask(NavigationTask):
    """NavigationTask plus the multi-object claim bookkeeping in ``self.mos_state``."""

    #: a :class:`MosEpisodeState`, or a :class:`SequentialEpisodeState` in a ``sequential`` episode
    mos_state: Optional[EpisodeState]

    def __init__(self, config, sim, dataset=None) -> None:
        _resolve_measure_interpolations(config)
        super().__init__(config=config, sim=sim, dataset=dataset)
        self.mos_state = None
        self._max_steps_cap: Optional[int] = None
        # Pair legs per (scene, target pair): episodes of a scene share targets.
        self.leg_cache: Dict[Any, float] = {}

    @property
    def max_steps(self) -> int:
        """The action budget T of every episode (``habitat.environment.max_episode_steps``,
        or the lower cap set here), readable before the first reset (the evaluation layer
        checks it)."""
        return self._max_steps_cap or int(self._config.mosnav_max_steps)

    @max_steps.setter
    def max_steps(self, steps: int) -> None:
        """Cap the budget below the environment's own (the rollout contract's
        ``EvaluationConfig(max_steps=...)`` on an env built with defaults): from the next
        reset an episode ends after ``steps`` actions and the metrics use T = ``steps``.
        The env's own limit cannot be raised from here."""
        limit = int(self._config.mosnav_max_steps)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= limit:
            raise ValueError(
                f"max_steps must be an integer in [1, {limit}] (the environment's "
                f"habitat.environment.max_episode_steps), got {steps!r}"
            )
        self._max_steps_cap = None if steps == limit else steps

    def _check_episode_is_active(self, *args: Any, **kwargs: Any) -> bool:
        if (
            self._max_steps_cap is not None
            and self.mos_state is not None
            and (self.mos_state.step >= self._max_steps_cap)
        ):
            return False
        return super()._check_episode_is_active(*args, **kwargs)

    def reset(self, episode):
        # The sensors run inside super().reset(): none may read the previous episode's state
        # (a sequential episode's goal sensors show its first subtask then).
        self.mos_state = None
        observations = super().reset(episode)
        cfg = self._config
        if getattr(episode, "target_mode", None) == SEQUENTIAL:
            self.mos_state = SequentialEpisodeState(
                self._sim,
                episode,
                success_distance=cfg.mosnav_success_distance,
                max_steps=self.max_steps,
            )
            return observations
        self.mos_state = MosEpisodeState(
            self._sim,
            episode,
            success_distance=cfg.mosnav_success_distance,
            coverage_samples=cfg.mosnav_space_coverage_samples,
            coverage_radius=cfg.mosnav_space_coverage_radius,
            max_steps=self.max_steps,
            leg_cache=self.leg_cache,
        )
        return observations

    def step(self, action: Dict[str, Any], episode):
        name = action["action"]
        if isinstance(name, (int, np.integer)):
            name = self.get_action_name(name)
        self.mos_state.begin_step()
        observations = super().step(action, episode)
        self.mos_state.after_action()
        if isinstance(self.actions.get(name), StopAction):
            self.mos_state.end_by_agent(finish=True)
        return observations


@registry.register_task_action
class TargetFoundAction(SimulatorTaskAction):
    """``target_found`` (id 6): "there is one matching instance here" (SPEC §3); in a
    ``sequential`` episode SUBTASK_STOP (SPEC §11)."""

    name: str = "target_found"

    def step(self, task, *args: Any, **kwargs: Any):
        state = task.mos_state
        if state.target_mode == SEQUENTIAL:  # SUBTASK_STOP
            if state.subtask_stop():
                task.is_stop_called = True
        elif state.target_mode in MULTI_MODES:
            state.claim()
        else:
            state.end_by_agent(finish=False)
            task.is_stop_called = True
        return None


def _tilt(action, degrees: float):
    """Tilt the cameras by ``degrees`` (up > 0) on the simulators where habitat-lab's own
    LookUp/LookDown cannot: the CPU simulator (``tilt_camera``) and habitat-sim 0.3.3, whose
    ``Agent`` keeps its sensors in ``_sensors`` (habitat-lab reads ``agent.sensors`` and
    fails with AttributeError). Returns the observations (``{}`` when the agent has no
    visual sensor), or None: leave it to habitat-lab's action."""
    sim = action._sim
    if hasattr(sim, "tilt_camera"):
        sim.tilt_camera(degrees)
        return sim.get_observations_at()
    agent = sim.agents[0]
    if hasattr(agent, "sensors"):
        return None
    import magnum as mn

    for sensor in agent._sensors.values():
        sensor.node.rotation = sensor.node.rotation * mn.Quaternion.rotation(
            mn.Deg(degrees), mn.Vector3.x_axis()
        )
    return sim.get_observations_at()


@registry.register_task_action
class MosNavLookUpAction(LookUpAction):
    """Habitat's look_up, also on the CPU simulator (``sim.tilt_camera``)."""

    def step(self, *args: Any, **kwargs: Any):
        obs = _tilt(self, self._tilt_angle)
        return super().step(*args, **kwargs) if obs is None else obs


@registry.register_task_action
class MosNavLookDownAction(LookDownAction):
    """Habitat's look_down, also on the CPU simulator (``sim.tilt_camera``)."""

    def step(self, *args: Any, **kwargs: Any):
        obs = _tilt(self, -self._tilt_angle)
        return super().step(*args, **kwargs) if obs is None else obs
