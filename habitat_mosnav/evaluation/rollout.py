"""One episode through ``habitat.Env``: observations in, agent actions out (SPEC §7, §8).

The rollout never re-implements the task. It resets the Env on the chosen episode, turns
Habitat's observation dict into an :class:`~habitat_mosnav.api.Observation`, asks the agent,
maps the answer through the action protocol and steps the Env with the Habitat action name.
Claims, episode end and metrics all come from the plugin's task and measures.

This module imports neither habitat nor torch at import time; it only calls methods of the
Env object it is given.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from habitat_mosnav.agents.protocols import InvalidAction, map_action
from habitat_mosnav.evaluation import interrupts
from habitat_mosnav.evaluation.observations import ObservationBuilder
from habitat_mosnav.evaluation.policy import reset_takes_context, split_policy_step
from habitat_mosnav.metrics.measure_table import MEASURE_TO_FIELD
from habitat_mosnav.pose import agent_pose
from habitat_mosnav.safety import mask_secrets

__all__ = [
    "AgentError",
    "EpisodeRun",
    "StartNotNavigable",
    "StepTimeout",
    "describe_error",
    "episode_metrics_record",
    "error_message_of",
    "error_type_of",
    "is_scene_file_error",
    "run_episode",
    "terminated_by",
    "trace_for_record",
]


@dataclass
class EpisodeRun:
    """What one rollout produced; the results layer turns it into a JSONL record."""

    steps_taken: int = 0
    terminated_by: str = "error"
    initial_metrics: Dict[str, Any] = field(default_factory=dict)
    metrics: Dict[str, Any] = field(default_factory=dict)
    report_events: List[Dict[str, Any]] = field(default_factory=list)
    initial_agent_state: Optional[Dict[str, Any]] = None
    final_agent_state: Optional[Dict[str, Any]] = None
    action_trace: Optional[List[Dict[str, Any]]] = None
    error: Optional[BaseException] = None
    positions: List[List[float]] = field(default_factory=list)
    #: a ``sequential`` episode's per-subtask lists (the record's ``subtask_metrics``);
    #: None in the other modes
    subtask_metrics: Optional[Dict[str, List[Any]]] = None

    @property
    def ok(self) -> bool:
        return self.error is None


class AgentError(RuntimeError):
    """Raised around an exception of the agent's own code (act/reset/seed/bind_env)."""

    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__(f"agent.{where} raised {type(exc).__name__}")
        self.where = where
        self.original = exc
        self.error_type = type(exc).__name__


class StepTimeout(Exception):
    """``act()`` did not return within ``--step-timeout`` seconds."""


class StartNotNavigable(ValueError):
    """The episode's start position is not on the scene's navmesh (bad dataset): the run
    stops (exit 2) instead of recording a meaningless episode."""

    def __init__(self, position) -> None:
        super().__init__(f"start_position {list(position)} is not on the navmesh")
        self.position = [float(v) for v in position]


