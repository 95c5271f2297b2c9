"""MultiObjectNav-v1 dataset: loading, object-mode filtering and every validation error."""

import json
import os

import pytest
from omegaconf import OmegaConf

import habitat_mosnav  # noqa: F401  (registers; must precede habitat)
from habitat.core.registry import registry
from habitat_mosnav.config.default_structured_configs import MultiObjectNavDatasetConfig
from habitat_mosnav.datasets import DatasetFormatError, MultiObjectNavDatasetV1

from mosnav_fixtures import SCENE, base_documents, write_dataset


# py39: habitat-lab v0.3.3's dataset API
pytestmark = pytest.mark.py39


def make(root, docs=None, **kw):
    data, scenes = write_dataset(root, docs)
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes, **kw))
    return MultiObjectNavDatasetV1(cfg)


def test_registered_name():
    assert registry.get_dataset("MultiObjectNav-v1") is MultiObjectNavDatasetV1


def test_loads_description_episodes(tmp_path):
    ds = make(tmp_path)
    by_id = {e.episode_id: e for e in ds.episodes}
    assert sorted(by_id) == ["q0-all-0", "q0-many-0", "q1-any-0", "q2-single-0"]
    many = by_id["q0-many-0"]
    assert many.goal_text == "Find the chairs."
    assert many.target_count == 2 and many.required_target_count == 2
    assert [g.object_id for g in many.goals] == [101, 102, 103]
    assert many.goals[0].navigable_position == [1.0, 0.0, 0.0]
    assert many.scene_name == SCENE
    assert many.scene_id.endswith(f"00000-{SCENE}/{SCENE}.glb") and os.path.isabs(many.scene_id)
    assert many.episode_key == f"val::{SCENE}::q0-many-0"
    assert by_id["q0-all-0"].target_count is None
    assert by_id["q0-all-0"].required_target_count == 3
    # Categories are dataset-wide and sorted; a colour query keeps its category condition.
    assert ds.categories == ["chair", "table"]
    assert by_id["q1-any-0"].object_category == "chair"
    assert MultiObjectNavDatasetV1.scene_from_scene_path(many.scene_id) == SCENE


def test_object_mode_keeps_pure_category_queries_only(tmp_path):
    ds = make(tmp_path, goal_type="object")
    ids = sorted(e.episode_id for e in ds.episodes)
    # q1 (chair AND brown) is description-only.
    assert ids == ["q0-all-0", "q0-many-0", "q2-single-0"]
    assert {e.goal_text for e in ds.episodes} == {"chair", "table"}


def test_object_mode_says_when_it_runs_fewer_episodes(tmp_path, monkeypatch):
    """A run of goal type ``object`` beside ``description`` ran 6 episodes against 12 and
    nothing said so: the dataset counts what it leaves out and says it when it loads."""
    from habitat_mosnav.datasets import multi_object_nav_dataset as mod

    said = []
    monkeypatch.setattr(mod.logger, "warning", lambda msg, *a: said.append(msg % a if a else msg))
    ds = make(tmp_path, goal_type="object")
    assert ds.left_out_for_goal_type == 1  # q1-any-0 (chair AND brown)
    assert said == [
        "goal type object: 3 of the split's 4 episodes (1 left out: a description-only query "
        "has no category name to give as an object goal, SPEC §1)"
    ]
    said.clear()
    assert make(tmp_path / "d", goal_type="description").left_out_for_goal_type == 0
    assert said == []


def test_object_mode_drops_category_absent_from_scene(tmp_path):
    docs = base_documents()
    docs["queries.json"]["queries"][2]["query_program"]["where"][0]["value"] = "sofa"
    ds = make(tmp_path, docs, goal_type="object")
    assert "q2-single-0" not in {e.episode_id for e in ds.episodes}


def test_target_mode_filter(tmp_path):
    ds = make(tmp_path, target_modes=["many", "all"])
    assert sorted(e.target_mode for e in ds.episodes) == ["all", "many"]


def test_content_scenes_unknown_is_an_error(tmp_path):
    with pytest.raises(DatasetFormatError, match="content_scenes"):
        make(tmp_path, content_scenes=["nope"])


def _episode(docs, i=0):
    return docs["episodes.json"]["episodes"][i]


