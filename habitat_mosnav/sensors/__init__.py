"""Lab sensors of MultiObjectNav-v1 (importing registers them)."""

import habitat  # noqa: F401,I001  (first: importing habitat registers the plugin)
from habitat_mosnav.sensors.sensors import (  # noqa: F401
    MosNavGoalTextSensor,
    MosNavObjectGoalSensor,
    MosNavTargetCountSensor,
    MosNavTargetModeSensor,
    decode_goal_text,
    encode_goal_text,
)
