"""sims/grid/surface.py: mesh sampling, floor cells, layers, patches and islands."""

import numpy as np
import pytest

from habitat_mosnav.sims import toy_scenes as ts
from habitat_mosnav.sims.grid.surface import sample_surface


def test_samples_cover_every_triangle_within_the_spacing():
    rng = np.random.default_rng(0)
    tris = rng.uniform(-1, 1, (40, 3, 3)).astype(np.float32)
    pts, tidx = [], []
    for p, t, _ in sample_surface(tris, 0.05, max_points=5000):  # several chunks
        pts.append(p)
        tidx.append(t)
    pts, tidx = np.concatenate(pts), np.concatenate(tidx)
    assert set(tidx.tolist()) == set(range(40))
    from scipy.spatial import cKDTree

    for k in (0, 17, 39):  # random points of a triangle lie within the spacing of its samples
        w = rng.dirichlet(np.ones(3), 200)
        q = w @ tris[k]
        d, _ = cKDTree(pts[tidx == k]).query(q)
        assert d.max() <= 0.05


def test_a_long_thin_triangle_gets_few_rows_not_a_dense_lattice():
    """A 10 m x 0.5 m floor strip: rows along its short edge (an edge-subdivided lattice as
    dense along both edges as the longest one held 41k points for its 2.5 m2)."""
    strip = np.array([[[0, 0, 0], [10, 0, 0], [0, 0, 0.5]]], np.float32)
    pts = np.concatenate([p for p, _, _ in sample_surface(strip, 0.035)])
    area, perimeter = 2.5, 10 + 0.5 + float(np.hypot(10, 0.5))
    assert len(pts) <= 1.5 * area / 0.035**2 + perimeter / 0.035
    from scipy.spatial import cKDTree

    w = np.random.default_rng(2).dirichlet(np.ones(3), 500)
    assert cKDTree(pts).query(w @ strip[0])[0].max() <= 0.035  # still within the spacing


def test_room_floor_is_one_island_eroded_by_the_radius(box_grid):
    g = box_grid("room4", ts.room_boxes(0.0, 0.0, 4.0, 4.0))
    s = g.surface
    # one navigable layer (the wall tops are standable pieces of their own, too narrow)
    assert (s.num_islands, s.num_patches, sum(bool(L.nav.any()) for L in s.layers)) == (1, 1, 1)
    # inner faces at 0.1 and 3.9, eroded by 0.1: 3.6 m x 3.6 m within a cell
    assert 3.5**2 <= float(s.island_area[0]) <= 3.7**2
    assert s.bounds[0][1] == pytest.approx(0.0) and s.bounds[1][1] == pytest.approx(0.0)
    top = s.topdown(0.1, 0.0)
    assert top.sum() == pytest.approx(36 * 36, rel=0.08)
    assert not s.topdown(0.1, 2.5).any()  # the ceiling's top is no floor


def test_a_door_narrower_than_the_agent_makes_two_islands(box_grid):
    g = box_grid("shut", ts.two_rooms_boxes(door_width=0.15))
    assert g.surface.num_islands == 2
    g = box_grid("open", ts.two_rooms_boxes(door_width=1.0))
    assert g.surface.num_islands == 1


def test_two_storeys_and_their_stair_are_one_island_in_several_layers(box_grid):
    s = box_grid("storeys", ts.two_storey_boxes()).surface
    assert len(s.layers) >= 2  # the upper floor lies over the ground floor
    main = s.largest_island
    assert s.island_area[main] > 35.0 and np.sort(s.island_area)[-2] < 0.5  # the rest: wall tops
    assert s.portals  # patches joined through seams
    lo, hi = s.bounds
    assert lo[1] == pytest.approx(0.0, abs=1e-3) and hi[1] == pytest.approx(2.6, abs=1e-3)
    # cell look-ups: the ground floor under the slab and the slab are different layers
    ground = [
        li
        for li, L in enumerate(s.layers)
        if s.patch_at(li, 2.0, 2.0) >= 0 and s.height_at(li, 2.0, 2.0, np.nan) == pytest.approx(0.0)
    ]
    upper = [
        li
        for li, L in enumerate(s.layers)
        if s.patch_at(li, 2.0, 2.0) >= 0 and s.height_at(li, 2.0, 2.0, np.nan) == pytest.approx(2.6)
    ]
    assert len(ground) == 1 and len(upper) == 1 and ground != upper
    pg, pu = s.patch_at(ground[0], 2.0, 2.0), s.patch_at(upper[0], 2.0, 2.0)
    assert s.patch_island[pg] == s.patch_island[pu] == main


def test_wall_samples_cover_steep_faces_in_lines():
    from habitat_mosnav.sims.grid.surface import sample_walls

    rng = np.random.default_rng(1)

    def rect(o, u, v):  # two triangles spanning o + [0, 1] u + [0, 1] v
        o, u, v = (np.asarray(x, np.float32) for x in (o, u, v))
        return [[o, o + u, o + u + v], [o, o + u + v, o + v]], (o, u, v)

    lean = np.tan(np.radians(15))
    faces = [
        rect((0, 0, 0), (4, 0, 0), (0, 2.5, 0)),
        rect((0, 0, 1), (2, 0, 0), (0, 1.0, lean)),
    ]  # a wall; 15 deg off vertical
    tris = np.asarray([t for f, _ in faces for t in f], np.float32)
    pts, tidx = [], []
    for p, t, _ in sample_walls(tris, 0.035, 0.1, max_points=3000):  # several chunks
        pts.append(p)
        tidx.append(t)
    pts, tidx = np.concatenate(pts).astype(np.float64), np.concatenate(tidx)
    assert set(tidx.tolist()) == {0, 1, 2, 3}
    for k, (_, (o, u, v)) in enumerate(faces):
        # every point of a face has a sample of it within 0.05 m in height and 0.035 m across
        mine = pts[(tidx // 2) == k]
        for a, b in rng.random((200, 2)):
            q = o + a * u + b * v
            near = mine[np.abs(mine[:, 1] - q[1]) <= 0.05 + 1e-6]
            assert np.hypot(near[:, 0] - q[0], near[:, 2] - q[2]).min() <= 0.035
        assert np.isclose(mine[:, 1].min(), o[1]) and np.isclose(mine[:, 1].max(), o[1] + v[1])
    # far fewer than the lattice at the same spacing (0.1 m rise against 0.035 m rows)
    assert len(pts) < sum(len(p) for p, _, _ in sample_surface(tris, 0.035)) / 2
