"""Top-down maps and videos of an evaluated episode (``--save-maps``, ``--save-video``,
``python -m habitat_mosnav.evaluation.maps``) on the open room of tests/conftest.py.

Expected pixels are computed with habitat's ``maps.to_grid`` on the simulator's own
pathfinder; expected positions and claim kinds by hand from the script (conftest.py)."""

import json
import os

import cv2
import imageio
import numpy as np
import pytest

import habitat
import habitat_mosnav
from habitat.utils.visualizations import maps

from conftest import ONE_SHORT_EPISODE, SCRIPT, SCRIPT_CLAIMS, read_records
from habitat_mosnav.evaluation.maps import (
    CLAIM_COLORS,
    FINISH_COLOR,
    LEGEND_WIDTH,
    OUTCOME_COLORS,
    SCALE_BAR_METERS,
    START_COLOR,
    read_map_info,
)
from habitat_mosnav.evaluation.maps import main as maps_main

MANY = "val::testScene01::q0-many-0"
STEM = "val__testScene01__q0-many-0"
ALL_STEM = "val__testScene01__q0-all-0"


def _records(out):
    return {r["episode_key"]: r for r in read_records(out)}


@pytest.fixture(scope="module")
def pathfinder(room_runs):
    """The room scene's pathfinder (a habitat.Env on the same dataset)."""
    cfg = habitat_mosnav.get_config(
        "benchmark/nav/mosnav/mos_demo.yaml",
        [
            f"habitat.dataset.data_path={room_runs['data']}",
            f"habitat.dataset.scenes_dir={room_runs['scenes']}",
            "habitat.task.mosnav_space_coverage_samples=0",
        ],
    )
    env = habitat.Env(cfg.habitat)
    env.reset()
    yield env.sim.pathfinder
    env.close()


def _viridis(fraction):
    bgr = cv2.applyColorMap(np.array([[round(255 * fraction)]], np.uint8), cv2.COLORMAP_VIRIDIS)[
        0, 0
    ]
    return tuple(int(c) for c in bgr[::-1])


def test_records_keep_compact_positions_of_every_step(room_runs):
    rec = _records(room_runs["scripted"])[MANY]
    pos = rec["positions"]
    assert rec["steps_taken"] == len(SCRIPT) and len(pos) == len(SCRIPT) + 1
    assert pos[0] == [0.0, 0.0, 0.0]
    for step, _kind, where in SCRIPT_CLAIMS:
        assert pos[step] == pytest.approx(list(where), abs=2e-3)
    assert pos[-1] == pytest.approx(rec["final_agent_state"]["position"], abs=1e-3)
    # millimetres: at most 3 decimals, so about 25 bytes a step
    assert all(round(v, 3) == v for p in pos for v in p)
    assert len(json.dumps(pos, separators=(",", ":"))) <= 26 * len(pos)
    kinds = [
        ("true" if e["is_true_positive"] else "duplicate" if e["duplicate_targets"] else "false")
        for e in rec["report_events"]
    ]
    assert [(e["step"], k) for e, k in zip(rec["report_events"], kinds)] == [
        (s, k) for s, k, _ in SCRIPT_CLAIMS
    ]


