"""The MultiObjectNav-v1 task, its actions and per-episode state (importing registers)."""

import habitat  # noqa: F401,I001  (first: importing habitat registers the plugin)
from habitat_mosnav.tasks.multi_object_nav_task import (  # noqa: F401
    MosNavLookDownAction,
    MosNavLookUpAction,
    MultiObjectNavTask,
    TargetFoundAction,
)
from habitat_mosnav.tasks.state import MosEpisodeState  # noqa: F401
