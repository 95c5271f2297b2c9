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

__all__ = [
    "ACTION_PROTOCOLS",
    "Action",
    "EPISODE_MODES",
    "GOAL_TYPES",
    "MULTI_MODES",
    "Observation",
    "SEQUENTIAL",
    "TARGET_MODES",
]

#: ``Observation.goal_type``: an instruction, a category name, or a picture of one matching
#: instance (``goal_image``; SPEC §1).
GOAL_TYPES = ("description", "object", "image")
#: ``Observation.target_mode`` (SPEC §1).
TARGET_MODES = ("single", "any", "many", "all")
#: The modes where the agent claims several targets (MOS and MOC); the main board.
MULTI_MODES = ("many", "all")
#: GOAT-Bench's protocol (SPEC §11): an episode of subtasks, one goal at a time. Not a
#: ``TARGET_MODES`` member: the ``mosnav_target_mode`` sensor keeps its four entries.
SEQUENTIAL = "sequential"
#: Every ``target_mode`` an episode may have (episodes.json, ``--target-modes``, records).
EPISODE_MODES = TARGET_MODES + (SEQUENTIAL,)
#: ``--action-protocol``: how an agent's action id maps to a task action (SPEC §2).
ACTION_PROTOCOLS = ("goat", "legacy", "compat")
#: The benchmark's agent: habitat's ObjectNav HM3D body (m) and camera field of view
#: (degrees), as the configs ``benchmark/nav/mosnav/base/{demo,hm3d}.yaml`` give them to
#: habitat; the defaults of the navmesh, the dataset builder's camera and the frontier map.
AGENT_HEIGHT = 0.88
AGENT_RADIUS = 0.18
CAMERA_HFOV = 79


class Action(enum.IntEnum):
    """Action ids (SPEC §2); 0-5 match Habitat's action order, 6 is ``target_found``."""

    FINISH = 0
    MOVE_FORWARD = 1
    TURN_LEFT = 2
    TURN_RIGHT = 3
    LOOK_UP = 4
    LOOK_DOWN = 5
    TARGET_FOUND = 6
    #: The original benchmark's other name for 6 ("6 = TARGET_FOUND / SUBTASK_STOP").
    SUBTASK_STOP = 6
    LEGACY_FINISH = 9


@dataclass(frozen=True)
class Observation:
    """What an agent sees at one step (built by the evaluator's rollout from habitat's
    observation dict).

    - ``rgb``: (H, W, 3) uint8 (an alpha channel is dropped).
    - ``depth``: (H, W) float32 in metres (habitat's normalised [0, 1] depth is scaled back
      with the sensor's min/max depth; ``extras["depth_units"] == "metres"``), or None when
      the config has no depth sensor.
    - ``gps``: (2,) float32 ``[x, z]``, the displacement from the episode start position
      expressed in the episode-start frame (habitat axes at the start pose: +x to the
      agent's right, +z backward, so walking straight ahead makes z negative). Height is
      left out. Read from habitat's own ``EpisodicGPSSensor``, which orders it ``[-z, x]``
      (and ``compass`` from ``EpisodicCompassSensor``) when the task has them.
    - ``compass``: float, the heading change since the start in radians, wrapped to
      [-pi, pi); positive means turned to the left (counter-clockwise seen from above).
    - ``step_count``: actions taken so far (0 at the first ``act``); ``previous_action`` the
      last one (None at the first step); ``max_steps`` the episode's action budget.
    - ``task_prompt``: the full task text for VLM/LLM agents (goal, mode, action table of
      the ``--action-protocol`` in use); ``goal_text`` the instruction or category name.
    - ``target_count``: set for ``many`` only. In ``many``/``all`` nothing says how many
      targets remain.
    - ``goal_image``: (H, W, 3) uint8 for ``goal_type == "image"``: an exemplar, a view of
      one instance the goal matches, rendered by the simulator from the episode's camera
      parameters at reset; None for the other goal types. ``goal_text`` then names no
      category (a fixed sentence).
    - ``goal_embedding``: None (reserved).
    - ``extras``: ``{"episode_key", "query_id", "depth_units"}`` (read-only hints).
    - ``subtask_index`` / ``subtask_count``: in a ``sequential`` episode (SPEC §11) the
      current subtask (0-based) and how many there are; the goal fields are that subtask's.
      None in the other modes.
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
    subtask_index: Optional[int] = None
    subtask_count: Optional[int] = None
