"""Crafted records never crash the readers (issue #23): mosnav-report and mosnav-aggregate
turn a malformed record (episode or metrics as a list, report_events [1], Infinity,
10**400, 1e308 values whose mean overflows) into one line naming the file and line, exit 2."""

import json
import os

import pytest

from habitat_mosnav.evaluation import aggregate_cli
from habitat_mosnav.evaluation.report import main as report
from habitat_mosnav.evaluation.rank_files import RankWriter

from test_results_files import record


def _run(tmp_path, records, extra_lines=()):
    out = str(tmp_path / "run")
    with RankWriter(out) as w:
        for rec in records:
            w.write(rec)
        w.write_done(expected_count=len(records) + len(extra_lines))
    with open(os.path.join(out, "rank_00000", "episodes.jsonl"), "a") as f:
        for line in extra_lines:
            f.write(line + "\n")
    return out


def _crafted(change):
    rec = record(1, 1.0, mode="all")
    text = json.dumps(rec)
    return change(rec, text)


#: an error record: the summary skips its metrics, the report's episode table did not
ERROR_RECORD = record(1, 0.0, mode="all", status="error")

CRAFTED = {
    "episode as a list": lambda rec, text: json.dumps(dict(ERROR_RECORD, episode=[1, 2])),
    "metrics as a list": lambda rec, text: json.dumps(dict(ERROR_RECORD, metrics=[0.5])),
    "report_events [1]": lambda rec, text: json.dumps(dict(rec, report_events=[1])),
    "Infinity": lambda rec, text: json.dumps(
        dict(rec, metrics=dict(rec["metrics"], required_target_count=float("inf")))
    ),
    "10**400": lambda rec, text: text.replace(
        '"precision": 1.0', '"required_target_count": 1' + "0" * 400
    ),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_a_crafted_record_is_one_line_exit_2_in_mosnav_report(capsys, tmp_path, name):
    out = _run(tmp_path, [record(0, 1.0)], [_crafted(CRAFTED[name])])
    rc = report([out, "--out", str(tmp_path / "report"), "--no-progress", "--bootstrap", "10"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"mosnav-report: error: {out}/rank_00000/episodes.jsonl:2:"), lines


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_a_crafted_record_is_one_line_exit_2_in_mosnav_aggregate(capsys, tmp_path, name):
    out = _run(tmp_path, [record(0, 1.0)], [_crafted(CRAFTED[name])])
    rc = aggregate_cli.main([out])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "episodes.jsonl:2:" in lines[0], err


def test_values_whose_mean_overflows_are_refused(capsys, tmp_path):
    recs = []
    for i in range(3):
        rec = record(i, 1.0)
        rec["metrics"]["spl_multi"] = 1e308
        recs.append(rec)
    out = _run(tmp_path, recs)
    assert aggregate_cli.main([out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "episodes.jsonl:1: field 'metrics.spl_multi'" in err[0], err
    assert not os.path.exists(os.path.join(out, "summary.json"))
