"""The run manifest ``<out>/run.json`` (SPEC §8): what a run evaluates, fixed at its start.

The first process that starts a run writes it (atomically, first writer wins, so the ranks
of one launch agree); every later start in the same output directory — another rank, or
``--resume`` — compares its own manifest with it and is refused with one line naming the
first field that differs. So a resume cannot silently mix episodes, seeds, step budgets,
agents or datasets.

Fields (:data:`MANIFEST_FIELDS`, compared in this order): ``split, offset, limit,
world_size, seed, max_steps, protocol, agent, agent_code_sha256, config, config_overrides, selection
{scene_limit, episode_limit, target_modes, goal_type, episode_count, keys_sha256},
dataset_fingerprint, input_files`` plus ``schema_version``. ``input_files`` holds
``"<size>:<sha256>"`` of every other file that decides the numbers: each selected scene's
files (mesh, navmesh, semantic files, ``<scene>/<file name>``), the scene dataset config
and ``categories.json`` wherever the loader found it; so a resume or a rank with another
``--scene-root`` (other navmeshes) is refused naming the file. A caller adds its own fields with
``extra`` (e.g. a versioned benchmark setting); they are compared like the others.
``software`` (:func:`habitat_mosnav.versions.software_versions` of the first start: package
version, git commit, habitat-lab and habitat-sim) is recorded, not compared: a resume after
an upgrade is allowed, and the summary records the versions that wrote it.
Standard library only at import (:func:`input_files` hashes with the dataset and scene
modules).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional

from habitat_mosnav.evaluation.durable import (
    ResultFileError,
    atomic_write_json,
    read_json_object,
    write_failed,
)
from habitat_mosnav.keys import scene_name_from_path
from habitat_mosnav.safety import PlantedLinkError, refuse_link
from habitat_mosnav.simulators import simulator_option
from habitat_mosnav.versions import software_versions

MANIFEST_FILE = "run.json"
MANIFEST_SCHEMA_VERSION = 1
#: The compared fields, in the order a difference is reported.
MANIFEST_FIELDS = (
    "split",
    "offset",
    "limit",
    "world_size",
    "seed",
    "max_steps",
    "protocol",
    "agent",
    "agent_code_sha256",
    "config",
    "config_overrides",
    "selection",
    "dataset_fingerprint",
    "input_files",
)
#: The mosnav-eval flag behind each compared field, named in a refusal (the user typed
#: ``--num-episodes``, not ``limit``).
FIELD_FLAGS = {
    "split": "--split",
    "offset": "--offset",
    "limit": "--num-episodes",
    "world_size": "--world-size",
    "seed": "--seed",
    "max_steps": "--max-steps",
    "protocol": "--action-protocol",
    "agent": "--agent",
    "agent_code_sha256": "--agent (its code changed)",
    "config": "--config",
    "config_overrides": "--set or a flag that sets a config key",
    "selection.scene_limit": "--limit",
    "selection.episode_limit": "--episode-limit",
    "selection.target_modes": "--target-modes",
    "selection.goal_type": "--goal-type",
    "selection.episode_count": "the episode selection",
    "selection.keys_sha256": "the episode selection",
    "dataset_fingerprint": "the dataset's files (--dataset-dir)",
    "benchmark": "--benchmark",
    "input_files": "the scene files (--scene-root), the scene dataset config or categories.json",
}
#: Recorded at the first start, never compared.
RECORDED_FIELDS = ("software",)


class ManifestMismatch(ResultFileError):
    """A start whose settings differ from the run's ``run.json`` (message names the field)."""


def keys_digest(keys: Iterable[str]) -> str:
    """sha256 of the sorted episode keys (one per line)."""
    h = hashlib.sha256()
    for key in sorted(keys):
        h.update(key.encode("utf-8") + b"\n")
    return h.hexdigest()


