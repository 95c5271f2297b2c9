"""Measures of MultiObjectNav-v1 (importing registers them)."""

import habitat  # noqa: F401,I001  (first: importing habitat registers the plugin)
from habitat_mosnav.measures import measures  # noqa: F401
