"""Agents written against the original benchmark's old ``act(rgb=, depth=, prompt=)`` API.

``--legacy-agent-api`` wraps such an agent in :class:`LegacyAgentAdapter`. Without the flag
:func:`has_legacy_act` recognises the old signature, so the agent is never silently handed
the whole ``Observation`` as ``rgb`` (see :func:`adapt_agent`).
"""

from __future__ import annotations

import inspect
from typing import Callable, Optional

from habitat_mosnav.api import Observation

__all__ = ["LEGACY_ACT_PARAMETERS", "LegacyAgentAdapter", "adapt_agent", "has_legacy_act"]

#: The keyword arguments of the old API's ``act``.
LEGACY_ACT_PARAMETERS = ("rgb", "depth", "prompt")


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


def has_legacy_act(agent) -> bool:
    """True when ``agent.act`` has the old signature: its first parameter is one of
    ``rgb``/``depth``/``prompt`` (e.g. ``act(self, rgb=None, depth=None, prompt=None)``).
    ``act(self, observation)``, ``act(self, obs)``, ``act(self, *args)`` and signatures
    that cannot be inspected (builtins) are the current API."""
    act = getattr(agent, "act", None)
    if isinstance(agent, LegacyAgentAdapter) or not callable(act):
        return False
    try:
        params = list(inspect.signature(act).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return bool(positional) and positional[0].name in LEGACY_ACT_PARAMETERS


def adapt_agent(agent, legacy_api: bool = False, note: Optional[Callable[[str], None]] = None):
    """The agent as the evaluator calls it: wrapped in :class:`LegacyAgentAdapter` with
    ``legacy_api`` (``--legacy-agent-api``) or when :func:`has_legacy_act` recognises the
    old signature (then ``note`` gets one line saying so)."""
    if isinstance(agent, LegacyAgentAdapter):
        return agent
    if legacy_api:
        return LegacyAgentAdapter(agent)
    if has_legacy_act(agent):
        if note is not None:
            note(
                f"note: {type(agent).__name__}.act has the legacy signature act(rgb, depth, "
                "prompt): calling it as with --legacy-agent-api. Its action ids are read "
                "with --action-protocol (default goat); add --action-protocol legacy if it "
                "claims with 0 and finishes with 9 in many/all."
            )
        return LegacyAgentAdapter(agent)
    return agent
