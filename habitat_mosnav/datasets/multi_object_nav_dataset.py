"""The ``MultiObjectNav-v1`` dataset: ``dataset_semantic/<scene_id>/*.json`` -> episodes.

Config (``habitat.dataset``, see ``MultiObjectNavDatasetConfig``): ``data_path`` (the
``dataset_semantic`` directory), ``scenes_dir``, ``split`` (substituted for ``{split}`` in
both), ``content_scenes``, ``goal_type``, ``target_modes`` and ``scene_dataset_config``
(copied into every episode: ``habitat.Env`` hands it to the simulator, so habitat-sim loads
HM3D's semantic annotations).

Only the scenes a selection uses must be on disk: a scene listed in ``content_scenes``
must exist, while with ``content_scenes: ["*"]`` a missing scene file is recorded
(:meth:`MultiObjectNavDatasetV1.check_scene_files` raises the one-line error for the scenes
an evaluation selects), so one downloaded HM3D scene is enough to smoke-test.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from habitat.core.dataset import ALL_SCENES_MASK, Dataset
from habitat.core.logging import logger
from habitat.core.registry import registry
from habitat.core.simulator import AgentState
from habitat.tasks.nav.object_nav_task import ObjectViewLocation

from habitat_mosnav.datasets.episode import MultiObjectGoal, MultiObjectNavEpisode, SubtaskGoal
from habitat_mosnav.api import EPISODE_MODES, GOAL_TYPES, SEQUENTIAL, TARGET_MODES
from habitat_mosnav.keys import episode_key, scene_name_from_path
from habitat_mosnav.prompts import IMAGE_GOAL_TEXT
from habitat_mosnav.datasets.schema import (
    DatasetFormatError,
    load_scene_dir,
    parse_categories,
    parse_goals,
    pure_category,
    query_category,
)

CATEGORIES_FILE = "categories.json"


def list_scene_ids(data_path: str) -> List[str]:
    """Scene directories of a ``dataset_semantic`` directory (SPEC §6): every folder not
    starting with ``.``. A folder without ``episodes.json`` and a directory without any
    scene folder are errors (never a silently smaller dataset)."""
    if not os.path.isdir(data_path):
        raise DatasetFormatError(
            f"{data_path}: dataset directory not found (habitat.dataset.data_path)"
        )
    scenes = sorted(
        d
        for d in os.listdir(data_path)
        if not d.startswith(".") and os.path.isdir(os.path.join(data_path, d))
    )
    for d in scenes:
        if not os.path.lexists(
            os.path.join(data_path, d, "episodes.json")
        ):  # read: a FIFO refused there
            raise DatasetFormatError(
                f"{os.path.join(data_path, d)}: scene folder without episodes.json (each "
                "folder of the dataset directory is a scene: <scene_id>/{goals,queries,"
                "episodes}.json)"
            )
    if not scenes:
        raise DatasetFormatError(
            f"{data_path}: no scene folder in the dataset directory "
            "(expected <scene_id>/{goals,queries,episodes}.json)"
        )
    return scenes


def resolve_scene_dataset_config(value: str, split: str, scenes_dir: str) -> str:
    """The scene dataset config that goes into every episode (habitat-sim reads it).

    ``{split}`` is substituted; a relative path is made absolute. ``default`` stays
    ``default`` unless the scenes root has the config that
    :mod:`habitat_mosnav.sims.habitat_sim_assets` writes for generated scenes (Z-up stages,
    semantics, navmeshes), as HM3D's has its own."""
    from habitat_mosnav.sims.habitat_sim_assets import DATASET_CONFIG

    if value == "default":
        beside = os.path.join(scenes_dir, DATASET_CONFIG)
        return os.path.abspath(beside) if os.path.isfile(beside) else "default"
    path = os.path.abspath(os.path.normpath(value.replace("{split}", split)))
    if not os.path.isfile(path):
        raise DatasetFormatError(
            f"{path}: scene dataset config not found (habitat.dataset.scene_dataset_config, "
            "mosnav-eval --scene-dataset-config FILE; HM3D: hm3d_annotated_basis.scene_dataset_config.json "
            "of the semantic download, beside the split folders given to --scene-root)"
        )
    return path


