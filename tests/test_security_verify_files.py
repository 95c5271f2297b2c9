"""Issue 39 items 2, 3, 4, 6, 8, 9: run files that cannot hang, strand or leak.

A link planted below an output root (``RUN_DIR/replay -> /victim``) is refused in one line,
exit 3, nothing touched; ``run.json`` overrides are plain habitat keys and values (an
``${oc.env:...}`` is refused, never resolved nor printed); every file read from a run or a
dataset is a regular file of bounded size (a FIFO, ``/dev/zero``, an oversized file: one
line, exit 2, at once); ``mosnav-replay`` ends on SIGTERM/SIGINT as ``mosnav-eval`` (143 /
130, one line, ``--resume`` continues); an output inside its input is refused (exit 2);
image goal sizes and fields of view are those that render, and an empty goal render is an
error naming the query."""

import json
import os
import shutil
import signal
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import warm_runner
from mosnav_fixtures import quick_eval_args, write_room_variant

from habitat_mosnav import safety
from habitat_mosnav.evaluation import aggregate_cli
from habitat_mosnav.evaluation.cli import main as eval_main
from habitat_mosnav.evaluation.durable import ResultWriteError, atomic_write_json
from habitat_mosnav.evaluation.replay_cli import main as replay_main
from habitat_mosnav.evaluation.report import cli as report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextmanager
def bounded(seconds=20):
    """Fail (never hang) when the block takes longer than ``seconds``."""

    def alarm(signum, frame):
        raise TimeoutError(f"took more than {seconds} s (a blocking read?)")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _lines(err, prog):
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith(prog)]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, open_room):
    """A 2-episode random-agent run on the open room (records with replay blocks)."""
    root = tmp_path_factory.mktemp("verify_files")
    out = root / "run"
    args = quick_eval_args(*open_room, "--agent", "random", "--max-steps", "20")
    assert eval_main(args + ["--num-episodes", "2", "--output-dir", str(out)]) == 0
    return {"run": out, "data": open_room[0], "scenes": open_room[1]}


def _copy(quick_run, tmp_path, name="run"):
    run = tmp_path / name
    shutil.copytree(quick_run["run"], run, ignore=shutil.ignore_patterns("replay"))
    return run


def _replay(quick_run, run, *extra):
    return replay_main(
        [
            str(run),
            "--no-progress",
            "--dataset-dir",
            str(quick_run["data"]),
            "--scene-root",
            str(quick_run["scenes"]),
            *extra,
        ]
    )


# ----------------------------------------------------------------------------- 2: links


def test_a_planted_replay_link_deletes_and_writes_nothing(quick_run, tmp_path, capsys):
    run = _copy(quick_run, tmp_path)
    victim = tmp_path / "victim"
    (victim / "mosnav").mkdir(parents=True)
    (victim / "mosnav" / "keep.txt").write_text("mine")
    os.symlink(victim, run / "replay")
    capsys.readouterr()
    assert _replay(quick_run, run) == 3
    lines = _lines(capsys.readouterr().err, "mosnav-replay")
    assert len(lines) == 1 and f"{run / 'replay'}: it is a symbolic link" in lines[0], lines
    assert os.listdir(victim) == ["mosnav"] and os.listdir(victim / "mosnav") == ["keep.txt"]
    assert (victim / "mosnav" / "keep.txt").read_text() == "mine"


def test_writes_below_an_output_root_refuse_a_link_at_any_component(tmp_path):
    root, victim = tmp_path / "out", tmp_path / "victim"
    (root / "a").mkdir(parents=True)
    victim.mkdir()
    os.symlink(victim, root / "a" / "b")  # a middle component
    target = str(root / "a" / "b" / "c" / "x.json")
    with safety.output_root(str(root)):
        with pytest.raises(safety.PlantedLinkError):
            safety.make_dirs(os.path.dirname(target))
        with pytest.raises(safety.PlantedLinkError):
            safety.open_file(str(root / "a" / "b" / "y.txt"), "w")
        with pytest.raises(ResultWriteError, match="symbolic link"):
            atomic_write_json(target, {"x": 1})
        with pytest.raises(safety.PlantedLinkError):
            safety.remove_path(str(root / "a" / "b" / "c"))
        safety.remove_path(str(root / "a" / "b"))  # the link itself: removed, not followed
    assert os.listdir(victim) == [] and not os.path.lexists(root / "a" / "b")
    # outside any root only the last component is judged (the user's own links above)
    os.symlink(victim, tmp_path / "mine")
    safety.make_dirs(str(tmp_path / "mine" / "sub"))
    assert os.listdir(victim) == ["sub"]


