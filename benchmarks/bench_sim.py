#!/usr/bin/env python
"""Benchmark of the CPU simulator ``MosNavMeshSim-v0`` (no habitat.Env, no measures).

Prints: scene load + navigability time, sim steps/s without sensors (each step also does
one geodesic lookup, as a distance measure would), geodesic lookup time (at the agent's
last position, and from random floor points), distance-field
time per goal, geodesic accuracy against the exact reference (shapely free space at the
agent radius + visibility graph, ``habitat_mosnav.sims.reference``) on ``--pairs`` random
pairs of the floor: median / p95 / max |relative error|, pairs reachable in only one,
max |d(a, b) - d(b, a)|; then sim steps/s with RGB-D 256x256 and render fps. Runs pinned to ``--cores`` CPU cores (default 1,
Mesa's llvmpipe limited to as many threads) because the targets are per core.

    python benchmarks/bench_sim.py [--scene PATH.glb] [--steps 500] [--size 256]

Default scene: the first bundled demo scene (habitat_mosnav/data/demo/scenes), else a
10 m x 8 m flat built with trimesh.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time

from pinning import pin_cores


def _default_scene() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    demo = os.path.join(here, "..", "habitat_mosnav", "data", "demo", "scenes")
    found = sorted(
        p for p in glob.glob(os.path.join(demo, "*", "*.glb")) if not p.endswith(".semantic.glb")
    )
    if found:
        return os.path.abspath(found[0])
    from habitat_mosnav.sims import toy_scenes as ts

    out = os.path.join(tempfile.mkdtemp(prefix="mosnav_bench_"), "00000-flat")
    return ts.export_scene_with_semantics(out, "flat", ts.apartment_boxes())


def _make_sim(scene: str, size: int, rgbd: bool, seed: int, navmesh: str = "none"):
    """The CPU simulator on ``scene``; ``navmesh``: its option (default "none": navigability
    from the mesh, even where a .navmesh lies beside the scene; "": that .navmesh)."""
    from omegaconf import OmegaConf
    from habitat.config.default_structured_configs import (
        AgentConfig,
        HabitatSimDepthSensorConfig,
        HabitatSimRGBSensorConfig,
    )

    from habitat_mosnav.config.simulator import MosNavMeshOptions, MosNavMeshSimConfig
    from habitat_mosnav.sims import MosNavMeshSim

    sensors = {}
    if rgbd:
        pos = [0.0, 0.88, 0.0]
        sensors = {
            "rgb_sensor": HabitatSimRGBSensorConfig(width=size, height=size, hfov=79, position=pos),
            "depth_sensor": HabitatSimDepthSensorConfig(
                width=size, height=size, hfov=79, position=pos, min_depth=0.5, max_depth=5.0
            ),
        }
    agent = AgentConfig(height=0.88, radius=0.18, max_climb=0.2, sim_sensors=sensors)
    cfg = OmegaConf.structured(
        MosNavMeshSimConfig(
            scene=scene,
            seed=seed,
            agents_order=["main_agent"],
            agents={"main_agent": agent},
            forward_step_size=0.25,
            turn_angle=30,
            mosnav_mesh=MosNavMeshOptions(navmesh=navmesh),
        )
    )
    return MosNavMeshSim(cfg)


def _run_steps(sim, steps: int, goals, seed: int, clock=time.perf_counter) -> float:
    import numpy as np

    rng = np.random.default_rng(seed)
    actions = rng.choice([1, 1, 1, 2, 3], size=steps)
    sim.reset()
    sim.geodesic_distance(sim.get_agent_state().position, goals)  # field built outside timing
    t0 = clock()
    for a in actions:
        sim.step(int(a))
        sim.geodesic_distance(sim.get_agent_state().position, goals)
    return steps / (clock() - t0)


def accuracy(sim, pairs: int, seed: int, triangles=None, floor_y=None) -> dict:
    """Geodesics of the simulator against the exact reference on random floor pairs of one
    floor (``floor_y``, default: the main island's): the reference is built from
    ``triangles`` (default: the scene's own; a scan-like scene's clean twin, to see what
    the noise costs). |relative error| in %, pairs reachable in only one, max asymmetry."""
    import numpy as np

    from habitat_mosnav.sims.reference import ExactGeodesics, free_space

    ag = sim.navgrid.agent
    t0 = time.process_time()
    if floor_y is None:
        floor_y = float(sim.navgrid.island_y[sim.navgrid.largest_island])
    tris = sim.scene_entry.mesh.triangles if triangles is None else triangles
    ref = ExactGeodesics(
        free_space(
            tris,
            ag.radius,
            ag.height,
            ag.max_climb,
            floor_y=floor_y,
            max_slope=ag.max_slope,
            quad_segs=16,
        )
    )
    t_ref = time.process_time() - t0
    pts = ref.sample(np.random.default_rng(seed), 2 * pairs)
    errs, asym, lengths, mismatch, t_ref_q = [], [], [], 0, 0.0
    for a, b in zip(pts[0::2], pts[1::2]):
        t0 = time.process_time()
        exact = ref.distance(a, b)
        t_ref_q += time.process_time() - t0
        A, B = [a[0], floor_y, a[1]], [b[0], floor_y, b[1]]
        d_ab, d_ba = sim.geodesic_distance(A, B), sim.geodesic_distance(B, A)
        if np.isfinite(exact) != np.isfinite(d_ab):
            mismatch += 1
        elif np.isfinite(exact) and exact > 0.3:
            errs.append(abs(d_ab - exact) / exact)
            asym.append(abs(d_ab - d_ba))
            lengths.append(float(exact))
    e = 100 * np.asarray(errs if errs else [np.nan])
    return {
        "pairs": pairs,
        "reachable": len(errs),
        "median": float(np.median(e)),
        "p95": float(np.percentile(e, 95)),
        "max": float(e.max()),
        "only one": mismatch,
        "asym cm": max(asym, default=0.0) * 100,
        "longest m": max(lengths, default=0.0),
        "ref s": t_ref,
        "ref ms/pair": t_ref_q / max(pairs, 1) * 1e3,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default=None, help="scene .glb (default: first demo scene)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--size", type=int, default=256, help="RGB-D width and height")
    ap.add_argument("--goals", type=int, default=20, help="goals timed for the distance field")
    ap.add_argument(
        "--pairs", type=int, default=150, help="random pairs for the accuracy check (0: skip)"
    )
    ap.add_argument("--cores", type=int, default=1, help="CPU cores to pin to (0 = no pinning)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    pin_cores(args.cores)

    import numpy as np

    import habitat_mosnav  # noqa: F401  (before habitat)
    from habitat_mosnav.sims import clear_scene_cache

    scene = os.path.abspath(args.scene) if args.scene else _default_scene()
    if not os.path.isfile(scene):
        print(f"bench_sim: scene not found: {scene}", file=sys.stderr)
        return 2
    print(f"scene: {scene}")
    print(f"cores: {args.cores or 'all'}")

    clear_scene_cache()
    t0 = time.perf_counter()
    sim = _make_sim(scene, args.size, rgbd=False, seed=args.seed)
    t_load = time.perf_counter() - t0
    grid = sim.navgrid
    print(
        f"scene load + navigability: {t_load:.2f} s  (grid {grid.H}x{grid.W} cells of "
        f"{grid.cell} m, {grid.num_islands} islands, navigable {grid.island_area.sum():.1f} m2, "
        f"{len(sim.scene_entry.mesh.faces)} triangles)"
    )

    pf = sim.pathfinder
    pf.seed(args.seed)
    main_island = int(np.argmax(grid.island_area))
    goals = [pf.get_random_navigable_point(island_index=main_island) for _ in range(5)]

    sps = _run_steps(sim, args.steps, goals, args.seed)
    print(f"sim steps/s without sensors (+1 geodesic lookup per step): {sps:.0f}")

    t0 = time.perf_counter()
    n_lookup = 2000
    p = sim.get_agent_state().position
    for _ in range(n_lookup):
        sim.geodesic_distance(p + np.float32(1e-4) * np.float32(_ % 3), goals)
    print(
        f"geodesic lookup (snap + cached field): {(time.perf_counter() - t0) / n_lookup * 1e6:.0f} us"
    )
    floor = [pf.get_random_navigable_point(island_index=main_island) for _ in range(n_lookup)]
    t0 = time.perf_counter()
    for q in floor:
        sim.geodesic_distance(q, goals)
    print(
        f"geodesic lookup from random floor points: {(time.perf_counter() - t0) / n_lookup * 1e6:.0f} us"
    )

    fields = []
    for _ in range(args.goals):
        g = pf.get_random_navigable_point(island_index=main_island)
        t0 = time.perf_counter()
        grid.geodesics.compute_field(np.asarray([g], np.float64))
        fields.append(time.perf_counter() - t0)
    print(
        f"distance field per goal: {np.mean(fields) * 1e3:.1f} ms mean, {np.max(fields) * 1e3:.1f} ms max "
        f"({args.goals} goals; graph of {grid.num_nodes} corner nodes, {len(grid.graph.edges[0])} edges)"
    )
    if args.pairs > 0:
        a = accuracy(sim, args.pairs, args.seed)
        print(
            f"geodesic accuracy vs exact reference ({a['reachable']} reachable pairs of {a['pairs']}, radius "
            f"{grid.agent.radius} m): |error| median {a['median']:.3f} %, p95 {a['p95']:.3f} %, max {a['max']:.3f} %; "
            f"reachable in only one: {a['only one']}; max |d(a,b) - d(b,a)| {a['asym cm']:.2f} cm "
            f"(reference: {a['ref s']:.1f} s to build, {a['ref ms/pair']:.1f} ms per pair)"
        )

    try:
        vis = _make_sim(scene, args.size, rgbd=True, seed=args.seed)
    except RuntimeError as exc:
        print(f"RGB-D skipped: {exc}")
        return 0
    vis.reset()
    n = max(50, args.steps // 2)
    sps_v = _run_steps(vis, n, goals, args.seed)
    print(
        f"sim steps/s with RGB-D {args.size}x{args.size} (+1 geodesic lookup per step): {sps_v:.0f}"
    )
    t0 = time.perf_counter()
    for _ in range(n):
        vis.get_observations_at()
    fps = n / (time.perf_counter() - t0)
    print(f"render fps (RGB-D {args.size}x{args.size}): {fps:.0f}")
    info = vis._renderer.info if vis._renderer is not None else {}
    print(f"renderer: {info.get('GL_RENDERER', '?')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
