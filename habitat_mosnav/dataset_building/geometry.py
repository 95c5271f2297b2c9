"""The one seam between the build stages and a simulator.

Every geometric question the stages ask (navigable? snap, random point, geodesic distance,
what does a camera at this pose see) goes through :class:`SceneGeometry`, which talks to a
habitat-lab ``Simulator`` through its habitat-sim-like API only (``pathfinder``,
``geodesic_distance``, ``get_observations_at``). ``backend`` names a row of
:data:`habitat_mosnav.simulators.SIMULATORS`, which holds all that differs between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from habitat_mosnav.api import AGENT_HEIGHT, AGENT_RADIUS, CAMERA_HFOV
from habitat_mosnav.dataset_building.common import BuildError, SceneFiles
from habitat_mosnav.simulators import SimulatorUnavailable, simulator_choice


@dataclass
class CameraSpec:
    """The agent and camera the stages render with (habitat's objectnav defaults)."""

    #: Image size of the semantic (and RGB) cameras (pixels).
    width: int = 160
    height: int = 160
    #: Horizontal field of view (degrees).
    hfov: int = CAMERA_HFOV
    #: Camera height above the agent's feet (m).
    sensor_height: float = AGENT_HEIGHT
    #: The agent's body (m): view points must be navigable for it.
    agent_height: float = AGENT_HEIGHT
    agent_radius: float = AGENT_RADIUS
    #: Also render RGB (the attribute stage's crops); the view-point search needs only semantics.
    rgb: bool = True


def make_sim_config(
    scene_path: Path,
    backend: str = "mosnav",
    camera: Optional[CameraSpec] = None,
    scene_dataset: str = "default",
    navmesh: Optional[Path] = None,
    up_axis: str = "auto",
):
    """A habitat ``SimulatorConfig`` node (OmegaConf) for the chosen backend; ``up_axis``
    (auto/y/z) is the scene files' up axis, handed to the CPU simulator so that it and
    ``extract`` read the meshes in the same frame (habitat-sim itself reads a .glb as Z up)."""
    from omegaconf import OmegaConf

    import habitat_mosnav  # noqa: F401  (habitat placeholders before habitat)
    from habitat.config.default_structured_configs import (
        AgentConfig,
        HabitatSimRGBSensorConfig,
        HabitatSimSemanticSensorConfig,
    )

    cam = camera or CameraSpec()
    pos = [0.0, cam.sensor_height, 0.0]
    sensors = {
        "semantic_sensor": HabitatSimSemanticSensorConfig(
            width=cam.width, height=cam.height, hfov=int(round(cam.hfov)), position=pos
        )
    }
    if cam.rgb:
        sensors["rgb_sensor"] = HabitatSimRGBSensorConfig(
            width=cam.width, height=cam.height, hfov=int(round(cam.hfov)), position=pos
        )
    agent = AgentConfig(height=cam.agent_height, radius=cam.agent_radius, sim_sensors=sensors)
    choice = simulator_choice(backend)  # ValueError naming the choices
    cfg = OmegaConf.structured(choice.structured_config())
    opts = dict(render=True, up_axis=up_axis, navmesh=navmesh and str(navmesh))
    for key, value in choice.config_values(**opts).items():  # no options node: opts unset
        OmegaConf.update(cfg, key, value)
    cfg.scene_dataset = scene_dataset
    cfg.scene = str(scene_path)
    cfg.agents = {"main_agent": OmegaConf.structured(agent)}
    cfg.agents_order = ["main_agent"]
    cfg.seed = 0  # the stages seed the pathfinder themselves (habitat.seed is not in this node)
    cfg.forward_step_size = 0.25
    cfg.turn_angle = 30
    return cfg


class SceneGeometry:
    """Navigability, geodesics and rendering of one scene, backend-independent."""

    def __init__(self, sim: Any, camera: CameraSpec, scene_id: str = ""):
        self.sim = sim
        self.camera = camera
        self.scene_id = scene_id
        self.pf = sim.pathfinder

    # -- navigation ------------------------------------------------------------------
    def is_navigable(self, p: Sequence[float]) -> bool:
        return bool(self.pf.is_navigable(np.asarray(p, dtype=np.float32)))

    def snap(self, p: Sequence[float]) -> Optional[np.ndarray]:
        """Nearest navigable point, or None (habitat-sim returns NaNs when there is none)."""
        q = np.asarray(self.pf.snap_point(np.asarray(p, dtype=np.float32)), dtype=np.float64)
        if q.shape != (3,) or not np.all(np.isfinite(q)):
            return None
        return q

    def island_radius(self, p: Sequence[float]) -> float:
        """Radius of the navmesh island under ``p`` (small: a bed top, a table top)."""
        return float(self.pf.island_radius(np.asarray(p, dtype=np.float32)))

    def seed(self, seed: int) -> None:
        self.pf.seed(int(seed) % (2**31))

    def random_point(self) -> np.ndarray:
        return np.asarray(self.pf.get_random_navigable_point(), dtype=np.float64)

    def geodesic(self, a: Sequence[float], b: Sequence[float]) -> float:
        """Geodesic distance a -> b (inf when unreachable)."""
        return self.geodesic_to_nearest(a, [b])

    def geodesic_to_nearest(self, a: Sequence[float], points: Sequence[Sequence[float]]) -> float:
        """Geodesic distance from a to the nearest of ``points`` (inf when none is reachable)."""
        d = float(
            self.sim.geodesic_distance(
                np.asarray(a, dtype=np.float32), np.asarray(points, dtype=np.float32)
            )
        )
        return d if np.isfinite(d) else float("inf")

    def bounds(self):
        lo, hi = self.pf.get_bounds()
        return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)

    # -- rendering -------------------------------------------------------------------
    def _obs(self, position, rotation):

        q = np.quaternion(
            float(rotation[3]), float(rotation[0]), float(rotation[1]), float(rotation[2])
        )
        return self.sim.get_observations_at(
            position=np.asarray(position, dtype=np.float32),
            rotation=q,
            keep_agent_at_new_pose=False,
        )

    def semantic(self, position, rotation) -> np.ndarray:
        """(H, W) int object ids seen from an agent standing at ``position``."""
        obs = self._obs(position, rotation)
        return np.asarray(obs["semantic"]).reshape(self.camera.height, self.camera.width)

    def camera_semantic(self, eye, rotation) -> np.ndarray:
        """(H, W) object ids seen by the build camera placed at ``eye`` (world) with
        ``rotation`` ``[x, y, z, w]`` (any pitch), apart from the agent."""
        from habitat_mosnav.sims.camera import render_camera

        cam = self.camera
        hfov = float(int(round(cam.hfov)))
        return render_camera(
            self.sim, "semantic", list(eye), list(rotation), hfov, cam.width, cam.height
        )

    def unoccluded_pixels(self, eye, rotation, object_id: int, margin: int = 1) -> Optional[int]:
        """Pixels ``object_id`` would cover drawn alone (nothing in front of it) by the
        camera of :meth:`camera_semantic`, on its image plane extended by ``margin`` frame
        widths on every side (same focal length and pixel grid, so the part of it outside
        the frame counts too). None when the simulator cannot draw one object alone
        (habitat-sim)."""
        render = getattr(self.sim, "render_camera", None)
        if render is None:
            return None
        cam = self.camera
        k = 1 + 2 * int(margin)
        half = np.radians(float(int(round(cam.hfov)))) / 2.0
        hfov = 2.0 * np.degrees(np.arctan(k * np.tan(half)))
        sem = render(
            "semantic",
            list(eye),
            list(rotation),
            hfov,
            k * cam.width,
            k * cam.height,
            only_object=int(object_id),
        )
        return int(np.count_nonzero(np.asarray(sem) == int(object_id)))

    def rgb_semantic(self, position, rotation):
        obs = self._obs(position, rotation)
        sem = np.asarray(obs["semantic"]).reshape(self.camera.height, self.camera.width)
        return np.asarray(obs["rgb"])[..., :3], sem

    def close(self) -> None:
        try:
            self.sim.close()
        except Exception:
            pass


