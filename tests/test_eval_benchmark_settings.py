"""Versioned benchmark settings (evaluation/settings.py, ``mosnav-eval --benchmark``):
the files, the table in docs/EVALUATION.md, the fingerprint check, flags that contradict a setting, and
the official/complete marks in records and summary.json."""

import hashlib
import json
import math
import os
import shutil

import pytest

from conftest import NO_IMAGES, ONE_SHORT_EPISODE, read_records, read_summary
from habitat_mosnav.datasets.fingerprint import dataset_file_digests
from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.summary import benchmark_summary
from habitat_mosnav.evaluation.settings import (
    MINI_RULE,
    SETTINGS_DIR,
    SettingError,
    list_settings,
    load_setting,
    select_mini_keys,
    settings_table,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_DATA = os.path.join(REPO, "habitat_mosnav", "data", "demo", "dataset_semantic")
FAST = ["--agent", "habitat_mosnav.agents.oracle:OracleAgent", "--no-progress", *NO_IMAGES]


def one_error_line(capsys):
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if "nitializing" not in ln]
    assert len(err) == 1 and err[0].startswith("mosnav-eval: error: "), err
    return err[0]


# ----------------------------------------------------------------------------- files


def test_package_settings_load_and_demo_ones_match_the_committed_demo_data():
    names = list_settings()
    assert {
        "demo/smoke",
        "demo/mini",
        "demo/official",
        "mosnav-v1/val/smoke",
        "mosnav-v1/val/mini",
        "mosnav-v1/val/official",
    } <= set(names)
    actual = dataset_file_digests(DEMO_DATA)
    for name in ("demo/smoke", "demo/mini", "demo/official", "demo/image"):
        s = load_setting(name)
        assert s.name == name and s.frozen
        assert s.dataset_files == actual, (
            f"{s.path} is stale: the demo data changed; re-freeze with "
            f"`python -m habitat_mosnav.evaluation.settings freeze {name}`"
        )
    assert load_setting("demo/smoke").max_steps == 5
    assert load_setting("demo/image").goal_type == "image"
    assert load_setting("demo/official").episode_keys is None
    mini = load_setting("demo/mini")
    assert mini.episode_keys and len(mini.episode_keys) == mini.episode_count


def test_docs_settings_table_is_generated_from_the_files():
    with open(os.path.join(REPO, "docs", "EVALUATION.md")) as f:
        readme = f.read()
    start, end = "<!-- settings-table:start -->", "<!-- settings-table:end -->"
    assert start in readme and end in readme
    table = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert table == settings_table(), (
        "regenerate with `python -m habitat_mosnav.evaluation.settings table`"
    )
    official = load_setting("demo/official")
    assert (
        f"| `demo/official` | val | official | many,all | description | {official.episode_count} | 500 |"
        in table
    )


def test_mini_rule_by_hand():
    # sha256 order of the keys decides; ceil(0.25 * 5) = 2 of mode a, ceil(0.25 * 1) = 1 of b
    keys_a = [f"val::s::a{i}" for i in range(5)]
    by_hash = sorted(keys_a, key=lambda k: hashlib.sha256(k.encode()).hexdigest())
    chosen = select_mini_keys({"a": list(reversed(keys_a)), "b": ["val::s::b0"]}, 0.25)
    assert chosen == sorted(by_hash[:2] + ["val::s::b0"])
    assert math.ceil(0.25 * 5) == 2 and "sha256" in MINI_RULE


def _write_setting(tmp_path, text):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    return str(path)


GOOD = open(os.path.join(SETTINGS_DIR, "demo", "official.yaml")).read()


