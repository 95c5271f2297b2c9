"""What watches an evaluation's episodes without deciding anything: the progress bar, the
prompt/position/episode lines, the video and live-window frames and the per-episode maps.

The evaluator's loop (:meth:`~habitat_mosnav.evaluation.evaluator.Evaluator.run`) calls
every :class:`StepObserver` it built, in order: :meth:`~StepObserver.on_episode_start`,
:meth:`~StepObserver.on_step` after the reset and after each step (only for observers with
``watches_steps``; with none, the rollout builds no step information at all),
:meth:`~StepObserver.on_episode_end` once the record is written, and
:meth:`~StepObserver.close` when the loop ends. An observer never changes the record; a
video or map that cannot be drawn is a warning, except a planted link (exit 3).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from habitat_mosnav.api import MULTI_MODES, SEQUENTIAL
from habitat_mosnav.evaluation.durable import one_line, write_failed
from habitat_mosnav.evaluation.observations import (
    depth_in_metres,
    depth_limits,
    depth_normalization,
)
from habitat_mosnav.metrics import aggregate
from habitat_mosnav.safety import PlantedLinkError

#: A key and its episode's (target mode, metrics), as the progress bar aggregates them.
Prior = Dict[str, Tuple[str, Dict[str, Any]]]


class StepObserver:
    """The interface the loop calls; every method does nothing unless overridden."""

    #: Whether :meth:`on_step` is wanted (the rollout builds step information only then).
    watches_steps = False

    def on_episode_start(self, key: str, episode) -> None:
        """Before the episode's reset."""

    def on_step(self, info: Dict[str, Any]) -> None:
        """``info``: ``{"obs", "observation", "action", "step", "pose", "episode"}`` (step 0
        is the reset), see :func:`~habitat_mosnav.evaluation.rollout.run_episode`."""

    def on_episode_end(self, key: str, episode, record: Mapping[str, Any]) -> None:
        """After the episode's record (ok or error) was written."""

    def close(self) -> None:
        """When the loop ends (also on an interrupt or error)."""


class MapGrids:
    """habitat's top-down grid of an episode's floor, cached per scene and floor (0.5 m),
    shared by the video frames and the maps."""

    def __init__(self) -> None:
        self._last = None  # (scene, height, MapGrid)

    def get(self, env, episode, height: float):
        from habitat_mosnav.evaluation.maps import MapGrid

        scene = getattr(episode, "scene_id", None)
        cached = self._last
        if cached is None or cached[0] != scene or abs(cached[1] - height) > 0.5:
            cached = (scene, height, MapGrid.from_pathfinder(env.sim.pathfinder, height))
            self._last = cached
        return cached[2]


class EpisodeLog(StepObserver):
    """Terminal lines: the first prompt of each episode (``--log-prompts`` for an agent
    that keeps no prompt log of its own), each position (``--log-positions``) and a line
    per finished episode (``--log-episodes``)."""

    def __init__(
        self,
        log: Callable[[str], None],
        *,
        prompts: bool = False,
        positions: bool = False,
        episodes: bool = False,
    ) -> None:
        self.log = log
        self.prompts, self.positions, self.episodes = prompts, positions, episodes
        self.watches_steps = prompts or positions
        self._key = ""

    def on_episode_start(self, key: str, episode) -> None:
        self._key = key

    def on_step(self, info: Dict[str, Any]) -> None:
        key, step, observation = self._key, info["step"], info["observation"]
        if self.prompts and step == 0 and observation is not None:
            self.log(f"--- prompt for {key} ---")
            for line in str(observation.task_prompt).split("\n"):
                self.log(line)
        if self.positions:
            p = info["pose"]["position"]
            act = "reset" if info["action"] is None else f"action {info['action']}"
            self.log(
                f"{key} step {step:4d} {act:>9}: position ({p[0]:+.3f}, {p[1]:+.3f}, {p[2]:+.3f})"
            )

    def on_episode_end(self, key: str, episode, record: Mapping[str, Any]) -> None:
        if self.episodes:
            self.log(episode_line(record))


