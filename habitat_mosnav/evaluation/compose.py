"""The habitat config of a ``mosnav-eval`` run, composed from its :class:`RunRequest`: the
config file (the setting's, ``--config``'s or the demo one), the setting's overrides, one
override per field of :data:`CONFIG_KEYS` given, ``--simulator``'s, then ``--set``'s; and
the sim sensors the agent needs. Every problem is one :class:`UsageError` line."""

from __future__ import annotations

import os
import sys
from typing import Any, List, Sequence

from habitat_mosnav.api import MULTI_MODES
from habitat_mosnav.evaluation.command import UsageError
from habitat_mosnav.evaluation.run_request import PROG, RunRequest, flag_of
from habitat_mosnav.safety import mask_secrets, safe_line
from habitat_mosnav.simulators import SimulatorUnavailable, choice_for_type

#: Each RunRequest field (its flag: ``--`` + the name with dashes) that sets a habitat config
#: key, and the key (habitat's own names); a field left None leaves the config's value.
CONFIG_KEYS = {
    "dataset_dir": "habitat.dataset.data_path",
    "scene_root": "habitat.dataset.scenes_dir",
    "scene_dataset_config": "habitat.dataset.scene_dataset_config",
    "split": "habitat.dataset.split",
    "goal_type": "habitat.dataset.goal_type",
    "target_modes": "habitat.dataset.target_modes",
    "max_steps": "habitat.environment.max_episode_steps",
    "space_coverage_samples": "habitat.task.mosnav_space_coverage_samples",
    "space_coverage_radius": "habitat.task.mosnav_space_coverage_radius",
}
#: The fields of CONFIG_KEYS naming a path, which must exist: a directory (True) or a file.
PATH_FIELDS = {"dataset_dir": True, "scene_root": True, "scene_dataset_config": False}
#: The target modes of the demo config when neither --config nor --benchmark is given.
DEFAULT_TARGET_MODES = MULTI_MODES
#: The original benchmark's Habitat-Sim config file, replaced here by the mosnav configs.
ORIGINAL_CONFIG_NAME = "hm3d_config.yaml"


def given_overrides(request: Any, names: Sequence[str] = tuple(CONFIG_KEYS)) -> List[str]:
    """``KEY=VALUE`` (Hydra) for each field of ``names`` that ``request`` gives (a
    RunRequest, or ``mosnav-replay``'s flags), paths made absolute and checked."""
    ov: List[str] = []
    for name in names:
        value = getattr(request, name, None)
        if value is None:
            continue
        if name in PATH_FIELDS:
            path = os.path.abspath(os.path.expanduser(value))
            is_dir = PATH_FIELDS[name]
            if not (os.path.isdir(path) if is_dir else os.path.isfile(path)):
                raise UsageError(
                    f"{flag_of(name)} {value}: no such {'directory' if is_dir else 'file'}"
                )
            value = path
        if isinstance(value, list):
            value = "[" + ",".join(value) + "]"
        elif isinstance(value, str):
            value = _quote(value)
        ov.append(f"{CONFIG_KEYS[name]}={value}")
    return ov


def build_overrides(request: RunRequest) -> List[str]:
    """Hydra overrides of the habitat config from the flags given, then the --set ones."""
    ov = given_overrides(request)
    if request.target_modes is None and request.default_config:
        ov.append(f"{CONFIG_KEYS['target_modes']}=[{','.join(DEFAULT_TARGET_MODES)}]")
    if request.simulator is not None:
        from habitat_mosnav.config.simulator import simulator_overrides

        ov += simulator_overrides(request.simulator)
    return ov + list(request.overrides)


