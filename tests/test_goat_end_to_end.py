"""GOAT-Bench's episodes end to end (issue 38's "Done when", SPEC §11): a GOAT-Bench v1 split
(real gzip layout) over an HM3D-laid-out scene root whose scene is a real mesh (the bundled
demo scene Cukxndkh48K as ``00800-Cukxndkh48K/Cukxndkh48K.basis.glb``, with its navmesh and
semantic files), imported with ``mosnav-build import-goat`` and run through the CLIs'
``main(argv)``: every GOAT task type as its own episode with the oracle at SR 1.0, the image
goal at GOAT's size, the sequential protocol (oracle, an agent giving up subtask 2, the
frontier agent), replay ``--verify`` / ``--diagnose`` / ``--save-maps`` and the report's
GOAT-Bench table.

The GOAT goal instances stand at real objects of the scene: categories, positions and view
points are the demo dataset's (habitat_mosnav/data/demo/dataset_semantic/Cukxndkh48K/
goals.json), and the image goals' cameras are the demo queries' image-goal cameras (real
poses looking at the instance), at GOAT's ``image_dimensions`` [240, 320] (the RGB camera is
64 x 64 here).
"""

import contextlib
import io
import json
import os
import shutil

import pytest

from conftest import NO_IMAGES, read_records, read_summary, write_gz_json

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(PKG, "habitat_mosnav", "data", "demo")
SID = "Cukxndkh48K"
FOLDER = "00800-" + SID
#: GOAT's [H, W] of every image goal here (the RGB camera is RGB_SIZE x RGB_SIZE).
GOAT_HW = [240, 320]
RGB_SIZE = 64
SPLIT = "val_seen"


def _demo(name):
    with open(os.path.join(DEMO, "dataset_semantic", SID, name), encoding="utf-8") as f:
        return json.load(f)


def _instance(goal, lang_desc=None, children=(), image_goals=()):
    """A demo goal as one GOAT-Bench v1 goal instance (``<category>_<semantic id>``)."""
    cat = goal["category"]
    return {
        "object_category": cat,
        "object_id": f"{cat}_{goal['object_id']}",
        "object_name": f"{cat}_{goal['object_id']}",
        "position": goal["position"],
        "children_object_categories": list(children),
        "lang_desc": lang_desc,
        "image_goals": list(image_goals),
        "object_surface_area": 1.0,
        "view_points": [
            {
                "agent_state": {"position": vp["position"], "rotation": vp["rotation"]},
                "iou": vp["iou"],
            }
            for vp in goal["view_points"]
        ],
    }


def _image_goal(camera):
    """A demo query's image-goal camera (it looks at its instance) as GOAT's image goal."""
    return {
        "position": camera["position"],
        "rotation": camera["rotation"],
        "hfov": camera["hfov"],
        "image_dimensions": list(GOAT_HW),
        "frame_coverage": camera["coverage"],
        "object_coverage": 0.9,
    }


#: The GOAT episodes (start, tasks) on Cukxndkh48K. Rooms (demo goals' region_id): 1
#: kitchen (table 20, sink 18, plant 23), 2 bedroom (bed 30, desk 36), 3 living
#: room (table 49, chair 51), 4 bathroom (bathtub 65, sink 67).
GOAT_EPISODES = [
    # 0: table (object; + its child category desk) -> bathtub (image) -> plant 23
    # (description). Subtask 2's bathtub is in the bathroom, metres from the kitchen
    # table's view points where subtask 1 ends: giving it up at once fails it.
    (
        [-1.0, 0.0, 0.5],
        [0.0, 0.0, 0.0, 1.0],
        [
            ["table", "object", None],
            ["bathtub", "image", "bathtub_65", 0],
            ["plant", "description", "plant_23"],
        ],
    ),
    # 1: sink 18 (description, kitchen) -> bed (object, bedroom) -> chair 51 (image, living room)
    (
        [1.5, 0.0, -1.0],
        [0.0, 0.707107, 0.0, 0.707107],
        [
            ["sink", "description", "sink_18"],
            ["bed", "object", None],
            ["chair", "image", "chair_51", 0],
        ],
    ),
]


