"""``index.html``: one self-contained page (the plots embedded as PNG data URIs) with the
leaderboard, diagnostics, episode table and maps, the glossary; its style and sorting
script are the package files ``static/report.css`` and ``static/report.js``."""

from __future__ import annotations

from importlib import resources
import html
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple


from habitat_mosnav.api import SEQUENTIAL
from habitat_mosnav.evaluation.maps import (
    claim_kind,
    episode_file_stem,
    read_map_info,
)
from habitat_mosnav.metrics.measure_table import (
    INTEGER,
    METRICS,
    RATIO,
    aggregate_spec,
    glossary,
    goat_glossary,
    metric,
)
from habitat_mosnav.evaluation.report.data import (
    BOARD_FIELDS,
    DIAGNOSTICS,
    EPISODE_METRICS,
    EpisodeSets,
    GOAT_FIELDS,
    RunData,
    SHOWN_AGGREGATES,
    common_episode_metrics,
    episode_sets,
)
from habitat_mosnav.evaluation.report.leaderboard import (
    format_number,
    goal_type_rows,
    goat_runs,
    official_text,
    verification_text,
    with_interval,
)
from habitat_mosnav.evaluation.report.nulls import (
    NO_BENCHMARK,
    aggregate_reason,
    episode_reason,
    why_failed_reason,
)
from habitat_mosnav.evaluation.report.plots import WHY_FAIL, Plot, plot_data, run_colors


def static_text(name: str) -> str:
    """A file of the page shipped in the package (``report/static/``: its CSS and script)."""
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


#: Metric (or column) -> (label, one-line meaning, SPEC section): the page's glossary and
#: its header tooltips.
GLOSSARY: Dict[str, Tuple[str, str, str]] = {
    **glossary(),
    "episodes": ("episodes", "ok / error records of the expected episodes", "§8"),
    "benchmark": (
        "benchmark",
        "the benchmark setting the run was evaluated on (mosnav-eval --benchmark NAME): "
        "its episodes, step limit and success distance, name and version",
        "§8",
    ),
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


#: GOAT-Bench's aggregates (SPEC §11): the GOAT-Bench table's tooltips, and glossary entries
#: of a page whose runs have sequential episodes.
GOAT_GLOSSARY: Dict[str, Tuple[str, str, str]] = goat_glossary()


#: Header tooltips of the episode table (record fields), from the same registry lines.
_FIELD_TIPS = {m.field: (m.title, m.glossary, m.spec) for m in METRICS if m.field and m.glossary}


def _esc(value) -> str:
    return html.escape("" if value is None else str(value))


def _tip(key: str) -> str:
    """A header's tooltip: the glossary line and SPEC section."""
    entry = GLOSSARY.get(key) or GOAT_GLOSSARY.get(key) or _FIELD_TIPS.get(key)
    return f' title="{_esc(entry[1] + " (SPEC " + entry[2] + ")")}"' if entry else ""


def _cell(
    value,
    numeric: bool = True,
    digits: int = 3,
    text: Optional[str] = None,
    cls: str = "",
    fmt: str = RATIO,
    why: str = "",
) -> str:
    """A table cell; a null shown as "–" carries ``why`` (its reason) as its title."""
    if numeric:
        v = "" if value is None else repr(float(value))
        shown = text if text is not None else format_number(value, digits, fmt)
    else:
        v = "" if value is None else str(value)
        shown = text if text is not None else _esc(value)
    return f'<td{_attrs(cls, shown)} data-v="{_esc(v)}"{_title(shown, why)}>{shown}</td>'


#: How the page shows a value that does not exist (a null metric, no map, no label).
NULL = "–"
NO_MAP = "no map (mosnav-eval --save-maps, or mosnav-report --maps)"
NO_VIDEO = "no video (mosnav-eval --save-video)"
OLD_SUMMARY = "not in this run's summary.json (written by an older version: mosnav-aggregate)"


def _attrs(cls: str, shown: str) -> str:
    """A cell's class: ``cls``, plus ``null`` for a "–" (styled as a hover-for-why mark)."""
    classes = " ".join(c for c in (cls, "null" if shown == NULL else "") if c)
    return f' class="{classes}"' if classes else ""


def _title(shown: str, why: str) -> str:
    """The title of a "–" cell: why it has no value."""
    return f' title="{_esc(why or "no value")}"' if shown == NULL else ""


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


def _run_row(run: RunData, colors: Mapping[str, str], cells: str) -> str:
    """A table's row of ``run``: its name cell, then ``cells``; marked when it is incomplete."""
    return f"<tr{_row_class(run)}>{_run_cell(run, colors)}{cells}</tr>"


def _aggregate_cells(run: RunData, specs) -> str:
    """The run's cells of the aggregates ``specs``, each in its format ("–" says why)."""
    return "".join(
        _cell(run.metrics.get(a.name), fmt=a.format, why=aggregate_reason(run, a.name))
        for a in specs
    )


def _interval_cells(run: RunData, intervals: Mapping[str, Any], fields) -> List[str]:
    """The run's cells of the aggregates ``fields``, each with its 95 % interval."""
    m = run.metrics
    return [
        _cell(
            m.get(c),
            text=_esc(with_interval(m.get(c), intervals.get(c))),
            why=aggregate_reason(run, c),
        )
        for c, _ in fields
    ]


def _board_head() -> List[Tuple[str, str, str]]:
    return [(aggregate_spec(c).label, c, "") for c, _ in BOARD_FIELDS]


def _board_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """The main board: run, SR, F1, SPL-multi (95 % intervals), episodes, status."""
    head = (
        [("run", "", "t")]
        + _board_head()
        + [("episodes", "episodes", ""), ("benchmark", "benchmark", "t"), ("status", "status", "t")]
    )
    rows = []
    for run in runs:
        s = run.summary
        off = run.official
        badge = (
            ""
            if off is None
            else ' <span class="badge ok">official</span>'
            if off
            else ' <span class="badge bad">not official</span>'
        )
        cells = _interval_cells(run, run.intervals, BOARD_FIELDS)
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
            _cell(run.benchmark, False, cls="t", text=_esc(run.benchmark or NULL), why=NO_BENCHMARK)
        )
        cells.append(
            _cell(
                s.get("status"),
                False,
                cls="t",
                text=_esc(s.get("status")) + badge + _verified_badge(run),
            )
        )
        rows.append(_run_row(run, colors, "".join(cells)))
    return _table("leaderboard", head, rows)


