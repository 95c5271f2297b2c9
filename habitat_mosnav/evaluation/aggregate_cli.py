"""``mosnav-aggregate <out> [--fail-on-episode-error]``: merge the ranks of a run.

Reads every ``rank_XXXXX`` directory of ``<out>``, writes ``<out>/summary.json`` (keeping the
``mosnav-replay --verify`` mark of the one it replaces) and prints the metrics table. Exit codes: 0 done; 1 with ``--fail-on-episode-error`` when an episode
failed or the run is incomplete; 2 a missing or invalid output directory or record (one
line naming file:line, e.g. a metric given as the string "0.5" or as true); 3 summary.json
cannot be written.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from habitat_mosnav.flag_ranges import bound_numbers, one_line_errors
from habitat_mosnav.safety import safe_line
from habitat_mosnav.evaluation.durable import ResultFileError, ResultWriteError, read_json_object
from habitat_mosnav.evaluation.summary import (
    SUMMARY_FILE,
    format_summary,
    summarize,
    write_summary,
)
from habitat_mosnav.evaluation.verification import VERIFICATION_FIELD
from habitat_mosnav.versions import add_version_argument


PROG = "mosnav-aggregate"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mosnav-aggregate",
        allow_abbrev=False,
        description="Aggregate the per-rank results of a mosnav-eval run into summary.json.",
    )
    add_version_argument(p)
    p.add_argument("output_dir", help="the --output-dir of the mosnav-eval run(s)")
    p.add_argument(
        "--fail-on-episode-error",
        action="store_true",
        help="exit with status 1 if any episode record has status 'error' or the run is incomplete",
    )
    p.add_argument(
        "--expected-count",
        type=int,
        default=None,
        help="number of episodes the run should hold (default: from the ranks' done.json)",
    )
    return one_line_errors(bound_numbers(p), PROG)


def _verify_mark(output_dir: str):
    """The ``mosnav-replay --verify`` mark of the summary.json about to be rewritten, or
    None (none, or a summary.json that cannot be read: it is replaced anyway)."""
    path = os.path.join(output_dir, SUMMARY_FILE)
    if not os.path.isfile(path):
        return None
    try:
        return read_json_object(path).get(VERIFICATION_FIELD)
    except (ResultFileError, OSError, ValueError):
        return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        mark = _verify_mark(args.output_dir)
        summary = summarize(args.output_dir, expected_episode_count=args.expected_count)
        if mark is not None:
            # kept as mosnav-replay --verify wrote it: its records_sha256 ties it to the
            # records, so every reader shows it stale once they change (verification.py)
            summary[VERIFICATION_FIELD] = mark
        from habitat_mosnav.safety import output_root

        with output_root(args.output_dir):  # summary.json never through a planted link
            path = write_summary(args.output_dir, summary)
    except ResultWriteError as exc:
        print(safe_line(f"{PROG}: error: {exc}"), file=sys.stderr)
        return 3
    except (ResultFileError, OSError) as exc:
        print(safe_line(f"{PROG}: error: {exc}"), file=sys.stderr)
        return 2
    print(format_summary(summary))
    print(safe_line(f"wrote {path}"))
    for warning in summary.get("warnings", ()):
        print(safe_line(f"{PROG}: warning: {warning}"), file=sys.stderr)
    if summary["status"] == "incomplete":
        print(
            f"{PROG}: warning: the run is incomplete (a rank has not finished or "
            "records are missing)",
            file=sys.stderr,
        )
    if args.fail_on_episode_error and summary["error_episode_count"]:
        print(f"{PROG}: {summary['error_episode_count']} episode(s) failed", file=sys.stderr)
        return 1
    if args.fail_on_episode_error and summary["status"] == "incomplete":
        return 1  # episodes without a record count as not passed
    return 0


if __name__ == "__main__":
    sys.exit(main())
