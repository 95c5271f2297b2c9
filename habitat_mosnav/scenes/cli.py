"""``mosnav-make-scenes --out DIR --num-scenes N --seed S``: write N procedural scenes."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional
from habitat_mosnav.versions import add_version_argument


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2 (argparse's convention)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _nonneg_int(name):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if v < 0:
            raise argparse.ArgumentTypeError(f"{name} must be >= 0, got {v}")
        return v
    return parse


def main(argv: Optional[List[str]] = None) -> int:
    p = _Parser(prog="mosnav-make-scenes",
                description="Generate procedural multi-room apartments in HM3D's file layout "
                            "(<out>/<NNNNN-id>/<id>.glb, .semantic.glb, .semantic.txt, .mosnav_meta.json).")
    add_version_argument(p)
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--num-scenes", type=_nonneg_int("--num-scenes"), default=1, help="number of scenes (default 1)")
    p.add_argument("--seed", type=_nonneg_int("--seed"), default=0, help="batch seed (default 0)")
    p.add_argument("--start-index", type=_nonneg_int("--start-index"), default=0,
                   help="index of the first scene (default 0); scene i depends only on (seed, i)")
    p.add_argument("--preview", action="store_true", help="also write <id>.topdown.png next to each scene")
    args = p.parse_args(argv)
    import os

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        p.error(f"--out: {args.out} exists and is not a directory")
    from tqdm import tqdm

    from habitat_mosnav.scenes.generator import generate_scene

    os.makedirs(args.out, exist_ok=True)
    infos = []
    for i in tqdm(range(args.start_index, args.start_index + args.num_scenes), desc="scenes", unit="scene"):
        info = generate_scene(args.out, args.seed, i)
        if args.preview:
            from habitat_mosnav.scenes.preview import render_glb_topdown

            render_glb_topdown(info.glb, os.path.join(info.directory, info.scene_id + ".topdown.png"))
        infos.append(info)
    for info in infos:
        print(f"{info.directory}: {info.num_regions} rooms, {info.num_objects} objects, {info.num_triangles} triangles")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
