"""Episode selection and sharding across ranks (SPEC §8); keys and seeds are in
:mod:`habitat_mosnav.keys`.

Every rank computes the same global selection (sort by key, offset, limit) and takes a
stride of it, so any number of ranks covers each selected episode exactly once, and a
per-episode seed depends only on (base_seed, key) — not on rank count, order or process.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def select_episodes(
    keys: Iterable[str], offset: int = 0, limit: int = -1, rank: int = 0, world_size: int = 1
) -> List[Tuple[int, str]]:
    """This rank's ``(global_index, key)`` pairs: sort, ``offset``, ``limit`` (−1 all,
    0 none), then ``selected[rank::world_size]``; ``global_index`` is the position in the
    global selection."""
    keys = list(keys)
    offset = _check_int("offset", offset, 0)
    limit = _check_int("limit", limit, -1)
    world_size = _check_int("world_size", world_size, 1)
    rank = _check_int("rank", rank, 0)
    if rank >= world_size:
        raise ValueError(f"rank {rank} is outside 0..{world_size - 1} (world_size {world_size})")
    ordered = sorted(keys)
    for a, b in zip(ordered, ordered[1:]):
        if a == b:
            raise ValueError(f"duplicate episode key {a!r}")
    selected = ordered[offset:]
    if limit >= 0:
        selected = selected[:limit]
    return [(i, key) for i, key in enumerate(selected)][rank::world_size]


def episode_pool(
    keyed: Iterable[Tuple[str, str, Any]],
    scene_limit: Optional[int] = None,
    episode_limit: Optional[int] = None,
) -> Dict[str, Any]:
    """key -> episode of ``(key, scene, episode)`` triples to select from: the first
    ``scene_limit`` scenes by name, of each the first ``episode_limit`` episodes by key
    (None or negative: all), scenes in name order, keys in order within a scene."""
    by_scene: Dict[str, List[Tuple[str, Any]]] = {}
    for key, scene, episode in sorted(keyed, key=lambda t: t[0]):
        by_scene.setdefault(scene, []).append((key, episode))
    scenes = sorted(by_scene)
    if scene_limit is not None and scene_limit >= 0:
        scenes = scenes[:scene_limit]
    pool: Dict[str, Any] = {}
    for scene in scenes:
        items = by_scene[scene]
        if episode_limit is not None and episode_limit >= 0:
            items = items[:episode_limit]
        pool.update(items)
    return pool


def _env_int(env, name: str) -> Optional[int]:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def launcher_rank_world(environ=None, rank=None, world_size=None) -> Tuple[int, int]:
    """(rank, world_size): ``rank``/``world_size`` where given (flags, EvaluationConfig),
    else from torchrun (RANK/WORLD_SIZE), else SLURM (SLURM_PROCID/SLURM_NTASKS), else
    (0, 1). A launcher's values that make no sense raise ValueError."""
    launched = (0, 1)
    env = os.environ if environ is None else environ
    for rank_var, world_var in (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank is not None and world_size is not None:
            break  # both given: the launcher's are not read
        r, w = _env_int(env, rank_var), _env_int(env, world_var)
        if r is None and w is None:
            continue
        r, w = (0 if r is None else r), (1 if w is None else w)
        if w < 1 or not 0 <= r < w:
            raise ValueError(
                f"environment {rank_var}={r} / {world_var}={w} is not a valid rank/world size"
            )
        launched = (r, w)
        break
    return (
        launched[0] if rank is None else rank,
        launched[1] if world_size is None else world_size,
    )
