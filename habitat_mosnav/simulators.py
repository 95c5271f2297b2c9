"""The simulators this package runs on: what they must offer, and the one table of choices.

:class:`NavSimulator` (with :class:`NavPathFinder`) is the surface the task, the measures,
the oracle agent, the maps and the dataset builder use of a simulator: habitat-sim 0.3.3's,
as habitat-lab's ``HabitatSim`` (``Sim-v0``) offers it, and the CPU simulator
``MosNavMeshSim-v0`` mirrors it (``tests/test_simulator_interface.py`` checks both). Optional
extras are asked for on the object: ``tilt_camera(degrees)`` (the look actions) and
``path_request_types`` (the ``ShortestPath`` / ``MultiGoalShortestPath`` classes its
``pathfinder.find_path`` takes; :func:`path_request_types`). A camera at any pose
(:class:`CameraRendering`) is asked through :func:`habitat_mosnav.sims.camera.render_camera`.

:data:`SIMULATORS` is the one table of ``--simulator`` / ``--backend`` choices and of what
differs between them; nothing outside this module compares a simulator's name or type
(``tests/test_simulator_table.py``). Standard library only (the command lines import it).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, runtime_checkable

__all__ = [
    "CameraRendering",
    "NavPathFinder",
    "NavSimulator",
    "SimulatorChoice",
    "SIMULATORS",
    "HABITAT_SIM_INSTALL",
    "SimulatorUnavailable",
    "simulator_choice",
    "choice_for_type",
    "default_gpu_device_id",
    "path_request_types",
    "interface_mismatches",
    "option_nodes",
    "simulator_option",
]


# ----------------------------------------------------------------------------- interface
@runtime_checkable
class NavPathFinder(Protocol):
    """``sim.pathfinder``: habitat-sim's ``PathFinder`` queries in use (points are
    ``[x, y, z]``, Y up; see ``sims/navmesh_query.py`` for the failure values)."""

    @property
    def is_loaded(self) -> bool: ...

    def get_bounds(self) -> Tuple[Any, Any]: ...

    def is_navigable(self, pt: Sequence[float], max_y_delta: float = 0.5) -> bool: ...

    def snap_point(self, pt: Sequence[float]) -> Any: ...

    def get_random_navigable_point(self, max_tries: int = 10, island_index: int = -1) -> Any: ...

    def island_radius(self, pt: Sequence[float]) -> float: ...

    def get_island(self, pt: Sequence[float]) -> int: ...

    def find_path(self, path: Any) -> bool: ...

    def try_step(self, start: Sequence[float], end: Sequence[float]) -> Any: ...

    def try_step_no_sliding(self, start: Sequence[float], end: Sequence[float]) -> Any: ...

    def seed(self, new_seed: int) -> None: ...

    def get_topdown_view(self, meters_per_pixel: float, height: float, eps: float = 0.5) -> Any: ...


@runtime_checkable
class NavSimulator(Protocol):
    """A habitat simulator as this package uses it (habitat-lab's ``Simulator`` API plus
    habitat-sim's ``pathfinder``). ``habitat_config`` is the ``habitat.simulator`` node."""

    habitat_config: Any

    @property
    def pathfinder(self) -> NavPathFinder: ...

    @property
    def previous_step_collided(self) -> bool: ...

    def reconfigure(
        self, habitat_config: Any, ep_info: Any = None, should_close_on_new_scene: bool = True
    ) -> None: ...

    def reset(self) -> Any: ...

    def step(self, action: Any) -> Any: ...

    def seed(self, new_seed: int) -> None: ...

    def close(self, destroy: bool = True) -> None: ...

    def get_agent_state(self, agent_id: int = 0) -> Any: ...

    def set_agent_state(
        self,
        position: Sequence[float],
        rotation: Any,
        agent_id: int = 0,
        reset_sensors: bool = True,
    ) -> bool: ...

    def geodesic_distance(
        self, position_a: Sequence[float], position_b: Any, episode: Any = None
    ) -> float: ...

    def sample_navigable_point(self) -> List[float]: ...

    def island_radius(self, position: Sequence[float]) -> float: ...

    def is_navigable(self, point: Sequence[float]) -> bool: ...

    def get_observations_at(
        self,
        position: Optional[Sequence[float]] = None,
        rotation: Any = None,
        keep_agent_at_new_pose: bool = False,
    ) -> Any: ...


@runtime_checkable
class CameraRendering(Protocol):
    """A picture from a camera at a world pose, apart from the agent's sensors (the image
    goal, ``sensors/sensors.py``): ``kind`` ``rgb`` or ``semantic``, ``position`` the eye,
    ``rotation`` ``[x, y, z, w]``. The CPU simulator offers it as a method; on habitat-sim
    :func:`habitat_mosnav.sims.camera.render_camera` adds and removes a camera sensor,
    which is what every caller goes through."""

    def render_camera(self, kind, position, rotation, hfov, width, height) -> Any: ...


def _members(protocol) -> Dict[str, Any]:
    out = {}
    for klass in protocol.__mro__:
        if klass.__module__ == __name__:
            for name, value in vars(klass).items():
                if not name.startswith("_"):
                    out.setdefault(name, value)
            for name in getattr(klass, "__annotations__", {}):
                out.setdefault(name, None)  # a data member: present on instances only
    return out


def interface_mismatches(cls: type, protocol=NavSimulator) -> List[str]:
    """What ``cls`` lacks of ``protocol`` (empty: it offers it): a missing method or
    property, or a method that cannot be called as the protocol calls it (a parameter
    without default passed by position, one with a default passed by name). Methods
    whose signature Python cannot read (pybind11) are checked for presence only; data
    members (``habitat_config``) are left to ``isinstance`` on an instance."""
    import inspect

    problems = []
    for name, want in _members(protocol).items():
        if want is None:
            continue
        got = inspect.getattr_static(cls, name, None)
        if got is None:
            problems.append(f"{cls.__name__}.{name} is missing")
            continue
        if isinstance(want, property):
            continue  # a property, or anything readable
        if isinstance(got, property) or not callable(got) and not hasattr(got, "__func__"):
            problems.append(f"{cls.__name__}.{name} is not a method")
            continue
        try:
            have = inspect.signature(getattr(cls, name))
        except (TypeError, ValueError):
            continue
        params = list(have.parameters.values())
        if params and params[0].name == "self":
            params = params[1:]
        var_pos = any(p.kind == p.VAR_POSITIONAL for p in params)
        var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        by_name = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        wanted = list(inspect.signature(want).parameters.values())[1:]
        needed = [p for p in wanted if p.default is p.empty]
        if len(needed) > len(positional) and not var_pos:
            problems.append(
                f"{cls.__name__}.{name}{have} takes fewer than {len(needed)} positional arguments"
            )
        for p in wanted:
            if p.default is not p.empty and p.name not in by_name and not var_kw:
                problems.append(f"{cls.__name__}.{name}{have} has no parameter {p.name!r}")
        required = [
            p
            for p in params
            if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        if len(required) > len(needed):
            problems.append(
                f"{cls.__name__}.{name}{have} needs more arguments than the protocol passes"
            )
    return problems


def path_request_types(sim) -> Tuple[type, type]:
    """``(ShortestPath, MultiGoalShortestPath)`` that ``sim.pathfinder.find_path`` takes,
    as the simulator states them (``sim.path_request_types``, the CPU simulator); a
    simulator that states none is habitat-sim's (the interface's reference)."""
    own = getattr(sim, "path_request_types", None)
    if own is not None:
        return tuple(own)  # type: ignore[return-value]
    from habitat_sim import MultiGoalShortestPath, ShortestPath  # type: ignore

    return ShortestPath, MultiGoalShortestPath


# ----------------------------------------------------------------------------- choices
#: how users install habitat-sim (never a pip dependency of this package)
HABITAT_SIM_INSTALL = (
    "conda install habitat-sim=0.3.3 withbullet headless -c conda-forge -c aihabitat"
)


class SimulatorUnavailable(RuntimeError):
    """A simulator cannot run here (not installed); the message names the install."""


def default_gpu_device_id() -> int:
    """habitat-sim's render device: GPU 0 on a machine with an NVIDIA device, else -1
    (Mesa's llvmpipe on the CPU); the HM3D configs read it as ``${mosnav_gpu_device:}``."""
    return 0 if os.path.exists("/dev/nvidiactl") else -1


@dataclass(frozen=True)
class SimulatorChoice:
    """One simulator: ``name`` (``--simulator`` / ``--backend``), its habitat registry
    ``type``, the ``requires`` modules that must import, the module that registers the type
    (``registers``), the structured config of its ``habitat.simulator`` node
    (``config_class``, ``module:Class``), how to install it, and how it differs:
    ``options_key``, its options node (None: none), named as the CPU simulator's
    (``render``, ``navmesh``, ``up_axis``); ``uses_gpu_device``, it renders on
    ``habitat_sim_v0.gpu_device_id``; ``native_reader``, it reads ``.glb`` / ``.navmesh``
    natively (Magnum, Detour), so a hostile file is caught in Python first; a type of no
    row counts as one; ``needs_scene_dataset``, without that config it reads a Z-up stage
    Y up; ``version_key``, the ``software_versions()`` entry a replay records as its
    version (None: this package's)."""

    name: str
    type: str
    requires: Tuple[str, ...]
    registers: str
    config_class: str
    options_key: Optional[str]
    uses_gpu_device: bool
    install: str
    description: str
    native_reader: bool = True
    needs_scene_dataset: bool = False
    version_key: Optional[str] = None

    def available(self) -> bool:
        """True when every module of ``requires`` can be imported (without importing it)."""
        from habitat_mosnav._compat import modules_importable

        return modules_importable(self.requires)

    def check(self) -> None:
        """Raise :class:`SimulatorUnavailable` (one line naming the install) unless the
        simulator is installed and its type registered with habitat."""
        if not self.available():
            raise SimulatorUnavailable(
                f"habitat.simulator.type {self.type} needs {self.description}, which is not installed: "
                f"{self.install}"
            )
        try:
            importlib.import_module(self.registers)
            from habitat.core.registry import registry

            registered = registry.get_simulator(self.type)
        except Exception as exc:  # noqa: BLE001 - an import error of any kind, one line
            raise SimulatorUnavailable(
                f"habitat.simulator.type {self.type}: {self.registers} cannot be imported "
                f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}): {self.install}"
            ) from None
        if registered is None:
            raise SimulatorUnavailable(
                f"habitat.simulator.type {self.type} is not registered with habitat: {self.install}"
            )

    def config_values(self, gpu_device_id: Optional[int] = None, **options) -> Dict[str, Any]:
        """``habitat.simulator`` keys (relative) that running on this simulator sets, with
        ``options`` (None: unset) in its options node."""
        out: Dict[str, Any] = {"type": self.type}
        if self.uses_gpu_device:
            out["habitat_sim_v0.gpu_device_id"] = int(
                default_gpu_device_id() if gpu_device_id is None else gpu_device_id
            )
        if self.options_key:
            out.update({f"{self.options_key}.{k}": v for k, v in options.items() if v is not None})
        return out

    def structured_config(self):
        """The dataclass of this simulator's ``habitat.simulator`` node."""
        module, _, attr = self.config_class.partition(":")
        return getattr(importlib.import_module(module), attr)


