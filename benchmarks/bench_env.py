#!/usr/bin/env python
"""Benchmark of the whole task: ``habitat.Env`` on the bundled demo episodes with every
MultiObjectNav measure (space oracle with 200 samples included), random actions.

Prints env steps/s without visual sensors and with RGB-D 256x256, episode reset time, and
the exact open-path solver's time for 12 targets. Pinned to ``--cores`` cores (default 1)
because the targets are per core.

    python benchmarks/bench_env.py [--steps 1500] [--config benchmark/nav/mosnav/mos_demo.yaml]
"""
from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

NO_SENSORS = ["~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
              "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor"]


def _pin(cores: int) -> None:
    os.environ["LP_NUM_THREADS"] = str(cores)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))


def bench_env(config: str, overrides, steps: int, seed: int = 0):
    import habitat
    import habitat_mosnav

    env = habitat.Env(habitat_mosnav.get_config(config, list(overrides)))
    rng = random.Random(seed)
    env.reset()  # first scene load (navigability) not counted
    n, resets, reset_time, t0 = 0, 0, 0.0, time.perf_counter()
    while n < steps:
        if env.episode_over:
            t = time.perf_counter()
            env.reset()
            reset_time += time.perf_counter() - t
            resets += 1
        env.step(rng.choice(["move_forward"] * 3 + ["turn_left", "turn_right", "look_up",
                                                    "look_down", "target_found"]))
        n += 1
    total = time.perf_counter() - t0
    env.close()
    step_time = total - reset_time
    return n / step_time, n / total, (reset_time / resets if resets else float("nan"))


def bench_solver(n: int = 12, repeats: int = 5) -> float:
    from habitat_mosnav.metrics import shortest_open_path

    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 20, size=(n + 1, 2))
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    t = time.perf_counter()
    for _ in range(repeats):
        shortest_open_path(d[0, 1:], d[1:, 1:])
    return (time.perf_counter() - t) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="benchmark/nav/mosnav/mos_demo.yaml")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--cores", type=int, default=1)
    args = ap.parse_args()
    _pin(args.cores)
    print(f"habitat.Env, {args.config}, all MOS measures, random actions, {args.cores} core(s)")
    for label, ov in (("no visual sensors", NO_SENSORS), ("RGB-D 256x256", [])):
        sps, sps_all, reset = bench_env(args.config, ov, args.steps)
        print(f"  {label:18s}: {sps:7.1f} steps/s ({sps_all:6.1f} with resets), "
              f"reset {reset * 1000:6.1f} ms")
    print(f"  exact open-path solver, 12 targets: {bench_solver() * 1000:.1f} ms")


if __name__ == "__main__":
    main()
