"""Agents written for the original benchmark's README run unchanged (SPEC §7).

The agents below are the README's examples with their own import line
(``from benchmark_api import Action, Observation``), laid out as the README does
(``agents_to_test/<file>.py``, ``my_agents/old_agent.py``) and run through ``mosnav-eval``
with the README's selection flags on the bundled demo: MyAgent, the SimpleAgent template,
MyVLMAgent (its ``call_your_model``/``parse_action`` are the user's: here a scripted stub)
and the legacy ``act(rgb, depth, prompt)`` agent, with and without ``--legacy-agent-api``.
"""

import os
import subprocess
import sys
import textwrap

import habitat  # noqa: F401  (habitat's logger binds stderr here, not to a test's capsys)
import pytest

from habitat_mosnav.agents.legacy import LegacyAgentAdapter, adapt_agent, has_legacy_act
from habitat_mosnav.evaluation.cli import main
from conftest import read_records

# py39: the original benchmark's agents through the installed wheel
pytestmark = pytest.mark.py39

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = ["--space-coverage-samples", "0", "--no-progress"]

# The README's MyAgent, verbatim (comments included).
MY_AGENT = """
from benchmark_api import Action, Observation
class MyAgent:
    def reset(self) -> None:
        self.steps = 0
    def act(self, observation: Observation) -> int:
        self.steps += 1
        # observation.rgb / observation.depth 可以送入自己的 VLM 或导航模型。
        # observation.goal_text 是 GOAT-style 目标文本。
        # observation.task_prompt 是完整任务说明。
        if self.steps < 10:
            return Action.MOVE_FORWARD
        if observation.target_mode in {"many", "all"}:
            return Action.FINISH
        return Action.TARGET_FOUND
"""

# The README's MyVLMAgent, verbatim, after the user's own call_your_model / parse_action
# (a scripted stand-in for a model server that checks what the agent sends it).
MY_VLM_AGENT = """
import re
import numpy as np

SCRIPT = [1, 2, 3, 1, 0]

def call_your_model(rgb, depth, instruction, history):
    assert isinstance(rgb, np.ndarray) and rgb.ndim == 3 and rgb.shape[2] == 3, type(rgb)
    assert isinstance(depth, np.ndarray) and depth.ndim == 2, type(depth)
    assert isinstance(instruction, str) and instruction, instruction
    return "I will move. ACTION: %d" % SCRIPT[len(history)]

def parse_action(response):
    return int(re.search(r"ACTION:\\s*(\\d+)", response).group(1))

from benchmark_api import Action, Observation
class MyVLMAgent:
    def __init__(self):
        self.history = []
    def reset(self) -> None:
        self.history = []
    def act(self, observation: Observation) -> int:
        response = call_your_model(
            rgb=observation.rgb,
            depth=observation.depth,
            instruction=observation.goal_text,
            history=self.history,
        )
        action = parse_action(response)
        self.history.append((observation.step_count, action))
        return action
"""

# An agent of the old API: act(rgb=None, depth=None, prompt=None). Under the legacy protocol
# 0 claims and 9 finishes in many/all.
OLD_AGENT = """
import numpy as np

class OldAgent:
    def reset(self):
        self.steps = 0
    def act(self, rgb=None, depth=None, prompt=None) -> int:
        if not (isinstance(rgb, np.ndarray) and rgb.ndim == 3):
            raise TypeError("rgb is a %s, not an image" % type(rgb).__name__)
        if not (isinstance(prompt, str) and "9" in prompt):
            raise TypeError("prompt without the legacy action table")
        self.steps += 1
        return [1, 0, 9][self.steps - 1]
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A user's checkout of the original benchmark: agents_to_test/ and my_agents/."""
    root = tmp_path_factory.mktemp("original_checkout")
    (root / "agents_to_test").mkdir()
    (root / "my_agents").mkdir()
    (root / "agents_to_test" / "my_agent.py").write_text(MY_AGENT)
    (root / "agents_to_test" / "my_vlm_agent.py").write_text(MY_VLM_AGENT)
    # The SimpleAgent template as the original ships it: this repository's template with
    # the original's import line.
    with open(os.path.join(REPO, "habitat_mosnav", "agents", "simple_agent.py")) as f:
        template = f.read()
    ours = "from habitat_mosnav.api import Action, Observation"
    assert ours in template
    (root / "agents_to_test" / "simple_agent.py").write_text(
        template.replace(ours, "from benchmark_api import Action, Observation")
    )
    (root / "my_agents" / "old_agent.py").write_text(OLD_AGENT)
    yield root
    _forget_checkout_packages()


