"""Lab sensors of MultiObjectNav-v1 (importing registers them)."""
from habitat_mosnav.sensors.sensors import (  # noqa: F401
    MosNavGoalTextSensor,
    MosNavObjectGoalSensor,
    MosNavTargetCountSensor,
    MosNavTargetModeSensor,
    decode_goal_text,
    encode_goal_text,
)
