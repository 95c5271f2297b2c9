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
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import List, Optional, Sequence

from habitat_mosnav.agents.loading import (
    AGENT_ALIASES,
    AgentLoadError,
    instantiate_agent,
    resolve_agent,
)
from habitat_mosnav.api import ACTION_PROTOCOLS, EPISODE_MODES, GOAL_TYPES
from habitat_mosnav.evaluation import interrupts
from habitat_mosnav.evaluation.command import SAVE_VIDEO_FLAG, SET_FLAG, Parser, UsageError
from habitat_mosnav.evaluation.command import rank_world, run_command
from habitat_mosnav.evaluation.compose import (
    CONFIG_KEYS,
    DEFAULT_TARGET_MODES,
    add_required_sensors,
    build_overrides,
    compose_config,
)
from habitat_mosnav.evaluation.defaults import DEFAULT_CONFIG
from habitat_mosnav.evaluation.run_request import PROG, RunRequest, flag_of
from habitat_mosnav.flag_ranges import bound_numbers
from habitat_mosnav.safety import safe_line
from habitat_mosnav.simulators import SIMULATORS, simulators_help
from habitat_mosnav.versions import add_version_argument

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_TARGET_MODES",
    "UsageError",
    "build_parser",
    "build_overrides",
    "main",
]


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


