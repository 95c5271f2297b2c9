"""``mosnav-replay --diagnose`` end to end: a scripted agent walks hand-built trajectories in
a room with two boxes (semantic ids 1 and 2) through ``mosnav-eval``; the replay with a
semantic camera labels each episode and target as docs/SPEC.md §10 says (issue 32 item 4)."""

import contextlib
import io
import json
import os
import shutil

import pytest

from conftest import probe_page, read_records
from mosnav_fixtures import write_dataset

from habitat_mosnav.evaluation.cli import main as eval_main
from habitat_mosnav.evaluation.replay_cli import main as replay_main
from habitat_mosnav.evaluation.report import main as report_main
from habitat_mosnav.sims.toy_scenes import export_scene_with_semantics, room_boxes

pytestmark = pytest.mark.slow

SCENE = "diagScene"
T = 20
# Box 1 (A) 2.8-3.2 m ahead of the start (facing -z), box 2 (B) as far behind; one view point
# each, 0.55 m from the box (z = -2.25 and +2.25), so g_j = |agent - view point| in the open
# room and 9 steps of 0.25 m reach A's. Success distance 0.25 m (the default).
BOX_A = ((-0.2, 0.0, -3.2), (0.2, 0.5, -2.8))
BOX_B = ((-0.2, 0.0, 2.8), (0.2, 0.5, 3.2))
VIEW_A, VIEW_B = [0.0, 0.0, -2.25], [0.0, 0.0, 2.25]
#: episode id -> (actions, expected episode label, expected target labels {1: .., 2: ..})
SCRIPTS = {
    # 9 forward: g_A = 2.25 - 0.25 t, near (<= 0.25) at t = 8, 9; turn away, walk on, FINISH
    "walk-past": (
        [1] * 9 + [2, 2, 2] + [1] * 4 + [0],
        "approached_not_claimed",
        {1: "approached_not_claimed", 2: "never_seen"},
    ),
    # 7 forward: g_A = 0.5 at the claim (step 8): 0.25 < 0.5 <= 1 m
    "claim-half-metre": (
        [1] * 7 + [6, 0],
        "claimed_too_far",
        {1: "claimed_too_far", 2: "never_seen"},
    ),
    # FINISH at step 1: A was in view at the start, B behind
    "finish-at-1": ([0], "stopped_early", {1: "seen_not_approached", 2: "never_seen"}),
    # at A's view point (g_A = 0) claim twice: new, then duplicate
    "claim-twice": ([1] * 9 + [6, 6, 0], "duplicate_claim", {1: "found", 2: "never_seen"}),
    # a claim at the start: g_A = g_B = 2.25 > 1 m
    "false-claim": ([6, 0], "false_claim", {1: "seen_not_approached", 2: "never_seen"}),
    # 20 left turns (600 degrees): both boxes come into view, the budget runs out
    "turn-until-timeout": (
        [2] * T,
        "timeout",
        {1: "seen_not_approached", 2: "seen_not_approached"},
    ),
}

AGENT = f"""
SCRIPTS = {{k: v[0] for k, v in {SCRIPTS!r}.items()}}


class ScriptedAgent:
    def reset(self):
        self.i = 0

    def act(self, obs):
        self.i += 1
        return SCRIPTS[obs.episode_id][self.i - 1]
"""