def episode_line(record: Mapping[str, Any]) -> str:
    """``--log-episodes``' line of a record: how it ended and its main metrics."""
    m = record.get("metrics", {})

    def f(name):
        v = m.get(name)
        return "null" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    if record["status"] != "ok":
        return (
            f"{record['episode_key']}: error {record.get('error_type')} after "
            f"{record['steps_taken']} steps"
        )
    return (
        f"{record['episode_key']}: {record['terminated_by']} after {record['steps_taken']} "
        f"steps  success={f('success')} f1={f('f1')} spl_multi={f('spl_multi')} "
        f"found={f('targets_found')}/{f('required_target_count')}"
    )


class EpisodeFrames(StepObserver):
    """Each step's frame (views, the map drawn so far, the claims): kept for
    ``<out>/videos/<episode>.<format>`` (``--video``) and shown in the live window
    (``--render-live``, a :class:`~habitat_mosnav.evaluation.viewer.LiveViewer`)."""

    watches_steps = True

    def __init__(
        self,
        env,
        grids: MapGrids,
        *,
        max_steps: int,
        depth_cfg,
        output_dir: str,
        video: Optional[str],
        viewer=None,
        warn: Callable[[str], None],
    ) -> None:
        self.env, self.grids, self.max_steps = env, grids, max_steps
        self.output_dir, self.video, self.viewer, self.warn = output_dir, video, viewer, warn
        self.depth_scale = (depth_normalization(depth_cfg), depth_limits(depth_cfg))  # metres
        self.frames: List[np.ndarray] = []
        self._key = ""
        self._trail: List[List[float]] = []
        self._painter: List[Any] = []

    def on_episode_start(self, key: str, episode) -> None:
        self._key = key
        self.frames = []

    def _growing_map(self, info: Dict[str, Any]):
        """(the map so far or None, the claims so far) for a video frame."""
        from habitat_mosnav.evaluation.maps import EpisodeMapPainter

        pose, episode = info["pose"], info["episode"]
        trail, painter = self._trail, self._painter
        if info["step"] == 0:
            trail.clear()
            painter.clear()
            try:
                grid = self.grids.get(self.env, episode, pose["position"][1])
                painter.append(
                    EpisodeMapPainter(grid, episode.goals, pose["position"], pose["rotation"])
                )
            except Exception as exc:  # a map problem never loses the episode
                self.warn(
                    f"{self._key}: no map in the video: {type(exc).__name__}: {one_line(exc)}"
                )
                painter.append(None)
        trail.append(pose["position"])
        events = [dict(ev) for ev in self.env.task.mos_state.events]
        if not painter or painter[0] is None:
            return None, events
        return painter[0].draw(
            trail, events, total_steps=self.max_steps, agent_rotation=pose["rotation"]
        ), events

    def on_step(self, info: Dict[str, Any]) -> None:
        from habitat_mosnav.evaluation.video import compose_frame

        top_down, events = self._growing_map(info)  # the video and the live window alike
        obs = dict(info["obs"])
        obs["depth"] = depth_in_metres(obs.get("depth"), self.depth_scale[0])
        frame = compose_frame(
            obs,
            info["episode"],
            info["step"],
            info["action"],
            self.max_steps,
            top_down_map=top_down,
            events=events,
            depth_range=self.depth_scale[1],
        )
        if self.video:
            self.frames.append(frame)
        if self.viewer is not None:
            self.viewer.show(frame)

    def on_episode_end(self, key: str, episode, record: Mapping[str, Any]) -> None:
        if not (self.frames and self.video):
            return
        from habitat_mosnav.evaluation.maps import episode_file_stem
        from habitat_mosnav.evaluation.video import write_video

        directory = os.path.join(self.output_dir, "videos")
        path = os.path.join(directory, episode_file_stem(key) + "." + self.video)
        try:
            write_video(path, self.frames)
        except PlantedLinkError as exc:  # never written through: exit 3, the record is kept
            raise write_failed(path, exc) from None
        except Exception as exc:  # a video problem never loses the record
            self.warn(f"could not write {path}: {type(exc).__name__}: {one_line(exc)}")

    def close(self) -> None:
        if self.viewer is not None:
            self.viewer.close()
            self.viewer = None


