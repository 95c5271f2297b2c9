"""``make dist`` on a git checkout: it builds and checks the sdist and the wheel and prints
their sizes, and leaves every tracked file as it was (it rewrote README.md's size line,
leaving the checkout dirty; ``make readme-dist`` does that now, on request)."""

import os
import shutil
import subprocess
import sys

import pytest

from test_packaging import REPO, SOURCES


@pytest.mark.slow
def test_make_dist_leaves_tracked_files_untouched(tmp_path):
    pytest.importorskip("build")
    pytest.importorskip("twine")
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.skip("needs make and git")
    src = tmp_path / "checkout"
    src.mkdir()
    for name in SOURCES + ["Makefile", "scripts", ".gitignore"]:
        path = os.path.join(REPO, name)
        if os.path.isdir(path):
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, src / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(src)]
    subprocess.run(git[:5] + ["init", "-q", str(src)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    # this interpreter's environment stands in for `make setup`'s .venv (already set up)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".base-installed").touch()
    proc = subprocess.run(
        [
            "make",
            "-C",
            str(src),
            "dist",
            f"VENV={venv}",
            f"PY={sys.executable}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the wheel is " in proc.stdout and "the sdist " in proc.stdout
    status = subprocess.run(
        git + ["status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout
    assert status == ""
    assert sorted(p.suffix for p in (src / "dist").iterdir()) == [".gz", ".whl"]
