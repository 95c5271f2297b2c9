"""The metric math and the result-file layer import neither habitat nor torch (SPEC §8).

The package's own ``__init__`` registers the Habitat plugin (and so imports habitat), so
the check loads these modules under a bare package object that skips that ``__init__``.
"""

import os
import subprocess
import sys

import habitat_mosnav

CODE = r"""
import sys, types
pkg = types.ModuleType("habitat_mosnav"); pkg.__path__ = [sys.argv[1]]
sys.modules["habitat_mosnav"] = pkg
import habitat_mosnav.metrics
import habitat_mosnav.evaluation
import habitat_mosnav.evaluation.aggregate_cli
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("habitat", "habitat_sim", "torch", "habitat_baselines"))
print("HEAVY", heavy)
"""


def test_metrics_and_results_import_light():
    pkg_dir = os.path.dirname(habitat_mosnav.__file__)
    proc = subprocess.run([sys.executable, "-c", CODE, pkg_dir], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "HEAVY []" in proc.stdout, proc.stdout
