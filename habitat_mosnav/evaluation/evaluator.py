"""``Evaluator(...).run()``: the evaluation loop behind ``mosnav-eval`` as a Python API.

It loads the ``MultiObjectNav-v1`` dataset from a habitat config, selects and shards the
episodes (stable keys, SPEC §8), rolls each one out through ``habitat.Env`` (see
:mod:`~habitat_mosnav.evaluation.rollout`), appends one record per episode to this rank's
JSONL, and writes done.json and, when every rank has finished, summary.json::

    from habitat_mosnav import get_config
    from habitat_mosnav.evaluation import Evaluator, EvaluationConfig
    cfg = get_config("benchmark/nav/mosnav/mos_demo.yaml")
    summary = Evaluator(MyAgent(), cfg, EvaluationConfig(output_dir="out/run1")).run()

or, as the unified rollout contract writes it (SPEC §7), with an existing env::

    summary = Evaluator(environment=habitat.Env(config=cfg), policy=MyPolicy(),
                        config=EvaluationConfig(output_dir="out/run1", split="val",
                                                policy_id="my-policy", limit=2)).run()

With an env the evaluator reads only its public API (``episodes``, ``current_episode``,
``reset``, ``step``, ``episode_over``, ``get_metrics``, ``sim``, ``task``).
No torch is imported here; habitat is imported when the run starts.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple


from habitat_mosnav.api import ACTION_PROTOCOLS
from habitat_mosnav.evaluation import interrupts
from habitat_mosnav.evaluation.durable import ResultFileError, one_line, write_failed
from habitat_mosnav.evaluation.rank_files import (
    DONE_FILE,
    PROMPTS_FILE,
    RankWriter,
    read_jsonl,
    refuse_existing,
)
from habitat_mosnav.evaluation.records import make_record, to_jsonable
from habitat_mosnav.evaluation.summary import (
    remove_stale_summary,
    summarize,
    SUMMARY_FILE,
    write_summary,
)
from habitat_mosnav.evaluation.manifest import (
    RunManifest,
    check_or_write_manifest,
    input_files,
    keys_digest,
)
from habitat_mosnav.agents.legacy import adapt_agent
from habitat_mosnav.agents.loading import agent_code_digest
from habitat_mosnav.evaluation.observations import (
    ObservationBuilder,
)
from habitat_mosnav.evaluation.policy import EpisodeContext, public_episode_fields
from habitat_mosnav.evaluation.ranks import (
    missing_ranks,
    rank_timeout,
    wait_for_ranks,
    wait_for_summary,
)
from habitat_mosnav.evaluation.rollout import (
    AgentError,
    EpisodeRun,
    StartNotNavigable,
    describe_error,
    episode_metrics_record,
    error_message_of,
    error_type_of,
    is_scene_file_error,
    run_episode,
    trace_for_record,
)
from habitat_mosnav.evaluation.selection import episode_pool, launcher_rank_world, select_episodes
from habitat_mosnav.evaluation.step_observers import (
    EpisodeFrames,
    EpisodeLog,
    EpisodeMaps,
    MapGrids,
    ProgressBar,
    StepObserver,
)
from habitat_mosnav.keys import (
    episode_key as make_episode_key,
    episode_scene_name,
    episode_seed,
)
from habitat_mosnav.safety import PlantedLinkError, mask_secrets, safe_line
from habitat_mosnav.simulators import choice_for_type, simulator_option

__all__ = ["EvaluationConfig", "EvaluationSetupError", "Evaluator", "episode_metrics_record"]

_LOG = logging.getLogger("habitat_mosnav.evaluation")


class EvaluationSetupError(ValueError):
    """The run cannot start (bad dataset, config, output directory); a one-line message."""


@dataclass
class EvaluationConfig:
    """Options of one evaluation run (the CLI flags of ``mosnav-eval``).

    ``num_episodes``: −1 all, 0 none, applied after ``offset`` on the key-sorted selection;
    ``limit`` is the rollout contract's name for it (give either; both must agree).
    ``split``: the dataset split (part of every key); None: the habitat config's, or the
    env's episodes'. ``max_steps``: the action budget per episode; None: the config's
    ``max_episode_steps`` (with an env, it must equal the env's budget). ``policy_id``:
    a name for the evaluated policy, kept in summary.json when set.
    ``rank_timeout``: with several ranks, how long rank 0 waits (seconds) after its own
    shard for the others' done.json before it writes an incomplete summary; None: one
    hour when rank/world size come from torchrun/SLURM, no wait when given by hand.
    ``scene_limit`` / ``episode_limit``: the benchmark README's ``--limit`` (first N scenes,
    sorted) and ``--episode-limit`` (first N episodes per scene), applied before that.
    ``rank``/``world_size`` None: from torchrun/SLURM variables, else 0/1.
    ``video``: None, ``"mp4"`` or ``"gif"`` (one file per episode under ``<out>/videos``:
    RGB | depth | the growing top-down map, with step, claims so far and action).
    ``maps``: write each episode's top-down map to ``<out>/maps/<episode>.png``
    (:mod:`~habitat_mosnav.evaluation.maps`).
    ``retry_errors`` (with ``resume``): keys whose last record is an error are run again
    (the new record is appended; the summary keeps a key's last record).
    ``benchmark``: a benchmark setting's name (``demo/official``, see
    :mod:`~habitat_mosnav.evaluation.settings`): its habitat config, episodes and limits are
    used (the habitat config may be left out), the dataset must match its fingerprint
    (official/mini; a smoke run only warns), and every record and the summary carry it.
    ``num_episodes`` or another step limit keeps the run going but marks it not reportable.
    ``log_prompts``: an agent with ``set_log_path(path)`` gets
    ``<out>/rank_XXXXX/prompts.jsonl`` before the first episode; any other agent's task
    prompt is printed at the start of each episode.
    ``max_unavailable_episodes``: the run stops (resumable, CLI exit 1) after this many
    consecutive episodes failed because the model server stayed unavailable
    (:class:`~habitat_mosnav.chat.APIUnavailableError`); 0: never.
    ``step_timeout``: seconds one ``act()`` may take (None: no limit); a slower step ends
    the episode with a ``StepTimeout`` error record and the run goes on.
    ``manifest``: fields for the run manifest ``run.json`` (``agent``, ``config``,
    ``config_overrides``, and any further field of the caller's); the rest of it is built
    from this config, the dataset and the selection (:meth:`Evaluator.manifest`).
    """

    output_dir: str
    split: Optional[str] = None
    policy_id: Optional[str] = None
    limit: Optional[int] = None
    max_steps: Optional[int] = None
    rank_timeout: Optional[float] = None
    offset: int = 0
    num_episodes: int = -1
    scene_limit: Optional[int] = None
    episode_limit: Optional[int] = None
    rank: Optional[int] = None
    world_size: Optional[int] = None
    seed: int = 0
    action_protocol: str = "goat"
    resume: bool = False
    retry_errors: bool = False
    fail_fast: bool = False
    max_unavailable_episodes: int = 3
    record_actions: bool = True
    log_prompts: bool = False
    log_positions: bool = False
    log_episodes: bool = False
    video: Optional[str] = None
    maps: bool = False
    render_live: bool = False
    progress: bool = True
    benchmark: Optional[str] = None
    step_timeout: Optional[float] = None
    manifest: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.limit is not None:
            if self.num_episodes not in (-1, self.limit):
                raise ValueError(
                    f"EvaluationConfig: limit={self.limit} and num_episodes="
                    f"{self.num_episodes} disagree (they are the same setting)"
                )
            self.num_episodes = self.limit
        if self.max_steps is not None and (
            isinstance(self.max_steps, bool)
            or not isinstance(self.max_steps, int)
            or self.max_steps < 1
        ):
            raise ValueError(
                f"EvaluationConfig: max_steps must be an integer >= 1, got {self.max_steps!r}"
            )


def _episode_summary(episode, max_steps: int) -> Dict[str, Any]:
    mode = str(getattr(episode, "target_mode", ""))
    return {
        "scene_id": episode_scene_name(episode),
        "episode_id": str(episode.episode_id),
        "query_id": getattr(episode, "query_id", None),
        "target_mode": mode,
        "goal_type": getattr(episode, "goal_type", None),
        "target_count": getattr(episode, "target_count", None),
        "target_object_ids": list(getattr(episode, "target_object_ids", []) or []),
        "max_steps": int(max_steps),
    }


class Evaluator:
    """Runs ``agent`` on the episodes of ``habitat_config`` and writes SPEC §8 results.

    ``agent`` (or ``policy=``): any object with ``act(observation)`` returning an action id,
    an ``Action`` or a :class:`~habitat_mosnav.evaluation.policy.PolicyStep`; optional
    ``reset()`` or ``reset(context)`` (an
    :class:`~habitat_mosnav.evaluation.policy.EpisodeContext`), ``seed(s)`` (per-episode
    seed), ``bind_env(env)`` (privileged agents) and ``close()`` (once, at the end). An
    ``act(rgb, depth, prompt)`` agent of the original benchmark is detected and called that
    way. ``habitat_config``: a config from :func:`habitat_mosnav.get_config` (with or
    without the ``habitat`` root) or a path to a YAML. ``env`` (or ``environment=``): an
    existing ``habitat.Env`` to use instead of building one (its ``episodes`` are
    evaluated; pass ``habitat_config`` too if you have it, else only the env's public API
    is read).
    """

    #: The program named on the progress bar ("mosnav-eval rank 0").
    program = "mosnav-eval"

    def __init__(
        self,
        agent=None,
        habitat_config=None,
        config: Optional[EvaluationConfig] = None,
        *,
        env=None,
        environment=None,
        policy=None,
        stream=None,
        on_record: Optional[Callable[[dict], None]] = None,
        **options,
    ) -> None:
        agent = _one_of("agent", agent, "policy", policy)
        env = _one_of("env", env, "environment", environment)
        if agent is None:
            raise TypeError("Evaluator needs the agent (policy=...)")
        if config is None:
            if "output_dir" not in options:
                raise TypeError("Evaluator needs config=EvaluationConfig(...) or output_dir=")
            config = EvaluationConfig(**options)
        elif options:
            config = replace(config, **options)
        if config.action_protocol not in ACTION_PROTOCOLS:
            raise EvaluationSetupError(
                f"unknown action protocol {config.action_protocol!r}: expected one of "
                f"{', '.join(ACTION_PROTOCOLS)}"
            )
        if config.retry_errors and not config.resume:
            raise EvaluationSetupError("retry_errors (--retry-errors) needs resume (--resume)")
        self.setting = None
        if config.benchmark is not None:
            from habitat_mosnav.evaluation.settings import SettingError, load_setting

            try:
                self.setting = load_setting(config.benchmark)
            except SettingError as exc:
                raise EvaluationSetupError(str(exc)) from None
            if habitat_config is None and env is None:
                from habitat_mosnav import get_config

                habitat_config = get_config(self.setting.config, self.setting.habitat_overrides())
        if habitat_config is None and env is None:
            raise TypeError("Evaluator needs a habitat config or an env")
        if isinstance(habitat_config, str):
            from habitat_mosnav import get_config

            habitat_config = get_config(habitat_config)
        if habitat_config is not None and env is None:
            habitat_config = _with_run_settings(habitat_config, config)
        self.stream = stream if stream is not None else sys.stderr
        self.agent = adapt_agent(agent, note=self._log)
        self.config = config
        self.habitat_config = habitat_config
        self.env = env
        self.on_record = on_record
        self._owns_env = env is None
        self._benchmark: Optional[Dict[str, Any]] = None
        self._grids = MapGrids()  # the maps' and videos' grids, cached per floor
        self._interrupt: Optional[BaseException] = None
        self._current_episode = None
        #: True when ``fail_fast`` stopped the run after an error record (CLI: exit 1).
        self.stopped_by_fail_fast = False
        #: The number of consecutive APIUnavailableError episodes that stopped the run
        #: (``max_unavailable_episodes``; CLI: exit 1), else 0.
        self.stopped_by_unavailable = 0
        #: The global (all ranks) selected keys, set by :meth:`select`.
        self.selected_keys: List[str] = []
        self._closed = False
        self._split_name = ""  # the split of the keys, set by run()
        self._digests: Dict[str, Dict[str, str]] = {}  # see _dataset_digests

    # ------------------------------------------------------------------ helpers
    @property
    def _hcfg(self):
        """The ``habitat`` node of the habitat config, or None (an env given without it)."""
        cfg = self.habitat_config
        if cfg is None:
            return None
        return cfg.habitat if "habitat" in cfg else cfg

    def _log(self, text: str) -> None:
        """One terminal line: secrets masked, control characters (a hostile episode id's
        ESC, BEL, CR or LF) escaped (:func:`~habitat_mosnav.safety.safe_line`)."""
        from tqdm import tqdm

        tqdm.write(safe_line(text), file=self.stream)

    @staticmethod
    def _warn(text: str) -> None:
        """A warning: through :mod:`logging` (logger ``habitat_mosnav.evaluation``), so a
        program embedding the evaluator filters or routes it; mosnav-eval prints it as
        ``warning: ...`` above the progress bar. Masked and escaped like :meth:`_log`."""
        _LOG.warning(safe_line(text))

    def _rank_world(self) -> Tuple[int, int]:
        try:
            rank, world = launcher_rank_world(None, self.config.rank, self.config.world_size)
        except ValueError as exc:
            raise EvaluationSetupError(str(exc)) from None
        if world < 1 or not 0 <= rank < world:
            raise EvaluationSetupError(
                f"rank {rank} is outside 0..{world - 1} (world size {world})"
            )
        return int(rank), int(world)

    def _episodes(self) -> List[Any]:
        """The episodes to select from: the env's (public ``env.episodes``) or the dataset
        of the habitat config."""
        if self.env is not None:
            return list(self.env.episodes)
        return list(self._load_dataset().episodes)

    def _load_dataset(self):
        if getattr(self, "_dataset", None) is not None:
            return self._dataset
        # importing habitat registers habitat's datasets and, through the plugin's hook,
        # MultiObjectNav-v1
        from habitat.datasets import make_dataset

        dcfg = self._hcfg.dataset
        try:
            self._dataset = make_dataset(id_dataset=dcfg.type, config=dcfg)
        except Exception as exc:
            raise EvaluationSetupError(f"cannot load the dataset: {one_line(exc)}") from None
        return self._dataset

    def _episode_key(self, episode, split: str) -> str:
        key = getattr(episode, "episode_key", "") or ""
        return key or make_episode_key(split, episode_scene_name(episode), episode.episode_id)

    def _split(self, episodes: Sequence[Any]) -> str:
        """The split of the keys: ``config.split`` (checked against the env's episodes), else
        the habitat config's, else the episodes' own."""
        own = sorted({str(getattr(ep, "split", "") or "") for ep in episodes} - {""})
        wanted = self.config.split
        if wanted is not None:
            if self.env is not None and own and own != [wanted]:
                raise EvaluationSetupError(
                    f"split {wanted!r} differs from the environment's episodes (split "
                    f"{', '.join(map(repr, own))}): build the env with "
                    f"habitat.dataset.split={wanted} or leave split unset"
                )
            return wanted
        if self._hcfg is not None:
            return str(self._hcfg.dataset.get("split", ""))
        return own[0] if len(own) == 1 else ""

    def select(self, episodes: Sequence[Any]) -> Tuple[List[Tuple[int, str]], Dict[str, Any], int]:
        """(this rank's (index, key) pairs, key -> episode, global selection size)."""
        cfg = self.config
        split = self._split(episodes)
        keyed = [(self._episode_key(ep, split), episode_scene_name(ep), ep) for ep in episodes]
        pool = episode_pool(keyed, cfg.scene_limit, cfg.episode_limit)
        if self.setting is not None:
            from habitat_mosnav.evaluation.settings import SettingError

            try:
                pool = self.setting.pick_episodes(pool)
            except SettingError as exc:
                raise EvaluationSetupError(str(exc)) from None
        rank, world = self._rank_world()
        try:
            everything = select_episodes(pool.keys(), cfg.offset, cfg.num_episodes, 0, 1)
            mine = select_episodes(pool.keys(), cfg.offset, cfg.num_episodes, rank, world)
        except ValueError as exc:
            raise EvaluationSetupError(str(exc)) from None
        self.selected_keys = [k for _, k in everything]
        self._selected_episodes = {k: pool[k] for k in self.selected_keys}
        return mine, pool, len(everything)

    def manifest(self, dataset, world: int) -> RunManifest:
        """The run manifest of this run (SPEC §8), built here only: the settings that decide
        which episodes run and how, the dataset's fingerprint, then the caller's
        ``config.manifest`` fields (``agent``, ``config``, ``config_overrides``; any other
        key is stored as an extra top-level field)."""
        from habitat_mosnav.datasets.fingerprint import combine_digests

        cfg = self.config
        given = dict(cfg.manifest)
        dcfg = self._hcfg.dataset if self._hcfg is not None else {}  # {}: an env given alone
        digests = self._dataset_digests(getattr(dataset, "data_path", None))
        agent = type(getattr(self.agent, "agent", self.agent))
        return RunManifest(
            split=self._split_name,
            offset=int(cfg.offset),
            limit=int(cfg.num_episodes),
            world_size=int(world),
            seed=int(cfg.seed),
            max_steps=self._max_steps(),
            protocol=cfg.action_protocol,
            agent=str(
                given.pop("agent", cfg.policy_id or f"{agent.__module__}:{agent.__qualname__}")
            ),
            agent_code_sha256=agent_code_digest(agent),
            config=given.pop("config", None),
            config_overrides=[str(o) for o in given.pop("config_overrides", [])],
            selection={
                "scene_limit": cfg.scene_limit,
                "episode_limit": cfg.episode_limit,
                "target_modes": [str(m) for m in (dcfg.get("target_modes") or [])],
                "goal_type": dcfg.get("goal_type"),
                "episode_count": len(self.selected_keys),
                "keys_sha256": keys_digest(self.selected_keys),
            },
            dataset_fingerprint=combine_digests(digests) if digests is not None else None,
            input_files=input_files(
                self._hcfg, getattr(self, "_selected_episodes", {}).values(), dataset
            ),
            extra={**({"benchmark": self._benchmark} if self._benchmark else {}), **given},
        )

    def _dataset_digests(self, data_path: Optional[str]) -> Optional[Dict[str, str]]:
        """The dataset's per-file digests (None: no dataset directory), hashed once per run:
        the benchmark setting check and the manifest both use them."""
        from habitat_mosnav.datasets.fingerprint import dataset_file_digests

        if not data_path or not os.path.isdir(data_path):
            return None
        key = os.path.abspath(data_path)
        if key not in self._digests:
            self._digests[key] = dataset_file_digests(data_path)
        return self._digests[key]

    def _max_steps(self) -> int:
        """The action budget. Built from the habitat config: its ``max_episode_steps``
        (``max_steps`` was applied to it). A given env: its own budget (public
        ``env.task.max_steps``), set to ``max_steps`` when they differ (the task ends its
        episodes there; it cannot exceed the env's own ``max_episode_steps``)."""
        if self.env is None or (self._owns_env and self._hcfg is not None):
            return int(self._hcfg.environment.max_episode_steps)
        budget = getattr(getattr(self.env, "task", None), "max_steps", None)
        if budget is None and self._hcfg is not None:
            budget = self._hcfg.environment.max_episode_steps
        wanted = self.config.max_steps
        if budget is None:
            if wanted is None:
                raise EvaluationSetupError(
                    "the environment does not tell its step budget (env.task.max_steps): pass "
                    "EvaluationConfig(max_steps=...) or the habitat config"
                )
            return int(wanted)
        if wanted is not None and int(wanted) != int(budget):
            # The rollout contract: max_steps caps the rollout (terminated_by max_steps, T =
            # max_steps); a MultiObjectNav task ends its episodes there and scores them so.
            task = self.env.task
            settable = getattr(getattr(type(task), "max_steps", None), "fset", None) is not None
            try:
                if not settable:
                    raise ValueError("its task has no settable max_steps")
                task.max_steps = int(wanted)
            except ValueError as exc:
                raise EvaluationSetupError(
                    f"max_steps={wanted} differs from the environment's budget of {budget} steps "
                    f"({exc}): build the env with habitat.environment.max_episode_steps={wanted}, "
                    "or leave max_steps unset"
                ) from None
            return int(wanted)
        return int(budget)

    def _depth_cfg(self):
        sim_cfg = (
            self._hcfg.simulator
            if self._hcfg is not None
            else getattr(getattr(self.env, "sim", None), "habitat_config", None)
        )
        try:
            return sim_cfg.agents.main_agent.sim_sensors.get("depth_sensor")
        except Exception:
            return None

    # ------------------------------------------------------------------ run
    def run(self) -> Dict[str, Any]:
        """Evaluate this rank's share; returns the summary (or this rank's done.json
        contents, under ``"rank_done"``, when other ranks are still running).

        SIGINT (and SIGTERM under ``mosnav-eval``) is noted and acted on between steps and
        episodes (:mod:`~habitat_mosnav.evaluation.interrupts`): the episode it interrupts
        is not recorded, every finished one is, and ``KeyboardInterrupt`` (``Terminated``)
        is raised. Below the output directory nothing is written or removed through a link
        (:func:`~habitat_mosnav.safety.output_root`)."""
        from habitat_mosnav.safety import output_root

        with interrupts.guarded(), output_root(self.config.output_dir):
            return self._run()

    def _run(self) -> Dict[str, Any]:
        cfg = self.config
        rank, world = self._rank_world()
        self._digests = {}  # the dataset may have changed since an earlier run
        self._benchmark = self._check_benchmark()
        dataset = self._load_dataset() if self.env is None else None
        episodes = list(dataset.episodes) if dataset is not None else self._episodes()
        selection, pool, total = self.select(episodes)
        self._split_name = self._split(episodes)
        self._max_steps()  # an env whose budget contradicts max_steps stops here
        check = getattr(dataset, "check_scene_files", None)
        if check is not None:  # only the selected scenes must be on disk (SPEC §6)
            try:
                check({episode_scene_name(pool[k]) for _, k in selection})
            except Exception as exc:  # noqa: BLE001 - a DatasetFormatError, one line
                raise EvaluationSetupError(one_line(exc)) from None
        self._check_scene_files([pool[k] for _, k in selection])
        try:
            if not cfg.resume:
                refuse_existing(cfg.output_dir, rank)
            if selection:  # the simulator is built before anything is written: a failure
                self._make_env([pool[k] for _, k in selection])  # leaves the directory as it was
            if not cfg.resume:
                remove_stale_summary(cfg.output_dir)
            manifest = self.manifest(dataset, world).to_dict()
            check_or_write_manifest(cfg.output_dir, manifest)
            writer = RankWriter(cfg.output_dir, rank, resume=cfg.resume)
        except BaseException as exc:
            self._close_env()
            if isinstance(exc, ResultFileError):  # ResultWriteError (exit 3) goes through
                raise EvaluationSetupError(one_line(exc)) from None
            raise
        try:  # each rank keeps the manifest too: a rank of another run is never mixed in
            check_or_write_manifest(writer.dir, manifest)
        except BaseException as exc:
            writer.close()
            self._close_env()
            if isinstance(exc, ResultFileError):
                raise EvaluationSetupError(one_line(exc)) from None
            raise
        interrupted = False
        try:
            finished = writer.finished_keys
            retry = writer.error_keys if cfg.retry_errors else set()
            todo = [(i, k) for i, k in selection if k not in finished or k in retry]
            prior = self._prior_records(writer.path)
            if writer.truncated_partial_line:
                self._log(f"resume: dropped a partial last line of {writer.path}")
            if cfg.resume and len(todo) < len(selection):
                self._log(
                    f"resume: {len(selection) - len(todo)} of {len(selection)} episodes "
                    "already recorded on this rank; skipping them"
                )
            retried = sum(k in retry for _, k in selection)
            if retried:
                self._log(
                    f"resume: running {retried} episode(s) again whose last record is an "
                    "error (--retry-errors)"
                )
            self._set_prompt_log(writer)
            if todo:
                interrupted = self._run_episodes(todo, pool, writer, prior, len(selection))
        except StartNotNavigable as exc:
            raise EvaluationSetupError(self._start_error(exc)) from None
        except Exception as exc:
            if is_scene_file_error(exc):  # a broken scene file is bad input: one line, exit 2
                raise EvaluationSetupError(one_line(exc)) from None
            raise
        finally:
            writer.close()
            self._close_env()
        if interrupted:
            raise self._interrupt if self._interrupt is not None else KeyboardInterrupt()
        done = writer.write_done(
            expected_count=len(selection), expected_keys=[k for _, k in selection]
        )
        return self._finish(rank, world, total, done)

    def _check_scene_files(self, episodes: Sequence[Any]) -> None:
        """The files of every scene the selected episodes load, checked before the first
        episode and before anything is written (:mod:`habitat_mosnav.sims.scene_check`:
        glb headers, the navmesh validated; for a simulator we build that reads them
        natively, the whole glTF files, issue #30): a broken one is bad input, one line naming
        it (exit 2), not one error record per episode of its scene."""
        scenes = sorted({str(s) for s in (getattr(e, "scene_id", None) for e in episodes) if s})
        if not scenes:
            return
        from habitat_mosnav.scenes.gltf import check_scene_files
        from habitat_mosnav.sims.scene_check import NavMeshError, SceneFormatError, check_scene

        sim = getattr(self._hcfg, "simulator", None) if self._hcfg is not None else None
        choice = choice_for_type(sim.get("type") if sim is not None else None)
        detour = getattr(choice, "native_reader", True)  # a type of no row: checked
        option = "" if detour else str(simulator_option(sim, "navmesh") or "")
        checks = [lambda scene: check_scene(scene, option, detour=detour)]
        checks += [check_scene_files] if detour and self.env is None else []
        for check in checks:
            for scene in scenes:
                try:
                    check(scene)
                except (NavMeshError, SceneFormatError) as exc:
                    raise EvaluationSetupError(one_line(exc)) from None

    def _check_benchmark(self) -> Optional[Dict[str, Any]]:
        """The setting's identity and this run's deviations from it, for every record
        (:meth:`~habitat_mosnav.evaluation.settings.BenchmarkSetting.check_run`); refuses a
        run that contradicts the setting (one line)."""
        setting, cfg = self.setting, self.config
        if setting is None:
            return None
        from habitat_mosnav.evaluation.settings import SettingError

        if self._hcfg is None:
            raise EvaluationSetupError(
                f"benchmark {setting.name}: pass the habitat config "
                "together with the env (habitat_config=...)"
            )
        try:
            return setting.check_run(
                self._hcfg,
                offset=cfg.offset,
                scene_limit=cfg.scene_limit,
                episode_limit=cfg.episode_limit,
                num_episodes=cfg.num_episodes,
                dataset_digests=self._dataset_digests,
                warn=self._warn,
            )
        except SettingError as exc:
            raise EvaluationSetupError(str(exc)) from None

    def _start_error(self, exc: StartNotNavigable) -> str:
        episode = self._current_episode
        dataset = self._load_dataset() if self._owns_env else None  # not a given env's
        data_path = getattr(dataset, "data_path", None) or "<dataset>"
        scene = episode_scene_name(episode)
        return (
            f"{os.path.join(data_path, scene, 'episodes.json')}: episode "
            f"'{episode.episode_id}': field 'start_position': {exc.position} is not on the "
            f"navmesh of scene {scene} (checked at reset); fix the dataset"
        )

    def _set_prompt_log(self, writer) -> None:
        """``log_prompts``: point an agent that keeps its own prompt log at this rank's
        directory (the agent creates the file at its first step)."""
        setter = getattr(self.agent, "set_log_path", None)
        if self.config.log_prompts and callable(setter):
            setter(os.path.join(writer.dir, PROMPTS_FILE))

    def _agent_keeps_prompt_log(self) -> bool:
        return callable(getattr(self.agent, "set_log_path", None))

    def _agent_extras(self, key: str) -> Optional[Dict[str, Any]]:
        """``{"agent": agent.episode_stats()}`` for the record, or None. A broken
        ``episode_stats`` costs a warning, never the record."""
        stats_fn = getattr(self.agent, "episode_stats", None)
        if not callable(stats_fn):
            return None
        try:
            stats = stats_fn()
            if stats is None:
                return None
            if not isinstance(stats, Mapping):
                raise ValueError(f"expected a dict, got {type(stats).__name__}")
            return {"agent": to_jsonable(dict(stats), "agent")}
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: B902 - the agent's failure, of any kind
            self._warn(
                f"{key}: agent.episode_stats() left out of the record: "
                f"{type(exc).__name__}: {one_line(exc)}"
            )
            return None

    def _prior_records(self, path: str) -> "OrderedDict[str, Tuple[str, dict]]":
        latest: "OrderedDict[str, Tuple[str, dict]]" = OrderedDict()
        if os.path.exists(path):
            records, _ = read_jsonl(path)
            for rec in records:
                if rec["status"] == "ok":
                    latest[rec["episode_key"]] = (rec["episode"]["target_mode"], rec["metrics"])
                else:
                    latest.pop(rec["episode_key"], None)
        return latest

    def _make_env(self, episodes: List[Any]):
        if self.env is not None:
            return self.env
        import habitat

        dataset = self._load_dataset()
        dataset.episodes = list(episodes)
        try:
            self.env = habitat.Env(config=self._hcfg, dataset=dataset)
        except Exception as exc:
            interrupts.check()  # a signal noted meanwhile, not a setup error
            raise EvaluationSetupError(
                f"cannot create the habitat environment: {one_line(exc)}"
            ) from None
        return self.env

    def _close_env(self) -> None:
        if self.env is not None and self._owns_env:
            try:
                self.env.close()
            except Exception:
                pass
            self.env = None
        close = getattr(self.agent, "close", None)
        if callable(close) and not self._closed:
            self._closed = True
            try:
                close()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: B902 - the agent's failure, of any kind
                self._warn(f"agent.close() raised {type(exc).__name__}: {one_line(exc)}")

    def _run_episodes(self, todo, pool, writer, prior, rank_total: int) -> bool:
        """Roll out ``todo``; True when interrupted (KeyboardInterrupt / human quit)."""
        cfg = self.config
        env = self._make_env([pool[k] for _, k in todo])
        max_steps = self._max_steps()
        builder = ObservationBuilder(max_steps, cfg.action_protocol, self._depth_cfg())
        observers = self._observers(env, writer, prior, rank_total, len(todo), max_steps)
        stepping = [o for o in observers if o.watches_steps]

        def on_step(info: Dict[str, Any]) -> None:
            for observer in stepping:
                observer.on_step(info)

        unavailable = 0  # consecutive episodes lost to an unreachable model server
        try:
            for index, key in todo:
                if interrupts.requested() is not None:  # a safe point: between episodes
                    return self._stopped(
                        key, interrupts.exception_for(interrupts.requested()), started=False
                    )
                episode = pool[key]
                seed = episode_seed(cfg.seed, key)
                for observer in observers:
                    observer.on_episode_start(key, episode)
                self._current_episode = episode
                context = EpisodeContext(
                    episode_key=key,
                    episode_index=index,
                    split=self._split_name,
                    rank=writer.rank,
                    world_size=self._rank_world()[1],
                    max_steps=max_steps,
                    seed=seed,
                    episode=public_episode_fields(episode, self._split_name, max_steps),
                    environment=env,
                )
                try:
                    run = run_episode(
                        env,
                        self.agent,
                        episode,
                        builder,
                        protocol=cfg.action_protocol,
                        seed=seed,
                        record_trace=True,
                        on_step=on_step if stepping else None,
                        step_timeout=cfg.step_timeout,
                        context=context,
                    )
                except KeyboardInterrupt as exc:
                    return self._stopped(key, exc)
                if run.error is not None and interrupts.requested() is not None:
                    # the error may be the signal's doing: the episode runs again on resume
                    return self._stopped(key, interrupts.exception_for(interrupts.requested()))
                record = self._record(env, run, index, key, episode, seed, writer.rank, max_steps)
                writer.write(record)
                if self.on_record is not None:
                    self.on_record(record)
                if record["status"] != "ok":
                    self._warn(f"episode {key} failed: {describe_error(run.error)}")
                for observer in observers:
                    observer.on_episode_end(key, episode, record)
                if record["status"] == "error" and cfg.fail_fast:
                    self._log("--fail-fast: stopping after the first failed episode")
                    self.stopped_by_fail_fast = True
                    break
                unavailable = unavailable + 1 if _unavailable(run.error) else 0
                if cfg.max_unavailable_episodes and unavailable >= cfg.max_unavailable_episodes:
                    self.stopped_by_unavailable = unavailable
                    break
        finally:
            for observer in reversed(observers):
                observer.close()
        return False

    def _observers(self, env, writer, prior, rank_total: int, todo: int, max_steps: int):
        """The :mod:`~habitat_mosnav.evaluation.step_observers` this run's flags ask for,
        in the order the loop calls them (the live window is wired to a human agent's keys)."""
        cfg = self.config
        print_prompts = cfg.log_prompts and not self._agent_keeps_prompt_log()
        observers: List[StepObserver] = []
        if print_prompts or cfg.log_positions or cfg.log_episodes:
            observers.append(
                EpisodeLog(
                    self._log,
                    prompts=print_prompts,
                    positions=cfg.log_positions,
                    episodes=cfg.log_episodes,
                )
            )
        viewer = None
        if cfg.render_live:
            from habitat_mosnav.evaluation.viewer import LiveViewer

            viewer = LiveViewer()
            if hasattr(self.agent, "key_source"):
                self.agent.key_source = viewer.read_key
        if cfg.video or viewer is not None:
            observers.append(
                EpisodeFrames(
                    env,
                    self._grids,
                    max_steps=max_steps,
                    depth_cfg=self._depth_cfg(),
                    output_dir=cfg.output_dir,
                    video=cfg.video,
                    viewer=viewer,
                    warn=self._warn,
                )
            )
        if cfg.maps:
            observers.append(EpisodeMaps(env, self._grids, cfg.output_dir, self._warn))
        observers.append(
            ProgressBar(
                stream=self.stream,
                enabled=cfg.progress,
                label=f"{self.program} rank {writer.rank}",
                total=rank_total,
                done=rank_total - todo,
                max_steps=max_steps,
                prior=prior,
            )
        )
        return observers

    def _stopped(self, key: str, exc: KeyboardInterrupt, started: bool = True) -> bool:
        """The run stops on a signal (or the human agent's quit) at ``key``."""
        where = f"during {key}; it is not recorded" if started else f"before {key}"
        self._log(f"interrupted {where}. Continue with --resume and the same --output-dir.")
        self._interrupt = exc
        return True

    def _record(self, env, run: EpisodeRun, index, key, episode, seed, rank, max_steps) -> dict:
        """The episode's record; one that cannot be written as JSON (a value the agent
        returned) becomes an error record of that episode, never the end of the run."""
        if isinstance(run.error, AgentError) and isinstance(run.error.original, PlantedLinkError):
            raise write_failed(str(run.error.original.filename), run.error.original)
        try:
            record = self._build_record(env, run, index, key, episode, seed, rank, max_steps)
            json.dumps(record, allow_nan=False)  # what the writer does with it
            return record
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            return make_record(
                episode_key=key,
                episode_index=index,
                rank=rank,
                seed=seed,
                episode=_episode_summary(episode, max_steps),
                steps_taken=run.steps_taken,
                error="UnwritableRecord",
                benchmark=self._benchmark,
                error_message=f"the episode's record cannot be written: {mask_secrets(one_line(exc))[:200]}",
            )

    def _build_record(
        self, env, run: EpisodeRun, index, key, episode, seed, rank, max_steps
    ) -> dict:
        summary = _episode_summary(episode, max_steps)
        trace = trace_for_record(run.action_trace) if self.config.record_actions else None
        extras = self._agent_extras(key)
        replay = self._replay_block(env, run)
        common = dict(
            episode_key=key,
            episode_index=index,
            rank=rank,
            seed=seed,
            episode=summary,
            steps_taken=run.steps_taken,
            initial_agent_state=run.initial_agent_state,
            action_trace=trace,
            positions=run.positions,
            extras=extras,
            benchmark=self._benchmark,
            replay=replay,
        )
        if run.error is not None:  # an error record: no metrics, no final state
            return make_record(
                error=error_type_of(run.error), error_message=error_message_of(run.error), **common
            )
        return make_record(
            terminated_by=run.terminated_by,
            initial_metrics=run.initial_metrics,
            metrics=run.metrics,
            report_events=run.report_events,
            subtask_metrics=run.subtask_metrics,
            final_agent_state=run.final_agent_state,
            **common,
        )

    def _replay_block(self, env, run: EpisodeRun) -> Optional[Dict[str, Any]]:
        """The record's ``replay`` block (actions, start, motion settings; always written,
        ``--no-action-trace`` or not): :mod:`~habitat_mosnav.evaluation.replay_data`."""
        from habitat_mosnav.evaluation.replay_data import motion_settings, replay_block

        actions = [t["action"] for t in (run.action_trace or [])]
        return replay_block(
            actions,
            self.config.action_protocol,
            run.initial_agent_state,
            motion_settings(env, self._hcfg),
        )

    def _finish(self, rank: int, world: int, total: int, done: Dict[str, Any]) -> Dict[str, Any]:
        """The summary over all ranks, written by the last rank to finish; rank 0 waits up
        to ``rank_timeout`` for the others (see :mod:`~habitat_mosnav.evaluation.ranks`)
        and, when one never finishes, writes the summary of what exists (``incomplete``)
        and says which rank is missing."""
        out = self.config.output_dir
        timeout = rank_timeout(
            self.config.rank_timeout, self.config.rank is None or self.config.world_size is None
        )
        waits = rank == 0 and world > 1 and timeout > 0
        started_waiting = waits and bool(missing_ranks(out, world))
        missing = (
            wait_for_ranks(out, world, timeout, log=self._log, sleep=interrupts.sleep)
            if waits
            else missing_ranks(out, world)
        )
        if missing and not waits:
            return {"rank_done": done, "status": "rank_finished"}
        if started_waiting and not missing and wait_for_summary(out, world, sleep=interrupts.sleep):
            # The last rank to finish writes (and prints) the summary once its done.json is
            # there: this one, having waited, leaves it to that rank (one summary printed).
            return {
                "rank_done": done,
                "status": "rank_finished",
                "summary_path": os.path.join(out, SUMMARY_FILE),
            }
        try:
            summary = summarize(out, expected_episode_count=total, expected_keys=self.selected_keys)
            if self.config.policy_id is not None:
                summary["policy_id"] = self.config.policy_id
            write_summary(out, summary)
        except ResultFileError as exc:  # ResultWriteError (exit 3) goes through
            raise EvaluationSetupError(
                f"this rank finished, but the summary failed: {one_line(exc)}"
            ) from None
        if missing:
            self._warn(
                f"rank(s) {', '.join(map(str, missing))} of {world} did not finish within "
                f"{timeout:g} s (no {DONE_FILE}): {out}/summary.json "
                f"is incomplete; it is rewritten when the last rank finishes, or run "
                f"`mosnav-aggregate {out}` then"
            )
        return summary


def _unavailable(error: Optional[BaseException]) -> bool:
    """The episode failed because the model server could not be reached (every retry)."""
    from habitat_mosnav.chat import APIUnavailableError

    return isinstance(getattr(error, "original", error), APIUnavailableError)


def _one_of(name: str, value, alias: str, alias_value):
    """``value`` or its keyword alias (``agent``/``policy``, ``env``/``environment``)."""
    if value is not None and alias_value is not None and value is not alias_value:
        raise TypeError(f"Evaluator got both {name}= and {alias}=; pass one")
    return value if value is not None else alias_value


def _with_run_settings(habitat_config, config: EvaluationConfig):
    """A copy of ``habitat_config`` with ``config.split`` and ``config.max_steps`` applied
    (``habitat.dataset.split``, ``habitat.environment.max_episode_steps``)."""
    changes = {}
    if config.split is not None:
        changes["dataset.split"] = config.split
    if config.max_steps is not None:
        changes["environment.max_episode_steps"] = int(config.max_steps)
    if not changes:
        return habitat_config
    import copy

    from omegaconf import OmegaConf

    cfg = copy.deepcopy(habitat_config)
    root = cfg.habitat if "habitat" in cfg else cfg
    readonly = OmegaConf.is_readonly(cfg)
    OmegaConf.set_readonly(cfg, False)
    for key, value in changes.items():
        OmegaConf.update(root, key, value, merge=False)
    OmegaConf.set_readonly(cfg, readonly)
    return cfg
