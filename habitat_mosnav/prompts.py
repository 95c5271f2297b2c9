"""The task prompt given to agents (``Observation.task_prompt``, the legacy ``prompt=``).

This is the single place where the text lives, so that every agent (VLM, human, user code)
reads the same task description. The prompt never says how many targets remain, and in
``many`` it states the required count only (SPEC §1).
"""

from __future__ import annotations

from typing import Optional

from habitat_mosnav.api import ACTION_PROTOCOLS, MULTI_MODES, SEQUENTIAL

__all__ = [
    "action_lines",
    "goal_sentence",
    "mode_sentence",
    "build_task_prompt",
]

_INTRO = (
    "You are a robot exploring an indoor house. At every step you see one RGB image and "
    "one depth image from your forward-facing camera, and you choose one action."
)

_MOTION_LINES = (
    "1 = MOVE_FORWARD: move 0.25 m forward",
    "2 = TURN_LEFT: turn left by 30 degrees",
    "3 = TURN_RIGHT: turn right by 30 degrees",
    "4 = LOOK_UP: tilt the camera up by 30 degrees",
    "5 = LOOK_DOWN: tilt the camera down by 30 degrees",
)


def _article_free(text: str) -> str:
    return " ".join(str(text).split())


#: ``goal_text`` of an image goal: the picture is the goal, the text names no category.
IMAGE_GOAL_TEXT = "Find objects like the one in the goal image."


def goal_sentence(goal_text: str, goal_type: str) -> str:
    """One sentence stating the goal; ``object`` goals are category names, ``image`` goals
    a picture (``Observation.goal_image``)."""
    text = _article_free(goal_text)
    if goal_type == "image":
        return (
            "Goal (image): the goal image shows one matching object; objects like it "
            "(the same kind of object) match."
        )
    if goal_type == "object":
        return f'Goal (object category): "{text}". Any instance of this category matches.'
    return f'Goal (description): "{text}"'


def mode_sentence(
    target_mode: str,
    target_count: Optional[int],
    subtask_index: Optional[int] = None,
    subtask_count: Optional[int] = None,
) -> str:
    """What counts as done in this target mode; never reveals what remains. In a
    ``sequential`` episode (SPEC §11) it names the current subtask (``subtask_index`` is
    0-based) and how many there are."""
    if target_mode == SEQUENTIAL:
        where = ""
        if subtask_index is not None and subtask_count is not None:
            where = f"This is subtask {int(subtask_index) + 1} of {int(subtask_count)}. "
        return (
            "The task is a sequence of goals, one at a time. "
            + where
            + "When you are close to an object that matches the current goal (within about "
            "1 m), signal SUBTASK_STOP; this ends the current subtask (a stop far from "
            "any matching object fails it) and the next goal starts where you stand. After "
            "the last subtask the episode ends. FINISH ends the whole episode at once."
        )
    if target_mode == "single":
        return (
            "Find the one object that matches the goal. When you are close to it "
            "(within about 1 m), signal TARGET_FOUND; this ends the episode."
        )
    if target_mode == "any":
        return (
            "Several objects may match the goal; find any one of them. When you are close "
            "to a matching object (within about 1 m), signal TARGET_FOUND; this ends the "
            "episode."
        )
    if target_mode == "many":
        n = int(target_count) if target_count is not None else 1
        noun = "object" if n == 1 else "different objects"
        return (
            f"Several objects match the goal; find {n} {noun} that match it. Each time you "
            "are close to a matching object you have not reported before (within about "
            "1 m), signal TARGET_FOUND once. Reporting the same object twice or reporting "
            "when no matching object is near counts as a false report. You are not told "
            "how many you have found; when you believe you have found enough, send FINISH."
        )
    if target_mode == "all":
        return (
            "Find every object in the house that matches the goal. Each time you are close "
            "to a matching object you have not reported before (within about 1 m), signal "
            "TARGET_FOUND once. Reporting the same object twice or reporting when no "
            "matching object is near counts as a false report. You are not told how many "
            "matching objects exist; when you believe you have found all of them, send "
            "FINISH. The task only succeeds if you send FINISH yourself."
        )
    raise ValueError(
        f"unknown target_mode {target_mode!r}: expected single, any, many, all or sequential"
    )


def action_lines(target_mode: str, protocol: str = "goat") -> list:
    """The action table as the agent must use it under ``protocol`` (SPEC §2)."""
    if protocol not in ACTION_PROTOCOLS:
        raise ValueError(
            f"unknown action protocol {protocol!r}: expected one of {', '.join(ACTION_PROTOCOLS)}"
        )
    if target_mode == SEQUENTIAL:  # every protocol maps 0/9 to FINISH and 6 to the stop
        return [
            "0 = FINISH: end the whole episode now (the current and later subtasks fail)",
            *_MOTION_LINES,
            "6 = SUBTASK_STOP: an object matching the current goal is near; ends the "
            "current subtask",
        ]
    multi = target_mode in MULTI_MODES
    if not multi:
        finish = "0 = FINISH: stop here and end the episode (counts as reporting the target here)"
        found = "6 = TARGET_FOUND: a matching object is near; ends the episode (recommended)"
        return [finish, *_MOTION_LINES, found]
    found_text = "a matching object you have not reported yet is near you; does not end the episode"
    if protocol == "goat":
        return [
            "0 = FINISH: the whole task is done; ends the episode",
            *_MOTION_LINES,
            f"6 = TARGET_FOUND: {found_text}",
        ]
    if protocol == "legacy":
        return [
            f"0 = TARGET_FOUND: {found_text}",
            *_MOTION_LINES,
            "9 = FINISH: the whole task is done; ends the episode",
        ]
    return [
        f"0 or 6 = TARGET_FOUND: {found_text}",
        *_MOTION_LINES,
        "9 = FINISH: the whole task is done; ends the episode",
    ]


def build_task_prompt(
    goal_text: str,
    goal_type: str,
    target_mode: str,
    target_count: Optional[int] = None,
    max_steps: Optional[int] = None,
    protocol: str = "goat",
    subtask_index: Optional[int] = None,
    subtask_count: Optional[int] = None,
) -> str:
    """The full task text for one episode (identical at every step of it; of one subtask
    in a ``sequential`` episode, whose goal is the current subtask's)."""
    parts = [
        _INTRO,
        goal_sentence(goal_text, goal_type),
        mode_sentence(target_mode, target_count, subtask_index, subtask_count),
    ]
    if max_steps:
        parts.append(f"You have at most {int(max_steps)} actions.")
    parts.append("Actions (answer with the number):")
    text = (
        "\n".join(parts)
        + "\n"
        + "\n".join(f"  {line}" for line in action_lines(target_mode, protocol))
    )
    return text