#: The simulator choices, by name.
SIMULATORS: Dict[str, SimulatorChoice] = {
    c.name: c
    for c in (
        SimulatorChoice(
            name="mosnav",
            type="MosNavMeshSim-v0",
            requires=("habitat_mosnav.sims",),
            registers="habitat_mosnav.sims",
            config_class="habitat_mosnav.config.simulator:MosNavMeshSimConfig",
            options_key="mosnav_mesh",
            uses_gpu_device=False,
            native_reader=False,
            install="pip install habitat-mosnav (the CPU simulator is part of this package)",
            description="the CPU simulator",
        ),
        SimulatorChoice(
            name="habitat-sim",
            type="Sim-v0",
            requires=("habitat_sim", "magnum"),
            registers="habitat.sims.habitat_simulator.habitat_simulator",
            config_class="habitat.config.default_structured_configs:SimulatorConfig",
            options_key=None,
            uses_gpu_device=True,
            needs_scene_dataset=True,
            version_key="habitat_sim",
            install=HABITAT_SIM_INSTALL,
            description="habitat-sim",
        ),
    )
}


def simulators_help() -> str:
    """The ``--simulator`` choices as help prose, from the table: "NAME (TYPE, DESCRIPTION)"."""
    return " or ".join(
        f"{c.name} ({c.type}{'' if c.description == c.name else ', ' + c.description})"
        for c in SIMULATORS.values()
    )


def simulator_choice(name: str) -> SimulatorChoice:
    """The choice called ``name``; ValueError naming the choices otherwise."""
    try:
        return SIMULATORS[name]
    except KeyError:
        raise ValueError(
            f"unknown simulator {name!r} (expected one of {', '.join(SIMULATORS)})"
        ) from None


def choice_for_type(sim_type: Optional[str]) -> Optional[SimulatorChoice]:
    """The choice whose registry type is ``sim_type`` (None: a simulator of no row here)."""
    return next((c for c in SIMULATORS.values() if c.type == sim_type), None)


def option_nodes(sim_node: Any) -> List[str]:
    """The options nodes that ``sim_node`` (``habitat.simulator``) holds, whichever
    simulator runs (the shipped configs hold the CPU simulator's on habitat-sim too)."""
    keys = dict.fromkeys(c.options_key for c in SIMULATORS.values() if c.options_key)
    return [k for k in keys if hasattr(sim_node, "get") and sim_node.get(k) is not None]


def simulator_option(sim_node: Any, name: str) -> Any:
    """Option ``name`` of the first options node of :func:`option_nodes` (None: none)."""
    return next((sim_node[k].get(name) for k in option_nodes(sim_node)), None)