def find_scene_file(scenes_dir: str, scene_id: str) -> str:
    """HM3D layout ``<scenes_dir>/<NNNNN-id>/<id>.basis.glb`` (or ``<id>.glb`` for
    generated scenes); also ``<scenes_dir>/<id>/`` and files directly in ``scenes_dir``."""
    candidates = []
    if os.path.isdir(scenes_dir):
        dirs = [
            d for d in sorted(os.listdir(scenes_dir)) if d == scene_id or d.endswith("-" + scene_id)
        ]
        for d in dirs:
            candidates += [
                os.path.join(scenes_dir, d, f"{scene_id}.basis.glb"),
                os.path.join(scenes_dir, d, f"{scene_id}.glb"),
            ]
    candidates += [
        os.path.join(scenes_dir, f"{scene_id}.basis.glb"),
        os.path.join(scenes_dir, f"{scene_id}.glb"),
    ]
    for c in candidates:
        if os.path.isfile(c):
            return os.path.abspath(c)
    raise DatasetFormatError(
        f"{scenes_dir}: scene '{scene_id}' not found (expected <scenes_dir>/NNNNN-{scene_id}/"
        f"{scene_id}.basis.glb or {scene_id}.glb; habitat.dataset.scenes_dir)"
    )


def categories_path(data_path: str, template: Optional[str] = None) -> Optional[str]:
    """``categories.json`` of a dataset: in ``data_path``, else at the dataset root above
    the ``{split}`` folder of the ``data_path`` template, else one or two folders above
    ``data_path`` (``<root>/val/dataset_semantic`` given directly): one file for every split."""
    candidates = [os.path.join(data_path, CATEGORIES_FILE)]
    if template and "{split}" in template:
        root = template.split("{split}", 1)[0]
        candidates.append(os.path.join(root or ".", CATEGORIES_FILE))
    up = os.path.abspath(data_path)
    for _ in range(2):
        up = os.path.dirname(up)
        candidates.append(os.path.join(up, CATEGORIES_FILE))
    for c in candidates:
        if os.path.isfile(c):
            return c
    return None


def load_categories(data_path: str, path: Optional[str]) -> List[str]:
    """The dataset-wide category list (``objectgoal`` indices): the ``categories.json``
    ``path`` (found by :func:`categories_path`; written by ``mosnav-build``) when not None,
    else the sorted union of all scenes' goal categories, so every worker and every
    content_scenes subset agrees on the indices."""
    if path is not None:
        return parse_categories(path)
    cats = set()
    for sid in list_scene_ids(data_path):
        goals = parse_goals(os.path.join(data_path, sid, "goals.json"), sid)
        cats.update(g["category"] for g in goals.values())
    return sorted(cats)


