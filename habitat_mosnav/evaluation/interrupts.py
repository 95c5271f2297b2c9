"""SIGINT / SIGTERM during a run: the handler notes the signal, the run stops at a safe point.

Raising ``KeyboardInterrupt`` at whatever bytecode runs breaks code that is not written for
it. Arriving inside habitat's ``NavigationTask.overwrite_sim_config`` (``with
read_write(config): agent_config.start_rotation = [...]``), an interrupted OmegaConf
``ListConfig.append`` leaves a ``None`` in the list, ``read_write``'s ``finally`` raises
``AttributeError`` on it, and the run recorded an episode error and went on: the signal
was lost (exit 0). So, while a run is :func:`guarded`, the handlers only note the signal:

* :func:`check` raises it (:class:`Terminated` for SIGTERM, ``KeyboardInterrupt`` for
  SIGINT) at the safe points the evaluation calls it from: after a reset, between steps,
  between episodes, after the start-up phases;
* inside :func:`interruptible` blocks (the agent's own code: its import, constructor,
  ``act``/``reset``/...; a model server call may take minutes; and the waits,
  :func:`sleep`) a signal is raised at once, as before: no habitat state is half-changed
  there, and the run does not record the episode it interrupts;
* :func:`chained_interrupt` finds a termination hidden in an exception's
  ``__cause__``/``__context__`` (an agent or a library that turned it into another
  error): it ends the run, it never becomes an episode error.

The outermost :func:`guarded` block raises a signal noted during it on leaving (so a
signal that arrived while the summary was written, or one after which another error
came, still ends the command with 130/143).
Outside the main thread (where Python never runs signal handlers) all of this is a no-op.
Standard library only.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Sequence

__all__ = [
    "Terminated",
    "chained_interrupt",
    "check",
    "exception_for",
    "guarded",
    "interruptible",
    "requested",
    "sleep",
]


class Terminated(KeyboardInterrupt):
    """SIGTERM (sent by SLURM, torchrun, ``kill``), raised like Ctrl-C: exit code 143."""


class _State:
    def __init__(self) -> None:
        self.depth = 0  # nesting of guarded()
        self.signum: Optional[int] = None  # the first signal noted while guarded
        self.open = False  # inside interruptible(): raise at once
        self.previous: Dict[int, object] = {}


_state = _State()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def exception_for(signum: int) -> KeyboardInterrupt:
    """:class:`Terminated` for SIGTERM, ``KeyboardInterrupt`` for SIGINT."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _handler(signum, frame) -> None:
    if _state.signum is None:
        _state.signum = signum
    if _state.open:
        _state.open = False  # raised once; the next safe point sees the note
        raise exception_for(signum)


def requested() -> Optional[int]:
    """The signal noted while guarded (SIGINT or SIGTERM), or None."""
    return _state.signum


def check() -> None:
    """A safe point: raise the noted signal (:func:`exception_for`), if any."""
    if _state.signum is not None:
        raise exception_for(_state.signum)


@contextmanager
def guarded(signals: Optional[Sequence[int]] = None) -> Iterator[None]:
    """While the block runs, ``signals`` (default: SIGINT, when Python's default Ctrl-C
    handler has it; a program that set its own keeps it) are noted, not raised (see the
    module's text). Nested blocks share the outermost one's handlers. The outermost block
    restores the previous handlers, then raises a signal noted during it (also in place
    of another exception on its way: the signal is never lost)."""
    if not _main_thread():
        yield
        return
    if _state.depth:
        _state.depth += 1
        try:
            yield
        finally:
            _state.depth -= 1
        return
    if signals is None:
        signals = (
            [signal.SIGINT] if signal.getsignal(signal.SIGINT) is signal.default_int_handler else []
        )
    _state.signum, _state.open, _state.depth = None, False, 1
    _state.previous = {s: signal.signal(s, _handler) for s in signals}
    try:
        yield
    except KeyboardInterrupt:
        _release()
        raise
    except BaseException as exc:  # an error while a signal was noted: the signal wins
        noted = _release()
        if noted is not None:
            raise exception_for(noted) from exc
        raise
    noted = _release()
    if noted is not None:
        raise exception_for(noted)


def _release() -> Optional[int]:
    """Leave the outermost guarded block: the previous handlers back; the noted signal."""
    _state.depth = 0
    _state.open = False
    for s, handler in _state.previous.items():
        signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    _state.previous = {}
    noted, _state.signum = _state.signum, None
    return noted


@contextmanager
def interruptible() -> Iterator[None]:
    """A block where a signal is raised at once (the agent's code, a wait); a signal noted
    before it is raised on entering, one the block swallowed on leaving."""
    if not _main_thread() or not _state.depth:
        yield
        return
    check()
    was, _state.open = _state.open, True
    try:
        yield
    finally:
        _state.open = was
    check()


def sleep(seconds: float) -> None:
    """``time.sleep`` that a signal ends at once (a wait for the other ranks)."""
    with interruptible():
        time.sleep(seconds)


def chained_interrupt(exc: BaseException) -> Optional[KeyboardInterrupt]:
    """A ``KeyboardInterrupt`` in ``exc`` or its ``__cause__``/``__context__`` chain, or None."""
    todo, seen = [exc], set()
    while todo and len(seen) < 100:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        if isinstance(item, KeyboardInterrupt):
            return item
        seen.add(id(item))
        todo += [item.__context__, item.__cause__]
    return None


def say_interrupted(prog: str, exc: KeyboardInterrupt, kept: Optional[str]) -> int:
    """One line on stderr for a command stopped by SIGINT/SIGTERM, and its exit status
    (130 / 143, the shell's): ``kept`` says what was kept and how to go on, or None when
    it stopped during start-up (nothing written)."""
    from habitat_mosnav.safety import safe_line

    name, code = ("SIGTERM", 143) if isinstance(exc, Terminated) else ("SIGINT", 130)
    if kept is None:
        line = f"{prog}: interrupted by {name} during start-up; nothing was written; run the command again"
    else:
        line = f"{prog}: interrupted by {name}; {kept}"
    print(safe_line(line), file=sys.stderr)
    return code
