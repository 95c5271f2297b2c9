"""The metric registry: one :class:`MeasureSpec` per metric of the task (SPEC §4, §5, §9).

A spec is the one description of a metric: its record field, its Habitat measure (name and
class), its formula, label, glossary line, SPEC section, value format and aggregates.
Everything else is derived from :data:`METRICS` or checked against it by a test:

- the record fields (:data:`~habitat_mosnav.metrics.episode.METRIC_FIELDS`);
- the measure classes of :mod:`habitat_mosnav.measures.measures` (one explicit class per
  measure, its docstring the spec's ``doc``: ``tests/test_measure_table.py``), their config
  dataclasses (:mod:`habitat_mosnav.config.default_structured_configs`), the measure ->
  field map the evaluation uses and the non-scalar measures habitat-baselines must not
  average;
- the measurement list of ``config/habitat/task/mosnav.yaml``, ``docs/METRICS.md`` and the
  measures row of docs/EVALUATION.md (written by ``python scripts/metric_files.py --write``, checked
  by ``tests/test_measure_table.py``, which also checks that docs/SPEC.md defines every
  field and names every measure);
- the SPEC §5 aggregates (:mod:`habitat_mosnav.metrics.aggregate`), the printed summary
  (:func:`habitat_mosnav.evaluation.summary.format_summary`) and every column of
  ``mosnav-report`` (CSV, Markdown, HTML, tooltips, glossary).

Adding a metric: its formula in :mod:`habitat_mosnav.metrics.episode` (a key of
``episode_metrics``), a spec here, its class in ``measures/measures.py``, then
``python scripts/metric_files.py --write``.
No habitat import.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from habitat_mosnav.api import MULTI_MODES, SEQUENTIAL, TARGET_MODES

__all__ = [
    "AGGREGATES",
    "AggregateSpec",
    "FORMATS",
    "GOAT_AGGREGATES",
    "GOAT_METRICS",
    "INTEGER",
    "MEASURES",
    "MEASURE_TO_FIELD",
    "METRES",
    "METRICS",
    "MeasureSpec",
    "NON_SCALAR_MEASURES",
    "NUMBER",
    "OTHER",
    "RATIO",
    "TABLES",
    "aggregate_spec",
    "derived_files",
    "format_value",
    "glossary",
    "goat_glossary",
    "metric",
]

#: Value formats: a count of steps or targets (shown ``27``), a ratio in [0, 1] (``0.875``),
#: a length (``12.40``), another number (a reward), not a number (a list, a dict).
INTEGER, RATIO, METRES, NUMBER, OTHER = "integer", "ratio", "metres", "number", "other"
FORMATS = (INTEGER, RATIO, METRES, NUMBER, OTHER)
#: Where an aggregate is shown, in this order (summary.json, the printed summary, the
#: report): the main board, the diagnostics, by task type (MOS = many, MOC = all), by mode,
#: GOAT-Bench's table of the ``sequential`` episodes (SPEC §11; :data:`GOAT_AGGREGATES`).
TABLES = ("board", "diagnostic", "task", "mode", "goat")


class Aggregate(NamedTuple):
    """One SPEC §5 aggregate of a metric: the mean of its finite, non-null episode values
    over the episodes of ``modes``."""

    name: str  #: key in summary.json's ``metrics``
    modes: Tuple[str, ...]  #: the target modes whose episodes it averages
    table: str  #: one of :data:`TABLES`
    shown: bool = True  #: a column of the printed summary and the report (False: summary.json only)
    label: str = ""  #: default: the metric's label, + " MOS"/" MOC" (task) or " <mode>" (mode)


def _over(
    name: str, modes: Sequence[str], table: str, shown: bool = True, label: str = ""
) -> Aggregate:
    return Aggregate(name, tuple(modes), table, shown, label)


def _by_task(prefix: str) -> Tuple[Aggregate, ...]:
    return (_over(f"{prefix}_mos", ("many",), "task"), _over(f"{prefix}_moc", ("all",), "task"))


def _by_mode(
    prefix: str, modes: Sequence[str], shown: bool = True, label: str = ""
) -> Tuple[Aggregate, ...]:
    return tuple(
        _over(f"{prefix}_{m}", (m,), "mode", shown, f"{label} {m}" if label else "") for m in modes
    )


class MeasureSpec(NamedTuple):
    name: Optional[
        str
    ]  #: measure uuid = config key under ``habitat.task.measurements`` (None: no measure)
    type: Optional[str]  #: the registered class (``type:`` in the config)
    field: Optional[str]  #: the record field (``episode_metrics`` key, SPEC §4) it reports
    doc: str  #: the formula (the class docstring and the config dataclass docstring)
    scalar: bool = True  #: False: not a number (habitat-baselines must not average it)
    label: str = ""  #: column label (default: the field)
    glossary: str = ""  #: one-line meaning on the report page (glossary, header tooltips)
    spec: str = "§4"  #: the SPEC section that defines it
    format: str = RATIO  #: one of :data:`FORMATS`
    aggregates: Tuple[Aggregate, ...] = ()  #: its SPEC §5 aggregates
    episode_column: bool = False  #: a column of the report's episode table

    @property
    def title(self) -> str:
        return self.label or self.field or self.name or ""


_M = MULTI_MODES

#: Every metric, in the order of ``config/habitat/task/mosnav.yaml``'s measurements (specs
#: without a measure are record fields only) and of the report's columns.
METRICS: Tuple[MeasureSpec, ...] = (
    MeasureSpec(
        "mos_report_events",
        "MosReportEvents",
        None,
        "The claim events of SPEC §3 (a list, not a scalar).",
        scalar=False,
        spec="§3",
        format=OTHER,
    ),
    MeasureSpec(None, None, "tp", "Claim signals with a new target.", format=INTEGER),
    MeasureSpec(None, None, "fp", "Claim signals without a new target.", format=INTEGER),
    MeasureSpec(None, None, "fn", "max(0, R - F).", format=INTEGER),
    MeasureSpec(
        "mos_targets_found",
        "MosTargetsFound",
        "targets_found",
        "F: the number of distinct targets claimed.",
        label="F",
        format=INTEGER,
    ),
    MeasureSpec(
        None, None, "required_target_count", "R of SPEC §1.", label="R", spec="§1", format=INTEGER
    ),
    MeasureSpec(
        "mos_success",
        "MosSuccess",
        "success",
        "The per-mode success of SPEC §4.",
        label="SR",
        spec="§4 success, §5",
        episode_column=True,
        glossary="success rate: share of episodes done (many: F >= target_count; all: every "
        "target claimed and FINISH sent)",
        aggregates=(_over("sr", _M, "board"),) + _by_task("sr") + _by_mode("sr", TARGET_MODES),
    ),
    MeasureSpec(
        "mos_precision",
        "MosPrecision",
        "precision",
        "tp / (tp + fp); 0 without claims.",
        episode_column=True,
        glossary="tp / (tp + fp): share of claims that found a new target",
        aggregates=(_over("precision", _M, "diagnostic"),) + _by_mode("precision", _M, shown=False),
    ),
    MeasureSpec(
        "mos_recall",
        "MosRecall",
        "recall",
        "min(1, F / R).",
        episode_column=True,
        glossary="min(1, F / R): share of the required targets claimed",
        aggregates=(_over("recall", _M, "diagnostic"),) + _by_mode("recall", _M, shown=False),
    ),
    MeasureSpec(
        "mos_f1",
        "MosF1",
        "f1",
        "2PR / (P + R); 0 when P + R = 0.",
        label="F1",
        spec="§4, §5",
        episode_column=True,
        glossary="harmonic mean of claim precision and recall",
        aggregates=(_over("f1", _M, "board"),) + _by_task("f1") + _by_mode("f1", _M),
    ),
    MeasureSpec(
        "trajectory_length",
        "MosTrajectoryLength",
        "trajectory_length",
        "p: the path length walked so far (m).",
        label="p",
        format=METRES,
    ),
    MeasureSpec(
        "optimal_subset_distance",
        "OptimalSubsetDistance",
        "optimal_subset_distance",
        "l of SPEC §4 (m).",
        label="l",
        format=METRES,
    ),
    MeasureSpec(
        "agent_subset_distance",
        "AgentSubsetDistance",
        "agent_subset_distance",
        "a of SPEC §4 (m); NaN without claims.",
        label="a",
        format=METRES,
    ),
    MeasureSpec(
        "spl_multi",
        "SPLMulti",
        "spl_multi",
        "success * l / max(p, l).",
        label="SPL-multi",
        spec="§4, §5",
        episode_column=True,
        glossary="success x l / max(p, l): success weighted by the shortest possible "
        "path l over the path walked p",
        aggregates=(_over("spl_multi", _M, "board"), _over("spl", _M, "board", shown=False))
        + _by_task("spl_multi")
        + _by_mode("spl", ("single", "any"), label="SPL"),
    ),
    MeasureSpec(None, None, "spl", "spl_multi (an alias)."),
    MeasureSpec(
        None,
        None,
        "raw_spl",
        "l / max(p, l), success ignored.",
        aggregates=(_over("raw_spl", _M, "diagnostic", shown=False),),
    ),
    MeasureSpec(
        "path_efficiency",
        "PathEfficiency",
        "pe",
        "PE = a / max(p, a); NaN without claims.",
        label="PE",
        episode_column=True,
        glossary="path efficiency to the targets it claimed: a / max(p, a)",
        aggregates=(_over("pe", _M, "diagnostic"),),
    ),
    MeasureSpec(
        "target_selection_efficiency",
        "TargetSelectionEfficiency",
        "tse",
        "TSE = l / a; NaN without claims or with F < R.",
        label="TSE",
        spec="§4, §5",
        glossary="target-set efficiency over many episodes: l / a, the best subset's "
        "distance over that of the targets claimed (when it claimed enough)",
        # SPEC §5: over many only (in `all` the subset is fixed and tse is 1)
        aggregates=(
            _over("tse", ("many",), "diagnostic", shown=False),
            _over("tse_mos", ("many",), "diagnostic", label="TSE (MOS)"),
        ),
    ),
    MeasureSpec(
        "rtsr",
        "RepeatedTargetSelectionRate",
        "rtsr",
        "(m - |set(S)|) / m over the claims that had near targets; 0 when m = 0.",
        label="RTSR",
        glossary="repeated-target share: claims that resolved to an already-claimed target",
        aggregates=(_over("rtsr", _M, "diagnostic"),),
    ),
    MeasureSpec(
        "false_termination",
        "FalseTermination",
        "false_termination",
        "MOC only: 1 for FINISH with F < R, 0 for FINISH with F = R; NaN without FINISH.",
        label="FTR",
        spec="§4, §5",
        glossary="false-termination rate (all): FINISH sent with required targets left",
        aggregates=(
            _over("ftr", _M, "diagnostic"),
            _over("false_termination_rate", _M, "diagnostic", shown=False),
        ),
    ),
    MeasureSpec(
        None,
        None,
        "finish_with_unexplored_space",
        "all only: 1 when FINISH came before the space oracle saw the space exhausted.",
        aggregates=(_over("finish_with_unexplored_space", _M, "diagnostic", shown=False),),
    ),
    MeasureSpec(
        "oer_target",
        "OverExplorationTarget",
        "oer_target",
        "(finish step - all-found step) / T.",
        label="OER-target",
        glossary="steps between finding all required targets and FINISH (or T), over T: "
        "searching on after the task is done",
        aggregates=(_over("oer_target", _M, "diagnostic"),),
    ),
    MeasureSpec(
        "oer_space",
        "OverExplorationSpace",
        "oer_space",
        "(finish step - space-exhausted step) / T.",
        label="OER-space",
        glossary="steps after the space oracle saw the space exhausted, over T",
        aggregates=(_over("oer_space", _M, "diagnostic"),),
    ),
    MeasureSpec(
        "space_coverage",
        "SpaceCoverage",
        "coverage",
        "The fraction of the space oracle's samples explored.",
        glossary="share of the space oracle's sample points explored at the end",
        aggregates=(_over("coverage", _M, "diagnostic"),),
    ),
    MeasureSpec(
        "time_to_first_target",
        "TimeToFirstTarget",
        "time_to_first_target",
        "The step of the first true claim; NaN without one.",
        label="TTFT",
        spec="§4 (addition)",
        format=INTEGER,
        episode_column=True,
        glossary="time to the first target: the step of the first claim that found a "
        "target (search speed; episodes without one are left out)",
        aggregates=(_over("time_to_first_target", _M, "diagnostic"),),
    ),
    MeasureSpec(
        "distance_to_nearest_unclaimed_target",
        "DistanceToNearestUnclaimedTarget",
        None,
        "Geodesic distance to the nearest view point of a not yet claimed target "
        "(0 when all are claimed).",
        format=METRES,
        spec="§9",
    ),
    MeasureSpec(
        "mos_reward",
        "MosReward",
        None,
        "progress_weight * (decrease of the distance to the nearest unclaimed target) "
        "+ true_claim_reward per true claim - false_claim_penalty per false claim "
        "+ success_reward once + slack_reward per step. In a sequential episode (SPEC §11) "
        "the distance is to the current subtask's view points (no progress term on the step "
        "a subtask ends), each SUBTASK_STOP is a claim (true when its subtask succeeds) and "
        "success is task_success.",
        spec="§9, §11",
        format=NUMBER,
    ),
    MeasureSpec(
        "mos_aggregates",
        "MosAggregates",
        None,
        "The SPEC §5 aggregates (tse over many as tse_mos, ...) of the episodes this "
        "environment has run, current one included, as a dict whose per-episode mean "
        "is that aggregate: episode k reports k * A_k - (k - 1) * A_(k-1), so "
        "habitat.Benchmark's mean over N episodes is A_N, never NaN (an aggregate "
        "without any value is absent). Not a per-episode value: records and "
        "habitat-baselines leave it out.",
        scalar=False,
        spec="§5, §9 (addition)",
        format=OTHER,
    ),
)


def _goat(field: str, doc: str, label: str, glossary: str, shown: bool = True) -> MeasureSpec:
    """A GOAT-Bench scalar averaged over the sequential episodes under its own name."""
    return MeasureSpec(
        None,
        None,
        field,
        doc,
        label=label,
        glossary=glossary,
        spec="§11",
        aggregates=(_over(field, (SEQUENTIAL,), "goat", shown),),
    )


#: GOAT-Bench's metrics of a ``sequential`` episode (SPEC §11) under GOAT-Bench's names,
#: computed by :func:`habitat_mosnav.metrics.goat.goat_metrics`. Kept apart from
#: :data:`METRICS`: they are fields of sequential records only (``metrics`` holds the
#: scalars, ``subtask_metrics`` the lists), not of every record (``METRIC_FIELDS``), and
#: their aggregates (:data:`GOAT_AGGREGATES`) average sequential episodes only, so a run
#: without them keeps its tables. A per-type success is null in an episode without a
#: subtask of that type, so its mean is over the episodes that have one.
GOAT_METRICS: Tuple[MeasureSpec, ...] = (
    _goat(
        "task_success",
        "composite_success, and the episode ended by action 0 or after the last subtask's stop.",
        "task success",
        "GOAT-Bench: every subtask succeeded and the agent ended the episode (not the step budget)",
    ),
    _goat(
        "composite_success",
        "1 when every subtask succeeded (s_i = 1 for all i).",
        "composite success",
        "GOAT-Bench: every subtask succeeded, however the episode ended",
    ),
    _goat(
        "partial_success",
        "sum(s_i) / n: the share of subtasks that succeeded.",
        "partial success",
        "GOAT-Bench: share of an episode's subtasks that succeeded (SUBTASK_STOP near the goal)",
    ),
    _goat(
        "object_success",
        "Mean s_i over the object subtasks; null without one.",
        "object success",
        "GOAT-Bench: success of the subtasks whose goal is a category name",
    ),
    _goat(
        "description_success",
        "Mean s_i over the description subtasks; null without one.",
        "description success",
        "GOAT-Bench: success of the subtasks whose goal is a language description",
    ),
    _goat(
        "image_success",
        "Mean s_i over the image subtasks; null without one.",
        "image success",
        "GOAT-Bench: success of the subtasks whose goal is a picture of the instance",
    ),
    _goat(
        "composite_spl",
        "Mean of spl_by_subtask.",
        "composite SPL",
        "GOAT-Bench: mean over subtasks of s_i x d_i / max(d_i, p_i), the path from where "
        "the subtask began",
    ),
    MeasureSpec(
        None,
        None,
        "subtask_success",
        "[s_1, ..., s_n]: 1 when subtask i was stopped (SUBTASK_STOP) below the success "
        "distance, 0 otherwise or when never stopped (in the record's subtask_metrics).",
        scalar=False,
        spec="§11",
        format=OTHER,
    ),
    MeasureSpec(
        None,
        None,
        "spl_by_subtask",
        "[s_i * d_i / max(d_i, p_i)]: d_i the geodesic to subtask i's view points when it "
        "began, p_i the path walked until its stop; 0 when d_i is unknown or infinite, 1 for "
        "a success with d_i = p_i = 0 (in the record's subtask_metrics).",
        scalar=False,
        spec="§11",
        format=OTHER,
    ),
)

#: The specs that are Habitat measures, in the order of the task YAML.
MEASURES: Tuple[MeasureSpec, ...] = tuple(m for m in METRICS if m.name)
#: measure name -> SPEC §4 field, for the measures that report one.
MEASURE_TO_FIELD: Dict[str, str] = {m.name: m.field for m in MEASURES if m.field}
#: Measures whose value is not a number (habitat-baselines must not average them).
NON_SCALAR_MEASURES: Tuple[str, ...] = tuple(m.name for m in MEASURES if not m.scalar)

_BY_FIELD: Dict[str, MeasureSpec] = {m.field: m for m in METRICS + GOAT_METRICS if m.field}


def metric(field: str) -> MeasureSpec:
    """The spec of a record field."""
    return _BY_FIELD[field]


class AggregateSpec(NamedTuple):
    """An aggregate with its metric's label, format and glossary resolved."""

    name: str
    field: str
    modes: Tuple[str, ...]
    table: str
    shown: bool
    label: str
    format: str


