"""``mosnav-eval`` command line: flags, one-line usage errors with exit code 2, agent-added
flags, and a full in-process run on a small open-room dataset."""

import json
import os
import textwrap

import pytest

from habitat_mosnav.evaluation.cli import build_overrides, build_parser, main
from habitat_mosnav.evaluation.run_request import RunRequest

from conftest import NO_IMAGES, room_args
from mosnav_fixtures import base_documents, write_dataset

ISSUE_FLAGS = [
    "--config",
    "--agent",
    "--goal-type",
    "--dataset-dir",
    "--scene-root",
    "--split",
    "--limit",
    "--episode-limit",
    "--offset",
    "--num-episodes",
    "--target-modes",
    "--max-steps",
    "--action-protocol",
    "--legacy-agent-api",
    "--space-coverage-samples",
    "--space-coverage-radius",
    "--output-dir",
    "--resume",
    "--rank",
    "--world-size",
    "--seed",
    "--fail-fast",
    "--fail-on-episode-error",
    "--set",
    "--print-config",
    "--log-prompts",
    "--log-positions",
    "--log-episodes",
    "--render-live",
    "--save-video",
]


def fast(room, *extra):
    return room_args(room, *NO_IMAGES, *extra)


def usage_error(capsys, argv):
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    err = [line for line in err if "Initializing" not in line and "initializing" not in line]
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("mosnav-eval: error: "), err
    return err[0]


def test_every_flag_of_the_issue_exists():
    options = {s for a in build_parser()._actions for s in a.option_strings}
    assert set(ISSUE_FLAGS) <= options


def test_defaults():
    args = build_parser().parse_args([])
    assert (args.agent, args.action_protocol, args.num_episodes, args.offset) == (
        "random",
        "goat",
        -1,
        0,
    )
    # the config holds these: the flags override only when given
    assert (args.space_coverage_samples, args.space_coverage_radius, args.max_steps) == (
        None,
        None,
        None,
    )
    assert args.seed == 0 and args.save_video is None and args.target_modes is None


def test_overrides_from_flags(tmp_path):
    args = build_parser().parse_args(
        [
            "--dataset-dir",
            str(tmp_path),
            "--split",
            "val",
            "--goal-type",
            "object",
            "--target-modes",
            "many,all",
            "--max-steps",
            "50",
            "--space-coverage-samples",
            "0",
            "--set",
            "habitat.simulator.turn_angle=15",
        ]
    )
    ov = build_overrides(RunRequest.from_args(args))
    assert f"habitat.dataset.data_path={tmp_path}" in ov
    assert "habitat.dataset.goal_type=object" in ov
    assert "habitat.dataset.target_modes=[many,all]" in ov
    assert "habitat.environment.max_episode_steps=50" in ov
    assert "habitat.task.mosnav_space_coverage_samples=0" in ov
    assert ov[-1] == "habitat.simulator.turn_angle=15"
    default = build_overrides(RunRequest.from_args(build_parser().parse_args([])))
    assert "habitat.dataset.target_modes=[many,all]" in default


