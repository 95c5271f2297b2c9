"""Legs of SPEC §4 "Reaching a target": lower bounds of the path between claim regions.

With d = success distance and g_j(x) = geodesic distance from x to the nearest view point
of target j, a claim of j succeeds in R_j = {x : g_j(x) ≤ d}. Then

    start → j:  s_j  = max(0, g_j(start) − d)
    i → j:      c_ij = max(0, min over view points u of i of g_j(u) − 2d)

are lower bounds of any path that leaves the start (or R_i) and enters R_j: a path from x
in R_i to R_j starts within d of a view point u of i and ends within d of a view point of
j, so it is at least g_j(u) − 2d long. The legs do not obey the triangle inequality (a
path from R_i to R_j may be far longer than c_ij when the view points of i spread around
a large object), so along an order the bound of the part of a path up to entering R_j is

    L_j = max(s_j, L_i + c_ij)      (L_first = s_first)

(any path that reaches R_j has also gone at least s_j from the start). ``l`` and ``a`` are
the minimum of L_last over the subsets and orders, computed exactly by the subset DP of
:func:`subset_lower_bound`; they are lower bounds of every path that claims those targets.

Geodesics are symmetric, so min_u g_j(u) = min over view point pairs (u of i, v of j) of
geo(u, v) = min_v g_i(v): each unordered pair is computed once, from the target with fewer
view points (one multi-goal query ``geodesic(u, view points of the other)`` per point).
Nothing here touches a simulator: the caller passes its geodesic function.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Hashable, List, MutableMapping, Optional, Sequence, Tuple

import numpy as np

from habitat_mosnav.metrics.open_path import shortest_open_path

#: Default claim radius (m): a target is near when the geodesic distance to its nearest
#: view point is ≤ this (GOAT-Bench's Habitat setting; habitat's ObjectNav uses 0.1 m).
SUCCESS_DISTANCE = 0.25

#: geodesic(point, points) -> distance from point to the nearest of points (inf if none).
Geodesic = Callable[[Sequence[float], List[List[float]]], float]


def start_legs(start_geodesics: Sequence[float], success_distance: float) -> np.ndarray:
    """s_j = max(0, g_j(start) − d) (inf stays inf)."""
    g = np.asarray(start_geodesics, dtype=np.float64)
    return np.maximum(0.0, g - float(success_distance))


def pair_legs(min_pair_geodesics, success_distance: float) -> np.ndarray:
    """c_ij = max(0, min_u g_j(u) − 2d), diagonal 0 (inf stays inf)."""
    m = np.asarray(min_pair_geodesics, dtype=np.float64)
    out = np.maximum(0.0, m - 2.0 * float(success_distance))
    if out.size:
        np.fill_diagonal(out, 0.0)
    return out


def _points_key(points: np.ndarray) -> bytes:
    return np.round(np.asarray(points, dtype=np.float64), 3).tobytes()


def min_pair_geodesic(geodesic: Geodesic, points_i: Sequence, points_j: Sequence) -> float:
    """min over u in points_i, v in points_j of geo(u, v), as one multi-goal query per point
    of the smaller set. inf when the sets do not reach each other."""
    a = np.asarray(points_i, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(points_j, dtype=np.float64).reshape(-1, 3)
    if len(a) > len(b):
        a, b = b, a
    goals = [list(map(float, p)) for p in b]
    best = math.inf
    for u in a:
        d = float(geodesic([float(v) for v in u], goals))
        if d < best:
            best = d
    return best


def start_geodesics(
    geodesic: Geodesic, start: Sequence[float], view_points: Sequence[Sequence]
) -> np.ndarray:
    """g_j(start) for each target: one multi-goal query per target."""
    a = [float(x) for x in start]
    return np.array(
        [
            float(geodesic(a, np.asarray(v, dtype=np.float64).reshape(-1, 3).tolist()))
            for v in view_points
        ],
        dtype=np.float64,
    ).reshape(len(view_points))


def pair_geodesics(
    geodesic: Geodesic,
    view_points: Sequence[Sequence],
    cache: Optional[MutableMapping[Hashable, float]] = None,
    cache_scope: Hashable = None,
) -> np.ndarray:
    """Symmetric matrix of min_u g_j(u) (diagonal 0) for the targets whose view point lists
    are ``view_points``.

    ``cache`` (any mutable mapping; keys are ``cache_scope`` plus both point sets) keeps
    the values across episodes of one scene: a pair depends only on the two targets' view
    points and the scene. Queries per pair not yet cached: min(|VP_i|, |VP_j|).
    """
    pts = [np.asarray(v, dtype=np.float64).reshape(-1, 3) for v in view_points]
    n = len(pts)
    pair = np.zeros((n, n), dtype=np.float64)
    keys = [_points_key(v) for v in pts] if cache is not None else None
    for i in range(n):
        for j in range(i + 1, n):
            d = None
            if cache is not None:
                key = (cache_scope,) + tuple(sorted((keys[i], keys[j])))
                d = cache.get(key)
            if d is None:
                d = min_pair_geodesic(geodesic, pts[i], pts[j])
                if cache is not None:
                    cache[key] = d
            pair[i, j] = pair[j, i] = d
    return pair


def leg_geodesics(
    geodesic: Geodesic,
    start: Sequence[float],
    view_points: Sequence[Sequence],
    cache: Optional[MutableMapping[Hashable, float]] = None,
    cache_scope: Hashable = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """(:func:`start_geodesics`, :func:`pair_geodesics`): n queries for the start plus
    min(|VP_i|, |VP_j|) per pair not in ``cache``."""
    return (
        start_geodesics(geodesic, start, view_points),
        pair_geodesics(geodesic, view_points, cache, cache_scope),
    )


def subset_lower_bound(
    start_legs_: Sequence[float], pair_legs_, k: Optional[int] = None
) -> Tuple[float, List[int]]:
    """(min over k-subsets and their orders of L_last, that order): the exact subset DP of
    :func:`habitat_mosnav.metrics.shortest_open_path` with the prefix floor L_j ≥ s_j."""
    return shortest_open_path(start_legs_, pair_legs_, k, prefix_floor=True)


def legs(
    geodesic: Geodesic,
    start: Sequence[float],
    view_points: Sequence[Sequence],
    success_distance: float,
    cache: Optional[Dict] = None,
    cache_scope: Hashable = None,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s, c, g_start): start legs s_j, pair legs c_ij and the raw g_j(start)."""
    g_start, g_pair = leg_geodesics(geodesic, start, view_points, cache, cache_scope)
    return start_legs(g_start, success_distance), pair_legs(g_pair, success_distance), g_start
