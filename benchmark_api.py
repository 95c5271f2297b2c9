"""Compatibility module for agents written for the original benchmark (SPEC §7).

The original benchmark's README has agents start with::

    from benchmark_api import Action, Observation

This module is installed with ``habitat_mosnav`` (a top-level module, like the original's
``benchmark_api.py``) so those agents run unchanged. ``Action`` and ``Observation`` *are*
:mod:`habitat_mosnav.api`'s classes (not copies): ``isinstance`` checks and the evaluator
see one type. It imports numpy only.
"""

from habitat_mosnav.api import GOAL_TYPES, TARGET_MODES, Action, Observation

__all__ = ["Action", "Observation", "GOAL_TYPES", "TARGET_MODES"]