@pytest.mark.parametrize(
    "change, field",
    [
        (("kind: official", "kind: final"), "kind"),
        (("goal_type: description", "goal_type: picture"), "goal_type"),
        (("max_steps: 500", "max_steps: 0"), "max_steps"),
        (("max_steps: 500", "max_steps: many"), "max_steps"),
        (("selection: all", "selection: some"), "episodes.selection"),
        (("name: demo/official", "nmae: demo/official"), "nmae"),
        (("fingerprint: sha256:", "fingerprint: sha256:00"), "dataset.fingerprint"),
    ],
)
def test_malformed_settings_name_file_and_field(tmp_path, change, field):
    old, new = change
    assert old in GOOD
    path = _write_setting(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(SettingError) as info:
        load_setting(path)
    msg = str(info.value)
    assert path in msg and f"'{field}'" in msg and "\n" not in msg


def test_unknown_setting_lists_the_known_ones():
    with pytest.raises(
        SettingError, match=r"unknown benchmark setting 'demo/offical' \(known: .*demo/official"
    ):
        load_setting("demo/offical")


def test_benchmark_summary_rules():
    tag = {
        "name": "demo/official",
        "version": 1,
        "kind": "official",
        "dataset_fingerprint": "x",
        "deviations": [],
    }
    ok = benchmark_summary([{"benchmark": tag}, {"benchmark": tag}], "complete")
    assert ok["official"] is True and ok["not_official_because"] == []
    partial = benchmark_summary(
        [{"benchmark": dict(tag, deviations=["max_steps 10 instead of 500"])}], "complete"
    )
    assert partial["official"] is False and partial["deviations"] == ["max_steps 10 instead of 500"]
    assert benchmark_summary([{"benchmark": tag}], "incomplete")["not_official_because"] == [
        "summary status incomplete"
    ]
    mixed = benchmark_summary([{"benchmark": tag}, {"benchmark": dict(tag, version=2)}], "complete")
    assert "records of different settings in one run" in mixed["not_official_because"]
    assert benchmark_summary([{}], "complete") is None
    smoke = benchmark_summary([{"benchmark": dict(tag, kind="smoke")}], "complete")
    assert smoke["not_official_because"] == ["a smoke setting is never reported"]


# ----------------------------------------------------------------------------- runs


def test_mini_run_is_official_and_complete_and_tags_every_record(tmp_path, capsys):
    out = str(tmp_path / "mini")
    assert main(["--benchmark", "demo/mini", "--output-dir", out, *FAST]) == 0
    summary = read_summary(out)
    mini = load_setting("demo/mini")
    assert summary["status"] == "complete" and summary["unique_record_count"] == mini.episode_count
    assert summary["benchmark"]["official"] is True, summary["benchmark"]
    assert summary["benchmark"]["name"] == "demo/mini"
    records = read_records(out)
    assert sorted(r["episode_key"] for r in records) == sorted(mini.episode_keys)
    assert all(
        r["benchmark"]["name"] == "demo/mini" and r["benchmark"]["version"] == 1 for r in records
    )
    assert all(r["episode"]["max_steps"] == 500 for r in records)
    assert "benchmark demo/mini v1: official complete run" in capsys.readouterr().out


def test_partial_runs_are_marked_not_official(tmp_path):
    out = str(tmp_path / "part")
    assert (
        main(
            [
                "--benchmark",
                "demo/mini",
                *ONE_SHORT_EPISODE,
                "--output-dir",
                out,
                *FAST,
            ]
        )
        == 0
    )
    bench = read_summary(out)["benchmark"]
    assert bench["official"] is False
    assert "max_steps 3 instead of 500" in bench["deviations"]
    assert "num_episodes 1 (a part of the selection)" in bench["deviations"]


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--target-modes", "single"], "--target-modes"),
        (["--split", "train"], "--split"),
        (
            ["--offset", "2"],
            "--offset",
        ),  # (abbreviations such as --offs are refused: allow_abbrev=False)
        (["--config", "benchmark/nav/mosnav/moc_demo.yaml"], "--config"),
        (["--space-coverage-samples", "50"], "--space-coverage-samples"),
        (["--space-coverage-radius", "1.5"], "--space-coverage-radius"),
    ],
)
def test_flags_that_contradict_the_setting_are_refused(tmp_path, capsys, flags, named):
    assert (
        main(["--benchmark", "demo/official", "--output-dir", str(tmp_path / "x"), *flags, *FAST])
        == 2
    )
    line = one_error_line(capsys)
    assert f"{named} contradicts --benchmark demo/official" in line
    assert not os.path.exists(tmp_path / "x" / "rank_00000" / "episodes.jsonl")


def test_config_override_of_a_fixed_key_is_refused(tmp_path, capsys):
    rc = main(
        [
            "--benchmark",
            "demo/official",
            "--output-dir",
            str(tmp_path / "x"),
            "--set",
            "habitat.task.mosnav_success_distance=1.0",
            *FAST,
        ]
    )
    assert rc == 2
    line = one_error_line(capsys)
    assert "habitat.task.mosnav_success_distance is 1.0 but the setting fixes 0.25" in line


def _changed_demo(tmp_path):
    data = tmp_path / "dataset_semantic"
    shutil.copytree(DEMO_DATA, data)
    path = data / "Cukxndkh48K" / "episodes.json"
    doc = json.loads(path.read_text())
    doc["episodes"] = doc["episodes"][:-1]
    path.write_text(json.dumps(doc))
    return str(data), str(path)


def test_changed_dataset_is_refused_for_official_and_warned_for_smoke(tmp_path, capsys):
    data, changed = _changed_demo(tmp_path)
    rc = main(
        [
            "--benchmark",
            "demo/official",
            "--dataset-dir",
            data,
            "--output-dir",
            str(tmp_path / "off"),
            *FAST,
        ]
    )
    assert rc == 2
    line = one_error_line(capsys)
    assert "the dataset differs from the setting" in line and f"{changed} differs" in line

    out = str(tmp_path / "smoke")
    assert (
        main(
            [
                "--benchmark",
                "demo/smoke",
                "--dataset-dir",
                data,
                "--num-episodes",
                "1",
                "--output-dir",
                out,
                *FAST,
            ]
        )
        == 0
    )
    assert f"{changed} differs" in capsys.readouterr().err
    bench = read_summary(out)["benchmark"]
    assert "dataset differs from the setting's fingerprint" in bench["deviations"]


def test_python_api_takes_the_setting_without_a_habitat_config(tmp_path):
    from habitat_mosnav.agents.oracle import OracleAgent
    from habitat_mosnav.evaluation import EvaluationConfig, Evaluator

    out = str(tmp_path / "api")
    summary = Evaluator(
        OracleAgent(),
        None,
        EvaluationConfig(output_dir=out, benchmark="demo/mini", num_episodes=1, progress=False),
    ).run()
    assert summary["unique_record_count"] == 1
    assert summary["benchmark"]["name"] == "demo/mini" and summary["benchmark"]["official"] is False


@pytest.mark.slow
def test_official_demo_run_is_official_and_complete(tmp_path):
    """The issue's acceptance command: ``mosnav-eval --benchmark demo/official``."""
    out = str(tmp_path / "official")
    assert main(["--benchmark", "demo/official", "--output-dir", out, *FAST]) == 0
    summary = read_summary(out)
    assert summary["status"] == "complete"
    assert summary["unique_record_count"] == load_setting("demo/official").episode_count == 12
    assert summary["benchmark"]["official"] is True
