"""``mosnav_ppo`` / ``mosnav_ddppo``: habitat-baselines' PPO trainer with its pitfalls fixed.

Training and the per-checkpoint evaluation are habitat-baselines' own code; only these
change:

* checkpoints and training resume states load under torch >= 2.6 (whose default
  ``weights_only=True`` refuses the ``DictConfig`` they hold), see
  :mod:`habitat_mosnav.baselines.checkpoint`;
* the last update always writes a checkpoint (``num_checkpoints`` alone can skip it, e.g.
  with ``num_updates=4``);
* ``eval_ckpt_path_dir`` as a directory evaluates the ``ckpt.N.pth`` files found there, in
  index order, and exits. The stock loop polls forever for ``num_checkpoints`` files and
  restores an old run's config and position from ``.habitat-resume-stateeval.pth``;
* with ``habitat_baselines.eval.use_ckpt_config=False`` the evaluation uses the current
  config (the stock trainer ignores that option and always takes the checkpoint's);
* with the mosnav evaluator, a checkpoint whose results already exist is refused (one
  line) unless ``habitat_baselines.evaluator.resume=True``, which skips complete ones.
"""

from __future__ import annotations

import os
import re
from typing import List, Tuple

import torch
from habitat import logger
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.common.tensorboard_utils import get_writer
from habitat_baselines.rl.ppo.ppo_trainer import PPOTrainer

from habitat_mosnav.baselines import evaluator as mos_eval
from habitat_mosnav.baselines.checkpoint import CheckpointError, load_checkpoint, load_resume_state
from habitat_baselines.rl.ddppo.ddp_utils import resume_state_filename
from habitat_baselines.rl.ppo import ppo_trainer as _ppo_trainer_module
from habitat_mosnav.evaluation.durable import ResultFileError

_CKPT_RE = re.compile(r"^ckpt\.(\d+)\.pth$")

#: Config entries that shape the policy's inputs or network: evaluating a checkpoint with
#: other values fails inside ``load_state_dict`` (or silently changes what it sees).
POLICY_KEYS = (
    "habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor.width",
    "habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor.height",
    "habitat.simulator.agents.main_agent.sim_sensors.depth_sensor.width",
    "habitat.simulator.agents.main_agent.sim_sensors.depth_sensor.height",
    "habitat.gym.obs_keys",
    "habitat.task.actions",
    "habitat_baselines.rl.policy.main_agent.name",
    "habitat_baselines.rl.policy.main_agent.obs_transforms",
    "habitat_baselines.rl.ppo.hidden_size",
    "habitat_baselines.rl.ddppo.backbone",
    "habitat_baselines.rl.ddppo.rnn_type",
    "habitat_baselines.rl.ddppo.num_recurrent_layers",
)


def _plain(config, key):
    from omegaconf import OmegaConf

    value = OmegaConf.select(config, key, default=None, throw_on_missing=False)
    try:
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except Exception:
        return OmegaConf.to_container(value, resolve=False)


def policy_config_mismatch(current, trained) -> List[str]:
    """``key: trained -> current`` for each :data:`POLICY_KEYS` entry that differs."""
    out = []
    for key in POLICY_KEYS:
        a, b = _plain(trained, key), _plain(current, key)
        if isinstance(a, dict) and isinstance(b, dict) and key.endswith("actions"):
            a, b = list(a), list(b)
        if a != b:
            out.append(f"{key}: {a!r} (checkpoint) vs {b!r} (now)")
    return out


class EvalSetupError(RuntimeError):
    """A one-line problem with the evaluation request (paths, existing results)."""


def list_checkpoints(path: str) -> List[Tuple[str, int]]:
    """``[(file, index)]`` to evaluate for ``eval_ckpt_path_dir``: the file itself, or the
    ``ckpt.N.pth`` files of a directory sorted by N (``latest.pth`` and hidden resume-state
    files are never picked)."""
    if os.path.isfile(path):
        m = _CKPT_RE.match(os.path.basename(path))
        return [(path, int(m.group(1)) if m else 0)]
    if os.path.isdir(path):
        found = []
        for name in os.listdir(path):
            m = _CKPT_RE.match(name)
            if m and os.path.isfile(os.path.join(path, name)):
                found.append((os.path.join(path, name), int(m.group(1))))
        if not found:
            raise EvalSetupError(
                f"habitat_baselines.eval_ckpt_path_dir={path}: no ckpt.N.pth "
                "checkpoints in this directory (train first)"
            )
        return sorted(found, key=lambda t: t[1])
    raise EvalSetupError(f"habitat_baselines.eval_ckpt_path_dir={path}: no such file or directory")


def _load_resume_state(filename_or_config, filename_key: str = ""):
    """``ddp_utils.load_resume_state`` with a loader that works on torch >= 2.6."""
    if isinstance(filename_or_config, str):
        return load_resume_state(filename_or_config)
    return load_resume_state(resume_state_filename(filename_or_config, filename_key))


