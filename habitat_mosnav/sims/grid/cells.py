"""The grid's vocabulary: the agent's shape, a 2D layer of cells, a snapped location.

The mesh is sampled into a 2.5D grid of ``cell`` metres (:mod:`.surface`); each layer is a
2D slab of it holding at most one floor height per cell, cropped to its bounding box.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

INF = float("inf")
#: slack on max_climb so that a riser of exactly max_climb (float rounding) is climbable
CLIMB_EPS = 0.01
#: geometry within this of the agent's head height (a table top at exactly that height)
#: does not block it
HEAD_EPS = 1e-3


def run_offsets(counts: np.ndarray) -> np.ndarray:
    """For ``np.repeat(x, counts)``: each element's place in its run (0 .. count - 1), the
    index arithmetic of every vectorised "k items per row" expansion in the grid."""
    counts = np.asarray(counts, np.int64)
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


@dataclass
class AgentShape:
    height: float = 1.5
    radius: float = 0.1
    max_climb: float = 0.2
    max_slope: float = 45.0

    def key(self) -> tuple:
        return (
            round(self.height, 4),
            round(self.radius, 4),
            round(self.max_climb, 4),
            round(self.max_slope, 3),
        )


@dataclass
class Layer:
    """One 2D slab of nodes (cropped to its bounding box at grid offset ``r0, c0``)."""

    r0: int
    c0: int
    height: np.ndarray  # (h, w) float32, nan where no node
    nav: np.ndarray  # (h, w) bool, navigable after erosion
    patch: np.ndarray  # (h, w) int32 global patch id, -1 if not navigable
    clear: np.ndarray  # (h, w) float32 metres to the nearest non-navigable cell
    near_r: np.ndarray  # (h, w) int32 row of the nearest navigable cell (layer-local)
    near_c: np.ndarray
    # (h, w) float32 signed clearance of the cell centre: metres to the nearest obstacle
    # (> 0 on the floor, < 0 off it), capped at radius + SDF_CAP
    sdf: Optional[np.ndarray] = None


@dataclass
class Location:
    """A point snapped onto the grid: its layer, patch (2D connected region of one layer)
    and island (patches joined through seams, e.g. two floors and their stairs)."""

    layer: int
    patch: int
    island: int
    x: float
    z: float
    y: float

    def xyz(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z], dtype=np.float32)
