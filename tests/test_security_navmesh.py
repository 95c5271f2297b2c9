"""Hostile habitat-sim ``.navmesh`` files and broken scene files (issue #30): the demo's own
navmeshes edited in a few bytes. Each is refused at load with one typed error naming the
file, tile and field; ``mosnav-eval`` and ``sims.compare`` print that one line and exit 2
before the first episode (nothing written), in bounded time and memory, with no traceback
and no numpy warning. Tile bounds 2 km wide around the same polygons are accepted and give
the clean file's space-oracle figures exactly, and a bounded top-down map."""

import json
import os
import re
import resource
import shutil
import struct
import sys

import numpy as np
import pytest

import habitat_mosnav
import warm_runner
from habitat_mosnav.sims.navmesh import NavMeshError, read_navmesh, validate_navmesh

DEMO = os.path.join(os.path.dirname(habitat_mosnav.__file__), "data", "demo")
SCENES = sorted(d for d in os.listdir(os.path.join(DEMO, "scenes")) if "-" in d)
_HEADER = struct.Struct("<5iI9i3f3f3ff")
_DNAV = struct.pack("<i", (ord("D") << 24) | (ord("N") << 16) | (ord("A") << 8) | ord("V"))
EVAL_FLAGS = [
    "--agent",
    "random",
    "--max-steps",
    "25",
    "--num-episodes",
    "6",
    "--no-progress",
    "--set",
    "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
    "--set",
    "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
]


def _a4(n):
    return (n + 3) & ~3


def hostile(data: bytes, case: str) -> bytes:
    """The navmesh ``data`` with one hostile edit."""
    data = bytearray(data)
    t = data.find(_DNAV, 12)
    h = list(_HEADER.unpack_from(data, t))
    polys, nverts, links = h[6], h[7], h[8]
    voff = t + _a4(_HEADER.size)
    verts = np.frombuffer(bytes(data[voff : voff + 12 * nverts]), np.float32).reshape(-1, 3).copy()
    poff = voff + _a4(12 * nverts)
    dmoff = poff + _a4(32 * polys) + _a4(12 * links)
    if case == "inf":  # every other vertex coordinate
        verts.reshape(-1)[::2] = np.inf
    elif case == "all_nan":
        verts[:] = np.nan
    elif case == "bounds_nan":
        h[18:24] = [float("nan")] * 6
    elif case == "bounds_2km":
        h[18], h[20], h[21], h[23] = h[18] - 2000, h[20] - 2000, h[21] + 2000, h[23] + 2000
    elif case == "detail_base":  # detail mesh 0's first triangle far past detailTriCount
        struct.pack_into("<I", data, dmoff + 4, 60000)
    elif case == "detail_vertex":  # a detail triangle corner past the polygon's vertices
        tri_base = struct.unpack_from("<I", data, dmoff + 4)[0]
        dtoff = dmoff + _a4(12 * h[9]) + _a4(12 * h[10])
        data[dtoff + 4 * tri_base] = 200
    elif case == "concave":  # a corner of the first quad pulled through its centre
        for i in range(polys):
            nv = data[poff + 32 * i + 30]
            if nv >= 4:
                idx = list(struct.unpack_from("<6H", data, poff + 32 * i + 4)[:nv])
                c = verts[idx].mean(0)
                verts[idx[1], [0, 2]] = c[[0, 2]] + 0.2 * (c[[0, 2]] - verts[idx[1], [0, 2]])
                break
    else:
        raise ValueError(case)
    _HEADER.pack_into(data, t, *h)
    data[voff : voff + 12 * nverts] = verts.astype(np.float32).tobytes()
    return bytes(data)


def demo_copy(root, case=None, scenes=None):
    """A copy of the demo (dataset and scenes) whose navmeshes of ``scenes`` (indices into
    SCENES; all by default) got the hostile edit ``case``; returns the copy's root."""
    shutil.copytree(DEMO, str(root))
    for k, d in enumerate(SCENES):
        if case is None or (scenes is not None and k not in scenes):
            continue
        sid = d.split("-", 1)[1]
        path = os.path.join(str(root), "scenes", d, sid + ".navmesh")
        with open(path, "rb") as fh:
            data = fh.read()
        with open(path, "wb") as fh:
            fh.write(hostile(data, case))
    return root


def navmesh_of(root, k=0):
    sid = SCENES[k].split("-", 1)[1]
    return os.path.join(str(root), "scenes", SCENES[k], sid + ".navmesh")


