"""Replay a run from its records: re-execute each record's actions, compare what comes out.

``mosnav-replay RUN_DIR`` (:mod:`~habitat_mosnav.evaluation.replay_cli`) drives
:func:`replay_run`. No agent is called: :class:`ReplayAgent` returns each record's recorded
actions (its ``replay`` block, :mod:`~habitat_mosnav.evaluation.replay_data`) inside the
evaluator's own episode loop (:class:`ReplayEvaluator` is the
:class:`~habitat_mosnav.evaluation.evaluator.Evaluator` with the recorded keys as its
selection), so the replayed records are written exactly as ``mosnav-eval`` writes records
(and ``--save-maps`` / ``--save-video`` draw them the same way). Then
:func:`compare_records` compares each replayed record with the original: status, steps,
termination, every metric, the start and final pose, every position, every report event.
With several ranks each writes its part of the report and the last to finish merges them
(:func:`merge_rank_reports`), as ``mosnav-eval``'s last rank writes summary.json.

Agreement (docs/EVALUATION.md "Replaying a run"):

- on the simulator that produced the run, numbers agree to :data:`SAME_SIM_TOLERANCE`
  (1e-9, absolute or relative; on the same machine the replay is bit-identical, the
  tolerance only absorbs last-bit differences of another machine's libm/BLAS), integers,
  booleans and strings exactly;
- on the other simulator, within the agreement of docs/CPU_SIMULATOR.md ("Two simulators, one benchmark":
  the agent at the same places to 2 mm, the same metrics): positions within
  :data:`CROSS_SIM_POSITION` m, floats within :data:`CROSS_SIM_RELATIVE` relative (or
  :data:`CROSS_SIM_POSITION` absolute), the rest exactly; an episode whose claim outcome
  differs where the claim was within :data:`NEAR_BOUNDARY` m of the success distance is a
  near-boundary flip, listed (``flips``) and not counted as a disagreement.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from habitat_mosnav.evaluation.defaults import DEFAULT_CONFIG
from habitat_mosnav.evaluation.durable import (
    ResultFileError,
    atomic_write_json,
    read_json_object,
    write_failed,
)
from habitat_mosnav.evaluation.rank_files import rank_dir, read_run
from habitat_mosnav.evaluation.records import records_digest, to_jsonable
from habitat_mosnav.evaluation.replay_data import (
    REPLAY_FIELD,
    ReplayDataError,
    check_block,
    decode_actions,
    motion_overrides,
)

__all__ = [
    "CROSS_SIM_POSITION",
    "CROSS_SIM_RELATIVE",
    "NEAR_BOUNDARY",
    "SAME_SIM_TOLERANCE",
    "Difference",
    "ReplayAgent",
    "ReplayExhausted",
    "ReplayInputError",
    "ReplayResult",
    "compare_records",
    "load_records",
    "merge_rank_reports",
    "rank_report_path",
    "replay_run",
]

SAME_SIM_TOLERANCE = 1e-9
CROSS_SIM_POSITION = 0.002
CROSS_SIM_RELATIVE = 0.01
NEAR_BOUNDARY = 0.05
REPORT_FILE = "replay.json"
#: Record fields compared as a whole besides metrics and events.
_TOP_FIELDS = ("status", "steps_taken", "terminated_by")


class ReplayInputError(ValueError):
    """Bad input (exit 2): one line naming the file, record and field."""


class ReplayExhausted(RuntimeError):
    """The recorded actions ran out before the replayed episode ended."""


@dataclass
class Difference:
    episode_key: str
    field: str
    recorded: Any
    replayed: Any

    def line(self) -> str:
        def show(v):
            text = json.dumps(v) if not isinstance(v, str) else v
            return text if len(text) <= 80 else text[:77] + "..."

        return f"{self.episode_key}: {self.field}: recorded {show(self.recorded)}, replayed {show(self.replayed)}"


@dataclass
class ReplayResult:
    """What a replay found; ``report`` is the JSON report's content."""

    differences: List[Difference] = field(default_factory=list)
    flips: List[Dict[str, Any]] = field(default_factory=list)
    episode_count: int = 0
    simulator: str = ""
    simulator_version: str = ""
    out_dir: str = ""
    report_path: str = ""
    #: The result over every rank once all have reported (this one with one rank); None
    #: while another rank's report is missing (:func:`merge_rank_reports`).
    whole: Optional["ReplayResult"] = None
    #: With several ranks: those whose report is still missing or stale.
    missing_ranks: List[int] = field(default_factory=list)
    #: :func:`records.records_digest` of the replayed run's records (the ``--verify`` mark's).
    records_digest: str = ""
    #: ``diagnosis.json``'s content and path (``--diagnose``), else None and "".
    diagnosis: Optional[Dict[str, Any]] = None
    diagnosis_path: str = ""

    @property
    def agrees(self) -> bool:
        return not self.differences

    @classmethod
    def from_report(cls, report: Mapping[str, Any]) -> "ReplayResult":
        """A result read back from :meth:`report`'s content."""
        return cls(
            differences=[
                Difference(d["episode_key"], d["field"], d["recorded"], d["replayed"])
                for d in report.get("differences") or []
            ],
            flips=list(report.get("near_boundary_flips") or []),
            episode_count=int(report.get("episode_count") or 0),
            simulator=str(report.get("simulator") or ""),
            simulator_version=str(report.get("simulator_version") or ""),
        )

    def report(self) -> Dict[str, Any]:
        return {
            "status": "agrees" if self.agrees else "differs",
            "episode_count": self.episode_count,
            "simulator": self.simulator,
            "simulator_version": self.simulator_version,
            "differing_episode_count": len({d.episode_key for d in self.differences}),
            "differences": [
                {
                    "episode_key": d.episode_key,
                    "field": d.field,
                    "recorded": d.recorded,
                    "replayed": d.replayed,
                }
                for d in self.differences
            ],
            "near_boundary_flips": self.flips,
        }


