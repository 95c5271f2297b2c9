"""Reply parsing and image encoding of the API agent (no server needed)."""

import base64
import io

import numpy as np
import pytest
from PIL import Image

from habitat_mosnav.agents.vlm.messages import (
    depth_to_image,
    encode_image,
    format_history,
    rgb_to_image,
)
from habitat_mosnav.agents.vlm.parsing import parse_action


@pytest.mark.parametrize(
    "reply, action, method",
    [
        ("ACTION: 3", 3, "strict"),
        ("I see a sofa ahead.\nACTION: 1", 1, "strict"),
        ("action=6", 6, "strict"),
        ("**Action:** 5", 5, "strict"),
        ("Thinking: ACTION: 2 maybe... no.\nACTION: 3", 3, "strict"),  # the last one wins
        ("ACTION: 9", 9, "strict"),  # legacy FINISH alias is valid
        ('{"action": 4}', 4, "strict"),
        ('```json\n{"action": "turn_left", "why": "wall"}\n```', 2, "json"),
        ('{"action": "TARGET_FOUND"}', 6, "json"),
        ("<think>ACTION: 1</think>\nACTION: 2", 2, "strict"),  # reasoning block ignored
        ("The chair is 2 m away, so I will move forward.", 1, "name"),  # 2 is a distance, not an id
        ("I should Turn-Right to face the door", 3, "name"),
        ("ACTION: MOVE_FORWARD", 1, "name"),
        ("Rotate 30 degrees: 3", 3, "digit"),  # 30 is a unit value, 3 is the id
        ("5", 5, "digit"),
    ],
)
def test_valid_replies_parse_to_the_intended_action(reply, action, method):
    parsed = parse_action(reply)
    assert (parsed.action, parsed.method) == (action, method)


@pytest.mark.parametrize(
    "reply",
    [
        None,
        "",
        "   ",
        "I am not sure what to do here.",
        "ACTION: 7",  # explicit but invalid: not rescued by the fallback
        "ACTION: -1",
        '{"action": 8}',
        '{"action": "dance"}',
        '{"action": true}',
        "Walk 0.25 m or 30 degrees.",  # only decimals and unit values
        "<think>I will answer ACTION: 1",  # cut inside the reasoning block
    ],
)
def test_malformed_replies_are_unparseable(reply):
    parsed = parse_action(reply)
    assert parsed.action is None
    assert parsed.reason


def test_strict_mode_refuses_prose():
    assert parse_action("I will move forward", tolerant=False).action is None
    assert parse_action("I will move forward\nACTION: 1", tolerant=False).action == 1


def _decode(url):
    header, data = url.split(",", 1)
    return header, Image.open(io.BytesIO(base64.b64decode(data)))


def test_rgb_is_encoded_losslessly_and_only_shrunk():
    rgb = np.random.default_rng(0).integers(0, 256, (60, 80, 3), dtype=np.uint8)
    enc = encode_image(rgb_to_image(rgb), "rgb", size=512, fmt="png")
    header, img = _decode(enc.data_url)
    assert header == "data:image/png;base64"
    assert np.array_equal(np.asarray(img), rgb)  # not enlarged, not altered
    small = encode_image(rgb_to_image(rgb), "rgb", size=40, fmt="jpeg")
    header, img = _decode(small.data_url)
    assert header == "data:image/jpeg;base64" and img.size == (40, 30)
    assert (small.width, small.height) == (40, 30)
    assert "data_url" not in small.reference() and len(small.reference()["sha256"]) == 64


def test_depth_is_colour_coded_near_bright_far_dark_invalid_black():
    depth = np.array([[0.5, 5.0, 20.0, 0.0]], dtype=np.float32)[..., None]  # metres
    img = np.asarray(depth_to_image(depth, max_depth=10.0)).astype(int)
    near, mid, far, invalid = img[0]
    assert near.sum() > mid.sum() > far.sum() > 0
    assert invalid.tolist() == [0, 0, 0]
    assert far.tolist() == [0x44, 0x01, 0x54]  # clipped at max_depth: the "far" colour


def test_history_lists_actions_oldest_first():
    text = format_history([(4, 1, ""), (5, 2, "default, reply unparseable")])
    assert text.splitlines()[1:] == [
        "- step 4: 1 MOVE_FORWARD",
        "- step 5: 2 TURN_LEFT (default, reply unparseable)",
    ]
