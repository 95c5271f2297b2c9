"""What the tools write and print cannot be turned against the user (docs/EVALUATION.md,
"Security"): files are never reached through a link the tool did not make, secrets are
masked, and text shown on a terminal carries no control characters.

Standard library only, the lowest layer: the evaluation, the agents (the API agent's prompt
log) and the chat client all use these, so there is one rule for each.

* :func:`open_for_write` / :func:`refuse_link` / :func:`make_dirs` / :func:`replacing`: a file
  or directory the tool writes is opened with ``O_NOFOLLOW`` (or its final component is
  checked with ``lstat``); a symbolic link planted there is refused with
  :class:`PlantedLinkError`, an ``OSError`` (``ELOOP``) whose ``strerror`` says why, so every
  caller's existing "cannot write FILE" path (exit 3) reports it in one line. Every file
  written gets one mode, :func:`file_mode` (0666 minus the umask: 0644 by default), also
  the temporary files of :func:`replacing` (the one atomic write; ``mkstemp``: 0600).
  :func:`replacing_dir` replaces a whole directory (a report) at once: built beside it,
  swapped in by two renames, so a full disk or a signal leaves the previous one whole.
* :func:`output_root` / :func:`check_path` / :func:`remove_path`: below a directory the user
  named (the output directory, the run directory of a replay), *every* component of a path
  the tool writes or removes must be a real directory or file, never a link
  (``RUN_DIR/replay -> /victim`` is refused before anything is removed); the real path is
  compared with the path as built, so a link anywhere below the root is found.
* :func:`read_input` / :func:`open_input`: every file read from a run directory or a dataset
  is a regular file of bounded size (:class:`InputFileError`, one line naming it): a FIFO,
  a device (a link to ``/dev/zero``) or an oversized file is refused at once, never waited
  on nor read into memory.
* :func:`mask_secrets`: every registered secret (:func:`register_secret`, the API key), each
  of its prefixes of at least :data:`MIN_SECRET_PREFIX` characters, ``user:password@`` in
  URLs, bearer tokens and ``sk-...`` keys become ``***``. Callers mask *before* they shorten
  a text, so a cut never leaves part of a key behind.
* :func:`terminal_text`: control characters (ANSI escapes, ``\\r``, ``\\n``, BEL) become
  visible ``\\xNN`` escapes, so a hostile episode id can neither retitle the terminal nor
  forge a second line.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
import threading
from contextlib import contextmanager
from os import write as _os_write  # one name for the raw write (tests make it fail)
from typing import Any, Iterator, List, Optional

__all__ = [
    "InputFileError",
    "MIN_SECRET_PREFIX",
    "check_path",
    "inside",
    "open_input",
    "read_input_text",
    "output_root",
    "read_input",
    "remove_path",
    "PlantedLinkError",
    "file_mode",
    "fsync_dir",
    "make_dirs",
    "mask_data",
    "mask_secrets",
    "open_for_write",
    "refuse_link",
    "register_secret",
    "replacing",
    "replacing_dir",
    "safe_line",
    "terminal_text",
    "write_all",
]

#: A prefix of a secret this long or longer is masked too (a server echoing part of a key).
MIN_SECRET_PREFIX = 8
MASK = "***"


class PlantedLinkError(OSError):
    """A path the tool writes is a symbolic link it did not create: refused, never followed."""

    def __init__(self, path: str) -> None:
        super().__init__(
            errno.ELOOP,
            "it is a symbolic link this tool did not create (refused, "
            "not followed); remove it or choose another output directory",
            path,
        )


# ----------------------------------------------------------------------------- files

#: The directories the user named as outputs (:func:`output_root`): below each, no path
#: component the tool writes or removes may be a link.
_roots: List[str] = []


@contextmanager
def output_root(*paths: Optional[str]) -> Iterator[None]:
    """While the block runs, every write, ``make_dirs``, replacement and removal below one
    of ``paths`` (directories the user named: links in *their* ancestors are the user's
    own) checks every component between that root and the file (:func:`check_path`)."""
    added = [os.path.abspath(p) for p in paths if p]
    _roots.extend(added)
    try:
        yield
    finally:
        for p in added:
            _roots.remove(p)


def inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies below it (real paths compared, so a link
    to a directory counts as that directory)."""
    a, b = os.path.realpath(path), os.path.realpath(directory)
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


