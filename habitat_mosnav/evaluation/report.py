"""``mosnav-report RUN [RUN ...] --out DIR``: compare evaluation runs on one page.

Writes ``DIR/index.html`` (one self-contained page: plots embedded as PNG data URIs, the
episode maps beside it in ``DIR/maps/<run>/``), ``DIR/leaderboard.md`` and
``DIR/leaderboard.csv`` (one row per run, named by its directory), and
``DIR/leaderboard_by_goal_type.csv`` (one row per run and goal type: summary.json's
``by_goal_type``, also a table of the page and of leaderboard.md).

A row's point values are the run's ``summary.json`` metrics (SPEC §5), never recomputed
differently; the 95 % intervals of ``sr``, ``f1`` and ``spl_multi`` are percentile
bootstrap intervals over the run's ok episodes (numpy, ``--bootstrap`` resamples with a
fixed ``--seed``): each resample draws as many episodes as the run has, with replacement,
and takes the SPEC §5 mean (finite values only). A run whose summary is not ``complete``
(error records, missing episodes, a rank not finished), whose ``summary.json`` is missing
or disagrees with its records, is marked in the ``notes`` column and on the page; its
numbers are those of its ok episodes and are never merged with other runs'. Whether a run
is an official complete run of a benchmark setting comes from ``summary.json``'s
``benchmark`` field; its agent and config from ``run.json`` when the run has one.

Exit status: 0 written; 2 bad input (one line naming the file, record and field); 3 the
report cannot be written (full disk); 130 / 143 SIGINT / SIGTERM. The report is built
beside ``DIR`` and swapped in whole, so a failure or a signal leaves the previous one.
"""

from __future__ import annotations

import argparse
import base64
import csv
import html
import io
import json
import math
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.api import MULTI_MODES, TARGET_MODES
from habitat_mosnav.evaluation import results as res
from habitat_mosnav.evaluation.maps import (
    add_map_source_arguments,
    claim_kind,
    episode_file_stem,
    read_map_info,
)
from habitat_mosnav.metrics import finite_mean
from habitat_mosnav.metrics.measure_table import (
    AGGREGATES,
    INTEGER,
    METRICS,
    RATIO,
    aggregate_spec,
    format_value,
    glossary,
    metric,
)
from habitat_mosnav.safety import (
    PlantedLinkError,
    make_dirs,
    open_file,
    refuse_link,
    replacing,
    replacing_dir,
    safe_line,
    terminal_text,
)
from habitat_mosnav.versions import add_version_argument

__all__ = [
    "BOARD_FIELDS",
    "CSV_COLUMNS",
    "GLOSSARY",
    "Plot",
    "RunData",
    "bootstrap_interval",
    "episode_sets",
    "load_run",
    "main",
    "make_plots",
    "run_colors",
    "write_report",
]

PROG = "mosnav-report"
#: The columns come from the metric registry (:mod:`habitat_mosnav.metrics.measure_table`):
#: its shown aggregates by table, its episode columns.
_SHOWN = [a for a in AGGREGATES if a.shown]
#: The main board: (column, per-episode field) with bootstrap intervals.
BOARD_FIELDS = tuple((a.name, a.field) for a in _SHOWN if a.table == "board")
DIAGNOSTICS = tuple(a.name for a in _SHOWN if a.table == "diagnostic")
BY_MODE = tuple(a.name for a in _SHOWN if a.table in ("task", "mode"))
COUNTS = (
    "expected_episode_count",
    "unique_record_count",
    "ok_episode_count",
    "error_episode_count",
) + tuple(f"num_episodes_{m}" for m in TARGET_MODES)
CSV_COLUMNS = (
    ("run", "status", "official", "benchmark", "agent", "config")
    + COUNTS
    + tuple(c for name, _ in BOARD_FIELDS for c in (name, f"{name}_lo", f"{name}_hi"))
    + DIAGNOSTICS
    + BY_MODE
    + ("notes",)
)
#: ``leaderboard_by_goal_type.csv``: a row per run and goal type, from summary.json's
#: ``by_goal_type`` (the same SPEC §5 aggregates over that type's episodes).
GOAL_TYPE_CSV_COLUMNS = (
    ("run", "goal_type", "num_episodes")
    + tuple(f"num_episodes_{m}" for m in TARGET_MODES)
    + tuple(a.name for a in _SHOWN)
)
#: Episode table metric columns (record fields): the main board's, then the others.
EPISODE_METRICS = tuple(
    dict.fromkeys([f for _, f in BOARD_FIELDS] + [m.field for m in METRICS if m.episode_column])
)


class ReportError(ValueError):
    """A run that cannot be read (one line naming the file and field)."""


