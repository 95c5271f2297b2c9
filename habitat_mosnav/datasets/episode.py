"""Episode and goal classes of MultiObjectNav-v1.

``MultiObjectGoal`` subclasses habitat's ``ObjectGoal`` so habitat's own ObjectNav measures
(``DistanceToGoal`` with ``VIEW_POINTS``, ``Success``, ``SPL``) also work on our episodes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import attr
from habitat.tasks.nav.nav import NavigationEpisode
from habitat.tasks.nav.object_nav_task import ObjectGoal


@attr.s(auto_attribs=True, kw_only=True)
class MultiObjectGoal(ObjectGoal):
    """One target instance. ``position`` is the object's centre; ``navigable_position`` is
    the navigable point used for path lengths (SPEC §4); ``view_points`` (habitat
    ``ObjectViewLocation``) define when the target is near (SPEC §3)."""

    navigable_position: Optional[List[float]] = None
    region_id: Optional[int] = None
    aabb: Optional[Dict[str, List[float]]] = None
    attributes: Dict[str, List[str]] = attr.ib(factory=dict)
    caption: Optional[str] = None

    @property
    def near_points(self) -> List[List[float]]:
        """Points whose geodesic distance decides nearness: the view points, or the
        navigable position for a goal without view points."""
        if self.view_points:
            return [list(vp.agent_state.position) for vp in self.view_points]
        return [list(self.navigable_position)]


@attr.s(auto_attribs=True, kw_only=True)
class SubtaskGoal:
    """One subtask of a ``sequential`` episode (SPEC §11): its own goal and targets. The
    episode's ``goals`` hold every subtask's targets; this names which are this one's."""

    query_id: str
    goal_type: str
    goal_text: str
    target_object_ids: List[int] = attr.ib(factory=list)
    object_category: Optional[str] = None
    #: goal type ``image``: the camera, as ``MultiObjectNavEpisode.image_goal``.
    image_goal: Optional[Dict[str, Any]] = None


@attr.s(auto_attribs=True, kw_only=True)
class MultiObjectNavEpisode(NavigationEpisode):
    """An episode: find 1 (single/any), ``target_count`` (many) or all (all) of ``goals``.

    ``scene_id`` is the scene file path (habitat convention); ``scene_name`` the short id
    (e.g. ``TEEsavR23oF``); ``episode_key`` is ``<split>::<scene_name>::<episode_id>``.
    ``object_category`` is the goal category for the ``objectgoal`` sensor (for an image
    goal, the pictured instance's category).
    """

    target_mode: str = "single"
    target_count: Optional[int] = None
    target_object_ids: List[int] = attr.ib(factory=list)
    goal_text: str = ""
    goal_type: str = "description"
    query_id: str = ""
    object_category: Optional[str] = None
    #: goal type ``image``: the query's camera parameters (``datasets/schema.py``
    #: ``parse_image_goal``); the ``mosnav_goal_image`` sensor renders them at reset.
    image_goal: Optional[Dict[str, Any]] = None
    #: ``target_mode == "sequential"``: the subtasks in order (the other fields describe
    #: the first one); empty in the other modes.
    subtasks: List[SubtaskGoal] = attr.ib(factory=list)
    scene_name: str = ""
    split: str = ""
    episode_key: str = ""

    @property
    def required_target_count(self) -> int:
        if self.target_mode == "many":
            return int(self.target_count)
        if self.target_mode == "all":
            return len(self.target_object_ids)
        return 1

    def summary(self) -> Dict[str, Any]:
        """The logical identity written into result records (no local paths)."""
        return {
            "scene_id": self.scene_name,
            "episode_id": self.episode_id,
            "query_id": self.query_id,
            "target_mode": self.target_mode,
            "goal_type": self.goal_type,
            "target_count": self.target_count,
            "target_object_ids": list(self.target_object_ids),
        }
