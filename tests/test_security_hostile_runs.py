"""Hostile datasets and runs of issue #30: a dataset nested 200k deep or holding a
5000-digit integer is one line naming the file (exit 2); an episode the exact solver would
refuse at every reset (3,000 targets) is refused at load naming the episode and the field;
NaN inside ``info`` is refused (SPEC §6). A resume or a second rank with another
``--scene-root``, or with another ``categories.json`` outside ``--dataset-dir``, is refused
naming the file (run.json ``input_files``). Maps, videos and JSON files get one mode.
mosnav-report: a full disk or SIGINT/SIGTERM is one line (exit 3, 130, 143) and leaves the
previous report whole (it is built beside its directory and swapped in); a full disk
during ``mosnav-build all`` is one line, exit 2."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from habitat_mosnav.evaluation.report import cli as report
from habitat_mosnav.evaluation.cli import main

from mosnav_fixtures import SCENE, goal, quick_eval_args, write_room_variant
import warm_runner

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _eval_lines(capsys, data, out, *extra):
    """(exit status, the mosnav-eval lines on stderr) of a random-agent run on ``data``."""
    capsys.readouterr()
    rc = main(quick_eval_args(*data, "--agent", "random", "--output-dir", str(out), *extra))
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return rc, [line for line in err.splitlines() if line.startswith("mosnav-eval")]


# ----------------------------------------------------------------------------- datasets


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[" * 200_000 + "]" * 200_000, "nested deeper than Python reads"),
        (
            '{"schema_version": 1, "scene_id": "testScene01", "episodes": [], "n": '
            + "9" * 5000
            + "}",
            "an integer of 5000 digits",
        ),
    ],
)
def test_unreadable_json_is_one_line_naming_the_file(capsys, open_room, tmp_path, text, problem):
    def edit(docs):
        docs["episodes.json"] = text

    data = write_room_variant(tmp_path / "data", open_room, edit)
    rc, lines = _eval_lines(capsys, data, tmp_path / "run")
    assert rc == 2 and len(lines) == 1, lines
    assert "testScene01/episodes.json: " in lines[0] and problem in lines[0], lines
    assert not (tmp_path / "run" / "rank_00000").exists()


@pytest.mark.parametrize("mode, count", [("all", 3000), ("all", 20), ("any", 63)])
def test_an_episode_the_solver_refuses_is_refused_at_load(capsys, open_room, tmp_path, mode, count):
    """3,000 targets cost 4.5M pair geodesics at each reset before the solver said no."""

    def edit(docs):
        goals = [
            goal(1000 + i, "chair", [(i % 50) * 0.2 - 5.0, 0.0, (i // 50) * 0.1 - 4.0])
            for i in range(count)
        ]
        docs["goals.json"]["goals"] += goals
        episode = docs["episodes.json"]["episodes"][1]
        episode.update(target_mode=mode, target_object_ids=[g["object_id"] for g in goals])

    data = write_room_variant(tmp_path / "data", open_room, edit)
    started = time.monotonic()
    rc, lines = _eval_lines(capsys, data, tmp_path / "run")
    assert time.monotonic() - started < 60
    assert rc == 2 and len(lines) == 1, lines
    assert (
        "episodes.json: episode 'q0-all-0': field 'target_object_ids': "
        f"{count} targets in a '{mode}' episode"
    ) in lines[0], lines
    assert not (tmp_path / "run" / "rank_00000").exists()


@pytest.mark.parametrize(
    "info, where", [({"x": [1.0, float("nan")]}, "info.x[1]"), ({"d": float("inf")}, "info.d")]
)
def test_a_non_finite_number_in_info_is_refused(capsys, open_room, tmp_path, info, where):
    def edit(docs):
        docs["episodes.json"] = json.dumps(
            dict(
                docs["episodes.json"],
                episodes=[dict(docs["episodes.json"]["episodes"][0], info=info)],
            )
        )  # NaN / Infinity literals

    data = write_room_variant(tmp_path / "data", open_room, edit)
    rc, lines = _eval_lines(capsys, data, tmp_path / "run")
    assert rc == 2 and len(lines) == 1, lines
    assert (
        f"episodes.json: episode 'q0-many-0': field '{where}': expected a finite number" in lines[0]
    ), lines


# ----------------------------------------------------------------------------- runs


def _other_scene_root(tmp_path):
    """A scene root with the open room's scene id but another mesh (a 10 m room)."""
    from habitat_mosnav.sims.toy_scenes import export_boxes, room_boxes

    folder = tmp_path / "other_scenes" / f"00000-{SCENE}"
    folder.mkdir(parents=True)
    export_boxes(str(folder / f"{SCENE}.glb"), room_boxes(-5, -5, 5, 5))
    return str(tmp_path / "other_scenes")


