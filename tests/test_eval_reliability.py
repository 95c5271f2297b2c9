"""Evaluation runs that survive operators' mistakes and machine faults (issue #15, SPEC §8):
disk full (exit 3, no torn record, resume), two writers (lock), the run manifest, exit
codes, signals, agents that exit or hang, file modes."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from habitat_mosnav.evaluation import results
from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.manifest import MANIFEST_FIELDS
from habitat_mosnav.evaluation.results import RankLockedError, RankWriter

from mosnav_fixtures import EPISODE_KEYS, quick_eval_args

ALL_MODES = ("--target-modes", "single,any,many,all")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(capsys, open_room, *extra):
    """(exit status, the mosnav-eval lines on stderr) of one in-process run."""
    rc = main(quick_eval_args(*open_room, *extra))
    err = capsys.readouterr().err
    return rc, [line for line in err.splitlines() if line.startswith("mosnav-eval")], err


def jsonl(out, rank=0):
    path = os.path.join(str(out), f"rank_{rank:05d}", "episodes.jsonl")
    with open(path, "rb") as f:
        data = f.read()
    assert data == b"" or data.endswith(b"\n"), "a torn last line was left behind"
    return [json.loads(line) for line in data.decode().splitlines()]


def comparable(records):
    """Per key, what an uninterrupted run must reproduce."""
    return {r["episode_key"]: (r["status"], r["steps_taken"], r["terminated_by"], r["metrics"],
                               r.get("action_trace")) for r in records}


@pytest.fixture(scope="module")
def reference(open_room, tmp_path_factory):
    """The records of an uninterrupted oracle run over all four episodes."""
    out = tmp_path_factory.mktemp("reference") / "run"
    assert main(quick_eval_args(*open_room, "--agent", "oracle", *ALL_MODES,
                                "--output-dir", str(out))) == 0
    return comparable(jsonl(out))


# ------------------------------------------------------------------ 1. disk full


def _mount_tmpfs(path, size):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    os.makedirs(path, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                         capture_output=True)
    return res.returncode == 0


def test_disk_full_on_a_real_16k_tmpfs_then_resume(capsys, open_room, reference, tmp_path):
    tiny = tmp_path / "tiny"
    if not _mount_tmpfs(tiny, "16k"):
        pytest.skip("needs root and mount -t tmpfs (the ENOSPC test below covers the logic)")
    try:
        # 4 pages: run.json, writer.lock and this filler take 3, leaving one page (4096
        # bytes) for episodes.jsonl: two records (~2 KB each) fit, the third does not.
        (tiny / "filler").write_bytes(b"x" * 4096)
        out = tiny / "run"
        argv = ("--agent", "oracle", *ALL_MODES, "--output-dir", str(out))
        rc, lines, err = cli(capsys, open_room, *argv)
        assert rc == 3, err
        assert "Traceback" not in err and len(lines) == 1, err
        assert lines[0].startswith(f"mosnav-eval: error: cannot write {out}/rank_00000/episodes.jsonl: "
                                   "No space left on device"), lines
        kept = jsonl(out)  # asserts the file ends at a complete record
        assert 1 <= len(kept) < 4
        assert not (out / "rank_00000" / "done.json").exists()
        (tiny / "filler").unlink()  # space is freed
        subprocess.run(["mount", "-o", "remount,size=1m", str(tiny)], check=True)
        rc, lines, err = cli(capsys, open_room, *argv, "--resume")
        assert rc == 0, err
        assert comparable(jsonl(out)) == reference
        assert json.loads((out / "summary.json").read_text())["status"] == "complete"
    finally:
        subprocess.run(["umount", "-l", str(tiny)], capture_output=True)


def test_disk_full_while_writing_a_record_enospc(capsys, open_room, reference, tmp_path,
                                                 monkeypatch):
    """The same without root: the second record's write stores half of it, then the disk is
    full (what write(2) does on a full disk)."""
    real_write = results._os_write
    calls = {"n": 0}

    def full_disk(fd, data):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == "episodes.jsonl":
            calls["n"] += 1
            if calls["n"] == 2:
                real_write(fd, bytes(data[: len(data) // 2]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(results, "_os_write", full_disk)
    out = tmp_path / "run"
    argv = ("--agent", "oracle", *ALL_MODES, "--output-dir", str(out))
    rc, lines, err = cli(capsys, open_room, *argv)
    assert rc == 3 and "Traceback" not in err, err
    assert lines == [f"mosnav-eval: error: cannot write {out}/rank_00000/episodes.jsonl: No space "
                     "left on device; free some space, then continue with --resume"]
    assert [r["episode_key"] for r in jsonl(out)] == [EPISODE_KEYS[0]]  # truncated back
    monkeypatch.setattr(results, "_os_write", real_write)
    rc, lines, err = cli(capsys, open_room, *argv, "--resume")
    assert rc == 0, err
    assert comparable(jsonl(out)) == reference


def test_done_and_summary_full_disk_is_exit_3_without_temp_files(capsys, open_room, tmp_path,
                                                                monkeypatch):
    real_write = results._os_write

    def full_for_json(fd, data):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".tmp_"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    out = tmp_path / "run"
    os.makedirs(out)
    monkeypatch.setattr(results, "_os_write", full_for_json)
    rc, lines, err = cli(capsys, open_room, "--num-episodes", "1", "--output-dir", str(out))
    assert rc == 3 and len(lines) == 1, err
    assert lines[0].startswith(f"mosnav-eval: error: cannot write {out}/run.json: No space left")
    assert os.listdir(out) == []


def test_no_permission_is_exit_3(capsys, open_room, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    rc, lines, err = cli(capsys, open_room, "--output-dir", str(ro / "run"))
    assert rc == 3 and lines[0].startswith(f"mosnav-eval: error: cannot "), err


# ------------------------------------------------------------------ 2. two writers


def test_second_writer_refused_with_the_holders_pid(capsys, open_room, tmp_path):
    out = tmp_path / "run"
    argv = ("--agent", "oracle", "--output-dir", str(out))
    assert cli(capsys, open_room, *argv, "--num-episodes", "1")[0] == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from habitat_mosnav.evaluation.results import RankWriter
            w = RankWriter({str(out)!r}, 0, resume=True)
            print("locked", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": REPO})
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = (out / "rank_00000" / "episodes.jsonl").read_bytes()
        rc, lines, err = cli(capsys, open_room, *argv, "--num-episodes", "1", "--resume")
        assert rc == 2, err
        assert len(lines) == 1 and f"is being written by another process (pid {holder.pid}" in lines[0]
        assert (out / "rank_00000" / "episodes.jsonl").read_bytes() == before
    finally:
        holder.communicate("", timeout=30)
    assert cli(capsys, open_room, *argv, "--num-episodes", "1", "--resume")[0] == 0


def test_lock_is_held_until_close_and_not_counted_as_results(tmp_path):
    out = str(tmp_path / "o")
    first = RankWriter(out, 0)
    with pytest.raises(RankLockedError, match=f"pid {os.getpid()}"):
        RankWriter(out, 0, resume=True)
    first.close()
    assert sorted(os.listdir(os.path.join(out, "rank_00000"))) == ["episodes.jsonl",
                                                                   "writer.lock"]
    RankWriter(out, 0, resume=True).close()
    os.unlink(os.path.join(out, "rank_00000", "episodes.jsonl"))
    RankWriter(out, 0).close()  # only the lock file left: a fresh start is allowed


# ------------------------------------------------------------------ 3. manifest


def test_manifest_written_at_first_start(capsys, open_room, tmp_path):
    out = tmp_path / "run"
    assert cli(capsys, open_room, "--num-episodes", "3", "--seed", "4", "--max-steps", "9",
               *ALL_MODES, "--output-dir", str(out))[0] == 0
    m = json.loads((out / "run.json").read_text())
    assert set(MANIFEST_FIELDS) | {"schema_version"} == set(m)
    assert (m["split"], m["offset"], m["limit"], m["world_size"], m["seed"], m["max_steps"],
            m["protocol"], m["agent"]) == ("val", 0, 3, 1, 4, 9, "goat", "random")
    assert m["selection"]["episode_count"] == 3
    assert m["selection"]["target_modes"] == ["single", "any", "many", "all"]
    assert "habitat.environment.max_episode_steps=9" in m["config_overrides"]
    assert not any(str(tmp_path) in o for o in m["config_overrides"])  # no local paths
    assert m["dataset_fingerprint"].startswith("sha256:")
    assert oct((out / "run.json").stat().st_mode & 0o777) == oct(0o666 & ~results._umask())


@pytest.mark.parametrize("change, field", [
    (("--num-episodes", "2"), "limit"),
    (("--seed", "1"), "seed"),
    (("--max-steps", "20"), "max_steps"),
    (("--agent", "oracle"), "agent"),
    (("--world-size", "2", "--rank", "0"), "world_size"),
    (("--offset", "1"), "offset"),
    (("--action-protocol", "legacy"), "protocol"),
    (("--episode-limit", "2"), "selection.episode_limit"),
])
def test_resume_with_other_settings_is_refused_naming_the_field(capsys, open_room, tmp_path,
                                                                change, field):
    out = tmp_path / "run"
    base = ("--num-episodes", "3", *ALL_MODES, "--output-dir", str(out))
    assert cli(capsys, open_room, *base)[0] == 0
    before = (out / "rank_00000" / "episodes.jsonl").read_bytes()
    argv = list(base) + ["--resume"]
    for flag_value in zip(change[::2], change[1::2]):  # replace or add each flag
        if flag_value[0] in argv:
            argv[argv.index(flag_value[0]) + 1] = flag_value[1]
        else:
            argv += list(flag_value)
    rc, lines, err = cli(capsys, open_room, *argv)
    assert rc == 2 and len(lines) == 1, err
    assert f"run.json: field '{field}' differs" in lines[0], lines
    assert (out / "rank_00000" / "episodes.jsonl").read_bytes() == before
    assert (out / "rank_00000" / "done.json").exists()  # the refused resume touched nothing


def test_resume_on_an_edited_dataset_is_refused(capsys, open_room, tmp_path):
    data = shutil.copytree(open_room[0], tmp_path / "data")
    room = (str(data), open_room[1])
    out = tmp_path / "run"
    assert cli(capsys, room, "--num-episodes", "1", "--output-dir", str(out))[0] == 0
    path = data / "testScene01" / "episodes.json"
    doc = json.loads(path.read_text())
    doc["episodes"][0]["start_position"] = [0.5, 0.0, 0.0]
    path.write_text(json.dumps(doc))
    rc, lines, err = cli(capsys, room, "--num-episodes", "1", "--output-dir", str(out), "--resume")
    assert rc == 2 and "field 'dataset_fingerprint' differs" in lines[0], err


def test_summary_counts_only_expected_keys(tmp_path):
    from test_results_files import record

    out = str(tmp_path / "o")
    with RankWriter(out) as w:
        for i in range(3):
            w.write(record(i, 1.0))
        w.write_done(expected_count=2)
    keys = [record(i, 1.0)["episode_key"] for i in range(2)]
    s = results.summarize(out, expected_keys=keys)
    assert (s["expected_episode_count"], s["record_count"], s["unique_record_count"]) == (2, 2, 2)
    assert s["status"] == "complete"