def _forget_checkout_packages():
    """Other tests have their own my_agents/agents_to_test packages: neither may shadow
    the other through sys.modules."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("agents_to_test", "my_agents")]:
        del sys.modules[name]


@pytest.fixture
def in_workdir(workdir, monkeypatch):
    _forget_checkout_packages()
    monkeypatch.chdir(workdir)
    return workdir


def test_benchmark_api_is_the_agent_api():
    import benchmark_api
    from habitat_mosnav import api

    assert benchmark_api.Action is api.Action and benchmark_api.Observation is api.Observation
    assert int(benchmark_api.Action.TARGET_FOUND) == 6 and int(benchmark_api.Action.FINISH) == 0


def test_setup_installs_benchmark_api():
    try:
        import tomllib
    except ImportError:  # Python < 3.11: its predecessor (the test extra installs it)
        import tomli as tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert "benchmark_api" in project["tool"]["setuptools"]["py-modules"]
    assert os.path.isfile(os.path.join(REPO, "benchmark_api.py"))


def run_readme_command(tmp_path, capsys, agent, *flags):
    """``mosnav-eval --agent <agent> <flags>`` from the checkout: exit 0, its records."""
    out = tmp_path / agent.split(":")[-1]
    rc = main(["--agent", agent, *flags, "--output-dir", str(out), *FAST])
    assert rc == 0, capsys.readouterr().err
    return read_records(out)


def test_my_agent_readme_command(in_workdir, tmp_path, capsys):
    recs = run_readme_command(
        tmp_path,
        capsys,
        "agents_to_test.my_agent:MyAgent",
        "--limit",
        "1",
        "--episode-limit",
        "2",
        "--max-steps",
        "20",
    )
    assert len(recs) == 2 and len({r["episode"]["scene_id"] for r in recs}) == 1
    for r in recs:
        assert r["status"] == "ok" and r["episode"]["target_mode"] in ("many", "all")
        assert r["action_trace"] == [1] * 9 + [0] and r["terminated_by"] == "finish"


def test_simple_agent_template_readme_command(in_workdir, tmp_path, capsys):
    (rec,) = run_readme_command(
        tmp_path,
        capsys,
        "agents_to_test.simple_agent:SimpleAgent",
        "--limit",
        "1",
        "--episode-limit",
        "1",
        "--max-steps",
        "2",
    )
    assert rec["status"] == "ok" and rec["steps_taken"] == 2
    assert rec["terminated_by"] == "max_steps" and set(rec["action_trace"]) <= {1, 2}


def test_my_vlm_agent_with_stub_model(in_workdir, tmp_path, capsys):
    (rec,) = run_readme_command(
        tmp_path,
        capsys,
        "agents_to_test.my_vlm_agent:MyVLMAgent",
        "--limit",
        "1",
        "--episode-limit",
        "1",
        "--max-steps",
        "20",
    )
    assert rec["status"] == "ok", rec.get("error_message")
    assert rec["action_trace"] == [1, 2, 3, 1, 0] and rec["terminated_by"] == "finish"


@pytest.mark.parametrize("flag", [["--legacy-agent-api"], []], ids=["readme_flag", "detected"])
def test_legacy_agent(flag, in_workdir, tmp_path, capsys):
    """The README's legacy command; without --legacy-agent-api the old signature is
    detected (one note line) instead of handing the agent the Observation as rgb."""
    out = tmp_path / ("legacy" + "_".join(flag))
    rc = main(
        [
            "--agent",
            "my_agents.old_agent:OldAgent",
            *flag,
            "--action-protocol",
            "legacy",
            "--num-episodes",
            "1",
            "--max-steps",
            "20",
            "--output-dir",
            str(out),
            *FAST,
        ]
    )
    err = capsys.readouterr().err
    assert rc == 0, err
    assert ("OldAgent.act has the legacy signature" in err) is (not flag)
    (rec,) = read_records(out)
    assert rec["status"] == "ok", rec.get("error_message")
    # legacy protocol in many/all: 0 claimed (one report event at step 2), 9 finished
    assert rec["action_trace"] == [1, 0, 9] and rec["terminated_by"] == "finish"
    assert [e["step"] for e in rec["report_events"]] == [2]


@pytest.mark.parametrize(
    "source,legacy",
    [
        ("def act(self, rgb=None, depth=None, prompt=None): pass", True),
        ("def act(self, rgb, depth, prompt): pass", True),
        ("def act(self, *, rgb=None, prompt=None): pass", True),
        ("def act(self, observation): pass", False),
        ("def act(self, obs, rgb=None): pass", False),
        ("def act(self, *args, **kwargs): pass", False),
    ],
)
def test_has_legacy_act(source, legacy):
    namespace = {}
    exec(textwrap.dedent(f"class A:\n    {source}\n"), namespace)
    agent = namespace["A"]()
    assert has_legacy_act(agent) is legacy
    notes = []
    adapted = adapt_agent(agent, note=notes.append)
    assert isinstance(adapted, LegacyAgentAdapter) is legacy and len(notes) == int(legacy)
    assert isinstance(adapt_agent(agent, legacy_api=True), LegacyAgentAdapter)


def test_original_config_name_points_at_the_mosnav_configs(in_workdir, capsys):
    (in_workdir / "hm3d_config.yaml").write_text("habitat_sim: {}\n")  # the original's file
    for config in ("hm3d_config.yaml", "no_such_config.yaml"):
        assert main(["--config", config, "--print-config"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(
            f"mosnav-eval: error: --config {config}"
        )
        assert (
            "benchmark/nav/mosnav/mos_hm3d.yaml" in err
            and "benchmark/nav/mosnav/moc_demo.yaml" in err
        )


def test_my_agent_through_the_console_script(workdir, tmp_path):
    """The user's path: the installed ``mosnav-eval`` run from the checkout."""
    out = tmp_path / "console"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    script = os.path.join(os.path.dirname(sys.executable), "mosnav-eval")
    proc = subprocess.run(
        [
            script,
            "--agent",
            "agents_to_test.my_agent:MyAgent",
            "--limit",
            "1",
            "--episode-limit",
            "1",
            "--max-steps",
            "12",
            "--output-dir",
            str(out),
            *FAST,
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (rec,) = read_records(out)
    assert rec["action_trace"] == [1] * 9 + [0]
