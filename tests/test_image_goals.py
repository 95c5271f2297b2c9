"""Goal type ``image`` (issue 33): the ``image-goals`` build stage, the dataset's
``image_goal`` camera parameters, the ``mosnav_goal_image`` sensor on both simulators,
``Observation.goal_image``, ``mosnav-eval --goal-type image`` and the maps."""

import json
import os
import shutil

import numpy as np
import pytest

import habitat_mosnav
from habitat_mosnav.datasets.fingerprint import (
    dataset_file_digests,
    dataset_fingerprint,
    fingerprint_differences,
)
from habitat_mosnav.datasets.schema import DatasetFormatError, load_scene_dir
from habitat_mosnav.simulators import SIMULATORS, CameraRendering, interface_mismatches

from conftest import read_records, read_summary

PKG = os.path.dirname(os.path.abspath(habitat_mosnav.__file__))
DEMO_DATA = os.path.join(PKG, "data", "demo", "dataset_semantic")
DEMO_SCENES = os.path.join(PKG, "data", "demo", "scenes")
SCENE = "Cukxndkh48K"
DEMO_CONFIG = "benchmark/nav/mosnav/mos_demo.yaml"


def _queries(data, scene=SCENE):
    with open(os.path.join(data, scene, "queries.json")) as f:
        return json.load(f)


def _write_queries(data, doc, scene=SCENE):
    with open(os.path.join(data, scene, "queries.json"), "w") as f:
        json.dump(doc, f)


@pytest.fixture
def demo_copy(tmp_path):
    dst = tmp_path / "dataset_semantic"
    shutil.copytree(DEMO_DATA, dst)
    return str(dst)


# ----------------------------------------------------------------------------- dataset
def _open_demo(scene=SCENE, rgb=False):
    from habitat_mosnav.dataset_building.common import discover_scenes
    from habitat_mosnav.dataset_building.geometry import CameraSpec, open_scene

    return open_scene(discover_scenes(DEMO_SCENES, [scene])[0], "mosnav", CameraSpec(rgb=rgb))


def test_stage_keeps_the_most_complete_moderate_view_of_an_instance():
    """Every demo query's image_goal is, over all candidate cameras (every view point of
    every matched instance, each pitch), the best qualifying one by the stage's rule
    (object coverage >= 0.7, frame coverage in [0.03, 0.5]; most complete, then largest),
    and its stored shares are what the semantic camera at the stored pose sees."""
    from habitat_mosnav.dataset_building import image_goals as ig_mod

    goals, queries, _ = load_scene_dir(os.path.join(DEMO_DATA, SCENE))
    geo = _open_demo()
    try:
        for q in list(queries.values())[:3]:
            views = []
            for oid in q["matched_object_ids"]:
                views += ig_mod.views_of(geo, goals[oid], {})
            best = min((v for v in views if v.qualifies()), key=ig_mod.View.rank)
            ig = q["image_goal"]
            assert ig["object_id"] == best.object_id
            assert ig["frame_coverage"] == ig["coverage"]
            assert ig["frame_coverage"] == pytest.approx(best.frame_coverage, abs=1e-4)
            assert ig["object_coverage"] == pytest.approx(best.object_coverage, abs=1e-4)
            assert ig["object_coverage"] >= 0.7 and 0.03 <= ig["frame_coverage"] <= 0.5
            sem = geo.camera_semantic(ig["position"], ig["rotation"])
            assert np.mean(sem == ig["object_id"]) == pytest.approx(ig["frame_coverage"], abs=1e-4)
            vp = goals[best.object_id]["view_points"][best.index]
            assert ig["position"] == pytest.approx(
                [vp["position"][0], vp["position"][1] + 0.88, vp["position"][2]], abs=1e-4
            )
            assert ig["hfov"] == 79.0 and ig["width"] is None and ig["height"] is None
    finally:
        geo.close()


