"""Procedural multi-room apartments written in HM3D's file layout.

``generate_scene(out_dir, seed, index)`` builds one apartment from
``numpy.random.default_rng`` streams seeded by (seed, index) only, so the same
arguments always give byte-identical files, and scene ``index`` of a batch does not
depend on the batch size.
"""

from __future__ import annotations

import json
import os
import string
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from scipy import ndimage

from habitat_mosnav.scenes import furniture as F
from habitat_mosnav.scenes.geometry import (
    MeshData,
    Part,
    bake_colors,
    box,
    box_from_bounds,
    yaw_matrix,
)
from habitat_mosnav.scenes.gltf import write_semantic_glb
from habitat_mosnav.scenes.io import world_to_file, write_semantic_txt
from habitat_mosnav.scenes.layout import (
    HALF_WALL,
    WALL_HEIGHT,
    Door,
    FloorPlan,
    Room,
    make_floor_plan,
)
from habitat_mosnav.scenes.scan import scan_like
from habitat_mosnav.scenes.stairs import (
    FLOOR_PITCH,
    HALL_DEPTH,
    HALL_LENGTH,
    StairHall,
    place_stair_hall,
)

SCHEMA_VERSION = 1
AGENT_RADIUS = 0.22  # clearance kept around furniture (agents of radius <= 0.18 pass)
DOOR_CLEARANCE = 1.0  # metres kept free in front of a door on both sides
NAV_RES = 0.05
STRUCTURAL = ("wall", "floor", "ceiling")

_ID_ALPHABET = string.ascii_letters + string.digits


@dataclass
class SceneInfo:
    """What ``generate_scene`` wrote."""

    scene_id: str
    index: int
    directory: str
    glb: str
    semantic_glb: str
    semantic_txt: str
    meta: str
    num_objects: int  # annotated furniture objects (goal candidates)
    num_annotations: int  # lines of semantic.txt (furniture + walls/floors/ceilings)
    num_regions: int
    num_triangles: int


@dataclass(eq=False)
class Placed:
    """One object in the world: its parts (local frame), pose and metadata."""

    category: str
    region_id: int
    parts: List[Part]
    yaw: float = 0.0
    position: Tuple[float, float, float] = (0.0, 0.0, 0.0)  # local origin in the world
    lo: np.ndarray = None  # world AABB
    hi: np.ndarray = None
    color: List[str] = field(default_factory=list)
    material: List[str] = field(default_factory=list)
    feature: List[str] = field(default_factory=list)
    parent: Optional["Placed"] = None
    side: Optional[str] = None
    u: float = 0.0
    obstacle: bool = True
    object_id: int = 0
    size_local: Tuple[float, float, float] = (0.0, 0.0, 0.0)


def scene_id_for(seed: int, index: int) -> str:
    """11 characters like HM3D's ids, a pure function of (seed, index)."""
    rng = np.random.default_rng([int(seed), int(index), 0x1D])
    return "".join(_ID_ALPHABET[i] for i in rng.integers(len(_ID_ALPHABET), size=11))


def _normalise(parts: List[Part]):
    """Shift parts so the footprint is centred on x = z = 0 and the bottom is y = 0."""
    allv = np.concatenate([p.vertices for p in parts])
    lo, hi = allv.min(0), allv.max(0)
    shift = np.array([-(lo[0] + hi[0]) / 2, -lo[1], -(lo[2] + hi[2]) / 2])
    for p in parts:
        p.vertices = p.vertices + shift
    return hi - lo


_SIDES = {  # side: (axis of the wall line, inward normal (nx, nz))
    "x0": ("x", (1.0, 0.0)),
    "x1": ("x", (-1.0, 0.0)),
    "z0": ("z", (0.0, 1.0)),
    "z1": ("z", (0.0, -1.0)),
}
_OPPOSITE = {"x0": "x1", "x1": "x0", "z0": "z1", "z1": "z0"}