def build_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = Parser(
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
        metavar="SETTING",
        help="a versioned benchmark setting (e.g. demo/official, mosnav-v1/val/mini; "
        "list: python -m habitat_mosnav.evaluation.settings list): it fixes the "
        "config, split, target modes, goal type, success distance, space oracle "
        "and episodes, and checks the dataset's fingerprint; --num-episodes or "
        "--max-steps mark the run as not official",
    )
    g.add_argument(
        "--config",
        help="a mosnav habitat YAML (a path, or relative to the package's config "
        f"directory); default: {DEFAULT_CONFIG} with target modes many,all "
        "(the bundled demo scenes on the CPU simulator)",
    )
    g.add_argument(
        "--goal-type",
        type=_goal_types,
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
        help="the dataset_semantic directory (<dir>/<scene_id>/{goals,queries,episodes}.json)",
    )
    g.add_argument(
        "--scene-root",
        help="scene directory holding <NNNNN-id>/<id>.basis.glb (e.g. /data/hm3d/val); "
        "the HM3D configs then read the scene dataset config beside it "
        "(/data/hm3d/hm3d_annotated_basis.scene_dataset_config.json)",
    )
    g.add_argument(
        "--scene-dataset-config",
        metavar="FILE",
        help="habitat-sim's scene dataset config for the scenes (default: the config's; "
        "HM3D: hm3d_annotated_basis.scene_dataset_config.json beside --scene-root)",
    )
    g.add_argument(
        "--simulator",
        choices=tuple(SIMULATORS),
        help=f"run on {simulators_help()} (default: the config's; the demo configs use the "
        "CPU simulator, the HM3D ones habitat-sim, on GPU 0 when there is one)",
    )
    g.add_argument("--split", help="dataset split, part of every episode key")
    g.add_argument(
        "--target-modes",
        type=_target_modes,
        help="comma list of single,any,many,all,sequential (default: the config's; many,all "
        "with the default config). sequential: GOAT-Bench's episodes of subtasks, each "
        "with its own goal type (not filtered by --goal-type)",
    )
    for flag, kind, text in (
        ("--max-steps", int, "actions per episode"),
        (
            "--space-coverage-samples",
            int,
            "navigable samples of the space oracle; 0 disables OER-space",
        ),
        ("--space-coverage-radius", float, "metres within which the agent explores a sample"),
    ):
        key = CONFIG_KEYS[flag[2:].replace("-", "_")]  # flag_of's inverse
        g.add_argument(flag, type=kind, help=f"{text} (default: the config's {key})")
    g.add_argument(
        "--set",
        **SET_FLAG,
        help="habitat config override (Hydra syntax), repeatable: KEY=VALUE, +KEY=VALUE "
        "or ~KEY (e.g. habitat.simulator.turn_angle=15)",
    )
    g.add_argument(
        "--print-config", action="store_true", help="print the resolved habitat config and exit"
    )

    g = p.add_argument_group("selection and sharding")
    for flag, default, text in (
        ("--limit", None, "number of scenes (sorted by scene id); default all"),
        ("--episode-limit", None, "episodes per scene (first by key); default all"),
        ("--offset", 0, "skip this many episodes of the key-sorted selection (default: 0)"),
        ("--num-episodes", -1, "episodes after --offset: -1 all, 0 none (default: -1)"),
        ("--rank", None, "this worker's rank (default: RANK or SLURM_PROCID, else 0)"),
        ("--world-size", None, "number of workers (default: WORLD_SIZE or SLURM_NTASKS, else 1)"),
    ):
        g.add_argument(flag, type=int, default=default, help=text)
    g.add_argument(
        "--rank-timeout",
        type=float,
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
        type=int,
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
        type=float,
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
        **SAVE_VIDEO_FLAG,
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


#: RunRequest fields a benchmark setting fixes: giving their flag with --benchmark is refused.
SETTING_FIXED_FIELDS = (
    "config",
    "split",
    "target_modes",
    "goal_type",
    "space_coverage_samples",
    "space_coverage_radius",
    "limit",
    "episode_limit",
    "offset",
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
    for name in SETTING_FIXED_FIELDS:
        if name in given:
            flag = flag_of(name)
            raise UsageError(
                f"{flag} contradicts --benchmark {setting.name}, which fixes it "
                f"({setting.path}); drop {flag}"
            )
    return setting


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
    config = getattr(args, "config", None)
    if (
        isinstance(config, str)
        and not os.path.isabs(config)
        and os.path.exists(os.path.join(cwd, config))
    ):
        args.config = os.path.join(cwd, config)


def _parse(argv: Optional[Sequence[str]], cwd: Optional[str] = None):
    """(the run request, the agent's factory). Two passes: find --agent, let its class add
    flags, then parse everything. Path flags are made absolute against ``cwd`` (the start
    directory); --benchmark's setting is loaded."""
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
    typed = {"config_given": args.config, "output_dir_given": args.output_dir, "start_dir": cwd}
    _absolute_paths(args, cwd)
    setting = _load_setting(args, argv) if args.benchmark is not None else None
    return RunRequest.from_args(args, setting, **typed), factory


def _default_output_dir(request: RunRequest) -> str:
    name = request.agent.split(":")[-1].split(".")[-1].split("/")[-1] or "agent"
    return os.path.join("mosnav_results", f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")


def _manifest_fields(request: RunRequest, overrides: Sequence[str]) -> dict:
    """The CLI's part of the run manifest: the agent spec, the config and its overrides
    (local data/scene paths left out: the dataset fingerprint stands for the data)."""
    local = tuple(CONFIG_KEYS[name] + "=" for name in ("dataset_dir", "scene_root"))
    agent = recorded_agent_spec(request.agent, request.start_dir)
    agent += " (legacy agent api)" if request.legacy_agent_api else ""
    return {
        "agent": agent,
        "config": request.config_name,
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


def _run_each_goal_type(argv: Sequence[str], request: RunRequest, ctx: dict) -> int:
    """``--goal-type a,b,c``: one complete run per goal type, in ``OUTPUT_DIR/<type>/``,
    each exactly the run that ``--goal-type <type> --output-dir OUTPUT_DIR/<type>`` makes
    (same episode keys, seeds and records); the first failing run's status ends it."""
    out = request.output_dir or os.path.join(ctx["cwd"], _default_output_dir(request))
    rest = _without_flags(argv, ("--goal-type", "--output-dir"))
    for goal_type in request.goal_type.split(","):
        sub = os.path.join(out, goal_type)
        print(f"{PROG}: goal type {goal_type} -> {sub}", flush=True)
        code = _run(rest + ["--goal-type", goal_type, "--output-dir", sub], ctx)
        if code != 0:
            return code
    return 0


def _refuse_output_in_inputs(output_dir: str, shown: str, request: RunRequest, config) -> None:
    """The output directory never lies inside (or is) the dataset or scene directory: its
    rank folders would read as scene folders there, and every later run on that dataset
    would be refused."""
    from omegaconf import OmegaConf

    from habitat_mosnav.safety import inside

    split = OmegaConf.select(config, CONFIG_KEYS["split"], default=None)
    inputs = [("--dataset-dir", OmegaConf.select(config, CONFIG_KEYS["dataset_dir"], default=None))]
    if request.scene_root is not None:  # a config's own scene folder may be wide ("."): as given
        inputs.append(("--scene-root", os.path.abspath(os.path.expanduser(request.scene_root))))
    for flag, value in inputs:
        if isinstance(value, str) and isinstance(split, str):
            value = value.replace("{split}", split)
        if not isinstance(value, str) or not value or not os.path.isdir(value):
            continue
        if inside(output_dir, value):
            raise UsageError(
                f"--output-dir {shown}: inside the input directory {value} "
                f"({flag}): the results would be mixed into it; choose a directory outside it"
            )


def _run(argv: Optional[Sequence[str]], ctx: dict) -> int:
    ctx.setdefault("cwd", os.getcwd())  # the start directory (an agent may chdir)
    request, factory = _parse(argv)
    if request.goal_type is not None and "," in request.goal_type:
        return _run_each_goal_type(sys.argv[1:] if argv is None else list(argv), request, ctx)
    interrupts.check()  # a signal noted while habitat was imported
    if request.render_live:
        from habitat_mosnav.evaluation.viewer import DisplayUnavailable, check_display

        try:
            check_display()
        except DisplayUnavailable as exc:
            raise UsageError(str(exc)) from None
    if request.retry_errors and not request.resume:
        raise UsageError(
            "--retry-errors needs --resume (it re-runs failed episodes of an existing run)"
        )
    if None not in (request.rank, request.world_size) and request.rank >= request.world_size:
        raise UsageError(f"--rank {request.rank} must be < --world-size {request.world_size}")

    config, overrides = compose_config(request)
    config, overrides = add_required_sensors(request, factory, config, overrides)
    interrupts.check()  # a signal noted while the config was composed
    if request.print_config:
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

    rank, world = rank_world(request.rank, request.world_size)
    if rank >= world:
        raise UsageError(f"rank {rank} must be < world size {world}")
    output_dir, shown = request.output_dir, request.output_dir_given
    if output_dir is None:
        if world > 1:
            raise UsageError("--output-dir is required when several ranks write one run")
        shown = _default_output_dir(request)
        output_dir = os.path.join(ctx["cwd"], shown)

    from habitat_mosnav.evaluation.durable import ResultFileError
    from habitat_mosnav.evaluation.rank_files import refuse_existing

    _refuse_output_in_inputs(output_dir, shown, request, config)
    ctx["output_dir"] = shown  # as typed, for messages
    ctx["kept"] = (
        "the records written so far are kept; continue with the same command and "
        f"--resume --output-dir {shown}"
    )
    if not request.resume:
        try:  # refuse before building the agent (which may load a large model)
            refuse_existing(output_dir, rank)
        except ResultFileError as exc:
            raise UsageError(str(exc)) from None
    try:
        with _agent_code():
            agent = instantiate_agent(factory, request.agent, request.agent_args)
    except AgentLoadError as exc:
        raise UsageError(str(exc)) from None
    if request.legacy_agent_api:
        from habitat_mosnav.agents.legacy import LegacyAgentAdapter

        agent = LegacyAgentAdapter(agent)

    launcher = request.rank is None and request.world_size is None
    same = (  # the RunRequest fields EvaluationConfig takes under the same name
        "offset num_episodes episode_limit seed action_protocol resume retry_errors fail_fast "
        "max_unavailable_episodes log_prompts log_positions log_episodes render_live progress "
        "benchmark"
    ).split()
    eval_cfg = EvaluationConfig(
        output_dir=output_dir,
        scene_limit=request.limit,
        rank=rank,
        world_size=world,
        rank_timeout=rank_timeout(request.rank_timeout, launcher),
        record_actions=request.action_trace,
        video=request.save_video,
        maps=request.save_maps,
        step_timeout=request.step_timeout,
        manifest=_manifest_fields(request, overrides),
        **{name: getattr(request, name) for name in same},
    )
    evaluator = Evaluator(agent, config, eval_cfg)
    try:
        summary = evaluator.run()
    except EvaluationSetupError as exc:
        raise UsageError(str(exc)) from None

    if "rank_done" in summary:
        done = summary["rank_done"]
        shown = ctx["output_dir"]
        rest = (  # the last rank printed the summary
            f"all ranks finished: {summary['summary_path']}"
            if "summary_path" in summary
            else "other ranks are still running: the last one to finish writes summary.json "
            f"(or run `mosnav-aggregate {shown}` when all have finished)"
        )
        print(
            safe_line(
                f"rank {rank}: {done['record_count']} records ({done['error_count']} errors) "
                f"in {shown}; {rest}"
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
        if request.fail_on_episode_error:
            return 1
    if evaluator.stopped_by_fail_fast:
        print(
            f"{PROG}: --fail-fast stopped the run after a failed episode (summary status "
            "'incomplete')",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns the exit status (SPEC §8), never raises for bad input,
    a full disk or a signal. SIGINT and SIGTERM are noted while this runs and end the run
    at the next safe point (:mod:`~habitat_mosnav.evaluation.interrupts`): 130 / 143."""
    threads = set(threading.enumerate())
    code = run_command(PROG, lambda ctx: _run(argv, ctx))
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
