"""``mosnav-report``: leaderboard numbers against the runs' summary.json, bootstrap
intervals, runs with errors / incomplete / without summary marked, and the page rendered
in a real headless browser (Debian's chromium; ``make test`` installs it through
scripts/ensure_chromium.sh)."""

import contextlib
import csv
import io
import json
import os
import re
import shutil
import subprocess

import imageio
import numpy as np
import pytest

from conftest import chromium, probe_page, read_records, write_records_run
from habitat_mosnav.evaluation.report import main
from habitat_mosnav.evaluation.report.data import CSV_COLUMNS, bootstrap_interval

RUN_FIELDS = (
    "status",
    "expected_episode_count",
    "unique_record_count",
    "ok_episode_count",
    "error_episode_count",
)
TEXT_COLUMNS = ("run", "status", "official", "benchmark", "agent", "config", "notes")


def _summary(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def report(room_runs, tmp_path_factory):
    """A report over: scripted (complete), broken (an error record), partial (a record
    removed: incomplete) and old (no summary.json)."""
    from habitat_mosnav.evaluation.summary import summarize, write_summary

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
    return {
        "out": out,
        "runs": dict(zip(["scripted", "broken", "partial", "old"], runs)),
        "rows": rows,
    }


def test_bootstrap_interval_by_hand():
    # two episodes 1 and 0: resample means are 0, 0.5 or 1 -> the 95 % interval is [0, 1]
    assert bootstrap_interval([1.0, 0.0], 2000, seed=0) == (0.0, 1.0)
    assert bootstrap_interval([0.5] * 7) == (0.5, 0.5)
    assert bootstrap_interval([None, float("nan")]) == (None, None)
    lo, hi = bootstrap_interval(list(np.linspace(0, 1, 50)), 2000, seed=3)
    assert 0.3 < lo < 0.5 < hi < 0.7  # about mean +- 1.96 * 0.29 / sqrt(50)
    assert bootstrap_interval([0.1, 0.7, 0.3], 500, seed=5) == bootstrap_interval(
        [0.1, 0.7, 0.3], 500, seed=5
    )
    assert bootstrap_interval([0.3]) == (0.3, 0.3)  # one episode: every resample is it


def test_bootstrap_interval_is_the_seeded_draws_by_hand():
    """The same draws with numpy alone: the seed's generator gives (resamples, episodes)
    indices; each resample's mean skips None/NaN, a resample with no finite value is
    skipped; the interval is the 2.5 % and 97.5 % quantiles of those means."""
    values = [0.2, None, 0.9, 0.4, float("nan"), 0.6]
    v = np.array([np.nan if x is None else x for x in values])
    draws = v[np.random.default_rng(7).integers(0, len(v), size=(2000, len(v)))]
    finite = np.isfinite(draws).any(axis=1)
    assert not finite.all()  # (2/6)^6 per resample: a few have no finite value
    expected = np.quantile(np.nanmean(draws[finite], axis=1), [0.025, 0.975])
    assert 0.2 < expected[0] < expected[1] < 0.9  # inside the extremes: the quantiles count
    assert bootstrap_interval(values, 2000, seed=7) == pytest.approx(tuple(expected), rel=1e-12)


def test_every_number_of_leaderboard_csv_is_the_summary_json(report):
    rows = report["rows"]
    assert list(rows) == ["scripted", "broken", "partial", "old"]
    with open(os.path.join(report["out"], "leaderboard.csv"), newline="") as f:
        assert tuple(next(csv.reader(f))) == CSV_COLUMNS
    for name, run in report["runs"].items():
        row = rows[name]
        if name == "old":  # no summary.json: the summary the records give
            from habitat_mosnav.evaluation.summary import summarize

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
    assert (s["num_episodes_many"], s["num_episodes_all"], s["error_episode_count"]) == (
        "1",
        "1",
        "0",
    )
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


def _episode_column(page, key):
    """The cell texts of one column of the page's episode table (by its data-key)."""
    table = page[page.index('id="episodes"') :]
    table = table[: table.index("</table>")]
    keys = re.findall(r'<th[^>]*data-key="([^"]+)"', table)
    col = keys.index(key)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table[table.index("<tbody>") :], re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[col] for row in rows]