def _goal(oid, box, view):
    lo, hi = box
    centre = [(a + b) / 2 for a, b in zip(lo, hi)]
    return {
        "object_id": oid,
        "category": "crate",
        "region_id": 0,
        "position": centre,
        "aabb": {"center": centre, "size": [b - a for a, b in zip(lo, hi)]},
        "navigable_position": view,
        "view_points": [{"position": view, "rotation": [0, 0, 0, 1], "iou": 0.5}],
        "attributes": {},
        "caption": "a crate",
    }


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    root = tmp_path_factory.mktemp("diagnose")
    scene_dir = root / "scenes" / f"00000-{SCENE}"
    boxes = [(*BOX_A, (200, 40, 40, 255)), (*BOX_B, (40, 40, 200, 255))]
    export_scene_with_semantics(str(scene_dir), SCENE, boxes + room_boxes(-4, -4, 4, 4))
    episodes = [
        {
            "episode_id": name,
            "query_id": "q0",
            "target_mode": "all",
            "target_object_ids": [1, 2],
            "start_position": [0.0, 0.0, 0.0],
            "start_rotation": [0, 0, 0, 1],
        }
        for name in SCRIPTS
    ]
    query = {
        "query_id": "q0",
        "query_program": {
            "select": "object",
            "where": [{"field": "category", "op": "==", "value": "crate"}],
        },
        "instruction": "Find the crates.",
        "matched_object_ids": [1, 2],
    }
    docs = {
        "goals.json": {
            "schema_version": 1,
            "scene_id": SCENE,
            "goals": [_goal(1, BOX_A, VIEW_A), _goal(2, BOX_B, VIEW_B)],
        },
        "queries.json": {"schema_version": 1, "scene_id": SCENE, "queries": [query]},
        "episodes.json": {"schema_version": 1, "scene_id": SCENE, "episodes": episodes},
    }
    data, scenes = write_dataset(root, docs, scene=SCENE)
    agent = root / "scripted.py"
    agent.write_text(AGENT)
    run = root / "run"
    sensors = "habitat.simulator.agents.main_agent.sim_sensors"
    args = ["--agent", f"{agent}:ScriptedAgent", "--output-dir", str(run)]
    args += ["--dataset-dir", data, "--scene-root", scenes, "--target-modes", "all"]
    args += ["--max-steps", str(T), "--space-coverage-samples", "0", "--no-progress"]
    for name in ("rgb_sensor", "depth_sensor"):
        args += ["--set", f"{sensors}.{name}.width=64", "--set", f"{sensors}.{name}.height=64"]
    assert eval_main(args) == 0
    where = ["--dataset-dir", data, "--scene-root", scenes, "--no-progress"]
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        rc = replay_main([str(run), "--diagnose", *where])
    return {"run": run, "where": where, "rc": rc, "table": table.getvalue()}


def test_diagnose_labels_the_hand_built_trajectories(diagnosed):
    run = diagnosed["run"]
    records = {r["episode"]["episode_id"]: r for r in read_records(run)}
    assert records["finish-at-1"]["steps_taken"] == 1  # the scripts ran as written
    assert records["claim-twice"]["report_events"][1]["duplicate_targets"] == [1]
    assert diagnosed["rc"] == 0  # the replay with the semantic camera still agrees
    out = diagnosed["table"]
    doc = json.loads((run / "diagnosis.json").read_text())
    assert doc == json.loads((run / "replay" / "mosnav" / "diagnosis.json").read_text())
    by_id = {e["episode_id"]: e for e in doc["episodes"].values()}
    for name, (_, label, targets) in SCRIPTS.items():
        assert by_id[name]["label"] == label, name
        assert by_id[name]["targets"] == {str(k): v for k, v in targets.items()}, name
        assert by_id[name]["success"] is False
    assert by_id["claim-half-metre"]["claims"] == [{"step": 8, "kind": "too_far", "target": 1}]
    assert [c["kind"] for c in by_id["claim-twice"]["claims"]] == ["new", "duplicate"]
    assert doc["episode_count"] == doc["failed_episode_count"] == len(SCRIPTS)
    assert doc["counts"]["episodes"] == {
        "kept_exploring": 0,
        "claimed_too_far": 1,
        "approached_not_claimed": 1,
        "duplicate_claim": 1,
        "false_claim": 1,
        "stopped_early": 1,
        "timeout": 1,
    }
    # 12 targets: A found once, too far once, approached once, seen 3 times; B seen once
    assert doc["counts"]["targets"] == {
        "found": 1,
        "claimed_too_far": 1,
        "approached_not_claimed": 1,
        "seen_not_approached": 4,
        "never_seen": 5,
    }
    lines = {line.split()[0]: line.split()[-1] for line in out.splitlines() if line.strip()}
    assert lines["timeout"] == "1" and lines["never_seen"] == "5"


