"""The exact open-path solver against brute force over permutations (SPEC §4)."""

import itertools
import math
import time

import numpy as np
import pytest

from habitat_mosnav.metrics import shortest_open_path


def path_length(start, pair, order, prefix_floor=False):
    length = start[order[0]]
    for a, b in zip(order, order[1:]):
        length = length + pair[a][b]
        if prefix_floor:
            length = max(start[b], length)
    return length


def brute_force(start, pair, k, prefix_floor=False):
    return min(
        (
            path_length(start, pair, perm, prefix_floor)
            for perm in itertools.permutations(range(len(start)), k)
        ),
        default=math.inf,
    )


@pytest.mark.parametrize("prefix_floor", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_random_asymmetric_with_inf(seed, prefix_floor):
    rng = np.random.default_rng(seed)
    for n in range(1, 9):
        start = rng.uniform(0.0, 10.0, n)
        pair = rng.uniform(0.0, 10.0, (n, n))  # asymmetric on purpose
        pair[rng.random((n, n)) < 0.25] = np.inf
        start[rng.random(n) < 0.15] = np.inf
        ks = [None] + sorted({1, max(1, n // 2), n})
        if n == 8:
            ks = [None, 3]  # keep the 8! brute force to one call per seed
        for k in ks:
            kk = n if k is None else k
            expected = brute_force(start, pair, kk, prefix_floor)
            length, order = shortest_open_path(start, pair, k, prefix_floor=prefix_floor)
            if math.isinf(expected):
                assert math.isinf(length) and order == []
            else:
                assert length == pytest.approx(expected, abs=1e-9)
                assert len(order) == kk and len(set(order)) == kk
                assert path_length(start, pair, order, prefix_floor) == pytest.approx(
                    length, abs=1e-9
                )


def test_hand_example_three_targets():
    # start→A 2, →B 5, →C 6; A-B 3, A-C 4, B-C 2 (symmetric).
    start = [2.0, 5.0, 6.0]
    pair = [[0, 3, 4], [3, 0, 2], [4, 2, 0]]
    assert shortest_open_path(start, pair) == (7.0, [0, 1, 2])  # A, B, C: 2 + 3 + 2
    assert shortest_open_path(start, pair, 2) == (5.0, [0, 1])  # A, B: 2 + 3
    assert shortest_open_path(start, pair, 1) == (2.0, [0])


def test_direction_matters_for_asymmetric_distances():
    start = [1.0, 1.0]
    pair = [[0.0, 10.0], [2.0, 0.0]]
    assert shortest_open_path(start, pair) == (3.0, [1, 0])


def test_edge_cases():
    assert shortest_open_path([], np.zeros((0, 0))) == (0.0, [])
    assert shortest_open_path([3.0, 4.0], [[0, 1], [1, 0]], k=0) == (0.0, [])
    assert shortest_open_path([math.inf, math.inf], [[0, 1], [1, 0]]) == (math.inf, [])
    # Reachable from the start, but the two points cannot reach each other.
    assert shortest_open_path([1.0, 1.0], [[0, math.inf], [math.inf, 0]]) == (math.inf, [])
    assert shortest_open_path([1.0, 1.0], [[0, math.inf], [math.inf, 0]], k=1)[0] == 1.0


@pytest.mark.parametrize(
    "start, pair, k, match",
    [
        ([1.0, 2.0], [[0, 1], [1, 0]], 3, "outside 0..2"),
        ([1.0, 2.0], [[0, 1], [1, 0]], -1, "outside 0..2"),
        ([1.0, 2.0], [[0, 1, 2], [1, 0, 2]], None, "shape"),
        ([[1.0, 2.0]], [[0, 1], [1, 0]], None, "1-D"),
        ([1.0, float("nan")], [[0, 1], [1, 0]], None, "NaN"),
        ([1.0, -2.0], [[0, 1], [1, 0]], None, ">= 0"),
        ([1.0, 2.0], [[0, 1], [1, 0]], 1.5, "int"),
    ],
)
def test_bad_input_raises(start, pair, k, match):
    with pytest.raises(ValueError, match=match):
        shortest_open_path(start, pair, k)


def test_twelve_candidates_fast():
    rng = np.random.default_rng(12)
    start = rng.uniform(0.0, 20.0, 12)
    pair = rng.uniform(0.0, 20.0, (12, 12))
    t0 = time.perf_counter()
    length, order = shortest_open_path(start, pair)
    elapsed = time.perf_counter() - t0
    print(f"shortest_open_path n=12 all: {elapsed * 1000:.1f} ms")
    assert sorted(order) == list(range(12))
    assert path_length(start, pair, order) == pytest.approx(length)
    t0 = time.perf_counter()
    shortest_open_path(start, pair, 5)
    print(f"shortest_open_path n=12 k=5: {(time.perf_counter() - t0) * 1000:.1f} ms")
