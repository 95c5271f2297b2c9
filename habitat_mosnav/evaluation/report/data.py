"""The report's data: a run as the report reads it (:class:`RunData`: summary.json checked
against the records, run.json, 95 % bootstrap intervals), the runs' episode sets and the
columns, all taken from the metric registry (:mod:`habitat_mosnav.metrics.measure_table`)."""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.api import MULTI_MODES, SEQUENTIAL, TARGET_MODES
from habitat_mosnav.evaluation.durable import read_json_object, ResultFileError
from habitat_mosnav.evaluation.rank_files import read_run
from habitat_mosnav.evaluation.records import records_digest, scalar_or_none
from habitat_mosnav.evaluation.replay_diagnosis import read_diagnosis
from habitat_mosnav.evaluation.summary import SUMMARY_FILE, summary_of_run
from habitat_mosnav.evaluation.verification import VERIFICATION_FIELD, effective_mark
from habitat_mosnav.metrics.measure_table import (
    AGGREGATES,
    GOAT_AGGREGATES,
    METRICS,
)


class ReportError(ValueError):
    """A run that cannot be read (one line naming the file and field)."""


#: The columns come from the metric registry (:mod:`habitat_mosnav.metrics.measure_table`):
#: its shown aggregates by table, its episode columns.
SHOWN_AGGREGATES = [a for a in AGGREGATES if a.shown]


#: The main board: (column, per-episode field) with bootstrap intervals.
BOARD_FIELDS = tuple((a.name, a.field) for a in SHOWN_AGGREGATES if a.table == "board")


DIAGNOSTICS = tuple(a.name for a in SHOWN_AGGREGATES if a.table == "diagnostic")


BY_MODE = tuple(a.name for a in SHOWN_AGGREGATES if a.table in ("task", "mode"))


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
    + tuple(a.name for a in SHOWN_AGGREGATES)
)


#: GOAT-Bench's table (SPEC §11): (column, per-episode field) of its shown aggregates over
#: the sequential episodes, with bootstrap intervals; only for runs that have such episodes.
GOAT_FIELDS = tuple((a.name, a.field) for a in GOAT_AGGREGATES if a.shown)


#: ``leaderboard_goat.csv``: a row per run with sequential episodes.
GOAT_CSV_COLUMNS = ("run", f"num_episodes_{SEQUENTIAL}") + tuple(
    c for name, _ in GOAT_FIELDS for c in (name, f"{name}_lo", f"{name}_hi")
)


#: Episode table metric columns (record fields): the main board's, then the others.
EPISODE_METRICS = tuple(
    dict.fromkeys([f for _, f in BOARD_FIELDS] + [m.field for m in METRICS if m.episode_column])
)


