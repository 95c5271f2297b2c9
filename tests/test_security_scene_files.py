"""Hostile glTF/GLB scene files (issue #30): users point ``--scene-root`` at downloads they did
not make. Each case below is one small edit of a copy of the demo's own files (the
semantic ``.glb`` read by the package's reader, the render ``.glb`` read by trimesh); every
one must give one line naming the file and the glTF field, exit 2, within
:data:`TIME_LIMIT` seconds and under :data:`MEMORY_MARGIN` above the baseline (RLIMIT_AS,
as ``ulimit -v``), never a traceback or a signal death, never a silent skip.

Today's code crashed on them with SIGSEGV (``as_strided`` outside the buffer; 20,000 mesh
instances), grew to 21.7 GB (a node that is its own child), hung (``/dev/stdin``, a FIFO),
read until MemoryError (``/dev/zero``), read a file outside the scene folder, allocated
3.35 GiB for an accessor without bufferView, or raised ValueError / RecursionError.
"""

import base64
import json
import os
import re
import resource
import struct
import subprocess
import sys
import threading
import time
from urllib.parse import quote

import numpy as np
import pytest

import warm_runner
from glb_fixtures import copy_demo_scenes, edit_glb, glb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SID = "Cukxndkh48K"  # the demo's first scene: the first episode and the first extracted
SCENE_DIR = f"00000-{SID}"
#: seconds a hostile file may take to be refused
TIME_LIMIT = 60
#: address space a hostile file may add to the clean run's peak (``ulimit -v`` of the test)
MEMORY_MARGIN = 2**30
#: lines of habitat's own start-up noise on stderr (magnum plugins, habitat's logger)
_NOISE = re.compile(r"^(PluginManager::|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ )")


def _set(**fields):
    """An edit that sets ``fields`` ("bufferViews.0.byteStride"-style keys, via ``__``)."""

    def change(doc, folder=None):
        for key, value in fields.items():
            *parents, last = key.split("__")
            obj = doc
            for p in parents:
                obj = obj[int(p)] if isinstance(obj, list) else obj[p]
            obj[last] = value

    return change


def _instances(doc, folder):
    doc["nodes"] = [{"children": list(range(1, 20001))}] + [{"mesh": 0} for _ in range(20000)]
    doc["scenes"] = [{"nodes": [0]}]


def _zeros(doc, folder):
    del doc["accessors"][0]["bufferView"]
    doc["accessors"][0]["count"] = 150_000_000


def _link_out(doc, folder):
    os.symlink("/etc/hostname", os.path.join(folder, "outside.bin"))
    doc["buffers"][0]["uri"] = "outside.bin"


def _fifo(doc, folder):
    os.mkfifo(os.path.join(folder, "pipe.bin"))
    doc["buffers"][0]["uri"] = "pipe.bin"


def _deep(doc, folder):
    import json

    return json.dumps(doc)[:-1] + ', "extras": ' + "[" * 100_000 + "]" * 100_000 + "}"


#: case -> (which file of the scene, the edit, the field the line must name)
CASES = {
    "negative byteStride": (
        ".semantic.glb",
        _set(bufferViews__0__byteStride=-(2**40), accessors__0__count=2),
        "bufferViews[0].byteStride",
    ),
    "byteStride past the buffer": (
        ".semantic.glb",
        _set(bufferViews__0__byteStride=252),
        "accessors[0]:",
    ),
    "node its own child": (".semantic.glb", _set(nodes__0__children=[0]), "nodes[0].children"),
    "20000 mesh instances": (
        ".glb",
        _instances,
        "nodes: the node graph instantiates 97,000,000 triangles",
    ),
    "buffer uri /dev/stdin": (
        ".semantic.glb",
        _set(buffers__0__uri="/dev/stdin"),
        "buffers[0].uri",
    ),
    "buffer uri /dev/zero": (".semantic.glb", _set(buffers__0__uri="/dev/zero"), "buffers[0].uri"),
    "buffer uri ../ escape": (
        ".semantic.glb",
        _set(buffers__0__uri="../../../../../../etc/hostname"),
        "buffers[0].uri",
    ),
    "buffer uri a link out": (".semantic.glb", _link_out, "buffers[0].uri"),
    "buffer uri a FIFO": (".semantic.glb", _fifo, "buffers[0].uri"),
    "zeros accessor count 1.5e8": (".semantic.glb", _zeros, "accessors[0].count"),
    "count 'many'": (".semantic.glb", _set(accessors__0__count="many"), "accessors[0].count"),
    "short matrix": (".semantic.glb", _set(nodes__0__matrix=[1, 0, 0]), "nodes[0].matrix"),
    "100k-deep JSON": (".semantic.glb", _deep, "JSON chunk"),
    "render negative byteStride": (
        ".glb",
        _set(bufferViews__1__byteStride=-(2**40)),
        "bufferViews[1].byteStride",
    ),
    "render buffer uri /dev/zero": (".glb", _set(buffers__0__uri="/dev/zero"), "buffers[0].uri"),
}


