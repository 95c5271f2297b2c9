"""Long runs and their output (issue 24): the progress bar counts steps as well as
episodes; warnings go through logging; help texts are plain; drawing the report leaves the
importer's matplotlib backend alone."""

import io
import logging
import subprocess
import sys

import pytest

from conftest import NO_IMAGES, read_records, room_args


def _evaluate(open_room, tmp_path, agent, *extra, progress=True):
    import habitat_mosnav
    from habitat_mosnav.evaluation import EvaluationConfig, Evaluator

    data, scenes = open_room
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        [
            f"habitat.dataset.data_path={data}",
            f"habitat.dataset.scenes_dir={scenes}",
            "habitat.task.mosnav_space_coverage_samples=0",
            "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
            "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
            *extra,
        ],
    )
    stream = io.StringIO()
    out = str(tmp_path / "run")
    Evaluator(
        agent,
        cfg,
        EvaluationConfig(output_dir=out, num_episodes=1, max_steps=4, progress=progress),
        stream=stream,
    ).run()
    return stream.getvalue(), out


class SlowTurner:
    def act(self, observation):
        import time

        time.sleep(0.3)
        return 2


def test_progress_shows_the_steps_of_an_episode(open_room, tmp_path):
    text, out = _evaluate(open_room, tmp_path, SlowTurner())
    (rec,) = read_records(out)
    assert rec["steps_taken"] == 4
    assert "step 2/4" in text or "step 3/4" in text  # redrawn while the episode runs
    assert "4 steps" in text  # the steps this process ran, after the episode


def test_warnings_go_through_logging(open_room, tmp_path, caplog):
    class BadClose(SlowTurner):
        def act(self, observation):
            return 0

        def close(self):
            raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING, logger="habitat_mosnav"):
        text, _ = _evaluate(open_room, tmp_path, BadClose(), progress=False)
    (record,) = [r for r in caplog.records if "agent.close() raised" in r.getMessage()]
    assert record.name == "habitat_mosnav.evaluation" and record.levelno == logging.WARNING
    assert "agent.close()" not in text  # not written around the logging system


def test_cli_prints_a_warning_as_one_line(open_room, tmp_path, capsys):
    from habitat_mosnav.evaluation.cli import main

    agent = tmp_path / "bad_close.py"
    agent.write_text(
        "class BadClose:\n    def act(self, o):\n        return 0\n"
        "    def close(self):\n        raise RuntimeError('boom')\n"
    )
    assert (
        main(
            room_args(
                open_room,
                *NO_IMAGES,
                "--agent",
                f"{agent}:BadClose",
                "--num-episodes",
                "1",
                "--output-dir",
                str(tmp_path / "out"),
            )
        )
        == 0
    )
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "agent.close()" in ln]
    assert lines == ["warning: agent.close() raised RuntimeError: boom"]


@pytest.mark.parametrize(
    "argv",
    [
        ["mosnav-build", "--help"],
        ["mosnav-build", "extract", "--help"],
        ["mosnav-eval", "--help"],
        ["mosnav-report", "--help"],
    ],
)
def test_help_is_plain_text(argv, capsys):
    import importlib

    module = {
        "mosnav-build": "habitat_mosnav.dataset_building.cli",
        "mosnav-eval": "habitat_mosnav.evaluation.cli",
        "mosnav-report": "habitat_mosnav.evaluation.report",
    }[argv[0]]
    with pytest.raises(SystemExit):
        importlib.import_module(module).main(argv[1:])
    out = capsys.readouterr().out
    assert "usage:" in out and "``" not in out


def test_drawing_the_report_keeps_the_importers_backend(room_runs):
    """A notebook or GUI program that draws the report keeps its matplotlib backend."""
    run_dir = room_runs["scripted"]
    code = (
        "import matplotlib, sys; matplotlib.use('svg'); "
        "from habitat_mosnav.evaluation.report.data import load_run; "
        "from habitat_mosnav.evaluation.report.plots import make_plots; "
        f"plots = make_plots([load_run({str(run_dir)!r}, resamples=20)]); "
        "assert plots and all(p.uri.startswith('data:image/png') for p in plots); "
        "print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["svg", "False"]
