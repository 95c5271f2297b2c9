"""Geodesics across floors: the generator's stair hall (habitat_mosnav.scenes.stairs) on
its own against a hand value, and a generated two-storey apartment."""

import math

import numpy as np
import pytest

from habitat_mosnav.scenes.stairs import FLOOR_PITCH, HALL_LENGTH, StairHall
from habitat_mosnav.sims import toy_scenes as ts
from habitat_mosnav.sims.geometry import load_mesh
from habitat_mosnav.sims.navgrid import AgentShape, NavGrid
from habitat_mosnav.sims.reference import ExactGeodesics, free_space

AGENT = AgentShape(height=0.88, radius=0.18, max_climb=0.2)  # HM3D ObjectNav's agent


def _hall_boxes(floors=2, stairs=True):
    """The stair hall at x0 = 0, z0 = 0, closed on its south side (the apartment's wall).
    Without ``stairs``: the plan view of two storeys' hall, flat: no steps nor landing,
    the core wall on to the east wall (where lane A is the stair's top, out of reach from
    the ground)."""
    hall = StairHall(0.0, 0.0, floors, [0] * floors)
    boxes = [
        (lo, hi, (200, 200, 200, 255))
        for kind, lo, hi in hall.boxes()
        if stairs or kind != "floor" or lo[1] < 0
    ]
    if not stairs:
        core = [b for b in boxes if b[0][0] == hall.run[0]][0]
        boxes.append(((core[0][0], 0.0, core[0][2]), (HALL_LENGTH, hall.top, core[1][2]), core[2]))
    boxes.append(((0.0, 0.0, -0.1), (HALL_LENGTH, hall.top, 0.05), (220, 220, 210, 255)))
    return hall, boxes


@pytest.fixture(scope="module")
def hall_grid(tmp_path_factory):
    hall, boxes = _hall_boxes()
    glb = ts.export_boxes(str(tmp_path_factory.mktemp("hall") / "hall.glb"), boxes)
    return hall, NavGrid(load_mesh(glb, "z").triangles, AGENT)


def test_path_up_the_flight_matches_the_hand_value(hall_grid, tmp_path):
    hall, grid = hall_grid
    a_run, b_run = hall.run
    # A on the ground floor in lane B (under nothing: two storeys have one flight, in lane
    # A), B on the level-1 landing at the east end of lane A: round the core wall's west end,
    # then straight up the flight
    A, B = [3.5, 0.0, 2.2], [b_run + 0.8, FLOOR_PITCH, 0.7]
    assert grid.island_of(A) == grid.island_of(B) >= 0
    d = grid.geodesic_distance(A, [B])
    # hand value: the plan-view path is the exact 2D geodesic of the hall without its stair
    # (shapely reference); its legs count in 3D with the heights of their ends (as a navmesh
    # path's corners do): flat to the corner at the core wall's end, then one leg that rises
    # FLOOR_PITCH
    _, flat = _hall_boxes(stairs=False)
    tris = load_mesh(ts.export_boxes(str(tmp_path / "flat.glb"), flat), "z").triangles
    ref = ExactGeodesics(
        free_space(tris, AGENT.radius, AGENT.height, AGENT.max_climb, quad_segs=16)
    )
    plan = ref.path((A[0], A[2]), (B[0], B[2]))[0]
    legs = np.linalg.norm(np.diff(plan, axis=0), axis=1)
    assert (
        len(plan) >= 4 and plan[-2][0] < a_run
    )  # it bends round the core wall's end, before the flight
    hand = float(legs[:-1].sum() + math.hypot(legs[-1], FLOOR_PITCH))
    assert d == pytest.approx(hand, rel=0.01)
    # longer than the straight line and than the plan-view geodesic: the climb counts
    assert d > math.dist(A, B) + 1.0 and d > float(legs.sum()) + 0.5
    assert grid.geodesic_distance(B, [A]) == pytest.approx(d, abs=0.01)
    pts, length = grid.find_path(A, [B])
    ys = [float(p[1]) for p in pts]
    assert length == pytest.approx(d, rel=1e-9)
    assert ys[0] == pytest.approx(0.0) and ys[-1] == pytest.approx(FLOOR_PITCH, abs=1e-3)
    assert all(y2 >= y1 - 1e-5 for y1, y2 in zip(ys, ys[1:]))  # climbs, never drops


