"""GOAT-Bench's aggregates of ``sequential`` episodes (SPEC §11) in summary.json, the printed
summary and ``mosnav-report``, from records built by hand (conftest.write_records_run);
a run without sequential episodes shows nothing new."""

import csv
import json
import os
import re

import pytest

from conftest import read_summary, write_records_run
from habitat_mosnav.evaluation.report import main
from habitat_mosnav.evaluation.summary import format_summary

QUERY_EPISODES = [("many", "object", 1.0), ("all", "description", 0.0)]
# (goal_type, success, d_i, p_i) per subtask, ended by the agent
SEQUENTIAL = [
    # s [1, 1], spl [4 / 5, 2 / 2] = [0.8, 1.0]: task 1, partial 1, composite SPL 0.9
    ([("object", True, 4.0, 5.0), ("image", True, 2.0, 2.0)], True),
    # s [1, 0, 0], spl [3 / 6, 0, 0]: task 0, partial 1/3, object 0, description 0.5,
    # no image (null), composite SPL 0.5 / 3; it ran out of steps
    ([("description", True, 3.0, 6.0), ("object", False, 5.0, 1.0)], False),
]
SEQUENTIAL[1][0].append(("description", False, 2.0, 0.0))

# the means over the two sequential episodes
EXPECTED = {
    "task_success": 0.5,  # (1 + 0) / 2
    "composite_success": 0.5,
    "partial_success": 2 / 3,  # (1 + 1/3) / 2
    "object_success": 0.5,  # (1 + 0) / 2
    "description_success": 0.5,  # the second episode only
    "image_success": 1.0,  # the first episode only
    "composite_spl": (0.9 + 0.5 / 3) / 2,
}


@pytest.fixture
def runs(tmp_path):
    mixed = write_records_run(tmp_path / "mixed", QUERY_EPISODES, sequential=SEQUENTIAL)
    plain = write_records_run(tmp_path / "plain", QUERY_EPISODES)
    return mixed, plain


def test_summary_json_aggregates_sequential_episodes_apart(runs):
    mixed, plain = map(read_summary, runs)
    m, p = mixed["metrics"], plain["metrics"]
    for name, value in EXPECTED.items():
        assert m[name] == pytest.approx(value), name
        assert p[name] is None, name
    assert (m["num_episodes_sequential"], p["num_episodes_sequential"]) == (2, 0)
    assert m["num_episodes"] == 4 and mixed["ok_episode_count"] == 4
    # the main board and every SPEC §5 aggregate are the query episodes' alone
    assert (m["sr"], m["f1"], m["spl_multi"]) == (0.5, 0.5, 0.25)
    assert {k: v for k, v in m.items() if k not in EXPECTED and "num_episodes" not in k} == {
        k: v for k, v in p.items() if k not in EXPECTED and "num_episodes" not in k
    }
    # by_goal_type: the query episodes only (a sequential episode has one type per subtask)
    assert mixed["by_goal_type"] == plain["by_goal_type"]
    assert mixed["by_goal_type"]["object"]["num_episodes"] == 1


def test_printed_summary_has_a_goat_block_only_with_sequential_episodes(runs):
    mixed, plain = map(read_summary, runs)
    text = format_summary(mixed)
    lines = text.splitlines()
    assert "single 0  any 0  many 1  all 1  sequential 2" in lines
    block = lines[lines.index("GOAT-Bench (sequential episodes: 2):") :]
    assert block[1:] == [
        "  task success         0.5000",
        "  composite success    0.5000",
        "  partial success      0.6667",
        "  object success       0.5000",
        "  description success  0.5000",
        "  image success        1.0000",
        "  composite SPL        0.5333",  # (0.9 + 0.1667) / 2
    ]
    assert all(len(line) <= 120 for line in lines)
    plain_text = format_summary(plain)
    assert "GOAT" not in plain_text and "sequential" not in plain_text
    assert "single 0  any 0  many 1  all 1" in plain_text.splitlines()
    # the printed text of the plain run is the mixed run's without the GOAT lines
    extra = {"GOAT-Bench (sequential episodes: 2):"} | set(block)
    mixed_rest = [
        line.replace("  sequential 2", "").replace("episodes: 4 (ok 4", "episodes: 2 (ok 2")
        for line in lines
        if line not in extra
    ]
    assert mixed_rest == [
        line.replace("expected 2", "expected 4") for line in plain_text.splitlines()
    ]


