"""Fixtures and helpers shared by the test modules.

pytest puts this directory on ``sys.path``, so test modules import these helpers (and
``chat_server``, ``mosnav_fixtures``) by name: ``from conftest import read_records``.

``room_runs``: two small ``mosnav-eval`` runs on the open-room dataset of
tests/mosnav_fixtures.py (CPU simulator, 64x64 RGB-D, ``many`` + ``all`` episodes),
made once per session:

* ``scripted``: :data:`SCRIPT` on ``q0-many-0`` and turning left forever on ``q0-all-0``;
  with ``--save-maps`` and ``--save-video gif``. SCRIPT (start at the origin facing -Z):
  6 steps to (0, 0, -1.5), a false claim (step 7: every chair is >= 1.8 m away), turn
  back, return to the origin, face +X, walk to (1, 0, 0), a true claim of chair 101
  (step 27) and a duplicate (step 28), walk to (3, 0, 0), a true claim of chair 102
  (step 37), FINISH (step 38);
* ``broken``: the same agent raising on ``q0-all-0``, so the run has an error record.
"""

import json
import os
import re
import signal
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # mosnav_fixtures, chat_server

from chat_server import ChatServer, Reply  # noqa: E402
from mosnav_fixtures import write_open_room_dataset  # noqa: E402

# habitat's logger binds its handler to the sys.stderr of the moment habitat is first imported.
# Imported here, under pytest's session-long capture, it never holds a capsys stream that a test
# closes ("Logging error ... I/O operation on closed file" in the next test that logs).
import habitat.core.logging  # noqa: E402,F401

# A non-interactive shell starts a background job with SIGINT ignored (scripts/test_lanes.sh
# runs the 3.9 lane so), and Python then installs no KeyboardInterrupt handler; the signal
# tests, and the commands they start, need the disposition a terminal gives.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Collection order is kept (no slow-first sort): tests that run habitat-sim in their own process
# (test_two_simulators.py) close its EGL context, which breaks the CPU renderer of the tests
# after them in that process; at the end of the order they have no tests after them.


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pytest-xdist is not installed: one process, collection order
    pass
else:
    #: the tests one pytest-xdist worker runs in order, in one scratch directory:
    #: README/docs shell blocks read what an earlier block wrote (``--dist loadgroup``'s
    #: ``xdist_group`` mark does not group under pytest 9)
    IN_ORDER = ("tests/test_docs_code_blocks.py::test_shell_block_runs[",)
    #: modules whose module-scoped fixture costs more than their tests (a dataset built
    #: by mosnav-build, 30 s): one worker runs them all, so the fixture is built once
    WHOLE_MODULES = ("tests/test_build_pipeline.py::", "tests/test_goat_end_to_end.py::")

    class _OneTestAUnitButDocsInOrder(LoadScopeScheduling):
        """pytest-xdist's ``load`` (a test a work unit), except :data:`IN_ORDER` and each of
        :data:`WHOLE_MODULES`, one unit each."""

        def _split_scope(self, nodeid):
            for prefix in IN_ORDER + WHOLE_MODULES:
                if nodeid.startswith(prefix):
                    return prefix
            return nodeid

    def pytest_xdist_make_scheduler(config, log):
        return _OneTestAUnitButDocsInOrder(config, log)


def pytest_configure(config):
    """The Python 3.9 lane (scripts/test_py39.sh) tests the installed wheel: stop at once if
    ``habitat_mosnav`` would come from this source tree instead."""
    if os.environ.get("MOSNAV_TEST_INSTALLED_WHEEL") == "1":
        import habitat_mosnav

        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        source = os.path.join(repo, "habitat_mosnav") + os.sep
        if os.path.abspath(habitat_mosnav.__file__).startswith(source):
            raise pytest.UsageError(
                f"habitat_mosnav comes from the source tree {source}, not the wheel"
            )


#: The API key the ``api_key`` fixture puts in the environment; no output may contain it.
API_KEY = "sk-test-secret-c0ffee-1234"

