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


def make(root, docs=None, **kw):
    data, scenes = write_dataset(root, docs)
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes,
                                                           **kw))
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
    ("unknown target_mode",
     lambda d: _episode(d).update(target_mode="some"),
     r"episodes\.json: episode 'q0-many-0': field 'target_mode': unknown mode 'some'"),
    ("target absent from goals",
     lambda d: _episode(d).update(target_object_ids=[101, 999]),
     r"episode 'q0-many-0': field 'target_object_ids': object 999 is not in goals\.json"),
    ("target_count too large",
     lambda d: _episode(d).update(target_count=4),
     r"episode 'q0-many-0': field 'target_count': 4 is out of range 1\.\.3"),
    ("target_count zero",
     lambda d: _episode(d).update(target_count=0),
     r"field 'target_count': 0 is out of range"),
    ("many without target_count",
     lambda d: _episode(d).pop("target_count"),
     r"episode 'q0-many-0': field 'target_count': missing"),
    ("missing start_position",
     lambda d: _episode(d).pop("start_position"),
     r"episode 'q0-many-0': field 'start_position': missing"),
    ("mistyped start_rotation",
     lambda d: _episode(d).update(start_rotation=[0, 0, 1]),
     r"field 'start_rotation': expected 4 finite numbers"),
    ("mistyped episode_id",
     lambda d: _episode(d).update(episode_id=7),
     r"episode #0: field 'episode_id': expected a string, got 7"),
    ("unknown query",
     lambda d: _episode(d).update(query_id="q9"),
     r"field 'query_id': 'q9' is not in queries\.json"),
    ("goal without navigable_position",
     lambda d: d["goals.json"]["goals"][1].pop("navigable_position"),
     r"goals\.json: goal 102: field 'navigable_position': missing"),
    ("goal with string object_id",
     lambda d: d["goals.json"]["goals"][1].update(object_id="102"),
     r"goals\.json: goal #1: field 'object_id': expected an integer"),
    ("bad view point",
     lambda d: d["goals.json"]["goals"][0]["view_points"].append({"position": [0, 0]}),
     r"goal 101 view_points\[0\]: field 'position': expected 3 finite numbers"),
    ("scene id mismatch",
     lambda d: d["queries.json"].update(scene_id="other"),
     r"queries\.json: field 'scene_id': 'other' does not match"),
    ("wrong schema version",
     lambda d: d["goals.json"].update(schema_version=2),
     r"goals\.json: field 'schema_version': unsupported version 2"),
    ("duplicate episode id",
     lambda d: _episode(d, 1).update(episode_id="q0-many-0"),
     r"episode 'q0-many-0': field 'episode_id': duplicate"),
    ("query matching unknown object",
     lambda d: d["queries.json"]["queries"][0]["matched_object_ids"].append(555),
     r"query 'q0': field 'matched_object_ids': object 555"),
    ("single with two targets",
     lambda d: _episode(d, 3).update(target_object_ids=[201, 101]),
     r"episode 'q2-single-0': field 'target_object_ids': target_mode 'single' needs"),
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
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(
        data_path=str(tmp_path / "nope"), scenes_dir=str(tmp_path)))
    with pytest.raises(DatasetFormatError, match="dataset directory not found"):
        MultiObjectNavDatasetV1(cfg)


def test_missing_scene_file(tmp_path):
    data, scenes = write_dataset(tmp_path)
    os.remove(os.path.join(scenes, f"00000-{SCENE}", f"{SCENE}.glb"))
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes))
    with pytest.raises(DatasetFormatError, match=f"scene '{SCENE}' not found"):
        MultiObjectNavDatasetV1(cfg)


def test_split_substitution_and_basis_glb(tmp_path):
    data, scenes = write_dataset(tmp_path / "val")
    os.rename(os.path.join(scenes, f"00000-{SCENE}", f"{SCENE}.glb"),
              os.path.join(scenes, f"00000-{SCENE}", f"{SCENE}.basis.glb"))
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(
        data_path=str(tmp_path / "{split}" / "dataset_semantic"),
        scenes_dir=str(tmp_path / "{split}" / "scenes"), split="val"))
    ds = MultiObjectNavDatasetV1(cfg)
    assert ds.episodes[0].scene_id.endswith(f"{SCENE}.basis.glb")
    assert MultiObjectNavDatasetV1.scene_from_scene_path(ds.episodes[0].scene_id) == SCENE


def test_categories_file_overrides(tmp_path):
    data, scenes = write_dataset(tmp_path)
    with open(os.path.join(data, "categories.json"), "w") as f:
        json.dump(["table", "sofa", "chair"], f)
    cfg = OmegaConf.structured(MultiObjectNavDatasetConfig(data_path=data, scenes_dir=scenes))
    ds = MultiObjectNavDatasetV1(cfg)
    assert ds.category_index("chair") == 2
