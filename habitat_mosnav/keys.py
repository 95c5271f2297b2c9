"""Episode keys, scene ids and per-episode seeds (SPEC §8): standard library only.

The lowest layer: the dataset, the task, the evaluation and the baselines all name an
episode by its key and derive its seed from it, so they import this module and nothing of
each other's.
"""

from __future__ import annotations

import hashlib
import re
from typing import Tuple

KEY_SEP = "::"


def scene_name_from_path(scene_path: str) -> str:
    """``.../00800-TEEsavR23oF/TEEsavR23oF.basis.glb`` -> ``TEEsavR23oF`` (a bare id is
    returned unchanged). Records and keys carry this id, never a local path."""
    name = re.split(r"[\\/]", str(scene_path))[-1]
    return re.sub(r"(\.basis)?\.(glb|gltf|ply|obj)$", "", name)


def episode_key(split: str, scene_id: str, episode_id) -> str:
    """``<split>::<scene_id>::<episode_id>``; refuses parts that contain ``::``."""
    parts = [str(split), str(scene_id), str(episode_id)]
    for name, part in zip(("split", "scene_id", "episode_id"), parts):
        if KEY_SEP in part:
            raise ValueError(f"episode key: {name} {part!r} must not contain {KEY_SEP!r}")
        if part == "":
            raise ValueError(f"episode key: {name} is empty")
    return KEY_SEP.join(parts)


def split_key(key: str) -> Tuple[str, str, str]:
    """Inverse of :func:`episode_key`."""
    parts = key.split(KEY_SEP)
    if len(parts) != 3:
        raise ValueError(f"episode key {key!r} is not '<split>::<scene_id>::<episode_id>'")
    return parts[0], parts[1], parts[2]


def episode_seed(base_seed: int, key: str) -> int:
    """Stable 31-bit seed from (base_seed, key): sha256, so no PYTHONHASHSEED dependence."""
    digest = hashlib.sha256(f"{int(base_seed)}{KEY_SEP}{key}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % (2**31 - 1)


def episode_scene_name(episode) -> str:
    """The short scene id (``TEEsavR23oF``), never a local path."""
    name = getattr(episode, "scene_name", "") or ""
    if name:
        return str(name)
    return scene_name_from_path(getattr(episode, "scene_id", ""))