def test_without_diagnose_the_replay_writes_no_diagnosis(diagnosed, tmp_path):
    out = tmp_path / "plain"
    assert replay_main([str(diagnosed["run"]), "--out", str(out), *diagnosed["where"]]) == 0
    assert not os.path.exists(out / "diagnosis.json")
    original = {r["episode_key"]: r for r in read_records(diagnosed["run"])}
    for r in read_records(out):
        assert r["metrics"] == original[r["episode_key"]]["metrics"]
        assert r["positions"] == original[r["episode_key"]]["positions"]


PROBE_JS = """
<script>
window.addEventListener('load', function () {
  var board = document.getElementById('leaderboard-section');
  var img = board.querySelector('img#plot-why_fail');
  var head = Array.prototype.map.call(document.querySelectorAll('#episodes th'),
                                      function (th) { return th.textContent; });
  var col = head.indexOf('why failed'), labels = {};
  document.querySelectorAll('#episodes tbody tr').forEach(function (tr) {
    labels[tr.cells[0].getAttribute('data-v') + ' ' + tr.cells[1].getAttribute('data-v')] =
        col < 0 ? null : tr.cells[col].textContent;
  });
  var out = {img: img ? [img.naturalWidth, img.naturalHeight] : null, head: head,
             labels: labels, in_plots: !!document.querySelector('#plots img#plot-why_fail')};
  var pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>
"""


def _probe(out):
    """The report page ``out/index.html`` in headless chromium with PROBE_JS."""
    return probe_page(os.path.join(out, "index.html"), PROBE_JS, "probe")[0]


def test_report_shows_why_episodes_fail_beside_the_leaderboard(diagnosed, tmp_path):
    assert diagnosed["rc"] == 0
    plain = tmp_path / "plain"  # the same run without a diagnosis
    shutil.copytree(diagnosed["run"], plain, ignore=shutil.ignore_patterns("diagnosis.json"))
    out = tmp_path / "report"
    assert report_main([str(diagnosed["run"]), str(plain), "--out", str(out), "--no-progress"]) == 0
    plots = json.loads((out / "plots.json").read_text())
    why = next(p for p in plots["plots"] if p["key"] == "why_fail")
    assert [{k: s[k] for k in ("run", "panel", "color", "n", "hatch")} for s in why["series"]] == [
        {
            "run": "run",
            "panel": "episodes",
            "color": plots["colors"]["run"],
            "n": len(SCRIPTS),
            "hatch": "",
        }
    ]
    assert "mosnav-replay --diagnose" in why["missing"]["plain"]
    seen = _probe(str(out))
    assert seen["img"] and seen["img"][0] > 200 and seen["img"][1] > 100  # drawn, in the board
    assert not seen["in_plots"]
    assert seen["head"][seen["head"].index("end") + 1] == "why failed"
    keys = {f"val::{SCENE}::{name}": (name, label) for name, (_, label, _) in SCRIPTS.items()}
    for key, (name, label) in keys.items():
        assert seen["labels"][f"run {key}"] == label, name
        assert seen["labels"][f"plain {key}"] == "–"  # no diagnosis: nothing to say


def test_report_without_any_diagnosis_shows_nothing_new(diagnosed, tmp_path):
    plain = tmp_path / "plain"
    shutil.copytree(diagnosed["run"], plain, ignore=shutil.ignore_patterns("diagnosis.json"))
    out = tmp_path / "report"
    assert report_main([str(plain), "--out", str(out), "--no-progress"]) == 0
    plots = json.loads((out / "plots.json").read_text())
    assert "why_fail" not in [p["key"] for p in plots["plots"]]
    seen = _probe(str(out))
    assert seen["img"] is None and "why failed" not in seen["head"]


def test_a_bad_diagnosis_file_is_one_line_naming_file_and_field(diagnosed, tmp_path, capsys):
    run = tmp_path / "edited"
    shutil.copytree(diagnosed["run"], run)
    doc = json.loads((run / "diagnosis.json").read_text())
    doc["counts"]["episodes"]["timeout"] = "many"
    (run / "diagnosis.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert report_main([str(run), "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "diagnosis.json" in err and "counts.episodes.timeout" in err


def test_diagnose_refuses_resume(tmp_path, capsys):
    assert replay_main([str(tmp_path), "--diagnose", "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "mosnav-replay: error: --diagnose watches every episode replayed: run it without --resume"
    )
