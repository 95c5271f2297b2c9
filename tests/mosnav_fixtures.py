"""Small hand-written datasets in SPEC §6 format for tests (values chosen to be checkable
by hand). ``write_dataset`` lays out ``<root>/dataset_semantic/<scene>/`` and
``<root>/scenes/00000-<scene>/<scene>.glb``."""

from __future__ import annotations

import copy
import json
import os

SCENE = "testScene01"


def goal(oid, category, nav, view_points=None, **attrs):
    return {
        "object_id": oid,
        "category": category,
        "region_id": 0,
        "position": [nav[0], 0.5, nav[2] - 0.5],
        "aabb": {"center": [nav[0], 0.5, nav[2] - 0.5], "size": [0.5, 1.0, 0.5]},
        "navigable_position": list(nav),
        "view_points": [
            {"position": list(p), "rotation": [0, 0, 0, 1], "iou": 0.5} for p in (view_points or [])
        ],
        "attributes": attrs,
        "caption": f"a {category}",
    }


def base_documents(scene=SCENE):
    goals = [
        goal(101, "chair", [1.0, 0.0, 0.0], color=["brown"]),
        goal(102, "chair", [3.0, 0.0, 0.0], color=["brown"]),
        goal(103, "chair", [5.0, 0.0, 0.0], color=["white"]),
        goal(201, "table", [0.0, 0.0, 3.0]),
    ]
    queries = [
        {
            "query_id": "q0",
            "query_program": {
                "select": "object",
                "where": [{"field": "category", "op": "==", "value": "chair"}],
            },
            "instruction": "Find the chairs.",
            "matched_object_ids": [101, 102, 103],
        },
        {
            "query_id": "q1",
            "query_program": {
                "select": "object",
                "where": [
                    {"field": "category", "op": "==", "value": "chair"},
                    {"field": "color", "op": "==", "value": "brown"},
                ],
            },
            "instruction": "Find brown chairs.",
            "matched_object_ids": [101, 102],
        },
        {
            "query_id": "q2",
            "query_program": {
                "select": "object",
                "where": [{"field": "category", "op": "==", "value": "table"}],
            },
            "instruction": "Find a table.",
            "matched_object_ids": [201],
        },
    ]
    start = {"start_position": [0.0, 0.0, 0.0], "start_rotation": [0, 0, 0, 1]}
    episodes = [
        {
            "episode_id": "q0-many-0",
            "query_id": "q0",
            "target_mode": "many",
            "target_count": 2,
            "target_object_ids": [101, 102, 103],
            **start,
            "info": {},
        },
        {
            "episode_id": "q0-all-0",
            "query_id": "q0",
            "target_mode": "all",
            "target_object_ids": [101, 102, 103],
            **start,
        },
        {
            "episode_id": "q1-any-0",
            "query_id": "q1",
            "target_mode": "any",
            "target_object_ids": [101, 102],
            **start,
        },
        {
            "episode_id": "q2-single-0",
            "query_id": "q2",
            "target_mode": "single",
            "target_object_ids": [201],
            **start,
        },
    ]
    return {
        "goals.json": {"schema_version": 1, "scene_id": scene, "goals": goals},
        "queries.json": {"schema_version": 1, "scene_id": scene, "queries": queries},
        "episodes.json": {"schema_version": 1, "scene_id": scene, "episodes": episodes},
    }


def write_dataset(root, docs=None, scene=SCENE, scene_file=None):
    """Write the documents (dict file name -> JSON object or raw string) and a scene."""
    docs = copy.deepcopy(docs if docs is not None else base_documents(scene))
    data = os.path.join(str(root), "dataset_semantic", scene)
    os.makedirs(data, exist_ok=True)
    for name, doc in docs.items():
        with open(os.path.join(data, name), "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
    scene_dir = os.path.join(str(root), "scenes", f"00000-{scene}")
    os.makedirs(scene_dir, exist_ok=True)
    target = os.path.join(scene_dir, f"{scene}.glb")
    if scene_file is not None:
        import shutil

        shutil.copyfile(scene_file, target)
    elif not os.path.exists(target):
        open(target, "wb").close()
    return os.path.join(str(root), "dataset_semantic"), os.path.join(str(root), "scenes")


#: The episode keys of ``base_documents()`` (split ``val``), sorted as evaluation selects them.
EPISODE_KEYS = sorted(
    f"val::{SCENE}::{e['episode_id']}" for e in base_documents()["episodes.json"]["episodes"]
)


def write_open_room_dataset(root):
    """``base_documents()`` in an open 12 m x 12 m room (geodesic = Euclidean there):
    returns ``(data_path, scenes_dir)``."""
    from habitat_mosnav.sims.toy_scenes import export_boxes, room_boxes

    glb = export_boxes(os.path.join(str(root), "room.glb"), room_boxes(-6, -6, 6, 6))
    return write_dataset(root, base_documents(), scene_file=glb)


def quick_eval_args(data_path, scenes_dir, *extra):
    """``mosnav-eval`` flags for a fast CPU run on a test dataset: no RGB/depth sensors, no
    space oracle, no progress bar."""
    return [
        "--dataset-dir",
        str(data_path),
        "--scene-root",
        str(scenes_dir),
        "--space-coverage-samples",
        "0",
        "--set",
        "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
        "--set",
        "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
        "--no-progress",
        *extra,
    ]


def write_room_variant(root, open_room, edit):
    """A copy of the open-room dataset whose documents ``edit(docs)`` changed in place (e.g.
    a hostile episode id); returns ``(data_path, scenes_dir)``."""
    docs = base_documents()
    edit(docs)
    glb = os.path.join(str(open_room[1]), f"00000-{SCENE}", f"{SCENE}.glb")
    return write_dataset(root, docs, scene_file=glb)
