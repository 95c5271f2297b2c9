"""Aggregation of SPEC §5: finite non-null means, main board over many+all, aliases."""

import math

import pytest

from habitat_mosnav.metrics import aggregate, finite_mean


def rec(success, f1, spl, precision=None, recall=None, **extra):
    d = dict(success=success, f1=f1, spl_multi=spl, spl=spl, precision=precision, recall=recall)
    d.update(extra)
    return d


RECORDS = [
    (
        "many",
        rec(
            1.0,
            1.0,
            0.5,
            1.0,
            1.0,
            pe=0.5,
            tse=1.0,
            rtsr=0.0,
            false_termination=None,
            oer_target=0.05,
            oer_space=None,
            raw_spl=0.5,
            coverage=0.4,
        ),
    ),
    (
        "many",
        rec(
            0.0,
            0.5,
            0.0,
            0.5,
            0.5,
            pe=None,
            tse=None,
            rtsr=0.5,
            false_termination=None,
            oer_target=None,
            oer_space=0.4,
            raw_spl=0.25,
            coverage=float("nan"),
        ),
    ),
    (
        "all",
        rec(
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            pe=0.3,
            tse=math.inf,
            rtsr=0.0,
            false_termination=1.0,
            oer_target=None,
            oer_space=None,
            raw_spl=0.75,
            coverage=1.0,
        ),
    ),
    (
        "all",
        rec(
            1.0,
            1.0,
            0.8,
            1.0,
            1.0,
            pe=0.9,
            tse=0.5,
            rtsr=0.25,
            false_termination=0.0,
            oer_target=0.1,
            oer_space=0.2,
            raw_spl=0.8,
            coverage=0.6,
        ),
    ),
    ("single", rec(1.0, 1.0, 0.9, 1.0, 1.0)),
    ("any", rec(0.0, 0.0, 0.0, 0.0, 0.0)),
    ("any", rec(1.0, 1.0, 0.6, 1.0, 1.0)),
]


def test_finite_mean_skips_null_nan_inf():
    assert finite_mean([1.0, None, float("nan"), math.inf, 3.0]) == 2.0
    assert finite_mean([None, float("nan")]) is None
    assert finite_mean([]) is None
    assert finite_mean([True, False]) == 0.5


def test_main_board_only_many_and_all():
    a = aggregate(RECORDS)
    assert a["sr"] == pytest.approx(0.5)  # (1 + 0 + 0 + 1) / 4, single/any excluded
    assert a["f1"] == pytest.approx(0.625)  # (1 + .5 + 0 + 1) / 4
    assert a["spl_multi"] == pytest.approx(0.325)  # (.5 + 0 + 0 + .8) / 4
    assert a["spl"] == a["spl_multi"]


def test_diagnostics_skip_null_and_non_finite():
    a = aggregate(RECORDS)
    assert a["precision"] == pytest.approx(0.625)
    assert a["recall"] == pytest.approx(0.625)
    assert a["pe"] == pytest.approx((0.5 + 0.3 + 0.9) / 3)  # one None skipped
    # SPEC §5: tse over many only (the `all` values 0.5 and inf are not averaged in)
    assert a["tse"] == 1.0 and a["tse_mos"] == 1.0
    assert a["rtsr"] == pytest.approx(0.75 / 4)
    assert a["ftr"] == pytest.approx(0.5)  # only the two `all` FINISH values
    assert a["false_termination_rate"] == a["ftr"]
    assert a["oer_target"] == pytest.approx(0.075)
    assert a["oer_space"] == pytest.approx(0.3)
    assert a["raw_spl"] == pytest.approx((0.5 + 0.25 + 0.75 + 0.8) / 4)
    assert a["coverage"] == pytest.approx((0.4 + 1.0 + 0.6) / 3)  # NaN skipped
    assert a["finish_with_unexplored_space"] is None  # no values at all → null


def test_by_task_type_and_mode():
    a = aggregate(RECORDS)
    assert a["sr_mos"] == pytest.approx(0.5) and a["sr_moc"] == pytest.approx(0.5)
    assert a["f1_mos"] == pytest.approx(0.75) and a["f1_moc"] == pytest.approx(0.5)
    assert a["spl_multi_mos"] == pytest.approx(0.25) and a["spl_multi_moc"] == pytest.approx(0.4)
    assert a["sr_many"] == a["sr_mos"] and a["f1_many"] == a["f1_mos"]
    assert a["precision_many"] == pytest.approx(0.75) and a["recall_all"] == pytest.approx(0.5)
    assert a["sr_single"] == 1.0 and a["spl_single"] == pytest.approx(0.9)
    assert a["sr_any"] == pytest.approx(0.5) and a["spl_any"] == pytest.approx(0.3)
    for mode in ("single", "any"):
        for name in ("precision", "recall", "f1"):
            assert f"{name}_{mode}" not in a


def test_time_to_first_target_mean_over_many_and_all_where_not_null():
    # SPEC §5 (addition): over many + all, episodes without a true claim (null) left out
    records = [
        ("many", {"time_to_first_target": 8}),
        ("many", {"time_to_first_target": None}),
        ("all", {"time_to_first_target": 13}),
        ("single", {"time_to_first_target": 2}),
        ("any", {"time_to_first_target": 1}),
    ]
    a = aggregate(records)
    assert a["time_to_first_target"] == 10.5  # (8 + 13) / 2
    whole = aggregate(
        [("many", {"time_to_first_target": 20}), ("all", {"time_to_first_target": 34})]
    )
    assert whole["time_to_first_target"] == 27 and type(whole["time_to_first_target"]) is int
    assert aggregate([("many", {"time_to_first_target": None})])["time_to_first_target"] is None
    assert aggregate(RECORDS)["time_to_first_target"] is None  # old records without the field


def test_counts_and_empty_modes():
    a = aggregate(RECORDS)
    assert a["num_episodes"] == 7
    assert (
        a["num_episodes_single"],
        a["num_episodes_any"],
        a["num_episodes_many"],
        a["num_episodes_all"],
    ) == (1, 2, 2, 2)
    only_single = aggregate([("single", rec(1.0, 1.0, 1.0))])
    assert only_single["sr"] is None and only_single["sr_moc"] is None
    assert only_single["sr_single"] == 1.0 and only_single["num_episodes"] == 1
    empty = aggregate([])
    assert empty["num_episodes"] == 0 and empty["sr"] is None


def test_bad_records():
    with pytest.raises(ValueError, match="record 0 has unknown target_mode 'some'"):
        aggregate([("some", {})])
    with pytest.raises(ValueError, match="record 1 is not a"):
        aggregate([("many", {}), "many"])


def test_tse_is_a_diagnostic_of_many_only():
    """SPEC §5 (issue 24): an `all` episode's tse (1 by construction) never enters tse."""
    a = aggregate([("many", {"tse": 0.5}), ("all", {"tse": 1.0}), ("all", {"tse": 1.0})])
    assert a["tse"] == a["tse_mos"] == 0.5
    assert aggregate([("all", {"tse": 1.0})])["tse_mos"] is None


def test_running_aggregator_matches_aggregate():
    from habitat_mosnav.metrics.aggregate import Aggregator

    acc = Aggregator()
    for mode, metrics in RECORDS:
        acc.add(mode, metrics)
    assert acc.result() == aggregate(RECORDS)
