"""Compare the CPU simulator with habitat-sim on one scene: do they agree on where the agent
may stand and how far it has to walk?

    python -m habitat_mosnav.sims.compare path/to/<id>.basis.glb [--navmesh none]

Navigability both ways: the share of one simulator's random navigable points that the other
calls navigable. Geodesics: random pairs of habitat-sim's points, the CPU distance's
relative difference (median, p95, max, |.|) and the pairs reachable in one only.
habitat-sim always answers on the scene's ``.navmesh``; the CPU simulator on the same file,
or with ``--navmesh none`` on its own navigability computed from the mesh.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import asdict, dataclass
from typing import List, Optional

import numpy as np

from habitat_mosnav.sims.habitat_sim_assets import NavMeshAgent, import_habitat_sim


@dataclass
class Agreement:
    """Figures of one scene (fractions in [0, 1], relative differences signed CPU - habitat-sim)."""

    scene: str
    navmesh: str
    points: int
    cpu_points_navigable_for_habitat_sim: float
    habitat_sim_points_navigable_for_cpu: float
    pairs: int
    median_abs_rel: float
    p95_abs_rel: float
    max_abs_rel: float
    mean_rel: float
    reachable_in_one_only: int

    def row(self) -> str:
        return (
            f"| {self.scene} | {self.navmesh} | {self.cpu_points_navigable_for_habitat_sim:.3f} | "
            f"{self.habitat_sim_points_navigable_for_cpu:.3f} | {self.pairs} | {100 * self.median_abs_rel:.3f} % | "
            f"{100 * self.p95_abs_rel:.3f} % | {100 * self.max_abs_rel:.3f} % | {100 * self.mean_rel:+.3f} % | "
            f"{self.reachable_in_one_only} |"
        )


HEADER = (
    "| scene | CPU navigability | CPU points navigable in habitat-sim | habitat-sim points navigable on CPU | "
    "pairs | median abs rel | p95 | max | mean rel | reachable in one only |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def habitat_sim_pathfinder(navmesh: str):
    """habitat-sim's own PathFinder on ``navmesh`` (no renderer, no scene)."""
    pf = import_habitat_sim("to compare the simulators").PathFinder()
    if not pf.load_nav_mesh(navmesh):
        raise RuntimeError(f"{navmesh}: habitat-sim cannot load this navmesh")
    return pf


def cpu_pathfinder(
    scene: str,
    navmesh: str = "",
    radius: float = NavMeshAgent.radius,
    height: float = NavMeshAgent.height,
    max_climb: float = NavMeshAgent.max_climb,
    seed: int = 0,
):
    """The CPU simulator's PathFinder as ``MosNavMeshSim-v0`` builds it for ``scene``
    (``navmesh``: "" = the file beside the scene, "none" = from the mesh, or a path)."""
    from habitat_mosnav.sims.mosnav_sim import SceneEntry
    from habitat_mosnav.sims.navgrid import AgentShape
    from habitat_mosnav.sims.pathfinder import PathFinder
    from habitat_mosnav.scenes.io import scene_up_axis

    entry = SceneEntry(os.path.abspath(scene), scene_up_axis(os.path.abspath(scene), "auto"))
    return PathFinder(
        entry.navgrid(AgentShape(height, radius, max_climb, 45.0), 0.05, navmesh), seed
    )


def _geodesic_hs(pf, a, b) -> float:
    import habitat_sim

    p = habitat_sim.ShortestPath()
    p.requested_start, p.requested_end = np.asarray(a, np.float32), np.asarray(b, np.float32)
    pf.find_path(p)
    return float(p.geodesic_distance)


