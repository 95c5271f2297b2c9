"""habitat_mosnav: multi-object visual navigation (MOS/MOC) as a Habitat-Lab plugin.

``import habitat_mosnav`` makes habitat importable without habitat-sim (see ``_compat``)
and registers the dataset, task, actions, sensors, measures, simulator and configs.
"""
from habitat_mosnav import _compat

_compat.install()

__version__ = "0.1.0"
