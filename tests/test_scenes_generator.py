"""Procedural scene generator: determinism, HM3D file layout, doors, free space, variety."""

import collections
import filecmp
import glob
import json
import os
import re

import numpy as np
import pytest
import trimesh
from scipy import ndimage

from habitat_mosnav.scenes import (
    generate_scene,
    generate_scenes,
    load_scene_meta,
    read_semantic_txt,
)
from habitat_mosnav.scenes.io import file_to_world, scene_files, scene_up_axis

from glb_fixtures import linear_to_srgb8, read_color0

SEED = 5


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    out = tmp_path_factory.mktemp("scenes")
    return generate_scene(str(out), SEED, 0)


def _load(path):
    return trimesh.load(path, force="mesh", process=False)


def _srgb(scene):
    """Per-vertex colours of the semantic mesh as habitat-sim compares them with
    semantic.txt: COLOR_0 read as linear, converted to sRGB bytes."""
    return linear_to_srgb8(read_color0(scene.semantic_glb))[:, :3]


def _semantic(scene):
    """(world vertices, faces, per-vertex object id) of the semantic mesh, via semantic.txt
    colours; the file is Z up, turned into habitat's Y-up world as habitat-sim does."""
    objs = read_semantic_txt(scene.semantic_txt)
    by_color = {o.rgb: o.object_id for o in objs}
    mesh = _load(scene.semantic_glb)
    cols = _srgb(scene)
    ids = np.array([by_color.get(tuple(int(v) for v in c), -1) for c in cols])
    return file_to_world(np.asarray(mesh.vertices), "z"), np.asarray(mesh.faces), ids, objs


def test_layout_and_scene_id(scene):
    assert re.fullmatch(r"[A-Za-z0-9]{11}", scene.scene_id)
    assert os.path.basename(scene.directory) == f"00000-{scene.scene_id}"
    files = scene_files(scene.directory)
    for key in ("glb", "semantic_glb", "semantic_txt", "meta"):
        assert os.path.isfile(files[key]), key
    assert files["glb"] == scene.glb and files["meta"] == scene.meta
    assert 2000 <= scene.num_triangles <= 30000


def test_same_seed_gives_identical_files(tmp_path, scene):
    again = generate_scene(str(tmp_path), SEED, 0)
    assert again.scene_id == scene.scene_id
    for a, b in (
        (scene.glb, again.glb),
        (scene.semantic_glb, again.semantic_glb),
        (scene.semantic_txt, again.semantic_txt),
        (scene.meta, again.meta),
    ):
        assert filecmp.cmp(a, b, shallow=False), os.path.basename(a)
    other = generate_scene(str(tmp_path), SEED + 1, 0)
    assert other.scene_id != scene.scene_id
    with open(other.semantic_txt) as f1, open(scene.semantic_txt) as f2:
        assert f1.read() != f2.read()


def test_batch_index_does_not_depend_on_batch_size(tmp_path):
    infos = generate_scenes(str(tmp_path / "b"), 2, SEED)
    single = generate_scene(str(tmp_path / "s"), SEED, 1)
    assert [i.index for i in infos] == [0, 1]
    assert filecmp.cmp(infos[1].semantic_glb, single.semantic_glb, shallow=False)


def test_render_and_semantic_glb_share_geometry(scene):
    render, sem = _load(scene.glb), _load(scene.semantic_glb)
    assert len(render.faces) == len(sem.faces) == scene.num_triangles
    assert np.array_equal(render.faces, sem.faces)
    assert np.allclose(render.vertices, sem.vertices)
    # render colours are shaded, not the flat semantic ids
    assert len(np.unique(np.asarray(render.visual.vertex_colors), axis=0)) > 50


