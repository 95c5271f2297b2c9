"""The ``replay`` block of a record: enough to re-execute an episode without its agent.

Every record (``mosnav-eval``'s and the PPO evaluator's) carries::

    "replay": {"actions": "1112161...0",          # one character per step: the agent's action id
               "protocol": "goat",                # the action protocol the ids are read in
               "start": {"position": [x, y, z], "rotation": [x, y, z, w]},
               "motion": {"simulator": "MosNavMeshSim-v0", "simulator_version": "0.1.0",
                          "allow_sliding": true, "forward_step_size": 0.25, "turn_angle": 30,
                          "tilt_angle": 30, "success_distance": 1.0}}

Action ids are 0-6 and 9 (SPEC §2), so one character a step: a 500-step episode's actions
take 500 bytes, the whole block about 0.8 kB (docs/EVALUATION.md §3 gives the measured size).
``mosnav-replay`` (:mod:`~habitat_mosnav.evaluation.replay_cli`) reads it back. Standard
library only; the env is only read through attributes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = [
    "MOTION_FIELDS",
    "REPLAY_FIELD",
    "ReplayDataError",
    "check_compared_fields",
    "decode_actions",
    "encode_actions",
    "motion_overrides",
    "motion_settings",
    "replay_block",
    "simulator_version",
]

#: The record field holding the block.
REPLAY_FIELD = "replay"
#: The settings that decide where an action sequence takes the agent and what it scores.
MOTION_FIELDS = (
    "simulator",
    "simulator_version",
    "allow_sliding",
    "forward_step_size",
    "turn_angle",
    "tilt_angle",
    "success_distance",
)
_ACTION_CHARS = "0123456789"


class ReplayDataError(ValueError):
    """A record's ``replay`` block is missing or malformed (the message names the field)."""


def encode_actions(actions: Sequence[int]) -> str:
    """``[1, 1, 6, 0]`` -> ``"1160"`` (ids 0-9, one character each)."""
    out = []
    for i, a in enumerate(actions):
        a = int(a)
        if not 0 <= a <= 9:
            raise ValueError(f"action {i}: id {a} is not 0-9")
        out.append(_ACTION_CHARS[a])
    return "".join(out)


def decode_actions(text: Any, where: str = "replay.actions") -> List[int]:
    """``"1160"`` -> ``[1, 1, 6, 0]``; anything else raises :class:`ReplayDataError`."""
    if not isinstance(text, str):
        raise ReplayDataError(
            f"field {where!r} must be a string of action ids, got {type(text).__name__}"
        )
    bad = next((i for i, c in enumerate(text) if c not in _ACTION_CHARS), None)
    if bad is not None:
        raise ReplayDataError(
            f"field {where!r}: character {bad} ({text[bad]!r}) is not an action id 0-9"
        )
    return [ord(c) - 48 for c in text]


def simulator_version(sim_type: str) -> str:
    """The version of the simulator of ``sim_type`` (``SimulatorChoice.version_key``), else
    this package's (with its git commit when run from a checkout)."""
    from habitat_mosnav.simulators import choice_for_type
    from habitat_mosnav.versions import software_versions

    versions = software_versions()
    key = getattr(choice_for_type(sim_type), "version_key", None)
    if key:
        return str(versions[key])
    git = versions.get("git")
    commit = f"+git.{git['commit'][:12]}" if isinstance(git, Mapping) and git.get("commit") else ""
    return f"{versions['habitat_mosnav']}{commit}"


def _get(node, *path, default=None):
    for name in path:
        if node is None:
            return default
        try:
            node = node.get(name) if hasattr(node, "get") else getattr(node, name, None)
        except Exception:  # noqa: BLE001 - an OmegaConf node without the key
            return default
    return default if node is None else node


