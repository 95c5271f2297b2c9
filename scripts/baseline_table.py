#!/usr/bin/env python3
"""The baseline table of ``make baselines``: one Markdown row per run directory.

    python scripts/baseline_table.py baselines_output --out baselines_output/baselines.md

Each first-level folder of the output directory is one agent; its newest ``summary.json``
(searched recursively, so habitat-baselines' ``eval/ckpt.N/summary.json`` counts too) gives
the row. Rows keep the order of ``--order`` (then the rest, sorted). A run without a summary
is a one-line error naming the folder. Until ``mosnav-report`` lands this is the table
writer; it reads only the SPEC §8 summary format.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from typing import Dict, List, Optional, Sequence

#: (column title, summary.metrics key)
COLUMNS = (
    ("SR", "sr"), ("SR MOS", "sr_mos"), ("SR MOC", "sr_moc"), ("F1", "f1"),
    ("SPL-multi", "spl_multi"), ("precision", "precision"), ("recall", "recall"),
    ("FTR", "ftr"), ("coverage", "coverage"),
)

#: What each baseline may read beyond the Observation (shown in the table).
PRIVILEGES = {
    "random": "none",
    "frontier_gt": "GT semantic detector (semantic camera + goal instance ids)",
    "ppo": "none (learned; trained on the train episodes)",
    "oracle": "everything (targets, geodesics, navmesh paths)",
}


class TableError(Exception):
    pass


def newest_summary(run_dir: str) -> str:
    found = glob.glob(os.path.join(run_dir, "**", "summary.json"), recursive=True)
    if not found:
        raise TableError(f"{run_dir}: no summary.json (did the run finish?)")
    return max(found, key=lambda p: (os.path.getmtime(p), p))


def read_summary(path: str) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise TableError(f"{path}: cannot read the summary ({type(exc).__name__}: {exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise TableError(f"{path}: field 'metrics' missing or not an object")
    return doc


def _fmt(value) -> str:
    if value is None:
        return "–"
    return f"{float(value):.3f}"


def table(out_dir: str, order: Sequence[str] = ()) -> str:
    names = sorted(d for d in os.listdir(out_dir) if os.path.isdir(os.path.join(out_dir, d)))
    if not names:
        raise TableError(f"{out_dir}: no run folders")
    names = [n for n in order if n in names] + [n for n in names if n not in order]
    head = ["agent", "privileges", "episodes (ok/error)"] + [c for c, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        doc = read_summary(newest_summary(os.path.join(out_dir, name)))
        m = doc["metrics"]
        row = [name, PRIVILEGES.get(name, "?"),
               f"{doc.get('ok_episode_count', 0)}/{doc.get('error_episode_count', 0)}"]
        row += [_fmt(m.get(key)) for _, key in COLUMNS]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--out", help="write the table here too")
    p.add_argument("--order", default="random,ppo,frontier_gt,oracle",
                   help="comma list: row order (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        text = table(args.out_dir, [s for s in args.order.split(",") if s])
    except TableError as exc:
        print(f"baseline_table: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
