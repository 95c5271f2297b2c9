"""Episode videos for ``--save-video``: one frame per step (RGB | depth and a caption),
written as ``.mp4`` (imageio-ffmpeg) or ``.gif``."""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence

import numpy as np

__all__ = ["compose_frame", "write_video"]


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
