"""Make ``import habitat`` / ``import habitat_baselines`` work without habitat-sim.

habitat-lab 0.3.3 guards most of its habitat-sim imports with try/except, but a few import
chains run unguarded at import time and die on ``magnum``/``habitat_sim``. When (and only
when) habitat-sim is not importable, :func:`install` pre-seeds ``sys.modules`` with small
placeholder modules for exactly those chains. Everything else in habitat-lab stays real.

The package installs a one-line ``habitat_mosnav_compat.pth`` into site-packages that calls
:func:`install_import_hook` at interpreter start-up: a meta-path hook that runs
:func:`install` the first time ``habitat`` or ``habitat_baselines`` is imported, so even
``import habitat, habitat_mosnav`` (habitat first) works. It costs nothing otherwise.

Placeholder attributes are classes that raise an ImportError naming habitat-sim as soon as
anything instantiates or calls them, so nothing fails silently. Two attributes are used at
import time and therefore get working no-ops: ``_try_register_rearrange_task`` (called by
``habitat.tasks.registration``) and ``add_perf_timing_func`` (a decorator factory used by
``habitat.gym.gym_wrapper``).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types
from typing import Callable, Dict, List

_HINT = (
    "requires habitat-sim, which is not installed (install it with conda: "
    "`conda install habitat-sim -c conda-forge -c aihabitat`); habitat_mosnav's CPU "
    "simulator 'MosNavMeshSim-v0' works without it"
)


class _Unavailable:
    """Base of every placeholder attribute: usable in ``isinstance``, fails when used."""

    _qualname = "?"

    def __new__(cls, *args, **kwargs):
        raise ImportError(f"{cls._qualname} {_HINT}")

    def __init_subclass__(cls, **kwargs):
        # A subclass of a placeholder (``class X(RearrangeSim)``) is defined fine at import,
        # and fails only when instantiated, like its base.
        super().__init_subclass__(**kwargs)


class _PlaceholderModule(types.ModuleType):
    """A module whose unknown attributes are :class:`_Unavailable` subclasses."""

    def __init__(self, name: str, attrs: Dict[str, object]):
        super().__init__(name, f"habitat_mosnav placeholder: {name} {_HINT}")
        self.__path__ = []  # lets placeholder packages hold placeholder submodules
        self.__mosnav_placeholder__ = True
        for key, value in attrs.items():
            setattr(self, key, value)

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        cls = type(attr, (_Unavailable,), {"_qualname": f"{self.__name__}.{attr}"})
        setattr(self, attr, cls)
        return cls


def _placeholder(qualname: str, **attrs) -> type:
    """A placeholder class with the class attributes code reads without instantiating it
    (habitat-baselines reads sensors' and measures' ``cls_uuid``)."""
    return type(qualname.rsplit(".", 1)[1], (_Unavailable,), {"_qualname": qualname, **attrs})


def _noop() -> None:
    return None


def _add_perf_timing_func(*_args, **_kwargs) -> Callable:
    def decorator(func):
        return func

    return decorator


#: module name -> attributes with real (no-op) values; other attributes are placeholders.
PLACEHOLDERS: Dict[str, Dict[str, object]] = {
    # habitat/__init__ -> core.env -> sims/habitat_simulator/__init__ -> object_state_machine
    "habitat.sims.habitat_simulator.object_state_machine": {},
    # core.env -> tasks/registration -> tasks.rearrange._try_register_rearrange_task()
    "habitat.tasks.rearrange": {"_try_register_rearrange_task": _noop},
    # core.vector_env -> core.batch_rendering.env_batch_renderer
    "habitat.core.batch_rendering.env_batch_renderer": {},
    # habitat.gym.gym_wrapper -> tasks.rearrange.rearrange_sim.add_perf_timing_func
    "habitat.tasks.rearrange.rearrange_sim": {"add_perf_timing_func": _add_perf_timing_func},
    # habitat_baselines rl/ddppo/policy/resnet_policy -> tasks.nav.instance_image_nav_task
    "habitat.tasks.nav.instance_image_nav_task": {
        "InstanceImageGoalSensor": _placeholder(
            "habitat.tasks.nav.instance_image_nav_task.InstanceImageGoalSensor",
            cls_uuid="instance_imagegoal",
        ),
        "InstanceImageGoalHFOVSensor": _placeholder(
            "habitat.tasks.nav.instance_image_nav_task.InstanceImageGoalHFOVSensor",
            cls_uuid="instance_imagegoal_hfov",
        ),
    },
    # habitat_baselines rl/ppo/habitat_evaluator -> rearrange_sensors, rearrange.utils
    "habitat.tasks.rearrange.rearrange_sensors": {
        "GfxReplayMeasure": _placeholder(
            "habitat.tasks.rearrange.rearrange_sensors.GfxReplayMeasure",
            cls_uuid="gfx_replay_keyframes_string",
        ),
    },
    "habitat.tasks.rearrange.utils": {},
    # habitat_baselines rl/ppo/single_agent_access_mgr -> rl.hrl.hierarchical_policy
    "habitat_baselines.rl.hrl.hierarchical_policy": {},
}


# The simulator choices (names, types, install hints) live in habitat_mosnav/simulators.py.
# Not imported here: the .pth start-up hook loads this file by path, without the package.

_DLOPEN_FLAGS = sys.getdlopenflags()


def restore_dlopen_flags() -> None:
    """Undo habitat-sim's ``RTLD_GLOBAL`` for the extensions imported after it.

    Its Magnum bindings (``corrade/__init__``) leave Python's dlopen flags at RTLD_GLOBAL
    for the rest of the process. An extension loaded after that shares its symbols with
    everything: torch's ``triton`` (a static LLVM, loaded by habitat-baselines through
    ``torch._dynamo``) then clashes with Mesa's LLVM when the CPU simulator opens its EGL
    context (llvmpipe): ``LLVM ERROR: Option 'default' already exists!`` and an abort.
    Called once habitat (and so habitat-sim) is imported; Magnum's own modules are loaded
    by then and keep working."""
    import os

    if sys.getdlopenflags() & os.RTLD_GLOBAL and not _DLOPEN_FLAGS & os.RTLD_GLOBAL:
        sys.setdlopenflags(sys.getdlopenflags() & ~os.RTLD_GLOBAL)


def habitat_sim_available() -> bool:
    """True when habitat-sim (and its magnum) can be imported."""
    return modules_importable(("habitat_sim", "magnum"))


def modules_importable(names) -> bool:
    """True when every module of ``names`` can be imported, without importing it (a module
    set to None in ``sys.modules`` is blocked). Also ``simulators.SimulatorChoice.available``."""
    for module in names:
        if module in sys.modules:
            if sys.modules[module] is None:
                return False
            continue
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


def install(force: bool = False) -> bool:
    """Seed the placeholders if habitat-sim is missing (or ``force``). Returns True if seeded.

    A no-op when habitat-sim is importable, and for any module already imported for real.
    """
    if not force and habitat_sim_available():
        return False
    for name, attrs in PLACEHOLDERS.items():
        if name not in sys.modules:
            sys.modules[name] = _PlaceholderModule(name, attrs)
    return True


def is_placeholder(module: types.ModuleType) -> bool:
    return bool(getattr(module, "__dict__", {}).get("__mosnav_placeholder__", False))


#: module name -> callbacks to run once that module's ``__init__`` has finished.
_AFTER_IMPORT: Dict[str, List[Callable[[], None]]] = {"habitat": [], "gym": []}


class _LoaderThenCallbacks(importlib.abc.Loader):
    """Wraps a package's own loader: execute its ``__init__``, then run the callbacks."""

    def __init__(self, inner, callbacks: List[Callable[[], None]]):
        self.inner = inner
        self.callbacks = callbacks

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        while self.callbacks:
            self.callbacks.pop(0)()


