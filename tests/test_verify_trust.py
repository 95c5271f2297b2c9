"""``mosnav-replay --verify`` cannot be fooled (issue 39 items 1, 5, 7): the attacks of the
issue's "Why", each reproduced on a small run of the open room (CPU simulator, no images):
a success distance the run chose itself, edited ``episode`` blocks, a truncated last
record, a mark without its records digest, oversized number flags and record fields of
the wrong type."""

import json
import shutil

import pytest

from conftest import NO_IMAGES, read_summary, room_args

from habitat_mosnav.evaluation.cli import main as eval_main
from habitat_mosnav.evaluation.replay_cli import main as replay_main

HUGE = "1" + "0" * 30


def _run(room, out, *extra):
    args = ["--agent", "random", "--max-steps", "8", "--output-dir", str(out)]
    args += room_args(room, "--target-modes", "many,all", *NO_IMAGES, *extra)
    assert eval_main(args) == 0
    return out


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory, open_room):
    return _run(open_room, tmp_path_factory.mktemp("verify") / "honest")


def _verify(run, room, *extra):
    data, scenes = room
    return replay_main(
        [str(run), "--verify", "--no-progress", "--dataset-dir", data, "--scene-root", scenes]
        + list(extra)
    )


def _lines(run):
    return (run / "rank_00000" / "episodes.jsonl").read_text().splitlines()


def _edit_record(run, index, edit):
    path = run / "rank_00000" / "episodes.jsonl"
    lines = _lines(run)
    rec = json.loads(lines[index])
    edit(rec)
    lines[index] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    return rec


def _drop_override(run, needle):
    """The override removed from run.json and each rank's copy (as an attacker would)."""
    for path in [run / "run.json", *run.glob("rank_*/run.json")]:
        manifest = json.loads(path.read_text())
        manifest["config_overrides"] = [o for o in manifest["config_overrides"] if needle not in o]
        path.write_text(json.dumps(manifest))


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_an_honest_run_is_verified_with_the_settings_it_was_checked_under(
    honest_run, open_room, tmp_path
):
    run = _copy(honest_run, tmp_path / "run")
    assert _verify(run, open_room) == 0
    mark = read_summary(run)["verification"]
    assert mark["status"] == "verified" and mark["records_sha256"]
    # the demo config's motion settings (mos_demo.yaml as shipped), not the records'
    settings = mark["settings"]
    assert settings["forward_step_size"] == 0.25 and settings["turn_angle"] == 30
    assert settings["allow_sliding"] is True and settings["success_distance"] > 0
    assert settings["simulator"] == "MosNavMeshSim-v0"
    from habitat_mosnav.evaluation.report.cli import write_report

    write_report([str(run)], str(tmp_path / "report"), resamples=10, progress=False)
    board = (tmp_path / "report" / "leaderboard.md").read_text()
    assert "verified on MosNavMeshSim-v0" in board
    assert f"success distance {settings['success_distance']:g} m, sliding on" in board
    assert "step 0.25 m, turn 30°" in board


def test_mosnav_aggregate_keeps_the_verify_mark_and_an_edit_still_makes_it_stale(
    honest_run, open_room, tmp_path
):
    """mosnav-aggregate rewrote summary.json without the mark, so the report lost
    "verified" (issue 42): it keeps the mark as written, whose records digest still ties it
    to the records (an edit after aggregating shows it stale)."""
    from habitat_mosnav.evaluation.aggregate_cli import main as aggregate_main
    from habitat_mosnav.evaluation.report.cli import write_report

    run = _copy(honest_run, tmp_path / "run")
    assert _verify(run, open_room) == 0
    mark = read_summary(run)["verification"]
    assert aggregate_main([str(run)]) == 0
    assert read_summary(run)["verification"] == mark
    write_report([str(run)], str(tmp_path / "report"), resamples=10, progress=False)
    assert "(verified on MosNavMeshSim-v0" in (tmp_path / "report" / "leaderboard.md").read_text()
    _edit_record(run, 0, lambda rec: rec["metrics"].update(success=1.0))
    assert aggregate_main([str(run)]) == 0
    assert read_summary(run)["verification"] == mark
    write_report([str(run)], str(tmp_path / "report2"), resamples=10, progress=False)
    board = (tmp_path / "report2" / "leaderboard.md").read_text()
    assert "verification STALE" in board and "(verified on" not in board


