"""Why a value of the report is "–" (null): each null cell of the page carries one of these
lines as its title, so a reader of OER-space "–" learns that the space oracle was off, or
that no episode ever reached the point the metric measures from (issue 42)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from habitat_mosnav.metrics.measure_table import aggregate_spec

from habitat_mosnav.evaluation.report.data import RunData

#: The config key of the space oracle's sample count (``--space-coverage-samples``).
SPACE_SAMPLES_KEY = "habitat.task.mosnav_space_coverage_samples"
#: The space-oracle metrics: null for every episode of a run with 0 samples.
SPACE_FIELDS = ("oer_space", "coverage", "finish_with_unexplored_space")
NO_BENCHMARK = "no benchmark setting: evaluated without --benchmark"
SPACE_OFF = "not measured: --space-coverage-samples 0 (the space oracle was off)"

#: Per-episode field -> why an ok episode has no value (docs/SPEC.md §4's NaN cases).
EPISODE_REASONS = {
    "pe": "no claim in this episode (PE needs one)",
    "tse": "fewer targets claimed than required (TSE needs F >= R)",
    "false_termination": "not an all episode ended by FINISH",
    "oer_target": "the required targets were never all found",
    "oer_space": "the space oracle never saw the space exhausted",
    "coverage": SPACE_OFF,
    "finish_with_unexplored_space": "not an all episode ended by FINISH",
    "time_to_first_target": "no claim found a target",
}

#: Aggregate field -> why a run's mean has no value though it has episodes of its modes.
AGGREGATE_REASONS = {
    "pe": "no episode with a claim (PE needs one)",
    "tse": "no many episode claimed as many targets as required (TSE needs F >= R)",
    "false_termination": "no all episode ended by FINISH",
    "oer_target": "no episode found all its required targets",
    "oer_space": "the space oracle never saw the space exhausted in any episode",
    "coverage": SPACE_OFF,
    "finish_with_unexplored_space": "no all episode ended by FINISH",
    "time_to_first_target": "no claim found a target",
    "object_success": "no sequential episode with an object subtask",
    "description_success": "no sequential episode with a description subtask",
    "image_success": "no sequential episode with an image subtask",
}


def space_oracle_off(run: RunData) -> bool:
    """The run was evaluated with ``--space-coverage-samples 0`` (run.json's overrides; a
    run without run.json: no coverage value in its summary)."""
    overrides = run.manifest.get("config_overrides")
    if isinstance(overrides, list):
        for item in reversed(overrides):
            key, _, value = str(item).partition("=")
            if key.lstrip("+~") == SPACE_SAMPLES_KEY:
                return value.strip() == "0"
    return run.metrics.get("coverage") is None and bool(run.summary.get("ok_episode_count"))


def aggregate_reason(
    run: RunData, name: str, metrics: Optional[Mapping[str, Any]] = None, of: str = "this run"
) -> str:
    """Why the aggregate ``name`` of the run (or of ``metrics``, a part of it such as a goal
    type's, described by ``of``) is null."""
    if metrics is None and run.summary.get("ok_episode_count") == 0:
        return "no ok episode in this run (every record is an error)"
    spec = aggregate_spec(name)
    counts = metrics if metrics is not None else run.metrics
    count = sum(
        c for c in (counts.get(f"num_episodes_{mode}") for mode in spec.modes) if isinstance(c, int)
    )
    if not count:
        return f"no ok {' or '.join(spec.modes)} episode in {of}"
    if spec.field in SPACE_FIELDS and space_oracle_off(run):
        return SPACE_OFF
    return AGGREGATE_REASONS.get(
        spec.field, f"no finite {spec.field} in this run's {' + '.join(spec.modes)} episodes"
    )


def episode_reason(run: RunData, rec: Mapping[str, Any], fieldname: str) -> str:
    """Why the record ``rec`` has no value of ``fieldname``."""
    if rec.get("status") != "ok":
        return f"error record ({rec.get('error_type', 'error')}): no metrics"
    if fieldname in SPACE_FIELDS and space_oracle_off(run):
        return SPACE_OFF
    return EPISODE_REASONS.get(fieldname, f"no {fieldname} recorded for this episode")


def why_failed_reason(run: RunData, rec: Mapping[str, Any], label: Optional[str]) -> str:
    """Why the "why failed" cell of a record has no label."""
    if run.diagnosis is None:
        return "no diagnosis for this run (mosnav-replay RUN_DIR --diagnose)"
    if rec.get("status") != "ok":
        return "error record: not diagnosed"
    if (rec.get("metrics") or {}).get("success") == 1:
        return "succeeded: nothing to diagnose"
    return "not in this run's diagnosis.json"