def test_saved_map_shows_trajectory_on_navigable_area_claims_and_finish(room_runs, pathfinder):
    path = os.path.join(room_runs["scripted"], "maps", STEM + ".png")
    img = imageio.imread(path)[..., :3]
    info = read_map_info(path)
    h, w = info["map_shape"]
    m = info["margin_px"]
    assert m == int(np.ceil(0.75 / info["meters_per_pixel"]))  # the default margin of 0.75 m
    codes = maps.get_topdown_map(pathfinder, 0.0, meters_per_pixel=info["meters_per_pixel"])
    assert codes.shape == (h, w)
    codes = np.pad(codes, m, constant_values=maps.MAP_INVALID_POINT)
    h, w = h + 2 * m, w + 2 * m
    assert img.shape[1] == w + LEGEND_WIDTH and img.shape[0] >= h
    legend = img[:, w:]
    assert (legend < 128).any(axis=2).mean() > 0.02  # text and swatches drawn

    def px(p):
        r, c = maps.to_grid(p[2], p[0], (h - 2 * m, w - 2 * m), pathfinder=pathfinder)
        return r + m, c + m

    rec = _records(room_runs["scripted"])[MANY]
    pos = rec["positions"]
    n = len(pos) - 1
    # A point on the walk from x=1 to x=3 (steps 29..36): its segment's time colour.
    for k in (31, 33):
        r, c = px(pos[k])
        assert codes[r, c] == maps.MAP_VALID_POINT
        got = tuple(int(v) for v in img[r, c])
        assert got in {_viridis(k / n), _viridis((k + 1) / n)}, (k, got)
    # Every trajectory-coloured pixel of the map lies on the navigable area (or its border).
    palette = {_viridis(k / n) for k in range(1, n + 1)}
    area = img[:h, :w].reshape(-1, 3)
    is_traj = np.array([tuple(int(v) for v in p) in palette for p in area]).reshape(h, w)
    assert is_traj.sum() > 50
    assert (codes[is_traj] != maps.MAP_INVALID_POINT).mean() >= 0.99
    # Claim markers: a lone claim is a dot at its spot; the true claim (27) and the
    # duplicate (28) at one spot are spread on a ring around it, both visible, and counted.
    for step, kind, where in SCRIPT_CLAIMS:
        if step in (27, 28):
            continue
        r, c = px(where)
        assert tuple(int(v) for v in img[r, c]) == CLAIM_COLORS[kind], (step, kind)
    r, c = px((1.0, 0.0, 0.0))
    patch = img[r - 20 : r + 21, c - 20 : c + 21].reshape(-1, 3)
    for kind in ("true", "duplicate"):
        assert (patch == np.array(CLAIM_COLORS[kind])).all(axis=1).sum() >= 20, kind
    assert [(g["row"], g["col"], g["kinds"]) for g in info["claim_groups"]] == [
        (*px((0.0, 0.0, -1.5)), ["false"]),
        (r, c, ["true", "duplicate"]),
        (*px((3.0, 0.0, 0.0)), ["true"]),
    ]
    # FINISH: a black square outline around the end point, not at its centre.
    r, c = px(pos[-1])
    ring = img[r - 12 : r + 13, c - 12 : c + 13].reshape(-1, 3)
    assert (ring == np.array(FINISH_COLOR)).all(axis=1).sum() >= 20
    # Nothing was claimed where the agent never went: no claim colour far from the claims.
    far = img[
        px((-3.0, 0, 3.0))[0] - 5 : px((-3.0, 0, 3.0))[0] + 5,
        px((-3.0, 0, 3.0))[1] - 5 : px((-3.0, 0, 3.0))[1] + 5,
    ].reshape(-1, 3)
    for color in CLAIM_COLORS.values():
        assert not (far == np.array(color)).all(axis=1).any()


def _is(pixels, color):
    return (pixels.reshape(-1, 3) == np.array(color)).all(axis=1)


def test_map_header_says_success_or_failure_with_goal_legend_and_scale_bar(room_runs, pathfinder):
    success = os.path.join(room_runs["scripted"], "maps", STEM + ".png")
    failure = os.path.join(room_runs["scripted"], "maps", ALL_STEM + ".png")
    for path, outcome, end in (
        (success, "success", "FINISH at step 38 of 50"),
        (failure, "failure", "max steps reached at step 50 of 50"),
    ):
        img, info = imageio.imread(path)[..., :3], read_map_info(path)
        assert info["outcome"] == outcome and info["header"][:2] == [outcome.upper(), end]
        assert info["goal_text"] == "Find the chairs."
        assert 'goal: "Find the chairs."' in info["header"]
        (r0, r1), (c0, c1) = info["banner"]["rows"], info["banner"]["cols"]
        assert c0 == img.shape[1] - LEGEND_WIDTH and c1 == img.shape[1]
        assert _is(img[r0:r1, c0:c1], OUTCOME_COLORS[outcome]).mean() > 0.7  # the banner's colour
        assert "start (white tick: heading)" in info["legend"] and "end: FINISH" in info["legend"]
        # the scale bar: solid black over exactly meters / meters_per_pixel pixels, in the legend
        bar = info["scale_bar"]
        (r0, r1), (c0, c1) = bar["rows"], bar["cols"]
        assert bar["meters"] in SCALE_BAR_METERS and c0 >= img.shape[1] - LEGEND_WIDTH
        assert c1 - c0 == bar["pixels"] == round(bar["meters"] / info["meters_per_pixel"])
        assert _is(img[r0:r1, c0:c1], (0, 0, 0)).all()
        assert not _is(img[r0:r1, c1 + 2 : c1 + 4], (0, 0, 0)).any()  # it ends there
    assert read_map_info(success)["header"][2] == "found 2 of 2 required"
    # the start marker (not the agent sprite) at the start, its white tick toward -Z, where
    # the script walks first
    img, info = imageio.imread(success)[..., :3], read_map_info(success)
    h, w = info["map_shape"]
    m = info["margin_px"]
    r, c = maps.to_grid(0.0, 0.0, (h, w), pathfinder=pathfinder)
    assert info["start_px"] == [r + m, c + m]
    rows, cols = np.mgrid[-6:7, -6:7]
    disc = img[r + m - 6 : r + m + 7, c + m - 6 : c + m + 7]
    assert _is(disc, START_COLOR).sum() >= 30
    white = _is(disc, (255, 255, 255)).reshape(13, 13) & (rows**2 + cols**2 <= 16)
    ahead = maps.to_grid(-1.0, 0.0, (h, w), pathfinder=pathfinder)[0] - r  # -Z: row change
    assert white.sum() >= 3 and np.sign(rows[white].mean()) == np.sign(ahead)


