"""``python -m habitat_mosnav.run --config-name=<experiment> [overrides]``.

habitat-baselines' own entry point (``python -m habitat_baselines.run``) never imports
plugins, so the mosnav dataset, task and simulator would be unknown to it. This is the
same Hydra main — the experiment configs shipped in ``habitat_mosnav/config/baselines``
(``ppo_mos_demo``, ``ppo_moc_demo``, ``ppo_mos_demo_image``, ``ppo_mos_hm3d``,
``ppo_moc_hm3d``, ``ddppo_mos_hm3d``, ``ppo_goat_hm3d``) composed with habitat's, habitat-baselines' and this package's config
search paths — that registers the plugin first and then calls
``habitat_baselines.run.execute_exp``. ``habitat_baselines.evaluate=True`` evaluates.

Outputs (checkpoints, tensorboard, logs, evaluation records, Hydra's own run directory)
all go under ``mosnav_output_dir`` (default ``data/mosnav/<experiment>``, relative to the
directory you run from); nothing is written inside the package.
"""

from __future__ import annotations

import importlib.util
import sys

#: What the PPO baselines need beyond the base install (pyproject.toml's ``[baselines]``).
BASELINES_MODULES = ("torch", "habitat_baselines")


def require_baselines(prog: str = "habitat_mosnav.run") -> None:
    """Exit 2 with one line saying how to install what is missing (instead of an
    ImportError traceback from the imports below)."""
    missing = [m for m in BASELINES_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"{prog}: error: the PPO baselines need {' and '.join(missing)}, not installed "
            "here: pip install 'habitat_mosnav[baselines]' in habitat's environment (or "
            "habitat-baselines 0.3.3 from its source, beside habitat-lab's)",
            file=sys.stderr,
        )
        sys.exit(2)


def _version_or_requirements() -> None:
    """``--version`` (ours, not Hydra's "Hydra 1.3.x"; needs no baselines), then the
    baselines' requirements: both before the imports below."""
    if sys.argv[1:] == ["--version"]:
        from habitat_mosnav.versions import version_text

        print(version_text("python -m habitat_mosnav.run"))
        sys.exit(0)
    require_baselines()


if __name__ == "__main__":
    _version_or_requirements()

import habitat_mosnav.baselines  # noqa: E402
import hydra  # noqa: E402
from habitat.config.default import patch_config  # noqa: E402
from habitat.config.default_structured_configs import register_hydra_plugin  # noqa: E402
from habitat_baselines.config.default_structured_configs import HabitatBaselinesConfigPlugin  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from habitat_mosnav.baselines.checkpoint import CheckpointError  # noqa: E402
from habitat_mosnav.baselines.trainer import EvalSetupError  # noqa: E402
from habitat_mosnav.config.default_structured_configs import MosNavConfigPlugin  # noqa: E402
from habitat_mosnav.datasets.schema import DatasetFormatError  # noqa: E402
from habitat_mosnav.evaluation.durable import ResultFileError  # noqa: E402

#: One-line errors (file, field, what to do) instead of a traceback.
USER_ERRORS = (EvalSetupError, CheckpointError, ResultFileError, DatasetFormatError)


def register_plugins() -> None:
    from habitat.config.default_structured_configs import HabitatConfigPlugin

    register_hydra_plugin(HabitatConfigPlugin)
    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    register_hydra_plugin(MosNavConfigPlugin)
    habitat_mosnav.register_configs()
    habitat_mosnav.baselines.register()


def run_experiment(cfg: DictConfig) -> None:
    """Train, or evaluate when ``habitat_baselines.evaluate`` is true."""
    from habitat_baselines.run import execute_exp

    cfg = patch_config(cfg)
    execute_exp(cfg, "eval" if cfg.habitat_baselines.evaluate else "train")


@hydra.main(version_base="1.3", config_path="config/baselines", config_name="ppo_mos_demo")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        run_experiment(cfg)
    except USER_ERRORS as exc:
        print(f"habitat_mosnav.run: error: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    _version_or_requirements()
    if "--exp-config" in sys.argv or "--run-type" in sys.argv:
        print(
            "habitat_mosnav.run: error: use --config-name=<experiment> (e.g. ppo_mos_demo) "
            "and habitat_baselines.evaluate=True instead of --exp-config/--run-type",
            file=sys.stderr,
        )
        sys.exit(2)
    register_plugins()
    _hydra_main()


if __name__ == "__main__":
    main()
