"""``mosnav-report``: leaderboard numbers against the runs' summary.json, bootstrap
intervals, runs with errors / incomplete / without summary marked, and the page rendered
in a real headless browser (Debian's chromium; ``make test`` installs it through
scripts/ensure_chromium.sh)."""
import csv
import json
import os
import re
import shutil
import subprocess

import imageio
import numpy as np
import pytest

from habitat_mosnav.evaluation.report import CSV_COLUMNS, bootstrap_interval, main

RUN_FIELDS = ("status", "expected_episode_count", "unique_record_count", "ok_episode_count",
              "error_episode_count")
TEXT_COLUMNS = ("run", "status", "official", "benchmark", "agent", "config", "notes")


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no chromium on PATH: run scripts/ensure_chromium.sh (make test does)")


def _summary(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def report(room_runs, tmp_path_factory):
    """A report over: scripted (complete), broken (an error record), partial (a record
    removed: incomplete) and old (no summary.json)."""
    from habitat_mosnav.evaluation.results import summarize, write_summary

    root = tmp_path_factory.mktemp("report")
    partial = str(root / "partial")
    shutil.copytree(room_runs["scripted"], partial)
    jsonl = os.path.join(partial, "rank_00000", "episodes.jsonl")
    with open(jsonl) as f:
        lines = f.readlines()
    with open(jsonl, "w") as f:
        f.writelines(lines[1:])
    write_summary(partial, summarize(partial, expected_episode_count=2))
    old = str(root / "old")
    shutil.copytree(room_runs["scripted"], old)
    os.unlink(os.path.join(old, "summary.json"))
    runs = [room_runs["scripted"], room_runs["broken"], partial, old]
    out = str(root / "out")
    assert main([*runs, "--out", out, "--no-progress"]) == 0
    with open(os.path.join(out, "leaderboard.csv"), newline="") as f:
        rows = {r["run"]: r for r in csv.DictReader(f)}
    return {"out": out, "runs": dict(zip(["scripted", "broken", "partial", "old"], runs)),
            "rows": rows}


def test_bootstrap_interval_by_hand():
    # two episodes 1 and 0: resample means are 0, 0.5 or 1 -> the 95 % interval is [0, 1]
    assert bootstrap_interval([1.0, 0.0], 2000, seed=0) == (0.0, 1.0)
    assert bootstrap_interval([0.5] * 7) == (0.5, 0.5)
    assert bootstrap_interval([None, float("nan")]) == (None, None)
    lo, hi = bootstrap_interval(list(np.linspace(0, 1, 50)), 2000, seed=3)
    assert 0.3 < lo < 0.5 < hi < 0.7  # about mean +- 1.96 * 0.29 / sqrt(50)
    assert bootstrap_interval([0.1, 0.7, 0.3], 500, seed=5) == bootstrap_interval([0.1, 0.7, 0.3], 500, seed=5)


def test_every_number_of_leaderboard_csv_is_the_summary_json(report):
    rows = report["rows"]
    assert list(rows) == ["scripted", "broken", "partial", "old"]
    with open(os.path.join(report["out"], "leaderboard.csv"), newline="") as f:
        assert tuple(next(csv.reader(f))) == CSV_COLUMNS
    for name, run in report["runs"].items():
        row = rows[name]
        if name == "old":  # no summary.json: the summary the records give
            from habitat_mosnav.evaluation.results import summarize

            summary = summarize(run)
        else:
            summary = _summary(run)
        checked = 0
        for column, text in row.items():
            if column in TEXT_COLUMNS or column.endswith(("_lo", "_hi")):
                continue
            if column in RUN_FIELDS:
                expected = summary[column]
            else:
                expected = summary["metrics"][column]
            if expected is None:
                assert text == "", (name, column)
            else:
                assert float(text) == float(expected), (name, column, text, expected)
            checked += 1
        assert checked == len(CSV_COLUMNS) - len(TEXT_COLUMNS) - 6
        assert row["status"] == summary["status"]
        for board in ("sr", "f1", "spl_multi"):
            if row[board]:
                lo, hi = float(row[board + "_lo"]), float(row[board + "_hi"])
                assert 0.0 <= lo <= float(row[board]) <= hi <= 1.0


def test_values_by_hand_and_marks(report):
    rows = report["rows"]
    s = rows["scripted"]
    # many: success (F = 2 = target_count); all: turning on the spot, no claim -> 0
    assert float(s["sr"]) == 0.5 and (float(s["sr_lo"]), float(s["sr_hi"])) == (0.0, 1.0)
    # many: tp 2, fp 2 (a false claim, a duplicate): P = 0.5, R = 1, F1 = 2/3; all: 0
    assert float(s["f1"]) == pytest.approx(1 / 3)
    assert s["notes"] == "" and s["status"] == "complete" and s["official"] == ""
    assert (s["num_episodes_many"], s["num_episodes_all"], s["error_episode_count"]) == ("1", "1", "0")
    b = rows["broken"]
    assert b["status"] == "completed_with_errors" and "1 error episode(s)" in b["notes"]
    assert (b["ok_episode_count"], b["error_episode_count"]) == ("1", "1")
    p = rows["partial"]
    assert p["status"] == "incomplete" and p["notes"].startswith("incomplete: 1 of 2 episodes")
    assert "no summary.json" in rows["old"]["notes"]
    md = open(os.path.join(report["out"], "leaderboard.md")).read()
    assert "| `scripted` | complete |" in md
    for name in ("broken", "partial", "old"):
        assert f"| `{name}` ⚠ |" in md and f"- ⚠ `{name}`:" in md
    assert "0.500 [0.000, 1.000]" in md


def test_page_renders_in_headless_chromium_with_maps_and_sorting(report, tmp_path):
    out = report["out"]
    page = os.path.join(out, "index.html")
    text = open(page, encoding="utf-8").read()
    assert "http://" not in text and "https://" not in text  # self-contained
    links = re.findall(r'href="(maps/[^"]+\.png)"', text)
    assert len(links) == 2 + 1 + 2  # scripted, partial (one record) and old have maps
    for link in links:
        assert os.path.exists(os.path.join(out, link))
    shot = str(tmp_path / "page.png")
    base = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--disable-dev-shm-usage"]
    subprocess.run(base + ["--window-size=1400,2200", f"--screenshot={shot}", "file://" + page],
                   check=True, capture_output=True, timeout=120)
    img = imageio.imread(shot)[..., :3].astype(float)
    assert img.shape[:2] == (2200, 1400)
    assert img.std() > 20  # not a blank page
    assert (img.sum(axis=2) < 600).mean() > 0.03  # text, tables and plots drawn
    # the inline script sorts the episode table by spl_multi, descending (#sort=-spl_multi)
    dom = subprocess.run(base + ["--virtual-time-budget=3000", "--dump-dom",
                                 "file://" + page + "#sort=-spl_multi"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    table = dom[dom.index('id="episodes"'):]
    assert 'data-sorted="' in table[:200]
    values = re.findall(r'<tr[^>]*>(?:<td[^>]*>.*?</td>){8}<td data-v="([^"]*)">', table)
    nums = [float(v) if v else -np.inf for v in values]
    assert len(nums) == 7 and nums == sorted(nums, reverse=True)


def test_bad_runs_are_one_line_errors(report, tmp_path, capsys):
    assert main([str(tmp_path / "nope"), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope: no such run directory" in err[0]
    bad = str(tmp_path / "bad")
    shutil.copytree(report["runs"]["scripted"], bad)
    with open(os.path.join(bad, "summary.json"), "w") as f:
        f.write("{not json")
    assert main([bad, "--out", str(tmp_path / "o2"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "summary.json: invalid JSON" in err[0]


def test_official_flag_and_benchmark_come_from_summary(room_runs, tmp_path):
    from habitat_mosnav.evaluation.report import board_row, load_run

    run = str(tmp_path / "bench")
    shutil.copytree(room_runs["scripted"], run)
    summary = _summary(run)
    summary["benchmark"] = {"name": "demo/official", "version": 1, "kind": "official",
                            "dataset_fingerprint": "abc", "deviations": ["--num-episodes 2"],
                            "official": False, "not_official_because": ["--num-episodes 2"]}
    with open(os.path.join(run, "summary.json"), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(run, "run.json"), "w") as f:
        json.dump({"agent": {"spec": "oracle"}, "config": "benchmark/nav/mosnav/mos_demo.yaml"}, f)
    row = board_row(load_run(run, resamples=100))
    assert (row["official"], row["benchmark"]) == (False, "demo/official v1")
    assert (row["agent"], row["config"]) == ("oracle", "benchmark/nav/mosnav/mos_demo.yaml")
    summary["benchmark"]["official"] = True
    with open(os.path.join(run, "summary.json"), "w") as f:
        json.dump(summary, f)
    assert board_row(load_run(run, resamples=100))["official"] is True


def test_report_maps_draws_missing_maps_from_the_records(room_runs, tmp_path):
    run = str(tmp_path / "nomaps")
    shutil.copytree(room_runs["scripted"], run)
    shutil.rmtree(os.path.join(run, "maps"))
    out = str(tmp_path / "out")
    assert main([run, "--out", out, "--maps", "--no-progress",
                 "--set", f"habitat.dataset.data_path={room_runs['data']}",
                 "--set", f"habitat.dataset.scenes_dir={room_runs['scenes']}",
                 "--set", "habitat.dataset.target_modes=[many,all]"]) == 0
    links = re.findall(r'href="(maps/[^"]+\.png)"', open(os.path.join(out, "index.html")).read())
    assert sorted(links) == ["maps/nomaps/val__testScene01__q0-all-0.png",
                             "maps/nomaps/val__testScene01__q0-many-0.png"]
    for link in links:
        drawn = imageio.imread(os.path.join(out, link))
        saved = imageio.imread(os.path.join(room_runs["scripted"], "maps", os.path.basename(link)))
        assert np.array_equal(drawn, saved)
