"""``mosnav-report``: compare evaluation runs on one page (:mod:`.cli`, the command; its
``main`` is the console script's entry point).

Split by concept: :mod:`.data` (reading the runs, the columns from the metric registry,
bootstrap intervals), :mod:`.leaderboard` (CSV and Markdown tables), :mod:`.plots`
(matplotlib), :mod:`.page` (the HTML; its CSS and script are the package files
``static/report.css`` and ``static/report.js``).
"""

from habitat_mosnav.evaluation.report.cli import main

__all__ = ["main"]
