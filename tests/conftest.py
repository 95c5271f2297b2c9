"""Shared fixtures.

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
import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # mosnav_fixtures, chat_server

#: The scripted many episode; action k (from 1) is step k.
SCRIPT = [1] * 6 + [6] + [2] * 6 + [1] * 6 + [2] * 3 + [1] * 4 + [6, 6] + [1] * 8 + [6, 0]
#: (step, claim kind, position after that step) of SCRIPT, by hand.
SCRIPT_CLAIMS = [(7, "false", (0.0, 0.0, -1.5)), (27, "true", (1.0, 0.0, 0.0)),
                 (28, "duplicate", (1.0, 0.0, 0.0)), (37, "true", (3.0, 0.0, 0.0))]
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


def room_args(data, scenes, *extra):
    """``mosnav-eval`` flags for the open room (small sensors, no space oracle)."""
    sensors = "habitat.simulator.agents.main_agent.sim_sensors"
    return ["--dataset-dir", data, "--scene-root", scenes, "--target-modes", "many,all",
            "--max-steps", str(ROOM_STEPS), "--space-coverage-samples", "0", "--no-progress",
            "--set", f"{sensors}.rgb_sensor.width=64", "--set", f"{sensors}.rgb_sensor.height=64",
            "--set", f"{sensors}.depth_sensor.width=64", "--set", f"{sensors}.depth_sensor.height=64",
            *extra]


@pytest.fixture(scope="session")
def room_runs(tmp_path_factory):
    """``{"data", "scenes", "agent_file", "scripted", "broken"}`` (paths)."""
    from habitat_mosnav.evaluation.cli import main
    from mosnav_fixtures import write_open_room_dataset

    root = tmp_path_factory.mktemp("room_runs")
    data, scenes = write_open_room_dataset(root)
    agent_file = root / "room_agent.py"
    agent_file.write_text(_AGENT)
    runs = {"data": data, "scenes": scenes, "agent_file": str(agent_file)}
    for name, cls, extra in (("scripted", "ScriptedRoomAgent", ["--save-maps", "--save-video", "gif"]),
                             ("broken", "BrokenRoomAgent", [])):
        out = str(root / name)
        rc = main(["--agent", f"{agent_file}:{cls}", "--output-dir", out,
                   *room_args(data, scenes, *extra)])
        assert rc == 0, f"mosnav-eval {name} exited {rc}"
        runs[name] = out
    return runs


@pytest.fixture(scope="session")
def open_room(tmp_path_factory):
    """``(data_path, scenes_dir)`` of ``base_documents()`` in an open 12 m room; read-only
    for tests (copy it before editing)."""
    from mosnav_fixtures import write_open_room_dataset

    return write_open_room_dataset(tmp_path_factory.mktemp("open_room"))
