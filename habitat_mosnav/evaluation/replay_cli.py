"""``mosnav-replay RUN_DIR``: re-execute a run's recorded actions and compare (issue 32).

    mosnav-replay out/run1                          # on the simulator that produced it
    mosnav-replay out/run1 --simulator habitat-sim  # on the other one
    mosnav-replay out/run1 --verify                 # mark summary.json verified (or not)
    mosnav-replay out/run1 --diagnose               # why each episode failed: diagnosis.json

Each record's ``replay`` block (actions, start, motion settings) is re-executed from its
start through the evaluator's episode loop with no agent
(:mod:`~habitat_mosnav.evaluation.replay`); the replayed run goes to ``--out`` (default
``RUN_DIR/replay/<simulator>``, replaced on each replay) with ``replay.json``, the report.

With ``--rank/--world-size`` (or torchrun's/SLURM's variables) each rank replays its share
and writes its part of the report; the last to finish writes ``replay.json`` and, with
``--verify``, the mark (:func:`~habitat_mosnav.evaluation.replay.merge_rank_reports`).

Exit status: 0 every episode agrees (this rank's part, or the whole run for the rank that
concludes); 1 some differ (one line per differing episode and field on stdout); 2 bad input
(one line naming the file, record and field); 3 an output file could not be written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional, Sequence

from habitat_mosnav.evaluation.command import SAVE_VIDEO_FLAG, SET_FLAG, Parser, UsageError
from habitat_mosnav.evaluation.command import rank_world, run_command
from habitat_mosnav.evaluation.compose import given_overrides
from habitat_mosnav.evaluation.verification import VERIFICATION_FIELD
from habitat_mosnav.flag_ranges import bound_numbers
from habitat_mosnav.simulators import SIMULATORS
from habitat_mosnav.safety import safe_line
from habitat_mosnav.versions import add_version_argument

PROG = "mosnav-replay"


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG,
        allow_abbrev=False,
        description="Re-execute the recorded actions of an evaluation run (no agent) and "
        "compare every metric and report event with its records.",
    )
    add_version_argument(p)
    p.add_argument("run_dir", metavar="RUN_DIR", help="a mosnav-eval output directory")
    p.add_argument(
        "--simulator",
        choices=tuple(SIMULATORS),
        help="replay on this simulator (default: the one that produced the run)",
    )
    p.add_argument(
        "--out",
        help="where the replayed run and replay.json go (default: RUN_DIR/replay/<simulator>, "
        "replaced on each replay)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="judge the run against the benchmark (the setting it names, else its config "
        "file as shipped: success distance, sliding, step, turn; the episode set; every "
        "record's episode block) and mark RUN_DIR/summary.json verified (with the settings "
        "and simulator it was checked under), or not verified naming what differs",
    )
    p.add_argument(
        "--diagnose",
        action="store_true",
        help="label why each episode failed (a semantic camera in the replay): OUT/diagnosis.json "
        "and, with one rank, RUN_DIR/diagnosis.json (what mosnav-report shows); prints the counts",
    )
    p.add_argument("--config", help="the habitat config (default: run.json's)")
    p.add_argument("--dataset-dir", help="the run's dataset_semantic directory")
    p.add_argument("--scene-root", help="the run's scene directory")
    p.add_argument(
        "--set",
        **SET_FLAG,
        help="extra habitat config override (Hydra syntax), repeatable",
    )
    p.add_argument(
        "--rank",
        type=int,
        help="this worker's rank, as mosnav-eval's (default: RANK or SLURM_PROCID, else 0)",
    )
    p.add_argument(
        "--world-size",
        type=int,
        help="number of ranks (default: WORLD_SIZE or SLURM_NTASKS, else 1); the last rank "
        "to finish writes replay.json and, with --verify, the mark",
    )
    p.add_argument("--resume", action="store_true", help="continue a replay in --out")
    p.add_argument(
        "--save-maps", action="store_true", help="draw each replayed episode's map to OUT/maps"
    )
    p.add_argument(
        "--save-video",
        **SAVE_VIDEO_FLAG,
        help="write each replayed episode's video to OUT/videos",
    )
    p.add_argument("--no-progress", dest="progress", action="store_false")
    return bound_numbers(p)


def mark_verification(run_dir: str, result) -> dict:
    """Write the outcome of ``--verify`` into ``RUN_DIR/summary.json`` (``verification``)."""
    from habitat_mosnav.evaluation.durable import atomic_write_json, read_json_object
    from habitat_mosnav.evaluation.summary import summarize, SUMMARY_FILE

    path = os.path.join(run_dir, SUMMARY_FILE)
    summary = read_json_object(path) if os.path.exists(path) else summarize(run_dir)
    mark = {
        "status": "verified" if result.agrees else "not_verified",
        "simulator": result.simulator,
        "simulator_version": result.simulator_version,
        "episode_count": result.episode_count,
        # the records it was made from: mosnav-report calls the mark stale after an edit
        "records_sha256": result.records_digest,
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # what it was checked under: the benchmark's, never the run's own
        "settings": dict(result.settings),
    }
    if not result.agrees:
        mark["differences"] = [d.line() for d in result.differences[:20]]
        mark["differing_episode_count"] = len({d.episode_key for d in result.differences})
    summary[VERIFICATION_FIELD] = mark
    atomic_write_json(path, summary)
    return mark


def _run(argv, ctx: dict) -> int:
    from habitat_mosnav.evaluation.replay import ReplayInputError, replay_run

    args = build_parser().parse_args(argv)
    if not os.path.isdir(args.run_dir):
        raise UsageError(f"{args.run_dir}: no such run directory")
    rank, world = rank_world(args.rank, args.world_size)
    if world < 1 or not 0 <= rank < world:
        raise UsageError(f"--rank {rank} must be in 0..{world - 1} (--world-size {world})")
    if args.diagnose and args.resume:
        raise UsageError("--diagnose watches every episode replayed: run it without --resume")
    overrides = given_overrides(args, ("dataset_dir", "scene_root")) + list(args.overrides)
    if args.out is not None:
        from habitat_mosnav.safety import inside

        for flag, value in (("--dataset-dir", args.dataset_dir), ("--scene-root", args.scene_root)):
            if value is not None and inside(args.out, value):
                raise UsageError(
                    f"--out {args.out}: inside the input directory {value} ({flag}): "
                    "choose a directory outside it"
                )
    ctx["kept"] = (  # what an interruption keeps from here on, as mosnav-eval
        "the episodes replayed so far are kept; continue with the same command and --resume"
    )
    try:
        same = ("simulator", "config", "resume", "progress", "diagnose", "verify")
        result = replay_run(
            args.run_dir,
            out_dir=args.out,
            extra_overrides=overrides,
            rank=rank,
            world_size=world,
            maps=args.save_maps,
            video=args.save_video,
            **{name: getattr(args, name) for name in same},  # flags named as replay_run's
        )
    except ReplayInputError as exc:
        raise UsageError(str(exc)) from None
    for d in result.differences:
        print(safe_line(d.line()))
    for flip in result.flips:
        print(
            safe_line(
                f"{flip['episode_key']}: near-boundary claim flip at step(s) "
                f"{', '.join(map(str, flip['claim_steps']))} (within the stated agreement)"
            )
        )
    if result.diagnosis is not None:
        from habitat_mosnav.evaluation.replay_diagnosis import count_table

        for line in count_table(result.diagnosis):
            print(safe_line(line))
    verdict = (
        "agree" if result.agrees else f"{len({d.episode_key for d in result.differences})} differ"
    )
    print(
        safe_line(
            f"{PROG}: {result.episode_count} episodes replayed on {result.simulator}"
            f"{f' by rank {rank} of {world}' if world > 1 else ''}: {verdict}; "
            f"report: {result.report_path}"
        ),
        file=sys.stderr,
    )
    whole = result.whole
    if whole is None:  # another rank's part is still to come: the last one concludes
        print(
            safe_line(
                f"{PROG}: waiting for rank(s) {', '.join(map(str, result.missing_ranks))}: "
                f"the last rank to finish writes replay.json"
                f"{' and marks summary.json' if args.verify else ''}"
            ),
            file=sys.stderr,
        )
        return 0 if result.agrees else 1
    if world > 1:
        print(
            safe_line(
                f"{PROG}: all {world} ranks: {whole.episode_count} episodes, "
                f"{'agree' if whole.agrees else 'some differ'}; report: {whole.report_path}"
            ),
            file=sys.stderr,
        )
    if args.verify:
        from habitat_mosnav.safety import output_root

        with output_root(args.run_dir):  # summary.json: never through a planted link
            mark = mark_verification(args.run_dir, whole)
        print(
            safe_line(
                f"{args.run_dir}: {mark['status']} on {mark['simulator']} {mark['simulator_version']}"
            ),
            file=sys.stderr,
        )
    return 0 if whole.agrees else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns the exit status, never raises for bad input, a full disk
    or a signal. SIGINT and SIGTERM are noted while this runs and end the replay at the
    next safe point (:mod:`~habitat_mosnav.evaluation.interrupts`): 130 / 143."""
    return run_command(PROG, lambda ctx: _run(argv, ctx))


if __name__ == "__main__":
    sys.exit(main())
