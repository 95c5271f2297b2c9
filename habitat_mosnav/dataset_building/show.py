"""Stage ``show``: PNGs of a goal's view points, for checking goals by eye.

Each PNG is the RGB view from one view point with the goal's semantic pixels tinted, and
its IoU in the file name: ``<dir>/<scene>/<object_id>/vp00_iou0.42.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np


def overlay(
    rgb: np.ndarray, mask: np.ndarray, color=(255, 0, 255), alpha: float = 0.45
) -> np.ndarray:
    out = rgb[..., :3].astype(np.float32).copy()
    out[mask] = (1 - alpha) * out[mask] + alpha * np.asarray(color, dtype=np.float32)
    return out.clip(0, 255).astype(np.uint8)


def render_goal(geo, goal: Dict[str, Any], out_dir: Path, tint: bool = True) -> List[Path]:
    import imageio.v3 as iio

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, vp in enumerate(goal.get("view_points") or []):
        rgb, sem = geo.rgb_semantic(vp["position"], vp["rotation"])
        img = overlay(rgb, sem == goal["object_id"]) if tint else rgb[..., :3]
        p = out_dir / f"vp{i:02d}_iou{float(vp.get('iou') or 0):.2f}.png"
        iio.imwrite(p, np.ascontiguousarray(img))
        paths.append(p)
    return paths