def test_meshes_are_written_z_up_like_hm3d(scene):
    """Files are Z up (habitat-sim's .glb convention): floors face +Z in the file, the meta
    file says so, and its world coordinates (Y up) are the file's (x, -z, y) turned back."""
    with open(scene.meta) as fh:
        doc = json.load(fh)
    assert doc["up_axis"] == "z" and doc["units"] == "meters"
    assert scene_up_axis(scene.glb) == "z" and scene_up_axis(scene.semantic_glb) == "z"
    objs = {o.object_id: o for o in read_semantic_txt(scene.semantic_txt)}
    mesh = _load(scene.semantic_glb)
    cols = _srgb(scene)
    floor_rgb = {o.rgb for o in objs.values() if o.category == "floor"}
    on_floor = np.array([tuple(int(v) for v in c) in floor_rgb for c in cols])
    tri_floor = on_floor[mesh.faces].all(1)
    normals = np.asarray(mesh.face_normals)[tri_floor]
    up = normals[normals[:, 2] > 0.5]
    assert len(up) > 0 and np.allclose(up, [0.0, 0.0, 1.0], atol=1e-6)  # the walkable top: +Z
    top = np.asarray(mesh.vertices)[mesh.faces[tri_floor][normals[:, 2] > 0.5].ravel()]
    assert np.allclose(top[:, 2], doc["floor_height"], atol=1e-6)  # floor top at file z = 0
    hi = np.asarray(mesh.vertices).max(0)
    assert hi[2] == pytest.approx(doc["wall_height"] + 0.05, abs=0.06)  # height is file z
    # a furniture AABB of the meta file (world frame) is the file's (x, -z, y) turned back
    o = doc["objects"][0]
    v = np.asarray(mesh.vertices)[
        np.array([tuple(int(x) for x in c) == objs[o["object_id"]].rgb for c in cols])
    ]
    c, s = np.array(o["aabb"]["center"]), np.array(o["aabb"]["size"])
    assert np.allclose(v.min(0), [c[0] - s[0] / 2, -(c[2] + s[2] / 2), c[1] - s[1] / 2], atol=2e-3)


def test_semantic_glb_colour_is_stored_linear_as_habitat_sim_reads_it(scene):
    """COLOR_0 is float (no 8-bit rounding of linear values), and its raw bytes are not the
    sRGB hex: read raw, almost no vertex would match semantic.txt."""
    raw = read_color0(scene.semantic_glb)
    objs = {o.rgb for o in read_semantic_txt(scene.semantic_txt)}
    as_raw = np.rint(raw[:, :3] * 255).astype(int)
    assert np.mean([tuple(c) in objs for c in as_raw]) < 0.1
    assert all(tuple(int(x) for x in c) in objs for c in linear_to_srgb8(raw)[:, :3])


def test_semantic_txt_matches_semantic_glb_colours(scene):
    with open(scene.semantic_txt) as fh:
        first = fh.readline().rstrip("\n")
    assert first == "HM3D Semantic Annotations"
    vertices, faces, ids, objs = _semantic(scene)
    assert (ids > 0).all(), "every semantic.glb vertex colour is listed in semantic.txt"
    assert set(ids.tolist()) == {o.object_id for o in objs}, "every annotated object has geometry"
    # a triangle belongs to exactly one object
    assert (ids[faces] == ids[faces][:, :1]).all()
    cats = collections.Counter(o.category for o in objs)
    assert cats["floor"] == cats["ceiling"] and cats["wall"] == 4 * cats["floor"]


def test_meta_objects_are_annotated_with_their_geometry(scene):
    meta = load_scene_meta(scene.meta)
    objs = {o.object_id: o for o in read_semantic_txt(scene.semantic_txt)}
    vertices, _, ids, _ = _semantic(scene)
    regions = {r["region_id"]: r for r in meta["regions"]}
    assert meta["scene_id"] == scene.scene_id and len(meta["objects"]) == scene.num_objects
    for o in meta["objects"]:
        sem = objs[o["object_id"]]
        assert (sem.category, sem.region_id) == (o["category"], o["region_id"])
        assert o["category"] not in ("wall", "floor", "ceiling")
        v = vertices[ids == o["object_id"]]
        c, s = np.array(o["aabb"]["center"]), np.array(o["aabb"]["size"])
        assert np.allclose(v.min(0), c - s / 2, atol=2e-3) and np.allclose(
            v.max(0), c + s / 2, atol=2e-3
        )
        rc, rs = (
            np.array(regions[o["region_id"]]["aabb"]["center"]),
            np.array(regions[o["region_id"]]["aabb"]["size"]),
        )
        p = np.array(o["position"])
        assert (np.abs(p[[0, 2]] - rc[[0, 2]]) <= rs[[0, 2]] / 2 + 1e-6).all(), o["object_id"]
        assert o["color"] and o["material"]


