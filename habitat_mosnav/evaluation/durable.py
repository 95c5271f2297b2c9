"""Durable result files: atomic JSON writes with fsync, the raw write that a full disk
fails, the errors a reader or writer raises (one line naming the file), strict JSON
parsing (no NaN, no huge integers) and deferring Ctrl-C/SIGTERM while a record is written.
Standard library only; the evaluation modules above build their files on it."""

from __future__ import annotations

import errno
import json
import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from os import write as _os_write  # one name for the raw write (tests make it fail)
from typing import Any, Dict, List, Mapping, Optional

from habitat_mosnav.safety import (
    MAX_JSON_BYTES,
    InputFileError,
    file_mode,
    make_dirs,
    mask_secrets,
    read_input_text,
    refuse_link,
)
from habitat_mosnav.safety import umask as _umask  # noqa: F401  (tests compare modes with it)


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


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type name when it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


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


def write_all(fd: int, data: bytes) -> None:
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
        make_dirs(directory)  # never through a link below an output root
        refuse_link(path)
        fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=".json", dir=directory)
        try:
            os.fchmod(fd, file_mode())
            write_all(fd, text.encode("utf-8"))
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


def read_json_object(path: str) -> Dict[str, Any]:
    """A JSON file holding one object; :class:`ResultFileError` (one line naming the
    file) when it does not parse or is not an object."""
    try:
        text = read_input_text(path, MAX_JSON_BYTES)  # a regular file, bounded: never a FIFO
    except InputFileError as exc:
        raise ResultFileError(str(exc)) from None
    try:
        data = parse_record_json(text)
    except ValueError as exc:
        raise ResultFileError(f"{path}: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: must be a JSON object")
    return data
