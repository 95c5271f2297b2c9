"""Every simulator difference lives in ``habitat_mosnav/simulators.py`` (issue 40): a third
simulator added to the ``SIMULATORS`` table alone runs ``mosnav-eval``, ``mosnav-replay`` and
``mosnav-build``, and no module outside the table compares a simulator's name or type or
reads its options node."""

import ast
import importlib.util
import json
import os
import re
from dataclasses import replace

import pytest

from habitat_mosnav.simulators import SIMULATORS
from habitat_mosnav.versions import software_versions

from conftest import NO_IMAGES, read_records, room_args

FAKE, FAKE_TYPE = "fake", "MosNavFakeSim-v0"
PACKAGE = os.path.dirname(os.path.abspath(importlib.util.find_spec("habitat_mosnav").origin))


@pytest.fixture
def fake_simulator(monkeypatch):
    """The CPU simulator under a new habitat registry type and a new row of the table (the
    CPU simulator's row with another name and type); both removed after the test. Its
    ``made`` lists the simulators built."""
    from habitat.core.registry import registry

    from habitat_mosnav.sims import MosNavMeshSim

    class FakeSim(MosNavMeshSim):
        made = []

        def __init__(self, config):
            super().__init__(config)
            FakeSim.made.append(config.type)

    registry.register_simulator(name=FAKE_TYPE)(FakeSim)
    row = replace(SIMULATORS["mosnav"], name=FAKE, type=FAKE_TYPE, description="a fake")
    monkeypatch.setitem(SIMULATORS, FAKE, row)
    try:
        yield FakeSim
    finally:
        registry.mapping["sim"].pop(FAKE_TYPE, None)


def test_eval_and_replay_run_on_a_simulator_added_to_the_table(fake_simulator, open_room, tmp_path):
    from habitat_mosnav.evaluation.cli import build_parser
    from habitat_mosnav.evaluation.cli import main as eval_main
    from habitat_mosnav.evaluation.replay_cli import main as replay_main

    # the flag's choices and its help prose come from the table too
    helped = " ".join(build_parser().format_help().split())
    assert f"{FAKE} ({FAKE_TYPE}, a fake)" in helped and "mosnav (MosNavMeshSim-v0," in helped
    run, out = tmp_path / "run", tmp_path / "replayed"
    argv = ["--agent", "random", "--num-episodes", "1", "--max-steps", "4"]
    argv += ["--simulator", FAKE, "--output-dir", str(run), *room_args(open_room, *NO_IMAGES)]
    assert eval_main(argv) == 0
    built = len(fake_simulator.made)
    assert built and set(fake_simulator.made) == {FAKE_TYPE}
    (record,) = read_records(run)
    assert record["status"] == "ok" and record["replay"]["motion"]["simulator"] == FAKE_TYPE
    # the simulator the run names is found in the table; --diagnose sets its options node
    data, scenes = open_room
    argv = [str(run), "--out", str(out), "--dataset-dir", data, "--scene-root", scenes]
    assert replay_main([*argv, "--no-progress", "--diagnose"]) == 0
    assert len(fake_simulator.made) > built and set(fake_simulator.made) == {FAKE_TYPE}
    report = json.loads((out / "replay.json").read_text())
    assert report["status"] == "agrees" and report["simulator"] == FAKE_TYPE
    # no version_key: the version recorded is this package's
    assert report["simulator_version"].startswith(software_versions()["habitat_mosnav"])


def test_build_extract_runs_on_a_simulator_added_to_the_table(fake_simulator, tmp_path):
    from habitat_mosnav.dataset_building.cli import main as build_main
    from habitat_mosnav.scenes.generator import generate_scene

    info = generate_scene(str(tmp_path / "scenes"), seed=11, index=0)
    argv = ["extract", "--scenes", str(tmp_path / "scenes"), "--out", str(tmp_path / "ds")]
    argv += ["--backend", FAKE, "--image-size", "64", "--max-view-points", "2", "--no-progress"]
    assert build_main(argv) == 0
    assert fake_simulator.made and set(fake_simulator.made) == {FAKE_TYPE}
    goals = json.loads((tmp_path / "ds" / info.scene_id / "goals.json").read_text())["goals"]
    assert goals and all(g["view_points"] for g in goals)


