"""``mosnav-replay --diagnose``: why each episode failed (issue 32 item 4).

The replay gets a semantic camera (:func:`semantic_overrides`: the RGB camera's geometry,
``habitat/simulator/sim_sensors/mosnav_semantic_rgb_sensor.yaml``); at every step
:class:`DiagnosisCollector` keeps, per target, the geodesic to its nearest view point
(:func:`habitat_mosnav.metrics.legs.start_geodesics`, the g_j of SPEC §3) and its pixel
count in the semantic frame. :func:`write_diagnosis` labels each replayed episode with
:func:`habitat_mosnav.metrics.diagnosis.diagnose_episode` and writes ``diagnosis.json``
(format in docs/EVALUATION.md "Replaying a run"). The collector only reads the env, so
the replayed records are the same with or without ``--diagnose``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from habitat_mosnav.evaluation.durable import ResultFileError, atomic_write_json, read_json_object
from habitat_mosnav.evaluation.records import to_jsonable
from habitat_mosnav.evaluation.step_observers import StepObserver
from habitat_mosnav.metrics.diagnosis import (
    EPISODE_LABELS,
    TARGET_LABELS,
    TOO_FAR_DISTANCE,
    StepView,
    count_labels,
    diagnose_episode,
)
from habitat_mosnav.metrics.legs import start_geodesics
from habitat_mosnav.simulators import option_nodes

__all__ = [
    "DIAGNOSIS_FILE",
    "DiagnosisCollector",
    "count_table",
    "copy_to_run",
    "read_diagnosis",
    "semantic_overrides",
    "semantic_uuid",
    "write_diagnosis",
]

#: The file in the replay's output directory (and the copy in RUN_DIR that mosnav-report reads).
DIAGNOSIS_FILE = "diagnosis.json"
_SENSORS = "habitat.simulator.agents.main_agent.sim_sensors"
#: sim_sensors entry -> the Hydra override that adds a semantic camera with its geometry.
_SEMANTIC_LIKE = {
    "rgb_sensor": "mosnav_semantic_rgb_sensor",
    "depth_sensor": "mosnav_semantic_sensor",
}


def semantic_uuid(habitat_config) -> Optional[str]:
    """The uuid of the config's semantic camera, or None."""
    from omegaconf import OmegaConf

    sensors = OmegaConf.select(habitat_config, _SENSORS) or {}
    for node in sensors.values():
        if "Semantic" in str(node.get("type", "")):
            return str(node.get("uuid", "semantic"))
    return None


def semantic_overrides(habitat_config) -> List[str]:
    """Hydra overrides that give the replay's config a semantic camera: none when it has
    one (an agent's ground-truth detector); else the RGB camera's geometry (the depth
    camera's, habitat's default ``semantic_sensor`` without either). The CPU simulator
    renders again when the run switched rendering off."""
    from omegaconf import OmegaConf

    nodes = option_nodes(OmegaConf.select(habitat_config, "habitat.simulator"))
    out = [f"habitat.simulator.{key}.render=true" for key in nodes]
    if semantic_uuid(habitat_config) is not None:
        return out
    sensors = OmegaConf.select(habitat_config, _SENSORS) or {}
    choice = next((v for k, v in _SEMANTIC_LIKE.items() if k in sensors), "semantic_sensor")
    return out + [
        f"+habitat/simulator/sim_sensors@{_SENSORS}.semantic_sensor={choice}",
    ]


def _pixels(frame, target_ids: Sequence[int]) -> Dict[int, int]:
    """Pixels per target id in a semantic frame (ids absent: none)."""
    if frame is None or not target_ids:
        return {}
    flat = np.asarray(frame).reshape(-1)
    top = max(target_ids) + 1
    flat = flat[(flat >= 0) & (flat < top)].astype(np.int64, copy=False)
    counts = np.bincount(flat, minlength=top)
    return {oid: int(counts[oid]) for oid in target_ids if oid >= 0 and counts[oid]}


class DiagnosisCollector(StepObserver):
    """Per episode key, a :class:`~habitat_mosnav.metrics.diagnosis.StepView` per step (0 =
    after reset): the replay evaluator's first step observer; it only reads ``env``."""

    watches_steps = True

    def __init__(self, uuid: str = "semantic") -> None:
        self.uuid = uuid
        self.env = None  # set by the replay evaluator
        self.steps: Dict[str, List[StepView]] = {}
        #: a sequential episode's targets per subtask (SPEC §11), by episode key
        self.subtasks: Dict[str, List[List[int]]] = {}
        self._views: List[StepView] = []
        self._ids: List[int] = []
        self._points: List[Any] = []

    def on_episode_start(self, key: str, episode) -> None:
        self._views = self.steps[key] = []
        subtasks = getattr(episode, "subtasks", None) or []
        if subtasks:
            self.subtasks[key] = [[int(i) for i in s.target_object_ids] for s in subtasks]
        goals = {g.object_id: g for g in episode.goals}
        self._ids = [int(i) for i in episode.target_object_ids]
        self._points = [goals[i].near_points for i in self._ids]

    def _geodesic(self, a, points) -> float:
        a = np.asarray(a, dtype=np.float32)
        return float(self.env.sim.geodesic_distance(a, points, episode=None))

    def on_step(self, info: Dict[str, Any]) -> None:
        g = start_geodesics(self._geodesic, info["pose"]["position"], self._points)
        frame = (info.get("obs") or {}).get(self.uuid)
        self._views.append(StepView(dict(zip(self._ids, g.tolist())), _pixels(frame, self._ids)))


