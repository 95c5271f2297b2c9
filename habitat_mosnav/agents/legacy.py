"""Adapter for agents written against the old ``act(rgb=, depth=, prompt=)`` API."""
from __future__ import annotations

from habitat_mosnav.api import Observation

__all__ = ["LegacyAgentAdapter"]


class LegacyAgentAdapter:
    """Wraps a legacy agent so the evaluator can call ``act(observation)`` on it.

    The legacy agent receives the RGB image, the depth image and the full task prompt
    (which describes the action protocol in use, e.g. ``--action-protocol legacy``).
    """

    def __init__(self, agent) -> None:
        if not callable(getattr(agent, "act", None)):
            raise TypeError(f"{type(agent).__name__} has no act() method")
        self.agent = agent

    def __getattr__(self, name):
        # seed / bind_env / close / episode_stats / set_log_path of the wrapped agent stay
        # reachable, and stay absent when it lacks them: the evaluator checks for them with
        # getattr, so explicit forwarding methods here would make every agent look like it
        # has them.
        if name == "agent":
            raise AttributeError(name)
        return getattr(self.agent, name)

    def reset(self) -> None:
        reset = getattr(self.agent, "reset", None)
        if callable(reset):
            reset()

    def act(self, observation: Observation):
        return self.agent.act(
            rgb=observation.rgb, depth=observation.depth, prompt=observation.task_prompt
        )
