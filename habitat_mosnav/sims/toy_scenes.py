"""Tiny box-built scenes (floor, walls, doors, ceiling) for tests and the benchmark fallback.

Layouts are given as axis-aligned boxes; every scene has a ceiling so that the navigability
code must ignore geometry above the agent.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

Box = Tuple[Sequence[float], Sequence[float], Sequence[int]]  # (min xyz, max xyz, rgba)

WALL_H = 2.5


def box_mesh(lo: Sequence[float], hi: Sequence[float], rgba: Sequence[int] = (200, 200, 200, 255)):
    import trimesh

    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    m = trimesh.creation.box(extents=hi - lo)
    m.apply_translation((lo + hi) / 2)
    m.visual.vertex_colors = np.tile(np.asarray(rgba, np.uint8), (len(m.vertices), 1))
    return m


def export_boxes(path: str, boxes: Iterable[Box], up: str = "z") -> str:
    """Write boxes (given in habitat's Y-up world) as one .glb scene with vertex colours.

    ``up='z'`` (default) stores the file Z-up like MP3D/HM3D, which is how habitat-sim and
    ``MosNavMeshSim-v0`` read a ``.glb``; ``up='y'`` stores it as given.
    """
    import trimesh

    from habitat_mosnav.sims.geometry import Z_UP_TO_Y_UP

    scene = trimesh.Scene()
    for i, (lo, hi, rgba) in enumerate(boxes):
        m = box_mesh(lo, hi, rgba)
        if up == "z":
            tf = np.eye(4)
            tf[:3, :3] = Z_UP_TO_Y_UP.T  # world -> file
            m.apply_transform(tf)
        scene.add_geometry(m, geom_name=f"box{i}")
    scene.export(path)
    return path


def room_boxes(
    x0: float,
    z0: float,
    x1: float,
    z1: float,
    t: float = 0.1,
    floor_rgba=(150, 120, 90, 255),
    wall_rgba=(220, 220, 210, 255),
    ceiling: bool = True,
) -> List[Box]:
    """Floor (top at y=0), four walls of thickness ``t`` inside the rectangle, ceiling."""
    boxes: List[Box] = [((x0, -0.1, z0), (x1, 0.0, z1), floor_rgba)]
    boxes += [
        ((x0, 0.0, z0), (x1, WALL_H, z0 + t), wall_rgba),
        ((x0, 0.0, z1 - t), (x1, WALL_H, z1), wall_rgba),
        ((x0, 0.0, z0), (x0 + t, WALL_H, z1), wall_rgba),
        ((x1 - t, 0.0, z0), (x1, WALL_H, z1), wall_rgba),
    ]
    if ceiling:
        boxes.append(((x0, WALL_H, z0), (x1, WALL_H + 0.1, z1), (240, 240, 240, 255)))
    return boxes


def two_rooms_boxes(door_width: Optional[float] = 1.0, door_z: float = 2.0) -> List[Box]:
    """Two 4 m x 4 m rooms side by side (x in [0,4] and [4,8]); a door in the middle wall.

    The shared wall occupies x in [3.95, 4.05]; the door spans z in
    ``door_z ± door_width/2`` (no door when ``door_width`` is None).
    """
    boxes = room_boxes(0.0, 0.0, 8.0, 4.0)
    wall = (220, 200, 200, 255)
    if door_width is None:
        boxes.append(((3.95, 0.0, 0.0), (4.05, WALL_H, 4.0), wall))
    else:
        a, b = door_z - door_width / 2, door_z + door_width / 2
        boxes.append(((3.95, 0.0, 0.0), (4.05, WALL_H, a), wall))
        boxes.append(((3.95, 0.0, b), (4.05, WALL_H, 4.0), wall))
        boxes.append(((3.95, 2.1, a), (4.05, WALL_H, b), wall))  # lintel above the door
    return boxes


def l_corridor_boxes(width: float = 1.0, length: float = 6.0) -> List[Box]:
    """An L-shaped corridor: along +x from the origin square, then along +z.

    Free space: x in [0, length], z in [0, width]  and  x in [length-width, length],
    z in [0, length]. Walls are 0.1 m thick boxes outside that free space.
    """
    L, w, t = length, width, 0.1
    wall = (210, 210, 230, 255)
    boxes: List[Box] = [((-t, -0.1, -t), (L + t, 0.0, L + t), (140, 140, 140, 255))]
    boxes += [
        ((-t, 0.0, -t), (L + t, WALL_H, 0.0), wall),  # south wall (z<0)
        ((-t, 0.0, 0.0), (0.0, WALL_H, w), wall),  # west end
        ((L, 0.0, 0.0), (L + t, WALL_H, L), wall),  # east wall
        ((L - w, 0.0, L), (L + t, WALL_H, L + t), wall),  # north end
        ((0.0, 0.0, w), (L - w, WALL_H, w + t), wall),  # inner wall along x
        ((L - w - t, 0.0, w), (L - w, WALL_H, L), wall),  # inner wall along z
    ]
    boxes.append(((-t, WALL_H, -t), (L + t, WALL_H + 0.1, L + t), (240, 240, 240, 255)))
    return boxes


def apartment_boxes() -> List[Box]:
    """A 10 m x 8 m flat with four rooms, doors and some furniture (benchmark fallback)."""
    boxes = room_boxes(0.0, 0.0, 10.0, 8.0)
    wall = (225, 215, 200, 255)
    # vertical wall x=5 with two doors
    boxes += [
        ((4.95, 0, 0), (5.05, WALL_H, 1.5), wall),
        ((4.95, 0, 2.5), (5.05, WALL_H, 5.5), wall),
        ((4.95, 0, 6.5), (5.05, WALL_H, 8.0), wall),
    ]
    # horizontal wall z=4 with doors
    boxes += [
        ((0, 0, 3.95), (2.0, WALL_H, 4.05), wall),
        ((3.0, 0, 3.95), (7.0, WALL_H, 4.05), wall),
        ((8.0, 0, 3.95), (10.0, WALL_H, 4.05), wall),
    ]
    furniture = [
        ((1.0, 0, 1.0), (2.2, 0.75, 1.8), (120, 80, 40, 255)),  # table
        ((0.2, 0, 5.0), (0.8, 0.5, 7.0), (40, 60, 160, 255)),  # sofa
        ((6.0, 0, 6.0), (8.0, 0.6, 7.8), (200, 200, 240, 255)),  # bed
        ((9.3, 0, 0.2), (9.8, 1.8, 1.5), (90, 60, 30, 255)),  # cabinet
        ((3.5, 0, 0.3), (3.9, 0.45, 0.7), (180, 30, 30, 255)),  # chair
    ]
    return boxes + furniture


def export_scene_with_semantics(
    directory: str, stem: str, boxes: Sequence[Box], categories: Optional[Sequence[str]] = None
) -> str:
    """Write ``<stem>.glb`` plus the HM3D pair ``<stem>.semantic.glb`` / ``.semantic.txt``.

    Box ``i`` becomes object id ``i + 1`` with a distinct annotation colour; returns the
    path of the render mesh.
    """
    import os

    os.makedirs(directory, exist_ok=True)
    glb = export_boxes(os.path.join(directory, f"{stem}.glb"), boxes)
    from habitat_mosnav.scenes.io import write_semantic_txt

    sem_boxes, records = [], []
    for i, (lo, hi, _) in enumerate(boxes):
        oid = i + 1
        rgb = ((oid * 67) % 256, (oid * 151 + 40) % 256, (oid * 29 + 90) % 256)
        sem_boxes.append((lo, hi, (*rgb, 255)))
        cat = categories[i] if categories is not None else f"box{oid}"
        records.append((oid, (rgb[0] << 16) | (rgb[1] << 8) | rgb[2], cat, 0))
    export_boxes(os.path.join(directory, f"{stem}.semantic.glb"), sem_boxes)
    write_semantic_txt(os.path.join(directory, f"{stem}.semantic.txt"), records)
    return glb


def two_storey_boxes() -> List[Box]:
    """Two storeys joined by a straight stair (13 steps of 0.2 m), for multi-level tests.

    Ground floor: x in [0, 8], z in [0, 4], floor top y = 0. The upper storey is a slab
    (top y = 2.6) over x in [0, 4]; the stair hall x in [4, 8] is double height. The stair
    runs along z in [0.1, 1.3], rising toward -x from x = 7.6 to the slab edge at x = 4.
    Outer walls reach the roof at y = 5.2.
    """
    wall = (215, 215, 215, 255)
    top = 5.2
    boxes: List[Box] = [((0.0, -0.1, 0.0), (8.0, 0.0, 4.0), (150, 120, 90, 255))]
    boxes += [
        ((0.0, 0.0, 0.0), (8.0, top, 0.1), wall),
        ((0.0, 0.0, 3.9), (8.0, top, 4.0), wall),
        ((0.0, 0.0, 0.0), (0.1, top, 4.0), wall),
        ((7.9, 0.0, 0.0), (8.0, top, 4.0), wall),
        ((0.0, 2.5, 0.0), (4.0, 2.6, 4.0), (170, 140, 110, 255)),  # slab: ceiling and upper floor
        ((0.0, top, 0.0), (8.0, top + 0.1, 4.0), (240, 240, 240, 255)),  # roof
    ]
    run = 0.27
    for i in range(13):
        x_hi = 7.6 - run * i
        x_lo = 4.0 if i == 12 else 7.6 - run * (i + 1)
        boxes.append(((x_lo, 0.0, 0.1), (x_hi, 0.2 * (i + 1), 1.3), (120, 100, 160, 255)))
    return boxes