@pytest.mark.parametrize("how", ["resume", "second rank"])
def test_another_scene_root_is_refused_naming_the_file(capsys, open_room, tmp_path, how):
    data, scenes = open_room
    out = tmp_path / "run"
    ranks = ("--rank", "0", "--world-size", "2") if how == "second rank" else ()
    rc, lines = _eval_lines(capsys, (data, scenes), out, "--max-steps", "3", *ranks)
    assert rc == 0, lines
    again = ("--rank", "1", "--world-size", "2") if how == "second rank" else ("--resume",)
    rc, lines = _eval_lines(
        capsys, (data, _other_scene_root(tmp_path)), out, "--max-steps", "3", *again
    )
    assert rc == 2 and len(lines) == 1, lines
    assert f"field 'input_files.{SCENE}/{SCENE}.glb' differs" in lines[0], lines
    assert "(the scene files (--scene-root)" in lines[0], lines
    assert not (out / "rank_00001").exists() or not (out / "rank_00001" / "episodes.jsonl").exists()


def test_a_changed_categories_json_outside_the_dataset_dir_is_refused(capsys, open_room, tmp_path):
    """categories.json one folder above --dataset-dir (the loader finds it there)."""
    data, scenes = open_room
    root = tmp_path / "dataset"
    shutil.copytree(data, root / "dataset_semantic")
    (root / "categories.json").write_text(json.dumps(["chair", "table"]))
    room, out = (str(root / "dataset_semantic"), scenes), tmp_path / "run"
    rc, lines = _eval_lines(capsys, room, out, "--max-steps", "3", "--num-episodes", "2")
    assert rc == 0, lines
    (root / "categories.json").write_text(json.dumps(["table", "chair"]))  # objectgoal ids swap
    rc, lines = _eval_lines(
        capsys, room, out, "--max-steps", "3", "--num-episodes", "2", "--resume"
    )
    assert rc == 2 and len(lines) == 1, lines
    assert "field 'input_files.categories.json' differs" in lines[0], lines


# ----------------------------------------------------------------------------- file modes


def test_maps_videos_and_json_files_share_one_mode(room_runs):
    """mkstemp's 0600 for PNGs and videos, 0644 for JSON: one mode, 0666 minus the umask."""
    from habitat_mosnav.safety import file_mode

    out = room_runs["scripted"]
    files = [
        os.path.join(d, n) for d, _, names in os.walk(out) for n in names if n != "writer.lock"
    ]
    kinds = {os.path.splitext(f)[1] for f in files}
    assert {".png", ".gif", ".json", ".jsonl"} <= kinds, kinds
    assert {f: oct(os.stat(f).st_mode & 0o777) for f in files} == {
        f: oct(file_mode()) for f in files
    }


def test_mosnav_build_json_files_get_the_usual_mode(tmp_path):
    from habitat_mosnav.dataset_building.common import write_json
    from habitat_mosnav.safety import file_mode

    write_json(tmp_path / "scene" / "goals.json", {"goals": []})
    assert (
        os.stat(tmp_path / "scene" / "goals.json").st_mode & 0o777
        == file_mode()
        == 0o666 & ~_umask()
    )
    assert os.listdir(tmp_path / "scene") == ["goals.json"]


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ----------------------------------------------------------------------------- mosnav-report


def _tree(path):
    """{relative path: bytes} of every file under ``path``."""
    out = {}
    for d, _, names in os.walk(str(path)):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), str(path))] = f.read()
    return out


def report_argv(out, *runs):
    """``mosnav-report`` flags: ``runs`` into ``out``, 10 bootstrap resamples, no progress bar."""
    return [*runs, "--out", str(out), "--no-progress", "--bootstrap", "10"]


@pytest.fixture
def previous_report(room_runs, tmp_path):
    """A complete report of the scripted run in ``tmp_path/report``; returns its path."""
    out = tmp_path / "report"
    assert report.main(report_argv(out, room_runs["scripted"])) == 0
    assert _tree(out)["index.html"].rstrip().endswith(b"</html>")
    return out


