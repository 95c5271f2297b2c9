"""``MosNavEvaluator``: habitat-baselines' evaluation loop plus SPEC §8 episode records.

Set ``habitat_baselines.evaluator`` to the ``mosnav`` entry (``_target_`` this class). It
runs habitat-baselines' own ``HabitatEvaluator`` loop unchanged — same policy calls, same
logged averages and videos — with four fixes around it:

* the loop's buffers are sized from the environments really built (habitat-baselines
  sizes them from ``num_environments``, which breaks when eval builds fewer);
* non-finite measure values (NaN = "null" in SPEC §4, e.g. ``agent_subset_distance``
  without claims) are left out of that episode's info, so the logged means are the means
  of the finite values (SPEC §5) instead of NaN; the list ``mos_report_events`` is taken
  out too (video overlays and scalar extraction cannot handle lists);
* the evaluation video's text overlay (habitat's ``overlay_frame``, which formats every
  info value with ``:.2f`` and crashes on the ``top_down_map`` dict of arrays; habitat-lab
  PR #1060) gets only the scalar and string values, see :func:`scalar_overlay_frame`; the
  map itself still reaches ``observations_to_image``; and the frames of each video are
  padded to one size (:func:`uniform_frames`: the loop renders an evaluation's first frame
  with an empty info, so without the map panel, and imageio refuses frames of two sizes);
* every finished episode is written as one SPEC §8 record (``info["mosnav_episode"]``
  from :class:`~habitat_mosnav.baselines.envs.MosNavEpisodeInfo`; a ``sequential``
  episode's with GOAT-Bench's metrics and its ``subtask_metrics``, SPEC §11) to
  ``<output_dir>/<checkpoint name>/rank_00000/episodes.jsonl``, then ``done.json`` and
  ``summary.json`` are written with the evaluation layer, so PPO checkpoints and
  ``mosnav-eval`` agents land in the same tables (``mosnav-aggregate`` reads both).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from habitat import logger
from habitat.config import read_write
from habitat_baselines.config.default_structured_configs import EvaluatorConfig
from habitat_baselines.rl.ppo import habitat_evaluator as _stock_loop
from habitat_baselines.rl.ppo.habitat_evaluator import HabitatEvaluator
from hydra.core.config_store import ConfigStore

from habitat_mosnav.baselines.envs import EPISODE_INFO_KEY, episode_payload
from habitat_mosnav.evaluation.durable import ResultFileError
from habitat_mosnav.evaluation.rank_files import RankWriter
from habitat_mosnav.evaluation.records import make_record
from habitat_mosnav.evaluation.summary import format_summary, summarize, write_summary
from habitat_mosnav.keys import episode_seed
from habitat_mosnav.metrics.measure_table import NON_SCALAR_MEASURES

EVALUATOR_TARGET = "habitat_mosnav.baselines.evaluator.MosNavEvaluator"

#: Path of the checkpoint being evaluated; set by the mosnav trainer around each checkpoint
#: (habitat-baselines passes the evaluator only an index).
CURRENT_CHECKPOINT: Dict[str, Optional[str]] = {"path": None}


@dataclass
class MosNavEvaluatorConfig(EvaluatorConfig):
    """``output_dir``: where per-checkpoint SPEC §8 results go ("" = ``<checkpoint
    folder>/../eval``); ``resume``: continue an interrupted evaluation (existing episode
    keys are kept, complete checkpoints are skipped) instead of refusing an existing
    output directory."""

    _target_: str = EVALUATOR_TARGET
    output_dir: str = ""
    resume: bool = False


ConfigStore.instance().store(
    group="habitat_baselines/evaluator",
    name="mosnav",
    package="habitat_baselines.evaluator",
    node=MosNavEvaluatorConfig,
)


def uses_mosnav_evaluator(config) -> bool:
    return str(config.habitat_baselines.evaluator.get("_target_", "")) == EVALUATOR_TARGET


def evaluation_root(config) -> str:
    out = str(config.habitat_baselines.evaluator.get("output_dir", "") or "")
    if not out:
        folder = str(config.habitat_baselines.checkpoint_folder).rstrip("/\\")
        out = os.path.join(os.path.dirname(folder) or ".", "eval")
    return out


def checkpoint_name(path: Optional[str], index: int) -> str:
    if path:
        name = os.path.basename(str(path))
        for ext in (".pth", ".pt"):
            if name.endswith(ext):
                name = name[: -len(ext)]
        return name or f"ckpt.{index}"
    return f"ckpt.{index}"


def results_dir(config, checkpoint_path: Optional[str], index: int = 0) -> str:
    """``<output_dir>/<checkpoint name>``: one SPEC §8 output directory per checkpoint."""
    return os.path.join(evaluation_root(config), checkpoint_name(checkpoint_path, index))


def experiment_name(config) -> str:
    """The experiment's name: the last part of ``mosnav_output_dir`` (``ppo_mos_demo`` for
    ``data/mosnav/ppo_mos_demo``), else of the checkpoint folder's parent."""
    from omegaconf import OmegaConf

    root = OmegaConf.select(config, "mosnav_output_dir", default=None) or os.path.dirname(
        str(config.habitat_baselines.checkpoint_folder).rstrip("/\\")
    )
    return os.path.basename(os.path.normpath(str(root))) or "ppo"


