"""Claims and per-episode metrics (SPEC §3–§4) on scripted episodes, values by hand.

Geometry used throughout: targets 101, 105, 110 with geodesics
start→101 = 2, start→105 = 5, start→110 = 6, 101–105 = 3, 101–110 = 4, 105–110 = 2.
Shortest open paths: all three = 7 (101,105,110); best pair = 5 (101,105); nearest = 2.
"""

import math

import numpy as np
import pytest

from habitat_mosnav.metrics import (
    METRIC_FIELDS,
    EpisodeOutcome,
    episode_metrics,
    oer,
    precision_recall_f1,
    required_target_count,
    resolve_claim,
    rtsr,
    spl_multi,
    time_to_first_target,
)

IDS = [101, 105, 110]
START = {101: 2.0, 105: 5.0, 110: 6.0}
PAIR = {(101, 105): 3.0, (101, 110): 4.0, (105, 110): 2.0}


def claims(*script):
    """script: (step, near) pairs → the events resolve_claim would append."""
    events, claimed = [], []
    for step, near in script:
        ev = resolve_claim(step, near, claimed)
        claimed.extend(ev["new_targets"])
        events.append(ev)
    return events


def outcome(mode, events, **kw):
    base = dict(
        target_mode=mode,
        target_ids=IDS,
        target_count=2 if mode == "many" else None,
        max_steps=100,
        steps_taken=100,
        events=events,
        finish_step=None,
        finish_sent=False,
        ended_by_agent=False,
        trajectory_length=10.0,
        start_dist=START,
        pair_dist=PAIR,
    )
    base.update(kw)
    return EpisodeOutcome(**base)


def any_outcome(events, **kw):
    """Mode ``any`` in 30 steps: targets 1 and 2, 3 and 4 m from the start, 5 m apart."""
    two = dict(
        target_ids=[1, 2], max_steps=30, start_dist={1: 3.0, 2: 4.0}, pair_dist={(1, 2): 5.0}
    )
    return outcome("any", events, **dict(two, **kw))


def any_outcome_with_arrays():
    """:func:`any_outcome` with the distances as arrays aligned with ``target_ids``: at step
    12, after 8 m, the agent claims the farther target (0.5 m off)."""
    return any_outcome(
        claims((12, [(2, 0.5)])),
        steps_taken=12,
        finish_step=12,
        ended_by_agent=True,
        trajectory_length=8.0,
        start_dist=[3.0, 4.0],
        pair_dist=np.array([[0, 5.0], [5.0, 0]]),
    )


def check(metrics, expected):
    assert set(metrics) == set(METRIC_FIELDS)
    for key, value in expected.items():
        if value is None:
            assert metrics[key] is None, key
        else:
            assert metrics[key] == pytest.approx(value), key


# ------------------------------------------------------------------ resolve_claim


def test_resolve_claim_new_duplicate_and_order():
    ev = resolve_claim(12, [(105, 0.8), (101, 0.3), (110, 0.5)], claimed={101})
    assert ev == {
        "step": 12,
        "near_targets": [101, 110, 105],
        "new_targets": [110],  # nearest unclaimed; only one per signal
        "duplicate_targets": [101],
        "is_true_positive": True,
        "is_false_positive": False,
    }


def test_resolve_claim_false_alarm_repeat_and_ties():
    ev = resolve_claim(3, [], claimed=set())
    assert ev["near_targets"] == [] and ev["new_targets"] == []
    assert ev["is_false_positive"] and not ev["is_true_positive"]
    rep = resolve_claim(4, [(7, 0.5)], claimed=[7])
    assert rep["new_targets"] == [] and rep["duplicate_targets"] == [7] and rep["is_false_positive"]
    tie = resolve_claim(5, [(9, 0.5), (3, 0.5)], claimed=())
    assert tie["near_targets"] == [3, 9] and tie["new_targets"] == [3]


