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
import os
import re
import resource
import subprocess
import sys
import threading
import time

import pytest

from glb_fixtures import copy_demo_scenes, edit_glb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SID = "Cukxndkh48K"  # the demo's first scene: the first episode and the first extracted
SCENE_DIR = f"00000-{SID}"
#: seconds a hostile file may take to be refused
TIME_LIMIT = 60
#: address space a hostile file may add to the clean run's peak (``ulimit -v`` of the test)
MEMORY_MARGIN = 2 ** 30
#: lines of habitat's own start-up noise on stderr (magnum plugins, habitat's logger)
_NOISE = re.compile(r"^(PluginManager::|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ )")


def _set(**fields):
    """An edit that sets ``fields`` ("bufferViews.0.byteStride"-style keys, via ``__``)."""
    def change(doc, folder):
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
    "negative byteStride": (".semantic.glb", _set(bufferViews__0__byteStride=-2 ** 40, accessors__0__count=2),
                            "bufferViews[0].byteStride"),
    "byteStride past the buffer": (".semantic.glb", _set(bufferViews__0__byteStride=252), "accessors[0]:"),
    "node its own child": (".semantic.glb", _set(nodes__0__children=[0]), "nodes[0].children"),
    "20000 mesh instances": (".glb", _instances, "nodes: the node graph instantiates 97,000,000 triangles"),
    "buffer uri /dev/stdin": (".semantic.glb", _set(buffers__0__uri="/dev/stdin"), "buffers[0].uri"),
    "buffer uri /dev/zero": (".semantic.glb", _set(buffers__0__uri="/dev/zero"), "buffers[0].uri"),
    "buffer uri ../ escape": (".semantic.glb", _set(buffers__0__uri="../../../../../../etc/hostname"),
                              "buffers[0].uri"),
    "buffer uri a link out": (".semantic.glb", _link_out, "buffers[0].uri"),
    "buffer uri a FIFO": (".semantic.glb", _fifo, "buffers[0].uri"),
    "zeros accessor count 1.5e8": (".semantic.glb", _zeros, "accessors[0].count"),
    "count 'many'": (".semantic.glb", _set(accessors__0__count="many"), "accessors[0].count"),
    "short matrix": (".semantic.glb", _set(nodes__0__matrix=[1, 0, 0]), "nodes[0].matrix"),
    "100k-deep JSON": (".semantic.glb", _deep, "JSON chunk"),
    "render negative byteStride": (".glb", _set(bufferViews__1__byteStride=-2 ** 40), "bufferViews[1].byteStride"),
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
    def preexec():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))

    stdin_r, stdin_w = os.pipe()
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.Popen(argv, stdin=stdin_r, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=str(cwd), env=env, preexec_fn=preexec)
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
    assert lines[0].startswith(f"{prog}: error: ") and path in lines[0] and field in lines[0], lines[0]


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


def test_the_clean_demo_files_still_read(tmp_path):
    from habitat_mosnav.scenes.gltf import read_glb

    root = copy_demo_scenes(tmp_path / "scenes")
    glb = read_glb(os.path.join(root, SCENE_DIR, SID + ".semantic.glb"))
    assert len(glb.primitives) == 1 and len(glb.primitives[0].faces) > 1000


# ----------------------------------------------------------------------------- the CLIs
def _eval_argv(root, out):
    return [sys.executable, "-m", "habitat_mosnav.eval", "--agent", "random", "--scene-root", root,
            "--output-dir", str(out), "--num-episodes", "1", "--max-steps", "5",
            "--space-coverage-samples", "0", "--no-progress"]


def _extract_argv(root, out):
    return [sys.executable, "-m", "habitat_mosnav.dataset_building.cli", "extract", "--scenes", root,
            "--out", str(out), "--scene-ids", SID, "--no-progress"]


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """Peak address space of each CLI on the clean demo copy (the same command)."""
    tmp = tmp_path_factory.mktemp("baseline")
    root = copy_demo_scenes(tmp / "scenes")
    out = {}
    for name, argv in (("mosnav-eval", _eval_argv(root, tmp / "run")),
                       ("mosnav-build extract", _extract_argv(root, tmp / "ds"))):
        rc, err, peak = _run(argv, tmp)
        assert rc == 0 and peak > 0, err[-3000:]
        out[name] = peak
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_glb_stops_mosnav_eval_with_one_line(tmp_path, baselines, case):
    root, path = _hostile(tmp_path, case)
    rc, err, _ = _run(_eval_argv(root, tmp_path / "run"), tmp_path, baselines["mosnav-eval"] + MEMORY_MARGIN)
    _assert_one_line(rc, err, "mosnav-eval", path, CASES[case][2])


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_glb_stops_mosnav_build_extract_with_one_line(tmp_path, baselines, case):
    root, path = _hostile(tmp_path, case)
    limit = baselines["mosnav-build extract"] + MEMORY_MARGIN
    rc, err, _ = _run(_extract_argv(root, tmp_path / "ds"), tmp_path, limit)
    _assert_one_line(rc, err, "mosnav-build extract", path, CASES[case][2])