class RoomFurnisher:
    """Places items in one room: no overlaps, doors kept clear, free space connected."""

    def __init__(self, room: Room, doors: List[Door], rng: np.random.Generator):
        self.room = room
        self.doors = doors
        self.rng = rng
        self.placed: List[Placed] = []
        self.ix0, self.iz0 = room.x0 + HALF_WALL, room.z0 + HALF_WALL
        self.ix1, self.iz1 = room.x1 - HALF_WALL, room.z1 - HALF_WALL
        self.keepout = []
        for d in doors:
            if d.axis == "x":
                self.keepout.append(
                    (
                        np.array([d.coord - DOOR_CLEARANCE, d.lo - 0.15]),
                        np.array([d.coord + DOOR_CLEARANCE, d.hi + 0.15]),
                    )
                )
            else:
                self.keepout.append(
                    (
                        np.array([d.lo - 0.15, d.coord - DOOR_CLEARANCE]),
                        np.array([d.hi + 0.15, d.coord + DOOR_CLEARANCE]),
                    )
                )
        nx = int(np.ceil((room.x1 - room.x0) / NAV_RES))
        nz = int(np.ceil((room.z1 - room.z0) / NAV_RES))
        self.gx = room.x0 + (np.arange(nx) + 0.5) * NAV_RES
        self.gz = room.z0 + (np.arange(nz) + 0.5) * NAV_RES
        r = AGENT_RADIUS
        self.base_free = (
            (self.gx[:, None] > self.ix0 + r)
            & (self.gx[:, None] < self.ix1 - r)
            & (self.gz[None, :] > self.iz0 + r)
            & (self.gz[None, :] < self.iz1 - r)
        )
        self.door_cells = []
        for d in doors:
            cx, cz = d.center
            inward = 0.3
            if d.axis == "x":
                px = cx + (inward if abs(cx - room.x0) < 1e-6 else -inward)
                pz = cz
            else:
                px, pz = cx, cz + (inward if abs(cz - room.z0) < 1e-6 else -inward)
            self.door_cells.append((int((px - room.x0) / NAV_RES), int((pz - room.z0) / NAV_RES)))

    # ------------------------------------------------------------------ poses
    def _world_box(self, size, yaw, pos):
        w, h, d = size
        quarter = int(round(yaw / (np.pi / 2))) % 2
        ex, ez = (d, w) if quarter else (w, d)
        lo = np.array([pos[0] - ex / 2, pos[1], pos[2] - ez / 2])
        hi = np.array([pos[0] + ex / 2, pos[1] + h, pos[2] + ez / 2])
        return lo, hi

    def _wall_pose(self, side, u, size, gap, y0=0.0):
        axis, (nx, nz) = _SIDES[side]
        w, _, d = size
        yaw = float(np.arctan2(nx, nz))
        off = d / 2 + gap
        if axis == "x":
            x = (self.ix0 if side == "x0" else self.ix1) + nx * off
            return yaw, (x, y0, u)
        z = (self.iz0 if side == "z0" else self.iz1) + nz * off
        return yaw, (u, y0, z)

    def _side_range(self, side, w):
        axis = _SIDES[side][0]
        lo, hi = (self.iz0, self.iz1) if axis == "x" else (self.ix0, self.ix1)
        return lo + w / 2 + 0.02, hi - w / 2 - 0.02

    def _wall_candidates(self, size, gap, sides=None, corner=False, near_u=None, y0=0.0, tries=10):
        sides = list(sides if sides is not None else self.rng.permutation(list(_SIDES)))
        out = []
        for side in sides:
            a, b = self._side_range(side, size[0])
            if b < a:
                continue
            if corner:
                us = [a, b] if self.rng.random() < 0.5 else [b, a]
            elif near_u is not None:
                us = [near_u + v for v in self.rng.normal(0.0, 0.4, tries)]
                us = [min(max(v, a), b) for v in us]
            else:
                us = list(self.rng.uniform(a, b, tries))
            for u in us:
                yaw, pos = self._wall_pose(side, float(u), size, gap, y0)
                out.append((yaw, pos, side, float(u)))
        return out

    # ------------------------------------------------------------------ checks
    def _inside(self, lo, hi):
        e = 1e-6
        return (
            lo[0] >= self.ix0 - e
            and hi[0] <= self.ix1 + e
            and lo[2] >= self.iz0 - e
            and hi[2] <= self.iz1 + e
        )

    def _overlaps(self, lo, hi, ignore=()):
        for k0, k1 in self.keepout:
            if lo[0] < k1[0] and hi[0] > k0[0] and lo[2] < k1[1] and hi[2] > k0[1]:
                return True
        c = 0.03
        for p in self.placed:
            if p in ignore:
                continue
            if (
                lo[0] < p.hi[0] + c
                and hi[0] > p.lo[0] - c
                and lo[2] < p.hi[2] + c
                and hi[2] > p.lo[2] - c
                and lo[1] < p.hi[1] - 1e-6
                and hi[1] > p.lo[1] + 1e-6
            ):
                return True
        return False

    def _free_grid(self, obstacles):
        free = self.base_free.copy()
        r = AGENT_RADIUS
        for lo, hi in obstacles:
            mx = (self.gx > lo[0] - r) & (self.gx < hi[0] + r)
            mz = (self.gz > lo[2] - r) & (self.gz < hi[2] + r)
            free[np.ix_(mx, mz)] = False
        return free

    def _main_component(self, free):
        labels, n = ndimage.label(free)
        if n == 0:
            return None
        if self.door_cells:
            ids = {
                int(labels[i, j]) if 0 <= i < labels.shape[0] and 0 <= j < labels.shape[1] else 0
                for i, j in self.door_cells
            }
            if 0 in ids or len(ids) != 1:
                return None
            return labels == ids.pop()
        return labels == int(np.argmax(np.bincount(labels.ravel())[1:]) + 1)

    def _near(self, comp, lo, hi, reach):
        mx = (self.gx > lo[0] - reach) & (self.gx < hi[0] + reach)
        mz = (self.gz > lo[2] - reach) & (self.gz < hi[2] + reach)
        return bool(comp[np.ix_(mx, mz)].any())

    def _visible_ok(self, lo, hi):
        """A wall-mounted item (not an obstacle) must be approachable to within ~1 m."""
        comp = self._main_component(
            self._free_grid([(p.lo, p.hi) for p in self.placed if p.obstacle])
        )
        return comp is not None and self._near(comp, lo, hi, 0.9)

    def _navigable_ok(self, extra):
        """With ``extra`` added, the free area stays one piece (85 %) reaching every door,
        and every obstacle can be approached from it."""
        obs = [(p.lo, p.hi) for p in self.placed if p.obstacle] + [extra]
        free = self._free_grid(obs)
        comp = self._main_component(free)
        if comp is None or comp.sum() < 0.85 * free.sum():
            return False
        reach = AGENT_RADIUS + 0.3
        return all(self._near(comp, lo, hi, reach) for lo, hi in obs)

    def _try(self, item: F.Item, size, candidates, parent=None, obstacle=None):
        for yaw, pos, side, u in candidates:
            lo, hi = self._world_box(size, yaw, pos)
            if not self._inside(lo, hi):
                continue
            ignore = (parent,) if parent is not None else ()
            if self._overlaps(lo, hi, ignore):
                continue
            is_obs = obstacle if obstacle is not None else (lo[1] < 1.0 and hi[1] > 0.05)
            if is_obs and parent is None and not self._navigable_ok((lo, hi)):
                continue
            if not is_obs and parent is None and not self._visible_ok(lo, hi):
                continue
            return self._add(item, size, yaw, pos, lo, hi, parent, side, u, is_obs)
        return None

    # ------------------------------------------------------------------ placement modes
    def wall(self, item, corner=False, sides=None, near_u=None, gap=0.02):
        size = _normalise(item.parts)
        y0 = float(item.style.get("mount_y", 0.0)) if item.mount == "wall" else 0.0
        cands = self._wall_candidates(size, gap, sides=sides, corner=corner, near_u=near_u, y0=y0)
        return self._try(item, size, cands)

    def free(self, item, tries=30, margin=0.5):
        size = _normalise(item.parts)
        cands = []
        for _ in range(tries):
            yaw = float(self.rng.integers(4)) * np.pi / 2
            ext = max(size[0], size[2]) / 2 + margin
            xa, xb, za, zb = self.ix0 + ext, self.ix1 - ext, self.iz0 + ext, self.iz1 - ext
            if xb <= xa or zb <= za:
                break
            x = self.rng.uniform(xa, xb)
            z = self.rng.uniform(za, zb)
            cands.append((yaw, (float(x), 0.0, float(z)), None, 0.0))
        return self._try(item, size, cands)

    def front_of(self, item, parent: Placed, gap=0.4, face_parent=False):
        size = _normalise(item.parts)
        f = np.array([np.sin(parent.yaw), np.cos(parent.yaw)])
        dist = parent.size_local[2] / 2 + gap + size[2] / 2
        c = np.array([parent.lo[0] + parent.hi[0], parent.lo[2] + parent.hi[2]]) / 2 + f * dist
        yaw = parent.yaw + (np.pi if face_parent else 0.0)
        yaw = float(np.arctan2(np.sin(yaw), np.cos(yaw)))
        cands = [(yaw, (float(c[0]), 0.0, float(c[1])), None, 0.0)]
        return self._try(item, size, cands)

    def around(self, make_item, table: Placed, count: int):
        """Chairs around a table, each facing it; returns the placed chairs."""
        out = []
        tw, _, td = table.size_local
        slots = []
        n_long = 2 if tw >= 1.25 else 1
        for k in range(n_long):  # facing pairs first, so two chairs sit opposite each other
            for sz in (-1, 1):
                ox = (k - (n_long - 1) / 2) * (tw / n_long)
                slots.append((ox, sz))
        slots.append(("end", -1))
        slots.append(("end", 1))
        order = list(range(len(slots)))
        center = np.array([(table.lo[0] + table.hi[0]) / 2, (table.lo[2] + table.hi[2]) / 2])
        R = yaw_matrix(table.yaw)
        for k in order:
            if len(out) >= count:
                break
            item = make_item()
            size = _normalise(item.parts)
            ox, s = slots[k]
            if ox == "end":
                local = np.array([s * (tw / 2 + size[2] / 2 + 0.04), 0.0, 0.0])
                face = np.array([-s, 0.0, 0.0])
            else:
                local = np.array([ox, 0.0, s * (td / 2 + size[2] / 2 + 0.04)])
                face = np.array([0.0, 0.0, -s])
            wp = R @ local
            wf = R @ face
            yaw = float(np.arctan2(wf[0], wf[2]))
            pos = (float(center[0] + wp[0]), 0.0, float(center[1] + wp[2]))
            lo, hi = self._world_box(size, yaw, pos)
            if (
                self._inside(lo, hi)
                and not self._overlaps(lo, hi, ignore=(table,))
                and self._navigable_ok((lo, hi))
            ):
                out.append(self._add(item, size, yaw, pos, lo, hi, None, None, 0.0, True))
        return out

    def beside(self, item, parent: Placed, which=(-1, 1)):
        size = _normalise(item.parts)
        out = []
        for s in which:
            if parent.side is None:
                break
            u = parent.u + s * (parent.size_local[0] / 2 + size[0] / 2 + 0.05)
            yaw, pos = self._wall_pose(parent.side, u, size, 0.02)
            p = self._try(item, size, [(yaw, pos, parent.side, u)])
            if p is not None:
                out.append(p)
                break
        return out[0] if out else None

    def opposite(self, item, parent: Placed):
        if parent.side is None:
            return self.wall(item)
        return self.wall(item, sides=[_OPPOSITE[parent.side]], near_u=parent.u) or self.wall(item)

    def on(self, item, parent: Placed):
        size = _normalise(item.parts)
        top = float(parent.hi[1])
        cx, cz = (parent.lo[0] + parent.hi[0]) / 2, (parent.lo[2] + parent.hi[2]) / 2
        cands = []
        for _ in range(6):
            jx = self.rng.uniform(-1, 1) * max(
                0.0, (parent.hi[0] - parent.lo[0]) / 2 - size[0] / 2 - 0.03
            )
            jz = self.rng.uniform(-1, 1) * max(
                0.0, (parent.hi[2] - parent.lo[2]) / 2 - size[2] / 2 - 0.03
            )
            cands.append((parent.yaw, (float(cx + jx), top, float(cz + jz)), parent.side, parent.u))
        for yaw, pos, side, u in cands:
            lo, hi = self._world_box(size, yaw, pos)
            if (
                lo[0] < parent.lo[0] - 0.02
                or hi[0] > parent.hi[0] + 0.02
                or lo[2] < parent.lo[2] - 0.02
                or hi[2] > parent.hi[2] + 0.02
            ):
                continue
            if self._overlaps(lo, hi, ignore=(parent,)):
                continue
            return self._add(item, size, yaw, pos, lo, hi, parent, side, u, False)
        return None

    def _add(self, item, size, yaw, pos, lo, hi, parent, side, u, obstacle) -> Placed:
        p = Placed(
            item.category,
            self.room.region_id,
            item.parts,
            yaw,
            pos,
            lo,
            hi,
            item.color,
            item.material,
            item.feature,
            parent,
            side,
            u,
            obstacle,
            size_local=tuple(size),
        )
        self.placed.append(p)
        return p