def goat_content():
    """The content document of Cukxndkh48K (GOAT-Bench v1's ``episodes`` + ``goals``)."""
    goals = {g["object_id"]: g for g in _demo("goals.json")["goals"]}
    cameras = {}
    for q in _demo("queries.json")["queries"]:
        ig = q.get("image_goal")
        if ig is not None:
            cameras.setdefault(ig["object_id"], ig)
    captions = {oid: g["caption"].capitalize() + "." for oid, g in goals.items()}

    def inst(oid, **kw):
        return _instance(goals[oid], **kw)

    content_goals = {
        f"{SID}.basis.glb_table": [
            inst(20, children=["desk"]),
            inst(49, children=["desk"]),
        ],
        f"{SID}.basis.glb_desk": [inst(36)],
        f"{SID}.basis.glb_bathtub": [inst(65, image_goals=[_image_goal(cameras[65])])],
        f"{SID}.basis.glb_plant": [
            inst(23, lang_desc=captions[23], image_goals=[_image_goal(cameras[23])])
        ],
        f"{SID}.basis.glb_sink": [
            inst(18, lang_desc=captions[18], image_goals=[_image_goal(cameras[18])]),
            inst(67),
        ],
        f"{SID}.basis.glb_chair": [inst(51, image_goals=[_image_goal(cameras[51])])],
        f"{SID}.basis.glb_bed": [inst(30, lang_desc=captions[30])],
    }
    episodes = [
        {
            "episode_id": str(i),
            "scene_id": f"hm3d/val//{FOLDER}/{SID}.basis.glb",
            "scene_dataset_config": "./data/scene_datasets/hm3d/"
            "hm3d_annotated_basis.scene_dataset_config.json",
            "start_position": list(start),
            "start_rotation": list(rotation),
            "info": {"geodesic_distance": 3.0},
            "goals": [],
            "object_category": tasks[0][0],
            # copies: a test that edits a task must not edit GOAT_EPISODES for the others
            "tasks": [list(task) for task in tasks],
        }
        for i, (start, rotation, tasks) in enumerate(GOAT_EPISODES)
    ]
    return {"episodes": episodes, "goals": content_goals}


def write_real_goat_split(root, content=None):
    """``(split_dir, scene_root)``: the GOAT split over an HM3D v0.2 scene root holding the
    demo scene Cukxndkh48K as HM3D names it (``.basis.glb``, ``.basis.navmesh``) with the
    semantic files and meta file the CPU simulator reads beside it."""
    split_dir = os.path.join(str(root), "goat", SPLIT)
    write_gz_json(os.path.join(split_dir, f"{SPLIT}.json.gz"), {"episodes": []})
    write_gz_json(
        os.path.join(split_dir, "content", f"{SID}.json.gz"),
        goat_content() if content is None else content,
    )
    scene_root = os.path.join(str(root), "hm3d", "val")
    src = os.path.join(DEMO, "scenes", f"00000-{SID}")
    dst = os.path.join(scene_root, FOLDER)
    os.makedirs(dst)
    for src_name, dst_name in (
        (f"{SID}.glb", f"{SID}.basis.glb"),
        (f"{SID}.navmesh", f"{SID}.basis.navmesh"),
        (f"{SID}.semantic.glb", f"{SID}.semantic.glb"),
        (f"{SID}.semantic.txt", f"{SID}.semantic.txt"),
        (f"{SID}.mosnav_meta.json", f"{SID}.mosnav_meta.json"),
    ):
        shutil.copyfile(os.path.join(src, src_name), os.path.join(dst, dst_name))
    return split_dir, scene_root