def _baseline_vm() -> int:
    """Virtual memory of a Python that has imported what the commands import."""
    code = (
        "import habitat, habitat_mosnav.sims, habitat_mosnav.evaluation.cli, resource;"
        "print(open('/proc/self/statm').read().split()[0])"
    )
    src = os.path.dirname(os.path.dirname(habitat_mosnav.__file__))
    # as the commands run: warm children of tests/warm_runner.py (run_bounded)
    out = warm_runner.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=src),
    )
    return int(out.stdout.strip().splitlines()[-1]) * resource.getpagesize()


@pytest.fixture(scope="module")
def as_limit():
    return _baseline_vm() + (1 << 30)


def demo_copy_args(root, out, *extra):
    """``mosnav-eval`` flags that evaluate the :func:`demo_copy` at ``root`` into ``out``."""
    return [
        "--dataset-dir",
        str(root / "dataset_semantic"),
        "--scene-root",
        str(root / "scenes"),
        "--output-dir",
        str(out),
        *extra,
    ]


def run_bounded(args, as_limit, cwd):
    # the package under test (a worktree's), whatever the interpreter has installed
    src = os.path.dirname(os.path.dirname(habitat_mosnav.__file__))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([src] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
    )
    # a warm child (tests/warm_runner.py): its own process, limit and exit status, without
    # the 4 s of importing habitat per case
    return warm_runner.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=60,
        rlimits={"RLIMIT_AS": (as_limit, as_limit)},
        env=env,
        cwd=str(cwd),
    )


#: lines every run prints, not about the input: habitat-sim's importers at import, habitat's
#: own log ("2026-01-01 10:00:00,000 Initializing dataset ...")
_NOISE = re.compile(r"^(PluginManager::Manager: |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ Initializing )")


def _only_line(proc, path):
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not _NOISE.match(ln)]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert str(path) in lines[0], lines
    assert "Traceback" not in proc.stderr and "RuntimeWarning" not in proc.stderr, proc.stderr[
        -3000:
    ]
    return lines[0]