def _n(rng, lo, hi):
    return int(rng.integers(lo, hi + 1))


class _Kit:
    """What a room recipe works with: the furnisher ``f``, the generator ``rng`` and
    builders bound to this room type (``build``, ``copies``, ``decorate``)."""

    def __init__(self, room: Room, doors: List[Door], rng: np.random.Generator):
        self.room = room
        self.rng = rng
        self.f = RoomFurnisher(room, doors, rng)
        self.chance = rng.random

    def build(self, cat, **kw):
        return F.BUILDERS[cat](self.rng, self.room.name, **kw)

    def copies(self, cat, style, **kw):
        return lambda: F.BUILDERS[cat](self.rng, self.room.name, style=dict(style), **kw)

    def n(self, lo, hi):
        return _n(self.rng, lo, hi)

    def decorate(self, n_plants, n_pictures, floor_lamp_p=0.0):
        f, build, chance = self.f, self.build, self.chance
        for _ in range(n_plants):
            f.wall(build("plant"), corner=chance() < 0.7) or f.free(build("plant"))
        for _ in range(n_pictures):
            f.wall(build("picture"), gap=0.0)
        if chance() < floor_lamp_p:
            f.wall(build("lamp", kind="floor"), corner=True)

    def chairs_around(self, table, lo, hi):
        chair = self.build("chair")
        self.f.around(self.copies("chair", chair.style), table, self.n(lo, hi))