def _root_of(path: str) -> Optional[str]:
    best = None
    for root in _roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            if best is None or len(root) < len(best):  # the widest: most components checked
                best = root
    return best


def check_path(path: str, root: Optional[str] = None) -> None:
    """Raise :class:`PlantedLinkError` naming the first component of ``path`` below
    ``root`` (default: the widest :func:`output_root` holding it; none: the last component
    only) that is a symbolic link. The real path of what exists is compared with the path
    as built, so no link below the root escapes (one the tool did not make)."""
    path = os.path.abspath(path)
    root = os.path.abspath(root) if root else _root_of(path)
    _refuse_last(path)  # the last component, always (as :func:`refuse_link`)
    if root is None or not (path == root or path.startswith(root.rstrip(os.sep) + os.sep)):
        return
    rel = os.path.relpath(path, root)
    current = root
    for part in [] if rel == os.curdir else rel.split(os.sep):
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return  # nothing below exists: the tool makes it
        except NotADirectoryError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise PlantedLinkError(current)
    if os.path.lexists(path) and os.path.realpath(path) != os.path.join(
        os.path.realpath(root), "" if rel == os.curdir else rel
    ).rstrip(os.sep):  # pragma: no cover - a link swapped in while checking
        raise PlantedLinkError(path)


def remove_path(path: str, root: Optional[str] = None) -> None:
    """Remove ``path`` (a directory tree or a file) after :func:`check_path` of its parent:
    a link above it (below the root) refuses the removal, never deletes what it points to;
    ``path`` itself as a link, and links inside the tree, are removed themselves (never
    followed: ``shutil.rmtree`` does not follow them)."""
    path = os.path.abspath(path)
    check_path(os.path.dirname(path), root)  # every component above it
    if os.path.islink(path):  # a link is removed itself, never followed
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def umask() -> int:
    """The process's umask (read by setting it and back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode of every file the tools write: 0666 minus the umask (0644 by default), what
    ``open()`` gives a new file; never ``mkstemp``'s 0600."""
    return 0o666 & ~umask()


def refuse_link(path: str) -> None:
    """Raise :class:`PlantedLinkError` when ``path`` itself (its last component) is a symlink,
    or, below an :func:`output_root`, any component between the root and it."""
    if _roots and _root_of(os.path.abspath(path)) is not None:
        check_path(path)
        return
    _refuse_last(path)


