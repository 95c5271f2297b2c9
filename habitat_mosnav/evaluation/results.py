"""Result files of an evaluation run (SPEC §8): per-rank JSONL + done.json, summary.json.

Layout: ``<out>/rank_00000/episodes.jsonl`` (one record per finished or failed episode,
appended, flushed and fsynced so a crash loses at most the line being written),
``<out>/rank_00000/done.json`` (atomic, when the rank finishes) and ``<out>/summary.json``.
Resume truncates a trailing partial line left by a crash, but never deletes a complete line:
a complete invalid line is an error. A failed write (disk full, no permission) truncates
the file back to its last complete record and raises :class:`ResultWriteError` naming the
file (exit 3). While a process writes a rank directory it holds an exclusive
``fcntl.flock`` on ``rank_XXXXX/writer.lock`` (which holds its pid); a second writer is
refused with :class:`RankLockedError`. No torch, no habitat.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import numbers
import os
import re
import signal
import tempfile
import threading
from contextlib import contextmanager
from os import write as _os_write  # one name for the raw write (tests make it fail)
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from habitat_mosnav.keys import scene_name_from_path
from habitat_mosnav.safety import (
    PlantedLinkError,
    file_mode,
    make_dirs,
    mask_secrets,
    open_file,
    open_for_write,
    refuse_link,
    safe_line,
)
from habitat_mosnav.safety import umask as _umask  # noqa: F401  (tests compare modes with it)
from habitat_mosnav.api import TARGET_MODES
from habitat_mosnav.metrics import AGGREGATED_FIELDS, aggregate
from habitat_mosnav.metrics.measure_table import AGGREGATES, format_value

SCHEMA_VERSION = 1
EPISODES_FILE = "episodes.jsonl"
#: ``--log-prompts``: an agent with ``set_log_path`` writes its prompt log here, per rank.
PROMPTS_FILE = "prompts.jsonl"
DONE_FILE = "done.json"
SUMMARY_FILE = "summary.json"
#: Held with ``fcntl.flock`` by the process writing a rank directory; holds its pid.
LOCK_FILE = "writer.lock"
#: Files of a rank directory that are not results (a directory with only these is empty).
_NOT_RESULTS = frozenset({LOCK_FILE})
RANK_DIR_RE = re.compile(r"^rank_(\d{5})$")

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
TERMINATIONS = ("finish", "target_found", "max_steps", "error")
STATUSES = ("ok", "error")
# Absolute paths (POSIX or Windows) inside messages are replaced by this.
_PATH_RE = re.compile(r"(?<![^\s'\"=(\[:,])(?:[A-Za-z]:\\|/)[^\s'\",)\]]+")


class ResultFileError(ValueError):
    """A result file or directory that cannot be used (message names file and line)."""


class RankLockedError(ResultFileError):
    """Another live process is writing this rank directory (message names its pid)."""


class ResultWriteError(Exception):
    """A result file could not be written (disk full, no permission): one line naming the
    file; the file is left at its last complete record. The CLI exits with status 3."""

    def __init__(self, message: str, errno_: Optional[int] = None) -> None:
        super().__init__(message)
        self.errno = errno_


def write_failed(path: str, exc: OSError, what: str = "write") -> ResultWriteError:
    reason = (
        exc.strerror
        or (os.strerror(exc.errno) if exc.errno else "")
        or str(exc)
        or type(exc).__name__
    )
    hint = (
        "; free some space, then continue with --resume"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT)
        else ""
    )
    return ResultWriteError(f"cannot {what} {path}: {reason}{hint}", exc.errno)


def has_results(directory: str) -> bool:
    """Whether a rank directory holds anything but its lock file."""
    return os.path.isdir(directory) and any(
        name not in _NOT_RESULTS for name in os.listdir(directory)
    )


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


def refuse_existing(out_dir: str, rank: int) -> None:
    """A fresh start (no ``--resume``) on a rank directory with results is refused."""
    directory = rank_dir(out_dir, rank)
    if has_results(directory):
        raise ResultFileError(
            f"output directory {out_dir} already has results in {os.path.basename(directory)}; "
            f"pass --resume to continue that run, or choose a new --output-dir"
        )


@contextmanager
def signals_deferred():
    """SIGINT/SIGTERM wait until the block is done (a record is never torn by Ctrl-C or
    SLURM's SIGTERM): while it runs, their Python handlers are swapped for one that only
    notes the signal; afterwards the usual handler gets it. (Python runs signal handlers
    in the main thread, whichever thread the kernel picked, so this holds with threads.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: List[int] = []
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in wanted}
    previous = {s: h for s, h in previous.items() if h is not None}  # None: not set from Python
    for s in previous:
        signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(caught):
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = _os_write(fd, view)
        view = view[n:]


def fsync_dir(directory: str) -> None:
    """fsync a directory, so a file created or renamed in it survives a power cut."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory
    finally:
        os.close(fd)


def rank_dir(out_dir: str, rank: int) -> str:
    return os.path.join(out_dir, f"rank_{int(rank):05d}")


# ----------------------------------------------------------------------------- records


def _finite(x) -> Optional[float]:
    x = float(x)
    return x if math.isfinite(x) else None


#: The largest magnitude of an integer or float a record holds: a 5000-digit integer
#: from an agent cannot be written (nor read back), a 1e308 would overflow any mean.
MAX_RECORD_INT = 2**63
MAX_RECORD_NUMBER = 1e15


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
    is stored as ``replay``."""
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


def atomic_write_json(path: str, data: Mapping[str, Any], *, exclusive: bool = False) -> bool:
    """Write JSON to a temp file in the same directory, fsync, then rename it over ``path``
    and fsync the directory. The file gets the usual mode (0666 minus the umask, 0644
    by default), like episodes.jsonl. ``exclusive``: never replace an existing file (the
    first writer wins; returns False when ``path`` already existed). A failure raises
    :class:`ResultWriteError` naming ``path`` and leaves no temp file."""
    directory = os.path.dirname(os.path.abspath(path))
    text = mask_secrets(json.dumps(data, indent=2, allow_nan=False)) + "\n"
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        refuse_link(path)
        fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=".json", dir=directory)
        try:
            os.fchmod(fd, file_mode())
            _write_all(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
                tmp = None
        else:
            refuse_link(path)
            os.replace(tmp, path)
            tmp = None
        fsync_dir(directory)
        return True
    except OSError as exc:
        raise write_failed(path, exc) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _check_number(value, where: str, name: str) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)) and abs(value) <= MAX_RECORD_NUMBER:
        return
    shown = "a huge integer" if isinstance(value, int) else json.dumps(value)[:40]
    raise ResultFileError(
        f"{where}: field {name!r} must be a number of magnitude <= "
        f"{MAX_RECORD_NUMBER:g} or null, got {shown}"
    )