def _living_room(k: _Kit) -> None:
    f, build, chance = k.f, k.build, k.chance
    sofa = f.wall(build("sofa"))
    if sofa is not None and chance() < 0.9:
        f.front_of(build("table"), sofa, gap=_u(k.rng, 0.35, 0.5))
    if sofa is not None and chance() < 0.6:
        side_table = f.beside(
            build("table", kind="side"), sofa, which=tuple(k.rng.permutation([-1, 1]))
        )
        if side_table is not None and chance() < 0.6:
            f.on(build("lamp", kind="table"), side_table)
    if chance() < 0.85:
        tv = build("tv", mount="stand" if chance() < 0.6 else "wall")
        if tv.mount == "floor":
            stand = build("cabinet", kind="sideboard")
            if stand.style["w"] < tv.style["w"] + 0.1:  # the tv must fit on its stand
                stand = build("cabinet", style=dict(stand.style, w=round(tv.style["w"] + 0.1, 2)))
            cab = f.opposite(stand, sofa) if sofa is not None else f.wall(stand)
            if cab is not None:
                f.on(tv, cab)
        else:
            (f.opposite(tv, sofa) if sofa is not None else f.wall(tv))
    arm = build("chair")
    f.wall(arm) if chance() < 0.5 else f.free(arm)
    if chance() < 0.5:
        f.wall(build("chair", style=dict(arm.style)))
    if chance() < 0.6:
        f.wall(build("shelf"))
    k.decorate(k.n(1, 3), k.n(1, 3), floor_lamp_p=0.6)


def _kitchen(k: _Kit) -> None:
    f, build, chance = k.f, k.build, k.chance
    f.wall(build("refrigerator"), corner=True)
    run = f.wall(build("cabinet", kind="counter"))
    for cat in (
        "sink",
        "stove",
    ):  # sink and stove continue the counter along its wall when they fit
        item = build(cat)
        placed = (
            f.beside(item, run, which=tuple(k.rng.permutation([-1, 1])))
            if run is not None
            else None
        )
        placed = placed or f.wall(item)
        run = placed or run
    if chance() < 0.5:
        f.wall(build("cabinet", kind="counter"))
    table = f.free(build("table"), margin=0.75) if chance() < 0.75 else None
    if table is not None:
        k.chairs_around(table, 2, 4)
    else:
        st = build("stool")
        for _ in range(k.n(1, 2)):
            f.wall(build("stool", style=dict(st.style)))
    k.decorate(k.n(0, 2), k.n(0, 1))