def _refuse_last(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise PlantedLinkError(path)


def open_for_write(
    path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode: int = 0o666
) -> int:
    """``os.open(path, flags | O_NOFOLLOW)``: a file descriptor, never through a symlink in
    the last component (:class:`PlantedLinkError`). ``O_TRUNC`` is applied only after the
    check, so a planted link never truncates its target."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    check_path(path)
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | nofollow | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (not nofollow and os.path.islink(path)):
            raise PlantedLinkError(path) from None
        raise
    if not nofollow and os.path.islink(path):  # pragma: no cover - platforms without O_NOFOLLOW
        os.close(fd)
        raise PlantedLinkError(path)
    if flags & os.O_TRUNC:
        try:
            os.ftruncate(fd, 0)
        except OSError:
            os.close(fd)
            raise
    return fd


def open_file(path: str, mode: str = "w", encoding: str = "utf-8", newline=None):
    """A Python file object for ``"w"``/``"a"``/``"wb"``/``"ab"``/``"r+b"`` through
    :func:`open_for_write`."""
    flags = {
        "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
        "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
        "r+": os.O_RDWR,
    }[mode.replace("b", "")]
    fd = open_for_write(path, flags)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding=encoding, newline=newline)


def make_dirs(path: str) -> str:
    """``os.makedirs(path, exist_ok=True)``, refusing ``path`` when it is a symlink (a
    directory the tool fills, e.g. ``rank_00000`` or ``videos``, planted as a link)."""
    check_path(path)
    os.makedirs(path, exist_ok=True)
    check_path(path)
    return path


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` (``os.write`` may write part of it)."""
    view = memoryview(data)
    while view:
        view = view[_os_write(fd, view) :]


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


@contextmanager
def replacing(path: str, suffix: str = "", *, exclusive: bool = False) -> Iterator[str]:
    """The one atomic write: yield a fresh temporary path beside ``path`` (created with
    ``O_EXCL``, so never a link; mode :func:`file_mode`) to write; on success it is fsynced,
    renamed over ``path`` (a rename replaces a link itself, never its target; a planted
    link is refused before) and the directory fsynced, so a crash leaves the old file or
    the new one whole. ``exclusive``: never replace an existing ``path`` (the first writer
    wins; ``FileExistsError`` otherwise). No temp file is left."""
    directory = os.path.dirname(os.path.abspath(path))
    make_dirs(directory)
    refuse_link(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=suffix, dir=directory)
    try:
        os.fchmod(fd, file_mode())  # the mode of every other file, not mkstemp's 0600
    finally:
        os.close(fd)
    try:
        yield tmp
        with os.fdopen(os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as f:
            os.fsync(f.fileno())
        if exclusive:
            os.link(tmp, path)  # FileExistsError when another writer was first
        else:
            refuse_link(path)
            os.replace(tmp, path)
            tmp = None
        fsync_dir(directory)
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


@contextmanager
def replacing_dir(path: str) -> Iterator[str]:
    """Yield a fresh directory beside ``path`` (``mkdtemp``: created here, never a link) to
    fill; when the block succeeds it takes ``path``'s place: the previous ``path`` (a real
    directory; a planted link is refused, :class:`PlantedLinkError`) is renamed aside, the
    new one renamed in, then the previous one removed. When the block fails (an exception,
    a full disk, a signal) the new directory is removed and ``path`` is left untouched.
    The caller decides whether ``path`` may be replaced (it is removed)."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    make_dirs(parent)
    refuse_link(path)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
    new = tempfile.mkdtemp(prefix=f".{name}.new-", dir=parent)
    try:
        os.chmod(new, 0o777 & ~umask())
        yield new
        refuse_link(path)
        old = None
        if os.path.lexists(path):
            old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
            os.rename(path, old)  # replaces the empty directory just made
        try:
            os.rename(new, path)
        except BaseException:
            if old is not None:
                os.rename(old, path)
            raise
        new = None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)  # removes links inside, never their targets
    finally:
        if new is not None:
            shutil.rmtree(new, ignore_errors=True)


# ----------------------------------------------------------------------------- reading

#: Size bounds of the files read (bytes): a result JSON (summary.json, run.json, done.json,
#: diagnosis.json, replay.json), a rank's episodes.jsonl, a dataset file.
MAX_JSON_BYTES = 256 << 20
MAX_RECORDS_BYTES = 4 << 30
MAX_DATASET_BYTES = 2 << 30


class InputFileError(ValueError):
    """A file read from a run directory or a dataset that is not a regular file of bounded
    size (a FIFO, a device, a directory, an oversized file): one line naming it."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_input(path: str, limit: int = MAX_JSON_BYTES):
    """A binary file object of ``path`` once it is known to be a regular file of at most
    ``limit`` bytes (:class:`InputFileError` otherwise). Opened non-blocking, so a FIFO
    never hangs the open; checked on the open descriptor (``fstat``), so a link to
    ``/dev/zero`` is judged by what it reaches."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise InputFileError(f"{path}: a directory, not a regular file (refused)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(f"{path}: {_kind(st.st_mode)}, not a regular file (refused)")
        if st.st_size > limit:
            raise InputFileError(
                f"{path}: {st.st_size} bytes, more than the {limit} a file read here may hold "
                "(refused)"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return f


def read_limited(f, limit: int, name: str, what: str = "a file read here may hold") -> bytes:
    """Everything ``f`` gives, read in 1 MiB chunks (``f.read(limit)`` would allocate
    ``limit`` bytes at once, a MemoryError under an address-space limit); more than
    ``limit`` bytes is an :class:`InputFileError` naming ``name``."""
    chunks, total = [], 0
    while True:
        chunk = f.read(min(1 << 20, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputFileError(f"{name}: more than the {limit} bytes {what} (refused)")


def read_input(path: str, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of ``path`` through :func:`open_input`; at most ``limit`` bytes are read
    (a file that grows past it meanwhile is refused too)."""
    with open_input(path, limit) as f:
        return read_limited(f, limit, path)


def read_input_text(path: str, limit: int = MAX_JSON_BYTES) -> str:
    """:func:`read_input` decoded as UTF-8 (a ``UnicodeDecodeError`` is an
    :class:`InputFileError` naming the file)."""
    try:
        return read_input(path, limit).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# ----------------------------------------------------------------------------- secrets

_secrets: List[str] = []
_secrets_lock = threading.Lock()
_pattern = None
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]*@")
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s\"',]+")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def register_secret(secret: str) -> None:
    """Mask ``secret`` (and its prefixes of >= :data:`MIN_SECRET_PREFIX` characters) in
    everything this process writes or prints from now on."""
    global _pattern
    if not secret or len(secret) < MIN_SECRET_PREFIX:
        return
    with _secrets_lock:
        if secret not in _secrets:
            _secrets.append(secret)
            _pattern = None


