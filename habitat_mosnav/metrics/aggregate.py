"""Aggregation of per-episode metrics (SPEC §5).

Each aggregate is the mean of the episode values that are finite and not None; an
aggregate with no such value is None (JSON null), never NaN. :class:`Aggregator` keeps
running sums, so a running aggregate (the ``mos_aggregates`` measure) costs O(keys) per
episode.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from habitat_mosnav.api import MULTI_MODES, TARGET_MODES

# (aggregate name, episode field) over many + all.
_MAIN = (("sr", "success"), ("f1", "f1"), ("spl_multi", "spl_multi"), ("spl", "spl_multi"))
_DIAGNOSTICS = (
    ("precision", "precision"), ("recall", "recall"), ("pe", "pe"),
    ("rtsr", "rtsr"), ("ftr", "false_termination"), ("false_termination_rate", "false_termination"),
    ("oer_target", "oer_target"), ("oer_space", "oer_space"),
    # Kept for older scripts (benchmark README): raw_spl, coverage, and the FTR diagnostic.
    ("raw_spl", "raw_spl"), ("coverage", "coverage"),
    ("finish_with_unexplored_space", "finish_with_unexplored_space"),
)
# tse over many only (SPEC §5): in `all` the subset is fixed and tse is 1 by construction.
_MANY_ONLY = (("tse", "tse"), ("tse_mos", "tse"))
_BY_TASK = (("mos", "many"), ("moc", "all"))
_TASK_FIELDS = (("sr", "success"), ("f1", "f1"), ("spl_multi", "spl_multi"))
_BY_MODE = {
    "single": (("sr", "success"), ("spl", "spl_multi")),
    "any": (("sr", "success"), ("spl", "spl_multi")),
    "many": (("sr", "success"), ("f1", "f1"), ("precision", "precision"), ("recall", "recall")),
    "all": (("sr", "success"), ("f1", "f1"), ("precision", "precision"), ("recall", "recall")),
}

#: The episode fields that the aggregates read (each must be a number or null).
AGGREGATED_FIELDS = tuple(sorted({key for _, key in _MAIN + _DIAGNOSTICS + _MANY_ONLY + _TASK_FIELDS}
                                 | {key for fields in _BY_MODE.values() for _, key in fields}))


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


def _plan(mode: str) -> List[Tuple[str, str]]:
    """(aggregate name, episode field) pairs an episode of ``mode`` contributes to."""
    plan: List[Tuple[str, str]] = []
    if mode in MULTI_MODES:
        plan.extend(_MAIN + _DIAGNOSTICS)
    if mode == "many":
        plan.extend(_MANY_ONLY)
    for suffix, task_mode in _BY_TASK:
        if mode == task_mode:
            plan.extend((f"{name}_{suffix}", key) for name, key in _TASK_FIELDS)
    plan.extend((f"{name}_{mode}", key) for name, key in _BY_MODE[mode])
    return plan


_PLANS = {mode: _plan(mode) for mode in TARGET_MODES}
#: Every aggregate name, in the order of the summary.
AGGREGATE_NAMES: Tuple[str, ...] = tuple(
    [name for name, _ in _MAIN + _DIAGNOSTICS + _MANY_ONLY]
    + [f"{name}_{suffix}" for suffix, _ in _BY_TASK for name, _ in _TASK_FIELDS]
    + [f"{name}_{mode}" for mode, fields in _BY_MODE.items() for name, _ in fields])


class Aggregator:
    """Running SPEC §5 aggregates: :meth:`add` one episode, :meth:`result` at any time."""

    def __init__(self) -> None:
        self._sums: Dict[str, float] = {}
        self._counts: Dict[str, int] = {}
        self._modes: Dict[str, int] = {m: 0 for m in TARGET_MODES}

    def copy(self) -> "Aggregator":
        other = Aggregator()
        other._sums, other._counts, other._modes = dict(self._sums), dict(self._counts), dict(self._modes)
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
            name: (self._sums[name] / self._counts[name] if self._counts.get(name) else None)
            for name in AGGREGATE_NAMES}
        out["num_episodes"] = self.num_episodes
        for mode in TARGET_MODES:
            out[f"num_episodes_{mode}"] = self._modes[mode]
        return out


def aggregate(records: Iterable[Tuple[str, Mapping[str, Any]]]) -> Dict[str, Any]:
    """SPEC §5 over ``(target_mode, metrics)`` pairs: main board and diagnostics over
    many + all (tse over many), by task type (_mos/_moc), by mode, and episode counts."""
    acc = Aggregator()
    for i, item in enumerate(records):
        try:
            mode, metrics = item
        except (TypeError, ValueError):
            raise ValueError(f"aggregate: record {i} is not a (target_mode, metrics) pair") from None
        if mode not in TARGET_MODES:
            raise ValueError(f"aggregate: record {i} has unknown target_mode {mode!r}")
        if not isinstance(metrics, Mapping):
            raise ValueError(f"aggregate: record {i} metrics is not a mapping")
        acc.add(mode, metrics)
    return acc.result()
