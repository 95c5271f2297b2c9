"""Action protocols of SPEC §2: every (protocol, mode, id) -> Habitat action, and the
InvalidAction errors; plus the task prompt text (one module, never reveals what remains)."""

import numpy as np
import pytest

from habitat_mosnav.agents.protocols import InvalidAction, map_action
from habitat_mosnav.api import Action
from habitat_mosnav.prompts import build_task_prompt, mode_sentence

MOVES = {1: "move_forward", 2: "turn_left", 3: "turn_right", 4: "look_up", 5: "look_down"}


@pytest.mark.parametrize("protocol", ["goat", "legacy", "compat"])
@pytest.mark.parametrize("mode", ["single", "any", "many", "all"])
def test_motions_are_the_same_everywhere(protocol, mode):
    for a, name in MOVES.items():
        step = map_action(a, mode, protocol)
        assert (step.habitat_action, step.kind, step.agent_action) == (name, "move", a)


@pytest.mark.parametrize("mode", ["single", "any", "many", "all"])
def test_goat(mode):
    assert map_action(0, mode, "goat").habitat_action == "stop"
    assert map_action(9, mode, "goat").habitat_action == "stop"
    assert map_action(Action.LEGACY_FINISH, mode, "goat").kind == "finish"
    step = map_action(Action.TARGET_FOUND, mode, "goat")
    assert (step.habitat_action, step.kind) == ("target_found", "claim")


@pytest.mark.parametrize("mode", ["many", "all"])
def test_legacy_multi_zero_claims_nine_finishes_six_is_invalid(mode):
    assert map_action(0, mode, "legacy").habitat_action == "target_found"
    assert map_action(9, mode, "legacy").habitat_action == "stop"
    with pytest.raises(InvalidAction, match="valid: 0-5, 9"):
        map_action(6, mode, "legacy")


@pytest.mark.parametrize("mode", ["many", "all"])
def test_compat_multi_zero_and_six_claim(mode):
    assert map_action(0, mode, "compat").habitat_action == "target_found"
    assert map_action(6, mode, "compat").habitat_action == "target_found"
    assert map_action(9, mode, "compat").habitat_action == "stop"


@pytest.mark.parametrize("protocol", ["legacy", "compat"])
@pytest.mark.parametrize("mode", ["single", "any"])
def test_single_any_follow_goat_under_every_protocol(protocol, mode):
    assert map_action(0, mode, protocol).habitat_action == "stop"
    assert map_action(6, mode, protocol).habitat_action == "target_found"
    assert map_action(9, mode, protocol).habitat_action == "stop"


@pytest.mark.parametrize("bad", [7, 8, -1, 10, 100])
def test_out_of_range_ids_are_invalid(bad):
    with pytest.raises(InvalidAction, match=f"returned action {bad}"):
        map_action(bad, "many", "goat")


@pytest.mark.parametrize("bad", [1.0, "1", None, True, [1], {"action": 1}])
def test_non_integers_are_invalid(bad):
    with pytest.raises(InvalidAction, match="not an integer action id"):
        map_action(bad, "all", "goat")


def test_numpy_integers_are_accepted():
    assert map_action(np.int64(3), "many").habitat_action == "turn_right"
    assert map_action(np.uint8(6), "many").habitat_action == "target_found"


def test_invalid_action_error_type():
    with pytest.raises(InvalidAction) as info:
        map_action(7, "many")
    assert info.value.error_type == "InvalidAction"


def test_unknown_protocol():
    with pytest.raises(ValueError, match="unknown action protocol"):
        map_action(1, "many", "nope")


# ----------------------------------------------------------------------------- prompts
def test_prompt_many_states_required_count_but_never_what_remains():
    text = build_task_prompt("Find brown chairs.", "description", "many", 2, 500)
    assert '"Find brown chairs."' in text
    assert "find 2 different objects" in text
    assert "at most 500 actions" in text
    assert "0 = FINISH" in text and "6 = TARGET_FOUND" in text
    assert "remain" not in text.lower() and "left to find" not in text.lower()


def test_prompt_all_gives_no_count_and_requires_finish():
    text = build_task_prompt("chair", "object", "all", None, 100)
    assert "category" in text and '"chair"' in text
    assert "Find every object" in text and "send FINISH yourself" in text
    # Nothing in the task sentence hints at a count (only "within about 1 m").
    assert [c for c in mode_sentence("all", None) if c.isdigit()] == ["1"]


def test_prompt_action_table_follows_protocol():
    legacy = build_task_prompt("x", "description", "all", None, None, protocol="legacy")
    assert "0 = TARGET_FOUND" in legacy and "9 = FINISH" in legacy and "6 =" not in legacy
    compat = build_task_prompt("x", "description", "many", 1, None, protocol="compat")
    assert "0 or 6 = TARGET_FOUND" in compat and "9 = FINISH" in compat
    single = build_task_prompt("x", "description", "single", None, None, protocol="legacy")
    assert "6 = TARGET_FOUND" in single and "ends the episode" in single


def test_prompt_rejects_unknown_mode():
    with pytest.raises(ValueError, match="unknown target_mode"):
        build_task_prompt("x", "description", "some", None)
