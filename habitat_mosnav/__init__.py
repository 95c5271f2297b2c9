"""habitat_mosnav: multi-object visual navigation (MOS/MOC) as a Habitat-Lab plugin.

``import habitat_mosnav`` registers the dataset, task, actions, sensors, measures, the CPU
simulator ``MosNavMeshSim-v0`` and the configs in habitat's registry and Hydra's
ConfigStore, and makes habitat importable without habitat-sim (see ``_compat``).

Registration happens as soon as habitat is imported (at once if it already is), so the
parts that need no habitat — ``metrics``, ``evaluation`` result files, ``scenes``, ``api``
— import without habitat or torch, and their command-line tools start fast.
"""
from habitat_mosnav import _compat

__version__ = "0.1.0"
__all__ = ["get_config", "register_configs", "register", "__version__"]

_registered = False


def register() -> None:
    """Import the modules whose import registers the plugin (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    from habitat_mosnav.config import register_configs as _register_configs

    _register_configs()
    from habitat_mosnav import datasets, measures, sensors, sims, tasks  # noqa: F401


_compat.install_import_hook()
_compat.call_after_habitat_import(register)


def __getattr__(name):
    if name in ("get_config", "register_configs"):
        from habitat_mosnav import config

        return getattr(config, name)
    raise AttributeError(f"module 'habitat_mosnav' has no attribute {name!r}")
