"""One ``mosnav-eval`` run as asked on the command line: :class:`RunRequest`, built once from
the parsed flags (:meth:`RunRequest.from_args`). Each field is named as its flag (``--max-steps``
-> ``max_steps``) and, where the records or ``run.json`` carry it, as they do; the fields
that set a habitat config key are mapped to it in one table,
:data:`habitat_mosnav.evaluation.compose.CONFIG_KEYS`. Standard library only."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, List, Optional

from habitat_mosnav.evaluation.defaults import DEFAULT_CONFIG

if TYPE_CHECKING:
    from habitat_mosnav.evaluation.settings import BenchmarkSetting

PROG = "mosnav-eval"


def flag_of(field_name: str) -> str:
    """The flag of a RunRequest field: ``max_steps`` -> ``--max-steps``."""
    return "--" + field_name.replace("_", "-")


@dataclass(frozen=True)
class RunRequest:
    """A run's flags (``mosnav-eval --help`` says each and holds its default; None: not
    given), and what the command adds: ``config_given``, ``output_dir_given``,
    ``start_dir``, ``agent_args``, ``setting``. Built by :meth:`from_args`."""

    # -- task and data; those in compose.CONFIG_KEYS override the habitat config when given
    benchmark: Optional[str]  # a versioned setting's name (demo/official, ...)
    config: Optional[str]  # the habitat YAML (absolute when found in start_dir)
    config_given: Optional[str]  # --config as typed: messages and run.json name it so
    goal_type: Optional[str]  # description, object or image (a comma list: one run each)
    dataset_dir: Optional[str]  # the dataset_semantic directory (absolute)
    scene_root: Optional[str]  # the scene directory (absolute)
    scene_dataset_config: Optional[str]  # habitat-sim's scene dataset config file
    simulator: Optional[str]  # a key of habitat_mosnav.simulators.SIMULATORS
    split: Optional[str]  # the dataset split, part of every episode key
    target_modes: Optional[List[str]]  # EPISODE_MODES to run
    max_steps: Optional[int]  # actions per episode (records: episode.max_steps)
    space_coverage_samples: Optional[int]  # navigable samples of the space oracle
    space_coverage_radius: Optional[float]  # metres within which a sample is explored
    overrides: tuple  # --set KEY=VALUE, Hydra overrides applied after the flags'
    print_config: bool  # print the composed habitat config and exit
    # -- selection and sharding (run.json: selection.scene_limit, .episode_limit, offset, limit)
    limit: Optional[int]  # scenes (sorted by scene id)
    episode_limit: Optional[int]  # episodes per scene (first by key)
    offset: int  # episodes of the key-sorted selection skipped
    num_episodes: int  # episodes after offset; -1 all (run.json: limit)
    rank: Optional[int]  # this worker's rank (None: the launcher's, else 0)
    world_size: Optional[int]  # workers (None: the launcher's, else 1)
    rank_timeout: Optional[float]  # seconds rank 0 waits for the others
    seed: int  # base seed; an episode's seed hashes (seed, key)
    # -- agent
    agent: str  # an alias, package.module:Class or path/to/file.py:Class
    action_protocol: str  # ACTION_PROTOCOLS (run.json: protocol)
    legacy_agent_api: bool  # call act(rgb=, depth=, prompt=)
    agent_args: Optional[argparse.Namespace]  # every flag, the agent's own too: from_args
    # -- output
    output_dir: Optional[str]  # where results go (absolute; None: a new default one)
    output_dir_given: Optional[str]  # --output-dir as typed, for messages
    start_dir: Optional[str]  # the directory the command started in
    resume: bool  # continue the run in output_dir
    retry_errors: bool  # with resume: run the error episodes again
    fail_fast: bool  # stop after the first failed episode
    max_unavailable_episodes: int  # consecutive APIUnavailableError episodes that stop it
    fail_on_episode_error: bool  # exit 1 when an episode failed
    step_timeout: Optional[float]  # seconds one act() may take
    action_trace: bool  # records carry action_trace
    progress: bool  # a progress bar
    # -- debugging
    log_prompts: bool  # the agent's requests, or each task prompt
    log_positions: bool  # the agent position at every step
    log_episodes: bool  # one line per finished episode
    render_live: bool  # an OpenCV window of the agent's view
    save_video: Optional[str]  # mp4 or gif: <output_dir>/videos
    save_maps: bool  # <output_dir>/maps/<episode>.png
    setting: Optional[BenchmarkSetting]  # the --benchmark setting, loaded

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, setting: Optional[BenchmarkSetting] = None, **given
    ) -> RunRequest:
        """The request of a parsed ``mosnav-eval`` namespace (``build_parser``'s); ``given``:
        ``config_given``, ``output_dir_given``, ``start_dir`` (None when left out)."""
        values = {f.name: getattr(args, f.name, None) for f in fields(cls)}
        values.update(given, overrides=tuple(args.overrides), agent_args=args, setting=setting)
        return cls(**values)

    @property
    def config_name(self) -> str:
        """The config as run.json and the messages name it: the setting's, else as typed."""
        if self.setting is not None:
            return self.setting.config
        return self.config_given or self.config or DEFAULT_CONFIG

    @property
    def default_config(self) -> bool:
        """Neither --config nor --benchmark: the demo config with target modes many,all."""
        return self.config is None and self.setting is None
