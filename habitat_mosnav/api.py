"""The agent API that evaluatees implement (SPEC §7): ``Action`` and ``Observation``.

An agent is any object with ``act(observation) -> int | Action`` and optionally
``reset()``. No base class and no registration: ``mosnav-eval --agent pkg.module:Class``.
This module imports numpy only, so agent code can depend on it anywhere.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

__all__ = ["Action", "Observation", "GOAL_TYPES", "TARGET_MODES"]

GOAL_TYPES = ("description", "object")
TARGET_MODES = ("single", "any", "many", "all")


class Action(enum.IntEnum):
    """Action ids (SPEC §2); 0-5 match Habitat's action order, 6 is ``target_found``."""

    FINISH = 0
    MOVE_FORWARD = 1
    TURN_LEFT = 2
    TURN_RIGHT = 3
    LOOK_UP = 4
    LOOK_DOWN = 5
    TARGET_FOUND = 6
    LEGACY_FINISH = 9


@dataclass(frozen=True)
class Observation:
    """What an agent sees at one step.

    ``gps`` is (2,) x/z relative to the episode start; ``compass`` is the heading change
    since the start in radians. In ``many``/``all`` nothing says how many targets remain.
    """

    rgb: np.ndarray
    depth: Optional[np.ndarray]
    goal_text: str
    goal_embedding: Optional[np.ndarray]
    goal_image: Optional[np.ndarray]
    goal_type: str
    subtask_type: str
    target_mode: str
    target_count: Optional[int]
    episode_id: str
    scene_id: str
    step_count: int
    gps: np.ndarray
    compass: float
    max_steps: int
    task_prompt: Optional[str]
    previous_action: Optional[int]
    extras: Optional[Dict[str, Any]] = None
