"""The agent's pose: quaternion helpers and the episode-start frame (SPEC §7 gps/compass).

numpy only, so the rollout, the agents and the baselines share it without importing each
other (or habitat). The three lines of quaternion algebra are written out on purpose:
numpy-quaternion (which the simulators use) imports scipy, 0.76 s here against numpy's
0.07 s, and every agent imports this module.
"""

from __future__ import annotations

import math
from typing import Dict, List, Sequence

import numpy as np

__all__ = ["agent_pose", "quat_xyzw", "rotate_vector", "start_frame_pose", "wrap_angle", "yaw_of"]


def quat_xyzw(q) -> np.ndarray:
    """``[x, y, z, w]`` of an ``np.quaternion``, a magnum-like object or a 4-sequence."""
    if hasattr(q, "imag") and hasattr(q, "real") and not isinstance(q, np.ndarray):
        imag = np.asarray(q.imag, dtype=np.float64).reshape(-1)
        if imag.size == 3:
            return np.array([imag[0], imag[1], imag[2], float(q.real)], dtype=np.float64)
    if hasattr(q, "components"):  # numpy-quaternion: (w, x, y, z)
        w, x, y, z = (float(c) for c in q.components)
        return np.array([x, y, z, w], dtype=np.float64)
    arr = np.asarray(q, dtype=np.float64).reshape(-1)
    if arr.size != 4:
        raise ValueError(f"rotation must have 4 components [x, y, z, w], got {arr.size}")
    return arr


def rotate_vector(q_xyzw: np.ndarray, v: Sequence[float]) -> np.ndarray:
    """Rotate ``v`` by the unit quaternion ``[x, y, z, w]``."""
    x, y, z, w = q_xyzw
    u = np.array([x, y, z])
    v = np.asarray(v, dtype=np.float64)
    return 2.0 * np.dot(u, v) * u + (w * w - np.dot(u, u)) * v + 2.0 * w * np.cross(u, v)


def _conj(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def yaw_of(q) -> float:
    """Heading about +Y in radians: 0 facing −Z, positive turning left (habitat's compass)."""
    f = rotate_vector(quat_xyzw(q), (0.0, 0.0, -1.0))
    return math.atan2(-f[0], -f[2])


def wrap_angle(angle: float) -> float:
    """``angle`` wrapped to [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def start_frame_pose(position, rotation, start_position, start_rotation):
    """(gps, compass): the agent's x/z displacement expressed in the episode-start frame
    (x right, z backward, as habitat's axes at the start pose) and its heading change."""
    q0 = quat_xyzw(start_rotation)
    q0 = q0 / (np.linalg.norm(q0) or 1.0)
    d = np.asarray(position, dtype=np.float64) - np.asarray(start_position, dtype=np.float64)
    local = rotate_vector(_conj(q0), d)
    gps = np.array([local[0], local[2]], dtype=np.float32)
    compass = wrap_angle(yaw_of(rotation) - yaw_of(q0))
    return gps, float(compass)


def agent_pose(env) -> Dict[str, List[float]]:
    """``{"position": [x, y, z], "rotation": [x, y, z, w]}`` of the agent, JSON-ready."""
    state = env.sim.get_agent_state()
    pos = [float(c) for c in np.asarray(state.position, dtype=np.float64).reshape(-1)[:3]]
    rot = [float(c) for c in quat_xyzw(state.rotation)]
    return {"position": pos, "rotation": rot}