def test_resolve_claim_dedupes_ids_and_returns_plain_ints():
    ev = resolve_claim(np.int64(2), [(np.int64(4), 0.9), (np.int64(4), 0.1), (5, 0.5)], claimed=())
    assert ev["near_targets"] == [4, 5] and type(ev["near_targets"][0]) is int
    assert type(ev["step"]) is int


def test_resolve_claim_does_not_mutate_claimed():
    claimed = {1}
    resolve_claim(1, [(2, 0.1)], claimed)
    assert claimed == {1}


# ------------------------------------------------------------------ pieces


def test_required_target_count():
    assert required_target_count("single", [4], None) == 1
    assert required_target_count("any", [4, 5], None) == 1
    assert required_target_count("many", [4, 5, 6], 2) == 2
    assert required_target_count("all", [4, 5, 6], None) == 3
    with pytest.raises(ValueError, match="outside 1..3"):
        required_target_count("many", [4, 5, 6], 4)
    with pytest.raises(ValueError, match="integer target_count"):
        required_target_count("many", [4, 5, 6], None)
    with pytest.raises(ValueError, match="unknown target_mode 'some'"):
        required_target_count("some", [4], None)


def test_pieces():
    assert precision_recall_f1(0, 0, 0, 2) == (0.0, 0.0, 0.0)
    assert precision_recall_f1(1, 1, 1, 2) == (0.5, 0.5, 0.5)
    assert precision_recall_f1(3, 0, 3, 2)[1] == 1.0  # recall capped at 1
    assert spl_multi(1.0, 0.0, 0.0) == 1.0
    assert spl_multi(0.0, 0.0, 0.0) == 0.0
    assert spl_multi(1.0, 4.0, 8.0) == 0.5
    assert spl_multi(1.0, 4.0, 2.0) == 1.0  # max(p, l)
    assert oer(30, 20, 100) == pytest.approx(0.1)
    assert oer(None, 20, 100) == pytest.approx(0.8)  # never finished: T
    assert oer(30, None, 100) is None
    assert rtsr([]) == 0.0


# ------------------------------------------------------------------ episodes


def test_mos_two_true_claims_then_finish():
    ev = claims((10, [(101, 0.5)]), (20, [(105, 0.8), (101, 0.9)]))
    m = episode_metrics(
        outcome(
            "many",
            ev,
            finish_step=25,
            finish_sent=True,
            ended_by_agent=True,
            steps_taken=25,
            coverage=0.4,
        )
    )
    check(
        m,
        dict(
            tp=2,
            fp=0,
            fn=0,
            precision=1.0,
            recall=1.0,
            f1=1.0,
            success=1.0,
            targets_found=2,
            required_target_count=2,
            trajectory_length=10.0,
            optimal_subset_distance=5.0,
            agent_subset_distance=5.0,
            spl_multi=0.5,
            spl=0.5,
            raw_spl=0.5,
            pe=0.5,
            tse=1.0,
            rtsr=0.0,
            false_termination=None,
            finish_with_unexplored_space=None,
            oer_target=0.05,  # (25 - 20) / 100
            oer_space=None,
            coverage=0.4,
            time_to_first_target=10,  # the first claim, at step 10, found 101
        ),
    )


def test_mos_false_alarm_and_no_finish():
    ev = claims((5, []), (10, [(110, 0.3)]))
    m = episode_metrics(
        outcome("many", ev, trajectory_length=20.0, space_exhausted_step=60, coverage=1.0)
    )
    check(
        m,
        dict(
            tp=1,
            fp=1,
            fn=1,
            precision=0.5,
            recall=0.5,
            f1=0.5,
            success=0.0,
            targets_found=1,
            optimal_subset_distance=5.0,
            agent_subset_distance=6.0,
            spl_multi=0.0,
            spl=0.0,
            raw_spl=0.25,
            pe=0.3,
            tse=None,  # F = 1 < R = 2: a smaller subset is not comparable with l
            rtsr=0.0,  # the false alarm had no near target, so it is not in S
            false_termination=None,
            oer_target=None,
            oer_space=0.4,  # never finished: (100 - 60) / 100
            coverage=1.0,
        ),
    )