def compare(
    cpu, hs, points: int = 400, pairs: int = 200, seed: int = 0, scene: str = "", navmesh: str = ""
) -> Agreement:
    """Sample ``points`` navigable points from each simulator and ``pairs`` pairs of
    habitat-sim's points (both seeded with ``seed``) and measure the agreement."""
    hs.seed(seed)
    cpu.seed(seed)
    hs_pts = [
        np.asarray(hs.get_random_navigable_point(), np.float32)
        for _ in range(max(points, 2 * pairs))
    ]
    cpu_pts = [np.asarray(cpu.get_random_navigable_point(), np.float32) for _ in range(points)]
    for name, pts in (("habitat-sim", hs_pts), ("the CPU simulator", cpu_pts)):
        if pts and not np.isfinite(np.asarray(pts)).all():
            raise RuntimeError(
                f"{scene or 'the scene'}: {name} found no navigable point to sample "
                f"({navmesh or 'its navmesh'})"
            )
    cpu_ok = float(np.mean([bool(hs.is_navigable(p)) for p in cpu_pts]))
    hs_ok = float(np.mean([bool(cpu.is_navigable(p)) for p in hs_pts[:points]]))
    rel: List[float] = []
    one_only = 0
    for i in range(pairs):
        a, b = hs_pts[2 * i], hs_pts[2 * i + 1]
        dh, dc = _geodesic_hs(hs, a, b), float(cpu.geodesic_distance(a, [b]))
        if math.isfinite(dh) != math.isfinite(dc):
            one_only += 1
        elif math.isfinite(dh) and dh > 0.05:
            rel.append((dc - dh) / dh)
    r = np.abs(np.asarray(rel)) if rel else np.zeros(1)
    return Agreement(
        scene,
        navmesh or "beside the scene",
        points,
        cpu_ok,
        hs_ok,
        len(rel),
        float(np.median(r)),
        float(np.percentile(r, 95)),
        float(r.max()),
        float(np.mean(rel)) if rel else 0.0,
        one_only,
    )


def compare_scene(
    scene: str, navmesh_option: str = "", points: int = 400, pairs: int = 200, seed: int = 0
) -> Agreement:
    """:func:`compare` on ``scene``; habitat-sim reads the ``.navmesh`` beside it."""
    stem = scene[: -len(".glb")] if scene.endswith(".glb") else os.path.splitext(scene)[0]
    navmesh = stem + ".navmesh"
    if not os.path.isfile(navmesh):
        raise RuntimeError(
            f"{navmesh}: no navmesh beside the scene (habitat-sim needs one: "
            "python -m habitat_mosnav.sims.habitat_sim_assets <scenes root>)"
        )
    # our own reader first: habitat-sim's loader trusts the file (a bad index is a SIGSEGV
    # there, a NaN coordinate a table of NaN)
    from habitat_mosnav.sims.navmesh import validate_navmesh
    from habitat_mosnav.sims.scene_check import SceneFormatError, check_scene

    try:
        check_scene(scene, navmesh_option)
        validate_navmesh(navmesh, detour=True)
    except SceneFormatError as exc:
        raise RuntimeError(str(exc)) from None
    hs = habitat_sim_pathfinder(navmesh)
    cpu = cpu_pathfinder(scene, navmesh_option)
    name = os.path.basename(stem)
    return compare(cpu, hs, points, pairs, seed, name, navmesh_option or "the same .navmesh")


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m habitat_mosnav.sims.compare",
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "scenes",
        nargs="+",
        help="scene meshes (<id>.glb / <id>.basis.glb with <id>[.basis].navmesh)",
    )
    p.add_argument(
        "--navmesh",
        default="",
        help="the CPU simulator's navmesh: '' = the same file, 'none' = from the mesh",
    )
    p.add_argument("--points", type=int, default=400)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object per scene")
    args = p.parse_args(argv)
    import json

    from habitat_mosnav.safety import safe_line

    for k, scene in enumerate(args.scenes):
        try:
            a = compare_scene(scene, args.navmesh, args.points, args.pairs, args.seed)
        except RuntimeError as exc:  # NavMeshError too: one line naming the file
            print(safe_line(f"error: {exc}"), file=sys.stderr)
            return 2
        if k == 0 and not args.json:
            print(HEADER)
        print(json.dumps(asdict(a)) if args.json else a.row())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