def test_aggregate_refuses_a_planted_summary_link(quick_run, tmp_path, capsys):
    run = _copy(quick_run, tmp_path)
    (tmp_path / "elsewhere.json").write_text("{}")
    (run / "summary.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", run / "summary.json")
    assert aggregate_cli.main([str(run)]) == 3
    assert (tmp_path / "elsewhere.json").read_text() == "{}"


# ----------------------------------------------------------------------------- 3: overrides


def _with_overrides(run, overrides):
    for path in (run / "run.json", run / "rank_00000" / "run.json"):  # the run's and the rank's
        manifest = json.loads(path.read_text())
        manifest["config_overrides"] = list(manifest.get("config_overrides") or []) + overrides
        path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "override, problem",
    [
        ("habitat.task.mosnav_success_distance=${oc.env:MY_DB_PASSWORD}", "not a plain value"),
        ("habitat.environment.max_episode_steps=${habitat.x}", "not a plain value"),
        ("hydra.run.dir=/tmp/x", "not a habitat config key"),
        ("habitat.dataset.split=choice(a,b)", "not a plain value"),
    ],
)
def test_run_json_overrides_are_plain_and_nothing_from_the_environment_is_printed(
    quick_run, tmp_path, capsys, monkeypatch, override, problem
):
    monkeypatch.setenv("MY_DB_PASSWORD", "hunter2-very-secret")
    run = _copy(quick_run, tmp_path)
    _with_overrides(run, [override])
    capsys.readouterr()
    assert _replay(quick_run, run) == 2
    out, err = capsys.readouterr()
    assert "hunter2" not in out + err
    lines = _lines(err, "mosnav-replay")
    assert len(lines) == 1 and "config_overrides[" in lines[0] and problem in lines[0], lines
    assert not (run / "replay").exists()


# ----------------------------------------------------------------------------- 4: reads


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _dev_zero(path):
    path.unlink()
    os.symlink("/dev/zero", path)


def _oversized(path):
    path.unlink()
    with open(path, "wb") as f:  # sparse: nothing written, the size says too much
        f.truncate(safety.MAX_RECORDS_BYTES + 1)


@pytest.mark.parametrize(
    "name, plant, problem",
    [
        ("summary.json", _fifo, "a FIFO"),
        ("rank_00000/episodes.jsonl", _fifo, "a FIFO"),
        ("diagnosis.json", _fifo, "a FIFO"),
        ("summary.json", _dev_zero, "a character device"),
        ("rank_00000/episodes.jsonl", _dev_zero, "a character device"),
        ("run.json", _oversized, "bytes, more than"),
        ("rank_00000/episodes.jsonl", _oversized, "bytes, more than"),
    ],
)
def test_report_and_aggregate_refuse_a_file_that_is_not_a_bounded_regular_file(
    quick_run, tmp_path, capsys, name, plant, problem
):
    run = _copy(quick_run, tmp_path)
    path = run / name
    if not path.exists():
        path.write_text("{}")
    plant(path)
    capsys.readouterr()
    with bounded():
        rc = report.main([str(run), "--out", str(tmp_path / "rep"), "--no-progress"])
    lines = _lines(capsys.readouterr().err, "mosnav-report")
    assert rc == 2 and len(lines) == 1, lines
    assert f"{path}: " in lines[0] and problem in lines[0], lines
    if name.endswith(".jsonl"):  # mosnav-aggregate reads the records (summary.json it writes)
        with bounded():
            rc = aggregate_cli.main([str(run)])
        lines = _lines(capsys.readouterr().err, "mosnav-aggregate")
        assert rc == 2 and len(lines) == 1 and f"{path}: " in lines[0], lines
        assert problem in lines[0], lines


