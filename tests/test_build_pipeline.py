"""Dataset building end to end, offline, on one generated scene: the output validates
against SPEC §6 (the dataset loader's own checks), episodes are reachable, their
``optimal_subset_distance`` is SPEC §4's bound over the dense view points, runs are deterministic and resumable,
and the online ``attributes`` stage works against a local chat-completions server."""

import itertools
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from habitat_mosnav.dataset_building.cli import main as build_main
from habitat_mosnav.dataset_building.common import discover_scenes
from habitat_mosnav.dataset_building.geometry import open_scene
from habitat_mosnav.dataset_building.pipeline import (
    BuildConfig,
    run_all,
    run_attributes,
    run_episodes,
)
from habitat_mosnav.datasets.schema import load_scene_dir
from habitat_mosnav.scenes.generator import generate_scene

FILES = ("goals.json", "queries.json", "episodes.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("build")
    info = generate_scene(str(root / "scenes"), seed=11, index=0)
    cfg = BuildConfig(out=root / "ds", scenes=root / "scenes", offline=True, seed=0, progress=False)
    reports = run_all(cfg)
    return root, info.scene_id, cfg, reports


def _read(root, sid, name):
    return json.loads((root / "ds" / sid / name).read_text())


def test_output_validates_and_covers_modes_and_goal_types(built):
    root, sid, cfg, reports = built
    assert sorted(p.name for p in (root / "ds").iterdir()) == sorted([sid, "categories.json"])
    cats = json.loads((root / "ds" / "categories.json").read_text())  # the dataset-wide vocabulary
    assert cats == sorted({g["category"] for g in _read(root, sid, "goals.json")["goals"]})
    assert sorted(p.name for p in (root / "ds" / sid).iterdir()) == sorted(FILES)
    goals, queries, episodes = load_scene_dir(str(root / "ds" / sid))  # raises on any bad field
    assert len(goals) >= 10
    for g in goals.values():
        assert g["view_points"], g["object_id"]
        assert set(g["attributes"]) == {"color", "material", "feature"}
        for vp in g["view_points"]:
            q = np.asarray(vp["rotation"])
            assert abs(np.linalg.norm(q) - 1) < 1e-4 and q[0] == 0 and q[2] == 0  # yaw only
            assert 0 < vp["iou"] <= 1
    # walls / floors / ceilings are annotated in the scene but never goals
    assert not {"wall", "floor", "ceiling"} & {g["category"] for g in goals.values()}
    raw_queries = _read(root, sid, "queries.json")["queries"]
    assert any(q["pure_category"] for q in raw_queries) and not all(
        q["pure_category"] for q in raw_queries
    )
    for q in raw_queries:
        assert q["instruction"].endswith(".") and q["matched_object_ids"]
        pure = [c["field"] for c in q["query_program"]["where"]] == ["category"]
        assert q["pure_category"] == pure
    modes = Counter(e["target_mode"] for e in episodes)
    assert set(modes) == {"single", "any", "many", "all"}, modes
    ids = [e["episode_id"] for e in episodes]
    assert len(set(ids)) == len(ids)
    for e in episodes:
        n = len(e["target_object_ids"])
        assert e["episode_id"].startswith(f"{e['query_id']}-{e['target_mode']}-")
        assert sorted(queries[e["query_id"]]["matched_object_ids"]) == sorted(
            e["target_object_ids"]
        )
        if e["target_mode"] == "single":
            assert n == 1
        elif e["target_mode"] == "many":
            assert n >= 3 and 2 <= e["target_count"] <= n - 1
        else:
            assert n >= 2


def test_loads_as_multiobjectnav_dataset_in_both_goal_types(built):
    from omegaconf import OmegaConf

    from habitat_mosnav.config.default_structured_configs import MultiObjectNavDatasetConfig
    from habitat_mosnav.datasets.multi_object_nav_dataset import MultiObjectNavDatasetV1

    root, sid, cfg, _ = built
    episodes = _read(root, sid, "episodes.json")["episodes"]
    queries = {q["query_id"]: q for q in _read(root, sid, "queries.json")["queries"]}
    loaded = {}
    for goal_type in ("description", "object"):
        dcfg = OmegaConf.structured(
            MultiObjectNavDatasetConfig(
                data_path=str(root / "ds"), scenes_dir=str(root / "scenes"), goal_type=goal_type
            )
        )
        loaded[goal_type] = MultiObjectNavDatasetV1(dcfg).episodes
    assert len(loaded["description"]) == len(episodes)
    pure = [e for e in episodes if queries[e["query_id"]]["pure_category"]]
    assert 0 < len(loaded["object"]) == len(pure) < len(episodes)
    by_id = {e.episode_id: e for e in loaded["description"]}
    e0 = episodes[0]
    assert by_id[e0["episode_id"]].goal_text == queries[e0["query_id"]]["instruction"]
    for e in loaded["object"]:
        cat = queries[e.query_id]["query_program"]["where"][0]["value"]
        assert e.goal_text == cat


def _bound(start, pair, k):
    """SPEC §4 by brute force: min over k-orders of L_last, L_j = max(s_j, L_i + c_ij)."""
    best = np.inf
    for perm in itertools.permutations(range(len(start)), k):
        length = start[perm[0]]
        for a, b in zip(perm, perm[1:]):
            length = max(start[b], length + pair[a][b])
        best = min(best, length)
    return best


def test_episodes_reachable_and_optimal_distance_is_the_bound_over_view_points(built):
    # Reference: single-point geodesics between every pair of view points (no multi-goal
    # query), legs s_j = g_j(start) - d, c_ij = min over view point pairs - 2d (d = 0.25).
    root, sid, cfg, _ = built
    goals, queries, episodes = load_scene_dir(str(root / "ds" / sid))
    geo = open_scene(discover_scenes(root / "scenes")[0])
    d = 0.25
    try:
        for e in episodes[:6]:
            assert e["info"]["success_distance"] == d
            tgt = e["target_object_ids"]
            vps = [[vp["position"] for vp in goals[t]["view_points"]] for t in tgt]
            g = [min(geo.geodesic(e["start_position"], v) for v in pts) for pts in vps]
            assert np.all(np.isfinite(g)), e["episode_id"]
            np.testing.assert_allclose(g, e["info"]["geodesic_to_targets"], atol=0.05)
            pair = np.array(
                [
                    [
                        0.0
                        if i == j
                        else max(0.0, min(geo.geodesic(u, v) for u in a for v in b) - 2 * d)
                        for j, b in enumerate(vps)
                    ]
                    for i, a in enumerate(vps)
                ]
            )
            assert np.all(np.isfinite(pair)), e["episode_id"]
            k = {"single": 1, "any": 1, "many": e["target_count"], "all": len(tgt)}[
                e["target_mode"]
            ]
            length = _bound([max(0.0, x - d) for x in g], pair, k)
            assert e["info"]["optimal_subset_distance"] == pytest.approx(length, abs=0.05)
            assert 2.0 - 0.05 <= length <= 25.0
            assert min(g) >= 1.5 - 1e-3  # the start is not already next to a target
    finally:
        geo.close()


def test_view_points_are_dense_grid_points_near_the_box(built):
    # SPEC §3: navigable grid points (0.25 m) within 1.0 m (horizontal) of the object's box.
    root, sid, cfg, _ = built
    goals = _read(root, sid, "goals.json")["goals"]
    counts = []
    for g in goals:
        c, size = np.asarray(g["aabb"]["center"]), np.asarray(g["aabb"]["size"])
        lo, hi = c - size / 2, c + size / 2
        pts = np.array([vp["position"] for vp in g["view_points"]])
        counts.append(len(pts))
        dx = np.maximum(np.maximum(lo[0] - pts[:, 0], 0), pts[:, 0] - hi[0])
        dz = np.maximum(np.maximum(lo[2] - pts[:, 2], 0), pts[:, 2] - hi[2])
        assert np.all(np.hypot(dx, dz) <= 1.0 + 1e-3), g["object_id"]
        off = np.abs(pts[:, [0, 2]] / 0.25 - np.round(pts[:, [0, 2]] / 0.25)) * 0.25
        assert np.all(off <= 0.05 + 1e-3), g["object_id"]
        assert len({(round(x, 2), round(z, 2)) for x, _, z in pts}) == len(pts)
    assert np.median(counts) >= 8  # dense: many per object, not a handful of rings


def test_rerun_is_resumed_and_same_seed_is_identical(built, tmp_path):
    root, sid, cfg, _ = built
    before = {n: (root / "ds" / sid / n).read_bytes() for n in FILES}
    reports = run_all(cfg)  # everything already done: skipped, files untouched
    assert all(r.skipped == [sid] and not r.done for r in reports)
    assert {n: (root / "ds" / sid / n).read_bytes() for n in FILES} == before
    # a fresh build with the same seed gives the same bytes
    cfg2 = BuildConfig(
        out=tmp_path / "ds", scenes=root / "scenes", offline=True, seed=0, progress=False
    )
    run_all(cfg2)
    assert {n: (tmp_path / "ds" / sid / n).read_bytes() for n in FILES} == before
    # another seed: other starts
    cfg3 = BuildConfig(
        out=tmp_path / "ds", scenes=root / "scenes", offline=True, seed=1, progress=False
    )
    assert run_episodes(cfg3).done == [sid]
    assert (tmp_path / "ds" / sid / "episodes.json").read_bytes() != before["episodes.json"]


def test_cli_caps_queries_and_episodes_and_show_writes_pngs(built, tmp_path):
    root, sid, cfg, _ = built
    out = tmp_path / "small"
    rc = build_main(
        [
            "all",
            "--scenes",
            str(root / "scenes"),
            "--out",
            str(out),
            "--offline",
            "--max-queries",
            "6",
            "--max-per-group",
            "1",
            "--no-progress",
        ]
    )
    assert rc == 0
    qs = json.loads((out / sid / "queries.json").read_text())["queries"]
    eps = json.loads((out / sid / "episodes.json").read_text())["episodes"]
    assert len(qs) == 6
    groups = Counter(
        (next(q for q in qs if q["query_id"] == e["query_id"])["pure_category"], e["target_mode"])
        for e in eps
    )
    assert max(groups.values()) == 1
    oid = json.loads((out / sid / "goals.json").read_text())["goals"][0]["object_id"]
    rc = build_main(
        [
            "show",
            "--scenes",
            str(root / "scenes"),
            "--out",
            str(out),
            "--no-progress",
            "--object-ids",
            str(oid),
            "--show-dir",
            str(tmp_path / "png"),
        ]
    )
    assert rc == 0
    pngs = sorted((tmp_path / "png" / sid / str(oid)).glob("vp*.png"))
    assert pngs and pngs[0].read_bytes()[:4] == b"\x89PNG"


def test_cli_bad_input_is_one_line_error(built, tmp_path, capsys):
    root, sid, cfg, _ = built
    assert (
        build_main(["extract", "--scenes", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope" in err and "does not exist" in err
    bad = tmp_path / "bad"
    shutil.copytree(root / "ds", bad)
    (bad / sid / "goals.json").write_text(
        '{"schema_version": 1, "scene_id": "%s", "goals": 3}' % sid
    )
    assert build_main(["queries", "--out", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "goals.json" in err and "'goals'" in err
    doc = _read(root, sid, "goals.json")
    del doc["goals"][1]["navigable_position"]
    (bad / sid / "goals.json").write_text(json.dumps(doc))
    assert build_main(["queries", "--out", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    oid = doc["goals"][1]["object_id"]
    assert err.count("\n") == 0 and f"goal {oid}" in err and "navigable_position" in err


def test_online_attributes_stage_against_local_server(built, tmp_path, monkeypatch):
    from conftest import clear_chat_env
    from test_build_attributes import KEY, build_server

    root, sid, cfg, _ = built
    out = tmp_path / "ds"
    shutil.copytree(root / "ds", out)
    reply = (
        '{"color": ["grey"], "material": ["timber"], "feature": ["shiny"], "caption": "a thing"}'
    )
    env = tmp_path / ".env"
    with build_server(default=reply, script=[(200, "garbage"), (500, "")]) as srv:
        env.write_text(f"MOSNAV_API_KEY={KEY}\nMOSNAV_API_BASE={srv.api_base}\n")
        clear_chat_env(monkeypatch)
        cfg_online = BuildConfig(
            out=out,
            scenes=root / "scenes",
            work=tmp_path / "work",
            env_file=env,
            progress=False,
            api_overrides={"backoff_s": 0.01},
        )
        report = run_attributes(cfg_online)
        n_goals = len(json.loads((out / sid / "goals.json").read_text())["goals"])
        assert len(srv.chat_requests()) == n_goals + 2  # one malformed reply and one 500 retried
        assert report.counts[sid]["ok"] == n_goals and report.counts[sid]["malformed_replies"] == 1
    goals = json.loads((out / sid / "goals.json").read_text())["goals"]
    assert all(g["attributes"]["material"] == ["timber"] for g in goals)  # raw until normalize
    for p in list(out.rglob("*")) + list((tmp_path / "work").rglob("*")):
        if p.is_file():
            assert KEY not in p.read_text(errors="replace"), p


def test_category_map_drop_list_and_size_limit(built):
    from habitat_mosnav.dataset_building.extract import ExtractOptions, parse_objects

    root, sid, cfg, _ = built
    scene = discover_scenes(root / "scenes")[0]
    base, c0 = parse_objects(scene, ExtractOptions())
    cats = Counter(o.category for o in base)
    assert "wall" not in cats and c0["dropped_category"] > 0
    some = sorted(cats)[0]
    other = sorted(cats)[1]
    objs, c = parse_objects(scene, ExtractOptions(category_map={some: None, other: "thing"}))
    got = Counter(o.category for o in objs)
    assert some not in got and other not in got and got["thing"] == cats[other]
    assert c["dropped_category"] == c0["dropped_category"] + cats[some]
    small, c = parse_objects(scene, ExtractOptions(min_size=1.5))
    assert 0 < len(small) < len(base) and c["dropped_too_small"] == len(base) - len(small)
    assert all(max(o.aabb_max - o.aabb_min) >= 1.5 for o in small)


def test_semantic_txt_errors_name_the_line(tmp_path):
    """The build reads semantic.txt with the scenes' parser; errors are one-line BuildErrors."""
    from habitat_mosnav.dataset_building.common import BuildError
    from habitat_mosnav.dataset_building.semantic import read_annotations

    p = tmp_path / "x.semantic.txt"
    p.write_text('HM3D Semantic Annotations\n1,FF0000,"chair",0\n2,GG0000,"table",1\n')
    with pytest.raises(BuildError, match=r"x\.semantic\.txt:3: color"):
        read_annotations(p)
    p.write_text('HM3D Semantic Annotations\n1,FF0000,"chair",0\n1,00FF00,"table",1\n')
    with pytest.raises(BuildError, match="duplicate id 1"):
        read_annotations(p)
    with pytest.raises(BuildError, match="cannot read semantic annotations"):
        read_annotations(tmp_path / "missing.semantic.txt")
    p.write_text('HM3D Semantic Annotations\n1,ff0000,"Kitchen Chair",0\n')
    (o,) = read_annotations(p)
    assert (o.object_id, o.color_hex, o.raw_category, o.region_id) == (
        1,
        "FF0000",
        "Kitchen Chair",
        0,
    )


def test_up_axis_auto_reads_meta_else_z_up_like_hm3d(built, tmp_path):
    """Generated scenes say up_axis z in their meta file; without one (HM3D) a .glb is Z up;
    a wrong explicit axis puts the objects somewhere else (a floor standing on its edge)."""
    from habitat_mosnav.dataset_building.common import BuildError, scene_files
    from habitat_mosnav.dataset_building.extract import ExtractOptions, parse_objects
    from habitat_mosnav.dataset_building.semantic import resolve_up_axis
    from habitat_mosnav.scenes.io import load_scene_meta

    root, sid, _, _ = built
    src = next((root / "scenes").iterdir())
    scene = scene_files(src)
    assert resolve_up_axis(scene.render_glb) == "z"
    meta = load_scene_meta(str(scene.meta))
    objs, _ = parse_objects(scene, ExtractOptions())
    want = {o["object_id"]: o["aabb"] for o in meta["objects"]}
    for o in objs:  # world-frame AABBs of the meta file, to the generator's rounding
        c, s = np.array(want[o.object_id]["center"]), np.array(want[o.object_id]["size"])
        assert np.allclose(o.aabb_min, c - s / 2, atol=2e-3) and np.allclose(
            o.aabb_max, c + s / 2, atol=2e-3
        )
    # an HM3D-like copy without the meta file: auto still reads it Z up, same objects
    hm3d = tmp_path / src.name
    hm3d.mkdir()
    for f in src.iterdir():
        if not f.name.endswith(".mosnav_meta.json"):
            shutil.copy(f, hm3d / f.name)
    bare = scene_files(hm3d)
    assert bare.meta is None and resolve_up_axis(bare.render_glb) == "z"
    objs2, _ = parse_objects(bare, ExtractOptions())
    assert [o.object_id for o in objs2] == [o.object_id for o in objs]
    assert all(
        np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi) for a, b in zip(objs, objs2)
    )
    # forcing Y up reads the same file wrongly: heights become depths
    wrong, _ = parse_objects(scene, ExtractOptions(up_axis="y"))
    assert min(float(o.aabb_min[1]) for o in wrong) < -0.5
    with pytest.raises(BuildError, match="--up-axis"):
        resolve_up_axis(scene.render_glb, "x")


@pytest.mark.slow
def test_acceptance_eval_runs_the_built_dataset_and_the_oracle_solves_it(built, tmp_path):
    """mosnav-build's output evaluates with mosnav-eval (issue 6's acceptance)."""
    from habitat_mosnav.evaluation.cli import main as eval_main

    root, sid, cfg, _ = built
    out = tmp_path / "eval"
    rc = eval_main(
        [
            "--dataset-dir",
            str(root / "ds"),
            "--scene-root",
            str(root / "scenes"),
            "--agent",
            "oracle",
            "--target-modes",
            "many,all",
            "--episode-limit",
            "6",
            "--space-coverage-samples",
            "0",
            "--output-dir",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["error_episode_count"] == 0
    assert summary["ok_episode_count"] == 6
    assert summary["metrics"]["sr"] == 1.0


def test_view_point_rotation_faces_the_object(built):
    """The stored [x, y, z, w] yaw turns habitat's -Z forward towards the object: seen from
    its best view point, each goal is in the view, horizontally near the image centre."""
    root, sid, cfg, _ = built
    goals = _read(root, sid, "goals.json")["goals"]
    geo = open_scene(discover_scenes(root / "scenes")[0])
    try:
        for g in goals[:8]:
            vp = g["view_points"][0]
            sem = geo.semantic(vp["position"], vp["rotation"])
            cols = np.nonzero(sem == g["object_id"])[1]
            assert len(cols) >= 30, g["object_id"]
            assert abs(cols.mean() - sem.shape[1] / 2) < sem.shape[1] / 4, g["object_id"]
            # turned around, the object is out of sight
            x, y, z, w = vp["rotation"]
            back = [0.0, w, 0.0, -y]  # yaw + 180 degrees
            assert (geo.semantic(vp["position"], back) == g["object_id"]).sum() == 0
    finally:
        geo.close()


def test_extract_takes_view_points_from_objectnav_goals(built, tmp_path, capsys):
    """``mosnav-build extract --objectnav-goals``: the goals ObjectNav lists get its view
    points; a NaN iou in the file is one line naming the file, goal and field (exit 2)."""
    import gzip

    root, sid, cfg, _ = built
    goals = _read(root, sid, "goals.json")["goals"]
    g0 = goals[0]
    vp = {
        "agent_state": {"position": g0["navigable_position"], "rotation": [0, 1, 0, 0]},
        "iou": 0.77,
    }
    onav = tmp_path / "content"
    onav.mkdir()
    doc = {
        "goals_by_category": {
            f"{sid}.basis.glb_{g0['category']}": [
                {
                    "object_id": g0["object_id"],
                    "object_category": g0["category"],
                    "view_points": [vp],
                },
                {"object_id": 99999, "view_points": [vp]},
            ]
        }
    }
    with gzip.open(onav / f"{sid}.json.gz", "wt") as f:
        json.dump(doc, f)
    out = tmp_path / "ds"
    args = [
        "extract",
        "--scenes",
        str(root / "scenes"),
        "--out",
        str(out),
        "--objectnav-goals",
        str(tmp_path),
        "--no-progress",
    ]
    assert build_main(args) == 0
    new = {g["object_id"]: g for g in json.loads((out / sid / "goals.json").read_text())["goals"]}
    assert new[g0["object_id"]]["view_points"] == [
        {"position": g0["navigable_position"], "rotation": [0.0, 1.0, 0.0, 0.0], "iou": 0.77}
    ]
    assert new[goals[1]["object_id"]]["view_points"] == goals[1]["view_points"]  # not listed: ours
    doc["goals_by_category"][f"{sid}.basis.glb_{g0['category']}"][0]["view_points"][0]["iou"] = (
        float("nan")
    )
    with gzip.open(onav / f"{sid}.json.gz", "wt") as f:
        json.dump(doc, f)
    capsys.readouterr()
    assert build_main(args + ["--overwrite"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0
        and f"{sid}.json.gz" in err
        and f"(object {g0['object_id']}) view_points[0]" in err
    )
    assert "field 'iou': expected a finite number, got NaN" in err