# ----------------------------------------------------------------------------- agents
#: Agents run through ``mosnav-eval --agent FILE:Class``; RecordingOracle logs what the agent
#: receives (goal image shape, goal text, subtask) beside the file, one JSON line a step.
AGENTS = '''
import contextlib
import io
import json
import os

from habitat_mosnav.agents.oracle import OracleAgent

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seen.jsonl")


class RecordingOracle(OracleAgent):
    def act(self, obs):
        img = obs.goal_image
        seen = {
            "episode_id": obs.episode_id,
            "step": obs.step_count,
            "goal_type": obs.goal_type,
            "goal_text": obs.goal_text,
            "subtask_index": obs.subtask_index,
            "subtask_count": obs.subtask_count,
            "rgb": list(obs.rgb.shape),
            "goal_image": None if img is None else list(img.shape),
            "goal_image_std": None if img is None else float(img.std()),
        }
        with open(LOG, "a") as f:
            f.write(json.dumps(seen) + "\\n")
        return super().act(obs)


class GiveUpSecond(OracleAgent):
    """The oracle, except that it gives subtask 2 up: SUBTASK_STOP (6) at once, where it
    stands (where subtask 1 ended)."""

    def act(self, obs):
        if obs.subtask_index == 1:
            return 6
        return super().act(obs)
'''

_SENSORS = "habitat.simulator.agents.main_agent.sim_sensors"


def _camera_size(n):
    out = []
    for sensor in ("rgb_sensor", "depth_sensor"):
        out += [
            "--set",
            f"{_SENSORS}.{sensor}.width={n}",
            "--set",
            f"{_SENSORS}.{sensor}.height={n}",
        ]
    return out


#: name -> (agent, mosnav-eval flags) of the runs the tests share (each made once, on demand).
RUNS = {
    "object": ("oracle", ["--goal-type", "object", "--target-modes", "all,many", *NO_IMAGES]),
    "description": (
        "oracle",
        ["--goal-type", "description", "--target-modes", "single", *NO_IMAGES],
    ),
    "image": (
        "RecordingOracle",
        ["--goal-type", "image", "--target-modes", "single", *_camera_size(RGB_SIZE)],
    ),
    "sequential": (
        "RecordingOracle",
        ["--target-modes", "sequential", "--save-maps", *_camera_size(RGB_SIZE)],
    ),
    # goat0000-sequential only (the first episode by key)
    "give_up": (
        "GiveUpSecond",
        ["--target-modes", "sequential", "--num-episodes", "1", *_camera_size(RGB_SIZE)],
    ),
    "frontier": (
        "habitat_mosnav.agents.frontier:FrontierAgent",
        ["--target-modes", "sequential", *_camera_size(128)],
    ),
}


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def goat(tmp_path_factory):
    """The split, its scene root and two imports of it: ``{"split", "scenes", "data",
    "again", "printed"}`` (``printed``: what the first import wrote to stdout)."""
    from habitat_mosnav.dataset_building.cli import main as build

    root = tmp_path_factory.mktemp("goat_e2e")
    split_dir, scene_root = write_real_goat_split(root)
    out = {"split": split_dir, "scenes": scene_root, "root": str(root)}
    for key in ("data", "again"):
        out[key] = str(root / key)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            rc = build(
                ["import-goat", "--goat", split_dir, "--scene-root", scene_root]
                + ["--out", out[key]]
            )
        assert rc == 0, printed.getvalue()
        out.setdefault("printed", printed.getvalue())
    return out


@pytest.fixture(scope="module")
def runs(goat):
    """``runs(name)``: the output directory of :data:`RUNS`'s ``name`` on the imported
    dataset, made on first use (exit status 0 asserted), shared by the module's tests."""
    from habitat_mosnav.evaluation.cli import main

    agent_file = os.path.join(goat["root"], "goat_agents.py")
    with open(agent_file, "w", encoding="utf-8") as f:
        f.write(AGENTS)
    made = {}

    def get(name):
        if name not in made:
            agent, flags = RUNS[name]
            if not agent.startswith(("oracle", "habitat_mosnav")):
                agent = f"{agent_file}:{agent}"
            out = os.path.join(goat["root"], "run_" + name)
            argv = ["--dataset-dir", goat["data"], "--scene-root", goat["scenes"]]
            argv += ["--space-coverage-samples", "0", "--no-progress", "--agent", agent]
            rc = main(argv + flags + ["--output-dir", out])
            assert rc == 0, f"mosnav-eval {name} exited {rc}"
            made[name] = out
        return made[name]

    get.seen_log = os.path.join(goat["root"], "seen.jsonl")
    return get


def seen(runs, episode_id):
    """What RecordingOracle received at each step of ``episode_id``."""
    with open(runs.seen_log, encoding="utf-8") as f:
        return [s for s in map(json.loads, f) if s["episode_id"] == episode_id]


