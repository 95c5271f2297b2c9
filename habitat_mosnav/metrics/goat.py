"""GOAT-Bench's metrics of a ``sequential`` episode, under GOAT-Bench's names (SPEC §11).

Pure arithmetic over what happened to each subtask (no habitat): the task's
``SequentialEpisodeState`` fills one :class:`SubtaskOutcome` per subtask and
:func:`goat_metrics` turns them into the record's values. With n subtasks, s_i the success
of subtask i (0 when it was never stopped), d_i the geodesic distance to its view points
when it began and p_i the path walked from then until its SUBTASK_STOP:

- ``subtask_success`` = [s_1, ..., s_n]; ``partial_success`` = sum(s_i) / n;
- ``composite_success`` = 1 when every s_i = 1; ``task_success`` = ``composite_success`` and
  the episode ended by the agent (action 0, or the last subtask's stop);
- ``object_success`` / ``description_success`` / ``image_success`` = mean s_i over the
  subtasks of that goal type (None when there is none);
- ``spl_by_subtask`` = [s_i * d_i / max(d_i, p_i)] (0 where d_i is unknown or infinite);
  ``composite_spl`` = its mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from habitat_mosnav.api import GOAL_TYPES

#: The per-episode scalars, in record order (the aggregates are their means).
GOAT_SCALAR_FIELDS = (
    "task_success",
    "composite_success",
    "partial_success",
    "object_success",
    "description_success",
    "image_success",
    "composite_spl",
)
#: The per-subtask lists.
GOAT_LIST_FIELDS = ("subtask_success", "spl_by_subtask")


@dataclass(frozen=True)
class SubtaskOutcome:
    """What happened to one subtask.

    ``success``: stopped (SUBTASK_STOP) within the success distance of its view points
    (False when never stopped); ``start_distance``: d_i, the geodesic from where the agent
    stood when the subtask began to its nearest view point (None when it never began);
    ``path_length``: p_i, metres walked from its start to its stop (or to the episode's end).
    """

    goal_type: str
    success: bool
    start_distance: Optional[float]
    path_length: float


def subtask_spl(outcome: SubtaskOutcome) -> float:
    """s_i * d_i / max(d_i, p_i); 0 for a failed subtask or an unknown/unreachable d_i."""
    d = outcome.start_distance
    if not outcome.success or d is None or not math.isfinite(d):
        return 0.0
    longest = max(d, outcome.path_length)
    return 1.0 if longest <= 0.0 else d / longest


def goat_metrics(subtasks: Sequence[SubtaskOutcome], ended_by_agent: bool) -> Dict[str, Any]:
    """GOAT-Bench's per-episode metrics (module docstring). ``ended_by_agent``: the episode
    ended by action 0 or after the last subtask's stop (not at the step budget)."""
    if not subtasks:
        raise ValueError("a sequential episode has at least one subtask")
    success: List[int] = [1 if s.success else 0 for s in subtasks]
    spl = [subtask_spl(s) for s in subtasks]
    composite = 1 if all(success) else 0
    out: Dict[str, Any] = {
        "task_success": 1 if composite and ended_by_agent else 0,
        "composite_success": composite,
        "partial_success": sum(success) / len(success),
    }
    for goal_type in GOAL_TYPES:
        of_type = [s for s, t in zip(success, subtasks) if t.goal_type == goal_type]
        out[f"{goal_type}_success"] = sum(of_type) / len(of_type) if of_type else None
    out["composite_spl"] = sum(spl) / len(spl)
    out["subtask_success"] = success
    out["spl_by_subtask"] = spl
    return out