def test_no_demo_goal_image_is_blank():
    """Issue 38: two goal images were one flat surface (coverage 1.0, pixel std 3.2). Each
    demo query's goal picture (256 x 256, as the agent gets it) now has structure (pixel
    std > 10), is not one surface (no object covers more than 95 % of it) and shows its
    instance at a moderate size (3-50 % of the frame, as the build measured)."""
    from habitat_mosnav.sims.camera import render_camera

    for scene in ("Cukxndkh48K", "EdBrNAgONm2", "b2ZCdoVqp4V"):
        _, queries, _ = load_scene_dir(os.path.join(DEMO_DATA, scene))
        geo = _open_demo(scene, rgb=True)
        try:
            for q in queries.values():
                ig = q["image_goal"]
                cam = dict(
                    position=ig["position"], rotation=ig["rotation"], hfov=79, width=256, height=256
                )
                rgb = render_camera(geo.sim, "rgb", **cam)
                sem = render_camera(geo.sim, "semantic", **cam)
                key = f"{scene}/{q['query_id']}"
                assert rgb.std() > 10, key
                assert np.unique(sem, return_counts=True)[1].max() <= 0.95 * sem.size, key
                assert 0.03 <= np.mean(sem == ig["object_id"]) <= 0.5, key
                assert ig["object_coverage"] >= 0.7, key
        finally:
            geo.close()


#: The toy room of the selection test: a wall cabinet 1 m x 1 m (front face at z = -2,
#: y 0.38..1.38 around the 0.88 m eye height) and a screen hiding its left part from the
#: room's middle. Box i is semantic object i + 1: room 1-6, cabinet 7, screen 8.
_CABINET = ((-0.5, 0.38, -2.4), (0.5, 1.38, -2.0), (120, 80, 40, 255))
_SCREEN = ((-0.8, 0.0, -1.0), (0.0, 2.0, -0.9), (60, 60, 160, 255))


def _toy_geometry(root, with_screen=True):
    from habitat.sims import make_sim

    from habitat_mosnav.dataset_building.geometry import CameraSpec, SceneGeometry, make_sim_config
    from habitat_mosnav.sims import toy_scenes as ts

    boxes = ts.room_boxes(-3.0, -3.0, 3.0, 3.0) + [_CABINET] + ([_SCREEN] if with_screen else [])
    stem = "screen" if with_screen else "open"
    glb = ts.export_scene_with_semantics(str(root / stem), stem, boxes)
    cam = CameraSpec(rgb=False)
    cfg = make_sim_config(glb, "mosnav", cam)
    return SceneGeometry(make_sim(cfg.type, config=cfg), cam, stem)


