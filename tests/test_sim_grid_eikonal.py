"""sims/grid/eikonal.py: scikit-fmm where it installs (Python 3.10+), scipy's Dijkstra over
the 16-neighbourhood where it does not (Python 3.9): both against exact distances."""

import math
import warnings

import numpy as np
import pytest

from habitat_mosnav.sims.grid import eikonal

DX = 0.05
R = 0.3  # the source: a disc of this radius at the grid's centre


def _disc(n=121, wall=False):
    c = (n - 1) / 2
    rr, cc = np.mgrid[0:n, 0:n]
    phi = np.hypot(rr - c, cc - c) * DX - R
    mask = np.zeros((n, n), bool)
    if wall:  # a wall from the top edge down to row c + 20, at column c + 15
        mask[: int(c) + 21, int(c) + 15] = True
    return np.ma.MaskedArray(phi, mask), c


def _solve(phi, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.ma.filled(eikonal.travel_time(phi, DX, **kw), np.inf)


def test_dijkstra_in_open_space_is_within_its_stated_bound():
    phi, c = _disc()
    d = _solve(phi, force_dijkstra=True)
    exact = np.ma.getdata(phi)
    far = exact > 0.1
    rel = (d[far] - exact[far]) / exact[far]
    # never shorter than the straight line (less the seeds' interpolation, under a cell);
    # at most 1 / cos(11.25 deg) - 1 = 1.9 % longer, plus that cell
    assert np.all(d[far] >= exact[far] - DX)
    assert np.all(d[far] <= exact[far] * (1 / math.cos(math.radians(11.25))) + DX)
    assert rel.max() > 0.01  # the bound is nearly reached: the 16-neighbourhood is not exact


def test_dijkstra_bends_around_a_wall_as_the_exact_geodesic():
    phi, c = _disc(wall=True)
    d = _solve(phi, force_dijkstra=True)
    # behind the wall: around its lower end (row c + 20.5 .. column c + 15)
    corner = np.array([c + 21, c + 15])
    r, q = int(c - 40), int(c + 40)  # a cell above-right, hidden behind the wall
    exact = (np.hypot(*(corner - c)) * DX - R) + np.hypot(*(np.array([r, q]) - corner)) * DX
    straight = np.hypot(r - c, q - c) * DX - R
    assert exact > straight + 0.3
    assert exact - DX <= d[r, q] <= exact * 1.02 + 2 * DX
    assert not np.isfinite(d[phi.mask]).any()


def test_scikit_fmm_and_dijkstra_agree_where_scikit_fmm_installs():
    pytest.importorskip("skfmm")
    assert eikonal.backend() == "scikit-fmm"
    phi, _ = _disc(wall=True)
    a, b = _solve(phi), _solve(phi, force_dijkstra=True)
    outside = np.ma.getdata(phi) > 0
    assert np.array_equal(
        np.isfinite(a) & outside, np.isfinite(b) & outside
    )  # the same cells reached
    both = np.isfinite(a) & np.isfinite(b) & (np.ma.getdata(phi) > 0.2)
    assert np.abs(b[both] / a[both] - 1).max() < 0.03


def test_speed_scales_travel_time():
    phi, _ = _disc()
    slow = np.full(phi.shape, 0.5)
    d1, d2 = _solve(phi, force_dijkstra=True), _solve(phi, speed=slow, force_dijkstra=True)
    ok = np.isfinite(d1) & (np.ma.getdata(phi) > 0)
    assert np.allclose(d2[ok], 2 * d1[ok])


def test_no_zero_contour_is_a_value_error_as_in_scikit_fmm():
    phi = np.ma.MaskedArray(np.ones((10, 10)), np.zeros((10, 10), bool))
    with pytest.raises(ValueError):
        eikonal.travel_time(phi, DX, force_dijkstra=True)
