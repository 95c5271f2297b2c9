"""Aggregation of per-episode metrics (SPEC §5).

Each aggregate is the mean of the episode values that are finite and not None; an
aggregate with no such value is None (JSON null), never NaN.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from habitat_mosnav.api import MULTI_MODES, TARGET_MODES

# (aggregate name, episode field) over many + all.
_MAIN = (("sr", "success"), ("f1", "f1"), ("spl_multi", "spl_multi"), ("spl", "spl_multi"))
_DIAGNOSTICS = (
    ("precision", "precision"), ("recall", "recall"), ("pe", "pe"), ("tse", "tse"),
    ("rtsr", "rtsr"), ("ftr", "false_termination"), ("false_termination_rate", "false_termination"),
    ("oer_target", "oer_target"), ("oer_space", "oer_space"),
    # Kept for older scripts (benchmark README): raw_spl, coverage, and the FTR diagnostic.
    ("raw_spl", "raw_spl"), ("coverage", "coverage"),
    ("finish_with_unexplored_space", "finish_with_unexplored_space"),
)
_BY_TASK = (("mos", "many"), ("moc", "all"))
_TASK_FIELDS = (("sr", "success"), ("f1", "f1"), ("spl_multi", "spl_multi"))
_BY_MODE = {
    "single": (("sr", "success"), ("spl", "spl_multi")),
    "any": (("sr", "success"), ("spl", "spl_multi")),
    "many": (("sr", "success"), ("f1", "f1"), ("precision", "precision"), ("recall", "recall")),
    "all": (("sr", "success"), ("f1", "f1"), ("precision", "precision"), ("recall", "recall")),
}

#: The episode fields that the aggregates read (each must be a number or null).
AGGREGATED_FIELDS = tuple(sorted({key for _, key in _MAIN + _DIAGNOSTICS + _TASK_FIELDS}
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


def aggregate(records: Iterable[Tuple[str, Mapping[str, Any]]]) -> Dict[str, Any]:
    """SPEC §5 over ``(target_mode, metrics)`` pairs: main board and diagnostics over
    many + all, by task type (_mos/_moc), by mode, and episode counts."""
    by_mode: Dict[str, List[Mapping[str, Any]]] = {m: [] for m in TARGET_MODES}
    for i, item in enumerate(records):
        try:
            mode, metrics = item
        except (TypeError, ValueError):
            raise ValueError(f"aggregate: record {i} is not a (target_mode, metrics) pair") from None
        if mode not in by_mode:
            raise ValueError(f"aggregate: record {i} has unknown target_mode {mode!r}")
        if not isinstance(metrics, Mapping):
            raise ValueError(f"aggregate: record {i} metrics is not a mapping")
        by_mode[mode].append(metrics)

    multi = [m for mode in MULTI_MODES for m in by_mode[mode]]
    out: Dict[str, Any] = {}
    for name, key in _MAIN + _DIAGNOSTICS:
        out[name] = finite_mean(m.get(key) for m in multi)
    for suffix, mode in _BY_TASK:
        for name, key in _TASK_FIELDS:
            out[f"{name}_{suffix}"] = finite_mean(m.get(key) for m in by_mode[mode])
    for mode, fields in _BY_MODE.items():
        for name, key in fields:
            out[f"{name}_{mode}"] = finite_mean(m.get(key) for m in by_mode[mode])
    out["num_episodes"] = sum(len(v) for v in by_mode.values())
    for mode in TARGET_MODES:
        out[f"num_episodes_{mode}"] = len(by_mode[mode])
    return out
