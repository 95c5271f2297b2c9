"""habitat-baselines glue for habitat_mosnav (needs the ``[baselines]`` extra).

:func:`register` (called by ``python -m habitat_mosnav.run`` and by the lazy names below)
registers, on top of the plugin (importing one of ``factory``, ``evaluator``, ``image_goal``,
``text_goal`` or ``trainer`` registers what that module defines and the non-scalar measures):

* the vector-env factory :class:`~habitat_mosnav.baselines.factory.MosNavVectorEnvFactory`
  (its worker processes import the plugin);
* the observation transformer ``MosNavTextGoalEncoder`` (goal text → float vector) and its
  config ``habitat_baselines/rl/policy/obs_transforms: mosnav_text_goal``;
* the observation transformer ``MosNavGoalImageInput`` (``mosnav_goal_image`` → the
  policy's goal-image input, a ResNet of its own) and its config
  ``habitat_baselines/rl/policy/obs_transforms: mosnav_goal_image``;
* the evaluator config ``habitat_baselines/evaluator: mosnav`` (SPEC §8 records);
* the trainers ``mosnav_ppo`` / ``mosnav_ddppo`` (checkpoint loading and eval fixes);
* ``mos_report_events`` as a non-scalar metric of habitat-baselines (it is a list: the
  scalar extraction would call ``float()`` on a one-event list);

Importing this package itself stays light (no habitat-baselines), because the VectorEnv
workers import :mod:`habitat_mosnav.baselines.envs` and need nothing more.
"""

from __future__ import annotations

import habitat_mosnav  # noqa: F401  (must come before habitat / habitat_baselines)
import habitat  # noqa: F401,E402  (importing habitat registers the plugin)

#: Measures whose value is not a scalar: habitat-baselines drops them from training and
#: from its scalar extraction.
from habitat_mosnav.metrics.measure_table import NON_SCALAR_MEASURES  # noqa: E402

_REGISTERED = False


def register() -> None:
    """Register everything listed in the module docstring (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    from habitat_mosnav.baselines import (  # noqa: F401
        evaluator,
        factory,
        image_goal,
        text_goal,
        trainer,
    )
    from habitat_mosnav.baselines.non_scalar import mark_non_scalar_measures

    mark_non_scalar_measures()


def __getattr__(name):
    lazy = {
        "MosNavEvaluator": "evaluator",
        "MosNavGoalImageInput": "image_goal",
        "MosNavPPOTrainer": "trainer",
        "MosNavTextGoalEncoder": "text_goal",
        "MosNavVectorEnvFactory": "factory",
        "load_checkpoint": "checkpoint",
    }
    if name in lazy:
        import importlib

        register()
        return getattr(importlib.import_module(f"habitat_mosnav.baselines.{lazy[name]}"), name)
    raise AttributeError(f"module 'habitat_mosnav.baselines' has no attribute {name!r}")


__all__ = [
    "NON_SCALAR_MEASURES",
    "MosNavEvaluator",
    "MosNavGoalImageInput",
    "MosNavPPOTrainer",
    "MosNavTextGoalEncoder",
    "MosNavVectorEnvFactory",
    "load_checkpoint",
    "register",
]
