"""``leaderboard.csv`` and ``leaderboard.md``: one row per run (:func:`board_row`);
``leaderboard_by_goal_type.csv`` and leaderboard.md's by-goal-type table: one row per run
and goal type (:func:`goal_type_rows`); text from the runs escaped for a spreadsheet (no
formulas) and for Markdown (no shifted columns). ``leaderboard_goat.csv`` and
leaderboard.md's GOAT-Bench table: GOAT-Bench's aggregates (SPEC §11) of the runs with
sequential episodes (:func:`goat_row`), written only when a run has some."""

from __future__ import annotations

import csv
import html
from typing import Any, Dict, Iterable, List, Mapping, Sequence


from habitat_mosnav.metrics.measure_table import (
    RATIO,
    aggregate_spec,
    format_value,
)
from habitat_mosnav.evaluation.verification import settings_text
from habitat_mosnav.safety import (
    open_file,
    terminal_text,
)
from habitat_mosnav.evaluation.report.data import (
    BOARD_FIELDS,
    BY_MODE,
    COUNTS,
    CSV_COLUMNS,
    DIAGNOSTICS,
    GOAL_TYPE_CSV_COLUMNS,
    GOAT_CSV_COLUMNS,
    GOAT_FIELDS,
    RunData,
    SHOWN_AGGREGATES,
)


#: A CSV cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection").
_CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(value) -> str:
    """A CSV cell; text that a spreadsheet would run as a formula (``=1+2``, ``@SUM(A1)``,
    ``+cmd|...``) gets a leading ``'`` so it stays text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value if value.startswith(_CSV_FORMULA_START) else value
    return str(value)


def _md_text(value) -> str:
    """A Markdown table cell from untrusted text: control characters escaped, HTML
    escaped (no raw tags), ``|`` and the inline markers escaped (no shifted columns)."""
    text = html.escape(terminal_text("" if value is None else value), quote=False)
    for c in ("\\", "|", "`", "*", "[", "]"):
        text = text.replace(c, "\\" + c)
    return text


def _md_code(value) -> str:
    """A name as inline code in a Markdown table (``|`` escaped, as GFM tables need), or
    :func:`_md_text` when it holds a backtick or a control character."""
    text = str(value)
    if "`" in text or terminal_text(text) != text:
        return _md_text(text)
    return "`" + text.replace("|", "\\|") + "`"


def board_row(run: RunData) -> Dict[str, Any]:
    """The leaderboard row of a run (CSV values before formatting)."""
    m = run.metrics
    row: Dict[str, Any] = {
        "run": run.name,
        "status": run.summary.get("status"),
        "official": run.official,
        "benchmark": run.benchmark,
        "agent": run.manifest_text("agent"),
        "config": run.manifest_text("config"),
    }
    for key in COUNTS:
        row[key] = run.summary.get(key) if not key.startswith("num_episodes") else m.get(key)
    for column, _ in BOARD_FIELDS:
        lo, hi = run.intervals.get(column, (None, None))
        row[column], row[f"{column}_lo"], row[f"{column}_hi"] = m.get(column), lo, hi
    for key in DIAGNOSTICS + BY_MODE:
        row[key] = m.get(key)
    row["notes"] = "; ".join(run.notes)
    return row


def goal_type_rows(run: RunData) -> List[Dict[str, Any]]:
    """The run's rows of the by-goal-type table (CSV values before formatting)."""
    rows = []
    for goal_type, m in sorted((run.summary.get("by_goal_type") or {}).items()):
        row = {c: m.get(c) for c in GOAL_TYPE_CSV_COLUMNS[2:]}
        rows.append(dict(row, run=run.name, goal_type=goal_type))
    return rows


def goat_runs(runs: Sequence[RunData]) -> List[RunData]:
    """The runs with sequential episodes: the GOAT-Bench table's rows (none: no table)."""
    return [run for run in runs if run.sequential_count]