def _check_record(obj, path: str, lineno: int) -> Dict[str, Any]:
    """The shape every reader relies on (one line naming file:line and field otherwise):
    ``episode``, ``metrics`` and ``initial_metrics`` objects, ``report_events`` a list of
    objects, metric values numbers of sane magnitude (a 1e308 or 10**400 would overflow
    a mean), ``steps_taken`` an integer."""
    where = f"{path}:{lineno}"
    if not isinstance(obj, dict):
        raise ResultFileError(f"{where}: a record must be a JSON object")
    if not isinstance(obj.get("episode_key"), str):
        raise ResultFileError(f"{where}: field 'episode_key' is missing or not a string")
    if obj.get("status") not in STATUSES:
        raise ResultFileError(
            f"{where}: field 'status' must be 'ok' or 'error', got {obj.get('status')!r}"
        )
    for name in ("episode", "metrics", "initial_metrics"):
        if name in obj and obj[name] is not None and not isinstance(obj[name], dict):
            raise ResultFileError(
                f"{where}: field {name!r} must be an object, got {type(obj[name]).__name__}"
            )
    for name in ("metrics", "initial_metrics"):
        for key, value in (obj.get(name) or {}).items():
            if not isinstance(value, (str, list, dict)):
                _check_number(value, where, f"{name}.{key}")
    events = obj.get("report_events")
    if events is not None and (
        not isinstance(events, list) or not all(isinstance(ev, dict) for ev in events)
    ):
        raise ResultFileError(f"{where}: field 'report_events' must be a list of objects")
    steps = obj.get("steps_taken")
    if steps is not None and (
        isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= MAX_RECORD_INT
    ):
        raise ResultFileError(f"{where}: field 'steps_taken' must be a non-negative integer")
    episode = obj.get("episode") or {}
    for name in ("target_count",):
        if name in episode and not isinstance(episode[name], (str, list, dict)):
            _check_number(episode[name], where, f"episode.{name}")
    return obj


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a record may hold")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is too large for a record")
    return int(text)