#: ``mosnav-eval --set`` overrides that drop the RGB and depth sensors (runs that need no pixels).
NO_IMAGES = [
    "--set",
    "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
    "--set",
    "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
]


# ----------------------------------------------------------------------------- datasets
@pytest.fixture(scope="session")
def open_room(tmp_path_factory):
    """``(data_path, scenes_dir)`` of ``mosnav_fixtures.base_documents()`` in an open
    12 m x 12 m room (geodesic = Euclidean); built once per test session, read-only for
    tests (copy it before editing)."""
    return write_open_room_dataset(tmp_path_factory.mktemp("openroom"))


#: The ``sequential`` episodes of the ``sequential_room`` fixture (SPEC §11; the open room's
#: chairs 101 @ x=1, 102 @ x=3, 103 @ x=5 (z=0), table 201 @ (0, 0, 3), no view points).
SEQUENTIAL_EPISODES = [
    {
        "episode_id": "seq-0",
        "query_id": "q0",
        "target_mode": "sequential",
        "target_count": None,
        "target_object_ids": [101, 201, 102],
        "subtasks": [
            {"query_id": "q0", "goal_type": "object", "target_object_ids": [101]},
            {"query_id": "q2", "goal_type": "description", "target_object_ids": [201]},
            {"query_id": "q1", "goal_type": "description", "target_object_ids": [102]},
        ],
        "start_position": [0.0, 0.0, 0.0],
        "start_rotation": [0, 0, 0, 1],
        "info": {},
    },
    {
        "episode_id": "seq-1",
        "query_id": "q2",
        "target_mode": "sequential",
        "target_object_ids": [201, 102, 103],
        "subtasks": [
            {"query_id": "q2", "goal_type": "object", "target_object_ids": [201]},
            {"query_id": "q0", "goal_type": "object", "target_object_ids": [102, 103]},
        ],
        "start_position": [0.0, 0.0, 0.0],
        "start_rotation": [0, 0, 0, 1],
    },
]


@pytest.fixture(scope="session")
def sequential_room(tmp_path_factory, open_room):
    """``(data_path, scenes_dir)``: the open room's documents plus
    :data:`SEQUENTIAL_EPISODES`; read-only for tests."""
    from mosnav_fixtures import write_room_variant

    def edit(docs):
        docs["episodes.json"]["episodes"] += [dict(e) for e in SEQUENTIAL_EPISODES]

    return write_room_variant(tmp_path_factory.mktemp("seqroom"), open_room, edit)


# ----------------------------------------------------------------------------- GOAT-Bench
#: The scenes of :func:`write_goat_split`: two under the scene root, one missing from it.
GOAT_SCENES = {"TEEsavR23oF": "00800", "Abcdefghijk": "00801"}
GOAT_MISSING_SCENE = "Zzzzzzzzzzz"
#: 56 words as goat-bench counts them (spaces + 1): over its 55-word limit.
GOAT_LONG_DESCRIPTION = " ".join(["word"] * 56)


def _goat_instance(category, semantic_id, x, children=(), lang_desc=None, image_goals=None):
    """One GOAT goal instance (goat-bench v1's fields), view points 0.5 m off its centre."""
    return {
        "object_category": category,
        "object_id": f"{category}_{semantic_id}",
        "object_name": f"{category}_{semantic_id}",
        "position": [x, 0.5, -2.0],
        "children_object_categories": list(children),
        "lang_desc": lang_desc,
        "image_goals": list(image_goals or []),
        "object_surface_area": 1.0,
        "view_points": [
            {
                "agent_state": {
                    "position": [x + 0.5, 0.0, -2.0],
                    "rotation": [0, 0.7071, 0, 0.7071],
                },
                "iou": 0.5,
            },
            {
                "agent_state": {
                    "position": [x - 0.5, 0.0, -2.0],
                    "rotation": [0, -0.7071, 0, 0.7071],
                },
                "iou": 0.25,
            },
        ],
    }