def _plain(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def motion_settings(env, habitat_config=None) -> Dict[str, Any]:
    """:data:`MOTION_FIELDS` of an env (its simulator's config, the task's look actions and
    success distance); ``habitat_config`` (the ``habitat`` node) when the caller has it.
    Without it only public attributes are read (the simulator's ``habitat_config``, the
    task state): an env a user hands over is never read through its private fields."""
    cfg = habitat_config
    sim = getattr(env, "sim", None)
    sim_cfg = _get(cfg, "simulator") or getattr(sim, "habitat_config", None)
    sim_type = str(_get(sim_cfg, "type", default=type(sim).__name__ if sim is not None else ""))
    state = getattr(getattr(env, "task", None), "mos_state", None)
    success = getattr(state, "success_distance", None)
    if success is None:
        success = _get(cfg, "task", "mosnav_success_distance")
    return {
        "simulator": sim_type,
        "simulator_version": simulator_version(sim_type),
        "allow_sliding": _plain(_get(sim_cfg, "habitat_sim_v0", "allow_sliding", default=True)),
        "forward_step_size": _plain(_get(sim_cfg, "forward_step_size")),
        "turn_angle": _plain(_get(sim_cfg, "turn_angle")),
        "tilt_angle": _plain(_get(cfg, "task", "actions", "look_up", "tilt_angle")),
        "success_distance": _plain(success),
    }


def replay_block(
    actions: Sequence[int],
    protocol: str,
    start: Optional[Mapping[str, Any]],
    motion: Mapping[str, Any],
) -> Dict[str, Any]:
    """The record's ``replay`` field."""
    pose = None
    if start is not None:
        pose = {
            "position": [float(v) for v in start["position"]],
            "rotation": [float(v) for v in start["rotation"]],
        }
    return {
        "actions": encode_actions(actions),
        "protocol": str(protocol),
        "start": pose,
        "motion": {k: motion.get(k) for k in MOTION_FIELDS},
    }


def check_block(record: Mapping[str, Any]) -> Dict[str, Any]:
    """The record's ``replay`` block, checked (:class:`ReplayDataError` names the field)."""
    block = record.get(REPLAY_FIELD)
    if not isinstance(block, Mapping):
        raise ReplayDataError(
            f"field {REPLAY_FIELD!r} is missing (a record written before actions "
            "were always recorded, or edited)"
        )
    decode_actions(block.get("actions"), f"{REPLAY_FIELD}.actions")
    if not isinstance(block.get("protocol"), str):
        raise ReplayDataError(f"field '{REPLAY_FIELD}.protocol' must be a string")
    motion = block.get("motion")
    if not isinstance(motion, Mapping):
        raise ReplayDataError(f"field '{REPLAY_FIELD}.motion' must be an object")
    for name in MOTION_FIELDS:
        if name not in motion:
            raise ReplayDataError(f"field '{REPLAY_FIELD}.motion.{name}' is missing")
    for name in ("forward_step_size", "turn_angle", "tilt_angle", "success_distance"):
        value = motion[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ReplayDataError(
                f"field '{REPLAY_FIELD}.motion.{name}' must be a number, got {value!r:.40}"
            )
    if not isinstance(motion["allow_sliding"], bool):
        raise ReplayDataError(f"field '{REPLAY_FIELD}.motion.allow_sliding' must be true or false")
    start = block.get("start")
    if start is not None:
        if not isinstance(start, Mapping):
            raise ReplayDataError(
                f"field '{REPLAY_FIELD}.start' must be {{position: [x, y, z], rotation: "
                f"[x, y, z, w]}}, got {_shown(start)}"
            )
        _check_vector(start.get("position"), 3, f"{REPLAY_FIELD}.start.position")
        _check_vector(start.get("rotation"), 4, f"{REPLAY_FIELD}.start.rotation")
    return dict(block)


def _shown(value: Any) -> str:
    import json

    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _is_number(value: Any) -> bool:
    import math

    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= 1e15
    )


def _check_vector(value: Any, size: int, name: str) -> None:
    """``value`` is a list of ``size`` finite numbers (ReplayDataError naming ``name``)."""
    if not isinstance(value, list) or len(value) != size:
        raise ReplayDataError(
            f"field {name!r} must be a list of {size} numbers, got {_shown(value)}"
        )
    for i, v in enumerate(value):
        if not _is_number(v):
            raise ReplayDataError(f"field '{name}[{i}]' must be a finite number, got {_shown(v)}")


def _check_pose(value: Any, name: str) -> None:
    """An agent state: null, or an object whose ``position`` (and ``rotation``, where
    present) are 3 (4) finite numbers."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise ReplayDataError(
            f"field {name!r} must be an object {{position, rotation}} or null, got {_shown(value)}"
        )
    if value.get("position") is not None:
        _check_vector(value["position"], 3, f"{name}.position")
    if value.get("rotation") is not None:
        _check_vector(value["rotation"], 4, f"{name}.rotation")


def check_compared_fields(record: Mapping[str, Any]) -> None:
    """The fields a replay compares, beyond the ``replay`` block and what every reader
    checks (:func:`~habitat_mosnav.evaluation.records.check_record`), of the types the
    comparison needs: a record of the wrong type is bad input before anything runs
    (ReplayDataError naming the field), never a traceback after the whole replay."""
    for name in ("initial_agent_state", "final_agent_state"):
        _check_pose(record.get(name), name)
    positions = record.get("positions")
    if positions is not None:
        if not isinstance(positions, list):
            raise ReplayDataError(f"field 'positions' must be a list, got {_shown(positions)}")
        for i, p in enumerate(positions):
            _check_vector(p, 3, f"positions[{i}]")
    episode = record.get("episode")
    if episode is not None and not isinstance(episode, Mapping):
        raise ReplayDataError(f"field 'episode' must be an object, got {_shown(episode)}")
    for name in ("status", "terminated_by"):
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise ReplayDataError(f"field {name!r} must be a string, got {_shown(value)}")


#: ``replay.motion`` field -> the habitat config key that sets it.
MOTION_KEYS = {
    "allow_sliding": ("habitat.simulator.habitat_sim_v0.allow_sliding",),
    "forward_step_size": ("habitat.simulator.forward_step_size",),
    "turn_angle": ("habitat.simulator.turn_angle",),
    "tilt_angle": (
        "habitat.task.actions.look_up.tilt_angle",
        "habitat.task.actions.look_down.tilt_angle",
    ),
    "success_distance": ("habitat.task.mosnav_success_distance",),
}


def motion_overrides(motion: Mapping[str, Any]) -> List[str]:
    """Hydra overrides that give a config the recorded motion settings (the simulator's
    type is chosen separately)."""
    out = []
    for name, keys in MOTION_KEYS.items():
        value = motion.get(name)
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else repr(value)
        out.extend(f"{key}={text}" for key in keys)
    return out
