"""Stage ``episodes``: starts sampled on the navmesh per query and target mode.

Eligibility by the number N of objects a query matches (all of them are the episode's
targets, so claiming any matching instance counts): ``single`` needs N = 1, ``any`` and
``all`` N >= 2, ``many`` N >= 3 with ``target_count`` drawn from 2..N-1. Targets must be
mutually reachable; a start is accepted when it reaches every target (so it lies on their
island), is not already within reach of one (geodesic to every target's view points above
``min_start_distance``) and the optimal subset distance lies within
[``min_optimal_distance``, ``max_optimal_distance``].

``info`` (informative; the task recomputes everything at reset): ``optimal_subset_distance``
l of SPEC §4, i.e. the exact subset DP :func:`habitat_mosnav.metrics.subset_lower_bound`
over the legs s_j = max(0, g_j(start) − d) and c_ij = max(0, min_u g_j(u) − 2d) between
claim regions (:mod:`habitat_mosnav.metrics.legs`), with ``success_distance`` d named next
to it; ``geodesic_to_targets`` g_j(start), the geodesic from the start to each target's
nearest view point; ``optimal_target_order``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from habitat_mosnav.api import TARGET_MODES
from habitat_mosnav.dataset_building.common import rng_for, stable_seed, yaw_to_quat, rounded
from habitat_mosnav.metrics import (
    SUCCESS_DISTANCE,
    pair_geodesics,
    pair_legs,
    start_geodesics,
    start_legs,
    subset_lower_bound,
)


@dataclass
class EpisodeOptions:
    modes: Sequence[str] = TARGET_MODES
    episodes_per_query: int = 1  # per (query, mode)
    max_per_group: Optional[int] = None  # per scene and (pure-category?, mode)
    min_start_distance: float = 1.5  # start -> nearest view point of any target
    min_optimal_distance: float = 2.0
    max_optimal_distance: float = 25.0
    max_targets: int = 12  # exact solver stays fast up to here
    start_tries: int = 300
    success_distance: float = SUCCESS_DISTANCE  # d of the legs behind info's l

    def params(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["modes"] = list(self.modes)
        return d


def eligible(mode: str, n: int, max_targets: int) -> bool:
    if n > max_targets:
        return False
    return {"single": n == 1, "any": n >= 2, "many": n >= 3, "all": n >= 2}[mode]


def solver_k(mode: str, n: int, target_count: Optional[int]) -> Optional[int]:
    return {"single": 1, "any": 1, "many": target_count, "all": n}[mode]


class _Distances:
    """Geodesics to the goals' view points (SPEC §3; the navigable position for a goal
    without view points) and the pair legs between goals, memoised per scene."""

    def __init__(self, geo, goals: Dict[int, Dict[str, Any]]):
        self.geo = geo
        self.points = {
            oid: [v["position"] for v in g.get("view_points") or []] or [g["navigable_position"]]
            for oid, g in goals.items()
        }
        self._pair: Dict[Any, float] = {}

    def pair_geodesics(self, ids: Sequence[int]) -> np.ndarray:
        """min over view point pairs, (n, n), inf where two goals do not reach each other."""
        return pair_geodesics(
            self.geo.geodesic_to_nearest, [self.points[i] for i in ids], self._pair
        )

    def start_geodesics(self, p, ids: Sequence[int]) -> np.ndarray:
        return start_geodesics(self.geo.geodesic_to_nearest, p, [self.points[i] for i in ids])


def build_episodes(
    geo,
    scene_id: str,
    goals: List[Dict[str, Any]],
    queries: List[Dict[str, Any]],
    opts: EpisodeOptions,
    seed: int,
    counts: Counter,
    progress=None,
) -> List[Dict[str, Any]]:
    """Episodes of one scene, deterministic for a given seed."""
    by_id = {int(g["object_id"]): g for g in goals}
    dist = _Distances(geo, by_id)
    order = list(queries)
    rng_order = rng_for("episodes-order", seed, scene_id)
    rng_order.shuffle(order)  # with max_per_group, which queries get episodes depends on the seed
    group_count: Counter = Counter()
    episodes = []
    for q in order:
        if progress is not None:
            progress.update(1)
        ids = sorted(int(i) for i in q["matched_object_ids"])
        pure = bool(q.get("pure_category"))
        for mode in opts.modes:
            if not eligible(mode, len(ids), opts.max_targets):
                continue
            group = (pure, mode)
            if opts.max_per_group is not None and group_count[group] >= opts.max_per_group:
                continue
            pair_g = dist.pair_geodesics(ids)
            if not np.all(np.isfinite(pair_g)):
                counts["skipped_targets_not_mutually_reachable"] += 1
                continue
            for e in range(opts.episodes_per_query):
                if opts.max_per_group is not None and group_count[group] >= opts.max_per_group:
                    break
                rng = rng_for("episode", seed, scene_id, q["query_id"], mode, e)
                n = len(ids)
                target_count = int(rng.integers(2, n)) if mode == "many" else None
                k = solver_k(mode, n, target_count)
                found = _sample_start(
                    geo,
                    dist,
                    ids,
                    pair_legs(pair_g, opts.success_distance),
                    k,
                    opts,
                    stable_seed("start", seed, scene_id, q["query_id"], mode, e),
                )
                if found is None:
                    counts[f"no_start_{mode}"] += 1
                    continue
                start, start_d, length, order_idx = found
                yaw = float(rng.uniform(-np.pi, np.pi))
                ep = {
                    "episode_id": f"{q['query_id']}-{mode}-{e}",
                    "query_id": q["query_id"],
                    "target_mode": mode,
                }
                if mode == "many":
                    ep["target_count"] = target_count
                ep.update(
                    {
                        "target_object_ids": ids,
                        "start_position": rounded(start),
                        "start_rotation": yaw_to_quat(yaw),
                        "info": {
                            "optimal_subset_distance": round(float(length), 4),
                            "success_distance": opts.success_distance,
                            "geodesic_to_targets": [round(float(d), 4) for d in start_d],
                            "optimal_target_order": [ids[i] for i in order_idx],
                        },
                    }
                )
                episodes.append(ep)
                group_count[group] += 1
                counts[f"episodes_{mode}"] += 1
    episodes.sort(
        key=lambda ep: (ep["query_id"], TARGET_MODES.index(ep["target_mode"]), ep["episode_id"])
    )
    return episodes


def _sample_start(
    geo,
    dist: _Distances,
    ids: List[int],
    pair: np.ndarray,
    k: Optional[int],
    opts: EpisodeOptions,
    seed: int,
):
    """First sampled navigable start meeting every constraint, or None. ``pair``: the pair
    legs c_ij of ``ids``; returns (start, g_j(start), l, solver order)."""
    geo.seed(seed)
    for _ in range(opts.start_tries):
        p = geo.random_point()
        if not np.all(np.isfinite(p)):
            continue
        start_d = dist.start_geodesics(p, ids)
        if not np.all(np.isfinite(start_d)):
            continue  # another island
        if float(np.min(start_d)) < opts.min_start_distance:
            continue
        if float(np.min(start_d)) > opts.max_optimal_distance + opts.success_distance:
            continue
        length, order_idx = subset_lower_bound(start_legs(start_d, opts.success_distance), pair, k)
        if not np.isfinite(length):
            continue
        if not (opts.min_optimal_distance <= length <= opts.max_optimal_distance):
            continue
        return np.asarray(p, dtype=np.float64), list(start_d), float(length), list(order_idx)
    return None
