"""Measures of MultiObjectNav-v1 (SPEC §4, names in SPEC §9); the registry of names, fields
and formulas is :mod:`habitat_mosnav.metrics.measure_table` (one explicit class per measure,
its docstring the registry's formula: ``tests/test_measure_table.py``).

Each measure is a thin view of ``task.mos_state.metrics()``, which computes every SPEC §4
value once per step through :mod:`habitat_mosnav.metrics`; so a measure never re-derives a
metric, and habitat's measures and our result files cannot disagree. SPEC's null is NaN.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from habitat.core.embodied_task import Measure
from habitat.core.registry import registry

from habitat_mosnav.metrics.aggregate import Aggregator
from habitat_mosnav.metrics.measure_table import MEASURE_TO_FIELD


class _ReportEvents(list):
    """The claim events of one episode. habitat.Benchmark sums every metric over episodes
    (``agg[m] += v`` from 0.0) and divides by their number; a plain list makes that raise
    ``TypeError``, this one adds as its number of claims, so the benchmark reports the mean
    number of claims per episode. Everything else sees a list."""

    def __radd__(self, other):
        if isinstance(other, (int, float)):
            return other + len(self)
        return NotImplemented


class _StateMeasure(Measure):
    """Reads the field ``MEASURE_TO_FIELD[cls_uuid]`` of the episode metrics."""

    cls_uuid: str = ""

    def __init__(self, sim, config, task, *args: Any, **kwargs: Any):
        self._sim = sim
        self._config = config
        self._task = task
        super().__init__()

    def _get_uuid(self, *args: Any, **kwargs: Any) -> str:
        return self.cls_uuid

    def reset_metric(self, *args: Any, task, **kwargs: Any) -> None:
        self.update_metric(task=task)

    def value(self, state) -> Any:
        return state.metric_floats()[MEASURE_TO_FIELD[self.cls_uuid]]

    def update_metric(self, *args: Any, task, **kwargs: Any) -> None:
        self._metric = self.value(task.mos_state)


@registry.register_measure
class MosTargetsFound(_StateMeasure):
    """F: the number of distinct targets claimed."""

    cls_uuid = "mos_targets_found"


@registry.register_measure
class MosPrecision(_StateMeasure):
    """tp / (tp + fp); 0 without claims."""

    cls_uuid = "mos_precision"


@registry.register_measure
class MosRecall(_StateMeasure):
    """min(1, F / R)."""

    cls_uuid = "mos_recall"


@registry.register_measure
class MosF1(_StateMeasure):
    """2PR / (P + R); 0 when P + R = 0."""

    cls_uuid = "mos_f1"


@registry.register_measure
class MosSuccess(_StateMeasure):
    """The per-mode success of SPEC §4."""

    cls_uuid = "mos_success"


@registry.register_measure
class MosTrajectoryLength(_StateMeasure):
    """p: the path length walked so far (m)."""

    cls_uuid = "trajectory_length"


@registry.register_measure
class OptimalSubsetDistance(_StateMeasure):
    """l of SPEC §4 (m)."""

    cls_uuid = "optimal_subset_distance"


@registry.register_measure
class AgentSubsetDistance(_StateMeasure):
    """a of SPEC §4 (m); NaN without claims."""

    cls_uuid = "agent_subset_distance"


@registry.register_measure
class SPLMulti(_StateMeasure):
    """success * l / max(p, l)."""

    cls_uuid = "spl_multi"


@registry.register_measure
class PathEfficiency(_StateMeasure):
    """PE = a / max(p, a); NaN without claims."""

    cls_uuid = "path_efficiency"


@registry.register_measure
class TargetSelectionEfficiency(_StateMeasure):
    """TSE = l / a; NaN without claims or with F < R."""

    cls_uuid = "target_selection_efficiency"


@registry.register_measure
class RepeatedTargetSelectionRate(_StateMeasure):
    """(m - |set(S)|) / m over the claims that had near targets; 0 when m = 0."""

    cls_uuid = "rtsr"


@registry.register_measure
class FalseTermination(_StateMeasure):
    """MOC only: 1 for FINISH with F < R, 0 for FINISH with F = R; NaN without FINISH."""

    cls_uuid = "false_termination"


@registry.register_measure
class OverExplorationTarget(_StateMeasure):
    """(finish step - all-found step) / T."""

    cls_uuid = "oer_target"


@registry.register_measure
class OverExplorationSpace(_StateMeasure):
    """(finish step - space-exhausted step) / T."""

    cls_uuid = "oer_space"


@registry.register_measure
class SpaceCoverage(_StateMeasure):
    """The fraction of the space oracle's samples explored."""

    cls_uuid = "space_coverage"


@registry.register_measure
class TimeToFirstTarget(_StateMeasure):
    """The step of the first true claim; NaN without one."""

    cls_uuid = "time_to_first_target"


@registry.register_measure
class DistanceToNearestUnclaimedTarget(_StateMeasure):
    """Geodesic distance to the nearest view point of a not yet claimed target (0 when all
    are claimed)."""

    cls_uuid = "distance_to_nearest_unclaimed_target"

    def value(self, state) -> float:
        return float(state.distance_to_nearest_unclaimed())


