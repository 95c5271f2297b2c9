"""habitat-sim's files for generated scenes: a scene dataset config and ``.navmesh`` files.

HM3D ships, beside its meshes, the navmesh habitat-sim computed (``<id>.basis.navmesh``) and
a scene dataset config that tells habitat-sim the stages are Z up and where their semantic
mesh and ``semantic.txt`` are. Generated scenes get the same two things, made by habitat-sim
itself, so that both simulators answer navigation questions on one navmesh:

    python -m habitat_mosnav.sims.habitat_sim_assets habitat_mosnav/data/demo/scenes

(needs habitat-sim; ``mosnav-make-scenes --navmesh`` does it for new scenes). The navmesh is
computed on the scene without its ``ceiling`` objects: Recast would otherwise make the top of
the ceiling slab a walkable island larger than the floor (HM3D's scans have no such tops).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from habitat_mosnav.api import AGENT_HEIGHT, AGENT_RADIUS
from habitat_mosnav.simulators import HABITAT_SIM_INSTALL

#: name of the scene dataset config written at the scenes root
DATASET_CONFIG = "mosnav_scenes.scene_dataset_config.json"
#: HM3D's stage frame (habitat-sim's metadata for a Z-up mesh)
STAGE_FRAME = {
    "up": [0, 0, 1],
    "front": [0, 1, 0],
    "origin": [0, 0, 0],
    "semantic_up": [0, 0, 1],
    "semantic_front": [0, 1, 0],
}


class HabitatSimAssetsError(RuntimeError):
    """One line: what is missing or failed, naming the file."""


@dataclass
class NavMeshAgent:
    """The agent the navmesh is eroded for (the benchmark's: habitat's ObjectNav HM3D agent)."""

    #: body radius and height (m)
    radius: float = AGENT_RADIUS
    height: float = AGENT_HEIGHT
    #: highest step the agent climbs (m); habitat-sim's NavMeshSettings default
    max_climb: float = 0.2


def _scene_dirs(root: str) -> List[str]:
    """``<root>/<NNNNN-id>/<id>.glb`` scene meshes (not their ``.semantic.glb``)."""
    out = []
    for d in sorted(os.listdir(root)):
        sid = d.split("-", 1)[-1]
        glb = os.path.join(root, d, sid + ".glb")
        if os.path.isfile(glb):
            out.append(glb)
    return out


def write_scene_dataset_config(root: str, scenes: List[str]) -> str:
    """``<root>/mosnav_scenes.scene_dataset_config.json``: Z-up stages for ``scenes`` (paths
    relative to ``root``), each with ``<id>.semantic.glb``, ``<id>.semantic.txt`` and
    ``<id>.navmesh`` found by habitat-sim's ``%%CONFIG_NAME_AS_ASSET_FILENAME%%`` tag."""
    tag = "%%CONFIG_NAME_AS_ASSET_FILENAME%%"
    cfg = {
        "stages": {
            "default_attributes": dict(
                STAGE_FRAME,
                semantic_asset=f"{tag}.semantic.glb",
                semantic_descriptor_filename=f"{tag}.semantic.txt",
                nav_asset=f"{tag}.navmesh",
            ),
            "paths": {".glb": sorted(os.path.relpath(s, root) for s in scenes)},
        },
    }
    path = os.path.join(root, DATASET_CONFIG)
    with open(path, "w") as fh:
        json.dump(cfg, fh, indent=2)
        fh.write("\n")
    return path


def import_habitat_sim(needed_for: str = "to compute .navmesh files"):
    """habitat-sim, told to be quiet (it and Magnum log every stage load to stderr; only
    their errors matter here); missing: one line saying what needed it."""
    os.environ.setdefault("HABITAT_SIM_LOG", "quiet")
    os.environ.setdefault("MAGNUM_LOG", "quiet")
    try:
        import habitat_sim  # noqa: F401
    except ImportError:
        raise HabitatSimAssetsError(
            f"habitat-sim is not installed (needed {needed_for}); install it: {HABITAT_SIM_INSTALL}"
        ) from None
    return habitat_sim


