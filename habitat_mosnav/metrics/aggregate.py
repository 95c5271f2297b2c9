"""Aggregation of per-episode metrics (SPEC §5).

Each aggregate is the mean of the episode values that are finite and not None; an
aggregate with no such value is None (JSON null), never NaN. Which aggregates there are,
over which modes, is the registry's (:data:`habitat_mosnav.metrics.measure_table.AGGREGATES`,
and GOAT-Bench's :data:`~habitat_mosnav.metrics.measure_table.GOAT_AGGREGATES` over the
``sequential`` episodes, SPEC §11, which enter no other aggregate).
:class:`Aggregator` keeps running sums, so a running aggregate (the ``mos_aggregates`` measure) costs O(keys) per
episode.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from habitat_mosnav.api import EPISODE_MODES
from habitat_mosnav.metrics.measure_table import AGGREGATES, GOAT_AGGREGATES, INTEGER

_ALL = AGGREGATES + GOAT_AGGREGATES

#: The episode fields that the aggregates read (each must be a number or null).
AGGREGATED_FIELDS = tuple(sorted({a.field for a in _ALL}))
#: Aggregates of integer-format fields (a step count): a whole mean is written as an int.
_INTEGER = frozenset(a.name for a in _ALL if a.format == INTEGER)


def finite_mean(values: Iterable[Any]) -> Optional[float]:
    """Mean of the finite, non-None numbers; None when there are none."""
    total, count = 0.0, 0
    for v in values:
        if v is None or not isinstance(v, numbers.Real):
            continue
        v = float(v)
        if math.isfinite(v):
            total += v
            count += 1
    return total / count if count else None


def _finite(v: Any) -> Optional[float]:
    if v is None or not isinstance(v, numbers.Real):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


#: mode -> (aggregate name, episode field) pairs an episode of that mode contributes to.
_PLANS = {mode: [(a.name, a.field) for a in _ALL if mode in a.modes] for mode in EPISODE_MODES}
#: Every aggregate name, in the order of the summary (the registry's).
AGGREGATE_NAMES: Tuple[str, ...] = tuple(a.name for a in _ALL)


def _mean(total: float, count: int, integer: bool):
    mean = total / count
    return int(mean) if integer and mean.is_integer() else mean


class Aggregator:
    """Running SPEC §5 aggregates: :meth:`add` one episode, :meth:`result` at any time."""

    def __init__(self) -> None:
        self._sums: Dict[str, float] = {}
        self._counts: Dict[str, int] = {}
        self._modes: Dict[str, int] = {m: 0 for m in EPISODE_MODES}

    def copy(self) -> "Aggregator":
        other = Aggregator()
        other._sums, other._counts, other._modes = (
            dict(self._sums),
            dict(self._counts),
            dict(self._modes),
        )
        return other

    @property
    def num_episodes(self) -> int:
        return sum(self._modes.values())

    def add(self, mode: str, metrics: Mapping[str, Any]) -> None:
        if mode not in self._modes:
            raise ValueError(f"aggregate: unknown target_mode {mode!r}")
        self._modes[mode] += 1
        for name, key in _PLANS[mode]:
            v = _finite(metrics.get(key))
            if v is not None:
                self._sums[name] = self._sums.get(name, 0.0) + v
                self._counts[name] = self._counts.get(name, 0) + 1

    def result(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            name: (
                _mean(self._sums[name], self._counts[name], name in _INTEGER)
                if self._counts.get(name)
                else None
            )
            for name in AGGREGATE_NAMES
        }
        out["num_episodes"] = self.num_episodes
        for mode in EPISODE_MODES:
            out[f"num_episodes_{mode}"] = self._modes[mode]
        return out


def aggregate(records: Iterable[Tuple[str, Mapping[str, Any]]]) -> Dict[str, Any]:
    """SPEC §5 over ``(target_mode, metrics)`` pairs: main board and diagnostics over
    many + all (tse over many), by task type (_mos/_moc), by mode, GOAT-Bench's over the
    sequential episodes (SPEC §11), and episode counts."""
    acc = Aggregator()
    for i, item in enumerate(records):
        try:
            mode, metrics = item
        except (TypeError, ValueError):
            raise ValueError(
                f"aggregate: record {i} is not a (target_mode, metrics) pair"
            ) from None
        if mode not in EPISODE_MODES:
            raise ValueError(f"aggregate: record {i} has unknown target_mode {mode!r}")
        if not isinstance(metrics, Mapping):
            raise ValueError(f"aggregate: record {i} metrics is not a mapping")
        acc.add(mode, metrics)
    return acc.result()