def _hostile(tmp_path, case):
    """(scene root, the edited file) of ``case`` in a copy of the demo scenes."""
    root = copy_demo_scenes(tmp_path / "scenes")
    suffix, change, _ = CASES[case]
    folder = os.path.join(root, SCENE_DIR)
    path = os.path.join(folder, SID + suffix)
    edit_glb(path, lambda doc: change(doc, folder))
    return root, path


def _vm_peak(pid="self") -> int:
    """The VmPeak of a process in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _run(argv, cwd, limit=None):
    """(rc, stderr, peak address space) of ``argv`` under RLIMIT_AS ``limit``, killed after
    TIME_LIMIT s; its stdin a pipe kept open (a terminal nobody types into)."""

    rlimits = None
    if limit is not None:
        rlimits = {"RLIMIT_AS": (limit, resource.getrlimit(resource.RLIMIT_AS)[1])}
    stdin_r, stdin_w = os.pipe()
    env = {**os.environ, "PYTHONPATH": REPO}
    # a warm child (tests/warm_runner.py): its own process, limits and exit status, without
    # the 4 s of importing habitat per case
    proc = warm_runner.popen(
        argv,
        rlimits=rlimits,
        stdin=stdin_r,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(cwd),
        env=env,
    )
    os.close(stdin_r)
    chunks = []
    drain = threading.Thread(target=lambda: chunks.append(proc.stderr.read()), daemon=True)
    drain.start()
    peak, start = 0, time.monotonic()
    try:
        while proc.poll() is None and time.monotonic() - start < TIME_LIMIT:
            peak = max(peak, _vm_peak(proc.pid))
            time.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
            pytest.fail(f"{argv[2:4]} still running after {TIME_LIMIT} s")
    finally:
        os.close(stdin_w)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        drain.join(10)
    return proc.returncode, "".join(chunks), peak


def _assert_one_line(rc, err, prog, path, field):
    assert rc == 2, f"rc {rc} (a negative rc is a signal death):\n{err[-3000:]}"
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.strip() and not _NOISE.match(ln)]
    assert len(lines) == 1, err[-3000:]
    assert lines[0].startswith(f"{prog}: error: ") and path in lines[0] and field in lines[0], (
        lines[0]
    )


# ----------------------------------------------------------------------------- the readers
_READ = """
import resource, sys
kind, path = sys.argv[1:3]
if kind == "semantic":
    from habitat_mosnav.scenes.gltf import read_glb as read
    from habitat_mosnav.scenes.io import SceneFormatError as Refused
else:
    from habitat_mosnav.sims.geometry import load_mesh as read, SceneLoadError as Refused
peak = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmPeak:")][0]
resource.setrlimit(resource.RLIMIT_AS, (peak + int(sys.argv[3]), resource.getrlimit(resource.RLIMIT_AS)[1]))
try:
    read(path)
except Refused as exc:
    print(f"read: error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_glb_is_one_typed_line_from_its_reader(tmp_path, case):
    """The reader each CLI uses (the package's for the semantic .glb, trimesh behind the
    checks for the render .glb) refuses the file with its typed error, in bounded time and
    memory (the limit set after the imports, in the reading process)."""
    root, path = _hostile(tmp_path, case)
    kind = "semantic" if path.endswith(".semantic.glb") else "render"
    rc, err, _ = _run([sys.executable, "-c", _READ, kind, path, str(MEMORY_MARGIN)], tmp_path)
    _assert_one_line(rc, err, "read", path, CASES[case][2])


def test_a_semantic_glb_that_is_a_fifo_is_refused(tmp_path):
    """The scene file itself a FIFO (opening it blocked forever): not a regular file."""
    root = copy_demo_scenes(tmp_path / "scenes")
    path = os.path.join(root, SCENE_DIR, SID + ".semantic.glb")
    os.remove(path)
    os.mkfifo(path)
    rc, err, _ = _run([sys.executable, "-c", _READ, "semantic", path, str(MEMORY_MARGIN)], tmp_path)
    _assert_one_line(rc, err, "read", path, "not a regular file")


def test_the_clean_demo_files_still_read(tmp_path):
    from habitat_mosnav.scenes.gltf import read_glb

    root = copy_demo_scenes(tmp_path / "scenes")
    glb = read_glb(os.path.join(root, SCENE_DIR, SID + ".semantic.glb"))
    assert len(glb.primitives) == 1 and len(glb.primitives[0].faces) > 1000


def _semantic(tmp_path):
    """(folder, path) of the demo's first semantic .glb in a copy, and what it reads as."""
    from habitat_mosnav.scenes.gltf import read_glb

    root = copy_demo_scenes(tmp_path / "scenes")
    folder = os.path.join(root, SCENE_DIR)
    path = os.path.join(folder, SID + ".semantic.glb")
    return folder, path, read_glb(path).primitives[0]


def _bin_chunk(path):
    data = open(path, "rb").read()
    jlen = struct.unpack_from("<I", data, 12)[0]
    blen = struct.unpack_from("<I", data, 20 + jlen)[0]
    return data[28 + jlen : 28 + jlen + blen]


def _same(a, b):
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.faces, b.faces)
    assert np.array_equal(a.color0, b.color0)