# ----------------------------------------------------------------------------- the agent


class ReplayAgent:
    """Returns a record's recorded actions, one per ``act``; reads the task state at each
    claim (how far the claim was from the success distance, for near-boundary flips)."""

    def __init__(self, actions_by_key: Mapping[str, List[int]]) -> None:
        self._actions = dict(actions_by_key)
        self._env = None
        self._todo: List[int] = []
        self._key = ""
        self.claim_margins: Dict[str, Dict[int, float]] = {}

    def bind_env(self, env) -> None:
        self._env = env

    def reset(self, context=None) -> None:
        self._key = context.episode_key
        self._todo = list(self._actions[self._key])
        self._step = 0
        self.claim_margins[self._key] = {}

    def act(self, observation) -> int:
        if self._step >= len(self._todo):
            raise ReplayExhausted(
                f"the {len(self._todo)} recorded actions ran out before the episode ended"
            )
        action = self._todo[self._step]
        self._step += 1
        if action in (0, 6) and self._env is not None:
            state = getattr(getattr(self._env, "task", None), "mos_state", None)
            try:
                distances = [d for d in state.target_distances().values() if math.isfinite(d)]
                if distances:
                    self.claim_margins[self._key][self._step] = min(
                        abs(d - state.success_distance) for d in distances
                    )
            except Exception:  # noqa: BLE001 - a margin is informative only
                pass
        return action


def _replay_evaluator_class():
    from habitat_mosnav.evaluation.evaluator import EvaluationSetupError, Evaluator
    from habitat_mosnav.evaluation.selection import select_episodes

    class ReplayEvaluator(Evaluator):
        """The evaluator with the recorded keys as its selection."""

        program = "mosnav-replay"
        replay_keys: Sequence[str] = ()
        #: a :class:`~habitat_mosnav.evaluation.replay_diagnosis.DiagnosisCollector` (--diagnose)
        diagnosis = None

        def _observers(self, env, *args):
            observers = super()._observers(env, *args)
            if self.diagnosis is not None:
                self.diagnosis.env = env
                observers.insert(0, self.diagnosis)
            return observers

        def select(self, episodes):
            split = self._split(episodes)
            pool = {self._episode_key(ep, split): ep for ep in episodes}
            missing = [k for k in self.replay_keys if k not in pool]
            if missing:
                raise EvaluationSetupError(
                    f"record {missing[0]!r}: the dataset has no such episode ({len(missing)} of "
                    f"{len(self.replay_keys)} missing; pass the run's --dataset-dir / --scene-root)"
                )
            pool = {k: pool[k] for k in self.replay_keys}
            rank, world = self._rank_world()
            everything = select_episodes(pool.keys(), 0, -1, 0, 1)
            mine = select_episodes(pool.keys(), 0, -1, rank, world)
            self.selected_keys = [k for _, k in everything]
            return mine, pool, len(everything)

    return ReplayEvaluator, EvaluationSetupError