def _without_ceilings(scene_glb: str, out_glb: str) -> int:
    """Write ``scene_glb`` without the faces of its ``ceiling`` objects (same Z-up frame)."""
    import trimesh

    from habitat_mosnav.scenes.io import world_to_file
    from habitat_mosnav.sims.geometry import (
        load_mesh,
        load_semantic_mesh,
        read_semantic_table,
        semantic_paths,
    )

    mesh = load_mesh(scene_glb, "z")
    keep = np.ones(len(mesh.faces), bool)
    paths = semantic_paths(scene_glb)
    if paths is not None:
        sem = load_semantic_mesh(scene_glb, "z")
        table = read_semantic_table(paths[1])
        ceiling = {r.object_id for r in table.values() if r.category.strip().lower() == "ceiling"}
        if (
            sem is not None
            and sem.ids is not None
            and len(sem.faces) == len(mesh.faces)
            and ceiling
        ):
            keep = ~np.isin(sem.ids[sem.faces[:, 0]], list(ceiling))
    tm = trimesh.Trimesh(world_to_file(mesh.vertices), mesh.faces[keep], process=False)
    tm.export(out_glb)
    return int((~keep).sum())


def bake_navmesh(scene_glb: str, out_path: str, agent: Optional[NavMeshAgent] = None) -> dict:
    """Compute habitat-sim's navmesh of one Z-up scene (ceilings dropped) and save it."""
    habitat_sim = import_habitat_sim()
    agent = agent or NavMeshAgent()
    with tempfile.TemporaryDirectory() as tmp:
        sid = os.path.basename(scene_glb)[: -len(".glb")]
        os.makedirs(os.path.join(tmp, "s"))
        stage = os.path.join(tmp, "s", sid + ".glb")
        dropped = _without_ceilings(scene_glb, stage)
        sdc = os.path.join(tmp, "x.scene_dataset_config.json")
        with open(sdc, "w") as fh:
            json.dump(
                {
                    "stages": {
                        "default_attributes": dict(STAGE_FRAME),
                        "paths": {".glb": ["s/*.glb"]},
                    }
                },
                fh,
            )
        sc = habitat_sim.SimulatorConfiguration()
        sc.scene_dataset_config_file = sdc
        sc.scene_id = stage
        sc.gpu_device_id = -1
        sc.create_renderer = False
        ag = habitat_sim.agent.AgentConfiguration()
        ag.height, ag.radius, ag.sensor_specifications = agent.height, agent.radius, []
        sim = habitat_sim.Simulator(habitat_sim.Configuration(sc, [ag]))
        try:
            settings = habitat_sim.NavMeshSettings()
            settings.set_defaults()
            settings.agent_radius = agent.radius
            settings.agent_height = agent.height
            settings.agent_max_climb = agent.max_climb
            if not sim.recompute_navmesh(sim.pathfinder, settings):
                raise HabitatSimAssetsError(f"{scene_glb}: habitat-sim could not compute a navmesh")
            pf = sim.pathfinder
            if not pf.save_nav_mesh(out_path):
                raise HabitatSimAssetsError(f"{out_path}: habitat-sim could not save the navmesh")
            return {
                "islands": int(pf.num_islands),
                "area": float(pf.navigable_area),
                "ceiling_faces_dropped": dropped,
            }
        finally:
            sim.close()


def write_habitat_sim_assets(
    root: str, agent: Optional[NavMeshAgent] = None, progress: bool = True
) -> str:
    """A ``.navmesh`` beside every ``<root>/<NNNNN-id>/<id>.glb`` and the scene dataset config."""
    from tqdm import tqdm

    scenes = _scene_dirs(root)
    if not scenes:
        raise HabitatSimAssetsError(f"{root}: no <NNNNN-id>/<id>.glb scenes")
    for glb in tqdm(scenes, desc="navmeshes", unit="scene", disable=not progress):
        info = bake_navmesh(glb, glb[: -len(".glb")] + ".navmesh", agent)
        tqdm.write(
            f"{os.path.basename(glb)}: {info['islands']} island(s), {info['area']:.2f} m2 navigable"
        )
    return write_scene_dataset_config(root, scenes)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m habitat_mosnav.sims.habitat_sim_assets",
        allow_abbrev=False,
        description="Write habitat-sim's .navmesh beside each generated scene and "
        f"<root>/{DATASET_CONFIG} (needs habitat-sim).",
    )
    p.add_argument("root", help="scenes directory (<root>/<NNNNN-id>/<id>.glb)")
    p.add_argument("--agent-radius", type=float, default=NavMeshAgent.radius)
    p.add_argument("--agent-height", type=float, default=NavMeshAgent.height)
    args = p.parse_args(argv)
    try:
        path = write_habitat_sim_assets(
            args.root, NavMeshAgent(args.agent_radius, args.agent_height)
        )
    except (HabitatSimAssetsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
