"""Structured config of the CPU simulator ``MosNavMeshSim-v0`` (``habitat.simulator``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from habitat.config.default_structured_configs import SimulatorConfig

from habitat_mosnav.simulators import default_gpu_device_id, simulator_choice

__all__ = [
    "MosNavMeshOptions",
    "MosNavMeshSimConfig",
    "default_gpu_device_id",
    "simulator_overrides",
]


@dataclass
class MosNavMeshOptions:
    """Options of the CPU backend only; habitat-sim ignores them.

    ``cell_size``: navigability / fast-marching grid resolution in metres.
    ``navmesh``: habitat-sim's ``.navmesh`` to answer navigation queries on, as habitat-sim
    does (:mod:`habitat_mosnav.sims.navmesh_query`) ("" = ``<scene>.navmesh`` beside the
    scene when present, HM3D's ``<id>.basis.navmesh``, else navigability from the mesh;
    "none" = always from the mesh).
    ``scene_cache_size`` / ``distance_field_cache_size``: LRU sizes (scenes per process,
    goal-set distance fields per scene).
    ``render``: build the GL renderer (False: visual sensors give zeros, no EGL needed).
    ``tilt_angle``: degrees per ``look_up``/``look_down`` sent to ``sim.step``.
    ``up_axis``: the scene file's up axis: "auto" (``.glb`` is Z-up like MP3D/HM3D, as their
    scene dataset configs declare for habitat-sim; other formats Y-up;
    ``<id>.mosnav_meta.json`` beside the scene can say otherwise), "y" or "z".
    """

    cell_size: float = 0.05
    navmesh: str = ""
    scene_cache_size: int = 4
    distance_field_cache_size: int = 256
    render: bool = True
    tilt_angle: float = 30.0
    up_axis: str = "auto"


@dataclass
class MosNavMeshSimConfig(SimulatorConfig):
    type: str = "MosNavMeshSim-v0"
    mosnav_mesh: MosNavMeshOptions = field(default_factory=MosNavMeshOptions)


def simulator_overrides(name: str, gpu_device_id: Optional[int] = None) -> List[str]:
    """Hydra overrides that run a benchmark config on the simulator ``name``
    (``SimulatorChoice.config_values``; ``gpu_device_id``: :func:`default_gpu_device_id`);
    scenes, scene dataset config and the options node (the shipped configs hold the CPU
    simulator's on either, so its ``--set`` overrides work on both) stay the config's."""
    values = simulator_choice(name).config_values(gpu_device_id)
    return [f"habitat.simulator.{key}={value}" for key, value in values.items()]
