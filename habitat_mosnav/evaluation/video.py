"""Episode videos for ``--save-video``: one frame per step, written with imageio as
``.mp4`` (imageio-ffmpeg) or ``.gif``.

A frame is RGB | depth | the growing top-down map (:mod:`~habitat_mosnav.evaluation.maps`:
the trajectory so far, the claims so far and the agent), above a caption with the goal,
the mode, the step, the claims made so far (never how many targets remain) and the
action just taken.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from habitat_mosnav.api import Action

__all__ = ["action_name", "claims_caption", "compose_frame", "write_video"]


def _resize(img: np.ndarray, height: int, nearest: bool = True) -> np.ndarray:
    """``img`` scaled to ``height`` rows, aspect ratio kept."""
    import cv2

    if img.shape[0] == height:
        return img
    width = max(1, int(round(img.shape[1] * height / float(img.shape[0]))))
    interp = cv2.INTER_NEAREST if nearest else cv2.INTER_AREA
    return cv2.resize(img, (width, height), interpolation=interp)


def _colorize_depth(depth: np.ndarray, height: int) -> np.ndarray:
    d = np.asarray(depth, dtype=np.float32)
    if d.ndim == 3:
        d = d[..., 0]
    hi = float(np.nanmax(d)) if d.size else 1.0
    if hi > 1.0:  # metres: scale to [0, 1]
        d = d / hi
    g = (np.clip(np.nan_to_num(d), 0.0, 1.0) * 255).astype(np.uint8)
    return _resize(np.stack([g, g, g], axis=-1), height)


def action_name(action: Optional[int]) -> str:
    """``FORWARD``-style name of an agent action id (SPEC §2); ``-`` before the first."""
    if action is None:
        return "-"
    try:
        return Action(int(action)).name
    except ValueError:
        return str(action)


def claims_caption(events: Optional[Sequence[Mapping[str, Any]]]) -> str:
    """``claims 3 (2 true)``: the claims made so far and how many found a new target."""
    if events is None:
        return ""
    true = sum(bool(ev.get("is_true_positive")) for ev in events)
    return f"claims {len(events)} ({true} true)"


def compose_frame(obs: Mapping[str, Any], episode, step: int, action: Optional[int],
                  max_steps: int, top_down_map: Optional[np.ndarray] = None,
                  events: Optional[Sequence[Mapping[str, Any]]] = None) -> np.ndarray:
    """RGB | depth | top-down map side by side with a caption, uint8 RGB of even size."""
    rgb = obs.get("rgb")
    rgb = np.zeros((256, 256, 3), np.uint8) if rgb is None else np.asarray(rgb)[..., :3].astype(np.uint8)
    height = rgb.shape[0]
    panels = [rgb]
    if obs.get("depth") is not None:
        panels.append(_colorize_depth(obs["depth"], height))
    if top_down_map is not None:
        panels.append(_resize(np.asarray(top_down_map, np.uint8)[..., :3], height, nearest=False))
    top = np.concatenate(panels, axis=1)
    band = np.zeros((40, top.shape[1], 3), np.uint8)
    import cv2

    goal = str(getattr(episode, "goal_text", ""))[:110]
    line2 = f"{getattr(episode, 'target_mode', '')}  step {step}/{max_steps}  action: {action_name(action)}"
    claims = claims_caption(events)
    if claims:
        line2 += "  " + claims
    cv2.putText(band, goal, (4, 15), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 255), 1, cv2.LINE_AA)
    cv2.putText(band, line2, (4, 33), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (200, 200, 80), 1, cv2.LINE_AA)
    frame = np.concatenate([top, band], axis=0)
    h, w = frame.shape[:2]  # video encoders want even sizes
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