def bootstrap_interval(
    values: Sequence[Optional[float]], resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> Tuple[Optional[float], Optional[float]]:
    """Percentile bootstrap interval (``scipy.stats.bootstrap``, seeded) of the SPEC §5 mean
    of ``values`` (one per episode; None/NaN are kept in the draws and skipped by the mean,
    as the aggregate skips them). (None, None) when no value is finite."""
    from scipy.stats import DegenerateDataWarning, bootstrap

    v = np.array([x if x is not None and math.isfinite(x) else np.nan for x in values], float)
    if not np.isfinite(v).any():
        return None, None
    if v.size == 1:  # scipy needs two: every resample is this one value
        return float(v[0]), float(v[0])
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", DegenerateDataWarning)  # a resample with no finite value
        res = bootstrap(
            (v,),
            lambda x, axis: np.nansum(x, axis=axis) / np.isfinite(x).sum(axis=axis),
            n_resamples=int(resamples),
            batch=max(1, 4_000_000 // v.size),  # at most ~32 MB of draws at once
            vectorized=True,
            confidence_level=level,
            method="percentile",
            random_state=np.random.default_rng(seed),  # scipy 1.10 has no ``rng=``
        )
    ci = np.array(res.confidence_interval)
    if not np.isfinite(ci).all():  # NaN means of such resamples are skipped, as before
        ci = np.nanquantile(res.bootstrap_distribution, [(1 - level) / 2, (1 + level) / 2])
    return float(ci[0]), float(ci[1])


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
    #: RUN_DIR/diagnosis.json (``mosnav-replay --diagnose``), or None
    diagnosis: Optional[Dict[str, Any]] = None
    #: GOAT-Bench's aggregates' intervals over the sequential episodes (:data:`GOAT_FIELDS`)
    goat_intervals: Dict[str, Tuple[Optional[float], Optional[float]]] = field(default_factory=dict)

    @property
    def metrics(self) -> Dict[str, Any]:
        return self.summary.get("metrics") or {}

    @property
    def ok_records(self) -> List[Dict[str, Any]]:
        return [r for r in self.records if r.get("status") == "ok"]

    @property
    def sequential_count(self) -> int:
        """How many sequential episodes (SPEC §11) the summary counts (0 when none)."""
        count = self.metrics.get(f"num_episodes_{SEQUENTIAL}")
        return count if isinstance(count, int) and not isinstance(count, bool) else 0

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


def episode_values(records: Sequence[Mapping[str, Any]], fieldname: str) -> List[Optional[float]]:
    out = []
    for rec in records:
        value = (rec.get("metrics") or {}).get(fieldname)
        ok, value = scalar_or_none(value)
        out.append(value if ok and value is not None else None)
    return out


def record_mode(rec: Mapping[str, Any]) -> Optional[str]:
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
        read = read_run(path)
        computed = summary_of_run(read)
    except ResultFileError as exc:
        raise ReportError(str(exc)) from None
    records = [rec for _, rec in read.latest.values()]
    notes: List[str] = []
    summary_path = os.path.join(path, SUMMARY_FILE)
    if os.path.exists(summary_path):
        summary = read_json_object(summary_path)
        metrics = summary.get("metrics")
        if not isinstance(metrics, dict):
            raise ReportError(f"{summary_path}: field 'metrics' is missing or not an object")
        for key in ("status",) + COUNTS[1:4]:
            if key not in summary:
                raise ReportError(f"{summary_path}: field {key!r} is missing")
        fresh = computed["metrics"]
        stale = [
            k
            for k, _ in BOARD_FIELDS + GOAT_FIELDS + (("num_episodes", None),)
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
    mark, note = effective_mark(
        summary.get(VERIFICATION_FIELD), records_digest(read.latest), read.incomplete
    )
    if mark is not None:
        summary[VERIFICATION_FIELD] = mark
    if note:
        notes.append(note)
    manifest_path = os.path.join(path, "run.json")
    manifest = read_json_object(manifest_path) if os.path.exists(manifest_path) else {}
    run = RunData(
        path=path,
        name=name or os.path.basename(os.path.normpath(path)),
        summary=summary,
        records=records,
        manifest=manifest,
        notes=notes,
        diagnosis=read_diagnosis(path),
    )
    ok = run.ok_records
    multi = [r for r in ok if record_mode(r) in MULTI_MODES]
    for column, fieldname in BOARD_FIELDS:
        run.intervals[column] = bootstrap_interval(
            episode_values(multi, fieldname), resamples, seed
        )
    for mode in TARGET_MODES:
        subset = [r for r in ok if record_mode(r) == mode]
        if subset:
            run.mode_intervals[mode] = {
                column: bootstrap_interval(episode_values(subset, fieldname), resamples, seed)
                for column, fieldname in BOARD_FIELDS
            }
    sequential = [r for r in ok if record_mode(r) == SEQUENTIAL]
    if sequential:
        run.goat_intervals = {
            column: bootstrap_interval(episode_values(sequential, fieldname), resamples, seed)
            for column, fieldname in GOAT_FIELDS
        }
    return run


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


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
    m = aggregate([(record_mode(r), r.get("metrics") or {}) for r in recs])
    multi = [r for r in recs if record_mode(r) in MULTI_MODES]
    out: Dict[str, Any] = {"n": len(multi)}
    for column, fieldname in BOARD_FIELDS:
        out[column] = m.get(column)
        out[column + "_ci"] = bootstrap_interval(episode_values(multi, fieldname), resamples, seed)
    return out


def _run_name(path: str) -> str:
    """run.json's ``run_name`` (a habitat-baselines evaluation: ``ppo_mos_demo_ckpt.0``),
    else the directory's name."""
    manifest = os.path.join(path, "run.json")
    if os.path.isfile(manifest):
        try:
            name = read_json_object(manifest).get("run_name")
        except (ResultFileError, OSError):
            name = None
        # A plain file name only: it becomes the run's folder under maps/ and videos/.
        if isinstance(name, str) and re.fullmatch(r"[\w.-]+", name) and name.strip(".") != "":
            return name
    return os.path.basename(os.path.normpath(path))


def unique_names(paths: Sequence[str]) -> List[str]:
    names = [_run_name(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    return [os.path.normpath(p).replace(os.sep, "/").strip("/").replace("/", "_") for p in paths]
