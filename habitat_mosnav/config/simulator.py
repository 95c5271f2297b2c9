"""Structured config of the CPU simulator ``MosNavMeshSim-v0`` (``habitat.simulator``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from habitat.config.default_structured_configs import SimulatorConfig


@dataclass
class MosNavMeshOptions:
    """Options of the CPU backend only; habitat-sim ignores them.

    ``cell_size``: navigability / fast-marching grid resolution in metres.
    ``navmesh``: a Recast/Detour ``.navmesh`` (habitat-sim's file) to read instead of
    voxelising the mesh ("" = ``<scene>.navmesh`` beside the scene when present, else
    voxelise; "none" = always voxelise).
    ``scene_cache_size`` / ``distance_field_cache_size``: LRU sizes (scenes per process,
    goal-set distance fields per scene).
    ``render``: build the GL renderer (False: visual sensors give zeros, no EGL needed).
    ``tilt_angle``: degrees per ``look_up``/``look_down`` sent to ``sim.step``.
    ``up_axis``: the scene file's up axis: "auto" (as habitat-sim: ``.glb`` is Z-up like
    MP3D/HM3D, other formats Y-up; ``<id>.mosnav_meta.json`` beside the scene can say
    otherwise), "y" or "z".
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