@baseline_registry.register_trainer(name="mosnav_ddppo")
@baseline_registry.register_trainer(name="mosnav_ppo")
class MosNavPPOTrainer(PPOTrainer):
    """habitat-baselines' ``PPOTrainer`` (also DD-PPO) with the fixes listed above."""

    _mosnav_evaluating = False

    def load_checkpoint(self, checkpoint_path: str, *args, **kwargs):
        return load_checkpoint(checkpoint_path, map_location=kwargs.get("map_location", "cpu"))

    def train(self) -> None:
        # The stock train() reads ``.habitat-resume-state.pth`` (saved every
        # ``save_resume_state_interval`` updates) through ddp_utils.load_resume_state, whose
        # torch.load fails on torch >= 2.6; swap in our loader for the call.
        original = _ppo_trainer_module.load_resume_state
        _ppo_trainer_module.load_resume_state = _load_resume_state
        try:
            super().train()
        finally:
            _ppo_trainer_module.load_resume_state = original

    def should_checkpoint(self) -> bool:
        return super().should_checkpoint() or self.is_done()

    def save_checkpoint(self, file_name: str, extra_state=None) -> None:
        """habitat-baselines' save, then one log line saying where (it says nothing)."""
        super().save_checkpoint(file_name, extra_state)
        logger.info(
            "checkpoint saved: "
            + os.path.join(self.config.habitat_baselines.checkpoint_folder, file_name)
        )

    def _get_resume_state_config_or_new_config(self, resume_state_config):
        if self._mosnav_evaluating and not self.config.habitat_baselines.eval.use_ckpt_config:
            return self.config.copy()
        return super()._get_resume_state_config_or_new_config(resume_state_config)

    def _plan_evaluation(self) -> List[Tuple[str, int]]:
        cfg = self.config.habitat_baselines
        if not cfg.eval.should_load_ckpt:
            return [("", 0)]
        plan = list_checkpoints(str(cfg.eval_ckpt_path_dir))
        if not mos_eval.uses_mosnav_evaluator(self.config):
            return plan
        resume = bool(cfg.evaluator.get("resume", False))
        todo = []
        for path, index in plan:
            out = mos_eval.results_dir(self.config, path, index)
            if os.path.isdir(out) and os.listdir(out):
                if not resume:
                    raise EvalSetupError(
                        f"{out} already holds results of {os.path.basename(path)}; pass "
                        "habitat_baselines.evaluator.resume=True to continue or skip it, or "
                        "set habitat_baselines.evaluator.output_dir to a new directory"
                    )
                if mos_eval.completed(out):
                    logger.info(
                        f"mosnav: {os.path.basename(path)} already evaluated in {out}; skipped"
                    )
                    continue
            todo.append((path, index))
        return todo

    def _check_policy_config(self, path: str) -> None:
        """With ``eval.use_ckpt_config=False``, refuse (one line) a checkpoint trained with
        other sensors, observation keys or network sizes than the current config."""
        if not path or self.config.habitat_baselines.eval.use_ckpt_config:
            return
        trained = load_checkpoint(path).get("config")
        if trained is None:
            return
        diff = policy_config_mismatch(self.config, trained)
        if diff:
            raise EvalSetupError(
                f"checkpoint {path} was trained with another policy setup: {'; '.join(diff)}"
                " — pass the training values, or habitat_baselines.eval.use_ckpt_config=True"
            )

    def eval(self) -> None:
        self._add_preemption_signal_handlers()
        self.device = (
            torch.device("cuda", self.config.habitat_baselines.torch_gpu_id)
            if torch.cuda.is_available()
            else torch.device("cpu")
        )
        cfg = self.config.habitat_baselines
        if "tensorboard" in cfg.eval.video_option:
            os.makedirs(cfg.tensorboard_dir, exist_ok=True)
        if "disk" in cfg.eval.video_option and not cfg.video_dir:
            raise EvalSetupError("habitat_baselines.video_dir must be set for disk videos")
        plan = self._plan_evaluation()
        self._mosnav_evaluating = True
        try:
            with get_writer(self.config, flush_secs=self.flush_secs) as writer:
                for path, index in plan:
                    logger.info(f"======= evaluating {path or '(no checkpoint)'} =======")
                    self._check_policy_config(path)
                    mos_eval.CURRENT_CHECKPOINT["path"] = path or None
                    try:
                        self._eval_checkpoint(path, writer, checkpoint_index=index)
                    finally:
                        mos_eval.CURRENT_CHECKPOINT["path"] = None
        except (ResultFileError, CheckpointError) as exc:
            raise EvalSetupError(str(exc)) from None
        finally:
            self._mosnav_evaluating = False


from habitat_mosnav.baselines.non_scalar import mark_non_scalar_measures  # noqa: E402

mark_non_scalar_measures()