def _call_with_timeout(fn, args, timeout: float):
    """``fn(*args)`` in a daemon thread; :class:`StepTimeout` after ``timeout`` seconds.

    Python cannot stop a thread: a call that times out keeps running in its daemon thread
    until it returns by itself; its late result is discarded and the process does not wait
    for it at exit. The main thread waits in ``Event.wait``, so Ctrl-C/SIGTERM still work.
    """
    box: Dict[str, Any] = {}
    done = threading.Event()

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=target, name="mosnav-agent-act", daemon=True)
    thread.start()
    if not done.wait(timeout):
        raise StepTimeout(f"act() did not return within {timeout:g} s (--step-timeout)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _call_agent(where: str, fn, *args, timeout: Optional[float] = None):
    """Call the agent's code; whatever it raises (also ``SystemExit``, ``GeneratorExit``,
    ``asyncio.CancelledError``) becomes :class:`AgentError`, so it ends the episode with an
    error record, never the run. Only ``KeyboardInterrupt`` (Ctrl-C, SIGTERM, the human
    agent's quit) goes through, also one the agent wrapped in another exception. The
    agent's code is :func:`~habitat_mosnav.evaluation.interrupts.interruptible`: a signal
    ends a long ``act()`` at once."""
    try:
        with interrupts.interruptible():
            if timeout is not None:
                return _call_with_timeout(fn, args, timeout)
            return fn(*args)
    except (InvalidAction, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: B902 - the agent's failure, of any kind
        chained = interrupts.chained_interrupt(exc)
        if chained is not None:
            raise chained from None
        raise AgentError(where, exc) from exc


def terminated_by(state) -> str:
    """The record's ``terminated_by`` from the task state: the agent's ending action
    (``finish`` or ``target_found``), else ``max_steps``."""
    ended = state.ended_by
    return ended if ended in ("finish", "target_found") else "max_steps"


def _check_start(env, episode) -> None:
    """Refuse an episode whose start is off the navmesh (checked right after reset, when
    the simulator has the scene's navmesh)."""
    pathfinder = getattr(getattr(env, "sim", None), "pathfinder", None)
    check = getattr(pathfinder, "is_navigable", None)
    start = getattr(episode, "start_position", None)
    if check is None or start is None or not getattr(pathfinder, "is_loaded", True):
        return
    if not check([float(v) for v in start]):
        raise StartNotNavigable(start)


#: The prefix under which a habitat measure whose name is also a SPEC §4 field (habitat's
#: own ``success``, ``spl``) is kept in a record: ``habitat_success``, ``habitat_spl``.
HABITAT_MEASURE_PREFIX = "habitat_"


def episode_metrics_record(env) -> Dict[str, Any]:
    """The scalar metrics of the current episode for a record: every SPEC §4 field from the
    task's own state (``task.mos_state.metrics()``, the same definition the measures use),
    then every other scalar habitat measure under its own name (a measure that reports a
    §4 field is not repeated). A habitat measure named like a §4 field (habitat's
    ``success``/``spl`` next to ours) is kept as ``habitat_<name>``, never dropped; one whose
    prefixed name is taken too is refused. NaN/inf become None; lists and images are left
    out."""
    from habitat_mosnav.evaluation.records import scalar_metrics

    out = scalar_metrics(env.task.mos_state.metrics())
    for key, value in scalar_metrics(env.get_metrics()).items():
        if key in MEASURE_TO_FIELD:
            continue
        name = key if key not in out else HABITAT_MEASURE_PREFIX + key
        if name in out:
            raise ValueError(
                f"measure {key!r}: its name is a SPEC §4 field and {name!r} "
                "is taken too; rename one of the measures"
            )
        out[name] = value
    return out


def trace_for_record(action_trace: Optional[List[Dict[str, Any]]]) -> Optional[List[Any]]:
    """The record's ``action_trace``: the action ids, or, when the policy returned a
    ``PolicyStep`` with ``info`` at some step, ``{"action": id, "info": info or None}`` for
    every step of that episode."""
    if action_trace is None:
        return None
    if any("info" in t for t in action_trace):
        return [{"action": t["action"], "info": t.get("info")} for t in action_trace]
    return [t["action"] for t in action_trace]


def run_episode(
    env,
    agent,
    episode,
    builder: ObservationBuilder,
    *,
    protocol: str = "goat",
    seed: Optional[int] = None,
    record_trace: bool = False,
    on_step: Optional[Callable[[Dict[str, Any]], None]] = None,
    step_timeout: Optional[float] = None,
    context: Optional[Any] = None,
) -> EpisodeRun:
    """Run ``agent`` on ``episode`` in ``env``; exceptions become ``EpisodeRun.error``.

    ``context``: the :class:`~habitat_mosnav.evaluation.policy.EpisodeContext` handed to a
    ``reset(context)`` (a plain ``reset()`` is called without it). ``act`` may return a
    :class:`~habitat_mosnav.evaluation.policy.PolicyStep`: its ``info`` goes into the
    trace entry of that step.

    ``on_step`` receives ``{"obs", "observation", "action", "step", "pose", "episode"}``
    after reset (action None) and after every step (video, live view, position logs).
    ``step_timeout``: seconds one ``act()`` may take; then the episode ends with a
    :class:`StepTimeout` error (see :func:`_call_with_timeout` for the agent's thread).
    A :class:`KeyboardInterrupt` (including the human agent's quit),
    :class:`StartNotNavigable` (a dataset error) and a scene file that cannot be read
    (:func:`is_scene_file_error`: bad input, the run stops) propagate. A SIGINT/SIGTERM
    noted while habitat ran (:mod:`~habitat_mosnav.evaluation.interrupts`) is raised after
    the reset and after each step; an exception with a termination in its context is that
    termination, never the episode's error.
    """
    run = EpisodeRun(action_trace=[] if record_trace else None)
    mode = str(getattr(episode, "target_mode", "single"))
    try:
        env.current_episode = episode
        if seed is not None:
            env.seed(int(seed))
        obs = env.reset()
        interrupts.check()
        _check_start(env, episode)
        if callable(getattr(agent, "seed", None)) and seed is not None:
            _call_agent("seed", agent.seed, int(seed))
        if callable(getattr(agent, "bind_env", None)):
            _call_agent("bind_env", agent.bind_env, env)
        if callable(getattr(agent, "reset", None)):
            with_context = context is not None and reset_takes_context(agent)
            _call_agent("reset", agent.reset, *((context,) if with_context else ()))
        run.initial_metrics = episode_metrics_record(env)
        pose = agent_pose(env)
        run.initial_agent_state = pose
        run.positions.append(pose["position"])
        previous = None
        observation = builder.build(obs, episode, pose, 0, None, env)
        if on_step is not None:
            on_step(
                {
                    "obs": obs,
                    "observation": observation,
                    "action": None,
                    "step": 0,
                    "pose": pose,
                    "episode": episode,
                }
            )
        while not env.episode_over:
            raw, info = split_policy_step(
                _call_agent("act", agent.act, observation, timeout=step_timeout),
                run.steps_taken + 1,
            )
            step = map_action(raw, mode, protocol)
            obs = env.step(step.habitat_action)
            interrupts.check()
            run.steps_taken += 1
            previous = step.agent_action
            pose = agent_pose(env)
            run.positions.append(pose["position"])
            if run.action_trace is not None:
                entry = {
                    "step": run.steps_taken,
                    "action": step.agent_action,
                    "habitat_action": step.habitat_action,
                }
                if info is not None:
                    entry["info"] = info
                run.action_trace.append(entry)
            if env.episode_over:
                observation = None
            else:
                observation = builder.build(obs, episode, pose, run.steps_taken, previous, env)
            if on_step is not None:
                on_step(
                    {
                        "obs": obs,
                        "observation": observation,
                        "action": step.agent_action,
                        "step": run.steps_taken,
                        "pose": pose,
                        "episode": episode,
                    }
                )
        run.metrics = episode_metrics_record(env)
        run.report_events = [dict(ev) for ev in env.task.mos_state.events]
        run.terminated_by = terminated_by(env.task.mos_state)
        per_subtask = getattr(env.task.mos_state, "subtask_metrics", None)
        run.subtask_metrics = per_subtask() if callable(per_subtask) else None
        run.final_agent_state = pose
    except (KeyboardInterrupt, StartNotNavigable):
        raise
    except Exception as exc:  # one bad episode never stops the run
        chained = interrupts.chained_interrupt(exc)
        if chained is not None:
            raise chained from None
        if is_scene_file_error(exc):
            raise
        run.error = exc
        run.terminated_by = "error"
    return run


def is_scene_file_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the simulator's ``SceneLoadError`` (a scene file that cannot be
    read: one line naming the file, exit 2), without importing the simulator (habitat)."""
    geometry = sys.modules.get("habitat_mosnav.sims.geometry")
    return geometry is not None and isinstance(exc, geometry.SceneLoadError)


def _where(exc: BaseException) -> str:
    """``file.py:line`` of the innermost frame, for a one-line log (never recorded)."""
    original = getattr(exc, "original", exc)
    tb = traceback.extract_tb(original.__traceback__) if original.__traceback__ else []
    if not tb:
        return ""
    frame = tb[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno}"


def error_type_of(exc: BaseException) -> str:
    """The recorded ``error_type``: InvalidAction, the agent's exception class, or the
    environment's exception class."""
    if isinstance(exc, InvalidAction):
        return "InvalidAction"
    if isinstance(exc, AgentError):
        return exc.error_type
    return type(exc).__name__


def error_message_of(exc: BaseException) -> str:
    """A generic message for the record: no traceback and no local path."""
    if isinstance(exc, InvalidAction):
        return str(exc)
    if isinstance(exc, AgentError) and isinstance(exc.original, StepTimeout):
        return str(exc.original)
    if isinstance(exc, AgentError):
        return f"the agent raised {exc.error_type} in {exc.where}()"
    return f"the environment raised {type(exc).__name__} during the episode"


def describe_error(exc: BaseException) -> str:
    """One line for the terminal (may include the exception text)."""
    original = getattr(exc, "original", exc)
    text = " ".join(mask_secrets(original).split())  # masked before it is cut
    if len(text) > 300:
        text = text[:297] + "..."
    where = _where(exc)
    return f"{error_type_of(exc)}: {text}" + (f" (at {where})" if where else "")
