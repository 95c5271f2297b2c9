"""sims/grid/motion.py: snapping onto the walkable surface, stepping and sliding."""

import numpy as np
import pytest

from habitat_mosnav.sims import toy_scenes as ts


def test_snap_finds_the_nearest_navigable_cell_and_the_right_floor(box_grid):
    m = box_grid("storeys", ts.two_storey_boxes()).motion
    inside = m.snap([2.0, 0.0, 2.0])
    assert (inside.x, inside.z, inside.y) == (2.0, 2.0, pytest.approx(0.0))
    up = m.snap([2.0, 2.7, 2.0])
    assert up.y == pytest.approx(2.6) and up.layer != inside.layer and up.island == inside.island
    wall = m.snap([0.02, 0.0, 2.0])  # in the west wall: the nearest cell east of it
    assert 0.2 <= wall.x <= 0.3 and wall.y == pytest.approx(0.0)
    assert m.is_navigable([2.0, 0.0, 2.0]) and not m.is_navigable([0.02, 0.0, 2.0])
    assert m.snap([np.nan, 0.0, 0.0]) is None
    assert m.snap([2.0, 0.0, 2.0], max_y_delta=0.1).y == pytest.approx(0.0)


def test_steps_slide_along_a_wall_or_stop(box_grid):
    m = box_grid("room4", ts.room_boxes(0.0, 0.0, 4.0, 4.0)).motion
    start = np.array([1.0, 0.0, 0.3])
    end = start + np.array([0.3, 0.0, -0.3])  # into the north wall (z = 0.1 + radius)
    slid = m.try_step(start, end, sliding=True)
    stopped = m.try_step(start, end, sliding=False)
    assert slid[2] == pytest.approx(0.2, abs=0.03) and slid[0] > 1.2
    assert stopped[0] - 1.0 < 0.15 and stopped[2] >= 0.19
    free = m.try_step([2.0, 0.0, 2.0], [2.25, 0.0, 2.0])
    assert free.tolist() == pytest.approx([2.25, 0.0, 2.0])


def test_random_points_are_navigable_and_obstacle_distance_grows_inward(box_grid):
    m = box_grid("room4", ts.room_boxes(0.0, 0.0, 4.0, 4.0)).motion
    rng = np.random.default_rng(3)
    pts = [m.random_point(rng) for _ in range(50)]
    assert all(m.is_navigable(p) for p in pts)
    assert (
        m.distance_to_closest_obstacle([2.0, 0.0, 2.0])
        > m.distance_to_closest_obstacle([0.4, 0.0, 2.0])
        > 0
    )
    assert (
        m.snap_to_island([2.0, 0.0, 2.0], 0).island == 0
        and m.snap_to_island([2.0, 0.0, 2.0], 5) is None
    )
