"""A picture from a camera at a world pose, apart from the agent's own sensors.

The goal image of an image goal (``sensors/sensors.py`` ``MosNavGoalImageSensor``) and the
checks that the picture shows its instance render through :func:`render_camera`, on both
simulators: the CPU simulator's ``render_camera`` method, or on habitat-sim a temporary
camera sensor placed at the pose and removed again, as habitat-lab's
``InstanceImageGoalSensor`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: What :func:`render_camera` draws.
CAMERA_KINDS = ("rgb", "depth", "semantic")
_TEMP_UUID = "mosnav_camera_{kind}"


def render_camera(sim: Any, kind: str, position, rotation, hfov, width, height) -> np.ndarray:
    """``rgb``: (H, W, 3) uint8; ``depth``: (H, W) float32 planar metres (0 where nothing
    is hit); ``semantic``: (H, W) int64 object ids. ``position`` is the
    camera's (world, Y up; a sequence of 3), ``rotation`` ``[x, y, z, w]`` (-Z forward),
    ``hfov`` degrees, ``width`` / ``height`` pixels."""
    if kind not in CAMERA_KINDS:
        raise ValueError(
            f"render_camera: kind {kind!r} (expected one of {', '.join(CAMERA_KINDS)})"
        )
    own = getattr(sim, "render_camera", None)
    if own is not None:
        img = own(kind, position, rotation, hfov, width, height)
    else:
        img = _habitat_sim_camera(sim, kind, position, rotation, hfov, width, height)
    img = np.asarray(img)
    if kind == "rgb":
        return np.ascontiguousarray(img[..., :3], dtype=np.uint8)
    if kind == "depth":
        return img.reshape(int(height), int(width)).astype(np.float32)
    return img.reshape(int(height), int(width)).astype(np.int64)


def _habitat_sim_camera(sim, kind, position, rotation, hfov, width, height) -> np.ndarray:
    """habitat-sim: add a pinhole sensor to the agent, set its world pose, draw it, delete it
    (habitat-sim 0.3.3 has ``add_sensor`` but no ``remove_sensor``: the agent's and the
    simulator's sensor tables and the scene node's sensor are undone here)."""
    import habitat_sim
    from habitat.utils.geometry_utils import quaternion_from_coeff

    uuid = _TEMP_UUID.format(kind=kind)
    spec = habitat_sim.CameraSensorSpec()
    spec.uuid = uuid
    spec.sensor_type = {
        "rgb": habitat_sim.SensorType.COLOR,
        "depth": habitat_sim.SensorType.DEPTH,
        "semantic": habitat_sim.SensorType.SEMANTIC,
    }[kind]
    spec.resolution = [int(height), int(width)]
    spec.hfov = float(hfov)
    spec.sensor_subtype = habitat_sim.SensorSubType.PINHOLE
    agent_id = 0
    agent = sim.get_agent(agent_id)
    state = agent.get_state()
    sim.add_sensor(spec, agent_id)
    try:
        agent.set_state(
            habitat_sim.AgentState(
                position=state.position,
                rotation=state.rotation,
                sensor_states={
                    **state.sensor_states,
                    uuid: habitat_sim.SixDOFPose(
                        position=np.asarray(position, np.float32),
                        rotation=quaternion_from_coeff(list(rotation)),
                    ),
                },
            ),
            infer_sensor_states=False,
        )
        sensor = sim._Simulator__sensors[agent_id][uuid]
        sensor.draw_observation()
        return np.array(sensor.get_observation(), copy=True)
    finally:
        sim._Simulator__sensors[agent_id].pop(uuid, None)
        agent._sensors.pop(uuid, None)
        specs = agent.agent_config.sensor_specifications
        agent.agent_config.sensor_specifications = [s for s in specs if s.uuid != uuid]
        habitat_sim.SensorFactory.delete_subtree_sensor(agent.scene_node, uuid)
        agent.set_state(state, infer_sensor_states=False)