def test_stacked_claims_are_spread_on_a_ring_and_counted():
    from habitat_mosnav.evaluation.maps import claim_groups, draw_claim_group

    false = {"is_true_positive": False, "duplicate_targets": []}
    events = [dict(false, step=3) for _ in range(9)]
    events += [{"step": 4, "is_true_positive": True}, dict(false, step=5)]
    # step 4 is 3 px from step 3's spot (one spot); step 5 far away; steps from 0
    groups = claim_groups([(50, 50)] * 4 + [(52, 47), (90, 90)], events)
    assert [(g["row"], g["col"], g["kinds"]) for g in groups] == [
        (50, 50, ["false"] * 9 + ["true"]),
        (90, 90, ["false"]),
    ]
    apart = claim_groups([(0, 0), (0, 9)], [dict(false, step=0), dict(false, step=1)])
    assert len(apart) == 2  # 9 px apart: two dots that do not hide each other
    img = np.full((120, 120, 3), 255, np.uint8)
    draw_claim_group(img, groups[0])
    for kind, n in (("false", 9), ("true", 1)):
        mask = _is(img, CLAIM_COLORS[kind]).reshape(120, 120).astype(np.uint8)
        assert cv2.connectedComponents(mask)[0] - 1 == n, kind  # every dot separate, none hidden
    assert not _is(img[45:56, 45:56], CLAIM_COLORS["false"]).any()  # spread off the spot
    assert (img[22:40, 72:110] < 100).all(axis=2).sum() > 15  # "x10" beside the ring (radius 18)


