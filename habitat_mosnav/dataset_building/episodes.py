"""Stage ``episodes``: starts sampled on the navmesh per query and target mode.

Eligibility by the number N of objects a query matches (all of them are the episode's
targets, so claiming any matching instance counts): ``single`` needs N = 1, ``any`` and
``all`` N >= 2, ``many`` N >= 3 with ``target_count`` drawn from 2..N-1. Targets must be
mutually reachable; a start is accepted when it reaches every target (so it lies on their
island), is not already within reach of one (geodesic to every target's view points above
``min_start_distance``) and the optimal subset distance lies within
[``min_optimal_distance``, ``max_optimal_distance``]. ``info.optimal_subset_distance`` is
computed by the exact solver :func:`habitat_mosnav.metrics.shortest_open_path` over
geodesic distances between ``navigable_position`` s (SPEC §4).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.api import TARGET_MODES
from habitat_mosnav.dataset_building.common import rng_for, stable_seed, yaw_to_quat, rounded


@dataclass
class EpisodeOptions:
    modes: Sequence[str] = TARGET_MODES
    episodes_per_query: int = 1          # per (query, mode)
    max_per_group: Optional[int] = None  # per scene and (pure-category?, mode)
    min_start_distance: float = 1.5      # start -> nearest view point of any target
    min_optimal_distance: float = 2.0
    max_optimal_distance: float = 25.0
    max_targets: int = 12                # exact solver stays fast up to here
    start_tries: int = 300

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
    """Geodesics between goals (navigable_position) and from a start, memoised."""

    def __init__(self, geo, goals: Dict[int, Dict[str, Any]]):
        self.geo = geo
        self.goals = goals
        self._pair: Dict[Tuple[int, int], float] = {}

    def pair(self, a: int, b: int) -> float:
        if a == b:
            return 0.0
        if (a, b) not in self._pair:
            self._pair[(a, b)] = self.geo.geodesic(self.goals[a]["navigable_position"],
                                                   self.goals[b]["navigable_position"])
        return self._pair[(a, b)]

    def pair_matrix(self, ids: Sequence[int]) -> np.ndarray:
        n = len(ids)
        m = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                m[i, j] = self.pair(ids[i], ids[j])
        return m

    def start(self, p, oid: int) -> float:
        return self.geo.geodesic(p, self.goals[oid]["navigable_position"])

    def start_to_views(self, p, oid: int) -> float:
        g = self.goals[oid]
        pts = [v["position"] for v in g.get("view_points") or []] or [g["navigable_position"]]
        d = self.geo.sim.geodesic_distance(np.asarray(p, dtype=np.float32),
                                           [np.asarray(x, dtype=np.float32) for x in pts])
        return float(d) if np.isfinite(d) else float("inf")


def build_episodes(geo, scene_id: str, goals: List[Dict[str, Any]], queries: List[Dict[str, Any]],
                   opts: EpisodeOptions, seed: int, counts: Counter, progress=None) -> List[Dict[str, Any]]:
    """Episodes of one scene, deterministic for a given seed."""
    from habitat_mosnav.metrics import shortest_open_path

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
            pair = dist.pair_matrix(ids)
            if not np.all(np.isfinite(pair)):
                counts["skipped_targets_not_mutually_reachable"] += 1
                continue
            for e in range(opts.episodes_per_query):
                if opts.max_per_group is not None and group_count[group] >= opts.max_per_group:
                    break
                rng = rng_for("episode", seed, scene_id, q["query_id"], mode, e)
                n = len(ids)
                target_count = int(rng.integers(2, n)) if mode == "many" else None
                k = solver_k(mode, n, target_count)
                found = _sample_start(geo, dist, ids, pair, k, opts,
                                      stable_seed("start", seed, scene_id, q["query_id"], mode, e),
                                      shortest_open_path)
                if found is None:
                    counts[f"no_start_{mode}"] += 1
                    continue
                start, start_d, length, order_idx = found
                yaw = float(rng.uniform(-np.pi, np.pi))
                ep = {"episode_id": f"{q['query_id']}-{mode}-{e}", "query_id": q["query_id"],
                      "target_mode": mode}
                if mode == "many":
                    ep["target_count"] = target_count
                ep.update({
                    "target_object_ids": ids,
                    "start_position": rounded(start),
                    "start_rotation": yaw_to_quat(yaw),
                    "info": {"optimal_subset_distance": round(float(length), 4),
                             "geodesic_to_targets": [round(float(d), 4) for d in start_d],
                             "optimal_target_order": [ids[i] for i in order_idx]},
                })
                episodes.append(ep)
                group_count[group] += 1
                counts[f"episodes_{mode}"] += 1
    episodes.sort(key=lambda ep: (ep["query_id"], TARGET_MODES.index(ep["target_mode"]), ep["episode_id"]))
    return episodes


def _sample_start(geo, dist: _Distances, ids: List[int], pair: np.ndarray, k: Optional[int],
                  opts: EpisodeOptions, seed: int, solver):
    """First sampled navigable start meeting every constraint, or None."""
    geo.seed(seed)
    for _ in range(opts.start_tries):
        p = geo.random_point()
        if not np.all(np.isfinite(p)):
            continue
        start_d = [dist.start(p, oid) for oid in ids]
        if not all(np.isfinite(start_d)):
            continue  # another island
        if min(start_d) > opts.max_optimal_distance:
            continue
        if min(dist.start_to_views(p, oid) for oid in ids) < opts.min_start_distance:
            continue
        length, order_idx = solver(np.asarray(start_d), pair, k)
        if not np.isfinite(length):
            continue
        if not (opts.min_optimal_distance <= length <= opts.max_optimal_distance):
            continue
        return np.asarray(p, dtype=np.float64), start_d, float(length), list(order_idx)
    return None