def test_selection_rejects_a_close_up_and_an_occluded_view(tmp_path, monkeypatch):
    """Three level view points of the cabinet (pitches off: PITCHES_DEG = (0,)):
    A, 0.76 m in front: the whole cabinet (object coverage 1.0) but 0.5 / (0.824 * 0.76)
    = 0.8 of the frame each way, about 64 % of it: rejected, frame coverage > 0.5;
    B, 1.8 m in front behind the screen: about 11 % of the frame unoccluded, the screen
    hides its left half (x < 0): rejected, object coverage < 0.7, though its
    frame coverage is in the band; C, from the side at (1.2, -0.2), clear of the screen:
    chosen. B's object coverage equals its visible pixels over the pixels the cabinet
    covers from B in the same room without the screen (the alone render, checked against
    a scene with no occluder)."""
    from habitat_mosnav.dataset_building import image_goals as ig_mod
    from habitat_mosnav.dataset_building.common import yaw_facing, yaw_to_quat
    from habitat_mosnav.dataset_building.geometry import CameraSpec

    monkeypatch.setattr(ig_mod, "PITCHES_DEG", (0.0,))
    ahead = [0.0, 0.0, 0.0, 1.0]  # facing -Z
    side = [1.2, 0.0, -0.2]
    vps = [
        {"position": [0.0, 0.0, -1.24], "rotation": ahead},
        {"position": [0.0, 0.0, -0.2], "rotation": ahead},
        {"position": side, "rotation": yaw_to_quat(yaw_facing(side, [0.0, 0.0, -2.2]))},
    ]
    goal = {"object_id": 7, "view_points": vps}
    geo = _toy_geometry(tmp_path)
    try:
        a, b, c = ig_mod.views_of(geo, goal, {})
        ig = ig_mod.image_goal_for(geo, {"matched_object_ids": [7]}, {7: goal}, {}, CameraSpec())
    finally:
        geo.close()
    assert a.object_coverage == 1.0 and a.frame_coverage > 0.5 and not a.qualifies()
    assert 0.03 <= b.frame_coverage <= 0.5 and b.object_coverage < 0.7 and not b.qualifies()
    assert c.qualifies() and c.object_coverage == pytest.approx(1.0, abs=0.01)
    assert ig["object_id"] == 7 and ig["position"] == [1.2, 0.88, -0.2]
    assert ig["rotation"] == vps[2]["rotation"]
    assert ig["frame_coverage"] == round(c.frame_coverage, 4) == ig["coverage"]
    assert ig["object_coverage"] == round(c.object_coverage, 4)

    open_geo = _toy_geometry(tmp_path, with_screen=False)
    try:
        unoccluded = np.count_nonzero(open_geo.semantic(vps[1]["position"], ahead) == 7)
    finally:
        open_geo.close()
    assert unoccluded > 0
    assert b.object_coverage == pytest.approx(b.frame_coverage * 160 * 160 / unoccluded)


def test_selection_falls_back_and_counts_when_no_view_qualifies(tmp_path, monkeypatch):
    """Only the close-up A and the occluded B: neither qualifies; B (in the band) is kept,
    counted image_goal_fallback."""
    from collections import Counter

    from habitat_mosnav.dataset_building import image_goals as ig_mod
    from habitat_mosnav.dataset_building.geometry import CameraSpec

    monkeypatch.setattr(ig_mod, "PITCHES_DEG", (0.0,))
    ahead = [0.0, 0.0, 0.0, 1.0]
    goal = {
        "object_id": 7,
        "view_points": [
            {"position": [0.0, 0.0, -1.24], "rotation": ahead},
            {"position": [0.0, 0.0, -0.2], "rotation": ahead},
        ],
    }
    counts = Counter()
    geo = _toy_geometry(tmp_path)
    try:
        ig = ig_mod.image_goal_for(
            geo, {"matched_object_ids": [7]}, {7: goal}, {}, CameraSpec(), counts
        )
    finally:
        geo.close()
    assert counts["image_goal_fallback"] == 1
    assert ig["position"] == [0.0, 0.88, -0.2] and ig["object_coverage"] < 0.7


def test_pitched_rotation_tilts_the_forward_axis_up():
    """pitched(identity, 30): forward -Z turns to (0, sin 30, -cos 30); the quaternion is
    (sin 15, 0, 0, cos 15) = (0.258819, 0, 0, 0.965926)."""
    from habitat_mosnav.dataset_building.image_goals import pitched

    assert pitched([0.0, 0.0, 0.0, 1.0], 30.0) == [0.258819, 0.0, 0.0, 0.965926]


def test_the_stage_regenerates_the_bundled_demo_queries(demo_copy, tmp_path):
    """`mosnav-build image-goals` on the demo without image goals writes the bundled
    queries.json byte for byte (how the demo was made: habitat_mosnav/data/demo/README.md)."""
    from habitat_mosnav.dataset_building.cli import main as build_main

    for scene in ("Cukxndkh48K", "EdBrNAgONm2", "b2ZCdoVqp4V"):
        doc = _queries(demo_copy, scene)
        for q in doc["queries"]:
            del q["image_goal"]
        _write_queries(demo_copy, doc, scene)
    code = build_main(
        [
            "image-goals",
            "--scenes",
            DEMO_SCENES,
            "--out",
            demo_copy,
            "--work",
            str(tmp_path / "work"),
            "--no-progress",
            "--scene-ids",
            SCENE,
        ]
    )
    assert code == 0
    with open(os.path.join(DEMO_DATA, SCENE, "queries.json"), "rb") as a:
        with open(os.path.join(demo_copy, SCENE, "queries.json"), "rb") as b:
            assert a.read() == b.read()


