"""End to end through the real command line: ``python -m habitat_mosnav.run`` trains PPO
(2 worker processes, small images, a few updates) and writes a checkpoint; evaluating it
reports the mosnav measures and writes SPEC §8 records that the evaluation layer reads."""

import json
import math
import os
import re
import subprocess
import sys

import pytest

import habitat_mosnav
from habitat_mosnav.evaluation.rank_files import read_jsonl
from habitat_mosnav.evaluation.summary import summarize

from mosnav_fixtures import SCENE, EPISODE_KEYS, write_open_room_dataset  # noqa: E402

pytestmark = [pytest.mark.baselines, pytest.mark.slow]
pytest.importorskip("habitat_baselines")

KEYS = set(EPISODE_KEYS)
S = "habitat.simulator.agents.main_agent.sim_sensors"


def run(cwd, *overrides, timeout=900, config="ppo_mos_demo"):
    env = dict(os.environ)
    env.pop("HABITAT_ENV_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "habitat_mosnav.run", f"--config-name={config}", *overrides],
        cwd=str(cwd),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _common(data, scenes, output_dir="exp"):
    return [
        f"habitat.dataset.data_path={data}",
        f"habitat.dataset.scenes_dir={scenes}",
        "habitat.dataset.target_modes=[]",
        "habitat.environment.max_episode_steps=40",
        "habitat.task.mosnav_space_coverage_samples=50",
        f"{S}.rgb_sensor.width=64",
        f"{S}.rgb_sensor.height=64",
        f"{S}.depth_sensor.width=64",
        f"{S}.depth_sensor.height=64",
        f"mosnav_output_dir={output_dir}",
    ]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    root = tmp_path_factory.mktemp("bl_ppo")
    data, scenes = write_open_room_dataset(root)
    common = _common(data, scenes)
    rc, log = run(
        root, *common, "habitat_baselines.num_updates=3", "habitat_baselines.rl.ppo.num_steps=8"
    )
    assert rc == 0, log[-3000:]
    return root, common, log


@pytest.mark.py39
def test_training_writes_checkpoint_under_the_output_dir(experiment):
    root, _, log = experiment
    ckpts = sorted(os.listdir(root / "exp" / "checkpoints"))
    assert "ckpt.0.pth" in ckpts and "latest.pth" in ckpts
    assert (root / "exp" / "train.log").is_file()
    assert list((root / "exp" / "hydra").iterdir())  # Hydra's run dir, not ./outputs
    assert not (root / "outputs").exists()
    pkg = os.path.dirname(habitat_mosnav.__file__)
    assert not os.path.exists(os.path.join(pkg, "outputs"))
    assert "Number of params to train" in log
    # the demo config logs every update and says where each checkpoint went (issue 24)
    assert "update: 3" in log and "checkpoint saved: exp/checkpoints/ckpt.0.pth" in log

    from habitat_mosnav.baselines.checkpoint import load_checkpoint

    ckpt = load_checkpoint(str(root / "exp" / "checkpoints" / "ckpt.0.pth"))
    assert ckpt["extra_state"]["step"] == 3 * 8 * 2  # updates x steps x environments
    assert ckpt["config"].habitat_baselines.trainer_name == "mosnav_ppo"


@pytest.mark.py39
def test_evaluation_reports_measures_and_writes_records(experiment):
    root, common, _ = experiment
    rc, log = run(root, *common, "habitat_baselines.evaluate=True")
    assert rc == 0, log[-3000:]
    averages = dict(re.findall(r"Average episode (\S+): (\S+)", log))
    for name in (
        "mos_success",
        "mos_f1",
        "spl_multi",
        "mos_precision",
        "mos_recall",
        "optimal_subset_distance",
        "trajectory_length",
    ):
        assert name in averages, f"{name} not reported"
        assert math.isfinite(float(averages[name]))
    assert "mos_report_events" not in averages

    out = root / "exp" / "eval" / "ckpt.0"
    summary = summarize(str(out))
    assert summary["status"] == "complete"
    assert summary["ok_episode_count"] == 4 and summary["error_episode_count"] == 0
    assert summary["metrics"]["num_episodes_many"] == 1
    records, partial = read_jsonl(str(out / "rank_00000" / "episodes.jsonl"))
    assert not partial and {r["episode_key"] for r in records} == KEYS
    for r in records:
        assert r["status"] == "ok" and r["episode"]["max_steps"] == 40
        assert 1 <= r["steps_taken"] <= 40
        assert r["terminated_by"] in ("finish", "target_found", "max_steps")
        for field in (
            "success",
            "f1",
            "spl_multi",
            "precision",
            "recall",
            "trajectory_length",
            "optimal_subset_distance",
        ):
            assert math.isfinite(r["metrics"][field]), field
        assert len(r["report_events"]) == r["metrics"]["tp"] + r["metrics"]["fp"]
        # the record is enough to replay the episode (issue 32)
        assert len(r["replay"]["actions"]) == r["steps_taken"]
        assert r["replay"]["start"] == r["initial_agent_state"]
        assert r["replay"]["motion"]["simulator"] == "MosNavMeshSim-v0"
        assert "/" not in r["episode"]["scene_id"]

    # mosnav-report names the run after its experiment and shows the agent (issue 24)
    from habitat_mosnav.evaluation.report.cli import write_report

    (board,) = write_report([str(out)], str(root / "report"), resamples=20, progress=False)
    assert board.name == "exp_ckpt.0"
    assert board.manifest_text("agent").startswith(
        "habitat-baselines mosnav_ppo PointNavResNetPolicy"
    )
    assert "exp_ckpt.0" in (root / "report" / "leaderboard.md").read_text()

    # a second evaluation into the same directory is refused with one line
    rc, log = run(root, *common, "habitat_baselines.evaluate=True")
    assert rc == 2 and "Traceback" not in log
    assert "habitat_baselines.evaluator.resume=True" in log.strip().splitlines()[-1]


def test_evaluation_with_fewer_episodes_than_environments(experiment):
    # 1 episode -> 1 environment while num_environments is 2: habitat-baselines' own loop
    # would size its buffers for 2 and fail; the mosnav evaluator sizes them for 1.
    root, common, _ = experiment
    rc, log = run(
        root,
        *common,
        "habitat_baselines.evaluate=True",
        "habitat_baselines.test_episode_count=1",
        "habitat_baselines.evaluator.output_dir=exp/eval_one",
    )
    assert rc == 0, log[-3000:]
    summary = summarize(str(root / "exp" / "eval_one" / "ckpt.0"))
    assert summary["status"] == "complete" and summary["ok_episode_count"] == 1
    records, _ = read_jsonl(
        str(root / "exp" / "eval_one" / "ckpt.0" / "rank_00000" / "episodes.jsonl")
    )
    assert [r["episode_key"] for r in records] == [sorted(KEYS)[0]]
    assert records[0]["episode_index"] == 0


def test_evaluation_video_with_the_top_down_map(experiment):
    # habitat's overlay_frame formats every info value with :.2f and crashes on the
    # top_down_map dict (habitat-lab PR #1060); the mosnav evaluator overlays only scalars,
    # so the video with habitat's map panel is written.
    root, common, _ = experiment
    rc, log = run(
        root,
        *common,
        "habitat_baselines.evaluate=True",
        "habitat_baselines.test_episode_count=1",
        "habitat_baselines.evaluator.output_dir=exp/eval_video",
        "habitat_baselines.eval.video_option=[disk]",
        "habitat_baselines.video_dir=exp/video_map",
        "+habitat/task/measurements@habitat.task.measurements.top_down_map=top_down_map",
        # the open room has no semantic annotations to draw goal boxes from
        "habitat.task.measurements.top_down_map.draw_goal_aabbs=False",
    )
    assert rc == 0, log[-3000:]
    videos = [n for n in os.listdir(root / "exp" / "video_map") if n.endswith(".mp4")]
    assert len(videos) == 1
    import imageio

    frames = imageio.mimread(str(root / "exp" / "video_map" / videos[0]), memtest=False)
    # the RGB and depth panels (64 px) plus habitat's map panel beside them
    assert len(frames) >= 2 and frames[0].shape[1] > 2 * 64


def _add_image_goals(data):
    """Each query of the open room gets an image goal: a camera 1 m in front (+z) of its
    first matched object, at eye height, looking at it (-z)."""
    path = os.path.join(data, SCENE, "queries.json")
    with open(path) as f:
        doc = json.load(f)
    goals_path = os.path.join(data, SCENE, "goals.json")
    with open(goals_path) as f:
        nav = {g["object_id"]: g["navigable_position"] for g in json.load(f)["goals"]}
    for q in doc["queries"]:
        oid = q["matched_object_ids"][0]
        x, _, z = nav[oid]
        q["image_goal"] = {
            "object_id": oid,
            "position": [x, 0.88, z + 0.5],
            "rotation": [0.0, 0.0, 0.0, 1.0],
            "hfov": None,
            "width": None,
            "height": None,
        }
    with open(path, "w") as f:
        json.dump(doc, f)


def test_ppo_trains_and_evaluates_on_image_goals(tmp_path):
    """ppo_mos_demo_image: a few PPO updates with the goal picture as the policy's
    goal-image input (its own ResNet in the checkpoint), then an evaluation whose records
    and summary are of goal type image."""
    data, scenes = write_open_room_dataset(tmp_path)
    _add_image_goals(data)
    common = _common(data, scenes, "exp_image")
    # what the policy gets: the rendered goal picture, at the camera's size
    import habitat
    from habitat.config.default_structured_configs import register_hydra_plugin
    from habitat_baselines.config.default_structured_configs import HabitatBaselinesConfigPlugin

    import habitat_mosnav.baselines

    habitat_mosnav.baselines.register()  # the obs transformer's config
    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    cfg = habitat_mosnav.get_config("baselines/ppo_mos_demo_image.yaml", common)
    with habitat.Env(cfg) as env:
        goal = env.reset()["mosnav_goal_image"]
    assert goal.shape == (64, 64, 3) and goal.dtype.name == "uint8"
    assert goal.any() and goal.std() > 1.0  # a render, not the zeros of no image goal
    rc, log = run(
        tmp_path,
        *common,
        "habitat_baselines.num_updates=2",
        "habitat_baselines.rl.ppo.num_steps=8",
        config="ppo_mos_demo_image",
    )
    assert rc == 0, log[-3000:]
    assert "update: 2" in log

    from habitat_mosnav.baselines.checkpoint import load_checkpoint

    ckpt = load_checkpoint(str(tmp_path / "exp_image" / "checkpoints" / "ckpt.0.pth"))
    assert ckpt["extra_state"]["step"] == 2 * 8 * 2
    weights = ckpt["state_dict"]
    goal_keys = [k for k in weights if ".instance_imagegoal_encoder." in k]
    assert goal_keys and any(".instance_imagegoal_fc." in k for k in weights)
    # the camera's ResNet takes rgb + depth only (4 channels): the goal is not stacked on it
    first_conv = next(
        v for k, v in weights.items() if k.endswith("net.visual_encoder.backbone.conv1.0.weight")
    )
    assert first_conv.shape[1] == 4

    rc, log = run(tmp_path, *common, "habitat_baselines.evaluate=True", config="ppo_mos_demo_image")
    assert rc == 0, log[-3000:]
    out = tmp_path / "exp_image" / "eval" / "ckpt.0"
    summary = summarize(str(out))
    assert summary["status"] == "complete" and summary["ok_episode_count"] == 4
    assert list(summary["by_goal_type"]) == ["image"]
    assert summary["by_goal_type"]["image"]["num_episodes"] == 4
    records, _ = read_jsonl(str(out / "rank_00000" / "episodes.jsonl"))
    assert {r["episode"]["goal_type"] for r in records} == {"image"}


def _add_sequential_episodes(data):
    """conftest's SEQUENTIAL_EPISODES, seq-0's second subtask (the table, q2) as an image
    goal: seq-0 is object, image, description; seq-1 object, object."""
    from conftest import SEQUENTIAL_EPISODES

    path = os.path.join(data, SCENE, "episodes.json")
    with open(path) as f:
        doc = json.load(f)
    seq = json.loads(json.dumps(SEQUENTIAL_EPISODES))
    seq[0]["subtasks"][1]["goal_type"] = "image"
    doc["episodes"] += seq
    with open(path, "w") as f:
        json.dump(doc, f)


def test_ppo_trains_and_evaluates_on_sequential_episodes(tmp_path):
    """GOAT-Bench's protocol (SPEC §11) under PPO: the goal inputs follow the current
    subtask in spaces of one shape, the reward stays finite, and the evaluation writes
    sequential records with GOAT-Bench's metrics and per-subtask lists."""
    from habitat_mosnav.evaluation.records import SUBTASK_METRIC_FIELDS, check_record
    from habitat_mosnav.metrics.goat import GOAT_SCALAR_FIELDS

    data, scenes = write_open_room_dataset(tmp_path)
    _add_image_goals(data)
    _add_sequential_episodes(data)
    common = [o for o in _common(data, scenes, "exp_seq") if "target_modes" not in o] + [
        "habitat.dataset.target_modes=[sequential]",
        # ppo_mos_demo_image's goal picture plus the goal text (object, description)
        "habitat.gym.obs_keys=[rgb,depth,mosnav_goal_text,mosnav_goal_image,"
        "mosnav_target_mode,mosnav_target_count,compass,gps]",
    ]
    import habitat
    from habitat.config.default_structured_configs import register_hydra_plugin
    from habitat_baselines.config.default_structured_configs import HabitatBaselinesConfigPlugin

    import habitat_mosnav.baselines

    habitat_mosnav.baselines.register()
    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    cfg = habitat_mosnav.get_config("baselines/ppo_mos_demo_image.yaml", common)
    with habitat.Env(cfg) as env:
        env.current_episode = next(e for e in env.episodes if e.episode_id == "seq-0")
        first = env.reset()  # subtask 0: object "chair"
        second = env.step({"action": "target_found"})  # fails far away; subtask 1: image
    for key in ("mosnav_goal_image", "mosnav_goal_text", "mosnav_target_mode"):
        assert first[key].shape == second[key].shape, key
    assert first["mosnav_target_mode"].shape == (4,) and not first["mosnav_target_mode"].any()
    assert not first["mosnav_goal_image"].any() and second["mosnav_goal_image"].std() > 1.0
    rc, log = run(
        tmp_path,
        *common,
        "habitat_baselines.num_updates=2",
        "habitat_baselines.rl.ppo.num_steps=8",
        config="ppo_mos_demo_image",
    )
    assert rc == 0, log[-3000:]
    assert "update: 2" in log
    rewards = re.findall(r"\s(?:mos_)?reward: (\S+)", log)
    assert rewards and all(math.isfinite(float(v)) for v in rewards)
    from habitat_mosnav.baselines.checkpoint import load_checkpoint

    ckpt = load_checkpoint(str(tmp_path / "exp_seq" / "checkpoints" / "ckpt.0.pth"))
    assert ckpt["extra_state"]["step"] == 2 * 8 * 2

    rc, log = run(tmp_path, *common, "habitat_baselines.evaluate=True", config="ppo_mos_demo_image")
    assert rc == 0, log[-3000:]
    out = tmp_path / "exp_seq" / "eval" / "ckpt.0"
    summary = summarize(str(out))
    assert summary["status"] == "complete" and summary["ok_episode_count"] == 2
    assert summary["metrics"]["num_episodes_sequential"] == 2
    assert 0.0 <= summary["metrics"]["partial_success"] <= 1.0
    records, _ = read_jsonl(str(out / "rank_00000" / "episodes.jsonl"))
    types = {"seq-0": ["object", "image", "description"], "seq-1": ["object", "object"]}
    assert {r["episode"]["episode_id"] for r in records} == set(types)
    for r in records:
        check_record(r, "episodes.jsonl", 1)
        assert r["episode"]["target_mode"] == "sequential"
        assert set(GOAT_SCALAR_FIELDS) <= set(r["metrics"])
        assert r["metrics"]["task_success"] in (0, 1)
        block = r["subtask_metrics"]
        assert set(block) == set(SUBTASK_METRIC_FIELDS)
        assert block["goal_types"] == types[r["episode"]["episode_id"]]
        # one SUBTASK_STOP event per stopped subtask
        assert len(r["report_events"]) == sum(s is not None for s in block["stop_step"])