@pytest.mark.parametrize("name", ["data.bin", "sub dir/data.bin", "link.bin"])
def test_an_external_buffer_inside_the_scene_folder_still_reads(tmp_path, name):
    from habitat_mosnav.scenes.gltf import read_glb

    folder, path, clean = _semantic(tmp_path)
    target = os.path.join(folder, "sub dir" if name == "sub dir/data.bin" else "", "data.bin")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.write(_bin_chunk(path))
    if name == "link.bin":  # a link that stays inside the folder is followed
        os.symlink("data.bin", os.path.join(folder, name))
    edit_glb(path, _set(buffers__0__uri=quote(name)))
    _same(read_glb(path).primitives[0], clean)


def test_a_data_uri_buffer_reads_and_its_length_is_checked(tmp_path):
    from habitat_mosnav.scenes.gltf import read_glb
    from habitat_mosnav.scenes.io import SceneFormatError

    folder, path, clean = _semantic(tmp_path)
    blob = _bin_chunk(path)
    uri = "data:application/octet-stream;base64," + base64.b64encode(blob).decode()
    edit_glb(path, _set(buffers__0__uri=uri))
    _same(read_glb(path).primitives[0], clean)
    edit_glb(path, _set(buffers__0__byteLength=len(blob) + 64))
    with pytest.raises(
        SceneFormatError, match=r"semantic\.glb: buffers\[0\]\.uri: .* byteLength is"
    ):
        read_glb(path)