# ----------------------------------------------------------------------------- input


def load_records(run_dir: str) -> Tuple[Dict[str, Tuple[str, Dict[str, Any]]], Dict[str, Any]]:
    """(key -> ("file:line", record), run.json or {}) of a run; every record's replay
    block checked (:class:`ReplayInputError` names the file, line and field)."""
    try:
        read = read_run(run_dir)
    except ResultFileError as exc:
        raise ReplayInputError(str(exc)) from None
    latest, manifest = read.latest, read.manifest or {}
    if not latest:
        raise ReplayInputError(f"{run_dir}: no records to replay")
    motion = None
    for key, (where, rec) in latest.items():
        try:
            block = check_block(rec)
        except ReplayDataError as exc:
            raise ReplayInputError(f"{where}: record {key!r}: {exc}") from None
        if rec.get("status") == "ok" and len(block["actions"]) != rec.get("steps_taken"):
            raise ReplayInputError(
                f"{where}: record {key!r}: field '{REPLAY_FIELD}.actions' has "
                f"{len(block['actions'])} actions, 'steps_taken' says {rec.get('steps_taken')}"
            )
        settings = {k: v for k, v in block["motion"].items()}
        if motion is None:
            motion = (where, settings, block["protocol"])
        elif (settings, block["protocol"]) != (motion[1], motion[2]):
            name = next((k for k in settings if settings[k] != motion[1].get(k)), "protocol")
            raise ReplayInputError(
                f"{where}: record {key!r}: field '{REPLAY_FIELD}.motion.{name}' "
                f"differs from {motion[0]}'s (one run, one setting)"
            )
    return latest, manifest


def replay_config(
    manifest: Mapping[str, Any],
    motion: Mapping[str, Any],
    simulator: str,
    *,
    config: Optional[str] = None,
    extra_overrides: Sequence[str] = (),
):
    """The habitat config of the replay: the run's config and overrides (run.json), the
    recorded motion settings, the chosen simulator, then ``extra_overrides``."""
    from habitat_mosnav import get_config
    from habitat_mosnav.config.simulator import simulator_overrides

    path = config or manifest.get("config") or DEFAULT_CONFIG
    overrides = [str(o) for o in (manifest.get("config_overrides") or [])]
    overrides += motion_overrides(motion) + simulator_overrides(simulator) + list(extra_overrides)
    try:
        return get_config(path, overrides)
    except Exception as exc:  # noqa: BLE001 - one line
        raise ReplayInputError(
            f"{path}: cannot build the replay's config: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}"
        ) from None


# ----------------------------------------------------------------------------- compare


def _close(a, b, abs_tol: float, rel_tol: float) -> bool:
    if (
        isinstance(a, bool)
        or isinstance(b, bool)
        or not isinstance(a, (int, float))
        or not isinstance(b, (int, float))
    ):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a == b or abs(a - b) <= max(abs_tol, rel_tol * max(abs(a), abs(b)))


