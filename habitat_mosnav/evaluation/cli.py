"""``mosnav-eval`` (also ``python -m habitat_mosnav.eval``): evaluate an agent (SPEC §7, §8).

    mosnav-eval --agent random --num-episodes 6 --output-dir /tmp/x
    mosnav-eval --agent my_agents.vlm:MyAgent --config benchmark/nav/mosnav/mos_hm3d.yaml \\
        --dataset-dir dataset_semantic --scene-root /data/hm3d/val --output-dir out/run1

Exit codes (SPEC §8): 0 done; 1 episodes failed and ``--fail-on-episode-error``, or
``--fail-fast`` stopped the run; 2 bad input or usage (a one-line message: bad flag,
unknown agent, bad dataset, existing output directory without ``--resume``, a resume whose
settings differ from ``run.json``, a rank directory locked by another process, ...); 3 the
results cannot be written (disk full, no permission: one line naming the file, no torn
record left); 130 / 143 interrupted by SIGINT / SIGTERM (one line: continue with
``--resume``).

An agent class may add its own flags: a classmethod ``add_arguments(parser)`` is called
before parsing and ``from_args(args)`` builds the agent (used by ``--agent api``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import List, Optional, Sequence

from habitat_mosnav.simulators import SIMULATORS, SimulatorUnavailable, choice_for_type
from habitat_mosnav.agents.loading import (
    AGENT_ALIASES,
    AgentLoadError,
    instantiate_agent,
    resolve_agent,
)
from habitat_mosnav.api import ACTION_PROTOCOLS, EPISODE_MODES, GOAL_TYPES, MULTI_MODES
from habitat_mosnav.evaluation import interrupts
from habitat_mosnav.evaluation.defaults import DEFAULT_CONFIG
from habitat_mosnav.flag_ranges import bound_numbers
from habitat_mosnav.safety import mask_secrets, safe_line
from habitat_mosnav.versions import add_version_argument

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_TARGET_MODES",
    "UsageError",
    "build_parser",
    "build_overrides",
    "main",
]

PROG = "mosnav-eval"
DEFAULT_TARGET_MODES = MULTI_MODES


class UsageError(Exception):
    """A problem with the command line or its inputs: one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit code 2."""

    def error(self, message):  # noqa: D401
        raise UsageError(f"{message} (see {PROG} --help)")


def _int_at_least(minimum: int, name: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def _float_positive(name: str, allow_zero: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects a number, got {text!r}") from None
        if not (value > 0 or (allow_zero and value == 0)):
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _target_modes(text: str) -> List[str]:
    modes = [m.strip() for m in text.replace(" ", ",").split(",") if m.strip()]
    bad = [m for m in modes if m not in EPISODE_MODES]
    if bad or not modes:
        raise argparse.ArgumentTypeError(
            f"unknown mode {', '.join(bad) or repr(text)}; use a comma list of "
            f"{', '.join(EPISODE_MODES)}"
        )
    return list(dict.fromkeys(modes))


def _goal_types(text: str) -> str:
    """One goal type, or a comma list of them (each run in its own sub-directory)."""
    types = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in types if t not in GOAL_TYPES]
    if bad or not types:
        raise argparse.ArgumentTypeError(
            f"unknown goal type {', '.join(bad) or repr(text)}; use one of "
            f"{', '.join(GOAL_TYPES)} or a comma list of them"
        )
    return ",".join(dict.fromkeys(types))


def _key_value(text: str) -> str:
    if text.startswith("~") and len(text) > 1:
        return text  # Hydra deletion: ~KEY
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE (or ~KEY to delete), got {text!r}")
    return text


def build_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        allow_abbrev=False,  # --api-key must never be taken for --api-key-env
        add_help=add_help,
        description="Evaluate an agent on the multi-object navigation benchmark (MOS/MOC) "
        "through habitat.Env, writing per-episode JSONL records and summary.json.",
    )
    add_version_argument(p)
    g = p.add_argument_group("task and data")
    g.add_argument(
        "--benchmark",
        default=None,
        metavar="SETTING",
        help="a versioned benchmark setting (e.g. demo/official, mosnav-v1/val/mini; "
        "list: python -m habitat_mosnav.evaluation.settings list): it fixes the "
        "config, split, target modes, goal type, success distance, space oracle "
        "and episodes, and checks the dataset's fingerprint; --num-episodes or "
        "--max-steps mark the run as not official",
    )
    g.add_argument(
        "--config",
        default=None,
        help="a mosnav habitat YAML (a path, or relative to the package's config "
        f"directory); default: {DEFAULT_CONFIG} with target modes many,all "
        "(the bundled demo scenes on the CPU simulator)",
    )
    g.add_argument(
        "--goal-type",
        type=_goal_types,
        default=None,
        metavar="TYPE[,TYPE...]",
        help="description: the natural-language instruction; object: the category "
        "name, pure-category queries only; image: a picture of one matching instance "
        "(Observation.goal_image; the dataset's image_goal cameras). A comma list "
        "(description,object,image) runs each goal type as its own complete run in "
        "OUTPUT_DIR/<goal type>/, identical to a run with that one goal type "
        "(default: the config's, description)",
    )
    g.add_argument(
        "--dataset-dir",
        default=None,
        help="the dataset_semantic directory (<dir>/<scene_id>/{goals,queries,episodes}.json)",
    )
    g.add_argument(
        "--scene-root",
        default=None,
        help="scene directory holding <NNNNN-id>/<id>.basis.glb (e.g. /data/hm3d/val); "
        "the HM3D configs then read the scene dataset config beside it "
        "(/data/hm3d/hm3d_annotated_basis.scene_dataset_config.json)",
    )
    g.add_argument(
        "--scene-dataset-config",
        default=None,
        metavar="FILE",
        help="habitat-sim's scene dataset config for the scenes (default: the config's; "
        "HM3D: hm3d_annotated_basis.scene_dataset_config.json beside --scene-root)",
    )
    g.add_argument(
        "--simulator",
        choices=tuple(SIMULATORS),
        default=None,
        help="run on habitat-sim (Sim-v0; GPU 0 when there is one, else Mesa on the CPU) "
        "or on the CPU simulator MosNavMeshSim-v0 (default: the config's; the demo "
        "configs use mosnav, the HM3D ones habitat-sim)",
    )
    g.add_argument("--split", default=None, help="dataset split, part of every episode key")
    g.add_argument(
        "--target-modes",
        type=_target_modes,
        default=None,
        help="comma list of single,any,many,all,sequential (default: the config's; many,all "
        "with the default config). sequential: GOAT-Bench's episodes of subtasks, each "
        "with its own goal type (not filtered by --goal-type)",
    )
    g.add_argument(
        "--max-steps",
        type=_int_at_least(1, "--max-steps"),
        default=None,
        help="actions per episode (default: the config's habitat.environment.max_episode_steps)",
    )
    g.add_argument(
        "--space-coverage-samples",
        type=_int_at_least(0, "--space-coverage-samples"),
        default=None,
        help="navigable samples of the space oracle; 0 disables OER-space "
        "(default: the config's habitat.task.mosnav_space_coverage_samples)",
    )
    g.add_argument(
        "--space-coverage-radius",
        type=_float_positive("--space-coverage-radius"),
        default=None,
        help="metres within which the agent explores a sample (default: "
        "the config's habitat.task.mosnav_space_coverage_radius)",
    )
    g.add_argument(
        "--set",
        dest="overrides",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="habitat config override (Hydra syntax), repeatable: KEY=VALUE, +KEY=VALUE "
        "or ~KEY (e.g. habitat.simulator.turn_angle=15)",
    )
    g.add_argument(
        "--print-config", action="store_true", help="print the resolved habitat config and exit"
    )

    g = p.add_argument_group("selection and sharding")
    g.add_argument(
        "--limit",
        type=_int_at_least(0, "--limit"),
        default=None,
        help="number of scenes (sorted by scene id); default all",
    )
    g.add_argument(
        "--episode-limit",
        type=_int_at_least(0, "--episode-limit"),
        default=None,
        help="episodes per scene (first by key); default all",
    )
    g.add_argument(
        "--offset",
        type=_int_at_least(0, "--offset"),
        default=0,
        help="skip this many episodes of the key-sorted selection (default: 0)",
    )
    g.add_argument(
        "--num-episodes",
        type=_int_at_least(-1, "--num-episodes"),
        default=-1,
        help="episodes after --offset: -1 all, 0 none (default: -1)",
    )
    g.add_argument(
        "--rank",
        type=_int_at_least(0, "--rank"),
        default=None,
        help="this worker's rank (default: RANK or SLURM_PROCID, else 0)",
    )
    g.add_argument(
        "--world-size",
        type=_int_at_least(1, "--world-size"),
        default=None,
        help="number of workers (default: WORLD_SIZE or SLURM_NTASKS, else 1)",
    )
    g.add_argument(
        "--rank-timeout",
        type=_float_positive("--rank-timeout", allow_zero=True),
        default=None,
        metavar="SECONDS",
        help="with several ranks: how long rank 0 waits after its own shard for "
        "the others to finish before writing an incomplete summary (the last "
        "rank to finish rewrites it); 0: no wait (default: 3600 when torchrun "
        "or SLURM set the ranks, 0 with --rank/--world-size)",
    )
    g.add_argument(
        "--seed",
        type=int,
        default=0,
        help="base seed; each episode's seed is a stable hash of (seed, key) (default: 0)",
    )

    g = p.add_argument_group("agent")
    g.add_argument(
        "--agent",
        default="random",
        help=f"{', '.join(AGENT_ALIASES)}, package.module:Class or path/to/file.py:Class "
        "(default: random)",
    )
    g.add_argument(
        "--action-protocol",
        choices=ACTION_PROTOCOLS,
        default="goat",
        help="goat: 6 claims, 0 finishes; legacy: in many/all 0 claims, 9 finishes; "
        "compat: 0 and 6 claim, 9 finishes (default: goat)",
    )
    g.add_argument(
        "--legacy-agent-api",
        action="store_true",
        help="call act(rgb=..., depth=..., prompt=...) instead of act(observation)",
    )

    g = p.add_argument_group("output")
    g.add_argument(
        "--output-dir",
        default=None,
        help="where results go (default: mosnav_results/<agent>-<UTC time>; required "
        "with several ranks)",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue a run in an existing --output-dir, skipping recorded episodes "
        "(error records count as recorded)",
    )
    g.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: run again the episodes whose last record is an error "
        "(e.g. after a model server outage); the new record is appended and the "
        "summary keeps each episode's last record",
    )
    g.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop after the first failed episode (its error record is written)",
    )
    g.add_argument(
        "--max-unavailable-episodes",
        type=_int_at_least(0, "--max-unavailable-episodes"),
        default=3,
        metavar="N",
        help="stop (exit 1, resumable) after N consecutive episodes failed because the "
        "model server stayed unavailable (APIUnavailableError, --agent api); "
        "0: never (default: 3)",
    )
    g.add_argument(
        "--fail-on-episode-error",
        action="store_true",
        help="exit with status 1 at the end if any episode failed",
    )
    g.add_argument(
        "--step-timeout",
        type=_float_positive("--step-timeout"),
        default=None,
        metavar="SECONDS",
        help="seconds one agent act() may take; a slower step ends that episode "
        "with a StepTimeout error record and the run goes on (the hung call "
        "is left in a daemon thread; default: no limit)",
    )
    g.add_argument(
        "--no-action-trace",
        dest="action_trace",
        action="store_false",
        help="leave action_trace out of the records",
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")

    g = p.add_argument_group("debugging")
    g.add_argument(
        "--log-prompts",
        action="store_true",
        help="an agent with set_log_path() (--agent api) logs every request and "
        "reply to rank_XXXXX/prompts.jsonl in the output directory; any other "
        "agent gets each episode's task prompt printed instead",
    )
    g.add_argument(
        "--log-positions", action="store_true", help="print the agent position at every step"
    )
    g.add_argument(
        "--log-episodes", action="store_true", help="print one line per finished episode"
    )
    g.add_argument(
        "--render-live",
        action="store_true",
        help="show the agent's view in an OpenCV window (keys for --agent human); needs a display",
    )
    g.add_argument(
        "--save-video",
        nargs="?",
        const="mp4",
        choices=("mp4", "gif"),
        default=None,
        help="write one video per episode to <output-dir>/videos (mp4 by default): "
        "RGB | depth | the growing top-down map, with step, claims so far and action",
    )
    g.add_argument(
        "--save-maps",
        action="store_true",
        help="draw each episode's top-down map to <output-dir>/maps/<episode>.png "
        "(trajectory, targets and view points, claims, FINISH; see "
        "docs/EVALUATION.md)",
    )
    return bound_numbers(p)  # every number flag in its range (habitat_mosnav/flag_ranges.py)


def build_overrides(args, default_config: bool) -> List[str]:
    """Hydra overrides of the habitat config from the CLI flags (then the --set ones)."""
    ov: List[str] = []

    def add(key, value):
        ov.append(f"{key}={value}")

    for flag, value, key, is_dir in (
        ("--dataset-dir", args.dataset_dir, "habitat.dataset.data_path", True),
        ("--scene-root", args.scene_root, "habitat.dataset.scenes_dir", True),
        (
            "--scene-dataset-config",
            args.scene_dataset_config,
            "habitat.dataset.scene_dataset_config",
            False,
        ),
    ):
        if value is None:
            continue
        path = os.path.abspath(os.path.expanduser(value))
        if not (os.path.isdir(path) if is_dir else os.path.isfile(path)):
            raise UsageError(f"{flag} {value}: no such {'directory' if is_dir else 'file'}")
        add(key, _quote(path))
    if args.simulator is not None:
        from habitat_mosnav.config.simulator import simulator_overrides

        ov.extend(simulator_overrides(args.simulator))
    if args.split is not None:
        add("habitat.dataset.split", _quote(args.split))
    if args.goal_type is not None:
        add("habitat.dataset.goal_type", args.goal_type)
    modes = args.target_modes
    if modes is None and default_config:
        modes = list(DEFAULT_TARGET_MODES)
    if modes is not None:
        add("habitat.dataset.target_modes", "[" + ",".join(modes) + "]")
    if args.max_steps is not None:
        add("habitat.environment.max_episode_steps", args.max_steps)
    # Only flags given override the config (a setting refuses them: _load_setting).
    if args.space_coverage_samples is not None:
        add("habitat.task.mosnav_space_coverage_samples", args.space_coverage_samples)
    if args.space_coverage_radius is not None:
        add("habitat.task.mosnav_space_coverage_radius", args.space_coverage_radius)
    return ov + list(args.overrides)


#: Flags a benchmark setting fixes: giving one with --benchmark is refused.
SETTING_FIXED_FLAGS = (
    ("config", "--config"),
    ("split", "--split"),
    ("target_modes", "--target-modes"),
    ("goal_type", "--goal-type"),
    ("space_coverage_samples", "--space-coverage-samples"),
    ("space_coverage_radius", "--space-coverage-radius"),
    ("limit", "--limit"),
    ("episode_limit", "--episode-limit"),
    ("offset", "--offset"),
)


def _given_flags(argv: Optional[Sequence[str]]) -> set:
    """Destinations of the flags actually typed (the parser takes no abbreviations)."""
    parser = build_parser(add_help=False)
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    given, _ = parser.parse_known_args(argv)
    return set(vars(given))


def _load_setting(args, argv: Optional[Sequence[str]]):
    """The --benchmark setting, after refusing the flags that contradict it."""
    from habitat_mosnav.evaluation.settings import SettingError, load_setting

    try:
        setting = load_setting(args.benchmark)
    except SettingError as exc:
        raise UsageError(str(exc)) from None
    given = _given_flags(argv)
    for attr, flag in SETTING_FIXED_FLAGS:
        if attr in given:
            raise UsageError(
                f"{flag} contradicts --benchmark {setting.name}, which fixes it "
                f"({setting.path}); drop {flag}"
            )
    return setting


def _quote(value: str) -> str:
    """Quote a value for a Hydra override when it has characters Hydra would parse."""
    if all(c.isalnum() or c in "/._-~+" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@contextmanager
def _agent_code():
    """Around the agent's own code at start-up (its import, its constructor; a signal ends
    it at once, :func:`~habitat_mosnav.evaluation.interrupts.interruptible`): what it does
    to SIGINT/SIGTERM is undone afterwards, so the exit codes 130/143 stay ours."""
    main_thread = threading.current_thread() is threading.main_thread()
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
    try:
        with interrupts.interruptible():
            yield
    finally:
        for signum, handler in saved.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)


#: Flags holding a path, made absolute (against the directory the command started in)
#: before the agent runs: an agent's ``os.chdir`` never moves the results.
PATH_FLAGS = ("output_dir", "dataset_dir", "scene_root", "env_file", "system_prompt_file")


def _absolute_paths(args, cwd: str) -> None:
    for name in PATH_FLAGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value:
            setattr(args, name, os.path.join(cwd, os.path.expanduser(value)))
    config = args.config_given = getattr(args, "config", None)  # run.json keeps it as typed
    if (
        isinstance(config, str)
        and not os.path.isabs(config)
        and os.path.exists(os.path.join(cwd, config))
    ):
        args.config = os.path.join(cwd, config)


def _parse(argv: Optional[Sequence[str]], cwd: Optional[str] = None):
    """Two passes: find --agent, let its class add flags, then parse everything. Path
    flags are made absolute against ``cwd`` (the start directory)."""
    cwd = cwd or os.getcwd()
    pre = build_parser(add_help=False)
    known, _ = pre.parse_known_args(argv)
    try:
        with _agent_code():
            factory = resolve_agent(known.agent)
    except AgentLoadError as exc:
        raise UsageError(str(exc)) from None
    parser = build_parser()
    adder = getattr(factory, "add_arguments", None)
    if callable(adder):
        try:
            adder(parser)
        except argparse.ArgumentError as exc:
            raise UsageError(f"--agent {known.agent}: add_arguments failed: {exc}") from None
        bound_numbers(parser, strict=False)  # the agent's own number flags, where known
    args = parser.parse_args(argv)
    args.output_dir_given = args.output_dir
    args.start_dir = cwd
    _absolute_paths(args, cwd)
    return args, factory


def _default_output_dir(args) -> str:
    name = args.agent.split(":")[-1].split(".")[-1].split("/")[-1] or "agent"
    return os.path.join("mosnav_results", f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")


#: The original benchmark's Habitat-Sim config file, replaced here by the mosnav configs.
ORIGINAL_CONFIG_NAME = "hm3d_config.yaml"


def _mosnav_configs_hint() -> str:
    """'use a mosnav config: benchmark/nav/mosnav/mos_hm3d.yaml, ...' (the shipped files)."""
    import glob

    from habitat_mosnav.config.default import MOSNAV_CONFIG_DIR

    pattern = os.path.join(MOSNAV_CONFIG_DIR, "benchmark", "nav", "mosnav", "*.yaml")
    names = sorted(
        os.path.relpath(f, MOSNAV_CONFIG_DIR).replace(os.sep, "/") for f in glob.glob(pattern)
    )
    return (
        "use a mosnav config (relative to the package's config directory): "
        + ", ".join(names)
        + "; for HM3D e.g. --config benchmark/nav/mosnav/mos_hm3d.yaml "
        "--dataset-dir dataset_semantic --scene-root /path/to/hm3d/val"
    )


def _config_exists(path: str) -> bool:
    """The lookup of :func:`habitat_mosnav.get_config` (habitat's own)."""
    from habitat.config.default import get_full_config_path

    from habitat_mosnav.config.default import MOSNAV_CONFIG_DIR

    try:
        get_full_config_path(path, MOSNAV_CONFIG_DIR)
    except RuntimeError:
        return False
    return True


def _load_config(args, setting=None, extra: Sequence[str] = ()):
    default_config = args.config is None and setting is None
    path = setting.config if setting is not None else (args.config or DEFAULT_CONFIG)
    shown = (
        setting.config
        if setting is not None
        # messages name it as typed
        else (getattr(args, "config_given", args.config) or DEFAULT_CONFIG)
    )
    overrides = build_overrides(args, default_config) + list(extra)
    if setting is not None:
        overrides = setting.habitat_overrides() + overrides
    from habitat_mosnav import get_config

    if os.path.basename(path) == ORIGINAL_CONFIG_NAME:
        raise UsageError(
            f"--config {shown}: the original benchmark's Habitat-Sim config is not "
            f"used by mosnav-eval; {_mosnav_configs_hint()}"
        )
    if not _config_exists(path):
        raise UsageError(
            f"--config {shown}: no such file (a path, or relative to the package's "
            f"config directory); {_mosnav_configs_hint()}"
        )
    try:
        config = get_config(path, overrides)
    except Exception as exc:
        text = " ".join(mask_secrets(exc).split())  # masked before it is cut
        if len(text) > 400:
            text = text[:397] + "..."
        raise UsageError(f"--config {shown}: {type(exc).__name__}: {text}") from None
    from omegaconf import OmegaConf

    from habitat_mosnav.config.default_structured_configs import MultiObjectNavTaskConfig

    task_type = OmegaConf.select(config, "habitat.task.type")
    if task_type != MultiObjectNavTaskConfig.type:
        raise UsageError(
            f"--config {shown}: task type {task_type!r} is not "
            f"{MultiObjectNavTaskConfig.type}; {_mosnav_configs_hint()}"
        )
    choice = choice_for_type(OmegaConf.select(config, "habitat.simulator.type"))
    try:  # installed, importable and registered: checked before anything is written
        if choice is not None:
            choice.check()
    except SimulatorUnavailable as exc:
        raise UsageError(
            f"--config {path}: {exc} (or run on the CPU simulator: --simulator mosnav)"
        ) from None
    return config, overrides


def _missing_sim_sensors(config, needed) -> list:
    from omegaconf import OmegaConf

    sensors = OmegaConf.select(config, "habitat.simulator.agents.main_agent.sim_sensors") or {}
    return [key for key in needed if key not in sensors]


def _with_required_sensors(args, setting, factory, config, overrides):
    """The agent's ``required_sim_sensors`` (``{sim_sensors key: Hydra override that adds
    it, or None}``): missing ones are added with their override (the config is composed
    again), or the start is refused in one line."""
    needed = getattr(factory, "required_sim_sensors", None) or {}
    missing = _missing_sim_sensors(config, needed)
    if not missing:
        return config, overrides
    cannot = [key for key in missing if not needed[key]]
    if cannot:
        raise UsageError(
            f"--agent {args.agent} needs the sim sensor(s) {', '.join(cannot)} "
            "(habitat.simulator.agents.main_agent.sim_sensors), which the config "
            "lacks; add them with --set"
        )
    extra = [needed[key] for key in missing]
    config, overrides = _load_config(args, setting, extra)
    still = _missing_sim_sensors(config, missing)
    if still:
        raise UsageError(
            f"--agent {args.agent}: adding the sim sensor(s) {', '.join(still)} "
            f"with {'; '.join(extra)} did not add them"
        )
    print(
        safe_line(
            f"{PROG}: --agent {args.agent} needs the sim sensor(s) {', '.join(missing)}: "
            f"added ({'; '.join(extra)})"
        ),
        file=sys.stderr,
    )
    return config, overrides


def _manifest_fields(args, overrides: Sequence[str], config_path: str) -> dict:
    """The CLI's part of the run manifest: the agent spec, the config and its overrides
    (local data/scene paths left out: the dataset fingerprint stands for the data)."""
    local = ("habitat.dataset.data_path=", "habitat.dataset.scenes_dir=")
    agent = recorded_agent_spec(args.agent, getattr(args, "start_dir", None))
    agent += " (legacy agent api)" if args.legacy_agent_api else ""
    return {
        "agent": agent,
        "config": config_path,
        "config_overrides": [o for o in overrides if not o.startswith(local)],
    }


def recorded_agent_spec(spec: str, cwd: Optional[str] = None) -> str:
    """The ``--agent`` spec as run.json and the leaderboard keep it: a file path relative
    to the start directory when inside it, else only its file name (never a local
    absolute path)."""
    module, sep, attr = spec.rpartition(":")
    if not sep or not os.path.isabs(module):
        return spec
    rel = os.path.relpath(module, cwd or os.getcwd())
    return (rel if not rel.startswith("..") else os.path.basename(module)) + ":" + attr


def _without_flags(argv: Sequence[str], flags: Sequence[str]) -> List[str]:
    """``argv`` without the given flags and their values (``--flag V`` or ``--flag=V``)."""
    out: List[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in flags:
            skip = True
        elif not any(a.startswith(f + "=") for f in flags):
            out.append(a)
    return out


def _run_each_goal_type(argv: Sequence[str], args, ctx: dict) -> int:
    """``--goal-type a,b,c``: one complete run per goal type, in ``OUTPUT_DIR/<type>/``,
    each exactly the run that ``--goal-type <type> --output-dir OUTPUT_DIR/<type>`` makes
    (same episode keys, seeds and records); the first failing run's status ends it."""
    out = args.output_dir or os.path.join(ctx.get("cwd") or os.getcwd(), _default_output_dir(args))
    rest = _without_flags(argv, ("--goal-type", "--output-dir"))
    for goal_type in args.goal_type.split(","):
        sub = os.path.join(out, goal_type)
        print(f"{PROG}: goal type {goal_type} -> {sub}", flush=True)
        code = _run(rest + ["--goal-type", goal_type, "--output-dir", sub], ctx)
        if code != 0:
            return code
    return 0


def _refuse_output_in_inputs(output_dir: str, args, config) -> None:
    """The output directory never lies inside (or is) the dataset or scene directory: its
    rank folders would read as scene folders there, and every later run on that dataset
    would be refused."""
    from omegaconf import OmegaConf

    from habitat_mosnav.safety import inside

    split = OmegaConf.select(config, "habitat.dataset.split", default=None)
    inputs = [
        ("--dataset-dir", OmegaConf.select(config, "habitat.dataset.data_path", default=None))
    ]
    if args.scene_root is not None:  # a config's own scene folder may be wide ("."): as given
        inputs.append(("--scene-root", os.path.abspath(os.path.expanduser(args.scene_root))))
    for flag, value in inputs:
        if isinstance(value, str) and isinstance(split, str):
            value = value.replace("{split}", split)
        if not isinstance(value, str) or not value or not os.path.isdir(value):
            continue
        if inside(output_dir, value):
            raise UsageError(
                f"--output-dir {args.output_dir_given}: inside the input directory {value} "
                f"({flag}): the results would be mixed into it; choose a directory outside it"
            )


def _run(argv: Optional[Sequence[str]], ctx: dict) -> int:
    args, factory = _parse(argv)
    if args.goal_type is not None and "," in args.goal_type:
        return _run_each_goal_type(sys.argv[1:] if argv is None else list(argv), args, ctx)
    interrupts.check()  # a signal noted while habitat was imported
    if args.render_live:
        from habitat_mosnav.evaluation.viewer import DisplayUnavailable, check_display

        try:
            check_display()
        except DisplayUnavailable as exc:
            raise UsageError(str(exc)) from None
    if args.retry_errors and not args.resume:
        raise UsageError(
            "--retry-errors needs --resume (it re-runs failed episodes of an existing run)"
        )
    if args.rank is not None and args.world_size is not None and args.rank >= args.world_size:
        raise UsageError(f"--rank {args.rank} must be < --world-size {args.world_size}")

    setting = _load_setting(args, argv) if args.benchmark is not None else None
    config, overrides = _load_config(args, setting)
    config, overrides = _with_required_sensors(args, setting, factory, config, overrides)
    interrupts.check()  # a signal noted while the config was composed
    ctx["config_path"] = (
        setting.config
        if setting is not None
        else (getattr(args, "config_given", args.config) or DEFAULT_CONFIG)
    )
    if args.print_config:
        from omegaconf import OmegaConf

        print(OmegaConf.to_yaml(config))
        return 0

    from habitat_mosnav.evaluation.evaluator import (
        EvaluationConfig,
        EvaluationSetupError,
        Evaluator,
    )
    from habitat_mosnav.evaluation.summary import format_summary
    from habitat_mosnav.evaluation.ranks import rank_timeout
    from habitat_mosnav.evaluation.selection import launcher_rank_world

    try:
        env_rank, env_world = launcher_rank_world()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    rank = args.rank if args.rank is not None else env_rank
    world = args.world_size if args.world_size is not None else env_world
    if rank >= world:
        raise UsageError(f"rank {rank} must be < world size {world}")
    output_dir = args.output_dir
    if output_dir is None:
        if world > 1:
            raise UsageError("--output-dir is required when several ranks write one run")
        args.output_dir_given = _default_output_dir(args)
        output_dir = os.path.join(ctx.get("cwd") or os.getcwd(), args.output_dir_given)

    from habitat_mosnav.evaluation.durable import ResultFileError
    from habitat_mosnav.evaluation.rank_files import refuse_existing

    _refuse_output_in_inputs(output_dir, args, config)
    ctx["output_dir"] = args.output_dir_given  # as typed, for messages
    if not args.resume:
        try:  # refuse before building the agent (which may load a large model)
            refuse_existing(output_dir, rank)
        except ResultFileError as exc:
            raise UsageError(str(exc)) from None
    try:
        with _agent_code():
            agent = instantiate_agent(factory, args.agent, args)
    except AgentLoadError as exc:
        raise UsageError(str(exc)) from None
    if args.legacy_agent_api:
        from habitat_mosnav.agents.legacy import LegacyAgentAdapter

        agent = LegacyAgentAdapter(agent)

    eval_cfg = EvaluationConfig(
        output_dir=output_dir,
        offset=args.offset,
        num_episodes=args.num_episodes,
        scene_limit=args.limit,
        episode_limit=args.episode_limit,
        rank=rank,
        world_size=world,
        rank_timeout=rank_timeout(args.rank_timeout, args.rank is None and args.world_size is None),
        seed=args.seed,
        action_protocol=args.action_protocol,
        resume=args.resume,
        retry_errors=args.retry_errors,
        fail_fast=args.fail_fast,
        max_unavailable_episodes=args.max_unavailable_episodes,
        record_actions=args.action_trace,
        log_prompts=args.log_prompts,
        log_positions=args.log_positions,
        log_episodes=args.log_episodes,
        video=args.save_video,
        maps=args.save_maps,
        render_live=args.render_live,
        progress=args.progress,
        benchmark=args.benchmark,
        step_timeout=args.step_timeout,
        manifest=_manifest_fields(args, overrides, ctx["config_path"]),
    )
    evaluator = Evaluator(agent, config, eval_cfg)
    try:
        summary = evaluator.run()
    except EvaluationSetupError as exc:
        raise UsageError(str(exc)) from None

    if "rank_done" in summary:
        done = summary["rank_done"]
        shown = ctx["output_dir"]
        if "summary_path" in summary:  # the last rank printed the summary
            print(
                safe_line(
                    f"rank {rank}: {done['record_count']} records ({done['error_count']} "
                    f"errors) in {shown}; all ranks finished: {summary['summary_path']}"
                )
            )
        else:
            print(
                safe_line(
                    f"rank {rank}: {done['record_count']} records ({done['error_count']} errors) in "
                    f"{shown}; other ranks are still running: the last one to finish writes "
                    f"summary.json (or run `mosnav-aggregate {shown}` when all have finished)"
                )
            )
        errors = done["error_count"]
    else:
        print(format_summary(summary))
        print(safe_line(f"results: {os.path.join(ctx['output_dir'], 'summary.json')}"))
        errors = summary.get("error_episode_count", 0)
    if evaluator.stopped_by_unavailable:
        print(
            safe_line(
                f"{PROG}: error: stopped after {evaluator.stopped_by_unavailable} consecutive "
                f"episodes failed with APIUnavailableError (the model server is down); "
                f"when it is back, continue with --resume --retry-errors --output-dir "
                f"{ctx['output_dir']}"
            ),
            file=sys.stderr,
        )
        return 1
    if errors:
        print(
            safe_line(
                f"{PROG}: {errors} episode(s) failed (status 'error' records in "
                f"{ctx['output_dir']})"
            ),
            file=sys.stderr,
        )
        if args.fail_on_episode_error:
            return 1
    if evaluator.stopped_by_fail_fast:
        print(
            f"{PROG}: --fail-fast stopped the run after a failed episode (summary status "
            "'incomplete')",
            file=sys.stderr,
        )
        return 1
    return 0


def _interrupted(exc: KeyboardInterrupt, ctx: dict) -> int:
    out = ctx.get("output_dir")
    kept = (
        "the records written so far are kept; continue with the same command and "
        f"--resume --output-dir {out}"
    )
    return interrupts.say_interrupted(PROG, exc, None if out is None else kept)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns the exit status (SPEC §8), never raises for bad input,
    a full disk or a signal. SIGINT and SIGTERM are noted while this runs and end the run
    at the next safe point (:mod:`~habitat_mosnav.evaluation.interrupts`): 130 / 143."""
    from habitat_mosnav.evaluation.durable import ResultWriteError

    ctx: dict = {"cwd": os.getcwd()}
    threads = set(threading.enumerate())
    # The package's warnings (logging) as one "warning: ..." line each on stderr.
    warnings_out = logging.StreamHandler(sys.stderr)
    warnings_out.setLevel(logging.WARNING)
    warnings_out.setFormatter(logging.Formatter("warning: %(message)s"))
    package_log = logging.getLogger("habitat_mosnav")
    package_log.addHandler(warnings_out)
    try:
        with interrupts.guarded((signal.SIGINT, signal.SIGTERM)):
            try:
                code = _run(argv, ctx)
            except UsageError as exc:
                error, code = exc, 2
            except ResultWriteError as exc:
                error, code = exc, 3
            else:
                error = None
            interrupts.check()  # a signal noted meanwhile wins over that line and status
            if error is not None:
                print(safe_line(f"{PROG}: error: {error}"), file=sys.stderr)
    except KeyboardInterrupt as exc:
        code = _interrupted(exc, ctx)
    finally:
        package_log.removeHandler(warnings_out)
    if argv is None:  # the command line (not a call from Python): nothing may hold the exit
        _exit_past_agent_threads(code, threads)
    return code


def _exit_past_agent_threads(code: int, before) -> None:
    """A non-daemon thread the agent left running would keep the process alive after the
    summary: flush and leave with ``os._exit`` then (the results are already on disk)."""
    lingering = [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and not t.daemon and t is not threading.current_thread()
    ]
    if lingering:
        print(
            safe_line(
                f"{PROG}: warning: {len(lingering)} thread(s) started during the run are "
                f"still running ({', '.join(t.name for t in lingering[:3])}); the results "
                "are written, exiting without waiting for them"
            ),
            file=sys.stderr,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
