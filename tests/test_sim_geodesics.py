"""MosNavMeshSim-v0 geodesics against exact shortest paths: hand-computed ones, and the
shapely free-space + visibility-graph reference (habitat_mosnav.sims.reference) on random
pairs. Targets (issue 12): median |error| <= 0.5 %, p95 <= 2 %, the same pairs reachable,
|d(a, b) - d(b, a)| <= 1 cm."""

from __future__ import annotations

import glob
import math
import os

import numpy as np
import pytest

import habitat_mosnav  # noqa: F401  (before habitat)
from habitat_mosnav.sims import toy_scenes as ts
from habitat_mosnav.sims.geometry import load_mesh, scene_up_axis
from habitat_mosnav.sims.navgrid import AgentShape, NavGrid
from habitat_mosnav.sims.reference import ExactGeodesics, free_space

R = 0.18  # HM3D ObjectNav agent: radius 0.18, height 0.88
AGENT = AgentShape(height=0.88, radius=R, max_climb=0.2)
DEMO = os.path.join(os.path.dirname(__file__), "..", "habitat_mosnav", "data", "demo", "scenes")


def _grid_and_reference(boxes, tmp_path, name):
    glb = ts.export_boxes(str(tmp_path / f"{name}.glb"), boxes)
    tris = load_mesh(glb, "z").triangles
    return NavGrid(tris, AGENT), ExactGeodesics(
        free_space(tris, R, AGENT.height, AGENT.max_climb, quad_segs=16)
    )


def _wall_end_scene():
    """A 6 m x 4 m room; a 0.1 m wall from the south wall up to z = 2.5 at x = 3."""
    return ts.room_boxes(0.0, 0.0, 6.0, 4.0) + [
        ((2.95, 0.0, 0.0), (3.05, ts.WALL_H, 2.5), (200, 90, 90, 255))
    ]


def _around_wall_end(a, b, o1, o2, r):
    """Hand formula: tangent from a to the circle of radius r at wall corner o1, arc to its
    top, straight along the wall end to o2's circle, arc, tangent to b (symmetric case)."""

    def half(p, o):
        v = np.asarray(p, float) - o
        dist = float(np.hypot(*v))
        psi = math.acos(v[1] / dist)  # angle between (p - o) and +z, the wall-end normal
        alpha = math.acos(r / dist)
        return math.sqrt(dist**2 - r**2) + r * (psi - alpha)

    return (
        half(a, np.asarray(o1)) + half(b, np.asarray(o2)) + float(np.hypot(*(np.subtract(o2, o1))))
    )


def _compare(grid, ref, rng, n_pairs):
    pts = ref.sample(rng, 2 * n_pairs)
    errs, mismatch, asym = [], 0, []
    for a, b in zip(pts[0::2], pts[1::2]):
        exact = ref.distance(a, b)
        A, B = [a[0], 0.0, a[1]], [b[0], 0.0, b[1]]
        d_ab, d_ba = grid.geodesic_distance(A, [B]), grid.geodesic_distance(B, [A])
        if math.isfinite(exact) != math.isfinite(d_ab):
            mismatch += 1
            continue
        if math.isfinite(exact) and exact > 0.3:
            errs.append(abs(d_ab - exact) / exact)
            asym.append(abs(d_ab - d_ba))
    return np.asarray(errs), mismatch, np.asarray(asym)


def test_path_around_a_wall_end_matches_hand_formula(tmp_path):
    grid, ref = _grid_and_reference(_wall_end_scene(), tmp_path, "wallend")
    a, b = (1.5, 0.8), (4.5, 0.8)
    expected = _around_wall_end(a, b, (2.95, 2.5), (3.05, 2.5), R)
    assert expected == pytest.approx(4.8945, abs=1e-4)
    assert ref.distance(a, b) == pytest.approx(expected, rel=2e-4)  # the reference itself
    d = grid.geodesic_distance([a[0], 0.0, a[1]], [[b[0], 0.0, b[1]]])
    assert d == pytest.approx(expected, rel=2e-3)
    # the path bends at the wall's end, R from its corners, and has the same length
    pts, length = grid.find_path([a[0], 0.0, a[1]], [[b[0], 0.0, b[1]]])
    poly = np.asarray(pts)[:, [0, 2]]
    assert length == pytest.approx(d, rel=1e-9)
    assert float(np.linalg.norm(np.diff(poly, axis=0), axis=1).sum()) == pytest.approx(d, rel=1e-6)
    top = poly[np.argmax(poly[:, 1])]
    assert 2.5 + R - 0.01 < top[1] < 2.5 + R + 0.01