def test_a_success_distance_chosen_by_the_run_is_never_verified(open_room, tmp_path, capsys):
    # The attack: scored with a 50 m success distance (every claim succeeds), the override
    # then removed from run.json; the records still carry it in replay.motion.
    run = _run(open_room, tmp_path / "inflated", "--set", "habitat.task.mosnav_success_distance=50")
    _drop_override(run, "mosnav_success_distance")
    capsys.readouterr()
    assert _verify(run, open_room) == 1
    out = capsys.readouterr().out
    assert "replay.motion.success_distance: recorded 50" in out
    mark = read_summary(run)["verification"]
    assert mark["status"] == "not_verified"
    assert any("replay.motion.success_distance" in d for d in mark["differences"])
    assert mark["settings"]["success_distance"] != 50


def test_edits_to_a_records_episode_block_are_mismatches_naming_the_field(
    honest_run, open_room, tmp_path, capsys
):
    run = _copy(honest_run, tmp_path / "edited")
    many = next(
        i
        for i, line in enumerate(_lines(run))
        if json.loads(line)["episode"]["target_mode"] == "many"
    )

    def edit(rec):
        rec["episode"]["target_mode"] = "single"
        rec["episode"]["goal_type"] = "image"
        rec["episode"]["scene_id"] = "another_scene"

    rec = _edit_record(run, many, edit)
    capsys.readouterr()
    assert _verify(run, open_room) == 1
    out = capsys.readouterr().out.splitlines()
    key = rec["episode_key"]
    for name in ("episode.target_mode", "episode.goal_type", "episode.scene_id"):
        assert any(line.startswith(f"{key}: {name}: recorded") for line in out), (name, out)
    assert read_summary(run)["verification"]["status"] == "not_verified"


