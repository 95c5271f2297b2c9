"""The range of every integer and float flag of the command-line tools (issue 39, item 5).

One home for them: ``mosnav-eval``, ``mosnav-replay``, ``mosnav-report``,
``mosnav-aggregate``, ``mosnav-build`` and ``mosnav-make-scenes`` call :func:`bound_numbers` on their parser, which
gives each numeric flag its range's parser and states the range in ``--help``. A number
outside it (``--seed 10**30``, ``--max-steps 10**20``, ``--space-coverage-samples 10**12``,
``inf``, ``nan``) is refused in one line, exit 2, before any work starts: never an hour of
episodes and then a ``run.json`` that cannot be read back, nor a MemoryError per episode.
The image sizes are the dataset schema's (what renders).
"""

from __future__ import annotations

import argparse
import math
import sys
import types
from typing import Callable, Dict, Tuple, Union

from habitat_mosnav.schemas import MAX_IMAGE_SIDE, MIN_IMAGE_SIDE

__all__ = ["RANGES", "bound_numbers", "number_parser", "one_line_errors", "range_text"]

Number = Union[int, float]


#: ``flag -> (kind, low, high, low_open)``: ``int`` flags take ``low..high`` inclusive;
#: ``float`` flags ``[low, high]`` (``(low, high]`` when ``low_open``). The bounds are
#: generous for real use and far from where memory, JSON's 19-digit integers or numpy's
#: 32-bit seeds break.
RANGES: Dict[str, Tuple[type, Number, Number, bool]] = {
    # seeds: numpy's RandomState takes 0..2**32-1
    "--seed": (int, 0, 2**32 - 1, False),
    # selection and sharding (an episode count, an offset into it)
    "--num-episodes": (int, -1, 10**7, False),
    "--offset": (int, 0, 10**7, False),
    "--limit": (int, 0, 10**6, False),
    "--episode-limit": (int, 0, 10**7, False),
    "--expected-count": (int, 0, 10**7, False),
    "--rank": (int, 0, 4095, False),
    "--world-size": (int, 1, 4096, False),
    "--rank-timeout": (float, 0.0, 7 * 86400.0, False),
    # the task
    "--max-steps": (int, 1, 100_000, False),
    "--space-coverage-samples": (int, 0, 100_000, False),
    "--space-coverage-radius": (float, 0.0, 100.0, True),
    "--success-distance": (float, 0.0, 100.0, True),
    # running
    "--step-timeout": (float, 0.0, 86400.0, True),
    "--max-unavailable-episodes": (int, 0, 10**6, False),
    # mosnav-report
    "--bootstrap": (int, 1, 1_000_000, False),
    # mosnav-build: objects, view points, queries, episodes (metres, pixels, counts)
    "--min-size": (float, 0.0, 100.0, False),
    "--max-size": (float, 0.0, 1000.0, True),
    "--view-radius": (float, 0.0, 100.0, True),
    "--view-spacing": (float, 0.01, 10.0, False),
    "--min-pixels": (int, 1, MAX_IMAGE_SIDE * MAX_IMAGE_SIDE, False),
    "--max-view-points": (int, 1, 100_000, False),
    "--views": (int, 1, 64, False),
    "--rpm": (float, 0.0, 1e6, True),
    "--max-retries": (int, 0, 100, False),
    "--backoff": (float, 0.0, 3600.0, False),
    "--timeout": (float, 0.0, 86400.0, True),
    "--max-queries": (int, 1, 10**6, False),
    "--episodes-per-query": (int, 1, 10_000, False),
    "--max-per-group": (int, 1, 10**6, False),
    "--min-start-distance": (float, 0.0, 1000.0, False),
    "--min-distance": (float, 0.0, 1000.0, False),
    "--max-distance": (float, 0.0, 10_000.0, True),
    "--max-targets": (int, 1, 1000, False),
    "--object-ids": (int, 0, 2**31 - 1, False),
    "--image-size": (int, MIN_IMAGE_SIDE, MAX_IMAGE_SIDE, False),
    # mosnav-make-scenes: the batch, the apartments, the scan-like mesh (metres, boxes)
    "--num-scenes": (int, 0, 100_000, False),
    "--start-index": (int, 0, 10**7, False),
    "--rooms": (int, 4, 120, False),
    "--floors": (int, 1, 8, False),
    "--scan-edge": (float, 0.0, 100.0, False),
    "--jitter": (float, 0.0, 1.0, False),
    "--clutter": (int, 0, 100_000, False),
}


def range_text(flag: str) -> str:
    kind, low, high, low_open = RANGES[flag]
    if kind is int:
        return f"an integer in {low}..{high}"
    return f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"


def number_parser(flag: str) -> Callable[[str], Number]:
    """The argparse ``type`` of ``flag``: its kind, inside its range, else an
    ArgumentTypeError saying the range (argparse prefixes ``argument FLAG:``)."""
    kind, low, high, low_open = RANGES[flag]

    def parse(text: str) -> Number:
        shown = text if len(text) <= 40 else text[:37] + "..."
        try:
            value = kind(text)
        except (TypeError, ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"must be {range_text(flag)}, got {shown!r}") from None
        inside = (
            low <= value <= high
            if kind is int
            else math.isfinite(value)
            and (low < value if low_open else low <= value)
            and value <= high
        )
        if not inside:
            raise argparse.ArgumentTypeError(f"must be {range_text(flag)}, got {shown}")
        return value

    parse.__name__ = f"ranged{flag.replace('-', '_')}"  # argparse names it in messages
    parse.flag_range = flag  # type: ignore[attr-defined]
    return parse


def bound_numbers(parser: argparse.ArgumentParser, strict: bool = True) -> argparse.ArgumentParser:
    """Give every numeric flag of ``parser`` (and of its sub-commands) the parser of its
    range and state the range in its help. ``strict``: a numeric flag with no range is a
    programming error (each flag of the package's tools must have one)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                bound_numbers(sub, strict)
            continue
        if not action.option_strings or action.type not in (int, float):
            continue  # a flag with its own checker (a choice, a path, a custom range) keeps it
        flag = next((s for s in action.option_strings if s in RANGES), None)
        if flag is None:
            if strict:
                raise ValueError(f"{parser.prog}: {action.option_strings[0]} has no range")
            continue
        action.type = number_parser(flag)
        if action.help is not argparse.SUPPRESS:
            action.help = f"{action.help or ''} [{range_text(flag)}]".lstrip()
    return parser


def one_line_errors(parser: argparse.ArgumentParser, prog: str) -> argparse.ArgumentParser:
    """A bad flag of ``parser`` (and its sub-commands) is one line on stderr, exit 2
    (argparse's default prints the whole usage first)."""

    def error(self, message):
        print(f"{prog}: error: {message} (see {prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    parser.error = types.MethodType(error, parser)  # type: ignore[method-assign]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                one_line_errors(sub, prog)
    return parser
