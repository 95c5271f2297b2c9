"""Policies written for the unified rollout contract run unchanged (SPEC §7, §8).

``StopPolicy`` is the contract's Python API example (with its import line); the evaluator
gets the env through a proxy that refuses every private attribute, so the run shows it uses
only the env's public API.
"""

import json
import os

import numpy as np
import pytest

from habitat_mosnav.evaluation import (
    EvaluationConfig,
    Evaluator,
    PolicyAdapter,
    PolicyStep,
)
from habitat_mosnav.evaluation import EpisodeContext, EvaluationSetupError
from conftest import read_records

MAX_STEPS = 5
OVERRIDES = [
    "habitat.dataset.target_modes=[many,all]",
    f"habitat.environment.max_episode_steps={MAX_STEPS}",
    "habitat.task.mosnav_space_coverage_samples=0",
]


class StopPolicy(PolicyAdapter):  # the contract's example
    def reset(self, context):
        self.context = context

    def act(self, observation):
        return PolicyStep(action=0, info={"reason": "example"})

    def close(self):
        pass


class RecordingStopPolicy(StopPolicy):
    def __init__(self):
        self.contexts, self.closed = [], 0

    def reset(self, context):
        super().reset(context)
        self.contexts.append(context)

    def close(self):
        self.closed += 1


class PublicEnv:
    """Forwards the public API of a habitat.Env; any ``_private`` attribute is an error."""

    def __init__(self, env):
        object.__setattr__(self, "_wrapped", env)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AssertionError(f"the evaluator read the private env attribute {name!r}")
        return getattr(object.__getattribute__(self, "_wrapped"), name)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            raise AssertionError(f"the evaluator set the private env attribute {name!r}")
        setattr(object.__getattribute__(self, "_wrapped"), name, value)


@pytest.fixture(scope="module")
def env():
    import habitat

    from habitat_mosnav import get_config

    e = habitat.Env(config=get_config("benchmark/nav/mosnav/mos_demo.yaml", OVERRIDES))
    yield e
    e.close()


def test_contract_example_runs_with_its_info_in_the_trace(env, tmp_path):
    policy = RecordingStopPolicy()
    out = str(tmp_path / "example")
    summary = Evaluator(
        environment=PublicEnv(env),
        policy=policy,
        config=EvaluationConfig(
            output_dir=out,
            split="val",
            policy_id="stop-policy",
            limit=2,
            max_steps=MAX_STEPS,
        ),
    ).run()
    assert summary["status"] == "complete" and summary["expected_episode_count"] == 2
    assert summary["ok_episode_count"] == 2 and summary["policy_id"] == "stop-policy"
    with open(os.path.join(out, "summary.json")) as f:
        assert json.load(f) == summary
    recs = read_records(out)
    assert [r["action_trace"] for r in recs] == [[{"action": 0, "info": {"reason": "example"}}]] * 2
    assert all(r["terminated_by"] == "finish" and r["steps_taken"] == 1 for r in recs)

    assert policy.closed == 1
    assert [c.episode_key for c in policy.contexts] == [r["episode_key"] for r in recs]
    for context, rec in zip(policy.contexts, recs):
        assert isinstance(context, EpisodeContext)
        assert context.episode_key.startswith("val::") and context.split == "val"
        assert (context.rank, context.world_size, context.max_steps) == (0, 1, MAX_STEPS)
        assert context.seed == rec["seed"] and context.episode_index == rec["episode_index"]
        assert context.environment is not None and context.env is context.environment
        ep = context.episode
        assert ep["episode_id"] == rec["episode"]["episode_id"]
        assert ep["scene_id"] == rec["episode"]["scene_id"]
        assert ep["target_mode"] == rec["episode"]["target_mode"] and ep["goal_text"]
        assert "target_object_ids" not in ep and "goals" not in ep


class ScriptedPolicy(PolicyAdapter):
    """Moves, then claims and finishes; info varies per step and holds numpy values."""

    def reset(self, context):
        self.t = 0

    def act(self, observation):
        self.t += 1
        if self.t == 1:
            return 1  # a plain id: the trace entry gets info null
        if self.t == 2:
            return PolicyStep(2, {"depth_min": np.float32(0.5), "seen": np.array([1, 2])})
        return PolicyStep(action=0, info={"t": self.t})


def test_info_of_each_step_and_plain_ids_in_one_trace(env, tmp_path):
    out = str(tmp_path / "scripted")
    Evaluator(
        environment=env,
        policy=ScriptedPolicy(),
        config=EvaluationConfig(output_dir=out, limit=1, progress=False),
    ).run()
    (rec,) = read_records(out)
    assert rec["action_trace"] == [
        {"action": 1, "info": None},
        {"action": 2, "info": {"depth_min": 0.5, "seen": [1, 2]}},
        {"action": 0, "info": {"t": 3}},
    ]


def test_info_that_is_not_json_is_an_error_record(env, tmp_path):
    class Bad(PolicyAdapter):
        def act(self, observation):
            return PolicyStep(1, {"model": object()})

    out = str(tmp_path / "bad")
    summary = Evaluator(
        environment=env,
        policy=Bad(),
        config=EvaluationConfig(output_dir=out, limit=1, progress=False),
    ).run()
    (rec,) = read_records(out)
    assert summary["error_episode_count"] == 1 and rec["status"] == "error"
    assert rec["error_type"] == "InvalidAction"
    assert "PolicyStep.info at step 1 is not JSON-serialisable" in rec["error_message"]


def test_env_settings_that_contradict_the_config_are_one_line_errors(env, tmp_path):
    with pytest.raises(
        EvaluationSetupError,
        match="max_steps=7 differs from the environment's budget of 5 steps .max_steps must be an integer in .1, 5.",
    ):
        Evaluator(
            environment=env,
            policy=StopPolicy(),
            config=EvaluationConfig(output_dir=str(tmp_path / "a"), max_steps=7),
        ).run()
    with pytest.raises(
        EvaluationSetupError, match="split 'test' differs from the environment's episodes"
    ):
        Evaluator(
            environment=env,
            policy=StopPolicy(),
            config=EvaluationConfig(output_dir=str(tmp_path / "b"), split="test"),
        ).run()


def test_limit_is_num_episodes():
    assert EvaluationConfig(output_dir="x", limit=3).num_episodes == 3
    with pytest.raises(ValueError, match="limit=3 and num_episodes=4 disagree"):
        EvaluationConfig(output_dir="x", limit=3, num_episodes=4)
    with pytest.raises(TypeError, match="both agent= and policy="):
        Evaluator(StopPolicy(), policy=StopPolicy(), output_dir="x")


def test_config_path_with_split_and_max_steps_and_a_plain_agent(tmp_path):
    """The current call style (agent first, a habitat config) with the contract's
    max_steps: applied to the env the evaluator builds."""

    class Walker:  # a plain act(observation) -> int agent with reset()
        def reset(self):
            self.n = 0

        def act(self, observation):
            self.n += 1
            assert observation.max_steps == 3
            return 1

    from habitat_mosnav import get_config

    cfg = get_config("benchmark/nav/mosnav/mos_demo.yaml", OVERRIDES)
    out = str(tmp_path / "walker")
    summary = Evaluator(
        Walker(), cfg, EvaluationConfig(output_dir=out, limit=1, max_steps=3, progress=False)
    ).run()
    (rec,) = read_records(out)
    assert summary["status"] == "complete" and rec["steps_taken"] == 3
    assert rec["terminated_by"] == "max_steps" and rec["episode"]["max_steps"] == 3
    assert rec["action_trace"] == [1, 1, 1]
