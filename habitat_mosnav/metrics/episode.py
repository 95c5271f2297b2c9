"""Claims and per-episode metrics of SPEC §3–§4, as pure functions.

The Habitat measures (per step) and the evaluation layer (per episode) both call these, so
each metric has exactly one definition. Nothing here imports habitat or torch. A SPEC
"null" is ``None``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.api import TARGET_MODES
from habitat_mosnav.metrics.legs import subset_lower_bound
from habitat_mosnav.metrics.measure_table import METRICS

#: Every key of :func:`episode_metrics`, in the registry's order (the JSONL ``metrics`` schema;
#: :mod:`habitat_mosnav.metrics.measure_table`).
METRIC_FIELDS = tuple(m.field for m in METRICS if m.field)


def _plain_id(x):
    """numpy ints → int so events stay JSON-serialisable."""
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    return x


# ----------------------------------------------------------------------------- claims


def resolve_claim(step: int, near: Iterable[Tuple[Hashable, float]], claimed) -> Dict[str, Any]:
    """One TARGET_FOUND signal at ``step`` (SPEC §3).

    ``near``: ``(object_id, distance)`` of the matching targets within success distance
    (an id listed twice keeps its smallest distance); ``claimed``: ids claimed before.
    The nearest unclaimed near target is claimed (at most one per signal); near targets
    already claimed are duplicates. Does not modify ``claimed``.
    """
    best: Dict[Hashable, float] = {}
    for object_id, distance in near:
        object_id = _plain_id(object_id)
        d = float(distance)
        if object_id not in best or d < best[object_id]:
            best[object_id] = d
    near_ids = [oid for oid, _ in sorted(best.items(), key=lambda kv: (kv[1], _sort_key(kv[0])))]
    claimed = set(claimed)
    new = [oid for oid in near_ids if oid not in claimed][:1]
    duplicates = [oid for oid in near_ids if oid in claimed]
    true_positive = len(new) == 1
    return {
        "step": int(step),
        "near_targets": near_ids,
        "new_targets": new,
        "duplicate_targets": duplicates,
        "is_true_positive": true_positive,
        "is_false_positive": not true_positive,
    }


def _sort_key(object_id):
    # Ties by id; ids are ints in the data, but keep mixed types orderable.
    return (0, object_id, "") if isinstance(object_id, numbers.Number) else (1, 0, str(object_id))


def claimed_ids(events: Iterable[Mapping[str, Any]]) -> List[Hashable]:
    """Targets claimed by the events, in claim order."""
    out: List[Hashable] = []
    for ev in events:
        for oid in ev.get("new_targets") or ():
            if oid not in out:
                out.append(oid)
    return out


def required_target_count(
    target_mode: str, target_ids: Sequence, target_count: Optional[int]
) -> int:
    """R of SPEC §1: 1 for single/any, target_count for many, all targets for all."""
    n = len(target_ids)
    if target_mode in ("single", "any"):
        if n < 1:
            raise ValueError(f"target_mode {target_mode!r} needs at least one target id")
        return 1
    if target_mode == "many":
        if isinstance(target_count, bool) or not isinstance(target_count, numbers.Integral):
            raise ValueError(
                f"target_mode 'many' needs an integer target_count, got {target_count!r}"
            )
        if not 1 <= int(target_count) <= n:
            raise ValueError(
                f"target_count {target_count} is outside 1..{n} (number of target ids)"
            )
        return int(target_count)
    if target_mode == "all":
        if n < 1:
            raise ValueError("target_mode 'all' needs at least one target id")
        return n
    raise ValueError(
        f"unknown target_mode {target_mode!r} (expected one of {', '.join(TARGET_MODES)})"
    )


def all_found_step(events: Iterable[Mapping[str, Any]], required: int) -> Optional[int]:
    """First step at which the claimed targets reach ``required`` (None if never)."""
    found = set()
    for ev in events:
        found.update(ev.get("new_targets") or ())
        if len(found) >= required:
            return int(ev["step"])
    return None


def time_to_first_target(events: Iterable[Mapping[str, Any]]) -> Optional[int]:
    """An addition of this implementation (docs/SPEC.md §4): the ``step`` of the first
    claim event with ``is_true_positive`` (in single/any the final 6/0 counts, as it is an
    event); None when no claim found a target."""
    for ev in events:
        if ev.get("is_true_positive"):
            return int(ev["step"])
    return None


# ----------------------------------------------------------------------------- pieces


def precision_recall_f1(tp: int, fp: int, found: int, required: int) -> Tuple[float, float, float]:
    """precision = tp/(tp+fp) (0 without claims); recall = min(1, found/required); F1."""
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = min(1.0, found / required) if required > 0 else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(precision), float(recall), float(f1)


def mode_success(
    target_mode: str,
    found: int,
    required: int,
    finish_sent: bool,
    final_claim_true: bool = False,
    ended_by_agent: bool = False,
) -> float:
    """SPEC §4 success: single/any = ended by the agent with a true final claim;
    many = found ≥ target_count; all = everything found **and** FINISH sent."""
    if target_mode in ("single", "any"):
        return 1.0 if (ended_by_agent and final_claim_true) else 0.0
    if target_mode == "many":
        return 1.0 if found >= required else 0.0
    if target_mode == "all":
        return 1.0 if (found >= required and finish_sent) else 0.0
    raise ValueError(f"unknown target_mode {target_mode!r}")


def _ratio(num: Optional[float], den_other: Optional[float]) -> Optional[float]:
    """num / max(den_other, num) with 0/0 = 1; None when an input is missing or not finite."""
    if num is None or den_other is None:
        return None
    num, den_other = float(num), float(den_other)
    if not (math.isfinite(num) and math.isfinite(den_other)):
        return None
    den = max(den_other, num)
    return 1.0 if den == 0 else num / den


def spl_multi(success: float, l: Optional[float], p: float) -> Optional[float]:
    """success · l / max(p, l); 1·success when p = l = 0; 0 on failure even if l is unknown."""
    if not success:
        return 0.0
    r = _ratio(l, p)
    return None if r is None else float(success) * r


def raw_spl(l: Optional[float], p: float) -> Optional[float]:
    """l / max(p, l), success ignored (1 when p = l = 0)."""
    return _ratio(l, p)


def path_efficiency(a: Optional[float], p: float) -> Optional[float]:
    """PE = a / max(p, a); None when the agent claimed nothing."""
    return _ratio(a, p)


def target_selection_efficiency(
    l: Optional[float],
    a: Optional[float],
    found: Optional[int] = None,
    required: Optional[int] = None,
) -> Optional[float]:
    """TSE = l / a (1 when l = a = 0); None when a is missing, the ratio is not finite, or
    the agent claimed fewer targets than required (F < R: a smaller subset is not
    comparable with l)."""
    if l is None or a is None:
        return None
    if found is not None and required is not None and found < required:
        return None
    l, a = float(l), float(a)
    if not (math.isfinite(l) and math.isfinite(a)):
        return None
    if a == 0:
        return 1.0 if l == 0 else None
    return l / a


def rtsr(events: Iterable[Mapping[str, Any]]) -> float:
    """Repeated-target selection rate: (m − |set(S)|) / m over claims that had near targets,
    S = the id each resolved to (its new target, else its nearest duplicate); 0 when m = 0."""
    seq = []
    for ev in events:
        new = ev.get("new_targets") or []
        dup = ev.get("duplicate_targets") or []
        if new:
            seq.append(new[0])
        elif dup:
            seq.append(dup[0])
    m = len(seq)
    return (m - len(set(seq))) / m if m else 0.0


def false_termination(
    target_mode: str, finish_sent: bool, found: int, required: int
) -> Optional[float]:
    """FTR (``all`` only): 1 when FINISH was sent with F < R, 0 with F = R, else None."""
    if target_mode != "all" or not finish_sent:
        return None
    return 1.0 if found < required else 0.0


def finish_with_unexplored_space(
    target_mode: str,
    finish_sent: bool,
    finish_step: Optional[int],
    space_exhausted_step: Optional[int],
    oracle_enabled: bool = True,
) -> Optional[float]:
    """Diagnostic (``all`` only): 1 when FINISH came before the space oracle saw the space
    exhausted; None without FINISH, in other modes, or with the oracle disabled."""
    if target_mode != "all" or not finish_sent or not oracle_enabled:
        return None
    if space_exhausted_step is None:
        return 1.0
    if finish_step is None:
        return None
    return 1.0 if finish_step < space_exhausted_step else 0.0


def oer(finish_step: Optional[int], reached_step: Optional[int], max_steps: int) -> Optional[float]:
    """Over-exploration ratio: (finish_step − reached_step) / T, with finish_step = T when
    the agent never finished; None when the condition was never reached."""
    if reached_step is None or not max_steps:
        return None
    end = max_steps if finish_step is None else finish_step
    return max(0.0, (end - reached_step) / max_steps)


# ----------------------------------------------------------------------------- distances


def _lookup_start(start_dist, target_ids: Sequence, oid) -> float:
    if isinstance(start_dist, Mapping):
        if oid not in start_dist:
            raise ValueError(f"start_dist has no entry for target {oid!r}")
        return float(start_dist[oid])
    return float(start_dist[list(target_ids).index(oid)])


def _lookup_pair(pair_dist, target_ids: Sequence, a, b) -> float:
    if a == b:
        return 0.0
    if isinstance(pair_dist, Mapping):
        if (a, b) in pair_dist:
            return float(pair_dist[(a, b)])
        if (b, a) in pair_dist:
            return float(pair_dist[(b, a)])
        raise ValueError(f"pair_dist has no entry for targets ({a!r}, {b!r})")
    ids = list(target_ids)
    return float(pair_dist[ids.index(a)][ids.index(b)])


def distance_arrays(
    ids: Sequence, target_ids: Sequence, start_dist, pair_dist
) -> Tuple[np.ndarray, np.ndarray]:
    """start/pair arrays for ``ids``. ``start_dist``: {id: d} or a sequence aligned with
    ``target_ids``; ``pair_dist``: {(a, b): d} (either order) or an (n, n) array aligned
    with ``target_ids``."""
    ids = list(ids)
    start = np.array([_lookup_start(start_dist, target_ids, o) for o in ids], dtype=np.float64)
    pair = np.array(
        [[_lookup_pair(pair_dist, target_ids, a, b) for b in ids] for a in ids], dtype=np.float64
    ).reshape(len(ids), len(ids))
    return start, pair


def subset_distance(
    ids: Sequence, target_ids: Sequence, start_dist, pair_dist, k: Optional[int] = None
) -> float:
    """The bound of SPEC §4 over k of ``ids`` (all when None): the exact minimum over
    subsets and orders of L_last with L_j = max(s_j, L_i + c_ij) (legs in ``start_dist`` /
    ``pair_dist``; :func:`habitat_mosnav.metrics.legs.subset_lower_bound`)."""
    start, pair = distance_arrays(ids, target_ids, start_dist, pair_dist)
    return subset_lower_bound(start, pair, k)[0]


def optimal_subset_distance(
    target_mode: str, target_ids: Sequence, target_count: Optional[int], start_dist, pair_dist
) -> float:
    """l: single/any → nearest target; many → best k-subset; all → every target.
    ``start_dist``/``pair_dist`` are the legs s_j / c_ij of :mod:`habitat_mosnav.metrics.legs`."""
    required = required_target_count(target_mode, target_ids, target_count)
    k = None if target_mode == "all" else required
    return subset_distance(target_ids, target_ids, start_dist, pair_dist, k)


def agent_subset_distance(
    claimed: Sequence, target_ids: Sequence, start_dist, pair_dist
) -> Optional[float]:
    """a: shortest open path over exactly the claimed targets; None when none claimed."""
    if not claimed:
        return None
    return subset_distance(claimed, target_ids, start_dist, pair_dist, None)


def _finite_or_none(x) -> Optional[float]:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


# ----------------------------------------------------------------------------- episode


@dataclass
class EpisodeOutcome:
    """What happened in one episode; everything :func:`episode_metrics` needs.

    ``events``: the claim events of SPEC §3 (for single/any the final 6/0 already appended).
    ``finish_step``: step of FINISH (0/9), or of the ending 6/0 in single/any; None if never.
    ``start_dist``/``pair_dist``: the legs of SPEC §4 "Reaching a target" (s_j = max(0,
    g_j(start) − d), c_ij = max(0, min_u g_j(u) − 2d); :mod:`habitat_mosnav.metrics.legs`),
    as {id: d} / {(a, b): d} or arrays aligned with ``target_ids``.
    ``coverage`` None means the space oracle was disabled.
    """

    target_mode: str
    target_ids: Sequence
    target_count: Optional[int]
    max_steps: int
    steps_taken: int
    events: List[Mapping[str, Any]]
    finish_step: Optional[int]
    finish_sent: bool
    ended_by_agent: bool
    trajectory_length: float
    start_dist: Any
    pair_dist: Any
    all_found_step: Optional[int] = None
    space_exhausted_step: Optional[int] = None
    coverage: Optional[float] = None
    optimal_subset_distance: Optional[float] = None
    agent_subset_distance: Optional[float] = field(default=None)


#: The fields of :func:`episode_metrics` that change with the path length p alone
#: (:func:`path_metrics`); every other field changes only with a claim, FINISH or the space
#: oracle, so the task recomputes those only then.
PATH_FIELDS = ("trajectory_length", "spl_multi", "spl", "raw_spl", "pe")


def path_metrics(
    success: float, l: Optional[float], a: Optional[float], p: float
) -> Dict[str, Any]:
    """The :data:`PATH_FIELDS` for success, l, a and path length p."""
    p = float(p)
    spl = spl_multi(success, l, p)
    return {
        "trajectory_length": p,
        "spl_multi": spl,
        "spl": spl,
        "raw_spl": raw_spl(l, p),
        "pe": path_efficiency(a, p),
    }


def episode_metrics(outcome: EpisodeOutcome) -> Dict[str, Any]:
    """Every SPEC §4 field for one episode (None where SPEC says null)."""
    o = outcome
    mode = o.target_mode
    required = required_target_count(mode, o.target_ids, o.target_count)
    events = list(o.events)
    tp = sum(1 for ev in events if ev.get("is_true_positive"))
    fp = len(events) - tp
    claimed = claimed_ids(events)
    found = len(claimed)
    precision, recall, f1 = precision_recall_f1(tp, fp, found, required)
    final_true = bool(events) and bool(events[-1].get("is_true_positive"))
    success = mode_success(mode, found, required, o.finish_sent, final_true, o.ended_by_agent)

    l = o.optimal_subset_distance
    if l is None:
        l = optimal_subset_distance(mode, o.target_ids, o.target_count, o.start_dist, o.pair_dist)
    a = o.agent_subset_distance
    if a is None and claimed:
        a = agent_subset_distance(claimed, o.target_ids, o.start_dist, o.pair_dist)
    p = float(o.trajectory_length)

    reached = o.all_found_step if o.all_found_step is not None else all_found_step(events, required)
    path = path_metrics(success, l, a, p)
    return {
        "tp": tp,
        "fp": fp,
        "fn": max(0, required - found),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "success": success,
        "targets_found": found,
        "required_target_count": required,
        "trajectory_length": path["trajectory_length"],
        "optimal_subset_distance": _finite_or_none(l),
        "agent_subset_distance": _finite_or_none(a),
        "spl_multi": path["spl_multi"],
        "spl": path["spl"],
        "raw_spl": path["raw_spl"],
        "pe": path["pe"],
        "tse": target_selection_efficiency(l, a, found, required),
        "rtsr": rtsr(events),
        "false_termination": false_termination(mode, o.finish_sent, found, required),
        "finish_with_unexplored_space": finish_with_unexplored_space(
            mode, o.finish_sent, o.finish_step, o.space_exhausted_step, o.coverage is not None
        ),
        "oer_target": oer(o.finish_step, reached, o.max_steps),
        "oer_space": oer(o.finish_step, o.space_exhausted_step, o.max_steps),
        "coverage": _finite_or_none(o.coverage),
        "time_to_first_target": time_to_first_target(events),
    }