def parse_record_json(text: str):
    """``json.loads`` for result files: ``NaN``/``Infinity`` and integers of more than 19
    digits are refused (ValueError), never handed to a mean or a plot."""
    return json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int)


def read_jsonl(path: str, truncate_partial: bool = False) -> Tuple[List[Dict[str, Any]], bool]:
    """Records of an episodes.jsonl and whether a trailing partial line was found.

    A last line without its newline that does not parse is a crash's partial write: it is
    truncated from the file when ``truncate_partial`` (resume), otherwise ignored. A
    complete line that is not a valid record raises :class:`ResultFileError` naming the
    file and line number; it is never deleted.
    """
    with open(path, "rb") as f:
        data = f.read()
    partial = False
    body = data
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        try:
            parse_record_json(tail.decode("utf-8"))
            tail_ok = True
        except (UnicodeDecodeError, ValueError):
            tail_ok = False
        if tail_ok:  # a complete record that only lost its newline
            if truncate_partial:
                with open_file(path, "ab") as f:
                    f.write(b"\n")
                    f.flush()
                    os.fsync(f.fileno())
        else:
            partial = True
            body = data[:cut]
            if truncate_partial:
                with open_file(path, "r+b") as f:
                    f.truncate(cut)
                    f.flush()
                    os.fsync(f.fileno())
    records = []
    for lineno, raw in enumerate(body.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = parse_record_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ResultFileError(
                f"{path}:{lineno}: invalid JSON line ({exc}); it is not deleted — fix or "
                f"remove it by hand, or use a new output directory"
            ) from None
        records.append(_check_record(obj, path, lineno))
    return records, partial


def read_json_object(path: str) -> Dict[str, Any]:
    """A JSON file holding one object; :class:`ResultFileError` (one line naming the
    file) when it does not parse or is not an object."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            data = parse_record_json(f.read())
    except ValueError as exc:
        raise ResultFileError(f"{path}: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: must be a JSON object")
    return data


def read_done(path: str) -> Optional[Dict[str, Any]]:
    """A rank's done.json, or None when it is missing."""
    if not os.path.exists(path):
        return None
    done = read_json_object(path)
    for name in ("rank", "expected_count", "record_count", "error_count"):
        if isinstance(done.get(name), bool) or not isinstance(done.get(name), int):
            raise ResultFileError(f"{path}: field {name!r} is missing or not an integer")
    if done.get("status") not in ("complete", "completed_with_errors", "incomplete"):
        raise ResultFileError(f"{path}: field 'status' is {done.get('status')!r}")
    return done


def write_done(
    out_dir: str,
    rank: int,
    *,
    expected_count: int,
    record_count: int,
    error_count: int,
    status: Optional[str] = None,
) -> Dict[str, Any]:
    """Atomically write ``rank_XXXXX/done.json``; ``status`` defaults to incomplete when
    records are missing, completed_with_errors with errors, else complete."""
    if status is None:
        if record_count < expected_count:
            status = "incomplete"
        elif error_count:
            status = "completed_with_errors"
        else:
            status = "complete"
    done = {
        "schema_version": SCHEMA_VERSION,
        "rank": int(rank),
        "status": status,
        "expected_count": int(expected_count),
        "record_count": int(record_count),
        "error_count": int(error_count),
    }
    atomic_write_json(os.path.join(rank_dir(out_dir, rank), DONE_FILE), done)
    return done


class RankWriter:
    """Appends this rank's records to ``<out>/rank_XXXXX/episodes.jsonl``.

    The rank directory is locked (``fcntl.flock`` on ``writer.lock``) from the start until
    :meth:`close`; a second writer gets :class:`RankLockedError` naming the holder's pid.
    A rank directory that already holds results is refused unless ``resume``; with
    ``resume`` a crash's partial last line is truncated, the stale done.json is removed
    and :attr:`finished_keys` holds the keys already recorded (skip them). ``record_count``
    counts lines; ``error_count`` counts keys whose *last* record is an error, so an
    episode re-run with ``--retry-errors`` that now succeeds is no longer an error.
    A write that fails (disk full) truncates the file back to its last complete record
    and raises :class:`ResultWriteError`; after space is freed ``resume`` continues.
    """

    def __init__(self, out_dir: str, rank: int = 0, resume: bool = False):
        self.out_dir = out_dir
        self.rank = int(rank)
        self.dir = rank_dir(out_dir, rank)
        self.path = os.path.join(self.dir, EPISODES_FILE)
        self.done_path = os.path.join(self.dir, DONE_FILE)
        self.lock_path = os.path.join(self.dir, LOCK_FILE)
        self.finished: Dict[str, str] = {}  # key → status of its last record
        self.record_count = 0
        self.truncated_partial_line = False
        self._fd: Optional[int] = None
        self._lock_fd: Optional[int] = None
        if os.path.exists(self.dir) and not os.path.isdir(self.dir):
            raise ResultFileError(f"{self.dir} exists and is not a directory")
        if not resume:
            refuse_existing(out_dir, rank)
        try:
            make_dirs(self.dir)
        except OSError as exc:
            raise write_failed(self.dir, exc, "create") from None
        self._lock()
        try:
            try:
                refuse_link(self.path)  # before a resume repairs it or a run appends to it
            except PlantedLinkError as exc:
                raise write_failed(self.path, exc, "open") from None
            if resume:
                self._load_existing()
            try:
                self._fd = open_for_write(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                self._size = os.fstat(self._fd).st_size
            except OSError as exc:
                raise write_failed(self.path, exc, "open") from None
            fsync_dir(self.dir)
        except BaseException:
            self.close()
            raise

    def _lock(self) -> None:
        try:
            fd = open_for_write(self.lock_path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise write_failed(self.lock_path, exc, "create") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RankLockedError(
                    f"{self.dir} is being written by another process (pid {holder}, lock "
                    f"{self.lock_path}); wait for it to end or stop it, then --resume"
                ) from None
            raise write_failed(self.lock_path, exc, "lock") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:
            pass  # the lock holds without the pid (e.g. disk full)
        self._lock_fd = fd

    def _load_existing(self) -> None:
        if os.path.exists(self.path):
            try:
                records, self.truncated_partial_line = read_jsonl(self.path, truncate_partial=True)
            except OSError as exc:
                raise write_failed(self.path, exc, "repair") from None
            for rec in records:
                self.finished[rec["episode_key"]] = rec["status"]
                self.record_count += 1
        if os.path.exists(self.done_path):
            os.unlink(self.done_path)  # rewritten when this run finishes

    @property
    def finished_keys(self) -> Set[str]:
        return set(self.finished)

    @property
    def error_keys(self) -> Set[str]:
        """Keys whose last record is an error (re-run by ``--retry-errors``)."""
        return {k for k, status in self.finished.items() if status == "error"}

    @property
    def error_count(self) -> int:
        return sum(status == "error" for status in self.finished.values())

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line, then flush and fsync."""
        if not isinstance(record.get("episode_key"), str) or record.get("status") not in STATUSES:
            raise ValueError(
                f"{self.path}: a record needs a string 'episode_key' and a status "
                f"in {STATUSES}, got {record.get('episode_key')!r}/{record.get('status')!r}"
            )
        line = mask_secrets(
            json.dumps(record, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        )
        data = (line + "\n").encode("utf-8")
        if self._fd is None:
            raise ResultWriteError(f"cannot write {self.path}: the writer is closed")
        with signals_deferred():
            try:
                _write_all(self._fd, data)
                os.fsync(self._fd)
            except BaseException as exc:
                self._cut_back()
                if isinstance(exc, OSError):
                    raise write_failed(self.path, exc) from None
                raise
            self._size += len(data)
        self.finished[record["episode_key"]] = record["status"]
        self.record_count += 1

    def _cut_back(self) -> None:
        """Truncate episodes.jsonl to its last complete record (a torn write is removed;
        truncating needs no free space)."""
        try:
            os.ftruncate(self._fd, self._size)
            os.fsync(self._fd)
        except OSError:
            pass

    def write_done(
        self,
        expected_count: int,
        status: Optional[str] = None,
        expected_keys: Optional[Iterable[str]] = None,
    ) -> Dict[str, Any]:
        """done.json for this rank. The status follows the unique keys recorded (of
        ``expected_keys`` when given), not the line count, which repeats re-run keys."""
        if status is None:
            keys = set(self.finished)
            if expected_keys is not None:
                keys &= set(expected_keys)
            if len(keys) < expected_count:
                status = "incomplete"
            elif any(self.finished[k] == "error" for k in keys):
                status = "completed_with_errors"
            else:
                status = "complete"
        return write_done(
            self.out_dir,
            self.rank,
            expected_count=expected_count,
            record_count=self.record_count,
            error_count=self.error_count,
            status=status,
        )

    def close(self) -> None:
        """Close the file and release the rank directory's lock."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ----------------------------------------------------------------------------- summary


def _rank_dirs(out_dir: str) -> List[Tuple[int, str]]:
    if not os.path.isdir(out_dir):
        raise ResultFileError(f"{out_dir}: no such directory")
    found = []
    for name in sorted(os.listdir(out_dir)):
        m = RANK_DIR_RE.match(name)
        if m and os.path.isdir(os.path.join(out_dir, name)):
            found.append((int(m.group(1)), os.path.join(out_dir, name)))
    if not found:
        raise ResultFileError(
            f"{out_dir}: no rank_XXXXX result directories (not an evaluation output)"
        )
    return found


def _check_metrics(metrics: Mapping[str, Any], where: str) -> None:
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


class RunRead(NamedTuple):
    """What :func:`read_run` found in an output directory."""

    #: latest record per key, ``key -> ("file:line", record)``, in the order of last records
    latest: Dict[str, Tuple[str, Dict[str, Any]]]
    record_count: int  #: record lines counted
    incomplete: bool  #: a rank unfinished, a partial line, a done.json not believed, ...
    dones: List[Optional[Dict[str, Any]]]  #: each rank's done.json or None
    manifest: Optional[Dict[str, Any]] = None  #: the run's run.json (None: a run without one)
    warnings: Tuple[str, ...] = ()  #: why the run cannot be complete, one line each


def _done_problem(
    done: Mapping[str, Any],
    path: str,
    rank: int,
    records: Sequence[Mapping],
    manifest: Optional[Mapping[str, Any]],
) -> Optional[str]:
    """Why a rank's done.json is not believed (its counts are recounted from the rank's
    records and, with a manifest, its share of the selection), or None."""
    last: Dict[str, str] = {}
    for rec in records:
        last[rec["episode_key"]] = rec["status"]
    errors = sum(status == "error" for status in last.values())
    expected = None
    if manifest is not None:
        selection = (
            manifest.get("selection") if isinstance(manifest.get("selection"), Mapping) else {}
        )
        count, world = selection.get("episode_count"), manifest.get("world_size")
        if isinstance(count, int) and isinstance(world, int) and world >= 1:
            expected = len(range(rank, count, world))
    for name, found in (
        ("rank", rank),
        ("record_count", len(records)),
        ("error_count", errors),
        ("expected_count", expected),
    ):
        if found is not None and done[name] != found:
            return (
                f"{path}: field {name!r} says {done[name]}, the records say {found}: "
                f"done.json not believed (run the rank again with --resume)"
            )
    if done["status"] != "incomplete" and len(last) < done["expected_count"]:
        return (
            f"{path}: status {done['status']!r} with {len(last)} of {done['expected_count']} "
            "episodes recorded: done.json not believed"
        )
    return None


def read_run(out_dir: str, expected_keys: Optional[Iterable[str]] = None) -> RunRead:
    """Read every rank of a run (:class:`RunRead`). With ``expected_keys`` only the
    records of those keys count.

    A run with a ``run.json`` is checked first: every rank directory must hold the same
    manifest (a rank of another run — other agent, seed or settings — is refused naming
    the field, :class:`~habitat_mosnav.evaluation.manifest.ManifestMismatch`). An episode
    key recorded by two ranks is an error naming both lines (within a rank, a re-run's
    later record wins). A done.json whose counts disagree with the records is not believed:
    the rank counts as unfinished, with a warning."""
    from habitat_mosnav.evaluation.manifest import check_rank_manifests

    ranks = _rank_dirs(out_dir)
    manifest = check_rank_manifests(out_dir, ranks)
    all_records: List[Tuple[str, Dict[str, Any]]] = []
    owner: Dict[str, Tuple[int, str]] = {}
    incomplete = False
    dones = []
    warnings: List[str] = []
    for rank, path in ranks:
        jsonl = os.path.join(path, EPISODES_FILE)
        records: List[Dict[str, Any]] = []
        if os.path.exists(jsonl):
            records, partial = read_jsonl(jsonl)
            incomplete |= partial
        for i, rec in enumerate(records, start=1):
            where = f"{jsonl}:{i}"
            first = owner.setdefault(rec["episode_key"], (rank, where))
            if first[0] != rank:
                raise ResultFileError(
                    f"{where}: episode {rec['episode_key']!r} is also recorded by rank {first[0]} "
                    f"({first[1]}); an episode belongs to one rank (records copied between runs "
                    "or ranks?)"
                )
            all_records.append((where, rec))
        done_path = os.path.join(path, DONE_FILE)
        done = read_done(done_path)
        dones.append(done)
        problem = (
            _done_problem(done, done_path, rank, records, manifest) if done is not None else None
        )
        if problem is not None:
            warnings.append(problem)
        if done is None or done["status"] == "incomplete" or problem is not None:
            incomplete = True
    if expected_keys is not None:
        wanted = set(expected_keys)
        all_records = [(w, r) for w, r in all_records if r["episode_key"] in wanted]
    latest: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    for where, rec in all_records:
        latest.pop(rec["episode_key"], None)  # re-insert so order follows the last record
        latest[rec["episode_key"]] = (where, rec)
    return RunRead(latest, len(all_records), incomplete, dones, manifest, tuple(warnings))


def latest_records(out_dir: str) -> "Dict[str, Tuple[str, Dict[str, Any]]]":
    """Each episode key's last record of a run: ``key -> ("file:line", record)``."""
    return read_run(out_dir)[0]


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
    latest, record_count, incomplete, dones, manifest, warnings = read
    warnings = list(warnings)
    selection = (manifest or {}).get("selection")
    selection = selection if isinstance(selection, Mapping) else {}
    if expected_episode_count is None and isinstance(selection.get("episode_count"), int):
        expected_episode_count = selection["episode_count"]  # the run's, not the ranks' word
    if expected_episode_count is None and all(d is not None for d in dones):
        expected_episode_count = sum(d["expected_count"] for d in dones)
    digest = selection.get("keys_sha256")
    if isinstance(digest, str) and len(latest) >= (expected_episode_count or 0):
        from habitat_mosnav.evaluation.manifest import keys_digest

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
        if mode not in TARGET_MODES:
            raise ResultFileError(f"{where}: field 'episode.target_mode' is {mode!r}")
        goal_type = episode.get("goal_type")
        if not isinstance(goal_type, str) or not goal_type:
            raise ResultFileError(f"{where}: field 'episode.goal_type' is {goal_type!r}")
        metrics = rec.get("metrics")
        if not isinstance(metrics, dict):
            raise ResultFileError(f"{where}: field 'metrics' is missing or not an object")
        _check_metrics(metrics, where)
        ok.append((mode, metrics))
        by_goal_type.setdefault(goal_type, []).append((mode, metrics))

    if expected_episode_count is not None and len(latest) < expected_episode_count:
        incomplete = True
    status = "incomplete" if incomplete else ("completed_with_errors" if errors else "complete")
    summary = {
        "schema_version": SCHEMA_VERSION,
        "status": status,
        "expected_episode_count": expected_episode_count,
        "record_count": record_count,
        "unique_record_count": len(latest),
        "ok_episode_count": len(ok),
        "error_episode_count": errors,
        "metrics": aggregate(ok),
        # the same SPEC §5 aggregates over each goal type's ok episodes (GOAT's per-modality view)
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
    from habitat_mosnav.versions import software_versions

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
        "  ".join(f"{mode} {m.get('num_episodes_' + mode, 0)}" for mode in TARGET_MODES),
    ]
    width = max(len(label) for label, _, _ in _TABLE)
    for label, key, fmt in _TABLE:
        value = m.get(key)
        if value is None:
            continue
        lines.append(f"  {label:<{width}}  {format_value(value, fmt, 4)}")
    lines += goal_type_lines(summary)
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