def _aggregate_label(m: MeasureSpec, a: Aggregate) -> str:
    if a.label:
        return a.label
    if a.table == "task":
        return f"{m.title} {'MOS' if a.modes == ('many',) else 'MOC'}"
    if a.table == "mode":
        return f"{m.title} {a.modes[0]}"
    return m.title


def _aggregates(specs: Sequence[MeasureSpec]) -> Tuple[AggregateSpec, ...]:
    out = []
    for index, m in enumerate(specs):
        for a in m.aggregates:
            spec = AggregateSpec(
                a.name, m.field, a.modes, a.table, a.shown, _aggregate_label(m, a), m.format
            )
            # by table, then (task / mode) by mode, then in registry order
            mode_rank = TARGET_MODES.index(a.modes[0]) if a.table in ("task", "mode") else 0
            out.append(((TABLES.index(a.table), mode_rank, index), spec))
    return tuple(spec for _, spec in sorted(out, key=lambda item: item[0]))


#: Every SPEC §5 aggregate, in the order of summary.json and of every table that shows them.
AGGREGATES: Tuple[AggregateSpec, ...] = _aggregates(METRICS)
#: GOAT-Bench's aggregates (SPEC §11): the mean of each scalar of :data:`GOAT_METRICS` over
#: the sequential episodes, under its name, after :data:`AGGREGATES` in summary.json.
GOAT_AGGREGATES: Tuple[AggregateSpec, ...] = _aggregates(GOAT_METRICS)
_AGGREGATE_BY_NAME = {a.name: a for a in AGGREGATES + GOAT_AGGREGATES}