def _diff_values(
    key: str, name: str, a, b, abs_tol: float, rel_tol: float, out: List[Difference]
) -> None:
    """Every differing leaf of ``a`` vs ``b`` as a Difference named by its path."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in list(a) + [k for k in b if k not in a]:
            _diff_values(key, f"{name}.{k}", a.get(k), b.get(k), abs_tol, rel_tol, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(Difference(key, f"{name} (length)", len(a), len(b)))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _diff_values(key, f"{name}[{i}]", x, y, abs_tol, rel_tol, out)
        return
    if not _close(a, b, abs_tol, rel_tol):
        out.append(Difference(key, name, a, b))


def compare_records(
    key: str,
    recorded: Mapping[str, Any],
    replayed: Mapping[str, Any],
    *,
    cross_simulator: bool = False,
) -> List[Difference]:
    """The differences of one episode (empty: it agrees)."""
    tol_abs, tol_rel = (
        (CROSS_SIM_POSITION, CROSS_SIM_RELATIVE)
        if cross_simulator
        else (SAME_SIM_TOLERANCE, SAME_SIM_TOLERANCE)
    )
    pos_tol = CROSS_SIM_POSITION if cross_simulator else 0.0
    out: List[Difference] = []
    error = recorded.get("status") == "error"
    for name in _TOP_FIELDS:
        if error and name == "terminated_by":
            continue
        if recorded.get(name) != replayed.get(name):
            out.append(Difference(key, name, recorded.get(name), replayed.get(name)))
    start = (recorded.get(REPLAY_FIELD) or {}).get("start")
    if start is not None:
        _diff_values(
            key,
            "start",
            start,
            replayed.get("initial_agent_state"),
            max(pos_tol, SAME_SIM_TOLERANCE),
            tol_rel,
            out,
        )
    if not error:
        # subtask_metrics: a sequential episode's per-subtask lists (absent elsewhere)
        for name in ("initial_metrics", "metrics", "subtask_metrics"):
            _diff_values(
                key, name, recorded.get(name) or {}, replayed.get(name) or {}, tol_abs, tol_rel, out
            )
        _diff_values(
            key,
            "report_events",
            recorded.get("report_events") or [],
            replayed.get("report_events") or [],
            tol_abs,
            tol_rel,
            out,
        )
        if recorded.get("final_agent_state") is not None:
            _diff_values(
                key,
                "final_agent_state.position",
                recorded["final_agent_state"].get("position"),
                (replayed.get("final_agent_state") or {}).get("position"),
                max(pos_tol, SAME_SIM_TOLERANCE),
                tol_rel if cross_simulator else SAME_SIM_TOLERANCE,
                out,
            )
    a, b = recorded.get("positions"), replayed.get("positions")
    if isinstance(a, list) and isinstance(b, list):  # the first differing step only
        for step, (p, q) in enumerate(zip(a, b)):
            if any(abs(x - y) > pos_tol + 1e-12 for x, y in zip(p, q)):
                out.append(Difference(key, f"positions[{step}]", p, q))
                break
    return out


def _claim_fields(d: Difference) -> bool:
    return d.field.startswith("report_events")


# ----------------------------------------------------------------------------- the run


def default_out_dir(run_dir: str, simulator: str) -> str:
    return os.path.join(run_dir, "replay", simulator)


def rank_report_path(out_dir: str, rank: int) -> str:
    """Rank ``rank``'s part of the report when several ranks replay a run."""
    return os.path.join(out_dir, f"replay_rank_{int(rank):05d}.json")


def merge_rank_reports(
    out_dir: str, shares: Mapping[int, Sequence[str]], stamp: Mapping[str, Any]
) -> Tuple[Optional[ReplayResult], List[int]]:
    """(the result over every rank, []) once each rank ``r`` of ``shares`` has a report in
    ``out_dir`` with ``stamp`` (records digest, simulator and version, world size) for
    exactly its keys ``shares[r]``; else (None, the ranks missing or stale)."""
    reports, missing = [], []
    for r in sorted(shares):
        try:
            report = read_json_object(rank_report_path(out_dir, r))
        except (OSError, ResultFileError):
            missing.append(r)
            continue
        if any(report.get(k) != v for k, v in stamp.items()) or report.get("episode_keys") != list(
            shares[r]
        ):
            missing.append(r)
            continue
        try:
            reports.append(ReplayResult.from_report(report))
        except (KeyError, TypeError, ValueError):  # not a report this code wrote: stale
            missing.append(r)
    if missing:
        return None, missing
    whole = ReplayResult(
        out_dir=out_dir,
        simulator=str(stamp["simulator"]),
        simulator_version=str(stamp["simulator_version"]),
        records_digest=str(stamp["records_digest"]),
    )
    for part in reports:
        whole.differences.extend(part.differences)
        whole.flips.extend(part.flips)
        whole.episode_count += part.episode_count
    whole.differences.sort(key=lambda d: d.episode_key)  # stable: fields keep their order
    whole.flips.sort(key=lambda f: f["episode_key"])
    return whole, []


