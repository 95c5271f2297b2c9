"""The stages as Python functions: ``run_extract(cfg)`` ... ``run_all(cfg)``.

Each takes a :class:`BuildConfig`, works scene by scene with a progress bar, skips scenes a
previous run already finished with the same parameters (unless ``overwrite``), and returns
a :class:`StageReport`. Results depend only on the inputs and ``seed``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from tqdm.auto import tqdm

from habitat_mosnav.dataset_building.common import (
    ATTRIBUTE_FIELDS,
    STAGES,
    BuildError,
    SceneFiles,
    StageMarkers,
    StageReport,
    dataset_scene_ids,
    discover_scenes,
    fingerprint,
    log,
    make_doc,
    read_doc,
    write_json,
)
from habitat_mosnav.dataset_building.categories import default_categories_path
from habitat_mosnav.dataset_building.episodes import EpisodeOptions
from habitat_mosnav.dataset_building.extract import ExtractOptions
from habitat_mosnav.dataset_building.geometry import CameraSpec
from habitat_mosnav.simulators import SIMULATORS


@dataclass
class BuildConfig:
    """Everything the stages need; the CLI fills it from its flags."""

    out: Path
    scenes: Optional[Path] = None
    work: Optional[Path] = None  # default: <out>.build next to the dataset
    seed: int = 0
    overwrite: bool = False
    scene_ids: Optional[Sequence[str]] = None
    offline: bool = False
    backend: str = "mosnav"
    scene_dataset: str = "default"
    camera: CameraSpec = field(default_factory=CameraSpec)
    extract: ExtractOptions = field(default_factory=ExtractOptions)
    attribute_views: int = 2
    env_file: Optional[Path] = None
    api_overrides: Dict[str, Any] = field(default_factory=dict)
    max_queries: Optional[int] = None
    drop_redundant: bool = True
    query_combos: bool = True
    llm_language: bool = False
    episodes: EpisodeOptions = field(default_factory=EpisodeOptions)
    progress: bool = True
    show_object_ids: Optional[Sequence[int]] = None
    show_dir: Optional[Path] = None
    categories: Optional[Path] = None  # categories.json to extend (default <out>/categories.json)
    objectnav_goals: Optional[Path] = (
        None  # habitat ObjectNav HM3D v2 data to take view points from
    )

    def __post_init__(self):
        self.out = Path(self.out)
        if self.scenes is not None:
            self.scenes = Path(self.scenes)
        self.work = Path(self.work) if self.work else self.out.parent / (self.out.name + ".build")
        self.categories = (
            Path(self.categories) if self.categories else default_categories_path(self.out)
        )
        if self.objectnav_goals is not None:
            self.objectnav_goals = Path(self.objectnav_goals)

    # -- helpers -----------------------------------------------------------------------
    def input_scenes(self) -> List[SceneFiles]:
        if self.scenes is None:
            raise BuildError("--scenes is required for this stage (the scene root in HM3D layout)")
        return discover_scenes(self.scenes, self.scene_ids)

    def output_scene_ids(self) -> List[str]:
        ids = dataset_scene_ids(self.out, self.scene_ids)
        if not ids:
            raise BuildError(
                f"{self.out}: no scene with goals.json (run `mosnav-build extract` first)"
            )
        return ids

    def scene_dir(self, scene_id: str) -> Path:
        return self.out / scene_id

    def bar(self, total: int, desc: str):
        return tqdm(
            total=total, desc=desc, disable=not self.progress, leave=False, dynamic_ncols=True
        )

    def open_geometry(self, scene: SceneFiles, rgb: bool = True):
        """The scene in the simulator; ``rgb=False`` renders only the semantic sensor."""
        from dataclasses import replace

        from habitat_mosnav.dataset_building.geometry import open_scene

        return open_scene(
            scene,
            self.backend,
            replace(self.camera, rgb=rgb),
            self.resolved_scene_dataset(scene),
            up_axis=self.extract.up_axis,
        )

    def resolved_scene_dataset(self, scene: SceneFiles) -> str:
        """``--scene-dataset``; left at 'default' for a simulator that ``needs_scene_dataset``,
        the one ``*.scene_dataset_config.json`` in the scene root or the folder above (HM3D's;
        ``habitat_sim_assets`` writes one); none or several: one line asking for the flag."""
        needs = getattr(SIMULATORS.get(self.backend), "needs_scene_dataset", False)
        if not needs or self.scene_dataset != "default":
            return self.scene_dataset
        if getattr(self, "_found_scene_dataset", None) is None:
            roots = [self.scenes, self.scenes.parent] if self.scenes is not None else []
            found = sorted(
                {str(p) for r in roots if r.is_dir() for p in r.glob("*.scene_dataset_config.json")}
            )
            if len(found) != 1:
                what = "none" if not found else ", ".join(found)
                raise BuildError(
                    f"{self.scenes}: --backend {self.backend} needs --scene-dataset "
                    f"(HM3D: hm3d_annotated_basis.scene_dataset_config.json; generated scenes: "
                    f"python -m habitat_mosnav.sims.habitat_sim_assets ROOT; found {what} next to the scenes)"
                )
            log.info("scene dataset: %s", found[0])
            self._found_scene_dataset = found[0]
        return self._found_scene_dataset

    def api_client(self):
        from habitat_mosnav.dataset_building.llm import ApiSettings, StageClient

        return StageClient(ApiSettings.from_env(self.env_file, **self.api_overrides))


def _per_scene(
    cfg: BuildConfig,
    stage: str,
    scene_ids: List[str],
    params: Union[Dict[str, Any], Callable[[str], Dict[str, Any]]],
    outputs: Callable[[str], List[Path]],
    work: Callable[[str, Counter], Any],
) -> StageReport:
    """Run ``work`` for each scene not already done with the same params.

    ``params`` is one dict for all scenes, or a function of the scene id.
    """
    report = StageReport(stage)
    fixed = params
    params_of = params if callable(params) else (lambda _sid: fixed)
    for sid in tqdm(scene_ids, desc=stage, disable=not cfg.progress, dynamic_ncols=True):
        scene_params = params_of(sid)
        markers = StageMarkers(cfg.work, sid)
        if (
            not cfg.overwrite
            and markers.done(stage, scene_params)
            and all(p.is_file() for p in outputs(sid))
        ):
            report.skipped.append(sid)
            continue
        counts: Counter = Counter()
        complete = work(sid, counts)
        markers.invalidate_after(stage)
        if complete is not False:  # e.g. attributes with failed goals: retry them next run
            markers.mark(stage, scene_params)
        report.done.append(sid)
        report.counts[sid] = dict(sorted(counts.items()))
    return report


def _goals_path(cfg, sid):
    return cfg.scene_dir(sid) / "goals.json"


def _load_goals(cfg, sid) -> List[Dict[str, Any]]:
    """goals.json of a scene, checked field by field (one-line error naming goal and field)."""
    from habitat_mosnav.datasets.schema import DatasetFormatError, parse_goals

    path = _goals_path(cfg, sid)
    doc = read_doc(path, "goals", sid)
    try:
        parse_goals(str(path), sid)
    except DatasetFormatError as e:
        raise BuildError(str(e)) from None
    for i, g in enumerate(doc["goals"]):
        attrs = g.get("attributes", {})
        if not isinstance(attrs, dict) or not all(
            isinstance(attrs.get(k, []), list) for k in ATTRIBUTE_FIELDS
        ):
            raise BuildError(
                f"{path}: goal {g.get('object_id', i)}: field 'attributes' must map "
                "color/material/feature to lists"
            )
    return doc["goals"]


# ----------------------------------------------------------------------------- stages
def run_extract(cfg: BuildConfig) -> StageReport:
    from habitat_mosnav.dataset_building.extract import extract_goals, parse_objects
    from habitat_mosnav.dataset_building.semantic import resolve_up_axis

    from habitat_mosnav.dataset_building.objectnav import (
        apply_objectnav,
        find_objectnav_file,
        read_objectnav_goals,
    )

    scenes = {s.scene_id: s for s in cfg.input_scenes()}
    objectnav = {}
    if cfg.objectnav_goals is not None:
        objectnav = {sid: find_objectnav_file(cfg.objectnav_goals, sid) for sid in scenes}

    def params_of(sid: str) -> Dict[str, Any]:
        onav = objectnav.get(sid)
        return {
            "backend": cfg.backend,
            "camera": {k: v for k, v in cfg.camera.__dict__.items() if k != "rgb"},
            "extract": cfg.extract.params(),
            "input": fingerprint(scenes[sid]),
            "objectnav": None
            if onav is None
            else [str(onav), onav.stat().st_size, onav.stat().st_mtime_ns],
        }

    def work(sid: str, counts: Counter) -> None:
        scene = scenes[sid]
        imported = None
        if cfg.objectnav_goals is not None:
            if objectnav[sid] is None:
                counts["objectnav_no_file"] += 1
            else:  # validated before the slow part
                imported = read_objectnav_goals(objectnav[sid], sid)
        objects, c = parse_objects(scene, cfg.extract, progress=cfg.progress)
        for k, v in c.items():
            counts[k] = v
        geo = cfg.open_geometry(scene, rgb=False)
        try:
            with cfg.bar(len(objects), f"extract {sid}") as bar:
                goals = extract_goals(geo, objects, cfg.extract, counts, bar)
        finally:
            geo.close()
        if counts.get("dropped_no_view_point"):
            log.warning(
                "extract: %s: %d object(s) dropped without any view point",
                sid,
                counts["dropped_no_view_point"],
            )
            if objects and counts["dropped_no_view_point"] > 0.8 * len(objects):
                log.warning(
                    "extract: %s: most objects are never seen; the scene meshes were read "
                    "%s-up (--up-axis %s): if that is wrong, rerun with --up-axis y or z",
                    sid,
                    resolve_up_axis(scene.render_glb, cfg.extract.up_axis).upper(),
                    cfg.extract.up_axis,
                )
        if imported is not None:
            from habitat_mosnav.dataset_building.semantic import read_annotations

            annotated = {o.object_id for o in read_annotations(scene.semantic_txt)}
            goals = apply_objectnav(goals, imported, annotated, counts, objects)
        write_json(_goals_path(cfg, sid), make_doc(sid, "goals", goals))

    report = _per_scene(
        cfg, "extract", sorted(scenes), params_of, lambda s: [_goals_path(cfg, s)], work
    )
    write_categories(cfg, report)
    return report


def write_categories(cfg: BuildConfig, report: StageReport) -> None:
    """Extend the dataset-wide ``categories.json`` with the categories of every scene in
    ``cfg.out`` (existing ids never move; new names are appended sorted)."""
    from habitat_mosnav.dataset_building.categories import dataset_categories, update_categories

    cats, new = update_categories(cfg.categories, dataset_categories(cfg.out))
    report.notes.append(
        f"categories: {len(cats)} in {cfg.categories}" + (f" ({len(new)} new)" if new else "")
    )


def run_attributes(cfg: BuildConfig) -> StageReport:
    from habitat_mosnav.dataset_building.attributes import offline_attributes, online_attributes

    ids = cfg.output_scene_ids()
    scenes = {s.scene_id: s for s in cfg.input_scenes()} if (cfg.scenes is not None) else {}
    missing = [s for s in ids if s not in scenes]
    if missing:
        raise BuildError(
            f"{cfg.scenes}: scene(s) {', '.join(missing)} of {cfg.out} not found "
            "(attributes needs the scene files: --scenes)"
        )

    def params(sid: str) -> Dict[str, Any]:
        return {
            "offline": cfg.offline,
            "views": cfg.attribute_views,
            "input": fingerprint(scenes[sid]) if cfg.offline else None,
        }

    client_box: List[Any] = []

    def work(sid: str, counts: Counter) -> None:
        goals = _load_goals(cfg, sid)
        if cfg.offline:
            goals = offline_attributes(goals, scenes[sid], counts)
        else:
            if not client_box:
                client_box.append(cfg.api_client())
            with cfg.bar(len(goals), f"attributes {sid}") as bar:
                goals = online_attributes(
                    goals,
                    sid,
                    cfg.work,
                    client_box[0],
                    lambda: cfg.open_geometry(scenes[sid]),
                    cfg.attribute_views,
                    counts,
                    cfg.overwrite,
                    bar,
                )
        write_json(_goals_path(cfg, sid), make_doc(sid, "goals", goals))
        return counts.get("failed", 0) == 0

    return _per_scene(cfg, "attributes", ids, params, lambda s: [_goals_path(cfg, s)], work)


def run_normalize(cfg: BuildConfig) -> StageReport:
    from habitat_mosnav.dataset_building.language import with_article, noun_phrase
    from habitat_mosnav.dataset_building.normalize import normalize_goals

    def work(sid: str, counts: Counter) -> None:
        dropped: Counter = Counter()
        goals = normalize_goals(_load_goals(cfg, sid), dropped)
        for g in goals:
            if not g.get("caption"):
                g["caption"] = with_article(_caption_phrase(g, noun_phrase))
        counts["goals"] = len(goals)
        counts["values_dropped"] = sum(dropped.values())
        if dropped:
            log.info(
                "normalize: %s: values outside the vocabularies dropped: %s",
                sid,
                ", ".join(f"{k} x{v}" for k, v in dropped.most_common(10)),
            )
        write_json(_goals_path(cfg, sid), make_doc(sid, "goals", goals))

    return _per_scene(
        cfg, "normalize", cfg.output_scene_ids(), {}, lambda s: [_goals_path(cfg, s)], work
    )


def _caption_phrase(goal: Dict[str, Any], noun_phrase) -> str:
    a = goal.get("attributes") or {}
    where = [{"field": "category", "op": "==", "value": goal["category"]}]
    for f in ("color", "material"):
        where += [{"field": f, "op": "==", "value": v} for v in (a.get(f) or [])[:2]]
    where += [{"field": "feature", "op": "==", "value": v} for v in (a.get("feature") or [])[:2]]
    return noun_phrase({"select": "object", "where": where}, plural=False)


def _queries_path(cfg, sid):
    return cfg.scene_dir(sid) / "queries.json"


def _episodes_path(cfg, sid):
    return cfg.scene_dir(sid) / "episodes.json"


def _load_queries(cfg, sid, goals: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    from habitat_mosnav.dataset_building.queries import validate_queries

    path = _queries_path(cfg, sid)
    queries = read_doc(path, "queries", sid)["queries"]
    validate_queries(queries, {int(g["object_id"]) for g in goals}, str(path))
    return queries


def run_queries(cfg: BuildConfig) -> StageReport:
    from habitat_mosnav.dataset_building.language import template_instruction
    from habitat_mosnav.dataset_building.queries import build_queries

    params = {
        "seed": cfg.seed,
        "max_queries": cfg.max_queries,
        "drop_redundant": cfg.drop_redundant,
        "combos": cfg.query_combos,
    }

    def work(sid: str, counts: Counter) -> None:
        queries, c = build_queries(
            _load_goals(cfg, sid),
            seed=cfg.seed,
            scene_id=sid,
            max_queries=cfg.max_queries,
            drop_redundant=cfg.drop_redundant,
            combos=cfg.query_combos,
        )
        counts.update(c)
        counts["pure_category"] = sum(q["pure_category"] for q in queries)
        for q in queries:  # a usable default until the language stage runs
            q["instruction"] = template_instruction(q, cfg.seed, sid)
        write_json(_queries_path(cfg, sid), make_doc(sid, "queries", queries))

    return _per_scene(
        cfg, "queries", cfg.output_scene_ids(), params, lambda s: [_queries_path(cfg, s)], work
    )


def run_language(cfg: BuildConfig) -> StageReport:
    from habitat_mosnav.dataset_building.language import build_instructions

    params = {"seed": cfg.seed, "llm": cfg.llm_language}
    client_box: List[Any] = []

    def work(sid: str, counts: Counter) -> None:
        queries = _load_queries(cfg, sid, _load_goals(cfg, sid))
        client = None
        if cfg.llm_language:
            if not client_box:
                client_box.append(cfg.api_client())
            client = client_box[0]
        queries = build_instructions(
            queries, seed=cfg.seed, scene_id=sid, client=client, counts=counts
        )
        counts["queries"] = len(queries)
        write_json(_queries_path(cfg, sid), make_doc(sid, "queries", queries))

    return _per_scene(
        cfg, "language", cfg.output_scene_ids(), params, lambda s: [_queries_path(cfg, s)], work
    )


def _input_scenes_of_output(cfg: BuildConfig, stage: str):
    """({scene id: SceneFiles}, the dataset's scene ids); every one of those must be among
    the input scenes (a stage that renders or walks needs the scene files)."""
    scenes = {s.scene_id: s for s in cfg.input_scenes()}
    ids = cfg.output_scene_ids()
    missing = [s for s in ids if s not in scenes]
    if missing:
        raise BuildError(
            f"{cfg.scenes}: scene(s) {', '.join(missing)} of {cfg.out} not found "
            f"({stage} needs the scene files: --scenes)"
        )
    return scenes, ids


def _over_queries(cfg: BuildConfig, stage: str, sid: str, scene, fn):
    """``fn(geometry, goals, queries, progress bar)`` with the scene's goals and queries read
    and the scene open in the simulator (semantics only), the bar over the queries."""
    goals = _load_goals(cfg, sid)
    queries = _load_queries(cfg, sid, goals)
    geo = cfg.open_geometry(scene, rgb=False)
    try:
        with cfg.bar(len(queries), f"{stage} {sid}") as bar:
            return fn(geo, goals, queries, bar)
    finally:
        geo.close()


def run_episodes(cfg: BuildConfig) -> StageReport:
    from habitat_mosnav.dataset_building.episodes import build_episodes

    scenes, ids = _input_scenes_of_output(cfg, "episodes")
    params = {"seed": cfg.seed, "backend": cfg.backend, "episodes": cfg.episodes.params()}

    def work(sid: str, counts: Counter) -> None:
        def build(geo, goals, queries, bar):
            return build_episodes(geo, sid, goals, queries, cfg.episodes, cfg.seed, counts, bar)

        eps = _over_queries(cfg, "episodes", sid, scenes[sid], build)
        counts["episodes"] = len(eps)
        write_json(_episodes_path(cfg, sid), make_doc(sid, "episodes", eps))

    return _per_scene(cfg, "episodes", ids, params, lambda s: [_episodes_path(cfg, s)], work)


def run_image_goals(cfg: BuildConfig) -> StageReport:
    """Each query's ``image_goal``: the view point where a matched instance is mostly in
    view and covers a moderate share of the frame, measured with the semantic camera
    (``image_goals.py``)."""
    from dataclasses import replace

    from habitat_mosnav.dataset_building.image_goals import (
        MIN_OBJECT_COVERAGE,
        add_image_goals,
        selection_params,
    )

    scenes, ids = _input_scenes_of_output(cfg, "image-goals")
    params = {
        "backend": cfg.backend,
        "camera": {k: v for k, v in replace(cfg.camera, rgb=False).__dict__.items() if k != "rgb"},
        "selection": selection_params(),
    }

    def work(sid: str, counts: Counter) -> None:
        def add(geo, goals, queries, bar):
            return add_image_goals(geo, queries, goals, cfg.camera, counts, bar)

        queries = _over_queries(cfg, "image-goals", sid, scenes[sid], add)
        write_json(_queries_path(cfg, sid), make_doc(sid, "queries", queries))
        if counts.get("image_goal_fallback"):
            log.warning(
                "image-goals: %s: %d query/queries without a view showing >= %.0f%% of an "
                "instance at a moderate size; kept the nearest (image_goal_fallback)",
                sid,
                counts["image_goal_fallback"],
                100 * MIN_OBJECT_COVERAGE,
            )

    return _per_scene(cfg, "image-goals", ids, params, lambda s: [_queries_path(cfg, s)], work)


def run_show(cfg: BuildConfig) -> StageReport:
    """Render the view points of the chosen goals (all goals when none is chosen)."""
    from habitat_mosnav.dataset_building.show import render_goal

    scenes = {s.scene_id: s for s in cfg.input_scenes()}
    out_root = Path(cfg.show_dir) if cfg.show_dir else cfg.work / "rendered_viewpoints"
    report = StageReport("show")
    for sid in cfg.output_scene_ids():
        if sid not in scenes:
            raise BuildError(f"{cfg.scenes}: scene {sid} not found")
        goals = _load_goals(cfg, sid)
        if cfg.show_object_ids:
            wanted = set(int(i) for i in cfg.show_object_ids)
            unknown = wanted - {int(g["object_id"]) for g in goals}
            if unknown and len(cfg.output_scene_ids()) == 1:
                raise BuildError(
                    f"{_goals_path(cfg, sid)}: no goal with object_id {sorted(unknown)[0]}"
                )
            goals = [g for g in goals if int(g["object_id"]) in wanted]
        if not goals:
            continue
        geo = cfg.open_geometry(scenes[sid])
        n = 0
        try:
            for g in tqdm(goals, desc=f"show {sid}", disable=not cfg.progress, leave=False):
                n += len(render_goal(geo, g, out_root / sid / str(g["object_id"])))
        finally:
            geo.close()
        report.done.append(sid)
        report.counts[sid] = {"goals": len(goals), "images": n, "dir": str(out_root / sid)}
    return report


STAGE_FUNCS = {
    "extract": run_extract,
    "attributes": run_attributes,
    "normalize": run_normalize,
    "queries": run_queries,
    "language": run_language,
    "episodes": run_episodes,
    "image-goals": run_image_goals,
    "show": run_show,
}


def run_all(cfg: BuildConfig) -> List[StageReport]:
    """extract -> attributes -> normalize -> queries -> language -> episodes -> image-goals."""
    return [STAGE_FUNCS[s](cfg) for s in STAGES]