def aggregate_spec(name: str) -> AggregateSpec:
    return _AGGREGATE_BY_NAME[name]


def glossary() -> Dict[str, Tuple[str, str, str]]:
    """key -> (label, meaning, SPEC section) of every metric with a glossary line, under
    its first shown board/diagnostic aggregate's name (``sr``, ``tse_mos``), else its field."""
    out: Dict[str, Tuple[str, str, str]] = {}
    for m in METRICS:
        if not m.glossary:
            continue
        first = next(
            (
                a
                for a in AGGREGATES
                if a.field == m.field and a.shown and a.table in ("board", "diagnostic")
            ),
            None,
        )
        key, label = (first.name, first.label) if first else (m.field, m.title)
        out[key] = (label, m.glossary, m.spec)
    return out


def goat_glossary() -> Dict[str, Tuple[str, str, str]]:
    """aggregate name -> (label, meaning, SPEC section) of GOAT-Bench's shown aggregates
    (the report's GOAT-Bench table, shown only for runs with sequential episodes)."""
    lines = {m.field: m for m in GOAT_METRICS}
    return {
        a.name: (a.label, lines[a.field].glossary, lines[a.field].spec)
        for a in GOAT_AGGREGATES
        if a.shown
    }


def format_value(value, fmt: str = RATIO, places: int = 3) -> str:
    """A metric value as shown in tables: "–" for null; an integer-format value as an
    integer (``27``) or, when it is a mean that is not whole, with one decimal (``27.5``);
    a ratio with ``places`` decimals; a length with 2."""
    if value is None:
        return "–"
    value = float(value)
    if fmt == INTEGER:
        return str(int(value)) if value.is_integer() else f"{value:.1f}"
    if fmt == METRES:
        return f"{value:.2f}"
    return f"{value:.{places}f}"


