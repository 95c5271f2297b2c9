"""Result files of SPEC §8: records, per-rank JSONL with resume, done.json, summary, CLI."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from habitat_mosnav.evaluation import aggregate_cli
from habitat_mosnav.evaluation.durable import ResultFileError
from habitat_mosnav.evaluation.rank_files import RankWriter, read_jsonl, write_done
from habitat_mosnav.evaluation.records import make_record
from habitat_mosnav.evaluation.summary import format_summary, summarize, write_summary
from habitat_mosnav.evaluation.selection import select_episodes
from habitat_mosnav.keys import episode_key, episode_seed


def episode(i, mode="many", goal_type="description"):
    return {
        "scene_id": "/data/scenes/00800-TEEsavR23oF/TEEsavR23oF.basis.glb",
        "episode_id": f"q{i:04d}-{mode}-0",
        "query_id": f"q{i:04d}",
        "target_mode": mode,
        "goal_type": goal_type,
        "target_count": 2 if mode == "many" else None,
        "target_object_ids": [101, 105, 110],
        "max_steps": 100,
        "scene_path": "/data/private/scene.glb",
        "info": {"x": 1},
    }


def record(i, success, mode="many", rank=0, status="ok", key=None, goal_type="description"):
    key = key or episode_key("val", "TEEsavR23oF", f"q{i:04d}-{mode}-0")
    kw = dict(
        episode_key=key,
        episode_index=i,
        rank=rank,
        seed=episode_seed(1, key),
        episode=episode(i, mode, goal_type),
        steps_taken=10,
        terminated_by="finish",
        metrics={
            "success": success,
            "f1": success,
            "spl_multi": 0.5 * success,
            "spl": 0.5 * success,
            "precision": 1.0,
            "recall": success,
            "oer_space": None,
        },
    )
    if status == "error":
        kw["error"] = RuntimeError("boom at /home/me/secret.py")
    return make_record(**kw)


# ------------------------------------------------------------------ make_record


def test_make_record_scalars_only_and_no_paths():
    # np.quaternion exists only after ``import quaternion``: import it here, not by luck of order.
    quaternion = pytest.importorskip("quaternion")
    r = make_record(
        episode_key="val::TEEsavR23oF::q1",
        episode_index=3,
        rank=1,
        seed=42,
        episode=episode(1),
        steps_taken=np.int64(17),
        terminated_by="max_steps",
        initial_metrics={"success": 0.0, "top_down_map": {"map": [[1]]}},
        metrics={
            "success": np.float32(1.0),
            "tse": float("nan"),
            "pe": math.inf,
            "tp": np.int64(2),
            "top_down_map": np.zeros((4, 4)),
            "name": "x",
            "oer_space": None,
        },
        report_events=[{"step": np.int64(3), "near_targets": [np.int64(101)]}],
        initial_agent_state={
            "position": np.array([1.0, 0.0, 2.0], dtype=np.float32),
            "rotation": quaternion.quaternion(1.0, 0.0, 0.5, 0.0),
        },
    )
    assert r["metrics"] == {"success": 1.0, "tse": None, "pe": None, "tp": 2, "oer_space": None}
    assert r["initial_metrics"] == {"success": 0.0}
    assert r["episode"]["scene_id"] == "TEEsavR23oF"
    assert set(r["episode"]) == {
        "scene_id",
        "episode_id",
        "query_id",
        "target_mode",
        "goal_type",
        "target_count",
        "target_object_ids",
        "max_steps",
    }
    assert r["report_events"] == [{"step": 3, "near_targets": [101]}]
    assert r["initial_agent_state"] == {
        "position": [1.0, 0.0, 2.0],
        "rotation": [0.0, 0.5, 0.0, 1.0],
    }
    assert r["final_agent_state"] is None and "action_trace" not in r
    text = json.dumps(r, allow_nan=False)
    assert "/data" not in text and "NaN" not in text


def test_make_record_error_is_generic():
    try:
        raise FileNotFoundError("/home/me/data/episodes.json missing")
    except FileNotFoundError as exc:
        r = make_record(
            episode_key="k", episode_index=0, rank=0, seed=1, episode=episode(0), error=exc
        )
    assert r["status"] == "error" and r["terminated_by"] == "error"
    assert r["error_type"] == "FileNotFoundError"
    assert r["error_message"] == "episode failed with FileNotFoundError"
    r2 = make_record(
        episode_key="k",
        episode_index=0,
        rank=0,
        seed=1,
        episode=episode(0),
        error="InvalidAction",
        error_message="agent returned action 7 (file /x/y.py)",
    )
    assert r2["error_type"] == "InvalidAction"
    assert r2["error_message"] == "agent returned action 7 (file <path>)"
    assert "Traceback" not in json.dumps([r, r2])


def test_make_record_rejects_bad_fields():
    with pytest.raises(ValueError, match="terminated_by"):
        make_record(
            episode_key="k", episode_index=0, rank=0, seed=1, episode={}, terminated_by="stop"
        )
    with pytest.raises(ValueError, match="final_agent_state.pos: cannot write a object"):
        make_record(
            episode_key="k",
            episode_index=0,
            rank=0,
            seed=1,
            episode={},
            final_agent_state={"pos": object()},
        )


# ------------------------------------------------------------------ RankWriter / resume


def test_writer_appends_lines_and_done(tmp_path):
    out = str(tmp_path / "run")
    with RankWriter(out, rank=2) as w:
        w.write(record(0, 1.0, rank=2))
        w.write(record(1, 0.0, rank=2, status="error"))
        done = w.write_done(expected_count=2)
    path = os.path.join(out, "rank_00002", "episodes.jsonl")
    lines = open(path).read().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["status"] == "error"
    assert done == {
        "schema_version": 1,
        "rank": 2,
        "status": "completed_with_errors",
        "expected_count": 2,
        "record_count": 2,
        "error_count": 1,
    }
    assert json.load(open(os.path.join(out, "rank_00002", "done.json"))) == done
    assert not [f for f in os.listdir(os.path.join(out, "rank_00002")) if f.startswith(".tmp")]


def test_write_done_status_defaults(tmp_path):
    assert (
        write_done(str(tmp_path), 0, expected_count=3, record_count=3, error_count=0)["status"]
        == "complete"
    )
    assert (
        write_done(str(tmp_path), 0, expected_count=3, record_count=2, error_count=0)["status"]
        == "incomplete"
    )


def test_existing_dir_refused_without_resume(tmp_path):
    out = str(tmp_path)
    with RankWriter(out) as w:
        w.write(record(0, 1.0))
    with pytest.raises(ResultFileError, match="already has results in rank_00000; pass --resume"):
        RankWriter(out)
    # Another rank's directory does not block this rank.
    RankWriter(out, rank=1).close()


def test_resume_truncates_partial_line_and_returns_keys(tmp_path):
    out = str(tmp_path)
    with RankWriter(out) as w:
        w.write(record(0, 1.0))
        w.write(record(1, 0.0))
        w.write_done(expected_count=3)
    path = os.path.join(out, "rank_00000", "episodes.jsonl")
    good = open(path, "rb").read()
    with open(path, "ab") as f:
        f.write(json.dumps(record(2, 1.0)).encode()[:57])  # a crash mid-write
    w = RankWriter(out, resume=True)
    assert w.truncated_partial_line
    assert w.finished_keys == {record(0, 1.0)["episode_key"], record(1, 0.0)["episode_key"]}
    assert open(path, "rb").read() == good
    assert not os.path.exists(os.path.join(out, "rank_00000", "done.json"))  # stale marker gone
    w.write(record(2, 1.0))
    w.write_done(expected_count=3)
    w.close()
    recs, partial = read_jsonl(path)
    assert [r["episode_index"] for r in recs] == [0, 1, 2] and not partial
    assert json.load(open(os.path.join(out, "rank_00000", "done.json")))["record_count"] == 3


def test_resume_keeps_complete_last_line_without_newline(tmp_path):
    out = str(tmp_path)
    d = os.path.join(out, "rank_00000")
    os.makedirs(d)
    with open(os.path.join(d, "episodes.jsonl"), "w") as f:
        f.write(json.dumps(record(0, 1.0)) + "\n" + json.dumps(record(1, 1.0)))
    with RankWriter(out, resume=True) as w:
        assert len(w.finished_keys) == 2 and not w.truncated_partial_line
        w.write(record(2, 1.0))
    assert len(read_jsonl(os.path.join(d, "episodes.jsonl"))[0]) == 3


def test_resume_refuses_complete_invalid_line(tmp_path):
    out = str(tmp_path)
    d = os.path.join(out, "rank_00000")
    os.makedirs(d)
    path = os.path.join(d, "episodes.jsonl")
    content = json.dumps(record(0, 1.0)) + "\n{not json}\n" + json.dumps(record(1, 1.0)) + "\n"
    open(path, "w").write(content)
    with pytest.raises(ResultFileError, match=r"episodes\.jsonl:2: invalid JSON line"):
        RankWriter(out, resume=True)
    assert open(path).read() == content  # never deleted
    open(path, "w").write(json.dumps({"status": "ok"}) + "\n")
    with pytest.raises(ResultFileError, match=r"episodes\.jsonl:1: field 'episode_key'"):
        RankWriter(out, resume=True)


# ------------------------------------------------------------------ summary


def _records(n=7):
    modes = ["many", "all", "many", "single", "all", "any", "many"]
    return [record(i, float(i % 2 == 0), mode=modes[i % len(modes)]) for i in range(n)]


def _write_run(out, records, world_size):
    keys = [r["episode_key"] for r in records]
    by_key = {r["episode_key"]: r for r in records}
    for rank in range(world_size):
        mine = select_episodes(keys, rank=rank, world_size=world_size)
        with RankWriter(out, rank=rank) as w:
            for _, key in mine:
                w.write(dict(by_key[key], rank=rank))
            w.write_done(expected_count=len(mine))


def test_three_ranks_equal_one_rank(tmp_path):
    recs = _records()
    _write_run(str(tmp_path / "one"), recs, 1)
    _write_run(str(tmp_path / "three"), recs, 3)
    one, three = summarize(str(tmp_path / "one")), summarize(str(tmp_path / "three"))
    assert one == three
    assert one["status"] == "complete" and one["expected_episode_count"] == 7
    assert one["record_count"] == one["unique_record_count"] == one["ok_episode_count"] == 7
    m = one["metrics"]
    # many: i=0,2,6 (success 1,1,1); all: 1,4 (0,1); single: 3 (0); any: 5 (0)
    assert m["sr_many"] == 1.0 and m["sr_all"] == 0.5 and m["sr"] == 0.8
    assert m["sr_single"] == 0.0 and m["num_episodes"] == 7 and m["num_episodes_many"] == 3
    assert m["oer_space"] is None


def test_duplicate_keys_keep_last_record(tmp_path):
    """Within a rank a re-run's later record wins (--retry-errors); across ranks one key
    twice is an error naming both lines (issue #23: a record copied into another rank)."""
    out = str(tmp_path)
    with RankWriter(out, rank=0) as w:
        w.write(record(0, 0.0))
        w.write(record(1, 1.0))
        w.write(record(0, 1.0))
        w.write_done(expected_count=2)
    s = summarize(out)
    assert s["record_count"] == 3 and s["unique_record_count"] == 2
    assert s["metrics"]["sr_many"] == 1.0  # the later success wins over the first failure
    assert s["status"] == "complete"
    with RankWriter(out, rank=1) as w:
        w.write(dict(record(1, 0.0), rank=1))
        w.write_done(expected_count=1)
    with pytest.raises(
        ResultFileError,
        match=r"rank_00001/episodes\.jsonl:1: episode .* is also "
        r"recorded by rank 0 \(.*rank_00000/episodes\.jsonl:2\)",
    ):
        summarize(out)


def test_summary_statuses(tmp_path):
    out = str(tmp_path)
    with RankWriter(out) as w:
        w.write(record(0, 1.0))
        w.write(record(1, 0.0, status="error"))
    s = summarize(out)  # no done.json yet
    assert s["status"] == "incomplete" and s["expected_episode_count"] is None
    assert s["ok_episode_count"] == 1 and s["error_episode_count"] == 1
    assert s["metrics"]["num_episodes"] == 1  # errors are not aggregated
    write_done(out, 0, expected_count=2, record_count=2, error_count=1)
    assert summarize(out)["status"] == "completed_with_errors"
    assert summarize(out, expected_episode_count=5)["status"] == "incomplete"
    path = write_summary(out, summarize(out))
    assert json.load(open(path))["error_episode_count"] == 1


def test_summary_bad_inputs(tmp_path):
    with pytest.raises(ResultFileError, match="no such directory"):
        summarize(str(tmp_path / "missing"))
    with pytest.raises(ResultFileError, match="no rank_XXXXX"):
        summarize(str(tmp_path))
    d = tmp_path / "rank_00000"
    d.mkdir()
    (d / "done.json").write_text("{")
    with pytest.raises(ResultFileError, match=r"done\.json: invalid JSON"):
        summarize(str(tmp_path))
    (d / "done.json").write_text("{}")
    with pytest.raises(ResultFileError, match=r"done\.json: field 'rank' is missing"):
        summarize(str(tmp_path))
    (d / "done.json").unlink()
    bad = record(0, 1.0)
    bad["episode"]["target_mode"] = "some"
    (d / "episodes.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(ResultFileError, match=r"episodes\.jsonl:1: field 'episode.target_mode'"):
        summarize(str(tmp_path))


def _two_goal_types():
    """description: many success 1, all success 0, one error; object: many success 1,
    single success 1; image: all success 1."""
    return [
        record(0, 1.0, "many"),
        record(1, 0.0, "all"),
        record(2, 1.0, "many", status="error"),
        record(3, 1.0, "many", goal_type="object"),
        record(4, 1.0, "single", goal_type="object"),
        record(5, 1.0, "all", goal_type="image"),
    ]


def test_summary_splits_by_goal_type(tmp_path):
    """summary.json's by_goal_type holds the SPEC §5 aggregates over each goal type's ok
    episodes (values by hand: spl_multi = 0.5 * success in record())."""
    out = str(tmp_path)
    _write_run(out, _two_goal_types(), 2)
    s = summarize(out)
    assert list(s["by_goal_type"]) == ["description", "image", "object"]
    d, o, i = (s["by_goal_type"][k] for k in ("description", "object", "image"))
    # description over many+all: success (1 + 0) / 2, spl_multi (0.5 + 0) / 2; the error left out
    assert (d["sr"], d["f1"], d["spl_multi"]) == (0.5, 0.5, 0.25)
    assert (d["num_episodes"], d["num_episodes_many"], d["num_episodes_all"]) == (2, 1, 1)
    assert (d["sr_many"], d["sr_all"]) == (1.0, 0.0)
    # object: the many episode alone is many+all (single is not); sr_single its own
    assert (o["sr"], o["f1"], o["spl_multi"], o["sr_single"]) == (1.0, 1.0, 0.5, 1.0)
    assert (o["num_episodes"], o["num_episodes_single"], o["sr_all"]) == (2, 1, None)
    assert (i["sr"], i["spl_multi"], i["sr_moc"], i["num_episodes"]) == (1.0, 0.5, 1.0, 1)
    # the whole run: many+all success (1 + 0 + 1 + 1) / 4
    assert s["metrics"]["sr"] == 0.75 and s["metrics"]["num_episodes"] == 5
    assert set(d) == set(s["metrics"])  # every aggregate of the run, per goal type


def test_summary_record_without_goal_type_is_an_error(tmp_path):
    d = tmp_path / "rank_00000"
    d.mkdir()
    bad = record(0, 1.0)
    bad["episode"]["goal_type"] = None
    (d / "episodes.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(
        ResultFileError, match=r"episodes\.jsonl:1: field 'episode.goal_type' is None"
    ):
        summarize(str(tmp_path))


def test_printed_summary_has_goal_type_lines_only_with_two_types(tmp_path):
    out = str(tmp_path / "mixed")
    _write_run(out, _two_goal_types(), 1)
    lines = format_summary(summarize(out)).splitlines()
    at = lines.index("by goal type (many+all):")
    assert lines[at + 1 :] == [
        "  description  episodes 2  SR 0.5000  F1 0.5000  SPL-multi 0.2500",
        "  image        episodes 1  SR 1.0000  F1 1.0000  SPL-multi 0.5000",
        "  object       episodes 2  SR 1.0000  F1 1.0000  SPL-multi 0.5000",
    ]
    single = str(tmp_path / "single")
    _write_run(single, _records(3), 1)
    s = summarize(single)
    assert list(s["by_goal_type"]) == ["description"]
    assert s["by_goal_type"]["description"] == s["metrics"]
    assert "goal type" not in format_summary(s)


def test_summary_goal_type_names_are_escaped_when_printed(tmp_path):
    out = str(tmp_path)
    _write_run(out, [record(0, 1.0), record(1, 1.0, goal_type="x\x1b[2Jy")], 1)
    printed = format_summary(summarize(out))
    assert "\x1b" not in printed and "by goal type" in printed


# ------------------------------------------------------------------ mosnav-aggregate


def test_aggregate_cli_exit_codes(tmp_path, capsys):
    out = str(tmp_path / "run")
    _write_run(out, _records(4), 2)
    assert aggregate_cli.main([out]) == 0
    printed = capsys.readouterr().out
    assert "status: complete" in printed and "SR (many+all)" in printed
    assert json.load(open(os.path.join(out, "summary.json")))["unique_record_count"] == 4
    mixed = str(tmp_path / "mixed")
    _write_run(mixed, _two_goal_types(), 3)
    assert aggregate_cli.main([mixed]) == 0  # three ranks merged, by goal type too
    assert "  image        episodes 1  SR 1.0000" in capsys.readouterr().out
    written = json.load(open(os.path.join(mixed, "summary.json")))["by_goal_type"]
    assert written["description"]["sr"] == 0.5 and written["object"]["num_episodes"] == 2
    with RankWriter(out, rank=2) as w:
        w.write(record(9, 0.0, rank=2, status="error"))
        w.write_done(expected_count=1)
    assert aggregate_cli.main([out]) == 0
    assert aggregate_cli.main([out, "--fail-on-episode-error"]) == 1
    capsys.readouterr()
    assert aggregate_cli.main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mosnav-aggregate: error:") and "no such directory" in err
    assert len(err.splitlines()) == 1


def test_aggregate_module_runs_as_command(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "habitat_mosnav.evaluation.aggregate_cli", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "no rank_XXXXX result directories" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_make_record_extras_are_json_safe_and_optional():
    kw = dict(episode_key="k", episode_index=0, rank=0, seed=1, episode=episode(0))
    assert "extras" not in make_record(**kw)
    r = make_record(
        **kw,
        error=RuntimeError("x"),
        extras={"agent": {"api_calls": np.int64(2), "lat": np.float32(0.25), "bad": math.nan}},
    )
    assert r["status"] == "error" and r["extras"] == {
        "agent": {"api_calls": 2, "lat": 0.25, "bad": None}
    }
    with pytest.raises(ValueError, match="extras.agent.obj"):
        make_record(**kw, extras={"agent": {"obj": object()}})


def test_rank_writer_counts_errors_by_last_record(tmp_path):
    out = str(tmp_path)
    with RankWriter(out, 0) as w:
        w.write(record(0, 1.0))
        w.write(record(1, 0.0, status="error"))
        w.write(record(2, 0.0, status="error"))
        assert (w.record_count, w.error_count) == (3, 2)
        keys = [record(i, 0.0)["episode_key"] for i in range(3)]
        assert w.error_keys == set(keys[1:])
        assert w.write_done(expected_count=3)["status"] == "completed_with_errors"
    with RankWriter(out, 0, resume=True) as w:  # a --retry-errors run fixes one key
        assert (w.record_count, w.error_count) == (3, 2)
        w.write(record(1, 1.0))
        assert (w.record_count, w.error_count) == (4, 1) and w.error_keys == {keys[2]}
        done = w.write_done(expected_count=3, expected_keys=keys)
        assert (done["status"], done["record_count"], done["error_count"]) == (
            "completed_with_errors",
            4,
            1,
        )
        # Four lines, but only two of these three keys: still incomplete.
        assert (
            w.write_done(expected_count=3, expected_keys=keys[:2] + ["other"])["status"]
            == "incomplete"
        )
        w.write(record(2, 1.0))
        assert w.write_done(expected_count=3, expected_keys=keys)["status"] == "complete"
