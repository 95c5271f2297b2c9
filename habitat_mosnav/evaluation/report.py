"""``mosnav-report RUN [RUN ...] --out DIR``: compare evaluation runs on one page.

Writes ``DIR/index.html`` (one self-contained page: plots embedded as PNG data URIs, the
episode maps beside it in ``DIR/maps/<run>/``), ``DIR/leaderboard.md`` and
``DIR/leaderboard.csv`` (one row per run, named by its directory).

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

Exit status: 0 written; 2 bad input (one line naming the file, record and field).
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
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.api import MULTI_MODES, TARGET_MODES
from habitat_mosnav.evaluation import results as res
from habitat_mosnav.evaluation.maps import add_map_source_arguments, claim_kind, episode_file_stem
from habitat_mosnav.versions import add_version_argument

__all__ = ["BOARD_FIELDS", "CSV_COLUMNS", "RunData", "bootstrap_interval", "load_run",
           "main", "write_report"]

PROG = "mosnav-report"
#: The main board: (column, per-episode field) with bootstrap intervals.
BOARD_FIELDS = (("sr", "success"), ("f1", "f1"), ("spl_multi", "spl_multi"))
DIAGNOSTICS = ("precision", "recall", "pe", "tse_mos", "rtsr", "ftr", "oer_target", "oer_space",
               "coverage")
BY_MODE = ("sr_mos", "f1_mos", "spl_multi_mos", "sr_moc", "f1_moc", "spl_multi_moc",
           "sr_single", "spl_single", "sr_any", "spl_any", "sr_many", "f1_many", "sr_all", "f1_all")
COUNTS = ("expected_episode_count", "unique_record_count", "ok_episode_count",
          "error_episode_count") + tuple(f"num_episodes_{m}" for m in TARGET_MODES)
CSV_COLUMNS = (("run", "status", "official", "benchmark", "agent", "config")
               + COUNTS
               + tuple(c for name, _ in BOARD_FIELDS for c in (name, f"{name}_lo", f"{name}_hi"))
               + DIAGNOSTICS + BY_MODE + ("notes",))
#: Episode table columns: (header, record -> value).
EPISODE_METRICS = ("success", "f1", "spl_multi", "pe", "precision", "recall")


class ReportError(ValueError):
    """A run that cannot be read (one line naming the file and field)."""


def bootstrap_interval(values: Sequence[Optional[float]], resamples: int = 2000, seed: int = 0,
                       level: float = 0.95) -> Tuple[Optional[float], Optional[float]]:
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
    mode_intervals: Dict[str, Dict[str, Tuple[Optional[float], Optional[float]]]] = field(default_factory=dict)
    maps: Dict[str, str] = field(default_factory=dict)  # key -> map path relative to the page

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
            value = value.get("name") or value.get("spec") or value.get("path") or json.dumps(value, sort_keys=True)
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


def load_run(path: str, name: Optional[str] = None, *, resamples: int = 2000, seed: int = 0) -> RunData:
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
        stale = [k for k, _ in BOARD_FIELDS + (("num_episodes", None),)
                 if not _same(metrics.get(k), fresh.get(k))]
        if stale or summary.get("unique_record_count") != computed["unique_record_count"]:
            notes.append("summary.json disagrees with the records (re-run mosnav-aggregate)")
    else:
        summary = computed
        notes.append("no summary.json (metrics computed from the records)")
    status = summary.get("status")
    if status == "incomplete":
        notes.insert(0, f"incomplete: {summary.get('unique_record_count')} of "
                        f"{summary.get('expected_episode_count')} episodes recorded")
    errors = int(summary.get("error_episode_count") or 0)
    if errors:
        notes.insert(0, f"{errors} error episode(s): metrics over the "
                        f"{summary.get('ok_episode_count')} ok episodes only")
    if status not in ("complete", "completed_with_errors", "incomplete"):
        raise ReportError(f"{summary_path}: field 'status' is {status!r}")
    manifest_path = os.path.join(path, "run.json")
    manifest = res.read_json_object(manifest_path) if os.path.exists(manifest_path) else {}
    run = RunData(path=path, name=name or os.path.basename(os.path.normpath(path)),
                  summary=summary, records=records, manifest=manifest, notes=notes)
    ok = run.ok_records
    multi = [r for r in ok if _mode(r) in MULTI_MODES]
    for column, fieldname in BOARD_FIELDS:
        run.intervals[column] = bootstrap_interval(_episode_values(multi, fieldname), resamples, seed)
    for mode in TARGET_MODES:
        subset = [r for r in ok if _mode(r) == mode]
        if subset:
            run.mode_intervals[mode] = {
                column: bootstrap_interval(_episode_values(subset, fieldname), resamples, seed)
                for column, fieldname in BOARD_FIELDS}
    return run


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


# ----------------------------------------------------------------------------- tables


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def board_row(run: RunData) -> Dict[str, Any]:
    """The leaderboard row of a run (CSV values before formatting)."""
    m = run.metrics
    row: Dict[str, Any] = {"run": run.name, "status": run.summary.get("status"),
                           "official": run.official, "benchmark": run.benchmark,
                           "agent": run.manifest_text("agent"), "config": run.manifest_text("config")}
    for key in COUNTS:
        row[key] = run.summary.get(key) if not key.startswith("num_episodes") else m.get(key)
    for column, _ in BOARD_FIELDS:
        lo, hi = run.intervals.get(column, (None, None))
        row[column], row[f"{column}_lo"], row[f"{column}_hi"] = m.get(column), lo, hi
    for key in DIAGNOSTICS + BY_MODE:
        row[key] = m.get(key)
    row["notes"] = "; ".join(run.notes)
    return row


def write_csv(path: str, runs: Sequence[RunData]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for run in runs:
            row = board_row(run)
            w.writerow([_csv_value(row[c]) for c in CSV_COLUMNS])


def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


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


def markdown_table(runs: Sequence[RunData]) -> str:
    """The leaderboard as a Markdown table (main board with 95 % intervals, diagnostics,
    MOS/MOC, counts); runs that are not complete carry a ⚠ and their notes below."""
    head = ["run", "status", "official", "agent", "episodes (ok/err/expected)",
            "SR", "F1", "SPL-multi", "precision", "recall", "PE", "TSE (MOS)", "RTSR", "FTR",
            "OER-target", "OER-space", "coverage", "SR MOS", "SR MOC", "many/all"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        m = run.metrics
        s = run.summary
        mark = "" if run.complete else " ⚠"
        cells = [f"`{run.name}`{mark}", str(s.get("status")), _official_text(run),
                 run.manifest_text("agent") or "–",
                 f"{s.get('ok_episode_count')}/{s.get('error_episode_count')}/"
                 f"{s.get('expected_episode_count')}"]
        cells += [_with_interval(m.get(c), run.intervals.get(c)) for c, _ in BOARD_FIELDS]
        cells += [_num(m.get(k)) for k in DIAGNOSTICS]
        cells += [_num(m.get("sr_mos")), _num(m.get("sr_moc")),
                  f"{m.get('num_episodes_many', 0)}/{m.get('num_episodes_all', 0)}"]
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- ⚠ `{run.name}`: {'; '.join(run.notes) or 'status ' + str(run.summary.get('status'))}"
             for run in runs if not run.complete]
    text = "\n".join(lines) + "\n"
    text += ("\nSR, F1 and SPL-multi over many + all episodes, with 95 % bootstrap intervals "
             "over episodes in brackets.\n")
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    return text


# ----------------------------------------------------------------------------- plots


def _figure_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _finite(values) -> List[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def make_plots(runs: Sequence[RunData]) -> List[Tuple[str, str]]:
    """(title, PNG data URI) of each plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots: List[Tuple[str, str]] = []
    modes = [m for m in TARGET_MODES if any(m in r.mode_intervals for r in runs)]
    width = 0.8 / max(1, len(runs))

    # 1. per mode: SR / F1 / SPL-multi bars with 95 % intervals
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, (column, fieldname) in zip(axes, BOARD_FIELDS):
        for i, run in enumerate(runs):
            xs, ys, lo, hi = [], [], [], []
            for j, mode in enumerate(modes):
                subset = [r for r in run.ok_records if _mode(r) == mode]
                mean = _mean(_episode_values(subset, fieldname))
                interval = run.mode_intervals.get(mode, {}).get(column, (None, None))
                if mean is None or (column == "f1" and mode not in MULTI_MODES):
                    continue
                xs.append(j + (i - (len(runs) - 1) / 2) * width)
                ys.append(mean)
                lo.append(mean - (interval[0] if interval[0] is not None else mean))
                hi.append((interval[1] if interval[1] is not None else mean) - mean)
            ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=run.name)
        ax.set_xticks(range(len(modes)))
        ax.set_xticklabels(modes)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{column} by mode (95 % bootstrap)")
    axes[0].legend(fontsize=7)
    plots.append(("Per-mode SR, F1 and SPL-multi with 95 % intervals", _figure_uri(fig)))

    # 2. distributions of spl_multi and pe over episodes (many + all)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    bins = np.linspace(0.0, 1.0, 21)
    for ax, fieldname in zip(axes, ("spl_multi", "pe")):
        for run in runs:
            multi = [r for r in run.ok_records if _mode(r) in MULTI_MODES]
            values = _finite(_episode_values(multi, fieldname))
            if values:
                ax.hist(values, bins=bins, histtype="step", linewidth=1.6,
                        label=f"{run.name} (n={len(values)})")
        ax.set_title(f"{fieldname} per episode (many + all)")
        ax.set_xlabel(fieldname)
        ax.set_ylabel("episodes")
        ax.legend(fontsize=7)
    plots.append(("Distributions of SPL-multi and PE", _figure_uri(fig)))

    # 3. oer_target against ftr, one point per run
    fig, ax = plt.subplots(figsize=(5.2, 4))
    top = 0.1
    for run in runs:
        x, y = run.metrics.get("ftr"), run.metrics.get("oer_target")
        if x is None or y is None:
            continue
        top = max(top, 1.15 * y)
        ax.scatter([x], [y], s=50)
        ax.annotate(run.name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("FTR (FINISH with targets left, all mode)")
    ax.set_ylabel("OER-target (steps after all found / T)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.02, min(1.05, top))
    ax.set_title("stopping early vs. searching on")
    plots.append(("OER-target against FTR", _figure_uri(fig)))

    # 4. success by number of required targets
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for run in runs:
        by: Dict[int, List[Optional[float]]] = {}
        for rec in run.ok_records:
            if _mode(rec) not in MULTI_MODES:
                continue
            count = (rec.get("metrics") or {}).get("required_target_count")
            if count is None:
                continue
            by.setdefault(int(count), []).append((rec.get("metrics") or {}).get("success"))
        xs = sorted(by)
        ys = [_mean(by[x]) for x in xs]
        if xs:
            ax.plot(xs, [y if y is not None else np.nan for y in ys], marker="o", label=run.name)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("required targets R (many: target_count, all: all matches)")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("success by target count (many + all)")
    plots.append(("Success by target count", _figure_uri(fig)))
    return plots


def _mean(values) -> Optional[float]:
    vals = _finite(values)
    return sum(vals) / len(vals) if vals else None


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
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.4em; font-size: 13px; }
th, td { border: 1px solid #bbb; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #e8eef7; cursor: pointer; }
td.t, th.t { text-align: left; }
tr.warn td { background: #fff3cd; }
tr.err td { background: #f8d7da; }
.badge { padding: 1px 6px; border-radius: 4px; font-size: 12px; }
.ok { background: #d4edda; } .bad { background: #f8d7da; } .na { background: #eee; }
img.plot { max-width: 100%; border: 1px solid #ddd; margin: 0.4em 0 1em; }
"""


def _esc(value) -> str:
    return html.escape("" if value is None else str(value))


def _cell(value, numeric: bool = True, digits: int = 3, text: Optional[str] = None, cls: str = "") -> str:
    if numeric:
        v = "" if value is None else repr(float(value))
        shown = text if text is not None else _num(value, digits)
    else:
        v = "" if value is None else str(value)
        shown = text if text is not None else _esc(value)
    attr = f' class="{cls}"' if cls else ""
    return f'<td{attr} data-v="{_esc(v)}">{shown}</td>'


def _board_html(runs: Sequence[RunData]) -> str:
    head = [("run", "t"), ("status", "t"), ("official", "t"), ("benchmark", "t"), ("agent", "t"),
            ("config", "t"), ("ok", ""), ("errors", ""), ("expected", ""), ("SR", ""), ("F1", ""),
            ("SPL-multi", ""), ("precision", ""), ("recall", ""), ("PE", ""), ("TSE (MOS)", ""),
            ("RTSR", ""), ("FTR", ""), ("OER-target", ""), ("OER-space", ""), ("coverage", ""),
            ("SR MOS", ""),
            ("SR MOC", ""), ("many", ""), ("all", ""), ("notes", "t")]
    rows = []
    for run in runs:
        m, s = run.metrics, run.summary
        off = run.official
        badge = ('<span class="badge na">–</span>' if off is None else
                 '<span class="badge ok">official</span>' if off else
                 '<span class="badge bad">not official</span>')
        cells = [_cell(run.name, False, cls="t"), _cell(s.get("status"), False, cls="t"),
                 f'<td class="t" data-v="{off}">{badge}</td>', _cell(run.benchmark, False, cls="t"),
                 _cell(run.manifest_text("agent"), False, cls="t"),
                 _cell(run.manifest_text("config"), False, cls="t"),
                 _cell(s.get("ok_episode_count"), digits=0), _cell(s.get("error_episode_count"), digits=0),
                 _cell(s.get("expected_episode_count"), digits=0)]
        cells += [_cell(m.get(c), text=_esc(_with_interval(m.get(c), run.intervals.get(c))))
                  for c, _ in BOARD_FIELDS]
        cells += [_cell(m.get(k)) for k in DIAGNOSTICS]
        cells += [_cell(m.get("sr_mos")), _cell(m.get("sr_moc")),
                  _cell(m.get("num_episodes_many"), digits=0), _cell(m.get("num_episodes_all"), digits=0),
                  _cell("; ".join(run.notes), False, cls="t")]
        cls = "" if run.complete else (' class="err"' if s.get("error_episode_count") else ' class="warn"')
        rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    ths = "".join(f'<th class="{c}" data-type="{"str" if c else "num"}">{_esc(h)}</th>' for h, c in head)
    return (f'<table class="sortable" id="leaderboard"><thead><tr>{ths}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _episodes_html(runs: Sequence[RunData]) -> str:
    head = [("run", "run", "str"), ("episode", "episode_key", "str"), ("mode", "mode", "str"),
            ("R", "required", "num"), ("status", "status", "str"), ("end", "terminated_by", "str"),
            ("steps", "steps", "num")] + [(k, k, "num") for k in EPISODE_METRICS] + [
            ("claims (true/dup/false)", "claims", "num"), ("map", "map", "str")]
    rows = []
    for run in runs:
        for rec in run.records:
            ep = rec.get("episode") or {}
            m = rec.get("metrics") or {}
            kinds = [claim_kind(ev) for ev in rec.get("report_events") or []]
            status = rec.get("status")
            map_rel = run.maps.get(rec["episode_key"])
            link = f'<a href="{_esc(map_rel)}">map</a>' if map_rel else "–"
            end = rec.get("terminated_by") if status == "ok" else rec.get("error_type", "error")
            cells = [_cell(run.name, False, cls="t"), _cell(rec["episode_key"], False, cls="t"),
                     _cell(ep.get("target_mode"), False, cls="t"),
                     _cell(m.get("required_target_count", len(ep.get("target_object_ids") or [])), digits=0),
                     _cell(status, False, cls="t"), _cell(end, False, cls="t"),
                     _cell(rec.get("steps_taken"), digits=0)]
            cells += [_cell(m.get(k)) for k in EPISODE_METRICS]
            cells.append(_cell(len(kinds), text=f"{len(kinds)} ({kinds.count('true')}/"
                                                 f"{kinds.count('duplicate')}/{kinds.count('false')})"))
            cells.append(f'<td class="t" data-v="{_esc(map_rel or "")}">{link}</td>')
            cls = ' class="err"' if status != "ok" else ""
            rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    ths = "".join(f'<th class="{"t" if t == "str" else ""}" data-type="{t}" data-key="{k}">{_esc(h)}</th>'
                  for h, k, t in head)
    return (f'<table class="sortable" id="episodes"><thead><tr>{ths}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def render_html(runs: Sequence[RunData], plots: Sequence[Tuple[str, str]]) -> str:
    warn = [f"<li><b>{_esc(r.name)}</b>: {_esc('; '.join(r.notes) or r.summary.get('status'))}</li>"
            for r in runs if not r.complete]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>mosnav report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>Multi-object navigation: run report</h1>",
        f"<p>{len(runs)} run(s). SR, F1 and SPL-multi over many + all episodes (SPEC §5) "
        "from each run's summary.json, with 95 % bootstrap intervals over episodes. "
        "Click a column header to sort.</p>",
        "<h2>Leaderboard</h2>", _board_html(runs),
    ]
    if warn:
        parts.append("<p><b>Not complete runs</b> (numbers are over their ok episodes only):</p>"
                     f"<ul>{''.join(warn)}</ul>")
    parts.append("<h2>Plots</h2>")
    for title, uri in plots:
        parts.append(f"<h3>{_esc(title)}</h3><img class='plot' alt='{_esc(title)}' src='{uri}'>")
    parts += ["<h2>Episodes</h2>", _episodes_html(runs), f"<script>{_SORT_JS}</script>",
              "</body></html>"]
    return "\n".join(parts)


# ----------------------------------------------------------------------------- main


def _unique_names(paths: Sequence[str]) -> List[str]:
    names = [os.path.basename(os.path.normpath(p)) for p in paths]
    if len(set(names)) == len(names):
        return names
    return [os.path.normpath(p).replace(os.sep, "/").strip("/").replace("/", "_") for p in paths]


def collect_maps(run: RunData, out_dir: str) -> None:
    """Copy the run's ``maps/<episode>.png`` beside the page (``maps/<run>/``)."""
    src = os.path.join(run.path, "maps")
    if not os.path.isdir(src):
        return
    dst = os.path.join(out_dir, "maps", run.name)
    for rec in run.records:
        name = episode_file_stem(rec["episode_key"]) + ".png"
        if os.path.exists(os.path.join(src, name)):
            os.makedirs(dst, exist_ok=True)
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
            run.maps[rec["episode_key"]] = f"maps/{run.name}/{name}"


def write_report(run_dirs: Sequence[str], out_dir: str, *, resamples: int = 2000, seed: int = 0,
                 draw_maps: bool = False, config: Optional[str] = None,
                 overrides: Sequence[str] = (), progress: bool = True) -> List[RunData]:
    """Read the runs, write index.html, leaderboard.md and leaderboard.csv into ``out_dir``."""
    from tqdm import tqdm

    runs = []
    names = _unique_names(run_dirs)
    for path, name in tqdm(list(zip(run_dirs, names)), desc=PROG, unit="run",
                           disable=not progress, file=sys.stderr):
        runs.append(load_run(path, name, resamples=resamples, seed=seed))
    os.makedirs(out_dir, exist_ok=True)
    for run in runs:
        if draw_maps:
            from habitat_mosnav.evaluation.maps import render_run_maps

            render_run_maps(run.path, config=config, overrides=overrides, progress=progress)
        collect_maps(run, out_dir)
    write_csv(os.path.join(out_dir, "leaderboard.csv"), runs)
    with open(os.path.join(out_dir, "leaderboard.md"), "w", encoding="utf-8") as f:
        f.write(markdown_table(runs))
    page = render_html(runs, make_plots(runs))
    with open(os.path.join(out_dir, "index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    return runs


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=(
        "Compare mosnav-eval runs: DIR/index.html (plots, leaderboard, sortable episode table "
        "linking each episode's map), DIR/leaderboard.md and DIR/leaderboard.csv."))
    add_version_argument(p)
    p.add_argument("runs", nargs="+", metavar="RUN", help="mosnav-eval output directories")
    p.add_argument("--out", required=True, metavar="DIR", help="where the report goes")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="bootstrap resamples of the 95 %% intervals (default: 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.add_argument("--maps", action="store_true",
                   help="draw every episode's top-down map into RUN/maps first (loads the scenes; "
                        "runs made with --save-maps already have them)")
    add_map_source_arguments(p, when="with --maps: ")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.bootstrap < 1:
        print(f"{PROG}: error: --bootstrap must be >= 1, got {args.bootstrap}", file=sys.stderr)
        return 2
    try:
        runs = write_report(args.runs, args.out, resamples=args.bootstrap, seed=args.seed,
                            draw_maps=args.maps, config=args.config, overrides=args.overrides,
                            progress=args.progress)
    except (ReportError, res.ResultFileError, ValueError, OSError) as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(markdown_table(runs), end="")
    print(f"wrote {os.path.join(args.out, 'index.html')}, leaderboard.md, leaderboard.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
