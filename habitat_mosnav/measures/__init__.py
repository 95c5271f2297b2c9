"""Measures of MultiObjectNav-v1 (importing registers them)."""
from habitat_mosnav.measures import measures  # noqa: F401
