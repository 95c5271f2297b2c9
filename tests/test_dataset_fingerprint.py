"""Dataset fingerprints (datasets/fingerprint.py): per-file digests and their combination."""

import hashlib
import json
import os

from habitat_mosnav.datasets.fingerprint import (
    combine_digests,
    dataset_file_digests,
    dataset_fingerprint,
    fingerprint_differences,
)


def _write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)


def test_digests_name_each_file_and_change_with_content(tmp_path):
    root = tmp_path / "dataset_semantic"
    _write(str(root / "categories.json"), {"categories": ["chair"]})
    for name in ("goals.json", "queries.json", "episodes.json"):
        _write(str(root / "sceneA" / name), {"n": name})
    (root / "sceneA" / "notes.txt").write_text("not part of the dataset")
    digests = dataset_file_digests(str(root))
    assert sorted(digests) == [
        "categories.json",
        "sceneA/episodes.json",
        "sceneA/goals.json",
        "sceneA/queries.json",
    ]
    assert (
        digests["sceneA/goals.json"]
        == hashlib.sha256((root / "sceneA" / "goals.json").read_bytes()).hexdigest()
    )
    # the combined digest is over sorted "path\0digest\n" lines
    lines = "".join(f"{k}\0{digests[k]}\n" for k in sorted(digests)).encode()
    assert dataset_fingerprint(str(root)) == "sha256:" + hashlib.sha256(lines).hexdigest()

    before = dict(digests)
    _write(str(root / "sceneA" / "episodes.json"), {"n": "changed"})
    after = dataset_file_digests(str(root))
    assert combine_digests(after) != combine_digests(before)
    assert fingerprint_differences(before, after) == ["sceneA/episodes.json differs"]
    del after["categories.json"]
    assert fingerprint_differences(before, after) == [
        "categories.json is missing",
        "sceneA/episodes.json differs",
    ]
    assert fingerprint_differences(after, before) == [
        "categories.json is not in the setting",
        "sceneA/episodes.json differs",
    ]
