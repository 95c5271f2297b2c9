"""Run habitat-sim's ``Sim-v0`` (through habitat-lab, gpu_device_id=-1) in a child process
and save what the comparison tests need: semantic frames at given poses and every
semantic object's ``obb`` centre / sizes and ``aabb`` (min, max, has ``sizes``).

A child process because habitat-sim's EGL teardown ends the display that the CPU
simulator's renderer shares (its context is dead afterwards).
Usage: ``python habitat_sim_probe.py OUT.json SCENE.glb DATASET.json W H HFOV SENSOR_HEIGHT
POSES_JSON`` (poses: [[x, y, z], yaw_deg] pairs)."""
import json
import sys

import numpy as np


def probe(scene, dataset, width, height, hfov, sensor_height, poses):
    import quaternion  # noqa: F401

    import habitat_mosnav  # noqa: F401  (habitat placeholders and registrations)
    from habitat.sims import make_sim

    from habitat_mosnav.dataset_building.geometry import CameraSpec, make_sim_config

    cam = CameraSpec(width=width, height=height, hfov=hfov, sensor_height=sensor_height, rgb=False)
    cfg = make_sim_config(scene, "habitat-sim", cam, dataset, up_axis="z")
    cfg.habitat_sim_v0.gpu_device_id = -1
    sim = make_sim(cfg.type, config=cfg)
    try:
        frames = []
        for pos, yaw in poses:
            a = np.deg2rad(yaw) / 2
            obs = sim.get_observations_at(position=np.asarray(pos, np.float32),
                                          rotation=np.quaternion(np.cos(a), 0.0, np.sin(a), 0.0),
                                          keep_agent_at_new_pose=False)
            frames.append(np.asarray(obs["semantic"]).reshape(height, width).astype(int).tolist())
        objects = {o.id: {"center": np.asarray(o.obb.center).tolist(), "sizes": np.asarray(o.obb.sizes).tolist(),
                          "aabb_min": np.asarray(o.aabb.min).tolist(), "aabb_max": np.asarray(o.aabb.max).tolist(),
                          "aabb_has_sizes": hasattr(o.aabb, "sizes")}
                   for o in sim.semantic_annotations().objects}
    finally:
        sim.close()
    return {"frames": frames, "objects": objects}


if __name__ == "__main__":
    out, scene, dataset, w, h, hfov, sh, poses = sys.argv[1:9]
    res = probe(scene, dataset, int(w), int(h), float(hfov), float(sh), json.loads(poses))
    with open(out, "w") as fh:
        json.dump(res, fh)
