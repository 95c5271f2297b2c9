#!/usr/bin/env python
"""The CPU simulator's RGB-D frames/s at fixed poses, culling off and on, beside habitat-sim's.

Poses: ``--points`` navigable points (default 30) of the scene's ``.navmesh`` (the CPU
simulator's own navigability where the scene has none) x 4 headings; RGB + depth
``--size`` x ``--size`` (default 256), hfov 79, camera 0.88 m up. Scenes: ``demo`` (the
first bundled demo scene), ``scan`` (``mosnav-make-scenes --rooms 20 --scan``: about 600k
triangles) and ``scan2f`` (``--rooms 20 --floors 2 --scan``), the generated ones in a
temporary directory with habitat-sim's navmesh and Z-up scene dataset config when
habitat-sim is installed.

Each scene is measured in fresh processes pinned to ``--cores`` cores (default 1; Mesa's
llvmpipe with as many threads: LP_NUM_THREADS): one for the CPU simulator (every culling
step, rounds alternating, best round of ``--rounds``), one for habitat-sim 0.3.3 on the
same poses. Rates are frames per CPU second of the process (``time.process_time``: the
machine may be shared). Each step's frames are compared with the unculled ones
(``identical``: frames equal in every RGB and depth value).

    python benchmarks/bench_render.py [--scenes demo,scan,scan2f] [--points 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

from pinning import pin_cores

HERE = os.path.dirname(os.path.abspath(__file__))
HFOV, HEIGHT = 79, 0.88
#: the steps, each adding to the one before (name, Culling keyword arguments)
STEPS = [
    ("unculled", dict(frustum=False, occlusion=False)),
    ("+ frustum", dict(frustum=True, occlusion=False)),
    ("+ occlusion", dict(frustum=True, occlusion=True, prefill=False)),
    ("+ occluders' depth kept (default)", dict(frustum=True, occlusion=True)),
    ("+ back faces (not exact)", dict(frustum=True, occlusion=True, backface=True)),
]


def _yaw_quat(deg: float):
    import math

    a = math.radians(deg) / 2.0
    return [0.0, math.sin(a), 0.0, math.cos(a)]  # x, y, z, w about +y


def _cpu_sim(scene: str, size: int, navmesh: str):
    from omegaconf import OmegaConf
    from habitat.config.default_structured_configs import (
        AgentConfig,
        HabitatSimDepthSensorConfig,
        HabitatSimRGBSensorConfig,
    )

    from habitat_mosnav.config.simulator import MosNavMeshOptions, MosNavMeshSimConfig
    from habitat_mosnav.sims import MosNavMeshSim

    pos = [0.0, HEIGHT, 0.0]
    sensors = {
        "rgb_sensor": HabitatSimRGBSensorConfig(width=size, height=size, hfov=HFOV, position=pos),
        "depth_sensor": HabitatSimDepthSensorConfig(
            width=size, height=size, hfov=HFOV, position=pos, min_depth=0.5, max_depth=5.0
        ),
    }
    agent = AgentConfig(height=0.88, radius=0.18, max_climb=0.2, sim_sensors=sensors)
    cfg = OmegaConf.structured(
        MosNavMeshSimConfig(
            scene=scene,
            seed=0,
            agents_order=["main_agent"],
            agents={"main_agent": agent},
            forward_step_size=0.25,
            turn_angle=30,
            mosnav_mesh=MosNavMeshOptions(navmesh=navmesh),
        )
    )
    return MosNavMeshSim(cfg)


def measure_cpu(scene: str, size: int, points: int, rounds: int, seed: int, poses_out: str) -> dict:
    """Every step's frames/s on ``points`` x 4 poses (written to ``poses_out`` for habitat-sim)."""
    import numpy as np

    import habitat_mosnav  # noqa: F401  (before habitat)
    from habitat_mosnav.sims import render

    has_navmesh = os.path.isfile(scene[: -len(".glb")] + ".navmesh")
    sim = _cpu_sim(scene, size, "" if has_navmesh else "none")
    pf = sim.pathfinder
    pf.seed(seed)
    pts = [np.asarray(pf.get_random_navigable_point(), np.float64) for _ in range(points)]
    poses = [(p.tolist(), yaw) for p in pts for yaw in (0.0, 90.0, 180.0, 270.0)]
    with open(poses_out, "w") as fh:
        json.dump(poses, fh)
    renderer = render.get_renderer()
    quats = [_yaw_quat(yaw) for _, yaw in poses]

    def frames():
        out = []
        for (p, _), q in zip(poses, quats):
            o = sim.get_observations_at(p, q)
            out.append((o["rgb"], o["depth"]))
        return out

    ref = None
    rows = []
    for name, kw in STEPS:
        renderer.culling = render.Culling(**kw)
        got = frames()  # warm-up (and the scene's chunks are built on the first)
        drawn = []
        for (p, _), q in zip(poses, quats):
            sim.get_observations_at(p, q)
            drawn.append(renderer.stats.get("faces", 0))
        if ref is None:
            ref = got
        same = sum(
            bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))
            for a, b in zip(got, ref)
        )
        differ = sum(
            int((a[0] != b[0]).any(axis=-1).sum() + (a[1] != b[1]).sum()) for a, b in zip(got, ref)
        )
        rows.append(
            {
                "step": name,
                "kw": kw,
                "identical": same,
                "frames": len(poses),
                "pixels differing": differ,
                "faces drawn": float(np.mean(drawn)),
                "best s": None,
            }
        )
    for _ in range(rounds):
        for row in rows:
            renderer.culling = render.Culling(**row["kw"])
            t0 = time.process_time()
            for (p, _), q in zip(poses, quats):
                sim.get_observations_at(p, q)
            dt = time.process_time() - t0
            row["best s"] = dt if row["best s"] is None else min(row["best s"], dt)
    for row in rows:
        row["fps"] = len(poses) / row.pop("best s")
        row.pop("kw")
    return {
        "triangles": int(len(sim.scene_entry.mesh.faces)),
        "navmesh": has_navmesh,
        "rows": rows,
        "renderer": renderer.info.get("GL_RENDERER", ""),
    }