def goat_documents():
    """``{scene: content document}`` of a small GOAT-Bench v1 split.

    TEEsavR23oF: chairs 1, 2, 3 (children ``stool``: stool 7), sofa 20, plant 14 (two
    image goals: [H, W] = [480, 640] and [512, 384]) and plant 15 (a 56-word description).
    Episode 0: chair object, plant_14 description, plant_14 image 1, plant_15 description
    (over 55 words), sofa object. Episode 1: plant_14 image 1 twice (goat-bench issue #34),
    chair object naming chair_1. Abcdefghijk: bed 3, one object episode. Zzzzzzzzzzz: not
    under the scene root."""
    sid = "TEEsavR23oF"
    images = [
        {
            "position": [1.0, 1.3, 0.0],
            "rotation": [0, 0, 0, 1],
            "hfov": 90,
            "image_dimensions": [480, 640],
            "frame_coverage": 0.3,
            "object_coverage": 1.2,
        },
        {
            "position": [2.0, 1.25, 1.0],
            "rotation": [0, 0.3826834, 0, 0.9238795],
            "hfov": 70.5,
            "image_dimensions": [512, 384],
            "frame_coverage": 0.5,
            "object_coverage": 0.9,
        },
    ]
    chair_image = {
        "position": [0.0, 1.3, 0.0],
        "rotation": [0, 1, 0, 0],
        "hfov": 60,
        "image_dimensions": [256, 256],
        "frame_coverage": 0.4,
        "object_coverage": 0.8,
    }
    goals = {
        f"{sid}.basis.glb_chair": [
            _goat_instance("chair", 1, 0.0, children=["stool"]),
            _goat_instance("chair", 2, 1.0, children=["stool"], image_goals=[chair_image]),
            _goat_instance("chair", 3, 2.0, children=["stool"]),
        ],
        f"{sid}.basis.glb_stool": [_goat_instance("stool", 7, 3.0)],
        f"{sid}.basis.glb_sofa": [_goat_instance("sofa", 20, 4.0)],
        f"{sid}.basis.glb_plant": [
            _goat_instance(
                "plant", 14, 5.0, lang_desc="The green plant by the window.", image_goals=images
            ),
            _goat_instance("plant", 15, 6.0, lang_desc=GOAT_LONG_DESCRIPTION),
        ],
    }

    def episode(scene, folder, tasks, x):
        return {
            "episode_id": "0",
            "scene_id": f"hm3d/val//{folder}-{scene}/{scene}.basis.glb",
            "scene_dataset_config": "./data/scene_datasets/hm3d/hm3d_annotated_basis.scene_dataset_config.json",
            "start_position": [x, 0.0, 1.0],
            "start_rotation": [0, 0, 0, 1],
            "info": {"geodesic_distance": 3.0},
            "goals": [],
            "object_category": tasks[0][0],
            "tasks": tasks,
        }

    docs = {
        sid: {
            "episodes": [
                episode(
                    sid,
                    "00800",
                    [
                        ["chair", "object", None],
                        ["plant", "description", "plant_14"],
                        ["plant", "image", "plant_14", 1],
                        ["plant", "description", "plant_15"],
                        ["sofa", "object", None],
                    ],
                    0.25,
                ),
                episode(
                    sid,
                    "00800",
                    [
                        ["plant", "image", "plant_14", 1],
                        ["plant", "image", "plant_14", 1],
                        ["chair", "object", "chair_1"],
                    ],
                    -0.75,
                ),
            ],
            "goals": goals,
        },
        "Abcdefghijk": {
            "episodes": [episode("Abcdefghijk", "00801", [["bed", "object", None]], 0.0)],
            "goals": {"Abcdefghijk.basis.glb_bed": [_goat_instance("bed", 3, 1.0)]},
        },
        GOAT_MISSING_SCENE: {
            "episodes": [episode(GOAT_MISSING_SCENE, "00802", [["bed", "object", None]], 0.0)],
            "goals": {f"{GOAT_MISSING_SCENE}.basis.glb_bed": [_goat_instance("bed", 1, 1.0)]},
        },
    }
    return docs