def write_diagnosis(
    path: str,
    records: Mapping[str, Mapping[str, Any]],
    collector: DiagnosisCollector,
    success_distance: float,
    simulator: str,
) -> Dict[str, Any]:
    """Label every replayed record and write ``path`` atomically; returns its content."""
    episodes: Dict[str, Any] = {}
    diagnoses = []
    errors = 0
    for key in sorted(records):
        rec = records[key]
        if rec.get("status") != "ok":
            errors += 1
            continue
        ep = rec["episode"]
        success = bool((rec.get("metrics") or {}).get("success"))
        diag = diagnose_episode(
            target_mode=ep["target_mode"],
            target_ids=list(ep["target_object_ids"]),
            target_count=ep.get("target_count"),
            events=rec.get("report_events") or [],
            steps=collector.steps[key],
            success_distance=success_distance,
            success=success,
            terminated_by=rec.get("terminated_by") or "",
            subtask_targets=collector.subtasks.get(key),
        )
        diagnoses.append(diag)
        episodes[key] = {
            "episode_id": ep.get("episode_id"),
            "target_mode": ep["target_mode"],
            "success": success,
            **diag.to_json(),
        }
    doc = {
        "schema_version": 1,
        "simulator": simulator,
        "success_distance": float(success_distance),
        "too_far_distance": TOO_FAR_DISTANCE,
        "episode_count": len(episodes),
        "failed_episode_count": sum(1 for d in diagnoses if d.label is not None),
        "error_episode_count": errors,
        "counts": count_labels(diagnoses),
        "episodes": episodes,
    }
    atomic_write_json(path, to_jsonable(doc, "diagnosis"))
    return doc


def count_table(doc: Mapping[str, Any]) -> List[str]:
    """The per-label counts as aligned text lines (failed episodes, then targets)."""
    counts = doc["counts"]
    failed, total = doc["failed_episode_count"], doc["episode_count"]
    head = f"episode label ({failed} of {total} failed)"
    width = max(len(name) for name in [head, *EPISODE_LABELS, *TARGET_LABELS])
    lines = [f"{head:<{width}}  episodes"]
    lines += [f"{name:<{width}}  {counts['episodes'][name]:>8}" for name in EPISODE_LABELS]
    lines.append(f"{'target label':<{width}}  {'targets':>8}")
    lines += [f"{name:<{width}}  {counts['targets'][name]:>8}" for name in TARGET_LABELS]
    return lines


def copy_to_run(run_dir: str, doc: Mapping[str, Any]) -> str:
    """``RUN_DIR/diagnosis.json``, the copy mosnav-report shows beside the leaderboard."""
    path = os.path.join(run_dir, DIAGNOSIS_FILE)
    atomic_write_json(path, doc)
    return path


def read_diagnosis(run_dir: str) -> Optional[Dict[str, Any]]:
    """``RUN_DIR/diagnosis.json`` checked (what mosnav-report shows), or None when the run
    has none; a malformed one is :class:`~habitat_mosnav.evaluation.results.ResultFileError`
    naming the file and field."""
    path = os.path.join(run_dir, DIAGNOSIS_FILE)
    if not os.path.exists(path):
        return None
    doc = read_json_object(path)
    if doc.get("schema_version") != 1:
        raise ResultFileError(f"{path}: field 'schema_version' must be 1")
    for name in ("episode_count", "failed_episode_count"):
        if isinstance(doc.get(name), bool) or not isinstance(doc.get(name), int):
            raise ResultFileError(f"{path}: field {name!r} is missing or not an integer")
    counts = (
        (doc.get("counts") or {}).get("episodes") if isinstance(doc.get("counts"), dict) else None
    )
    if not isinstance(counts, dict):
        raise ResultFileError(f"{path}: field 'counts.episodes' is missing or not an object")
    for name in EPISODE_LABELS:
        value = counts.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ResultFileError(
                f"{path}: field 'counts.episodes.{name}' must be a count, got {value!r:.40}"
            )
    episodes = doc.get("episodes")
    if not isinstance(episodes, dict):
        raise ResultFileError(f"{path}: field 'episodes' is missing or not an object")
    for key, entry in episodes.items():
        label = entry.get("label") if isinstance(entry, dict) else ""
        if label is not None and label not in EPISODE_LABELS:
            raise ResultFileError(
                f"{path}: field 'episodes.{key:.80}.label' is not a label: {label!r:.40}"
            )
    return doc