def test_a_type_missing_from_every_episode_prints_a_dash(tmp_path):
    out = write_records_run(tmp_path / "objects", [], sequential=[SEQUENTIAL[0]])
    lines = format_summary(read_summary(out)).splitlines()
    assert "  description success  –" in lines and "  task success         1.0000" in lines


def _table(html, table_id):
    table = html[html.index(f'id="{table_id}"') :]
    table = table[: table.index("</table>")]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr.*?</tr>", table)]
    return [[re.sub(r"<[^>]+>", "", c) for c in row] for row in cells if row]


def test_report_has_a_goat_bench_table_only_for_runs_with_sequential_episodes(tmp_path):
    seq = write_records_run(tmp_path / "seq<b>&", QUERY_EPISODES, sequential=SEQUENTIAL)
    plain = write_records_run(tmp_path / "plain", QUERY_EPISODES)
    out = str(tmp_path / "out")
    assert main([seq, plain, "--out", out, "--no-progress", "--bootstrap", "500"]) == 0
    with open(os.path.join(out, "leaderboard_goat.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["run"] for r in rows] == ["seq<b>&"] and rows[0]["num_episodes_sequential"] == "2"
    for name, value in EXPECTED.items():
        assert float(rows[0][name]) == pytest.approx(value), name
    # two episodes, task success 1 and 0: resample means 0, 0.5 or 1 -> interval [0, 1]
    assert (rows[0]["task_success_lo"], rows[0]["task_success_hi"]) == ("0.0", "1.0")
    assert (rows[0]["image_success_lo"], rows[0]["image_success_hi"]) == ("1.0", "1.0")
    with open(os.path.join(out, "leaderboard.csv"), newline="") as f:
        notes = {r["run"]: r["notes"] for r in csv.DictReader(f)}
    assert notes == {"seq<b>&": "", "plain": ""}  # summary.json agrees with the records
    md = open(os.path.join(out, "leaderboard.md"), encoding="utf-8").read()
    assert "| run | sequential episodes | task success | composite success |" in md
    assert "| `seq<b>&` | 2 | 0.500 [0.000, 1.000] | 0.500 [0.000, 1.000] | 0.667 [" in md
    page = open(os.path.join(out, "index.html"), encoding="utf-8").read()
    body = _table(page, "goat-bench")
    assert len(body) == 1 and body[0][:3] == ["seq&lt;b&gt;&amp;", "2", "0.500 [0.000, 1.000]"]
    assert body[0][-1].startswith("0.533 [")  # composite SPL
    assert "seq<b>" not in page  # the run's name stays text
    assert 'id="g-composite_spl"' in page  # its glossary entry
    assert "subtasks 2/2 succeeded, partial success 1.00, composite SPL 0.90" in page
    assert "subtasks 1/3 succeeded, partial success 0.33, composite SPL 0.17" in page

    alone = str(tmp_path / "alone")
    assert main([plain, "--out", alone, "--no-progress", "--bootstrap", "100"]) == 0
    assert not os.path.exists(os.path.join(alone, "leaderboard_goat.csv"))
    page = open(os.path.join(alone, "index.html"), encoding="utf-8").read()
    assert "goat-bench" not in page and "composite_spl" not in page
    assert "GOAT-Bench" not in open(os.path.join(alone, "leaderboard.md"), encoding="utf-8").read()


def test_report_notes_a_stale_goat_aggregate(tmp_path):
    seq = write_records_run(tmp_path / "seq", [], sequential=SEQUENTIAL)
    summary = read_summary(seq)
    summary["metrics"]["composite_spl"] = 0.9
    with open(os.path.join(seq, "summary.json"), "w") as f:
        json.dump(summary, f)
    out = str(tmp_path / "out")
    assert main([seq, "--out", out, "--no-progress", "--bootstrap", "100"]) == 0
    with open(os.path.join(out, "leaderboard.csv"), newline="") as f:
        assert "disagrees with the records" in next(csv.DictReader(f))["notes"]
