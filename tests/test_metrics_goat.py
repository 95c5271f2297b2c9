"""GOAT-Bench's per-episode metrics of a ``sequential`` episode (SPEC §11,
metrics/goat.py): every expected value derived by hand in the comments from §11's formulas
(s_i success, d_i distance when the subtask began, p_i path walked until its stop)."""

import math

import pytest

from habitat_mosnav.metrics.goat import (
    GOAT_LIST_FIELDS,
    GOAT_SCALAR_FIELDS,
    SubtaskOutcome,
    goat_metrics,
    subtask_spl,
)


def sub(goal_type, success, d, p):
    return SubtaskOutcome(goal_type=goal_type, success=success, start_distance=d, path_length=p)


def test_every_subtask_succeeds():
    subtasks = [
        sub("object", True, 4.0, 5.0),  # spl 4 / max(4, 5) = 0.8
        sub("description", True, 2.0, 2.0),  # 2 / 2 = 1.0
        sub("image", True, 3.0, 6.0),  # 3 / 6 = 0.5
    ]
    m = goat_metrics(subtasks, ended_by_agent=True)
    assert set(m) == set(GOAT_SCALAR_FIELDS) | set(GOAT_LIST_FIELDS)
    assert m["subtask_success"] == [1, 1, 1]
    assert m["spl_by_subtask"] == pytest.approx([0.8, 1.0, 0.5])
    # composite_spl = (0.8 + 1.0 + 0.5) / 3 = 2.3 / 3
    assert m["composite_spl"] == pytest.approx(2.3 / 3)
    assert (m["task_success"], m["composite_success"], m["partial_success"]) == (1, 1, 1.0)
    assert (m["object_success"], m["description_success"], m["image_success"]) == (1.0, 1.0, 1.0)


def test_partial_success_a_missed_stop_and_a_subtask_never_stopped():
    subtasks = [
        sub("object", True, 6.0, 8.0),  # s 1, spl 6 / 8 = 0.75
        sub("object", False, 5.0, 3.0),  # stopped too far: s 0, spl 0
        sub("description", True, 2.0, 1.0),  # p < d: max(d, p) = d -> spl 2 / 2 = 1.0
        sub("image", False, 4.0, 2.5),  # never stopped (episode ran out): s 0, spl 0
    ]
    m = goat_metrics(subtasks, ended_by_agent=False)
    assert m["subtask_success"] == [1, 0, 1, 0]
    assert m["partial_success"] == 0.5  # 2 / 4
    assert m["composite_success"] == 0 and m["task_success"] == 0
    assert m["object_success"] == 0.5  # (1 + 0) / 2 object subtasks
    assert m["description_success"] == 1.0 and m["image_success"] == 0.0
    assert m["spl_by_subtask"] == pytest.approx([0.75, 0.0, 1.0, 0.0])
    assert m["composite_spl"] == pytest.approx(0.4375)  # (0.75 + 0 + 1 + 0) / 4


def test_subtask_spl_edge_cases():
    # d_i = 0 (the subtask began at its goal): stopping there at once scores 1 (SPEC §4's
    # convention for p = l = 0); walking 1.5 m first scores 0 / max(0, 1.5) = 0
    assert subtask_spl(sub("object", True, 0.0, 0.0)) == 1.0
    assert subtask_spl(sub("object", True, 0.0, 1.5)) == 0.0
    # p_i < d_i (the geodesic error of a short cut): the max is d_i, spl 1, never above
    assert subtask_spl(sub("image", True, 3.0, 2.9)) == 1.0
    # unknown (never began) or unreachable d_i: 0 whatever p_i, not NaN
    assert subtask_spl(sub("object", True, None, 2.0)) == 0.0
    assert subtask_spl(sub("object", True, math.inf, 2.0)) == 0.0
    assert subtask_spl(sub("object", True, math.nan, 2.0)) == 0.0
    # a failed subtask: 0 even on the shortest path
    assert subtask_spl(sub("object", False, 3.0, 3.0)) == 0.0


def test_infinite_or_unknown_distances_keep_the_success():
    subtasks = [
        sub("object", True, math.inf, 4.0),  # s 1, spl 0 (unreachable d_i)
        sub("object", True, 5.0, 10.0),  # s 1, spl 0.5
        sub("description", False, None, 0.0),  # never began: s 0, spl 0
    ]
    m = goat_metrics(subtasks, ended_by_agent=False)
    assert m["subtask_success"] == [1, 1, 0]
    assert m["partial_success"] == pytest.approx(2 / 3)
    assert m["object_success"] == 1.0 and m["description_success"] == 0.0
    assert m["spl_by_subtask"] == [0.0, 0.5, 0.0]
    assert m["composite_spl"] == pytest.approx(0.5 / 3)
    assert all(math.isfinite(m[k]) for k in ("partial_success", "composite_spl"))


def test_a_goal_type_the_episode_lacks_is_null_not_zero():
    # SPEC §11: null when the episode has no subtask of that type (GOAT-Bench's code writes
    # 0.0 there, which would pull the per-type means down over episodes without that type)
    m = goat_metrics([sub("object", True, 1.0, 1.0), sub("image", False, 2.0, 1.0)], True)
    assert m["description_success"] is None
    assert m["object_success"] == 1.0 and m["image_success"] == 0.0


