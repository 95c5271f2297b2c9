"""habitat_mosnav: multi-object visual navigation (MOS/MOC) as a Habitat-Lab plugin.

``import habitat_mosnav`` makes habitat importable without habitat-sim (see ``_compat``)
and registers the dataset, task, actions, sensors, measures, the CPU simulator
``MosNavMeshSim-v0`` and the configs (``habitat_mosnav.get_config``).
"""
from habitat_mosnav import _compat

_compat.install()

from habitat_mosnav.config import get_config, register_configs  # noqa: E402

register_configs()

from habitat_mosnav import datasets, measures, sensors, sims, tasks  # noqa: E402,F401

__version__ = "0.1.0"
__all__ = ["get_config", "register_configs", "__version__"]
