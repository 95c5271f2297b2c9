"""Floor plans: rectangular rooms tiling a rectangular apartment, joined by doors.

Two styles: a corridor strip with rooms on both sides (each room opens onto it), or a
guillotine split whose room adjacency graph gets a spanning tree of doors from the
living room (plus sometimes one extra door, making a loop).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

WALL_THICKNESS = 0.1
HALF_WALL = WALL_THICKNESS / 2.0
WALL_HEIGHT = 2.5
DOOR_HEIGHT = 2.1
MIN_ROOM_SIDE = 2.4
DOOR_MARGIN = 0.3  # from a door's edge to the nearest wall corner


@dataclass
class Room:
    """A room rectangle [x0, x1] x [z0, z1] between wall centre lines."""

    region_id: int
    name: str
    x0: float
    z0: float
    x1: float
    z1: float
    doors: List[int] = field(default_factory=list)

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def depth(self) -> float:
        return self.z1 - self.z0

    @property
    def area(self) -> float:
        return self.width * self.depth


@dataclass
class Door:
    """An opening in the wall line ``axis = coord`` over [lo, hi] between two rooms.

    ``axis`` is "x" for a wall on the line x = coord (opening spans z) and "z" for a
    wall on the line z = coord (opening spans x).
    """

    door_id: int
    axis: str
    coord: float
    lo: float
    hi: float
    rooms: Tuple[int, int]
    height: float = DOOR_HEIGHT

    @property
    def width(self) -> float:
        return round(self.hi - self.lo, 6)

    @property
    def center(self) -> Tuple[float, float]:
        """(x, z) of the opening's centre."""
        mid = (self.lo + self.hi) / 2.0
        return (self.coord, mid) if self.axis == "x" else (mid, self.coord)


@dataclass
class FloorPlan:
    rooms: List[Room]
    doors: List[Door]
    width: float
    depth: float


def _r(v: float) -> float:
    return float(np.round(v, 2))


def _split_lengths(rng, total: float, k: int, min_len: float) -> List[float]:
    """k lengths >= min_len summing to total, with random proportions."""
    spare = total - k * min_len
    w = rng.dirichlet(np.full(k, 2.0))
    lens = [min_len + spare * wi for wi in w]
    out = [_r(v) for v in lens[:-1]]
    out.append(_r(total - sum(out)))
    return out


def _corridor_plan(rng, n: int):
    """n-1 rooms on both sides of a corridor running along x."""
    k = n - 1
    k_top = k // 2 + (int(rng.integers(2)) if k % 2 else 0)
    k_bot = k - k_top
    per = max(k_top, k_bot)
    width = _r(max(per * rng.uniform(2.9, 4.0), 6.0))
    cw = _r(rng.uniform(1.3, 1.6))
    d_top = _r(rng.uniform(3.0, 4.4))
    d_bot = _r(rng.uniform(3.0, 4.4))
    depth = _r(d_top + cw + d_bot)
    rects = [(0.0, d_bot, width, d_bot + cw)]  # corridor first
    for z0, z1, kk in ((0.0, d_bot, k_bot), (d_bot + cw, depth, k_top)):
        x = 0.0
        for w in _split_lengths(rng, width, kk, MIN_ROOM_SIDE):
            rects.append((_r(x), _r(z0), _r(x + w), _r(z1)))
            x += w
        rects[-1] = rects[-1][:2] + (width, rects[-1][3])
    return rects, width, depth


def _guillotine_plan(rng, n: int):
    """Split the apartment rectangle n-1 times, always a room big enough to split."""
    area = n * rng.uniform(12.0, 17.0)
    aspect = rng.uniform(1.1, 1.6)
    width = _r(np.sqrt(area * aspect))
    depth = _r(area / width)
    rects = [(0.0, 0.0, width, depth)]
    while len(rects) < n:
        order = sorted(
            range(len(rects)),
            key=lambda i: -(rects[i][2] - rects[i][0]) * (rects[i][3] - rects[i][1]),
        )
        done = False
        for i in order:
            x0, z0, x1, z1 = rects[i]
            w, d = x1 - x0, z1 - z0
            along_x = w >= d if rng.random() < 0.8 else w < d
            length = w if along_x else d
            if length < 2 * MIN_ROOM_SIDE:
                along_x = not along_x
                length = w if along_x else d
                if length < 2 * MIN_ROOM_SIDE:
                    continue
            t = _r(rng.uniform(MIN_ROOM_SIDE, length - MIN_ROOM_SIDE))
            if along_x:
                rects[i : i + 1] = [(x0, z0, _r(x0 + t), z1), (_r(x0 + t), z0, x1, z1)]
            else:
                rects[i : i + 1] = [(x0, z0, x1, _r(z0 + t)), (x0, _r(z0 + t), x1, z1)]
            done = True
            break
        if not done:
            return None
    return rects, width, depth