@pytest.mark.parametrize("plant, problem", [(_fifo, "a FIFO"), (_dev_zero, "a character device")])
def test_the_dataset_builders_readers_refuse_what_is_not_a_regular_file(tmp_path, plant, problem):
    """mosnav-build's own readers (a stage's JSON input, a scene file it fingerprints, an
    ObjectNav goals file) read as every dataset reader does: a FIFO never hangs them and
    a link to /dev/zero is never read, one BuildError line naming the file."""
    import signal

    from habitat_mosnav.dataset_building import common, objectnav

    paths = {}
    for name in ("goals.json", "scene.glb", "TEEsavR23oF.json.gz"):
        paths[name] = tmp_path / name
        paths[name].write_bytes(b"{}")
        plant(paths[name])
    scene = common.SceneFiles(
        "TEEsavR23oF",
        tmp_path,
        paths["scene.glb"],
        paths["scene.glb"],
        paths["scene.glb"],
        None,
        None,
    )
    signal.alarm(20)  # a hang fails the test instead of blocking it
    try:
        for call, path in (
            (lambda: common.read_json(paths["goals.json"]), "goals.json"),
            (lambda: common.fingerprint(scene), "scene.glb"),
            (lambda: objectnav._load(paths["TEEsavR23oF.json.gz"]), "TEEsavR23oF.json.gz"),
        ):
            with pytest.raises(common.BuildError) as caught:
                call()
            assert str(caught.value).startswith(f"{tmp_path / path}: {problem}, not a regular")
    finally:
        signal.alarm(0)


def test_a_fifo_in_the_dataset_is_one_line_naming_it(open_room, tmp_path, capsys):
    data, scenes = write_room_variant(tmp_path / "data", open_room, lambda docs: None)
    episodes = next(p for p in _walk(data) if p.endswith("episodes.json"))
    _fifo(__import__("pathlib").Path(episodes))
    capsys.readouterr()
    with bounded():
        rc = eval_main(
            quick_eval_args(data, scenes, "--agent", "random", "--output-dir", str(tmp_path / "o"))
        )
    lines = _lines(capsys.readouterr().err, "mosnav-eval")
    assert rc == 2 and len(lines) == 1 and f"{episodes}: a FIFO" in lines[0], lines


def _walk(root):
    for directory, _, files in os.walk(root):
        for name in files:
            yield os.path.join(directory, name)


# ----------------------------------------------------------------------------- 6: signals