def goat_row(run: RunData) -> Dict[str, Any]:
    """The run's row of the GOAT-Bench table (CSV values before formatting)."""
    m = run.metrics
    row: Dict[str, Any] = {"run": run.name, GOAT_CSV_COLUMNS[1]: run.sequential_count}
    for column, _ in GOAT_FIELDS:
        lo, hi = run.goat_intervals.get(column, (None, None))
        row[column], row[f"{column}_lo"], row[f"{column}_hi"] = m.get(column), lo, hi
    return row


def _write_rows(path: str, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """A CSV of ``columns``: the header, then each row's values in that order."""
    with open_file(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for row in rows:
            w.writerow([_csv_value(row[c]) for c in columns])


def write_goat_csv(path: str, runs: Sequence[RunData]) -> None:
    _write_rows(path, GOAT_CSV_COLUMNS, map(goat_row, goat_runs(runs)))


def write_goal_type_csv(path: str, runs: Sequence[RunData]) -> None:
    _write_rows(path, GOAL_TYPE_CSV_COLUMNS, (row for run in runs for row in goal_type_rows(run)))


def write_csv(path: str, runs: Sequence[RunData]) -> None:
    _write_rows(path, CSV_COLUMNS, map(board_row, runs))


def format_number(value, digits: int = 3, fmt: str = RATIO) -> str:
    return format_value(value, fmt, digits)


def _agg(m: Mapping[str, Any], name: str) -> str:
    """An aggregate of a summary's metrics in its registry format."""
    return format_number(m.get(name), fmt=aggregate_spec(name).format)


def with_interval(value, interval) -> str:
    lo, hi = interval if interval else (None, None)
    if value is None:
        return "–"
    if lo is None:
        return format_number(value)
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def official_text(run: RunData) -> str:
    if run.official is None:
        return "–"
    return "yes" if run.official else "no"


def verification_text(run: RunData) -> str:
    """``verified on Sim-v0 0.3.3`` / ``NOT verified on ...`` from summary.json's
    ``verification`` (``mosnav-replay --verify``), or "" when the run was never checked."""
    mark = run.summary.get("verification")
    if not isinstance(mark, Mapping) or "status" not in mark:
        return ""
    word = {"verified": "verified", "stale": "verification STALE (records edited since)"}.get(
        mark.get("status"), "NOT verified"
    )
    under = settings_text(mark) if mark.get("status") == "verified" else ""
    return f"{word} on {mark.get('simulator')} {mark.get('simulator_version')}" + (
        f" ({under})" if under else ""
    )


def _verified_md(run: RunData) -> str:
    text = verification_text(run)
    return f" ({_md_text(text)})" if text else ""


def markdown_table(runs: Sequence[RunData]) -> str:
    """The leaderboard as a Markdown table (main board with 95 % intervals, diagnostics,
    MOS/MOC, counts); runs that are not complete carry a ⚠ and their notes below."""
    # the per-task columns: success by task type (SR MOS, SR MOC)
    task = [a for a in SHOWN_AGGREGATES if a.table == "task" and a.field == "success"]
    head = (
        ["run", "status", "official", "agent", "episodes (ok/err/expected)"]
        + [aggregate_spec(c).label for c, _ in BOARD_FIELDS]
        + [aggregate_spec(k).label for k in DIAGNOSTICS]
        + [a.label for a in task]
        + ["many/all"]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        m = run.metrics
        s = run.summary
        mark = "" if run.complete else " ⚠"
        cells = [
            f"{_md_code(run.name)}{mark}",
            _md_text(s.get("status")) + _verified_md(run),
            official_text(run),
            _md_text(run.manifest_text("agent")) or "–",
            f"{s.get('ok_episode_count')}/{s.get('error_episode_count')}/"
            f"{s.get('expected_episode_count')}",
        ]
        cells += [with_interval(m.get(c), run.intervals.get(c)) for c, _ in BOARD_FIELDS]
        cells += [_agg(m, k) for k in DIAGNOSTICS]
        cells += [_agg(m, a.name) for a in task]
        cells.append(f"{m.get('num_episodes_many', 0)}/{m.get('num_episodes_all', 0)}")
        assert len(cells) == len(head)
        lines.append("| " + " | ".join(cells) + " |")
    notes = [
        f"- ⚠ {_md_code(run.name)}: "
        f"{_md_text('; '.join(run.notes) or 'status ' + str(run.summary.get('status')))}"
        for run in runs
        if not run.complete
    ]
    text = "\n".join(lines) + "\n"
    text += (
        "\nSR, F1 and SPL-multi over many + all episodes, with 95 % bootstrap intervals "
        "over episodes in brackets.\n"
    )
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    text += "\n" + markdown_goal_type_table(runs)
    return text + ("\n" + markdown_goat_table(runs) if goat_runs(runs) else "")


def markdown_goat_table(runs: Sequence[RunData]) -> str:
    """GOAT-Bench's aggregates over each run's sequential episodes, with 95 % intervals."""
    head = ["run", "sequential episodes"] + [aggregate_spec(c).label for c, _ in GOAT_FIELDS]
    lines = [
        "GOAT-Bench (SPEC §11: the mean over the sequential episodes; a per-type success over "
        "the episodes with a subtask of that type):",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for run in goat_runs(runs):
        row = goat_row(run)
        cells = [_md_code(run.name), str(run.sequential_count)]
        cells += [with_interval(row[c], run.goat_intervals.get(c)) for c, _ in GOAT_FIELDS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown_goal_type_table(runs: Sequence[RunData]) -> str:
    """The main board per goal type: a row per run and goal type (point values)."""
    head = ["run", "goal type", "episodes"] + [aggregate_spec(c).label for c, _ in BOARD_FIELDS]
    lines = [
        "By goal type (SR, F1 and SPL-multi over the many + all episodes of each goal type):",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for run in runs:
        for row in goal_type_rows(run):
            cells = [_md_code(run.name), _md_text(row["goal_type"]), str(row["num_episodes"])]
            cells += [_agg(row, c) for c, _ in BOARD_FIELDS]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: What a terminal shows (``mosnav-report``, ``make demo``): 120 columns at most.
TERMINAL_WIDTH = 120


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters (an ellipsis marks the cut), then padded."""
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)


def terminal_table(runs: Sequence[RunData], width: int = TERMINAL_WIDTH) -> str:
    """The main board for a terminal: one line per run (name, status, episodes, SR, F1,
    SPL-multi with 95 % intervals), each at most ``width`` columns; the full table with
    every column is leaderboard.md."""
    board = [(aggregate_spec(c).label, c) for c, _ in BOARD_FIELDS]
    cells = [
        (
            terminal_text(run.name) + ("" if run.complete else " ⚠"),
            terminal_text(run.summary.get("status")) + (" ✓" if _verified(run) else ""),
            f"{run.summary.get('ok_episode_count')}/{run.summary.get('expected_episode_count')}",
            [with_interval(run.metrics.get(c), run.intervals.get(c)) for _, c in board],
        )
        for run in runs
    ]
    numbers = max([len(label) for label, _ in board] + [len(v) for *_, vs in cells for v in vs])
    fixed = 2 + 10 + 2 + 9 + len(board) * (2 + numbers)
    name_width = max(3, min(max([len(c[0]) for c in cells] + [3]), width - fixed))
    lines = [
        "  ".join(
            [_fit("run", name_width), _fit("status", 10), _fit("episodes", 9)]
            + [label.rjust(numbers) for label, _ in board]
        ).rstrip()
    ]
    for name, status, episodes, values in cells:
        row = [_fit(name, name_width), _fit(status, 10), _fit(episodes, 9)]
        lines.append("  ".join(row + [v.rjust(numbers) for v in values]).rstrip())
    return "\n".join(line[:width] for line in lines) + "\n"


def _verified(run: RunData) -> bool:
    mark = run.summary.get("verification")
    return isinstance(mark, Mapping) and mark.get("status") == "verified"
