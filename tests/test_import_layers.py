"""The import rules of docs/DESIGN.md, as import-linter contracts (.importlinter): lower
layers never import evaluation/agents/baselines/dataset_building; agents never import
evaluation. Runs in `make test`; `lint-imports` from the repository root prints the same."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_contracts_are_kept():
    # no_logo: import-linter >= 2.14 (Python 3.10+); older ones have no logo to hide
    code = (
        "import inspect, sys\nfrom importlinter.cli import lint_imports\n"
        "extra = {'no_logo': True} if 'no_logo' in inspect.signature(lint_imports).parameters else {}\n"
        "sys.exit(lint_imports(config_filename='.importlinter', no_cache=True, **extra))\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in res.stdout
