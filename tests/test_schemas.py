"""The JSON Schemas of habitat_mosnav/schemas/ (issue 40): each is a valid Draft 2020-12
schema whose choices are the package's own, and a wrong-typed field of each file kind is one
line naming the file, the record and the field."""

import glob
import json
import os

import pytest
from jsonschema import Draft202012Validator

from habitat_mosnav import schemas
from habitat_mosnav.api import EPISODE_MODES, GOAL_TYPES
from habitat_mosnav.datasets.schema import (
    DatasetFormatError,
    parse_episodes,
    parse_goals,
    parse_queries,
)
from habitat_mosnav.evaluation.durable import ResultFileError
from habitat_mosnav.evaluation.records import check_record
from habitat_mosnav.evaluation.settings import SETTINGS_DIR, SettingError, load_setting

# py39: the wheel carries the schemas and the oldest jsonschema reads them
pytestmark = pytest.mark.py39

FILES = sorted(glob.glob(os.path.join(schemas.SCHEMA_DIR, "*.schema.json")))


def test_the_schemas_are_valid_json_schemas():
    assert [os.path.basename(f) for f in FILES] == [
        "dataset.schema.json",
        "record.schema.json",
        "setting.schema.json",
    ]
    for path in FILES:
        with open(path, encoding="utf-8") as f:
            Draft202012Validator.check_schema(json.load(f))


def test_the_schemas_choices_are_the_packages():
    defs = schemas.load("dataset")["$defs"]
    assert tuple(defs["episode"]["properties"]["target_mode"]["enum"]) == EPISODE_MODES
    assert tuple(defs["subtask"]["properties"]["goal_type"]["enum"]) == GOAL_TYPES
    setting = schemas.load("setting")["properties"]
    assert tuple(setting["target_modes"]["items"]["enum"]) == EPISODE_MODES
    assert tuple(setting["goal_type"]["enum"]) == GOAL_TYPES


def _write(tmp_path, name, key, records):
    path = tmp_path / "s" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"schema_version": 1, "scene_id": "s", key: records}))
    return str(path)


GOAL = {
    "object_id": 7,
    "category": "chair",
    "position": [0, 0, 0],
    "navigable_position": [0, 0, 1],
    "view_points": [{"position": [0, 0, 1], "rotation": [0, 0, 0, 1], "iou": 0.5}],
}
QUERY = {
    "query_id": "q0",
    "query_program": {"where": [{"field": "category", "op": "==", "value": "chair"}]},
    "matched_object_ids": [7],
    "instruction": "Find the chair.",
}
EPISODE = {
    "episode_id": "e0",
    "query_id": "q0",
    "target_mode": "many",
    "target_count": 1,
    "target_object_ids": [7],
    "start_position": [0, 0, 2],
    "start_rotation": [0, 0, 0, 1],
}


def _dataset(tmp_path, goal=GOAL, query=QUERY, episode=EPISODE):
    goals = _write(tmp_path, "goals.json", "goals", [goal])
    queries = _write(tmp_path, "queries.json", "queries", [query])
    episodes = _write(tmp_path, "episodes.json", "episodes", [episode])
    return goals, queries, episodes


def _load(tmp_path, **docs):
    goals, queries, episodes = _dataset(tmp_path, **docs)
    g, q = parse_goals(goals, "s"), parse_queries(queries, "s")
    return parse_episodes(episodes, "s", g, q)


@pytest.mark.parametrize(
    "docs, file, message",
    [
        (
            {"goal": dict(GOAL, view_points=[dict(GOAL["view_points"][0], iou="high")])},
            "goals.json",
            """goal 7 view_points[0]: field 'iou': expected a number, got "high\"""",
        ),
        (
            {"query": dict(QUERY, query_program={"where": [{"field": "category", "op": 7}]})},
            "queries.json",
            "query 'q0' query_program.where[0]: field 'op': expected a string, got 7",
        ),
        (
            {"episode": dict(EPISODE, target_count="1")},
            "episodes.json",
            """episode 'e0': field 'target_count': expected an integer, got "1\"""",
        ),
        (
            {"episode": dict(EPISODE, start_position=list(range(10**5)))},
            "episodes.json",
            "episode 'e0': field 'start_position': expected 3 finite numbers within ±1e+06, "
            "got " + json.dumps(list(range(10**5)))[:80],
        ),
    ],
)
def test_a_wrong_dataset_field_is_one_line_naming_file_record_and_field(
    tmp_path, docs, file, message
):
    with pytest.raises(DatasetFormatError) as info:
        _load(tmp_path, **docs)
    assert str(info.value) == f"{tmp_path / 's' / file}: {message}"


def test_a_valid_dataset_reads(tmp_path):
    (episode,) = _load(tmp_path)
    assert episode["start_position"] == [0.0, 0.0, 2.0] and episode["target_count"] == 1


def test_a_document_that_met_the_schema_once_is_not_walked_again_but_a_changed_one_is(
    tmp_path, monkeypatch
):
    from habitat_mosnav.datasets import schema

    walked = []
    first_error = schema.first_error
    monkeypatch.setattr(
        schema, "first_error", lambda doc, *a: walked.append(1) or first_error(doc, *a)
    )
    monkeypatch.setattr(schema, "_MET", set())
    _load(tmp_path)
    walks = len(walked)
    assert walks >= 3  # goals, queries, episodes (and parts checked on their own)
    _load(tmp_path)  # the same three documents again (another env, a replay)
    assert len(walked) == walks
    # one value changed in place: a new document, checked, and refused as the first time
    with pytest.raises(DatasetFormatError, match="field 'target_count': expected an integer"):
        _load(tmp_path, episode=dict(EPISODE, target_count="1"))
    assert len(walked) > walks


def test_a_wrong_setting_field_is_one_line_naming_file_and_field(tmp_path):
    with open(os.path.join(SETTINGS_DIR, "demo", "official.yaml")) as f:
        good = f.read()
    path = tmp_path / "bad.yaml"
    path.write_text(good.replace("space_coverage_samples: 200", "space_coverage_samples: many"))
    with pytest.raises(SettingError) as info:
        load_setting(str(path))
    assert str(info.value) == (
        f"{path}: field 'space_coverage_samples': expected an integer, got \"many\""
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"episode": "x"}, """field 'episode': expected an object, got "x\""""),
        ({"steps_taken": "3"}, """field 'steps_taken': expected an integer, got "3\""""),
        (
            {"metrics": {"spl": 10**400}},
            "field 'metrics.spl': expected a number of magnitude <= 1e+15 or null, got "
            + str(10**400)[:60],
        ),
        ({"status": None}, "field 'status': expected one of ok, error, got null"),
    ],
)
def test_a_wrong_record_field_is_one_line_naming_file_line_and_field(change, message):
    record = dict({"episode_key": "val::s::e0", "status": "ok", "steps_taken": 3}, **change)
    with pytest.raises(ResultFileError) as info:
        check_record(record, "rank_00000/episodes.jsonl", 4)
    assert str(info.value) == f"rank_00000/episodes.jsonl:4: {message}"
