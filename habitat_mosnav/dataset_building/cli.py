"""``mosnav-build <stage>``: build dataset_semantic/ from scenes with semantic annotations.

    mosnav-build all --scenes data/scenes --out data/dataset_semantic --offline --seed 0
    mosnav-build extract --scenes /path/to/hm3d/val --out dataset_semantic --scene-ids TEEsavR23oF
    mosnav-build show --scenes ... --out ... --scene-ids X --object-ids 101 102
    mosnav-build import-goat --goat goat_bench/hm3d/v1/val_seen --scene-root hm3d/val --out DIR

Stages: extract, attributes, normalize, queries, language, episodes, image-goals, show,
all; ``import-goat`` converts a GOAT-Bench v1 split instead (:mod:`.goat`). Each stage
skips scenes it already finished with the same settings (``--overwrite`` redoes them) and
gives the same output for the same ``--seed``. Exit status: 0 done; 2 bad input or a file
that cannot be read or written (a full disk: one line naming the file; every file is
written atomically, so the finished ones stay whole); 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import List, Optional

from habitat_mosnav.api import TARGET_MODES
from habitat_mosnav.dataset_building.common import BuildError
from habitat_mosnav.metrics.legs import SUCCESS_DISTANCE
from habitat_mosnav.flag_ranges import bound_numbers, one_line_errors
from habitat_mosnav.safety import mask_log_handlers, safe_line
from habitat_mosnav.simulators import SIMULATORS
from habitat_mosnav.versions import add_version_argument

STAGE_HELP = {
    "extract": "semantic annotations + navmesh -> goals.json (view points, navigable positions)",
    "attributes": "colour/material/features per goal from a VLM (or --offline: scene metadata)",
    "normalize": "canonical colour/material vocabularies in goals.json",
    "queries": "query programs + matched_object_ids -> queries.json",
    "language": "natural-language instruction per query (templates, or --llm)",
    "episodes": "start positions per query and target mode -> episodes.json",
    "image-goals": "per query, the camera of its goal image (goal type image): a view of a "
    "matched instance with >= 70%% of it in view, covering 3-50%% of the frame -> queries.json",
    "show": "PNGs of goals' view points for checking by eye",
    "all": "extract, attributes, normalize, queries, language, episodes, image-goals",
}


def _csv(s: str) -> List[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    g = common.add_argument_group("common")
    g.add_argument(
        "--scenes",
        type=Path,
        help="scene root in HM3D layout (<root>/<NNNNN-id>/<id>.semantic.txt ...)",
    )
    g.add_argument("--out", type=Path, required=True, help="dataset directory (dataset_semantic/)")
    g.add_argument(
        "--work",
        type=Path,
        default=None,
        help="intermediates: stage markers, attribute cache, renders (default <out>.build)",
    )
    g.add_argument(
        "--scene-ids", type=_csv, default=None, help="only these scene ids (comma-separated)"
    )
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--overwrite", action="store_true", help="redo scenes/goals already finished")
    g.add_argument(
        "--offline",
        action="store_true",
        help="attributes from <id>.mosnav_meta.json instead of a VLM (no network)",
    )
    g.add_argument(
        "--backend",
        choices=tuple(SIMULATORS),
        default="mosnav",
        help="simulator for geometry: the CPU MosNavMeshSim-v0 or habitat-sim's Sim-v0",
    )
    g.add_argument(
        "--scene-dataset",
        default="default",
        help="habitat-sim scene dataset config (HM3D: hm3d_annotated_basis.scene_dataset_config.json)",
    )
    g.add_argument("--no-progress", action="store_true")
    g.add_argument("-v", "--verbose", action="store_true")

    ex = common.add_argument_group("extract")
    ex.add_argument(
        "--category-map",
        type=Path,
        default=None,
        help="JSON {raw category: clean name or null to drop}; overrides the category table",
    )
    ex.add_argument(
        "--category-table",
        type=Path,
        default=None,
        help="raw -> clean category table replacing the default "
        "(habitat_mosnav/dataset_building/data/hm3d_categories.json)",
    )
    ex.add_argument(
        "--drop",
        type=_csv,
        default=None,
        help="extra clean category names to drop (comma-separated); structure, placeholders "
        "and annotator notes are dropped by the category table",
    )
    ex.add_argument(
        "--categories",
        type=Path,
        default=None,
        help="the dataset-wide categories.json to extend (default <out>/categories.json); "
        "give train and val builds the same file so objectgoal ids agree",
    )
    ex.add_argument(
        "--objectnav-goals",
        type=Path,
        default=None,
        help="habitat ObjectNav HM3D v2 data (a content/<scene>.json.gz file or its directory): "
        "use its goals' view points for the objects it lists",
    )
    ex.add_argument(
        "--min-size",
        type=float,
        default=0.15,
        help="drop objects whose largest side is below this (m)",
    )
    ex.add_argument(
        "--max-size",
        type=float,
        default=None,
        help="drop objects whose largest side is above this (m)",
    )
    ex.add_argument(
        "--view-radius",
        type=float,
        default=1.0,
        help="view points: navigable grid points within this of the object's box (m)",
    )
    ex.add_argument("--view-spacing", type=float, default=0.25, help="view point grid spacing (m)")
    ex.add_argument(
        "--min-pixels",
        type=int,
        default=30,
        help="object pixels for a view point to see it",
    )
    ex.add_argument(
        "--max-view-points",
        type=int,
        default=None,
        help="keep only the best N view points per goal (default: all)",
    )
    ex.add_argument(
        "--image-size",
        type=int,
        default=160,
        help="render size for visibility checks, crops and image goals (pixels)",
    )
    ex.add_argument(
        "--up-axis",
        choices=("auto", "y", "z"),
        default="auto",
        help="up axis of the scene meshes (render and semantic .glb). auto: the up_axis of "
        "<id>.mosnav_meta.json when present, else Z up as habitat-sim reads a .glb "
        "(right for HM3D/MP3D and for mosnav-make-scenes output)",
    )

    at = common.add_argument_group("attributes / language (OpenAI-compatible API)")
    at.add_argument(
        "--env-file", type=Path, default=None, help=".env with MOSNAV_API_KEY etc. (default ./.env)"
    )
    at.add_argument(
        "--views", type=int, default=2, help="view points rendered per goal for the VLM"
    )
    at.add_argument("--rpm", type=float, default=None, help="at most this many requests per minute")
    at.add_argument("--max-retries", type=int, default=None)
    at.add_argument("--backoff", type=float, default=None, help="first retry delay (s), doubling")
    at.add_argument("--timeout", type=float, default=None, help="per request (s)")
    at.add_argument(
        "--llm", action="store_true", help="language: instructions from the LLM, not templates"
    )

    qe = common.add_argument_group("queries / episodes")
    qe.add_argument(
        "--max-queries", type=int, default=None, help="at most this many queries per scene"
    )
    qe.add_argument(
        "--keep-redundant",
        action="store_true",
        help="keep queries whose extra condition selects nothing less than their parent",
    )
    qe.add_argument(
        "--no-combos", action="store_true", help="no colour+material / colour+feature queries"
    )
    qe.add_argument("--modes", type=_csv, default=list(TARGET_MODES))
    qe.add_argument("--episodes-per-query", type=int, default=1, help="per query and target mode")
    qe.add_argument(
        "--max-per-group",
        type=int,
        default=None,
        help="per scene, at most this many episodes per (pure-category or not, target mode)",
    )
    qe.add_argument("--min-start-distance", type=float, default=1.5)
    qe.add_argument(
        "--min-distance", type=float, default=2.0, help="min optimal_subset_distance (m)"
    )
    qe.add_argument(
        "--max-distance", type=float, default=25.0, help="max optimal_subset_distance (m)"
    )
    qe.add_argument("--max-targets", type=int, default=12)
    qe.add_argument(
        "--success-distance",
        type=float,
        default=None,
        help="d of SPEC §4 for info.optimal_subset_distance (default "
        f"{SUCCESS_DISTANCE:g} m, the task's default mosnav_success_distance); "
        "info names the value used",
    )

    sh = common.add_argument_group("show")
    sh.add_argument(
        "--object-ids", type=int, nargs="*", default=None, help="goals to render (default all)"
    )
    sh.add_argument(
        "--show-dir", type=Path, default=None, help="default <work>/rendered_viewpoints"
    )

    # --help shows plain text: the docstring's reST ``literals`` without their backticks
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="mosnav-build",
        description=__doc__.split("\n\n")[0].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_version_argument(p)
    sub = p.add_subparsers(dest="stage", metavar="stage", required=True)
    for name, text in STAGE_HELP.items():
        sub.add_parser(name, parents=[common], allow_abbrev=False, help=text, description=text)
    _add_import_goat(sub)
    return one_line_errors(bound_numbers(p), "mosnav-build")


IMPORT_GOAT_HELP = (
    "a GOAT-Bench v1 split (<split>.json.gz + content/<scene>.json.gz) -> a SPEC §6 dataset "
    "with all/many/single episodes per GOAT task and one sequential episode per GOAT episode"
)


def _add_import_goat(sub) -> None:
    g = sub.add_parser(
        "import-goat", allow_abbrev=False, help=IMPORT_GOAT_HELP, description=IMPORT_GOAT_HELP
    )
    g.add_argument(
        "--goat",
        type=Path,
        required=True,
        help="the GOAT split folder (e.g. data/datasets/goat_bench/hm3d/v1/val_seen)",
    )
    g.add_argument(
        "--scene-root",
        type=Path,
        required=True,
        help="HM3D v0.2 scenes of the split (<root>/<NNNNN-id>/<id>.basis.glb), e.g. hm3d/val",
    )
    g.add_argument("--out", type=Path, required=True, help="dataset directory to write")
    g.add_argument(
        "--categories",
        type=Path,
        default=None,
        help="a categories.json to extend (ids kept, new names appended sorted) into "
        "<out>/categories.json",
    )
    g.add_argument("--seed", type=int, default=0, help="draws the many episodes' target_count")
    g.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")


def _run_import_goat(args):
    from habitat_mosnav.dataset_building.goat import run_import

    return run_import(
        args.goat,
        args.scene_root,
        args.out,
        seed=args.seed,
        categories=args.categories,
        overwrite=args.overwrite,
    )


def config_from_args(args):
    from habitat_mosnav.dataset_building.episodes import EpisodeOptions
    from habitat_mosnav.dataset_building.extract import ExtractOptions
    from habitat_mosnav.dataset_building.geometry import CameraSpec
    from habitat_mosnav.dataset_building.pipeline import BuildConfig
    from habitat_mosnav.dataset_building.categories import (
        DEFAULT_TABLE,
        load_table,
        read_category_map,
    )
    from habitat_mosnav.dataset_building.semantic import DEFAULT_DROP

    cmap = read_category_map(args.category_map) if args.category_map is not None else {}
    table = str(args.category_table) if args.category_table is not None else str(DEFAULT_TABLE)
    load_table(table)  # a bad table fails now, with its one-line message
    bad = [m for m in args.modes if m not in TARGET_MODES]
    if bad:
        raise BuildError(
            f"--modes: unknown target mode {bad[0]!r} (expected {', '.join(TARGET_MODES)})"
        )
    api = {
        "max_retries": args.max_retries,
        "backoff_s": args.backoff,
        "timeout_s": args.timeout,
        "min_interval_s": (60.0 / args.rpm) if args.rpm else None,
    }
    return BuildConfig(
        out=args.out,
        scenes=args.scenes,
        work=args.work,
        seed=args.seed,
        overwrite=args.overwrite,
        scene_ids=args.scene_ids,
        offline=args.offline,
        backend=args.backend,
        scene_dataset=args.scene_dataset,
        camera=CameraSpec(width=args.image_size, height=args.image_size),
        categories=args.categories,
        objectnav_goals=args.objectnav_goals,
        extract=ExtractOptions(
            category_map=cmap,
            drop=tuple(args.drop) if args.drop is not None else DEFAULT_DROP,
            category_table=table,
            min_size=args.min_size,
            max_size=args.max_size,
            view_radius=args.view_radius,
            view_spacing=args.view_spacing,
            min_pixels=args.min_pixels,
            max_view_points=args.max_view_points,
            up_axis=args.up_axis,
        ),
        attribute_views=args.views,
        env_file=args.env_file,
        api_overrides={k: v for k, v in api.items() if v is not None},
        max_queries=args.max_queries,
        drop_redundant=not args.keep_redundant,
        query_combos=not args.no_combos,
        llm_language=args.llm,
        episodes=EpisodeOptions(
            modes=tuple(args.modes),
            episodes_per_query=args.episodes_per_query,
            max_per_group=args.max_per_group,
            min_start_distance=args.min_start_distance,
            min_optimal_distance=args.min_distance,
            max_optimal_distance=args.max_distance,
            max_targets=args.max_targets,
            **(
                {} if args.success_distance is None else {"success_distance": args.success_distance}
            ),
        ),
        progress=not args.no_progress,
        show_object_ids=args.object_ids,
        show_dir=args.show_dir,
    )


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(message)s",
    )
    mask_log_handlers()  # a key echoed in a warning is masked there too
    try:
        from habitat_mosnav.dataset_building import pipeline
        from habitat_mosnav.safety import inside, output_root

        for flag in ("scenes", "scene_root", "goat"):  # the inputs the stages read
            value = getattr(args, flag, None)
            if value is not None and inside(str(args.out), str(value)):
                raise BuildError(
                    f"--out {args.out}: inside the input directory {value} "
                    f"(--{flag.replace('_', '-')}): choose a directory outside it"
                )
        with output_root(str(args.out)):  # never written through a link planted below it
            if args.stage == "import-goat":
                reports = [_run_import_goat(args)]
            elif args.stage == "all":
                cfg = config_from_args(args)
                reports = pipeline.run_all(cfg)
            else:
                cfg = config_from_args(args)
                reports = [pipeline.STAGE_FUNCS[args.stage](cfg)]
    except BuildError as e:
        print(safe_line(f"mosnav-build {args.stage}: error: {e}"), file=sys.stderr)
        return 2
    except OSError as e:  # a full disk, no permission: one line naming the file, never a traceback
        where = f"{e.filename}: " if e.filename else ""
        print(
            safe_line(
                f"mosnav-build {args.stage}: error: {where}{e.strerror or e}; "
                + (
                    "nothing was written: fix this, then rerun the same command"
                    if args.stage == "import-goat"
                    else "the scenes finished so far are kept: fix this, then rerun the same command"
                )
            ),
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(
            f"mosnav-build {args.stage}: interrupted; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    for r in reports:
        print(r.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
