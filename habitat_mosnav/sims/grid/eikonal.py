"""Distance from a level set on a masked grid: scikit-fmm's fast marching, or scipy's Dijkstra.

scikit-fmm has wheels for Python 3.10+ only, and habitat-sim 0.3.3's conda packages are for
Python 3.9: where ``import skfmm`` fails, :func:`travel_time` solves the same problem as a
shortest path over the grid's 16-neighbourhood (the 8 neighbours and the 8 knight moves)
with ``scipy.sparse.csgraph.dijkstra``. In open space its lengths are at most 1.9 % longer
than the straight line (the 16-neighbourhood's worst direction lies 11.25 deg from two of
its steps: 1 / cos(11.25 deg) - 1), against scikit-fmm's own first-order error of a few
per cent near the sources; conda users get scikit-fmm itself with
``conda install -c conda-forge scikit-fmm``.

Used by the frontier agent's planner and by the mesh grid's rare fast-marching fallback
(:mod:`habitat_mosnav.sims.grid.fastmarch`); nothing on habitat-sim's navmesh uses it.
"""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

try:  # pragma: no cover - which branch runs depends on the Python version
    import skfmm as _skfmm
except ImportError:  # pragma: no cover
    _skfmm = None

#: the 16-neighbourhood's offsets (row, column): 8 neighbours and 8 knight moves
_STEPS = [(0, 1), (1, 0), (1, 1), (1, -1), (1, 2), (2, 1), (2, -1), (1, -2)]
_warned = False


def backend() -> str:
    """``"scikit-fmm"`` or ``"dijkstra"``: which solver :func:`travel_time` uses here."""
    return "scikit-fmm" if _skfmm is not None else "dijkstra"


def travel_time(
    phi: np.ma.MaskedArray,
    dx: float,
    speed: Optional[np.ndarray] = None,
    force_dijkstra: bool = False,
) -> np.ma.MaskedArray:
    """Travel time from the zero level set of ``phi`` over its unmasked cells.

    ``phi``: negative inside the sources, positive elsewhere; masked cells are obstacles.
    ``speed``: cell speeds (None: 1 everywhere, i.e. distance). Returns the field as
    scikit-fmm's ``distance`` / ``travel_time`` do outside the sources (positive; masked
    where unreachable or masked). Inside the sources only the cells next to the contour
    are meaningful (callers overwrite the sources). Raises ValueError when ``phi`` has no
    zero crossing (as scikit-fmm does).
    """
    if _skfmm is not None and not force_dijkstra:
        if speed is None:
            return _skfmm.distance(phi, dx=dx, order=2)
        return _skfmm.travel_time(phi, speed, dx=dx, order=2)
    _warn_once()
    return _dijkstra(phi, dx, speed)


def _warn_once() -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "scikit-fmm is not installed (no wheel for this Python): distance fields use "
            "a 16-neighbour Dijkstra (up to 1.9 % longer); conda install -c conda-forge "
            "scikit-fmm for fast marching",
            RuntimeWarning,
            stacklevel=3,
        )


def _dijkstra(phi: np.ma.MaskedArray, dx: float, speed: Optional[np.ndarray]) -> np.ma.MaskedArray:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    values = np.ma.getdata(phi).astype(np.float64)
    free = ~np.ma.getmaskarray(phi)
    inside = free & (values < 0)
    if not inside.any() or not (free & (values >= 0)).any():
        raise ValueError("the level set has no zero contour")
    h, w = values.shape
    ids = np.full(values.shape, -1, dtype=np.int64)
    ids[free] = np.arange(int(free.sum()))
    n = int(free.sum())
    v = np.ones(values.shape) if speed is None else np.asarray(speed, dtype=np.float64)
    src_rows, dst_rows, weights = [], [], []
    for dr, dc in _STEPS:
        r0, r1 = max(0, -dr), h - max(0, dr)
        c0, c1 = max(0, -dc), w - max(0, dc)

        def at(arr, sr=0, sc=0):
            """``arr`` at (r + sr, c + sc) for every move's start (r, c)."""
            return arr[r0 + sr : r1 + sr, c0 + sc : c1 + sc]

        a, b = at(ids), at(ids, dr, dc)
        ok = (a >= 0) & (b >= 0)
        for sr, sc in _cut_cells(dr, dc):  # no corner cutting: the cells the step crosses are free
            ok &= at(free, sr, sc)
        length = dx * float(np.hypot(dr, dc))
        va, vb = at(v)[ok], at(v, dr, dc)[ok]
        wgt = length * 0.5 * (1.0 / np.maximum(va, 1e-9) + 1.0 / np.maximum(vb, 1e-9))
        src_rows.append(a[ok])
        dst_rows.append(b[ok])
        weights.append(wgt)
    # the sources: inside cells next to an outside one, each at its (negative) distance to
    # the zero contour, linearly interpolated between the two cell centres (as fast
    # marching's first-order initialisation does)
    seed = np.full(values.shape, np.inf)
    for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
        nb = np.full(values.shape, np.nan)
        nb[max(0, -dr) : h - max(0, dr), max(0, -dc) : w - max(0, dc)] = np.where(
            free, values, np.nan
        )[max(0, dr) : h + min(0, dr) or None, max(0, dc) : w + min(0, dc) or None]
        cross = inside & (nb >= 0)
        frac = np.where(cross, values / np.where(cross, values - nb, -1.0), np.inf)
        np.minimum(seed, frac * dx, out=seed)
    boundary = np.isfinite(seed)
    start = -seed[boundary] / np.maximum(v[boundary], 1e-9)
    shift = float(start.min())
    src_rows.append(np.full(int(boundary.sum()), n, dtype=np.int64))
    dst_rows.append(ids[boundary])
    weights.append(start - shift + 1e-12)  # csgraph drops explicit zero weights
    rows = np.concatenate(src_rows)
    cols = np.concatenate(dst_rows)
    wts = np.concatenate(weights)
    graph = coo_matrix((wts, (rows, cols)), shape=(n + 1, n + 1)).tocsr()
    dist = dijkstra(graph, directed=False, indices=n) + shift - 1e-12
    out = np.full(values.shape, np.inf)
    out[free] = dist[:n]
    out[inside] = np.inf  # sources: their contour cells keep their start value, deeper ones masked
    out[boundary] = start
    return np.ma.MaskedArray(out, mask=~free | ~np.isfinite(out))


def _cut_cells(dr: int, dc: int):
    """Offsets of the cells a step (dr, dc) passes through besides its two ends."""
    if max(abs(dr), abs(dc)) == 1:
        return [(dr, 0), (0, dc)] if dr and dc else []
    if abs(dr) == 2:  # (2, +-1): through (sign dr, 0) and (dr - sign dr, dc)
        s = int(np.sign(dr))
        return [(s, 0), (dr - s, dc)]
    s = int(np.sign(dc))
    return [(0, s), (dr, dc - s)]
