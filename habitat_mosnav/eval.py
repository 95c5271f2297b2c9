"""``python -m habitat_mosnav.eval``: the same as ``mosnav-eval``; the CLI lives in
:mod:`habitat_mosnav.evaluation.cli`."""

import sys

from habitat_mosnav.evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
