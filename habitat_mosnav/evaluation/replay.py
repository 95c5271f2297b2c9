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

``--verify`` (``verify=True``) judges the run against the benchmark, never against itself
(issue 39): the motion and success settings come from the benchmark setting the run names
(else its config file as shipped), never from the records' ``replay.motion`` nor run.json's
overrides; the episode set comes from the setting (else the run's selection) on the
dataset given, checked against the setting's fingerprint; every field of each record's
``episode`` and ``benchmark`` blocks must equal the replay's. A record that disagrees is a
difference naming the episode and field; a run whose records are incomplete (an episode
of the set missing, a partial last line, a rank unfinished) is a difference of ``(run)``:
never verified. :attr:`ReplayResult.settings` holds the settings it was checked under.
"""

from __future__ import annotations

import json
import math
import re
import os
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
from habitat_mosnav.safety import check_path, output_root, remove_path, safe_line
from habitat_mosnav.evaluation.replay_data import (
    MOTION_KEYS,
    REPLAY_FIELD,
    ReplayDataError,
    check_block,
    check_compared_fields,
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
    #: ``--verify``: the settings the run was checked under (success distance, sliding,
    #: step, turn, tilt, simulator and version, the benchmark setting's name or None).
    settings: Dict[str, Any] = field(default_factory=dict)

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
            **({"checked_settings": self.settings} if self.settings else {}),
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
        #: ``--verify``: the run's selection ``(scene_limit, episode_limit, offset, limit)``
        #: used without a benchmark setting; :attr:`expected_keys` is then the episode set
        #: the run must hold (the setting's, else its selection's) on the dataset given.
        run_selection: Optional[Tuple[Any, Any, int, int]] = None
        expected_keys: Optional[List[str]] = None

        def _observers(self, env, *args):
            observers = super()._observers(env, *args)
            if self.diagnosis is not None:
                self.diagnosis.env = env
                observers.insert(0, self.diagnosis)
            return observers

        def select(self, episodes):
            split = self._split(episodes)
            pool = {self._episode_key(ep, split): ep for ep in episodes}
            if self.run_selection is not None:
                self.expected_keys = self._expected(episodes, split, pool)
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

        def _expected(self, episodes, split, pool) -> List[str]:
            from habitat_mosnav.evaluation.selection import episode_pool
            from habitat_mosnav.evaluation.settings import SettingError
            from habitat_mosnav.keys import episode_scene_name

            if self.setting is not None:
                try:
                    return list(self.setting.pick_episodes(pool))
                except SettingError as exc:
                    raise EvaluationSetupError(str(exc)) from None
            scene_limit, episode_limit, offset, limit = self.run_selection
            keyed = [(self._episode_key(ep, split), episode_scene_name(ep), ep) for ep in episodes]
            chosen = episode_pool(keyed, scene_limit, episode_limit)
            try:
                return [k for _, k in select_episodes(chosen.keys(), offset, limit, 0, 1)]
            except ValueError as exc:
                raise EvaluationSetupError(str(exc)) from None

    return ReplayEvaluator, EvaluationSetupError


# ----------------------------------------------------------------------------- input


def load_records(run_dir: str) -> Tuple[Dict[str, Tuple[str, Dict[str, Any]]], Dict[str, Any]]:
    """(key -> ("file:line", record), run.json or {}) of a run; every record's replay
    block checked (:class:`ReplayInputError` names the file, line and field)."""
    read = load_run(run_dir)
    return read.latest, read.manifest or {}


def load_run(run_dir: str):
    """:func:`~habitat_mosnav.evaluation.rank_files.read_run` of a run, every record's
    replay block and compared fields checked (:class:`ReplayInputError` names the file,
    line, episode and field) before anything is replayed."""
    try:
        read = read_run(run_dir)
    except ResultFileError as exc:
        raise ReplayInputError(str(exc)) from None
    latest, manifest = read.latest, read.manifest or {}
    if not isinstance(manifest, Mapping):
        raise ReplayInputError(f"{run_dir}/run.json: must be a JSON object")
    if not latest:
        raise ReplayInputError(f"{run_dir}: no records to replay")
    motion = None
    for key, (where, rec) in latest.items():
        try:
            block = check_block(rec)
            check_compared_fields(rec)
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
    return read


#: What an override read from a run directory (run.json's ``config_overrides``) may be:
#: a key under ``habitat.`` (or a ``habitat/`` config group, as the sensors an agent adds),
#: optionally ``+``/``++``/``~``-prefixed, and a plain value: a word, number, quoted path or
#: list of those. Interpolations and resolvers (``${...}``: ``${oc.env:SECRET}``) and
#: Hydra's sweep functions (``choice(...)``) are refused: a run directory is untrusted input.
_OVERRIDE_KEY = re.compile(r"^(\+\+|\+|~)?habitat[./][A-Za-z0-9_./@-]*$")
_OVERRIDE_VALUE = re.compile(r"^[A-Za-z0-9_.,:/@+~\- \[\]'\"]*$")


def checked_run_overrides(overrides: Any) -> List[str]:
    """``run.json``'s ``config_overrides`` checked against :data:`_OVERRIDE_KEY` /
    :data:`_OVERRIDE_VALUE` (:class:`ReplayInputError` naming the entry, never showing its
    value: nothing in it is resolved, nothing from the environment printed)."""
    if overrides is None:
        return []
    if not isinstance(overrides, list):
        raise ReplayInputError("run.json: field 'config_overrides' must be a list of strings")
    out = []
    for i, item in enumerate(overrides):
        where = f"run.json: field 'config_overrides[{i}]'"
        if not isinstance(item, str) or len(item) > 4096:
            raise ReplayInputError(f"{where} must be a string of at most 4096 characters")
        key, eq, value = item.partition("=")
        if not eq and not key.startswith("~"):
            raise ReplayInputError(f"{where} is not KEY=VALUE")
        if not _OVERRIDE_KEY.match(key):
            raise ReplayInputError(
                f"{where}: key {safe_line(key[:80])!r} is not a habitat config key "
                "(habitat.*): refused"
            )
        if "$" in value or "{" in value or not _OVERRIDE_VALUE.match(value):
            raise ReplayInputError(
                f"{where} ({key}): the value is not a plain value (interpolations "
                "'${...}', resolvers and functions are refused in a run directory)"
            )
        out.append(item)
    return out


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
    if not isinstance(path, str):
        raise ReplayInputError("run.json: field 'config' must be a string")
    overrides = checked_run_overrides(manifest.get("config_overrides"))
    overrides += motion_overrides(motion) + simulator_overrides(simulator) + list(extra_overrides)
    try:
        return get_config(path, overrides)
    except Exception as exc:  # noqa: BLE001 - one line
        raise ReplayInputError(
            f"{path}: cannot build the replay's config: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}"
        ) from None


# ----------------------------------------------------------------------------- the benchmark


def run_setting(latest: Mapping[str, Tuple[str, Mapping[str, Any]]], manifest: Mapping[str, Any]):
    """The benchmark setting the run names (run.json's ``benchmark`` and every record's,
    which must agree), loaded from this package; None for a run made without one."""
    from habitat_mosnav.evaluation.settings import SettingError, load_setting

    def ident(block, where):
        if block is None:
            return None
        if not isinstance(block, Mapping) or not isinstance(block.get("name"), str):
            raise ReplayInputError(f"{where}: field 'benchmark' must be an object with a name")
        return (block["name"], block.get("version"))

    claimed = ident(manifest.get("benchmark"), "run.json")
    for key, (where, rec) in latest.items():
        mine = ident(rec.get("benchmark"), where)
        if mine != claimed:
            raise ReplayInputError(
                f"{where}: record {key!r}: field 'benchmark' names {mine}, run.json {claimed} "
                "(one run, one setting)"
            )
    if claimed is None:
        return None
    try:
        setting = load_setting(claimed[0])
    except SettingError as exc:
        raise ReplayInputError(f"run.json: field 'benchmark.name': {exc}") from None
    if claimed[1] != setting.version:
        raise ReplayInputError(
            f"run.json: field 'benchmark.version' is {claimed[1]!r}, this package's "
            f"{setting.name} is version {setting.version}: verify it with the version it names"
        )
    return setting


def _override_key(text: str) -> str:
    return str(text).lstrip("+~").split("=", 1)[0].strip()


def _touches_motion(text: str) -> Optional[str]:
    """The motion/success config key an override sets (or a node above one), else None."""
    key = _override_key(text)
    for keys in MOTION_KEYS.values():
        for k in keys:
            if k == key or k.startswith(key + ".") or key.startswith(k + "."):
                return k
    return None


def benchmark_motion(hcfg) -> Dict[str, Any]:
    """The motion and success settings (:data:`MOTION_KEYS`) of a composed config."""
    from omegaconf import OmegaConf

    from habitat_mosnav.evaluation.replay_data import _plain

    return {name: _plain(OmegaConf.select(hcfg, keys[0])) for name, keys in MOTION_KEYS.items()}


def verify_config(
    manifest: Mapping[str, Any],
    setting,
    simulator: str,
    *,
    config: Optional[str] = None,
    extra_overrides: Sequence[str] = (),
):
    """(the habitat config of a ``--verify`` replay, the benchmark's motion settings).
    The motion and success settings are the setting's (else the config file's as shipped)
    on ``simulator``: run.json's overrides and the records never set them; the setting's
    fixed values come last but for the motion keys, which come after everything."""
    from habitat_mosnav import get_config
    from habitat_mosnav.config.simulator import simulator_overrides

    if setting is not None and config is not None and config != setting.config:
        raise ReplayInputError(
            f"--config {config}: the run's benchmark setting {setting.name} fixes the config "
            f"({setting.config}); drop --config"
        )
    path = (
        setting.config
        if setting is not None
        else (config or manifest.get("config") or DEFAULT_CONFIG)
    )
    if not isinstance(path, str):
        raise ReplayInputError("run.json: field 'config' must be a string")
    for o in extra_overrides:
        if _touches_motion(o):
            raise ReplayInputError(
                f"--set {o}: --verify checks a run under the benchmark's motion and success "
                f"settings ({_touches_motion(o)} included); drop it"
            )
    fixed = setting.habitat_overrides() if setting is not None else []
    sim = simulator_overrides(simulator)
    own = manifest.get("config_overrides") or []
    if not isinstance(own, list):
        raise ReplayInputError("run.json: field 'config_overrides' must be a list")
    try:
        reference = benchmark_motion(get_config(path, fixed + sim))
    except Exception as exc:  # noqa: BLE001 - one line
        raise ReplayInputError(
            f"{path}: cannot build the benchmark's config: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}"
        ) from None
    overrides = [str(o) for o in own if not _touches_motion(str(o))]
    overrides += fixed + sim + list(extra_overrides) + motion_overrides(reference)
    try:
        hcfg = get_config(path, overrides)
    except Exception as exc:  # noqa: BLE001 - one line
        raise ReplayInputError(
            f"{path}: cannot build the replay's config: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}"
        ) from None
    got = benchmark_motion(hcfg)
    for name, want in reference.items():
        if not _close(got[name], want, SAME_SIM_TOLERANCE, SAME_SIM_TOLERANCE):
            raise ReplayInputError(
                f"run.json: field 'config_overrides' changes {MOTION_KEYS[name][0]} "
                f"({got[name]!r}), which the benchmark fixes to {want!r}"
            )
    return hcfg, reference


def motion_differences(
    latest: Mapping[str, Tuple[str, Mapping[str, Any]]], reference: Mapping[str, Any]
) -> List[Difference]:
    """Each record's ``replay.motion`` setting that is not the benchmark's."""
    out: List[Difference] = []
    for key in sorted(latest):
        motion = latest[key][1][REPLAY_FIELD]["motion"]
        for name, want in reference.items():
            if want is None:
                continue
            if not _close(motion.get(name), want, SAME_SIM_TOLERANCE, SAME_SIM_TOLERANCE):
                out.append(Difference(key, f"{REPLAY_FIELD}.motion.{name}", motion.get(name), want))
    return out


def _selection(manifest: Mapping[str, Any]) -> Tuple[Any, Any, int, int]:
    """``(scene_limit, episode_limit, offset, limit)`` of run.json, checked."""
    selection = manifest.get("selection") or {}
    if not isinstance(selection, Mapping):
        raise ReplayInputError("run.json: field 'selection' must be an object")
    values = []
    for name, value, default in (
        ("selection.scene_limit", selection.get("scene_limit"), None),
        ("selection.episode_limit", selection.get("episode_limit"), None),
        ("offset", manifest.get("offset", 0), 0),
        ("limit", manifest.get("limit", -1), -1),
    ):
        if value is None:
            value = default
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= 10**7
        ):
            raise ReplayInputError(
                f"run.json: field {name!r} must be an integer, got {value!r:.40}"
            )
        values.append(value)
    return tuple(values)  # type: ignore[return-value]


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
    verify: bool = False,
) -> List[Difference]:
    """The differences of one episode (empty: it agrees). Every field of the ``episode``
    block comes from the dataset; ``verify``: the ``benchmark`` block (the setting and
    the run's deviations from it) too."""
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
    _diff_values(
        key, "episode", recorded.get("episode") or {}, replayed.get("episode") or {}, 0.0, 0.0, out
    )
    if verify:
        _diff_values(
            key, "benchmark", recorded.get("benchmark"), replayed.get("benchmark"), 0.0, 0.0, out
        )
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
    verify: bool = False,
    stream=None,
) -> ReplayResult:
    """Replay every record of ``run_dir`` (this rank's share) and compare; writes the JSON
    report (``replay.json``, ``replay_rank_XXXXX.json`` with several ranks) in ``out_dir``.
    ``diagnose``: also label why each episode failed (``diagnosis.json`` beside the report,
    and with one rank a copy in ``run_dir``: :mod:`~habitat_mosnav.evaluation.replay_diagnosis`).
    ``verify``: judge the run against the benchmark (the module docstring). Nothing is
    written or removed through a link below ``run_dir`` or ``out_dir``
    (:func:`~habitat_mosnav.safety.output_root`)."""
    with output_root(run_dir, out_dir):
        from habitat_mosnav.simulators import SIMULATORS

        types = {name: choice.type for name, choice in SIMULATORS.items()}
        try:
            read = load_run(run_dir)
        except ReplayInputError as exc:
            _report_bad_input(run_dir, out_dir, simulator, exc)
            raise
        latest, manifest = read.latest, read.manifest or {}
        checked_run_overrides(manifest.get("config_overrides"))  # before anything is removed
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
        _check_out_dir(run_dir, out_dir)
        try:  # a planted link on the way (RUN_DIR/replay -> elsewhere): refused, nothing touched
            check_path(out_dir)
        except OSError as exc:
            raise write_failed(exc.filename or out_dir, exc, "write the replay to") from None
        setting, reference, selection = None, None, None
        if verify:
            setting = run_setting(latest, manifest)
            selection = _selection(manifest)

        def make_config(extra: Sequence[str]):
            if verify:
                return verify_config(
                    manifest, setting, simulator, config=config, extra_overrides=extra
                )
            return replay_config(
                manifest, motion, simulator, config=config, extra_overrides=extra
            ), None

        hcfg, reference = make_config(list(extra_overrides))
        _remove_stale(out_dir, rank, world_size, fresh=not given_out and not resume)
        collector = None
        if diagnose:
            from habitat_mosnav.evaluation import replay_diagnosis as rd

            extra = rd.semantic_overrides(hcfg)
            if extra:
                hcfg, reference = make_config(list(extra_overrides) + extra)
            collector = rd.DiagnosisCollector(rd.semantic_uuid(hcfg) or "semantic")
        actions = {
            k: decode_actions(rec[REPLAY_FIELD]["actions"]) for k, (_, rec) in latest.items()
        }
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
            # --verify under a setting: the replayed records carry the setting and the run's
            # deviations from it, recomputed here (compared with the records' own)
            benchmark=setting.name if setting is not None else None,
            num_episodes=selection[3] if setting is not None else -1,
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
        evaluator.run_selection = selection
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
        run_differences: List[Difference] = []
        if verify:
            result.settings = dict(
                benchmark=setting.name if setting is not None else None,
                simulator=result.simulator,
                simulator_version=result.simulator_version,
                **reference,
            )
            run_differences = _run_differences(
                read, latest, reference, evaluator.expected_keys, setting
            )
        for key in sorted(mine):
            recorded = latest[key][1]
            if key not in replayed:
                result.differences.append(Difference(key, "record", "present", "not replayed"))
                continue
            new = replayed[key][1]
            diffs = compare_records(key, recorded, new, cross_simulator=cross, verify=verify)
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
            result.differences.extend(run_differences)
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
            whole.differences.extend(run_differences)
            whole.settings = result.settings
            whole.report_path = os.path.join(out_dir, REPORT_FILE)
            report = dict(whole.report(), world_size=world_size)
            atomic_write_json(whole.report_path, to_jsonable(report, "replay report"))
            result.whole = whole
        return result


def _report_bad_input(run_dir: str, out_dir: Optional[str], simulator: Optional[str], exc) -> None:
    """Records that cannot be compared: ``replay.json`` says so (nothing compared), so an
    earlier replay's report never speaks for these records. Best effort: the exit-2 line
    is the answer; a directory that cannot be written (or a planted link) is left alone."""
    if not os.path.isdir(os.path.join(run_dir, "rank_00000")):
        return  # not a run: nothing of it to report on
    path = os.path.join(out_dir or default_out_dir(run_dir, simulator or "mosnav"), REPORT_FILE)
    report = {
        "status": "bad_input",
        "error": str(exc),
        "episode_count": 0,
        "differing_episode_count": 0,
        "differences": [],
        "near_boundary_flips": [],
    }
    try:
        for d in (run_dir, os.path.join(run_dir, "replay"), os.path.dirname(path), path):
            if os.path.islink(d):
                return
        atomic_write_json(path, report)
    except Exception:  # noqa: BLE001 - best effort (a ResultWriteError included)
        pass


#: The episode key of a difference that concerns the whole run (its set of records).
RUN_KEY = "(run)"


def _run_differences(read, latest, reference, expected, setting) -> List[Difference]:
    """What keeps a run from being verified beyond its episodes' replays: a record whose
    motion settings are not the benchmark's, an episode of the set not recorded, a record
    outside the set, records that are not all there (a partial last line, a rank
    unfinished, a done.json not believed)."""
    out = motion_differences(latest, reference)
    if expected is not None:
        wanted = set(expected)
        missing = [k for k in expected if k not in latest]
        where = f"setting {setting.name}" if setting is not None else "run's selection"
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            out.append(
                Difference(
                    RUN_KEY,
                    f"episodes (missing {missing[0]}{more})",
                    f"{len(expected) - len(missing)} of the {where}'s episodes recorded",
                    f"{len(expected)} episodes",
                )
            )
        out += [
            Difference(key, "record", "recorded", f"not in the {where}'s episode set")
            for key in sorted(latest)
            if key not in wanted
        ]
    if read.incomplete:
        why = (
            read.warnings[0]
            if read.warnings
            else ("a partial last line, an unfinished rank or a rank without done.json")
        )
        out.append(Difference(RUN_KEY, "records", f"incomplete: {why}", "complete"))
    return out


def _check_out_dir(run_dir: str, out_dir: str) -> None:
    """The replay's output never lands where it would corrupt its input: the run directory
    itself, a directory holding it, or anything inside it but its ``replay`` folder (the
    replayed records would mix with the run's); nor inside the run's dataset."""
    from habitat_mosnav.safety import inside

    if inside(run_dir, out_dir):
        raise ReplayInputError(
            f"--out {out_dir}: is or holds the run directory {run_dir} it replays: "
            "choose another directory"
        )
    if inside(out_dir, run_dir) and not inside(out_dir, os.path.join(run_dir, "replay")):
        raise ReplayInputError(
            f"--out {out_dir}: inside the run directory {run_dir} (only its 'replay' "
            "folder may hold replays): choose another directory"
        )


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
        try:  # a link at any component below the root refuses it, never followed
            remove_path(path)
        except OSError as exc:
            raise write_failed(exc.filename or path, exc, "remove the previous replay's") from None


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
