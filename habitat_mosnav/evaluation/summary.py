"""A run's ``<out>/summary.json`` (SPEC §8): the aggregate of each episode's last record,
the run's status and benchmark verdict, writing it, and its plain-text table."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from habitat_mosnav.api import EPISODE_MODES, SEQUENTIAL
from habitat_mosnav.evaluation.durable import ResultFileError, atomic_write_json, write_failed
from habitat_mosnav.evaluation.manifest import keys_digest
from habitat_mosnav.evaluation.rank_files import RANK_DIR_RE, RunRead, has_results, read_run
from habitat_mosnav.evaluation.records import SCHEMA_VERSION, check_metrics
from habitat_mosnav.metrics import aggregate
from habitat_mosnav.metrics.measure_table import AGGREGATES, GOAT_AGGREGATES, format_value
from habitat_mosnav.safety import safe_line
from habitat_mosnav.versions import software_versions

SUMMARY_FILE = "summary.json"


def remove_stale_summary(out_dir: str) -> None:
    """A fresh run in a directory without results: an old ``summary.json`` (which may say
    "complete") is removed, so it never speaks for this run."""
    path = os.path.join(out_dir, SUMMARY_FILE)
    if not os.path.lexists(path) or not os.path.isdir(out_dir):
        return
    if any(
        RANK_DIR_RE.match(n) and has_results(os.path.join(out_dir, n)) for n in os.listdir(out_dir)
    ):
        return
    try:
        os.unlink(path)
    except OSError as exc:
        raise write_failed(path, exc, "remove the stale") from None


def summarize(
    out_dir: str,
    expected_episode_count: Optional[int] = None,
    expected_keys: Optional[Iterable[str]] = None,
) -> Dict[str, Any]:
    """summary.json contents for all rank directories of ``out_dir`` (SPEC §8).

    A repeated key keeps its last record (ranks in order, lines in order);
    ``expected_episode_count`` defaults to the number of ``expected_keys`` when given,
    else to the sum of the ranks' done.json counts. With ``expected_keys`` only records
    of those keys count. Status: incomplete when a rank has no done.json, says
    incomplete, left a partial line or fewer unique records than expected; else
    completed_with_errors / complete. A metric that is not a number is an error naming
    the file and line.
    """
    if expected_keys is not None:
        expected_keys = set(expected_keys)
        if expected_episode_count is None:
            expected_episode_count = len(expected_keys)
    return summary_of_run(read_run(out_dir, expected_keys), expected_episode_count)


def summary_of_run(read: RunRead, expected_episode_count: Optional[int] = None) -> Dict[str, Any]:
    """:func:`summarize` of what :func:`read_run` returned (a caller that also needs the
    records reads the run once)."""
    latest, dones, manifest = read.latest, read.dones, read.manifest
    incomplete, warnings = read.incomplete, list(read.warnings)
    selection = (manifest or {}).get("selection")
    selection = selection if isinstance(selection, Mapping) else {}
    if expected_episode_count is None and isinstance(selection.get("episode_count"), int):
        expected_episode_count = selection["episode_count"]  # the run's, not the ranks' word
    if expected_episode_count is None and all(d is not None for d in dones):
        expected_episode_count = sum(d["expected_count"] for d in dones)
    digest = selection.get("keys_sha256")
    if isinstance(digest, str) and len(latest) >= (expected_episode_count or 0):
        if keys_digest(latest) != digest:  # as many records, but not the selected episodes
            incomplete = True
            warnings.append(
                "the recorded episodes are not the run's selection (run.json "
                "selection.keys_sha256): episodes are missing"
            )
    ok, errors = [], 0
    by_goal_type: Dict[str, list] = {}
    for where, rec in latest.values():
        if rec["status"] == "error":
            errors += 1
            continue
        episode = rec.get("episode")
        mode = episode.get("target_mode") if isinstance(episode, dict) else None
        if mode not in EPISODE_MODES:
            raise ResultFileError(f"{where}: field 'episode.target_mode' is {mode!r}")
        # a sequential episode's goal type is per subtask (GOAT-Bench's per-type success)
        goal_type = episode.get("goal_type") if mode != SEQUENTIAL else None
        if mode != SEQUENTIAL and (not isinstance(goal_type, str) or not goal_type):
            raise ResultFileError(f"{where}: field 'episode.goal_type' is {goal_type!r}")
        metrics = rec.get("metrics")
        if not isinstance(metrics, dict):
            raise ResultFileError(f"{where}: field 'metrics' is missing or not an object")
        check_metrics(metrics, where)
        ok.append((mode, metrics))
        if goal_type is not None:
            by_goal_type.setdefault(goal_type, []).append((mode, metrics))

    if expected_episode_count is not None and len(latest) < expected_episode_count:
        incomplete = True
    status = "incomplete" if incomplete else ("completed_with_errors" if errors else "complete")
    summary = {
        "schema_version": SCHEMA_VERSION,
        "status": status,
        "expected_episode_count": expected_episode_count,
        "record_count": read.record_count,
        "unique_record_count": len(latest),
        "ok_episode_count": len(ok),
        "error_episode_count": errors,
        "metrics": aggregate(ok),
        # the same SPEC §5 aggregates over each goal type's ok episodes (GOAT's per-modality
        # view; sequential episodes, of several types, have GOAT's per-type successes instead)
        "by_goal_type": {gt: aggregate(pairs) for gt, pairs in sorted(by_goal_type.items())},
    }
    if warnings:
        summary["warnings"] = warnings
    benchmark = benchmark_summary([rec for _, rec in latest.values()], status)
    if benchmark is not None:
        summary["benchmark"] = benchmark
    return summary


def benchmark_summary(
    records: Sequence[Mapping[str, Any]], status: str
) -> Optional[Dict[str, Any]]:
    """The summary's ``benchmark`` field: which setting the records ran and whether the run
    is a complete official (reportable) run of it, with the reasons when it is not.
    None when no record names a setting."""
    from habitat_mosnav.evaluation.settings import REPORTABLE_KINDS

    tags = [rec.get("benchmark") for rec in records]
    named = [t for t in tags if isinstance(t, Mapping)]
    if not named:
        return None
    identity = ("name", "version", "kind", "dataset_fingerprint")
    first = {k: named[0].get(k) for k in identity}
    reasons: List[str] = []
    if len(named) < len(tags) or any({k: t.get(k) for k in identity} != first for t in named):
        reasons.append("records of different settings in one run")
    deviations = sorted({str(d) for t in named for d in (t.get("deviations") or [])})
    reasons.extend(deviations)
    if first["kind"] not in REPORTABLE_KINDS:
        reasons.append(f"a {first['kind']} setting is never reported")
    if status != "complete":
        reasons.append(f"summary status {status}")
    return dict(first, deviations=deviations, official=not reasons, not_official_because=reasons)


def write_summary(out_dir: str, summary: Dict[str, Any]) -> str:
    """Atomically write ``<out>/summary.json`` with the ``software`` that wrote it
    (:func:`habitat_mosnav.versions.software_versions`, set in ``summary`` too, so the
    caller's summary equals the file); returns its path."""
    path = os.path.join(out_dir, SUMMARY_FILE)
    summary["software"] = software_versions()
    atomic_write_json(path, summary)
    return path


# Rows of the printed table: (label, metrics key, format), the registry's shown aggregates;
# the first row names the scope of those without MOS/MOC/a mode in their label.
_TABLE = tuple(
    (spec.label + (" (many+all)" if i == 0 else ""), spec.name, spec.format)
    for i, spec in enumerate(s for s in AGGREGATES if s.shown)
)


def format_summary(summary: Mapping[str, Any]) -> str:
    """A plain-text metrics table of a summary (modes without episodes are left out)."""
    m = summary.get("metrics", {})
    bench = summary.get("benchmark")
    lines = (
        []
        if not bench
        else [
            f"benchmark {bench['name']} v{bench['version']}: "
            + (
                "official complete run"
                if bench["official"]
                else "not official: " + "; ".join(bench["not_official_because"])
            )
        ]
    )
    lines += [
        f"status: {summary.get('status')}  episodes: {summary.get('unique_record_count')} "
        f"(ok {summary.get('ok_episode_count')}, error {summary.get('error_episode_count')}, "
        f"expected {summary.get('expected_episode_count')})",
        "  ".join(
            f"{mode} {m.get('num_episodes_' + mode, 0)}"
            for mode in EPISODE_MODES
            if mode != SEQUENTIAL or m.get("num_episodes_" + mode)
        ),
    ]
    width = max(len(label) for label, _, _ in _TABLE)
    for label, key, fmt in _TABLE:
        value = m.get(key)
        if value is None:
            continue
        lines.append(f"  {label:<{width}}  {format_value(value, fmt, 4)}")
    lines += goal_type_lines(summary)
    lines += goat_lines(summary)
    return "\n".join(safe_line(line) for line in lines)  # names come from the records


#: The printed per-goal-type line: the main board's shown aggregates (SR, F1, SPL-multi).
_GOAL_TYPE_COLUMNS = tuple(s for s in AGGREGATES if s.shown and s.table == "board")


def goal_type_lines(summary: Mapping[str, Any]) -> List[str]:
    """One line per goal type of ``summary["by_goal_type"]`` (its episodes and main board),
    only when the run holds more than one goal type: a single-type run's line would repeat
    the table above."""
    groups = summary.get("by_goal_type")
    if not isinstance(groups, Mapping) or len(groups) < 2:
        return []
    width = max(len(str(gt)) for gt in groups)
    lines = ["by goal type (many+all):"]
    for gt, m in groups.items():
        m = m if isinstance(m, Mapping) else {}
        cells = "  ".join(
            f"{s.label} {format_value(m.get(s.name), s.format, 4)}" for s in _GOAL_TYPE_COLUMNS
        )
        lines.append(f"  {str(gt):<{width}}  episodes {m.get('num_episodes', 0)}  {cells}")
    return lines


def goat_lines(summary: Mapping[str, Any]) -> List[str]:
    """GOAT-Bench's aggregates over the sequential episodes (SPEC §11), only when the run
    has some: a heading and one ``label  value`` line each (a per-type success without
    episodes of that type shows "–")."""
    m = summary.get("metrics")
    m = m if isinstance(m, Mapping) else {}
    count = m.get(f"num_episodes_{SEQUENTIAL}")
    if not count:
        return []
    shown = [a for a in GOAT_AGGREGATES if a.shown]
    width = max(len(a.label) for a in shown)
    lines = [f"GOAT-Bench ({SEQUENTIAL} episodes: {count}):"]
    for a in shown:
        lines.append(f"  {a.label:<{width}}  {format_value(m.get(a.name), a.format, 4)}")
    return lines