class _ImportHook(importlib.abc.MetaPathFinder):
    """On the first ``import habitat`` (or ``habitat_baselines``): seed the placeholders;
    on the first ``import habitat`` or ``import gym``, arrange for the
    :func:`call_after_import` callbacks to run once that ``__init__`` has finished. Removes
    itself when nothing is left to watch."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in ("habitat", "habitat_baselines"):
            silence_gym_notice()
            install()
        callbacks = _AFTER_IMPORT.get(fullname)
        if callbacks is None:
            return None
        if fullname == "habitat" or not callbacks:
            _AFTER_IMPORT.pop(fullname)
        if not _AFTER_IMPORT and self in sys.meta_path:
            sys.meta_path.remove(self)
        if not callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _LoaderThenCallbacks(spec.loader, callbacks)
                return spec
        return None


def silence_gym_notice() -> None:
    """gym 0.23 (pinned by habitat-lab) prints a 3-line "Gym has been unmaintained" banner
    to stderr when imported (from ``gym_notices``), in every command and every rank; the
    user cannot act on it. Blank it before habitat imports gym."""
    if "gym" in sys.modules:
        return
    try:
        import gym_notices.notices as notices
    except Exception:  # noqa: BLE001 - no gym_notices, no banner
        return
    notices.notices.clear()


def install_import_hook() -> None:
    """Called from the ``.pth`` file and by ``habitat_mosnav``; idempotent."""
    if "habitat" in sys.modules:
        install()
    if not any(isinstance(f, _ImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook())


def call_after_import(module: str, callback: Callable[[], None]) -> None:
    """Run ``callback`` now if ``module`` (``habitat`` or ``gym``) is imported, else right
    after its ``import``.

    ``import habitat_mosnav`` registers the plugin this way, so that modules which need no
    habitat (metrics, result files, scene generator, agent API) import without habitat
    or torch, while any code that touches habitat's registry (or gym's, for the gym ids)
    finds everything registered, whichever was imported first.
    """
    if module in sys.modules:
        callback()
        return
    _AFTER_IMPORT.setdefault(module, []).append(callback)
    install_import_hook()


def call_after_habitat_import(callback: Callable[[], None]) -> None:
    """:func:`call_after_import` of ``habitat``."""
    call_after_import("habitat", callback)