def test_a_truncated_last_record_is_never_verified(honest_run, open_room, tmp_path, capsys):
    run = _copy(honest_run, tmp_path / "truncated")
    path = run / "rank_00000" / "episodes.jsonl"
    text = path.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    path.write_text(text[: len(text) - len(last) // 2 - 1])  # a partial last line, no newline
    capsys.readouterr()
    assert _verify(run, open_room) == 1
    out = capsys.readouterr().out
    assert "(run): episodes (missing" in out and "(run): records: recorded incomplete" in out
    assert read_summary(run)["verification"]["status"] == "not_verified"
    from habitat_mosnav.evaluation.report.cli import write_report

    write_report([str(run)], str(tmp_path / "report"), resamples=10, progress=False)
    board = (tmp_path / "report" / "leaderboard.md").read_text()
    assert "NOT verified" in board and "(verified on" not in board


def test_a_mark_without_its_records_digest_is_shown_not_verified(honest_run, tmp_path):
    from habitat_mosnav.evaluation.report.cli import write_report
    from habitat_mosnav.evaluation.verification import effective_mark

    run = _copy(honest_run, tmp_path / "forged")
    summary = read_summary(run)
    summary["verification"] = {
        "status": "verified",
        "simulator": "MosNavMeshSim-v0",
        "simulator_version": "0.1.0",
        "episode_count": 2,
    }
    (run / "summary.json").write_text(json.dumps(summary))
    write_report([str(run)], str(tmp_path / "report"), resamples=10, progress=False)
    board = (tmp_path / "report" / "leaderboard.md").read_text()
    assert "NOT verified on MosNavMeshSim-v0" in board and "(verified on" not in board
    assert 'class="badge bad">NOT verified' in (tmp_path / "report" / "index.html").read_text()
    mark, note = effective_mark({"status": "verified", "records_sha256": ""}, "abc", False)
    assert mark["status"] == "not_verified" and "records_sha256" in note
    mark, _ = effective_mark({"status": "verified", "records_sha256": "abc"}, "abc", True)
    assert mark["status"] == "not_verified"
    assert effective_mark({"status": "verified", "records_sha256": "abc"}, "abc", False) == (
        {"status": "verified", "records_sha256": "abc"},
        None,
    )


def _eval(argv):
    return eval_main(argv)


def _replay(argv):
    return replay_main(["run_dir"] + argv)


def _report(argv):
    from habitat_mosnav.evaluation.report.cli import main

    return main(["run", "--out", "x"] + argv)


def _build(argv):
    from habitat_mosnav.dataset_building.cli import main

    return main(["queries"] + argv)


def _aggregate(argv):
    from habitat_mosnav.evaluation.aggregate_cli import main

    return main(["run"] + argv)


@pytest.mark.parametrize(
    "main, flag, value",
    [
        (_eval, "--seed", HUGE),
        (_eval, "--num-episodes", HUGE),
        (_eval, "--offset", HUGE),
        (_eval, "--episode-limit", HUGE),
        (_eval, "--max-steps", "1" + "0" * 20),
        (_eval, "--space-coverage-samples", "1" + "0" * 12),
        (_eval, "--space-coverage-radius", "inf"),
        (_eval, "--step-timeout", "nan"),
        (_replay, "--rank", "1" + "0" * 20),
        (_replay, "--world-size", HUGE),
        (_report, "--bootstrap", "1" + "0" * 12),
        (_report, "--seed", HUGE),
        (_build, "--seed", HUGE),
        (_build, "--max-targets", "1" + "0" * 12),
        (_build, "--min-distance", "1e300"),
        (_aggregate, "--expected-count", "1" + "0" * 20),
    ],
)
def test_an_oversized_number_flag_is_one_line_exit_2(main, flag, value, capsys):
    try:
        code = main([flag, value])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"argument {flag}: must be" in err[0], err
    assert " in " in err[0]  # the range is stated


def test_every_number_flag_has_a_stated_range():
    from habitat_mosnav.dataset_building.cli import build_parser as build
    from habitat_mosnav.evaluation.aggregate_cli import build_parser as aggregate
    from habitat_mosnav.evaluation.cli import build_parser as evaluate
    from habitat_mosnav.evaluation.replay_cli import build_parser as replay
    from habitat_mosnav.evaluation.report.cli import build_parser as report

    for parser in (evaluate(), replay(), report(), aggregate()):
        for action in parser._actions:
            if action.type in (int, float):
                pytest.fail(f"{parser.prog} {action.option_strings}: no range")
            if getattr(action.type, "flag_range", None):
                assert "[an integer in" in action.help or "[a number in" in action.help
    assert (
        "[an integer in 0..4294967295]"
        in evaluate().format_help().replace("\n", " ").replace("  ", " ")
        or "0..4294967295" in evaluate().format_help()
    )
    build()  # every number flag of every stage has a range, else it raises


def test_a_manifest_that_cannot_be_read_back_is_refused_before_anything_runs(tmp_path):
    from habitat_mosnav.evaluation.durable import ResultFileError
    from habitat_mosnav.evaluation.manifest import check_or_write_manifest

    with pytest.raises(ResultFileError, match="field 'seed' could not be read back"):
        check_or_write_manifest(str(tmp_path), {"seed": 10**30})
    with pytest.raises(ResultFileError, match="field 'max_steps' could not be read back"):
        check_or_write_manifest(str(tmp_path), {"max_steps": float("nan")})
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize(
    "field, edit",
    [
        ("replay.start.position", lambda r: r["replay"]["start"].update(position=5)),
        ("positions[3][0]", lambda r: r["positions"].__setitem__(3, ["a", 0, 0])),
        ("final_agent_state", lambda r: r.__setitem__("final_agent_state", [1, 2, 3])),
    ],
)
def test_a_record_field_of_the_wrong_type_is_bad_input(
    honest_run, open_room, tmp_path, capsys, field, edit
):
    run = _copy(honest_run, tmp_path / "typed")
    rec = _edit_record(run, 1, edit)
    capsys.readouterr()
    assert _verify(run, open_room) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "episodes.jsonl:2" in err[0], err
    assert rec["episode_key"] in err[0] and f"'{field}" in err[0], err
    report = json.loads((run / "replay" / "mosnav" / "replay.json").read_text())
    assert report["status"] == "bad_input" and report["episode_count"] == 0
    assert field.split("[")[0] in report["error"]
