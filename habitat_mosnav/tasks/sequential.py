"""Per-episode bookkeeping of a ``sequential`` episode (GOAT-Bench's protocol, SPEC §11).

One subtask at a time. SUBTASK_STOP (action 6, the task's ``target_found``) ends the current
subtask: it succeeds when the geodesic distance from the agent to the nearest view point
(``MultiObjectGoal.near_points``) of that subtask's targets is **strictly below**
``success_distance`` (GOAT-Bench's ``distance_to_goal < success_distance``, SPEC §11 "below";
SPEC §3's claims use ``<=``, a difference only on the boundary itself). The next subtask
starts where the agent stands; after the last subtask's stop the episode ends
(``task.is_stop_called``); action 0 ends it at once (the current subtask is not judged:
s_i = 0 for it and every later one); so does the step budget.

d_i: the geodesic from where the agent stood when subtask i began to its nearest view point
(one multi-goal query at its start; None for a subtask that never began); p_i: the path
walked (sum of Euclidean steps, as ``trajectory_length``) from its start to its stop, or to
the episode's end.

Record values (``metrics()``): GOAT-Bench's scalars (:data:`~habitat_mosnav.metrics.goat.
GOAT_SCALAR_FIELDS`, :func:`~habitat_mosnav.metrics.goat.goat_metrics`) plus every SPEC §4
field, of which only those with a meaning here have a value: ``success`` = ``task_success``;
``spl`` = ``spl_multi`` = ``composite_spl``; ``trajectory_length`` = p (the whole episode).
Every other §4 field (tp, fp, precision, recall, f1, l, a, pe, tse, rtsr, oer, coverage,
...) is None: they describe claims of one query's instances, which a sequential episode does
not make (the space oracle is not run). The per-subtask lists are :meth:`subtask_metrics`
(the record's ``subtask_metrics`` block). Each SUBTASK_STOP also appends a SPEC §3-shaped
event to ``events`` (``subtask_index`` added; ``new_targets`` = the nearest target when it
succeeded), so maps, replays and diagnoses read the stops as claims.

Cost per step (the hot path): a step asks at most one geodesic query, the multi-goal query
from the agent to the current subtask's view points (``distance_to_nearest_unclaimed``, kept
while the agent and the subtask stay the same; the judgment of a stop reuses it). A stop
adds d_(i+1), one query at the next subtask's start. No leg of SPEC §4 is computed at reset.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from habitat_mosnav.metrics.episode import METRIC_FIELDS
from habitat_mosnav.metrics.goat import GOAT_SCALAR_FIELDS, SubtaskOutcome, goat_metrics
from habitat_mosnav.tasks.state import EpisodeState


class SequentialEpisodeState(EpisodeState):
    """Everything that happened so far in a ``sequential`` episode (:class:`~habitat_mosnav.
    tasks.state.EpisodeState`'s surface, plus the subtask fields)."""

    def __init__(self, sim, episode, success_distance: float, max_steps: int):
        super().__init__(sim, episode, success_distance, max_steps)
        self.subtasks = list(episode.subtasks)
        if not self.subtasks:
            raise ValueError(
                f"episode {episode.episode_id!r}: a sequential episode without subtasks"
            )
        self.target_count = None
        self.required_count = len(self.subtasks)
        self._points = [
            np.concatenate(
                [
                    np.asarray(self.goals[oid].near_points, dtype=np.float32).reshape(-1, 3)
                    for oid in st.target_object_ids
                ]
            )
            for st in self.subtasks
        ]

        self.subtask_index = 0
        n = len(self.subtasks)
        self.success: List[bool] = [False] * n
        self.start_distance: List[Optional[float]] = [None] * n
        self.stop_step: List[Optional[int]] = [None] * n
        self._start_path: List[Optional[float]] = [None] * n
        self._end_path: List[Optional[float]] = [None] * n
        self._dist_key = None
        self._dist = math.inf
        self._metrics_key = None
        self._metrics: Dict[str, Any] = {}
        self._begin_subtask()

    # ------------------------------------------------------------------ subtasks
    @property
    def done(self) -> bool:
        """Every subtask was stopped."""
        return self.subtask_index >= len(self.subtasks)

    @property
    def current_subtask(self):
        """The :class:`~habitat_mosnav.datasets.episode.SubtaskGoal` under way (the last
        one once all are stopped: the observation after the final stop shows it)."""
        return self.subtasks[min(self.subtask_index, len(self.subtasks) - 1)]

    def _begin_subtask(self) -> None:
        i = self.subtask_index
        self._start_path[i] = self.trajectory_length
        self.start_distance[i] = self.distance_to_nearest_unclaimed()

    # ------------------------------------------------------------------ geometry
    def distance_to_nearest_unclaimed(self) -> float:
        """Geodesic agent -> nearest view point of the current subtask's targets (0 once
        every subtask is stopped): one query when the agent moved or the subtask changed."""
        if self.done:
            return 0.0
        key = (self.position.tobytes(), self.subtask_index)
        if key != self._dist_key:
            self._dist = self._geo(self.position, self._points[self.subtask_index])
            self._dist_key = key
        return self._dist

    def target_distances(self) -> Dict[int, float]:
        """Geodesic agent -> each target of the current subtask (one query per target;
        replays read it at a stop, for the near-boundary margin)."""
        if self.done:
            return {}
        return {
            oid: self._geo(
                self.position,
                np.asarray(self.goals[oid].near_points, dtype=np.float32).reshape(-1, 3),
            )
            for oid in self.current_subtask.target_object_ids
        }

    # ------------------------------------------------------------------ events
    def subtask_stop(self) -> bool:
        """SUBTASK_STOP at the current position: judge the current subtask, start the next
        one here. Returns True when that was the last subtask (the episode ends)."""
        if self.done:
            return True
        i = self.subtask_index
        d = self.distance_to_nearest_unclaimed()
        ok = math.isfinite(d) and d < self.success_distance
        new: List[int] = []
        near: List[int] = []
        if ok:
            dists = self.target_distances()
            near = sorted(
                (oid for oid, v in dists.items() if v < self.success_distance),
                key=lambda o: dists[o],
            )
            new = near[:1] or [self.current_subtask.target_object_ids[0]]
            self.claimed.extend(new)
        self.events.append(
            {
                "step": int(self.step),
                "subtask_index": i,
                "near_targets": near,
                "new_targets": new,
                "duplicate_targets": [],
                "is_true_positive": bool(ok),
                "is_false_positive": not ok,
            }
        )
        self.success[i] = bool(ok)
        self.stop_step[i] = int(self.step)
        self._end_path[i] = self.trajectory_length
        self.subtask_index += 1
        if self.done:
            self.finish_step = self.step
            self.ended_by = "target_found"
            return True
        self._begin_subtask()
        return False

    def end_by_agent(self, finish: bool) -> None:
        """Action 0 (or 9): the episode ends; the current subtask is not judged."""
        if self.ended_by is not None:
            return
        self.finish_step = self.step
        self.finish_sent = self.finish_sent or finish
        self.ended_by = "finish" if finish else "target_found"

    def claim(self) -> Dict[str, Any]:
        """TARGET_FOUND in a sequential episode is SUBTASK_STOP (``MosEpisodeState``'s
        name, for callers that claim)."""
        self.subtask_stop()
        return self.events[-1]

    # ------------------------------------------------------------------ metrics
    def outcomes(self) -> List[SubtaskOutcome]:
        out = []
        for i, st in enumerate(self.subtasks):
            begun = self._start_path[i]
            end = self._end_path[i] if self._end_path[i] is not None else self.trajectory_length
            out.append(
                SubtaskOutcome(
                    goal_type=st.goal_type,
                    success=self.success[i],
                    start_distance=self.start_distance[i],
                    path_length=0.0 if begun is None else float(end - begun),
                )
            )
        return out

    def _goat(self) -> Dict[str, Any]:
        return goat_metrics(self.outcomes(), ended_by_agent=self.ended_by is not None)

    def subtask_metrics(self) -> Dict[str, List[Any]]:
        """The record's ``subtask_metrics`` block (``evaluation.records.
        SUBTASK_METRIC_FIELDS``): per subtask s_i, s_i d_i / max(d_i, p_i),
        goal type, d_i (None: never began, or unreachable), p_i, the stop's step (None:
        never stopped)."""
        goat = self._goat()
        outcomes = self.outcomes()
        return {
            "subtask_success": list(goat["subtask_success"]),
            "spl_by_subtask": list(goat["spl_by_subtask"]),
            "goal_types": [o.goal_type for o in outcomes],
            "start_distance": [
                None if d is None or not math.isfinite(d) else float(d)
                for d in (o.start_distance for o in outcomes)
            ],
            "path_length": [float(o.path_length) for o in outcomes],
            "stop_step": list(self.stop_step),
        }

    def metrics(self) -> Dict[str, Any]:
        """The record's scalars now (module docstring): GOAT's, and the SPEC §4 fields."""
        key = (self.step, len(self.events), self.ended_by)
        if key == self._metrics_key:
            return self._metrics
        goat = self._goat()
        m: Dict[str, Any] = {name: None for name in METRIC_FIELDS}
        m.update(
            {
                "success": goat["task_success"],
                "spl": goat["composite_spl"],
                "spl_multi": goat["composite_spl"],
                "trajectory_length": self.trajectory_length,
            }
        )
        for name in GOAT_SCALAR_FIELDS:
            m[name] = goat[name]
        self._metrics = m
        self._metrics_key = key
        return m

    @property
    def coverage(self) -> Optional[float]:
        return None