def test_maps_from_an_existing_run_match_the_saved_ones(room_runs, tmp_path, capsys):
    data, scenes = room_runs["data"], room_runs["scenes"]
    out = str(tmp_path / "maps")
    rc = maps_main(
        [
            room_runs["scripted"],
            "--out",
            out,
            "--no-progress",
            "--set",
            f"habitat.dataset.data_path={data}",
            "--set",
            f"habitat.dataset.scenes_dir={scenes}",
            "--set",
            "habitat.dataset.target_modes=[many,all]",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    names = sorted(os.listdir(out))
    assert names == sorted(os.listdir(os.path.join(room_runs["scripted"], "maps")))
    a = imageio.imread(os.path.join(out, STEM + ".png"))
    b = imageio.imread(os.path.join(room_runs["scripted"], "maps", STEM + ".png"))
    assert np.array_equal(a, b)


def test_maps_of_a_run_with_the_wrong_dataset_is_one_line(room_runs, capsys):
    rc = maps_main([room_runs["scripted"], "--out", "/tmp/unused-maps", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "is not an episode of config" in err[0]


def test_video_has_rgb_depth_and_a_larger_growing_map_with_start_and_agent(room_runs, pathfinder):
    from habitat_mosnav.evaluation.video import LABEL_HEIGHT, MIN_PANEL_HEIGHT

    path = os.path.join(room_runs["scripted"], "videos", STEM + ".gif")
    frames = [np.asarray(f)[..., :3].astype(int) for f in imageio.mimread(path)]
    assert len(frames) == len(SCRIPT) + 1  # the reset frame and one per step
    first, last = frames[0], frames[-1]
    side = MIN_PANEL_HEIGHT  # the 64 px sensors scaled up so the labels fit
    rgb = (slice(LABEL_HEIGHT, LABEL_HEIGHT + side), slice(0, side))
    map_rows = slice(LABEL_HEIGHT, 2 * (LABEL_HEIGHT + side))
    map_first, map_last = first[map_rows, side:], last[map_rows, side:]
    assert map_first.shape[1] >= side  # the map is taller than RGB and at least as wide
    assert np.abs(map_first - map_last).sum() > 0  # the map grew
    assert not np.array_equal(first[rgb], last[rgb])  # the view changed

    def near(img, color, tol=24):
        return (np.abs(img - np.array(color)) <= tol).all(axis=2)

    # habitat's agent sprite covers the start marker at step 0; the marker stays at the
    # start once the agent has left
    assert near(map_first, START_COLOR).sum() < 5 and near(map_last, START_COLOR).sum() >= 20


def test_video_frame_labels_its_panels_and_colours_depth_over_the_sensor_range():
    from habitat_mosnav.evaluation.video import (
        DEPTH_BAR_HEIGHT,
        LABEL_HEIGHT,
        MIN_PANEL_HEIGHT,
        compose_frame,
    )

    side = MIN_PANEL_HEIGHT
    depth = np.tile(np.linspace(0.5, 5.0, side, dtype=np.float32), (side, 1))
    depth[:, :10] = 0.0  # no return
    obs = {"rgb": np.full((side, side, 3), 90, np.uint8), "depth": depth}
    top_map = np.full((100, 120, 3), 200, np.uint8)
    episode = type("Ep", (), {"goal_text": "Find the chairs.", "target_mode": "many"})()
    frame = compose_frame(
        obs, episode, 3, 1, 50, top_down_map=top_map, events=[], depth_range=(0.5, 5.0)
    ).astype(int)
    top = 2 * LABEL_HEIGHT + 2 * side + DEPTH_BAR_HEIGHT
    assert frame.shape[0] == top + 40 - (top + 40) % 2
    # labels: light text on the dark strips above RGB, depth and the map
    for rows, cols in (
        (slice(0, LABEL_HEIGHT), slice(0, side)),
        (slice(LABEL_HEIGHT + side, 2 * LABEL_HEIGHT + side), slice(0, side)),
        (slice(0, LABEL_HEIGHT), slice(side, frame.shape[1])),
    ):
        strip = frame[rows, cols]
        assert (strip.min(axis=2) > 180).sum() > 15 and np.median(strip) < 60
    # depth: turbo over [0.5 m, 5 m], black where there is no return
    d0 = 2 * LABEL_HEIGHT + side
    turbo = cv2.applyColorMap(np.arange(256, dtype=np.uint8)[None, :], cv2.COLORMAP_TURBO)[
        0, :, ::-1
    ]
    for col in (40, 100, side - 1):
        t = round(255 * (depth[0, col] - 0.5) / 4.5)
        assert (np.abs(frame[d0 + 5, col] - turbo[t].astype(int)) <= 1).all(), col
    assert (frame[d0 + 5, :10] == 0).all()
    bar = frame[d0 + side : d0 + side + DEPTH_BAR_HEIGHT, :side]
    assert (np.abs(bar[5, 4] - turbo[0].astype(int)) <= 1).all()  # the colour bar starts at 0.5 m
    assert (bar[12:, :40].min(axis=2) > 180).sum() > 10  # "0.5 m" under it
    # the map panel is as tall as the RGB + depth column (resized from 100 rows)
    assert (frame[LABEL_HEIGHT:top, side + 5] == 200).all()


def test_video_caption_names_the_action_and_counts_claims_so_far():
    from habitat_mosnav.evaluation.video import action_name, claims_caption

    events = [
        {"is_true_positive": False, "duplicate_targets": []},
        {"is_true_positive": True},
        {"is_true_positive": True},
    ]
    assert claims_caption(events) == "claims 3 (2 true)"
    assert claims_caption([]) == "claims 0 (0 true)" and claims_caption(None) == ""
    assert [action_name(a) for a in (None, 0, 1, 6, 9)] == [
        "-",
        "FINISH",
        "MOVE_FORWARD",
        "TARGET_FOUND",
        "LEGACY_FINISH",
    ]


def test_live_window_shows_the_same_frames_with_the_growing_map(open_room, monkeypatch, tmp_path):
    from conftest import room_args
    from habitat_mosnav.evaluation import viewer
    from habitat_mosnav.evaluation.cli import main
    from habitat_mosnav.evaluation.video import MIN_PANEL_HEIGHT

    shown = []

    class Window:  # stands in for the OpenCV window (no display here)
        def __init__(self):
            pass

        def show(self, frame):
            shown.append(np.asarray(frame).astype(int))

        def close(self):
            pass

    monkeypatch.setattr(viewer, "check_display", lambda: None)
    monkeypatch.setattr(viewer, "LiveViewer", Window)
    assert (
        main(
            [
                "--agent",
                "random",
                "--render-live",
                *ONE_SHORT_EPISODE,
                "--output-dir",
                str(tmp_path / "live"),
                *room_args(open_room, "--target-modes", "many"),
            ]
        )
        == 0
    )
    assert len(shown) == 4  # the reset frame and one per step
    navigable = maps.colorize_topdown_map(np.array([[maps.MAP_VALID_POINT]], np.uint8))[0, 0]
    for frame in shown:
        panel = frame[:, MIN_PANEL_HEIGHT:]
        assert panel.shape[1] >= MIN_PANEL_HEIGHT  # the map beside RGB + depth
        assert (panel == navigable.astype(int)).all(axis=2).mean() > 0.2  # habitat's navigable area
