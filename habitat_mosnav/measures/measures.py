"""Measures of MultiObjectNav-v1 (SPEC §4, names in SPEC §9).

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

NAN = float("nan")


class _StateMeasure(Measure):
    """Reads one field of the episode metrics."""

    cls_uuid: str = ""
    field: str = ""

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
        v = state.metrics()[self.field]
        return NAN if v is None else float(v)

    def update_metric(self, *args: Any, task, **kwargs: Any) -> None:
        self._metric = self.value(task.mos_state)


def _register(name: str, uuid: str, field: str, doc: str):
    cls = type(name, (_StateMeasure,), {"cls_uuid": uuid, "field": field, "__doc__": doc,
                                        "__module__": __name__})
    registry.register_measure(cls)
    return cls


MosTargetsFound = _register("MosTargetsFound", "mos_targets_found", "targets_found",
                            "F: distinct targets claimed.")
MosPrecision = _register("MosPrecision", "mos_precision", "precision", "tp / (tp + fp).")
MosRecall = _register("MosRecall", "mos_recall", "recall", "min(1, F / R).")
MosF1 = _register("MosF1", "mos_f1", "f1", "2PR / (P + R).")
MosSuccess = _register("MosSuccess", "mos_success", "success", "Per-mode success.")
MosTrajectoryLength = _register("MosTrajectoryLength", "trajectory_length",
                                "trajectory_length", "Path length p (m).")
OptimalSubsetDistance = _register("OptimalSubsetDistance", "optimal_subset_distance",
                                  "optimal_subset_distance", "l (m).")
AgentSubsetDistance = _register("AgentSubsetDistance", "agent_subset_distance",
                                "agent_subset_distance", "a (m); NaN without claims.")
SPLMulti = _register("SPLMulti", "spl_multi", "spl_multi", "success * l / max(p, l).")
PathEfficiency = _register("PathEfficiency", "path_efficiency", "pe", "a / max(p, a).")
TargetSelectionEfficiency = _register("TargetSelectionEfficiency",
                                      "target_selection_efficiency", "tse", "l / a.")
RepeatedTargetSelectionRate = _register("RepeatedTargetSelectionRate", "rtsr", "rtsr",
                                        "Share of repeated target claims.")
FalseTermination = _register("FalseTermination", "false_termination", "false_termination",
                             "MOC: FINISH with F < R.")
OverExplorationTarget = _register("OverExplorationTarget", "oer_target", "oer_target",
                                  "(finish - all found) / T.")
OverExplorationSpace = _register("OverExplorationSpace", "oer_space", "oer_space",
                                 "(finish - space exhausted) / T.")
SpaceCoverage = _register("SpaceCoverage", "space_coverage", "coverage",
                          "Fraction of the space oracle's samples explored.")


@registry.register_measure
class DistanceToNearestUnclaimedTarget(_StateMeasure):
    """Geodesic distance to the nearest view point of a not yet claimed target (0 when all
    are claimed)."""

    cls_uuid = "distance_to_nearest_unclaimed_target"

    def value(self, state) -> float:
        return float(state.distance_to_nearest_unclaimed())


@registry.register_measure
class MosReportEvents(_StateMeasure):
    """The claim events of SPEC §3 (a list; not a scalar)."""

    cls_uuid = "mos_report_events"

    def value(self, state):
        return copy.deepcopy(state.events)


@registry.register_measure
class MosReward(_StateMeasure):
    """Progress toward the nearest unclaimed target, +bonus per true claim, -penalty per
    false claim, +success bonus once, plus a per-step slack (weights in config)."""

    cls_uuid = "mos_reward"

    def reset_metric(self, *args: Any, task, **kwargs: Any) -> None:
        state = task.mos_state
        self._prev_distance = state.distance_to_nearest_unclaimed()
        self._prev_events = 0
        self._prev_claimed = 0
        self._succeeded = False
        self._metric = 0.0

    def update_metric(self, *args: Any, task, **kwargs: Any) -> None:
        cfg = self._config
        state = task.mos_state
        reward = float(cfg.slack_reward)
        distance = state.distance_to_nearest_unclaimed()
        if len(state.claimed) == self._prev_claimed and math.isfinite(distance) and (
            math.isfinite(self._prev_distance)
        ):
            # The nearest-unclaimed target changes after a claim: no jump then.
            reward += cfg.progress_weight * (self._prev_distance - distance)
        self._prev_distance = distance
        for event in state.events[self._prev_events:]:
            if event["is_true_positive"]:
                reward += cfg.true_claim_reward
            else:
                reward -= cfg.false_claim_penalty
        self._prev_events = len(state.events)
        self._prev_claimed = len(state.claimed)
        if not self._succeeded and state.metrics()["success"]:
            self._succeeded = True
            reward += cfg.success_reward
        self._metric = reward
