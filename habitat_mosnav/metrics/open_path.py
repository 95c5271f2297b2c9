"""Exact shortest *open* path from a start over k of n points (SPEC §4).

``optimal_subset_distance`` and ``agent_subset_distance`` both need the shortest path that
leaves the start, visits a set of targets once each in any order and ends anywhere. With at
most a dozen or two candidates, Held–Karp dynamic programming over subsets is exact and
fast; the subsets are processed one size ("layer") at a time with numpy so that 12
candidates take milliseconds, and for ``k < n`` only subsets of size ≤ k are ever built.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

# Above this many (subset, last, previous) combinations the exact solver would take seconds
# and gigabytes: refuse with a clear error instead of hanging.
MAX_WORK = 3.0e8
#: The most points the exact solver takes (subsets are bits of an int64 mask).
MAX_POINTS = 62
# Rows of a layer processed at once, to bound the temporary (rows, n, n) array.
_CHUNK_ELEMENTS = 2_000_000


def _as_arrays(start_dist, pair_dist) -> Tuple[np.ndarray, np.ndarray]:
    try:
        start = np.asarray(start_dist, dtype=np.float64)
        pair = np.asarray(pair_dist, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"shortest_open_path: distances must be numeric arrays ({exc})") from None
    if start.ndim != 1:
        raise ValueError(f"shortest_open_path: start_dist must be 1-D, got shape {start.shape}")
    n = start.shape[0]
    if n == 0 and pair.size == 0:
        pair = pair.reshape(0, 0)
    if pair.shape != (n, n):
        raise ValueError(
            f"shortest_open_path: pair_dist must have shape ({n}, {n}) to match start_dist, "
            f"got {pair.shape}"
        )
    if np.isnan(start).any() or np.isnan(pair).any():
        raise ValueError("shortest_open_path: distances contain NaN")
    if (start < 0).any() or (pair < 0).any():
        raise ValueError("shortest_open_path: distances must be >= 0 (inf = unreachable)")
    return start, pair


def _layer_work(n: int, k: int) -> float:
    return float(sum(math.comb(n, s) * n * n for s in range(1, k)))


def solver_refusal(n: int, k: int) -> Optional[str]:
    """Why the exact solver refuses to visit ``k`` of ``n`` points (too many points, or
    more than :data:`MAX_WORK` operations), or None: the one rule, used by
    :func:`shortest_open_path` and by the dataset check (an episode it would refuse at
    every reset is refused when the dataset loads)."""
    if n > MAX_POINTS:
        return f"{n} points is too many for the exact solver (at most {MAX_POINTS})"
    work = _layer_work(n, k)
    if work > MAX_WORK:
        return (
            f"visiting {k} of {n} points exactly needs ~{work:.1e} operations (limit "
            f"{MAX_WORK:.0e}); too many candidate targets"
        )
    return None


def shortest_open_path(
    start_dist: Sequence[float],
    pair_dist,
    k: Optional[int] = None,
    prefix_floor: bool = False,
) -> Tuple[float, List[int]]:
    """Length and visiting order of the shortest open path start → exactly k of n points.

    ``start_dist[i]`` is the distance start→i, ``pair_dist[i][j]`` the distance i→j (may be
    asymmetric; ``inf`` = unreachable; the diagonal is ignored). ``k=None`` visits all n.
    Returns ``(length, order)`` with ``order`` the point indices in visiting order;
    ``(0.0, [])`` for k = 0 and ``(inf, [])`` when no finite path exists.

    ``prefix_floor``: the length up to point j is max(start_dist[j], length up to the
    previous point + pair_dist[i][j]) instead of the plain sum: with lower-bound legs that
    break the triangle inequality (SPEC §4 "Reaching a target"), a path that reaches j has
    also gone at least start_dist[j] from the start. The composition is monotone, so the
    subset DP stays exact.
    """
    start, pair = _as_arrays(start_dist, pair_dist)
    n = start.shape[0]
    if k is None:
        k = n
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"shortest_open_path: k must be an int or None, got {k!r}")
    k = int(k)
    if k < 0 or k > n:
        raise ValueError(f"shortest_open_path: k={k} is outside 0..{n} (number of points)")
    if k == 0:
        return 0.0, []
    refusal = solver_refusal(n, k)
    if refusal is not None:
        raise ValueError(f"shortest_open_path: {refusal}")

    pair = pair.copy()
    np.fill_diagonal(pair, np.inf)  # never "move" from a point to itself
    bits = np.left_shift(np.int64(1), np.arange(n, dtype=np.int64))

    # Layer 1: subsets {i}; cost[row, i] = best length of a path over masks[row] ending at i.
    masks = bits.copy()
    cost = np.full((n, n), np.inf)
    cost[np.arange(n), np.arange(n)] = start
    parents: List[Tuple[np.ndarray, np.ndarray]] = []  # per layer ≥ 2: (prev_row, prev_last)

    for _size in range(2, k + 1):
        m = masks.shape[0]
        best = np.empty((m, n))
        arg = np.empty((m, n), dtype=np.int64)
        step = max(1, _CHUNK_ELEMENTS // (n * n))
        for lo in range(0, m, step):
            ext = cost[lo : lo + step, :, None] + pair[None, :, :]  # (rows, last j, next i)
            if prefix_floor:
                np.maximum(ext, start[None, None, :], out=ext)
            arg[lo : lo + step] = ext.argmin(axis=1)
            best[lo : lo + step] = np.take_along_axis(ext, arg[lo : lo + step, None, :], axis=1)[
                :, 0, :
            ]
        # Extend only by points not yet in the subset.
        free = (masks[:, None] & bits[None, :]) == 0
        rows, nxt = np.nonzero(free)
        new_masks = masks[rows] | bits[nxt]
        uniq, inv = np.unique(new_masks, return_inverse=True)
        new_cost = np.full((uniq.shape[0], n), np.inf)
        prev_row = np.full((uniq.shape[0], n), -1, dtype=np.int64)
        prev_last = np.full((uniq.shape[0], n), -1, dtype=np.int64)
        # For a fixed next point i, (subset ∪ {i}, i) comes from exactly one subset: no clash.
        new_cost[inv, nxt] = best[rows, nxt]
        prev_row[inv, nxt] = rows
        prev_last[inv, nxt] = arg[rows, nxt]
        parents.append((prev_row, prev_last))
        masks, cost = uniq, new_cost

    flat = int(np.argmin(cost))
    row, last = divmod(flat, n)
    length = float(cost[row, last])
    if not math.isfinite(length):
        return math.inf, []
    order = [last]
    for prev_row, prev_last in reversed(parents):
        row, last = int(prev_row[row, last]), int(prev_last[row, last])
        order.append(last)
    order.reverse()
    return length, order