# ----------------------------------------------------------------------------- one home
def simulator_names_compared(source: str, where: str = "") -> list:
    """``where:line`` of each place in ``source`` that compares a string naming a simulator
    or its registry type (``==``, ``!=``, ``in``; also against a tuple of them) or compares
    ``x.simulator.type`` / ``backend`` / ``sim_type`` at all, hard-codes the names as
    ``choices``, or reads a simulator's options node (``x.mosnav_mesh``, a config path such
    as ``"simulator.mosnav_mesh.navmesh"``). Docstrings and prose are not code."""
    names = {c.name for c in SIMULATORS.values()} | {c.type for c in SIMULATORS.values()}
    keys = {c.options_key for c in SIMULATORS.values() if c.options_key}

    def named(node):
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return any(isinstance(i, ast.Constant) and i.value in names for i in items)

    def a_field(node):  # x.simulator.type, backend, sim_type: compared only in the table
        if isinstance(node, ast.Name):
            return node.id in ("backend", "sim_type")
        return isinstance(node, ast.Attribute) and (
            node.attr == "backend"
            or node.attr == "type"
            and getattr(node.value, "attr", 0) == "simulator"
        )

    def a_path(node):
        text = node.value if isinstance(node, ast.Constant) else None
        return (
            isinstance(text, str)
            and re.fullmatch(r"[\w.=~+@/-]+", text) is not None
            and bool(keys & set(re.split(r"[.=]", text)))
        )

    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    lines = set()
    for node in ast.walk(tree):
        operands = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
        if any(map(named, operands)) or any(map(a_field, operands)):
            lines.add(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == "choices" and named(node.value):
            lines.add(node.value.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in keys:
            lines.add(node.lineno)
        elif id(node) not in prose and a_path(node):
            lines.add(node.lineno)
    return [f"{where}:{n}" for n in sorted(lines)]


def _own_files() -> set:
    """simulators.py and each simulator's own modules in the package (the one registering its
    type, a package as a whole folder, and its structured config's): those name themselves."""
    own = {os.path.join(PACKAGE, "simulators.py")}
    for choice in SIMULATORS.values():
        for module in (choice.registers, choice.config_class.partition(":")[0]):
            if module.split(".")[0] == "habitat_mosnav":
                origin = importlib.util.find_spec(module).origin
                own.add(os.path.dirname(origin) if origin.endswith("__init__.py") else origin)
    return own


def test_the_check_finds_a_comparison_put_back():
    bad = [
        'if sim.type == "Sim-v0":\n    pass\n',
        "if self._hcfg.simulator.type != MosNavMeshSimConfig.type:\n    pass\n",
        "cpu = backend is SIMULATORS['mosnav'].name\n",
        'ok = backend not in ("habitat-sim",)\n',
        'p.add_argument("--backend", choices=("mosnav", "habitat-sim"))\n',
        "x = cfg.mosnav_mesh.navmesh\n",
        'x = OmegaConf.select(c, "habitat.simulator.mosnav_mesh.navmesh")\n',
        'overrides = ["habitat.simulator.mosnav_mesh.render=true"]\n',
    ]
    for source in bad:
        assert simulator_names_compared(source, "x") == ["x:1"], source
    fine = '"""Runs on habitat-sim or mosnav_mesh.render."""\nhelp = "on habitat-sim (Sim-v0)"\n'
    assert simulator_names_compared(fine) == []


def test_no_simulator_is_compared_outside_the_table():
    own = _own_files()
    found = []
    for root, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            path = os.path.join(root, name)
            if (
                not name.endswith(".py")
                or path in own
                or any(path.startswith(d + os.sep) for d in own)
            ):
                continue
            with open(path, encoding="utf-8") as f:
                found += simulator_names_compared(f.read(), os.path.relpath(path, PACKAGE))
    assert found == []