def test_three_storeys_switch_back(tmp_path):
    hall, boxes = _hall_boxes(floors=3)
    grid = NavGrid(
        load_mesh(ts.export_boxes(str(tmp_path / "h3.glb"), boxes), "z").triangles, AGENT
    )
    a_run, b_run = hall.run
    A = [0.9, 0.0, 0.7]  # ground, west end
    B = [0.9, 2 * FLOOR_PITCH, 0.7]  # level 2's landing, right above A
    C = [b_run + 0.8, FLOOR_PITCH, 0.7]  # level 1's landing
    assert grid.island_of(A) == grid.island_of(B) == grid.island_of(C) >= 0
    d_ab, d_ac, d_cb = (grid.geodesic_distance(p, [q]) for p, q in ((A, B), (A, C), (C, B)))
    # up lane A, across level 1's landing round the core wall's east end, up lane B: both
    # flights in 3D, and the flat walks from A to the first and from the second back to B
    run3d = math.hypot(b_run - a_run, FLOOR_PITCH)
    assert 2 * run3d + 2 * (a_run - A[0]) < d_ab < d_ac + d_cb
    assert d_ab < 2 * run3d + 2 * (a_run - A[0]) + 2.0
    pts, _ = grid.find_path(A, [B])
    ys = [float(p[1]) for p in pts]
    assert ys[-1] == pytest.approx(2 * FLOOR_PITCH, abs=1e-3) and all(
        y2 >= y1 - 1e-5 for y1, y2 in zip(ys, ys[1:])
    )
    assert max(float(p[0]) for p in pts) > b_run  # it turns on level 1's landing


@pytest.mark.slow
def test_generated_two_storey_apartment_is_one_island_reached_up_its_stair(tmp_path):
    import json

    from habitat_mosnav.scenes.generator import SceneOptions, generate_scene
    from habitat_mosnav.sims.geometry import scene_up_axis

    info = generate_scene(str(tmp_path), 0, 0, SceneOptions(rooms=6, floors=2))
    with open(info.meta, encoding="utf-8") as fh:
        hall = [r for r in json.load(fh)["regions"] if r["name"] == "stairs"][0]["aabb"]
    grid = NavGrid(load_mesh(info.glb, scene_up_axis(info.glb)).triangles, AGENT)
    main = grid.largest_island
    for level in (0, 1):  # both floors in the main island, about as large
        assert grid.topdown(0.1, level * FLOOR_PITCH, 0.3).sum() * 0.01 > 40.0
    rng = np.random.default_rng(0)
    lo = [p for p in (grid.random_point(rng, main) for _ in range(200)) if p[1] < 0.1][:5]
    for p in lo:
        q = np.array([p[0], FLOOR_PITCH, p[2]])
        if not grid.is_navigable(q):
            continue
        d = grid.geodesic_distance(p, [q])
        pts, length = grid.find_path(p, [q])
        # to the hall, up, back: more than twice the way from p to the hall's door, and the
        # path climbs inside the hall
        cx, cz = hall["center"][0], hall["center"][2]
        assert d > 2 * math.hypot(p[0] - cx, p[2] - cz) - HALL_LENGTH and d > FLOOR_PITCH + 4.0
        mid = [x for x in pts if 0.3 < x[1] < FLOOR_PITCH - 0.3]
        assert mid and all(
            abs(x[0] - cx) <= hall["size"][0] / 2 and abs(x[2] - cz) <= hall["size"][2] / 2
            for x in mid
        )
        assert length == pytest.approx(d, rel=1e-4)
