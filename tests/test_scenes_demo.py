"""The bundled demo scenes: present, parseable, small, varied and reproducible."""

import collections
import filecmp
import glob
import json
import os

import numpy as np
import pytest
import trimesh

import habitat_mosnav
from habitat_mosnav.scenes import generate_scene, load_scene_meta, read_semantic_txt
from habitat_mosnav.scenes.io import scene_files

DEMO = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo", "scenes")
DEMO_SEED = 3  # documented in data/demo/scenes/README.md


def _scene_dirs():
    return sorted(d for d in glob.glob(os.path.join(DEMO, "0000*-*")) if os.path.isdir(d))


def test_three_demo_scenes_under_size_budget():
    dirs = _scene_dirs()
    assert [os.path.basename(d)[:5] for d in dirs] == ["00000", "00001", "00002"]
    total = sum(os.path.getsize(f) for d in dirs for f in glob.glob(os.path.join(d, "*")))
    assert total < 6 * 1024 * 1024, total
    assert os.path.isfile(os.path.join(DEMO, "README.md"))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_demo_scene_parses(index):
    d = _scene_dirs()[index]
    files = scene_files(d)
    meta = load_scene_meta(files["meta"])
    assert meta["scene_id"] == files["scene_id"]
    sem = {o.object_id: o for o in read_semantic_txt(files["semantic_txt"])}
    for o in meta["objects"]:
        assert sem[o["object_id"]].category == o["category"]
    mesh = trimesh.load(files["glb"], force="mesh", process=False)
    assert 2000 <= len(mesh.faces) <= 30000


def _same_json(a, b, path="$"):
    """Equal documents, floats within 1e-3 (last-bit float differences between machines)."""
    if isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) <= 1e-3, path
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same_json(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same_json(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def test_demo_is_what_the_readme_command_makes(tmp_path):
    """Regenerating with the README's command gives the bundled files (else they are stale)."""
    d = _scene_dirs()[0]
    info = generate_scene(str(tmp_path), DEMO_SEED, 0)
    assert os.path.basename(info.directory) == os.path.basename(d), (
        "demo scenes are stale: regenerate them"
    )
    bundled = scene_files(d)
    assert filecmp.cmp(bundled["semantic_txt"], info.semantic_txt, shallow=False)
    with open(bundled["meta"]) as f1, open(info.meta) as f2:
        _same_json(json.load(f1), json.load(f2))
    for key in ("glb", "semantic_glb"):
        a = trimesh.load(bundled[key], force="mesh", process=False)
        b = trimesh.load(getattr(info, key), force="mesh", process=False)
        assert np.array_equal(a.faces, b.faces) and np.allclose(
            a.vertices, b.vertices, atol=1e-4
        ), key
        assert (
            np.abs(a.visual.vertex_colors.astype(int) - b.visual.vertex_colors.astype(int)).max()
            <= 1
        ), key


def test_descriptions_match_several_instances():
    """(category, colour) and (category, colour, material) pairs repeat, so 'brown wooden chairs' has 2+ answers."""
    all_colors = collections.defaultdict(set)
    cats = set()
    for d in _scene_dirs():
        meta = load_scene_meta(scene_files(d)["meta"])
        pairs = collections.Counter((o["category"], c) for o in meta["objects"] for c in o["color"])
        triples = collections.Counter(
            (o["category"], o["color"][0], o["material"][0]) for o in meta["objects"]
        )
        assert sum(1 for v in pairs.values() if v >= 2) >= 3
        assert any(v >= 2 for v in triples.values())
        for o in meta["objects"]:
            all_colors[o["category"]].update(o["color"])
            cats.add(o["category"])
        assert sum(1 for o in meta["objects"] if o["feature"]) >= 0.7 * len(meta["objects"])
    assert len(cats) >= 15
    assert len(all_colors["chair"]) >= 3 and len(all_colors["cabinet"]) >= 3
