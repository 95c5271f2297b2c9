"""``mosnav-build import-goat`` (SPEC §11) on the small GOAT-Bench v1 split of
``conftest.goat_documents`` (real gzip layout, HM3D v0.2 scene root): the episodes and
queries per GOAT task type, the 55-word filter, image goal cameras ([H, W] -> width/height),
sequential subtasks in order, repeated subtasks and a missing scene, determinism, the
printed fingerprint, one-line errors with nothing written, and loading the result."""

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from conftest import (
    GOAT_MISSING_SCENE,
    goat_documents,
    write_goat_split,
    write_gz_json,
)
from habitat_mosnav.dataset_building import goat as goat_mod
from habitat_mosnav.dataset_building.cli import main
from habitat_mosnav.dataset_building.queries import execute, validate_queries
from habitat_mosnav.datasets import schema
from habitat_mosnav.datasets.fingerprint import dataset_fingerprint

SID = "TEEsavR23oF"


def run(capsys, split_dir, scene_root, out, *extra):
    code = main(
        ["import-goat", "--goat", str(split_dir), "--scene-root", str(scene_root)]
        + ["--out", str(out), *extra]
    )
    return code, capsys.readouterr()


def read(out, sid, name):
    with open(os.path.join(str(out), sid, name), encoding="utf-8") as f:
        return json.load(f)[name.split(".")[0]]


@pytest.fixture
def imported(goat_split, tmp_path, capsys):
    out = tmp_path / "out"
    code, cap = run(capsys, *goat_split, out)
    assert code == 0, cap.err
    return out, cap.out


def by_id(items, key):
    return {x[key]: x for x in items}


# ----------------------------------------------------------------------------- content
def test_object_tasks_become_category_queries_with_children_and_all_many_episodes(imported):
    out, _ = imported
    queries = by_id(read(out, SID, "queries.json"), "query_id")
    eps = by_id(read(out, SID, "episodes.json"), "episode_id")
    chair = queries[eps["goat0000-t00-all"]["query_id"]]
    # chairs 1, 2, 3 and their children category's stool 7, as goat-bench adds children
    assert chair["matched_object_ids"] == [1, 2, 3, 7]
    assert chair["query_program"]["where"] == [{"field": "category", "op": "==", "value": "chair"}]
    assert schema.pure_category({"where": [("category", "==", "chair")]}) == "chair"
    assert eps["goat0000-t00-all"]["target_object_ids"] == [1, 2, 3, 7]
    many = eps["goat0000-t00-many"]
    assert many["target_mode"] == "many" and 2 <= many["target_count"] <= 3  # drawn in 2..N-1
    # the sofa has one instance: an `all` episode, no `many` (it needs 3 or more)
    assert eps["goat0000-t04-all"]["target_object_ids"] == [20]
    assert "goat0000-t04-many" not in eps
    # every per-task episode starts at its GOAT episode's start
    assert eps["goat0000-t00-all"]["start_position"] == [0.25, 0.0, 1.0]
    assert eps["goat0001-t02-all"]["start_position"] == [-0.75, 0.0, 1.0]
    # GOAT episode 1 names chair_1 in its object task: still every chair (and the stool)
    assert eps["goat0001-t02-all"]["query_id"] == chair["query_id"]


def test_goals_carry_goat_view_points_semantic_ids_and_captions(imported):
    out, _ = imported
    goals = by_id(read(out, SID, "goals.json"), "object_id")
    assert sorted(goals) == [1, 2, 3, 7, 14, 15, 20]
    plant = goals[14]
    assert plant["category"] == "plant" and plant["caption"] == "The green plant by the window."
    assert plant["position"] == [5.0, 0.5, -2.0]
    assert plant["view_points"][0] == {
        "position": [5.5, 0.0, -2.0],
        "rotation": [0.0, 0.7071, 0.0, 0.7071],
        "iou": 0.5,
    }
    assert plant["navigable_position"] == [5.5, 0.0, -2.0]  # the first view point
    with open(os.path.join(str(out), "categories.json")) as f:
        assert json.load(f) == ["bed", "chair", "plant", "sofa", "stool"]


def test_description_tasks_are_single_and_the_55_word_filter_drops_longer_ones(imported):
    out, printed = imported
    queries = read(out, SID, "queries.json")
    eps = by_id(read(out, SID, "episodes.json"), "episode_id")
    desc = by_id(queries, "query_id")[eps["goat0000-t01-single"]["query_id"]]
    assert desc["instruction"] == "The green plant by the window."
    assert desc["matched_object_ids"] == [14]
    assert desc["query_program"]["where"][1] == {"field": "object_id", "op": "==", "value": 14}
    # plant_15's description has 56 words (55 spaces + 1): no query, no episode, no subtask
    assert goat_mod.description_words(" ".join(["w"] * 56)) == 56
    assert all(15 not in q["matched_object_ids"] for q in queries)
    assert "goat0000-t03-single" not in eps
    assert eps["goat0000-sequential"]["info"]["task_indices"] == [0, 1, 2, 4]
    assert "description_over_55_words=1" in printed