def test_time_to_first_target_is_an_integer_in_records_summary_and_page(report):
    # a step count (the metric registry's integer format): 27, never 27.000
    scripted = report["runs"]["scripted"]
    values = {
        r["episode"]["target_mode"]: r["metrics"]["time_to_first_target"]
        for r in read_records(scripted)
    }
    assert type(values["many"]) is int and values["all"] is None  # all: no claim at all
    mean = _summary(scripted)["metrics"]["time_to_first_target"]
    assert mean == values["many"] and type(mean) is int  # one value: a whole mean
    assert report["rows"]["scripted"]["time_to_first_target"] == str(values["many"])
    page = open(os.path.join(report["out"], "index.html"), encoding="utf-8").read()
    shown = _episode_column(page, "time_to_first_target")
    assert str(values["many"]) in shown and "–" in shown
    assert all(re.fullmatch(r"\d+|–", text) for text in shown), shown
    assert re.search(rf'<td data-v="{float(values["many"])!r}">{values["many"]}</td>', page)
    # the Markdown leaderboard: in each table (the board, by goal type) as many cells in
    # every row as in its header
    md = open(os.path.join(report["out"], "leaderboard.md"), encoding="utf-8").read()
    tables = [
        [line for line in block.splitlines() if line.startswith("| ")] for block in md.split("\n\n")
    ]
    tables = [rows for rows in tables if rows]
    assert len(tables) == 2 and "| TTFT |" in tables[0][0], md
    for rows in tables:
        assert len({len(re.split(r"(?<!\\)\|", line)) for line in rows}) == 1, md


