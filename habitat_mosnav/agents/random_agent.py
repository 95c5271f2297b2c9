"""A random agent: the floor every evaluated agent must beat."""

from __future__ import annotations

from typing import Optional

import numpy as np

from habitat_mosnav.api import Action, Observation

__all__ = ["RandomAgent"]


class RandomAgent:
    """Samples actions independently at each step, mostly moving.

    The probabilities favour motion so that episodes are not all ended by an early FINISH;
    with a per-episode seed (``seed()``, called by the evaluator before ``reset()``) a run
    is reproducible and independent of rank count and resume.
    """

    ACTIONS = (
        Action.MOVE_FORWARD,
        Action.TURN_LEFT,
        Action.TURN_RIGHT,
        Action.LOOK_UP,
        Action.LOOK_DOWN,
        Action.TARGET_FOUND,
        Action.FINISH,
    )
    PROBS = (0.55, 0.15, 0.15, 0.02, 0.02, 0.08, 0.03)

    def __init__(self, seed: Optional[int] = None) -> None:
        self._rng = np.random.default_rng(seed)

    def seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(int(seed))

    def reset(self) -> None:
        pass

    def act(self, observation: Observation) -> int:
        i = self._rng.choice(len(self.ACTIONS), p=self.PROBS)
        return int(self.ACTIONS[i])
