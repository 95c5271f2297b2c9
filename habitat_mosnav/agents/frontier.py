"""A GOAT-style modular baseline: depth mapping, frontier exploration, a pluggable detector.

``FrontierAgent`` (``--agent habitat_mosnav.agents.frontier:FrontierAgent``) is the kind
of modular agent that GOAT-Bench and ObjectNav papers report. Each step it

1. projects the depth image into a top-down occupancy map kept in the episode-start frame
   (pose from the Observation's ``gps``/``compass`` only): points 0.15 m to
   ``agent height + 0.15`` m above the floor are obstacles; per image column, the floor up
   to the first obstacle (or the farthest floor point seen) is free;
2. asks its :class:`Detector` for instances matching the goal and remembers where each one
   was seen (its masked depth pixels, back-projected into the map);
3. if a remembered matching instance is not yet claimed, plans to a map cell within
   ``approach_radius`` (0.55 m) of a point seen on it and sends TARGET_FOUND (6) once within
   ``claim_radius`` (0.9 m). View points (SPEC §3) are the navigable points within 1 m of
   the object's box that see it, sampled every 0.25 m, so where the agent claims a view
   point is within the 0.25 m success distance. Else it walks to the nearest reachable
   frontier (free cells bordering unknown space), turns to face it on arrival and retires
   it if it is still unknown (space it cannot see from there);
4. plans on its own map only: fast marching (scikit-fmm) over the free cells, with
   obstacles inflated by the agent radius (by less when that leaves nothing reachable);
   turns toward a look-ahead point on the path, else moves forward. A forward step that
   does not move marks an obstacle ahead. It starts with a full turn on the spot.

It never claims an instance twice, sends FINISH (0) as soon as ``target_count`` instances
are claimed (``many``), and in ``all`` when no reachable frontier and no unclaimed
reachable instance is left (or at the last step of the budget: a collection counts only
with a FINISH). It speaks the ``goat`` protocol.

Privileges. The agent itself reads the Observation (depth, gps, compass, target mode and
count, step budget) and, through ``bind_env``, only the environment's *configuration*
(``env.sim.habitat_config``: camera hfov, sensor height, depth range, turn angle, forward
step, agent radius and height; documented defaults matching the demo config are used
without ``bind_env``). It reads no navmesh, geodesic, agent state or target position. All
perception privilege sits in the detector: :class:`GroundTruthDetector` (the default)
reads the semantic camera (``env.sim.get_observations_at()["semantic"]``, needs
:data:`SEMANTIC_SENSOR_OVERRIDE` in the config), the episode's matching instance ids
(``env.current_episode.target_object_ids``) and its category
(``env.current_episode.object_category``; for an image goal the pictured exemplar's, which
is what the picture tells a perfect perceiver): perfect detection and grounding of the goal.
In a ``sequential`` episode (SPEC §11) it also reads ``env.current_episode.subtasks`` (the
current subtask's targets and category, by the Observation's ``subtask_index``); the agent
keeps its map across subtasks, forgets its claims, and takes the instances it saw earlier
that match the new goal as its candidates (else turns a full circle first).
Replace it with an open-vocabulary model by passing ``detector=`` (anything with
``detect(observation) -> list[Detection]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from habitat_mosnav.api import (
    AGENT_HEIGHT,
    AGENT_RADIUS,
    CAMERA_HFOV,
    MULTI_MODES,
    Action,
    Observation,
)
from habitat_mosnav.pose import wrap_angle

__all__ = [
    "SEMANTIC_SENSOR_OVERRIDE",
    "CameraModel",
    "Detection",
    "Detector",
    "FrontierAgent",
    "GroundTruthDetector",
    "OccupancyMap",
]

#: The Hydra override that adds a semantic camera with the depth camera's geometry
#: (``habitat/simulator/sim_sensors/mosnav_semantic_sensor.yaml``); pass it to
#: ``mosnav-eval --set`` for the ground-truth detector.
SEMANTIC_SENSOR_OVERRIDE = (
    "+habitat/simulator/sim_sensors@habitat.simulator.agents.main_agent"
    ".sim_sensors.semantic_sensor=mosnav_semantic_sensor"
)


# ----------------------------------------------------------------------------- camera
@dataclass(frozen=True)
class CameraModel:
    """The depth camera and body the map needs. Defaults: the demo config
    (``benchmark/nav/mosnav/base/demo.yaml``)."""

    #: Horizontal field of view of the depth camera (degrees).
    hfov_deg: float = float(CAMERA_HFOV)
    #: Camera height above the agent's feet (m): the depth sensor's position[1].
    sensor_height: float = AGENT_HEIGHT
    #: Depth range of the (unnormalised) depth image (m).
    min_depth: float = 0.5
    max_depth: float = 5.0
    #: The agent's body: cells closer than the radius to an obstacle are not free (m).
    agent_radius: float = AGENT_RADIUS
    #: Points above this height do not block the agent (m).
    agent_height: float = AGENT_HEIGHT
    #: One turn action (degrees) and one move_forward (m), for planning actions.
    turn_angle_deg: float = 30.0
    forward_step: float = 0.25

    @classmethod
    def from_habitat_config(cls, sim_cfg) -> "CameraModel":
        """Read a habitat ``simulator`` config node (configuration only, no state)."""
        base = cls()
        agent = sim_cfg.agents.main_agent
        depth = agent.sim_sensors.get("depth_sensor")
        values = dict(
            turn_angle_deg=float(sim_cfg.get("turn_angle", base.turn_angle_deg)),
            forward_step=float(sim_cfg.get("forward_step_size", base.forward_step)),
            agent_radius=float(agent.get("radius", base.agent_radius)),
            agent_height=float(agent.get("height", base.agent_height)),
        )
        if depth is not None:
            values.update(
                hfov_deg=float(depth.hfov),
                sensor_height=float(depth.position[1]),
                min_depth=float(depth.min_depth),
                max_depth=float(depth.max_depth),
            )
        return cls(**values)


# ----------------------------------------------------------------------------- detector
@dataclass
class Detection:
    """One instance seen in the current frame.

    ``instance_id``: stable across frames (a tracker's id, or the semantic id).
    ``matches_goal``: whether the instance matches the episode's goal.
    ``mask``: (H, W) bool pixels of the instance in the depth image (the agent back-projects
    them); or ``position``: its (x, z) in the episode-start frame, if the detector knows it.
    """

    instance_id: int
    matches_goal: bool
    category: Optional[str] = None
    mask: Optional[np.ndarray] = None
    position: Optional[Sequence[float]] = None
    score: float = 1.0


class Detector:
    """Interface: ``detect(observation) -> list[Detection]``; optional ``reset()`` (each
    episode) and ``bind_env(env)`` (privileged detectors; called before ``reset``)."""

    def reset(self) -> None:
        pass

    def detect(self, observation: Observation) -> List[Detection]:  # pragma: no cover
        raise NotImplementedError


class GroundTruthDetector(Detector):
    """Perfect perception from the semantic camera (privileged).

    Reads ``env.sim.get_observations_at()["semantic"]`` (the simulator's public render of
    the current pose) and ``env.current_episode.target_object_ids``; a detection is every
    matching instance with at least ``min_pixels`` pixels. Needs a semantic sensor in the
    config: :data:`SEMANTIC_SENSOR_OVERRIDE`. ``goal_category`` is the episode's category
    (``object_category``): for an image goal the pictured exemplar's, which is what the
    picture tells a perfect perceiver; detections carry it.

    In a ``sequential`` episode (SPEC §11) the goal is the current subtask's (the
    Observation's ``subtask_index``): its targets match, and the episode's other targets are
    reported too, not matching, so the agent can remember where it saw them;
    :meth:`goal_matches` answers for an instance seen earlier once the subtask changes.
    """

    def __init__(self, min_pixels: int = 20, uuid: str = "semantic") -> None:
        self.min_pixels = int(min_pixels)
        self.uuid = uuid
        self.env = None
        self._targets: Set[int] = set()
        self._reported: Set[int] = set()
        self._goal_key = None
        self.goal_category: Optional[str] = None

    def bind_env(self, env) -> None:
        self.env = env
        self._goal_key = None

    def reset(self) -> None:
        self._goal_key = None
        self.goal_category = None

    def _update_goal(self, observation: Observation) -> None:
        """The instances that match the current goal (the episode's, or in a sequential
        episode the current subtask's) and those reported at all."""
        episode = self.env.current_episode
        index = getattr(observation, "subtask_index", None)
        key = (id(episode), index)
        if key == self._goal_key:
            return
        self._goal_key = key
        self._reported = {int(i) for i in episode.target_object_ids}
        if index is not None:  # sequential (its episode's subtasks are read only then)
            sub = episode.subtasks[index]
            self._targets = {int(i) for i in sub.target_object_ids}
            self.goal_category = sub.object_category
        else:
            self._targets = set(self._reported)
            self.goal_category = getattr(episode, "object_category", None)

    def goal_matches(self, instance_id: int) -> bool:
        """Whether an instance reported earlier matches the current goal."""
        return int(instance_id) in self._targets

    def detect(self, observation: Observation) -> List[Detection]:
        if self.env is None:
            raise RuntimeError(
                "GroundTruthDetector needs bind_env(env); run it with mosnav-eval "
                "or Evaluator, which bind the environment"
            )
        self._update_goal(observation)
        obs = self.env.sim.get_observations_at()
        if obs is None or self.uuid not in obs:
            raise RuntimeError(
                f"GroundTruthDetector: the config has no '{self.uuid}' sensor; add it with "
                f"--set {SEMANTIC_SENSOR_OVERRIDE} (mosnav-eval adds it for FrontierAgent)"
            )
        sem = np.asarray(obs[self.uuid])
        if sem.ndim == 3:
            sem = sem[..., 0]
        depth = observation.depth
        if depth is not None and sem.shape != depth.shape:
            rows = (np.arange(depth.shape[0]) * sem.shape[0]) // depth.shape[0]
            cols = (np.arange(depth.shape[1]) * sem.shape[1]) // depth.shape[1]
            sem = sem[np.ix_(rows, cols)]
        ids, counts = np.unique(sem, return_counts=True)
        out = []
        for oid, n in zip(ids.tolist(), counts.tolist()):
            if oid in self._reported and n >= self.min_pixels:
                match = oid in self._targets
                out.append(
                    Detection(
                        instance_id=int(oid),
                        matches_goal=match,
                        category=self.goal_category if match else None,
                        mask=sem == oid,
                    )
                )
        return out


# ----------------------------------------------------------------------------- map
class OccupancyMap:
    """Top-down grid in the episode-start frame: ``free`` and ``obstacle`` boolean layers
    (neither = unknown). Cell (row, col) covers z in [z0 + row*cs, ...), x in [x0 + col*cs,
    ...); the start is at the centre."""

    def __init__(self, size_m: float = 40.0, cell_size: float = 0.05) -> None:
        self.cs = float(cell_size)
        self.n = int(math.ceil(size_m / self.cs))
        self.origin = -self.n * self.cs / 2.0
        self.free = np.zeros((self.n, self.n), dtype=bool)
        self.obstacle = np.zeros((self.n, self.n), dtype=bool)

    def cell(self, xz: Sequence[float]) -> Tuple[int, int]:
        col = int(math.floor((xz[0] - self.origin) / self.cs))
        row = int(math.floor((xz[1] - self.origin) / self.cs))
        return min(max(row, 0), self.n - 1), min(max(col, 0), self.n - 1)

    def cells(self, xz: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        cols = np.floor((xz[:, 0] - self.origin) / self.cs).astype(np.int64)
        rows = np.floor((xz[:, 1] - self.origin) / self.cs).astype(np.int64)
        return np.clip(rows, 0, self.n - 1), np.clip(cols, 0, self.n - 1)

    def centre(self, row: int, col: int) -> np.ndarray:
        return np.array([self.origin + (col + 0.5) * self.cs, self.origin + (row + 0.5) * self.cs])

    def _disk(self, xz: Sequence[float], radius: float):
        r0, c0 = self.cell(xz)
        k = int(math.ceil(max(radius, 0.0) / self.cs))
        rr, cc = np.mgrid[-k : k + 1, -k : k + 1]
        keep = (rr**2 + cc**2) * self.cs**2 <= radius**2 + 1e-9
        return np.clip(r0 + rr[keep], 0, self.n - 1), np.clip(c0 + cc[keep], 0, self.n - 1)

    def mark_disk(self, layer: np.ndarray, xz: Sequence[float], radius: float) -> None:
        layer[self._disk(xz, radius)] = True

    def clear_disk(self, layer: np.ndarray, xz: Sequence[float], radius: float) -> None:
        layer[self._disk(xz, radius)] = False

    def bounds(self, margin: int = 10) -> Tuple[slice, slice]:
        """Rows/cols slices around everything known, plus ``margin`` cells."""
        known = self.free | self.obstacle
        rows = np.flatnonzero(known.any(axis=1))
        cols = np.flatnonzero(known.any(axis=0))
        if rows.size == 0:
            c = self.n // 2
            return slice(c - margin, c + margin), slice(c - margin, c + margin)
        return (
            slice(max(rows[0] - margin, 0), min(rows[-1] + margin + 1, self.n)),
            slice(max(cols[0] - margin, 0), min(cols[-1] + margin + 1, self.n)),
        )


def _pixel_geometry(shape: Tuple[int, int], hfov_deg: float, stride: int):
    """Per sampled pixel: lateral factor (x_cam / depth) and vertical factor (y_cam / depth)."""
    h, w = shape
    f = (w / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    us = np.arange(stride // 2, w, stride)
    vs = np.arange(stride // 2, h, stride)
    lat = (us + 0.5 - w / 2.0) / f
    up = -(vs + 0.5 - h / 2.0) / f
    return vs, us, lat, up


# ----------------------------------------------------------------------------- agent
@dataclass
class _Instance:
    cells: Set[Tuple[int, int]] = field(default_factory=set)
    last_seen: int = -1
    goal_steps: int = 0  # steps spent walking toward it (the agent gives up after a budget)


class FrontierAgent:
    """Frontier exploration + detector-driven claims (see the module docstring).

    ``detector``: a :class:`Detector` (default :class:`GroundTruthDetector`).
    ``camera``: a :class:`CameraModel`; by default read from the env config at ``bind_env``.
    ``claim_radius`` (m): claim once the agent is this close (horizontally) to a point seen
    on the instance. ``approach_radius`` (m): the planner walks to cells this close.
    ``cell_size`` / ``map_size`` (m): the occupancy grid. ``lookahead`` (m): path point to
    steer toward. ``spin_at_start``: turn a full circle before exploring.
    ``approach_budget``: steps the agent walks toward one instance before giving it up.
    """

    #: What the default GroundTruthDetector reads; ``mosnav-eval`` adds what the config
    #: lacks (``{sim_sensors key: the Hydra override that adds it}``).
    required_sim_sensors = {"semantic_sensor": SEMANTIC_SENSOR_OVERRIDE}

    def __init__(
        self,
        detector: Optional[Detector] = None,
        camera: Optional[CameraModel] = None,
        claim_radius: float = 0.9,
        approach_radius: float = 0.55,
        cell_size: float = 0.05,
        map_size: float = 40.0,
        lookahead: float = 0.6,
        min_frontier_cells: int = 6,
        pixel_stride: int = 2,
        spin_at_start: bool = True,
        approach_budget: int = 150,
    ) -> None:
        self.detector = detector if detector is not None else GroundTruthDetector()
        self._fixed_camera = camera
        self.camera = camera or CameraModel()
        self.claim_radius = float(claim_radius)
        self.approach_radius = float(approach_radius)
        self.cell_size = float(cell_size)
        self.map_size = float(map_size)
        self.lookahead = float(lookahead)
        self.min_frontier_cells = int(min_frontier_cells)
        self.pixel_stride = int(pixel_stride)
        self.spin_at_start = bool(spin_at_start)
        self.approach_budget = int(approach_budget)
        self.reset()

    # ------------------------------------------------------------------ protocol
    def bind_env(self, env) -> None:
        """Read the camera/body configuration and hand ``env`` to the detector."""
        if self._fixed_camera is None:
            self.camera = CameraModel.from_habitat_config(env.sim.habitat_config)
        bind = getattr(self.detector, "bind_env", None)
        if callable(bind):
            bind(env)

    def reset(self) -> None:
        self.map = OccupancyMap(self.map_size, self.cell_size)
        self._instances: Dict[int, _Instance] = {}  # those matching the current goal
        self._seen: Dict[int, _Instance] = {}  # every instance detected, matching or not
        self._subtask: Optional[int] = None
        self._claimed: Set[int] = set()
        self._blocked_frontier = np.zeros_like(self.map.free)
        self._last_pos: Optional[np.ndarray] = None
        self._last_action: Optional[int] = None
        self._spin_left = 0
        self._started = False
        self._stuck = 0
        self._frontier = None  # committed ((stand row, col), (frontier row, col)), absolute
        self._facing_turns = 0
        self._geom_key = None
        self._geom = None
        self.stats = {"claims": 0, "frontier_goals": 0, "collisions": 0, "finish_reason": ""}
        reset = getattr(self.detector, "reset", None)
        if callable(reset):
            reset()

    def episode_stats(self) -> Dict[str, object]:
        return dict(self.stats, instances_seen=len(self._instances))

    # ------------------------------------------------------------------ act
    def act(self, observation: Observation) -> int:
        pos = np.asarray(observation.gps, dtype=np.float64).reshape(-1)[:2]
        heading = float(observation.compass)
        mode = observation.target_mode
        if not self._started:
            self._started = True
            turns = int(round(360.0 / max(self.camera.turn_angle_deg, 1e-6)))
            self._spin_left = turns - 1 if self.spin_at_start else 0
        self._check_motion(pos, heading)
        # the agent stands here: its footprint is free, whatever a collision or a stray
        # depth point said before
        self.map.mark_disk(self.map.free, pos, self.camera.agent_radius)
        self.map.clear_disk(self.map.obstacle, pos, self.camera.agent_radius - self.map.cs)
        if observation.depth is not None:
            self._integrate_depth(np.asarray(observation.depth, dtype=np.float32), pos, heading)
        detections = self.detector.detect(observation)
        if observation.subtask_index != self._subtask:
            self._subtask = observation.subtask_index
            self._begin_subtask()
        self._integrate_detections(detections, observation, pos, heading)

        if mode in MULTI_MODES:
            if (
                mode == "many"
                and observation.target_count is not None
                and len(self._claimed) >= int(observation.target_count)
            ):
                return self._finish("target_count reached")
            if observation.step_count >= observation.max_steps - 1:
                return self._finish("step budget")

        # Claim an instance we stand next to.
        for oid, inst in self._instances.items():
            if oid not in self._claimed and self._distance_to(inst, pos) <= self.claim_radius:
                self._claimed.add(oid)
                self.stats["claims"] += 1
                return self._send(int(Action.TARGET_FOUND))

        if self._spin_left > 0:
            self._spin_left -= 1
            return self._send(int(Action.TURN_LEFT))

        action = self._navigate(pos, heading)
        if action is None:
            if mode in MULTI_MODES:
                return self._finish("map exhausted")
            return self._send(int(Action.TARGET_FOUND))  # single/any: claim here and end
        return self._send(action)

    def _begin_subtask(self) -> None:
        """A ``sequential`` episode's next subtask (SPEC §11): a new goal. The map stays;
        what was claimed is forgotten; the instances seen so far that match the new goal
        (the detector's ``goal_matches``, when it has one) are its candidates at once;
        with none, the agent turns a full circle where it stands first."""
        self._claimed.clear()
        matches = getattr(self.detector, "goal_matches", None)
        self._instances = {}
        if callable(matches):
            for oid, inst in self._seen.items():
                if matches(oid):
                    inst.goal_steps = 0
                    self._instances[oid] = inst
        if self._started and not self._instances and self.spin_at_start:
            turns = int(round(360.0 / max(self.camera.turn_angle_deg, 1e-6)))
            self._spin_left = turns - 1

    # ------------------------------------------------------------------ mapping
    def _check_motion(self, pos: np.ndarray, heading: float) -> None:
        if self._last_action == int(Action.MOVE_FORWARD) and self._last_pos is not None:
            moved = float(np.linalg.norm(pos - self._last_pos))
            if moved < 0.5 * self.camera.forward_step:
                self.stats["collisions"] += 1
                self._stuck += 1
                fwd = np.array([-math.sin(heading), -math.cos(heading)])
                ahead = self._last_pos + fwd * (self.camera.agent_radius + 0.1)
                self.map.mark_disk(self.map.obstacle, ahead, 0.06)
            else:
                self._stuck = 0
        self._last_pos = pos.copy()

    def _integrate_depth(self, depth: np.ndarray, pos: np.ndarray, heading: float) -> None:
        import cv2

        cam = self.camera
        key = (depth.shape, cam.hfov_deg, self.pixel_stride)
        if key != self._geom_key:
            self._geom_key, self._geom = (
                key,
                _pixel_geometry(depth.shape, cam.hfov_deg, self.pixel_stride),
            )
        vs, us, lat, up = self._geom
        d = depth[np.ix_(vs, us)].astype(np.float64)  # (V, U)
        eps = 1e-3
        valid = (d > cam.min_depth + eps) & (d < cam.max_depth - eps)
        too_close = d <= cam.min_depth + eps
        height = cam.sensor_height + d * up[:, None]
        horiz = d * np.sqrt(1.0 + lat[None, :] ** 2)
        obst = valid & (height > 0.15) & (height < cam.agent_height + 0.15)
        floor = valid & (height <= 0.15)
        fwd = np.array([-math.sin(heading), -math.cos(heading)])
        right = np.array([math.cos(heading), -math.sin(heading)])
        # world xz of every sampled pixel
        px = pos[0] + d * (fwd[0] + right[0] * lat[None, :])
        pz = pos[1] + d * (fwd[1] + right[1] * lat[None, :])
        if obst.any():
            rows, cols = self.map.cells(np.stack([px[obst], pz[obst]], axis=1))
            self.map.obstacle[rows, cols] = True
        # per column: free up to the first obstacle (or what blocks the view), else up to the
        # farthest floor point seen
        inf = np.inf
        first_obst = np.where(obst | too_close, horiz, inf).min(axis=0)
        far_floor = np.where(floor, horiz, 0.0).max(axis=0)
        rng = np.where(np.isfinite(first_obst), first_obst, far_floor)
        rng = np.maximum(rng - self.map.cs, 0.0)
        dirs = fwd[None, :] + right[None, :] * lat[:, None]
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        ends = pos[None, :] + dirs * rng[:, None]
        poly = np.vstack([pos[None, :], ends])
        r0 = max(min(int((poly[:, 1].min() - self.map.origin) / self.map.cs) - 2, self.map.n), 0)
        c0 = max(min(int((poly[:, 0].min() - self.map.origin) / self.map.cs) - 2, self.map.n), 0)
        r1 = min(int((poly[:, 1].max() - self.map.origin) / self.map.cs) + 3, self.map.n)
        c1 = min(int((poly[:, 0].max() - self.map.origin) / self.map.cs) + 3, self.map.n)
        if r1 <= r0 or c1 <= c0:
            return
        canvas = np.zeros((r1 - r0, c1 - c0), dtype=np.uint8)
        pts = np.stack(
            [
                (poly[:, 0] - self.map.origin) / self.map.cs - c0,
                (poly[:, 1] - self.map.origin) / self.map.cs - r0,
            ],
            axis=1,
        )
        cv2.fillPoly(canvas, [np.round(pts * 8).astype(np.int32)], 1, shift=3)
        self.map.free[r0:r1, c0:c1] |= canvas.astype(bool)

    def _integrate_detections(
        self, detections: List[Detection], observation: Observation, pos: np.ndarray, heading: float
    ) -> None:
        depth = observation.depth
        cam = self.camera
        for det in detections:
            inst = self._seen.setdefault(int(det.instance_id), _Instance())
            if det.matches_goal:
                self._instances[int(det.instance_id)] = inst
            inst.last_seen = observation.step_count
            if det.position is not None:
                inst.cells.add(self.map.cell(det.position))
                continue
            if det.mask is None or depth is None:
                continue
            mask = np.asarray(det.mask, dtype=bool)
            v, u = np.nonzero(mask)
            if v.size == 0:
                continue
            if v.size > 400:
                pick = np.linspace(0, v.size - 1, 400).astype(np.int64)
                v, u = v[pick], u[pick]
            d = depth[v, u].astype(np.float64)
            ok = (d > cam.min_depth + 1e-3) & (d < cam.max_depth - 1e-3)
            if not ok.any():
                continue
            v, u, d = v[ok], u[ok], d[ok]
            h, w = depth.shape
            f = (w / 2.0) / math.tan(math.radians(cam.hfov_deg) / 2.0)
            lat = (u + 0.5 - w / 2.0) / f
            fwd = np.array([-math.sin(heading), -math.cos(heading)])
            right = np.array([math.cos(heading), -math.sin(heading)])
            xz = pos[None, :] + d[:, None] * (fwd[None, :] + right[None, :] * lat[:, None])
            rows, cols = self.map.cells(xz)
            inst.cells.update(zip(rows.tolist(), cols.tolist()))

    def _distance_to(self, inst: _Instance, pos: np.ndarray) -> float:
        if not inst.cells:
            return math.inf
        cells = np.array(list(inst.cells), dtype=np.float64)
        xz = np.stack(
            [
                self.map.origin + (cells[:, 1] + 0.5) * self.map.cs,
                self.map.origin + (cells[:, 0] + 0.5) * self.map.cs,
            ],
            axis=1,
        )
        return float(np.min(np.linalg.norm(xz - pos[None, :], axis=1)))

    # ------------------------------------------------------------------ planning
    def _navigate(self, pos: np.ndarray, heading: float) -> Optional[int]:
        """The next motion toward an unclaimed instance or the nearest frontier; None when
        neither is reachable. Obstacles are inflated by the agent radius; when nothing is
        reachable that way (a squeeze the map overstates), by less."""
        from scipy import ndimage

        m = self.map
        rs, cs_ = m.bounds(margin=int(math.ceil(1.5 / m.cs)))
        free = m.free[rs, cs_]
        obstacle = m.obstacle[rs, cs_]
        clearance = ndimage.distance_transform_edt(~obstacle) * m.cs
        agent = m.cell(pos)
        agent = (agent[0] - rs.start, agent[1] - cs_.start)
        fields = {}

        def field(scale):
            if scale not in fields:
                fields[scale] = self._distances(
                    free, clearance, agent, scale * self.camera.agent_radius
                )
            return fields[scale]

        # a seen instance first (tighter squeezes allowed than for exploring), then frontiers
        for scale in (1.0, 0.7):
            dist = field(scale)
            goal = None if dist is None else self._instance_goal(dist, rs, cs_)
            if goal is not None:
                self._frontier = None
                return self._steer(dist, goal, rs, cs_, pos, heading)
        for scale in (1.0, 0.7, 0.4):
            dist = field(scale)
            if dist is None:
                continue
            for _ in range(8):  # each pass either moves or retires one frontier
                frontier = self._frontier_goal(dist, free, obstacle, rs, cs_)
                if frontier is None:
                    break
                stand, seen = frontier
                if float(np.linalg.norm(m.centre(*stand) - pos)) > 0.3:
                    return self._steer(
                        dist, (stand[0] - rs.start, stand[1] - cs_.start), rs, cs_, pos, heading
                    )
                # arrived: look at the frontier, then retire it (whatever is still unknown
                # there cannot be seen from here)
                err = self._heading_error(m.centre(*seen) - pos, heading)
                if (
                    abs(err) > math.radians(self.camera.turn_angle_deg) / 2.0 + 1e-6
                    and self._facing_turns < 12
                ):
                    self._facing_turns += 1
                    return int(Action.TURN_LEFT if err > 0 else Action.TURN_RIGHT)
                self.map.mark_disk(self._blocked_frontier, m.centre(*seen), 0.6)
                self._frontier = None
            else:
                return int(Action.TURN_LEFT)  # many frontiers retired here: plan again
        return None

    def _distances(self, free, clearance, agent, inflation) -> Optional[np.ndarray]:
        """Fast-marching distance (m) from the agent over free cells farther than
        ``inflation`` from every obstacle (inf elsewhere)."""
        from habitat_mosnav.sims.grid.eikonal import travel_time

        cs = self.map.cs
        traversable = free & (clearance > inflation)
        ar, ac = agent
        # the agent stands where it stands: its own footprint is traversable
        k = int(math.ceil(self.camera.agent_radius / cs))
        r_lo, r_hi = max(ar - k, 0), min(ar + k + 1, traversable.shape[0])
        c_lo, c_hi = max(ac - k, 0), min(ac + k + 1, traversable.shape[1])
        yy, xx = np.mgrid[r_lo:r_hi, c_lo:c_hi]
        disk = (yy - ar) ** 2 + (xx - ac) ** 2 <= k * k
        sub = traversable[r_lo:r_hi, c_lo:c_hi]
        sub[disk & (clearance[r_lo:r_hi, c_lo:c_hi] > 0.5 * cs)] = True
        traversable[ar, ac] = True
        phi = np.ones(traversable.shape)
        phi[ar, ac] = -1.0
        try:
            dist = travel_time(np.ma.MaskedArray(phi, ~traversable), cs)
        except ValueError:
            return None
        dist = np.ma.filled(dist, np.inf)
        dist[ar, ac] = 0.0
        dist[~traversable] = np.inf
        return dist

    def _instance_goal(self, dist: np.ndarray, rs: slice, cs_: slice) -> Optional[Tuple[int, int]]:
        """The nearest reachable cell within ``approach_radius`` (or ``claim_radius``) of an
        unclaimed instance, in crop coordinates."""
        best, best_d, best_oid = None, math.inf, None
        m = self.map
        for oid, inst in self._instances.items():
            if oid in self._claimed or not inst.cells or inst.goal_steps > self.approach_budget:
                continue
            mask = np.zeros(dist.shape, dtype=bool)
            cells = np.array(list(inst.cells))
            r = cells[:, 0] - rs.start
            c = cells[:, 1] - cs_.start
            ok = (r >= 0) & (r < dist.shape[0]) & (c >= 0) & (c < dist.shape[1])
            mask[r[ok], c[ok]] = True
            if not mask.any():
                continue
            from scipy import ndimage

            near = ndimage.distance_transform_edt(~mask) * m.cs
            for radius in (self.approach_radius, self.claim_radius - 0.05):
                region = (near <= radius) & np.isfinite(dist)
                if region.any():
                    flat = np.where(region, dist, np.inf)
                    idx = np.unravel_index(int(np.argmin(flat)), flat.shape)
                    if flat[idx] < best_d:
                        best, best_d, best_oid = (int(idx[0]), int(idx[1])), float(flat[idx]), oid
                    break
        if best is not None:
            self._instances[best_oid].goal_steps += 1
        return best

    def _frontier_goal(self, dist, free, obstacle, rs, cs_):
        """(cell to stand on, frontier cell), absolute: the committed frontier while it is
        still one, else the nearest reachable one. Frontier cells are free cells bordering
        unknown space (obstacles grown by one cell, so gaps in a wall seen edge-on do not
        count), in clusters of at least ``min_frontier_cells``; the agent stands on a
        reachable cell within ``agent_radius + 0.1`` m of one."""
        from scipy import ndimage

        eight = np.ones((3, 3), bool)
        unknown = ~(free | ndimage.binary_dilation(obstacle, structure=eight))
        frontier = free & ndimage.binary_dilation(unknown, structure=eight)
        frontier &= ~self._blocked_frontier[rs, cs_]
        if not frontier.any():
            return None
        labels, _ = ndimage.label(frontier, structure=eight)
        sizes = np.bincount(labels.ravel())
        big = sizes >= self.min_frontier_cells
        big[0] = False
        frontier &= big[labels]
        if not frontier.any():
            return None
        reach = int(math.ceil((self.camera.agent_radius + 0.1) / self.map.cs))
        if self._frontier is not None:
            (sr, sc), (fr, fc) = self._frontier
            sr, sc, fr, fc = sr - rs.start, sc - cs_.start, fr - rs.start, fc - cs_.start
            h, w = frontier.shape
            if (
                0 <= sr < h
                and 0 <= sc < w
                and np.isfinite(dist[sr, sc])
                and frontier[max(fr - 1, 0) : fr + 2, max(fc - 1, 0) : fc + 2].any()
            ):
                return self._frontier
        near = ndimage.binary_dilation(frontier, structure=eight, iterations=reach)
        flat = np.where(near & np.isfinite(dist), dist, np.inf)
        if not np.isfinite(flat).any():
            return None
        stand = np.unravel_index(int(np.argmin(flat)), flat.shape)
        # the frontier cell this stand point looks at: the nearest one
        fr_rows, fr_cols = np.nonzero(frontier)
        k = int(np.argmin((fr_rows - stand[0]) ** 2 + (fr_cols - stand[1]) ** 2))
        self._frontier = (
            (int(stand[0]) + rs.start, int(stand[1]) + cs_.start),
            (int(fr_rows[k]) + rs.start, int(fr_cols[k]) + cs_.start),
        )
        self._facing_turns = 0
        self.stats["frontier_goals"] += 1
        return self._frontier

    @staticmethod
    def _heading_error(delta: np.ndarray, heading: float) -> float:
        desired = math.atan2(-delta[0], -delta[1])
        return wrap_angle(desired - heading)

    def _steer(self, dist, goal, rs, cs_, pos, heading) -> int:
        """Turn toward the path point ``lookahead`` m along the way to ``goal`` (crop cell),
        else move forward."""
        m = self.map
        r, c = goal
        h, w = dist.shape
        for _ in range(4 * (h + w)):  # walk back along decreasing distance
            if dist[r, c] <= self.lookahead:
                break
            best = (r, c)
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    if 0 <= rr < h and 0 <= cc < w and dist[rr, cc] < dist[best]:
                        best = (rr, cc)
            if best == (r, c):
                break
            r, c = best
        delta = m.centre(r + rs.start, c + cs_.start) - pos
        if float(np.linalg.norm(delta)) < 1e-6:
            return int(Action.TURN_LEFT)
        err = self._heading_error(delta, heading)
        half = math.radians(self.camera.turn_angle_deg) / 2.0 + 1e-6
        if self._stuck >= 2:
            self._stuck = 0
            return int(Action.TURN_LEFT if err >= 0 else Action.TURN_RIGHT)
        if abs(err) > half:
            return int(Action.TURN_LEFT if err > 0 else Action.TURN_RIGHT)
        return int(Action.MOVE_FORWARD)

    # ------------------------------------------------------------------ helpers
    def _send(self, action: int) -> int:
        self._last_action = action
        return action

    def _finish(self, reason: str) -> int:
        self.stats["finish_reason"] = reason
        return self._send(int(Action.FINISH))
