"""``MosNavMeshSim-v0``: a CPU simulator with habitat-sim's ``HabitatSim`` interface.

Mesh from a ``.glb`` (trimesh), navigability grid + exact (corner-graph) geodesics
(:mod:`.navgrid`), sliding motion like habitat-sim's ``allow_sliding``, and RGB / depth /
semantic rendering with moderngl on headless EGL (:mod:`.render`). Conventions as
habitat-sim: Y up, -Z forward, quaternions ``[x, y, z, w]`` in configs and JSON.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import quaternion  # noqa: F401  (registers np.quaternion)
from gym import spaces

from habitat.core.registry import registry
from habitat.core.simulator import AgentState, Observations, SensorSuite, Simulator

from habitat_mosnav.sims.geometry import (
    MeshData,
    load_mesh,
    load_semantic_mesh,
    scene_up_axis,
    semantic_textures_of,
)
from habitat_mosnav.sims.navgrid import INF, AgentShape, NavGrid
from habitat_mosnav.sims.pathfinder import MultiGoalShortestPath, PathFinder, ShortestPath
from habitat_mosnav.sims.sensors import SENSOR_TYPES, MosNavVisualSensor

logger = logging.getLogger(__name__)

_ACTION_NAMES = ("stop", "move_forward", "turn_left", "turn_right", "look_up", "look_down")


# ---------------------------------------------------------------- scene files
def mesh_source(path: str) -> str:
    """The mesh read for a scene: HM3D ships ``<id>.basis.glb`` (Basis textures, which
    trimesh cannot decode) next to ``<id>.glb`` (same geometry, plain textures): the latter
    when it is there."""
    if path.endswith(".basis.glb") and os.path.isfile(path[: -len(".basis.glb")] + ".glb"):
        return path[: -len(".basis.glb")] + ".glb"
    return path


def navmesh_beside(path: str) -> Optional[str]:
    """The ``.navmesh`` beside a scene (``x.glb`` -> ``x.navmesh``; HM3D ``x.basis.glb`` ->
    ``x.basis.navmesh``), or None."""
    cand = os.path.splitext(path)[0] + ".navmesh"
    return cand if os.path.isfile(cand) else None


def scene_input_files(path: str, navmesh_option: str = "") -> List[str]:
    """Every file that decides what a scene simulates (and so the episode's numbers), those
    that exist: the scene file, the mesh read for it, its navmesh (``navmesh_option``,
    ``habitat.simulator.mosnav_mesh.navmesh``, when set), ``semantic.glb``/``semantic.txt``
    and ``mosnav_meta.json``. The run manifest fingerprints them."""
    from habitat_mosnav.scenes.io import mesh_stem
    from habitat_mosnav.sims.geometry import semantic_paths

    files = [path, mesh_source(path)]
    if navmesh_option and navmesh_option.lower() != "none":
        files.append(navmesh_option)
    elif not navmesh_option:
        files.append(navmesh_beside(path))
    files += list(semantic_paths(path) or ())
    files.append(os.path.join(os.path.dirname(path), mesh_stem(path) + ".mosnav_meta.json"))
    return [f for f in dict.fromkeys(files) if f and os.path.isfile(f)]


# ---------------------------------------------------------------- scene cache
class SceneEntry:
    """One loaded scene: meshes, navigation grids per agent shape, GL buffers (lazily)."""

    def __init__(self, path: str, up: str = "y", semantic_textures: Optional[bool] = None) -> None:
        self.path = path
        self.up = up
        self.semantic_textures = (
            semantic_textures  # habitat-sim's has_semantic_textures (None: auto)
        )
        self.mesh: MeshData = load_mesh(mesh_source(path), up)
        self._semantic: Optional[MeshData] = None
        self._semantic_loaded = False
        self.grids: Dict[tuple, NavGrid] = {}
        self.gl: Dict[str, Any] = {}  # renderer-owned buffers
        self.semantic_scene = None  # built on first use
        self.lock = threading.Lock()

    @property
    def semantic(self) -> Optional[MeshData]:
        if not self._semantic_loaded:
            self._semantic = load_semantic_mesh(self.path, self.up, self.semantic_textures)
            self._semantic_loaded = True
        return self._semantic

    def navmesh_path(self, option: str) -> Optional[str]:
        """The .navmesh to use: ``option`` when set ("none" = never), else one beside the
        scene (``x.glb`` -> ``x.navmesh``; HM3D ``x.basis.glb`` -> ``x.basis.navmesh``)."""
        if option and option.lower() == "none":
            return None
        if option:
            if not os.path.isfile(option):
                raise FileNotFoundError(
                    f"MosNavMeshSim-v0: habitat.simulator.mosnav_mesh.navmesh not found: {option}"
                )
            return option
        return navmesh_beside(self.path)

    def navgrid(self, agent: AgentShape, cell: float, navmesh: str = "") -> NavGrid:
        nav_path = self.navmesh_path(navmesh)
        key = agent.key() + (round(cell, 5), nav_path or "")
        with self.lock:
            grid = self.grids.get(key)
            if grid is None:
                grid = self._build_grid(agent, cell, nav_path, explicit=bool(navmesh))
                self.grids[key] = grid
            return grid

    def _build_grid(self, agent: AgentShape, cell: float, nav_path: Optional[str], explicit: bool):
        """habitat-sim's navmesh when there is one (both simulators then answer on the same
        polygons, :mod:`.navmesh_query`), else navigability computed from the mesh."""
        name = os.path.basename(self.path)
        if nav_path is not None:
            from habitat_mosnav.sims.navmesh import NavMeshUnsupported, read_navmesh
            from habitat_mosnav.sims.navmesh_query import NavMeshQuery

            try:
                return NavMeshQuery(read_navmesh(nav_path))
            except NavMeshUnsupported as exc:  # a broken navmesh (NavMeshError) is raised
                if explicit:
                    raise
                logger.warning("%s; computing navigability from the mesh instead", exc)
        return NavGrid(self.mesh.triangles, agent, cell, desc=name)


_SCENES: "OrderedDict[str, SceneEntry]" = OrderedDict()
_SCENES_LOCK = threading.Lock()


def get_scene(
    path: str, cache_size: int = 4, up_axis: str = "auto", semantic_textures: Optional[bool] = None
) -> SceneEntry:
    """LRU cache of scenes by absolute path, shared by all simulators of the process;
    ``semantic_textures``: has_semantic_textures of the scene dataset config (None: auto)."""
    apath = os.path.abspath(path)
    up = scene_up_axis(apath, up_axis)
    key = apath + "|" + up + "|" + str(semantic_textures)
    with _SCENES_LOCK:
        entry = _SCENES.get(key)
        if entry is not None:
            _SCENES.move_to_end(key)
            return entry
    entry = SceneEntry(apath, up, semantic_textures)
    with _SCENES_LOCK:
        _SCENES[key] = entry
        while len(_SCENES) > max(1, cache_size):
            _, old = _SCENES.popitem(last=False)
            try:
                from habitat_mosnav.sims import render

                render.release_scene(old)
            except Exception:  # noqa: BLE001
                pass
    return entry


def clear_scene_cache() -> None:
    with _SCENES_LOCK:
        _SCENES.clear()


# ------------------------------------------------------------------- helpers
def _quat_from_coeffs(rot) -> "np.quaternion":
    """[x, y, z, w] list/array or np.quaternion -> normalised np.quaternion."""
    if isinstance(rot, np.quaternion):
        q = rot
    else:
        r = np.asarray(rot, dtype=np.float64).reshape(-1)
        if r.shape != (4,):
            raise ValueError(f"rotation must be [x, y, z, w], got {rot!r}")
        q = np.quaternion(r[3], r[0], r[1], r[2])
    n = q.norm()
    if not n > 0:
        raise ValueError(f"rotation must be a non-zero quaternion, got {rot!r}")
    return q / math.sqrt(n) if abs(n - 1.0) > 1e-9 else q


def _quat_axis(angle_rad: float, axis) -> "np.quaternion":
    s = math.sin(angle_rad / 2)
    return np.quaternion(math.cos(angle_rad / 2), axis[0] * s, axis[1] * s, axis[2] * s)


def _rotmat(q: "np.quaternion") -> np.ndarray:
    return quaternion.as_rotation_matrix(q)


class _AgentView:
    """What habitat-lab reads through ``sim.get_agent(0)``: ``.state`` / ``get_state()``."""

    def __init__(self, sim: "MosNavMeshSim") -> None:
        self._sim = sim

    @property
    def state(self) -> AgentState:
        return self._sim.get_agent_state()

    def get_state(self) -> AgentState:
        return self._sim.get_agent_state()

    def set_state(self, state, reset_sensors: bool = True, **_kwargs) -> None:
        self._sim.set_agent_state(state.position, state.rotation, reset_sensors=reset_sensors)

    @property
    def sensors(self) -> Dict[str, Any]:
        return dict(self._sim.sensor_suite.sensors)


@registry.register_simulator(name="MosNavMeshSim-v0")
class MosNavMeshSim(Simulator):
    """CPU simulator over a mesh; see the module docstring and docs/DESIGN.md. It offers
    :class:`habitat_mosnav.simulators.NavSimulator` (``tests/test_simulator_interface.py``)."""

    #: The requests ``pathfinder.find_path`` takes (:func:`habitat_mosnav.simulators.path_request_types`).
    path_request_types = (ShortestPath, MultiGoalShortestPath)

    def __init__(self, config) -> None:
        super().__init__()
        self.habitat_config = config
        self._opts = config.get("mosnav_mesh", None) if hasattr(config, "get") else None
        agent_cfg = self._agent_config(config)
        sensors = []
        for key, scfg in agent_cfg.sim_sensors.items():
            cls = SENSOR_TYPES.get(scfg.type)
            if cls is None:
                raise ValueError(
                    f"MosNavMeshSim-v0: habitat.simulator.agents.main_agent.sim_sensors.{key}.type "
                    f"= {scfg.type!r} is not supported (supported: {sorted(SENSOR_TYPES)})"
                )
            sensors.append(cls(scfg))
        self._sensor_suite = SensorSuite(sensors)
        self._visual = [s for s in sensors if isinstance(s, MosNavVisualSensor)]
        from habitat_mosnav.sims.render import CameraSpec

        self._cams = [CameraSpec(s.uuid, s.kind, s.config) for s in self._visual]
        self._render_enabled = bool(self._opt("render", True))
        self._renderer = None
        self._warned_no_render = False
        if self._visual and self._render_enabled:
            from habitat_mosnav.sims import render

            self._renderer = render.get_renderer()  # fails with a clear one-line error
        self._action_space = spaces.Discrete(len(_ACTION_NAMES))
        self._prev_sim_obs: Dict[str, Any] = {"collided": False}
        self._pathfinder = PathFinder()
        self._scene: Optional[SceneEntry] = None
        self._grid: Optional[NavGrid] = None
        self._geo_memo = None
        self._current_scene: Optional[str] = None
        self._pos = np.zeros(3, np.float32)
        self._rot = np.quaternion(1, 0, 0, 0)
        self._tilt = 0.0
        self._initial_state: Optional[tuple] = None
        self._seed = int(config.seed) if config.get("seed") is not None else 0
        self._rng = np.random.default_rng(self._seed)
        self._pathfinder.seed(self._seed)
        self._closed = False
        self.reconfigure(config)

    # ----------------------------------------------------------- config
    def _opt(self, name: str, default):
        if self._opts is None:
            return default
        val = (
            self._opts.get(name, default)
            if hasattr(self._opts, "get")
            else getattr(self._opts, name, default)
        )
        return default if val is None else val

    @staticmethod
    def _agent_config(config):
        agents = config.agents
        try:
            order = list(config.agents_order)
            idx = int(config.get("default_agent_id", 0) or 0)
            return agents[order[idx]]
        except Exception:  # noqa: BLE001 - agents_order MISSING or short: use main_agent
            pass
        if "main_agent" in agents:
            return agents["main_agent"]
        if len(agents) == 0:
            raise ValueError("MosNavMeshSim-v0: habitat.simulator.agents is empty")
        return next(iter(agents.values()))

    def _agent_shape(self, agent_cfg) -> AgentShape:
        return AgentShape(
            height=float(agent_cfg.height),
            radius=float(agent_cfg.radius),
            max_climb=float(agent_cfg.max_climb),
            max_slope=float(agent_cfg.max_slope),
        )

    # ------------------------------------------------------- properties
    @property
    def sensor_suite(self) -> SensorSuite:
        return self._sensor_suite

    @property
    def action_space(self):
        return self._action_space

    @property
    def pathfinder(self) -> PathFinder:
        return self._pathfinder

    @property
    def navgrid(self) -> NavGrid:
        return self._pathfinder.grid

    @property
    def scene_entry(self) -> Optional[SceneEntry]:
        return self._scene

    @property
    def up_vector(self) -> np.ndarray:
        return np.array([0.0, 1.0, 0.0])

    @property
    def forward_vector(self) -> np.ndarray:
        return -np.array([0.0, 0.0, 1.0])

    @property
    def previous_step_collided(self) -> bool:
        return bool(self._prev_sim_obs.get("collided", False))

    @property
    def camera_tilt(self) -> float:
        """Current camera pitch in degrees (+ up)."""
        return self._tilt

    @property
    def agents(self) -> List[_AgentView]:
        return [_AgentView(self)]

    def get_agent(self, agent_id: int = 0) -> _AgentView:
        return _AgentView(self)

    # ------------------------------------------------------- lifecycle
    def reconfigure(
        self, config, episode=None, should_close_on_new_scene: bool = True, ep_info=None
    ) -> None:
        """Load (or reuse from the cache) ``config.scene``; place the agent at the start
        state when ``is_set_start_state`` (how habitat's tasks start an episode)."""
        self.habitat_config = config
        self._opts = config.get("mosnav_mesh", None) if hasattr(config, "get") else self._opts
        scene = str(config.scene)
        cache = int(self._opt("scene_cache_size", 4))
        if not os.path.isfile(scene):
            raise FileNotFoundError(
                f"MosNavMeshSim-v0: habitat.simulator.scene file not found: {scene}"
            )
        # one scene dataset config drives both simulators: its has_semantic_textures decides
        # whether the semantic camera reads semantic.glb's textures (absent: when it has any)
        textures = semantic_textures_of(str(config.get("scene_dataset", "") or ""), scene)
        entry = get_scene(scene, cache, str(self._opt("up_axis", "auto")), textures)
        agent_cfg = self._agent_config(config)
        grid = entry.navgrid(
            self._agent_shape(agent_cfg),
            float(self._opt("cell_size", 0.05)),
            str(self._opt("navmesh", "")),
        )
        grid.field_cache_size = int(self._opt("distance_field_cache_size", 256))
        new_scene = entry is not self._scene
        self._scene = entry
        self._grid = grid
        # this simulator's own memo of its last query start (the grid is shared)
        self._geo_memo = grid.new_memo() if hasattr(grid, "new_memo") else None
        self._pathfinder.set_grid(grid)
        self._current_scene = scene
        self._step_size = float(config.forward_step_size)
        self._turn_deg = float(config.turn_angle)
        self._tilt_deg = float(self._opt("tilt_angle", 30.0))
        # habitat-sim's option, so one config drives both simulators alike
        self._allow_sliding = bool(config.get("habitat_sim_v0", {}).get("allow_sliding", True))
        if agent_cfg.get("is_set_start_state", False):
            self.set_agent_state(
                [float(v) for v in agent_cfg.start_position],
                [float(v) for v in agent_cfg.start_rotation],
            )
            self._initial_state = (self._pos.copy(), self._rot)
        elif new_scene or self._initial_state is None:
            # like habitat-sim's initial agent placement, but on the largest island so that
            # an agent never starts on a table top
            pos = self._pathfinder.get_random_navigable_point(island_index=grid.largest_island)
            if not np.all(np.isfinite(pos)):
                pos = np.zeros(3, np.float32)
            self.set_agent_state(pos, [0.0, 0.0, 0.0, 1.0])
            self._initial_state = (self._pos.copy(), self._rot)

    def reset(self) -> Observations:
        agent_cfg = self._agent_config(self.habitat_config)
        if agent_cfg.get("is_set_start_state", False):
            self.set_agent_state(
                [float(v) for v in agent_cfg.start_position],
                [float(v) for v in agent_cfg.start_rotation],
            )
        elif self._initial_state is not None:
            self.set_agent_state(self._initial_state[0], self._initial_state[1])
        self._prev_sim_obs = {"collided": False}
        return self._observations()

    def seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(int(seed))
        self._pathfinder.seed(int(seed))

    def close(self, destroy: bool = True) -> None:
        self._closed = True

    def step_physics(self, dt: float = 1.0 / 60.0) -> None:
        """No dynamics in this backend."""
        return None

    # ---------------------------------------------------------- motion
    def _forward_xz(self) -> np.ndarray:
        f = _rotmat(self._rot) @ np.array([0.0, 0.0, -1.0])
        v = np.array([f[0], f[2]])
        n = float(np.hypot(*v))
        return v / n if n > 1e-9 else np.array([0.0, -1.0])

    def _move_forward(self, amount: float) -> bool:
        f = self._forward_xz()
        start = self._pos.astype(np.float64)
        end = start + np.array([f[0], 0.0, f[1]]) * amount
        new = self._grid.try_step(start, end, sliding=self._allow_sliding)
        moved = math.hypot(float(new[0]) - start[0], float(new[2]) - start[2])
        self._pos = np.asarray(new, dtype=np.float32)
        return moved + 1e-5 < abs(amount)

    def _turn(self, degrees: float) -> None:
        """Rotate about +Y, then filter the position as habitat-sim filters every body
        action, turns included (its ``step_filter``: ``tryStep(p, p)``): an agent placed off
        the surface's height (an episode start on the floor, the navmesh above it) stands on
        the surface after its first turn, as after its first forward step."""
        self._rot = self._rot * _quat_axis(math.radians(degrees), (0.0, 1.0, 0.0))
        self._rot = self._rot / math.sqrt(self._rot.norm())
        here = self._pos.astype(np.float64)
        self._pos = np.asarray(
            self._grid.try_step(here, here, sliding=self._allow_sliding), dtype=np.float32
        )

    def tilt_camera(self, degrees: float) -> None:
        """Pitch every camera by ``degrees`` (+ up), clamped to ±90° (the look actions)."""
        self._tilt = float(min(90.0, max(-90.0, self._tilt + float(degrees))))

    def _action_name(self, action) -> str:
        if isinstance(action, dict) and "action" in action:
            return self._action_name(action["action"])
        if isinstance(action, str):
            if action not in _ACTION_NAMES:
                raise ValueError(
                    f"MosNavMeshSim-v0.step: unknown action {action!r} "
                    f"(known: {', '.join(_ACTION_NAMES)})"
                )
            return action
        try:
            a = int(action)
        except (TypeError, ValueError):
            raise ValueError(f"MosNavMeshSim-v0.step: cannot read action {action!r}") from None
        # habitat's default ids are fixed: stop 0, move_forward 1, ..., look_down 5
        if not 0 <= a < len(_ACTION_NAMES):
            raise ValueError(
                f"MosNavMeshSim-v0.step: action id {a} is not a simulator action "
                f"(0-{len(_ACTION_NAMES) - 1}: {', '.join(_ACTION_NAMES)})"
            )
        return _ACTION_NAMES[a]

    def step(self, action, *args, **kwargs) -> Observations:
        collided = False
        if action is not None:
            name = self._action_name(action)
            if name == "move_forward":
                collided = self._move_forward(self._step_size)
            elif name == "turn_left":
                self._turn(self._turn_deg)
            elif name == "turn_right":
                self._turn(-self._turn_deg)
            elif name == "look_up":
                self.tilt_camera(self._tilt_deg)
            elif name == "look_down":
                self.tilt_camera(-self._tilt_deg)
        self._prev_sim_obs = {"collided": collided}
        return self._observations()

    # ----------------------------------------------------------- state
    def get_agent_state(self, agent_id: int = 0) -> AgentState:
        return AgentState(position=self._pos.copy(), rotation=self._rot)

    def set_agent_state(
        self, position, rotation, agent_id: int = 0, reset_sensors: bool = True
    ) -> bool:
        pos = np.asarray(position, dtype=np.float32).reshape(-1)
        if pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise ValueError(
                f"MosNavMeshSim-v0.set_agent_state: position must be 3 finite numbers, got {position!r}"
            )
        self._pos = pos.copy()
        self._rot = _quat_from_coeffs(rotation)
        if reset_sensors:
            self._tilt = 0.0
        return True

    def get_observations_at(
        self, position=None, rotation=None, keep_agent_at_new_pose: bool = False
    ) -> Optional[Observations]:
        saved = (self._pos.copy(), self._rot, self._tilt)
        if position is not None and rotation is not None:
            self.set_agent_state(position, rotation, reset_sensors=False)
        self._prev_sim_obs = {"collided": False}
        obs = self._observations()
        if not keep_agent_at_new_pose:
            self._pos, self._rot, self._tilt = saved
        return obs

    # ---------------------------------------------------------- queries
    def geodesic_distance(self, position_a, position_b, episode=None) -> float:
        """Min over ``position_b`` (a point or a list) of the geodesic distance; inf if none.

        Unlike HabitatSim, ``episode`` is not used as a cache key: fields are cached per
        goal set, so per-target and remaining-target queries are always correct.
        """
        b = np.asarray(position_b, dtype=np.float64)
        if b.size == 0:
            return INF
        if self._geo_memo is not None:
            return float(
                self._grid.geodesic_distance(position_a, b.reshape(-1, 3), memo=self._geo_memo)
            )
        return float(self._grid.geodesic_distance(position_a, b.reshape(-1, 3)))

    def get_straight_shortest_path_points(self, position_a, position_b):
        from habitat_mosnav.sims.pathfinder import ShortestPath

        path = ShortestPath()
        path.requested_start = np.asarray(position_a, np.float32)
        path.requested_end = np.asarray(position_b, np.float32)
        self._pathfinder.find_path(path)
        return path.points

    def sample_navigable_point(self) -> List[float]:
        return [float(v) for v in self._pathfinder.get_random_navigable_point()]

    def is_navigable(self, point: Sequence[float]) -> bool:
        return self._pathfinder.is_navigable(point)

    def island_radius(self, position: Sequence[float]) -> float:
        return self._pathfinder.island_radius(position)

    def distance_to_closest_obstacle(self, position, max_search_radius: float = 2.0) -> float:
        return self._pathfinder.distance_to_closest_obstacle(position, max_search_radius)

    def semantic_annotations(self):
        """habitat-sim's HM3D ``SemanticScene`` of ``<id>.semantic.txt`` (see
        :class:`~habitat_mosnav.sims.geometry.SemanticScene`): ``objects`` with an
        ``Unknown`` object 0 first, ids ``"{category}_{id}"``, world AABBs, categories,
        regions; an empty scene when the annotation pair is absent."""
        entry = self._scene
        if entry is None:
            return None
        if entry.semantic_scene is None:
            from habitat_mosnav.sims.geometry import SemanticScene

            entry.semantic_scene = SemanticScene.from_mesh(entry.path, entry.semantic)
        return entry.semantic_scene

    @property
    def semantic_scene(self):
        return self.semantic_annotations()

    # ---------------------------------------------------------- sensors
    def sensor_poses(self) -> Dict[str, tuple]:
        """uuid -> (camera position (3,), camera rotation matrix (3, 3)) in world frame."""
        ra = _rotmat(self._rot)
        tilt = _rotmat(_quat_axis(math.radians(self._tilt), (1.0, 0.0, 0.0)))
        pos0 = self._pos.astype(np.float64)
        return {c.uuid: (pos0 + ra @ c.position, ra @ c.rotation @ tilt) for c in self._cams}

    def _observations(self) -> Observations:
        sim_obs: Dict[str, Any] = dict(self._prev_sim_obs)
        if self._visual:
            if self._renderer is not None:
                sim_obs.update(self._renderer.render(self._scene, self._cams, self.sensor_poses()))
            else:
                if not self._warned_no_render:
                    logger.warning(
                        "MosNavMeshSim-v0: mosnav_mesh.render=False, visual sensors return zeros"
                    )
                    self._warned_no_render = True
                for s in self._cams:
                    h, w = s.height, s.width
                    shape = {"rgb": (h, w, 3), "depth": (h, w), "semantic": (h, w)}[s.kind]
                    dtype = {"rgb": np.uint8, "depth": np.float32, "semantic": np.int32}[s.kind]
                    sim_obs[s.uuid] = np.zeros(shape, dtype)
        return self._sensor_suite.get_observations(sim_obs)

    def render_camera(
        self,
        kind: str,
        position: Sequence[float],
        rotation: Sequence[float],
        hfov: float,
        width: int,
        height: int,
        only_object: Optional[int] = None,
    ) -> np.ndarray:
        """One picture from a camera at a world pose (``position`` the eye, ``rotation``
        ``[x, y, z, w]``), apart from the agent's sensors: ``rgb`` (H, W, 3) uint8, ``depth``
        (H, W) float32 planar metres or ``semantic`` (H, W) int32
        (:func:`habitat_mosnav.sims.camera.render_camera`); ``only_object`` (semantic): that
        object alone, as if nothing else were in the scene."""
        from types import SimpleNamespace

        from habitat_mosnav.sims.render import CameraSpec

        if kind not in ("rgb", "depth", "semantic"):
            raise ValueError(
                f"MosNavMeshSim-v0.render_camera: kind {kind!r} (rgb, depth or semantic)"
            )
        w, h = int(width), int(height)
        if self._renderer is None:
            shape = (h, w, 3) if kind == "rgb" else (h, w)
            return np.zeros(shape, {"rgb": np.uint8, "depth": np.float32}.get(kind, np.int32))
        cfg = SimpleNamespace(
            width=w, height=h, hfov=float(hfov), position=[0, 0, 0], orientation=[0, 0, 0]
        )
        cam = CameraSpec(f"_camera_{kind}", kind, cfg)
        pose = (np.asarray(position, np.float64), _rotmat(_quat_from_coeffs(rotation)))
        return self._renderer.render(self._scene, [cam], {cam.uuid: pose}, only_object)[cam.uuid]

    def render(self, mode: str = "rgb") -> Any:
        obs = self._observations()
        out = obs.get(mode)
        if out is None:
            raise ValueError(f"MosNavMeshSim-v0.render: sensor {mode!r} is not active")
        return out
