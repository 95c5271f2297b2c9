"""Action protocols (SPEC §2): an agent's output id -> a Habitat task action name.

The evaluator never interprets an action itself: it maps the id through the protocol and
hands the Habitat action name to ``env.step``; the plugin's task does the rest (claims,
episode end). An id outside the protocol is the agent's error (``InvalidAction``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from habitat_mosnav.api import ACTION_PROTOCOLS, MULTI_MODES

__all__ = [
    "HABITAT_ACTIONS",
    "InvalidAction",
    "ProtocolStep",
    "map_action",
    "normalize_action_id",
]

# Habitat task action names, in the task's action order (ids 0-6).
HABITAT_ACTIONS = (
    "stop",
    "move_forward",
    "turn_left",
    "turn_right",
    "look_up",
    "look_down",
    "target_found",
)
_MOTIONS = {1: "move_forward", 2: "turn_left", 3: "turn_right", 4: "look_up", 5: "look_down"}


class InvalidAction(ValueError):
    """The agent returned something that is not an action of the protocol."""

    error_type = "InvalidAction"


@dataclass(frozen=True)
class ProtocolStep:
    """The meaning of one agent output: ``kind`` is ``move``, ``claim`` or ``finish``."""

    agent_action: int
    habitat_action: str
    kind: str


def normalize_action_id(action) -> int:
    """Accept ``int``, ``numpy`` integers and ``Action``; refuse bools, floats, strings."""
    if isinstance(action, bool) or not isinstance(action, numbers.Integral):
        shown = repr(action)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise InvalidAction(
            f"agent returned {shown} ({type(action).__name__}), not an integer action id"
        )
    return int(action)


def _valid_ids(target_mode: str, protocol: str) -> str:
    if target_mode in MULTI_MODES and protocol == "legacy":
        return "0-5, 9"
    return "0-6, 9"


def map_action(action, target_mode: str, protocol: str = "goat") -> ProtocolStep:
    """Map an agent output to a Habitat action under ``protocol`` for ``target_mode``.

    goat: 0/9 finish, 6 claims (in single/any the task ends the episode on the claim).
    legacy: in many/all 0 claims and 9 finishes; 6 is not an action. single/any as goat.
    compat: in many/all 0 and 6 claim, 9 finishes. single/any as goat.
    """
    if protocol not in ACTION_PROTOCOLS:
        raise ValueError(
            f"unknown action protocol {protocol!r}: expected one of {', '.join(ACTION_PROTOCOLS)}"
        )
    a = normalize_action_id(action)
    if a in _MOTIONS:
        return ProtocolStep(a, _MOTIONS[a], "move")
    multi = target_mode in MULTI_MODES
    if not multi or protocol == "goat":
        if a in (0, 9):
            return ProtocolStep(a, "stop", "finish")
        if a == 6:
            return ProtocolStep(a, "target_found", "claim")
    elif protocol == "legacy":
        if a == 0:
            return ProtocolStep(a, "target_found", "claim")
        if a == 9:
            return ProtocolStep(a, "stop", "finish")
    else:  # compat
        if a in (0, 6):
            return ProtocolStep(a, "target_found", "claim")
        if a == 9:
            return ProtocolStep(a, "stop", "finish")
    raise InvalidAction(
        f"agent returned action {a}, not an action of the {protocol} protocol in "
        f"{target_mode} mode (valid: {_valid_ids(target_mode, protocol)})"
    )
