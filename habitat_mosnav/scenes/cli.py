"""``mosnav-make-scenes --out DIR --num-scenes N --seed S``: write N procedural scenes.

Bigger test scenes: ``--rooms 40`` (rooms per floor), ``--floors 2`` (storeys joined by a
stair hall), ``--scan`` (scan-like: triangles subdivided to ``--scan-edge`` m, vertices
jittered by up to ``--jitter`` m, ``--clutter`` small boxes on the floors)."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from habitat_mosnav.flag_ranges import bound_numbers, one_line_errors
from habitat_mosnav.versions import add_version_argument


#: --scan's defaults: about 600k triangles for 20 rooms (HM3D scans: 300k-1M)
SCAN_EDGE, SCAN_JITTER, SCAN_CLUTTER = 0.22, 0.015, 200


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="mosnav-make-scenes",
        allow_abbrev=False,
        description="Generate procedural multi-room apartments in HM3D's file layout "
        "(<out>/<NNNNN-id>/<id>.glb, .semantic.glb, .semantic.txt, .mosnav_meta.json).",
    )
    add_version_argument(p)
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--num-scenes", type=int, default=1, help="number of scenes (default 1)")
    p.add_argument("--seed", type=int, default=0, help="batch seed (default 0)")
    p.add_argument(
        "--start-index",
        type=int,
        default=0,
        help="index of the first scene (default 0); scene i depends only on (seed, i)",
    )
    p.add_argument(
        "--preview", action="store_true", help="also write <id>.topdown.png next to each scene"
    )
    p.add_argument("--rooms", type=int, help="rooms per floor (default: 4-6 at random)")
    p.add_argument(
        "--floors", type=int, default=1, help="storeys, joined by a stair hall (default 1)"
    )
    p.add_argument(
        "--scan",
        action="store_true",
        help=f"scan-like mesh: --scan-edge {SCAN_EDGE}, --jitter {SCAN_JITTER}, --clutter {SCAN_CLUTTER} "
        "unless given",
    )
    p.add_argument(
        "--scan-edge", type=float, help="subdivide triangles to at most this edge (m; 0 = off)"
    )
    p.add_argument(
        "--jitter", type=float, help="move vertices by up to this per axis (m) when subdividing"
    )
    p.add_argument("--clutter", type=int, help="small boxes strewn on the floors")
    args = one_line_errors(bound_numbers(p), "mosnav-make-scenes").parse_args(argv)
    import os

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        p.error(f"--out: {args.out} exists and is not a directory")
    from tqdm import tqdm

    from habitat_mosnav.scenes.generator import SceneOptions, generate_scene

    def pick(value, scan_default, off):
        return value if value is not None else (scan_default if args.scan else off)

    options = SceneOptions(
        rooms=args.rooms,
        floors=args.floors,
        scan_edge=pick(args.scan_edge, SCAN_EDGE, 0.0),
        jitter=pick(args.jitter, SCAN_JITTER, SCAN_JITTER),
        clutter=pick(args.clutter, SCAN_CLUTTER, 0),
    )
    os.makedirs(args.out, exist_ok=True)
    infos = []
    for i in tqdm(
        range(args.start_index, args.start_index + args.num_scenes), desc="scenes", unit="scene"
    ):
        info = generate_scene(args.out, args.seed, i, options)
        if args.preview:
            from habitat_mosnav.scenes.preview import render_glb_topdown

            render_glb_topdown(
                info.glb, os.path.join(info.directory, info.scene_id + ".topdown.png")
            )
        infos.append(info)
    for info in infos:
        print(
            f"{info.directory}: {info.num_regions} rooms, {info.num_objects} objects, {info.num_triangles} triangles"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
