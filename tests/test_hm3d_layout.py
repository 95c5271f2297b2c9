"""The README's HM3D command on a scene root laid out like HM3D v0.2's:

    <root>/hm3d/hm3d_annotated_basis.scene_dataset_config.json
    <root>/hm3d/val/00000-<id>/<id>.basis.glb, <id>.basis.navmesh, <id>.semantic.glb, <id>.semantic.txt

made from a bundled demo scene (real files in HM3D's formats; the stage config is HM3D's own
default_attributes). ``--scene-root`` decides where the scene dataset config is found; a
missing file or a missing habitat-sim is one line naming the path, the flag and the install
command.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

import habitat_mosnav

DEMO = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo")
SID = "Cukxndkh48K"
SMALL = [
    f"habitat.simulator.agents.main_agent.sim_sensors.{s}.{k}=32"
    for s in ("rgb_sensor", "depth_sensor")
    for k in ("width", "height")
]


@pytest.fixture(scope="module")
def hm3d(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    scene = root / "hm3d" / "val" / f"00000-{SID}"
    scene.mkdir(parents=True)
    src = os.path.join(DEMO, "scenes", f"00000-{SID}", SID)
    shutil.copy(src + ".glb", scene / f"{SID}.basis.glb")
    shutil.copy(src + ".navmesh", scene / f"{SID}.basis.navmesh")
    for ext in (".semantic.glb", ".semantic.txt"):
        shutil.copy(src + ext, scene / f"{SID}{ext}")
    tag = "%%CONFIG_NAME_AS_ASSET_FILENAME%%"
    (root / "hm3d" / "hm3d_annotated_basis.scene_dataset_config.json").write_text(
        json.dumps(
            {
                "stages": {
                    "default_attributes": {
                        "up": [0, 0, 1],
                        "front": [0, 1, 0],
                        "origin": [0, 0, 0],
                        "semantic_up": [0, 0, 1],
                        "semantic_front": [0, 1, 0],
                        "semantic_descriptor_filename": f"{tag}.semantic.txt",
                        "semantic_asset": f"{tag}.semantic.glb",
                        "has_semantic_textures": False,
                    },
                    "paths": {".glb": ["val/*/*.basis.glb"]},
                }
            }
        )
    )
    data = root / "mosnav" / "dataset_semantic"
    data.mkdir(parents=True)
    shutil.copytree(os.path.join(DEMO, "dataset_semantic", SID), data / SID)
    shutil.copy(os.path.join(DEMO, "dataset_semantic", "categories.json"), data / "categories.json")
    return root


def _eval(hm3d, out, *extra, cwd=None):
    cmd = [
        sys.executable,
        "-m",
        "habitat_mosnav.eval",
        "--config",
        "benchmark/nav/mosnav/mos_hm3d.yaml",
        "--agent",
        "habitat_mosnav.agents.oracle:OracleAgent",
        "--dataset-dir",
        str(hm3d / "mosnav" / "dataset_semantic"),
        "--scene-root",
        str(hm3d / "hm3d" / "val"),
        "--target-modes",
        "many,all",
        "--output-dir",
        str(out),
        "--num-episodes",
        "2",
        "--no-progress",
        *[a for o in SMALL for a in ("--set", o)],
        *extra,
    ]
    proc = subprocess.run(
        cmd, cwd=str(cwd or out.parent), capture_output=True, text=True, timeout=900
    )
    return proc.returncode, proc.stdout + proc.stderr


def _records(out):
    with open(out / "rank_00000" / "episodes.jsonl") as fh:
        return [json.loads(line) for line in fh]


def test_scene_root_moves_the_scene_dataset_config(hm3d, tmp_path):
    """From an unrelated cwd, --scene-root finds hm3d_annotated_basis.scene_dataset_config.json
    beside the split folder, and the CPU simulator reads HM3D's <id>.basis.navmesh."""
    from habitat_mosnav import get_config
    from habitat_mosnav.datasets.multi_object_nav_dataset import MultiObjectNavDatasetV1

    cfg = get_config(
        "benchmark/nav/mosnav/mos_hm3d.yaml",
        [
            f"habitat.dataset.data_path={hm3d / 'mosnav' / 'dataset_semantic'}",
            f"habitat.dataset.scenes_dir={hm3d / 'hm3d' / 'val'}",
        ],
    )
    ds = MultiObjectNavDatasetV1(cfg.habitat.dataset)
    want = str(hm3d / "hm3d" / "hm3d_annotated_basis.scene_dataset_config.json")
    assert ds.episodes and {e.scene_dataset_config for e in ds.episodes} == {want}
    assert {os.path.basename(e.scene_id) for e in ds.episodes} == {f"{SID}.basis.glb"}
    rc, log = _eval(hm3d, tmp_path / "cpu", "--simulator", "mosnav", cwd=tmp_path)
    assert rc == 0, log[-2000:]
    recs = _records(tmp_path / "cpu")
    assert len(recs) == 2 and all(r["status"] == "ok" and r["metrics"]["success"] for r in recs), (
        recs
    )


def test_missing_scene_dataset_config_names_the_path_and_the_flag(hm3d, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(hm3d / "hm3d" / "val", moved / "val")  # no config beside it
    cmd_root = ["--scene-root", str(moved / "val")]
    rc, log = _eval(hm3d, tmp_path / "run", "--simulator", "mosnav", *cmd_root)
    last = log.strip().splitlines()[-1]
    assert rc == 2 and "Traceback" not in log, log[-2000:]
    assert (
        str(moved / "hm3d_annotated_basis.scene_dataset_config.json") in last
        and "--scene-dataset-config" in last
    )
    rc, log = _eval(
        hm3d,
        tmp_path / "run2",
        "--simulator",
        "mosnav",
        "--scene-dataset-config",
        str(tmp_path / "nope.json"),
    )
    assert (
        rc == 2 and "--scene-dataset-config" in log.strip().splitlines()[-1] and "nope.json" in log
    )


def test_hm3d_config_without_habitat_sim_is_one_line_with_the_install_command(
    hm3d, tmp_path, monkeypatch, capsys
):
    from habitat_mosnav import simulators
    from habitat_mosnav.evaluation import cli

    monkeypatch.setattr(
        simulators.SimulatorChoice, "available", lambda self: self.name != "habitat-sim"
    )
    rc = cli.main(
        [
            "--config",
            "benchmark/nav/mosnav/mos_hm3d.yaml",
            "--agent",
            "random",
            "--dataset-dir",
            str(hm3d / "mosnav" / "dataset_semantic"),
            "--scene-root",
            str(hm3d / "hm3d" / "val"),
            "--output-dir",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert (
        "needs habitat-sim" in err[0]
        and simulators.HABITAT_SIM_INSTALL in err[0]
        and "--simulator mosnav" in err[0]
    )


@pytest.mark.py39
@pytest.mark.habitat_sim
@pytest.mark.slow
def test_readme_hm3d_command_runs_on_habitat_sim(hm3d, tmp_path):
    """The README's command as written (the HM3D config on Sim-v0; gpu_device_id is -1 on a
    machine without an NVIDIA device): the oracle solves both episodes and the records carry
    habitat-sim's semantic ids read through the scene dataset config."""
    pytest.importorskip("habitat_sim")
    rc, log = _eval(hm3d, tmp_path / "hs", cwd=tmp_path)
    assert rc == 0, log[-3000:]
    recs = _records(tmp_path / "hs")
    assert len(recs) == 2 and all(r["status"] == "ok" and r["metrics"]["success"] for r in recs), (
        recs
    )
