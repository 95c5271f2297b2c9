"""The failure labels of ``mosnav-replay --diagnose`` (docs/SPEC.md §10) on hand-built
trajectories: per step the geodesic to each target's nearest view point and its pixels."""

import pytest

from habitat_mosnav.metrics.diagnosis import (
    EPISODE_LABELS,
    TARGET_LABELS,
    StepView,
    count_labels,
    diagnose_episode,
)

D = 0.25  # success distance


def walk(a_from, b_from, n, step=0.25, seen=()):
    """n + 1 steps walking straight towards target 1's view point (starting ``a_from`` m
    away) and away from target 2's (``b_from`` m away); ``seen``: steps where target 1 is in
    view (target 2 never is)."""
    return [
        StepView(
            distances={1: abs(a_from - step * t), 2: b_from + step * t},
            pixels={1: 40} if t in seen else {},
        )
        for t in range(n + 1)
    ]


def event(step, near=(), new=(), dup=()):
    return {
        "step": step,
        "near_targets": list(near),
        "new_targets": list(new),
        "duplicate_targets": list(dup),
        "is_true_positive": bool(new),
        "is_false_positive": not new,
    }


def diagnose(steps, events, terminated_by="finish", mode="all", count=None, success=False):
    return diagnose_episode(
        target_mode=mode,
        target_ids=[1, 2],
        target_count=count,
        events=events,
        steps=steps,
        success_distance=D,
        success=success,
        terminated_by=terminated_by,
    )


def test_walking_past_a_target_without_claiming_is_approached_not_claimed():
    # 3 m from target 1's view point, 12 steps forward: g = 3 - 0.25 t; g <= 0.25 at t = 11, 12
    steps = walk(3.0, 5.0, 12, seen=range(13))
    diag = diagnose(steps, [], terminated_by="finish")
    assert diag.targets == {1: "approached_not_claimed", 2: "never_seen"}
    assert diag.label == "approached_not_claimed"
    assert diag.labels == ["approached_not_claimed", "stopped_early"]


def test_a_claim_half_a_metre_from_the_view_point_is_claimed_too_far():
    # after 10 steps g = 3 - 2.5 = 0.5: 0.25 < 0.5 <= 1 m, no near target
    steps = walk(3.0, 5.0, 11, seen=range(12))
    diag = diagnose(steps, [event(11 - 1)], terminated_by="finish")
    assert diag.claims == [{"step": 10, "kind": "too_far", "target": 1}]
    assert diag.targets[1] == "claimed_too_far" and diag.label == "claimed_too_far"


def test_finish_at_step_1_is_stopped_early():
    steps = walk(3.0, 5.0, 1, seen=(0,))
    diag = diagnose(steps, [], terminated_by="finish")
    assert diag.targets == {1: "seen_not_approached", 2: "never_seen"}
    assert diag.label == "stopped_early" and diag.labels == ["stopped_early"]


def test_claiming_the_same_target_twice_is_duplicate_claim():
    # at step 12 g_1 = 0 (near): claimed; step 13 claims it again
    steps = walk(3.0, 5.0, 14)
    steps[13] = steps[12]
    events = [event(12, near=[1], new=[1]), event(13, near=[1], dup=[1])]
    diag = diagnose(steps, events, terminated_by="finish")
    assert [c["kind"] for c in diag.claims] == ["new", "duplicate"]
    assert diag.targets == {1: "found", 2: "never_seen"}
    assert diag.label == "duplicate_claim" and diag.labels == ["duplicate_claim", "stopped_early"]


def test_a_claim_far_from_every_target_is_false_claim():
    # at step 0: g_1 = 3, g_2 = 5, both > 1 m
    diag = diagnose(walk(3.0, 5.0, 1), [event(1)], terminated_by="finish")
    assert diag.claims == [{"step": 1, "kind": "false", "target": None}]
    assert diag.label == "false_claim"


def test_a_far_claim_within_a_metre_of_a_claimed_target_only_is_a_duplicate():
    steps = walk(3.0, 5.0, 14)
    events = [event(12, near=[1], new=[1]), event(14, near=[], new=[])]  # g_1(14) = 0.5
    diag = diagnose(steps, events)
    assert diag.claims[1] == {"step": 14, "kind": "duplicate", "target": 1}