def test_a_full_disk_during_mosnav_report_keeps_the_previous_report(
    capsys, room_runs, previous_report, monkeypatch
):
    before = _tree(previous_report)
    real_open = report.open_file

    def full_disk(path, *args, **kwargs):
        if os.path.basename(path) == "index.html":
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(report, "open_file", full_disk)
    capsys.readouterr()
    rc = report.main(report_argv(previous_report, room_runs["scripted"], room_runs["broken"]))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("mosnav-report")]
    assert rc == 3 and len(lines) == 1 and "Traceback" not in err, err
    assert "No space left on device" in lines[0] and "the previous report is kept" in lines[0], (
        lines
    )
    assert _tree(previous_report) == before  # leaderboard.* still describe the previous runs
    assert sorted(os.listdir(previous_report.parent)) == ["report"]  # nothing left beside it


def test_a_full_tmpfs_during_mosnav_report_keeps_the_previous_report(capsys, room_runs, tmp_path):
    from test_eval_reliability import _mount_tmpfs

    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "2m"):
        pytest.skip("needs root and mount -t tmpfs (the ENOSPC test above covers the logic)")
    try:
        out = disk / "report"
        assert report.main(report_argv(out, room_runs["scripted"])) == 0
        before = _tree(out)
        used = sum(len(v) for v in before.values())
        (disk / "filler").write_bytes(
            b"x" * (2 * 2**20 - used - 64 * 1024)
        )  # less than a report left
        capsys.readouterr()
        rc = report.main(report_argv(out, room_runs["scripted"], room_runs["broken"]))
        err = capsys.readouterr().err
        assert rc == 3 and "Traceback" not in err, err
        assert _tree(out) == before
        assert sorted(os.listdir(disk)) == ["filler", "report"]
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


#: Runs mosnav-report with ``make_plots`` sending this process a signal first.
_SIGNALLED_REPORT = """
import os, signal, sys
from habitat_mosnav.evaluation.report import cli as report

real = report.make_plots

def make_plots(*args, **kwargs):
    os.kill(os.getpid(), int(os.environ["MOSNAV_TEST_SIGNAL"]))
    return real(*args, **kwargs)

report.make_plots = make_plots
sys.exit(report.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "signum, code, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")]
)
def test_a_signal_during_mosnav_report_is_one_line_and_keeps_the_previous_report(
    room_runs, previous_report, signum, code, name
):
    before = _tree(previous_report)
    # a warm child (tests/warm_runner.py): its own process, signals and exit status
    proc = warm_runner.run(
        [
            sys.executable,
            "-c",
            _SIGNALLED_REPORT,
            *report_argv(previous_report, room_runs["scripted"], room_runs["broken"]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": REPO, "MOSNAV_TEST_SIGNAL": str(int(signum))},
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mosnav-report")]
    assert lines == [
        f"mosnav-report: interrupted by {name}; {previous_report} is as it was before (the "
        "report is swapped in whole when it is complete); run the command again"
    ], proc.stderr
    assert _tree(previous_report) == before
    assert sorted(os.listdir(previous_report.parent)) == ["report"]


def test_mosnav_report_never_replaces_a_directory_that_is_not_a_report(capsys, room_runs, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    capsys.readouterr()
    rc = report.main(report_argv(tmp_path, room_runs["scripted"]))
    lines = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("mosnav-report")
    ]
    assert rc == 2 and len(lines) == 1 and "holds 'notes.txt'" in lines[0], lines
    assert (tmp_path / "notes.txt").read_text() == "mine"
    rc = report.main([room_runs["scripted"], "--out", str(tmp_path / "notes.txt"), "--no-progress"])
    lines = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("mosnav-report")
    ]
    assert rc == 2 and len(lines) == 1 and "notes.txt: not a directory" in lines[0], lines


# ----------------------------------------------------------------------------- mosnav-build


def test_a_full_disk_during_mosnav_build_all_is_one_line_exit_2(capsys, tmp_path, monkeypatch):
    from habitat_mosnav.dataset_building.cli import main as build_main
    from habitat_mosnav.scenes.generator import generate_scene

    generate_scene(str(tmp_path / "scenes"), seed=11, index=0)

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(os, "replace", full_disk)  # every atomic write's last step
    capsys.readouterr()
    rc = build_main(
        [
            "all",
            "--scenes",
            str(tmp_path / "scenes"),
            "--out",
            str(tmp_path / "ds"),
            "--offline",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("mosnav-build")]
    assert rc == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("mosnav-build all: error: "), lines
    assert "No space left on device" in lines[0] and str(tmp_path / "ds") in lines[0], lines
    leftovers = [n for _, _, names in os.walk(tmp_path / "ds") for n in names]
    assert not leftovers, leftovers  # no temp file, no torn file
