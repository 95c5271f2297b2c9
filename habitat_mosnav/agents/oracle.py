"""A privileged oracle: proves that episodes are solvable and that the metrics reward success.

It reads the episode's targets and ``task.mos_state`` through the ``habitat.Env`` handed to
``bind_env`` (the evaluator calls it at each episode start), visits the required number of
targets in the exact solver's optimal order (``metrics.shortest_open_path`` over the task's
own start/pair geodesics), walks geodesic paths (``sim.pathfinder.find_path``) with the
discrete actions, claims each target (6) as soon as it is near, and sends FINISH (0) in
many/all once enough targets are claimed. It speaks the ``goat`` protocol.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np

from habitat_mosnav.api import MULTI_MODES, Action, Observation
from habitat_mosnav.pose import wrap_angle, yaw_of

__all__ = ["OracleAgent"]

def _shortest_path_class(sim):
    """``ShortestPath`` of the simulator in use (CPU backend or habitat-sim)."""
    module = type(sim).__module__
    if module.startswith("habitat_mosnav"):
        from habitat_mosnav.sims import ShortestPath

        return ShortestPath
    try:
        from habitat_sim import ShortestPath  # type: ignore

        return ShortestPath
    except ImportError:
        from habitat_mosnav.sims import ShortestPath

        return ShortestPath


class OracleAgent:
    """Privileged agent: needs ``bind_env(env)`` before each episode (the evaluator does it).

    ``waypoint_tolerance``: a path point closer than this (m, horizontal) counts as reached.
    ``claim_margin``: claim when the target is nearer than ``success_distance - margin``.
    """

    def __init__(self, waypoint_tolerance: float = 0.1, claim_margin: float = 1e-3,
                 max_stuck: int = 6) -> None:
        self.waypoint_tolerance = float(waypoint_tolerance)
        self.claim_margin = float(claim_margin)
        self.max_stuck = int(max_stuck)
        self.env = None
        self.reset()

    # ------------------------------------------------------------------ protocol
    def bind_env(self, env) -> None:
        self.env = env

    def reset(self) -> None:
        self._plan: Optional[List[int]] = None
        self._goal_points: Dict[int, List[np.ndarray]] = {}
        self._skipped: set = set()
        self._last_pos: Optional[np.ndarray] = None
        self._last_action: Optional[int] = None
        self._stuck = 0
        self._escape_side: Optional[int] = None
        self._queue: List[int] = []

    # ------------------------------------------------------------------ helpers
    @property
    def _state(self):
        if self.env is None:
            raise RuntimeError("OracleAgent needs bind_env(env) before act(); run it with "
                               "mosnav-eval or Evaluator, which bind the environment")
        state = getattr(self.env.task, "mos_state", None)
        if state is None:
            raise RuntimeError("OracleAgent: the task has no mos_state (not MultiObjectNav-v1?)")
        return state

    def _make_plan(self, state) -> List[int]:
        from habitat_mosnav.metrics import shortest_open_path

        ids = list(state.target_ids)
        start = np.asarray(state.start_dist, dtype=np.float64)
        pair = np.asarray(state.pair_dist, dtype=np.float64)
        k = min(int(state.required_count), len(ids))
        length, order = shortest_open_path(start, pair, k)
        if not order:  # nothing reachable: try the nearest ones anyway
            order = list(np.argsort(start)[:k])
        plan = [ids[i] for i in order]
        # Targets outside the optimal subset stay as fall-backs (many: any k of them count).
        plan += [oid for oid in sorted(ids, key=lambda o: start[ids.index(o)]) if oid not in plan]
        return plan

    def _candidate_points(self, state, oid: int) -> List[np.ndarray]:
        """Where to walk for target ``oid``: its navigable position, then its view points
        nearest first (used when the navigable position turns out not to be near)."""
        if oid not in self._goal_points:
            goal = state.goals[oid]
            pts = []
            if getattr(goal, "navigable_position", None) is not None:
                pts.append(np.asarray(goal.navigable_position, dtype=np.float64))
            nav = pts[0] if pts else None
            vps = [np.asarray(p, dtype=np.float64) for p in goal.near_points]
            if nav is not None:
                vps.sort(key=lambda p: float(np.linalg.norm(p - nav)))
            pts.extend(vps)
            self._goal_points[oid] = pts
        return self._goal_points[oid]

    def _find_path(self, sim, start: np.ndarray, end: np.ndarray) -> Optional[List[np.ndarray]]:
        sp = _shortest_path_class(sim)()
        sp.requested_start = np.asarray(start, dtype=np.float32)
        sp.requested_end = np.asarray(end, dtype=np.float32)
        ok = sim.pathfinder.find_path(sp)
        if not ok or not np.isfinite(sp.geodesic_distance) or len(sp.points) == 0:
            return None
        return [np.asarray(p, dtype=np.float64) for p in sp.points]

    def _step_along(self, path: Sequence[np.ndarray], pos: np.ndarray, rotation) -> int:
        """Turn toward the next path point that is not yet reached, else move forward."""
        target = None
        for p in path[1:] if len(path) > 1 else path:
            d = p - pos
            if math.hypot(d[0], d[2]) > self.waypoint_tolerance:
                target = p
                break
        if target is None:
            target = path[-1]
        d = target - pos
        desired = math.atan2(-d[0], -d[2])
        diff = wrap_angle(desired - yaw_of(rotation))
        turn = math.radians(float(self._turn_angle_deg()))
        if self._stuck >= 1:
            # A forward step did not move us (a corner the quantised heading cannot clear):
            # turn one step toward the path side and commit to a forward step; while still
            # blocked, keep turning the same way (30 degrees more each time).
            self._stuck = 0
            if self._escape_side is None:
                self._escape_side = 1 if diff >= 0 else -1
            turn_action = Action.TURN_LEFT if self._escape_side > 0 else Action.TURN_RIGHT
            self._queue = [int(Action.MOVE_FORWARD)]
            return int(turn_action)
        if abs(diff) > turn / 2 + 1e-6:
            return int(Action.TURN_LEFT if diff > 0 else Action.TURN_RIGHT)
        return int(Action.MOVE_FORWARD)

    def _turn_angle_deg(self) -> float:
        try:
            return float(self.env.sim.habitat_config.turn_angle)
        except Exception:
            return 30.0

    # ------------------------------------------------------------------ act
    def act(self, observation: Observation) -> int:
        state = self._state
        sim = self.env.sim
        multi = state.target_mode in MULTI_MODES
        if self._plan is None:
            self._plan = self._make_plan(state)
        claimed = set(state.claimed)
        if multi and len(claimed) >= state.required_count:
            return int(Action.FINISH)

        agent_state = sim.get_agent_state()
        pos = np.asarray(agent_state.position, dtype=np.float64)
        if self._last_action == int(Action.MOVE_FORWARD) and self._last_pos is not None:
            moved = float(np.linalg.norm(pos - self._last_pos))
            if moved < 0.05:
                self._stuck += 1
                self._queue = []
            else:
                self._stuck = 0
                if not self._queue:  # escaped: the next blockage starts afresh
                    self._escape_side = None
        self._last_pos = pos

        distances = state.target_distances()
        limit = state.success_distance - self.claim_margin
        # Claim whenever an unclaimed target is near (a claim never costs path length).
        if any(d <= limit for oid, d in distances.items() if oid not in claimed):
            return self._remember(int(Action.TARGET_FOUND))

        if self._queue:  # finish an escape manoeuvre
            return self._remember(self._queue.pop(0))

        for oid in self._plan:
            if oid in claimed or oid in self._skipped:
                continue
            points = self._candidate_points(state, oid)
            while points:
                goal = points[0]
                horizontal = math.hypot(*(goal - pos)[[0, 2]])
                if horizontal <= self.waypoint_tolerance:
                    points.pop(0)  # reached this point without being near: try the next
                    continue
                path = self._find_path(sim, pos, goal)
                if path is None:
                    points.pop(0)
                    continue
                return self._remember(self._step_along(path, pos, agent_state.rotation))
            self._skipped.add(oid)
        # Nothing reachable is left.
        return self._remember(int(Action.FINISH) if multi else int(Action.TARGET_FOUND))

    def _remember(self, action: int) -> int:
        self._last_action = action
        return action