def write_gz_json(path, doc):
    """``doc`` as gzip-compressed JSON (GOAT-Bench's file format)."""
    import gzip

    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with gzip.open(str(path), "wt", encoding="utf-8") as f:
        json.dump(doc, f)


def write_goat_split(root, docs=None, split="val_seen"):
    """``(split_dir, scene_root)``: GOAT-Bench v1's layout (``<split>/<split>.json.gz`` with
    no episodes, ``<split>/content/<scene>.json.gz``) of ``docs`` (default
    :func:`goat_documents`), and an HM3D v0.2 scene root (``<NNNNN-id>/<id>.basis.glb``,
    empty placeholder files) holding :data:`GOAT_SCENES`."""
    split_dir = os.path.join(str(root), "goat", split)
    write_gz_json(os.path.join(split_dir, f"{split}.json.gz"), {"episodes": []})
    for scene, doc in (goat_documents() if docs is None else docs).items():
        write_gz_json(os.path.join(split_dir, "content", f"{scene}.json.gz"), doc)
    scene_root = os.path.join(str(root), "hm3d", "val")
    for scene, prefix in GOAT_SCENES.items():
        folder = os.path.join(scene_root, f"{prefix}-{scene}")
        os.makedirs(folder, exist_ok=True)
        for ext in (".basis.glb", ".basis.navmesh"):
            open(os.path.join(folder, scene + ext), "wb").close()
    return split_dir, scene_root


@pytest.fixture
def goat_split(tmp_path):
    """``(split_dir, scene_root)`` of :func:`write_goat_split` in this test's tmp_path."""
    return write_goat_split(tmp_path)


# ----------------------------------------------------------------------------- mosnav-eval
def room_args(room, *extra):
    """``mosnav-eval`` arguments for a ``(data_path, scenes_dir)`` dataset, without the space
    oracle and the progress bar, followed by ``extra``."""
    data, scenes = room
    return [
        "--dataset-dir",
        data,
        "--scene-root",
        scenes,
        "--space-coverage-samples",
        "0",
        "--no-progress",
        *extra,
    ]


def api_agent_args(server, *extra):
    """``--agent api`` against the local chat ``server``, with fast retries."""
    return [
        "--agent",
        "api",
        "--api-base",
        server.api_base,
        "--model",
        "m",
        "--api-backoff",
        "0.01",
        "--api-retries",
        "1",
        "--api-timeout",
        "10",
        *extra,
    ]


def read_records(out, rank=None):
    """The records of ``<out>/rank_<rank>/episodes.jsonl``; every rank's, in rank order,
    when ``rank`` is None."""
    out = str(out)
    ranks = (
        [f"rank_{rank:05d}"]
        if rank is not None
        else sorted(name for name in os.listdir(out) if name.startswith("rank_"))
    )
    recs = []
    for name in ranks:
        with open(os.path.join(out, name, "episodes.jsonl")) as f:
            recs += [json.loads(line) for line in f]
    return recs


def read_summary(out):
    with open(os.path.join(str(out), "summary.json")) as f:
        return json.load(f)


def sequential_record_parts(subtasks, ended_by_agent=True):
    """``(metrics, subtask_metrics)`` of a made-up ``sequential`` record as the evaluator
    writes them (SPEC §11): ``subtasks`` are ``(goal_type, success, d_i, p_i)``; GOAT-Bench's
    scalars (metrics/goat.py) with success = task_success and spl = composite_spl (the
    other SPEC §4 fields absent: null), the lists in ``subtask_metrics``."""
    from habitat_mosnav.metrics.goat import GOAT_LIST_FIELDS, SubtaskOutcome, goat_metrics

    outcomes = [SubtaskOutcome(t, s, d, p) for t, s, d, p in subtasks]
    goat = goat_metrics(outcomes, ended_by_agent)
    metrics = {k: v for k, v in goat.items() if k not in GOAT_LIST_FIELDS}
    metrics.update(success=goat["task_success"], spl=goat["composite_spl"])
    subtask_metrics = {k: goat[k] for k in GOAT_LIST_FIELDS}
    subtask_metrics["goal_types"] = [t for t, _, _, _ in subtasks]
    return metrics, subtask_metrics


