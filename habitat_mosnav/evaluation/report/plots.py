"""The report's plots (matplotlib's ``Figure``, never pyplot): one colour per run in every
plot, what each plot shows per run (:class:`Plot`, ``plots.json``)."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from habitat_mosnav.api import MULTI_MODES, TARGET_MODES
from habitat_mosnav.metrics import finite_mean
from habitat_mosnav.evaluation.report.data import BOARD_FIELDS, RunData, episode_values, record_mode


def run_colors(runs: Sequence[RunData]) -> Dict[str, str]:
    """One colour per run (matplotlib's tab10, tab20 beyond ten runs), in the runs' order:
    the same in every plot and table of a page."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if len(runs) <= 10 else "tab20"]
    return {run.name: to_hex(cmap(i % cmap.N)) for i, run in enumerate(runs)}


#: Per run, besides its colour (two runs with equal numbers must not hide each other, and a
#: reader who does not tell the colours apart still tells the runs apart): a marker, a line
#: style and a bar hatch, in the runs' order.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "--", "oo")
#: How far apart (in points) the points of runs with equal values are drawn.
DODGE_POINTS = 7.0


def run_styles(runs: Sequence[RunData]) -> Dict[str, Dict[str, str]]:
    """Each run's marker, line style and hatch (in the runs' order, like its colour)."""
    return {
        run.name: {
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[i % len(LINESTYLES)],
            "hatch": HATCHES[i % len(HATCHES)],
        }
        for i, run in enumerate(runs)
    }


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
    _artists: List[Any] = field(default_factory=list, repr=False)

    def drawn(self, run: str, artist, n: int, panel: str = "") -> None:
        from matplotlib.colors import to_hex

        color = _artist_color(artist)
        self._artists.append(artist)
        self.series.append(
            {
                "run": run,
                "panel": panel,
                "color": to_hex(color),
                "n": int(n),
                **_artist_style(artist),
            }
        )

    def render(self, fig) -> None:
        """The PNG of ``fig``; then each series' style read again from its artist, so that
        positions are those of the finished figure (its final axis limits)."""
        self.uri = _figure_uri(fig)
        for entry, artist in zip(self.series, self._artists):
            entry.update(_artist_style(artist))
        self._artists = []

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


def _artist_style(artist) -> Dict[str, Any]:
    """What besides the colour tells a run apart, read back from the drawn artist: a bar's
    hatch, a histogram's line style, a line's marker and line style, a scatter point's
    marker (its path's vertices) and where it was drawn (display pixels, dodged)."""
    if hasattr(artist, "patches"):  # BarContainer
        centres = [p.get_x() + p.get_width() / 2 for p in artist.patches]
        return {"hatch": artist.patches[0].get_hatch() or "", "x": [round(c, 4) for c in centres]}
    if isinstance(artist, (list, tuple)):  # [a stairs StepPatch]
        first = artist[0].get_data().edges[0]
        return {"linestyle": str(artist[0].get_linestyle()), "x": [round(float(first), 4)]}
    if hasattr(artist, "get_offsets"):  # scatter
        path = artist.get_paths()[0]
        points = artist.get_offset_transform().transform(artist.get_offsets())
        return {
            "marker_vertices": len(path.vertices),
            "px": [round(float(v), 1) for v in points[0]],
        }
    return {
        "marker": str(artist.get_marker()),
        "linestyle": str(artist.get_linestyle()),
        "x": [round(float(x), 4) for x in artist.get_xdata()],
    }


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


def _run_legend(
    fig,
    runs: Sequence[RunData],
    colors: Mapping[str, str],
    plot: Plot,
    styles: Optional[Mapping[str, Mapping[str, str]]] = None,
    kind: str = "line",
) -> None:
    """Every run in the page's order, colour and style (``kind``: "bar" shows its hatch,
    "line" its marker and line style), outside the axes (right); a run with nothing (or
    not everything) in this plot says why."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    styles = styles or run_styles(runs)
    drawn = {s["run"] for s in plot.series}

    def handle(r: RunData, label: str):
        st = styles[r.name]
        if kind == "bar":
            return Patch(
                facecolor=colors[r.name], edgecolor="white", hatch=st["hatch"], label=label
            )
        return Line2D(
            [],
            [],
            color=colors[r.name],
            marker=st["marker"],
            linestyle=st["linestyle"],
            linewidth=1.6,
            label=label,
        )

    handles = [
        handle(
            r,
            r.name
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
    return [r for r in run.ok_records if record_mode(r) in MULTI_MODES]


def make_plots(runs: Sequence[RunData], colors: Optional[Mapping[str, str]] = None) -> List[Plot]:
    """The page's plots, each run in its colour of :func:`run_colors` and its slot of the
    runs' order whether or not it has a value there (then it is noted as missing)."""
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import offset_copy

    colors = dict(colors or run_colors(runs))
    styles = run_styles(runs)
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
                subset = [r for r in run.ok_records if record_mode(r) == mode]
                mean = finite_mean(episode_values(subset, fieldname))
                interval = run.mode_intervals.get(mode, {}).get(column, (None, None))
                if mean is None or (column == "f1" and mode not in MULTI_MODES):
                    continue
                xs.append(j + (i - (len(runs) - 1) / 2) * width)
                ys.append(mean)
                lo.append(mean - (interval[0] if interval[0] is not None else mean))
                hi.append((interval[1] if interval[1] is not None else mean) - mean)
            if xs:
                bars = ax.bar(
                    xs,
                    ys,
                    width=width,
                    yerr=[lo, hi],
                    capsize=3,
                    color=colors[run.name],
                    edgecolor="white",
                    hatch=styles[run.name]["hatch"],
                )
                ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)  # a 0 is a value too
                plot.drawn(run.name, bars, len(xs), column)
        ax.set_xticks(range(len(modes)))
        ax.set_xticklabels(modes)
        ax.set_ylim(0, 1.12)
        ax.set_title(f"{column} by mode (95 % bootstrap)")
    _note_missing(plot, runs, "no ok episode of any mode")
    _run_legend(fig, runs, colors, plot, styles, kind="bar")
    plot.render(fig)
    plots.append(plot)

    # 2. distributions of spl_multi and pe over episodes (many + all)
    plot = Plot("distributions", "Distributions of SPL-multi and PE (many + all episodes)")
    fig, axes = _subplots(1, 2, figsize=(11, 3.4))
    bins = np.linspace(0.0, 1.0, 21)
    lacks: Dict[str, List[str]] = {}
    for ax, fieldname in zip(axes, ("spl_multi", "pe")):
        for i, run in enumerate(runs):
            values = _finite(episode_values(_multi(run), fieldname))
            if values:
                # equal histograms stay apart: each run's line style, the earlier run's
                # line wider underneath, the steps drawn a little right of the previous
                # run's (counted on the same bins)
                counts, _ = np.histogram(values, bins=bins)
                dodge = (i - (len(runs) - 1) / 2) * (bins[1] - bins[0]) / (4 * max(1, len(runs)))
                patches = [
                    ax.stairs(
                        counts,
                        bins + dodge,
                        linewidth=1.4 + 1.2 * (len(runs) - 1 - i) / max(1, len(runs) - 1),
                        linestyle=styles[run.name]["linestyle"],
                        color=colors[run.name],
                    )
                ]
                plot.drawn(run.name, patches, len(values), fieldname)
            else:
                lacks.setdefault(run.name, []).append(fieldname)
        ax.set_title(f"{fieldname} per episode (many + all)")
        ax.set_xlabel(fieldname)
        ax.set_ylabel("episodes")
    for name, fields in lacks.items():
        plot.missing[name] = "no finite " + " or ".join(fields) + " value"
    _run_legend(fig, runs, colors, plot, styles)
    plot.render(fig)
    plots.append(plot)

    # 3. oer_target against ftr, one point per run
    plot = Plot("oer_ftr", "OER-target against FTR (one point per run)")
    fig, ax = _subplots(figsize=(7, 4))
    top = 0.1
    placed: Dict[tuple, int] = {}  # a point -> how many runs are drawn there already
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
        # runs with the same point: each further one drawn DODGE_POINTS to the right, its
        # name a line lower, in its own marker
        k = placed.get((round(x, 9), round(y, 9)), 0)
        placed[(round(x, 9), round(y, 9))] = k + 1
        where = offset_copy(ax.transData, fig=fig, x=k * DODGE_POINTS, y=0, units="points")
        points = ax.scatter(
            [x],
            [y],
            s=50,
            color=colors[run.name],
            marker=styles[run.name]["marker"],
            transform=where,
        )
        plot.drawn(run.name, points, 1)
        ax.annotate(
            run.name,
            (x, y),
            textcoords="offset points",
            xytext=(5 + k * DODGE_POINTS, 4 - 10 * k),
            fontsize=8,
        )
    ax.set_xlabel("FTR (FINISH with targets left, all mode)")
    ax.set_ylabel("OER-target (steps after all found / T)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.02, min(1.05, top))
    ax.set_title("stopping early vs. searching on")
    _run_legend(fig, runs, colors, plot, styles)
    plot.render(fig)
    plots.append(plot)

    # 4. success by number of required targets
    plot = Plot("by_count", "Success by the number of required targets (many + all)")
    fig, ax = _subplots(figsize=(7.5, 3.6))
    for i, run in enumerate(runs):
        by: Dict[int, List[Optional[float]]] = {}
        for rec in _multi(run):
            count = (rec.get("metrics") or {}).get("required_target_count")
            if count is not None:
                by.setdefault(int(count), []).append((rec.get("metrics") or {}).get("success"))
        xs = sorted(by)
        ys = [finite_mean(by[x]) for x in xs]
        if xs:
            # runs with equal rates stay apart: dodged along x, own marker and line style
            dodge = (i - (len(runs) - 1) / 2) * min(0.08, 0.5 / max(1, len(runs)))
            (line,) = ax.plot(
                [x + dodge for x in xs],
                [y if y is not None else np.nan for y in ys],
                marker=styles[run.name]["marker"],
                linestyle=styles[run.name]["linestyle"],
                color=colors[run.name],
            )
            plot.drawn(run.name, line, len(xs))
    _note_missing(plot, runs, "no ok many/all episode")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("required targets R (many: target_count, all: all matches)")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("success by target count (many + all)")
    _run_legend(fig, runs, colors, plot, styles)
    plot.render(fig)
    plots.append(plot)
    if any(run.diagnosis is not None for run in runs):
        plots.append(_why_fail_plot(runs, colors))
    return plots


#: The key of the "why episodes fail" plot, drawn under the leaderboard, not under Plots.
WHY_FAIL = "why_fail"


def _why_fail_plot(runs: Sequence[RunData], colors: Mapping[str, str]) -> Plot:
    """A panel per run with a diagnosis: its failed episodes by label
    (docs/SPEC.md §10; counts from RUN_DIR/diagnosis.json)."""
    from matplotlib.ticker import MaxNLocator

    from habitat_mosnav.metrics.diagnosis import EPISODE_LABELS

    plot = Plot(WHY_FAIL, "Why episodes fail (mosnav-replay --diagnose)")
    diagnosed = [run for run in runs if run.diagnosis is not None]
    fig, axes = _subplots(1, len(diagnosed), figsize=(2.6 + 3.2 * len(diagnosed), 2.8))
    labels = list(EPISODE_LABELS)
    for ax, run in zip(np.atleast_1d(axes), diagnosed):
        doc = run.diagnosis
        values = [doc["counts"]["episodes"][name] for name in labels]
        bars = ax.barh(
            range(len(labels)),
            values,
            color=colors[run.name],
            edgecolor="white",
            hatch=run_styles(runs)[run.name]["hatch"],
        )
        ax.bar_label(bars, fontsize=7, padding=2)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0, max(values + [1]) * 1.2)
        name = run.name if len(run.name) <= 24 else run.name[:23] + "…"
        title = f"{name}: {doc['failed_episode_count']} of {doc['episode_count']} failed"
        ax.set_title(title.replace("$", r"\$"), fontsize=9)
        ax.set_xlabel("failed episodes")
        plot.drawn(run.name, bars, sum(values), "episodes")
    _note_missing(plot, runs, "no diagnosis.json (run mosnav-replay --diagnose)")
    _run_legend(fig, runs, colors, plot, kind="bar")
    plot.render(fig)
    return plot


def _note_missing(plot: Plot, runs: Sequence[RunData], why: str) -> None:
    drawn = {s["run"] for s in plot.series}
    for run in runs:
        if run.name not in drawn:
            plot.missing.setdefault(run.name, why)


def plot_data(
    runs: Sequence[RunData], plots: Sequence[Plot], colors: Mapping[str, str]
) -> Dict[str, Any]:
    """What the page's plots show (``plots.json`` and the page's ``#plot-data``)."""
    return {
        "runs": [r.name for r in runs],
        "colors": dict(colors),
        "plots": [p.data() for p in plots],
    }
