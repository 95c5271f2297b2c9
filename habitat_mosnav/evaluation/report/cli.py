"""``mosnav-report RUN [RUN ...] --out DIR``: compare evaluation runs on one page.

Writes ``DIR/index.html`` (one self-contained page: plots embedded as PNG data URIs, the
episode maps beside it in ``DIR/maps/<run>/``), ``DIR/leaderboard.md`` and
``DIR/leaderboard.csv`` (one row per run, named by its directory), and
``DIR/leaderboard_by_goal_type.csv`` (one row per run and goal type: summary.json's
``by_goal_type``, also a table of the page and of leaderboard.md); when a run has
``sequential`` episodes, ``DIR/leaderboard_goat.csv`` (GOAT-Bench's aggregates, SPEC §11,
also a table of the page and of leaderboard.md).

A row's point values are the run's ``summary.json`` metrics (SPEC §5), never recomputed
differently; the 95 % intervals of ``sr``, ``f1`` and ``spl_multi`` are percentile
bootstrap intervals over the run's ok episodes (``scipy.stats.bootstrap``, ``--bootstrap``
resamples with a fixed ``--seed``): each resample draws as many episodes as the run has,
with replacement, and takes the SPEC §5 mean (finite values only). A run whose summary is not ``complete``
(error records, missing episodes, a rank not finished), whose ``summary.json`` is missing
or disagrees with its records, is marked in the ``notes`` column and on the page; its
numbers are those of its ok episodes and are never merged with other runs'. Whether a run
is an official complete run of a benchmark setting comes from ``summary.json``'s
``benchmark`` field; its agent and config from ``run.json`` when the run has one. A run
with ``RUN/diagnosis.json`` (``mosnav-replay --diagnose``) gets a "why episodes fail" chart
under the board (:func:`.plots._why_fail_plot`) and its episodes' labels in the episode table.

Exit status: 0 written; 2 bad input (one line naming the file, record and field); 3 the
report cannot be written (full disk); 130 / 143 SIGINT / SIGTERM. The report is built
beside ``DIR`` and swapped in whole, so a failure or a signal leaves the previous one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Dict, List, Optional, Sequence


from habitat_mosnav.evaluation.durable import ResultFileError, ResultWriteError
from habitat_mosnav.evaluation.maps import (
    add_map_source_arguments,
    episode_file_stem,
    map_source_options,
)
from habitat_mosnav.safety import (
    PlantedLinkError,
    make_dirs,
    open_file,
    refuse_link,
    replacing,
    replacing_dir,
    safe_line,
)
from habitat_mosnav.flag_ranges import bound_numbers, one_line_errors
from habitat_mosnav.versions import add_version_argument
from habitat_mosnav.evaluation.report.data import (
    ReportError,
    RunData,
    episode_sets,
    load_run,
    unique_names,
)
from habitat_mosnav.evaluation.report.leaderboard import (
    goat_runs,
    markdown_table,
    terminal_table,
    write_csv,
    write_goal_type_csv,
    write_goat_csv,
)
from habitat_mosnav.evaluation.report.page import render_html
from habitat_mosnav.evaluation.report.plots import make_plots, plot_data, run_colors


PROG = "mosnav-report"


def _collect(run: RunData, out_dir: str, kind: str, extensions: Sequence[str]) -> Dict[str, str]:
    """Copy the run's ``<kind>/<episode>.<ext>`` beside the page (``<kind>/<run>/``);
    key -> path relative to the page."""
    src = os.path.join(run.path, kind)
    found: Dict[str, str] = {}
    if not os.path.isdir(src):
        return found
    dst = os.path.join(out_dir, kind, run.name)
    for rec in run.records:
        for ext in extensions:
            name = episode_file_stem(rec["episode_key"]) + ext
            if os.path.isfile(os.path.join(src, name)):
                make_dirs(os.path.join(out_dir, kind))
                with replacing(os.path.join(make_dirs(dst), name), suffix=ext) as tmp:
                    shutil.copyfile(os.path.join(src, name), tmp)  # never through a planted link
                found[rec["episode_key"]] = f"{kind}/{run.name}/{name}"
                break
    return found


def collect_maps(run: RunData, out_dir: str) -> None:
    """Copy the run's ``maps/<episode>.png`` beside the page (``maps/<run>/``)."""
    run.maps.update(_collect(run, out_dir, "maps", (".png",)))