def test_gap_just_wider_than_the_agent_is_open_and_just_narrower_is_closed(tmp_path):
    # door of width 2r + 1.5 cm: passable, straight through its middle (6 m)
    grid, ref = _grid_and_reference(ts.two_rooms_boxes(door_width=2 * R + 0.015), tmp_path, "open")
    a, b = [1.0, 0.0, 2.0], [7.0, 0.0, 2.0]
    assert ref.distance((1.0, 2.0), (7.0, 2.0)) == pytest.approx(6.0, abs=1e-6)
    assert grid.geodesic_distance(a, [b]) == pytest.approx(6.0, abs=0.01)
    # 2r - 1.5 cm: the two rooms are separate islands in both
    grid, ref = _grid_and_reference(ts.two_rooms_boxes(door_width=2 * R - 0.015), tmp_path, "shut")
    assert math.isinf(ref.distance((1.0, 2.0), (7.0, 2.0)))
    assert math.isinf(grid.geodesic_distance(a, [b]))
    assert grid.island_of(a) != grid.island_of(b)


def test_random_pairs_match_the_exact_reference_on_a_furnished_flat(tmp_path):
    grid, ref = _grid_and_reference(ts.apartment_boxes(), tmp_path, "flat")
    errs, mismatch, asym = _compare(grid, ref, np.random.default_rng(5), 60)
    assert len(errs) >= 40
    assert mismatch == 0
    assert np.median(errs) <= 0.005 and np.percentile(errs, 95) <= 0.02
    assert asym.max() <= 0.01


@pytest.mark.slow
@pytest.mark.parametrize(
    "scene",
    sorted(
        p for p in glob.glob(os.path.join(DEMO, "*", "*.glb")) if not p.endswith(".semantic.glb")
    ),
)
def test_random_pairs_match_the_exact_reference_on_the_demo_scenes(scene):
    tris = load_mesh(scene, scene_up_axis(scene)).triangles
    grid = NavGrid(tris, AGENT)
    ref = ExactGeodesics(free_space(tris, R, AGENT.height, AGENT.max_climb, quad_segs=16))
    errs, mismatch, asym = _compare(grid, ref, np.random.default_rng(1), 80)
    assert len(errs) >= 60
    assert mismatch == 0
    assert np.median(errs) <= 0.005 and np.percentile(errs, 95) <= 0.02
    assert asym.max() <= 0.01


@pytest.mark.slow
def test_a_scan_like_flat_matches_the_exact_reference_of_its_own_noisy_mesh(tmp_path):
    """Scan noise: the furnished flat subdivided to 0.3 m triangles, every vertex moved up
    to 1.5 cm (scenes.scan.scan_like). Against the exact reference of that jittered mesh
    (its floor's sub-cell cracks and flipped slivers filled, as a 5 cm raster sees them;
    left open, each would erode a 0.36 m disc out of the floor) the targets hold, and the
    corner graph stays within 4x the clean flat's nodes."""
    from habitat_mosnav.scenes.scan import scan_like

    glb = ts.export_boxes(str(tmp_path / "flat.glb"), ts.apartment_boxes())
    mesh = load_mesh(glb, "z")
    v, f, _ = scan_like(mesh.vertices, mesh.faces, 0.3, 0.015, np.random.default_rng(0))
    tris = v[f]
    grid = NavGrid(tris, AGENT)
    ref = ExactGeodesics(
        free_space(
            tris,
            R,
            AGENT.height,
            AGENT.max_climb,
            quad_segs=16,
            height_step=0.05,
            grid_size=1e-6,
            fill_holes=0.01,
        )
    )
    errs, mismatch, asym = _compare(grid, ref, np.random.default_rng(5), 60)
    assert len(errs) >= 40
    assert mismatch == 0
    assert np.median(errs) <= 0.005 and np.percentile(errs, 95) <= 0.02
    assert asym.max() <= 0.01
    assert grid.num_nodes <= 4 * NavGrid(mesh.triangles, AGENT).num_nodes
