"""Structured config of the CPU simulator ``MosNavMeshSim-v0`` (``habitat.simulator``)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional

from habitat.config.default_structured_configs import SimulatorConfig

from habitat_mosnav._compat import SIMULATORS


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


def default_gpu_device_id() -> int:
    """habitat-sim's render device: GPU 0 on a machine with an NVIDIA device, else -1
    (Mesa's llvmpipe on the CPU); the HM3D configs read it as ``${mosnav_gpu_device:}``."""
    return 0 if os.path.exists("/dev/nvidiactl") else -1


def simulator_overrides(name: str, gpu_device_id: Optional[int] = None) -> List[str]:
    """Hydra overrides that run a benchmark config on the simulator ``name``.

    ``habitat-sim`` renders on ``gpu_device_id`` (default: GPU 0 when the machine has an
    NVIDIA device, else -1, Mesa's llvmpipe on the CPU). Scenes and the scene dataset
    config stay those of the config (the bundled demo scenes carry their own)."""
    if name not in SIMULATORS:
        raise ValueError(f"unknown simulator {name!r} (expected one of {', '.join(SIMULATORS)})")
    out = [f"habitat.simulator.type={SIMULATORS[name]}"]
    if name == "habitat-sim":
        if gpu_device_id is None:
            gpu_device_id = default_gpu_device_id()
        out.append(f"habitat.simulator.habitat_sim_v0.gpu_device_id={int(gpu_device_id)}")
    return out
