"""``python -m habitat_mosnav.evaluation.report``: the same as ``mosnav-report``."""

import sys

from habitat_mosnav.evaluation.report.cli import main

sys.exit(main())
