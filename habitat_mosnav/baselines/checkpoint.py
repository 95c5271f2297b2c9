"""Loading habitat-baselines checkpoints and resume states with torch >= 2.6.

torch 2.6 made ``torch.load(weights_only=True)`` the default. habitat-baselines checkpoints
and ``.habitat-resume-state*.pth`` files are full pickles: they hold the run's
``DictConfig`` (whose pickled form needs ``defaultdict`` item assignment, which the
restricted unpickler refuses even with allow-listed globals) and, in resume states, deques
of episode statistics. So these two loaders use ``weights_only=False``: load only
checkpoints you trust, as with any pickle (habitat-baselines loaded them this way before
torch 2.6).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

import torch


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read (message names the file)."""


def load_checkpoint(path: str, map_location: Any = "cpu") -> Dict[str, Any]:
    """A habitat-baselines checkpoint as a dict (``state_dict``, ``config``,
    ``extra_state``)."""
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path}: no such file")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as exc:
        raise CheckpointError(
            f"checkpoint {path}: cannot be read ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]})"
        ) from None
    if not isinstance(ckpt, dict):
        raise CheckpointError(f"checkpoint {path}: expected a dict, got {type(ckpt).__name__}")
    return ckpt


def load_resume_state(path: str) -> Optional[Dict[str, Any]]:
    """A habitat-baselines resume state, or None when the file does not exist."""
    return load_checkpoint(path, map_location="cpu") if os.path.exists(path) else None
