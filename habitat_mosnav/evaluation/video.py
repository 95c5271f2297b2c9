"""Episode videos for ``--save-video``: one frame per step, written with imageio as
``.mp4`` (imageio-ffmpeg) or ``.gif``.

A frame is a column of RGB above depth (depth in metres through a colour map over the
sensor's range, with its colour bar and range) beside a larger growing top-down map
(:mod:`~habitat_mosnav.evaluation.maps`: the trajectory so far, the claims so far, the
start marker and habitat's agent sprite), each panel under a label, above a caption with
the goal, the mode, the step, the claims made so far (never how many targets remain) and
the action just taken. Small sensors are scaled up (nearest) to :data:`MIN_PANEL_HEIGHT`
so the labels fit.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.api import Action

__all__ = [
    "DEPTH_COLORMAP",
    "action_name",
    "claims_caption",
    "colorize_depth",
    "compose_frame",
    "write_video",
]

#: OpenCV colour map of the depth panel (near: blue, far: red); invalid depth is black.
DEPTH_COLORMAP = "COLORMAP_TURBO"
MIN_PANEL_HEIGHT = 160
LABEL_HEIGHT = 18
DEPTH_BAR_HEIGHT = 26
CAPTION_HEIGHT = 40
FONT_SCALE = 0.4


def _resize(img: np.ndarray, height: int, nearest: bool = True) -> np.ndarray:
    """``img`` scaled to ``height`` rows, aspect ratio kept."""
    import cv2

    if img.shape[0] == height:
        return img
    width = max(1, int(round(img.shape[1] * height / float(img.shape[0]))))
    interp = cv2.INTER_NEAREST if nearest else cv2.INTER_AREA
    return cv2.resize(img, (width, height), interpolation=interp)


def _colormap(values: np.ndarray) -> np.ndarray:
    """RGB of :data:`DEPTH_COLORMAP` for uint8 ``values``."""
    import cv2

    bgr = cv2.applyColorMap(values.astype(np.uint8), getattr(cv2, DEPTH_COLORMAP))
    return bgr[..., ::-1]


def colorize_depth(depth: np.ndarray, depth_range: Tuple[float, float]) -> np.ndarray:
    """Depth in metres (H, W[, 1]) as RGB through :data:`DEPTH_COLORMAP` over
    ``depth_range`` (metres; values outside are clipped); zero, negative or NaN depth
    (no return) is black."""
    d = np.asarray(depth, dtype=np.float32)
    if d.ndim == 3:
        d = d[..., 0]
    lo, hi = float(depth_range[0]), float(depth_range[1])
    valid = np.isfinite(d) & (d > 0)
    t = np.clip((np.nan_to_num(d) - lo) / max(hi - lo, 1e-6), 0.0, 1.0)
    rgb = _colormap(np.round(t * 255).astype(np.uint8))
    rgb[~valid] = 0
    return np.ascontiguousarray(rgb)


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


def _text(img: np.ndarray, text: str, org: Tuple[int, int], color=(255, 255, 255)) -> None:
    import cv2

    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, FONT_SCALE, color, 1, cv2.LINE_AA)


def _labelled(panel: np.ndarray, label: str) -> np.ndarray:
    """``panel`` under a dark strip carrying ``label``."""
    strip = np.full((LABEL_HEIGHT, panel.shape[1], 3), 40, np.uint8)
    _text(strip, label, (4, LABEL_HEIGHT - 5))
    return np.concatenate([strip, panel], axis=0)


def _depth_bar(width: int, depth_range: Tuple[float, float]) -> np.ndarray:
    """The depth colour bar with its range in metres at both ends."""
    bar = np.full((DEPTH_BAR_HEIGHT, width, 3), 40, np.uint8)
    ramp = np.linspace(0, 255, max(1, width - 8)).round().astype(np.uint8)[None, :]
    bar[2:10, 4 : 4 + ramp.shape[1]] = _colormap(np.repeat(ramp, 8, axis=0))
    lo, hi = depth_range
    _text(bar, f"{lo:.1f} m", (4, DEPTH_BAR_HEIGHT - 4))
    right = f"{hi:.1f} m"
    _text(bar, right, (max(4, width - 8 - 7 * len(right)), DEPTH_BAR_HEIGHT - 4))
    return bar


def _stack(panels: Sequence[np.ndarray]) -> np.ndarray:
    """Panels one above the other, padded to the widest."""
    width = max(p.shape[1] for p in panels)
    padded = [np.pad(p, ((0, 0), (0, width - p.shape[1]), (0, 0))) for p in panels]
    return np.concatenate(padded, axis=0)


def compose_frame(
    obs: Mapping[str, Any],
    episode,
    step: int,
    action: Optional[int],
    max_steps: int,
    top_down_map: Optional[np.ndarray] = None,
    events: Optional[Sequence[Mapping[str, Any]]] = None,
    depth_range: Tuple[float, float] = (0.0, 10.0),
) -> np.ndarray:
    """[RGB above depth] | top-down map, each labelled, above a caption; uint8 RGB of even
    size. ``obs["depth"]`` is in metres, coloured over ``depth_range`` (the sensor's
    min/max depth); the map panel is as tall as the RGB + depth column."""
    rgb = obs.get("rgb")
    rgb = (
        np.zeros((256, 256, 3), np.uint8)
        if rgb is None
        else np.asarray(rgb)[..., :3].astype(np.uint8)
    )
    height = max(MIN_PANEL_HEIGHT, rgb.shape[0])
    column = [_labelled(_resize(rgb, height), "RGB")]
    if obs.get("depth") is not None:
        depth = _resize(colorize_depth(obs["depth"], depth_range), height)
        column.append(_labelled(depth, "depth (m)"))
        column.append(_depth_bar(depth.shape[1], depth_range))
    left = _stack(column)
    top = left
    if top_down_map is not None:
        area = _resize(
            np.asarray(top_down_map, np.uint8)[..., :3], left.shape[0] - LABEL_HEIGHT, nearest=False
        )
        right = _labelled(area, "map: blue disc = start, arrow = agent")
        top = np.concatenate([left, right], axis=1)
    band = np.zeros((CAPTION_HEIGHT, top.shape[1], 3), np.uint8)
    goal = str(getattr(episode, "goal_text", ""))[:110]
    line2 = f"{getattr(episode, 'target_mode', '')}  step {step}/{max_steps}  action: {action_name(action)}"
    claims = claims_caption(events)
    if claims:
        line2 += "  " + claims
    _text(band, goal, (4, 15))
    _text(band, line2, (4, 33), (200, 200, 80))
    frame = np.concatenate([top, band], axis=0)
    h, w = frame.shape[:2]  # video encoders want even sizes
    return np.ascontiguousarray(frame[: h - h % 2, : w - w % 2])


def write_video(path: str, frames: Sequence[np.ndarray], fps: int = 6) -> str:
    """Write frames as ``.mp4`` (imageio-ffmpeg) or ``.gif``; returns the path."""
    import imageio

    from habitat_mosnav.safety import replacing

    with replacing(path, suffix=os.path.splitext(path)[1]) as tmp:  # never through a planted link
        if path.endswith(".gif"):
            imageio.mimsave(tmp, list(frames), duration=1.0 / fps, loop=0)
        else:
            imageio.mimsave(tmp, list(frames), fps=fps, macro_block_size=1)
    return path