def input_files(hcfg, episodes: Iterable[Any], dataset) -> Dict[str, str]:
    """``input_files``: ``{name: "<size>:<sha256>"}`` of the other files that decide the
    numbers: every file of each selected episode's scene
    (:func:`~habitat_mosnav.sims.mosnav_sim.scene_input_files`, as ``<scene>/<file
    name>``), the scene dataset config and ``categories.json`` wherever the loader found it
    (``dataset._categories_file``). ``hcfg``: the ``habitat`` config node or None (an env
    given alone). Hashed once per process (:func:`file_digest`)."""
    from habitat_mosnav.datasets.fingerprint import file_digest
    from habitat_mosnav.sims.mosnav_sim import scene_input_files

    navmesh = str(simulator_option(getattr(hcfg, "simulator", None), "navmesh") or "")
    episodes = list(episodes)
    files: Dict[str, str] = {}
    for path in sorted({str(getattr(ep, "scene_id", "") or "") for ep in episodes} - {""}):
        scene = scene_name_from_path(path)
        for name in scene_input_files(path, navmesh):
            files[f"{scene}/{os.path.basename(name)}"] = file_digest(name)
    configs = {str(getattr(ep, "scene_dataset_config", "") or "") for ep in episodes}
    for config in sorted(configs):
        if os.path.isfile(config):
            key = "scene_dataset_config" + (
                "" if len(configs) == 1 else f" {os.path.basename(config)}"
            )
            files[key] = file_digest(config)
    categories = getattr(dataset, "_categories_file", None)
    if categories and os.path.isfile(categories):
        files["categories.json"] = file_digest(categories)
    return files


@dataclass
class RunManifest:
    """One run's settings; :meth:`to_dict` is the content of ``run.json``."""

    split: str
    offset: int
    limit: int
    world_size: int
    seed: int
    max_steps: int
    protocol: str
    agent: str
    #: sha256 of the agent's source files (:func:`~habitat_mosnav.agents.loading.agent_code_digest`).
    agent_code_sha256: Optional[str] = None
    config: Optional[str] = None
    config_overrides: List[str] = field(default_factory=list)
    selection: Dict[str, Any] = field(default_factory=dict)
    dataset_fingerprint: Optional[str] = None
    #: ``{name: "<size>:<sha256>"}`` of the scene files, scene dataset config, categories.json.
    input_files: Dict[str, str] = field(default_factory=dict)
    #: Further fields (a caller's own settings), stored and compared at the top level.
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        extra = data.pop("extra")
        clash = sorted(set(extra) & (set(data) | {"schema_version"}))
        if clash:
            raise ValueError(f"run manifest: extra field(s) {clash} clash with built-in fields")
        return {"schema_version": MANIFEST_SCHEMA_VERSION, **data, **extra}


def _first_difference(old: Any, new: Any, path: tuple) -> Optional[tuple]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in list(old) + [k for k in new if k not in old]:
            diff = _first_difference(old.get(key), new.get(key), path + (key,))
            if diff:
                return diff
        return None
    return None if old == new else path


def _difference_path(old: Mapping[str, Any], new: Mapping[str, Any]) -> Optional[tuple]:
    order = ["schema_version", *MANIFEST_FIELDS]
    order += [k for k in list(old) + list(new) if k not in order and k not in RECORDED_FIELDS]
    for key in dict.fromkeys(order):
        diff = _first_difference(old.get(key), new.get(key), (key,))
        if diff:
            return diff
    return None


def first_difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> Optional[str]:
    """The dotted name of the first field that differs (built-in fields first), or None."""
    path = _difference_path(old, new)
    return None if path is None else ".".join(map(str, path))


def _lookup(data: Mapping[str, Any], path: tuple) -> Any:
    value: Any = data
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def read_manifest(path: str) -> Dict[str, Any]:
    """``run.json`` as an object (:func:`read_json_object`); an unreadable file is a
    :class:`ResultFileError` too."""
    try:
        return read_json_object(path)
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot read ({exc.strerror or exc})") from None


