"""Shared plumbing of the build stages: scene discovery, JSON I/O, stage markers, seeds.

Layout the stages agree on:

- ``<scenes>/<NNNNN-id>/``: input scenes in HM3D layout (``<id>.semantic.txt``,
  ``<id>.semantic.glb``, render mesh ``<id>.basis.glb`` or ``<id>.glb``, optional
  ``<id>.mosnav_meta.json``).
- ``<out>/<id>/{goals,queries,episodes}.json``: the published dataset (SPEC §6). Nothing
  else is written there, so the evaluator's loader sees only what it expects.
- ``<work>/<id>/``: build intermediates (stage markers, attribute cache, rendered views);
  ``<work>`` defaults to ``<out>.build`` next to the dataset.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from habitat_mosnav.safety import (
    MAX_DATASET_BYTES,
    MAX_JSON_BYTES,
    InputFileError,
    open_input,
    read_input_text,
    replacing,
)

SCHEMA_VERSION = 1
STAGES = (
    "extract",
    "attributes",
    "normalize",
    "queries",
    "language",
    "episodes",
    "image-goals",
)
ATTRIBUTE_FIELDS = ("color", "material", "feature")

log = logging.getLogger("habitat_mosnav.dataset_building")


class BuildError(Exception):
    """A user-facing error: the CLI prints its one-line message, no traceback."""


# ----------------------------------------------------------------------------- scenes
@dataclass(frozen=True)
class SceneFiles:
    """Where one input scene's files are."""

    scene_id: str
    directory: Path
    semantic_txt: Path
    semantic_glb: Path
    render_glb: Path
    navmesh: Optional[Path]
    meta: Optional[Path]


def _scene_id_of(directory: Path) -> Optional[str]:
    """``00800-TEEsavR23oF`` -> ``TEEsavR23oF`` when ``TEEsavR23oF.semantic.txt`` is there."""
    for txt in sorted(directory.glob("*.semantic.txt")):
        return txt.name[: -len(".semantic.txt")]
    return None


def scene_files(directory: Path) -> SceneFiles:
    """Resolve one scene directory; a clear error names the missing file."""
    directory = Path(directory)
    sid = _scene_id_of(directory)
    if sid is None:
        raise BuildError(f"{directory}: no <scene_id>.semantic.txt in this scene directory")
    sem_glb = directory / f"{sid}.semantic.glb"
    if not sem_glb.is_file():
        raise BuildError(f"{sem_glb}: missing semantic mesh for scene {sid}")
    render = None
    for name in (f"{sid}.basis.glb", f"{sid}.glb"):
        if (directory / name).is_file():
            render = directory / name
            break
    if render is None:
        raise BuildError(f"{directory}: missing render mesh {sid}.basis.glb or {sid}.glb")
    navmesh = None
    for name in (render.name[: -len(".glb")] + ".navmesh", f"{sid}.navmesh"):
        if (directory / name).is_file():
            navmesh = directory / name
            break
    meta = directory / f"{sid}.mosnav_meta.json"
    return SceneFiles(
        sid,
        directory,
        directory / f"{sid}.semantic.txt",
        sem_glb,
        render,
        navmesh,
        meta if meta.is_file() else None,
    )


def fingerprint(scene: SceneFiles) -> str:
    """Content hash of a scene's input files: a changed scene is rebuilt, not skipped."""
    h = hashlib.sha256()
    for p in (scene.semantic_txt, scene.semantic_glb, scene.render_glb, scene.navmesh, scene.meta):
        if p is None:
            continue
        h.update(p.name.encode())
        try:  # a regular file of bounded size: a FIFO or a device is refused, never read
            with open_input(str(p), MAX_DATASET_BYTES) as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        except InputFileError as e:
            raise BuildError(str(e)) from None
    return h.hexdigest()[:16]


def discover_scenes(root: Path, only: Optional[Sequence[str]] = None) -> List[SceneFiles]:
    """All scene directories under ``root`` (sorted by scene id); ``only`` filters by id."""
    root = Path(root)
    if not root.is_dir():
        raise BuildError(f"{root}: scenes directory does not exist")
    candidates = [root] if _scene_id_of(root) else sorted(p for p in root.iterdir() if p.is_dir())
    ids = {d: _scene_id_of(d) for d in candidates}
    ids = {d: sid for d, sid in ids.items() if sid is not None}
    if only:  # resolve only the selected scenes: the others may be partly downloaded
        wanted = set(only)
        missing = wanted - set(ids.values())
        if missing:
            raise BuildError(f"{root}: scene(s) not found: {', '.join(sorted(missing))}")
        ids = {d: sid for d, sid in ids.items() if sid in wanted}
    found = sorted((scene_files(d) for d in ids), key=lambda s: s.scene_id)
    if not found:
        raise BuildError(f"{root}: no scenes (directories holding <id>.semantic.txt)")
    return found


def dataset_scene_ids(out: Path, only: Optional[Sequence[str]] = None) -> List[str]:
    """Scene ids already present in a dataset directory (those with goals.json)."""
    out = Path(out)
    ids = (
        sorted(p.name for p in out.iterdir() if (p / "goals.json").is_file())
        if out.is_dir()
        else []
    )
    if only:
        ids = [i for i in ids if i in set(only)]
    return ids