@registry.register_measure
class MosReportEvents(_StateMeasure):
    """The claim events of SPEC §3 (a list, not a scalar)."""

    cls_uuid = "mos_report_events"

    # A copy, so that readers cannot change the episode's record; only new events are
    # copied, and a step without a claim keeps the previous list object.
    def reset_metric(self, *args: Any, task, **kwargs: Any) -> None:
        self._copied: list = _ReportEvents()
        self._metric = self._copied
        self.update_metric(task=task)

    def update_metric(self, *args: Any, task, **kwargs: Any) -> None:
        events = task.mos_state.events
        if len(events) != len(self._copied):
            self._copied = _ReportEvents(
                self._copied + [copy.deepcopy(e) for e in events[len(self._copied) :]]
            )
            self._metric = self._copied


@registry.register_measure
class MosReward(_StateMeasure):
    """progress_weight * (decrease of the distance to the nearest unclaimed target)
    + true_claim_reward per true claim - false_claim_penalty per false claim
    + success_reward once + slack_reward per step. In a sequential episode (SPEC §11)
    the distance is to the current subtask's view points (no progress term on the step
    a subtask ends), each SUBTASK_STOP is a claim (true when its subtask succeeds) and
    success is task_success."""

    # (The docstring is measure_table's formula.) Sequential, so PPO trains on GOAT's
    # protocol: moving toward the current goal pays, a good SUBTASK_STOP earns
    # true_claim_reward, a bad one costs false_claim_penalty, finishing every subtask adds
    # success_reward; an unreachable goal (infinite distance) gives no progress term.
    cls_uuid = "mos_reward"

    def __init__(self, sim, config, task, *args: Any, **kwargs: Any):
        super().__init__(sim, config, task, *args, **kwargs)
        # Plain floats: an OmegaConf attribute lookup per step costs more than the reward.
        self._slack = float(config.slack_reward)
        self._progress = float(config.progress_weight)
        self._true_claim = float(config.true_claim_reward)
        self._false_claim = float(config.false_claim_penalty)
        self._success_bonus = float(config.success_reward)

    def reset_metric(self, *args: Any, task, **kwargs: Any) -> None:
        state = task.mos_state
        self._prev_distance = state.distance_to_nearest_unclaimed()
        self._prev_events = 0
        self._prev_claimed = 0
        self._prev_subtask = getattr(state, "subtask_index", None)
        self._succeeded = False
        self._metric = 0.0

    def update_metric(self, *args: Any, task, **kwargs: Any) -> None:
        state = task.mos_state
        reward = self._slack
        distance = state.distance_to_nearest_unclaimed()
        subtask = getattr(state, "subtask_index", None)  # sequential: a new goal
        if (
            len(state.claimed) == self._prev_claimed
            and subtask == self._prev_subtask
            and math.isfinite(distance)
            and (math.isfinite(self._prev_distance))
        ):
            # The nearest-unclaimed target changes after a claim: no jump then.
            reward += self._progress * (self._prev_distance - distance)
        self._prev_distance = distance
        self._prev_subtask = subtask
        for event in state.events[self._prev_events :]:
            if event["is_true_positive"]:
                reward += self._true_claim
            else:
                reward -= self._false_claim
        self._prev_events = len(state.events)
        self._prev_claimed = len(state.claimed)
        if not self._succeeded and state.metrics()["success"]:
            self._succeeded = True
            reward += self._success_bonus
        self._metric = reward


_AGGREGATED_MODES: dict = {}


def _aggregated(mode: str) -> bool:
    """Whether the SPEC §5 aggregator takes episodes of ``mode`` (a ``sequential`` episode
    is left out where it does not: its aggregates are GOAT-Bench's, SPEC §11)."""
    if mode not in _AGGREGATED_MODES:
        try:
            Aggregator().add(mode, {})
            _AGGREGATED_MODES[mode] = True
        except ValueError:
            _AGGREGATED_MODES[mode] = False
    return _AGGREGATED_MODES[mode]


@registry.register_measure
class MosAggregates(_StateMeasure):
    """The SPEC §5 aggregates (tse over many as tse_mos, ...) of the episodes this
    environment has run, current one included, as a dict whose per-episode mean is that
    aggregate: episode k reports k * A_k - (k - 1) * A_(k-1), so habitat.Benchmark's mean
    over N episodes is A_N, never NaN (an aggregate without any value is absent). Not a
    per-episode value: records and habitat-baselines leave it out."""

    cls_uuid = "mos_aggregates"

    def __init__(self, sim, config, task, *args: Any, **kwargs: Any):
        super().__init__(sim, config, task, *args, **kwargs)
        self._done = Aggregator()  # the finished episodes
        self._done_scaled: dict = {}  # (k - 1) * A_(k-1)
        self._current = None  # (target_mode, metrics) of the episode under way

    def reset_metric(self, *args: Any, task, episode=None, **kwargs: Any) -> None:
        if self._current is not None and _aggregated(self._current[0]):
            # the previous episode is over: commit its values
            self._done.add(*self._current)
            n = self._done.num_episodes
            self._done_scaled = {k: n * v for k, v in self._done.result().items() if v is not None}
        self._mode = str(getattr(episode, "target_mode", "single"))
        self.update_metric(task=task)

    def update_metric(self, *args: Any, task, **kwargs: Any) -> None:
        self._current = (self._mode, dict(task.mos_state.metrics()))
        self._metric = None  # computed when read (habitat.Benchmark reads once per episode)

    def get_metric(self) -> dict:
        if self._metric is None:
            acc = self._done.copy()
            if _aggregated(self._current[0]):
                acc.add(*self._current)
            n = acc.num_episodes
            self._metric = {
                k: n * v - self._done_scaled.get(k, 0.0)
                for k, v in acc.result().items()
                if v is not None
            }
        return self._metric
