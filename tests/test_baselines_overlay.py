"""The evaluation video's text overlay with habitat's top_down_map in the info: habitat's
``overlay_frame`` crashes on it (formats every value with ``:.2f``); inside the mosnav
evaluator the stock loop's overlay prints only the scalar values."""

import numpy as np
import pytest

pytestmark = pytest.mark.baselines
pytest.importorskip("torch")
pytest.importorskip("habitat_baselines", reason="the [baselines] extra is not installed")

from habitat.utils.visualizations.utils import overlay_frame  # noqa: E402
from habitat_baselines.rl.ppo import habitat_evaluator  # noqa: E402
from habitat_baselines.rl.ppo.habitat_evaluator import HabitatEvaluator  # noqa: E402

from habitat_mosnav.baselines.evaluator import (  # noqa: E402
    overlay_values,
    scalar_overlay,
    scalar_overlay_frame,
    uniform_frames,
    uniform_generate_video,
)


def _info():
    return {
        "top_down_map": {
            "map": np.ones((12, 12), np.uint8),
            "fog_of_war_mask": np.zeros((12, 12)),
            "agent_map_coord": [(3, 4)],
            "agent_angle": [0.3],
        },
        "mos_f1": 0.5,
        "spl_multi": np.float32(0.25),
        "mos_report_events": [{"step": 1}],
        "note": "ok",
    }


def test_stock_overlay_crashes_on_the_top_down_map():
    with pytest.raises(TypeError):
        overlay_frame(np.zeros((64, 64, 3), np.uint8), _info())


def test_overlay_values_keep_only_strings_and_scalars():
    assert overlay_values(_info()) == {"mos_f1": 0.5, "spl_multi": 0.25, "note": "ok"}


def test_scalar_overlay_draws_the_scalar_lines_and_is_restored():
    out = scalar_overlay_frame(np.zeros((64, 64, 3), np.uint8), _info())
    expected = overlay_frame(
        np.zeros((64, 64, 3), np.uint8), {"mos_f1": 0.5, "spl_multi": 0.25, "note": "ok"}
    )
    assert out.shape == expected.shape and np.array_equal(out, expected)
    assert out.astype(int).sum() > 0  # text was drawn
    stock = habitat_evaluator.overlay_frame, habitat_evaluator.generate_video
    with scalar_overlay():
        # the names the stock evaluation loop calls
        names = HabitatEvaluator.evaluate_agent.__globals__
        assert names["overlay_frame"] is scalar_overlay_frame
        assert names["generate_video"] is uniform_generate_video
    assert (habitat_evaluator.overlay_frame, habitat_evaluator.generate_video) == stock


def test_video_frames_of_two_sizes_are_padded_to_one():
    # the loop's first frame has no map panel (rendered with an empty info)
    first = np.full((64, 128, 3), 7, np.uint8)
    later = np.full((64, 192, 3), 9, np.uint8)
    out = uniform_frames([first, later, later])
    assert [f.shape for f in out] == [(64, 192, 3)] * 3
    assert (out[0][:, :128] == 7).all() and (out[0][:, 128:] == 0).all()
    assert out[1] is later