def open_scene(
    scene: SceneFiles,
    backend: str = "mosnav",
    camera: Optional[CameraSpec] = None,
    scene_dataset: str = "default",
    up_axis: str = "auto",
) -> SceneGeometry:
    """Build the simulator for one scene; a clear error when the backend is unavailable."""
    import habitat_mosnav  # noqa: F401

    cam = camera or CameraSpec()
    try:
        choice = simulator_choice(backend)
        choice.check()  # installed, importable, registered with habitat
    except (ValueError, SimulatorUnavailable) as e:
        raise BuildError(f"--backend {backend}: {e}") from None
    scene_path = scene.render_glb
    if choice.native_reader:  # hostile glTF checked first (issue #30)
        from habitat_mosnav.scenes.gltf import check_scene_files
        from habitat_mosnav.scenes.io import SceneFormatError

        try:
            check_scene_files(str(scene_path))
        except SceneFormatError as e:
            raise BuildError(str(e)) from None
    cfg = make_sim_config(
        scene_path,
        backend,
        cam,
        scene_dataset,
        navmesh=scene.navmesh,
        up_axis=up_axis,
    )
    from habitat.sims import make_sim

    try:
        sim = make_sim(cfg.type, config=cfg)
    except BuildError:
        raise
    except Exception as e:
        raise BuildError(
            f"{scene_path}: cannot load the scene in {cfg.type} ({type(e).__name__}: {e})"
        ) from None
    return SceneGeometry(sim, cam, scene.scene_id)
