"""sims/grid/clearance.py: signed clearance, line of sight, lifting onto the free space."""

import numpy as np
import pytest

from habitat_mosnav.sims import toy_scenes as ts
from habitat_mosnav.sims.grid.cells import Location
from habitat_mosnav.sims.grid.clearance import SDF_CAP

PILLAR = ts.room_boxes(0.0, 0.0, 6.0, 4.0) + [
    ((2.8, 0.0, 1.8), (3.2, ts.WALL_H, 2.2), (90, 90, 200, 255))
]


def test_clearance_is_the_distance_to_the_nearest_obstacle(box_grid):
    c = box_grid("pillar", PILLAR).clearance
    L = c.layers[0]
    # 0.4 m from the west wall's inner face (x = 0.1), far from everything else
    assert c.sdf_point(L, 0.5, 1.0) == pytest.approx(0.4, abs=0.01)
    # capped at radius + SDF_CAP in the open; vectorised and scalar forms agree
    assert c.sdf_point(L, 1.5, 2.0) == pytest.approx(0.1 + SDF_CAP, abs=1e-6)
    xs, zs = np.array([0.5, 2.6, 1.5]), np.array([1.0, 2.0, 2.0])
    assert c.sdf_at(L, xs, zs) == pytest.approx(
        [c.sdf_point(L, x, z) for x, z in zip(xs, zs)], abs=1e-9
    )
    assert c.sdf_point(L, 2.6, 2.0) == pytest.approx(0.2, abs=0.01)  # 0.2 m west of the pillar


def test_line_of_sight_keeps_the_radius(box_grid):
    c = box_grid("pillar", PILLAR).clearance
    A = np.array([[1.0, 2.0], [1.0, 1.65], [1.0, 1.75]])
    B = np.array([[5.0, 2.0], [5.0, 1.65], [5.0, 1.75]])
    # through the pillar: blocked; 0.15 m clear of its face: free; 0.05 m: blocked
    assert c.los(0, A, B).tolist() == [False, True, False]


def test_lift_moves_a_point_just_short_of_the_radius_onto_the_free_space(box_grid):
    g = box_grid("pillar", PILLAR)
    c = g.clearance
    loc = g.snap([0.19, 0.0, 1.0])
    near = Location(loc.layer, loc.patch, loc.island, 0.19, 1.0, 0.0)
    lifted, moved = c.lift(near)
    # straight off the wall's face (x = 0.1) to just past the radius
    assert lifted.x == pytest.approx(0.201, abs=0.003) and lifted.z == pytest.approx(1.0, abs=0.01)
    assert moved == pytest.approx(0.011, abs=0.003)
    assert c.sdf_point(c.layers[0], lifted.x, lifted.z) >= 0.1 - 0.005
    same, zero = c.lift(Location(loc.layer, loc.patch, loc.island, 1.0, 1.0, 0.0))
    assert zero == 0.0 and same.x == 1.0


def test_the_exact_test_skips_only_points_surely_short_of_the_bound(box_grid):
    """Clearance._may_clear (the triangle inequality over the four surrounding cell
    centres) rules out points whose exact distance is below the bound, never one at or
    over it, and rules out most of those near a wall."""
    c = box_grid("pillar", PILLAR).clearance
    L, tree = c.layers[0], c.tree(0)
    rng = np.random.default_rng(5)
    x, z = rng.uniform(0.05, 5.95, 20000), rng.uniform(0.05, 3.95, 20000)
    thr = np.full(len(x), 0.1 - 0.005)
    exact = tree.query(np.stack([x, z], axis=1))[0]
    may = c._may_clear(L, x, z, thr)
    assert may[exact >= thr].all()
    near = (exact < thr) & (exact > thr - 0.04)
    assert (~may[near]).mean() > 0.3
