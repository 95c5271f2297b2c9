"""NavMeshQuery's multi-goal query computes fewer paths than habitat-sim's walk, same answers.

The walk (habitat-sim's MultiGoalShortestPath) computes the path to every goal in order of
straight-line distance until that distance exceeds the best path; goals behind a wall make
it compute them all. ``find_path`` must return exactly the walk's answer (length and
points) while computing only the paths its lower bounds cannot rule out, and must not
recompute a path from the same start. Runs on the bundled demo navmeshes, no habitat-sim.
"""

import glob
import math
import os

import numpy as np
import pytest

import habitat_mosnav
from habitat_mosnav.sims.navmesh import read_navmesh
from habitat_mosnav.sims import navmesh_query
from habitat_mosnav.sims.navmesh_query import INF, NavMeshQuery, walk_find_path

NAVMESHES = sorted(
    glob.glob(
        os.path.join(
            os.path.dirname(habitat_mosnav.__file__), "data", "demo", "scenes", "*", "*.navmesh"
        )
    )
)


def _walk(q: NavMeshQuery, start, goals):
    """habitat-sim's walk (the module's plain reference): (length, points, paths computed)."""
    pts, best, n = walk_find_path(q, start, goals)
    return best, pts, n


def _queries(q: NavMeshQuery, n: int, seed: int):
    """Starts on the mesh and goal sets like the targets' view points: 1-3 clusters of
    1-25 points (0.4 m spread) around random floor points, a few repeated (ties)."""
    rng = np.random.default_rng(seed)
    floor = np.array([q.random_point(rng) for _ in range(n)])
    for i in range(n):
        start = floor[i] + rng.normal(0, 0.05, 3) * [1, 0.2, 1]
        goals = np.concatenate(
            [
                floor[rng.integers(n)]
                + rng.normal(0, 0.4, (int(rng.integers(1, 26)), 3)) * [1, 0.05, 1]
                for _ in range(int(rng.integers(1, 4)))
            ]
        )
        if i % 7 == 0:
            goals = np.concatenate([goals, goals[:3]])
        yield start, goals


class _Counting(NavMeshQuery):
    """Counts the paths computed (``_path_to``)."""

    paths = 0

    def _path_to(self, *args):
        self.paths += 1
        return super()._path_to(*args)


@pytest.mark.parametrize("path", NAVMESHES, ids=[os.path.basename(p) for p in NAVMESHES])
def test_same_answer_as_the_walk_from_fewer_paths(path):
    mesh = read_navmesh(path)
    ref, q = NavMeshQuery(mesh), _Counting(mesh)
    walked = 0
    for start, goals in _queries(ref, 150, seed=5):
        d, pts, n = _walk(ref, start, goals)
        got_pts, got_d = q.find_path(start, goals)
        assert got_d == d or (math.isinf(got_d) and math.isinf(d))
        assert len(got_pts) == len(pts) and all(np.array_equal(a, b) for a, b in zip(got_pts, pts))
        walked += n
    assert walked > 1000  # the queries make the walk work
    assert q.paths < 0.6 * walked, (q.paths, walked)


@pytest.mark.parametrize("path", NAVMESHES, ids=[os.path.basename(p) for p in NAVMESHES])
def test_lower_bounds_never_exceed_the_path(path):
    """The doorway bound (before its slack) is at most the funnel's length, goal by goal."""
    q = NavMeshQuery(read_navmesh(path))
    checked = 0
    for start, goals in _queries(q, 100, seed=9):
        s = tuple(float(v) for v in np.asarray(start, np.float64))
        sloc = q.nearest(s)
        ends = [tuple(g.tolist()) for g in np.asarray(goals, np.float64)]
        for end, bound in zip(ends, q._bounds(s, sloc, ends)):
            eloc = q.nearest(end)
            res = None if eloc is None else q._path_to(s, sloc, end, eloc)
            length = INF if res is None else res[0]
            assert bound <= length
            if math.isfinite(bound) and math.isfinite(length):
                assert bound + navmesh_query.BOUND_SLACK <= length + 1e-9
                checked += 1
    assert checked > 500


def test_paths_from_one_start_are_computed_once():
    """The measures' all-targets query and a claim's per-target queries from one position
    share their paths; a new start computes them again."""
    q = _Counting(read_navmesh(NAVMESHES[0]))
    start, goals = next(s for s in _queries(q, 40, seed=2) if len(s[1]) > 10)
    first = q.find_path(start, goals)
    n = q.paths
    assert n >= 1
    again = q.find_path(start, goals)
    assert q.paths == n and again[1] == first[1]
    parts = np.array_split(goals, 3)
    for part in parts:
        q.find_path(start, part)
    m = q.paths
    for part in parts:  # every path these need is known now
        q.find_path(start, part)
    assert q.paths == m
    q.find_path(np.asarray(start) + [0.05, 0.0, 0.0], goals)
    assert q.paths > m


def test_each_caller_keeps_its_own_paths():
    """Simulators share the query object but not their memo: another memo from the same
    point computes its paths again (two envs replaying one trajectory must not reuse
    each other's work), with the same answer."""
    q = _Counting(read_navmesh(NAVMESHES[0]))
    start, goals = next(s for s in _queries(q, 40, seed=2) if len(s[1]) > 10)
    mine, theirs = q.new_memo(), q.new_memo()
    first = q.find_path(start, goals, mine)
    n = q.paths
    again = q.find_path(start, goals, theirs)
    assert again[1] == first[1] and all(np.array_equal(a, b) for a, b in zip(again[0], first[0]))
    assert q.paths == 2 * n
    m = q.paths
    q.find_path(start, goals, mine)
    q.geodesic_distance(start, goals, theirs)
    assert q.paths == m


def test_snap_honours_max_y_delta_and_queries_fail_as_documented():
    q = NavMeshQuery(read_navmesh(NAVMESHES[0]))
    rng = np.random.default_rng(3)
    p = q.random_point(rng)
    above = np.asarray(p, np.float64) + [0.0, 1.0, 0.0]  # 1 m over the floor, within the pick box
    loc = q.snap(above)
    dy = abs(loc.y - above[1])
    assert dy > 0.1  # the projection moved it down (to the floor, or a furniture top)
    assert q.snap(above, max_y_delta=dy - 0.01) is None
    assert np.array_equal(q.snap(above, max_y_delta=dy + 0.01).xyz(), loc.xyz())
    far = [1e4, 0.0, 1e4]
    assert q.snap(far) is None and q.nearest([math.nan, 0.0, 0.0]) is None
    assert not q.is_navigable(far) and q.island_of(far) == -1 and q.island_radius(far) == 0.0
    assert q.find_path(far, [p]) == ([], INF) and q.geodesic_distance(p, np.zeros((0, 3))) == INF
    assert np.array_equal(q.try_step(far, p), np.asarray(far, np.float32))
    assert walk_find_path(q, far, [p]) == ([], INF, 0)
