"""The simulator interface (``habitat_mosnav/simulators.py``, issue 31): both simulators
offer ``NavSimulator``; one table of choices; a simulator that cannot be built leaves the
output directory as it was."""

import os
import subprocess
import sys
import textwrap

import pytest

from habitat_mosnav import simulators
from habitat_mosnav.simulators import (
    SIMULATORS,
    NavPathFinder,
    NavSimulator,
    interface_mismatches,
    path_request_types,
)

from conftest import NO_IMAGES, room_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_cpu_simulator_offers_the_interface():
    from habitat_mosnav.sims import MosNavMeshSim
    from habitat_mosnav.sims.pathfinder import PathFinder

    assert interface_mismatches(MosNavMeshSim, NavSimulator) == []
    assert interface_mismatches(PathFinder, NavPathFinder) == []


def test_habitat_sim_offers_the_interface():
    if not SIMULATORS["habitat-sim"].available():
        pytest.skip("habitat-sim is not installed")
    import habitat_sim
    from habitat.sims.habitat_simulator.habitat_simulator import HabitatSim

    assert interface_mismatches(HabitatSim, NavSimulator) == []
    assert interface_mismatches(habitat_sim.PathFinder, NavPathFinder) == []


def test_the_check_finds_what_is_missing():
    class Half:
        pathfinder = None

        def geodesic_distance(self, position_a):  # no position_b, no episode=
            return 0.0

    problems = interface_mismatches(Half, NavSimulator)
    assert any("reset is missing" in p for p in problems)
    assert any("geodesic_distance" in p and "episode" in p for p in problems)


def test_a_built_cpu_simulator_is_an_instance_and_states_its_path_requests(open_room):
    from habitat_mosnav import get_config
    from habitat_mosnav.sims import MultiGoalShortestPath, ShortestPath
    from habitat.sims import make_sim

    data, scenes = open_room
    cfg = get_config(
        "benchmark/nav/mosnav/mos_demo.yaml", ["habitat.simulator.mosnav_mesh.render=False"]
    ).habitat.simulator
    scene = next(
        os.path.join(r, f) for r, _, fs in os.walk(scenes) for f in fs if f.endswith(".glb")
    )
    from habitat.config import read_write

    with read_write(cfg):
        cfg.scene = scene
    sim = make_sim(cfg.type, config=cfg)
    try:
        assert isinstance(sim, NavSimulator) and isinstance(sim.pathfinder, NavPathFinder)
        assert path_request_types(sim) == (ShortestPath, MultiGoalShortestPath)
    finally:
        sim.close()


def test_one_table_feeds_the_overrides_and_the_builder():
    from habitat_mosnav.config.simulator import simulator_overrides
    from habitat_mosnav.dataset_building.geometry import make_sim_config
    from pathlib import Path

    for name, choice in SIMULATORS.items():
        assert simulator_overrides(name)[0] == f"habitat.simulator.type={choice.type}"
        cfg = make_sim_config(Path("/x/scene.glb"), name)
        assert cfg.type == choice.type
        assert (choice.options_key in cfg) if choice.options_key else ("mosnav_mesh" not in cfg)
    with pytest.raises(ValueError, match="unknown simulator"):
        simulator_overrides("unreal")


def test_simulator_mosnav_on_an_hm3d_config_takes_its_options(capsys):
    from habitat_mosnav.evaluation.cli import main

    assert (
        main(
            [
                "--config",
                "benchmark/nav/mosnav/mos_hm3d.yaml",
                "--simulator",
                "mosnav",
                "--set",
                "habitat.simulator.mosnav_mesh.render=False",
                "--print-config",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "type: MosNavMeshSim-v0" in out and "render: false" in out


BLOCKED = textwrap.dedent("""
    import sys
    sys.modules["habitat_sim"] = None  # habitat-sim cannot be imported in this process
    from habitat_mosnav.evaluation.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _random_run(room, out):
    """``mosnav-eval`` flags: the random agent, one 2-step episode of ``room``, into ``out``."""
    return [
        "--agent",
        "random",
        "--num-episodes",
        "1",
        "--max-steps",
        "2",
        "--output-dir",
        str(out),
        *room_args(room, *NO_IMAGES),
    ]


def _tree(path):
    if not os.path.exists(path):
        return None
    return sorted(
        (os.path.relpath(os.path.join(r, f), path), open(os.path.join(r, f), "rb").read())
        for r, _, fs in os.walk(path)
        for f in fs
    )


@pytest.mark.parametrize("existing", [False, True])
def test_a_simulator_that_cannot_be_built_leaves_the_output_as_it_was(
    tmp_path, open_room, existing
):
    out = tmp_path / "run"
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    before = _tree(str(out))
    argv = _random_run(open_room, out)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED, "--simulator", "habitat-sim", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr
    assert "needs habitat-sim" in proc.stderr and simulators.HABITAT_SIM_INSTALL in proc.stderr
    assert _tree(str(out)) == before
    # a fresh start then works, on the simulator that is there
    from habitat_mosnav.evaluation.cli import main

    assert main(["--simulator", "mosnav", *argv]) == 0
    assert os.path.isfile(out / "run.json") and os.path.isfile(out / "summary.json")


def test_a_scene_that_cannot_be_loaded_leaves_no_directory(tmp_path, open_room, capsys):
    import shutil

    data, scenes = open_room
    broken = tmp_path / "scenes"
    shutil.copytree(scenes, broken)
    for r, _, fs in os.walk(broken):
        for f in fs:
            if f.endswith(".glb"):
                with open(os.path.join(r, f), "wb") as fh:
                    fh.write(b"glTF-but-not-really")
    out = tmp_path / "run"
    from habitat_mosnav.evaluation.cli import main

    rc = main(_random_run((data, str(broken)), out))
    assert rc == 2, capsys.readouterr().err
    assert not out.exists()
    assert main(_random_run(open_room, out)) == 0