def check_readable(path: str, manifest: Mapping[str, Any]) -> None:
    """Refuse (ResultFileError naming the field) a manifest whose ``run.json`` could not be
    read back (:func:`~habitat_mosnav.evaluation.durable.parse_record_json`: a 30-digit
    seed, a NaN): checked before anything is written or run, so a run is never stranded
    with results that ``--resume`` and ``mosnav-report`` refuse."""
    from habitat_mosnav.evaluation.durable import parse_record_json

    for key, value in manifest.items():
        try:
            text = json.dumps({key: value}, allow_nan=True, sort_keys=True)
            back = json.dumps(parse_record_json(text), sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ResultFileError(
                f"{path}: field {key!r} could not be read back ({exc}); nothing was run"
            ) from None
        if back != text:
            raise ResultFileError(
                f"{path}: field {key!r} does not read back as written; nothing was run"
            )


def check_or_write_manifest(out_dir: str, manifest: Mapping[str, Any]) -> str:
    """Write ``<out>/run.json`` if the run has none; else refuse a manifest that differs
    (:class:`ManifestMismatch` naming the field). Returns the path."""
    path = os.path.join(out_dir, MANIFEST_FILE)
    manifest = dict(manifest)
    manifest.setdefault("software", software_versions())
    check_readable(path, manifest)
    try:
        refuse_link(path)  # never read (nor compare with) a planted run.json link
    except PlantedLinkError as exc:
        raise write_failed(path, exc) from None
    if not os.path.exists(path) and atomic_write_json(path, manifest, exclusive=True):
        return path
    existing = read_manifest(path)
    where = _difference_path(existing, manifest)
    if where is not None:
        diff = ".".join(map(str, where))
        flag = FIELD_FLAGS.get(diff) or FIELD_FLAGS.get(where[0])
        raise ManifestMismatch(
            f"{path}: field '{diff}' differs: the run has {_show(_lookup(existing, where))}, "
            f"this command {_show(_lookup(manifest, where))}"
            + (f" ({flag})" if flag else "")
            + "; continue it with the same settings or choose a new --output-dir"
        )
    return path


def check_rank_manifests(out_dir: str, ranks) -> Optional[Dict[str, Any]]:
    """The run's ``run.json`` after checking that every rank directory (``(rank, dir)``
    pairs) holds the same manifest and lies inside the run's ``world_size``; None for a run
    without one. A rank of another run (other agent, seed, settings or selection) copied in
    is a :class:`ManifestMismatch` naming the rank's file and the field."""
    path = os.path.join(out_dir, MANIFEST_FILE)
    if not os.path.exists(path):
        return None
    run = read_manifest(path)
    world = run.get("world_size")
    for rank, directory in ranks:
        if isinstance(world, int) and not isinstance(world, bool) and rank >= world:
            raise ManifestMismatch(
                f"{directory}: rank {rank} is outside the run's world_size "
                f"{world} ({path}): a rank of another run is never mixed in"
            )
        mine = os.path.join(directory, MANIFEST_FILE)
        if not os.path.exists(mine):
            jsonl = os.path.join(directory, "episodes.jsonl")
            if (os.path.exists(jsonl) and os.path.getsize(jsonl)) or os.path.exists(
                os.path.join(directory, "done.json")
            ):
                raise ManifestMismatch(
                    f"{directory}: records without the rank's {MANIFEST_FILE}: "
                    f"not written by this run (copied from another run?)"
                )
            continue
        other = read_manifest(mine)
        where = _difference_path(run, other)
        if where is not None:
            diff = ".".join(map(str, where))
            raise ManifestMismatch(
                f"{mine}: field '{diff}' differs from the run's {path}: the run has "
                f"{_show(_lookup(run, where))}, this rank {_show(_lookup(other, where))}; a rank "
                "of another run (other agent, seed or settings) is never mixed in"
            )
    return run


def _show(value: Any) -> str:
    return json.dumps(value)[:80]
