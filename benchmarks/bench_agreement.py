"""How closely the CPU simulator gives habitat-sim's numbers on the bundled demo scenes.

    python benchmarks/bench_agreement.py [--points 400] [--pairs 200] [--no-episodes]

Prints (needs habitat-sim):
1. per scene, navigability both ways and geodesic differences, with the shipped `.navmesh`
   and without it (the CPU simulator's own navigability from the mesh);
2. per `demo/official` episode, `optimal_subset_distance` on both simulators;
3. the oracle on both with sliding off (the HM3D configs' setting): SR and SPL-multi.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, default=400)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-episodes", action="store_true", help="only the per-scene figures")
    args = p.parse_args()
    try:
        import habitat_sim  # noqa: F401
    except ImportError:
        from habitat_mosnav._compat import HABITAT_SIM_INSTALL

        print(f"error: needs habitat-sim: {HABITAT_SIM_INSTALL}", file=sys.stderr)
        return 2
    import habitat_mosnav
    from habitat_mosnav.sims import compare

    scenes = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo", "scenes")
    glbs = sorted(
        os.path.join(scenes, d, d.split("-", 1)[1] + ".glb")
        for d in os.listdir(scenes)
        if os.path.isdir(os.path.join(scenes, d))
    )
    print(compare.HEADER)
    for option in ("", "none"):
        for glb in glbs:
            print(
                compare.compare_scene(glb, option, args.points, args.pairs, args.seed).row(),
                flush=True,
            )
    if args.no_episodes:
        return 0

    from habitat_mosnav import get_config
    from habitat_mosnav.agents.oracle import OracleAgent
    from habitat_mosnav.config.simulator import simulator_overrides
    from habitat_mosnav.evaluation import Evaluator

    small = [
        f"habitat.simulator.agents.main_agent.sim_sensors.{s}.{k}=32"
        for s in ("rgb_sensor", "depth_sensor")
        for k in ("width", "height")
    ]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sim in ("mosnav", "habitat-sim"):
            got, t0 = [], time.time()
            for name in ("mos_demo.yaml", "moc_demo.yaml"):
                cfg = get_config(
                    f"benchmark/nav/mosnav/{name}",
                    [
                        "habitat.task.mosnav_space_coverage_samples=0",
                        "habitat.simulator.habitat_sim_v0.allow_sliding=False",
                        *simulator_overrides(sim),
                        *small,
                    ],
                )
                Evaluator(
                    OracleAgent(),
                    cfg,
                    output_dir=os.path.join(tmp, sim, name),
                    progress=False,
                    on_record=got.append,
                ).run()
            runs[sim] = ({r["episode_key"]: r["metrics"] for r in got}, time.time() - t0)
    cpu, hs = runs["mosnav"][0], runs["habitat-sim"][0]
    print(
        "\n| episode | optimal_subset_distance CPU | habitat-sim | rel. diff. |\n|---|---|---|---|"
    )
    worst = 0.0
    for key in sorted(cpu):
        a, b = cpu[key]["optimal_subset_distance"], hs[key]["optimal_subset_distance"]
        worst = max(worst, abs(a - b) / b)
        print(f"| {key} | {a:.3f} | {b:.3f} | {100 * (a - b) / b:+.3f} % |")
    print(f"\nlargest |rel. diff.| of optimal_subset_distance: {100 * worst:.3f} %")
    print("\n| oracle, sliding off | SR | SPL-multi | wall s |\n|---|---|---|---|")
    for sim, (m, wall) in runs.items():
        print(
            f"| {sim} | {np.mean([v['success'] for v in m.values()]):.3f} | "
            f"{np.mean([v['spl_multi'] for v in m.values()]):.3f} | {wall:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
