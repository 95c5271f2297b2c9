"""Per-episode bookkeeping of MultiObjectNav-v1: claims, FINISH, path, space oracle.

The task owns one :class:`MosEpisodeState` per episode (``task.mos_state``). Actions update
it, measures read it, and the evaluation layer and privileged agents inspect it. All metric
arithmetic is delegated to :mod:`habitat_mosnav.metrics`, so Habitat measures and result
files share one definition. Geodesics go through the simulator interface only
(``sim.geodesic_distance(a, [b, ...], episode=None)``, multi-goal: the distance to the
nearest of the points).

Cost per step (the hot path): a step without a claim asks at most **one** geodesic query,
the multi-goal query from the agent to every view point of the targets not yet claimed
(it serves ``distance_to_nearest_unclaimed_target`` and ``mos_reward``), and none when the
agent did not move; per-target distances are asked only at a claim (to resolve it: one
query per target). ``metrics()`` recomputes the claim-dependent SPEC §4 fields only when
an event, FINISH or the space oracle changed them; per step it updates the path-length
fields. At reset, the
legs of SPEC §4 are computed once (:func:`habitat_mosnav.metrics.legs`: one query per
target from the start, and per pair of targets one multi-goal query per view point of the
target with fewer view points); pair values are kept in the task's ``leg_cache`` for the
next episodes of the same scene, which share targets.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, MutableMapping, Optional

import numpy as np

from habitat_mosnav import metrics
from habitat_mosnav.api import MULTI_MODES
from habitat_mosnav.keys import episode_seed

NAN = float("nan")


class EpisodeState:
    """What every episode kind's bookkeeping shares: the public surface that measures, the
    evaluator and privileged agents read (step, events, claims, how it ended, where the
    agent is and how far it walked), the geodesic query and the per-step path update."""

    def __init__(self, sim, episode, success_distance: float, max_steps: int):
        self._sim = sim
        self.episode = episode
        self.target_mode: str = episode.target_mode
        self.target_ids: List[int] = list(episode.target_object_ids)
        self.success_distance = float(success_distance)
        self.max_steps = int(max_steps)
        self.goals = {g.object_id: g for g in episode.goals}

        self.step = 0
        self.events: List[Dict[str, Any]] = []
        self.claimed: List[int] = []
        self.finish_step: Optional[int] = None
        self.finish_sent = False
        self.ended_by: Optional[str] = None

        self.start_position = np.asarray(episode.start_position, dtype=np.float64)
        self.position = np.asarray(sim.get_agent_state().position, dtype=np.float64)
        self.trajectory_length = 0.0
        self._floats: Dict[str, float] = {}
        self._floats_of: Optional[Dict[str, Any]] = None

    def _geo(self, a, points) -> float:
        # episode=None: HabitatSim caches the first goal set per episode otherwise.
        return float(
            self._sim.geodesic_distance(np.asarray(a, dtype=np.float32), points, episode=None)
        )

    def begin_step(self) -> None:
        self.step += 1

    def after_action(self) -> None:
        """Called after every action: the path walked (sum of Euclidean steps)."""
        pos = np.asarray(self._sim.get_agent_state().position, dtype=np.float64)
        self.trajectory_length += float(np.linalg.norm(pos - self.position))
        self.position = pos

    def metric_floats(self) -> Dict[str, float]:
        """:meth:`metrics` as floats with NaN for null (what the Habitat measures report),
        converted once per change for all measures."""
        m = self.metrics()
        if self._floats_of is not m:
            self._floats = {k: NAN if v is None else float(v) for k, v in m.items()}
            self._floats_of = m
        return self._floats


class MosEpisodeState(EpisodeState):
    """Everything that happened so far in the current episode."""

    def __init__(
        self,
        sim,
        episode,
        success_distance: float,
        coverage_samples: int,
        coverage_radius: float,
        max_steps: int,
        leg_cache: Optional[MutableMapping] = None,
    ):
        super().__init__(sim, episode, success_distance, max_steps)
        self.target_count: Optional[int] = episode.target_count
        self.required_count: int = metrics.required_target_count(
            self.target_mode, self.target_ids, self.target_count
        )
        self._near_points = {
            oid: np.asarray(self.goals[oid].near_points, dtype=np.float32).reshape(-1, 3)
            for oid in self.target_ids
        }
        self.all_found_step: Optional[int] = None

        # Legs of SPEC §4: start_dist[j] = s_j, pair_dist[i, j] = c_ij.
        self.start_dist, self.pair_dist, self.start_geodesic = metrics.legs(
            self._geo,
            self.start_position,
            [self._near_points[oid] for oid in self.target_ids],
            self.success_distance,
            cache=leg_cache,
            cache_scope=getattr(episode, "scene_id", None),
        )
        self.optimal_subset_distance = metrics.optimal_subset_distance(
            self.target_mode, self.target_ids, self.target_count, self.start_dist, self.pair_dist
        )
        self.agent_subset_distance: Optional[float] = None

        self._init_space_oracle(int(coverage_samples), float(coverage_radius))
        self._dist_key: Optional[bytes] = None
        self._dists: Dict[int, float] = {}
        self._nearest_key = None
        self._nearest = math.inf
        self._unclaimed_points = self._points_of(self.target_ids)
        self._metrics_key = None
        self._metrics_step: Optional[int] = None
        self._events_changed = False
        self._base: Dict[str, Any] = {}
        self._metrics: Dict[str, Any] = {}

    # ------------------------------------------------------------------ geometry
    def _points_of(self, ids) -> np.ndarray:
        parts = [self._near_points[oid] for oid in ids]
        return np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.float32)

    def target_distances(self) -> Dict[int, float]:
        """Geodesic agent -> nearest view point of each target (one query per target, kept
        while the agent stays where it is; the task asks for it only at a claim)."""
        key = self.position.tobytes()
        if self._dist_key != key:
            self._dists = {
                oid: self._geo(self.position, pts) for oid, pts in self._near_points.items()
            }
            self._dist_key = key
        return self._dists

    def near_targets(self) -> List[tuple]:
        return [
            (oid, d) for oid, d in self.target_distances().items() if d <= self.success_distance
        ]

    def distance_to_nearest_unclaimed(self) -> float:
        """Geodesic agent -> nearest view point of any unclaimed target (0 when all are
        claimed): one multi-goal query when the agent moved or claimed, none when it
        turned, looked or stood still, or when the per-target distances at this position
        are known."""
        key = (self.position.tobytes(), len(self.claimed))
        if key != self._nearest_key:
            claimed = set(self.claimed)
            if len(claimed) >= len(self.target_ids):
                self._nearest = 0.0
            elif self._dist_key == key[0]:
                self._nearest = min(d for oid, d in self._dists.items() if oid not in claimed)
            else:
                self._nearest = self._geo(self.position, self._unclaimed_points)
            self._nearest_key = key
        return self._nearest

    # ------------------------------------------------------------------ space oracle
    def _init_space_oracle(self, samples: int, radius: float) -> None:
        self.coverage_radius = radius
        self.space_exhausted_step: Optional[int] = None
        if samples <= 0:
            self._samples = None
            self._explored = None
            return
        # Uniform over the start's island, on the start's floor: (x, z) drawn in the
        # navigable surface's extent with an RNG seeded by the episode key alone (the same points on
        # every rank, run and simulator; the simulator's own RNG is left alone), kept where
        # navigable and on that island (habitat-sim 0.3.3's is_navigable / get_island), so
        # every point is reachable and no geodesic query is spent on it.
        pathfinder = self._sim.pathfinder
        rng = np.random.default_rng(
            episode_seed(0, self.episode.episode_key or self.episode.episode_id)
        )
        start = np.asarray(self.start_position, dtype=np.float64)
        island = int(pathfinder.get_island(start))
        # the polygons' own extent, not get_bounds(): a navmesh's tile bounds may be set
        # kilometres wide around the same polygons, and then no sample would land
        from habitat_mosnav.sims.pathfinder import navigable_extent

        lo, hi = navigable_extent(pathfinder)
        points: List[np.ndarray] = []
        for _ in range(50):
            xz = rng.uniform([lo[0], lo[2]], [hi[0], hi[2]], size=(2 * samples, 2))
            for x, z in xz:
                p = np.array([x, start[1], z])
                if pathfinder.is_navigable(p) and int(pathfinder.get_island(p)) == island:
                    p[1] = float(np.asarray(pathfinder.snap_point(p))[1])
                    points.append(p)
                    if len(points) == samples:
                        break
            if len(points) == samples:
                break
        self._samples = np.array(points, dtype=np.float64).reshape(-1, 3)
        self._explored = np.zeros(len(self._samples), dtype=bool)
        self._update_coverage()

    def _update_coverage(self) -> None:
        if self._samples is None or self.space_exhausted_step is not None:
            return
        d2 = np.sum((self._samples - self.position) ** 2, axis=1)
        self._explored |= d2 <= self.coverage_radius**2
        if self._explored.all():
            self.space_exhausted_step = self.step

    @property
    def coverage(self) -> Optional[float]:
        if self._samples is None or len(self._samples) == 0:
            return None
        return float(self._explored.mean())

    # ------------------------------------------------------------------ events
    def after_action(self) -> None:
        """Called after every action: path length and space coverage."""
        super().after_action()
        self._update_coverage()

    def claim(self) -> Dict[str, Any]:
        """A TARGET_FOUND signal at the current position (SPEC §3)."""
        event = metrics.resolve_claim(self.step, self.near_targets(), set(self.claimed))
        self.events.append(event)
        self._events_changed = True
        if event["new_targets"]:
            self.claimed.extend(event["new_targets"])
            claimed = set(self.claimed)
            self._unclaimed_points = self._points_of(
                [oid for oid in self.target_ids if oid not in claimed]
            )
            self.agent_subset_distance = metrics.agent_subset_distance(
                self.claimed, self.target_ids, self.start_dist, self.pair_dist
            )
            if self.all_found_step is None and len(self.claimed) >= self.required_count:
                self.all_found_step = self.step
        return event

    def end_by_agent(self, finish: bool) -> None:
        """The agent ended the episode: FINISH (0/9) when ``finish``, else TARGET_FOUND in
        single/any. In single/any either one is a claim at the final position."""
        if self.target_mode not in MULTI_MODES:
            self.claim()
        self.finish_step = self.step
        self.finish_sent = self.finish_sent or finish
        self._events_changed = True
        self.ended_by = "finish" if finish else "target_found"

    # ------------------------------------------------------------------ metrics
    def outcome(self) -> metrics.EpisodeOutcome:
        return metrics.EpisodeOutcome(
            target_mode=self.target_mode,
            target_ids=self.target_ids,
            target_count=self.target_count,
            max_steps=self.max_steps,
            steps_taken=self.step,
            events=self.events,
            finish_step=self.finish_step,
            finish_sent=self.finish_sent,
            ended_by_agent=self.ended_by is not None,
            trajectory_length=self.trajectory_length,
            start_dist=self.start_dist,
            pair_dist=self.pair_dist,
            all_found_step=self.all_found_step,
            space_exhausted_step=self.space_exhausted_step,
            coverage=self.coverage,
            optimal_subset_distance=self.optimal_subset_distance,
            agent_subset_distance=self.agent_subset_distance,
        )

    def metrics(self) -> Dict[str, Any]:
        """SPEC §4 values now (None = null), once per step for all measures: the fields that
        depend on the events, FINISH and the space oracle are recomputed only when those
        change; per step only the path-length fields and the coverage are updated."""
        if self._metrics_step == self.step and not self._events_changed:
            return self._metrics  # the other measures of this step
        self._events_changed = False
        key = (len(self.events), self.finish_step, self.finish_sent, self.space_exhausted_step)
        if key != self._metrics_key:
            self._base = metrics.episode_metrics(self.outcome())
            self._metrics_key = key
            self._metrics_step = None
        if self._metrics_step != self.step:
            m = dict(self._base)
            m.update(
                metrics.path_metrics(
                    m["success"],
                    self.optimal_subset_distance,
                    self.agent_subset_distance,
                    self.trajectory_length,
                )
            )
            coverage = self.coverage
            m["coverage"] = None if coverage is None or not math.isfinite(coverage) else coverage
            self._metrics = m
            self._metrics_step = self.step
        return self._metrics