# ---------------------------------------------------------------- the reader
BROKEN = {
    "inf": "field 'verts'",
    "all_nan": "field 'verts'",
    "bounds_nan": "field 'bmin'",
    "detail_base": "field 'detailMeshes'",
    "detail_vertex": "field 'detailTris'",
    "concave": "field 'polys'",
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_navmesh_is_refused_at_load_naming_file_tile_and_field(tmp_path, case):
    path = tmp_path / "x.navmesh"
    path.write_bytes(hostile(open(navmesh_of(DEMO), "rb").read(), case))
    for read in (read_navmesh, validate_navmesh):
        with pytest.raises(NavMeshError) as info:
            read(str(path))
        text = str(info.value)
        assert (
            "\n" not in text and str(path) in text and "tile 0" in text and BROKEN[case] in text
        ), text


def test_the_demo_navmeshes_pass_every_check():
    for k in range(len(SCENES)):
        assert validate_navmesh(navmesh_of(DEMO, k), detour=True) > 0
        assert read_navmesh(navmesh_of(DEMO, k)).tiles[0].polys


def test_bounds_2km_are_accepted_by_the_cpu_reader_and_refused_for_detour(tmp_path):
    path = tmp_path / "x.navmesh"
    path.write_bytes(hostile(open(navmesh_of(DEMO), "rb").read(), "bounds_2km"))
    assert validate_navmesh(str(path)) > 0
    with pytest.raises(NavMeshError, match="field 'bvTree'"):  # Detour's BV tree misses it
        validate_navmesh(str(path), detour=True)


def test_the_cpu_simulator_raises_on_a_broken_navmesh_beside_the_scene(tmp_path):
    from habitat_mosnav.sims.compare import cpu_pathfinder

    root = demo_copy(tmp_path / "demo", "inf", scenes=[0])
    scene = navmesh_of(root)[: -len(".navmesh")] + ".glb"
    with pytest.raises(NavMeshError, match="field 'verts'"):
        cpu_pathfinder(scene)  # was: a warning, then navigability from the mesh


# ----------------------------------------------------------------- mosnav-eval
@pytest.mark.parametrize(
    "case,scenes",
    [
        ("inf", None),
        ("all_nan", None),
        ("bounds_nan", None),
        ("detail_base", None),
        ("concave", None),
        ("inf", [2]),
    ],
)  # only the run's second scene
def test_eval_on_a_broken_navmesh_is_one_line_and_exit_2_before_anything_is_written(
    tmp_path, as_limit, case, scenes
):
    root = demo_copy(tmp_path / "demo", case, scenes)
    out = tmp_path / "run"
    proc = run_bounded(
        ["-m", "habitat_mosnav.eval", *demo_copy_args(root, out, *EVAL_FLAGS)],
        as_limit,
        tmp_path,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    line = _only_line(proc, navmesh_of(root, 2 if scenes else 0))
    assert line.startswith("mosnav-eval: error: ") and "episodes.json" not in line
    assert not out.exists()


def test_eval_on_a_broken_glb_of_the_second_scene_is_one_line_and_exit_2(tmp_path, as_limit):
    root = demo_copy(tmp_path / "demo")
    glb = navmesh_of(root, 2)[: -len(".navmesh")] + ".glb"
    data = bytearray(open(glb, "rb").read())
    data[20] = ord("#")  # the JSON chunk's first byte
    open(glb, "wb").write(bytes(data))
    out = tmp_path / "run"
    proc = run_bounded(
        ["-m", "habitat_mosnav.eval", *demo_copy_args(root, out, *EVAL_FLAGS)],
        as_limit,
        tmp_path,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "JSON chunk" in _only_line(proc, glb)
    assert not out.exists()


def _records(out):
    recs = {}
    for name in sorted(os.listdir(out)):
        if name.startswith("rank_"):
            with open(os.path.join(out, name, "episodes.jsonl")) as fh:
                for line in fh:
                    r = json.loads(line)
                    recs[r["episode_key"]] = r
    return recs


def test_bounds_2km_give_the_clean_files_space_oracle_and_a_bounded_map(tmp_path):
    from habitat_mosnav.evaluation.cli import main

    flags = EVAL_FLAGS + ["--space-coverage-samples", "40", "--seed", "3"]
    runs = {}
    for name, case in (("clean", None), ("far", "bounds_2km")):
        root = demo_copy(tmp_path / name, case)
        out = tmp_path / f"run_{name}"
        extra = ["--save-maps"] if case else []
        assert main(demo_copy_args(root, out, *flags, *extra)) == 0
        runs[name] = _records(out)
    assert runs["clean"].keys() == runs["far"].keys() and len(runs["clean"]) == 6
    for key, clean in runs["clean"].items():
        far = runs["far"][key]
        assert far["status"] == clean["status"] == "ok"
        assert clean["metrics"]["coverage"] is not None
        for field in ("coverage", "oer_space"):
            assert far["metrics"][field] == clean["metrics"][field], (key, field)
        assert far["metrics"] == clean["metrics"], key
    maps = sorted((tmp_path / "run_far" / "maps").iterdir())
    assert len(maps) == 6
    import imageio.v2 as imageio

    for png in maps:
        h, w = imageio.imread(str(png)).shape[:2]
        assert h < 2000 and w < 3000, (png, h, w)


def test_map_grid_of_2km_bounds_covers_the_polygons_only(tmp_path):
    from habitat_mosnav.evaluation.maps import MapGrid
    from habitat_mosnav.sims.navmesh_query import NavMeshQuery
    from habitat_mosnav.sims.pathfinder import PathFinder

    path = tmp_path / "x.navmesh"
    path.write_bytes(hostile(open(navmesh_of(DEMO), "rb").read(), "bounds_2km"))
    pf = PathFinder(NavMeshQuery(read_navmesh(str(path))))
    clean = PathFinder(NavMeshQuery(read_navmesh(navmesh_of(DEMO))))
    with pytest.raises(NavMeshError, match="too large"):
        pf.get_topdown_view(0.1, 0.15)  # 40000 x 40000 cells: refused, not allocated
    grid = MapGrid.from_pathfinder(pf, 0.15)
    assert max(grid.shape) <= 600
    lo, hi = grid.pathfinder.get_bounds()
    assert np.allclose(lo[[0, 2]], clean.navigable_extent()[0][[0, 2]])
    assert (grid.codes > 0).sum() > 1000  # the floor is drawn


# ------------------------------------------------------------------- compare
@pytest.mark.habitat_sim
@pytest.mark.parametrize(
    "case", ["inf", "all_nan", "bounds_nan", "detail_base", "concave", "bounds_2km"]
)
def test_compare_validates_before_habitat_sim_loads_the_navmesh(tmp_path, as_limit, case):
    pytest.importorskip("habitat_sim")
    root = demo_copy(tmp_path / "demo", case, scenes=[0])
    scene = navmesh_of(root)[: -len(".navmesh")] + ".glb"
    proc = run_bounded(
        ["-m", "habitat_mosnav.sims.compare", scene, "--points", "40", "--pairs", "10"],
        as_limit,
        tmp_path,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert _only_line(proc, navmesh_of(root)).startswith("error: ")
    assert "nan" not in proc.stdout.lower()