# ----------------------------------------------------------------------------- derived files


TASK_YAML = os.path.join("habitat_mosnav", "config", "habitat", "task", "mosnav.yaml")
METRICS_DOC = os.path.join("docs", "METRICS.md")
#: the doc whose registry table has the ``| measures |`` row (docs/EVALUATION.md §7)
README = os.path.join("docs", "EVALUATION.md")


def task_yaml_text(text: str) -> str:
    """``mosnav.yaml`` with its measurements list set to :data:`MEASURES`."""
    block = "".join(f"    - {m.name}\n" for m in MEASURES)
    new, n = re.subn(r"(  - measurements:\n)(?:    - \w+\n)+", lambda mt: mt.group(1) + block, text)
    if n != 1:
        raise ValueError(f"{TASK_YAML}: no '  - measurements:' list")
    return new


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def metrics_doc() -> str:
    """docs/METRICS.md: the registry as tables."""
    lines = [
        "# Metrics",
        "",
        "<!-- Written by `python scripts/metric_files.py --write` from",
        "     habitat_mosnav/metrics/measure_table.py; tests/test_measure_table.py checks it. -->",
        "",
        "Every metric of a record (`metrics` of an episode's JSONL record, SPEC §4), its",
        "Habitat measure, its aggregates in `summary.json` (SPEC §5: the mean of the finite,",
        "non-null values over the episodes of the modes named) and its label in the printed",
        "summary and in `mosnav-report`. The one source is `habitat_mosnav/metrics/measure_table.py`.",
        "",
        "| field | measure | label | format | formula | aggregates | SPEC |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in METRICS:
        aggs = ", ".join(
            f"`{a.name}` ({'+'.join(a.modes)}{'' if a.shown else ', not shown'})"
            for a in AGGREGATES
            if m.field and a.field == m.field
        )
        measure = f"`{m.name}` (`{m.type}`)" if m.name else "–"
        lines.append(
            f"| {'`' + m.field + '`' if m.field else '–'} | {measure} | {_md(m.title)} | "
            f"{m.format} | {_md(m.doc)} | {aggs or '–'} | {m.spec} |"
        )
    lines += [
        "",
        "## GOAT-Bench's metrics (`sequential` episodes, SPEC §11)",
        "",
        "A `sequential` episode's record holds GOAT-Bench's scalars under GOAT-Bench's names in",
        "`metrics` (with `success` = `task_success` and `spl` = `composite_spl`) and the lists",
        "in `subtask_metrics`. Notation: n subtasks, s_i the success of subtask i (0 when never",
        "stopped), d_i the geodesic to its view points when it began, p_i the path walked from",
        "then until its SUBTASK_STOP. Each aggregate is the mean over the `sequential` episodes",
        "(a per-type success over the episodes that have a subtask of that type); the printed",
        "summary and the report show them only for runs with `sequential` episodes.",
        "",
        "| field | label | format | formula | aggregate | SPEC |",
        "|---|---|---|---|---|---|",
    ]
    for m in GOAT_METRICS:
        aggs = ", ".join(f"`{a.name}`" for a in GOAT_AGGREGATES if a.field == m.field)
        lines.append(
            f"| `{m.field}` | {_md(m.title)} | {m.format} | {_md(m.doc)} | {aggs or '–'} | "
            f"{m.spec} |"
        )
    lines += [
        "",
        "Columns of the report (`leaderboard.csv`, `leaderboard.md`, `index.html`):",
        "",
        "| table | aggregate | label | format |",
        "|---|---|---|---|",
    ]
    for a in AGGREGATES + GOAT_AGGREGATES:
        if a.shown:
            lines.append(f"| {a.table} | `{a.name}` | {_md(a.label)} | {a.format} |")
    lines += [
        "",
        "The `goat` table (`leaderboard_goat.csv`, a table of `leaderboard.md` and `index.html`)",
        "is written only when a run has `sequential` episodes.",
    ]
    return "\n".join(lines) + "\n"


_README_ROW = re.compile(r"^\| measures \| (.*) \|$", re.M)
_README_ITEM = re.compile(r"`(\w+)`( \([^)]*\))?")


def readme_measures(text: str) -> List[str]:
    """The measure names of the ``| measures |`` row (docs/EVALUATION.md's registry table)."""
    row = _README_ROW.search(text)
    return [] if row is None else [name for name, _ in _README_ITEM.findall(row.group(1))]


def readme_text(text: str) -> str:
    """docs/EVALUATION.md with its ``| measures |`` row listing :data:`MEASURES` (a note after a
    name, ``(habitat.Benchmark)``, is kept)."""
    row = _README_ROW.search(text)
    if row is None:
        raise ValueError(f"{README}: no '| measures |' row")
    notes = dict(_README_ITEM.findall(row.group(1)))
    items = ", ".join(f"`{m.name}`{notes.get(m.name, '')}" for m in MEASURES)
    return text[: row.start()] + f"| measures | {items} |" + text[row.end() :]


def derived_files(root: str) -> Dict[str, Tuple[str, str]]:
    """path relative to ``root`` (a checkout) -> (text now, text the registry gives) of every
    file derived from the registry (``scripts/metric_files.py`` writes them)."""
    out = {}
    for rel, make in (
        (TASK_YAML, task_yaml_text),
        (README, readme_text),
        (METRICS_DOC, lambda _text: metrics_doc()),
    ):
        path = os.path.join(root, rel)
        now = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                now = f.read()
        out[rel] = (now, make(now))
    return out