def _dining_room(k: _Kit) -> None:
    table = k.f.free(k.build("table"), margin=0.75)
    if table is not None:
        k.chairs_around(table, 3, 6)
    k.f.wall(k.build("cabinet", kind="sideboard"))
    k.decorate(k.n(1, 2), k.n(0, 2), floor_lamp_p=0.4)


def _bedroom(k: _Kit) -> None:
    f, build, chance = k.f, k.build, k.chance
    bed_item = build("bed")
    bed = f.wall(bed_item)
    if bed is None and bed_item.style["double"]:
        bed = f.wall(build("bed", style=dict(bed_item.style, double=False, w=0.95)))
    if bed is not None:
        ns = build("cabinet", kind="nightstand")
        a = f.beside(ns, bed, which=(-1,))
        ns2 = build("cabinet", kind="nightstand", style=dict(ns.style))
        b = f.beside(ns2, bed, which=(1,))
        if a is None or b is None:  # no room at the bed's head: somewhere near it
            b = f.wall(ns2 if b is None else ns, sides=[bed.side], near_u=bed.u)
        for stand in (a, b):
            if stand is not None and chance() < 0.6:
                f.on(build("lamp", kind="table"), stand)
    f.wall(build("cabinet", kind="wardrobe"), corner=chance() < 0.5)
    if chance() < 0.5:
        desk = f.wall(build("desk"))
        if desk is not None:
            f.front_of(build("chair"), desk, gap=0.05, face_parent=True)
    elif chance() < 0.5:
        f.wall(build("chair"))
    if chance() < 0.4:
        f.wall(build("shelf"))
    if chance() < 0.3:
        tv = build("tv", mount="wall")
        f.opposite(tv, bed) if bed is not None else f.wall(tv)
    if chance() < 0.4:
        f.wall(build("mirror", kind="tall"), gap=0.0)
    k.decorate(k.n(0, 2), k.n(0, 2))


def _office(k: _Kit) -> None:
    f, build, chance = k.f, k.build, k.chance
    desk = f.wall(build("desk"))
    if desk is not None:
        f.front_of(build("chair"), desk, gap=0.05, face_parent=True)
    sh = build("shelf")
    f.wall(sh)
    if chance() < 0.6:
        f.wall(build("shelf", style=dict(sh.style)))
    if chance() < 0.5:
        f.wall(build("cabinet", kind="sideboard"))
    if chance() < 0.5:
        f.wall(build("chair"))
    k.decorate(k.n(1, 2), k.n(0, 1), floor_lamp_p=0.5)


def _bathroom(k: _Kit) -> None:
    f, build, chance = k.f, k.build, k.chance
    tub = f.wall(build("bathtub"), corner=True) if k.room.area > 6.5 and chance() < 0.8 else None
    f.wall(build("toilet"))
    sink = f.wall(build("sink"))
    if sink is not None and chance() < 0.85:
        f.wall(build("mirror"), sides=[sink.side], near_u=sink.u, gap=0.0)
    mat = build("bath mat")
    placed_mat = None
    for anchor in (tub, sink):
        if anchor is not None and placed_mat is None:
            placed_mat = f.front_of(mat, anchor, gap=0.08)
    if placed_mat is None:
        f.free(mat, margin=0.1)
    towel = build("towel")
    f.wall(towel, gap=0.0)
    for _ in range(k.n(0, 2)):
        t = build("towel", style=dict(towel.style)) if chance() < 0.5 else build("towel")
        f.wall(t, gap=0.0)
    if chance() < 0.5:
        f.wall(build("cabinet", kind="bathroom"))
    k.decorate(k.n(0, 1), 0)


def _corridor(k: _Kit) -> None:
    f, build, chance = k.f, k.build, k.chance
    if chance() < 0.6:
        f.wall(build("cabinet", kind="hall"))
    if chance() < 0.4:
        f.wall(build("shelf", shallow=True))
    if chance() < 0.3:
        f.wall(build("mirror", kind="tall"), gap=0.0)
    k.decorate(k.n(0, 2), k.n(1, 3))


#: One recipe per room type: the big pieces first, then sets, then decoration.
RECIPES: Dict[str, Callable[[_Kit], None]] = {
    "living room": _living_room,
    "kitchen": _kitchen,
    "dining room": _dining_room,
    "bedroom": _bedroom,
    "office": _office,
    "bathroom": _bathroom,
    "corridor": _corridor,
}


def furnish(
    room: Room,
    doors: List[Door],
    rng: np.random.Generator,
    clutter: int = 0,
    clutter_rng: Optional[np.random.Generator] = None,
) -> List[Placed]:
    """The furniture of ``room`` by its type's recipe in :data:`RECIPES` (none for an unknown
    type), then up to ``clutter`` small boxes on the free floor (drawn from ``clutter_rng``,
    so the furniture is the same with or without them), each kept off the doors and the
    free space connected as furniture is."""
    kit = _Kit(room, doors, rng)
    recipe = RECIPES.get(room.name)
    if recipe is not None:
        recipe(kit)
    if clutter:
        kit.f.rng = clutter_rng
        for _ in range(clutter):
            w, d, h = (
                float(v)
                for v in np.round(clutter_rng.uniform((0.08, 0.08, 0.05), (0.5, 0.5, 0.45)), 2)
            )
            part = box(
                (0.0, h / 2, 0.0), (w, h, d), F.rgb("brown", clutter_rng.uniform(0.6, 1.2)), "paper"
            )
            kit.f.free(F.Item("box", [part], ["brown"], ["cardboard"], []), tries=6, margin=0.05)
    return kit.f.placed