def _goal_types_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """The main board per goal type: run, goal type, episodes, SR, F1, SPL-multi."""
    head = [("run", "", "t"), ("goal type", "", "t"), ("episodes", "episodes", "")]
    head += _board_head()
    rows = [
        _run_row(
            run,
            colors,
            _cell(row["goal_type"], False, cls="t")
            + _cell(row["num_episodes"], digits=0, fmt=INTEGER)
            + "".join(
                _cell(row[c], why=aggregate_reason(run, c, row, f"its {row['goal_type']} episodes"))
                for c, _ in BOARD_FIELDS
            ),
        )
        for run in runs
        for row in goal_type_rows(run)
    ]
    return "<h3>By goal type</h3>" + _table("by-goal-type", head, rows)


def _goat_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """GOAT-Bench's table (SPEC §11): run, sequential episodes, its aggregates over them with
    95 % intervals; "" when no run has sequential episodes."""
    shown = goat_runs(runs)
    if not shown:
        return ""
    head = [("run", "", "t"), ("sequential episodes", "", "")]
    head += [(aggregate_spec(c).label, c, "") for c, _ in GOAT_FIELDS]
    rows = [
        _run_row(
            run,
            colors,
            _cell(run.sequential_count, digits=0, fmt=INTEGER)
            + "".join(_interval_cells(run, run.goat_intervals, GOAT_FIELDS)),
        )
        for run in shown
    ]
    return (
        "<h3>GOAT-Bench (sequential episodes, SPEC §11)</h3><p>GOAT-Bench's metrics under its "
        "names: the mean over each run's sequential episodes (a per-type success over the "
        "episodes with a subtask of that type), with 95 % bootstrap intervals.</p>"
        + _table("goat-bench", head, rows)
    )


