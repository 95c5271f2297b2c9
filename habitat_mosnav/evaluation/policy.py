"""The unified rollout contract's policy side (SPEC §7): ``PolicyAdapter``, ``PolicyStep``,
``EpisodeContext``.

A policy written for the contract runs unchanged::

    from habitat_mosnav.evaluation import EvaluationConfig, Evaluator, PolicyAdapter, PolicyStep

    class StopPolicy(PolicyAdapter):
        def reset(self, context):          # an EpisodeContext, before every episode
            self.context = context
        def act(self, observation):        # a habitat_mosnav.api.Observation
            return PolicyStep(action=0, info={"reason": "example"})
        def close(self):                   # once, at the end of the run
            pass

``PolicyAdapter`` is optional: the evaluator accepts any object with ``act(observation)``
returning an action id, an ``Action`` or a ``PolicyStep``; ``reset`` gets the context when
it takes a parameter (a plain ``reset()`` is called without it). Standard library only.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from habitat_mosnav.agents.protocols import InvalidAction

__all__ = [
    "EpisodeContext",
    "PolicyAdapter",
    "PolicyStep",
    "public_episode_fields",
    "reset_takes_context",
    "split_policy_step",
]


@dataclass(frozen=True)
class PolicyStep:
    """What ``act`` may return: the action id (``int`` or ``Action``) and ``info``, a
    JSON-serialisable dict (numpy scalars/arrays are converted) stored with that step in
    the record's ``action_trace`` as ``{"action": id, "info": info}``."""

    action: Any
    info: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True)
class EpisodeContext:
    """Handed to ``reset(context)`` before every episode.

    ``episode_key`` (``<split>::<scene_id>::<episode_id>``), ``episode_index`` (position in
    the global selection), ``split``, ``rank``, ``world_size``, ``max_steps`` (the action
    budget), ``seed`` (the episode's stable seed), ``episode`` (its public fields: scene_id,
    episode_id, query_id, split, target_mode, goal_type, goal_text, target_count (many
    only), max_steps — never the target ids or positions) and ``environment`` (the public
    ``habitat.Env``; also ``env``).
    """

    episode_key: str
    episode_index: int
    split: str
    rank: int
    world_size: int
    max_steps: int
    seed: int
    episode: Mapping[str, Any] = field(default_factory=dict)
    environment: Any = None

    @property
    def env(self):
        return self.environment


class PolicyAdapter:
    """Base class of a contract policy: ``reset(context)``, ``act(observation)``,
    ``close()``. Subclassing is optional; the defaults do nothing (``act`` must be
    overridden). Model state (recurrent state, caches, history) lives in the adapter."""

    def reset(self, context: EpisodeContext) -> None:
        """Called before every episode with its :class:`EpisodeContext`."""

    def act(self, observation) -> PolicyStep:
        raise NotImplementedError(f"{type(self).__name__}.act(observation) is not implemented")

    def close(self) -> None:
        """Called once when the run ends."""


def public_episode_fields(episode, split: str, max_steps: int) -> Dict[str, Any]:
    """The fields of ``episode`` a policy may know (see :class:`EpisodeContext`)."""
    from habitat_mosnav.keys import episode_scene_name

    mode = str(getattr(episode, "target_mode", "single"))
    count = getattr(episode, "target_count", None)
    return {
        "scene_id": episode_scene_name(episode),
        "episode_id": str(episode.episode_id),
        "query_id": getattr(episode, "query_id", None),
        "split": split,
        "target_mode": mode,
        "goal_type": getattr(episode, "goal_type", None),
        "goal_text": getattr(episode, "goal_text", None),
        "target_count": int(count) if mode == "many" and count is not None else None,
        "max_steps": int(max_steps),
    }


def reset_takes_context(agent) -> bool:
    """True when ``agent.reset`` is to be called with the :class:`EpisodeContext`: a
    :class:`PolicyAdapter`, or a ``reset`` whose first parameter is required or named
    ``context``/``ctx``. ``reset()`` and ``reset(self, seed=None)`` are called without."""
    reset = getattr(agent, "reset", None)
    if not callable(reset):
        return False
    if isinstance(agent, PolicyAdapter):
        return True
    try:
        params = list(inspect.signature(reset).parameters.values())
    except (TypeError, ValueError):
        return False
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return p.default is p.empty or p.name in ("context", "ctx")
        if p.kind == p.VAR_POSITIONAL:
            return False
    return False


def split_policy_step(result, step: int) -> Tuple[Any, Optional[Any]]:
    """``(action, info)`` from what ``act`` returned: a :class:`PolicyStep` gives its
    action and its ``info`` as plain JSON (:class:`InvalidAction` naming the step when it
    cannot be written); anything else is the action, with no info."""
    if not isinstance(result, PolicyStep):
        return result, None
    if result.info is None:
        return result.action, None
    if not isinstance(result.info, Mapping):
        raise InvalidAction(
            f"PolicyStep.info at step {step} must be a dict, got {type(result.info).__name__}"
        )
    from habitat_mosnav.evaluation.records import to_jsonable

    try:
        info = to_jsonable(result.info, "info")
    except ValueError as exc:
        raise InvalidAction(
            f"PolicyStep.info at step {step} is not JSON-serialisable: {exc}"
        ) from None
    return result.action, info