def measure_habitat_sim(scene: str, dataset: str, size: int, poses_file: str, rounds: int) -> dict:
    """habitat-sim's frames/s (RGB + depth sensors, the same poses), best of ``rounds``."""
    import numpy as np

    os.environ.setdefault("HABITAT_SIM_LOG", "quiet")
    os.environ.setdefault("MAGNUM_LOG", "quiet")
    import habitat_sim
    import quaternion  # noqa: F401

    from habitat_mosnav.config.simulator import default_gpu_device_id

    with open(poses_file) as fh:
        poses = json.load(fh)
    sc = habitat_sim.SimulatorConfiguration()
    if dataset:
        sc.scene_dataset_config_file = dataset
    sc.scene_id = scene
    sc.gpu_device_id = default_gpu_device_id()
    specs = []
    for uuid, kind in (
        ("rgb", habitat_sim.SensorType.COLOR),
        ("depth", habitat_sim.SensorType.DEPTH),
    ):
        s = habitat_sim.CameraSensorSpec()
        s.uuid, s.sensor_type = uuid, kind
        s.resolution = [size, size]
        s.hfov = HFOV
        s.position = [0.0, HEIGHT, 0.0]
        specs.append(s)
    ag = habitat_sim.agent.AgentConfiguration()
    ag.height, ag.radius, ag.sensor_specifications = 0.88, 0.18, specs
    sim = habitat_sim.Simulator(habitat_sim.Configuration(sc, [ag]))
    try:
        agent = sim.get_agent(0)
        states = []
        for p, yaw in poses:
            st = habitat_sim.AgentState()
            st.position = np.asarray(p, np.float32)
            a = np.deg2rad(yaw) / 2
            st.rotation = np.quaternion(np.cos(a), 0.0, np.sin(a), 0.0)
            states.append(st)
        for st in states:  # warm-up
            agent.set_state(st, reset_sensors=True)
            sim.get_sensor_observations()
        best = None
        for _ in range(rounds):
            t0 = time.process_time()
            for st in states:
                agent.set_state(st, reset_sensors=True)
                sim.get_sensor_observations()
            dt = time.process_time() - t0
            best = dt if best is None else min(best, dt)
        return {"fps": len(states) / best, "renderer": "habitat-sim " + habitat_sim.__version__}
    finally:
        sim.close()


def _has_habitat_sim() -> bool:
    try:
        import habitat_sim  # noqa: F401

        return True
    except Exception:  # noqa: BLE001
        return False


def _scene(name: str, tmp: str, with_navmesh: bool) -> Dict[str, str]:
    """{"glb", "dataset"} of one named scene (generated ones written under ``tmp``)."""
    if name == "demo":
        from bench_sim import _default_scene

        glb = _default_scene()
        root = os.path.dirname(os.path.dirname(glb))
        from habitat_mosnav.sims.habitat_sim_assets import DATASET_CONFIG

        ds = os.path.join(root, DATASET_CONFIG)
        return {"glb": glb, "dataset": ds if os.path.isfile(ds) else ""}
    from habitat_mosnav.scenes.cli import SCAN_CLUTTER, SCAN_EDGE, SCAN_JITTER
    from habitat_mosnav.scenes.generator import SceneOptions, generate_scene

    floors = {"scan": 1, "scan2f": 2}.get(name)
    if floors is None:
        raise SystemExit(f"bench_render: unknown scene {name!r} (demo, scan, scan2f)")
    root = os.path.join(tmp, name)
    opts = SceneOptions(
        rooms=20, floors=floors, scan_edge=SCAN_EDGE, jitter=SCAN_JITTER, clutter=SCAN_CLUTTER
    )
    glb = generate_scene(root, 0, 0, opts).glb
    ds = ""
    if with_navmesh:
        from habitat_mosnav.sims.habitat_sim_assets import write_habitat_sim_assets

        ds = write_habitat_sim_assets(root, progress=False)
    return {"glb": glb, "dataset": ds}


