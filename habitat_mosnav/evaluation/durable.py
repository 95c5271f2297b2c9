"""Durable result files: atomic JSON writes (through :func:`habitat_mosnav.safety.replacing`),
the errors a reader or writer raises (one line naming the file), strict JSON parsing (no
NaN, no huge integers) and deferring Ctrl-C/SIGTERM while a record is written.
Standard library only; the evaluation modules above build their files on it."""

from __future__ import annotations

import errno
import json
import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Dict, List, Mapping, Optional

from habitat_mosnav.safety import (
    MAX_JSON_BYTES,
    InputFileError,
    mask_secrets,
    open_for_write,
    read_input_text,
    replacing,
    write_all,
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


def atomic_write_json(path: str, data: Mapping[str, Any], *, exclusive: bool = False) -> bool:
    """:func:`~habitat_mosnav.safety.replacing` with JSON (secrets masked, no NaN).
    ``exclusive``: returns False when ``path`` already existed (the first writer wins).
    A failure raises :class:`ResultWriteError` naming ``path`` and leaves no temp file."""
    text = mask_secrets(json.dumps(data, indent=2, allow_nan=False)) + "\n"
    try:
        with replacing(path, ".json", exclusive=exclusive) as tmp:
            fd = open_for_write(tmp, os.O_WRONLY)
            try:
                write_all(fd, text.encode("utf-8"))
            finally:
                os.close(fd)
        return True
    except OSError as exc:
        if exclusive and isinstance(exc, FileExistsError) and os.path.lexists(path):
            return False
        raise write_failed(path, exc) from None


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
