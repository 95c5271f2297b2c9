"""The files of a rank directory (SPEC §8): ``<out>/rank_00000/episodes.jsonl`` (one record
per finished or failed episode, appended, flushed and fsynced so a crash loses at most the
line being written) and ``done.json`` (atomic, when the rank finishes); reading them back
for a whole run (:func:`read_run`, a :class:`RunRead`).

Resume truncates a trailing partial line left by a crash, but never deletes a complete line:
a complete invalid line is an error. A failed write (disk full, no permission) truncates
the file back to its last complete record and raises
:class:`~habitat_mosnav.evaluation.durable.ResultWriteError` naming the file (exit 3).
While a process writes a rank directory it holds an exclusive ``fcntl.flock`` on
``rank_XXXXX/writer.lock`` (which holds its pid); a second writer is refused with
:class:`~habitat_mosnav.evaluation.durable.RankLockedError`. No torch, no habitat.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from habitat_mosnav.evaluation.durable import (
    RankLockedError,
    ResultFileError,
    ResultWriteError,
    atomic_write_json,
    parse_record_json,
    read_json_object,
    signals_deferred,
    write_failed,
)
from habitat_mosnav.evaluation.manifest import check_rank_manifests
from habitat_mosnav.evaluation.records import SCHEMA_VERSION, STATUSES, check_record
from habitat_mosnav.safety import (
    MAX_RECORDS_BYTES,
    InputFileError,
    PlantedLinkError,
    fsync_dir,
    make_dirs,
    mask_secrets,
    open_file,
    open_for_write,
    read_input,
    refuse_link,
    write_all,
)

EPISODES_FILE = "episodes.jsonl"
#: ``--log-prompts``: an agent with ``set_log_path`` writes its prompt log here, per rank.
PROMPTS_FILE = "prompts.jsonl"
DONE_FILE = "done.json"
#: Held with ``fcntl.flock`` by the process writing a rank directory; holds its pid.
LOCK_FILE = "writer.lock"
#: Files of a rank directory that are not results (a directory with only these is empty).
_NOT_RESULTS = frozenset({LOCK_FILE})
RANK_DIR_RE = re.compile(r"^rank_(\d{5})$")


def has_results(directory: str) -> bool:
    """Whether a rank directory holds anything but its lock file."""
    return os.path.isdir(directory) and any(
        name not in _NOT_RESULTS for name in os.listdir(directory)
    )


def refuse_existing(out_dir: str, rank: int) -> None:
    """A fresh start (no ``--resume``) on a rank directory with results is refused."""
    directory = rank_dir(out_dir, rank)
    if has_results(directory):
        raise ResultFileError(
            f"output directory {out_dir} already has results in {os.path.basename(directory)}; "
            f"pass --resume to continue that run, or choose a new --output-dir"
        )


def rank_dir(out_dir: str, rank: int) -> str:
    return os.path.join(out_dir, f"rank_{int(rank):05d}")


def read_jsonl(path: str, truncate_partial: bool = False) -> Tuple[List[Dict[str, Any]], bool]:
    """Records of an episodes.jsonl and whether a trailing partial line was found.

    A last line without its newline that does not parse is a crash's partial write: it is
    truncated from the file when ``truncate_partial`` (resume), otherwise ignored. A
    complete line that is not a valid record raises :class:`ResultFileError` naming the
    file and line number; it is never deleted.
    """
    try:
        data = read_input(path, MAX_RECORDS_BYTES)  # a regular file, bounded: never a FIFO
    except InputFileError as exc:
        raise ResultFileError(str(exc)) from None
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
        records.append(check_record(obj, path, lineno))
    return records, partial


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
                write_all(self._fd, data)
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


@dataclass(frozen=True)
class RunRead:
    """What :func:`read_run` found in an output directory (read by field name)."""

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
    return RunRead(
        latest=latest,
        record_count=len(all_records),
        incomplete=incomplete,
        dones=dones,
        manifest=manifest,
        warnings=tuple(warnings),
    )


def latest_records(out_dir: str) -> "Dict[str, Tuple[str, Dict[str, Any]]]":
    """Each episode key's last record of a run: ``key -> ("file:line", record)``."""
    return read_run(out_dir).latest