def test_task_success_needs_the_episode_ended_by_the_agent():
    subtasks = [sub("object", True, 2.0, 2.0), sub("image", True, 1.0, 2.0)]
    ended = goat_metrics(subtasks, ended_by_agent=True)
    budget = goat_metrics(subtasks, ended_by_agent=False)  # every stop made, then max_steps
    assert (ended["composite_success"], ended["task_success"]) == (1, 1)
    assert (budget["composite_success"], budget["task_success"]) == (1, 0)
    # the rest does not depend on how the episode ended: spl (1 + 0.5) / 2
    assert budget["composite_spl"] == ended["composite_spl"] == pytest.approx(0.75)
    # an agent that ends (action 0) with a subtask failed: composite 0, task 0
    failed = goat_metrics([sub("object", True, 2.0, 2.0), sub("image", False, 1.0, 2.0)], True)
    assert (failed["composite_success"], failed["task_success"]) == (0, 0)


def test_no_subtask_is_an_error():
    with pytest.raises(ValueError, match="at least one subtask"):
        goat_metrics([], ended_by_agent=True)


# ----------------------------------------------------------------------------- registry


def test_registry_holds_goat_metrics_under_goat_names_over_sequential_only():
    from habitat_mosnav.metrics.measure_table import (
        AGGREGATES,
        GOAT_AGGREGATES,
        GOAT_METRICS,
        METRICS,
        goat_glossary,
        metric,
    )

    scalars = [m.field for m in GOAT_METRICS if m.scalar]
    assert tuple(scalars) == GOAT_SCALAR_FIELDS
    assert tuple(m.field for m in GOAT_METRICS if not m.scalar) == GOAT_LIST_FIELDS
    # one aggregate per scalar, named as GOAT-Bench names it, over sequential episodes only
    assert [a.name for a in GOAT_AGGREGATES] == list(GOAT_SCALAR_FIELDS)
    assert all(a.modes == ("sequential",) and a.table == "goat" for a in GOAT_AGGREGATES)
    assert not any("sequential" in a.modes for a in AGGREGATES)
    assert not {m.field for m in GOAT_METRICS} & {m.field for m in METRICS}
    assert metric("composite_spl").spec == "§11" and metric("task_success").label
    gloss = goat_glossary()
    assert list(gloss) == list(GOAT_SCALAR_FIELDS)
    assert all(len(text) > 20 and section == "§11" for _, text, section in gloss.values())


# ----------------------------------------------------------------------------- aggregation


def seq(task, composite, partial, obj, desc, img, cspl):
    """A sequential record's metrics (SPEC §11): success = task_success, spl = composite_spl."""
    return dict(
        task_success=task,
        composite_success=composite,
        partial_success=partial,
        object_success=obj,
        description_success=desc,
        image_success=img,
        composite_spl=cspl,
        success=task,
        spl=cspl,
    )


SEQUENTIAL_RECORDS = [
    ("sequential", seq(1, 1, 1.0, 1.0, None, 1.0, 0.8)),  # no description subtask
    ("sequential", seq(0, 1, 1.0, 1.0, 1.0, None, 0.6)),  # ended at the step budget
    ("sequential", seq(0, 0, 0.25, 0.0, 0.5, None, 0.1)),
]


def test_sequential_episodes_aggregate_goat_metrics_and_leave_the_board():
    from test_metrics_aggregate import RECORDS

    from habitat_mosnav.metrics import aggregate

    before = aggregate(RECORDS)
    after = aggregate(RECORDS + SEQUENTIAL_RECORDS)
    assert after["task_success"] == pytest.approx(1 / 3)  # (1 + 0 + 0) / 3
    assert after["composite_success"] == pytest.approx(2 / 3)  # (1 + 1 + 0) / 3
    assert after["partial_success"] == pytest.approx(0.75)  # (1 + 1 + 0.25) / 3
    assert after["object_success"] == pytest.approx(2 / 3)  # (1 + 1 + 0) / 3
    assert after["description_success"] == pytest.approx(0.75)  # (1 + 0.5) / 2 that have one
    assert after["image_success"] == 1.0  # the one episode with an image subtask
    assert after["composite_spl"] == pytest.approx(0.5)  # (0.8 + 0.6 + 0.1) / 3
    assert after["num_episodes_sequential"] == 3
    assert after["num_episodes"] == before["num_episodes"] + 3 == 10
    # a sequential episode's success / spl enter no SPEC §5 aggregate: all else unchanged
    changed = {k for k in after if after[k] != before[k]}
    assert changed == set(GOAT_SCALAR_FIELDS) | {"num_episodes", "num_episodes_sequential"}
    # a run without sequential episodes: GOAT's aggregates null, counted 0
    assert before["num_episodes_sequential"] == 0
    assert all(before[k] is None for k in GOAT_SCALAR_FIELDS)


def test_only_sequential_episodes_and_the_running_aggregator():
    from habitat_mosnav.metrics import aggregate
    from habitat_mosnav.metrics.aggregate import Aggregator

    a = aggregate(SEQUENTIAL_RECORDS[1:])
    assert a["sr"] is None and a["spl_multi"] is None and a["sr_single"] is None
    assert a["image_success"] is None  # no episode with an image subtask
    assert a["description_success"] == pytest.approx(0.75) and a["task_success"] == 0.0
    acc = Aggregator()
    for mode, metrics in SEQUENTIAL_RECORDS:
        acc.add(mode, metrics)
    assert acc.result() == aggregate(SEQUENTIAL_RECORDS)


def test_a_goat_value_that_is_not_a_number_is_a_record_error():
    from habitat_mosnav.evaluation.durable import ResultFileError
    from habitat_mosnav.evaluation.records import check_metrics

    check_metrics(seq(1, 1, 1.0, None, None, 1.0, 0.5), "episodes.jsonl:1")
    with pytest.raises(ResultFileError, match="episodes.jsonl:2: field 'metrics.partial_success'"):
        check_metrics(seq(1, 1, "1.0", None, None, 1.0, 0.5), "episodes.jsonl:2")