def _shared_edge(a, b) -> Optional[Tuple[str, float, float, float]]:
    """(axis, coord, lo, hi) of the wall segment shared by two rectangles, if any."""
    ax0, az0, ax1, az1 = a
    bx0, bz0, bx1, bz1 = b
    eps = 1e-6
    for ca, cb in ((ax1, bx0), (ax0, bx1)):
        if abs(ca - cb) < eps:
            lo, hi = max(az0, bz0), min(az1, bz1)
            if hi - lo > eps:
                return ("x", ca, lo, hi)
    for ca, cb in ((az1, bz0), (az0, bz1)):
        if abs(ca - cb) < eps:
            lo, hi = max(ax0, bx0), min(ax1, bx1)
            if hi - lo > eps:
                return ("z", ca, lo, hi)
    return None


def _door_on(rng, edge, door_id, rooms) -> Optional[Door]:
    axis, coord, lo, hi = edge
    width = _r(rng.choice([0.95, 1.0, 1.05, 1.1]))
    lo_ok, hi_ok = lo + DOOR_MARGIN, hi - DOOR_MARGIN - width
    if hi_ok < lo_ok:
        return None
    start = _r(rng.uniform(lo_ok, hi_ok))
    return Door(door_id, axis, _r(coord), start, _r(start + width), rooms)


def _room_names(n: int, areas: List[float], corridor: bool, rng) -> List[str]:
    """Room types: living room largest, bathroom smallest, then kitchen, bedrooms, ..."""
    names = [""] * n
    idx = list(range(n))
    if corridor:
        names[0] = "corridor"
        idx = idx[1:]
    idx.sort(key=lambda i: -areas[i])
    names[idx[0]] = "living room"
    names[idx[-1]] = "bathroom"
    middle = idx[1:-1]
    rng.shuffle(middle)
    extras = ["kitchen", "bedroom"] + list(rng.permutation(["bedroom", "office", "dining room"]))
    if len(middle) > len(extras):  # big plans (> 7 rooms): more of every kind
        kinds = [
            "bedroom",
            "bedroom",
            "office",
            "bathroom",
            "kitchen",
            "dining room",
            "living room",
        ]
        extras += [kinds[int(k)] for k in rng.integers(len(kinds), size=len(middle) - len(extras))]
    for i, name in zip(middle, extras):
        names[i] = str(name)
    return names


def make_floor_plan(rng: np.random.Generator, num_rooms: Optional[int] = None) -> FloorPlan:
    """A connected floor plan of 4-6 rooms (or ``num_rooms``), all doors >= 0.9 m wide.
    Plans of more than 12 rooms are guillotine splits (a corridor would be a street)."""
    for _ in range(100):
        n = int(num_rooms if num_rooms is not None else rng.integers(4, 7))
        corridor = n >= 5 and rng.random() < 0.7 and n <= 12
        plan = _corridor_plan(rng, n) if corridor else _guillotine_plan(rng, n)
        if plan is None:
            continue
        rects, width, depth = plan
        areas = [(r[2] - r[0]) * (r[3] - r[1]) for r in rects]
        names = _room_names(n, areas, corridor, rng)
        # adjacency with room for a door
        edges = {}
        for i in range(n):
            for j in range(i + 1, n):
                e = _shared_edge(rects[i], rects[j])
                if e is not None and e[3] - e[2] >= 1.1 + 2 * DOOR_MARGIN:
                    edges[(i, j)] = e
        if corridor:
            chosen = [(0, j) for j in range(1, n) if (0, j) in edges]
            if len(chosen) != n - 1:
                continue
        else:
            # spanning tree grown from the living room, bathroom as a leaf
            root = names.index("living room")
            bath = names.index("bathroom")
            seen, chosen = {root}, []
            while len(seen) < n:
                cand = [
                    (i, j)
                    for (i, j) in edges
                    if (i in seen) != (j in seen)
                    and not ((i == bath or j == bath) and bath in seen)
                ]
                if not cand:
                    break
                e = cand[int(rng.integers(len(cand)))]
                chosen.append(e)
                seen.update(e)
            if len(seen) < n:
                continue
            rest = [e for e in edges if e not in chosen and bath not in e]
            if rest and rng.random() < 0.35:
                chosen.append(rest[int(rng.integers(len(rest)))])
        ox, oz = -_r(width / 2.0), -_r(depth / 2.0)  # centre the apartment at the origin
        rooms = [
            Room(i, names[i], _r(r[0] + ox), _r(r[1] + oz), _r(r[2] + ox), _r(r[3] + oz))
            for i, r in enumerate(rects)
        ]
        doors = []
        ok = True
        for i, j in sorted(chosen):
            axis, coord, lo, hi = edges[(i, j)]
            off = ox if axis == "x" else oz
            off_span = oz if axis == "x" else ox
            door = _door_on(
                rng, (axis, coord + off, lo + off_span, hi + off_span), len(doors), (i, j)
            )
            if door is None:
                ok = False
                break
            doors.append(door)
            rooms[i].doors.append(door.door_id)
            rooms[j].doors.append(door.door_id)
        if ok:
            return FloorPlan(rooms, doors, width, depth)
    raise RuntimeError("could not generate a floor plan")  # pragma: no cover
