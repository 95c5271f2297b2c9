#!/usr/bin/env python
"""Benchmark of ``mosnav-build extract``'s texel reading of a texture-based semantic mesh
(HM3D v0.2 style): a ``--grid`` x ``--grid`` quad mesh (2 triangles per quad) UV-mapped onto
one ``--size`` x ``--size`` semantic texture painted with ``--objects`` rectangles.

Prints the glb read + texture decode time, the texel reading time and the rate in texels/s
(one core pinned), so a scene's cost is its texel count divided by that rate.

    python benchmarks/bench_texels.py [--size 2048] [--grid 200] [--objects 400]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from pinning import pin_cores


def make_scene(directory: str, size: int, grid: int, objects: int, seed: int = 0) -> str:
    import trimesh
    from PIL import Image

    from habitat_mosnav.scenes.io import write_semantic_txt

    rng = np.random.default_rng(seed)
    xs = np.linspace(0.0, 10.0, grid + 1)
    gx, gy = np.meshgrid(xs, xs)
    verts = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    uv = np.stack([gx.ravel() / 10.0, 1.0 - gy.ravel() / 10.0], axis=1)
    i = np.arange(grid)
    a = (i[None, :] + (grid + 1) * i[:, None]).ravel()
    faces = np.concatenate(
        [np.stack([a, a + 1, a + grid + 2], 1), np.stack([a, a + grid + 2, a + grid + 1], 1)]
    )
    img = np.zeros((size, size, 3), np.uint8)
    records = []
    for k in range(objects):
        col = 0x100000 + k * 977
        x0, y0 = rng.integers(0, size - 64, 2)
        w, h = rng.integers(16, 256, 2)
        img[y0 : y0 + h, x0 : x0 + w] = [(col >> 16) & 255, (col >> 8) & 255, col & 255]
        records.append((k + 1, col, "box", 0))
    sid = "benchTexels"
    d = os.path.join(directory, f"00000-{sid}")
    os.makedirs(d, exist_ok=True)
    mat = trimesh.visual.material.PBRMaterial(baseColorTexture=Image.fromarray(img))
    mesh = trimesh.Trimesh(
        verts, faces, visual=trimesh.visual.TextureVisuals(uv=uv, material=mat), process=False
    )
    path = os.path.join(d, f"{sid}.semantic.glb")
    with open(path, "wb") as f:
        f.write(trimesh.exchange.gltf.export_glb(mesh))
    write_semantic_txt(os.path.join(d, f"{sid}.semantic.txt"), records)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--grid", type=int, default=200)
    ap.add_argument("--objects", type=int, default=400)
    ap.add_argument("--cores", type=int, default=1)
    args = ap.parse_args()
    pin_cores(args.cores)
    from habitat_mosnav.dataset_building.semantic import attach_geometry, read_annotations
    from habitat_mosnav.scenes import gltf

    with tempfile.TemporaryDirectory() as tmp:
        path = make_scene(tmp, args.size, args.grid, args.objects)
        objs = read_annotations(path.replace(".semantic.glb", ".semantic.txt"))
        t0 = time.perf_counter()
        g = gltf.read_glb(path)
        g.image(0)
        t1 = time.perf_counter()
        counts = attach_geometry(objs, path, "z")
        t2 = time.perf_counter()
    found = sum(1 for o in objs if o.samples)
    print(
        f"mesh: {2 * args.grid**2} triangles, texture {args.size}x{args.size}, {args.objects} objects"
    )
    print(f"read glb + decode texture: {t1 - t0:.2f} s")
    print(
        f"texel reading (incl. read): {t2 - t1:.2f} s for {counts['texels'] / 1e6:.1f} M texels "
        f"= {counts['texels'] / (t2 - t1) / 1e6:.1f} M texels/s; objects found {found}/{len(objs)}"
    )


if __name__ == "__main__":
    main()
