"""A summary never mixes runs nor calls a run with missing episodes complete (issue #23):
``mosnav-aggregate`` and the summary check every rank's run.json against the run's, an
episode recorded by two ranks is an error, a done.json is recounted, run.json holds a
digest of the agent's code, and a stale summary.json never speaks for a fresh run."""

import json
import shutil

import pytest

from habitat_mosnav.evaluation import aggregate_cli
from habitat_mosnav.evaluation.cli import main

from conftest import ALL_MODES
from mosnav_fixtures import quick_eval_args


def _eval(open_room, out, *extra):
    return main(
        quick_eval_args(
            *open_room, *ALL_MODES, "--max-steps", "5", "--output-dir", str(out), *extra
        )
    )


def _aggregate(capsys, out, *extra):
    capsys.readouterr()
    rc = aggregate_cli.main([str(out), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return (
        rc,
        [line for line in captured.err.splitlines() if line.startswith("mosnav-aggregate")],
        captured.out,
    )


@pytest.fixture(scope="module")
def two_rank_run(open_room, tmp_path_factory):
    """A complete random run over 4 episodes written by two ranks (2 each)."""
    out = tmp_path_factory.mktemp("two_rank") / "run"
    for rank in (0, 1):
        assert (
            _eval(open_room, out, "--agent", "random", "--rank", str(rank), "--world-size", "2")
            == 0
        )
    return out


@pytest.mark.parametrize(
    "flags, field",
    [(("--agent", "random", "--seed", "7"), "seed"), (("--agent", "oracle"), "agent")],
)
def test_a_rank_of_another_run_is_refused_naming_the_field(
    capsys, open_room, two_rank_run, tmp_path, flags, field
):
    other = tmp_path / "other"
    assert _eval(open_room, other, "--rank", "1", "--world-size", "2", *flags) == 0
    mixed = tmp_path / "mixed"
    shutil.copytree(two_rank_run, mixed)
    shutil.rmtree(mixed / "rank_00001")
    shutil.copytree(other / "rank_00001", mixed / "rank_00001")
    rc, lines, out = _aggregate(capsys, mixed)
    assert rc == 2 and len(lines) == 1, lines
    assert f"rank_00001/run.json: field '{field}' differs" in lines[0], lines
    assert "complete" not in out


def _with_rank_of_offset_2(open_room, two_rank_run, tmp_path):
    """The two-rank run with its rank 1 replaced by rank 1 of a run over --offset 2."""
    other = tmp_path / "other"
    assert (
        _eval(
            open_room,
            other,
            "--agent",
            "random",
            "--rank",
            "1",
            "--world-size",
            "2",
            "--offset",
            "2",
        )
        == 0
    )
    mixed = tmp_path / "mixed"
    shutil.copytree(two_rank_run, mixed)
    shutil.rmtree(mixed / "rank_00001")
    shutil.copytree(other / "rank_00001", mixed / "rank_00001")
    return mixed


def test_ranks_over_disjoint_offsets_are_never_complete(capsys, open_room, two_rank_run, tmp_path):
    """rank 1 of a run over --offset 2 (its episodes are another selection) copied in."""
    mixed = _with_rank_of_offset_2(open_room, two_rank_run, tmp_path)
    rc, lines, _ = _aggregate(capsys, mixed)
    assert rc == 2 and len(lines) == 1 and "field 'offset' differs" in lines[0], lines


def test_a_record_copied_into_another_rank_is_an_error(capsys, two_rank_run, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(two_rank_run, mixed)
    line = (mixed / "rank_00000" / "episodes.jsonl").read_text().splitlines()[0]
    with open(mixed / "rank_00001" / "episodes.jsonl", "a") as f:
        f.write(line + "\n")
    rc, lines, _ = _aggregate(capsys, mixed)
    key = json.loads(line)["episode_key"]
    assert rc == 2 and len(lines) == 1, lines
    assert f"rank_00001/episodes.jsonl:3: episode '{key}' is also recorded by rank 0" in lines[0]


def test_a_lying_done_json_is_not_believed(capsys, two_rank_run, tmp_path):
    """rank 1 lost a record; its done.json is edited to say it expected only one."""
    run = tmp_path / "run"
    shutil.copytree(two_rank_run, run)
    jsonl = run / "rank_00001" / "episodes.jsonl"
    jsonl.write_text(jsonl.read_text().splitlines()[0] + "\n")
    done_path = run / "rank_00001" / "done.json"
    done = json.loads(done_path.read_text())
    done.update(expected_count=1, record_count=1, error_count=0, status="complete")
    done_path.write_text(json.dumps(done))
    rc, lines, out = _aggregate(capsys, run, "--fail-on-episode-error")
    assert rc == 1, (lines, out)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "incomplete" and summary["expected_episode_count"] == 4
    assert any(
        "done.json: field 'expected_count' says 1, the records say 2" in w
        for w in summary["warnings"]
    ), summary
    assert any("done.json not believed" in line for line in lines), lines


def test_resume_with_changed_agent_code_is_refused(capsys, open_room, tmp_path):
    agent = tmp_path / "my_agent.py"
    agent.write_text("class A:\n    def act(self, obs):\n        return 2\n")
    out = tmp_path / "run"
    args = ("--agent", f"{agent}:A", "--num-episodes", "1")
    assert _eval(open_room, out, *args) == 0
    manifest = json.loads((out / "run.json").read_text())
    assert len(manifest["agent_code_sha256"]) == 64
    agent.write_text("class A:\n    def act(self, obs):\n        return 3  # changed\n")
    capsys.readouterr()
    assert _eval(open_room, out, *args, "--resume", "--num-episodes", "1") == 2
    err = capsys.readouterr().err
    assert "field 'agent_code_sha256' differs" in err, err


def test_a_stale_summary_in_a_fresh_directory_is_removed(capsys, open_room, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"status": "complete", "metrics": {}}))
    # rank 0 of 2: the summary waits for rank 1, so nothing rewrites the stale one
    assert _eval(open_room, out, "--agent", "random", "--rank", "0", "--world-size", "2") == 0
    assert not (out / "summary.json").exists()


def test_a_copied_rank_with_a_forged_manifest_is_still_not_complete(
    capsys, open_room, two_rank_run, tmp_path
):
    """Even with its run.json replaced by the run's, a rank over another selection leaves
    episodes without a record: the summary says incomplete and why."""
    mixed = _with_rank_of_offset_2(open_room, two_rank_run, tmp_path)
    shutil.copyfile(mixed / "run.json", mixed / "rank_00001" / "run.json")
    rc, lines, _ = _aggregate(capsys, mixed, "--fail-on-episode-error")
    summary = json.loads((mixed / "summary.json").read_text())
    assert rc == 1 and summary["status"] == "incomplete", (lines, summary)
    assert summary["unique_record_count"] < summary["expected_episode_count"] == 4
    assert any(
        "done.json not believed" in w or "not the run's selection" in w for w in summary["warnings"]
    ), summary
