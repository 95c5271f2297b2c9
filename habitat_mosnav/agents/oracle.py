"""A privileged oracle: proves that episodes are solvable and that the metrics reward success.

It reads the episode's targets and ``task.mos_state`` through the ``habitat.Env`` handed to
``bind_env`` (the evaluator calls it at each episode start), visits the required number of
targets in the order of the task's own bound l (``metrics.subset_lower_bound`` over the
task's legs, SPEC §4), picks one view point per planned target so that start -> view point ->
view point ... is shortest (dynamic programming over the view points in that order, on
the simulator's geodesics), walks geodesic paths (``sim.pathfinder.find_path``) to them
with the discrete actions (to the nearest remaining view point when a chosen one fails),
claims a target (6) as soon as one is near (within the success distance of a view point:
it usually stops short of the view point), and sends FINISH (0) in many/all once enough
targets are claimed. It speaks the ``goat`` protocol and asks no geodesic query of its own
per step: nearness is the task's cached ``distance_to_nearest_unclaimed``.

In a ``sequential`` episode (SPEC §11) it walks to the nearest view point of the current
subtask's targets and sends SUBTASK_STOP (6) once within the success distance; a subtask
with nothing reachable is stopped where the agent stands (it fails), and the episode ends
after the last subtask's stop. ``detour_steps`` does not apply there.

``detour_steps`` > 0 makes a deliberately inefficient oracle (for checking that SPL falls
with path length): it first turns away from its first target and walks that many forward
steps, then proceeds as the oracle.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np

from habitat_mosnav.api import MULTI_MODES, SEQUENTIAL, Action, Observation
from habitat_mosnav.pose import wrap_angle, yaw_of
from habitat_mosnav.simulators import path_request_types

__all__ = ["OracleAgent"]


def _polyline_distance(p: np.ndarray, pts: Sequence[np.ndarray]) -> float:
    """Horizontal distance from ``p`` to the polyline ``pts`` ((x, z) points)."""
    if len(pts) == 1:
        return float(np.hypot(*(p - pts[0])))
    best = math.inf
    for a, b in zip(pts, pts[1:]):
        ab = b - a
        t = min(1.0, max(0.0, float(np.dot(p - a, ab) / max(float(np.dot(ab, ab)), 1e-12))))
        best = min(best, float(np.hypot(*(p - a - t * ab))))
    return best


class OracleAgent:
    """Privileged agent: needs ``bind_env(env)`` before each episode (the evaluator does it).

    ``waypoint_tolerance``: a path point closer than this (m, horizontal) counts as reached.
    ``claim_margin``: claim when the target is nearer than ``success_distance - margin``.
    ``replan_distance``: a planned path is followed until the agent is this far (m) off it.
    """

    def __init__(
        self,
        waypoint_tolerance: float = 0.1,
        claim_margin: float = 1e-3,
        max_stuck: int = 6,
        detour_steps: int = 0,
        max_view_points: int = 64,
        replan_distance: float = 0.5,
    ) -> None:
        self.detour_steps = int(detour_steps)
        self.replan_distance = float(replan_distance)
        self.max_view_points = int(max_view_points)
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
        self._detour: Optional[List[int]] = None
        self._via: Dict[int, np.ndarray] = {}
        self._paths: Dict[int, List[np.ndarray]] = {}
        self._visits: Dict[tuple, int] = {}

    # ------------------------------------------------------------------ helpers
    @property
    def _state(self):
        if self.env is None:
            raise RuntimeError(
                "OracleAgent needs bind_env(env) before act(); run it with "
                "mosnav-eval or Evaluator, which bind the environment"
            )
        state = getattr(self.env.task, "mos_state", None)
        if state is None:
            raise RuntimeError("OracleAgent: the task has no mos_state (not MultiObjectNav-v1?)")
        return state

    def _make_plan(self, state) -> List[int]:
        from habitat_mosnav.metrics import subset_lower_bound

        ids = list(state.target_ids)
        start = np.asarray(state.start_dist, dtype=np.float64)
        pair = np.asarray(state.pair_dist, dtype=np.float64)
        k = min(int(state.required_count), len(ids))
        length, order = subset_lower_bound(start, pair, k)
        if not order:  # nothing reachable: try the nearest ones anyway
            order = list(np.argsort(start)[:k])
        plan = [ids[i] for i in order]
        # Targets outside the optimal subset stay as fall-backs (many: any k of them count).
        plan += [oid for oid in sorted(ids, key=lambda o: start[ids.index(o)]) if oid not in plan]
        return plan

    def _choose_view_points(self, state, sim, order: Sequence[int]) -> Dict[int, np.ndarray]:
        """One view point per target of ``order`` minimising the geodesic length of
        start -> vp_1 -> vp_2 ... (exact over the view points: a layered shortest path)."""

        def geo(a, b) -> float:
            d = float(
                sim.geodesic_distance(
                    np.asarray(a, dtype=np.float32), [np.asarray(b, dtype=np.float32)], episode=None
                )
            )
            return d if math.isfinite(d) else math.inf

        layers = [self._ends(state, oid)[: self.max_view_points] for oid in order]
        if not layers or not all(layers):
            return {}
        start = np.asarray(state.start_position, dtype=np.float64)
        cost = np.array([geo(u, start) for u in layers[0]])
        back: List[np.ndarray] = []
        for prev, layer in zip(layers, layers[1:]):
            step = np.full((len(prev), len(layer)), math.inf)
            for a, u in enumerate(prev):  # one field per u on the CPU simulator
                for b, v in enumerate(layer):
                    step[a, b] = geo(v, u)
            total = cost[:, None] + step
            back.append(np.argmin(total, axis=0))
            cost = total[back[-1], np.arange(len(layer))]
        if not np.isfinite(cost).any():
            return {}
        idx = [int(np.argmin(cost))]
        for b in reversed(back):
            idx.append(int(b[idx[-1]]))
        idx.reverse()
        return {oid: layers[i][j] for i, (oid, j) in enumerate(zip(order, idx))}

    def _ends(self, state, oid: int) -> List[np.ndarray]:
        """The view points of ``oid`` still worth walking to (all, at first)."""
        if oid not in self._goal_points:
            self._goal_points[oid] = [
                np.asarray(p, dtype=np.float64) for p in state.goals[oid].near_points
            ]
        return self._goal_points[oid]

    def _find_path(self, sim, start: np.ndarray, ends: Sequence[np.ndarray]):
        """(path points, index of the end reached) to the nearest of ``ends``, or None."""
        _, multi_goal = path_request_types(sim)  # the simulator says which requests it takes
        sp = multi_goal()
        sp.requested_start = np.asarray(start, dtype=np.float32)
        sp.requested_ends = np.asarray(ends, dtype=np.float32).reshape(-1, 3)
        ok = sim.pathfinder.find_path(sp)
        if not ok or not np.isfinite(sp.geodesic_distance) or len(sp.points) == 0:
            return None
        return [np.asarray(p, dtype=np.float64) for p in sp.points], int(sp.closest_end_point_index)

    def _committed_path(self, sim, pos: np.ndarray, key, end: np.ndarray):
        """The path to ``end`` planned earlier under ``key`` while the agent stays within
        ``replan_distance`` of it (waypoints reached or passed are dropped), else a new
        plan. Following one plan keeps the agent from oscillating where the simulator's
        shortest paths from neighbouring points disagree."""
        path = self._paths.get(key)
        if path is not None:
            while len(path) > 2:
                a, b = path[0][[0, 2]], path[1][[0, 2]]
                ab, here = b - a, pos[[0, 2]]
                t = float(np.dot(here - a, ab) / max(float(np.dot(ab, ab)), 1e-12))
                if math.hypot(*(b - here)) <= self.waypoint_tolerance or t >= 1.0:
                    path.pop(0)
                else:
                    break
            if _polyline_distance(pos[[0, 2]], [p[[0, 2]] for p in path]) > self.replan_distance:
                path = None
        if path is None:
            found = self._find_path(sim, pos, [end])
            if found is None:
                self._paths.pop(key, None)
                return None
            path = self._paths[key] = list(found[0])
        return path

    def _detour_actions(self, state, rotation) -> List[int]:
        """Turn to face away from the first planned target, then walk forward."""
        first = self._ends(state, self._plan[0])
        d = np.mean(first, axis=0) - np.asarray(state.start_position)
        away = math.atan2(d[0], d[2])  # the heading opposite to (d_x, d_z) (-Z forward)
        diff = wrap_angle(away - yaw_of(rotation))
        turn = math.radians(float(self._turn_angle_deg()))
        n = int(round(abs(diff) / turn))
        side = Action.TURN_LEFT if diff > 0 else Action.TURN_RIGHT
        return [int(side)] * n + [int(Action.MOVE_FORWARD)] * self.detour_steps

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

    def _greedy_step(
        self, sim, pos: np.ndarray, rotation, goals: Sequence[np.ndarray]
    ) -> Optional[int]:
        """habitat's greedy geodesic follower in one step: of the headings one or more turns
        away, the one whose forward step (as the simulator moves it: with or without
        sliding) ends geodesically nearest to ``goals``; forward when it is the current
        heading, else the turn toward it. None when no heading gets nearer."""
        cfg = getattr(sim, "habitat_config", None)
        step = float(getattr(cfg, "forward_step_size", 0.25))
        sliding = (
            bool(cfg.get("habitat_sim_v0", {}).get("allow_sliding", True))
            if cfg is not None
            else True
        )
        move = sim.pathfinder.try_step if sliding else sim.pathfinder.try_step_no_sliding
        turn = math.radians(self._turn_angle_deg())
        n = max(1, int(round(2 * math.pi / turn)))
        ends = [np.asarray(g, dtype=np.float32) for g in goals]

        def geo(p) -> float:
            d = float(sim.geodesic_distance(np.asarray(p, dtype=np.float32), ends, episode=None))
            return d if math.isfinite(d) else math.inf

        here = geo(pos)
        yaw = yaw_of(rotation)
        best, best_key = None, (here - 1e-3, 0)
        for k in range(n):
            turns = min(k, n - k)
            a = yaw + (k if k <= n // 2 else k - n) * turn
            dest = pos + step * np.array([-math.sin(a), 0.0, -math.cos(a)])
            key = (geo(move(np.asarray(pos, np.float32), np.asarray(dest, np.float32))), turns)
            if key < best_key:
                best, best_key = k, key
        if best is None:
            return None
        if best == 0:
            return int(Action.MOVE_FORWARD)
        return int(Action.TURN_LEFT if best <= n // 2 else Action.TURN_RIGHT)

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
        sequential = state.target_mode == SEQUENTIAL
        if self._plan is None and not sequential:
            self._plan = self._make_plan(state)
            self._via = self._choose_view_points(
                state, sim, self._plan[: min(int(state.required_count), len(self._plan))]
            )
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
                self._paths.clear()  # blocked: plan afresh from here
            else:
                self._stuck = 0
                if not self._queue:  # escaped: the next blockage starts afresh
                    self._escape_side = None
        self._last_pos = pos
        # A place reached three times while heading for the same target: the plan loops
        # (sliding along a wall, or shortest paths that disagree); try another way.
        looping = False
        if self._last_action == int(Action.MOVE_FORWARD):  # turns stay in place
            progress = ("subtask", state.subtask_index) if sequential else len(claimed)
            cell = (round(float(pos[0]) / 0.05), round(float(pos[2]) / 0.05), progress)
            self._visits[cell] = self._visits.get(cell, 0) + 1
            looping = self._visits[cell] >= 3
        if looping:
            self._visits.clear()
            self._paths.clear()

        limit = state.success_distance - self.claim_margin
        # Claim whenever an unclaimed target is near (a claim never costs path length).
        if state.distance_to_nearest_unclaimed() <= limit:
            return self._remember(int(Action.TARGET_FOUND))
        if sequential:
            return self._remember(
                self._subtask_step(state, sim, pos, agent_state.rotation, looping)
            )

        if self._detour is None:
            self._detour = (
                self._detour_actions(state, agent_state.rotation) if self.detour_steps > 0 else []
            )
        if self._detour:
            return self._remember(self._detour.pop(0))

        if self._queue:  # finish an escape manoeuvre
            return self._remember(self._queue.pop(0))

        for oid in self._plan:
            if oid in claimed or oid in self._skipped:
                continue
            via = self._via.get(oid)
            if via is not None and looping:
                del self._via[oid]  # walk to the nearest view point instead
                via, looping = None, False
            if via is not None:
                path = self._committed_path(sim, pos, oid, via)
                if (
                    path is not None
                    and math.hypot(*(path[-1] - pos)[[0, 2]]) > self.waypoint_tolerance
                ):
                    return self._remember(self._follow(sim, path, pos, agent_state.rotation, [via]))
                del self._via[oid]  # unreachable, or reached without being near
            action, looping = self._toward(
                sim, pos, agent_state.rotation, self._ends(state, oid), looping
            )
            if action is not None:
                return self._remember(action)
            self._skipped.add(oid)
        # Nothing reachable is left.
        return self._remember(int(Action.FINISH) if multi else int(Action.TARGET_FOUND))

    def _toward(self, sim, pos: np.ndarray, rotation, ends: list, looping: bool):
        """(the next action toward the nearest reachable of ``ends``, or None when none is
        left; ``looping`` after it). ``ends`` (view points) is edited in place: one reached
        without being near, or unreachable, is dropped; a loop is broken once."""
        while ends:
            found = self._find_path(sim, pos, ends)
            if found is None:
                ends.clear()
                break
            path, reached = found
            horizontal = math.hypot(*(path[-1] - pos)[[0, 2]])
            if (horizontal <= self.waypoint_tolerance or looping) and 0 <= reached < len(ends):
                looping = False
                ends.pop(reached)  # at this view point without being near: the next
                continue
            return self._follow(sim, path, pos, rotation, ends), looping
        return None, looping

    def _subtask_step(self, state, sim, pos: np.ndarray, rotation, looping: bool) -> int:
        """A sequential episode: toward the nearest view point of the current subtask's
        targets still worth walking to; SUBTASK_STOP where none is reachable."""
        if self._queue:  # finish an escape manoeuvre
            return self._queue.pop(0)
        key = ("subtask", state.subtask_index)
        if key not in self._goal_points:
            self._goal_points[key] = [
                np.asarray(p, dtype=np.float64)
                for oid in state.current_subtask.target_object_ids
                for p in state.goals[oid].near_points
            ]
        action, _ = self._toward(sim, pos, rotation, self._goal_points[key], looping)
        if action is not None:
            return action
        return int(Action.SUBTASK_STOP)

    def _follow(self, sim, path, pos, rotation, goals) -> int:
        """The greedy geodesic step toward ``goals``; the path's next point when it finds
        none (or while escaping a blocked forward step)."""
        if self._stuck == 0:
            action = self._greedy_step(sim, pos, rotation, goals)
            if action is not None:
                return action
        return self._step_along(path, pos, rotation)

    def _remember(self, action: int) -> int:
        self._last_action = action
        return action