def _quote(value: str) -> str:
    """Quote a value for a Hydra override when it has characters Hydra would parse."""
    if all(c.isalnum() or c in "/._-~+" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _mosnav_configs_hint() -> str:
    """'use a mosnav config: benchmark/nav/mosnav/mos_hm3d.yaml, ...' (the shipped files)."""
    import glob

    from habitat_mosnav.config.default import MOSNAV_CONFIG_DIR

    pattern = os.path.join(MOSNAV_CONFIG_DIR, "benchmark", "nav", "mosnav", "*.yaml")
    names = sorted(
        os.path.relpath(f, MOSNAV_CONFIG_DIR).replace(os.sep, "/") for f in glob.glob(pattern)
    )
    return (
        "use a mosnav config (relative to the package's config directory): "
        + ", ".join(names)
        + "; for HM3D e.g. --config benchmark/nav/mosnav/mos_hm3d.yaml "
        "--dataset-dir dataset_semantic --scene-root /path/to/hm3d/val"
    )


def _config_exists(path: str) -> bool:
    """The lookup of :func:`habitat_mosnav.get_config` (habitat's own)."""
    from habitat.config.default import get_full_config_path

    from habitat_mosnav.config.default import MOSNAV_CONFIG_DIR

    try:
        get_full_config_path(path, MOSNAV_CONFIG_DIR)
    except RuntimeError:
        return False
    return True


def compose_config(request: RunRequest, extra: Sequence[str] = ()):
    """(the habitat config, its overrides) of ``request``, ``extra`` overrides last."""
    setting = request.setting
    shown = request.config_name  # messages name it as typed
    path = request.config if setting is None and request.config else shown
    overrides = build_overrides(request) + list(extra)
    if setting is not None:
        overrides = setting.habitat_overrides() + overrides
    from habitat_mosnav import get_config

    if os.path.basename(path) == ORIGINAL_CONFIG_NAME:
        raise UsageError(
            f"--config {shown}: the original benchmark's Habitat-Sim config is not "
            f"used by mosnav-eval; {_mosnav_configs_hint()}"
        )
    if not _config_exists(path):
        raise UsageError(
            f"--config {shown}: no such file (a path, or relative to the package's "
            f"config directory); {_mosnav_configs_hint()}"
        )
    try:
        config = get_config(path, overrides)
    except Exception as exc:
        text = " ".join(mask_secrets(exc).split())  # masked before it is cut
        if len(text) > 400:
            text = text[:397] + "..."
        raise UsageError(f"--config {shown}: {type(exc).__name__}: {text}") from None
    from omegaconf import OmegaConf

    from habitat_mosnav.config.default_structured_configs import MultiObjectNavTaskConfig

    task_type = OmegaConf.select(config, "habitat.task.type")
    if task_type != MultiObjectNavTaskConfig.type:
        raise UsageError(
            f"--config {shown}: task type {task_type!r} is not "
            f"{MultiObjectNavTaskConfig.type}; {_mosnav_configs_hint()}"
        )
    choice = choice_for_type(OmegaConf.select(config, "habitat.simulator.type"))
    try:  # installed, importable and registered: checked before anything is written
        if choice is not None:
            choice.check()
    except SimulatorUnavailable as exc:
        raise UsageError(
            f"--config {path}: {exc} (or run on the CPU simulator: --simulator mosnav)"
        ) from None
    return config, overrides


def _missing_sim_sensors(config, needed) -> list:
    from omegaconf import OmegaConf

    sensors = OmegaConf.select(config, "habitat.simulator.agents.main_agent.sim_sensors") or {}
    return [key for key in needed if key not in sensors]


def add_required_sensors(request: RunRequest, factory, config, overrides):
    """The agent's ``required_sim_sensors`` (``{sim_sensors key: Hydra override that adds
    it, or None}``): missing ones are added with their override (the config is composed
    again), or the start is refused in one line."""
    needed = getattr(factory, "required_sim_sensors", None) or {}
    missing = _missing_sim_sensors(config, needed)
    if not missing:
        return config, overrides
    cannot = [key for key in missing if not needed[key]]
    if cannot:
        raise UsageError(
            f"--agent {request.agent} needs the sim sensor(s) {', '.join(cannot)} "
            "(habitat.simulator.agents.main_agent.sim_sensors), which the config "
            "lacks; add them with --set"
        )
    extra = [needed[key] for key in missing]
    config, overrides = compose_config(request, extra)
    still = _missing_sim_sensors(config, missing)
    if still:
        raise UsageError(
            f"--agent {request.agent}: adding the sim sensor(s) {', '.join(still)} "
            f"with {'; '.join(extra)} did not add them"
        )
    print(
        safe_line(
            f"{PROG}: --agent {request.agent} needs the sim sensor(s) {', '.join(missing)}: "
            f"added ({'; '.join(extra)})"
        ),
        file=sys.stderr,
    )
    return config, overrides
