"""Planted links in an output directory are refused, never followed (issue #23): every file
mosnav-eval and mosnav-report write is opened with O_NOFOLLOW (habitat_mosnav.safety); a
link there ends the command with exit 3 and one line naming it, and its target is left
exactly as it was."""

import json
import os

import pytest

from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.maps import episode_file_stem

from conftest import ROOM_RUN_ARGS, room_args
from mosnav_fixtures import EPISODE_KEYS, quick_eval_args

PRECIOUS = b"the user's own file\nits last line has no newline"


def _plant(out, name, target):
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)
    return path


def _precious(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_bytes(PRECIOUS)
    return target


def _errors(capsys, prog="mosnav-eval"):
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith(f"{prog}:")]


def test_open_for_write_refuses_a_link_and_never_truncates_its_target(tmp_path):
    from habitat_mosnav.safety import PlantedLinkError, open_for_write, replacing

    target = _precious(tmp_path)
    link = _plant(tmp_path, "out.txt", target)
    with pytest.raises(PlantedLinkError, match="symbolic link"):
        open_for_write(str(link))
    with pytest.raises(PlantedLinkError):
        with replacing(str(link)) as tmp:
            open(tmp, "w").write("x")
    assert target.read_bytes() == PRECIOUS
    assert [p.name for p in tmp_path.iterdir()] != [] and not list(tmp_path.glob(".tmp_*"))


@pytest.mark.parametrize("planted", ["rank_00000/writer.lock", "run.json"])
def test_a_fresh_run_refuses_a_planted_link(capsys, open_room, tmp_path, planted):
    out = tmp_path / "run"
    target = _precious(tmp_path)
    link = _plant(out, planted, target)
    rc = main(quick_eval_args(*open_room, "--agent", "random", "--output-dir", str(out)))
    lines = _errors(capsys)
    assert rc == 3, lines
    assert len(lines) == 1 and str(link) in lines[0] and "symbolic link" in lines[0], lines
    assert target.read_bytes() == PRECIOUS


def test_a_planted_rank_directory_link_is_refused(capsys, open_room, tmp_path):
    out = tmp_path / "run"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _plant(out, "rank_00000", elsewhere)
    rc = main(quick_eval_args(*open_room, "--agent", "random", "--output-dir", str(out)))
    lines = _errors(capsys)
    assert rc == 3 and len(lines) == 1 and "rank_00000" in lines[0], lines
    assert list(elsewhere.iterdir()) == []


def test_resume_never_repairs_a_planted_episodes_file(capsys, open_room, tmp_path):
    """The old code truncated the link's target at its last newline before refusing."""
    out = tmp_path / "run"
    target = _precious(tmp_path)
    _plant(out, "rank_00000/episodes.jsonl", target)
    rc = main(
        quick_eval_args(*open_room, "--agent", "random", "--output-dir", str(out), "--resume")
    )
    lines = _errors(capsys)
    assert rc == 3 and len(lines) == 1 and "episodes.jsonl" in lines[0], lines
    assert target.read_bytes() == PRECIOUS


@pytest.mark.parametrize("kind", ["videos", "maps"])
def test_a_planted_video_or_map_is_refused_and_the_record_kept(capsys, open_room, tmp_path, kind):
    out = tmp_path / "run"
    target = _precious(tmp_path)
    key = EPISODE_KEYS[0]  # q0-all-0: the first episode run
    name = episode_file_stem(key) + (".gif" if kind == "videos" else ".png")
    _plant(out, f"{kind}/{name}", target)
    flags = ["--save-video", "gif"] if kind == "videos" else ["--save-maps"]
    rc = main(
        [
            "--agent",
            "random",
            "--output-dir",
            str(out),
            "--num-episodes",
            "1",
            *room_args(open_room, *ROOM_RUN_ARGS, "--max-steps", "3", *flags),
        ]
    )
    lines = _errors(capsys)
    assert rc == 3 and len(lines) == 1 and name in lines[0] and "symbolic link" in lines[0], lines
    assert target.read_bytes() == PRECIOUS
    with open(out / "rank_00000" / "episodes.jsonl") as f:  # the episode's record is kept
        assert [json.loads(line)["episode_key"] for line in f] == [key]


@pytest.mark.parametrize("planted", ["leaderboard.csv", "leaderboard.md", "index.html"])
def test_mosnav_report_refuses_planted_links(capsys, room_runs, tmp_path, planted):
    from habitat_mosnav.evaluation.report import main as report

    report_dir = tmp_path / "report"
    target = _precious(tmp_path)
    _plant(report_dir, planted, target)
    rc = report(
        [room_runs["scripted"], "--out", str(report_dir), "--no-progress", "--bootstrap", "10"]
    )
    lines = _errors(capsys, "mosnav-report")
    assert rc == 3 and len(lines) == 1 and planted in lines[0], lines
    assert target.read_bytes() == PRECIOUS


def test_api_prompt_log_link_is_refused(capsys, open_room, server, api_key, tmp_path):
    from chat_server import Reply
    from conftest import api_agent_args

    server.script(*[Reply.text("ACTION: 1")] * 50)
    out = tmp_path / "run"
    target = _precious(tmp_path)
    _plant(out, "rank_00000/prompts.jsonl", target)
    rc = main(
        [
            *api_agent_args(server),
            "--log-prompts",
            "--resume",
            "--output-dir",
            str(out),
            *room_args(open_room, *ROOM_RUN_ARGS, "--max-steps", "2"),
        ]
    )
    lines = _errors(capsys)
    assert rc == 3 and len(lines) == 1 and "prompts.jsonl" in lines[0], lines
    assert target.read_bytes() == PRECIOUS