@registry.register_dataset(name="MultiObjectNav-v1")
class MultiObjectNavDatasetV1(Dataset):
    """Episodes of single / any / many (MOS) / all (MOC) multi-object navigation."""

    episodes: List[MultiObjectNavEpisode]

    def __init__(self, config=None) -> None:
        self.episodes = []
        self.categories: List[str] = []
        self.category_to_task_category_id: Dict[str, int] = {}
        if config is None:
            return
        split = config.split
        self.data_path = config.data_path.replace("{split}", split)
        self.scenes_dir = config.scenes_dir.replace("{split}", split)
        goal_type = config.goal_type
        if goal_type not in GOAL_TYPES:
            raise DatasetFormatError(
                f"habitat.dataset.goal_type: unknown goal type '{goal_type}' "
                f"(expected one of {', '.join(GOAL_TYPES)})"
            )
        # Empty: the four query modes; ``sequential`` (SPEC §11) runs when named.
        modes = list(config.target_modes) or list(TARGET_MODES)
        for m in modes:
            if m not in EPISODE_MODES:
                raise DatasetFormatError(
                    f"habitat.dataset.target_modes: unknown target mode '{m}' "
                    f"(expected {', '.join(EPISODE_MODES)})"
                )
        scene_ids = list_scene_ids(self.data_path)
        wanted = set(config.content_scenes)
        if ALL_SCENES_MASK not in wanted:
            missing = sorted(wanted - set(scene_ids))
            if missing:
                raise DatasetFormatError(
                    f"{self.data_path}: content_scenes {missing} not in the dataset "
                    "(habitat.dataset.content_scenes)"
                )
            scene_ids = [s for s in scene_ids if s in wanted]
        self._categories_file = categories_path(self.data_path, config.data_path)
        self.categories = load_categories(self.data_path, self._categories_file)
        self.category_to_task_category_id = {c: i for i, c in enumerate(self.categories)}
        self.scene_dataset_config = resolve_scene_dataset_config(
            str(config.get("scene_dataset_config", "default") or "default"), split, self.scenes_dir
        )
        #: scene name -> one-line error, for scenes whose files are not on disk
        self.missing_scene_files: Dict[str, str] = {}
        self._explicit_scenes = ALL_SCENES_MASK not in wanted
        #: episodes of the selected modes left out because the goal type cannot state their
        #: query (goal type ``object``: a description-only query has no category name)
        self.left_out_for_goal_type = 0
        for sid in scene_ids:
            self._load_scene(sid, split, goal_type, set(modes))
        if self.left_out_for_goal_type:
            total = len(self.episodes) + self.left_out_for_goal_type
            # said when a run starts, so runs of several goal types are not compared blind
            logger.warning(
                f"goal type {goal_type}: {len(self.episodes)} of the split's {total} episodes "
                f"({self.left_out_for_goal_type} left out: a description-only query has no "
                "category name to give as an object goal, SPEC §1)"
            )

    def check_scene_files(self, scene_names) -> None:
        """Raise the one-line error of the first of ``scene_names`` whose file is missing."""
        bad = sorted(set(scene_names) & set(self.missing_scene_files))
        if bad:
            more = f" (and {len(bad) - 1} more selected scene(s) missing)" if len(bad) > 1 else ""
            raise DatasetFormatError(self.missing_scene_files[bad[0]] + more)

    def _load_scene(self, scene_id: str, split: str, goal_type: str, modes: set) -> None:
        goals, queries, episodes = load_scene_dir(os.path.join(self.data_path, scene_id))
        wanted = [e for e in episodes if e["target_mode"] in modes]
        if not wanted:
            return
        try:
            scene_path = find_scene_file(self.scenes_dir, scene_id)
        except DatasetFormatError as exc:
            if self._explicit_scenes:
                raise
            self.missing_scene_files[scene_id] = str(exc)
            scene_path = os.path.abspath(os.path.join(self.scenes_dir, f"{scene_id}.basis.glb"))
        if self._categories_file is not None:
            gpath = os.path.join(self.data_path, scene_id, "goals.json")
            for oid, g in goals.items():
                if g["category"] not in self.category_to_task_category_id:
                    raise DatasetFormatError(
                        f"{gpath}: goal {oid}: field 'category': '{g['category']}' is not in "
                        f"{self._categories_file} (rebuild it with mosnav-build extract)"
                    )
        goal_objs = {oid: _make_goal(g) for oid, g in goals.items()}
        scene_categories = {g["category"] for g in goals.values()}
        qpath = os.path.join(self.data_path, scene_id, "queries.json")
        for e in wanted:
            if e["target_mode"] == SEQUENTIAL:
                # Each subtask carries its own goal type: not filtered by goal_type (§11).
                self.episodes.append(
                    self._sequential_episode(
                        e, scene_id, scene_path, split, goals, goal_objs, queries
                    )
                )
                continue
            query = queries[e["query_id"]]
            image_goal = None
            if goal_type == "object":
                category = pure_category(query)
                if category is None or category not in scene_categories:
                    self.left_out_for_goal_type += 1  # description-only query (SPEC §1)
                    continue
                goal_text = category
            elif goal_type == "image":
                image_goal = query["image_goal"]
                if image_goal is None:
                    raise DatasetFormatError(
                        f"{qpath}: query '{query['query_id']}': field 'image_goal': missing "
                        "(habitat.dataset.goal_type image; add it with mosnav-build image-goals)"
                    )
                category = goals[image_goal["object_id"]]["category"]
                goal_text = IMAGE_GOAL_TEXT
            else:
                category = query_category(query)
                goal_text = query["instruction"]
            targets = e["target_object_ids"]
            if category is None:
                category = goals[targets[0]]["category"]
            self.episodes.append(
                self._episode(
                    e,
                    scene_id,
                    scene_path,
                    split,
                    goal_objs,
                    target_mode=e["target_mode"],
                    target_count=e["target_count"],
                    goal_text=goal_text,
                    goal_type=goal_type,
                    query_id=e["query_id"],
                    object_category=category,
                    image_goal=None if image_goal is None else dict(image_goal),
                )
            )

    def _sequential_episode(
        self, e, scene_id, scene_path, split, goals, goal_objs, queries
    ) -> MultiObjectNavEpisode:
        """A ``sequential`` episode (SPEC §11): ``subtasks`` in order, ``goals`` every
        subtask's targets, the episode-level goal fields the first subtask's."""
        subtasks = [_subtask_goal(st, queries[st["query_id"]], goals) for st in e["subtasks"]]
        first = subtasks[0]
        return self._episode(
            e,
            scene_id,
            scene_path,
            split,
            goal_objs,
            target_mode=SEQUENTIAL,
            target_count=None,
            goal_text=first.goal_text,
            goal_type=first.goal_type,
            query_id=first.query_id,
            object_category=first.object_category,
            image_goal=None if first.image_goal is None else dict(first.image_goal),
            subtasks=subtasks,
        )

    def _episode(
        self, e, scene_id, scene_path, split, goal_objs, **fields
    ) -> MultiObjectNavEpisode:
        """The episode of the parsed ``e``: what every mode shares (identity, scene, start,
        targets, info) plus ``fields`` (the mode's and goal type's)."""
        targets = e["target_object_ids"]
        return MultiObjectNavEpisode(
            episode_id=e["episode_id"],
            scene_id=scene_path,
            scene_dataset_config=self.scene_dataset_config,
            scene_name=scene_id,
            split=split,
            episode_key=episode_key(split, scene_id, e["episode_id"]),
            start_position=e["start_position"],
            start_rotation=e["start_rotation"],
            goals=[goal_objs[t] for t in targets],
            target_object_ids=list(targets),
            info=dict(e["info"]),
            **fields,
        )

    @staticmethod
    def check_config_paths_exist(config) -> bool:
        return os.path.isdir(config.data_path.replace("{split}", config.split)) and (
            os.path.isdir(config.scenes_dir.replace("{split}", config.split))
        )

    @staticmethod
    def scene_from_scene_path(scene_path: str) -> str:
        return scene_name_from_path(scene_path)

    def category_index(self, category: Optional[str]) -> int:
        return self.category_to_task_category_id.get(category, 0)


