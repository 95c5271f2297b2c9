"""Rewrite the files derived from the metric registry (habitat_mosnav/metrics/measure_table.py):
the task YAML's measurement list, docs/METRICS.md and docs/EVALUATION.md's measures row.

    python scripts/metric_files.py            # list the files that differ (exit 1 if any)
    python scripts/metric_files.py --write    # rewrite them

tests/test_measure_table.py fails while one of them differs.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from habitat_mosnav.metrics.measure_table import derived_files  # noqa: E402


def main(argv):
    write = "--write" in argv
    stale = [(rel, new) for rel, (now, new) in derived_files(ROOT).items() if now != new]
    for rel, new in stale:
        if write:
            with open(os.path.join(ROOT, rel), "w", encoding="utf-8") as f:
                f.write(new)
            print(f"wrote {rel}")
        else:
            print(f"{rel} differs from the registry (--write rewrites it)")
    return 1 if stale and not write else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
