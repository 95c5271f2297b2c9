"""Agent loading (--agent), the legacy act(rgb, depth, prompt) adapter, the random and human
agents: each error is one clear line naming the spec."""

import io
import textwrap

import pytest

from habitat_mosnav.agents import AgentLoadError, LegacyAgentAdapter, load_agent, resolve_agent
from habitat_mosnav.agents.human import HumanAgent, QuitEvaluation, parse_key
from habitat_mosnav.agents.random_agent import RandomAgent

from conftest import make_observation as make_obs


def test_aliases_resolve():
    assert resolve_agent("random") is RandomAgent
    assert resolve_agent("human") is HumanAgent
    from habitat_mosnav.agents.oracle import OracleAgent

    assert resolve_agent("oracle") is OracleAgent
    assert resolve_agent("habitat_mosnav.agents.oracle:OracleAgent") is OracleAgent


def test_module_class_from_working_directory(tmp_path, monkeypatch):
    pkg = tmp_path / "my_agents"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mine.py").write_text(
        textwrap.dedent("""
        class MyAgent:
            def act(self, observation):
                return 1
    """)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = load_agent("my_agents.mine:MyAgent")
    assert type(agent).__name__ == "MyAgent" and agent.act(None) == 1


def agent_file(tmp_path, name, source):
    """``<tmp_path>/<name>`` holding the dedented ``source``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_file_path_spec(tmp_path):
    f = agent_file(tmp_path, "file_agent.py", "class A:\n    def act(self, o):\n        return 3\n")
    assert load_agent(f"{f}:A").act(None) == 3


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nonsense", "unknown agent 'nonsense': expected random, human, api, oracle"),
        ("no_such_pkg_xyz.mod:Agent", "no module named 'no_such_pkg_xyz.mod'"),
        ("habitat_mosnav.agents.random_agent:Missing", "has no attribute 'Missing'"),
        ("habitat_mosnav.api:GOAL_TYPES", "is not a class or factory"),
        ("/no/such/file.py:A", "file '/no/such/file.py' does not exist"),
        ("", "--agent is empty"),
    ],
)
def test_bad_specs_are_one_line_errors(spec, message):
    with pytest.raises(AgentLoadError) as info:
        load_agent(spec)
    text = str(info.value)
    assert message in text and "\n" not in text


def test_module_that_fails_to_import(tmp_path):
    f = agent_file(tmp_path, "broken.py", "import numpy\nraise RuntimeError('boom at import')\n")
    with pytest.raises(AgentLoadError, match="importing .* failed: RuntimeError: boom at import"):
        load_agent(f"{f}:A")


def test_module_with_missing_dependency(tmp_path):
    f = agent_file(tmp_path, "needs_dep.py", "import definitely_not_installed_pkg\n")
    with pytest.raises(AgentLoadError, match="definitely_not_installed_pkg"):
        load_agent(f"{f}:A")


def test_constructor_error_and_missing_act(tmp_path):
    f = agent_file(
        tmp_path,
        "agents_bad.py",
        """
        class Raises:
            def __init__(self):
                raise ValueError("no model weights")
        class NoAct:
            pass
    """,
    )
    with pytest.raises(
        AgentLoadError, match="constructing the agent failed: ValueError: no model weights"
    ):
        load_agent(f"{f}:Raises")
    with pytest.raises(AgentLoadError, match="NoAct has no act"):
        load_agent(f"{f}:NoAct")


def test_from_args_is_used_when_present(tmp_path):
    f = agent_file(
        tmp_path,
        "cli_agent.py",
        """
        class WithArgs:
            def __init__(self, speed):
                self.speed = speed
            @classmethod
            def add_arguments(cls, parser):
                parser.add_argument("--speed", type=int, default=1)
            @classmethod
            def from_args(cls, args):
                return cls(args.speed)
            def act(self, o):
                return 1
    """,
    )

    class Args:
        speed = 7

    assert load_agent(f"{f}:WithArgs", Args()).speed == 7


def test_legacy_adapter_passes_rgb_depth_prompt():
    calls = []

    class Old:
        def reset(self):
            calls.append("reset")

        def act(self, rgb=None, depth=None, prompt=None):
            calls.append((rgb.shape, depth.shape, prompt))
            return 0

        def seed(self, s):
            calls.append(("seed", s))

    agent = LegacyAgentAdapter(Old())
    agent.seed(5)
    agent.reset()
    assert agent.act(make_obs()) == 0
    assert calls == [("seed", 5), "reset", ((4, 4, 3), (4, 4), "PROMPT")]
    assert isinstance(load_agent("random", legacy_api=True), LegacyAgentAdapter)


def test_random_agent_is_reproducible_per_seed():
    a, b = RandomAgent(), RandomAgent()
    a.seed(11)
    b.seed(11)
    obs = make_obs()
    seq_a = [a.act(obs) for _ in range(200)]
    seq_b = [b.act(obs) for _ in range(200)]
    assert seq_a == seq_b
    assert set(seq_a) <= {0, 1, 2, 3, 4, 5, 6}
    assert seq_a.count(1) > 60  # mostly moves forward (p = 0.55)
    b.seed(12)
    assert [b.act(obs) for _ in range(200)] != seq_a


def test_human_keys():
    assert [parse_key(k) for k in "0123456789"] == [0, 1, 2, 3, 4, 5, 6, None, None, 9]
    assert parse_key("q") == -1 and parse_key(" Q\n") == -1 and parse_key("x") is None
    keys = iter(["x", "7", "6"])
    out = io.StringIO()
    agent = HumanAgent(key_source=lambda: next(keys), stream=out)
    agent.reset()
    assert agent.act(make_obs()) == 6
    text = out.getvalue()
    assert "goal: Find chairs." in text and "unknown key 'x'" in text and "unknown key '7'" in text
    agent = HumanAgent(key_source=lambda: "q", stream=io.StringIO())
    with pytest.raises(QuitEvaluation):
        agent.act(make_obs())


def test_legacy_adapter_forwards_episode_stats_and_set_log_path_only_when_present():
    class OldWithStats:
        def __init__(self):
            self.path = None

        def act(self, rgb=None, depth=None, prompt=None):
            return 0

        def episode_stats(self):
            return {"api_calls": 3}

        def set_log_path(self, path):
            self.path = path

    inner = OldWithStats()
    agent = LegacyAgentAdapter(inner)
    assert agent.episode_stats() == {"api_calls": 3}
    agent.set_log_path("out/rank_00000/prompts.jsonl")
    assert inner.path == "out/rank_00000/prompts.jsonl"

    class OldPlain:
        def act(self, rgb=None, depth=None, prompt=None):
            return 0

    plain = LegacyAgentAdapter(OldPlain())
    # The evaluator probes with getattr: absent on the wrapped agent means absent here.
    assert getattr(plain, "episode_stats", None) is None
    assert getattr(plain, "set_log_path", None) is None
