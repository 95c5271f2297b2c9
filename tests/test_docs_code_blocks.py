"""Every code block of README.md and docs/*.md runs (issue 24): Python blocks in a process
of their own (a warm child of tests/warm_runner.py), shell blocks as bash scripts (slow), in a scratch directory where
``/tmp/`` means that directory. A block that cannot run here says so on the line above it:
``<!-- docs-test: needs HM3D -->`` (or habitat-sim, a VLM server, SLURM), or
``<!-- docs-test: run by tests/<file>.py::<test> -->`` naming the test that runs it.
A Python block whose first line is ``# some/path.py ...`` is that file: it is written into
the scratch directory (where the shell blocks find it, e.g. ``my_agents/my_agent.py``).
JSON and plain blocks are examples of data, not code."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest
import warm_runner

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md"] + sorted(
    os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md"))
)
CODE = {"python", "bash", "sh"}
NEEDS = {"HM3D", "habitat-sim", "a VLM server", "SLURM", "conda"}
MARK = re.compile(r"<!-- docs-test: (.*?) -->")
FILE_LINE = re.compile(r"#\s*([\w./-]+\.py)\b")


def blocks():
    """``(doc, line, language, code, mark)`` for every fenced block with a language."""
    out = []
    for doc in DOCS:
        with open(os.path.join(REPO, doc), encoding="utf-8") as f:
            lines = f.read().split("\n")
        i = 0
        while i < len(lines):
            if lines[i].startswith("```"):
                lang = lines[i][3:].strip()
                j = i + 1
                while not lines[j].startswith("```"):
                    j += 1
                prev = lines[i - 1] if i else ""
                m = MARK.fullmatch(prev.strip())
                out.append(
                    (doc, i + 1, lang, "\n".join(lines[i + 1 : j]), m.group(1) if m else None)
                )
                i = j
            i += 1
    return out


BLOCKS = [b for b in blocks() if b[2] in CODE]


def _id(block):
    return f"{block[0]}:{block[1]}"


def _file_blocks():
    return [
        (FILE_LINE.match(code.split("\n", 1)[0]).group(1), code)
        for _, _, lang, code, mark in BLOCKS
        if lang == "python" and mark is None and FILE_LINE.match(code.split("\n", 1)[0])
    ]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs")
    for path, code in _file_blocks():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code + "\n")
        if not (target.parent / "__init__.py").exists() and target.parent != root:
            (target.parent / "__init__.py").write_text("")
    return root


def _env(root):
    # the source tree on the path, except in the Python 3.9 lane, which tests the installed wheel
    paths = [str(root)] + ([] if os.environ.get("MOSNAV_TEST_INSTALLED_WHEEL") == "1" else [REPO])
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(paths),
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    )
    env.pop("MOSNAV_API_KEY", None)
    return env


@pytest.mark.py39
def test_every_code_block_is_run_or_marked():
    assert len(BLOCKS) > 20
    for doc, line, lang, code, mark in BLOCKS:
        if mark is None:
            continue
        if mark.startswith("needs "):
            assert mark[len("needs ") :] in NEEDS, f"{doc}:{line}: unknown need {mark!r}"
            continue
        m = re.match(r"run by (tests/[\w/]+\.py)::(\w+)", mark)
        assert m, (
            f"{doc}:{line}: a mark is 'needs ...' or 'run by tests/FILE.py::TEST', got {mark!r}"
        )
        path, name = m.groups()
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            assert re.search(rf"^def {name}\(", f.read(), re.M), (
                f"{doc}:{line}: {path} has no {name}"
            )


@pytest.mark.py39
@pytest.mark.parametrize("block", [b for b in BLOCKS if b[2] == "python" and b[4] is None], ids=_id)
def test_python_block_runs(block, scratch):
    doc, line, _, code, _ = block
    proc = warm_runner.run(
        [sys.executable, "-c", code],
        cwd=scratch,
        env=_env(scratch),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{doc}:{line}:\n{proc.stderr[-3000:]}"


#: appended to a README block run on habitat-sim: it did run on Sim-v0
ON_HABITAT_SIM = """
_sim = (globals().get("env") or benchmark._env).sim
assert type(_sim).__module__.startswith("habitat.sims.habitat_simulator"), type(_sim)
"""


@pytest.mark.habitat_sim
@pytest.mark.parametrize(
    "block",
    [
        b
        for b in BLOCKS
        if (b[0] == "README.md" or (b[0] == "docs/EVALUATION.md" and "habitat.Benchmark(" in b[3]))
        and b[2] == "python"
        and b[4] is None
        and "mosnav/mos_demo.yaml" in b[3]
    ],
    ids=_id,
)
def test_habitat_blocks_run_on_habitat_sim(block, scratch):
    """The README's ``habitat.Env`` loop and docs/EVALUATION.md's ``habitat.Benchmark`` snippet
    on habitat-sim's
    ``Sim-v0`` (``mos_demo_habitat_sim.yaml``: the same demo config, the real simulator)."""
    pytest.importorskip("habitat_sim")
    doc, line, _, code, _ = block
    code = code.replace("mosnav/mos_demo.yaml", "mosnav/mos_demo_habitat_sim.yaml") + ON_HABITAT_SIM
    proc = warm_runner.run(
        [sys.executable, "-c", code],
        cwd=scratch,
        env=_env(scratch),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{doc}:{line}:\n{proc.stderr[-3000:]}"


# in order, in one scratch directory (one pytest-xdist worker: conftest.IN_ORDER): a block uses
# the files an earlier one wrote
@pytest.mark.slow
@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b[2] in ("bash", "sh") and b[4] is None], ids=_id
)
def test_shell_block_runs(block, scratch):
    doc, line, _, code, _ = block
    script = "set -euo pipefail\n" + code.replace("/tmp/", f"{scratch}/tmp/")
    (scratch / "tmp").mkdir(exist_ok=True)
    env = _env(scratch)
    # the package's commands (mosnav-eval, ...) as warm children: the block's own processes,
    # exit codes and signals, without 4 s of importing habitat per command
    shims = warm_runner.command_shims(str(scratch / "bin"))
    env["PATH"] = shims + os.pathsep + env["PATH"]
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, f"{doc}:{line}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
