"""habitat_mosnav: multi-object visual navigation (MOS/MOC) as a Habitat-Lab plugin.

``import habitat_mosnav`` registers the dataset, task, actions, sensors, measures, the CPU
simulator ``MosNavMeshSim-v0`` and the configs in habitat's registry and Hydra's
ConfigStore, and makes habitat importable without habitat-sim (see ``_compat``).

The gym ids (``gym.make("HabitatMosNavMosDemo-v0")``) are registered as soon as gym is
imported. Registration happens as soon as habitat is imported (at once if it already is), so the
parts that need no habitat — ``metrics``, ``evaluation`` result files, ``scenes``, ``api``
— import without habitat or torch, and their command-line tools start fast.
"""

from habitat_mosnav import _compat

__version__ = "0.1.0"
__all__ = ["config_path", "get_config", "register_configs", "register", "__version__"]

_registered = False


#: Leaf modules whose import registers something. Each of their packages' ``__init__``
#: imports habitat first, so when this runs (right after habitat's own ``__init__``) none
#: of these leaves is half-imported, whatever the user imported first.
_REGISTERING_MODULES = (
    "habitat_mosnav.config.default",
    "habitat_mosnav.sims.mosnav_sim",
    "habitat_mosnav.datasets.multi_object_nav_dataset",
    "habitat_mosnav.tasks.multi_object_nav_task",
    "habitat_mosnav.sensors.sensors",
    "habitat_mosnav.measures.measures",
)


def register() -> None:
    """Register the plugin in habitat's registry and Hydra (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    import importlib

    _compat.restore_dlopen_flags()
    for name in _REGISTERING_MODULES:
        importlib.import_module(name)
    importlib.import_module("habitat_mosnav.config.default").register_configs()


def _register_gym_ids() -> None:
    """The gym ids (``habitat_mosnav.gym_envs``): registered once gym is imported, whoever
    imports it (habitat does), so ``import gym, habitat_mosnav; gym.make(...)`` works."""
    import importlib

    importlib.import_module("habitat_mosnav.gym_envs").register_gym_envs()


_compat.install_import_hook()
_compat.call_after_habitat_import(register)
_compat.call_after_import("gym", _register_gym_ids)


def __getattr__(name):
    if name in ("config_path", "get_config", "register_configs"):
        from habitat_mosnav import config

        return getattr(config, name)
    raise AttributeError(f"module 'habitat_mosnav' has no attribute {name!r}")