def by_episode(out):
    return {r["episode"]["episode_id"]: r for r in read_records(out)}


# ----------------------------------------------------------------------------- import
#: What import-goat makes of GOAT_EPISODES (SPEC §11): per task an `all` (+ `many` for 3 or
#: more instances) or `single` episode, per GOAT episode a `sequential` one.
EPISODES = {
    "goat0000-sequential": [20, 36, 49, 65, 23],
    "goat0000-t00-all": [20, 36, 49],  # tables 20, 49 and the children category's desk 36
    "goat0000-t00-many": [20, 36, 49],
    "goat0000-t01-single": [65],
    "goat0000-t02-single": [23],
    "goat0001-sequential": [18, 30, 51],
    "goat0001-t00-single": [18],
    "goat0001-t01-all": [30],
    "goat0001-t02-single": [51],
}


def _files(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            path = os.path.join(d, n)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


@pytest.mark.py39
def test_import_twice_is_byte_identical(goat):
    from habitat_mosnav.datasets.fingerprint import dataset_fingerprint

    first, again = _files(goat["data"]), _files(goat["again"])
    assert sorted(first) == sorted(
        ["categories.json", f"{SID}/episodes.json", f"{SID}/goals.json", f"{SID}/queries.json"]
    )
    assert first == again
    assert f"fingerprint: {dataset_fingerprint(goat['data'])}" in goat["printed"]
    episodes = json.loads(first[f"{SID}/episodes.json"])["episodes"]
    assert {e["episode_id"]: e["target_object_ids"] for e in episodes} == EPISODES
    queries = {q["query_id"]: q for q in json.loads(first[f"{SID}/queries.json"])["queries"]}
    for e in episodes:
        if e["episode_id"] in ("goat0000-t01-single", "goat0001-t02-single"):  # image tasks
            ig = queries[e["query_id"]]["image_goal"]
            assert (ig["height"], ig["width"]) == tuple(GOAT_HW) == (240, 320)


@pytest.mark.py39
def test_bad_task_exits_2_with_one_line(tmp_path, capsys):
    from habitat_mosnav.dataset_building.cli import main as build

    content = goat_content()
    content["episodes"][1]["tasks"][1] = ["chair", "image", "chair_99", 0]  # no such chair
    split_dir, scene_root = write_real_goat_split(tmp_path, content)
    out = tmp_path / "out"
    rc = build(["import-goat", "--goat", split_dir, "--scene-root", scene_root, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"{SID}.json.gz" in lines[0] and "episode #1" in lines[0]
    assert "tasks[1][2]" in lines[0] and "chair_99" in lines[0]
    assert not out.exists()


# ----------------------------------------------------------------------------- per task
@pytest.mark.slow
def test_object_tasks_all_and_many_with_the_oracle(runs):
    out = runs("object")
    recs = by_episode(out)
    assert sorted(recs) == ["goat0000-t00-all", "goat0000-t00-many", "goat0001-t01-all"]
    for eid, r in recs.items():
        assert r["status"] == "ok" and r["metrics"]["success"] == 1, eid
        assert r["episode"]["goal_type"] == "object"
    assert read_summary(out)["metrics"]["sr"] == 1.0


@pytest.mark.slow
def test_description_tasks_single_with_the_oracle(runs):
    out = runs("description")
    recs = by_episode(out)
    # the description tasks' episodes and, told as text, the image tasks'
    assert sorted(recs) == [e for e in sorted(EPISODES) if e.endswith("-single")]
    for eid, r in recs.items():
        assert r["status"] == "ok" and r["metrics"]["success"] == 1, eid
    assert read_summary(out)["metrics"]["sr_single"] == 1.0


@pytest.mark.slow
def test_image_tasks_single_with_the_oracle_and_goats_image_size(runs):
    out = runs("image")
    recs = by_episode(out)
    assert sorted(recs) == [e for e in sorted(EPISODES) if e.endswith("-single")]
    for eid, r in recs.items():
        assert r["status"] == "ok" and r["metrics"]["success"] == 1, eid
        steps = seen(runs, eid)
        assert steps and all(s["goal_type"] == "image" for s in steps)
        # GOAT's image_dimensions [H, W] = [240, 320], not the 64 x 64 RGB camera's size
        assert {tuple(s["goal_image"]) for s in steps} == {(240, 320, 3)}, eid
        assert {tuple(s["rgb"]) for s in steps} == {(RGB_SIZE, RGB_SIZE, 3)}
        assert steps[0]["goal_image_std"] > 5.0, eid  # a picture, not a blank frame


# ----------------------------------------------------------------------------- sequential
@pytest.mark.slow
def test_sequential_oracle_completes_every_subtask(runs, goat):
    out = runs("sequential")
    recs = by_episode(out)
    assert sorted(recs) == ["goat0000-sequential", "goat0001-sequential"]
    types = {
        "goat0000-sequential": ["object", "image", "description"],
        "goat0001-sequential": ["description", "object", "image"],
    }
    for eid, r in recs.items():
        m, sm = r["metrics"], r["subtask_metrics"]
        assert r["status"] == "ok" and r["terminated_by"] == "target_found", eid
        assert m["task_success"] == 1 and m["composite_success"] == 1
        assert m["partial_success"] == 1.0 and m["composite_spl"] > 0
        assert m["object_success"] == m["description_success"] == m["image_success"] == 1.0
        assert sm["subtask_success"] == [1, 1, 1] and sm["goal_types"] == types[eid]
        assert m["composite_spl"] == pytest.approx(sum(sm["spl_by_subtask"]) / 3)
        # one agent, one subtask at a time: its goal fields are the current subtask's
        steps = seen(runs, eid)
        assert {s["subtask_count"] for s in steps} == {3}
        assert [s["subtask_index"] for s in steps] == sorted(s["subtask_index"] for s in steps)
        for s in steps:
            assert s["goal_type"] == types[eid][s["subtask_index"]]
            want = (240, 320, 3) if s["goal_type"] == "image" else None
            assert (tuple(s["goal_image"]) if s["goal_image"] else None) == want
    texts = {s["subtask_index"]: s["goal_text"] for s in seen(runs, "goat0000-sequential")}
    assert texts[0] == "table"
    captions = {g["object_id"]: g["caption"] for g in _demo("goals.json")["goals"]}
    assert texts[2] == captions[23].capitalize() + "."  # plant 23's lang_desc
    summary = read_summary(out)["metrics"]
    assert summary["num_episodes_sequential"] == 2 and summary["task_success"] == 1.0
    # --save-maps: a map per sequential episode, its header in GOAT's terms
    from habitat_mosnav.evaluation.maps import read_map_info

    maps = sorted(os.listdir(os.path.join(out, "maps")))
    assert maps == [f"val__{SID}__{eid}.png" for eid in sorted(recs)]
    header = read_map_info(os.path.join(out, "maps", maps[0]))["header"]
    assert header[:3] == ["SUCCESS", header[1], "subtasks 3 of 3 succeeded"]
    assert header[1].startswith("the last subtask's SUBTASK_STOP at step ")
    assert header[3].startswith("partial 1.000  composite spl 0.9")


@pytest.mark.slow
def test_giving_up_subtask_2_scores_two_thirds(runs):
    # goat0000-sequential: subtask 1 (object: table) is reached as the oracle reaches it;
    # subtask 2 (image: bathtub 65, in the bathroom) is stopped at once where subtask 1
    # ended, by a table metres away (its start distance, > 3 m, is far above the 0.25 m
    # success distance): it fails with path 0; subtask 3 (description: plant 23) starts there
    # and is reached. s = [1, 0, 1]: partial_success = 2/3, composite and task success 0,
    # object_success = 1, image_success = 0, description_success = 1, spl_2 = 0.
    recs = by_episode(runs("give_up"))
    assert sorted(recs) == ["goat0000-sequential"]
    r = recs["goat0000-sequential"]
    m, sm = r["metrics"], r["subtask_metrics"]
    assert sm["subtask_success"] == [1, 0, 1]
    assert m["partial_success"] == pytest.approx(2 / 3)
    assert m["task_success"] == 0 and m["composite_success"] == 0
    assert (m["object_success"], m["image_success"], m["description_success"]) == (1.0, 0.0, 1.0)
    assert sm["start_distance"][1] > 3.0 and sm["path_length"][1] == 0.0
    assert sm["stop_step"][1] == sm["stop_step"][0] + 1
    assert sm["spl_by_subtask"][1] == 0.0
    assert m["composite_spl"] == pytest.approx(sum(sm["spl_by_subtask"]) / 3)
    assert r["terminated_by"] == "target_found"  # ended after the last subtask's stop


@pytest.mark.slow
def test_frontier_agent_finds_the_subtasks_targets(runs):
    # The ground-truth detector follows the current subtask (its targets match, the
    # episode's others are remembered where seen) and the agent sends 6 next to the
    # target: every subtask of both episodes (so at 96 x 96 and 128 x 128 depth alike).
    recs = by_episode(runs("frontier"))
    assert sorted(recs) == ["goat0000-sequential", "goat0001-sequential"]
    for eid, r in recs.items():
        assert r["status"] == "ok", r.get("error")
        assert r["subtask_metrics"]["subtask_success"] == [1, 1, 1], (eid, r["subtask_metrics"])
        assert r["metrics"]["task_success"] == 1 and r["terminated_by"] == "target_found"


# ----------------------------------------------------------------------------- tools
@pytest.mark.slow
def test_replay_verifies_and_diagnoses_the_sequential_run(runs, goat, tmp_path):
    from habitat_mosnav.evaluation.replay_cli import main as replay

    out = runs("sequential")
    paths = ["--dataset-dir", goat["data"], "--scene-root", goat["scenes"], "--no-progress"]
    rc = replay([out, "--verify", "--out", str(tmp_path / "verify"), *paths])
    assert rc == 0
    assert read_summary(out)["verification"]["status"] == "verified"
    rc = replay([out, "--diagnose", "--save-maps", "--out", str(tmp_path / "diag"), *paths])
    assert rc == 0
    with open(tmp_path / "diag" / "diagnosis.json", encoding="utf-8") as f:
        diagnosis = json.load(f)
    assert diagnosis["episode_count"] == 2 and diagnosis["failed_episode_count"] == 0
    assert len(os.listdir(tmp_path / "diag" / "maps")) == 2  # a map per replayed episode


@pytest.mark.slow
def test_diagnose_judges_a_subtask_stop_against_its_subtask(runs, goat, tmp_path):
    # The give-up run: subtask 2's stop (step stop_step[1]) stands by table 49, found in
    # subtask 1, and > 3 m from the bathtub: no target of subtask 2 within 1 m, a `false`
    # claim (not a `duplicate` of table 49, a target of another subtask).
    from habitat_mosnav.evaluation.replay_cli import main as replay

    out = runs("give_up")
    paths = ["--dataset-dir", goat["data"], "--scene-root", goat["scenes"], "--no-progress"]
    assert replay([out, "--diagnose", "--out", str(tmp_path / "diag"), *paths]) == 0
    with open(os.path.join(out, "diagnosis.json"), encoding="utf-8") as f:
        ep = json.load(f)["episodes"][f"val::{SID}::goat0000-sequential"]
    stops = read_records(out)[0]["subtask_metrics"]["stop_step"]
    assert [(c["step"], c["kind"]) for c in ep["claims"]] == [
        (stops[0], "new"),
        (stops[1], "false"),
        (stops[2], "new"),
    ]
    assert ep["label"] == "false_claim" and "stopped_early" in ep["labels"]
    assert ep["targets"]["65"] != "found" and ep["targets"]["23"] == "found"


@pytest.mark.slow
def test_report_writes_the_goat_bench_table(runs, tmp_path):
    import csv

    from habitat_mosnav.evaluation.report import main as report

    out = tmp_path / "report"
    rc = report([runs("sequential"), "--out", str(out), "--bootstrap", "50", "--no-progress"])
    assert rc == 0
    with open(out / "leaderboard_goat.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1
    assert float(rows[0]["num_episodes_sequential"]) == 2
    assert float(rows[0]["task_success"]) == 1.0
    assert float(rows[0]["partial_success"]) == 1.0