def write_records_run(out, episodes, sequential=()):
    """A complete one-rank run of made-up records with its summary.json: ``episodes`` are
    ``(target_mode, goal_type, success)``; f1 = success, spl_multi = spl = 0.5 * success.
    ``sequential``: ``(subtasks, ended_by_agent)`` of :func:`sequential_record_parts`, one
    ``sequential`` episode each, written after ``episodes`` (goal_type: the first subtask's)."""
    from habitat_mosnav.evaluation.rank_files import RankWriter
    from habitat_mosnav.evaluation.records import make_record
    from habitat_mosnav.evaluation.summary import summarize, write_summary

    out = str(out)
    with RankWriter(out, rank=0) as w:
        for i, (mode, goal_type, success) in enumerate(episodes):
            key = f"val::scene::q{i:04d}-{mode}-0"
            episode = {"scene_id": "scene", "episode_id": f"q{i:04d}-{mode}-0"}
            episode.update(target_mode=mode, goal_type=goal_type, max_steps=100)
            metrics = {"success": success, "f1": success, "spl_multi": 0.5 * success}
            metrics["spl"] = metrics["spl_multi"]
            w.write(
                make_record(
                    episode_key=key,
                    episode_index=i,
                    rank=0,
                    seed=i,
                    episode=episode,
                    terminated_by="finish",
                    metrics=metrics,
                )
            )
        for j, (subtasks, ended) in enumerate(sequential):
            i = len(episodes) + j
            key = f"val::scene::g{i:04d}-sequential-0"
            episode = {"scene_id": "scene", "episode_id": f"g{i:04d}-sequential-0"}
            episode.update(target_mode="sequential", goal_type=subtasks[0][0], max_steps=500)
            metrics, subtask_metrics = sequential_record_parts(subtasks, ended)
            record = make_record(
                episode_key=key,
                episode_index=i,
                rank=0,
                seed=i,
                episode=episode,
                terminated_by="finish" if ended else "max_steps",
                metrics=metrics,
            )
            record["subtask_metrics"] = subtask_metrics
            w.write(record)
        w.write_done(expected_count=len(episodes) + len(sequential))
    write_summary(out, summarize(out))
    return out


# ----------------------------------------------------------------------------- API agent
@pytest.fixture
def server():
    """A local scripted chat-completions server (tests/chat_server.py)."""
    with ChatServer() as s:
        yield s


@pytest.fixture
def api_key(monkeypatch, tmp_path):
    """``$OPENAI_API_KEY`` set to :data:`API_KEY`, no ``$OPENAI_BASE_URL``, and the working
    directory a fresh one (no stray ``.env``)."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return API_KEY


def assert_key_nowhere(root, key=API_KEY):
    """``root`` holds files, and none of them contains ``key``."""
    files = [os.path.join(d, n) for d, _, names in os.walk(str(root)) for n in names]
    assert files
    for path in files:
        with open(path, "rb") as f:
            assert key.encode() not in f.read(), path


def scripted_model(reply_for_step):
    """A chat-server responder playing a model: it reads "Actions taken so far: k" from the
    prompt (0 when absent) and answers ``reply_for_step(k)``."""

    def respond(payload):
        text = " ".join(
            p.get("text", "")
            for m in payload["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "text"
        )
        match = re.search(r"Actions taken so far: (\d+)", text)
        return Reply.text(reply_for_step(int(match.group(1)) if match else 0))

    return respond


# ----------------------------------------------------------------------------- room_runs
#: The scripted many episode; action k (from 1) is step k.
SCRIPT = [1] * 6 + [6] + [2] * 6 + [1] * 6 + [2] * 3 + [1] * 4 + [6, 6] + [1] * 8 + [6, 0]
#: (step, claim kind, position after that step) of SCRIPT, by hand.
SCRIPT_CLAIMS = [
    (7, "false", (0.0, 0.0, -1.5)),
    (27, "true", (1.0, 0.0, 0.0)),
    (28, "duplicate", (1.0, 0.0, 0.0)),
    (37, "true", (3.0, 0.0, 0.0)),
]
ROOM_STEPS = 50

_AGENT = textwrap.dedent(f"""
    SCRIPT = {SCRIPT!r}

    class ScriptedRoomAgent:
        '''Plays SCRIPT on q0-many-0 and turns left elsewhere; raises on q0-all-0 when
        BROKEN (an error record).'''
        BROKEN = False

        def reset(self):
            self.i = 0

        def act(self, obs):
            if obs.episode_id == "q0-all-0" and self.BROKEN:
                raise RuntimeError("scripted failure")
            if obs.episode_id == "q0-many-0" and self.i < len(SCRIPT):
                self.i += 1
                return SCRIPT[self.i - 1]
            self.i += 1
            return 2

    class BrokenRoomAgent(ScriptedRoomAgent):
        BROKEN = True