def test_a_strided_accessor_reads_its_rows(tmp_path):
    """POSITION interleaved with COLOR_0 (byteStride 28): the rows come out as written."""
    from habitat_mosnav.scenes.gltf import read_glb

    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    col = np.array([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]], np.float32)
    rows = np.concatenate([pos, col], axis=1).astype("<f4").tobytes()
    idx = np.array([0, 1, 2], "<u4").tobytes()
    doc = {
        "asset": {"version": "2.0"},
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "COLOR_0": 1}, "indices": 2}]}],
        "buffers": [{"byteLength": len(rows) + len(idx)}],
        "bufferViews": [
            {"buffer": 0, "byteLength": len(rows), "byteStride": 28},
            {"buffer": 0, "byteOffset": len(rows), "byteLength": len(idx)},
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"},
            {"bufferView": 0, "byteOffset": 12, "componentType": 5126, "count": 3, "type": "VEC4"},
            {"bufferView": 1, "componentType": 5125, "count": 3, "type": "SCALAR"},
        ],
    }
    path = str(tmp_path / "strided.glb")
    glb(
        path, [{"positions": pos, "faces": [[0, 1, 2]]}]
    )  # a valid file, then its JSON and BIN replaced
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    body = (
        struct.pack("<I4s", len(js), b"JSON")
        + js
        + struct.pack("<I4s", len(rows + idx), b"BIN\x00")
        + rows
        + idx
    )
    with open(path, "wb") as f:
        f.write(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    p = read_glb(path).primitives[0]
    assert np.array_equal(p.positions, pos) and np.array_equal(p.color0, col)


@pytest.mark.parametrize(
    "change, field",
    [
        (
            _set(
                nodes=[
                    {"mesh": 0, "children": [1]},
                    {"children": [2]},
                    {"mesh": 0, "children": [1]},
                ]
            ),
            "nodes[2].children: node 1 is an ancestor of node 2",
        ),
        (
            _set(
                nodes=[{"children": [2]}, {"children": [2]}, {"mesh": 0}],
                scenes=[{"nodes": [0, 1]}],
            ),
            "(glTF nodes have at most one parent)",
        ),
        (
            _set(accessors__1__count=8047),
            "meshes[0].primitives[0].attributes.COLOR_0: 8047 elements",
        ),
        (_set(buffers__0__uri="file:///etc/hostname"), "only data: URIs and relative paths"),
        (_set(bufferViews__2__byteOffset=-4), "bufferViews[2].byteOffset: -4 is not >= 0"),
        (_set(accessors__2__bufferView=True), "accessors[2].bufferView: index True out of range"),
        (
            _set(nodes__0__rotation=[0, 0, 0, float("nan")]),
            "nodes[0].rotation: expected 4 finite numbers",
        ),
        (_set(extensionsRequired=5), "extensionsRequired: expected an array of extension names"),
    ],
    ids=[
        "cycle of three",
        "two parents",
        "attribute counts differ",
        "file: URI",
        "negative offset",
        "bool index",
        "NaN rotation",
        "extensionsRequired 5",
    ],
)
def test_more_hostile_fields_are_named(tmp_path, change, field):
    from habitat_mosnav.scenes.gltf import read_glb
    from habitat_mosnav.scenes.io import SceneFormatError

    folder, path, _ = _semantic(tmp_path)
    edit_glb(path, lambda doc: change(doc, folder))
    with pytest.raises(SceneFormatError) as info:
        read_glb(path)
    assert str(info.value).startswith(path + ": ") and field in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------- the CLIs
def _eval_argv(root, out):
    return [
        sys.executable,
        "-m",
        "habitat_mosnav.eval",
        "--agent",
        "random",
        "--scene-root",
        root,
        "--output-dir",
        str(out),
        "--num-episodes",
        "1",
        "--max-steps",
        "5",
        "--space-coverage-samples",
        "0",
        "--no-progress",
    ]


def _extract_argv(root, out):
    return [
        sys.executable,
        "-m",
        "habitat_mosnav.dataset_building.cli",
        "extract",
        "--scenes",
        root,
        "--out",
        str(out),
        "--scene-ids",
        SID,
        "--no-progress",
    ]


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """Peak address space of each CLI on the clean demo copy (the same command)."""
    tmp = tmp_path_factory.mktemp("baseline")
    root = copy_demo_scenes(tmp / "scenes")
    out = {}
    for name, argv in (
        ("mosnav-eval", _eval_argv(root, tmp / "run")),
        ("mosnav-build extract", _extract_argv(root, tmp / "ds")),
    ):
        rc, err, peak = _run(argv, tmp)
        assert rc == 0 and peak > 0, err[-3000:]
        out[name] = peak
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_glb_stops_mosnav_eval_with_one_line(tmp_path, baselines, case):
    root, path = _hostile(tmp_path, case)
    rc, err, _ = _run(
        _eval_argv(root, tmp_path / "run"), tmp_path, baselines["mosnav-eval"] + MEMORY_MARGIN
    )
    _assert_one_line(rc, err, "mosnav-eval", path, CASES[case][2])


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_glb_stops_mosnav_build_extract_with_one_line(tmp_path, baselines, case):
    root, path = _hostile(tmp_path, case)
    limit = baselines["mosnav-build extract"] + MEMORY_MARGIN
    rc, err, _ = _run(_extract_argv(root, tmp_path / "ds"), tmp_path, limit)
    _assert_one_line(rc, err, "mosnav-build extract", path, CASES[case][2])


@pytest.mark.slow
@pytest.mark.habitat_sim
@pytest.mark.parametrize(
    "case", ["negative byteStride", "20000 mesh instances", "render negative byteStride"]
)
def test_a_hostile_glb_never_reaches_habitat_sim(tmp_path, case):
    """habitat-sim loads the files natively (SIGABRT or a hang on these today): they are
    checked before it sees them."""
    pytest.importorskip("habitat_sim")
    root, path = _hostile(tmp_path, case)
    rc, err, _ = _run(_eval_argv(root, tmp_path / "run") + ["--simulator", "habitat-sim"], tmp_path)
    _assert_one_line(rc, err, "mosnav-eval", path, CASES[case][2])
    if case.startswith("render"):
        rc, err, _ = _run(
            _extract_argv(root, tmp_path / "ds") + ["--backend", "habitat-sim"], tmp_path
        )
        _assert_one_line(rc, err, "mosnav-build extract", path, CASES[case][2])


@pytest.mark.slow
def test_a_hostile_glb_in_the_second_scene_stops_the_run_and_keeps_the_records(tmp_path):
    """Scenes load as the run reaches them: a broken later scene is still one line and exit
    2 (not an error record per episode and exit 0), and the records before it stay."""
    root = copy_demo_scenes(tmp_path / "scenes")
    path = os.path.join(root, "00001-b2ZCdoVqp4V", "b2ZCdoVqp4V.semantic.glb")
    edit_glb(path, lambda doc: _set(nodes__0__children=[0])(doc))
    out = tmp_path / "run"
    argv = _eval_argv(root, out)
    argv[argv.index("--num-episodes") : argv.index("--num-episodes") + 2] = []
    rc, err, _ = _run(argv + ["--max-steps", "3"], tmp_path)
    _assert_one_line(rc, err, "mosnav-eval", path, "nodes[0].children")
    with open(out / "rank_00000" / "episodes.jsonl") as f:
        records = [json.loads(line) for line in f]
    assert records and "b2ZCdoVqp4V" not in {r["episode_key"].split("::")[1] for r in records}
    assert all(r["status"] == "ok" for r in records)