def _subtask_goal(st, query, goals) -> SubtaskGoal:
    """One subtask's goal from its query (SPEC §11): ``object`` the category name,
    ``description`` the instruction, ``image`` the query's camera and the fixed sentence."""
    goal_type = st["goal_type"]
    targets = list(st["target_object_ids"])
    image_goal = None
    if goal_type == "object":
        category = pure_category(query)
        text = category
    elif goal_type == "image":
        image_goal = dict(query["image_goal"])
        category = goals[image_goal["object_id"]]["category"]
        text = IMAGE_GOAL_TEXT
    else:
        category = query_category(query)
        text = query["instruction"]
    if category is None:
        category = goals[targets[0]]["category"]
    return SubtaskGoal(
        query_id=st["query_id"],
        goal_type=goal_type,
        goal_text=text,
        target_object_ids=targets,
        object_category=category,
        image_goal=image_goal,
    )


def _make_goal(g) -> MultiObjectGoal:
    return MultiObjectGoal(
        position=g["position"],
        radius=None,
        object_id=g["object_id"],
        object_category=g["category"],
        object_name=g["caption"],
        room_id=None if g["region_id"] is None else str(g["region_id"]),
        view_points=[
            ObjectViewLocation(
                agent_state=AgentState(position=vp["position"], rotation=vp["rotation"]),
                iou=vp["iou"],
            )
            for vp in g["view_points"]
        ],
        navigable_position=g["navigable_position"],
        region_id=g["region_id"],
        aabb=g["aabb"],
        attributes=g["attributes"],
        caption=g["caption"],
    )
