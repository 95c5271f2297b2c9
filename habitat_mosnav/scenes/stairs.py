"""A stair hall that joins the floors of a multi-storey apartment.

Every floor repeats the same floor plan, ``FLOOR_PITCH`` metres above the one below. The
hall is a box built against the apartment's north outer wall (z = max): a switchback stair,
one straight flight per storey in two lanes beside a core wall, with a landing at each
level. The flight from level k rises toward +x in lane A (k even) or toward -x in lane B
(k odd), so that level k's landing is at the west end of the hall (k even) or the east end
(k odd), and one door on each floor opens from a room onto it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from habitat_mosnav.scenes.layout import DOOR_MARGIN, HALF_WALL, WALL_HEIGHT, Door, FloorPlan

#: floor-to-floor height: a storey's walls, its ceiling slab and the next floor slab
FLOOR_PITCH = WALL_HEIGHT + 0.1
#: steps per flight: a rise of 0.186 m, climbable by an agent with max_climb 0.2
STEPS = 14
TREAD = 0.28
LANDING = 1.5
LANE = 1.3
CORE = 0.15
HALL_WALL = 0.1
STAIR_DOOR = 1.0
#: hall size: x along the flights, z across the two lanes and the core wall
HALL_LENGTH = 2 * HALL_WALL + 2 * LANDING + STEPS * TREAD
HALL_DEPTH = HALF_WALL + 2 * LANE + CORE + HALL_WALL


@dataclass
class StairHall:
    """Where the hall stands (x0, z0 = the apartment's north wall line) and its floors."""

    x0: float
    z0: float
    floors: int
    rooms: List[int]  # per level: index (in the floor plan) of the room with the hall door

    @property
    def run(self) -> Tuple[float, float]:
        """x extent of the flights (between the two landings)."""
        a = self.x0 + HALL_WALL + LANDING
        return a, a + STEPS * TREAD

    def landing_x(self, level: int) -> Tuple[float, float]:
        a, b = self.run
        return (
            (self.x0 + HALL_WALL, a) if level % 2 == 0 else (b, self.x0 + HALL_LENGTH - HALL_WALL)
        )

    def door(self, level: int, door_id: int, region: int, hall_region: int) -> Door:
        lo, hi = self.landing_x(level)
        mid = (lo + hi) / 2
        return Door(
            door_id,
            "z",
            self.z0,
            round(mid - STAIR_DOOR / 2, 4),
            round(mid + STAIR_DOOR / 2, 4),
            (region, hall_region),
        )

    @property
    def top(self) -> float:
        """Height of the hall's ceiling (that of the top storey)."""
        return (self.floors - 1) * FLOOR_PITCH + WALL_HEIGHT

    def boxes(self) -> List[Tuple[str, Tuple[float, float, float], Tuple[float, float, float]]]:
        """(kind, lo, hi) of every box: kind is "floor" (hall floor, landings, steps),
        "wall" (outer and core walls) or "ceiling"."""
        x0, z0, x1 = self.x0, self.z0, self.x0 + HALL_LENGTH
        z1 = z0 + HALL_DEPTH
        zi0, zi1 = z0, z1 - HALL_WALL  # the floor reaches under the apartment's wall half
        top = self.top
        out = [
            ("floor", (x0, -0.05, z0), (x1, 0.0, z1)),
            ("ceiling", (x0, top, z0), (x1, top + 0.05, z1)),
            ("wall", (x0, 0.0, z1 - HALL_WALL), (x1, top, z1)),
            ("wall", (x0, 0.0, z0 + HALF_WALL), (x0 + HALL_WALL, top, z1)),
            ("wall", (x1 - HALL_WALL, 0.0, z0 + HALF_WALL), (x1, top, z1)),
        ]
        a, b = self.run
        lane_a = (z0 + HALF_WALL, z0 + HALF_WALL + LANE)
        lane_b = (lane_a[1] + CORE, lane_a[1] + CORE + LANE)
        out.append(("wall", (a, 0.0, lane_a[1]), (b, top, lane_b[0])))
        rise = FLOOR_PITCH / STEPS
        for k in range(self.floors - 1):
            base = k * FLOOR_PITCH
            za, zb = lane_a if k % 2 == 0 else lane_b
            for i in range(STEPS):
                if k % 2 == 0:
                    xa, xb = a + i * TREAD, a + (i + 1) * TREAD
                else:
                    xa, xb = b - (i + 1) * TREAD, b - i * TREAD
                out.append(("floor", (xa, base, za), (xb, base + (i + 1) * rise, zb)))
        for level in range(1, self.floors):
            lo, hi = self.landing_x(level)
            y = level * FLOOR_PITCH
            out.append(("floor", (lo, y - 0.1, zi0), (hi, y, zi1)))
        return out


def place_stair_hall(plan: FloorPlan, floors: int) -> Optional[StairHall]:
    """The westmost hall position along the north wall where every level's door opens
    into one room with ``DOOR_MARGIN`` to its corners; None when the plan has none."""
    zmax = max(r.z1 for r in plan.rooms)
    north = [(i, r) for i, r in enumerate(plan.rooms) if abs(r.z1 - zmax) < 1e-6]
    xmin, xmax = min(r.x0 for r in plan.rooms), max(r.x1 for r in plan.rooms)
    for x0 in np.arange(xmin, xmax - HALL_LENGTH + 1e-9, 0.05):
        hall = StairHall(round(float(x0), 4), zmax, floors, [])
        for level in range(min(floors, 2)):  # levels alternate between the two ends
            d = hall.door(level, 0, 0, 0)
            room = [
                i for i, r in north if r.x0 + DOOR_MARGIN <= d.lo and d.hi <= r.x1 - DOOR_MARGIN
            ]
            if not room:
                break
            hall.rooms.append(room[0])
        else:
            hall.rooms = [hall.rooms[level % 2] for level in range(floors)]
            return hall
    return None
