"""scripts/baseline_table.py: the `make baselines` table from real summary.json files."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "baseline_table.py")


def _summary(path, ok, err, **metrics):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"schema_version": 1, "status": "complete", "ok_episode_count": ok,
                   "error_episode_count": err, "metrics": metrics}, f)


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def test_rows_in_order_with_values_from_each_summary(tmp_path):
    _summary(str(tmp_path / "oracle" / "summary.json"), 12, 0, sr=1.0, sr_mos=1.0, sr_moc=1.0,
             f1=1.0, spl_multi=0.98765, precision=1.0, recall=1.0, ftr=0.0, coverage=0.5)
    _summary(str(tmp_path / "random" / "summary.json"), 11, 1, sr=0.0, ftr=None)
    # habitat-baselines layout: eval/ckpt.N/summary.json under the run folder
    _summary(str(tmp_path / "ppo" / "ckpt.3" / "summary.json"), 6, 0, sr=0.5, sr_mos=0.5)
    out = tmp_path / "table.md"
    res = _run(str(tmp_path), "--out", str(out))
    assert res.returncode == 0, res.stderr
    lines = out.read_text().splitlines()
    assert lines[0].startswith("| agent | privileges | episodes (ok/error) | SR | SR MOS |")
    assert [ln.split(" | ")[0] for ln in lines[2:]] == ["| random", "| ppo", "| oracle"]
    assert lines[2].split(" | ")[2:4] == ["11/1", "0.000"]
    assert lines[2].endswith("| – | – |")  # ftr null, coverage missing
    assert "| 12/0 | 1.000 | 1.000 | 1.000 | 1.000 | 0.988 |" in lines[4]
    assert "| 6/0 | 0.500 | 0.500 | – |" in lines[3]
    assert res.stdout == out.read_text()


def test_a_run_without_summary_is_one_line_naming_it(tmp_path):
    (tmp_path / "frontier_gt" / "rank_00000").mkdir(parents=True)
    res = _run(str(tmp_path))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"baseline_table: error: {tmp_path / 'frontier_gt'}: no summary.json (did the run finish?)"]