""")


#: ``room_runs`` flags: many + all, ROOM_STEPS steps, 64x64 RGB-D.
_SENSORS = "habitat.simulator.agents.main_agent.sim_sensors"
ROOM_RUN_ARGS = [
    "--target-modes",
    "many,all",
    "--max-steps",
    str(ROOM_STEPS),
    "--set",
    f"{_SENSORS}.rgb_sensor.width=64",
    "--set",
    f"{_SENSORS}.rgb_sensor.height=64",
    "--set",
    f"{_SENSORS}.depth_sensor.width=64",
    "--set",
    f"{_SENSORS}.depth_sensor.height=64",
]


@pytest.fixture(scope="session")
def room_runs(tmp_path_factory, open_room):
    """``{"data", "scenes", "agent_file", "scripted", "broken"}`` (paths)."""
    from habitat_mosnav.evaluation.cli import main

    root = tmp_path_factory.mktemp("room_runs")
    data, scenes = open_room
    agent_file = root / "room_agent.py"
    agent_file.write_text(_AGENT)
    runs = {"data": data, "scenes": scenes, "agent_file": str(agent_file)}
    for name, cls, extra in (
        ("scripted", "ScriptedRoomAgent", ["--save-maps", "--save-video", "gif"]),
        ("broken", "BrokenRoomAgent", []),
    ):
        out = str(root / name)
        rc = main(
            [
                "--agent",
                f"{agent_file}:{cls}",
                "--output-dir",
                out,
                *room_args((data, scenes), *ROOM_RUN_ARGS, *extra),
            ]
        )
        assert rc == 0, f"mosnav-eval {name} exited {rc}"
        runs[name] = out
    return runs


# ----------------------------------------------------------------------------- CPU simulator grids
@pytest.fixture(scope="session")
def box_grid(tmp_path_factory):
    """``box_grid(name, boxes, radius=0.1)``: the NavGrid (agent height 1.5, max climb 0.2)
    of a scene of boxes (``habitat_mosnav.sims.toy_scenes``), built once per session per
    name; read-only for tests."""
    from habitat_mosnav.sims import toy_scenes as ts
    from habitat_mosnav.sims.geometry import load_mesh
    from habitat_mosnav.sims.navgrid import AgentShape, NavGrid

    root = tmp_path_factory.mktemp("boxgrids")
    built = {}

    def make(name, boxes, radius=0.1):
        key = (name, radius)
        if key not in built:
            glb = ts.export_boxes(str(root / f"{name}.glb"), boxes)
            built[key] = NavGrid(
                load_mesh(glb, "z").triangles, AgentShape(1.5, radius, 0.2, 45.0), 0.05
            )
        return built[key]

    return make


# ----------------------------------------------------------------------------- headless browser
def chromium():
    """Debian's chromium (``make test`` installs it through scripts/ensure_chromium.sh)."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no chromium on PATH: run scripts/ensure_chromium.sh (make test does)")