def _secret_pattern(extra: tuple):
    global _pattern
    secrets = [s for s in list(_secrets) + [e for e in extra if e] if len(s) >= MIN_SECRET_PREFIX]
    if not secrets:
        return None
    if not extra and _pattern is not None:
        return _pattern
    prefixes = {s[:n] for s in secrets for n in range(MIN_SECRET_PREFIX, len(s) + 1)}
    pattern = re.compile("|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True)))
    if not extra:
        _pattern = pattern
    return pattern


def mask_secrets(text: Any, *secrets: str) -> str:
    """``text`` with every registered secret (and ``secrets``), their prefixes of at least
    :data:`MIN_SECRET_PREFIX` characters, URL credentials, bearer tokens and ``sk-`` keys
    replaced by ``***``. Mask first, shorten afterwards."""
    text = str(text)
    pattern = _secret_pattern(tuple(secrets))
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + ":" + MASK + "@", text)
    text = _BEARER.sub("Bearer " + MASK, text)
    return _SK_KEY.sub("sk-" + MASK, text)


def mask_data(obj: Any) -> Any:
    """:func:`mask_secrets` applied to every string (keys included) of JSON-like data."""
    if isinstance(obj, str):
        return mask_secrets(obj)
    if isinstance(obj, dict):
        return {mask_secrets(k) if isinstance(k, str) else k: mask_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [mask_data(v) for v in obj]
    return obj


class MaskingFormatter:
    """A ``logging.Formatter`` wrapper whose lines pass through :func:`safe_line` (a log
    line never shows a key nor a control character)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def format(self, record) -> str:
        return safe_line(self.inner.format(record))

    def __getattr__(self, name):
        return getattr(self.inner, name)


def mask_log_handlers(logger=None) -> None:
    """Make every handler of ``logger`` (default: the root logger) print masked lines."""
    import logging

    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not isinstance(handler.formatter, MaskingFormatter):
            handler.setFormatter(MaskingFormatter(handler.formatter or logging.Formatter()))


# ----------------------------------------------------------------------------- terminal

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def terminal_text(text: Any) -> str:
    """``text`` with every control character (C0, DEL, C1: ESC, BEL, CR, LF, ...) shown as
    a ``\\xNN`` escape: one printable line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def safe_line(text: Any) -> str:
    """What may be printed: secrets masked, then control characters escaped."""
    return terminal_text(mask_secrets(text))