def test_moc_repeated_claims_and_false_termination():
    ev = claims(
        (3, [(101, 0.2)]), (4, [(101, 0.2)]), (8, [(105, 0.5), (101, 0.9)]), (9, [(105, 0.4)])
    )
    m = episode_metrics(
        outcome(
            "all",
            ev,
            trajectory_length=8.0,
            finish_step=12,
            finish_sent=True,
            ended_by_agent=True,
            steps_taken=12,
            coverage=0.5,
        )
    )
    check(
        m,
        dict(
            tp=2,
            fp=2,
            fn=1,
            precision=0.5,
            recall=2.0 / 3.0,
            f1=4.0 / 7.0,
            success=0.0,
            required_target_count=3,
            optimal_subset_distance=7.0,
            agent_subset_distance=5.0,
            spl_multi=0.0,
            raw_spl=0.875,
            pe=0.625,
            tse=None,  # F = 2 < R = 3
            rtsr=0.5,  # S = [101, 101, 105, 105]: (4 - 2) / 4
            false_termination=1.0,
            finish_with_unexplored_space=1.0,  # space never exhausted
            oer_target=None,
            oer_space=None,
        ),
    )


def test_moc_all_found_without_finish_is_failure():
    ev = claims((3, [(101, 0.1)]), (6, [(105, 0.1)]), (9, [(110, 0.1)]))
    m = episode_metrics(outcome("all", ev, max_steps=50, steps_taken=50, trajectory_length=14.0))
    check(
        m,
        dict(
            tp=3,
            fp=0,
            fn=0,
            precision=1.0,
            recall=1.0,
            f1=1.0,
            success=0.0,
            optimal_subset_distance=7.0,
            agent_subset_distance=7.0,
            spl_multi=0.0,
            raw_spl=0.5,
            pe=0.5,
            tse=1.0,
            rtsr=0.0,
            false_termination=None,
            finish_with_unexplored_space=None,
            oer_target=0.82,  # (50 - 9) / 50: T replaces the missing FINISH
            oer_space=None,
            coverage=None,
        ),
    )


def test_moc_all_found_with_finish():
    ev = claims((3, [(101, 0.1)]), (6, [(105, 0.1)]), (9, [(110, 0.1)]))
    m = episode_metrics(
        outcome(
            "all",
            ev,
            max_steps=50,
            steps_taken=10,
            trajectory_length=14.0,
            finish_step=10,
            finish_sent=True,
            ended_by_agent=True,
            space_exhausted_step=8,
            coverage=1.0,
        )
    )
    check(
        m,
        dict(
            success=1.0,
            spl_multi=0.5,
            spl=0.5,
            false_termination=0.0,
            finish_with_unexplored_space=0.0,
            oer_target=0.02,  # (10 - 9) / 50
            oer_space=0.04,  # (10 - 8) / 50
        ),
    )


def test_single_target_at_start_p_equals_l_equals_zero():
    ev = claims((1, [(7, 0.0)]))
    m = episode_metrics(
        outcome(
            "single",
            ev,
            target_ids=[7],
            max_steps=20,
            steps_taken=1,
            finish_step=1,
            ended_by_agent=True,
            trajectory_length=0.0,
            start_dist={7: 0.0},
            pair_dist={},
        )
    )
    check(
        m,
        dict(
            tp=1,
            fp=0,
            fn=0,
            precision=1.0,
            recall=1.0,
            f1=1.0,
            success=1.0,
            optimal_subset_distance=0.0,
            agent_subset_distance=0.0,
            spl_multi=1.0,
            raw_spl=1.0,
            pe=1.0,
            tse=1.0,
            rtsr=0.0,
            false_termination=None,
            oer_target=0.0,
        ),
    )


