"""SPL-multi, PE and TSE measured against where a claim succeeds (SPEC §3-§4), on the
bundled demo data in all four modes, with the privileged oracle and a detouring oracle
(the same agent that first turns away from its first target and walks 16 steps):

- every successful record has p >= 0.97 l (l is a lower bound of any claiming path);
- the oracle solves every episode (SR 1.0) and its mean spl_multi over many/all >= 0.85;
- per episode, the detour's SPL ratio follows its path-length ratio (within 0.1).

Run with ``-s`` to see the figures.
"""

import os

import pytest

import habitat_mosnav
from habitat_mosnav.agents.oracle import OracleAgent

DEMO_DATA = os.path.join(
    os.path.dirname(habitat_mosnav.__file__), "data", "demo", "dataset_semantic"
)
CONFIGS = {
    "single": "single_demo.yaml",
    "any": "any_demo.yaml",
    "many": "mos_demo.yaml",
    "all": "moc_demo.yaml",
}
DETOUR_STEPS = 16
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.isdir(DEMO_DATA), reason=f"demo dataset not built yet ({DEMO_DATA})"
    ),
]


def run_demo(agent, out):
    import habitat  # noqa: F401

    from habitat_mosnav import get_config
    from habitat_mosnav.evaluation import Evaluator

    records = {}
    for mode, name in CONFIGS.items():
        cfg = get_config(
            f"benchmark/nav/mosnav/{name}", ["habitat.task.mosnav_space_coverage_samples=0"]
        )
        got = []
        Evaluator(
            agent, cfg, output_dir=str(out / mode), progress=False, on_record=got.append
        ).run()
        assert got and {r["episode"]["target_mode"] for r in got} == {mode}
        records.update({r["episode_key"]: r for r in got})
    return records


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("spl")
    return (
        run_demo(OracleAgent(), root / "oracle"),
        run_demo(OracleAgent(detour_steps=DETOUR_STEPS), root / "detour"),
    )


def test_successful_paths_are_never_shorter_than_l(runs):
    for records in runs:
        for key, r in records.items():
            assert r["status"] == "ok", (key, r.get("error_message"))
            m = r["metrics"]
            if m["success"]:
                assert m["trajectory_length"] >= 0.97 * m["optimal_subset_distance"], key


def test_oracle_solves_everything_efficiently(runs):
    oracle, _ = runs
    assert all(r["metrics"]["success"] == 1.0 for r in oracle.values())
    multi = [
        r["metrics"]["spl_multi"]
        for r in oracle.values()
        if r["episode"]["target_mode"] in ("many", "all")
    ]
    mean = sum(multi) / len(multi)
    every = [r["metrics"]["spl_multi"] for r in oracle.values()]
    print(
        f"\noracle: SR 1.0 over {len(oracle)} episodes; spl_multi mean over many/all "
        f"{mean:.3f} ({len(multi)} episodes), over all modes {sum(every) / len(every):.3f}, "
        f"min {min(every):.3f}"
    )
    assert mean >= 0.85


def test_detour_lowers_spl_in_proportion_to_its_path(runs):
    oracle, detour = runs
    assert set(oracle) == set(detour)
    ratios = []
    for key, o in oracle.items():
        d = detour[key]["metrics"]
        o = o["metrics"]
        assert d["success"] == 1.0, key
        path_ratio = o["trajectory_length"] / d["trajectory_length"]
        spl_ratio = d["spl_multi"] / o["spl_multi"]
        ratios.append((spl_ratio, path_ratio))
        assert abs(spl_ratio - path_ratio) <= 0.1, (key, spl_ratio, path_ratio)
        assert d["trajectory_length"] > o["trajectory_length"], key
    mean_spl = sum(r[0] for r in ratios) / len(ratios)
    mean_path = sum(r[1] for r in ratios) / len(ratios)
    print(
        f"\ndetour ({DETOUR_STEPS} steps away first): mean SPL ratio {mean_spl:.3f}, "
        f"mean path-length ratio {mean_path:.3f} over {len(ratios)} episodes"
    )