def test_page_renders_in_headless_chromium_with_maps_and_sorting(report, tmp_path):
    out = report["out"]
    page = os.path.join(out, "index.html")
    text = open(page, encoding="utf-8").read()
    assert "http://" not in text and "https://" not in text  # self-contained
    links = re.findall(r'href="(maps/[^"]+\.png)"', text)
    # scripted, partial (one record) and old have maps: each linked from the episode table
    # and from its episode view
    assert len(set(links)) == 2 + 1 + 2 and len(links) == 2 * len(set(links))
    for link in links:
        assert os.path.exists(os.path.join(out, link))
    shot = str(tmp_path / "page.png")
    base = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--disable-dev-shm-usage",
    ]
    subprocess.run(
        base + ["--window-size=1400,2200", f"--screenshot={shot}", "file://" + page],
        check=True,
        capture_output=True,
        timeout=120,
    )
    img = imageio.imread(shot)[..., :3].astype(float)
    assert img.shape[:2] == (2200, 1400)
    assert img.std() > 20  # not a blank page
    assert (img.sum(axis=2) < 600).mean() > 0.03  # text, tables and plots drawn
    # the inline script sorts the episode table by spl_multi, descending (#sort=-spl_multi)
    dom = subprocess.run(
        base + ["--virtual-time-budget=3000", "--dump-dom", "file://" + page + "#sort=-spl_multi"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    table = dom[dom.index('id="episodes"') :]
    assert 'data-sorted="' in table[:200]
    values = re.findall(r'<tr[^>]*>(?:<td[^>]*>.*?</td>){8}<td[^>]*? data-v="([^"]*)"', table)
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
    from habitat_mosnav.evaluation.report.data import load_run
    from habitat_mosnav.evaluation.report.leaderboard import board_row

    run = str(tmp_path / "bench")
    shutil.copytree(room_runs["scripted"], run)
    summary = _summary(run)
    summary["benchmark"] = {
        "name": "demo/official",
        "version": 1,
        "kind": "official",
        "dataset_fingerprint": "abc",
        "deviations": ["--num-episodes 2"],
        "official": False,
        "not_official_because": ["--num-episodes 2"],
    }
    with open(os.path.join(run, "summary.json"), "w") as f:
        json.dump(summary, f)
    for where in (run, os.path.join(run, "rank_00000")):  # each rank holds the run's manifest
        with open(os.path.join(where, "run.json"), "w") as f:
            json.dump(
                {"agent": {"spec": "oracle"}, "config": "benchmark/nav/mosnav/mos_demo.yaml"}, f
            )
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
    assert (
        main(
            [
                run,
                "--out",
                out,
                "--maps",
                "--no-progress",
                "--set",
                f"habitat.dataset.data_path={room_runs['data']}",
                "--set",
                f"habitat.dataset.scenes_dir={room_runs['scenes']}",
                "--set",
                "habitat.dataset.target_modes=[many,all]",
            ]
        )
        == 0
    )
    links = set(
        re.findall(r'href="(maps/[^"]+\.png)"', open(os.path.join(out, "index.html")).read())
    )
    assert sorted(links) == [
        "maps/nomaps/val__testScene01__q0-all-0.png",
        "maps/nomaps/val__testScene01__q0-many-0.png",
    ]
    for link in links:
        drawn = imageio.imread(os.path.join(out, link))
        saved = imageio.imread(os.path.join(room_runs["scripted"], "maps", os.path.basename(link)))
        assert np.array_equal(drawn, saved)


# ----------------------------------------------------------------------------- demo report

#: Reads the laid-out page into ``<pre id="measure">`` (JSON) for ``--dump-dom``.
MEASURE_JS = """
<script>
window.addEventListener('load', function () {
  function box(el) { var r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
  var out = {inner: window.innerWidth, scroll: document.documentElement.scrollWidth,
             board: box(document.getElementById('leaderboard')),
             head: Array.prototype.map.call(document.querySelectorAll('#leaderboard th'),
                                            function (th) { return th.textContent; }),
             swatches: {}, views: {}};
  document.querySelectorAll('#leaderboard tbody tr').forEach(function (tr) {
    out.swatches[tr.cells[0].getAttribute('data-v')] = getComputedStyle(
        tr.querySelector('.swatch')).backgroundColor;
  });
  document.querySelectorAll('section.episode').forEach(function (s) {
    out.views[s.id] = Array.prototype.map.call(s.querySelectorAll('figure.run-map img'),
                                               function (img) { return box(img.closest('figure')); });
  });
  var pre = document.createElement('pre'); pre.id = 'measure';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>
"""


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    """``make demo`` in small: the oracle (maps and videos) on two demo episodes, random
    (maps) on the first of them, random replayed with ``--diagnose`` (as the Makefile's
    demo target does), and their report."""
    from habitat_mosnav.evaluation.cli import main as eval_main
    from habitat_mosnav.evaluation.replay_cli import main as replay_main

    root = tmp_path_factory.mktemp("demo_report")
    common = ["--space-coverage-samples", "0", "--no-progress", "--save-maps"]
    assert (
        eval_main(
            [
                "--agent",
                "oracle",
                "--num-episodes",
                "2",
                "--save-video",
                "mp4",
                "--output-dir",
                str(root / "oracle"),
                *common,
            ]
        )
        == 0
    )
    assert (
        eval_main(
            [
                "--agent",
                "random",
                "--num-episodes",
                "1",
                "--max-steps",
                "60",
                "--output-dir",
                str(root / "random"),
                *common,
            ]
        )
        == 0
    )
    with contextlib.redirect_stdout(io.StringIO()):
        assert replay_main([str(root / "random"), "--diagnose", "--no-progress"]) == 0
    out = str(root / "report")
    assert (
        main(
            [
                str(root / "oracle"),
                str(root / "random"),
                "--out",
                out,
                "--no-progress",
                "--bootstrap",
                "200",
            ]
        )
        == 0
    )
    return {"root": str(root), "out": out}


def _measure(out, tmp_path, width=1280):
    """The page of report ``out`` laid out at ``width`` px (a copy with MEASURE_JS, so its
    relative links resolve), and its DOM."""
    shutil.copytree(out, tmp_path / "page")
    return probe_page(tmp_path / "page" / "index.html", MEASURE_JS, "measure", width)


def test_demo_report_fits_1280px_with_glossary_and_episode_maps_side_by_side(demo_report, tmp_path):
    out = demo_report["out"]
    m, dom = _measure(out, tmp_path)
    assert m["inner"] == 1280
    assert m["scroll"] <= 1280, f"page scrolls sideways: {m['scroll']} px"
    assert m["board"][2] <= 1280  # the main table ends inside the window
    assert m["head"] == ["run", "SR", "F1", "SPL-multi", "episodes", "benchmark", "status"]
    # the diagnostics are one click away, with every SPEC §5 diagnostic
    group = dom[dom.index('id="diagnostics-group"') :]
    scored = ("PE", "TSE (MOS)", "RTSR", "FTR", "OER-target", "OER-space")
    for label in ("precision", "recall", *scored):
        assert f">{label}</th>" in group[: group.index("</details>")], label
    # glossary: a meaning and a SPEC section for each column; tooltips on the headers
    gloss = dom[dom.index('id="glossary"') :]
    for label in ("SR", "F1", "SPL-multi", *scored):
        entry = re.search(
            rf"<dt[^>]*>{re.escape(label)}</dt><dd>([^<]{{20,}})<span class=\"spec\">SPEC §\d",
            gloss,
        )
        assert entry, label
        assert re.search(
            rf'<th[^>]* title="[^"]*SPEC §\d[^"]*"[^>]*>{re.escape(label)}</th>', dom
        ), label
    # the episode both runs played: two maps side by side (their figures), inside the
    # window; its video linked
    key = "ep-val__Cukxndkh48K__q0001-all-0"
    boxes = m["views"][key]
    assert len(boxes) == 2
    (l0, t0, r0, _), (l1, t1, r1, _) = boxes
    assert t0 == t1 and r0 <= l1 and r1 <= 1280 and r0 - l0 > 400
    section = dom[dom.index(f'id="{key}"') :]
    section = section[: section.index("</section>")]
    srcs = re.findall(r'<img[^>]* src="([^"]+)"', section)
    assert srcs == [
        "maps/oracle/val__Cukxndkh48K__q0001-all-0.png",
        "maps/random/val__Cukxndkh48K__q0001-all-0.png",
    ]
    assert "SUCCESS" in section and "FAILURE" in section
    video = re.findall(r'href="(videos/oracle/[^"]+\.mp4)"', section)
    assert video == ["videos/oracle/val__Cukxndkh48K__q0001-all-0.mp4"]
    for rel in srcs + video:
        assert os.path.getsize(os.path.join(out, rel)) > 1000
    # the other episode: the oracle's map, and random marked as not having it
    other = dom[dom.index('id="ep-val__Cukxndkh48K__q0001-many-0"') :]
    assert "random</b>: not in this run" in other[: other.index("</section>")]


def test_demo_report_keeps_one_colour_per_run_and_notes_missing_values(demo_report, tmp_path):
    out = demo_report["out"]
    with open(os.path.join(out, "plots.json")) as f:
        data = json.load(f)
    page = open(os.path.join(out, "index.html"), encoding="utf-8").read()
    embedded = re.search(
        r"<script type='application/json' id='plot-data'>(.*?)</script>", page, re.S
    )
    assert "<" not in embedded.group(1) and json.loads(embedded.group(1)) == data
    colors = data["colors"]
    assert data["runs"] == ["oracle", "random"] and len(set(colors.values())) == 2
    plots = {p["key"]: p for p in data["plots"]}
    assert set(plots) == {"by_mode", "distributions", "oer_ftr", "by_count", "why_fail"}
    for plot in data["plots"]:  # the colour each artist was drawn with
        for s in plot["series"]:
            assert s["color"] == colors[s["run"]], (plot["key"], s)
    drawn = {
        run: [p["key"] for p in data["plots"] if any(s["run"] == run for s in p["series"])]
        for run in data["runs"]
    }
    assert drawn["oracle"] == ["by_mode", "distributions", "oer_ftr", "by_count"]
    assert "by_mode" in drawn["random"] and "by_count" in drawn["random"]
    # random never claimed a target: no PE, no OER-target; noted, not silently dropped
    assert "pe" in plots["distributions"]["missing"]["random"]
    assert plots["oer_ftr"]["missing"]["random"].startswith("no OER-target")
    assert "Not in this plot: random (no OER-target" in page
    # the tables' swatches are the plots' colours
    m, _ = _measure(out, tmp_path)
    from matplotlib.colors import to_hex

    for run, css in m["swatches"].items():
        rgb = [int(v) / 255 for v in re.findall(r"\d+", css)[:3]]
        assert to_hex(rgb) == colors[run], (run, css)


def test_demo_report_warns_of_different_episode_sets_and_compares_the_common_one(demo_report):
    page = open(os.path.join(demo_report["out"], "index.html"), encoding="utf-8").read()
    assert (
        'id="episode-set-warning"' in page
        and "oracle 2, random 1 episodes; 1 with an ok record" in page
    )
    table = page[page.index('id="common-episodes"') :]
    table = table[: table.index("</table>")]
    sr = re.findall(r'<td[^>]*data-v="(oracle|random)"[^>]*>.*?</td><td data-v="([^"]*)"', table)
    success = {}
    for run in ("oracle", "random"):
        rec = [
            r
            for r in read_records(os.path.join(demo_report["root"], run))
            if r["episode_key"] == "val::Cukxndkh48K::q0001-all-0"
        ][0]
        success[run] = rec["metrics"]["success"]
    assert {run: float(v) for run, v in sr} == success == {"oracle": 1.0, "random": 0.0}
    # the leaderboard's own SR stays each run's summary value (over its own episodes)
    board = page[page.index('id="leaderboard"') :]
    assert re.search(r'data-v="oracle">.*?</td><td data-v="1.0"', board[: board.index("</table>")])


def test_a_run_name_with_markup_stays_text_in_the_page_and_its_plot_data(room_runs, tmp_path):
    name = "a<!--<script>b"  # a directory name cannot hold "/", so no "</script>": "<!--" can
    run = tmp_path / name
    shutil.copytree(room_runs["scripted"], run)
    out = tmp_path / "out"
    assert main([str(run), "--out", str(out), "--no-progress", "--bootstrap", "10"]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert name not in page and "a&lt;!--&lt;script&gt;b" in page
    embedded = re.search(
        r"<script type='application/json' id='plot-data'>(.*?)</script>", page, re.S
    )
    assert "<" not in embedded.group(1)
    data = json.loads(embedded.group(1))
    assert data["runs"] == [name] and data == json.loads((out / "plots.json").read_text())


def test_run_name_from_run_json_is_a_plain_file_name_only(tmp_path):
    """A habitat-baselines evaluation names itself (run.json ``run_name``, issue 24); the
    name becomes a folder under maps/, so anything but a plain file name is ignored."""
    from habitat_mosnav.evaluation.report.data import unique_names

    runs = []
    for i, name in enumerate(["ppo_mos_demo_ckpt.0", "../escape", "a/b", ".."]):
        run = tmp_path / f"ckpt.{i}"
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"run_name": name}))
        runs.append(str(run))
    assert unique_names(runs) == ["ppo_mos_demo_ckpt.0", "ckpt.1", "ckpt.2", "ckpt.3"]