def test_the_step_budget_running_out_is_timeout():
    diag = diagnose(walk(3.0, 5.0, 4, seen=(2,)), [], terminated_by="max_steps")
    assert diag.targets[1] == "seen_not_approached"
    assert diag.label == "timeout" and diag.labels == ["timeout"]


def test_all_found_without_finish_is_kept_exploring():
    steps = [StepView({1: 0.0, 2: 0.1})] * 4
    events = [event(1, near=[1, 2], new=[1], dup=[]), event(2, near=[2, 1], new=[2], dup=[1])]
    diag = diagnose(steps, events, terminated_by="max_steps")
    assert diag.targets == {1: "found", 2: "found"}
    # the second claim found 2: new, not a duplicate
    assert diag.label == "kept_exploring" and diag.labels == ["kept_exploring"]


def test_a_successful_episode_has_no_episode_label_but_keeps_target_labels():
    steps = walk(3.0, 5.0, 12, seen=(0,))
    diag = diagnose(steps, [event(12, near=[1], new=[1])], mode="many", count=1, success=True)
    assert diag.label is None and diag.labels == []
    assert diag.targets == {1: "found", 2: "never_seen"}


def test_many_counts_missing_only_below_target_count():
    # many with target_count 1: one found, nothing missing, so neither stopped_early nor
    # timeout applies even when the record says it failed
    steps = walk(3.0, 5.0, 13)
    events = [event(12, near=[1], new=[1]), event(13, near=[1], dup=[1])]
    diag = diagnose(steps, events, mode="many", count=1, terminated_by="finish")
    assert "stopped_early" not in diag.labels and diag.label == "duplicate_claim"


def test_a_sequential_stop_is_judged_against_its_subtask_alone():
    # Subtask 0: target 1, subtask 1: target 2 (SPEC §11). Walking toward 1 (3 m away) and
    # away from 2 (5 m): the stop at step 12 (g_1 = 0) finds 1; the stop at step 13 stands
    # 0.25 m from 1 (found in subtask 0) and 8.25 m from 2: no target of subtask 1 within
    # 1 m, a `false` claim (judged against every target it would be a `duplicate` of 1).
    steps = walk(3.0, 5.0, 13)
    stops = [dict(event(12, near=[1], new=[1]), subtask_index=0)]
    stops.append(dict(event(13), subtask_index=1))
    diag = diagnose_episode(
        target_mode="sequential",
        target_ids=[1, 2],
        target_count=None,
        events=stops,
        steps=steps,
        success_distance=D,
        success=False,
        terminated_by="target_found",
        subtask_targets=[[1], [2]],
    )
    assert [(c["step"], c["kind"], c["target"]) for c in diag.claims] == [
        (12, "new", 1),
        (13, "false", None),
    ]
    # no R in sequential: the failed episode's unclaimed target 2 is missing
    assert diag.targets == {1: "found", 2: "never_seen"}
    assert diag.labels == ["false_claim", "stopped_early"]
    # without the subtasks the second stop reads as a duplicate of target 1
    plain = diagnose(steps, stops, terminated_by="target_found", mode="sequential")
    assert [c["kind"] for c in plain.claims] == ["new", "duplicate"]


def test_an_event_beyond_the_replayed_steps_is_an_error():
    with pytest.raises(ValueError, match="step 9"):
        diagnose(walk(3.0, 5.0, 2), [event(9)])


def test_count_labels_counts_failed_episodes_and_every_target():
    a = diagnose(walk(3.0, 5.0, 1, seen=(0,)), [])
    b = diagnose(walk(3.0, 5.0, 12, seen=(0,)), [event(12, near=[1], new=[1])], success=True)
    counts = count_labels([a, b])
    assert list(counts["episodes"]) == list(EPISODE_LABELS)
    assert list(counts["targets"]) == list(TARGET_LABELS)
    assert counts["episodes"]["stopped_early"] == 1 and sum(counts["episodes"].values()) == 1
    assert counts["targets"] == {
        "found": 1,
        "claimed_too_far": 0,
        "approached_not_claimed": 0,
        "seen_not_approached": 1,
        "never_seen": 2,
    }