BAD = [
    (
        "unknown target_mode",
        lambda d: _episode(d).update(target_mode="some"),
        r"episodes\.json: episode 'q0-many-0': field 'target_mode': unknown mode 'some'",
    ),
    (
        "target absent from goals",
        lambda d: _episode(d).update(target_object_ids=[101, 999]),
        r"episode 'q0-many-0': field 'target_object_ids': object 999 is not in goals\.json",
    ),
    (
        "target_count too large",
        lambda d: _episode(d).update(target_count=4),
        r"episode 'q0-many-0': field 'target_count': 4 is out of range 1\.\.3",
    ),
    (
        "target_count zero",
        lambda d: _episode(d).update(target_count=0),
        r"field 'target_count': 0 is out of range",
    ),
    (
        "many without target_count",
        lambda d: _episode(d).pop("target_count"),
        r"episode 'q0-many-0': field 'target_count': missing",
    ),
    (
        "missing start_position",
        lambda d: _episode(d).pop("start_position"),
        r"episode 'q0-many-0': field 'start_position': missing",
    ),
    (
        "mistyped start_rotation",
        lambda d: _episode(d).update(start_rotation=[0, 0, 1]),
        r"field 'start_rotation': expected 4 finite numbers",
    ),
    (
        "mistyped episode_id",
        lambda d: _episode(d).update(episode_id=7),
        r"episode #0: field 'episode_id': expected a string, got 7",
    ),
    (
        "unknown query",
        lambda d: _episode(d).update(query_id="q9"),
        r"field 'query_id': 'q9' is not in queries\.json",
    ),
    (
        "goal without navigable_position",
        lambda d: d["goals.json"]["goals"][1].pop("navigable_position"),
        r"goals\.json: goal 102: field 'navigable_position': missing",
    ),
    (
        "goal with string object_id",
        lambda d: d["goals.json"]["goals"][1].update(object_id="102"),
        r"goals\.json: goal #1: field 'object_id': expected an integer",
    ),
    (
        "bad view point",
        lambda d: d["goals.json"]["goals"][0]["view_points"].append({"position": [0, 0]}),
        r"goal 101 view_points\[0\]: field 'position': expected 3 finite numbers",
    ),
    (
        "scene id mismatch",
        lambda d: d["queries.json"].update(scene_id="other"),
        r"queries\.json: field 'scene_id': 'other' does not match",
    ),
    (
        "wrong schema version",
        lambda d: d["goals.json"].update(schema_version=2),
        r"goals\.json: field 'schema_version': unsupported version 2",
    ),
    (
        "duplicate episode id",
        lambda d: _episode(d, 1).update(episode_id="q0-many-0"),
        r"episode 'q0-many-0': field 'episode_id': duplicate",
    ),
    (
        "query matching unknown object",
        lambda d: d["queries.json"]["queries"][0]["matched_object_ids"].append(555),
        r"query 'q0': field 'matched_object_ids': object 555",
    ),
    (
        "single with two targets",
        lambda d: _episode(d, 3).update(target_object_ids=[201, 101]),
        r"episode 'q2-single-0': field 'target_object_ids': target_mode 'single' needs",
    ),
]


@pytest.mark.parametrize("name,mutate,pattern", BAD, ids=[b[0] for b in BAD])
def test_validation_errors_name_file_record_field(tmp_path, name, mutate, pattern):
    docs = base_documents()
    mutate(docs)
    with pytest.raises(DatasetFormatError, match=pattern) as info:
        make(tmp_path, docs)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    docs = base_documents()
    del docs["queries.json"]
    data, scenes = write_dataset(tmp_path, docs)
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes))
    with pytest.raises(DatasetFormatError, match=r"queries\.json: file not found"):
        MultiObjectNavDatasetV1(cfg)


def test_malformed_json(tmp_path):
    docs = base_documents()
    docs["episodes.json"] = '{"schema_version": 1, "episodes": ['
    with pytest.raises(DatasetFormatError, match=r"episodes\.json: not valid JSON \(line 1"):
        make(tmp_path, docs)


def test_missing_dataset_dir(tmp_path):
    cfg = OmegaConf.structured(
        MultiObjectNavDatasetConfig(data_path=str(tmp_path / "nope"), scenes_dir=str(tmp_path))
    )
    with pytest.raises(DatasetFormatError, match="dataset directory not found"):
        MultiObjectNavDatasetV1(cfg)


