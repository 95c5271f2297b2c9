"""Episode records of SPEC §8: the schema (fields, terminations, statuses), building one
(:func:`make_record`, converting numpy/quaternions to plain JSON) and the checks every
reader relies on (:func:`check_record`, :func:`check_metrics`). No file I/O."""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from habitat_mosnav.evaluation.durable import ResultFileError
from habitat_mosnav.keys import scene_name_from_path
from habitat_mosnav.metrics import AGGREGATED_FIELDS
from habitat_mosnav.schemas import first_error, load

SCHEMA_VERSION = 1

EPISODE_FIELDS = (
    "scene_id",
    "episode_id",
    "query_id",
    "target_mode",
    "goal_type",
    "target_count",
    "target_object_ids",
    "max_steps",
)
#: The record block ``subtask_metrics`` of a ``sequential`` episode (SPEC §11): one list
#: entry per subtask (``goal_types`` strings, the others numbers or null).
SUBTASK_METRIC_FIELDS = tuple(load("record")["properties"]["subtask_metrics"]["properties"])
TERMINATIONS = ("finish", "target_found", "max_steps", "error")
STATUSES = tuple(load("record")["properties"]["status"]["enum"])  # ok, error
# Absolute paths (POSIX or Windows) inside messages are replaced by this.
_PATH_RE = re.compile(r"(?<![^\s'\"=(\[:,])(?:[A-Za-z]:\\|/)[^\s'\",)\]]+")


# ----------------------------------------------------------------------------- records


def records_digest(latest: Mapping[str, Tuple[str, Mapping[str, Any]]]) -> str:
    """sha256 of a run's records (each key's last record, canonical JSON, by key): what a
    replay rank's part and a ``--verify`` mark were made from, so a later edit shows."""
    import hashlib

    h = hashlib.sha256()
    for key in sorted(latest):
        h.update(json.dumps([key, latest[key][1]], sort_keys=True, allow_nan=True).encode())
    return h.hexdigest()


def _finite(x) -> Optional[float]:
    x = float(x)
    return x if math.isfinite(x) else None


#: The largest integer a record holds: a 5000-digit integer from an agent cannot be
#: written (nor read back). (Readers also refuse numbers a mean overflows: the schema.)
MAX_RECORD_INT = 2**63


def checked_int(value, where: str = "value") -> int:
    value = int(value)
    if not -MAX_RECORD_INT <= value <= MAX_RECORD_INT:
        raise ValueError(
            f"{where}: an integer of {value.bit_length()} bits is too large for a "
            f"record (at most 2**63)"
        )
    return value


def scalar_or_none(value) -> Tuple[bool, Any]:
    """(is_scalar, JSON value): bool/int stay, floats become None when NaN/inf."""
    if value is None:
        return True, None
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # numpy scalar / 0-d
        value = value.item()
    if isinstance(value, bool):
        return True, value
    if isinstance(value, numbers.Integral):
        return True, int(value)
    if isinstance(value, numbers.Real):
        return True, _finite(value)
    return False, None


def scalar_metrics(metrics: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Only the scalar metrics (maps, images, lists dropped); NaN/inf → None."""
    out: Dict[str, Any] = {}
    for key, value in (metrics or {}).items():
        ok, v = scalar_or_none(value)
        if ok:
            out[str(key)] = v
    return out


def to_jsonable(obj, where: str = "value"):
    """Plain JSON types from numpy arrays/scalars, quaternions (→ [x, y, z, w]) and
    containers; non-finite floats → None. Anything else is an error naming ``where``."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, numbers.Integral):
        return checked_int(obj, where)
    if isinstance(obj, numbers.Real):
        return _finite(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v, f"{where}.{k}") for k, v in obj.items()}
    if all(hasattr(obj, c) for c in ("w", "x", "y", "z")) and not isinstance(obj, (list, tuple)):
        return [to_jsonable(getattr(obj, c), where) for c in ("x", "y", "z", "w")]  # quaternion
    if hasattr(obj, "tolist") and hasattr(obj, "dtype"):  # numpy array / scalar
        return to_jsonable(obj.tolist(), where)
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v, f"{where}[{i}]") for i, v in enumerate(items)]
    raise ValueError(f"{where}: cannot write a {type(obj).__name__} to JSON")


def compact_positions(positions, where: str = "positions") -> List[List[float]]:
    """``[[x, y, z], ...]`` rounded to 1 mm (about 25 bytes a step in JSON)."""
    out = []
    for i, p in enumerate(positions):
        xyz = to_jsonable(p, f"{where}[{i}]")
        if not isinstance(xyz, list) or len(xyz) != 3 or any(v is None for v in xyz):
            raise ValueError(f"{where}[{i}]: expected 3 finite numbers, got {p!r}")
        out.append([round(float(v), 3) for v in xyz])
    return out


def scrub_paths(message: str) -> str:
    """Replace absolute paths in a message by ``<path>``."""
    return _PATH_RE.sub("<path>", str(message))


def error_info(error: BaseException, message: Optional[str] = None) -> Dict[str, str]:
    """``error_type`` and a generic message (never a traceback; absolute paths removed)."""
    error_type = error if isinstance(error, str) else type(error).__name__
    text = message if message is not None else f"episode failed with {error_type}"
    return {"error_type": str(error_type), "error_message": scrub_paths(text)}


