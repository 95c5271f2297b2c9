"""Dataset fingerprints: which dataset files a run or a benchmark setting used.

A fingerprint is the SHA-256 of every JSON file of a ``dataset_semantic`` directory
(``categories.json`` at the root and each scene's ``goals/queries/episodes.json``), listed
per file so that a mismatch can name the file that differs, and combined into one digest
over the sorted ``(relative path, file digest)`` pairs. Pure stdlib: the evaluation layer,
the run manifest and the benchmark settings all use this one definition.
"""

from __future__ import annotations

import hashlib
import os
from typing import Dict, List, Mapping, Optional

__all__ = [
    "DATASET_FILES",
    "dataset_file_digests",
    "combine_digests",
    "dataset_fingerprint",
    "file_digest",
    "fingerprint_differences",
]

#: The files of a scene folder that define its episodes (SPEC §6).
DATASET_FILES = ("goals.json", "queries.json", "episodes.json")
#: Dataset-wide files at the root of ``dataset_semantic/``.
ROOT_FILES = ("categories.json",)
_CHUNK = 1 << 20


def _sha256(path: str) -> str:
    from habitat_mosnav.safety import open_input

    h = hashlib.sha256()
    with open_input(path, 1 << 40) as f:  # a regular file: a FIFO never hangs the hash
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


#: file_digest's cache: (real path, size, mtime_ns, inode) -> digest, for this process.
_DIGESTS: Dict[tuple, str] = {}


def file_digest(path: str) -> str:
    """``"<size>:<sha256>"`` of a file (a scene mesh, a navmesh, a config), hashed once per
    process while its size, mtime and inode stay the same."""
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (real, st.st_size, st.st_mtime_ns, st.st_ino)
    digest = _DIGESTS.get(key)
    if digest is None:
        if len(_DIGESTS) > 10_000:
            _DIGESTS.clear()
        digest = _DIGESTS[key] = f"{st.st_size}:{_sha256(real)}"
    return digest


def dataset_file_digests(data_path: str, scenes: Optional[List[str]] = None) -> Dict[str, str]:
    """``{relative path: sha256}`` of the dataset's files; ``scenes`` limits the scene folders
    (default: every folder holding an ``episodes.json``)."""
    data_path = os.path.abspath(os.path.expanduser(data_path))
    if not os.path.isdir(data_path):
        raise FileNotFoundError(f"{data_path}: no such dataset directory")
    digests: Dict[str, str] = {}
    for name in ROOT_FILES:
        path = os.path.join(data_path, name)
        if os.path.isfile(path):
            digests[name] = _sha256(path)
    names = (
        sorted(scenes)
        if scenes is not None
        else sorted(d for d in os.listdir(data_path) if os.path.isdir(os.path.join(data_path, d)))
    )
    for scene in names:
        for name in DATASET_FILES:
            path = os.path.join(data_path, scene, name)
            if os.path.isfile(path):
                digests[f"{scene}/{name}"] = _sha256(path)
    return digests


def combine_digests(digests: Mapping[str, str]) -> str:
    """One ``sha256:<hex>`` over the sorted (path, digest) pairs."""
    h = hashlib.sha256()
    for rel in sorted(digests):
        h.update(f"{rel}\0{digests[rel]}\n".encode("utf-8"))
    return "sha256:" + h.hexdigest()


def dataset_fingerprint(data_path: str, scenes: Optional[List[str]] = None) -> str:
    """The combined fingerprint of :func:`dataset_file_digests`."""
    return combine_digests(dataset_file_digests(data_path, scenes))


def fingerprint_differences(expected: Mapping[str, str], actual: Mapping[str, str]) -> List[str]:
    """Human-readable differences, one per file: ``"<file> differs"``, ``"<file> is missing"``,
    ``"<file> is not in the setting"``; empty when both agree."""
    out: List[str] = []
    for rel in sorted(set(expected) | set(actual)):
        if rel not in actual:
            out.append(f"{rel} is missing")
        elif rel not in expected:
            out.append(f"{rel} is not in the setting")
        elif expected[rel] != actual[rel]:
            out.append(f"{rel} differs")
    return out
