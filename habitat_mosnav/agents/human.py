"""A human agent: keys 0-6, 9 and q in the terminal (or in the ``--render-live`` window).

Used to play an episode by hand, check that a task is solvable and see what agents see.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional

from habitat_mosnav.api import Observation

__all__ = ["HumanAgent", "QuitEvaluation", "KEY_HELP", "parse_key"]

KEY_HELP = (
    "keys: 0 finish | 1 forward | 2 left | 3 right | 4 look up | 5 look down | "
    "6 target found | 9 legacy finish | q quit"
)
_VALID = {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "9": 9}


class QuitEvaluation(KeyboardInterrupt):
    """The user asked to stop; the current episode is not recorded (resume redoes it)."""


def parse_key(key: str) -> Optional[int]:
    """Action id of a key, ``-1`` for quit, ``None`` for anything else."""
    key = (key or "").strip().lower()
    if key in ("q", "quit", "\x1b", "\x03"):
        return -1
    return _VALID.get(key)


def _read_terminal_key() -> str:
    """One key press without Enter when stdin is a terminal, else one line."""
    if not sys.stdin.isatty():
        line = sys.stdin.readline()
        if line == "":
            return "q"  # end of input: stop instead of looping forever
        return line
    import termios
    import tty

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        return sys.stdin.read(1)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


class HumanAgent:
    """Asks a person for each action.

    When the evaluator shows a live window (``--render-live``) it sets ``key_source`` to
    read keys from that window; otherwise keys come from the terminal.
    """

    def __init__(self, key_source: Optional[Callable[[], str]] = None, stream=None) -> None:
        self.key_source = key_source
        self.stream = stream if stream is not None else sys.stderr
        self._prompt_shown_for = None

    def reset(self) -> None:
        self._prompt_shown_for = None

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def act(self, observation: Observation) -> int:
        episode = (observation.scene_id, observation.episode_id)
        if self._prompt_shown_for != episode:
            self._prompt_shown_for = episode
            self._say(
                f"\n=== {observation.scene_id} / {observation.episode_id} "
                f"({observation.target_mode}) ==="
            )
            self._say(f"goal: {observation.goal_text}")
            self._say(KEY_HELP)
        gps = observation.gps
        self._say(
            f"step {observation.step_count}/{observation.max_steps}  "
            f"gps=({float(gps[0]):+.2f}, {float(gps[1]):+.2f})  "
            f"compass={float(observation.compass):+.2f} rad  action? "
        )
        while True:
            key = self.key_source() if self.key_source is not None else _read_terminal_key()
            action = parse_key(key)
            if action == -1:
                raise QuitEvaluation("quit requested by the human agent")
            if action is not None:
                return action
            if key and key.strip():
                self._say(f"unknown key {key.strip()!r}; {KEY_HELP}")
