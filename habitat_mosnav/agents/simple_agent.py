"""The template to copy when evaluating your own agent (GOAT-style API, SPEC §7).

Run it from anywhere (the original benchmark's template command; a ``agents_to_test/``
folder of your own in the working directory comes first):

    mosnav-eval --agent agents_to_test.simple_agent:SimpleAgent --limit 1 --episode-limit 1 \\
        --max-steps 20 --output-dir /tmp/simple_agent

Or copy this file to ``my_agents/my_agent.py`` and run ``--agent my_agents.my_agent:MyAgent``
(or ``--agent path/to/my_agent.py:MyAgent``). No base class, no registration: an agent is any
object with ``act(observation) -> int | Action`` and, optionally, ``reset()``.

What ``act`` receives (``habitat_mosnav.api.Observation``):
  rgb (H, W, 3) uint8; depth (H, W) float32 in metres; goal_text (a description, or a
  category name with ``--goal-type object``); target_mode single/any/many/all; target_count
  (many only); step_count; max_steps; gps (2,) [x, z] in metres in the episode-start frame
  (+x right, +z backward); compass (radians, positive = turned left since the start); task_prompt (the full task text for a
  VLM/LLM); previous_action. Nothing tells the agent how many targets remain.

Optional hooks: ``reset()`` before every episode; ``seed(seed)`` (called just before
``reset()`` with the episode's stable seed, for reproducible stochastic agents);
``close()`` at the end of the run; ``episode_stats() -> dict`` (stored in each record as
``extras.agent``); ``set_log_path(path)`` (called with ``<output-dir>/rank_XXXXX/prompts.jsonl``
under ``--log-prompts``). See docs/EVALUATION.md.

What ``act`` returns (``habitat_mosnav.api.Action``, or the plain int):
  1 MOVE_FORWARD (0.25 m), 2 TURN_LEFT / 3 TURN_RIGHT (30°), 4 LOOK_UP / 5 LOOK_DOWN (30°),
  6 TARGET_FOUND: "a matching object I have not reported is near me (≤ 1 m)". In many/all
  it registers one instance and the episode goes on; in single/any it ends the episode.
  0 FINISH: "the whole task is done" (ends the episode; in all/MOC success requires it).
"""

from __future__ import annotations

from habitat_mosnav.api import Action, Observation


class SimpleAgent:
    """Walks forward, turns when something is close ahead, and reports/finishes blindly.

    Replace the body of ``act`` with your policy: send ``observation.rgb``,
    ``observation.depth`` and ``observation.goal_text`` (or ``observation.task_prompt``) to
    your model and turn its answer into one of the action ids above.
    """

    def __init__(self, steps_before_stop: int = 10) -> None:
        self.steps_before_stop = steps_before_stop
        self.reset()

    def reset(self) -> None:
        """Called before every episode: clear per-episode memory here."""
        self.steps = 0
        self.history = []

    def act(self, observation: Observation) -> int:
        self.steps += 1
        # observation.rgb / observation.depth can go to your own VLM or navigation model.
        # observation.goal_text is the GOAT-style goal; observation.task_prompt the full task.
        if self.steps < self.steps_before_stop:
            action = Action.MOVE_FORWARD
            depth = observation.depth
            if depth is not None and depth.size:
                h, w = depth.shape[:2]
                ahead = depth[h // 3 : 2 * h // 3, w // 3 : 2 * w // 3]
                if float(ahead.min()) < 0.6:  # an obstacle right ahead: turn instead
                    action = Action.TURN_LEFT
        elif observation.target_mode in ("many", "all"):
            action = Action.FINISH  # many/all: 0 ends the whole task
        else:
            action = Action.TARGET_FOUND  # single/any: 6 (or 0) ends the episode
        self.history.append((observation.step_count, int(action)))
        return action