def make_record(
    *,
    episode_key: str,
    episode_index: int,
    rank: int,
    seed: int,
    episode: Mapping[str, Any],
    status: str = "ok",
    steps_taken: int = 0,
    terminated_by: str = "max_steps",
    initial_metrics: Optional[Mapping] = None,
    metrics: Optional[Mapping] = None,
    report_events: Iterable = (),
    subtask_metrics: Optional[Mapping[str, Any]] = None,
    initial_agent_state=None,
    final_agent_state=None,
    action_trace=None,
    positions=None,
    error=None,
    error_message: Optional[str] = None,
    extras: Optional[Mapping[str, Any]] = None,
    benchmark: Optional[Mapping[str, Any]] = None,
    replay: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """One JSONL record of SPEC §8. ``episode`` may hold more fields: only the logical
    identifiers are kept (no scene path). ``error`` (an exception or a type name) makes it
    an error record with ``error_type`` and a generic ``error_message``. ``extras`` (e.g.
    ``{"agent": agent.episode_stats()}``) is stored as ``extras`` when given, converted to
    plain JSON types (a value that cannot be converted raises ValueError naming it).
    ``benchmark`` (the run's benchmark setting and its deviations) is stored as ``benchmark``.
    ``positions`` (the agent's ``[x, y, z]`` after each step, index 0 = start) is stored
    rounded to millimetres (:func:`compact_positions`) for maps and videos. ``replay``
    (the actions, start and motion settings, :mod:`~habitat_mosnav.evaluation.replay_data`)
    is stored as ``replay``. ``subtask_metrics`` (a ``sequential`` episode's per-subtask
    lists, :data:`SUBTASK_METRIC_FIELDS`) is stored as ``subtask_metrics``; the block is
    absent from the records of the other modes."""
    if status not in STATUSES:
        raise ValueError(f"record {episode_key}: status must be one of {STATUSES}, got {status!r}")
    if error is not None:
        status, terminated_by = "error", "error"
    if terminated_by not in TERMINATIONS:
        raise ValueError(
            f"record {episode_key}: terminated_by must be one of {TERMINATIONS}, "
            f"got {terminated_by!r}"
        )
    ep = {name: to_jsonable(episode.get(name), f"episode.{name}") for name in EPISODE_FIELDS}
    if isinstance(ep["scene_id"], str):  # habitat's Episode.scene_id is a file path
        ep["scene_id"] = scene_name_from_path(ep["scene_id"])
    record: Dict[str, Any] = {
        "episode_key": str(episode_key),
        "episode_index": int(episode_index),
        "rank": int(rank),
        "status": status,
        "seed": int(seed),
        "episode": ep,
        "steps_taken": int(steps_taken),
        "terminated_by": terminated_by,
        "initial_metrics": scalar_metrics(initial_metrics),
        "metrics": scalar_metrics(metrics),
        "report_events": to_jsonable(list(report_events or []), "report_events"),
        "initial_agent_state": to_jsonable(initial_agent_state, "initial_agent_state"),
        "final_agent_state": to_jsonable(final_agent_state, "final_agent_state"),
    }
    if subtask_metrics is not None:
        record["subtask_metrics"] = to_jsonable(dict(subtask_metrics), "subtask_metrics")
    if action_trace is not None:
        record["action_trace"] = to_jsonable(list(action_trace), "action_trace")
    if benchmark is not None:
        record["benchmark"] = to_jsonable(dict(benchmark), "benchmark")
    if replay is not None:
        record["replay"] = to_jsonable(dict(replay), "replay")
    if positions is not None:
        record["positions"] = compact_positions(positions, f"record {episode_key}: positions")
    if extras is not None:
        if not isinstance(extras, Mapping):
            raise ValueError(
                f"record {episode_key}: extras must be a mapping, got {type(extras).__name__}"
            )
        record["extras"] = to_jsonable(extras, "extras")
    if status == "error":
        record.update(error_info(error if error is not None else "EpisodeError", error_message))
    return record


# ----------------------------------------------------------------------------- files


def check_record(obj, path: str, lineno: int) -> Dict[str, Any]:
    """The shape every reader relies on (``schemas/record.schema.json``; one line naming
    file:line and field otherwise) and ``subtask_metrics``' lists of one length."""
    where = f"{path}:{lineno}"
    problem = first_error(obj, "record", where)
    if problem is not None:
        raise ResultFileError(problem)
    block = obj.get("subtask_metrics") or {}
    lengths = {k: len(block[k]) for k in SUBTASK_METRIC_FIELDS if block.get(k) is not None}
    for name, n in lengths.items():
        first = SUBTASK_METRIC_FIELDS[0]
        if n != lengths[first]:
            raise ResultFileError(
                f"{where}: field 'subtask_metrics.{name}' has {n} entries, "
                f"'subtask_metrics.{first}' {lengths[first]} (one per subtask)"
            )
    return obj


def check_metrics(metrics: Mapping[str, Any], where: str) -> None:
    """An aggregated field must be a number or null: a string ("0.5") or a boolean is an
    error naming the file and line, never silently dropped or counted as 1.0."""
    for name in AGGREGATED_FIELDS:
        value = metrics.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ResultFileError(
                f"{where}: field 'metrics.{name}' must be a number or null, "
                f"got {json.dumps(value)[:40]}"
            )