def _diagnostics_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    """The second tables: diagnostics, by task type / mode, and the run details."""
    diagnostics = [aggregate_spec(k) for k in DIAGNOSTICS]
    head = [("run", "", "t")] + [(a.label, a.name, "") for a in diagnostics]
    diag = [_run_row(r, colors, _aggregate_cells(r, diagnostics)) for r in runs]
    task = [a for a in SHOWN_AGGREGATES if a.table == "task"]
    head2 = (
        [("run", "", "t")]
        + [(a.label, "mos" if a.modes == ("many",) else "moc", "") for a in task]
        + [("many", "mos", ""), ("all", "moc", "")]
    )
    by_task = [
        _run_row(
            r,
            colors,
            _aggregate_cells(r, task)
            + _cell(r.metrics.get("num_episodes_many"), digits=0, why=OLD_SUMMARY)
            + _cell(r.metrics.get("num_episodes_all"), digits=0, why=OLD_SUMMARY),
        )
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
        _run_row(
            r,
            colors,
            _cell(r.benchmark, False, cls="t", text=_esc(r.benchmark or NULL), why=NO_BENCHMARK)
            + _cell(official_text(r), False, cls="t", why=NO_BENCHMARK)
            + _cell(r.manifest_text("agent"), False, cls="t wrap")
            + _cell(r.manifest_text("config"), False, cls="t wrap")
            + _cell("; ".join(r.notes), False, cls="t wrap"),
        )
        for r in runs
    ]
    return (
        "<h3>Diagnostics (many + all, SPEC §5)</h3>"
        + _table("diagnostics", head, diag)
        + _empty_columns_html(runs, diagnostics)
        + "<h3>By task type</h3>"
        + _table("by-task", head2, by_task)
        + "<h3>Runs</h3>"
        + _table("run-details", head3, details)
    )


def _empty_columns_html(runs: Sequence[RunData], columns) -> str:
    """A visible line per column that is "–" for every run, saying why (the cells' titles
    say it per run too): OER-space of runs evaluated without the space oracle."""
    lines = []
    for a in columns:
        if runs and all(r.metrics.get(a.name) is None for r in runs):
            by: Dict[str, List[str]] = {}
            for r in runs:
                by.setdefault(aggregate_reason(r, a.name), []).append(r.name)
            why = "; ".join(f"{reason} ({', '.join(names)})" for reason, names in by.items())
            lines.append(f"<li><b>{_esc(a.label)}</b> has no value in any run: {_esc(why)}</li>")
    return f'<ul class="missing" id="empty-columns">{"".join(lines)}</ul>' if lines else ""


def _verified_badge(run: RunData) -> str:
    text = verification_text(run)
    if not text:
        return ""
    cls = "ok" if text.startswith("verified") else "bad"
    return f' <span class="badge {cls}">{_esc(text)}</span>'


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
                _cell(
                    m[c],
                    text=_esc(with_interval(m[c], m[c + "_ci"])),
                    why="no ok many or all episode among the common episodes",
                )
                for c, _ in BOARD_FIELDS
            )
            + _cell(m["n"], digits=0)
            + "</tr>"
        )
    parts.append("<h3>On the common episodes</h3>" + _table("common-episodes", head, rows))
    return "".join(parts)


def _anchor(key: str) -> str:
    return "ep-" + episode_file_stem(key)