def run_manifest(config, out_dir: str) -> Dict[str, Any]:
    """The ``run.json`` of one checkpoint's evaluation, so ``mosnav-report`` names the run
    after its experiment (``run_name`` ``ppo_mos_demo_ckpt.0``, not ``ckpt.0``) and shows
    its agent and config."""
    from habitat_mosnav.config.default import MOSNAV_CONFIG_DIR

    name = experiment_name(config)
    ckpt = os.path.basename(os.path.normpath(out_dir))
    config_file = f"baselines/{name}.yaml"
    policy = config.habitat_baselines.rl.policy.main_agent.name
    return {
        "schema_version": 1,
        "run_name": f"{name}_{ckpt}",
        "agent": f"habitat-baselines {config.habitat_baselines.trainer_name} {policy} ({name}, {ckpt})",
        "config": config_file
        if os.path.isfile(os.path.join(MOSNAV_CONFIG_DIR, config_file))
        else None,
    }


def completed(out_dir: str) -> bool:
    """True when ``out_dir`` holds a complete evaluation (every rank done, no missing key)."""
    if not os.path.isdir(out_dir):
        return False
    try:
        return summarize(out_dir)["status"] in ("complete", "completed_with_errors")
    except (ResultFileError, OSError, ValueError):
        return False


_STOCK_OVERLAY = _stock_loop.overlay_frame
_STOCK_GENERATE_VIDEO = _stock_loop.generate_video


def overlay_values(info: Dict[str, Any]) -> Dict[str, Any]:
    """The values of ``info`` (flattened as habitat does) that ``overlay_frame`` can print:
    strings and real scalars (numpy 0-d included); arrays, maps, lists and None are left out."""
    from habitat.utils.visualizations.utils import flatten_dict

    out: Dict[str, Any] = {}
    for key, value in flatten_dict(info).items():
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
            value = value.item()
        if isinstance(value, str) or (
            isinstance(value, numbers.Real) and not isinstance(value, bool)
        ):
            out[key] = value
        elif isinstance(value, bool):
            out[key] = float(value)
    return out


def scalar_overlay_frame(frame, info, additional=None):
    """habitat's ``overlay_frame`` over :func:`overlay_values` of ``info`` only."""
    return _STOCK_OVERLAY(frame, overlay_values(info), additional)


def uniform_frames(images: List[Any]) -> List[Any]:
    """The frames padded with black (right and bottom) to the largest height and width."""
    import numpy as np

    if not images:
        return list(images)
    h = max(int(im.shape[0]) for im in images)
    w = max(int(im.shape[1]) for im in images)
    out = []
    for im in images:
        if im.shape[0] == h and im.shape[1] == w:
            out.append(im)
            continue
        pad = np.zeros((h, w) + tuple(im.shape[2:]), dtype=im.dtype)
        pad[: im.shape[0], : im.shape[1]] = im
        out.append(pad)
    return out


def uniform_generate_video(*args, images=None, **kwargs):
    """habitat-baselines' ``generate_video`` over :func:`uniform_frames` of ``images``."""
    return _STOCK_GENERATE_VIDEO(*args, images=uniform_frames(list(images or [])), **kwargs)


@contextlib.contextmanager
def scalar_overlay():
    """Within the block, habitat-baselines' evaluation loop overlays only scalar values
    and writes each video from frames of one size."""
    previous = _stock_loop.overlay_frame, _stock_loop.generate_video
    _stock_loop.overlay_frame = scalar_overlay_frame
    _stock_loop.generate_video = uniform_generate_video
    try:
        yield
    finally:
        _stock_loop.overlay_frame, _stock_loop.generate_video = previous


