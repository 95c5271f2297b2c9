"""One home for every default (issue 31): a value the habitat config holds is read from the
config; ``mosnav-eval``'s flags override it only when given."""

import dataclasses
import json
import os
import textwrap

import pytest

from habitat_mosnav.evaluation.cli import build_overrides, build_parser, main
from habitat_mosnav.evaluation.compose import CONFIG_KEYS, compose_config
from habitat_mosnav.evaluation.run_request import RunRequest, flag_of

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
    ov = build_overrides(RunRequest.from_args(build_parser().parse_args([])))
    assert not [o for o in ov if "space_coverage" in o or "max_episode_steps" in o], ov


def test_each_setting_has_one_name_from_flag_to_config(open_room, tmp_path):
    """``--<field>`` of each RunRequest field in compose.CONFIG_KEYS ends as that value under
    its habitat key (habitat's own name); a field dropped from the table, or a new one
    without a row here, fails."""
    from omegaconf import OmegaConf

    data, scenes = open_room
    (tmp_path / "scenes.json").write_text("{}")
    rows = {  # field: (flag value, habitat key, the value read back from the composed config)
        "dataset_dir": (data, "habitat.dataset.data_path", os.path.abspath(data)),
        "scene_root": (scenes, "habitat.dataset.scenes_dir", os.path.abspath(scenes)),
        "scene_dataset_config": (
            str(tmp_path / "scenes.json"),
            "habitat.dataset.scene_dataset_config",
            str(tmp_path / "scenes.json"),
        ),
        "split": ("val_x", "habitat.dataset.split", "val_x"),
        "goal_type": ("object", "habitat.dataset.goal_type", "object"),
        "target_modes": ("single,any", "habitat.dataset.target_modes", ["single", "any"]),
        "max_steps": ("7", "habitat.environment.max_episode_steps", 7),
        "space_coverage_samples": ("3", "habitat.task.mosnav_space_coverage_samples", 3),
        "space_coverage_radius": ("1.5", "habitat.task.mosnav_space_coverage_radius", 1.5),
    }
    assert set(rows) == set(CONFIG_KEYS)
    # every flag is the request field of its name (and holds its default); the rest is added
    added = {"config_given", "output_dir_given", "start_dir", "agent_args", "setting"}
    dests = {a.dest for a in build_parser()._actions} - {"help", "version"}
    assert dests == {f.name for f in dataclasses.fields(RunRequest)} - added
    argv = [a for name, (value, _, _) in rows.items() for a in (flag_of(name), value)]
    request = RunRequest.from_args(build_parser().parse_args(argv))
    config, _ = compose_config(request)
    for name, (_, key, want) in rows.items():
        assert CONFIG_KEYS[name] == key
        got = OmegaConf.select(config, key)
        assert (list(got) if name == "target_modes" else got) == want, name


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
    assert record["episode"]["max_steps"] == manifest["max_steps"] == 3

    seen.unlink()
    assert peek_run(tmp_path / "run2", "--space-coverage-samples", "20") == 0
    assert json.loads(seen.read_text().splitlines()[0])["samples"] == 20
    # --max-steps: one name from the flag to run.json and the record's episode block
    seen.unlink()
    out = tmp_path / "run3"
    argv = ["--config", _yaml(tmp_path, open_room), "--agent", f"{agent}:Peek", *NO_IMAGES]
    argv += ["--num-episodes", "1", "--no-progress", "--output-dir", str(out)]
    assert main(argv + ["--max-steps", "2"]) == 0
    assert json.loads(seen.read_text().splitlines()[0])["steps"] == 2  # the task's budget
    with open(os.path.join(out, "rank_00000", "episodes.jsonl")) as f:
        record = json.loads(f.readline())
    assert (
        record["episode"]["max_steps"]
        == json.loads((out / "run.json").read_text())["max_steps"]
        == 2
    )


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


@pytest.mark.parametrize("base", ["demo", "hm3d"])
def test_the_configs_agent_is_the_one_the_code_assumes(base):
    """The navmesh writer, the dataset builder's camera and the frontier map default to
    api's AGENT_HEIGHT / AGENT_RADIUS / CAMERA_HFOV: the configs give habitat the same."""
    from omegaconf import OmegaConf

    from habitat_mosnav.api import AGENT_HEIGHT, AGENT_RADIUS, CAMERA_HFOV
    from habitat_mosnav.config.default import MOSNAV_CONFIG_DIR

    path = os.path.join(MOSNAV_CONFIG_DIR, "benchmark", "nav", "mosnav", "base", f"{base}.yaml")
    agent = OmegaConf.load(path).habitat.simulator.agents.main_agent
    assert (agent.height, agent.radius) == (AGENT_HEIGHT, AGENT_RADIUS) == (0.88, 0.18)
    for sensor in agent.sim_sensors.values():
        assert sensor.hfov == CAMERA_HFOV == 79 and sensor.position[1] == AGENT_HEIGHT