def test_missing_scene_file(tmp_path):
    """Only the scenes a selection uses must be on disk: content_scenes naming a missing
    scene fails at load; with all scenes, the missing one is recorded and the error comes
    when a selection uses it."""
    data, scenes = write_dataset(tmp_path)
    write_dataset(tmp_path, base_documents("otherScene2"), scene="otherScene2")
    os.remove(os.path.join(scenes, f"00000-{SCENE}", f"{SCENE}.glb"))
    cfg = OmegaConf.structured(
        MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes, content_scenes=[SCENE])
    )
    with pytest.raises(DatasetFormatError, match=f"scene '{SCENE}' not found"):
        MultiObjectNavDatasetV1(cfg)
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes))
    ds = MultiObjectNavDatasetV1(cfg)
    assert sorted({e.scene_name for e in ds.episodes}) == ["otherScene2", SCENE]
    assert list(ds.missing_scene_files) == [SCENE]
    ds.check_scene_files(["otherScene2"])  # present: fine
    with pytest.raises(DatasetFormatError, match=f"scene '{SCENE}' not found"):
        ds.check_scene_files([SCENE, "otherScene2"])
    ok = MultiObjectNavDatasetV1(
        OmegaConf.structured(
            MultiObjectNavDatasetConfig(
                data_path=data, scenes_dir=scenes, content_scenes=["otherScene2"]
            )
        )
    )
    assert ok.missing_scene_files == {} and {e.scene_name for e in ok.episodes} == {"otherScene2"}


def test_scene_dataset_config_goes_into_every_episode(tmp_path):
    """habitat.Env copies the first episode's scene_dataset_config over
    habitat.simulator.scene_dataset, so every episode carries the configured file."""
    data, scenes = write_dataset(tmp_path)
    assert {e.scene_dataset_config for e in make(tmp_path / "a").episodes} == {"default"}
    sdc = tmp_path / "hm3d_annotated_basis.scene_dataset_config.json"
    sdc.write_text("{}")
    cfg = OmegaConf.structured(
        MultiObjectNavDatasetConfig(
            data_path=data, scenes_dir=scenes, scene_dataset_config=str(sdc)
        )
    )
    ds = MultiObjectNavDatasetV1(cfg)
    assert ds.episodes and {e.scene_dataset_config for e in ds.episodes} == {str(sdc)}
    cfg.scene_dataset_config = str(tmp_path / "nope.json")
    with pytest.raises(
        DatasetFormatError,
        match=r"nope\.json: scene dataset config not found "
        r"\(habitat\.dataset\.scene_dataset_config, mosnav-eval --scene-dataset-config",
    ):
        MultiObjectNavDatasetV1(cfg)
    # a generated scenes root carries its own (habitat_sim_assets): "default" picks it up
    from habitat_mosnav.sims.habitat_sim_assets import DATASET_CONFIG

    own = os.path.join(scenes, DATASET_CONFIG)
    with open(own, "w") as fh:
        fh.write("{}")
    cfg.scene_dataset_config = "default"
    assert {e.scene_dataset_config for e in MultiObjectNavDatasetV1(cfg).episodes} == {
        os.path.abspath(own)
    }


def test_hm3d_configs_set_the_scene_dataset_config():
    from habitat_mosnav.config.default import get_config

    for name in ("single_hm3d", "mos_hm3d", "moc_hm3d", "any_hm3d"):
        # HM3D's layout: the annotated config beside the split folders, moving with scenes_dir
        cfg = get_config(
            f"benchmark/nav/mosnav/{name}.yaml", ["habitat.dataset.scenes_dir='/data/hm3d/{split}'"]
        )
        value = cfg.habitat.dataset.scene_dataset_config.replace("{split}", "val")
        assert (
            os.path.normpath(value) == "/data/hm3d/hm3d_annotated_basis.scene_dataset_config.json"
        ), name
    assert (
        get_config("benchmark/nav/mosnav/mos_demo.yaml").habitat.dataset.scene_dataset_config
        == "default"
    )