def test_the_fingerprint_covers_the_image_goal_parameters(demo_copy):
    before = dataset_file_digests(demo_copy)
    doc = _queries(demo_copy)
    doc["queries"][0]["image_goal"]["hfov"] = 90.0
    _write_queries(demo_copy, doc)
    after = dataset_file_digests(demo_copy)
    assert dataset_fingerprint(demo_copy) != dataset_fingerprint(DEMO_DATA)
    assert fingerprint_differences(before, after) == [f"{SCENE}/queries.json differs"]


@pytest.mark.parametrize(
    "change, field, problem",
    [
        (lambda ig: ig.update(hfov=200), "hfov", "[5, 150]"),
        (lambda ig: ig.update(width=0), "width", "16..2048"),
        (lambda ig: ig.update(object_id=99999), "object_id", "matched_object_ids"),
        (lambda ig: ig.update(rotation=[0, 0, 0, 0]), "rotation", "zero-length"),
        (lambda ig: ig.update(position=[0, "up", 0]), "position", "finite numbers"),
        (lambda ig: ig.pop("position"), "position", "missing"),
        (lambda ig: ig.update(frame_coverage=1.5), "frame_coverage", "[0, 1]"),
        (lambda ig: ig.update(object_coverage=-0.1), "object_coverage", ">= 0"),
    ],
)
def test_bad_image_goal_parameters_are_one_line_errors(demo_copy, change, field, problem):
    doc = _queries(demo_copy)
    q = doc["queries"][1]
    change(q["image_goal"])
    _write_queries(demo_copy, doc)
    with pytest.raises(DatasetFormatError) as err:
        load_scene_dir(os.path.join(demo_copy, SCENE))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(os.path.join(demo_copy, SCENE, "queries.json") + ": ")
    assert f"query '{q['query_id']}' image_goal: field '{field}'" in msg and problem in msg