def test_any_agent_claimed_none():
    m = episode_metrics(any_outcome([], steps_taken=30, trajectory_length=6.0))
    check(
        m,
        dict(
            tp=0,
            fp=0,
            fn=1,
            precision=0.0,
            recall=0.0,
            f1=0.0,
            success=0.0,
            targets_found=0,
            optimal_subset_distance=3.0,
            agent_subset_distance=None,
            spl_multi=0.0,
            raw_spl=0.5,
            pe=None,
            tse=None,
            rtsr=0.0,
            oer_target=None,
        ),
    )


def test_any_success_on_farther_target_arrays_accepted():
    # start_dist / pair_dist may also be arrays aligned with target_ids.
    m = episode_metrics(any_outcome_with_arrays())
    check(
        m,
        dict(
            success=1.0,
            optimal_subset_distance=3.0,
            agent_subset_distance=4.0,
            spl_multi=0.375,
            pe=0.5,
            tse=0.75,
            oer_target=0.0,
        ),
    )


def test_any_ended_with_nothing_near_fails():
    ev = claims((4, []))
    m = episode_metrics(
        any_outcome(
            ev,
            steps_taken=4,
            finish_step=4,
            finish_sent=True,
            ended_by_agent=True,
            trajectory_length=1.0,
        )
    )
    check(
        m,
        dict(
            success=0.0,
            tp=0,
            fp=1,
            precision=0.0,
            spl_multi=0.0,
            agent_subset_distance=None,
            pe=None,
        ),
    )


def test_time_to_first_target_by_hand():
    # SPEC §4 (addition): the `step` of the first event with is_true_positive, else null.
    # A false alarm at 5 (nothing near), the first new target at 7, a repeat at 9.
    ev = claims((5, []), (7, [(101, 0.2)]), (9, [(101, 0.1)]), (11, [(105, 0.3)]))
    assert [e["is_true_positive"] for e in ev] == [False, True, False, True]
    assert time_to_first_target(ev) == 7 and type(time_to_first_target(ev)) is int
    m = episode_metrics(outcome("many", ev))
    check(m, dict(time_to_first_target=7, tp=2, fp=2))
    assert type(m["time_to_first_target"]) is int  # an integer in records, never 7.0
    # no claim, or only false ones: null
    assert episode_metrics(outcome("all", []))["time_to_first_target"] is None
    assert episode_metrics(outcome("all", claims((3, []), (4, []))))["time_to_first_target"] is None
    # MOC: the first of three true claims (steps 3, 6, 9)
    ev = claims((3, [(101, 0.1)]), (6, [(105, 0.1)]), (9, [(110, 0.1)]))
    assert episode_metrics(outcome("all", ev))["time_to_first_target"] == 3
    # single: the final 6/0 at step 12 is the claim that counts
    m = episode_metrics(any_outcome_with_arrays())
    assert m["time_to_first_target"] == 12


def test_unreachable_targets_give_null_distances():
    m = episode_metrics(
        outcome(
            "all",
            [],
            start_dist={101: 2.0, 105: math.inf, 110: 6.0},
            pair_dist={(101, 105): math.inf, (101, 110): 4.0, (105, 110): math.inf},
        )
    )
    check(m, dict(optimal_subset_distance=None, spl_multi=0.0, raw_spl=None))


def test_precomputed_distances_are_used():
    ev = claims((10, [(101, 0.5)]), (20, [(105, 0.8)]))
    m = episode_metrics(
        outcome(
            "many",
            ev,
            optimal_subset_distance=4.0,
            agent_subset_distance=8.0,
            start_dist={},
            pair_dist={},
        )
    )
    check(
        m,
        dict(
            success=1.0,
            optimal_subset_distance=4.0,
            agent_subset_distance=8.0,
            spl_multi=0.4,
            pe=0.8,
            tse=0.5,
        ),
    )
