"""Why an episode failed: a label per target and per failed episode (issue 32, ``--diagnose``).

An addition of this implementation (docs/SPEC.md §10). The input is what a replay sees at
every step t = 0 (after reset) .. n (after the last action), in SPEC terms: g_j(x_t), the
geodesic distance from the agent to the nearest view point of target j (the same g_j as
§3's "near" and §4's legs, :func:`habitat_mosnav.metrics.legs.start_geodesics`), the
number of pixels of j in the semantic camera's frame, and the record's report events.
With d = success distance and :data:`TOO_FAR_DISTANCE` = 1 m:

Target labels (every target of the episode, first that applies):

- ``found``: claimed (it is in some event's ``new_targets``);
- ``claimed_too_far``: a claim was sent with d < g_j ≤ 1 m and no near target;
- ``approached_not_claimed``: g_j ≤ d at some step;
- ``seen_not_approached``: at least one pixel of j in some frame;
- ``never_seen``: none of the above.

Each claim is ``new`` (a target found), ``duplicate`` (only claimed targets near, or none
near and only claimed targets within 1 m), ``too_far`` (none near, an unclaimed target
within 1 m) or ``false`` (no target within 1 m).

Episode label of a failed episode (status ok, success 0; first that applies, the most
specific cause first): ``kept_exploring`` (R targets claimed, no FINISH: ``all`` only),
``claimed_too_far`` (a missing target was claimed from too far), ``approached_not_claimed``
(a missing target was near, never claimed), ``duplicate_claim``, ``false_claim`` (a claim of
that kind), ``stopped_early`` (the agent ended the episode, FINISH or single/any's final
claim, with targets missing), ``timeout`` (the step budget ran out with targets missing).
Missing targets are the unclaimed ones while F < R (in a ``sequential`` episode, which has
no R: while the episode failed). Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, List, Mapping, Optional, Sequence

from habitat_mosnav.metrics.episode import claimed_ids, required_target_count

__all__ = [
    "CLAIM_KINDS",
    "EPISODE_LABELS",
    "TARGET_LABELS",
    "TOO_FAR_DISTANCE",
    "EpisodeDiagnosis",
    "StepView",
    "count_labels",
    "diagnose_episode",
]

#: A claim this close (geodesic to the nearest view point, m) but beyond the success
#: distance is "too far", not a false claim (issue 32: "within 1 m of its view points").
TOO_FAR_DISTANCE = 1.0

#: Target label -> what it means (docs/SPEC.md §10 says the same in SPEC terms).
TARGET_LABELS = {
    "found": "claimed",
    "claimed_too_far": "claimed from within 1 m of a view point, beyond the success distance",
    "approached_not_claimed": "within the success distance at some step, never claimed",
    "seen_not_approached": "in view at some step, never within the success distance",
    "never_seen": "no pixel of it in any frame",
}

#: Episode label -> what it means, in precedence order (the first that applies wins).
EPISODE_LABELS = {
    "kept_exploring": "every required target claimed, but no FINISH before the step budget",
    "claimed_too_far": "a missing target was claimed from beyond the success distance",
    "approached_not_claimed": "a missing target was within the success distance, never claimed",
    "duplicate_claim": "a claim repeated a target already claimed",
    "false_claim": "a claim with no target within 1 m",
    "stopped_early": "the agent ended the episode (FINISH) with targets missing",
    "timeout": "the step budget ran out with targets missing",
}

CLAIM_KINDS = ("new", "duplicate", "too_far", "false")


@dataclass(frozen=True)
class StepView:
    """What the agent had at one step: ``distances`` g_j(x_t) (m) and ``pixels`` (count in
    the semantic frame) per target id; a target absent from ``pixels`` has none."""

    distances: Mapping[Hashable, float]
    pixels: Mapping[Hashable, int] = field(default_factory=dict)


@dataclass
class EpisodeDiagnosis:
    """``label``: the episode label (None when it succeeded); ``labels``: every episode
    label that applies, in precedence order; ``targets``: id -> target label; ``claims``:
    ``{step, kind, target}`` per claim (``target``: the id it found, repeated or missed)."""

    label: Optional[str]
    labels: List[str]
    targets: Dict[Hashable, str]
    claims: List[Dict[str, Any]]

    def to_json(self) -> Dict[str, Any]:
        return {
            "label": self.label,
            "labels": list(self.labels),
            "targets": {str(k): v for k, v in self.targets.items()},
            "claims": [dict(c) for c in self.claims],
        }


def _classify_claim(event: Mapping[str, Any], view: StepView, claimed_before) -> Dict[str, Any]:
    step = int(event["step"])
    if event.get("new_targets"):
        return {"step": step, "kind": "new", "target": event["new_targets"][0]}
    if event.get("duplicate_targets"):
        return {"step": step, "kind": "duplicate", "target": event["duplicate_targets"][0]}
    within = sorted(
        (d, oid) for oid, d in view.distances.items() if math.isfinite(d) and d <= TOO_FAR_DISTANCE
    )
    unclaimed = [oid for _, oid in within if oid not in claimed_before]
    if unclaimed:
        return {"step": step, "kind": "too_far", "target": unclaimed[0]}
    if within:
        return {"step": step, "kind": "duplicate", "target": within[0][1]}
    return {"step": step, "kind": "false", "target": None}


def diagnose_episode(
    *,
    target_mode: str,
    target_ids: Sequence[Hashable],
    target_count: Optional[int],
    events: Sequence[Mapping[str, Any]],
    steps: Sequence[StepView],
    success_distance: float,
    success: bool,
    terminated_by: str,
    subtask_targets: Optional[Sequence[Sequence[Hashable]]] = None,
) -> EpisodeDiagnosis:
    """Labels of one episode; ``steps[t]`` is step t (0 = after reset), ``events`` the
    record's ``report_events`` (an event's ``step`` indexes ``steps``), ``success`` and
    ``terminated_by`` (``finish``, ``target_found`` or ``max_steps``) the record's.
    ``subtask_targets``: a ``sequential`` episode's targets per subtask; a claim (its
    SUBTASK_STOP, an event with ``subtask_index``) is then judged against its subtask's
    targets alone, each subtask a search of its own."""
    d = float(success_distance)
    found = claimed_ids(events)
    claims: List[Dict[str, Any]] = []
    claimed_so_far: set = set()
    for ev in events:
        step = int(ev["step"])
        if not 0 <= step < len(steps):
            raise ValueError(f"report event at step {step}: the replay has {len(steps)} steps")
        view, before = steps[step], claimed_so_far
        if subtask_targets is not None and ev.get("subtask_index") is not None:
            ids = set(subtask_targets[int(ev["subtask_index"])])
            view = StepView({k: v for k, v in view.distances.items() if k in ids}, view.pixels)
            before = set()
        claims.append(_classify_claim(ev, view, before))
        claimed_so_far.update(ev.get("new_targets") or ())
    too_far = {c["target"] for c in claims if c["kind"] == "too_far"}
    targets: Dict[Hashable, str] = {}
    for oid in target_ids:
        if oid in found:
            targets[oid] = "found"
        elif oid in too_far:
            targets[oid] = "claimed_too_far"
        elif any(s.distances.get(oid, math.inf) <= d for s in steps):
            targets[oid] = "approached_not_claimed"
        elif any(s.pixels.get(oid, 0) > 0 for s in steps):
            targets[oid] = "seen_not_approached"
        else:
            targets[oid] = "never_seen"
    if target_mode == "sequential":
        # GOAT's protocol (SPEC §11) has no R: a failed episode has a subtask that ended
        # without its stop near one of its targets, so targets are missing exactly then.
        missing = not success
    else:
        required = required_target_count(target_mode, list(target_ids), target_count)
        missing = len(found) < required
    kinds = {c["kind"] for c in claims}
    missing_labels = set(targets.values()) if missing else set()
    out_of_steps = terminated_by == "max_steps"
    applies = {
        "kept_exploring": not missing and out_of_steps,
        "claimed_too_far": "claimed_too_far" in missing_labels,
        "approached_not_claimed": "approached_not_claimed" in missing_labels,
        "duplicate_claim": "duplicate" in kinds,
        "false_claim": "false" in kinds,
        "stopped_early": missing and not out_of_steps,
        "timeout": missing and out_of_steps,
    }
    labels = [name for name in EPISODE_LABELS if applies[name]] if not success else []
    return EpisodeDiagnosis(
        label=labels[0] if labels else None, labels=labels, targets=targets, claims=claims
    )


def count_labels(diagnoses: Sequence[EpisodeDiagnosis]) -> Dict[str, Dict[str, int]]:
    """``{"episodes": {label: failed episodes with it}, "targets": {label: targets}}``,
    every label present (0 when none)."""
    episodes = {name: 0 for name in EPISODE_LABELS}
    targets = {name: 0 for name in TARGET_LABELS}
    for diag in diagnoses:
        if diag.label is not None:
            episodes[diag.label] += 1
        for label in diag.targets.values():
            targets[label] += 1
    return {"episodes": episodes, "targets": targets}
