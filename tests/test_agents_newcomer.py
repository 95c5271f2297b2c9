"""A newcomer's first commands (issue 24): the frontier agent by its bare name (it declares
the semantic camera it needs and mosnav-eval adds it), an agent whose sensor cannot be
added is refused in one line, ``Action.SUBTASK_STOP``, the original template command, and
the rollout contract's ``max_steps`` on an env built with defaults."""

import json
import textwrap

import pytest

from habitat_mosnav.api import Action
from habitat_mosnav.evaluation.cli import main

from conftest import ONE_SHORT_EPISODE, read_records, room_args

NO_RGB = ["--set", "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor"]


def test_frontier_agent_by_its_bare_name(open_room, tmp_path, capsys):
    out = tmp_path / "frontier"
    rc = main(
        room_args(
            open_room,
            *NO_RGB,
            "--agent",
            "habitat_mosnav.agents.frontier:FrontierAgent",
            "--num-episodes",
            "1",
            "--max-steps",
            "30",
            "--output-dir",
            str(out),
        )
    )
    err = capsys.readouterr().err
    assert rc == 0, err
    (rec,) = read_records(str(out))
    assert rec["status"] == "ok", rec.get("error_message")
    assert "needs the sim sensor(s) semantic_sensor: added" in err
    from habitat_mosnav.agents.frontier import SEMANTIC_SENSOR_OVERRIDE

    assert (
        SEMANTIC_SENSOR_OVERRIDE in json.loads((out / "run.json").read_text())["config_overrides"]
    )


def _agent_file(tmp_path, body):
    path = tmp_path / "agent_file.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_a_sensor_that_cannot_be_added_is_refused_at_start(open_room, tmp_path, capsys):
    spec = (
        _agent_file(
            tmp_path,
            """
        class ThermalAgent:
            required_sim_sensors = {"thermal_sensor": None}

            def act(self, observation):
                return 0
        """,
        )
        + ":ThermalAgent"
    )
    out = tmp_path / "thermal"
    rc = main(room_args(open_room, "--agent", spec, "--output-dir", str(out)))
    err = [line for line in capsys.readouterr().err.splitlines() if "nitializing" not in line]
    assert rc == 2 and len(err) == 1, err
    assert "needs the sim sensor(s) thermal_sensor" in err[0]
    assert not out.exists()  # refused before any episode record


def test_subtask_stop_is_the_original_name_of_6(open_room, tmp_path, capsys):
    assert Action.SUBTASK_STOP == 6 and Action.SUBTASK_STOP is Action.TARGET_FOUND
    spec = (
        _agent_file(
            tmp_path,
            """
        from benchmark_api import Action

        class Subtasks:
            def reset(self):
                self.n = 0

            def act(self, observation):
                self.n += 1
                return Action.SUBTASK_STOP if self.n == 1 else Action.FINISH
        """,
        )
        + ":Subtasks"
    )
    out = tmp_path / "subtask"
    assert (
        main(
            room_args(
                open_room, *NO_RGB, "--agent", spec, "--num-episodes", "1", "--output-dir", str(out)
            )
        )
        == 0
    )
    (rec,) = read_records(str(out))
    assert rec["status"] == "ok" and len(rec["report_events"]) == 1
    assert rec["terminated_by"] == "finish"


def test_the_original_template_command_is_found_anywhere(open_room, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no agents_to_test/ here
    out = tmp_path / "simple"
    assert (
        main(
            room_args(
                open_room,
                *NO_RGB,
                "--agent",
                "agents_to_test.simple_agent:SimpleAgent",
                *ONE_SHORT_EPISODE,
                "--output-dir",
                str(out),
            )
        )
        == 0
    )
    (rec,) = read_records(str(out))
    assert rec["status"] == "ok" and rec["steps_taken"] == 3


@pytest.fixture(scope="module")
def default_env():
    """The demo env as habitat builds it from the shipped config: a 500-step budget."""
    import habitat

    from habitat_mosnav import get_config

    e = habitat.Env(
        config=get_config(
            "benchmark/nav/mosnav/mos_demo.yaml",
            [
                "habitat.task.mosnav_space_coverage_samples=0",
                "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
            ],
        )
    )
    yield e
    e.close()


def test_contract_max_steps_caps_the_rollout_of_a_default_env(default_env, tmp_path):
    from habitat_mosnav.evaluation import EvaluationConfig, Evaluator, PolicyAdapter, PolicyStep

    class TurnPolicy(PolicyAdapter):
        def act(self, observation):
            return PolicyStep(action=2, info=None)

    assert default_env.task.max_steps == 500
    out = str(tmp_path / "capped")
    summary = Evaluator(
        environment=default_env,
        policy=TurnPolicy(),
        config=EvaluationConfig(
            output_dir=out, split="val", policy_id="turn", limit=2, max_steps=5
        ),
    ).run()
    assert summary["ok_episode_count"] == 2
    for rec in read_records(out):
        assert rec["steps_taken"] == 5 and rec["terminated_by"] == "max_steps"
        assert rec["episode"]["max_steps"] == 5
        assert rec["metrics"]["oer_target"] is None  # nothing found; T = 5 for OER


def test_contract_max_steps_above_the_env_budget_is_refused(default_env, tmp_path):
    from habitat_mosnav.evaluation import EvaluationConfig, EvaluationSetupError, Evaluator

    class Stop:
        def act(self, observation):
            return 0

    with pytest.raises(
        EvaluationSetupError, match=r"max_steps=600 differs .* integer in \[1, 500\]"
    ):
        Evaluator(
            environment=default_env,
            policy=Stop(),
            config=EvaluationConfig(output_dir=str(tmp_path / "x"), max_steps=600),
        ).run()