class _RecordingEnvs:
    """Proxy of the VectorEnv handed to the stock loop: takes each final step's mosnav
    payload (and the non-scalar measures, e.g. the list ``mos_report_events``) out of ``info``, drops non-finite
    scalars, and reports payloads to ``on_episode``. Everything else is delegated."""

    def __init__(self, envs, on_episode: Callable[[Dict[str, Any]], None]) -> None:
        self._envs = envs
        self._on_episode = on_episode

    def __getattr__(self, name):
        return getattr(self._envs, name)

    def _clean(self, info: Dict[str, Any]) -> Dict[str, Any]:
        payload = episode_payload(info)
        if payload is not None:
            self._on_episode(payload)
        out = {}
        for key, value in info.items():
            if key == EPISODE_INFO_KEY or key in NON_SCALAR_MEASURES:
                continue
            if isinstance(value, float) and not math.isfinite(value):
                continue
            out[key] = value
        return out

    def step(self, data):
        outputs = self._envs.step(data)
        return [(obs, reward, done, self._clean(info)) for obs, reward, done, info in outputs]


def _episode_keys(envs) -> List[str]:
    keys: List[str] = []
    for index in range(envs.num_envs):
        for episode in envs.call_at(index, "episodes"):
            keys.append(
                getattr(episode, "episode_key", "") or f"{episode.scene_id}::{episode.episode_id}"
            )
    return sorted(keys)


class MosNavEvaluator(HabitatEvaluator):
    """See the module docstring. Options come from the *current* config's
    ``habitat_baselines.evaluator`` (command-line overrides win over the checkpoint's)."""

    def __init__(self, output_dir: str = "", resume: bool = False, **_ignored) -> None:
        super().__init__()

    def evaluate_agent(self, agent, envs, config, checkpoint_index, step_id, writer, *stock_args):
        """``stock_args`` (device, obs_transforms, env_spec, rank0_keys) go to the stock loop
        unchanged."""
        out_dir = results_dir(config, CURRENT_CHECKPOINT.get("path"), checkpoint_index)
        resume = bool(config.habitat_baselines.evaluator.get("resume", False))
        keys = _episode_keys(envs)
        index_of = {key: i for i, key in enumerate(keys)}
        base_seed = int(config.habitat.seed)
        from habitat_mosnav.evaluation.manifest import check_or_write_manifest

        # the run's manifest and the rank's copy before any record, as mosnav-eval writes
        # them: readers refuse records of a rank without its run.json (issue 23)
        manifest = run_manifest(config, out_dir)
        check_or_write_manifest(out_dir, manifest)
        rank_writer = RankWriter(out_dir, rank=0, resume=resume)
        try:
            check_or_write_manifest(rank_writer.dir, manifest)
        except BaseException:
            rank_writer.close()
            raise
        skipped = set(rank_writer.finished_keys)
        logger.info(f"mosnav: writing episode records of {len(keys)} episodes to {out_dir}")

        def on_episode(payload: Dict[str, Any]) -> None:
            key = payload.get("episode_key") or ""
            if key in skipped:
                return
            record = make_record(
                episode_key=key,
                episode_index=index_of.get(key, -1),
                rank=0,
                seed=episode_seed(base_seed, key),
                episode=payload["episode"],
                status="ok",
                steps_taken=payload["steps_taken"],
                terminated_by=payload["terminated_by"],
                initial_metrics=payload.get("initial_metrics"),
                metrics=payload["metrics"],
                report_events=payload.get("report_events") or [],
                subtask_metrics=payload.get("subtask_metrics"),
                initial_agent_state=payload.get("initial_agent_state"),
                final_agent_state=payload.get("final_agent_state"),
                replay=payload.get("replay"),
            )
            rank_writer.write(record)

        loop_config = config.copy()
        with read_write(loop_config):
            # Size the stock loop's buffers by the environments actually built.
            loop_config.habitat_baselines.num_environments = envs.num_envs
            if int(loop_config.habitat_baselines.test_episode_count) < 0 or (
                int(loop_config.habitat_baselines.test_episode_count) > len(keys)
            ):
                loop_config.habitat_baselines.test_episode_count = len(keys)
        try:
            with scalar_overlay():
                super().evaluate_agent(
                    agent,
                    _RecordingEnvs(envs, on_episode),
                    loop_config,
                    checkpoint_index,
                    step_id,
                    writer,
                    *stock_args,
                )
            rank_writer.write_done(expected_count=len(keys))
        finally:
            rank_writer.close()
        summary = summarize(out_dir)
        write_summary(out_dir, summary)
        logger.info("mosnav summary (" + out_dir + "):\n" + format_summary(summary))
        for key, value in summary["metrics"].items():
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and (math.isfinite(value))
                and not key.startswith("num_episodes")
            ):
                writer.add_scalar(f"eval_mosnav/{key}", value, step_id)
        return summary


from habitat_mosnav.baselines.non_scalar import mark_non_scalar_measures  # noqa: E402

mark_non_scalar_measures()