def collect_videos(run: RunData, out_dir: str) -> None:
    """Copy the run's ``videos/<episode>.mp4|gif`` beside the page (``videos/<run>/``)."""
    run.videos.update(_collect(run, out_dir, "videos", (".mp4", ".gif")))


#: What a report directory holds (a directory with anything else is never replaced).
REPORT_ENTRIES = frozenset(
    {
        "index.html",
        "leaderboard.md",
        "leaderboard.csv",
        "leaderboard_by_goal_type.csv",
        "leaderboard_goat.csv",
        "plots.json",
        "maps",
        "videos",
    }
)


def _check_replaceable(out_dir: str) -> None:
    """``out_dir`` may be replaced by the new report: absent, empty or a previous report
    (:class:`ReportError` otherwise); a link planted in it is refused
    (:class:`~habitat_mosnav.safety.PlantedLinkError`: the tool never made one)."""
    refuse_link(out_dir)
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise ReportError(f"--out {out_dir}: not a directory")
    if not os.path.isdir(out_dir):
        return
    other = sorted(set(os.listdir(out_dir)) - REPORT_ENTRIES)
    if other:
        raise ReportError(
            f"--out {out_dir}: holds {other[0]!r}"
            + (f" and {len(other) - 1} more" if len(other) > 1 else "")
            + ", which is not part of a mosnav-report; the report replaces its "
            "directory as a whole: choose a new or empty directory"
        )
    for directory, dirs, files in os.walk(out_dir):  # never follows a link
        for name in dirs + files:
            refuse_link(os.path.join(directory, name))


def write_report(
    run_dirs: Sequence[str],
    out_dir: str,
    *,
    resamples: int = 2000,
    seed: int = 0,
    draw_maps: bool = False,
    config: Optional[str] = None,
    overrides: Sequence[str] = (),
    progress: bool = True,
) -> List[RunData]:
    """Read the runs, write index.html, leaderboard.md, leaderboard.csv,
    leaderboard_by_goal_type.csv (and leaderboard_goat.csv when a run has sequential
    episodes) into ``out_dir``.

    The report is built in a new directory beside ``out_dir`` and swapped in whole
    (:func:`~habitat_mosnav.safety.replacing_dir`): a full disk or a signal leaves the
    previous report as it was. ``out_dir`` must be absent, empty or a previous report."""

    from habitat_mosnav.safety import inside, output_root

    for run_dir in run_dirs:  # the report replaces its directory: never a run's, nor in one
        if inside(out_dir, run_dir) or inside(run_dir, out_dir):
            raise ReportError(
                f"--out {out_dir}: is, holds or lies inside the run directory {run_dir} it "
                "reads: choose a directory outside the runs"
            )
    with output_root(out_dir):
        return _write_report(
            run_dirs, out_dir, resamples, seed, draw_maps, config, overrides, progress
        )


def _write_report(run_dirs, out_dir, resamples, seed, draw_maps, config, overrides, progress):
    from tqdm import tqdm

    from habitat_mosnav.evaluation import interrupts

    _check_replaceable(out_dir)
    runs = []
    names = unique_names(run_dirs)
    for path, name in tqdm(
        list(zip(run_dirs, names)), desc=PROG, unit="run", disable=not progress, file=sys.stderr
    ):
        runs.append(load_run(path, name, resamples=resamples, seed=seed))
    if draw_maps:
        from habitat_mosnav.evaluation.maps import render_run_maps

        for run in runs:
            render_run_maps(run.path, config=config, overrides=overrides, progress=progress)
    try:
        with replacing_dir(out_dir) as stage:
            with interrupts.interruptible():  # a signal ends the building at once
                _write_pages(runs, stage, resamples, seed)
    except (PlantedLinkError, ResultWriteError):
        raise
    except OSError as exc:
        raise ResultWriteError(
            f"cannot write the report {out_dir}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else "")
            + "; the previous report is kept",
            exc.errno,
        ) from None
    return runs


