#!/usr/bin/env python
"""The CPU simulator at HM3D scale: one table row per scene.

Scenes: ``demo`` (the first bundled demo scene, navigability from its mesh), ``navmesh``
(the same scene on habitat-sim's ``.navmesh`` beside it, as HM3D's ``.basis.navmesh`` is
used: polygons, no corner graph), ``rooms40x2`` (a generated apartment of
40 rooms per floor on 2 floors joined by a stair hall) and ``scan`` (a generated 20-room
apartment made scan-like: triangles subdivided to --scan-edge m, 1.5 cm vertex jitter,
200 clutter boxes: about 600k triangles). Generated scenes go to a temporary directory
that is removed afterwards.

Each scene is measured in a fresh process pinned to ``--cores`` cores (default 1):

- floor m2: the navigable area; triangles: of the scene mesh;
- build s: CPU seconds to load the scene into ``MosNavMeshSim-v0`` (mesh, navigability,
  corner graph; no sensors); peak RSS: the process's peak resident memory above what it
  held after the imports;
- corner nodes: of the corner graph; lookup us: a geodesic look-up from random floor
  points to a cached 5-goal set; new goal set ms: the first look-up to a new 3-goal set
  (its field built); sim steps/s: ``sim.step`` with random moves plus one geodesic
  look-up per step (as a distance measure does), no sensors;
- error median / p95 %: |relative error| of the geodesics on --pairs random pairs of the
  ground floor against the exact reference (``habitat_mosnav.sims.reference``; for the
  scan-like scene, the reference of its clean twin: same rooms, furniture and clutter,
  neither subdivided nor jittered), measured after the timings.

All times are this process's CPU time (``time.process_time``: the machine may be shared).

    python benchmarks/bench_scale.py [--scenes demo,navmesh,rooms40x2,scan] [--scan-edge 0.22] [--pairs 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Tuple

from pinning import pin_cores

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = [
    "scene",
    "floor m²",
    "triangles",
    "build s",
    "peak RSS",
    "corner nodes",
    "lookup µs",
    "new goal set ms",
    "sim steps/s",
    "error median / p95 %",
]


def _rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def measure(
    scene: str,
    steps: int,
    seed: int,
    navmesh: str = "none",
    pairs: int = 0,
    ref: str = "",
    ref_floor: float = 0.0,
) -> dict:
    """One scene's row, measured in this process (call it in a fresh one); ``navmesh``: the
    simulator's option ("none": navigability from the mesh; "": the scene's .navmesh);
    ``pairs`` > 0: geodesics against the exact reference of scene ``ref`` (its floor at
    height ``ref_floor``), after the timings."""
    import numpy as np

    import habitat_mosnav  # noqa: F401  (before habitat)
    from bench_sim import _make_sim, _run_steps
    from habitat_mosnav.sims import MosNavMeshSim  # noqa: F401  (imports done before the baseline)

    base_kb = _rss_kb()
    t0 = time.process_time()
    sim = _make_sim(scene, 64, rgbd=False, seed=seed, navmesh=navmesh)
    build = time.process_time() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    grid = sim.navgrid
    pf = sim.pathfinder
    pf.seed(seed)
    main = grid.largest_island
    goals = [pf.get_random_navigable_point(island_index=main) for _ in range(5)]
    sim.geodesic_distance(goals[0], goals)  # the field, outside the timing
    floor = [pf.get_random_navigable_point(island_index=main) for _ in range(1000)]
    t0 = time.process_time()
    for q in floor:
        sim.geodesic_distance(q, goals)
    lookup = (time.process_time() - t0) / len(floor)
    new = []
    for _ in range(20):
        gs = [pf.get_random_navigable_point(island_index=main) for _ in range(3)]
        q = pf.get_random_navigable_point(island_index=main)
        t0 = time.process_time()
        sim.geodesic_distance(q, gs)
        new.append(time.process_time() - t0)
    sps = _run_steps(sim, steps, goals, seed, clock=time.process_time)
    acc = None
    if pairs > 0 and ref:
        from bench_sim import accuracy
        from habitat_mosnav.sims.geometry import load_mesh, scene_up_axis

        acc = accuracy(sim, pairs, seed, load_mesh(ref, scene_up_axis(ref)).triangles, ref_floor)
    return {
        "error median / p95 %": None if acc is None else [acc["median"], acc["p95"]],
        "accuracy": acc,
        "floor m²": float(grid.island_area.sum()),
        "triangles": int(len(sim.scene_entry.mesh.faces)),
        "build s": build,
        "peak RSS": (peak_kb - base_kb) * 1024.0,
        "corner nodes": getattr(grid, "num_nodes", None),
        "lookup µs": lookup * 1e6,
        "new goal set ms": float(np.mean(new)) * 1e3,
        "sim steps/s": sps,
    }


def _scene(name: str, tmp: str, scan_edge: float) -> Tuple[str, str, float]:
    """(scene, the scene of its exact reference ("": none), that reference's floor height)."""
    if name in ("demo", "navmesh"):
        from bench_sim import _default_scene

        glb = _default_scene()
        return glb, (glb if name == "demo" else ""), 0.0
    from habitat_mosnav.scenes.generator import SceneOptions, generate_scene

    opts = {
        "rooms40x2": SceneOptions(rooms=40, floors=2),
        "scan": SceneOptions(rooms=20, scan_edge=scan_edge, jitter=0.015, clutter=200),
    }.get(name)
    if opts is None:
        raise SystemExit(f"bench_scale: unknown scene {name!r} (demo, navmesh, rooms40x2, scan)")
    glb = generate_scene(os.path.join(tmp, name), 0, 0, opts).glb
    if not opts.scan_edge:
        return glb, glb, 0.0
    # the scan-like scene's reference: its clean twin (same rooms, furniture and clutter,
    # neither subdivided nor jittered): what the noise costs is part of the error
    twin = SceneOptions(rooms=opts.rooms, floors=opts.floors, clutter=opts.clutter)
    return glb, generate_scene(os.path.join(tmp, name + "_clean"), 0, 0, twin).glb, 0.0


def _fmt(col: str, v) -> str:
    if v is None:
        return "—"
    if col == "error median / p95 %":
        return f"{v[0]:.2f} / {v[1]:.2f}"
    if col == "peak RSS":
        return f"{v / 2**30:.2f} GB" if v >= 2**30 else f"{v / 2**20:.0f} MB"
    if col in ("triangles", "corner nodes"):
        return f"{v / 1000:.1f}k" if v >= 10_000 else f"{v:,}"
    if col in ("build s", "new goal set ms"):
        return f"{v:.1f}"
    return f"{v:.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="demo,navmesh,rooms40x2,scan")
    ap.add_argument(
        "--scan-edge", type=float, default=0.22, help="triangle edge of the scan-like scene (m)"
    )
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument(
        "--pairs", type=int, default=100, help="random pairs against the exact reference (0: skip)"
    )
    ap.add_argument("--cores", type=int, default=1, help="CPU cores to pin to (0 = no pinning)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # child: one scene file
    ap.add_argument(
        "--navmesh", default="none", help=argparse.SUPPRESS
    )  # child: the simulator's option
    ap.add_argument("--ref", default="", help=argparse.SUPPRESS)  # child: the reference's scene
    ap.add_argument("--ref-floor", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    pin_cores(args.cores)
    if args.measure:
        print(
            json.dumps(
                measure(
                    args.measure,
                    args.steps,
                    args.seed,
                    args.navmesh,
                    args.pairs,
                    args.ref,
                    args.ref_floor,
                )
            )
        )
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="mosnav_scale_") as tmp:
        for name in args.scenes.split(","):
            glb, ref, ref_floor = _scene(name.strip(), tmp, args.scan_edge)
            out = subprocess.run(
                [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--measure",
                    glb,
                    "--steps",
                    str(args.steps),
                    "--cores",
                    str(args.cores),
                    "--seed",
                    str(args.seed),
                    "--navmesh",
                    "" if name == "navmesh" else "none",
                    "--pairs",
                    str(args.pairs),
                    "--ref",
                    ref,
                    "--ref-floor",
                    str(ref_floor),
                ],
                capture_output=True,
                text=True,
                cwd=HERE,
            )
            if out.returncode != 0:
                print(
                    f"bench_scale: {name} failed: {out.stderr.strip().splitlines()[-1:]}",
                    file=sys.stderr,
                )
                return 1
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["scene"] = name
            rows.append(row)
            print(
                f"  {name}: " + ", ".join(f"{c} {_fmt(c, row[c])}" for c in COLUMNS[1:]),
                file=sys.stderr,
            )
            a = row["accuracy"]
            if a:
                print(
                    f"  {name} against the exact reference{' of its clean twin' if ref != glb else ''}: "
                    f"{a['reachable']} reachable pairs of {a['pairs']} (up to {a['longest m']:.1f} m), |error| median "
                    f"{a['median']:.3f} %, p95 {a['p95']:.3f} %, max {a['max']:.3f} %, reachable in only one: "
                    f"{a['only one']} (reference built in {a['ref s']:.0f} s)",
                    file=sys.stderr,
                )
    print(
        f"CPU simulator at scale ({args.cores} core(s); build = CPU s of the scene load; peak RSS above the imports)"
    )
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join([row["scene"]] + [_fmt(c, row[c]) for c in COLUMNS[1:]]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
