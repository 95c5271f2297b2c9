"""Run habitat-sim's ``Sim-v0`` (through habitat-lab, gpu_device_id=-1) in a child process
and save what the comparison tests need: semantic frames at given poses, every semantic
object's ``obb`` centre / sizes and ``aabb`` (min, max, whether it has ``sizes``) and,
optionally, habitat's ``top_down_map`` measure (goal boxes drawn) on a recomputed navmesh.

A child process because habitat-sim's EGL teardown ends the display that the CPU
simulator's renderer shares (its context is dead afterwards).
Usage: ``python habitat_sim_probe.py JOB.json OUT.json``; JOB: {"width", "height", "hfov",
"sensor_height", "runs": [{"scene", "dataset", "poses": [[[x, y, z], yaw_deg], ...],
"goals": [[object_id, [x, y, z]], ...] (optional), "map_resolution"}]}."""

import json
import sys
from types import SimpleNamespace

import numpy as np


def yaw_quat(yaw_deg):
    import quaternion  # noqa: F401

    a = np.deg2rad(yaw_deg) / 2
    return np.quaternion(np.cos(a), 0.0, np.sin(a), 0.0)


def top_down_map(sim, goals, start, resolution):
    """habitat's own TopDownMap measure with only the goal boxes drawn (and the agent)."""
    from omegaconf import OmegaConf

    from habitat.config.default_structured_configs import TopDownMapMeasurementConfig
    from habitat.tasks.nav.nav import TopDownMap

    cfg = OmegaConf.structured(
        TopDownMapMeasurementConfig(
            map_resolution=resolution,
            draw_source=False,
            draw_border=False,
            draw_shortest_path=False,
            draw_view_points=False,
            draw_goal_positions=False,
            draw_goal_aabbs=True,
        )
    )
    episode = SimpleNamespace(
        goals=[SimpleNamespace(object_id=int(o), position=list(p)) for o, p in goals],
        start_position=list(start),
    )
    sim.set_agent_state(np.asarray(start, np.float32), yaw_quat(0.0))
    measure = TopDownMap(sim=sim, config=cfg)
    measure.reset_metric(episode)
    return np.asarray(measure.get_metric()["map"])


def run(job, spec):
    from habitat.sims import make_sim

    from habitat_mosnav.dataset_building.geometry import CameraSpec, make_sim_config

    cam = CameraSpec(
        width=job["width"],
        height=job["height"],
        hfov=job["hfov"],
        sensor_height=job["sensor_height"],
        rgb=False,
    )
    cfg = make_sim_config(spec["scene"], "habitat-sim", cam, spec["dataset"], up_axis="z")
    cfg.habitat_sim_v0.gpu_device_id = -1
    sim = make_sim(cfg.type, config=cfg)
    try:
        frames = []
        for pos, yaw in spec["poses"]:
            obs = sim.get_observations_at(
                position=np.asarray(pos, np.float32),
                rotation=yaw_quat(yaw),
                keep_agent_at_new_pose=False,
            )
            frames.append(
                np.asarray(obs["semantic"])
                .reshape(job["height"], job["width"])
                .astype(int)
                .tolist()
            )
        objects = {
            o.id: {
                "center": np.asarray(o.obb.center).tolist(),
                "sizes": np.asarray(o.obb.sizes).tolist(),
                "aabb_min": np.asarray(o.aabb.min).tolist(),
                "aabb_max": np.asarray(o.aabb.max).tolist(),
                "aabb_has_sizes": hasattr(o.aabb, "sizes"),
            }
            for o in sim.semantic_annotations().objects
        }
        out = {"frames": frames, "objects": objects}
        if spec.get("goals"):
            import habitat_sim

            nav = habitat_sim.NavMeshSettings()
            nav.set_defaults()
            nav.agent_radius, nav.agent_height = 0.18, 0.88
            sim.recompute_navmesh(sim.pathfinder, nav)
            out["map"] = top_down_map(
                sim, spec["goals"], spec["poses"][0][0], spec["map_resolution"]
            ).tolist()
            out["bounds"] = [np.asarray(b).tolist() for b in sim.pathfinder.get_bounds()]
    finally:
        sim.close()
    return out


if __name__ == "__main__":
    import habitat_mosnav  # noqa: F401  (habitat placeholders and registrations)

    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    res = [run(job, spec) for spec in job["runs"]]
    with open(sys.argv[2], "w") as fh:
        json.dump(res, fh)
