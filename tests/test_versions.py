"""What produced a result (issue 24): run.json and summary.json record the package version,
the git commit of the checkout, habitat-lab's and habitat-sim's versions; every command
prints them with --version."""

import importlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys

import pytest

from habitat_mosnav import __version__, versions

from conftest import NO_IMAGES, ONE_SHORT_EPISODE, room_args

# py39: the version a wheel install reports
pytestmark = pytest.mark.py39

COMMANDS = [  # (module with main(argv), prog)
    ("habitat_mosnav.evaluation.cli", "mosnav-eval"),
    ("habitat_mosnav.evaluation.aggregate_cli", "mosnav-aggregate"),
    ("habitat_mosnav.evaluation.report", "mosnav-report"),
    ("habitat_mosnav.scenes.cli", "mosnav-make-scenes"),
    ("habitat_mosnav.dataset_building.cli", "mosnav-build"),
    ("habitat_mosnav.evaluation.maps", "python -m habitat_mosnav.evaluation.maps"),
    ("habitat_mosnav.evaluation.settings", "python -m habitat_mosnav.evaluation.settings"),
]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the package runs from this checkout (3.11 lane, editable), not from an installed wheel (3.9 lane)
FROM_CHECKOUT = os.path.dirname(os.path.abspath(versions.__file__)) == os.path.join(
    REPO, "habitat_mosnav"
)


def _expected_software():
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True)
    return {
        "habitat_mosnav": __version__,
        "commit": head.stdout.strip() if head.returncode == 0 and FROM_CHECKOUT else None,
        "habitat_lab": importlib.metadata.version("habitat-lab"),
    }


@pytest.mark.parametrize("module,prog", COMMANDS)
def test_every_command_has_version(module, prog, capsys):
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{prog} {__version__}")
    assert f"habitat-lab {importlib.metadata.version('habitat-lab')}" in out
    assert f"Python {platform.python_version()}," in out  # 3.9.18 in the HM3D users' lane
    assert "habitat-sim " in out


def test_run_and_summary_record_the_software(tmp_path, open_room):
    from habitat_mosnav.evaluation.cli import main

    out = tmp_path / "run"
    assert (
        main(
            room_args(
                open_room,
                *NO_IMAGES,
                *ONE_SHORT_EPISODE,
                "--output-dir",
                str(out),
            )
        )
        == 0
    )
    expected = _expected_software()
    for name in ("run.json", "summary.json"):
        software = json.loads((out / name).read_text())["software"]
        assert software["habitat_mosnav"] == expected["habitat_mosnav"], name
        assert software["habitat_lab"] == expected["habitat_lab"], name
        assert software["python"] == platform.python_version(), name
        assert software["habitat_sim"] in (versions.ABSENT,) or software["habitat_sim"][0].isdigit()
        if expected["commit"]:  # tests run from a checkout
            assert software["git"]["commit"] == expected["commit"], name
            assert isinstance(software["git"]["dirty"], bool)
        elif not FROM_CHECKOUT:  # an installed wheel has no commit, even inside a git work tree
            assert software["git"] is None, name


def test_resume_after_an_upgrade_is_allowed_and_keeps_the_first_start(tmp_path, open_room):
    from habitat_mosnav.evaluation.cli import main

    out = tmp_path / "run"
    args = room_args(
        open_room, *NO_IMAGES, "--num-episodes", "1", "--max-steps", "3", "--output-dir", str(out)
    )
    assert main(args) == 0
    manifest = json.loads((out / "run.json").read_text())
    manifest["software"]["habitat_mosnav"] = "0.0.1"  # as if started by an older version
    (out / "run.json").write_text(json.dumps(manifest))
    assert main(args + ["--resume"]) == 0
    assert json.loads((out / "run.json").read_text())["software"]["habitat_mosnav"] == "0.0.1"
    assert (
        json.loads((out / "summary.json").read_text())["software"]["habitat_mosnav"] == __version__
    )


def test_no_commit_for_a_copy_outside_this_checkout(tmp_path, monkeypatch):
    repo = tmp_path / "other_repo"
    (repo / "site-packages" / "habitat_mosnav").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.setattr(versions, "_PACKAGE_DIR", str(repo / "site-packages" / "habitat_mosnav"))
    assert versions.git_commit() is None


def test_the_baselines_entry_point_has_our_version_not_hydras():
    # --version needs no habitat-baselines (a base install answers it too)
    proc = subprocess.run(
        [sys.executable, "-m", "habitat_mosnav.run", "--version"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=REPO),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"python -m habitat_mosnav.run {__version__}")


@pytest.mark.parametrize("hidden", ["habitat_baselines", "torch"])
def test_the_baselines_entry_point_without_the_extra_says_how_to_install(hidden):
    """Without the ``[baselines]`` extra, ``python -m habitat_mosnav.run`` was an ImportError
    traceback: now one line naming what is missing and the pip command, exit 2 (the module
    is hidden from ``importlib.util.find_spec`` in the child, as on a base install)."""
    code = (
        "import importlib.util as u, runpy, sys\n"
        "find = u.find_spec\n"
        f"u.find_spec = lambda name, *a: None if name == {hidden!r} else find(name, *a)\n"
        "sys.argv = ['run', '--config-name=ppo_mos_demo']\n"
        "runpy.run_module('habitat_mosnav.run', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=REPO),
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    prefix = "habitat_mosnav.run: error: the PPO baselines need "
    assert line.startswith(prefix)
    # what is missing: the hidden module (on a base install, torch too)
    missing = line[len(prefix) :].split(", not installed here")[0].split(" and ")
    assert hidden in missing
    assert "pip install 'habitat_mosnav[baselines]'" in line
    assert "Traceback" not in proc.stderr and proc.stdout == ""