def test_goal_type_image_without_image_goals_names_the_stage(demo_copy, capsys):
    from habitat_mosnav.evaluation.cli import main

    doc = _queries(demo_copy)
    del doc["queries"][1]["image_goal"]  # q0001: a many and an all episode
    _write_queries(demo_copy, doc)
    code = main(
        [
            "--goal-type",
            "image",
            "--dataset-dir",
            demo_copy,
            "--scene-root",
            DEMO_SCENES,
            "--agent",
            "random",
            "--output-dir",
            os.path.join(os.path.dirname(demo_copy), "out"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"queries.json: query '{doc['queries'][1]['query_id']}': field 'image_goal'" in err
    assert "mosnav-build image-goals" in err


def test_loader_keeps_targets_and_modes_of_the_query():
    """Image episodes are the description episodes with the same targets, modes and
    keys; the goal text names no category, object_category is the exemplar's."""
    import habitat

    from habitat_mosnav import get_config
    from habitat_mosnav.prompts import IMAGE_GOAL_TEXT

    def load(goal_type):
        cfg = get_config(DEMO_CONFIG, [f"habitat.dataset.goal_type={goal_type}"])
        return habitat.make_dataset(cfg.habitat.dataset.type, config=cfg.habitat.dataset)

    desc, image = load("description"), load("image")
    assert [e.episode_key for e in image.episodes] == [e.episode_key for e in desc.episodes]
    for d, i in zip(desc.episodes, image.episodes):
        assert i.target_object_ids == d.target_object_ids and i.target_mode == d.target_mode
        assert i.goal_type == "image" and i.goal_text == IMAGE_GOAL_TEXT
        exemplar = next(g for g in i.goals if g.object_id == i.image_goal["object_id"])
        assert i.object_category == exemplar.object_category
        assert d.image_goal is None


# ----------------------------------------------------------------------------- sensor
def _image_env(overrides=()):
    import habitat

    from habitat_mosnav import get_config

    cfg = get_config(DEMO_CONFIG, ["habitat.dataset.goal_type=image", *overrides])
    assert "mosnav_goal_image" in cfg.habitat.task.lab_sensors  # get_config adds it
    return habitat.Env(cfg)


def test_the_cpu_simulator_offers_a_camera_at_any_pose():
    from habitat_mosnav.sims import MosNavMeshSim

    assert interface_mismatches(MosNavMeshSim, CameraRendering) == []


def test_goal_image_is_rendered_once_per_episode(monkeypatch):
    from habitat_mosnav.sims import camera

    calls = []
    real = camera.render_camera

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(camera, "render_camera", counting)
    env = _image_env()
    try:
        first = env.reset()["mosnav_goal_image"].copy()
        assert calls == ["rgb"]
        for _ in range(4):
            obs = env.step(1)
            assert np.array_equal(obs["mosnav_goal_image"], first)
        assert calls == ["rgb"]
        env.reset()
        assert calls == ["rgb", "rgb"]
    finally:
        env.close()


def test_goal_image_shows_a_matching_instance():
    """The semantic camera at the goal image's parameters sees the pictured target: its id
    covers a visible part of the picture (about the share the stage measured)."""
    from habitat_mosnav.sims.camera import render_camera

    env = _image_env(["habitat.dataset.target_modes=[]"])
    try:
        sensor = env.task.sensor_suite.sensors["mosnav_goal_image"]
        seen = set()
        for _ in range(len(env.episodes)):
            obs = env.reset()
            ep = env.current_episode
            if (ep.scene_id, ep.query_id) in seen:
                continue
            seen.add((ep.scene_id, ep.query_id))
            img = obs["mosnav_goal_image"]
            assert img.shape == (256, 256, 3) and img.dtype == np.uint8 and img.std() > 3
            sem = render_camera(env.sim, "semantic", **sensor.camera(ep))
            share = np.mean(sem == ep.image_goal["object_id"])
            assert ep.image_goal["object_id"] in ep.target_object_ids
            assert share > 0.04 and share == pytest.approx(ep.image_goal["coverage"], abs=0.05)
        assert len(seen) >= 10
    finally:
        env.close()


_RENDER_GOALS = """
import sys
import numpy as np
import habitat
from habitat.config import read_write
from habitat.sims import make_sim
from habitat_mosnav import get_config
from habitat_mosnav.sims.camera import render_camera

path, out = sys.argv[1], sys.argv[2]
cfg = get_config(path, ["habitat.dataset.goal_type=image", "habitat.dataset.target_modes=[]"])
ds = habitat.make_dataset(cfg.habitat.dataset.type, config=cfg.habitat.dataset)
firsts = {}
for ep in ds.episodes:
    firsts.setdefault((ep.scene_name, ep.query_id), ep)
sc, sim, arrays = cfg.habitat.simulator, None, {}
for (scene, query), ep in sorted(firsts.items()):
    with read_write(sc):
        sc.scene, sc.scene_dataset = ep.scene_id, ep.scene_dataset_config
    if sim is None:
        sim = make_sim(sc.type, config=sc)
    else:
        sim.reconfigure(sc)
    ig = ep.image_goal
    cam = dict(position=ig["position"], rotation=ig["rotation"], hfov=79, width=96, height=96)
    arrays[f"{scene}/{query}/rgb"] = render_camera(sim, "rgb", **cam)
    arrays[f"{scene}/{query}/semantic"] = render_camera(sim, "semantic", **cam)
    arrays[f"{scene}/{query}/depth"] = render_camera(sim, "depth", **cam)
sim.close()
np.savez(out, **arrays)
"""


@pytest.mark.slow
def test_goal_images_agree_between_the_simulators(tmp_path):
    """Same camera on both simulators (each in its own process): the semantic pictures
    agree pixel for pixel (>= 99 %), depth to 1 mm at every pixel (planar metres, both
    rasterising the same triangles) and the RGB pictures in structure (grayscale
    correlation >= 0.8; docs/CPU_SIMULATOR.md: the CPU simulator's colours and light are its own)."""
    import subprocess
    import sys

    if not SIMULATORS["habitat-sim"].available():
        pytest.skip("habitat-sim is not installed")
    pictures = {}
    for name, path in (
        ("mosnav", DEMO_CONFIG),
        ("habitat-sim", "benchmark/nav/mosnav/mos_demo_habitat_sim.yaml"),
    ):
        out = str(tmp_path / f"{name}.npz")
        proc = subprocess.run(
            [sys.executable, "-c", _RENDER_GOALS, path, out],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        pictures[name] = dict(np.load(out))
    a, b = pictures["mosnav"], pictures["habitat-sim"]
    assert sorted(a) == sorted(b) and len(a) >= 20
    for key in sorted(k[: -len("/rgb")] for k in a if k.endswith("/rgb")):
        assert np.mean(a[key + "/semantic"] == b[key + "/semantic"]) >= 0.99, key
        depth_a, depth_b = a[key + "/depth"], b[key + "/depth"]
        assert depth_a.max() > 0 and np.abs(depth_a - depth_b).max() <= 1e-3, key
        gray_a, gray_b = a[key + "/rgb"].mean(-1).ravel(), b[key + "/rgb"].mean(-1).ravel()
        assert np.corrcoef(gray_a, gray_b)[0, 1] >= 0.8, key


# ----------------------------------------------------------------------------- mosnav-eval
_RECORDING_AGENT = '''
import hashlib, json, os
import numpy as np
from habitat_mosnav.agents.oracle import OracleAgent

class Recording(OracleAgent):
    """The oracle, writing what Observation.goal_image held at every step."""

    def act(self, observation):
        img = observation.goal_image
        seen = None if img is None else [list(img.shape), str(img.dtype),
                                         hashlib.sha256(img.tobytes()).hexdigest()]
        key = observation.extras["episode_key"]
        path = os.environ["MOSNAV_TEST_GOAL_IMAGES"]
        log = json.load(open(path)) if os.path.exists(path) else {}
        log.setdefault(key, [])
        if seen not in log[key]:
            log[key].append(seen)
            if img is not None:
                np.save(path + "." + hashlib.sha256(key.encode()).hexdigest()[:12] + ".npy", img)
        json.dump(log, open(path, "w"))
        return super().act(observation)
'''


@pytest.mark.slow
def test_eval_goal_type_image_oracle_succeeds_and_every_step_has_the_goal_image(
    tmp_path, monkeypatch
):
    import hashlib

    from habitat_mosnav.evaluation.cli import main
    from habitat_mosnav.evaluation.maps import read_map_info

    agent = tmp_path / "recording.py"
    agent.write_text(_RECORDING_AGENT)
    log = tmp_path / "goal_images.json"
    monkeypatch.setenv("MOSNAV_TEST_GOAL_IMAGES", str(log))
    out = tmp_path / "out"
    code = main(
        [
            "--goal-type",
            "image",
            "--agent",
            f"{agent}:Recording",
            "--save-maps",
            "--space-coverage-samples",
            "0",
            "--no-progress",
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0
    summary = read_summary(out)
    assert summary["ok_episode_count"] == 12 and summary["error_episode_count"] == 0
    assert summary["metrics"]["sr"] == 1.0
    records = read_records(out)
    assert len(records) == 12
    assert all(r["episode"]["goal_type"] == "image" for r in records)
    assert all(r["metrics"]["success"] == 1 for r in records)
    seen = json.loads(log.read_text())
    assert set(seen) == {r["episode_key"] for r in records}
    for key, images in seen.items():
        assert len(images) == 1, key  # one picture, the same at every step
        assert images[0][:2] == [[256, 256, 3], "uint8"]
    # the map shows the picture the agent got, beside the legend
    key = records[0]["episode_key"]
    stem = key.replace("::", "__")
    info = read_map_info(str(out / "maps" / f"{stem}.png"))
    from PIL import Image

    png = np.asarray(Image.open(out / "maps" / f"{stem}.png").convert("RGB"))
    (r0, r1), (c0, c1) = info["goal_image"]["rows"], info["goal_image"]["cols"]
    got = np.load(f"{log}.{hashlib.sha256(key.encode()).hexdigest()[:12]}.npy")
    step = -(-256 // (r1 - r0))
    assert np.array_equal(png[r0:r1, c0:c1], got[::step, ::step])


@pytest.mark.slow
def test_a_goal_type_list_runs_each_goal_type_as_its_single_run(tmp_path):
    """`--goal-type description,image` = the two single runs: same keys, seeds, actions and
    metrics in OUTPUT_DIR/description and OUTPUT_DIR/image."""
    from habitat_mosnav.evaluation.cli import main

    common = [
        "--agent",
        "random",
        "--max-steps",
        "8",
        "--space-coverage-samples",
        "0",
        "--episode-limit",
        "3",
        "--no-progress",
    ]
    both = tmp_path / "both"
    assert main(["--goal-type", "description,image", "--output-dir", str(both), *common]) == 0
    for goal_type in ("description", "image"):
        single = tmp_path / goal_type
        assert main(["--goal-type", goal_type, "--output-dir", str(single), *common]) == 0
        a, b = read_records(both / goal_type), read_records(single)
        assert [r["episode_key"] for r in a] == [r["episode_key"] for r in b] and len(a) == 9
        for ra, rb in zip(a, b):
            for field in ("seed", "action_trace", "positions", "metrics", "episode"):
                assert ra.get(field) == rb.get(field), (goal_type, field)
            assert ra["episode"]["goal_type"] == goal_type


def test_the_frontier_detector_is_told_the_exemplars_category():
    from types import SimpleNamespace

    from habitat_mosnav.agents.frontier import GroundTruthDetector

    env = _image_env()
    try:
        env.reset()
        ep = env.current_episode
        sem = np.full((8, 8), ep.target_object_ids[0], np.int32)
        det = GroundTruthDetector(min_pixels=1)
        det.bind_env(
            SimpleNamespace(
                current_episode=ep,
                sim=SimpleNamespace(get_observations_at=lambda: {"semantic": sem}),
            )
        )
        found = det.detect(SimpleNamespace(depth=None))
        exemplar = next(g for g in ep.goals if g.object_id == ep.image_goal["object_id"])
        assert det.goal_category == exemplar.object_category
        assert [d.category for d in found] == [exemplar.object_category]
    finally:
        env.close()


def test_the_goal_image_size_is_the_datasets_when_its_image_goals_agree():
    # GOAT-Bench gives every image goal its own [H, W] (SPEC §11): the sensor (one
    # observation space for every episode) takes the one size the dataset's goals give,
    # its episodes' and their subtasks'; goals without a size (the demo's) give none.
    from types import SimpleNamespace as NS

    from habitat_mosnav.sensors.sensors import dataset_image_goal_sizes

    def ep(ig=None, subtasks=()):
        return NS(image_goal=ig, subtasks=[NS(image_goal=s) for s in subtasks])

    sized = {"width": 320, "height": 240}
    unsized = {"width": None, "height": None}
    data = NS(episodes=[ep(sized), ep(None, [None, sized]), ep(unsized)])
    assert dataset_image_goal_sizes(data) == {(240, 320)}
    data.episodes.append(ep(None, [{"width": 512, "height": 512}]))
    assert dataset_image_goal_sizes(data) == {(240, 320), (512, 512)}
    assert dataset_image_goal_sizes(NS(episodes=[ep(unsized)])) == set()
    assert dataset_image_goal_sizes(None) == set()