def replay_run(
    run_dir: str,
    *,
    simulator: Optional[str] = None,
    out_dir: Optional[str] = None,
    config: Optional[str] = None,
    extra_overrides: Sequence[str] = (),
    rank: int = 0,
    world_size: int = 1,
    resume: bool = False,
    progress: bool = True,
    maps: bool = False,
    video: Optional[str] = None,
    diagnose: bool = False,
    stream=None,
) -> ReplayResult:
    """Replay every record of ``run_dir`` (this rank's share) and compare; writes the JSON
    report (``replay.json``, ``replay_rank_XXXXX.json`` with several ranks) in ``out_dir``.
    ``diagnose``: also label why each episode failed (``diagnosis.json`` beside the report,
    and with one rank a copy in ``run_dir``: :mod:`~habitat_mosnav.evaluation.replay_diagnosis`)."""
    from habitat_mosnav.simulators import SIMULATORS

    types = {name: choice.type for name, choice in SIMULATORS.items()}
    latest, manifest = load_records(run_dir)
    first_block = next(iter(latest.values()))[1][REPLAY_FIELD]
    motion = first_block["motion"]
    produced = {v: k for k, v in types.items()}.get(motion["simulator"])
    if simulator is None:
        if produced is None:
            raise ReplayInputError(
                f"{next(iter(latest.values()))[0]}: field "
                f"'{REPLAY_FIELD}.motion.simulator' is {motion['simulator']!r}, not one of "
                f"{', '.join(types.values())}: pass --simulator"
            )
        simulator = produced
    cross = types[simulator] != motion["simulator"]
    given_out = out_dir is not None
    out_dir = out_dir or default_out_dir(run_dir, simulator)
    _remove_stale(out_dir, rank, world_size, fresh=not given_out and not resume)
    hcfg = replay_config(
        manifest, motion, simulator, config=config, extra_overrides=extra_overrides
    )
    collector = None
    if diagnose:
        from habitat_mosnav.evaluation import replay_diagnosis as rd

        extra = rd.semantic_overrides(hcfg)
        if extra:
            hcfg = replay_config(
                manifest,
                motion,
                simulator,
                config=config,
                extra_overrides=list(extra_overrides) + extra,
            )
        collector = rd.DiagnosisCollector(rd.semantic_uuid(hcfg) or "semantic")
    actions = {k: decode_actions(rec[REPLAY_FIELD]["actions"]) for k, (_, rec) in latest.items()}
    agent = ReplayAgent(actions)
    from habitat_mosnav.evaluation.evaluator import EvaluationConfig

    ReplayEvaluator, EvaluationSetupError = _replay_evaluator_class()
    cfg = EvaluationConfig(
        output_dir=out_dir,
        split=manifest.get("split") or None,
        seed=int(manifest.get("seed", 0) or 0),
        max_steps=int(manifest["max_steps"]) if manifest.get("max_steps") else None,
        action_protocol=first_block["protocol"],
        rank=rank,
        world_size=world_size,
        rank_timeout=0,
        resume=resume,
        progress=progress,
        maps=maps,
        video=video,
        record_actions=False,
        max_unavailable_episodes=0,
        manifest={
            "agent": "mosnav-replay",
            "config": manifest.get("config"),
            "config_overrides": manifest.get("config_overrides") or [],
            "replay_of": os.path.abspath(run_dir),
        },
    )
    evaluator = ReplayEvaluator(agent, hcfg, cfg, stream=stream)
    evaluator.replay_keys = sorted(latest)
    evaluator.diagnosis = collector
    try:
        evaluator.run()
    except EvaluationSetupError as exc:
        raise ReplayInputError(str(exc)) from None
    from habitat_mosnav.evaluation.selection import select_episodes

    mine = {k for _, k in select_episodes(sorted(latest), 0, -1, rank, world_size)}
    replayed = read_run(out_dir).latest
    result = ReplayResult(
        out_dir=out_dir, simulator=types[simulator], records_digest=records_digest(latest)
    )
    from habitat_mosnav.evaluation.replay_data import simulator_version

    result.simulator_version = simulator_version(result.simulator)
    for key in sorted(mine):
        recorded = latest[key][1]
        if key not in replayed:
            result.differences.append(Difference(key, "record", "present", "not replayed"))
            continue
        new = replayed[key][1]
        diffs = compare_records(key, recorded, new, cross_simulator=cross)
        result.episode_count += 1
        if cross and diffs and any(_claim_fields(d) for d in diffs):
            margins = agent.claim_margins.get(key, {})
            near = [s for s, m in margins.items() if m <= NEAR_BOUNDARY]
            if near:
                result.flips.append(
                    {
                        "episode_key": key,
                        "claim_steps": sorted(near),
                        "margins_m": {str(s): margins[s] for s in sorted(near)},
                        "fields": [d.field for d in diffs],
                    }
                )
                continue
        result.differences.extend(diffs)
    if collector is not None:
        _diagnose(
            result,
            run_dir,
            {k: replayed[k][1] for k in mine if k in replayed},
            collector,
            hcfg,
            rank,
            world_size,
        )
    if world_size == 1:
        result.report_path = os.path.join(out_dir, REPORT_FILE)
        atomic_write_json(result.report_path, to_jsonable(result.report(), "replay report"))
        result.whole = result
        return result
    stamp = {
        "records_digest": result.records_digest,
        "simulator": result.simulator,
        "simulator_version": result.simulator_version,
        "world_size": world_size,
    }
    shares = {
        r: [k for _, k in select_episodes(sorted(latest), 0, -1, r, world_size)]
        for r in range(world_size)
    }
    result.report_path = rank_report_path(out_dir, rank)
    part = dict(result.report(), rank=rank, episode_keys=shares[rank], **stamp)
    atomic_write_json(result.report_path, to_jsonable(part, "replay report"))
    # The last rank to report finds every part and writes the whole (as mosnav-eval's last
    # rank writes summary.json); two finishing at once both write the same content.
    whole, result.missing_ranks = merge_rank_reports(out_dir, shares, stamp)
    if whole is not None:
        whole.report_path = os.path.join(out_dir, REPORT_FILE)
        report = dict(whole.report(), world_size=world_size)
        atomic_write_json(whole.report_path, to_jsonable(report, "replay report"))
        result.whole = whole
    return result


