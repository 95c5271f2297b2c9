"""Dataset building: from semantic annotations to goals, queries and episodes (SPEC §6).

``mosnav-build <stage>`` (see :mod:`.cli`), or the same stages as Python functions::

    from habitat_mosnav.dataset_building import BuildConfig, run_all
    run_all(BuildConfig(out="dataset_semantic", scenes="scenes", offline=True, seed=0))

Stages: ``run_extract``, ``run_attributes``, ``run_normalize``, ``run_queries``,
``run_language``, ``run_episodes``, ``run_show``, ``run_all``. Geometry goes through
:mod:`.geometry` only, so the CPU simulator and habitat-sim are interchangeable.
"""

from habitat_mosnav.dataset_building.common import BuildError  # noqa: F401

_PIPELINE = (
    "BuildConfig",
    "run_all",
    "run_extract",
    "run_attributes",
    "run_normalize",
    "run_queries",
    "run_language",
    "run_episodes",
    "run_show",
    "STAGE_FUNCS",
)
__all__ = ["BuildError", *_PIPELINE]


def __getattr__(name):
    # Lazy, so that `import habitat_mosnav.dataset_building.queries` stays light.
    if name in _PIPELINE:
        from habitat_mosnav.dataset_building import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