# ----------------------------------------------------------------------------- JSON
def write_json(path: Path, obj: Any, indent: Optional[int] = 1) -> None:
    """Write atomically (temp file + rename) so an interrupted run never leaves half a file."""
    with replacing(str(path), suffix=".json") as tmp:  # the usual file mode, never a planted link
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=indent, ensure_ascii=False, allow_nan=False)
            f.write("\n")


def read_json(path: Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise BuildError(f"{path}: file not found (run the earlier build stage first)")
    try:
        # a regular file of bounded size (a FIFO or a device is refused, never read)
        return json.loads(read_input_text(str(path), MAX_DATASET_BYTES))
    except InputFileError as e:
        raise BuildError(str(e)) from None
    except json.JSONDecodeError as e:
        raise BuildError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None


def read_doc(path: Path, key: str, scene_id: Optional[str] = None) -> Dict[str, Any]:
    """Read one of our SPEC §6 documents and check its envelope."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise BuildError(f"{path}: top level must be an object")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise BuildError(f"{path}: field 'schema_version' must be {SCHEMA_VERSION}")
    if not isinstance(doc.get(key), list):
        raise BuildError(f"{path}: field '{key}' must be a list")
    if scene_id is not None and doc.get("scene_id") != scene_id:
        raise BuildError(
            f"{path}: field 'scene_id' is {doc.get('scene_id')!r}, expected {scene_id!r}"
        )
    return doc


def make_doc(scene_id: str, key: str, items: list) -> Dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "scene_id": scene_id, key: items}


def rounded(values: Iterable[float], nd: int = 4) -> List[float]:
    """Plain Python floats with a fixed number of decimals (stable, compact JSON)."""
    return [round(float(v), nd) for v in values]


# ----------------------------------------------------------------------------- markers
class StageMarkers:
    """Which stages finished for a scene, with the parameters they ran with.

    Resumability: a stage is skipped for a scene when its marker is there, its parameters
    match and its output exists. Rerunning a stage drops the markers of the later stages,
    since their inputs changed.
    """

    def __init__(self, work: Path, scene_id: str):
        self.path = Path(work) / scene_id / "stages.json"
        self.data: Dict[str, Any] = {}
        if self.path.exists():
            try:
                self.data = json.loads(read_input_text(str(self.path), MAX_JSON_BYTES))
            except (json.JSONDecodeError, OSError, InputFileError):
                self.data = {}  # unreadable markers: the stages run again

    def done(self, stage: str, params: Dict[str, Any]) -> bool:
        return self.data.get(stage) == {"params": _canonical(params)}

    def mark(self, stage: str, params: Dict[str, Any]) -> None:
        self.data[stage] = {"params": _canonical(params)}
        write_json(self.path, self.data)

    def invalidate_after(self, stage: str) -> None:
        later = STAGES[STAGES.index(stage) + 1 :]
        changed = False
        for s in later:
            if s in self.data:
                del self.data[s]
                changed = True
        if changed:
            write_json(self.path, self.data)


def _canonical(params: Dict[str, Any]) -> Any:
    return json.loads(json.dumps(params, sort_keys=True, default=str))


# ----------------------------------------------------------------------------- seeds
def stable_seed(*parts: Any) -> int:
    """A seed from any values, stable across processes and Python versions (no hash())."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "little")


def rng_for(*parts: Any) -> np.random.Generator:
    return np.random.default_rng(stable_seed(*parts))


# ----------------------------------------------------------------------------- text
def norm_text(s: str) -> str:
    """Lower case, single spaces, no surrounding punctuation."""
    s = re.sub(r"[_\s]+", " ", str(s).strip().lower())
    return s.strip(" .,;:!?\"'")


def yaw_to_quat(yaw: float) -> List[float]:
    """Rotation about +Y by ``yaw`` radians as JSON ``[x, y, z, w]``."""
    return [0.0, round(float(np.sin(yaw / 2.0)), 6), 0.0, round(float(np.cos(yaw / 2.0)), 6)]


def yaw_facing(src: Sequence[float], dst: Sequence[float]) -> float:
    """Yaw that turns habitat's forward (−Z) from ``src`` towards ``dst`` in the XZ plane."""
    dx = float(dst[0]) - float(src[0])
    dz = float(dst[2]) - float(src[2])
    # forward(yaw) = (-sin yaw, 0, -cos yaw)
    return float(np.arctan2(-dx, -dz))


@dataclass
class StageReport:
    """What a stage did, per scene; printed by the CLI and returned by the functions."""

    stage: str
    done: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    counts: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)  # dataset-wide lines (e.g. categories.json)

    def summary(self) -> str:
        parts = [
            f"{self.stage}: {len(self.done)} scene(s) built, {len(self.skipped)} skipped (already done)"
        ]
        for sid, c in self.counts.items():
            parts.append(f"  {sid}: " + ", ".join(f"{k}={v}" for k, v in c.items()))
        parts += [f"  {n}" for n in self.notes]
        return "\n".join(parts)