def _u(rng, lo, hi):
    return float(np.round(rng.uniform(lo, hi), 2))


# ---------------------------------------------------------------------- structure
_WALL_PAINT = [
    (0.93, 0.92, 0.88),
    (0.88, 0.84, 0.76),
    (0.82, 0.84, 0.86),
    (0.78, 0.85, 0.9),
    (0.84, 0.9, 0.8),
    (0.94, 0.9, 0.74),
]
_WOOD_FLOOR = [(0.62, 0.45, 0.3), (0.5, 0.35, 0.22), (0.72, 0.58, 0.42)]
_TILE_FLOOR = [(0.85, 0.85, 0.83), (0.6, 0.62, 0.64), (0.8, 0.76, 0.68)]


def _structure(room: Room, doors: List[Door], plan: FloorPlan, rng) -> List[Placed]:
    """Floor, ceiling and four wall objects (with door gaps and lintels) of one room."""
    out = []
    tiled = room.name in ("kitchen", "bathroom")
    fl_col = (_TILE_FLOOR if tiled else _WOOD_FLOOR)[int(rng.integers(3))]
    floor = box_from_bounds(
        (room.x0, -0.05, room.z0),
        (room.x1, 0.0, room.z1),
        fl_col,
        "floor_tile" if tiled else "floor_wood",
    )
    ceil = box_from_bounds(
        (room.x0, WALL_HEIGHT, room.z0),
        (room.x1, WALL_HEIGHT + 0.05, room.z1),
        (0.95, 0.95, 0.94),
        "paint",
    )
    out.append(Placed("floor", room.region_id, [floor]))
    out.append(Placed("ceiling", room.region_id, [ceil]))
    paint = _WALL_PAINT[int(rng.integers(len(_WALL_PAINT)))]
    xmin, zmin = -plan.width / 2, -plan.depth / 2
    xmax, zmax = xmin + plan.width, zmin + plan.depth
    e = 1e-6
    for side, (axis, (nx, nz)) in _SIDES.items():
        coord = {"x0": room.x0, "x1": room.x1, "z0": room.z0, "z1": room.z1}[side]
        outer = (axis == "x" and (abs(coord - xmin) < e or abs(coord - xmax) < e)) or (
            axis == "z" and (abs(coord - zmin) < e or abs(coord - zmax) < e)
        )
        n = nx if axis == "x" else nz
        t0, t1 = (
            (coord - HALF_WALL, coord + HALF_WALL)
            if outer
            else sorted((coord, coord + n * HALF_WALL))
        )
        a, b = (room.z0, room.z1) if axis == "x" else (room.x0, room.x1)
        a, b = a - HALF_WALL, b + HALF_WALL
        gaps = sorted(
            (d.lo, d.hi, d.height) for d in doors if d.axis == axis and abs(d.coord - coord) < e
        )
        spans = []  # (along_lo, along_hi, y_lo, y_hi)
        cur = a
        for lo, hi, h in gaps:
            spans.append((cur, lo, 0.0, WALL_HEIGHT))
            spans.append((lo, hi, h, WALL_HEIGHT))
            cur = hi
        spans.append((cur, b, 0.0, WALL_HEIGHT))
        parts = []
        for s0, s1, y0, y1 in spans:
            if s1 - s0 < 1e-6:
                continue
            if axis == "x":
                parts.append(box_from_bounds((t0, y0, s0), (t1, y1, s1), paint, "paint"))
            else:
                parts.append(box_from_bounds((s0, y0, t0), (s1, y1, t1), paint, "paint"))
        out.append(Placed("wall", room.region_id, parts))
    return out


# ---------------------------------------------------------------------- output
def _transform(p: Placed):
    R = yaw_matrix(p.yaw)
    t = np.asarray(p.position, dtype=np.float64)
    for part in p.parts:
        yield part, part.vertices @ R.T + t, part.normals @ R.T


def _aabb(lo, hi):
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    return {
        "center": [round(float(v), 4) for v in (lo + hi) / 2],
        "size": [round(float(v), 4) for v in hi - lo],
    }


def _semantic_colors(rng, n) -> List[int]:
    """n distinct random 24-bit colours, none black."""
    seen, out = set(), []
    while len(out) < n:
        c = int(rng.integers(1, 1 << 24))
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def _write_glb(path, vertices, faces, colors):
    import trimesh
    from trimesh.exchange.gltf import export_glb

    mesh = trimesh.Trimesh(vertices=vertices, faces=faces, vertex_colors=colors, process=False)
    data = export_glb(mesh, include_normals=False)
    with open(path, "wb") as fh:
        fh.write(data)


