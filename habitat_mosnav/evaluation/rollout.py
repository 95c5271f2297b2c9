"""One episode through ``habitat.Env``: observations in, agent actions out (SPEC §7, §8).

The rollout never re-implements the task. It resets the Env on the chosen episode, turns
Habitat's observation dict into an :class:`~habitat_mosnav.api.Observation`, asks the agent,
maps the answer through the action protocol and steps the Env with the Habitat action name.
Claims, episode end and metrics all come from the plugin's task and measures.

This module imports neither habitat nor torch at import time; it only calls methods of the
Env object it is given.
"""
from __future__ import annotations

import math
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from habitat_mosnav.agents.protocols import InvalidAction, map_action
from habitat_mosnav.api import Observation
from habitat_mosnav.evaluation.selection import scene_name_from_path
from habitat_mosnav.prompts import build_task_prompt

__all__ = [
    "EpisodeRun",
    "ObservationBuilder",
    "episode_metrics_record",
    "agent_pose",
    "episode_scene_name",
    "quat_xyzw",
    "rotate_vector",
    "run_episode",
    "start_frame_pose",
    "yaw_of",
]

MULTI_MODES = ("many", "all")


# ----------------------------------------------------------------------------- geometry
def quat_xyzw(q) -> np.ndarray:
    """``[x, y, z, w]`` of an ``np.quaternion``, a magnum-like object or a 4-sequence."""
    if hasattr(q, "imag") and hasattr(q, "real") and not isinstance(q, np.ndarray):
        imag = np.asarray(q.imag, dtype=np.float64).reshape(-1)
        if imag.size == 3:
            return np.array([imag[0], imag[1], imag[2], float(q.real)], dtype=np.float64)
    if hasattr(q, "components"):  # numpy-quaternion: (w, x, y, z)
        w, x, y, z = (float(c) for c in q.components)
        return np.array([x, y, z, w], dtype=np.float64)
    arr = np.asarray(q, dtype=np.float64).reshape(-1)
    if arr.size != 4:
        raise ValueError(f"rotation must have 4 components [x, y, z, w], got {arr.size}")
    return arr


def rotate_vector(q_xyzw: np.ndarray, v: Sequence[float]) -> np.ndarray:
    """Rotate ``v`` by the unit quaternion ``[x, y, z, w]``."""
    x, y, z, w = q_xyzw
    u = np.array([x, y, z])
    v = np.asarray(v, dtype=np.float64)
    return 2.0 * np.dot(u, v) * u + (w * w - np.dot(u, u)) * v + 2.0 * w * np.cross(u, v)