def _child(args: List[str]) -> Optional[dict]:
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True, cwd=HERE
    )
    if out.returncode != 0:
        print(
            f"bench_render: {' '.join(args[:2])} failed: {out.stderr.strip().splitlines()[-3:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="demo,scan,scan2f")
    ap.add_argument("--points", type=int, default=30)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cores", type=int, default=1, help="CPU cores to pin to (0 = no pinning)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-habitat-sim", action="store_true", help="skip habitat-sim even when installed"
    )
    ap.add_argument("--cpu", default=None, help=argparse.SUPPRESS)  # child: scene file
    ap.add_argument("--hsim", default=None, help=argparse.SUPPRESS)  # child: scene file
    ap.add_argument("--dataset", default="", help=argparse.SUPPRESS)
    ap.add_argument("--poses", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    pin_cores(args.cores)
    if args.cpu:
        print(
            json.dumps(
                measure_cpu(args.cpu, args.size, args.points, args.rounds, args.seed, args.poses)
            )
        )
        return 0
    if args.hsim:
        print(
            json.dumps(
                measure_habitat_sim(args.hsim, args.dataset, args.size, args.poses, args.rounds)
            )
        )
        return 0
    hsim = not args.no_habitat_sim and _has_habitat_sim()
    common = ["--size", str(args.size), "--rounds", str(args.rounds), "--cores", str(args.cores)]
    results = []
    with tempfile.TemporaryDirectory(prefix="mosnav_render_") as tmp:
        for name in [s.strip() for s in args.scenes.split(",") if s.strip()]:
            sc = _scene(name, tmp, hsim)
            poses = os.path.join(tmp, name + ".poses.json")
            cpu = _child(
                [
                    "--cpu",
                    sc["glb"],
                    "--points",
                    str(args.points),
                    "--seed",
                    str(args.seed),
                    "--poses",
                    poses,
                    *common,
                ]
            )
            if cpu is None:
                return 1
            hs = (
                _child(["--hsim", sc["glb"], "--dataset", sc["dataset"], "--poses", poses, *common])
                if hsim
                else None
            )
            results.append((name, sc, cpu, hs))
            print(
                f"  {name}: {cpu['triangles']} triangles, "
                + ", ".join(f"{r['step']} {r['fps']:.1f}" for r in cpu["rows"])
                + (f", habitat-sim {hs['fps']:.1f}" if hs else ""),
                file=sys.stderr,
                flush=True,
            )
    demo_fps = {r["step"]: r["fps"] for n, _, c, _ in results if n == "demo" for r in c["rows"]}
    print(
        f"CPU simulator RGB-D {args.size}x{args.size} frames/s at {args.points} navigable points x 4 headings "
        f"(hfov {HFOV}, {args.cores} core(s), LP_NUM_THREADS={os.environ.get('LP_NUM_THREADS', 'unset')}; "
        f"best of {args.rounds} rounds, CPU time)"
    )
    cols = [
        "scene",
        "triangles",
        "step",
        "faces drawn / frame",
        "frames/s",
        "x habitat-sim",
        "x own demo rate",
        "identical frames",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, _, cpu, hs in results:
        for i, r in enumerate(cpu["rows"]):
            demo = demo_fps.get(r["step"])
            cells = [
                name if i == 0 else "",
                f"{cpu['triangles'] / 1000:.1f}k" if i == 0 else "",
                r["step"],
                f"{r['faces drawn'] / 1000:.1f}k",
                f"{r['fps']:.1f}",
                f"{r['fps'] / hs['fps']:.2f}x" if hs else "—",
                f"{r['fps'] / demo:.3f}x" if demo else "—",
                f"{r['identical']}/{r['frames']}"
                + (
                    f" ({r['pixels differing']} values differ)"
                    if r["identical"] < r["frames"]
                    else ""
                ),
            ]
            print("| " + " | ".join(cells) + " |")
        if hs:
            print(
                "| "
                + " | ".join(["", "", hs["renderer"], "—", f"{hs['fps']:.1f}", "1.00x", "—", "—"])
                + " |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
