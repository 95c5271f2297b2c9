"""The space oracle's samples (SPEC's space coverage): uniform over the start's island on
its floor, drawn with an RNG of the episode key (not the simulator's), no geodesic query
spent on them."""

from __future__ import annotations

import numpy as np

from habitat_mosnav.sims.toy_scenes import export_boxes, two_rooms_boxes
from mosnav_fixtures import base_documents, write_dataset
from test_plugin_env import make_env


def _env(tmp_path, samples):
    tmp_path.mkdir(parents=True, exist_ok=True)
    # two 4 m rooms with no door: the start's room (x < 3.95) is one island, the other another
    glb = export_boxes(str(tmp_path / "rooms.glb"), two_rooms_boxes(door_width=None))
    docs = base_documents()
    for g in docs["goals.json"]["goals"]:
        g["navigable_position"] = [2.0, 0.0, 3.0]
    for e in docs["episodes.json"]["episodes"]:
        e["start_position"] = [1.0, 0.0, 1.0]
    paths = write_dataset(tmp_path, docs, scene_file=glb)
    return make_env(paths, [f"habitat.task.mosnav_space_coverage_samples={samples}"])


def test_samples_lie_on_the_start_island_and_leave_the_sim_rng_alone(tmp_path, monkeypatch):
    env = _env(tmp_path, 60)
    try:
        sim = env.sim
        pf = sim.pathfinder
        calls = {"geo": 0, "rng": 0}
        real_geo = sim.geodesic_distance

        def geo(*a, **k):
            calls["geo"] += 1
            return real_geo(*a, **k)

        def no_rng(*a, **k):
            calls["rng"] += 1
            raise AssertionError("the space oracle must not use the simulator's RNG")

        monkeypatch.setattr(sim, "geodesic_distance", geo)
        monkeypatch.setattr(pf, "seed", no_rng)
        monkeypatch.setattr(pf, "get_random_navigable_point", no_rng)
        env.current_episode = next(e for e in env.episodes if e.episode_id == "q0-all-0")
        env.reset()
        state = env.task.mos_state
        pts = state._samples
        assert pts.shape == (60, 3) and calls["rng"] == 0
        start_island = pf.get_island([1.0, 0.0, 1.0])
        assert all(pf.get_island(p) == start_island for p in pts)
        assert pts[:, 0].max() < 3.95 - 0.1 and np.allclose(pts[:, 1], 0.0, atol=1e-3)
        # spread over the room, not clumped: both halves of the 3.9 m room get points
        assert (pts[:, 2] < 2.0).sum() > 15 and (pts[:, 2] > 2.0).sum() > 15
        geo_with = calls["geo"]
        first = pts.copy()
        env.current_episode = next(e for e in env.episodes if e.episode_id == "q0-all-0")
        env.reset()  # the same episode key: the same points
        assert np.array_equal(env.task.mos_state._samples, first)
    finally:
        env.close()
    env0 = _env(tmp_path / "none", 0)
    try:
        real0 = env0.sim.geodesic_distance
        n0 = {"geo": 0}

        def geo0(*a, **k):
            n0["geo"] += 1
            return real0(*a, **k)

        monkeypatch.setattr(env0.sim, "geodesic_distance", geo0)
        env0.current_episode = next(e for e in env0.episodes if e.episode_id == "q0-all-0")
        env0.reset()
        assert n0["geo"] == geo_with  # the samples cost no geodesic query
    finally:
        env0.close()