def test_split_substitution_and_basis_glb(tmp_path):
    data, scenes = write_dataset(tmp_path / "val")
    os.rename(
        os.path.join(scenes, f"00000-{SCENE}", f"{SCENE}.glb"),
        os.path.join(scenes, f"00000-{SCENE}", f"{SCENE}.basis.glb"),
    )
    cfg = OmegaConf.structured(
        MultiObjectNavDatasetConfig(
            data_path=str(tmp_path / "{split}" / "dataset_semantic"),
            scenes_dir=str(tmp_path / "{split}" / "scenes"),
            split="val",
        )
    )
    ds = MultiObjectNavDatasetV1(cfg)
    assert ds.episodes[0].scene_id.endswith(f"{SCENE}.basis.glb")
    assert MultiObjectNavDatasetV1.scene_from_scene_path(ds.episodes[0].scene_id) == SCENE


def test_one_categories_file_for_every_split(tmp_path):
    """categories.json at the dataset root (above {split}) gives train and val the same
    objectgoal ids and sensor range, whatever categories each split has; a goal category
    missing from it is a one-line error naming goals.json, the goal and the field."""
    from habitat_mosnav.sensors.sensors import MosNavObjectGoalSensor

    train_docs = base_documents()
    val_docs = base_documents()
    for g in val_docs["goals.json"]["goals"]:
        if g["category"] == "table":
            g["category"] = "sofa"
    write_dataset(tmp_path / "train", train_docs)
    write_dataset(tmp_path / "val", val_docs)
    with open(tmp_path / "categories.json", "w") as f:
        json.dump(["table", "sofa", "chair"], f)
    got = {}
    for split in ("train", "val"):
        cfg = OmegaConf.structured(
            MultiObjectNavDatasetConfig(
                data_path=str(tmp_path / "{split}" / "dataset_semantic"),
                scenes_dir=str(tmp_path / "{split}" / "scenes"),
                split=split,
            )
        )
        ds = MultiObjectNavDatasetV1(cfg)
        sensor = MosNavObjectGoalSensor(
            sim=None, config=OmegaConf.create({"type": "x"}), dataset=ds
        )
        got[split] = (
            ds.categories,
            ds.category_index("chair"),
            float(sensor.observation_space.high[0]),
        )
    assert got["train"] == got["val"] == (["table", "sofa", "chair"], 2, 2.0)
    # data_path given without {split} (mosnav-eval --dataset-dir <root>/val/dataset_semantic)
    direct = MultiObjectNavDatasetV1(
        OmegaConf.structured(
            MultiObjectNavDatasetConfig(
                data_path=str(tmp_path / "val" / "dataset_semantic"),
                scenes_dir=str(tmp_path / "val" / "scenes"),
            )
        )
    )
    assert direct.categories == ["table", "sofa", "chair"]
    with open(tmp_path / "categories.json", "w") as f:
        json.dump(["table", "chair"], f)
    cfg = OmegaConf.structured(
        MultiObjectNavDatasetConfig(
            data_path=str(tmp_path / "{split}" / "dataset_semantic"),
            scenes_dir=str(tmp_path / "{split}" / "scenes"),
            split="val",
        )
    )
    with pytest.raises(
        DatasetFormatError, match=r"goals\.json: goal 201: field 'category': 'sofa' is not in"
    ):
        MultiObjectNavDatasetV1(cfg)
    with open(tmp_path / "categories.json", "w") as f:
        json.dump(["table", "table"], f)
    with pytest.raises(
        DatasetFormatError, match=r"categories\.json: entry \[1\]: duplicate category 'table'"
    ):
        MultiObjectNavDatasetV1(cfg)


def test_categories_file_overrides(tmp_path):
    data, scenes = write_dataset(tmp_path)
    with open(os.path.join(data, "categories.json"), "w") as f:
        json.dump(["table", "sofa", "chair"], f)
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes))
    ds = MultiObjectNavDatasetV1(cfg)
    assert ds.category_index("chair") == 2


def test_demo_dataset_ships_its_categories_file():
    """The bundled demo has a categories.json with the ids it always had (sorted union)."""
    from habitat_mosnav.datasets.schema import parse_categories, parse_goals

    root = os.path.join(
        os.path.dirname(habitat_mosnav.__file__), "data", "demo", "dataset_semantic"
    )
    cats = parse_categories(os.path.join(root, "categories.json"))
    used = set()
    for sid in sorted(os.listdir(root)):
        if os.path.isdir(os.path.join(root, sid)):
            used |= {
                g["category"]
                for g in parse_goals(os.path.join(root, sid, "goals.json"), sid).values()
            }
    assert cats == sorted(used)
