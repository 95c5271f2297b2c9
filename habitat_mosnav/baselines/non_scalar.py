"""Tell habitat-baselines which mosnav measures are not scalars (``mos_report_events`` is a
list: its scalar extraction would call ``float()`` on a one-event list, and training would
log it). Each module of this package that habitat-baselines runs calls
:func:`mark_non_scalar_measures` on import; it needs habitat-baselines."""

from __future__ import annotations

from habitat_mosnav.metrics.measure_table import NON_SCALAR_MEASURES


def mark_non_scalar_measures() -> None:
    """Add :data:`~habitat_mosnav.metrics.measure_table.NON_SCALAR_MEASURES` to
    habitat-baselines' ``NON_SCALAR_METRICS`` (idempotent: it is a set)."""
    from habitat_baselines.utils import info_dict

    info_dict.NON_SCALAR_METRICS.update(NON_SCALAR_MEASURES)
