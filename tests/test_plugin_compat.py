"""The compatibility module: placeholders only when habitat-sim is missing."""

import os
import subprocess
import sys
import textwrap

import pytest

import habitat_mosnav  # noqa: F401
from habitat_mosnav import _compat

# py39: habitat-lab v0.3.3's API (source install) and the start-up hook
pytestmark = pytest.mark.py39

COMPAT_FILE = _compat.__file__
#: What only holds on a machine without habitat-sim (CI); skipped where it is installed (HM3D).
without_habitat_sim = pytest.mark.skipif(
    _compat.habitat_sim_available(), reason="habitat-sim is installed: no placeholders are seeded"
)


@without_habitat_sim
def test_habitat_and_baselines_import_without_habitat_sim():
    assert not _compat.habitat_sim_available()
    import habitat  # noqa: F401
    from habitat.core.env import Env  # noqa: F401
    from habitat.core.vector_env import VectorEnv  # noqa: F401
    import habitat.gym  # noqa: F401

    for name in _compat.PLACEHOLDERS:
        if not name.startswith("habitat_baselines"):
            assert _compat.is_placeholder(sys.modules[name]), name


@without_habitat_sim
def test_placeholders_fail_loudly_when_used():
    from habitat.tasks.rearrange.rearrange_sensors import DoesNotExist  # any attribute

    with pytest.raises(ImportError, match="requires habitat-sim"):
        DoesNotExist()
    from habitat.sims.habitat_simulator.object_state_machine import ObjectStateMachine

    with pytest.raises(ImportError, match="object_state_machine.ObjectStateMachine"):
        ObjectStateMachine()

    class Sub(ObjectStateMachine):  # defining a subclass at import time is fine
        pass

    with pytest.raises(ImportError, match="habitat-sim"):
        Sub()


@without_habitat_sim
def test_import_time_helpers_are_working_noops():
    from habitat.tasks.rearrange import _try_register_rearrange_task
    from habitat.tasks.rearrange.rearrange_sim import add_perf_timing_func

    assert _try_register_rearrange_task() is None

    def f():
        return 3

    assert add_perf_timing_func()(f) is f


def _run_isolated(code: str, tmp_path, fake_sim: bool) -> subprocess.CompletedProcess:
    """Load _compat.py by path (not through the package) in a fresh interpreter."""
    env = dict(os.environ)
    if fake_sim:
        for mod in ("habitat_sim", "magnum"):
            (tmp_path / mod).mkdir()
            (tmp_path / mod / "__init__.py").write_text("")
        env["PYTHONPATH"] = str(tmp_path)
    prog = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("mosnav_compat", {COMPAT_FILE!r})
        compat = importlib.util.module_from_spec(spec); spec.loader.exec_module(compat)
    """) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=60
    )


def test_noop_when_habitat_sim_is_importable(tmp_path):
    r = _run_isolated(
        """
        assert compat.habitat_sim_available()
        assert compat.install() is False
        assert not any(n in sys.modules for n in compat.PLACEHOLDERS), "seeded anyway"
        print("ok")
    """,
        tmp_path,
        fake_sim=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


@without_habitat_sim
def test_seeds_exactly_the_listed_modules_when_missing(tmp_path):
    r = _run_isolated(
        """
        before = set(sys.modules)
        assert compat.install() is True
        added = set(sys.modules) - before
        assert added == set(compat.PLACEHOLDERS), sorted(added ^ set(compat.PLACEHOLDERS))
        print("ok")
    """,
        tmp_path,
        fake_sim=False,
    )
    assert r.returncode == 0, r.stderr


def _assert_fresh_interpreter_ok(code: str) -> None:
    """Run ``code`` in a new interpreter (outside the repo) and expect it to print ok."""
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + "\nprint('ok')"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().endswith("ok")


def test_habitat_imports_before_the_plugin_via_startup_hook():
    # The installed habitat_mosnav_compat.pth hook seeds the placeholders on `import habitat`.
    _assert_fresh_interpreter_ok("""
        import sys; assert 'habitat_mosnav' not in sys.modules
        import habitat, habitat_mosnav
        from habitat.core.registry import registry
        assert registry.get_task('MultiObjectNav-v1') is not None
    """)


def test_habitat_free_parts_import_without_habitat_or_torch():
    # Registration waits for `import habitat`; result files, metrics, scenes and the agent
    # API must stay importable (and fast) without habitat or torch.
    _assert_fresh_interpreter_ok("""
        import sys, habitat_mosnav
        import habitat_mosnav.api, habitat_mosnav.metrics, habitat_mosnav.scenes
        import habitat_mosnav.evaluation.summary, habitat_mosnav.evaluation.aggregate_cli
        heavy = [m for m in ('habitat', 'torch') if m in sys.modules]
        assert not heavy, heavy
        import habitat
        from habitat.core.registry import registry
        assert registry.get_task('MultiObjectNav-v1') is not None
        assert registry.get_measure('SPLMulti') is not None
    """)


@pytest.mark.parametrize("first", ["habitat_mosnav", "habitat"])
def test_no_gym_banner_on_stderr(first):
    """gym's 3-line "unmaintained" banner (habitat-lab pins gym) is not printed, whichever
    of habitat / habitat_mosnav comes first (the second through the .pth start-up hook)."""
    import subprocess
    import sys

    other = "habitat" if first == "habitat_mosnav" else "habitat_mosnav"
    proc = subprocess.run(
        [sys.executable, "-c", f"import {first}, {other}, gym"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Gym has been unmaintained" not in proc.stderr
