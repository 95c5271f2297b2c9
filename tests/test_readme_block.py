"""scripts/readme_block.py writes a generated block where it lives now that the README is for
users: the baselines table in docs/BASELINES.md, the wheel size in docs/DEVELOPMENT.md; a
name no file holds is exit 2 and nothing is written."""

import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _copy(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "docs").mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "readme_block.py"), tmp_path / "scripts")
    shutil.copy(os.path.join(REPO, "README.md"), tmp_path)
    for name in os.listdir(os.path.join(REPO, "docs")):
        if name.endswith(".md"):
            shutil.copy(os.path.join(REPO, "docs", name), tmp_path / "docs")
    return tmp_path


def _run(root, name, text):
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "readme_block.py"), name],
        input=text,
        capture_output=True,
        text=True,
    )


def test_wheel_size_goes_into_development_md(tmp_path):
    root = _copy(tmp_path)
    proc = _run(root, "wheel-size", "the wheel is 9.9 MB (9,900,000 bytes), the sdist 9.8 MB\n")
    assert proc.returncode == 0, proc.stderr
    doc = (root / "docs" / "DEVELOPMENT.md").read_text()
    assert (
        "<!-- wheel-size:start -->the wheel is 9.9 MB (9,900,000 bytes), the sdist 9.8 MB"
        "<!-- wheel-size:end -->" in doc
    )
    assert (root / "README.md").read_text() == open(os.path.join(REPO, "README.md")).read()


def test_baselines_table_goes_into_baselines_md(tmp_path):
    root = _copy(tmp_path)
    proc = _run(root, "baselines-table", "| run |\n|---|\n| `x` |\n")
    assert proc.returncode == 0, proc.stderr
    doc = (root / "docs" / "BASELINES.md").read_text()
    assert (
        "<!-- baselines-table:start -->\n| run |\n|---|\n| `x` |\n<!-- baselines-table:end -->"
        in doc
    )


def test_a_block_no_file_holds_is_refused(tmp_path):
    root = _copy(tmp_path)
    before = {p: p.read_text() for p in [root / "README.md", *(root / "docs").glob("*.md")]}
    proc = _run(root, "no-such-block", "x\n")
    assert proc.returncode == 2
    assert "no single 'no-such-block' block" in proc.stderr
    assert {p: p.read_text() for p in before} == before