def test_every_door_is_a_gap_in_the_walls(scene):
    meta = load_scene_meta(scene.meta)
    vertices, faces, ids, objs = _semantic(scene)
    wall_ids = np.array([o.object_id for o in objs if o.category == "wall"])
    tri = vertices[faces]
    tlo, thi = tri.min(1), tri.max(1)
    is_wall = np.isin(ids[faces[:, 0]], wall_ids)
    assert meta["doors"], "a multi-room apartment has doors"
    for d in meta["doors"]:
        assert d["width"] >= 0.9
        lo, hi = d["span"]
        along, across = (2, 0) if d["axis"] == "x" else (0, 2)
        coord = d["center"][across]
        # nothing at all (walls, furniture) inside the opening below the lintel
        blo = np.zeros(3)
        bhi = np.zeros(3)
        blo[along], bhi[along] = lo + 0.01, hi - 0.01
        blo[across], bhi[across] = coord - 0.3, coord + 0.3
        blo[1], bhi[1] = 0.02, d["height"] - 0.02
        inside = (tlo < bhi).all(1) & (thi > blo).all(1)
        assert not inside.any(), f"door {d['door_id']} is blocked"
        # ... while the same wall line is solid just beside the opening
        for u in (lo - 0.15, hi + 0.15):
            p = np.zeros(3)
            p[along], p[across], p[1] = u, coord, 1.0
            hit = is_wall & (tlo <= p + 1e-6).all(1) & (thi >= p - 1e-6).all(1)
            assert hit.any(), f"no wall beside door {d['door_id']} at {u}"
        # the two rooms it joins touch the door line
        for rid in d["regions"]:
            r = meta["regions"][rid]
            c, s = r["aabb"]["center"][across], r["aabb"]["size"][across]
            assert min(abs(c - s / 2 - coord), abs(c + s / 2 - coord)) < 1e-3


def test_free_space_connects_doors_and_reaches_every_object(scene):
    """Rasterise everything between 5 cm and 1 m high, inflate by an agent radius of 0.18 m."""
    meta = load_scene_meta(scene.meta)
    vertices, faces, _, _ = _semantic(scene)
    tri = vertices[faces]
    tlo, thi = tri.min(1), tri.max(1)
    obstacle = (thi[:, 1] > 0.05) & (tlo[:, 1] < 1.0)
    res = 0.05
    x0, z0 = vertices[:, 0].min(), vertices[:, 2].min()
    nx = int(np.ceil((vertices[:, 0].max() - x0) / res)) + 1
    nz = int(np.ceil((vertices[:, 2].max() - z0) / res)) + 1
    occ = np.zeros((nx, nz), dtype=bool)
    for a, b in zip(tlo[obstacle], thi[obstacle]):
        i0, i1 = int((a[0] - x0) / res), int((b[0] - x0) / res)
        j0, j1 = int((a[2] - z0) / res), int((b[2] - z0) / res)
        occ[i0 : i1 + 1, j0 : j1 + 1] = True
    free = (
        ndimage.distance_transform_edt(~occ) * res > 0.18
    )  # rasterising already adds up to a cell
    labels, _ = ndimage.label(free)

    def cell(x, z):
        return int((x - x0) / res), int((z - z0) / res)

    door_labels = {int(labels[cell(d["center"][0], d["center"][2])]) for d in meta["doors"]}
    assert len(door_labels) == 1 and 0 not in door_labels, "all doors in one free-space island"
    main = labels == door_labels.pop()
    assert main.sum() >= 0.8 * free.sum()
    for o in meta["objects"]:
        c, s = np.array(o["aabb"]["center"]), np.array(o["aabb"]["size"])
        reach = 0.6 if c[1] - s[1] / 2 < 0.99 else 1.2  # pictures may hang above a sofa
        i0, j0 = cell(c[0] - s[0] / 2 - reach, c[2] - s[2] / 2 - reach)
        i1, j1 = cell(c[0] + s[0] / 2 + reach, c[2] + s[2] / 2 + reach)
        assert main[max(i0, 0) : i1 + 1, max(j0, 0) : j1 + 1].any(), (
            f"object {o['object_id']} unreachable"
        )