@dataclass
class SceneOptions:
    """What a scene is beyond (seed, index); the defaults give the original 4-6 room flats.

    ``rooms``: rooms per floor (None: 4-6); ``floors``: storeys joined by a stair hall
    (:mod:`.stairs`); ``scan_edge`` > 0: subdivide to triangles of at most that edge (m)
    and jitter vertices by up to ``jitter`` m (:mod:`.scan`); ``clutter``: small boxes
    strewn over the floors."""

    rooms: Optional[int] = None
    floors: int = 1
    scan_edge: float = 0.0
    jitter: float = 0.015
    clutter: int = 0

    def check(self) -> None:
        if self.rooms is not None and not 4 <= int(self.rooms) <= 120:
            raise ValueError(f"rooms must be in 4..120, got {self.rooms}")
        if not 1 <= int(self.floors) <= 8:
            raise ValueError(f"floors must be in 1..8, got {self.floors}")
        if self.scan_edge < 0 or self.jitter < 0 or self.clutter < 0:
            raise ValueError("scan_edge, jitter and clutter must be >= 0")


def _plan_with_hall(rng, opts: SceneOptions) -> Tuple[FloorPlan, Optional[StairHall]]:
    plan = make_floor_plan(rng, opts.rooms)
    if opts.floors == 1:
        return plan, None
    for _ in range(100):
        hall = place_stair_hall(plan, opts.floors)
        if hall is not None:
            return plan, hall
        plan = make_floor_plan(rng, opts.rooms)
    raise RuntimeError("could not place a stair hall on any floor plan")  # pragma: no cover


def _level_copy(plan: FloorPlan, level: int) -> Tuple[List[Room], List[Door]]:
    """Rooms and doors of one storey: region and door ids numbered on from the storeys below."""
    n, m = len(plan.rooms), len(plan.doors)
    if level == 0:
        return plan.rooms, plan.doors
    rooms = [replace(r, region_id=r.region_id + level * n, doors=list(r.doors)) for r in plan.rooms]
    doors = [
        replace(
            d, door_id=d.door_id + level * m, rooms=(d.rooms[0] + level * n, d.rooms[1] + level * n)
        )
        for d in plan.doors
    ]
    return rooms, doors


def _lift_objects(objects: List[Placed], dy: float) -> None:
    for p in objects:
        p.position = (p.position[0], p.position[1] + dy, p.position[2])
        if p.lo is not None:
            p.lo = p.lo + np.array([0.0, dy, 0.0])
            p.hi = p.hi + np.array([0.0, dy, 0.0])


def _hall_objects(hall: StairHall, region: int, rng) -> List[Placed]:
    paint = _WALL_PAINT[int(rng.integers(len(_WALL_PAINT)))]
    kinds = {
        "floor": ((0.6, 0.62, 0.64), "floor_tile"),
        "wall": (paint, "paint"),
        "ceiling": ((0.95, 0.95, 0.94), "paint"),
    }
    parts: Dict[str, List[Part]] = {k: [] for k in kinds}
    for kind, lo, hi in hall.boxes():
        parts[kind].append(box_from_bounds(lo, hi, *kinds[kind]))
    return [Placed(kind, region, parts[kind]) for kind in ("floor", "ceiling", "wall")]


