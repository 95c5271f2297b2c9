"""CPU simulator backend ``MosNavMeshSim-v0`` (mesh navigability, exact
geodesics, sliding motion, moderngl rendering). Importing registers it with habitat."""

import habitat  # noqa: F401,I001  (first: importing habitat registers the plugin)
from habitat_mosnav.sims.mosnav_sim import MosNavMeshSim, clear_scene_cache, get_scene
from habitat_mosnav.sims.pathfinder import MultiGoalShortestPath, PathFinder, ShortestPath

__all__ = [
    "MosNavMeshSim",
    "ShortestPath",
    "MultiGoalShortestPath",
    "PathFinder",
    "get_scene",
    "clear_scene_cache",
]