def _episodes_html(runs: Sequence[RunData], colors: Mapping[str, str]) -> str:
    diagnosed = any(run.diagnosis is not None for run in runs)
    head = (
        [
            ("run", "run", "str"),
            ("episode", "episode_key", "str"),
            ("mode", "mode", "str"),
            ("R", "required", "num"),
            ("status", "status", "str"),
            ("end", "terminated_by", "str"),
        ]
        + ([("why failed", "diagnosis", "str")] if diagnosed else [])
        + [
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
            link = f'<a href="{_esc(map_rel)}">map</a>' if map_rel else NULL
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
            ]
            if diagnosed:
                cells.append(_why_failed_cell(run, rec))
            cells += [
                _cell(rec.get("steps_taken"), digits=0),
            ]
            cells += [
                _cell(m.get(k), fmt=metric(k).format, why=episode_reason(run, rec, k))
                for k in EPISODE_METRICS
            ]
            cells.append(
                _cell(
                    len(kinds),
                    text=f"{len(kinds)} ({kinds.count('true')}/"
                    f"{kinds.count('duplicate')}/{kinds.count('false')})",
                )
            )
            cells.append(
                f'<td{_attrs("t", link)} data-v="{_esc(map_rel or "")}"'
                f"{_title(link, NO_MAP)}>{link}</td>"
            )
            cells.append(
                f'<td class="t" data-v="{_esc(key)}"><a href="#{_esc(_anchor(key))}">view</a></td>'
            )
            video = f'<a href="{_esc(video_rel)}">video</a>' if video_rel else NULL
            cells.append(
                f'<td{_attrs("t", video)} data-v="{_esc(video_rel or "")}"'
                f"{_title(video, NO_VIDEO)}>{video}</td>"
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


def _why_failed_cell(run: RunData, rec: Mapping[str, Any]) -> str:
    """The episode's label in the run's diagnosis ("–": none, or the run has no diagnosis)."""
    from habitat_mosnav.metrics.diagnosis import EPISODE_LABELS

    entry = ((run.diagnosis or {}).get("episodes") or {}).get(rec["episode_key"]) or {}
    label = entry.get("label")
    if not label:
        return _cell("", False, cls="t", text=NULL, why=why_failed_reason(run, rec, label))
    return (
        f'<td class="t" data-v="{_esc(label)}" title="{_esc(EPISODE_LABELS[label])}">'
        f"{_esc(label)}</td>"
    )


def _outcome(rec: Mapping[str, Any]) -> Tuple[str, str]:
    """(css class, text) of a record: SUCCESS / FAILURE / ERROR and how it ended."""
    if rec.get("status") != "ok":
        return "failure", f"ERROR ({rec.get('error_type', 'error')})"
    m = rec.get("metrics") or {}
    word = "SUCCESS" if m.get("success") == 1 else "FAILURE"
    if (rec.get("episode") or {}).get("target_mode") == SEQUENTIAL:
        word = "SUCCESS" if m.get("task_success") == 1 else "FAILURE"
        done = (rec.get("subtask_metrics") or {}).get("subtask_success")
        done = f"{sum(done)}/{len(done)}" if isinstance(done, list) else "?"
        return word.lower(), (
            f"{word}: {rec.get('terminated_by')} at step {rec.get('steps_taken')}, "
            f"subtasks {done} succeeded, partial success "
            f"{format_number(m.get('partial_success'), 2)}, composite SPL "
            f"{format_number(m.get('composite_spl'), 2)}"
        )
    return word.lower(), (
        f"{word}: {rec.get('terminated_by')} at step {rec.get('steps_taken')}, "
        f"found {m.get('targets_found')}/{m.get('required_target_count')}, "
        f"F1 {format_number(m.get('f1'), 2)}, SPL-multi {format_number(m.get('spl_multi'), 2)}"
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


def _glossary_html(goat: bool = False) -> str:
    entries = {**GLOSSARY, **(GOAT_GLOSSARY if goat else {})}
    items = "".join(
        f'<dt id="g-{_esc(k)}">{_esc(label)}</dt><dd>{_esc(text)} '
        f'<span class="spec">SPEC {_esc(section)}</span></dd>'
        for k, (label, text, section) in entries.items()
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


def _settings_html(runs: Sequence[RunData]) -> str:
    """The benchmark settings of the runs, in the page's header (a run without one: "no
    benchmark setting")."""
    by: Dict[str, List[str]] = {}
    for run in runs:
        by.setdefault(run.benchmark or "", []).append(run.name)
    items = [
        (f"<b>{_esc(name)}</b>" if name else "none (evaluated without --benchmark)")
        + f": {_esc(', '.join(names))}"
        for name, names in by.items()
    ]
    return f"<p id='benchmark-settings'>Benchmark setting: {'; '.join(items)}.</p>"


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
        f"<style>\n{static_text('report.css')}</style></head><body>",
        "<h1>Multi-object navigation: run report</h1>",
        "<nav><a href='#leaderboard-section'>Leaderboard</a><a href='#plots'>Plots</a>"
        "<a href='#episodes-section'>Episodes</a><a href='#episode-views'>Episode maps</a>"
        "<a href='#glossary'>Glossary</a></nav>",
        _settings_html(runs),
        f"<p>{len(runs)} run(s). SR, F1 and SPL-multi over many + all episodes (SPEC §5) "
        "from each run's summary.json, with 95 % bootstrap intervals over episodes. Each run "
        "keeps its colour in every table and plot. Hover a header for its meaning; click it to "
        "sort; a – is a value that does not exist: hover it for why.</p>",
        "<section id='leaderboard-section'><h2>Leaderboard</h2>",
        _board_html(runs, colors),
        _plots_html([p for p in plots if p.key == WHY_FAIL]),  # under the board
        _goal_types_html(runs, colors),
        _goat_html(runs, colors),
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
    parts += [
        "<section id='plots'><h2>Plots</h2>",
        _plots_html([p for p in plots if p.key != WHY_FAIL]),
        "</section>",
    ]
    parts += [
        "<section id='episodes-section'><h2>Episodes</h2>",
        _episodes_html(runs, colors),
        "</section>",
        "<section id='episode-views'><h2>Episode maps</h2>"
        "<p>Every run's map of each episode side by side (click a map for full size).</p>",
        _episode_views_html(runs, colors, out_dir),
        "</section>",
        _glossary_html(bool(goat_runs(runs))),
        f"<script type='application/json' id='plot-data'>{data}</script>",
        f"<script>\n{static_text('report.js')}</script>",
        "</body></html>",
    ]
    return "\n".join(parts)
