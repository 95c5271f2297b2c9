"""Legs of SPEC §4 "Reaching a target" (s_j, c_ij) and the bound l / a over them
(L_j = max(s_j, L_i + c_ij) along an order, minimum over subsets and orders), by hand.

The geodesic here is the straight-line distance (an exact reference for an open plane).
"""

import math

import numpy as np
import pytest

from habitat_mosnav.metrics import (
    SUCCESS_DISTANCE,
    agent_subset_distance,
    legs,
    min_pair_geodesic,
    optimal_subset_distance,
    pair_legs,
    shortest_open_path,
    start_legs,
    subset_lower_bound,
)


class Euclid:
    """geodesic(point, points) = straight-line distance to the nearest point; counts calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, a, points):
        self.calls += 1
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        return float(np.min(np.linalg.norm(p - np.asarray(a, dtype=np.float64), axis=1)))


def x(v, z=0.0):
    return [float(v), 0.0, float(z)]


def test_default_success_distance_is_goat_benchs():
    assert SUCCESS_DISTANCE == 0.25


def test_start_and_pair_legs_arithmetic():
    # s = max(0, g - 0.25): 2.0 -> 1.75; 0.1 -> 0 (already near); inf stays inf
    assert list(start_legs([2.0, 0.1, math.inf], 0.25)) == [1.75, 0.0, math.inf]
    # c = max(0, g - 2 * 0.25): 3.0 -> 2.5; 0.4 -> 0 (regions overlap); diagonal 0
    c = pair_legs([[9.0, 3.0, 0.4], [3.0, 9.0, math.inf], [0.4, math.inf, 9.0]], 0.25)
    assert c.tolist() == [[0.0, 2.5, 0.0], [2.5, 0.0, math.inf], [0.0, math.inf, 0.0]]


def test_min_pair_geodesic_over_both_sets_from_the_smaller_one():
    geo = Euclid()
    # pairs: (0,0)-(4,0) 4, (0,0)-(3,4) 5, (1,0)-(4,0) 3, (1,0)-(3,4) sqrt(20) -> 3
    assert min_pair_geodesic(geo, [x(0), x(1)], [x(4), x(3, 4)]) == pytest.approx(3.0)
    assert geo.calls == 2
    geo = Euclid()
    # 3 points against 1: one multi-goal query from the single point; min |5 - 2| = 3
    assert min_pair_geodesic(geo, [x(0), x(1), x(2)], [x(5)]) == pytest.approx(3.0)
    assert geo.calls == 1


# A corridor along x, start at 0, d = 0.25. View points: A at x = 1.8, 2.2; B at 5.0;
# C at -3.0, -2.5.
#   g(start): A 1.8, B 5.0, C 2.5           -> s = 1.55, 4.75, 2.25
#   nearest view point pairs: A-B 5.0 - 2.2 = 2.8, A-C 1.8 + 2.5 = 4.3, B-C 7.5
#                                            -> c = 2.3, 3.8, 7.0
# Along an order, L_first = s_first and L_j = max(s_j, L_i + c_ij):
#   many, k = 2: A,B max(4.75, 1.55 + 2.3 = 3.85) = 4.75; A,C max(2.25, 5.35) = 5.35;
#     C,A max(1.55, 6.05) = 6.05; B,A 7.05; C,B 9.25; B,C 11.75  -> l = 4.75 (A, B)
#     (the plain sum s_A + c_AB = 3.85 would be shorter than any path that reaches B)
#   all: C,A,B 2.25 -> max(1.55, 6.05) = 6.05 -> max(4.75, 8.35) = 8.35;
#     A,B,C 1.55 -> 4.75 -> 11.75; A,C,B -> 5.35 -> 12.35; B,A,C -> 7.05 -> 10.85;
#     C,B,A -> 9.25 -> 11.55; B,C,A -> 11.75 -> 15.55          -> l = 8.35 (C, A, B)
#   single A: 1.55; any: min(s) = 1.55
CORRIDOR = [[x(1.8), x(2.2)], [x(5.0)], [x(-3.0), x(-2.5)]]
IDS = ["A", "B", "C"]


def test_corridor_legs_and_subset_distances():
    geo = Euclid()
    s, c, g = legs(geo, x(0), CORRIDOR, 0.25)
    assert g.tolist() == pytest.approx([1.8, 5.0, 2.5])
    assert s.tolist() == pytest.approx([1.55, 4.75, 2.25])
    assert c[0, 1] == c[1, 0] == pytest.approx(2.3)
    assert c[0, 2] == c[2, 0] == pytest.approx(3.8)
    assert c[1, 2] == c[2, 1] == pytest.approx(7.0)
    # queries: 3 from the start + A-B 1 (B has one point) + A-C 2 + B-C 1
    assert geo.calls == 3 + 1 + 2 + 1
    assert optimal_subset_distance("many", IDS, 2, s, c) == pytest.approx(4.75)
    assert subset_lower_bound(s, c, 2) == (pytest.approx(4.75), [0, 1])
    assert shortest_open_path(s, c, 2) == (pytest.approx(3.85), [0, 1])  # plain sums
    assert optimal_subset_distance("all", IDS, None, s, c) == pytest.approx(8.35)
    assert subset_lower_bound(s, c)[1] == [2, 0, 1]
    assert optimal_subset_distance("single", ["A"], None, s[:1], c[:1, :1]) == pytest.approx(1.55)
    assert optimal_subset_distance("any", IDS, None, s, c) == pytest.approx(1.55)
    assert agent_subset_distance(["B", "A"], IDS, s, c) == pytest.approx(4.75)


def test_corridor_l_is_a_lower_bound_of_a_claiming_path():
    s, c, _ = legs(Euclid(), x(0), CORRIDOR, 0.25)
    # Claiming A then B: walk 0 -> 4.75 (within d of 5.0), passing A's region: 4.75 = l.
    assert optimal_subset_distance("many", IDS, 2, s, c) <= 4.75 + 1e-9
    # Claiming C, A, B: 0 -> -2.25 (within d of -2.5), -> 1.55, -> 4.75: 2.25 + 3.8 + 3.2
    # = 9.25 >= 8.35.
    assert optimal_subset_distance("all", IDS, None, s, c) <= 9.25


def test_pair_legs_are_cached_per_scope():
    cache = {}
    geo = Euclid()
    legs(geo, x(0), CORRIDOR, 0.25, cache=cache, cache_scope="scene1")
    assert len(cache) == 3
    geo = Euclid()
    s, c, _ = legs(geo, x(1), CORRIDOR, 0.25, cache=cache, cache_scope="scene1")
    assert geo.calls == 3  # only the start queries
    assert s.tolist() == pytest.approx([0.55, 3.75, 3.25]) and c[1, 2] == pytest.approx(7.0)
    geo = Euclid()
    legs(geo, x(0), CORRIDOR, 0.25, cache=cache, cache_scope="scene2")
    assert geo.calls == 7  # another scene: computed afresh