def test_report_splits_results_by_goal_type(tmp_path):
    """leaderboard_by_goal_type.csv, leaderboard.md and the page (read back from headless
    chromium's DOM) hold each run's SR / F1 / SPL-multi per goal type; values by hand
    (spl_multi = 0.5 * success in write_records_run)."""
    mixed = write_records_run(
        tmp_path / "mixed",
        [("many", "description", 1.0), ("all", "description", 0.0), ("many", "image", 1.0)]
        + [("single", "image", 0.0)],
    )
    images = write_records_run(tmp_path / "images", [("all", "image", 0.0), ("many", "image", 1.0)])
    # a summary.json written before the split: its by_goal_type comes from the records
    summary = json.load(open(os.path.join(images, "summary.json")))
    del summary["by_goal_type"]
    with open(os.path.join(images, "summary.json"), "w") as f:
        json.dump(summary, f)
    out = str(tmp_path / "out")
    assert main([mixed, images, "--out", out, "--no-progress"]) == 0
    with open(os.path.join(out, "leaderboard_by_goal_type.csv"), newline="") as f:
        rows = [
            (r["run"], r["goal_type"], r["num_episodes"], r["sr"], r["f1"], r["spl_multi"])
            for r in csv.DictReader(f)
        ]
    assert rows == [
        # mixed, description: many + all success (1 + 0) / 2, spl_multi (0.5 + 0) / 2
        ("mixed", "description", "2", "0.5", "0.5", "0.25"),
        # mixed, image: the many episode alone (single is not in SR's many + all)
        ("mixed", "image", "2", "1.0", "1.0", "0.5"),
        ("images", "image", "2", "0.5", "0.5", "0.25"),
    ]
    with open(os.path.join(out, "leaderboard.csv"), newline="") as f:
        assert {r["run"]: r["notes"] for r in csv.DictReader(f)}["images"] == ""  # not stale
    md = open(os.path.join(out, "leaderboard.md"), encoding="utf-8").read()
    assert "| run | goal type | episodes | SR | F1 | SPL-multi |" in md
    assert "| `mixed` | description | 2 | 0.500 | 0.500 | 0.250 |" in md
    assert "| `images` | image | 2 | 0.500 | 0.500 | 0.250 |" in md
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        + ["--dump-dom", "file://" + os.path.join(out, "index.html")],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    table = dom[dom.index('id="by-goal-type"') :]
    table = table[: table.index("</table>")]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr.*?</tr>", table)]
    body = [[re.sub(r"<[^>]+>", "", c) for c in row] for row in cells if row]
    assert body == [
        ["mixed", "description", "2", "0.500", "0.500", "0.250"],
        ["mixed", "image", "2", "1.000", "1.000", "0.500"],
        ["images", "image", "2", "0.500", "0.500", "0.250"],
    ]
    # a by_goal_type that disagrees with the records is noted as stale
    summary = json.load(open(os.path.join(mixed, "summary.json")))
    summary["by_goal_type"]["image"]["sr"] = 0.0
    with open(os.path.join(mixed, "summary.json"), "w") as f:
        json.dump(summary, f)
    assert main([mixed, "--out", str(tmp_path / "out2"), "--no-progress"]) == 0
    with open(os.path.join(tmp_path, "out2", "leaderboard.csv"), newline="") as f:
        assert "disagrees with the records" in next(csv.DictReader(f))["notes"]


