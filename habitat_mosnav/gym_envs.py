"""gym ids for the shipped task configs, as habitat-lab registers its own
(``Habitat<Name>-v0``): ``gym.make("HabitatMosNavMosDemo-v0")`` builds habitat's
``GymHabitatEnv`` for ``benchmark/nav/mosnav/mos_demo.yaml`` (``override_options=[...]``
as with ``Habitat-v0``). Registered by ``import habitat_mosnav`` as soon as gym is imported (before or after it)."""

from __future__ import annotations

from typing import Dict, List, Optional

from habitat_mosnav.api import TARGET_MODES

__all__ = ["GYM_CONFIGS", "make_gym_env", "register_gym_envs"]

_MODE_NAMES = {"many": "mos", "all": "moc", "single": "single", "any": "any"}
#: gym id -> config (relative to the package's config directory)
GYM_CONFIGS: Dict[str, str] = {
    f"HabitatMosNav{_MODE_NAMES[mode].capitalize()}{label}-v0": f"benchmark/nav/mosnav/{_MODE_NAMES[mode]}_{where}.yaml"
    for mode in TARGET_MODES
    for where, label in (("demo", "Demo"), ("hm3d", "HM3D"))
}


def make_gym_env(cfg_file_path: str, override_options: Optional[List[str]] = None):
    """habitat's gym env (``habitat.gym.make_gym_from_config``) of a mosnav config."""
    from habitat.gym import make_gym_from_config

    from habitat_mosnav.config.default import get_config

    return make_gym_from_config(get_config(cfg_file_path, list(override_options or [])))


def register_gym_envs() -> None:
    """Register :data:`GYM_CONFIGS` with gym (idempotent)."""
    from gym.envs.registration import register, registry

    for gym_id, path in GYM_CONFIGS.items():
        if gym_id not in registry.env_specs:
            register(
                gym_id,
                entry_point="habitat_mosnav.gym_envs:make_gym_env",
                kwargs={"cfg_file_path": path},
            )