class EpisodeMaps(StepObserver):
    """``<out>/maps/<episode>.png`` of each finished (or failed) episode (``--save-maps``)."""

    def __init__(self, env, grids: MapGrids, output_dir: str, warn: Callable[[str], None]):
        self.env, self.grids, self.output_dir, self.warn = env, grids, output_dir, warn

    def on_episode_end(self, key: str, episode, record: Mapping[str, Any]) -> None:
        from habitat_mosnav.evaluation.maps import (
            episode_file_stem,
            episode_goal_image,
            save_record_map,
            start_height,
        )

        path = os.path.join(self.output_dir, "maps", episode_file_stem(key) + ".png")
        try:
            grid = self.grids.get(self.env, episode, start_height(record, episode))
            save_record_map(
                path,
                grid,
                episode.goals,
                record,
                getattr(episode, "goal_text", None),
                episode_goal_image(self.env, episode),
            )
        except PlantedLinkError as exc:  # never written through: exit 3, the record is kept
            raise write_failed(path, exc) from None
        except Exception as exc:  # a map problem never loses the record
            self.warn(f"could not write {path}: {type(exc).__name__}: {one_line(exc)}")


def metrics_text(prior: Prior) -> str:
    """SR/F1 over the finished many+all episodes (SR of single/any when only those; the
    mean task_success of sequential episodes when only those, SPEC §11)."""
    pairs = [p for p in prior.values() if p[0] in MULTI_MODES]
    if not pairs:
        pairs_all = [p for p in prior.values() if p[0] in ("single", "any")]
        if not pairs_all:
            ts = [
                p[1].get("task_success")
                for p in prior.values()
                if p[0] == SEQUENTIAL and isinstance(p[1].get("task_success"), (int, float))
            ]
            return f"TSR={sum(ts) / len(ts):.3f}" if ts else ""
        if pairs_all:
            m = aggregate(pairs_all)
            sr = [m.get(f"sr_{x}") for x in ("single", "any") if m.get(f"sr_{x}") is not None]
            if sr:
                return f"SR={sum(sr) / len(sr):.3f}"
        return ""
    m = aggregate(pairs)
    sr, f1 = m.get("sr"), m.get("f1")
    return f"SR={'-' if sr is None else f'{sr:.3f}'} F1={'-' if f1 is None else f'{f1:.3f}'}"


class ProgressBar(StepObserver):
    """The rank's tqdm bar: episodes done of the rank's share, the metrics so far (of
    ``prior``, this rank's earlier ok records, updated per episode), the current episode's
    step and the steps run by this process (a 500-step episode shows progress, not just
    ``0/4``), redrawn at most twice a second. Log lines of ``habitat_mosnav`` go above it."""

    def __init__(
        self,
        *,
        stream,
        enabled: bool,
        label: str,
        total: int,
        done: int,
        max_steps: int,
        prior: Prior,
    ) -> None:
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm

        self.prior, self.max_steps = prior, max_steps
        self.bar = tqdm(
            total=total,
            initial=done,
            file=stream,
            disable=not enabled,
            dynamic_ncols=True,
            unit="ep",
            desc=label,
        )
        self.watches_steps = not self.bar.disable
        self._steps = {"done": 0, "episode": 0}
        self._metrics = metrics_text(prior)
        self._show_steps = False  # the first text has no step part yet
        self._redraw()
        self._show_steps = True
        self._last = 0.0
        self._redirect = logging_redirect_tqdm(loggers=[logging.getLogger("habitat_mosnav")])
        self._redirect.__enter__()

    def _redraw(self, step: Optional[int] = None) -> None:
        if step is None:
            self._metrics = metrics_text(self.prior)
        parts = [self._metrics]
        if self._show_steps:
            current = self._steps["episode"] if step is None else step
            parts.append(f"step {current}/{self.max_steps}, {self._steps['done'] + current} steps")
        self.bar.set_postfix_str(" ".join(p for p in parts if p))

    def on_episode_start(self, key: str, episode) -> None:
        self._last = 0.0  # the first step of each episode redraws

    def on_step(self, info: Dict[str, Any]) -> None:
        self._steps["episode"] = info["step"]
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            self._redraw(info["step"])

    def on_episode_end(self, key: str, episode, record: Mapping[str, Any]) -> None:
        self.prior.pop(key, None)
        if record["status"] == "ok":
            self.prior[key] = (record["episode"]["target_mode"], record["metrics"])
        self._steps["done"] += record["steps_taken"]
        self._steps["episode"] = 0
        self.bar.update(1)
        self._redraw()

    def close(self) -> None:
        self.bar.close()
        self._redirect.__exit__(None, None, None)