def _conj(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def yaw_of(q) -> float:
    """Heading about +Y in radians: 0 facing −Z, positive turning left (habitat's compass)."""
    f = rotate_vector(quat_xyzw(q), (0.0, 0.0, -1.0))
    return math.atan2(-f[0], -f[2])


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def start_frame_pose(position, rotation, start_position, start_rotation):
    """(gps, compass): the agent's x/z displacement expressed in the episode-start frame
    (x right, z backward, as habitat's axes at the start pose) and its heading change."""
    q0 = quat_xyzw(start_rotation)
    q0 = q0 / (np.linalg.norm(q0) or 1.0)
    d = np.asarray(position, dtype=np.float64) - np.asarray(start_position, dtype=np.float64)
    local = rotate_vector(_conj(q0), d)
    gps = np.array([local[0], local[2]], dtype=np.float32)
    compass = _wrap(yaw_of(rotation) - yaw_of(q0))
    return gps, float(compass)


def agent_pose(env) -> Dict[str, List[float]]:
    """``{"position": [x, y, z], "rotation": [x, y, z, w]}`` of the agent, JSON-ready."""
    state = env.sim.get_agent_state()
    pos = [float(c) for c in np.asarray(state.position, dtype=np.float64).reshape(-1)[:3]]
    rot = [float(c) for c in quat_xyzw(state.rotation)]
    return {"position": pos, "rotation": rot}


def episode_scene_name(episode) -> str:
    """The short scene id (``TEEsavR23oF``), never a local path."""
    name = getattr(episode, "scene_name", "") or ""
    if name:
        return str(name)
    return scene_name_from_path(getattr(episode, "scene_id", ""))


# ----------------------------------------------------------------------------- observations
def _decode_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        from habitat_mosnav.sensors import decode_goal_text  # the plugin's own decoder

        return str(decode_goal_text(value))
    except ImportError:
        arr = np.asarray(value, dtype=np.uint8).reshape(-1)
        return bytes(arr).split(b"\x00", 1)[0].decode("utf-8", errors="replace")


def _depth_in_metres(depth: Optional[np.ndarray], depth_cfg) -> Optional[np.ndarray]:
    """Habitat depth (H, W, 1), normalised to [0, 1] by default, as (H, W) metres."""
    if depth is None:
        return None
    d = np.asarray(depth, dtype=np.float32)
    if d.ndim == 3 and d.shape[-1] == 1:
        d = d[..., 0]
    if depth_cfg is not None and bool(_cfg_get(depth_cfg, "normalize_depth", False)):
        lo = float(_cfg_get(depth_cfg, "min_depth", 0.0))
        hi = float(_cfg_get(depth_cfg, "max_depth", 10.0))
        d = lo + d * (hi - lo)
    return d


def _cfg_get(node, key, default=None):
    if node is None:
        return default
    try:
        value = node.get(key, default) if hasattr(node, "get") else getattr(node, key, default)
    except Exception:
        return default
    return default if value is None else value


class ObservationBuilder:
    """Builds the agent's :class:`Observation` from Habitat's observation dict.

    ``protocol`` only changes the action table in ``task_prompt``; ``depth_cfg`` is the
    habitat depth sensor config (to report depth in metres).
    """

    def __init__(self, max_steps: int, protocol: str = "goat", depth_cfg=None,
                 extras_fn: Optional[Callable[[Any, Any], Optional[dict]]] = None) -> None:
        self.max_steps = int(max_steps)
        self.protocol = protocol
        self.depth_cfg = depth_cfg
        self.extras_fn = extras_fn
        self._prompt_cache: Dict[Any, str] = {}

    def goal_text(self, obs: Mapping[str, Any], episode) -> str:
        text = _decode_text(obs.get("mosnav_goal_text")) if "mosnav_goal_text" in obs else ""
        return text or str(getattr(episode, "goal_text", "") or "")

    def task_prompt(self, episode, goal_text: str) -> str:
        mode = str(getattr(episode, "target_mode", "single"))
        count = getattr(episode, "target_count", None) if mode == "many" else None
        goal_type = str(getattr(episode, "goal_type", "description") or "description")
        key = (goal_text, goal_type, mode, count)
        if key not in self._prompt_cache:
            self._prompt_cache[key] = build_task_prompt(
                goal_text, goal_type, mode, count, self.max_steps, self.protocol
            )
        return self._prompt_cache[key]

    def build(self, obs: Mapping[str, Any], episode, pose: Mapping[str, Any], step_count: int,
              previous_action: Optional[int], env=None) -> Observation:
        mode = str(getattr(episode, "target_mode", "single"))
        goal_type = str(getattr(episode, "goal_type", "description") or "description")
        goal_text = self.goal_text(obs, episode)
        rgb = obs.get("rgb")
        if rgb is not None:
            rgb = np.asarray(rgb)
            if rgb.ndim == 3 and rgb.shape[-1] == 4:
                rgb = rgb[..., :3]
        gps, compass = start_frame_pose(
            pose["position"], pose["rotation"], episode.start_position, episode.start_rotation
        )
        extras = {"episode_key": getattr(episode, "episode_key", ""),
                  "query_id": getattr(episode, "query_id", ""), "depth_units": "metres"}
        if self.extras_fn is not None:
            extras.update(self.extras_fn(env, episode) or {})
        return Observation(
            rgb=rgb,
            depth=_depth_in_metres(obs.get("depth"), self.depth_cfg),
            goal_text=goal_text,
            goal_embedding=None,
            goal_image=None,
            goal_type=goal_type,
            subtask_type=goal_type,
            target_mode=mode,
            target_count=int(episode.target_count) if mode == "many" else None,
            episode_id=str(episode.episode_id),
            scene_id=episode_scene_name(episode),
            step_count=int(step_count),
            gps=gps,
            compass=compass,
            max_steps=self.max_steps,
            task_prompt=self.task_prompt(episode, goal_text),
            previous_action=previous_action,
            extras=extras,
        )


# ----------------------------------------------------------------------------- rollout
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
    error_where: str = ""
    positions: List[List[float]] = field(default_factory=list)

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


def _call_agent(where: str, fn, *args):
    try:
        return fn(*args)
    except (InvalidAction, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise AgentError(where, exc) from exc


def _events_of(env) -> List[Dict[str, Any]]:
    state = getattr(getattr(env, "task", None), "mos_state", None)
    events = getattr(state, "events", None)
    if events is None:
        events = env.get_metrics().get("mos_report_events") or []
    return [dict(ev) for ev in events]


def _ended_by(env, steps_taken: int, max_steps: int) -> str:
    state = getattr(getattr(env, "task", None), "mos_state", None)
    ended = getattr(state, "ended_by", None)
    if ended in ("finish", "stop"):
        return "finish"
    if ended == "target_found":
        return "target_found"
    if ended == "max_steps" or steps_taken >= max_steps:
        return "max_steps"
    return str(ended) if ended else "max_steps"


# Habitat measure name -> SPEC §4 field, for tasks without ``mos_state`` (fallback only).
MEASURE_TO_FIELD = {
    "mos_targets_found": "targets_found",
    "mos_precision": "precision",
    "mos_recall": "recall",
    "mos_f1": "f1",
    "mos_success": "success",
    "path_efficiency": "pe",
    "target_selection_efficiency": "tse",
    "space_coverage": "coverage",
}


def episode_metrics_record(env) -> Dict[str, Any]:
    """The scalar metrics of the current episode for a record: every SPEC §4 field from the
    task's own state (``task.mos_state.metrics()``, the same definition the measures use),
    then every other scalar habitat measure under its own name (never overwriting a §4
    field). NaN/inf become None; lists and images are left out."""
    from habitat_mosnav.evaluation.results import scalar_metrics

    measures = scalar_metrics(env.get_metrics())
    state = getattr(getattr(env, "task", None), "mos_state", None)
    if state is not None and callable(getattr(state, "metrics", None)):
        out = scalar_metrics(state.metrics())
    else:
        out = {MEASURE_TO_FIELD.get(k, k): v for k, v in measures.items()}
    for key, value in measures.items():
        if key not in out and MEASURE_TO_FIELD.get(key) not in out:
            out[key] = value
    return out


def _snapshot_metrics(env) -> Dict[str, Any]:
    return episode_metrics_record(env)


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
) -> EpisodeRun:
    """Run ``agent`` on ``episode`` in ``env``; exceptions become ``EpisodeRun.error``.

    ``on_step`` receives ``{"obs", "observation", "action", "step", "pose", "episode"}``
    after reset (action None) and after every step (video, live view, position logs).
    A :class:`KeyboardInterrupt` (including the human agent's quit) propagates.
    """
    run = EpisodeRun(action_trace=[] if record_trace else None)
    mode = str(getattr(episode, "target_mode", "single"))
    try:
        env.current_episode = episode
        if seed is not None:
            env.seed(int(seed))
        obs = env.reset()
        if callable(getattr(agent, "seed", None)) and seed is not None:
            _call_agent("seed", agent.seed, int(seed))
        if callable(getattr(agent, "bind_env", None)):
            _call_agent("bind_env", agent.bind_env, env)
        if callable(getattr(agent, "reset", None)):
            _call_agent("reset", agent.reset)
        run.initial_metrics = _snapshot_metrics(env)
        pose = agent_pose(env)
        run.initial_agent_state = pose
        run.positions.append(pose["position"])
        previous = None
        observation = builder.build(obs, episode, pose, 0, None, env)
        if on_step is not None:
            on_step({"obs": obs, "observation": observation, "action": None, "step": 0,
                     "pose": pose, "episode": episode})
        while not env.episode_over:
            raw = _call_agent("act", agent.act, observation)
            step = map_action(raw, mode, protocol)
            obs = env.step(step.habitat_action)
            run.steps_taken += 1
            previous = step.agent_action
            pose = agent_pose(env)
            run.positions.append(pose["position"])
            if run.action_trace is not None:
                run.action_trace.append({"step": run.steps_taken, "action": step.agent_action,
                                         "habitat_action": step.habitat_action})
            if env.episode_over:
                observation = None
            else:
                observation = builder.build(obs, episode, pose, run.steps_taken, previous, env)
            if on_step is not None:
                on_step({"obs": obs, "observation": observation, "action": step.agent_action,
                         "step": run.steps_taken, "pose": pose, "episode": episode})
        run.metrics = _snapshot_metrics(env)
        run.report_events = _events_of(env)
        run.terminated_by = _ended_by(env, run.steps_taken, builder.max_steps)
        run.final_agent_state = pose
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # one bad episode never stops the run
        run.error = exc
        run.terminated_by = "error"
        run.error_where = _where(exc)
    return run


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
    if isinstance(exc, AgentError):
        return f"the agent raised {exc.error_type} in {exc.where}()"
    return f"the environment raised {type(exc).__name__} during the episode"


def describe_error(exc: BaseException) -> str:
    """One line for the terminal (may include the exception text)."""
    original = getattr(exc, "original", exc)
    text = " ".join(str(original).split())
    if len(text) > 300:
        text = text[:297] + "..."
    where = _where(exc)
    return f"{error_type_of(exc)}: {text}" + (f" (at {where})" if where else "")


# ----------------------------------------------------------------------------- video / live view
class DisplayUnavailable(RuntimeError):
    """``--render-live`` on a machine without a usable display."""


_DISPLAY_OK = False


def check_display() -> None:
    """Raise :class:`DisplayUnavailable` (one line) when no window can be opened."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            raise DisplayUnavailable(
                "--render-live needs a display, but neither DISPLAY nor WAYLAND_DISPLAY is set "
                "(on a headless machine use --save-video instead)")
    try:
        import cv2  # noqa: F401
    except ImportError:
        raise DisplayUnavailable("--render-live needs OpenCV: pip install opencv-python") from None
    global _DISPLAY_OK
    if _DISPLAY_OK:
        return
    # OpenCV's GUI backends abort the whole process when the display cannot be opened, so
    # try it in a child process first.
    import subprocess

    probe = ("import cv2, numpy as np; cv2.namedWindow('mosnav-probe'); "
             "cv2.imshow('mosnav-probe', np.zeros((8, 8, 3), np.uint8)); cv2.waitKey(1); "
             "cv2.destroyAllWindows()")
    try:
        res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             timeout=60)
    except subprocess.TimeoutExpired:
        raise DisplayUnavailable("--render-live: opening an OpenCV window timed out") from None
    if res.returncode != 0:
        lines = [ln.strip() for ln in (res.stderr or "").splitlines() if ln.strip()]
        why = lines[0][:160] if lines else f"exit status {res.returncode}"
        shown = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or "the display"
        raise DisplayUnavailable(
            f"--render-live could not open an OpenCV window on {shown} ({why}); on a headless "
            "machine use --save-video instead")
    _DISPLAY_OK = True


def _colorize_depth(depth: np.ndarray, shape) -> np.ndarray:
    d = np.asarray(depth, dtype=np.float32)
    if d.ndim == 3:
        d = d[..., 0]
    hi = float(np.nanmax(d)) if d.size else 1.0
    if hi > 1.0:  # metres: scale to [0, 1]
        d = d / hi
    g = (np.clip(np.nan_to_num(d), 0.0, 1.0) * 255).astype(np.uint8)
    img = np.stack([g, g, g], axis=-1)
    if img.shape[:2] != tuple(shape[:2]):
        try:
            import cv2

            img = cv2.resize(img, (shape[1], shape[0]), interpolation=cv2.INTER_NEAREST)
        except ImportError:
            pass
    return img


_ACTION_NAMES = {0: "FINISH", 1: "FORWARD", 2: "LEFT", 3: "RIGHT", 4: "LOOK_UP", 5: "LOOK_DOWN",
                 6: "TARGET_FOUND", 9: "FINISH(9)"}


def compose_frame(obs: Mapping[str, Any], episode, step: int, action: Optional[int],
                  max_steps: int) -> np.ndarray:
    """RGB | depth side by side with a caption (goal, mode, step, last action), uint8 RGB."""
    rgb = obs.get("rgb")
    rgb = np.zeros((256, 256, 3), np.uint8) if rgb is None else np.asarray(rgb)[..., :3].astype(np.uint8)
    panels = [rgb]
    if obs.get("depth") is not None:
        panels.append(_colorize_depth(obs["depth"], rgb.shape))
    top = np.concatenate(panels, axis=1)
    band = np.zeros((40, top.shape[1], 3), np.uint8)
    try:
        import cv2

        goal = str(getattr(episode, "goal_text", ""))[:90]
        last = "-" if action is None else _ACTION_NAMES.get(int(action), str(action))
        line2 = (f"{getattr(episode, 'target_mode', '')}  step {step}/{max_steps}  "
                 f"last action: {last}")
        cv2.putText(band, goal, (4, 15), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 255), 1,
                    cv2.LINE_AA)
        cv2.putText(band, line2, (4, 33), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (200, 200, 80), 1,
                    cv2.LINE_AA)
    except ImportError:
        pass
    frame = np.concatenate([top, band], axis=0)
    # Video encoders want even sizes.
    h, w = frame.shape[:2]
    return np.ascontiguousarray(frame[: h - h % 2, : w - w % 2])


def write_video(path: str, frames: Sequence[np.ndarray], fps: int = 6) -> str:
    """Write frames as ``.mp4`` (imageio-ffmpeg) or ``.gif``; returns the path."""
    import imageio

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.endswith(".gif"):
        imageio.mimsave(path, list(frames), duration=1.0 / fps, loop=0)
    else:
        imageio.mimsave(path, list(frames), fps=fps, macro_block_size=1)
    return path


class LiveViewer:
    """An OpenCV window showing what the agent sees; ``read_key`` serves the human agent."""

    WINDOW = "mosnav-eval"

    def __init__(self) -> None:
        check_display()
        import cv2

        self._cv2 = cv2
        try:
            cv2.namedWindow(self.WINDOW, cv2.WINDOW_AUTOSIZE)
        except cv2.error as exc:
            raise DisplayUnavailable(
                f"--render-live could not open an OpenCV window ({' '.join(str(exc).split())[:160]}); "
                "opencv-python-headless has no GUI: install opencv-python") from None

    def show(self, frame: np.ndarray) -> None:
        self._cv2.imshow(self.WINDOW, np.ascontiguousarray(frame[..., ::-1]))
        self._cv2.waitKey(1)

    def read_key(self) -> str:
        code = self._cv2.waitKey(0)
        return "" if code < 0 else chr(code & 0xFF)

    def close(self) -> None:
        try:
            self._cv2.destroyWindow(self.WINDOW)
        except Exception:
            pass

