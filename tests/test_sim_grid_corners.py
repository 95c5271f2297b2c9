"""sims/grid/corners.py: corner nodes at the radius round obstacle corners, visibility
edges and polygons."""

import math

import numpy as np
import pytest

from habitat_mosnav.sims import toy_scenes as ts
from habitat_mosnav.sims.grid.corners import RAYS, reach_tables, sees_cols

PILLAR = ts.room_boxes(0.0, 0.0, 6.0, 4.0) + [
    ((2.8, 0.0, 1.8), (3.2, ts.WALL_H, 2.2), (90, 90, 200, 255))
]


def test_a_convex_room_has_no_corner_nodes(box_grid):
    assert box_grid("room4", ts.room_boxes(0.0, 0.0, 4.0, 4.0)).graph.num_nodes == 0


def test_nodes_lie_on_the_arcs_round_the_pillar_corners(box_grid):
    g = box_grid("pillar", PILLAR).graph
    corners = np.array([[2.8, 1.8], [2.8, 2.2], [3.2, 1.8], [3.2, 2.2]])
    dist = np.linalg.norm(g.node_xz[:, None] - corners[None], axis=2)
    here = dist.min(axis=1) < 0.5  # (the rest sit on the walls' sampled faces)
    d = dist[here].min(axis=1)
    assert here.sum() >= 8 and d.min() >= 0.1 - 1e-3 and d.max() <= 0.1 + 0.02
    assert set(dist[here].argmin(axis=1).tolist()) == {0, 1, 2, 3}  # round every corner


def test_edges_see_each_other_and_do_not_cross_the_pillar(box_grid):
    grid = box_grid("pillar", PILLAR)
    g = grid.graph
    rows, cols, w = g.edges
    assert len(rows) > 0
    A, B = g.node_xz[rows], g.node_xz[cols]
    assert grid.clearance.los(0, A, B).all()
    assert np.allclose(w, np.linalg.norm(A - B, axis=1), atol=1e-6)  # flat: 3D = 2D length
    # nodes west and east of the pillar at its middle height do not see each other
    west = np.nonzero((g.node_xz[:, 0] < 2.8) & (np.abs(g.node_xz[:, 1] - 2.0) < 0.25))[0]
    east = np.nonzero((g.node_xz[:, 0] > 3.2) & (np.abs(g.node_xz[:, 1] - 2.0) < 0.25))[0]
    pairs = set(zip(rows.tolist(), cols.tolist())) | set(zip(cols.tolist(), rows.tolist()))
    assert west.size and east.size and not any((a, b) in pairs for a in west for b in east)


def test_visibility_polygon_reaches_the_eroded_walls(box_grid):
    grid = box_grid("room4", ts.room_boxes(0.0, 0.0, 4.0, 4.0))
    rays = grid.graph.cast(0, np.array([[2.0, 2.0]]))[0]
    assert rays.shape == (RAYS,)
    # east (ray 0): to x = 3.9 - 0.1; ray 22 (44 degrees, next to the diagonal): to the
    # eroded wall x = 3.8 it meets first, 1.8 / cos(44 deg) = 2.502 m (within a step of
    # half a cell, and LOS_TOL beyond)
    assert rays[0] == pytest.approx(1.8, abs=0.03)
    k = RAYS // 8
    assert math.degrees(k * 2 * math.pi / RAYS) == pytest.approx(44.0)
    assert rays[k] == pytest.approx(1.8 / math.cos(math.radians(44.0)), abs=0.03)
    tab = reach_tables(rays[None])
    seen, _ = sees_cols(tab, np.array([0]), np.array([2.0]), np.array([2.0]), 3.7, 2.0, 0.01)
    hidden, _ = sees_cols(tab, np.array([0]), np.array([2.0]), np.array([2.0]), 3.95, 2.0, 0.01)
    assert seen[0] and not hidden[0]


def test_edges_do_not_depend_on_the_pair_block_and_have_no_length_cap(box_grid, monkeypatch):
    from habitat_mosnav.sims.grid import corners
    from habitat_mosnav.sims.grid.corners import CornerGraph

    # a 24 m hall with two pillars: corner pairs 20 m apart see each other along it
    hall = ts.room_boxes(0.0, 0.0, 24.0, 4.0) + [
        ((1.8, 0.0, 1.8), (2.2, ts.WALL_H, 2.2), (90, 90, 200, 255)),
        ((21.8, 0.0, 1.8), (22.2, ts.WALL_H, 2.2), (90, 90, 200, 255)),
    ]
    grid = box_grid("hall24", hall)
    rows, cols, w = grid.graph.edges
    assert w.max() > 19.0  # no cap on an edge's length
    monkeypatch.setattr(corners, "PAIR_BLOCK", 100)  # a few rows at a time
    again = CornerGraph(grid.surface, grid.clearance)
    assert np.array_equal(again.edges[0], rows) and np.array_equal(again.edges[1], cols)
    assert np.array_equal(again.edges[2], w)


def test_a_point_bin_lists_every_node_that_sees_it(box_grid):
    """The look-up looks only at the nodes of the point's bin: every node whose polygon
    holds the point within the bins' margin is there, and the bins are much shorter than
    the patch's list (two rooms: a node in one does not see most of the other)."""
    from habitat_mosnav.sims.grid.corners import BIN_MARGIN

    grid = box_grid(
        "two_rooms_pillars",
        ts.two_rooms_boxes(door_width=0.8)
        + [
            ((1.0, 0.0, 1.0), (1.4, ts.WALL_H, 1.3), (90, 90, 200, 255)),
            ((5.5, 0.0, 2.5), (6.0, ts.WALL_H, 2.9), (90, 90, 200, 255)),
        ],
    )
    g = grid.graph
    tab = g.node_tables()
    rng = np.random.default_rng(3)
    sizes, seen_any = [], 0
    for _ in range(400):
        x, _, z = grid.random_point(rng, grid.largest_island)
        loc = grid.snap([x, 0.0, z])
        idx = g.patch_nodes[loc.patch]
        sees = idx[
            sees_cols(tab, idx * RAYS, g.node_xz[idx, 0], g.node_xz[idx, 1], x, z, BIN_MARGIN)[0]
        ]
        in_bin = g.bin_nodes(loc.patch, x, z)
        assert set(sees.tolist()) <= set(in_bin.tolist())
        assert (np.diff(in_bin) > 0).all()  # in node order
        sizes.append(len(in_bin))
        seen_any += len(sees) > 0
    assert seen_any >= 350
    assert np.mean(sizes) < 0.8 * len(g.patch_nodes[grid.snap([1.0, 0.0, 2.0]).patch])