def generate_scene(
    out_dir: str, seed: int, index: int = 0, options: Optional[SceneOptions] = None
) -> SceneInfo:
    """Generate apartment ``index`` of the batch with ``seed`` under ``out_dir``."""
    seed, index = int(seed), int(index)
    if seed < 0 or index < 0:
        raise ValueError(f"seed and index must be >= 0 (got seed={seed}, index={index})")
    opts = options or SceneOptions()
    opts.check()
    ss = np.random.SeedSequence([seed, index])
    rng_plan, rng_furn, rng_col, rng_sem = (np.random.default_rng(s) for s in ss.spawn(4))
    # the options' own streams: the furniture does not change with the scan options
    rng_clutter, rng_scan = (np.random.default_rng(s) for s in ss.spawn(2))
    scene_id = scene_id_for(seed, index)
    plan, hall = _plan_with_hall(rng_plan, opts)
    n_rooms = len(plan.rooms) * opts.floors
    hall_region = n_rooms if hall is not None else -1

    objects: List[Placed] = []
    regions: List[Tuple[Room, float]] = []
    all_doors: List[Tuple[Door, float]] = []
    k = 0
    for level in range(opts.floors):
        rooms, level_doors = _level_copy(plan, level)
        y = level * FLOOR_PITCH
        stair = (
            hall.door(
                level,
                len(plan.doors) * opts.floors + level,
                rooms[hall.rooms[level]].region_id,
                hall_region,
            )
            if hall is not None
            else None
        )
        level_objects: List[Placed] = []
        for i, room in enumerate(rooms):
            doors = [level_doors[j] for j in room.doors]
            if stair is not None and i == hall.rooms[level]:
                doors.append(stair)
            level_objects += _structure(room, doors, plan, rng_furn)
            share = opts.clutter // n_rooms + (1 if k < opts.clutter % n_rooms else 0)
            k += 1
            level_objects += furnish(room, doors, rng_furn, share, rng_clutter)
            regions.append((room, y))
        if y:
            _lift_objects(level_objects, y)
        objects += level_objects
        all_doors += [(d, y) for d in level_doors] + ([(stair, y)] if stair is not None else [])
    if hall is not None:
        objects += _hall_objects(hall, hall_region, rng_furn)
        regions.append(
            (
                Room(
                    hall_region,
                    "stairs",
                    hall.x0,
                    hall.z0,
                    hall.x0 + HALL_LENGTH,
                    hall.z0 + HALL_DEPTH,
                ),
                0.0,
            )
        )
    for i, p in enumerate(objects):
        p.object_id = i + 1
    sem = _semantic_colors(rng_sem, len(objects))

    render, semantic = MeshData(), MeshData()
    meta_objects, meta_structures = [], []
    annotations = []
    for p, scol in zip(objects, sem):
        srgba = np.array([(scol >> 16) & 255, (scol >> 8) & 255, scol & 255, 255], dtype=np.uint8)
        lo_all, hi_all = [], []
        for part, v, n in _transform(p):
            cols = bake_colors(n, part.rgb, part.material, rng_col)
            render.add(v, part.faces, cols, p.object_id)
            semantic.add(v, part.faces, np.tile(srgba, (len(v), 1)), p.object_id)
            lo_all.append(v.min(0))
            hi_all.append(v.max(0))
        lo, hi = np.min(lo_all, 0), np.max(hi_all, 0)
        hexcol = f"{scol:06X}"
        annotations.append((p.object_id, hexcol, p.category, p.region_id))
        entry = {
            "object_id": p.object_id,
            "category": p.category,
            "region_id": p.region_id,
            "semantic_color": hexcol,
            "aabb": _aabb(lo, hi),
        }
        if p.category in STRUCTURAL:
            meta_structures.append(entry)
            continue
        entry.update(
            {
                "color": list(p.color),
                "material": list(p.material),
                "feature": list(p.feature),
                "position": [round(float(v), 4) for v in (lo + hi) / 2],
                "yaw": round(float(p.yaw), 4),
                "support_object_id": p.parent.object_id if p.parent is not None else None,
            }
        )
        meta_objects.append(entry)

    directory = os.path.join(out_dir, f"{index:05d}-{scene_id}")
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, scene_id)
    v, fcs, c, _ = render.arrays()
    sv, sf, sc, _ = semantic.arrays()
    if opts.scan_edge > 0:  # render and semantic meshes share their geometry
        v, new_faces, src = scan_like(v, fcs, opts.scan_edge, opts.jitter, rng_scan)
        c2, sc2 = np.empty((len(v), 4), np.uint8), np.empty((len(v), 4), np.uint8)
        for corner in range(3):
            c2[new_faces[:, corner]] = c[fcs[src, corner]]
            sc2[new_faces[:, corner]] = sc[fcs[src, corner]]
        sv, fcs, sf, c, sc = v, new_faces, new_faces, c2, sc2
    # Meshes are stored Z up like HM3D/MP3D, so habitat-sim (which reads a .glb stage as
    # Z up) and MosNavMeshSim-v0 both load them with the floor at world y = 0.
    _write_glb(base + ".glb", world_to_file(v), fcs, c)
    # COLOR_0 stored linear (float), as habitat-sim reads a .glb's vertex colours.
    write_semantic_glb(base + ".semantic.glb", world_to_file(sv), sf, sc)
    write_semantic_txt(base + ".semantic.txt", annotations)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "scene_id": scene_id,
        "generator": {"name": "habitat_mosnav.scenes", "seed": seed, "index": index},
        "units": "meters",
        "up_axis": "z",  # of the .glb files; every coordinate in this file is habitat's Y-up world
        "floor_height": 0.0,
        "wall_height": WALL_HEIGHT,
        "regions": [
            {
                "region_id": r.region_id,
                "name": r.name,
                "aabb": _aabb(
                    (r.x0, y, r.z0),
                    (r.x1, (hall.top if r.region_id == hall_region else y + WALL_HEIGHT), r.z1),
                ),
            }
            for r, y in regions
        ],
        "doors": [
            {
                "door_id": d.door_id,
                "regions": list(d.rooms),
                "axis": d.axis,
                "center": [round(d.center[0], 4), y, round(d.center[1], 4)],
                "width": round(d.width, 4),
                "height": d.height,
                "span": [round(d.lo, 4), round(d.hi, 4)],
            }
            for d, y in all_doors
        ],
        "objects": meta_objects,
        "structures": meta_structures,
    }
    if opts.floors > 1:
        meta["floors"] = [
            {"level": i, "floor_height": round(i * FLOOR_PITCH, 4)} for i in range(opts.floors)
        ]
    if opts != SceneOptions():
        meta["generator"]["options"] = {
            "rooms": opts.rooms,
            "floors": opts.floors,
            "scan_edge": opts.scan_edge,
            "jitter": opts.jitter,
            "clutter": opts.clutter,
        }
    with open(base + ".mosnav_meta.json", "w", encoding="utf-8", newline="\n") as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")
    return SceneInfo(
        scene_id,
        index,
        directory,
        base + ".glb",
        base + ".semantic.glb",
        base + ".semantic.txt",
        base + ".mosnav_meta.json",
        len(meta_objects),
        len(objects),
        len(regions),
        int(len(fcs)),
    )


def generate_scenes(
    out_dir: str, num_scenes: int, seed: int, progress: bool = False
) -> List[SceneInfo]:
    """Scenes 0..num_scenes-1 of the batch ``seed``; ``progress`` shows a tqdm bar."""
    if int(num_scenes) < 0:
        raise ValueError(f"num_scenes must be >= 0 (got {num_scenes})")
    it = range(int(num_scenes))
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="scenes", unit="scene")
    return [generate_scene(out_dir, seed, i) for i in it]
