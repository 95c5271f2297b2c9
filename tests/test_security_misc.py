"""The smaller attacks of issue #23 and the circuit breaker: episode ids that sanitise to one
file name (or are 300 characters long) keep their own maps; ``--agent /abs/path.py:A`` leaves
no local path in run.json; a gzip bomb in ``--objectnav-goals`` is refused by size; a 1e308
start position is exit 2 at load; an ``--agent api`` run against a dead server stops after N
consecutive unavailable episodes (exit 1, one line) and resumes."""

import gzip
import json
import os

import pytest

from habitat_mosnav.evaluation.cli import main
from habitat_mosnav.evaluation.maps import episode_file_stem

from chat_server import ChatServer, Reply
from conftest import (
    ALL_MODES,
    ROOM_RUN_ARGS,
    api_agent_args,
    read_records,
    room_args,
    scripted_model,
)
from mosnav_fixtures import SCENE, quick_eval_args, write_room_variant

LONG_ID = "q" + "x" * 299


def test_ids_that_sanitise_alike_get_distinct_maps(capsys, open_room, tmp_path):
    ids = ["a b", "a/b", LONG_ID]

    def edit(docs):
        for ep, new in zip(docs["episodes.json"]["episodes"], ids):
            ep["episode_id"] = new

    data = write_room_variant(tmp_path / "data", open_room, edit)
    out = tmp_path / "run"
    rc = main(
        quick_eval_args(
            *data,
            *ALL_MODES,
            "--max-steps",
            "3",
            "--agent",
            "random",
            "--save-maps",
            "--output-dir",
            str(out),
        )
    )
    err = capsys.readouterr().err
    assert rc == 0 and "warning" not in err, err
    keys = [f"val::{SCENE}::{i}" for i in ids]
    stems = {episode_file_stem(k) for k in keys}
    assert len(stems) == 3 and all(len(s) <= 120 for s in stems)
    assert sorted(os.listdir(out / "maps")) == sorted(
        [f"{s}.png" for s in stems] + [f"{episode_file_stem(f'val::{SCENE}::q2-single-0')}.png"]
    )
    assert (
        episode_file_stem(f"val::{SCENE}::q0-many-0") == f"val__{SCENE}__q0-many-0"
    )  # plain keys keep their names


def test_an_absolute_agent_path_is_not_recorded(capsys, open_room, tmp_path):
    agent = tmp_path / "my_agent.py"
    agent.write_text("class A:\n    def act(self, obs):\n        return 0\n")
    out = tmp_path / "run"
    assert main(quick_eval_args(*open_room, "--agent", f"{agent}:A", "--output-dir", str(out))) == 0
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["agent"] == "my_agent.py:A"
    assert str(tmp_path) not in (out / "run.json").read_text()


def test_a_gzip_bomb_in_objectnav_goals_is_refused_by_size(tmp_path, monkeypatch):
    from habitat_mosnav.dataset_building import objectnav
    from habitat_mosnav.dataset_building.common import BuildError

    monkeypatch.setattr(objectnav, "MAX_GOALS_BYTES", 2**20)
    bomb = tmp_path / f"{SCENE}.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"goals_by_category": {}, "pad": "' + b" " * (4 * 2**20) + b'"}')
    assert bomb.stat().st_size < 20_000
    with pytest.raises(BuildError, match=r"more than 1 MiB once decompressed"):
        objectnav.read_objectnav_goals(bomb, SCENE)


def test_a_1e308_start_position_is_exit_2_at_load(capsys, open_room, tmp_path):
    def edit(docs):
        docs["episodes.json"]["episodes"][0]["start_position"] = [1e308, 0.0, 0.0]

    data = write_room_variant(tmp_path / "data", open_room, edit)
    rc = main(quick_eval_args(*data, "--agent", "random", "--output-dir", str(tmp_path / "run")))
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mosnav-eval")]
    assert rc == 2 and len(err) == 1, err
    assert "episodes.json" in err[0] and "'start_position'" in err[0] and "1e+308" in err[0], err
    assert not (tmp_path / "run" / "rank_00000").exists()


def test_a_dead_server_trips_the_circuit_breaker_and_the_run_resumes(capsys, open_room, tmp_path):
    out = str(tmp_path / "run")
    args = [
        *room_args(open_room, *ROOM_RUN_ARGS, *ALL_MODES, "--max-steps", "3"),
        "--output-dir",
        out,
        "--max-unavailable-episodes",
        "2",
    ]
    with ChatServer(default=Reply.status(503, "down")) as server:
        assert main([*api_agent_args(server), *args]) == 1
    lines = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("mosnav-eval")
    ]
    assert lines == [
        f"mosnav-eval: error: stopped after 2 consecutive episodes failed with "
        f"APIUnavailableError (the model server is down); when it is back, continue "
        f"with --resume --retry-errors --output-dir {out}"
    ]
    assert [r["error_type"] for r in read_records(out)] == ["APIUnavailableError"] * 2
    assert json.load(open(os.path.join(out, "summary.json")))["status"] == "incomplete"
    with ChatServer(default=scripted_model(lambda k: "ACTION: 2")) as server:
        assert main([*api_agent_args(server), *args, "--resume", "--retry-errors"]) == 0
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["status"] == "complete" and summary["unique_record_count"] == 4