def _remove_stale(out_dir: str, rank: int, world_size: int, fresh: bool) -> None:
    """Before a replay: ``fresh`` (the default --out, no --resume) replaces the previous
    replay there (with several ranks, only this rank's part); with several ranks this
    rank's old report and the old whole report never speak for this replay."""
    doomed = []
    if fresh:
        doomed.append(out_dir if world_size == 1 else rank_dir(out_dir, rank))
    if world_size > 1:
        doomed += [rank_report_path(out_dir, rank), os.path.join(out_dir, REPORT_FILE)]
    for path in doomed:
        try:  # a link is removed itself, never followed
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)
        except OSError as exc:
            raise write_failed(path, exc, "remove the previous replay's") from None


def _diagnose(result, run_dir, records, collector, hcfg, rank: int, world_size: int) -> None:
    """``diagnosis.json`` of the replayed records (and its copy in ``run_dir``, one rank)."""
    from omegaconf import OmegaConf

    from habitat_mosnav.evaluation import replay_diagnosis as rd

    name = rd.DIAGNOSIS_FILE if world_size == 1 else f"diagnosis_rank_{rank:05d}.json"
    result.diagnosis_path = os.path.join(result.out_dir, name)
    success_distance = float(OmegaConf.select(hcfg, "habitat.task.mosnav_success_distance"))
    result.diagnosis = rd.write_diagnosis(
        result.diagnosis_path, records, collector, success_distance, result.simulator
    )
    if world_size == 1:
        rd.copy_to_run(run_dir, result.diagnosis)
