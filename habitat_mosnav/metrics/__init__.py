"""Pure metric math of SPEC §3–§5 (no habitat, no torch): the exact open-path solver,
the legs between claim regions, claim resolution, per-episode metrics and their aggregation."""
from habitat_mosnav.metrics.aggregate import AGGREGATED_FIELDS, aggregate, finite_mean
from habitat_mosnav.metrics.episode import (
    METRIC_FIELDS,
    PATH_FIELDS,
    EpisodeOutcome,
    agent_subset_distance,
    all_found_step,
    claimed_ids,
    distance_arrays,
    episode_metrics,
    false_termination,
    finish_with_unexplored_space,
    mode_success,
    oer,
    optimal_subset_distance,
    path_efficiency,
    path_metrics,
    precision_recall_f1,
    raw_spl,
    required_target_count,
    resolve_claim,
    rtsr,
    spl_multi,
    subset_distance,
    target_selection_efficiency,
    time_to_first_target,
)
from habitat_mosnav.metrics.legs import (
    SUCCESS_DISTANCE,
    leg_geodesics,
    legs,
    min_pair_geodesic,
    pair_geodesics,
    pair_legs,
    start_geodesics,
    start_legs,
    subset_lower_bound,
)
from habitat_mosnav.metrics.open_path import shortest_open_path

__all__ = [
    "AGGREGATED_FIELDS", "METRIC_FIELDS", "PATH_FIELDS", "SUCCESS_DISTANCE", "leg_geodesics", "legs",
    "min_pair_geodesic", "pair_geodesics", "pair_legs", "start_geodesics", "start_legs",
    "subset_lower_bound", "EpisodeOutcome", "agent_subset_distance",
    "aggregate", "all_found_step", "claimed_ids", "distance_arrays", "episode_metrics",
    "false_termination", "finish_with_unexplored_space", "finite_mean", "mode_success", "oer",
    "optimal_subset_distance", "path_efficiency", "path_metrics", "precision_recall_f1", "raw_spl",
    "required_target_count", "resolve_claim", "rtsr", "shortest_open_path", "spl_multi",
    "subset_distance", "target_selection_efficiency", "time_to_first_target",
]