def probe_page(page, script, pre_id, width=1280):
    """``page`` (an HTML file) with ``script`` before ``</body>``, laid out at ``width`` px
    in headless chromium (a copy beside it, so relative links resolve): (the JSON the
    script wrote into ``<pre id=pre_id>``, the DOM)."""
    import html
    import subprocess

    probe = os.path.join(os.path.dirname(str(page)), "probe.html")
    with open(str(page), encoding="utf-8") as f:
        text = f.read()
    with open(probe, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", script + "</body>"))
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        + ["--disable-dev-shm-usage", f"--window-size={width},900", "--virtual-time-budget=5000"]
        + ["--dump-dom", "file://" + probe],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    match = re.search(f'<pre id="{pre_id}">(.*?)</pre>', dom, re.S)
    assert match, "the probe script did not run"
    return json.loads(html.unescape(match.group(1))), dom


# ----------------------------------------------------------------------------- habitat configs
def room_overrides(room, max_steps, *extra):
    """Hydra overrides that read a ``(data_path, scenes_dir)`` dataset (every target mode,
    ``max_steps`` per episode, no space oracle), followed by ``extra``."""
    data, scenes = room
    return [
        f"habitat.dataset.data_path={data}",
        f"habitat.dataset.scenes_dir={scenes}",
        "habitat.dataset.target_modes=[]",
        f"habitat.environment.max_episode_steps={max_steps}",
        "habitat.task.mosnav_space_coverage_samples=0",
        *extra,
    ]


def sensor_sizes(rgb, depth):
    """Overrides that make the RGB camera ``rgb`` and the depth camera ``depth`` pixels square."""
    return [
        f"{_SENSORS}.{sensor}_sensor.{side}={size}"
        for sensor, size in (("rgb", rgb), ("depth", depth))
        for side in ("width", "height")
    ]


def make_observation(**fields):
    """An :class:`~habitat_mosnav.api.Observation` of a 4x4 RGB-D description goal (many, 2
    targets, step 0 of 10), its fields replaced by ``fields``."""
    import numpy as np

    from habitat_mosnav.api import Observation

    base = dict(
        rgb=np.zeros((4, 4, 3), np.uint8),
        depth=np.ones((4, 4), np.float32),
        goal_text="Find chairs.",
        goal_embedding=None,
        goal_image=None,
        goal_type="description",
        subtask_type="description",
        target_mode="many",
        target_count=2,
        episode_id="e0",
        scene_id="s0",
        step_count=0,
        gps=np.zeros(2, np.float32),
        compass=0.0,
        max_steps=10,
        task_prompt="PROMPT",
        previous_action=None,
        extras={},
    )
    return Observation(**dict(base, **fields))


#: ``mosnav-eval --target-modes`` of every mode
ALL_MODES = ("--target-modes", "single,any,many,all")
#: the checkout's root: first on a child process's ``PYTHONPATH``
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spawn_eval(cwd, *args, env=None):
    """``python -m habitat_mosnav.eval *args`` as its own process in ``cwd`` (a warm child:
    tests/warm_runner.py; its own signals and exit status), this checkout first on its path,
    ``env`` added to its environment; stdout and stderr are text pipes."""
    import subprocess

    import warm_runner

    return warm_runner.popen(
        [sys.executable, "-m", "habitat_mosnav.eval", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(cwd),
        env={**os.environ, "PYTHONPATH": REPO, **(env or {})},
    )


#: what the dataset builder's chat client reads from the environment (dataset_building/llm.py)
CHAT_ENV_VARS = (
    "MOSNAV_API_KEY",
    "OPENAI_API_KEY",
    "MOSNAV_API_BASE",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "MOSNAV_VLM_MODEL",
    "MOSNAV_LLM_MODEL",
    "OPENAI_MODEL",
)


def clear_chat_env(monkeypatch):
    """No chat setting comes from the environment: the test's ``.env`` decides."""
    for name in CHAT_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


#: ``mosnav-eval`` flags of a run of one 3-step episode
ONE_SHORT_EPISODE = ("--num-episodes", "1", "--max-steps", "3")
