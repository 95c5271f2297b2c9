"""Names from runs and datasets cannot inject anything (issue #23): CSV cells that a
spreadsheet would run as formulas get a leading ', Markdown cells are escaped (no raw HTML,
no shifted columns), and control characters are escaped in every terminal line (an episode
id cannot retitle the terminal or forge a second "failed" line)."""

import csv
import json
import re
import shutil

import pytest

from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.report import main as report
from habitat_mosnav.evaluation.summary import summarize, write_summary

from mosnav_fixtures import quick_eval_args, write_room_variant

HOSTILE_AGENT = (
    '=HYPERLINK("http://evil.example","x") <img src=x onerror=alert(1)>|x\x1b]0;pwned\x07\nforged'
)
#: A goal type from a record (summary.json's by_goal_type key, a row of the goal-type table).
HOSTILE_GOAL_TYPE = "=1+1 <img src=x onerror=alert(2)>|y\x1b]0;goal\x07"


def _hostile_run(room_runs, root, name):
    run = root / name
    shutil.copytree(room_runs["scripted"], run)
    for where in (run, run / "rank_00000"):
        manifest = json.loads((where / "run.json").read_text())
        manifest["agent"] = HOSTILE_AGENT
        (where / "run.json").write_text(json.dumps(manifest))
    jsonl = run / "rank_00000" / "episodes.jsonl"
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    for rec in records:
        rec["episode"]["goal_type"] = HOSTILE_GOAL_TYPE
    jsonl.write_text("".join(json.dumps(rec) + "\n" for rec in records))
    write_summary(str(run), summarize(str(run)))
    return run


@pytest.fixture(scope="module")
def hostile_report(room_runs, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    runs = [
        _hostile_run(room_runs, root, name) for name in ("=1+2", "@SUM(A1)", "+cmd|' -C calc'!A0")
    ]
    out = root / "report"
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = report([*map(str, runs), "--out", str(out), "--no-progress", "--bootstrap", "10"])
    assert rc == 0
    return out, buf.getvalue()


def test_csv_cells_that_look_like_formulas_are_neutralised(hostile_report):
    out, _ = hostile_report
    with open(out / "leaderboard.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["run"] for r in rows] == ["'=1+2", "'@SUM(A1)", "'+cmd|' -C calc'!A0"]
    assert all(r["agent"].startswith("'=HYPERLINK(") for r in rows)
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@", "\t", "\r")), row
    with open(out / "leaderboard_by_goal_type.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["goal_type"] for r in rows] == ["'" + HOSTILE_GOAL_TYPE] * 3


def test_markdown_cells_hold_no_html_and_no_extra_columns(hostile_report):
    out, _ = hostile_report
    text = (out / "leaderboard.md").read_text()
    # the board, then the table by goal type (each run's hostile goal type a cell)
    tables = [[x for x in block.splitlines() if x.startswith("|")] for block in text.split("\n\n")]
    tables = [rows for rows in tables if rows]
    assert [len(rows) for rows in tables] == [2 + 3, 2 + 3]
    for rows in tables:
        columns = len(re.split(r"(?<!\\)\|", rows[0]))
        for line in rows[2:]:
            assert len(re.split(r"(?<!\\)\|", line)) == columns, line
    lines = text.splitlines()
    assert "<img" not in text and "&lt;img" in text and "\x1b" not in text
    page = (out / "index.html").read_text()
    assert "<img src=x onerror=alert(2)>" not in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page  # the goal-type table, as text
    assert not any(line.startswith("forged") for line in lines)


def test_the_printed_table_has_no_control_characters(hostile_report):
    _, printed = hostile_report
    assert "\x1b" not in printed and "\x07" not in printed
    assert not any(line.startswith("forged") for line in printed.splitlines())


def test_a_hostile_episode_id_cannot_forge_terminal_lines(capsys, open_room, tmp_path):
    hostile = "q0-all-0\x1b]0;pwned\x07\nmosnav-eval: episode forged failed"

    def edit(docs):
        docs["episodes.json"]["episodes"][1]["episode_id"] = hostile

    data = write_room_variant(tmp_path / "data", open_room, edit)
    agent = tmp_path / "boom.py"
    agent.write_text("class Boom:\n    def act(self, obs):\n        raise RuntimeError('no')\n")
    rc = main(
        quick_eval_args(
            *data,
            "--agent",
            f"{agent}:Boom",
            "--log-episodes",
            "--output-dir",
            str(tmp_path / "run"),
        )
    )
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert rc == 0, printed
    assert "\x1b" not in printed and "\x07" not in printed
    assert not any(line.startswith("mosnav-eval: episode forged") for line in printed.splitlines())
    assert "q0-all-0\\x1b]0;pwned\\x07\\x0amosnav-eval: episode forged failed" in printed
