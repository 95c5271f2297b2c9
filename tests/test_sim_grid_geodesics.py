"""sims/grid/geodesics.py and fastmarch.py: goal-set fields, look-ups, paths, fallback."""

import math

import numpy as np
import pytest

from habitat_mosnav.sims import toy_scenes as ts

PILLAR = ts.room_boxes(0.0, 0.0, 6.0, 4.0) + [
    ((2.8, 0.0, 1.8), (3.2, ts.WALL_H, 2.2), (90, 90, 200, 255))
]


def _round_pillar(a, b, r=0.1):
    """Hand value for a, b level with the pillar's middle (z = 2): tangent to the arc at
    its corner (2.8, 1.8), arc, straight along the face, arc, tangent (symmetric)."""
    o = np.array([2.8, 1.8])
    v = np.asarray(a) - o
    dist = float(np.hypot(*v))
    psi = math.acos(-v[1] / dist)  # between (a - o) and -z, the face normal
    alpha = math.acos(r / dist)
    return 2 * (math.sqrt(dist**2 - r**2) + r * (psi - alpha)) + 0.4


def test_geodesic_round_the_pillar_matches_the_hand_value_and_its_path(box_grid):
    grid = box_grid("pillar", PILLAR)
    geo = grid.geodesics
    a, b = [1.5, 0.0, 2.0], [4.5, 0.0, 2.0]
    expected = _round_pillar((1.5, 2.0), (4.5, 2.0))
    d = geo.geodesic_distance(a, [b])
    assert d == pytest.approx(expected, rel=2e-3)
    assert geo.geodesic_distance(b, [a]) == pytest.approx(d, abs=0.01)
    pts, length = geo.find_path(a, [b])
    poly = np.asarray(pts)[:, [0, 2]]
    assert length == pytest.approx(d, rel=1e-9)
    assert float(np.linalg.norm(np.diff(poly, axis=0), axis=1).sum()) == pytest.approx(d, rel=1e-6)
    assert np.abs(poly[:, 1] - 2.0).max() >= 0.29  # round the pillar's 0.2 m half-width


def test_fields_are_cached_and_the_nearest_goal_wins(box_grid):
    geo = box_grid("pillar", PILLAR).geodesics
    goals = [[5.0, 0.0, 1.0], [1.0, 0.0, 1.0]]
    df = geo.distance_field(goals)
    assert geo.distance_field([list(g) for g in goals]) is df
    assert geo.geodesic_distance([1.5, 0.0, 1.0], goals) == pytest.approx(0.5, abs=0.005)


def test_unreachable_goals_are_infinite(box_grid):
    geo = box_grid("shut", ts.two_rooms_boxes(door_width=0.15)).geodesics
    assert math.isinf(geo.geodesic_distance([1.0, 0.0, 2.0], [[7.0, 0.0, 2.0]]))
    assert geo.find_path([1.0, 0.0, 2.0], [[7.0, 0.0, 2.0]]) == ([], math.inf)


def test_fast_marching_fallback_agrees_with_the_graph(box_grid):
    grid = box_grid("pillar", PILLAR)
    a, b = [1.5, 0.0, 2.0], [4.5, 0.0, 2.0]
    fm_field = grid.fast_marching.field(np.asarray([b], np.float64))
    fm = grid.fast_marching.value(fm_field, grid.snap(a))
    assert fm == pytest.approx(grid.geodesic_distance(a, [b]), rel=0.03)
    pts, dist = grid.fast_marching.path(grid.snap(a), fm_field)
    assert dist == pytest.approx(fm) and len(pts) >= 3


def test_wide_tier_of_a_look_up_gives_the_same_distances(box_grid, monkeypatch):
    from habitat_mosnav.sims.grid import geodesics

    grid = box_grid("flat", ts.apartment_boxes())
    geo = grid.geodesics
    rng = np.random.default_rng(2)
    main = grid.largest_island
    goals = [grid.random_point(rng, main) for _ in range(3)]
    pts = [grid.random_point(rng, main) for _ in range(300)]
    assert max(len(v) for v in grid.graph.patch_nodes.values()) > 64
    monkeypatch.setattr(geodesics, "WIDE", 10**9)  # never: all nodes after the first 48
    ref = [geo.geodesic_distance(p, goals) for p in pts]
    monkeypatch.setattr(geodesics, "WIDE", 8)  # the 8 nearest next, then all
    assert [geo.geodesic_distance(p, goals) for p in pts] == ref


def test_a_point_no_polygon_holds_takes_the_segments_not_fast_marching():
    """A demo-scene point in a pocket of the floor by a wall, just outside the 2-degree
    visibility polygons of the nodes it sees: its distance is min |p - v| + D(v) over the
    reached nodes its segments see (as the path's first leg is chosen), so the distance is
    the path's length; before, it came from a fast-marching field of the whole patch (1.5 %
    longer than that path here, and 0.9 s on a 40-room floor)."""
    import glob
    import os

    from habitat_mosnav.sims.geometry import load_mesh, scene_up_axis
    from habitat_mosnav.sims.grid.corners import sees_cols
    from habitat_mosnav.sims.navgrid import AgentShape, NavGrid

    demo = os.path.join(os.path.dirname(__file__), "..", "habitat_mosnav", "data", "demo", "scenes")
    scene = glob.glob(os.path.join(demo, "*", "Cukxndkh48K.glb"))[0]
    grid = NavGrid(load_mesh(scene, scene_up_axis(scene)).triangles, AgentShape(0.88, 0.18, 0.2))
    geo = grid.geodesics
    a, b = [2.4223428, 0.0, -3.7631824], [-0.5005856, 0.0, 1.4950510]
    df = geo.distance_field(np.asarray([b]))
    tab = geo.g.node_tables()
    idx, _, _, _, fx, fz, _, base = geo.candidates(df, grid.snap(a).patch)
    assert not sees_cols(tab, base, fx, fz, a[0], a[2], 0.01)[0].any()  # no polygon holds it
    d = geo.geodesic_distance(a, [b])
    pts, length = geo.find_path(a, [b])
    assert np.isfinite(d) and d == pytest.approx(length, rel=1e-4)  # fast marching: 1.5 % off
    assert df.fmm is None  # no fast-marching field was needed