def _write_pages(runs: Sequence[RunData], out_dir: str, resamples: int, seed: int) -> None:
    for run in runs:
        collect_maps(run, out_dir)
        collect_videos(run, out_dir)
    write_csv(os.path.join(out_dir, "leaderboard.csv"), runs)
    write_goal_type_csv(os.path.join(out_dir, "leaderboard_by_goal_type.csv"), runs)
    if goat_runs(runs):  # GOAT-Bench's table: only for runs with sequential episodes
        write_goat_csv(os.path.join(out_dir, "leaderboard_goat.csv"), runs)
    with open_file(os.path.join(out_dir, "leaderboard.md"), "w") as f:
        f.write(markdown_table(runs))
    colors = run_colors(runs)
    plots = make_plots(runs, colors)
    with open_file(os.path.join(out_dir, "plots.json"), "w") as f:
        json.dump(plot_data(runs, plots, colors), f, indent=1, sort_keys=True)
    page = render_html(runs, plots, colors=colors, out_dir=out_dir, resamples=resamples, seed=seed)
    with open_file(os.path.join(out_dir, "index.html"), "w") as f:
        f.write(page)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog=PROG,
        description=(
            "Compare mosnav-eval runs: DIR/index.html (plots, leaderboard, sortable episode table "
            "linking each episode's map), DIR/leaderboard.md, DIR/leaderboard.csv, "
            "DIR/leaderboard_by_goal_type.csv and, when a run has sequential (GOAT-Bench) "
            "episodes, DIR/leaderboard_goat.csv."
        ),
    )
    add_version_argument(p)
    p.add_argument("runs", nargs="+", metavar="RUN", help="mosnav-eval output directories")
    p.add_argument("--out", required=True, metavar="DIR", help="where the report goes")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap resamples of the 95 %% intervals (default: 2000)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.add_argument(
        "--maps",
        action="store_true",
        help="draw every episode's top-down map into RUN/maps first (loads the scenes; "
        "runs made with --save-maps already have them)",
    )
    add_map_source_arguments(p, when="with --maps: ")
    return one_line_errors(bound_numbers(p), PROG)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Exit status: 0 written; 2 bad input; 3 the report cannot be written (a full disk:
    the previous report is kept); 130 / 143 SIGINT / SIGTERM (one line, the previous
    report kept)."""
    import signal

    from habitat_mosnav.evaluation import interrupts

    args = build_parser().parse_args(argv)
    if args.bootstrap < 1:
        print(f"{PROG}: error: --bootstrap must be >= 1, got {args.bootstrap}", file=sys.stderr)
        return 2
    try:
        with interrupts.guarded((signal.SIGINT, signal.SIGTERM)):
            with interrupts.interruptible():  # reading runs and plotting: stop at once
                return _report(args)
    except KeyboardInterrupt as exc:
        name, code = ("SIGTERM", 143) if isinstance(exc, interrupts.Terminated) else ("SIGINT", 130)
        print(
            safe_line(
                f"{PROG}: interrupted by {name}; {args.out} is as it was before (the report "
                "is swapped in whole when it is complete); run the command again"
            ),
            file=sys.stderr,
        )
        return code


def _report(args) -> int:
    try:
        runs = write_report(
            args.runs,
            args.out,
            resamples=args.bootstrap,
            seed=args.seed,
            draw_maps=args.maps,
            **map_source_options(args),
        )
    except (PlantedLinkError, ResultWriteError) as exc:
        print(
            safe_line(
                f"{PROG}: error: cannot write {exc.filename}: {exc.strerror}"
                if isinstance(exc, PlantedLinkError)
                else f"{PROG}: error: {exc}"
            ),
            file=sys.stderr,
        )
        return 3
    except (ReportError, ResultFileError, ValueError, OSError) as exc:
        print(safe_line(f"{PROG}: error: {' '.join(str(exc).split())}"), file=sys.stderr)
        return 2
    # one line per run within 120 columns; every column is in leaderboard.md
    print(terminal_table(runs), end="")
    sets = episode_sets(runs)
    if sets.differ:
        print(
            safe_line(
                f"{PROG}: warning: the runs cover different episode sets ("
                + ", ".join(f"{name} {len(keys)}" for name, keys in sets.keys.items())
                + f"; {len(sets.common)} common): index.html compares them on the common "
                "episodes"
            ),
            file=sys.stderr,
        )
    print(
        safe_line(
            f"wrote {os.path.join(args.out, 'index.html')}, leaderboard.md (every column), "
            "leaderboard.csv, leaderboard_by_goal_type.csv"
        )
    )
    return 0