def test_the_printed_table_fits_120_columns_and_the_file_keeps_every_column(tmp_path, capsys):
    """``make demo`` printed the 21-column Markdown table, which wraps into noise in a
    terminal: the terminal gets one line per run within 120 columns (SR, F1, SPL-multi with
    their intervals; a long name cut with an ellipsis); leaderboard.md keeps every column.
    Values by hand: two many episodes, success 1 and 0 -> SR 0.500, F1 0.500, SPL-multi
    (0.5 + 0) / 2 = 0.250."""
    long_name = "a-run-with-a-very-long-name-" + "x" * 80
    runs = [
        write_records_run(tmp_path / long_name, [("many", "description", s) for s in (1.0, 0.0)]),
        write_records_run(tmp_path / "short", [("all", "description", 1.0)]),
    ]
    out = str(tmp_path / "out")
    assert main(runs + ["--out", out, "--no-progress", "--bootstrap", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines[:3]) <= 120  # the last line names the output path
    head, first, second = lines[:3]
    assert head.split() == ["run", "status", "episodes", "SR", "F1", "SPL-multi"]
    assert first.startswith("a-run-with-a-very-long-name-xx…")
    assert first.split()[1:4] == ["complete", "2/2", "0.500"]
    assert "0.250 [" in first
    assert second.split()[:4] == ["short", "complete", "1/1", "1.000"]
    assert lines[3].startswith(f"wrote {os.path.join(out, 'index.html')}, leaderboard.md")
    md = open(os.path.join(out, "leaderboard.md"), encoding="utf-8").read()
    assert "| run | status | official | agent | episodes (ok/err/expected) |" in md
    assert long_name in md  # the file keeps the whole name


# ----------------------------------------------------------------------------- issue 42 item 3


def _demo_target():
    """The recipe lines of the Makefile's demo target."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "Makefile"), encoding="utf-8").read()
    recipe = text[text.index("\ndemo:") :].split("\n\n")[0]
    return [line.strip() for line in recipe.replace("\\\n", " ").splitlines()[1:]]


#: Lists each "–" text node of the page with the title of its nearest element that has one.
NULLS_JS = """
<script>
window.addEventListener('load', function () {
  var out = {nulls: [], why: {}, head: []};
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    var node = walk.currentNode;
    if (node.textContent.trim() !== '\\u2013') continue;
    var el = node.parentElement.closest('[title]'), td = node.parentElement.closest('td');
    var table = node.parentElement.closest('table');
    var th = td && table ? table.querySelectorAll('th')[td.cellIndex] : null;
    out.nulls.push([table ? table.id : '', th ? th.textContent : '',
                    el ? el.getAttribute('title') : null]);
  }
  var head = Array.prototype.map.call(document.querySelectorAll('#episodes th'),
                                      function (th) { return th.textContent; });
  var col = head.indexOf('why failed');
  document.querySelectorAll('#episodes tbody tr').forEach(function (tr) {
    out.why[tr.cells[0].getAttribute('data-v') + ' ' + tr.cells[1].getAttribute('data-v')] =
        col < 0 ? null : tr.cells[col].textContent;
  });
  out.whyImg = !!document.querySelector('#leaderboard-section img#plot-why_fail');
  var pre = document.createElement('pre'); pre.id = 'nulls';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>
"""


def test_make_demo_diagnoses_random_and_its_report_shows_why_episodes_fail(demo_report, tmp_path):
    """Issue 42: the demo's report had no "why episodes fail" (no --diagnose in make demo):
    the Makefile replays random with --diagnose before mosnav-report, and the page (read
    back from headless chromium) has the chart under the board and a label per failed
    episode of random."""
    from habitat_mosnav.metrics.diagnosis import EPISODE_LABELS

    recipe = _demo_target()
    replay = [i for i, line in enumerate(recipe) if "mosnav-replay" in line]
    report_at = next(i for i, line in enumerate(recipe) if "mosnav-report" in line)
    assert [recipe[i].split()[1:] for i in replay] == [["$(DEMO_OUT)/random", "--diagnose"]]
    assert replay[0] < report_at
    random_run = os.path.join(demo_report["root"], "random")
    doc = json.load(open(os.path.join(random_run, "diagnosis.json")))
    assert doc["failed_episode_count"] == 1  # 60 random steps: no success
    out = demo_report["out"]
    page = open(os.path.join(out, "index.html"), encoding="utf-8").read()
    assert "<h3>Why episodes fail (mosnav-replay --diagnose)</h3>" in page
    plots = {p["key"]: p for p in json.load(open(os.path.join(out, "plots.json")))["plots"]}
    assert [(s["run"], s["n"]) for s in plots["why_fail"]["series"]] == [("random", 1)]
    shutil.copytree(out, tmp_path / "page")
    seen, _ = probe_page(tmp_path / "page" / "index.html", NULLS_JS, "nulls")
    assert seen["whyImg"]
    for key, entry in doc["episodes"].items():
        assert entry["label"] in EPISODE_LABELS
        assert seen["why"][f"random {key}"] == entry["label"]
    oracle = [k for k in seen["why"] if k.startswith("oracle ")]
    assert len(oracle) == 2 and all(seen["why"][k] == "–" for k in oracle)


def test_every_dash_of_the_demo_report_says_why(demo_report, tmp_path):
    """Issue 42: OER-space was "–" everywhere with no word why. Every "–" of the page (a
    null metric, no map, no video, no label) carries its reason as a title; a column empty
    for every run also says why under the diagnostics."""
    shutil.copytree(demo_report["out"], tmp_path / "page")
    seen, dom = probe_page(tmp_path / "page" / "index.html", NULLS_JS, "nulls")
    nulls = seen["nulls"]
    assert len(nulls) > 10
    for table, column, why in nulls:
        assert why and why != "no value", (table, column, why)
    by = {(t, c): w for t, c, w in nulls}
    # the demo runs use --space-coverage-samples 0: the space oracle was off
    space = "not measured: --space-coverage-samples 0 (the space oracle was off)"
    assert by[("diagnostics", "OER-space")] == space
    assert by[("diagnostics", "OER-target")] == "no episode found all its required targets"
    assert by[("run-details", "official")].startswith("no benchmark setting")
    assert by[("episodes", "video")] == "no video (mosnav-eval --save-video)"
    assert by[("episodes", "why failed")] == (
        "no diagnosis for this run (mosnav-replay RUN_DIR --diagnose)"
    )
    notes = dom[dom.index('id="empty-columns"') :]
    notes = notes[: notes.index("</ul>")]
    assert f"<b>OER-space</b> has no value in any run: {space} (oracle, random)" in notes


def test_the_benchmark_setting_is_on_the_page_not_only_in_a_tooltip(room_runs, tmp_path):
    """Issue 42: the setting's name showed only in a tooltip; now in the page's header and
    in a column of the main board (read back from headless chromium's DOM)."""
    runs = []
    for name, bench in (("official_run", "demo/official"), ("image_run", "demo/image")):
        run = str(tmp_path / name)
        shutil.copytree(room_runs["scripted"], run)
        summary = _summary(run)
        summary["benchmark"] = {"name": bench, "version": 1, "official": True}
        with open(os.path.join(run, "summary.json"), "w") as f:
            json.dump(summary, f)
        runs.append(run)
    plain = str(tmp_path / "plain")
    shutil.copytree(room_runs["scripted"], plain)
    out = str(tmp_path / "out")
    assert main([*runs, plain, "--out", out, "--no-progress", "--bootstrap", "20"]) == 0
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        + ["--dump-dom", "file://" + os.path.join(out, "index.html")],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    header = re.search(r'<p id="benchmark-settings">(.*?)</p>', dom).group(1)
    assert re.sub(r"<[^>]+>", "", header) == (
        "Benchmark setting: demo/official v1: official_run; demo/image v1: image_run; "
        "none (evaluated without --benchmark): plain."
    )
    board = dom[dom.index('id="leaderboard"') :]
    board = board[: board.index("</table>")]
    heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", board)]
    col = heads.index("benchmark")
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr.*?</tr>", board)]
    shown = [re.sub(r"<[^>]+>", "", r[col]) for r in rows if r]
    assert shown == ["demo/official v1", "demo/image v1", "–"]


def test_two_runs_with_equal_numbers_are_drawn_apart_in_every_plot(demo_report):
    """Issue 42: oracle and oracle_image (equal numbers) hid each other in every plot. The
    same run under two names: in each plot, read back from the drawn artists, the twin's
    series differs from the first's by hatch (bars), line style and position (histogram
    steps, lines), marker and position (the OER/FTR point), not by colour alone."""
    from habitat_mosnav.evaluation.report.data import load_run
    from habitat_mosnav.evaluation.report.plots import make_plots

    oracle = os.path.join(demo_report["root"], "oracle")
    runs = [load_run(oracle, "first", resamples=20), load_run(oracle, "twin", resamples=20)]
    assert runs[0].metrics == runs[1].metrics
    plots = {p.key: p for p in make_plots(runs)}
    assert set(plots) == {"by_mode", "distributions", "oer_ftr", "by_count"}
    for key, plot in plots.items():
        by = {}
        for s in plot.series:
            by.setdefault(s["panel"], {})[s["run"]] = s
        assert by, key
        for panel, pair in by.items():
            a, b = pair["first"], pair["twin"]
            assert a["n"] == b["n"]
            if key == "by_mode":  # side by side (as before) and hatched apart
                assert (a["hatch"], b["hatch"]) == ("", "//")
                assert all(xb > xa for xa, xb in zip(a["x"], b["x"]))
            elif key == "distributions":  # dashed over solid, steps shifted right
                assert (a["linestyle"], b["linestyle"]) == ("-", "--")
                assert b["x"][0] > a["x"][0]
            elif key == "oer_ftr":  # another marker, drawn 7 points right
                assert a["marker_vertices"] != b["marker_vertices"]
                assert b["px"][1] == a["px"][1] and b["px"][0] - a["px"][0] > 5
            else:  # by_count: circle solid vs square dashed, dodged along x
                assert (a["marker"], a["linestyle"]) == ("o", "-")
                assert (b["marker"], b["linestyle"]) == ("s", "--")
                assert all(xb > xa for xa, xb in zip(a["x"], b["x"]))
