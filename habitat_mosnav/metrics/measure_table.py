"""The one table of the task's Habitat measures (SPEC §9): name, class, metric field, formula.

Everything else follows from it: the measure classes in
:mod:`habitat_mosnav.measures.measures` (explicit classes, checked against this table by
``tests/test_measure_table.py``), their config dataclasses in
:mod:`habitat_mosnav.config.default_structured_configs`, the measurement list of
``config/habitat/task/mosnav.yaml`` (same order, checked by the same test), the measure ->
SPEC §4 field map the evaluation uses, and the non-scalar measures habitat-baselines must
not average. No habitat import.
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

__all__ = ["MEASURES", "MEASURE_TO_FIELD", "MeasureSpec", "NON_SCALAR_MEASURES"]


class MeasureSpec(NamedTuple):
    name: str  #: measure uuid = config key under ``habitat.task.measurements``
    type: str  #: the registered class (``type:`` in the config)
    field: Optional[str]  #: the ``MosEpisodeState.metrics()`` / SPEC §4 field it reports
    doc: str  #: the formula (the class docstring and the config dataclass docstring)
    scalar: bool = True


#: In the order of ``config/habitat/task/mosnav.yaml``.
MEASURES: Tuple[MeasureSpec, ...] = (
    MeasureSpec("mos_report_events", "MosReportEvents", None,
                "The claim events of SPEC §3 (a list, not a scalar).", scalar=False),
    MeasureSpec("mos_targets_found", "MosTargetsFound", "targets_found",
                "F: the number of distinct targets claimed."),
    MeasureSpec("mos_precision", "MosPrecision", "precision", "tp / (tp + fp); 0 without claims."),
    MeasureSpec("mos_recall", "MosRecall", "recall", "min(1, F / R)."),
    MeasureSpec("mos_f1", "MosF1", "f1", "2PR / (P + R); 0 when P + R = 0."),
    MeasureSpec("mos_success", "MosSuccess", "success", "The per-mode success of SPEC §4."),
    MeasureSpec("trajectory_length", "MosTrajectoryLength", "trajectory_length",
                "p: the path length walked so far (m)."),
    MeasureSpec("optimal_subset_distance", "OptimalSubsetDistance", "optimal_subset_distance",
                "l of SPEC §4 (m)."),
    MeasureSpec("agent_subset_distance", "AgentSubsetDistance", "agent_subset_distance",
                "a of SPEC §4 (m); NaN without claims."),
    MeasureSpec("spl_multi", "SPLMulti", "spl_multi", "success * l / max(p, l)."),
    MeasureSpec("path_efficiency", "PathEfficiency", "pe", "PE = a / max(p, a); NaN without claims."),
    MeasureSpec("target_selection_efficiency", "TargetSelectionEfficiency", "tse",
                "TSE = l / a; NaN without claims or with F < R."),
    MeasureSpec("rtsr", "RepeatedTargetSelectionRate", "rtsr",
                "(m - |set(S)|) / m over the claims that had near targets; 0 when m = 0."),
    MeasureSpec("false_termination", "FalseTermination", "false_termination",
                "MOC only: 1 for FINISH with F < R, 0 for FINISH with F = R; NaN without FINISH."),
    MeasureSpec("oer_target", "OverExplorationTarget", "oer_target",
                "(finish step - all-found step) / T."),
    MeasureSpec("oer_space", "OverExplorationSpace", "oer_space",
                "(finish step - space-exhausted step) / T."),
    MeasureSpec("space_coverage", "SpaceCoverage", "coverage",
                "The fraction of the space oracle's samples explored."),
    MeasureSpec("distance_to_nearest_unclaimed_target", "DistanceToNearestUnclaimedTarget", None,
                "Geodesic distance to the nearest view point of a not yet claimed target "
                "(0 when all are claimed)."),
    MeasureSpec("mos_reward", "MosReward", None,
                "progress_weight * (decrease of the distance to the nearest unclaimed target) "
                "+ true_claim_reward per true claim - false_claim_penalty per false claim "
                "+ success_reward once + slack_reward per step."),
    MeasureSpec("mos_aggregates", "MosAggregates", None,
                "The SPEC §5 aggregates (tse over many as tse_mos, ...) of the episodes this "
                "environment has run, current one included, as a dict whose per-episode mean "
                "is that aggregate: episode k reports k * A_k - (k - 1) * A_(k-1), so "
                "habitat.Benchmark's mean over N episodes is A_N, never NaN (an aggregate "
                "without any value is absent). Not a per-episode value: records and "
                "habitat-baselines leave it out.", scalar=False),
)

#: measure name -> SPEC §4 field, for the measures that report one.
MEASURE_TO_FIELD: Dict[str, str] = {m.name: m.field for m in MEASURES if m.field}
#: Measures whose value is not a number (habitat-baselines must not average them).
NON_SCALAR_MEASURES: Tuple[str, ...] = tuple(m.name for m in MEASURES if not m.scalar)