def test_furniture_does_not_interpenetrate(scene):
    meta = load_scene_meta(scene.meta)
    objs = meta["objects"]
    for i, a in enumerate(objs):
        for b in objs[i + 1 :]:
            if (
                a.get("support_object_id") == b["object_id"]
                or b.get("support_object_id") == a["object_id"]
            ):
                continue
            ca, sa = np.array(a["aabb"]["center"]), np.array(a["aabb"]["size"])
            cb, sb = np.array(b["aabb"]["center"]), np.array(b["aabb"]["size"])
            overlap = np.minimum(ca + sa / 2, cb + sb / 2) - np.maximum(ca - sa / 2, cb - sb / 2)
            assert not (overlap > 0.01).all(), (
                a["object_id"],
                a["category"],
                b["object_id"],
                b["category"],
            )


def test_multi_room_apartment_with_many_categories(scene):
    meta = load_scene_meta(scene.meta)
    names = [r["name"] for r in meta["regions"]]
    assert 4 <= len(names) <= 6
    assert {"living room", "kitchen", "bedroom", "bathroom"} <= set(names)
    cats = collections.Counter(o["category"] for o in meta["objects"])
    assert len(cats) >= 12
    for c in ("chair", "bed", "toilet", "sink", "sofa", "plant"):
        assert cats[c] >= 1, c


def _scene_digest(directory):
    """sha256 over (file name, content) of every file of a generated scene, where a .glb's
    content is what it decodes to (each primitive's world positions, faces and COLOR_0, read
    by scenes/gltf.py) rather than its bytes: trimesh 4 (Python 3.9) and 5 frame the same
    mesh differently (a root node), and the scene is the same."""
    import hashlib

    from habitat_mosnav.scenes.gltf import read_glb

    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(directory, "*"))):
        h.update(os.path.basename(path).encode())
        if path.endswith(".glb"):
            for prim in read_glb(path).primitives:
                for arr in (
                    prim.positions.astype("<f4"),
                    prim.faces.astype("<i8"),
                    None if prim.color0 is None else np.round(prim.color0 * 255).astype("u1"),
                ):
                    h.update(b"-" if arr is None else np.ascontiguousarray(arr).tobytes())
        else:
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


#: _scene_digest of generate_scene(seed, index=0). The byte digests these replace were
#: computed with the if/elif furnish() before it became one recipe per room type (RECIPES),
#: and the code that computed these passed them: the recipes table writes the same scenes.
#: Seeds 0-11 hold every room type.
SCENE_DIGESTS = {
    0: "be730feac3d4559ec8aa069ba28219193c246a72f9971f9f107979ba714e6d12",
    1: "a88375855f3a7b62956480fefdc9f5a995928cbe7ecf9d7bd44de1cd20e9029e",
    2: "080729798e471a0e0370a45108f362cdba56566326f40d5571f091ebe6fd5f95",
    3: "631e71cb89c861f7f327bb85803ea289215a8e1fc755050f5626e4e9d4d0252a",
    4: "320e85fcec4f95780fa35d8b56d10e6e9775c040abcc5120f052583a4e06de2c",
    5: "5fd3a5f8a60b1ac787f2a148e5c5830e78e336423787bbaf45d32d96b3cc3087",
    6: "8b93701dabc2820e819ccf0d85d6c02087a6e36143adbd6f1af70483ac335e1b",
    7: "b60cd1adc2d6e0df13a1dc307fcbe113b4f5906a0e348b13546b20482331236e",
    8: "b26fc7d886a69c8d3d03ca2eb59421707842890a953bfbcdb7e0734bbed8eb3e",
    9: "bcf34b715e4ba46dbecf01f2734784dae1de3821b32c8f7fac62a63cd0741807",
    10: "354566a4c5513e5062d58332629f8147ff9691d57ef349919f8ce74ac42bc2f0",
    11: "6aebb7ae394cf4dd743cc80c3fdb75e19ffb5fd44b4bfa6740399d76c0620c63",
}


def test_room_recipes_write_the_same_files_as_before(tmp_path):
    from habitat_mosnav.scenes.generator import RECIPES

    seen = set()
    for seed, expected in SCENE_DIGESTS.items():
        info = generate_scene(str(tmp_path), seed, 0)
        assert _scene_digest(info.directory) == expected, f"seed {seed}: generated files changed"
        seen |= {r["name"] for r in load_scene_meta(info.meta)["regions"]}
    assert seen == set(RECIPES)  # every recipe ran
