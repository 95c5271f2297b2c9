"""Top-down orthographic preview of a scene mesh (numpy only), to eyeball a layout."""

from __future__ import annotations

import numpy as np


def render_topdown(
    vertices, faces, colors, meters_per_pixel: float = 0.02, max_height: float = 2.4
) -> np.ndarray:
    """(H, W, 3) uint8 image looking down -Y; geometry above ``max_height`` (the ceiling) is cut.

    Rows go along +Z and columns along +X. A per-pixel height buffer keeps the highest
    surface, like looking down from just under the ceiling.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    c = np.asarray(colors)[:, :3].astype(np.float64)
    keep = v[f][:, :, 1].max(1) <= max_height
    f = f[keep]
    lo = v[:, [0, 2]].min(0)
    hi = v[:, [0, 2]].max(0)
    W = int(np.ceil((hi[0] - lo[0]) / meters_per_pixel)) + 1
    H = int(np.ceil((hi[1] - lo[1]) / meters_per_pixel)) + 1
    img = np.zeros((H, W, 3), dtype=np.float64)
    zbuf = np.full((H, W), -np.inf)
    p = (v[:, [0, 2]] - lo) / meters_per_pixel
    for tri in f:
        a, b, cc = p[tri]
        x0, y0 = np.floor(np.minimum(np.minimum(a, b), cc)).astype(int)
        x1, y1 = np.ceil(np.maximum(np.maximum(a, b), cc)).astype(int)
        x0, y0 = max(x0, 0), max(y0, 0)
        x1, y1 = min(x1, W - 1), min(y1, H - 1)
        if x1 < x0 or y1 < y0:
            continue
        den = (b[1] - cc[1]) * (a[0] - cc[0]) + (cc[0] - b[0]) * (a[1] - cc[1])
        if abs(den) < 1e-12:
            continue  # vertical face: seen edge-on from above
        xs, ys = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
        l1 = ((b[1] - cc[1]) * (xs - cc[0]) + (cc[0] - b[0]) * (ys - cc[1])) / den
        l2 = ((cc[1] - a[1]) * (xs - cc[0]) + (a[0] - cc[0]) * (ys - cc[1])) / den
        l3 = 1.0 - l1 - l2
        inside = (l1 >= -1e-9) & (l2 >= -1e-9) & (l3 >= -1e-9)
        if not inside.any():
            continue
        h = l1 * v[tri[0], 1] + l2 * v[tri[1], 1] + l3 * v[tri[2], 1]
        col = (c[tri[0]] + c[tri[1]] + c[tri[2]]) / 3.0
        sub_z = zbuf[y0 : y1 + 1, x0 : x1 + 1]
        upd = inside & (h > sub_z)
        sub_z[upd] = h[upd]
        img[y0 : y1 + 1, x0 : x1 + 1][upd] = col
    return np.clip(img, 0, 255).astype(np.uint8)


def render_glb_topdown(glb_path: str, png_path: str, meters_per_pixel: float = 0.02) -> None:
    """Write a top-down PNG of a scene's ``.glb``, turned into the Y-up world first (the
    file's up axis as the simulator decides it: meta ``up_axis``, else Z up)."""
    import imageio.v2 as imageio
    import trimesh

    from habitat_mosnav.scenes.gltf import read_checked
    from habitat_mosnav.scenes.io import file_to_world, scene_up_axis

    read_checked(glb_path)  # trimesh only reads checked files (issue #30)
    mesh = trimesh.load(glb_path, force="mesh", process=False)
    cols = mesh.visual.vertex_colors
    verts = file_to_world(np.asarray(mesh.vertices), scene_up_axis(glb_path))
    imageio.imwrite(png_path, render_topdown(verts, mesh.faces, cols, meters_per_pixel))