def test_image_tasks_carry_goats_camera_height_width_from_h_w(imported):
    out, _ = imported
    queries = by_id(read(out, SID, "queries.json"), "query_id")
    eps = by_id(read(out, SID, "episodes.json"), "episode_id")
    ig = queries[eps["goat0000-t02-single"]["query_id"]]["image_goal"]
    # image_goals[1]: image_dimensions [H, W] = [512, 384]
    assert (ig["height"], ig["width"]) == (512, 384)
    assert ig["hfov"] == 70.5 and ig["object_id"] == 14
    assert ig["position"] == [2.0, 1.25, 1.0]
    assert ig["rotation"] == [0.0, 0.382683, 0.0, 0.923879]  # rounded to 6 decimals
    assert ig["coverage"] == ig["frame_coverage"] == 0.5 and ig["object_coverage"] == 0.9
    # the category query's exemplar: the matched instance's image with the largest
    # frame coverage (chair_2's, 0.4); the sofa has no GOAT image, so no image_goal
    chair = queries[eps["goat0000-t00-all"]["query_id"]]["image_goal"]
    assert chair["object_id"] == 2 and chair["coverage"] == 0.4
    assert "image_goal" not in queries[eps["goat0000-t04-all"]["query_id"]]


def test_sequential_episodes_keep_subtasks_in_order_and_repeats(imported):
    out, printed = imported
    queries = by_id(read(out, SID, "queries.json"), "query_id")
    eps = by_id(read(out, SID, "episodes.json"), "episode_id")
    seq = eps["goat0000-sequential"]
    assert seq["target_mode"] == "sequential" and seq["target_count"] is None
    kinds = [s["goal_type"] for s in seq["subtasks"]]
    assert kinds == ["object", "description", "image", "object"]
    assert [s["target_object_ids"] for s in seq["subtasks"]] == [[1, 2, 3, 7], [14], [14], [20]]
    assert seq["query_id"] == seq["subtasks"][0]["query_id"]
    assert seq["target_object_ids"] == [1, 2, 3, 7, 14, 20]  # first appearance, no repeats
    assert queries[seq["subtasks"][3]["query_id"]]["query_program"]["where"][0]["value"] == "sofa"
    # goat-bench issue #34: the repeated image task stays in the sequential episode (GOAT
    # scores it), and its single episode is written once
    seq1 = eps["goat0001-sequential"]
    ids = [s["query_id"] for s in seq1["subtasks"]]
    assert ids[0] == ids[1] == eps["goat0001-t00-single"]["query_id"]
    assert "goat0001-t01-single" not in eps
    assert seq1["target_object_ids"] == [14, 1, 2, 3, 7]
    # the image query is shared between GOAT episodes 0 and 1
    assert ids[0] == eps["goat0000-t02-single"]["query_id"]
    assert "repeated_subtask_kept_in_sequential=1" in printed
    assert "duplicate_single_episode=1" in printed


def test_missing_scene_is_skipped_and_counted(imported, goat_split, tmp_path, capsys):
    out, printed = imported
    assert sorted(os.listdir(str(out))) == ["Abcdefghijk", SID, "categories.json"]
    assert "missing_scene=1" in printed and "goat_episodes_of_missing_scene=1" in printed
    assert f"scenes not in --scene-root: {GOAT_MISSING_SCENE}" in printed
    # no scene at all: an error, nothing written
    empty = tmp_path / "empty_root"
    empty.mkdir()
    code, cap = run(capsys, goat_split[0], empty, tmp_path / "none")
    assert code == 2 and "none of the split's scenes" in cap.err
    assert not (tmp_path / "none").exists()


# ----------------------------------------------------------------------------- determinism
def test_reimport_is_byte_identical_and_the_printed_fingerprint_is_the_folders(
    imported, goat_split, tmp_path, capsys
):
    out, printed = imported
    again = tmp_path / "again"
    code, cap = run(capsys, *goat_split, again)
    assert code == 0
    for d, _dirs, files in os.walk(str(out)):
        for f in files:
            a = os.path.join(d, f)
            b = os.path.join(str(again), os.path.relpath(a, str(out)))
            with open(a, "rb") as fa, open(b, "rb") as fb:
                assert fa.read() == fb.read(), a
    line = [ln for ln in printed.splitlines() if "fingerprint:" in ln]
    assert line == [f"  fingerprint: {dataset_fingerprint(str(out))}"]
    assert dataset_fingerprint(str(again)) == dataset_fingerprint(str(out))
    # a non-empty --out is refused without --overwrite, replaced with it
    code, cap = run(capsys, *goat_split, out)
    assert code == 2 and "--overwrite" in cap.err
    code, cap = run(capsys, *goat_split, out, "--overwrite")
    assert code == 0 and dataset_fingerprint(str(out)) == dataset_fingerprint(str(again))