_SIGNALLED_REPLAY = """
import os, sys
from habitat_mosnav.evaluation import replay, replay_cli

real = replay.ReplayAgent.act
calls = []

def act(self, observation):
    calls.append(1)
    if len(calls) == 25:  # inside the second episode
        os.kill(os.getpid(), int(os.environ["MOSNAV_TEST_SIGNAL"]))
    return real(self, observation)

replay.ReplayAgent.act = act
sys.exit(replay_cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "signum, code, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")]
)
def test_a_signal_ends_mosnav_replay_as_mosnav_eval_and_resume_continues(
    quick_run, tmp_path, capsys, signum, code, name
):
    run = _copy(quick_run, tmp_path)
    out = tmp_path / "replayed"
    args = [str(run), "--no-progress", "--out", str(out)]
    args += ["--dataset-dir", str(quick_run["data"]), "--scene-root", str(quick_run["scenes"])]
    proc = warm_runner.run(
        [sys.executable, "-c", _SIGNALLED_REPLAY, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": REPO, "MOSNAV_TEST_SIGNAL": str(int(signum))},
    )
    assert proc.returncode == code, proc.stderr
    lines = _lines(proc.stderr, "mosnav-replay")
    assert lines == [
        f"mosnav-replay: interrupted by {name}; the episodes replayed so far are kept; "
        "continue with the same command and --resume"
    ], proc.stderr
    assert not (out / "replay.json").exists()
    capsys.readouterr()
    assert replay_main(args + ["--resume"]) == 0
    assert json.loads((out / "replay.json").read_text())["episode_count"] == 2


# ----------------------------------------------------------------------------- 8: out in in


def test_eval_output_inside_the_dataset_is_refused(open_room, tmp_path, capsys):
    data, scenes = write_room_variant(tmp_path / "data", open_room, lambda docs: None)
    capsys.readouterr()
    out = os.path.join(str(data), "results")
    rc = eval_main(quick_eval_args(data, scenes, "--agent", "random", "--output-dir", out))
    lines = _lines(capsys.readouterr().err, "mosnav-eval")
    assert rc == 2 and len(lines) == 1 and "inside the input directory" in lines[0], lines
    assert not os.path.exists(out)


@pytest.mark.parametrize("where", ["run", "run/rank_00000", "parent", "dataset"])
def test_replay_output_inside_its_inputs_is_refused(quick_run, tmp_path, capsys, where):
    run = _copy(quick_run, tmp_path)
    out = {
        "run": run,
        "run/rank_00000": run / "rank_00000",
        "parent": tmp_path,
        "dataset": os.path.join(str(quick_run["data"]), "replayed"),
    }[where]
    before = sorted(os.listdir(run / "rank_00000"))
    capsys.readouterr()
    assert _replay(quick_run, run, "--out", str(out)) == 2
    lines = _lines(capsys.readouterr().err, "mosnav-replay")
    assert len(lines) == 1 and f"--out {out}" in lines[0], lines
    assert sorted(os.listdir(run / "rank_00000")) == before
    assert not os.path.exists(os.path.join(str(quick_run["data"]), "replayed"))


@pytest.mark.parametrize("where", ["inside", "holding"])
def test_report_output_inside_or_holding_a_run_is_refused(quick_run, tmp_path, capsys, where):
    run = _copy(quick_run, tmp_path / "runs")
    out = run / "report" if where == "inside" else tmp_path / "runs"
    capsys.readouterr()
    assert report.main([str(run), "--out", str(out), "--no-progress"]) == 2
    lines = _lines(capsys.readouterr().err, "mosnav-report")
    assert len(lines) == 1 and "run directory" in lines[0], lines
    assert (run / "summary.json").exists() and not (run / "report").exists()


def test_build_output_inside_its_scenes_is_refused(tmp_path, capsys):
    from habitat_mosnav.dataset_building.cli import main as build_main

    scenes = tmp_path / "scenes"
    scenes.mkdir()
    assert build_main(["extract", "--scenes", str(scenes), "--out", str(scenes / "ds")]) == 2
    lines = _lines(capsys.readouterr().err, "mosnav-build")
    assert len(lines) == 1 and "inside the input directory" in lines[0], lines
    assert os.listdir(scenes) == []


# ----------------------------------------------------------------------------- 9: image goals


@pytest.mark.parametrize(
    "change, name",
    [
        ({"hfov": 179.999}, "hfov"),
        ({"hfov": 1.0}, "hfov"),
        ({"width": 1, "height": 1}, "width"),
        ({"width": 4096, "height": 4096}, "width"),
    ],
)
def test_image_goal_sizes_and_fovs_that_do_not_render_are_refused_at_load(change, name):
    from habitat_mosnav.datasets.schema import DatasetFormatError, parse_image_goal

    ig = {"object_id": 7, "position": [0, 1, 0], "rotation": [0, 0, 0, 1], "hfov": 79.0}
    ig.update(change)
    with pytest.raises(DatasetFormatError, match=f"field '{name}': expected .*what renders"):
        parse_image_goal({"image_goal": ig}, [7], "queries.json", "query 'q1'")
    ig.update(hfov=79.0, width=512, height=512)
    assert parse_image_goal({"image_goal": ig}, [7], "queries.json", "query 'q1'")["width"] == 512


@pytest.mark.parametrize("size", ["0", "-1", "100000", "x"])
def test_build_image_size_is_checked_as_a_flag(tmp_path, capsys, size):
    from habitat_mosnav.dataset_building.cli import main as build_main

    with pytest.raises(SystemExit) as exc:
        build_main(
            ["image-goals", "--scenes", str(tmp_path), "--out", str(tmp_path / "o")]
            + ["--image-size", size]
        )
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert "argument --image-size: must be an integer in 16..2048" in err, err
    assert ".glb" not in err


def test_an_empty_goal_render_is_an_error_naming_the_query():
    from types import SimpleNamespace

    from habitat_mosnav.sensors.sensors import MosNavGoalImageSensor

    episode = SimpleNamespace(episode_id="e1", query_id="q-far")
    cam = {"position": [9e5, 1.0, 0.0], "hfov": 79.0}
    sensor = SimpleNamespace(_sim=SimpleNamespace(_renderer=object()))
    black = np.zeros((16, 16, 3), np.uint8)
    with pytest.raises(ValueError, match="query 'q-far'.*renders empty"):
        MosNavGoalImageSensor._checked(sensor, black, episode, cam, "q-far")
    lit = black.copy()
    lit[3, 4] = 9
    assert MosNavGoalImageSensor._checked(sensor, lit, episode, cam, "q-far") is lit
    off = SimpleNamespace(_sim=SimpleNamespace(_renderer=None))  # render off: zeros by design
    assert MosNavGoalImageSensor._checked(off, black, episode, cam, "q-far") is black