def bootstrap_interval(
    values: Sequence[Optional[float]], resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> Tuple[Optional[float], Optional[float]]:
    """Percentile bootstrap interval of the SPEC §5 mean (finite values only) of
    ``values`` (one per episode; None/NaN are kept in the draws and skipped by the mean,
    as the aggregate skips them). (None, None) when no value is finite."""
    v = np.array([np.nan if x is None else float(x) for x in values], dtype=np.float64)
    v[~np.isfinite(v)] = np.nan
    if v.size == 0 or not np.isfinite(v).any():
        return None, None
    rng = np.random.default_rng(seed)
    chunk = max(1, 4_000_000 // v.size)  # resamples per block: at most ~32 MB of draws
    means = []
    for start in range(0, int(resamples), chunk):
        draws = v[rng.integers(0, v.size, size=(min(chunk, int(resamples) - start), v.size))]
        counts = np.isfinite(draws).sum(axis=1)
        sums = np.nansum(draws, axis=1)
        means.append(sums[counts > 0] / counts[counts > 0])
    means = np.concatenate(means)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


@dataclass
class RunData:
    """One run as the report sees it."""

    path: str
    name: str
    summary: Dict[str, Any]
    records: List[Dict[str, Any]]
    manifest: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    intervals: Dict[str, Tuple[Optional[float], Optional[float]]] = field(default_factory=dict)
    mode_intervals: Dict[str, Dict[str, Tuple[Optional[float], Optional[float]]]] = field(
        default_factory=dict
    )
    maps: Dict[str, str] = field(default_factory=dict)  # key -> map path relative to the page
    videos: Dict[str, str] = field(default_factory=dict)  # key -> video path relative to the page

    @property
    def metrics(self) -> Dict[str, Any]:
        return self.summary.get("metrics") or {}

    @property
    def ok_records(self) -> List[Dict[str, Any]]:
        return [r for r in self.records if r.get("status") == "ok"]

    @property
    def complete(self) -> bool:
        return self.summary.get("status") == "complete" and not self.notes

    @property
    def official(self) -> Optional[bool]:
        bench = self.summary.get("benchmark")
        return bool(bench.get("official")) if isinstance(bench, Mapping) else None

    @property
    def benchmark(self) -> str:
        bench = self.summary.get("benchmark")
        if not isinstance(bench, Mapping):
            return ""
        return f"{bench.get('name')} v{bench.get('version')}"

    def manifest_text(self, key: str) -> str:
        value = self.manifest.get(key)
        if isinstance(value, Mapping):
            value = (
                value.get("name")
                or value.get("spec")
                or value.get("path")
                or json.dumps(value, sort_keys=True)
            )
        return "" if value is None else str(value)


def _episode_values(records: Sequence[Mapping[str, Any]], fieldname: str) -> List[Optional[float]]:
    out = []
    for rec in records:
        value = (rec.get("metrics") or {}).get(fieldname)
        ok, value = res.scalar_or_none(value)
        out.append(value if ok and value is not None else None)
    return out


def _mode(rec: Mapping[str, Any]) -> Optional[str]:
    ep = rec.get("episode")
    return ep.get("target_mode") if isinstance(ep, Mapping) else None


def load_run(
    path: str, name: Optional[str] = None, *, resamples: int = 2000, seed: int = 0
) -> RunData:
    """Read a run directory: summary.json (computed from the records, and noted, when it
    is missing), each key's last record, run.json when present; bootstrap intervals."""
    if not os.path.isdir(path):
        raise ReportError(f"{path}: no such run directory")
    try:
        read = res.read_run(path)
        computed = res.summary_of_run(read)
    except res.ResultFileError as exc:
        raise ReportError(str(exc)) from None
    records = [rec for _, rec in read[0].values()]
    notes: List[str] = []
    summary_path = os.path.join(path, res.SUMMARY_FILE)
    if os.path.exists(summary_path):
        summary = res.read_json_object(summary_path)
        metrics = summary.get("metrics")
        if not isinstance(metrics, dict):
            raise ReportError(f"{summary_path}: field 'metrics' is missing or not an object")
        for key in ("status",) + COUNTS[1:4]:
            if key not in summary:
                raise ReportError(f"{summary_path}: field {key!r} is missing")
        fresh = computed["metrics"]
        stale = [
            k
            for k, _ in BOARD_FIELDS + (("num_episodes", None),)
            if not _same(metrics.get(k), fresh.get(k))
        ]
        if "by_goal_type" not in summary:  # written before summaries split by goal type
            summary["by_goal_type"] = computed["by_goal_type"]
        groups = summary["by_goal_type"]
        if not isinstance(groups, dict) or not all(isinstance(g, dict) for g in groups.values()):
            raise ReportError(f"{summary_path}: field 'by_goal_type' is not an object of objects")
        fresh_groups = computed["by_goal_type"]
        stale += [
            gt
            for gt in set(groups) | set(fresh_groups)
            if gt not in groups
            or gt not in fresh_groups
            or any(
                not _same(groups[gt].get(k), fresh_groups[gt].get(k))
                for k, _ in BOARD_FIELDS + (("num_episodes", None),)
            )
        ]
        if stale or summary.get("unique_record_count") != computed["unique_record_count"]:
            notes.append("summary.json disagrees with the records (re-run mosnav-aggregate)")
    else:
        summary = computed
        notes.append("no summary.json (metrics computed from the records)")
    status = summary.get("status")
    if status == "incomplete":
        notes.insert(
            0,
            f"incomplete: {summary.get('unique_record_count')} of "
            f"{summary.get('expected_episode_count')} episodes recorded",
        )
    errors = int(summary.get("error_episode_count") or 0)
    if errors:
        notes.insert(
            0,
            f"{errors} error episode(s): metrics over the "
            f"{summary.get('ok_episode_count')} ok episodes only",
        )
    if status not in ("complete", "completed_with_errors", "incomplete"):
        raise ReportError(f"{summary_path}: field 'status' is {status!r}")
    manifest_path = os.path.join(path, "run.json")
    manifest = res.read_json_object(manifest_path) if os.path.exists(manifest_path) else {}
    run = RunData(
        path=path,
        name=name or os.path.basename(os.path.normpath(path)),
        summary=summary,
        records=records,
        manifest=manifest,
        notes=notes,
    )
    ok = run.ok_records
    multi = [r for r in ok if _mode(r) in MULTI_MODES]
    for column, fieldname in BOARD_FIELDS:
        run.intervals[column] = bootstrap_interval(
            _episode_values(multi, fieldname), resamples, seed
        )
    for mode in TARGET_MODES:
        subset = [r for r in ok if _mode(r) == mode]
        if subset:
            run.mode_intervals[mode] = {
                column: bootstrap_interval(_episode_values(subset, fieldname), resamples, seed)
                for column, fieldname in BOARD_FIELDS
            }
    return run


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


# ----------------------------------------------------------------------------- tables


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


def write_goal_type_csv(path: str, runs: Sequence[RunData]) -> None:
    with open_file(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(GOAL_TYPE_CSV_COLUMNS)
        for run in runs:
            for row in goal_type_rows(run):
                w.writerow([_csv_value(row[c]) for c in GOAL_TYPE_CSV_COLUMNS])


def write_csv(path: str, runs: Sequence[RunData]) -> None:
    with open_file(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for run in runs:
            row = board_row(run)
            w.writerow([_csv_value(row[c]) for c in CSV_COLUMNS])


def _num(value, digits: int = 3, fmt: str = RATIO) -> str:
    return format_value(value, fmt, digits)


def _agg(m: Mapping[str, Any], name: str) -> str:
    """An aggregate of a summary's metrics in its registry format."""
    return _num(m.get(name), fmt=aggregate_spec(name).format)


def _with_interval(value, interval) -> str:
    lo, hi = interval if interval else (None, None)
    if value is None:
        return "–"
    if lo is None:
        return _num(value)
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _official_text(run: RunData) -> str:
    if run.official is None:
        return "–"
    return "yes" if run.official else "no"


def verification_text(run: RunData) -> str:
    """``verified on Sim-v0 0.3.3`` / ``NOT verified on ...`` from summary.json's
    ``verification`` (``mosnav-replay --verify``), or "" when the run was never checked."""
    mark = run.summary.get("verification")
    if not isinstance(mark, Mapping) or "status" not in mark:
        return ""
    word = "verified" if mark.get("status") == "verified" else "NOT verified"
    return f"{word} on {mark.get('simulator')} {mark.get('simulator_version')}"


def _verified_md(run: RunData) -> str:
    text = verification_text(run)
    return f" ({_md_text(text)})" if text else ""


def _verified_badge(run: RunData) -> str:
    text = verification_text(run)
    if not text:
        return ""
    cls = "ok" if text.startswith("verified") else "bad"
    return f' <span class="badge {cls}">{_esc(text)}</span>'


def markdown_table(runs: Sequence[RunData]) -> str:
    """The leaderboard as a Markdown table (main board with 95 % intervals, diagnostics,
    MOS/MOC, counts); runs that are not complete carry a ⚠ and their notes below."""
    # the per-task columns: success by task type (SR MOS, SR MOC)
    task = [a for a in _SHOWN if a.table == "task" and a.field == "success"]
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
            _official_text(run),
            _md_text(run.manifest_text("agent")) or "–",
            f"{s.get('ok_episode_count')}/{s.get('error_episode_count')}/"
            f"{s.get('expected_episode_count')}",
        ]
        cells += [_with_interval(m.get(c), run.intervals.get(c)) for c, _ in BOARD_FIELDS]
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
    return text + "\n" + markdown_goal_type_table(runs)


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


# ----------------------------------------------------------------------------- plots


def run_colors(runs: Sequence[RunData]) -> Dict[str, str]:
    """One colour per run (matplotlib's tab10, tab20 beyond ten runs), in the runs' order:
    the same in every plot and table of a page."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if len(runs) <= 10 else "tab20"]
    return {run.name: to_hex(cmap(i % cmap.N)) for i, run in enumerate(runs)}


@dataclass
class Plot:
    """One plot of the page: its PNG and what it shows per run (``series``: the colour
    read back from the drawn artists and the number of values; ``missing``: why a run
    has nothing in it), embedded in the page as JSON and written to ``plots.json``."""

    key: str
    title: str
    uri: str = ""
    series: List[Dict[str, Any]] = field(default_factory=list)
    missing: Dict[str, str] = field(default_factory=dict)

    def drawn(self, run: str, artist, n: int, panel: str = "") -> None:
        from matplotlib.colors import to_hex

        color = _artist_color(artist)
        self.series.append({"run": run, "panel": panel, "color": to_hex(color), "n": int(n)})

    def data(self) -> Dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "series": self.series,
            "missing": self.missing,
        }


def _artist_color(artist):
    """The colour matplotlib drew ``artist`` (a bar container, histogram patch list,
    scatter collection or line) with."""
    if hasattr(artist, "patches"):  # BarContainer
        return artist.patches[0].get_facecolor()
    if isinstance(artist, (list, tuple)):  # hist(histtype="step") patches
        return artist[0].get_edgecolor()
    if hasattr(artist, "get_offsets"):  # scatter
        return artist.get_facecolor()[0]
    return artist.get_color()  # Line2D


def _subplots(*grid: int, figsize):
    """A figure of its own (matplotlib's ``Figure``, not pyplot): drawing the report never
    switches the importer's matplotlib backend nor keeps figures open in pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(*grid)


def _figure_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _finite(values) -> List[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def _run_legend(fig, runs: Sequence[RunData], colors: Mapping[str, str], plot: Plot) -> None:
    """Every run in the page's order and colour, outside the axes (right); a run with
    nothing (or not everything) in this plot says why."""
    from matplotlib.patches import Patch

    drawn = {s["run"] for s in plot.series}
    handles = [
        Patch(
            color=colors[r.name],
            label=r.name
            + (
                ""
                if r.name not in plot.missing
                else " (partly: see note)"
                if r.name in drawn
                else " (no value: see note)"
            ),
        )
        for r in runs
    ]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)


def _multi(run: RunData) -> List[Dict[str, Any]]:
    return [r for r in run.ok_records if _mode(r) in MULTI_MODES]


def make_plots(runs: Sequence[RunData], colors: Optional[Mapping[str, str]] = None) -> List[Plot]:
    """The page's plots, each run in its colour of :func:`run_colors` and its slot of the
    runs' order whether or not it has a value there (then it is noted as missing)."""
    from matplotlib.ticker import MaxNLocator

    colors = dict(colors or run_colors(runs))
    plots: List[Plot] = []
    modes = [m for m in TARGET_MODES if any(m in r.mode_intervals for r in runs)]
    width = 0.8 / max(1, len(runs))

    # 1. per mode: SR / F1 / SPL-multi bars with 95 % intervals
    plot = Plot("by_mode", "Per-mode SR, F1 and SPL-multi with 95 % intervals")
    fig, axes = _subplots(1, 3, figsize=(13, 3.6))
    for ax, (column, fieldname) in zip(axes, BOARD_FIELDS):
        for i, run in enumerate(runs):
            xs, ys, lo, hi = [], [], [], []
            for j, mode in enumerate(modes):
                subset = [r for r in run.ok_records if _mode(r) == mode]
                mean = finite_mean(_episode_values(subset, fieldname))
                interval = run.mode_intervals.get(mode, {}).get(column, (None, None))
                if mean is None or (column == "f1" and mode not in MULTI_MODES):
                    continue
                xs.append(j + (i - (len(runs) - 1) / 2) * width)
                ys.append(mean)
                lo.append(mean - (interval[0] if interval[0] is not None else mean))
                hi.append((interval[1] if interval[1] is not None else mean) - mean)
            if xs:
                bars = ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, color=colors[run.name])
                ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)  # a 0 is a value too
                plot.drawn(run.name, bars, len(xs), column)
        ax.set_xticks(range(len(modes)))
        ax.set_xticklabels(modes)
        ax.set_ylim(0, 1.12)
        ax.set_title(f"{column} by mode (95 % bootstrap)")
    _note_missing(plot, runs, "no ok episode of any mode")
    _run_legend(fig, runs, colors, plot)
    plot.uri = _figure_uri(fig)
    plots.append(plot)

    # 2. distributions of spl_multi and pe over episodes (many + all)
    plot = Plot("distributions", "Distributions of SPL-multi and PE (many + all episodes)")
    fig, axes = _subplots(1, 2, figsize=(11, 3.4))
    bins = np.linspace(0.0, 1.0, 21)
    lacks: Dict[str, List[str]] = {}
    for ax, fieldname in zip(axes, ("spl_multi", "pe")):
        for run in runs:
            values = _finite(_episode_values(_multi(run), fieldname))
            if values:
                _, _, patches = ax.hist(
                    values, bins=bins, histtype="step", linewidth=1.6, color=colors[run.name]
                )
                plot.drawn(run.name, patches, len(values), fieldname)
            else:
                lacks.setdefault(run.name, []).append(fieldname)
        ax.set_title(f"{fieldname} per episode (many + all)")
        ax.set_xlabel(fieldname)
        ax.set_ylabel("episodes")
    for name, fields in lacks.items():
        plot.missing[name] = "no finite " + " or ".join(fields) + " value"
    _run_legend(fig, runs, colors, plot)
    plot.uri = _figure_uri(fig)
    plots.append(plot)

    # 3. oer_target against ftr, one point per run
    plot = Plot("oer_ftr", "OER-target against FTR (one point per run)")
    fig, ax = _subplots(figsize=(7, 4))
    top = 0.1
    for run in runs:
        x, y = run.metrics.get("ftr"), run.metrics.get("oer_target")
        if x is None or y is None:
            plot.missing[run.name] = (
                "no FTR (no all episode ended by FINISH)"
                if x is None
                else "no OER-target (never found all required targets)"
            )
            continue
        top = max(top, 1.15 * y)
        points = ax.scatter([x], [y], s=50, color=colors[run.name])
        plot.drawn(run.name, points, 1)
        ax.annotate(run.name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("FTR (FINISH with targets left, all mode)")
    ax.set_ylabel("OER-target (steps after all found / T)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.02, min(1.05, top))
    ax.set_title("stopping early vs. searching on")
    _run_legend(fig, runs, colors, plot)
    plot.uri = _figure_uri(fig)
    plots.append(plot)

    # 4. success by number of required targets
    plot = Plot("by_count", "Success by the number of required targets (many + all)")
    fig, ax = _subplots(figsize=(7.5, 3.6))
    for run in runs:
        by: Dict[int, List[Optional[float]]] = {}
        for rec in _multi(run):
            count = (rec.get("metrics") or {}).get("required_target_count")
            if count is not None:
                by.setdefault(int(count), []).append((rec.get("metrics") or {}).get("success"))
        xs = sorted(by)
        ys = [finite_mean(by[x]) for x in xs]
        if xs:
            (line,) = ax.plot(
                xs, [y if y is not None else np.nan for y in ys], marker="o", color=colors[run.name]
            )
            plot.drawn(run.name, line, len(xs))
    _note_missing(plot, runs, "no ok many/all episode")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("required targets R (many: target_count, all: all matches)")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("success by target count (many + all)")
    _run_legend(fig, runs, colors, plot)
    plot.uri = _figure_uri(fig)
    plots.append(plot)
    return plots


def _note_missing(plot: Plot, runs: Sequence[RunData], why: str) -> None:
    drawn = {s["run"] for s in plot.series}
    for run in runs:
        if run.name not in drawn:
            plot.missing.setdefault(run.name, why)


# ----------------------------------------------------------------------------- page

_SORT_JS = """
function sortTable(table, col, numeric, desc) {
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
    if (numeric) {
      x = x === '' ? -Infinity : parseFloat(x); y = y === '' ? -Infinity : parseFloat(y);
      return desc ? y - x : x - y;
    }
    return desc ? y.localeCompare(x) : x.localeCompare(y);
  });
  rows.forEach(function (r) { body.appendChild(r); });
  table.setAttribute('data-sorted', col + (desc ? ':desc' : ':asc'));
}
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var desc = th.getAttribute('data-desc') !== 'true';
      th.setAttribute('data-desc', desc);
      sortTable(table, col, th.getAttribute('data-type') === 'num', desc);
    });
  });
});
// index.html#sort=COLUMN or #sort=-COLUMN sorts the episode table on load
var m = /sort=(-?)([A-Za-z_]+)/.exec(location.hash);
if (m) {
  var table = document.getElementById('episodes');
  table.querySelectorAll('th').forEach(function (th, col) {
    if (th.getAttribute('data-key') === m[2])
      sortTable(table, col, th.getAttribute('data-type') === 'num', m[1] === '-');
  });
}
"""

_CSS = """
body { font-family: sans-serif; margin: 1.2em 1.5em; color: #222; max-width: 1400px; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.6em 0 1.0em; font-size: 13px; }
th, td { border: 1px solid #bbb; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #e8eef7; cursor: pointer; }
th[title] { text-decoration: underline dotted; }
td.t, th.t { text-align: left; }
td.wrap { white-space: normal; max-width: 28em; overflow-wrap: anywhere; }
tr.warn td { background: #fff3cd; }
tr.err td { background: #f8d7da; }
.badge { padding: 1px 6px; border-radius: 4px; font-size: 12px; }
.ok { background: #d4edda; } .bad { background: #f8d7da; } .na { background: #eee; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 2px;
          vertical-align: -0.1em; margin-right: 0.35em; }
.warning { background: #fff3cd; border: 1px solid #e0c36a; padding: 0.5em 0.9em; margin: 0.8em 0; }
.scroll { overflow-x: auto; max-width: 100%; }
details { margin: 0.4em 0 1em; } summary { cursor: pointer; font-weight: bold; }
img.plot { max-width: 100%; border: 1px solid #ddd; margin: 0.4em 0 0.2em; }
p.missing { color: #7a5a00; font-size: 13px; margin: 0 0 1.2em; }
dl.glossary dt { font-weight: bold; margin-top: 0.4em; }
dl.glossary dd { margin-left: 1.5em; }
.spec { color: #666; font-size: 12px; }
section.episode { border-top: 1px solid #ccc; padding-top: 0.4em; }
.maps { display: flex; flex-wrap: wrap; gap: 12px; }
figure.run-map { margin: 0; flex: 1 1 520px; max-width: 620px; }
figure.run-map img { width: 100%; border: 1px solid #ddd; }
figure.run-map figcaption { font-size: 13px; margin-bottom: 4px; }
.success { color: #1e7a32; font-weight: bold; } .failure { color: #b02020; font-weight: bold; }
"""

#: Metric (or column) -> (label, one-line meaning, SPEC section): the page's glossary and
#: its header tooltips.
GLOSSARY: Dict[str, Tuple[str, str, str]] = {
    **glossary(),
    "episodes": ("episodes", "ok / error records of the expected episodes", "§8"),
    "status": (
        "status",
        "complete, completed_with_errors or incomplete; official: a frozen "
        "benchmark setting run in full, without errors or deviations",
        "§8",
    ),
    "mos": (
        "MOS",
        "multi-object search: the many mode (find target_count of the matches)",
        "§1, §5",
    ),
    "moc": (
        "MOC",
        "multi-object collection: the all mode (find every match, then FINISH)",
        "§1, §5",
    ),
}
#: Header tooltips of the episode table (record fields), from the same registry lines.
_FIELD_TIPS = {m.field: (m.title, m.glossary, m.spec) for m in METRICS if m.field and m.glossary}


def _esc(value) -> str:
    return html.escape("" if value is None else str(value))


def _tip(key: str) -> str:
    """A header's tooltip: the glossary line and SPEC section."""
    entry = GLOSSARY.get(key) or _FIELD_TIPS.get(key)
    return f' title="{_esc(entry[1] + " (SPEC " + entry[2] + ")")}"' if entry else ""


def _cell(
    value,
    numeric: bool = True,
    digits: int = 3,
    text: Optional[str] = None,
    cls: str = "",
    fmt: str = RATIO,
) -> str:
    if numeric:
        v = "" if value is None else repr(float(value))
        shown = text if text is not None else _num(value, digits, fmt)
    else:
        v = "" if value is None else str(value)
        shown = text if text is not None else _esc(value)
    attr = f' class="{cls}"' if cls else ""
    return f'<td{attr} data-v="{_esc(v)}">{shown}</td>'


def _swatch(color: str) -> str:
    return f'<span class="swatch" style="background:{_esc(color)}"></span>'


def _run_cell(run: RunData, colors: Mapping[str, str]) -> str:
    mark = "" if run.complete else " ⚠"
    return _cell(run.name, False, cls="t", text=_swatch(colors[run.name]) + _esc(run.name) + mark)


def _table(table_id: str, head: Sequence[Tuple[str, str, str]], rows: Sequence[str]) -> str:
    """A sortable table; ``head``: (label, glossary key or "", "t" for text columns)."""
    ths = "".join(
        f'<th class="{c}" data-type="{"str" if c else "num"}"{_tip(k)}>{_esc(h)}</th>'
        for h, k, c in head
    )
    return (
        f'<div class="scroll"><table class="sortable" id="{table_id}"><thead><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _row_class(run: RunData) -> str:
    if run.complete:
        return ""
    return ' class="err"' if run.summary.get("error_episode_count") else ' class="warn"'


def _board_head() -> List[Tuple[str, str, str]]:
    return [(aggregate_spec(c).label, c, "") for c, _ in BOARD_FIELDS]


def _board_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """The main board: run, SR, F1, SPL-multi (95 % intervals), episodes, status."""
    head = (
        [("run", "", "t")]
        + _board_head()
        + [("episodes", "episodes", ""), ("status", "status", "t")]
    )
    rows = []
    for run in runs:
        m, s = run.metrics, run.summary
        off = run.official
        badge = (
            ""
            if off is None
            else ' <span class="badge ok">official</span>'
            if off
            else ' <span class="badge bad">not official</span>'
        )
        cells = [_run_cell(run, colors)]
        cells += [
            _cell(m.get(c), text=_esc(_with_interval(m.get(c), run.intervals.get(c))))
            for c, _ in BOARD_FIELDS
        ]
        cells.append(
            _cell(
                s.get("ok_episode_count"),
                text=_esc(
                    f"{s.get('ok_episode_count')} ok / {s.get('error_episode_count')} err "
                    f"of {s.get('expected_episode_count')}"
                ),
            )
        )
        cells.append(
            _cell(
                s.get("status"),
                False,
                cls="t",
                text=_esc(s.get("status")) + badge + _verified_badge(run),
            )
        )
        rows.append(f"<tr{_row_class(run)}>" + "".join(cells) + "</tr>")
    return _table("leaderboard", head, rows)


def _goal_types_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """The main board per goal type: run, goal type, episodes, SR, F1, SPL-multi."""
    head = [("run", "", "t"), ("goal type", "", "t"), ("episodes", "episodes", "")]
    head += _board_head()
    rows = [
        f"<tr{_row_class(run)}>"
        + _run_cell(run, colors)
        + _cell(row["goal_type"], False, cls="t")
        + _cell(row["num_episodes"], digits=0, fmt=INTEGER)
        + "".join(_cell(row[c]) for c, _ in BOARD_FIELDS)
        + "</tr>"
        for run in runs
        for row in goal_type_rows(run)
    ]
    return "<h3>By goal type</h3>" + _table("by-goal-type", head, rows)


def _diagnostics_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """The second tables: diagnostics, by task type / mode, and the run details."""
    diagnostics = [aggregate_spec(k) for k in DIAGNOSTICS]
    head = [("run", "", "t")] + [(a.label, a.name, "") for a in diagnostics]
    diag = [
        f"<tr{_row_class(r)}>"
        + _run_cell(r, colors)
        + "".join(_cell(r.metrics.get(a.name), fmt=a.format) for a in diagnostics)
        + "</tr>"
        for r in runs
    ]
    task = [a for a in _SHOWN if a.table == "task"]
    head2 = (
        [("run", "", "t")]
        + [(a.label, "mos" if a.modes == ("many",) else "moc", "") for a in task]
        + [("many", "mos", ""), ("all", "moc", "")]
    )
    by_task = [
        f"<tr{_row_class(r)}>"
        + _run_cell(r, colors)
        + "".join(_cell(r.metrics.get(a.name), fmt=a.format) for a in task)
        + _cell(r.metrics.get("num_episodes_many"), digits=0)
        + _cell(r.metrics.get("num_episodes_all"), digits=0)
        + "</tr>"
        for r in runs
    ]
    head3 = [
        ("run", "", "t"),
        ("benchmark", "", "t"),
        ("official", "status", "t"),
        ("agent", "", "t"),
        ("config", "", "t"),
        ("notes", "", "t"),
    ]
    details = [
        f"<tr{_row_class(r)}>"
        + _run_cell(r, colors)
        + _cell(r.benchmark, False, cls="t")
        + _cell(_official_text(r), False, cls="t")
        + _cell(r.manifest_text("agent"), False, cls="t wrap")
        + _cell(r.manifest_text("config"), False, cls="t wrap")
        + _cell("; ".join(r.notes), False, cls="t wrap")
        + "</tr>"
        for r in runs
    ]
    return (
        "<h3>Diagnostics (many + all, SPEC §5)</h3>"
        + _table("diagnostics", head, diag)
        + "<h3>By task type</h3>"
        + _table("by-task", head2, by_task)
        + "<h3>Runs</h3>"
        + _table("run-details", head3, details)
    )


# ----------------------------------------------------------------------------- episode sets


@dataclass
class EpisodeSets:
    """Which episodes the runs hold: ``differ`` when their record keys are not the same
    set; ``common``: the keys every run has an ok record of."""

    keys: Dict[str, List[str]]
    common: List[str]

    @property
    def differ(self) -> bool:
        return len({frozenset(v) for v in self.keys.values()}) > 1


def episode_sets(runs: Sequence[RunData]) -> EpisodeSets:
    keys = {r.name: [rec["episode_key"] for rec in r.records] for r in runs}
    ok = [{rec["episode_key"] for rec in r.ok_records} for r in runs]
    first = [k for k in keys[runs[0].name]] if runs else []
    common = [k for k in first if all(k in s for s in ok)]
    return EpisodeSets(keys=keys, common=common)


def common_episode_metrics(
    run: RunData, common: Sequence[str], resamples: int = 2000, seed: int = 0
) -> Dict[str, Any]:
    """SPEC §5's main board over the run's ok records of ``common`` (:func:`aggregate`,
    as summary.json) with bootstrap intervals, and how many many + all episodes they are."""
    from habitat_mosnav.metrics import aggregate

    wanted = set(common)
    recs = [r for r in run.ok_records if r["episode_key"] in wanted]
    m = aggregate([(_mode(r), r.get("metrics") or {}) for r in recs])
    multi = [r for r in recs if _mode(r) in MULTI_MODES]
    out: Dict[str, Any] = {"n": len(multi)}
    for column, fieldname in BOARD_FIELDS:
        out[column] = m.get(column)
        out[column + "_ci"] = bootstrap_interval(_episode_values(multi, fieldname), resamples, seed)
    return out


def _episode_sets_html(
    runs: Sequence[RunData], sets: EpisodeSets, colors: Mapping[str, str], resamples: int, seed: int
) -> str:
    if not sets.differ:
        return ""
    counts = ", ".join(f"{_esc(name)} {len(keys)}" for name, keys in sets.keys.items())
    parts = [
        f'<div class="warning" id="episode-set-warning"><b>These runs cover different episode '
        f"sets</b> ({counts} episodes; {len(sets.common)} with an ok record in every run): "
        "the leaderboard's numbers are over different episodes and do not compare. "
        "The table below compares them on the common episodes only.</div>"
    ]
    head = [("run", "", "t")] + _board_head() + [("many + all episodes", "episodes", "")]
    rows = []
    for run in runs:
        m = common_episode_metrics(run, sets.common, resamples, seed)
        rows.append(
            "<tr>"
            + _run_cell(run, colors)
            + "".join(
                _cell(m[c], text=_esc(_with_interval(m[c], m[c + "_ci"]))) for c, _ in BOARD_FIELDS
            )
            + _cell(m["n"], digits=0)
            + "</tr>"
        )
    parts.append("<h3>On the common episodes</h3>" + _table("common-episodes", head, rows))
    return "".join(parts)


# ----------------------------------------------------------------------------- episodes


def _anchor(key: str) -> str:
    return "ep-" + episode_file_stem(key)


def _episodes_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    head = (
        [
            ("run", "run", "str"),
            ("episode", "episode_key", "str"),
            ("mode", "mode", "str"),
            ("R", "required", "num"),
            ("status", "status", "str"),
            ("end", "terminated_by", "str"),
            ("steps", "steps", "num"),
        ]
        + [(k, k, "num") for k in EPISODE_METRICS]
        + [
            ("claims (true/dup/false)", "claims", "num"),
            ("map", "map", "str"),
            ("view", "view", "str"),
            ("video", "video", "str"),
        ]
    )
    rows = []
    for run in runs:
        for rec in run.records:
            ep = rec.get("episode") or {}
            m = rec.get("metrics") or {}
            kinds = [claim_kind(ev) for ev in rec.get("report_events") or []]
            status = rec.get("status")
            key = rec["episode_key"]
            map_rel, video_rel = run.maps.get(key), run.videos.get(key)
            link = f'<a href="{_esc(map_rel)}">map</a>' if map_rel else "–"
            end = rec.get("terminated_by") if status == "ok" else rec.get("error_type", "error")
            cells = [
                _cell(run.name, False, cls="t", text=_swatch(colors[run.name]) + _esc(run.name)),
                _cell(key, False, cls="t"),
                _cell(ep.get("target_mode"), False, cls="t"),
                _cell(
                    m.get("required_target_count", len(ep.get("target_object_ids") or [])), digits=0
                ),
                _cell(status, False, cls="t"),
                _cell(end, False, cls="t"),
                _cell(rec.get("steps_taken"), digits=0),
            ]
            cells += [_cell(m.get(k), fmt=metric(k).format) for k in EPISODE_METRICS]
            cells.append(
                _cell(
                    len(kinds),
                    text=f"{len(kinds)} ({kinds.count('true')}/"
                    f"{kinds.count('duplicate')}/{kinds.count('false')})",
                )
            )
            cells.append(f'<td class="t" data-v="{_esc(map_rel or "")}">{link}</td>')
            cells.append(
                f'<td class="t" data-v="{_esc(key)}"><a href="#{_esc(_anchor(key))}">view</a></td>'
            )
            cells.append(
                f'<td class="t" data-v="{_esc(video_rel or "")}">'
                + (f'<a href="{_esc(video_rel)}">video</a>' if video_rel else "–")
                + "</td>"
            )
            cls = ' class="err"' if status != "ok" else ""
            rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    ths = "".join(
        f'<th class="{"t" if t == "str" else ""}" data-type="{t}" data-key="{k}"{_tip(k)}>'
        f"{_esc(h)}</th>"
        for h, k, t in head
    )
    # long episode keys scroll inside their box, never the page
    return (
        f'<div class="scroll"><table class="sortable" id="episodes"><thead><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _outcome(rec: Mapping[str, Any]) -> Tuple[str, str]:
    """(css class, text) of a record: SUCCESS / FAILURE / ERROR and how it ended."""
    if rec.get("status") != "ok":
        return "failure", f"ERROR ({rec.get('error_type', 'error')})"
    m = rec.get("metrics") or {}
    word = "SUCCESS" if m.get("success") == 1 else "FAILURE"
    return word.lower(), (
        f"{word}: {rec.get('terminated_by')} at step {rec.get('steps_taken')}, "
        f"found {m.get('targets_found')}/{m.get('required_target_count')}, "
        f"F1 {_num(m.get('f1'), 2)}, SPL-multi {_num(m.get('spl_multi'), 2)}"
    )


def _episode_views_html(runs: Sequence[RunData], colors: Mapping[str, str], out_dir: str) -> str:
    """A section per episode (``#ep-<stem>``): every run's map of it side by side, its
    outcome, and its video when the run has one."""
    order = list(dict.fromkeys(rec["episode_key"] for run in runs for rec in run.records))
    by_run = {run.name: {rec["episode_key"]: rec for rec in run.records} for run in runs}
    parts = []
    for key in order:
        figures, goal, mode = [], None, None
        for run in runs:
            rec = by_run[run.name].get(key)
            head = _swatch(colors[run.name]) + f"<b>{_esc(run.name)}</b>"
            if rec is None:
                figures.append(
                    f'<figure class="run-map none" data-run="{_esc(run.name)}"><figcaption>'
                    f"{head}: not in this run</figcaption></figure>"
                )
                continue
            mode = mode or (rec.get("episode") or {}).get("target_mode")
            cls, text = _outcome(rec)
            video = run.videos.get(key)
            links = f' · <a href="{_esc(video)}">video</a>' if video else ""
            caption = (
                f'<figcaption>{head}: <span class="{cls}">{_esc(text)}</span>{links}</figcaption>'
            )
            map_rel = run.maps.get(key)
            if map_rel:
                goal = goal or _map_goal(os.path.join(out_dir, map_rel))
                body = (
                    f'<a href="{_esc(map_rel)}"><img loading="lazy" src="{_esc(map_rel)}" '
                    f'alt="{_esc(run.name)} map of {_esc(key)}"></a>'
                )
            else:
                body = "<p>no map (run mosnav-eval with --save-maps, or mosnav-report --maps)</p>"
            figures.append(
                f'<figure class="run-map" data-run="{_esc(run.name)}">{caption}{body}</figure>'
            )
        about = " · ".join(
            x
            for x in (f"mode {_esc(mode)}" if mode else "", f"goal: “{_esc(goal)}”" if goal else "")
            if x
        )
        parts.append(
            f'<section class="episode" id="{_esc(_anchor(key))}"><h3>{_esc(key)}</h3>'
            f'<p>{about}</p><div class="maps">{"".join(figures)}</div></section>'
        )
    return "".join(parts)


def _map_goal(path: str) -> Optional[str]:
    try:
        return read_map_info(path).get("goal_text")
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- the page


def _glossary_html() -> str:
    items = "".join(
        f'<dt id="g-{_esc(k)}">{_esc(label)}</dt><dd>{_esc(text)} '
        f'<span class="spec">SPEC {_esc(section)}</span></dd>'
        for k, (label, text, section) in GLOSSARY.items()
    )
    return (
        f'<section id="glossary"><h2>Glossary</h2><p>R = required targets, F = targets '
        "claimed, p = path walked, l = shortest possible path over the required targets, "
        "a = the same over the targets claimed, T = max steps (docs/SPEC.md §4).</p>"
        f'<dl class="glossary">{items}</dl></section>'
    )


def _plots_html(plots: Sequence[Plot]) -> str:
    parts = []
    for plot in plots:
        parts.append(
            f'<h3>{_esc(plot.title)}</h3><img class="plot" id="plot-{_esc(plot.key)}" '
            f"alt='{_esc(plot.title)}' src='{plot.uri}'>"
        )
        if plot.missing:
            parts.append(
                '<p class="missing">Not in this plot: '
                + "; ".join(f"{_esc(name)} ({_esc(why)})" for name, why in plot.missing.items())
                + "</p>"
            )
    return "".join(parts)


def plot_data(
    runs: Sequence[RunData], plots: Sequence[Plot], colors: Mapping[str, str]
) -> Dict[str, Any]:
    """What the page's plots show (``plots.json`` and the page's ``#plot-data``)."""
    return {
        "runs": [r.name for r in runs],
        "colors": dict(colors),
        "plots": [p.data() for p in plots],
    }


def render_html(
    runs: Sequence[RunData],
    plots: Sequence[Plot],
    *,
    colors: Optional[Mapping[str, str]] = None,
    out_dir: str = ".",
    resamples: int = 2000,
    seed: int = 0,
) -> str:
    colors = dict(colors or run_colors(runs))
    warn = [
        f"<li><b>{_esc(r.name)}</b>: {_esc('; '.join(r.notes) or r.summary.get('status'))}</li>"
        for r in runs
        if not r.complete
    ]
    # no "<" inside the script element (a run named "</script>" or "<!--" stays data)
    data = json.dumps(plot_data(runs, plots, colors), sort_keys=True).replace("<", "\\u003c")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>mosnav report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Multi-object navigation: run report</h1>",
        "<nav><a href='#leaderboard-section'>Leaderboard</a><a href='#plots'>Plots</a>"
        "<a href='#episodes-section'>Episodes</a><a href='#episode-views'>Episode maps</a>"
        "<a href='#glossary'>Glossary</a></nav>",
        f"<p>{len(runs)} run(s). SR, F1 and SPL-multi over many + all episodes (SPEC §5) "
        "from each run's summary.json, with 95 % bootstrap intervals over episodes. Each run "
        "keeps its colour in every table and plot. Hover a header for its meaning; click it to "
        "sort.</p>",
        "<section id='leaderboard-section'><h2>Leaderboard</h2>",
        _board_html(runs, colors),
        _goal_types_html(runs, colors),
    ]
    if warn:
        parts.append(
            "<p><b>Not complete runs</b> (numbers are over their ok episodes only):</p>"
            f"<ul>{''.join(warn)}</ul>"
        )
    parts.append(_episode_sets_html(runs, episode_sets(runs), colors, resamples, seed))
    parts += [
        "<details id='diagnostics-group'><summary>Diagnostics, by task type, run details</summary>",
        _diagnostics_html(runs, colors),
        "</details></section>",
    ]
    parts += ["<section id='plots'><h2>Plots</h2>", _plots_html(plots), "</section>"]
    parts += [
        "<section id='episodes-section'><h2>Episodes</h2>",
        _episodes_html(runs, colors),
        "</section>",
        "<section id='episode-views'><h2>Episode maps</h2>"
        "<p>Every run's map of each episode side by side (click a map for full size).</p>",
        _episode_views_html(runs, colors, out_dir),
        "</section>",
        _glossary_html(),
        f"<script type='application/json' id='plot-data'>{data}</script>",
        f"<script>{_SORT_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(parts)


# ----------------------------------------------------------------------------- main


def _run_name(path: str) -> str:
    """run.json's ``run_name`` (a habitat-baselines evaluation: ``ppo_mos_demo_ckpt.0``),
    else the directory's name."""
    manifest = os.path.join(path, "run.json")
    if os.path.isfile(manifest):
        try:
            name = res.read_json_object(manifest).get("run_name")
        except (res.ResultFileError, OSError):
            name = None
        # A plain file name only: it becomes the run's folder under maps/ and videos/.
        if isinstance(name, str) and re.fullmatch(r"[\w.-]+", name) and name.strip(".") != "":
            return name
    return os.path.basename(os.path.normpath(path))


def _unique_names(paths: Sequence[str]) -> List[str]:
    names = [_run_name(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    return [os.path.normpath(p).replace(os.sep, "/").strip("/").replace("/", "_") for p in paths]


def _collect(run: RunData, out_dir: str, kind: str, extensions: Sequence[str]) -> Dict[str, str]:
    """Copy the run's ``<kind>/<episode>.<ext>`` beside the page (``<kind>/<run>/``);
    key -> path relative to the page."""
    src = os.path.join(run.path, kind)
    found: Dict[str, str] = {}
    if not os.path.isdir(src):
        return found
    dst = os.path.join(out_dir, kind, run.name)
    for rec in run.records:
        for ext in extensions:
            name = episode_file_stem(rec["episode_key"]) + ext
            if os.path.isfile(os.path.join(src, name)):
                make_dirs(os.path.join(out_dir, kind))
                with replacing(os.path.join(make_dirs(dst), name), suffix=ext) as tmp:
                    shutil.copyfile(os.path.join(src, name), tmp)  # never through a planted link
                found[rec["episode_key"]] = f"{kind}/{run.name}/{name}"
                break
    return found


def collect_maps(run: RunData, out_dir: str) -> None:
    """Copy the run's ``maps/<episode>.png`` beside the page (``maps/<run>/``)."""
    run.maps.update(_collect(run, out_dir, "maps", (".png",)))


def collect_videos(run: RunData, out_dir: str) -> None:
    """Copy the run's ``videos/<episode>.mp4|gif`` beside the page (``videos/<run>/``)."""
    run.videos.update(_collect(run, out_dir, "videos", (".mp4", ".gif")))


#: What a report directory holds (a directory with anything else is never replaced).
REPORT_ENTRIES = frozenset(
    {
        "index.html",
        "leaderboard.md",
        "leaderboard.csv",
        "leaderboard_by_goal_type.csv",
        "plots.json",
        "maps",
        "videos",
    }
)


def _check_replaceable(out_dir: str) -> None:
    """``out_dir`` may be replaced by the new report: absent, empty or a previous report
    (:class:`ReportError` otherwise); a link planted in it is refused
    (:class:`~habitat_mosnav.safety.PlantedLinkError`: the tool never made one)."""
    refuse_link(out_dir)
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise ReportError(f"--out {out_dir}: not a directory")
    if not os.path.isdir(out_dir):
        return
    other = sorted(set(os.listdir(out_dir)) - REPORT_ENTRIES)
    if other:
        raise ReportError(
            f"--out {out_dir}: holds {other[0]!r}"
            + (f" and {len(other) - 1} more" if len(other) > 1 else "")
            + ", which is not part of a mosnav-report; the report replaces its "
            "directory as a whole: choose a new or empty directory"
        )
    for directory, dirs, files in os.walk(out_dir):  # never follows a link
        for name in dirs + files:
            refuse_link(os.path.join(directory, name))


def write_report(
    run_dirs: Sequence[str],
    out_dir: str,
    *,
    resamples: int = 2000,
    seed: int = 0,
    draw_maps: bool = False,
    config: Optional[str] = None,
    overrides: Sequence[str] = (),
    progress: bool = True,
) -> List[RunData]:
    """Read the runs, write index.html, leaderboard.md, leaderboard.csv and
    leaderboard_by_goal_type.csv into ``out_dir``.

    The report is built in a new directory beside ``out_dir`` and swapped in whole
    (:func:`~habitat_mosnav.safety.replacing_dir`): a full disk or a signal leaves the
    previous report as it was. ``out_dir`` must be absent, empty or a previous report."""
    from tqdm import tqdm

    from habitat_mosnav.evaluation import interrupts

    _check_replaceable(out_dir)
    runs = []
    names = _unique_names(run_dirs)
    for path, name in tqdm(
        list(zip(run_dirs, names)), desc=PROG, unit="run", disable=not progress, file=sys.stderr
    ):
        runs.append(load_run(path, name, resamples=resamples, seed=seed))
    if draw_maps:
        from habitat_mosnav.evaluation.maps import render_run_maps

        for run in runs:
            render_run_maps(run.path, config=config, overrides=overrides, progress=progress)
    try:
        with replacing_dir(out_dir) as stage:
            with interrupts.interruptible():  # a signal ends the building at once
                _write_pages(runs, stage, resamples, seed)
    except (PlantedLinkError, res.ResultWriteError):
        raise
    except OSError as exc:
        raise res.ResultWriteError(
            f"cannot write the report {out_dir}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else "")
            + "; the previous report is kept",
            exc.errno,
        ) from None
    return runs


def _write_pages(runs: Sequence[RunData], out_dir: str, resamples: int, seed: int) -> None:
    for run in runs:
        collect_maps(run, out_dir)
        collect_videos(run, out_dir)
    write_csv(os.path.join(out_dir, "leaderboard.csv"), runs)
    write_goal_type_csv(os.path.join(out_dir, "leaderboard_by_goal_type.csv"), runs)
    with open_file(os.path.join(out_dir, "leaderboard.md"), "w") as f:
        f.write(markdown_table(runs))
    colors = run_colors(runs)
    plots = make_plots(runs, colors)
    with open_file(os.path.join(out_dir, "plots.json"), "w") as f:
        json.dump(plot_data(runs, plots, colors), f, indent=1, sort_keys=True)
    page = render_html(runs, plots, colors=colors, out_dir=out_dir, resamples=resamples, seed=seed)
    with open_file(os.path.join(out_dir, "index.html"), "w") as f:
        f.write(page)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog=PROG,
        description=(
            "Compare mosnav-eval runs: DIR/index.html (plots, leaderboard, sortable episode table "
            "linking each episode's map), DIR/leaderboard.md, DIR/leaderboard.csv and "
            "DIR/leaderboard_by_goal_type.csv."
        ),
    )
    add_version_argument(p)
    p.add_argument("runs", nargs="+", metavar="RUN", help="mosnav-eval output directories")
    p.add_argument("--out", required=True, metavar="DIR", help="where the report goes")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap resamples of the 95 %% intervals (default: 2000)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.add_argument(
        "--maps",
        action="store_true",
        help="draw every episode's top-down map into RUN/maps first (loads the scenes; "
        "runs made with --save-maps already have them)",
    )
    add_map_source_arguments(p, when="with --maps: ")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Exit status: 0 written; 2 bad input; 3 the report cannot be written (a full disk:
    the previous report is kept); 130 / 143 SIGINT / SIGTERM (one line, the previous
    report kept)."""
    import signal

    from habitat_mosnav.evaluation import interrupts

    args = build_parser().parse_args(argv)
    if args.bootstrap < 1:
        print(f"{PROG}: error: --bootstrap must be >= 1, got {args.bootstrap}", file=sys.stderr)
        return 2
    try:
        with interrupts.guarded((signal.SIGINT, signal.SIGTERM)):
            with interrupts.interruptible():  # reading runs and plotting: stop at once
                return _report(args)
    except KeyboardInterrupt as exc:
        name, code = ("SIGTERM", 143) if isinstance(exc, interrupts.Terminated) else ("SIGINT", 130)
        print(
            safe_line(
                f"{PROG}: interrupted by {name}; {args.out} is as it was before (the report "
                "is swapped in whole when it is complete); run the command again"
            ),
            file=sys.stderr,
        )
        return code


def _report(args) -> int:
    try:
        runs = write_report(
            args.runs,
            args.out,
            resamples=args.bootstrap,
            seed=args.seed,
            draw_maps=args.maps,
            config=args.config,
            overrides=args.overrides,
            progress=args.progress,
        )
    except (PlantedLinkError, res.ResultWriteError) as exc:
        print(
            safe_line(
                f"{PROG}: error: cannot write {exc.filename}: {exc.strerror}"
                if isinstance(exc, PlantedLinkError)
                else f"{PROG}: error: {exc}"
            ),
            file=sys.stderr,
        )
        return 3
    except (ReportError, res.ResultFileError, ValueError, OSError) as exc:
        print(safe_line(f"{PROG}: error: {' '.join(str(exc).split())}"), file=sys.stderr)
        return 2
    for line in markdown_table(runs).splitlines():  # run names and agents come from the runs
        print(safe_line(line))
    sets = episode_sets(runs)
    if sets.differ:
        print(
            safe_line(
                f"{PROG}: warning: the runs cover different episode sets ("
                + ", ".join(f"{name} {len(keys)}" for name, keys in sets.keys.items())
                + f"; {len(sets.common)} common): index.html compares them on the common "
                "episodes"
            ),
            file=sys.stderr,
        )
    print(
        safe_line(
            f"wrote {os.path.join(args.out, 'index.html')}, leaderboard.md, leaderboard.csv, "
            "leaderboard_by_goal_type.csv"
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