# ----------------------------------------------------------------------------- bad input
def _bad_task(docs):
    docs[SID]["episodes"][1]["tasks"][2] = ["chair", "object", None]
    docs[SID]["episodes"][1]["tasks"][0] = ["plant", "image", "plant_99", 0]


def _missing_start(docs):
    del docs[SID]["episodes"][1]["start_position"]


def _wrong_type(docs):
    docs[SID]["goals"][f"{SID}.basis.glb_plant"][0]["image_goals"][1]["hfov"] = "wide"


def _bad_index(docs):
    docs[SID]["episodes"][0]["tasks"][2] = ["plant", "image", "plant_14", 5]


def _bad_object_id(docs):
    docs[SID]["goals"][f"{SID}.basis.glb_sofa"][0]["object_id"] = "sofa"


@pytest.mark.parametrize(
    "edit, expected",
    [
        (_bad_task, ["content/TEEsavR23oF.json.gz", "episode #1", "'tasks[0][2]'", "plant_99"]),
        (_missing_start, ["episode #1", "'start_position': missing"]),
        (_wrong_type, ["image_goals[1]", "'hfov': expected a number"]),
        (_bad_index, ["episode #0", "image index 5 is out of range"]),
        (_bad_object_id, ["goals.TEEsavR23oF.basis.glb_sofa[0]", "'object_id'"]),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, edit, expected):
    docs = goat_documents()
    edit(docs)
    split_dir, scene_root = write_goat_split(tmp_path, docs)
    out = tmp_path / "data" / "out"
    code, cap = run(capsys, split_dir, scene_root, out)
    err = cap.err.strip().splitlines()
    assert code == 2 and len(err) == 1, cap.err
    assert err[0].startswith("mosnav-build import-goat: error: ")
    for text in expected:
        assert text in err[0], err[0]
    assert not out.exists() and not (tmp_path / "data").exists()
    assert cap.out == ""


def test_non_gzip_and_bad_json_files_are_one_line(goat_split, tmp_path, capsys):
    split_dir, scene_root = goat_split
    content = os.path.join(split_dir, "content", f"{SID}.json.gz")
    with open(content, "w") as f:
        f.write('{"episodes": []}')  # plain JSON, not gzip
    code, cap = run(capsys, split_dir, scene_root, tmp_path / "o1")
    assert code == 2 and "not a gzip file" in cap.err and f"{SID}.json.gz" in cap.err
    with gzip.open(content, "wt") as f:
        f.write('{"episodes": [')
    code, cap = run(capsys, split_dir, scene_root, tmp_path / "o2")
    assert code == 2 and "not valid JSON" in cap.err and len(cap.err.strip().splitlines()) == 1
    write_gz_json(content, {"episodes": [{"scene_id": 3}], "goals": {}})
    code, cap = run(capsys, split_dir, scene_root, tmp_path / "o3")
    assert code == 2 and "episode #0: field 'scene_id': expected a string" in cap.err
    assert not any(p.name.startswith(("o1", "o2", "o3", ".o")) for p in tmp_path.iterdir())


def test_a_fifo_or_a_gzip_bomb_is_one_line_in_bounded_time(
    goat_split, tmp_path, capsys, monkeypatch
):
    """A GOAT file is read as every dataset file is (a regular file of bounded size: a FIFO
    never hangs the import) and its decompressed size is bounded too (a gzip bomb stops at
    the bound, here lowered to 1 MB: 2 MB of zeros compress to about 2 kB)."""
    import signal

    from habitat_mosnav.dataset_building import goat

    split_dir, scene_root = goat_split
    content = os.path.join(split_dir, "content", f"{SID}.json.gz")
    os.remove(content)
    os.mkfifo(content)
    signal.alarm(20)  # a hang fails the test instead of blocking it
    try:
        code, cap = run(capsys, split_dir, scene_root, tmp_path / "o1")
    finally:
        signal.alarm(0)
    assert code == 2 and f"{SID}.json.gz: a FIFO, not a regular file" in cap.err
    assert len(cap.err.strip().splitlines()) == 1
    os.remove(content)
    with gzip.open(content, "wb") as f:
        f.write(b'{"episodes": [], "pad": "' + b"0" * (2 << 20) + b'"}')
    assert os.path.getsize(content) < 64 << 10
    monkeypatch.setattr(goat, "MAX_GOAT_JSON_BYTES", 1 << 20)
    code, cap = run(capsys, split_dir, scene_root, tmp_path / "o2")
    assert (
        code == 2 and f"{SID}.json.gz: more than the 1048576 bytes it may decompress to" in cap.err
    )
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_the_import_checks_the_schemas_limits():
    # one home: the import reads the dataset schema's limits, it keeps no copy of them
    from habitat_mosnav import schemas

    assert (goat_mod.MAX_COORDINATE, goat_mod.HFOV_RANGE) == (1e6, (5.0, 150.0))
    assert goat_mod.MAX_IMAGE_SIDE is schemas.MAX_IMAGE_SIDE == 2048
    assert goat_mod.MIN_IMAGE_SIDE is schemas.MIN_IMAGE_SIDE == 16


# ----------------------------------------------------------------------------- loading
def test_non_sequential_episodes_load_through_the_dataset(imported, goat_split, tmp_path):
    from habitat_mosnav.config.default_structured_configs import MultiObjectNavDatasetConfig
    from habitat_mosnav.datasets import MultiObjectNavDatasetV1

    out, _ = imported
    data = tmp_path / "no_sequential"
    shutil.copytree(str(out), str(data))
    for sid in ("Abcdefghijk", SID):
        path = data / sid / "episodes.json"
        doc = json.loads(path.read_text())
        doc["episodes"] = [e for e in doc["episodes"] if e["target_mode"] != "sequential"]
        path.write_text(json.dumps(doc))
        goals, queries, eps = schema.load_scene_dir(str(data / sid))
        assert eps and all(q["matched_object_ids"] for q in queries.values())
        # the build stages' own check and query executor read the instance queries too
        raw = read(data, sid, "queries.json")
        validate_queries(raw, set(goals), "queries.json")
        for q in raw:
            ids = execute(q["query_program"], goals.values())
            if not q["pure_category"]:  # instance queries select their one instance
                assert ids == q["matched_object_ids"]
            elif q["query_program"]["where"][0]["value"] == "chair":
                assert ids == [1, 2, 3]  # the program alone; matched adds the child stool 7
    scenes = goat_split[1]

    def load(goal_type, modes):
        cfg = MultiObjectNavDatasetConfig(
            data_path=str(data), scenes_dir=scenes, goal_type=goal_type, target_modes=modes
        )
        eps = MultiObjectNavDatasetV1(OmegaConf.structured(cfg)).episodes
        return {(e.scene_name, e.episode_id): e for e in eps}

    described = load("description", ["all", "many", "single"])
    assert len(described) == 9  # 6 + 3 per-task episodes of the two scenes
    assert described[SID, "goat0000-t01-single"].goal_text == "The green plant by the window."
    objects = load("object", ["all", "many", "single"])
    assert set(objects) == {k for k in described if not k[1].endswith("single")}
    assert objects[SID, "goat0000-t00-all"].goal_text == "chair"
    assert [g.object_id for g in objects[SID, "goat0000-t00-all"].goals] == [1, 2, 3, 7]
    images = load("image", ["single"])
    assert len(images) == 3  # the description and image tasks' single episodes
    cam = images[SID, "goat0000-t02-single"].image_goal
    assert (cam["width"], cam["height"], cam["hfov"]) == (384, 512, 70.5)


def test_installed_entry_point_imports(goat_split, tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "mosnav-build")
    if not os.path.isfile(exe):
        pytest.skip("mosnav-build is not installed beside this interpreter")
    out = tmp_path / "cli_out"
    proc = subprocess.run(
        [exe, "import-goat", "--goat", goat_split[0], "--scene-root", goat_split[1]]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"fingerprint: {dataset_fingerprint(str(out))}" in proc.stdout


# ----------------------------------------------------------------------------- settings
@pytest.mark.parametrize("split", ["val_seen", "val_seen_synonyms", "val_unseen"])
def test_goat_benchmark_settings_name_the_derivation_and_are_not_frozen(split):
    from habitat_mosnav.evaluation.settings import load_setting

    s = load_setting(f"goat-v1/{split}")
    assert s.split == split and not s.frozen and s.episode_count is None
    assert s.target_modes == ["sequential", "many", "all"]
    assert s.success_distance == 0.25 and s.max_steps == 5000  # goat_stretch_hm3d.yaml
    assert "import-goat" in s.description and s.config == "benchmark/nav/mosnav/goat_hm3d.yaml"
