"""The CPU simulator's results on the three bundled demo scenes, as one hash: geodesics,
paths, navigability, snapping, stepping and the grid's structure at random points and
pairs (fixed seed), rounded to 0.1 mm. A refactor of ``sims/navgrid`` and its parts must
keep it; a change of results must change the hash on purpose (and say why)."""

from __future__ import annotations

import glob
import hashlib
import os

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (before habitat)
from habitat_mosnav.sims.geometry import load_mesh, scene_up_axis
from habitat_mosnav.sims.navgrid import AgentShape, NavGrid

DEMO = os.path.join(os.path.dirname(__file__), "..", "habitat_mosnav", "data", "demo", "scenes")
SCENES = sorted(
    p for p in glob.glob(os.path.join(DEMO, "*", "*.glb")) if not p.endswith(".semantic.glb")
)

#: sha256 of :func:`scene_values` per demo scene. The split of the single-file NavGrid into
#: sims/grid/ kept the hashes it had (7ef5b99f..., 19faea18..., 5accb685...). Changed on
#: purpose since, each time with the geodesics as close to the exact reference:
#: - corner nodes every 15 degrees of a corner's arc (was 7.5), the polygon filter before
#:   line of sight (corners.ARC_STEP, SEE_SLACK), steep faces sampled along lines 0.1 m
#:   apart in height (surface.sample_walls): 06ae25fe..., d21e21ee..., 8c5af437...;
#: - flat faces sampled by a lattice along the two edges at their widest angle plus their
#:   third edge (surface.sample_surface; 5x fewer samples on long floor strips): demo at
#:   300 pairs median 0.023 %, p95 0.067 %, max 0.099 % against the exact reference,
#:   the same figures as before it: 31a6861f..., 7b21aaab..., 272ee703...;
#: - a query point short of the radius takes a goal's slack on the polygons, and a point
#:   no polygon holds the segments' test to the nodes it lies just outside of, before fast
#:   marching (Geodesics.see_slack, best_corner); the look-up's bins
#:   (CornerGraph.bin_nodes) left every value as it was: EdBrNAgONm2 e9cc499f...;
#: - rays traced in steps of their margin / sqrt 2 (the interpolated clearance's Lipschitz
#:   bound; / (1 + sqrt 2) only while a start point's deficit is paid off), rays into a
#:   corner node's own corner not traced (CornerGraph.cast): EdBrNAgONm2 at 400 pairs
#:   median 0.024 %, p95 0.076 % (was 0.077), max 0.203 %; the pair join on bins and the
#:   pruned sub-cell clearance queries left every value as it was: Cukxndkh48K 31a6861f...;
#: - a point no polygon holds nor comes near has the segments to its bin's reached nodes
#:   tested before fast marching (Geodesics.field_value: a 40-room floor's field took 0.7 s)
EXPECTED = {
    "Cukxndkh48K": "dc483c7f3dbdef656c3693a3ed5d1b5a413dad4903a1230bb432b5330373ef44",
    "b2ZCdoVqp4V": "7b21aaabaa5f82cf9ae4a50d3393dbf2f50240611e7b5b3f2ec09a3876401ab5",
    "EdBrNAgONm2": "68a9f6ae0b3083cbfbc88626f6ce2f83b3bef40840ec946cdb6a4476716645da",
}


def _r(v) -> list:
    a = np.asarray(v, np.float64).reshape(-1)
    return [
        ("inf" if x > 0 else "-inf")
        if np.isinf(x)
        else ("nan" if np.isnan(x) else round(float(x), 4))
        for x in a.tolist()
    ]


def scene_values(grid: NavGrid, seed: int = 0) -> list:
    """What the hash covers, in a fixed order: structure, then queries at random points."""
    rng = np.random.default_rng(seed)
    out = [
        (
            "struct",
            grid.num_islands,
            grid.total_cells,
            grid.num_nodes,
            len(grid.graph.edges[0]),
            _r(grid.island_area),
            _r(grid.bounds[0]),
            _r(grid.bounds[1]),
        )
    ]
    floor = [grid.random_point(rng) for _ in range(80)]
    lo, hi = grid.bounds
    y0 = float(grid.island_y[grid.largest_island])
    anywhere = [
        np.array([rng.uniform(lo[0], hi[0]), y0, rng.uniform(lo[2], hi[2])]) for _ in range(60)
    ]
    out.append(("floor", [_r(p) for p in floor]))
    for p in anywhere:
        loc = grid.snap(p)
        out.append(
            (
                "snap",
                grid.is_navigable(p),
                None if loc is None else (loc.layer, loc.patch, loc.island, _r(loc.xyz())),
            )
        )
        out.append(("obstacle", _r(grid.distance_to_closest_obstacle(p))))
    for a, b in zip(floor[0:40], floor[40:80]):
        out.append(("geo", _r(grid.geodesic_distance(a, [b])), _r(grid.geodesic_distance(b, [a]))))
    for i in range(10):
        goals = [floor[(7 * i + k) % 80] for k in (1, 3, 5)]
        out.append(("multi", _r(grid.geodesic_distance(anywhere[i], goals))))
    for a, b in zip(floor[0:12], floor[68:80]):
        pts, dist = grid.find_path(a, [b])
        out.append(("path", _r(dist), [_r(p) for p in pts]))
    for i, p in enumerate(floor[:40]):
        ang = rng.uniform(0, 2 * np.pi)
        end = p + np.array([np.cos(ang), 0.0, np.sin(ang)]) * (0.25 if i % 2 else 1.5)
        out.append(
            (
                "step",
                _r(grid.try_step(p, end, sliding=True)),
                _r(grid.try_step(p, end, sliding=False)),
            )
        )
    top = grid.topdown(0.1, y0)
    out.append(("topdown", top.shape, int(top.sum())))
    return out


def scene_hash(grid: NavGrid) -> str:
    return hashlib.sha256(repr(scene_values(grid)).encode()).hexdigest()


@pytest.mark.parametrize("scene", SCENES, ids=lambda p: os.path.basename(p).split(".")[0])
def test_demo_scene_results_hash(scene):
    grid = NavGrid(load_mesh(scene, scene_up_axis(scene)).triangles, AgentShape(0.88, 0.18, 0.2))
    name = os.path.basename(scene).split(".")[0]
    assert scene_hash(grid) == EXPECTED[name]