@pytest.mark.parametrize(
    "argv, text",
    [
        (["--agent", "not_an_agent"], "unknown agent 'not_an_agent'"),
        (["--agent", "nopkg_q.mod:A"], "no module named 'nopkg_q.mod'"),
        (["--max-steps", "0"], "must be an integer in 1..100000, got 0"),
        (["--num-episodes", "-2"], "must be an integer in -1..10000000, got -2"),
        (["--action-protocol", "gym"], "invalid choice: 'gym'"),
        (["--target-modes", "many,most"], "unknown mode most"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--set", "novalue"], "expects KEY=VALUE"),
        (["--rank", "2", "--world-size", "2"], "--rank 2 must be < --world-size 2"),
        (
            ["--dataset-dir", "/definitely/not/here"],
            "--dataset-dir /definitely/not/here: no such directory",
        ),
        (["--config", "no/such/config.yaml", "--print-config"], "--config no/such/config.yaml"),
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, argv, text):
    assert text in usage_error(capsys, argv)


def test_render_live_without_display(capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert "--render-live needs a display" in usage_error(
        capsys, ["--agent", "human", "--render-live"]
    )


def test_render_live_with_unreachable_display(capsys, monkeypatch):
    # OpenCV would abort the process on this display; the CLI probes it first.
    monkeypatch.setenv("DISPLAY", ":987")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    line = usage_error(capsys, ["--agent", "human", "--render-live"])
    assert "could not open an OpenCV window on :987" in line


def test_help_lists_agent_flags(tmp_path, capsys):
    f = tmp_path / "flag_agent.py"
    f.write_text(
        textwrap.dedent("""
        class FlagAgent:
            @classmethod
            def add_arguments(cls, parser):
                parser.add_argument("--temperature", type=float, default=0.5)
            @classmethod
            def from_args(cls, args):
                return cls()
            def act(self, o):
                return 0
    """)
    )
    with pytest.raises(SystemExit) as info:
        main(["--agent", f"{f}:FlagAgent", "--help"])
    assert info.value.code == 0
    assert "--temperature" in capsys.readouterr().out


def test_print_config_applies_flags(capsys, open_room):
    rc = main(fast(open_room, "--print-config", "--max-steps", "7", "--goal-type", "object"))
    out = capsys.readouterr().out
    assert rc == 0
    assert "max_episode_steps: 7" in out and "goal_type: object" in out
    assert "mosnav_space_coverage_samples: 0" in out


def test_malformed_json_is_a_one_line_error(capsys, tmp_path):
    docs = base_documents()
    docs["episodes.json"] = '{"schema_version": 1, "episodes": [ {"episode_id": '
    data, scenes = write_dataset(tmp_path, docs)
    line = usage_error(
        capsys, ["--dataset-dir", data, "--scene-root", scenes, "--output-dir", str(tmp_path / "o")]
    )
    assert "episodes.json" in line and "cannot load the dataset" in line
    assert not os.path.exists(tmp_path / "o" / "summary.json")


def test_missing_field_names_file_and_episode(capsys, tmp_path):
    docs = base_documents()
    del docs["episodes.json"]["episodes"][0]["target_mode"]
    data, scenes = write_dataset(tmp_path, docs)
    line = usage_error(
        capsys, ["--dataset-dir", data, "--scene-root", scenes, "--output-dir", str(tmp_path / "o")]
    )
    assert "episodes.json" in line and "target_mode" in line and "q0-many-0" in line


def test_full_run_oracle_then_existing_directory_refused(capsys, open_room, tmp_path):
    out = str(tmp_path / "run")
    argv = fast(
        open_room,
        "--agent",
        "oracle",
        "--target-modes",
        "many,all,single,any",
        "--output-dir",
        out,
        "--log-episodes",
    )
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "SR (many+all)  1.0000" in captured.out and "summary.json" in captured.out
    assert "q0-many-0: finish" in captured.err
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["status"] == "complete" and summary["expected_episode_count"] == 4
    assert summary["metrics"]["sr"] == 1.0 and summary["metrics"]["sr_single"] == 1.0
    line = usage_error(capsys, argv)
    assert "already has results" in line and "--resume" in line
    assert main(argv + ["--resume"]) == 0  # nothing left to do; summary rewritten
    assert json.load(open(os.path.join(out, "summary.json")))["unique_record_count"] == 4


def test_agent_error_exit_codes(capsys, open_room, tmp_path):
    f = tmp_path / "bad_agent.py"
    f.write_text("class Bad:\n    def act(self, o):\n        return 7\n")
    base = fast(open_room, "--agent", f"{f}:Bad", "--num-episodes", "2")
    assert main(base + ["--output-dir", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "InvalidAction" in err and "2 episode(s) failed" in err
    assert main(base + ["--output-dir", str(tmp_path / "b"), "--fail-on-episode-error"]) == 1
    recs = [json.loads(x) for x in open(tmp_path / "b" / "rank_00000" / "episodes.jsonl")]
    assert [r["error_type"] for r in recs] == ["InvalidAction", "InvalidAction"]
    # --fail-fast stops after the first error record and exits 1 (SPEC §8), so a
    # launcher chaining commands with && stops too.
    assert main(base + ["--output-dir", str(tmp_path / "c"), "--fail-fast"]) == 1
    recs = [json.loads(x) for x in open(tmp_path / "c" / "rank_00000" / "episodes.jsonl")]
    assert len(recs) == 1 and recs[0]["status"] == "error"
    assert json.load(open(tmp_path / "c" / "summary.json"))["status"] == "incomplete"
    assert (
        main(base + ["--output-dir", str(tmp_path / "d"), "--fail-fast", "--fail-on-episode-error"])
        == 1
    )


def test_legacy_agent_api_flag(capsys, open_room, tmp_path):
    f = tmp_path / "old_agent.py"
    f.write_text(
        textwrap.dedent("""
        class Old:
            seen = []
            def act(self, rgb=None, depth=None, prompt=None):
                Old.seen.append(prompt)
                return 9
    """)
    )
    out = tmp_path / "legacy"
    rc = main(
        fast(
            open_room,
            "--agent",
            f"{f}:Old",
            "--legacy-agent-api",
            "--action-protocol",
            "legacy",
            "--num-episodes",
            "1",
            "--output-dir",
            str(out),
        )
    )
    assert rc == 0
    (rec,) = [json.loads(x) for x in open(out / "rank_00000" / "episodes.jsonl")]
    assert rec["status"] == "ok" and rec["terminated_by"] == "finish" and rec["steps_taken"] == 1


def test_save_video_and_example_agent(capsys, open_room, tmp_path, monkeypatch):
    import imageio

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.chdir(repo)  # users run --agent examples.simple_agent:SimpleAgent from here
    out = tmp_path / "video"
    rc = main(
        fast(
            open_room,
            "--agent",
            "examples.simple_agent:SimpleAgent",
            "--num-episodes",
            "2",
            "--max-steps",
            "12",
            "--save-video",
            "gif",
            "--output-dir",
            str(out),
        )
    )
    assert rc == 0
    recs = [json.loads(x) for x in open(out / "rank_00000" / "episodes.jsonl")]
    assert [r["status"] for r in recs] == ["ok", "ok"]
    assert recs[0]["terminated_by"] == "finish" and recs[0]["steps_taken"] == 10  # FINISH at 10
    for r in recs:
        path = out / "videos" / (r["episode_key"].replace("::", "__") + ".gif")
        frames = imageio.mimread(str(path))
        assert len(frames) == r["steps_taken"] + 1  # the reset frame plus one per action


def test_cli_and_agent_modules_import_neither_torch_nor_habitat():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import habitat_mosnav.eval, habitat_mosnav.evaluation.cli, "
        "habitat_mosnav.evaluation.evaluator, "
        "habitat_mosnav.evaluation.rollout, habitat_mosnav.agents.oracle, "
        "habitat_mosnav.agents.human, habitat_mosnav.prompts\n"
        "print(sorted(m for m in ('torch', 'habitat', 'habitat_baselines') if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-1000:]
    assert res.stdout.strip() == "[]"
