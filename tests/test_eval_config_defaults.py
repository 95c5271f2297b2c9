"""One home for every default (issue 31): a value the habitat config holds is read from the
config; ``mosnav-eval``'s flags override it only when given."""

import json
import os
import textwrap

from habitat_mosnav.evaluation.cli import build_overrides, build_parser, main

from conftest import NO_IMAGES


def _yaml(tmp_path, open_room, samples=50, radius=0.75, steps=3):
    data, scenes = open_room
    path = tmp_path / "my_mos.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        # @package _global_
        defaults:
          - /benchmark/nav/mosnav/base/demo
          - _self_
        habitat:
          environment:
            max_episode_steps: {steps}
          task:
            mosnav_space_coverage_samples: {samples}
            mosnav_space_coverage_radius: {radius}
          dataset:
            data_path: {data}
            scenes_dir: {scenes}
            target_modes: [many]
        """)
    )
    return str(path)


def test_unset_flags_add_no_overrides():
    ov = build_overrides(build_parser().parse_args([]), default_config=False)
    assert not [o for o in ov if "space_coverage" in o or "max_episode_steps" in o], ov


def test_print_config_keeps_the_yaml_values_and_a_flag_overrides(tmp_path, open_room, capsys):
    config = _yaml(tmp_path, open_room)
    assert main(["--config", config, "--print-config"]) == 0
    out = capsys.readouterr().out
    assert (
        "mosnav_space_coverage_samples: 50" in out and "mosnav_space_coverage_radius: 0.75" in out
    )
    assert "max_episode_steps: 3" in out
    assert (
        main(
            [
                "--config",
                config,
                "--print-config",
                "--space-coverage-samples",
                "7",
                "--space-coverage-radius",
                "2.0",
                "--max-steps",
                "9",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "mosnav_space_coverage_samples: 7" in out and "mosnav_space_coverage_radius: 2.0" in out
    assert "max_episode_steps: 9" in out


PEEK = '''
import json, os

class Peek:
    """Writes the space oracle the task drew (sample count, radius) and the step budget."""
    def bind_env(self, env):
        state = env.task.mos_state
        samples = getattr(state, "_samples", None)
        with open(os.environ["PEEK_OUT"], "a") as f:
            f.write(json.dumps({"samples": 0 if samples is None else len(samples),
                                "radius": state.coverage_radius,
                                "steps": env.task.max_steps}) + "\\n")

    def act(self, observation):
        return 0
'''


def test_the_run_uses_the_yaml_values(tmp_path, open_room, monkeypatch):
    agent = tmp_path / "peek.py"
    agent.write_text(PEEK)
    seen = tmp_path / "seen.jsonl"
    monkeypatch.setenv("PEEK_OUT", str(seen))
    out = tmp_path / "run"

    def peek_run(out, *extra):
        config = _yaml(tmp_path, open_room)
        argv = ["--config", config, "--agent", f"{agent}:Peek", "--num-episodes", "1"]
        return main([*argv, "--no-progress", "--output-dir", str(out), *extra, *NO_IMAGES])

    assert peek_run(out) == 0
    assert json.loads(seen.read_text().splitlines()[0]) == {
        "samples": 50,
        "radius": 0.75,
        "steps": 3,
    }
    manifest = json.loads((out / "run.json").read_text())
    assert not [o for o in manifest["config_overrides"] if "space_coverage" in o], manifest
    with open(os.path.join(out, "rank_00000", "episodes.jsonl")) as f:
        record = json.loads(f.readline())
    assert record["episode"]["max_steps"] == 3

    seen.unlink()
    assert peek_run(tmp_path / "run2", "--space-coverage-samples", "20") == 0
    assert json.loads(seen.read_text().splitlines()[0])["samples"] == 20


def test_habitat_success_measure_follows_the_task_success_distance():
    from habitat_mosnav import get_config

    cfg = get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        [
            "+habitat/task/mosnav_extras=habitat_nav_measures",
            "habitat.task.mosnav_success_distance=0.4",
        ],
    )
    assert cfg.habitat.task.measurements.success.success_distance == 0.4
    default = get_config(
        "benchmark/nav/mosnav/mos_demo.yaml", ["+habitat/task/mosnav_extras=habitat_nav_measures"]
    )
    from habitat_mosnav.metrics.legs import SUCCESS_DISTANCE

    assert default.habitat.task.measurements.success.success_distance == SUCCESS_DISTANCE


def test_the_success_measure_keeps_the_value_once_habitat_copies_its_config():
    from omegaconf import OmegaConf

    from habitat_mosnav import get_config
    from habitat_mosnav.tasks.multi_object_nav_task import _resolve_measure_interpolations

    cfg = get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        [
            "+habitat/task/mosnav_extras=habitat_nav_measures",
            "habitat.task.mosnav_success_distance=0.4",
        ],
    )
    _resolve_measure_interpolations(cfg.habitat.task)  # what the task does before habitat copies
    assert OmegaConf.create(cfg.habitat.task.measurements.success).success_distance == 0.4
