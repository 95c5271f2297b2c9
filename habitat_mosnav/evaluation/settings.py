"""Versioned benchmark settings: the named runs a paper can cite (``--benchmark NAME``).

A setting is one YAML file under ``habitat_mosnav/config/benchmark_settings/``, named by
its path: ``demo/official`` is ``benchmark_settings/demo/official.yaml``. It fixes what a
reported number depends on: the habitat config, split, target modes, goal type, step limit,
success distance, space-oracle parameters, the episode selection (all episodes, or a fixed
list of keys for a named subset such as ``mini``) and the dataset's fingerprint (a SHA-256
per dataset file, :mod:`habitat_mosnav.datasets.fingerprint`).

Kinds: ``smoke`` (every episode, a few steps: data, model and environment connect; never
reportable), ``mini`` (a fixed subset chosen by :data:`MINI_RULE`, for expensive agents)
and ``official`` (every episode, the full step limit). ``mini`` and ``official`` runs are
reportable when nothing deviates from the setting.

Maintainers freeze a setting once its dataset is built::

    python -m habitat_mosnav.evaluation.settings freeze demo/official
    python -m habitat_mosnav.evaluation.settings freeze mosnav-v1/val/official \\
        --dataset-dir /data/mosnav/val --scene-root /data/hm3d/val
    python -m habitat_mosnav.evaluation.settings table   # the table in docs/EVALUATION.md
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from habitat_mosnav.datasets.fingerprint import (
    combine_digests,
    dataset_file_digests,
    fingerprint_differences,
)
from habitat_mosnav.schemas import first_error, load
from habitat_mosnav.versions import add_version_argument

__all__ = [
    "SETTINGS_DIR",
    "SETTING_KINDS",
    "REPORTABLE_KINDS",
    "MINI_RULE",
    "SettingError",
    "BenchmarkSetting",
    "list_settings",
    "load_setting",
    "settings_table",
    "select_mini_keys",
    "freeze_setting",
    "main",
]

#: Where the package's settings live (``<name>.yaml`` below it).
SETTINGS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config", "benchmark_settings"
)
SETTING_KINDS = tuple(load("setting")["properties"]["kind"]["enum"])  # smoke, mini, official
#: Kinds whose complete, undeviating runs may be reported as the benchmark's numbers.
REPORTABLE_KINDS = ("mini", "official")
#: The documented rule that picks a ``mini`` subset (stable under re-ordering of files).
MINI_RULE = (
    "per target mode, the ceil(fraction x count) episodes with the smallest "
    "sha256(episode key), at least one per mode"
)


class SettingError(ValueError):
    """A setting file is malformed, unknown, or a run contradicts it (one line)."""


@dataclass(frozen=True)
class BenchmarkSetting:
    """One benchmark setting (see the module docstring); ``path`` is its file."""

    name: str
    version: int
    kind: str
    description: str
    config: str
    split: str
    target_modes: List[str]
    goal_type: str
    max_steps: int
    success_distance: float
    space_coverage_samples: int
    space_coverage_radius: float
    #: None: every episode of the split; else the fixed list of episode keys.
    episode_keys: Optional[List[str]]
    #: ``mini`` subsets: the fraction of each mode's episodes (see MINI_RULE).
    mini_fraction: Optional[float]
    #: Episodes the setting runs (None until frozen).
    episode_count: Optional[int]
    #: ``{relative file: sha256}`` of the dataset (empty until frozen).
    dataset_files: Dict[str, str] = field(default_factory=dict)
    dataset_fingerprint: Optional[str] = None
    path: str = ""

    @property
    def reportable(self) -> bool:
        return self.kind in REPORTABLE_KINDS

    @property
    def frozen(self) -> bool:
        return bool(self.dataset_files)

    def identity(self) -> Dict[str, Any]:
        """What every record, the manifest and the summary carry."""
        return {k: getattr(self, k) for k in ("name", "version", "kind", "dataset_fingerprint")}

    def habitat_overrides(self) -> List[str]:
        """Hydra overrides that make the habitat config of :attr:`config` this setting."""
        return [
            f"habitat.dataset.split={self.split}",
            "habitat.dataset.target_modes=[" + ",".join(self.target_modes) + "]",
            f"habitat.dataset.goal_type={self.goal_type}",
            f"habitat.environment.max_episode_steps={self.max_steps}",
            f"habitat.task.mosnav_success_distance={self.success_distance}",
            f"habitat.task.mosnav_space_coverage_samples={self.space_coverage_samples}",
            f"habitat.task.mosnav_space_coverage_radius={self.space_coverage_radius}",
        ]

    def fixed_config_values(self) -> Dict[str, Any]:
        """Habitat config keys a run may not change (``max_episode_steps`` may shrink or
        grow, which makes the run not reportable)."""
        return {
            "dataset.split": self.split,
            "dataset.target_modes": list(self.target_modes),
            "dataset.goal_type": self.goal_type,
            "task.mosnav_success_distance": self.success_distance,
            "task.mosnav_space_coverage_samples": self.space_coverage_samples,
            "task.mosnav_space_coverage_radius": self.space_coverage_radius,
        }

    def check_config(self, hcfg) -> List[str]:
        """Compare a resolved habitat config (the ``habitat`` node) with the setting.
        Raises SettingError naming the first contradicting key; returns the deviations
        that only make the run not reportable."""
        for key, want in self.fixed_config_values().items():
            node = hcfg
            for part in key.split("."):
                node = node.get(part) if hasattr(node, "get") else None
            got = list(node) if key == "dataset.target_modes" and node is not None else node
            if isinstance(want, float) and isinstance(got, (int, float)):
                same = math.isclose(float(got), want, rel_tol=0, abs_tol=1e-9)
            else:
                same = got == want
            if not same:
                raise SettingError(
                    f"benchmark {self.name}: habitat.{key} is {got!r} but the setting fixes "
                    f"{want!r} ({self.path})"
                )
        steps = int(hcfg.environment.max_episode_steps)
        if steps != self.max_steps:
            return [f"max_steps {steps} instead of {self.max_steps}"]
        return []

    def check_run(
        self,
        hcfg,
        *,
        offset: int,
        scene_limit: Optional[int],
        episode_limit: Optional[int],
        num_episodes: int,
        dataset_digests: Callable[[str], Optional[Mapping[str, str]]],
        warn: Callable[[str], None],
    ) -> Dict[str, Any]:
        """A run of this setting (its resolved habitat config, the selection flags): the
        setting's :meth:`identity` with the run's ``deviations``, which every record
        carries. A run that contradicts the setting raises SettingError (one line); a
        dataset that differs from a ``dev`` setting's fingerprint is a warning and a
        deviation. ``dataset_digests(data_path)``: the dataset's file digests (the caller
        caches them for the manifest)."""
        for name, value, default in (
            ("offset", offset, 0),
            ("scene_limit", scene_limit, None),
            ("episode_limit", episode_limit, None),
        ):
            if value != default:
                raise SettingError(
                    f"benchmark {self.name} fixes the episode selection: {name}={value} "
                    "contradicts it (use num_episodes for a partial, non-reportable run)"
                )
        deviations = self.check_config(hcfg)
        if num_episodes != -1:
            deviations.append(f"num_episodes {num_episodes} (a part of the selection)")
        dcfg = hcfg.dataset
        data_path = str(dcfg.data_path).replace("{split}", str(dcfg.get("split", "")))
        differences = self.check_dataset(data_path, dataset_digests(data_path))
        if differences:
            more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
            text = f"benchmark {self.name}: the dataset differs from the setting: {differences[0]}{more}"
            if self.reportable:
                raise SettingError(
                    text + f"; {self.kind} runs need the frozen dataset ({self.path})"
                )
            warn(f"{text}; running the {self.kind} setting anyway")
            deviations.append("dataset differs from the setting's fingerprint")
        return dict(self.identity(), deviations=deviations)

    def pick_episodes(self, pool: Mapping[str, Any]) -> Dict[str, Any]:
        """``pool`` (key -> episode) cut to the setting's fixed keys, in their order (all of
        ``pool`` when the setting runs every episode); a missing key is a SettingError."""
        wanted = self.episode_keys
        if wanted is None:
            return dict(pool)
        missing = [k for k in wanted if k not in pool]
        if missing:
            raise SettingError(
                f"benchmark {self.name}: the dataset has no episode {missing[0]!r} "
                f"({len(missing)} of the setting's {len(wanted)} keys missing; {self.path})"
            )
        return {k: pool[k] for k in wanted}

    def check_dataset(
        self, data_path: str, actual: Optional[Mapping[str, str]] = None
    ) -> List[str]:
        """Differences between the dataset on disk and the frozen fingerprint (empty when
        they agree). An unfrozen setting reports that instead. ``actual``: the dataset's
        :func:`dataset_file_digests`, when the caller already has them."""
        if not self.frozen:
            return [f"setting {self.name} has no frozen dataset fingerprint ({self.path})"]
        try:
            actual = dataset_file_digests(data_path) if actual is None else actual
        except FileNotFoundError as exc:
            return [str(exc)]
        return [
            f"{os.path.join(data_path, d.split(' ', 1)[0])} {d.split(' ', 1)[1]}"
            for d in fingerprint_differences(self.dataset_files, actual)
        ]


def _settings_root(root: Optional[str]) -> str:
    return os.path.abspath(root or SETTINGS_DIR)


def list_settings(root: Optional[str] = None) -> List[str]:
    """Names of the settings under ``root`` (default: the package's), sorted."""
    base = _settings_root(root)
    names = []
    for dirpath, _dirs, files in os.walk(base):
        for f in files:
            if f.endswith(".yaml"):
                rel = os.path.relpath(os.path.join(dirpath, f[:-5]), base)
                names.append(rel.replace(os.sep, "/"))
    return sorted(names)


def _setting_path(name: str, root: Optional[str]) -> str:
    if name.endswith(".yaml") and os.path.isfile(name):
        return os.path.abspath(name)
    path = os.path.join(_settings_root(root), *name.split("/")) + ".yaml"
    if not os.path.isfile(path):
        known = ", ".join(list_settings(root)) or "none"
        raise SettingError(f"unknown benchmark setting {name!r} (known: {known})")
    return path


def load_setting(name: str, root: Optional[str] = None) -> BenchmarkSetting:
    """Read and validate a setting by name (``demo/official``) or YAML path."""
    path = _setting_path(name, root)
    from omegaconf import OmegaConf

    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    except Exception as exc:
        raise SettingError(f"{path}: not a valid YAML file: {' '.join(str(exc).split())}") from None
    problem = first_error(raw, "setting", path)
    if problem is not None:
        raise SettingError(problem)
    episodes, dataset = raw["episodes"], raw["dataset"]
    keys = episodes.get("keys")
    count = episodes.get("count")
    if keys is not None and count is not None and count != len(keys):
        raise SettingError(
            f"{path}: field 'episodes.count' is {count} but 'episodes.keys' lists {len(keys)}"
        )
    files = dataset.get("files") or {}
    if files and dataset.get("fingerprint") != combine_digests(files):
        raise SettingError(f"{path}: field 'dataset.fingerprint' does not match 'dataset.files'")
    fraction = episodes.get("mini_fraction")
    return BenchmarkSetting(
        **{k: raw[k] for k in ("name", "version", "kind", "description", "config", "split")},
        **{k: raw[k] for k in ("goal_type", "max_steps", "space_coverage_samples")},
        target_modes=list(raw["target_modes"]),
        success_distance=float(raw["success_distance"]),
        space_coverage_radius=float(raw["space_coverage_radius"]),
        episode_keys=None if keys is None else list(keys),
        mini_fraction=None if fraction is None else float(fraction),
        episode_count=count,
        dataset_files=dict(files),
        dataset_fingerprint=dataset.get("fingerprint"),
        path=path,
    )


def select_mini_keys(keys_by_mode: Mapping[str, Sequence[str]], fraction: float) -> List[str]:
    """:data:`MINI_RULE`: per mode the ceil(fraction x n) keys with the smallest
    sha256(key), at least one; returned sorted."""
    chosen: List[str] = []
    for mode in sorted(keys_by_mode):
        keys = sorted(
            keys_by_mode[mode], key=lambda k: hashlib.sha256(k.encode("utf-8")).hexdigest()
        )
        if keys:
            chosen.extend(keys[: max(1, math.ceil(fraction * len(keys)))])
    return sorted(chosen)


def settings_table(root: Optional[str] = None) -> str:
    """The table of settings in docs/EVALUATION.md (generated, so it cannot drift from the files)."""
    lines = [
        "| setting | split | kind | target modes | goal type | episodes | max steps "
        "| success distance | file |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = _settings_root(root)
    settings = [load_setting(name, root) for name in list_settings(root)]
    settings.sort(key=lambda s: (s.name.rsplit("/", 1)[0], SETTING_KINDS.index(s.kind), s.name))
    for s in settings:
        count = "not frozen" if s.episode_count is None else str(s.episode_count)
        rel = os.path.relpath(s.path, os.path.dirname(os.path.dirname(base)))
        lines.append(
            f"| `{s.name}` | {s.split} | {s.kind} | {','.join(s.target_modes)} | {s.goal_type} "
            f"| {count} "
            f"| {s.max_steps} | {s.success_distance:g} m | `habitat_mosnav/{rel}` |"
        )
    return "\n".join(lines)


def _selected_keys(setting: BenchmarkSetting, overrides: Sequence[str]):
    """Episode keys of the setting's dataset (by target mode), loaded through habitat."""
    from habitat.datasets import make_dataset

    from habitat_mosnav import get_config
    from habitat_mosnav.keys import episode_key, episode_scene_name

    cfg = get_config(setting.config, setting.habitat_overrides() + list(overrides))
    dataset = make_dataset(id_dataset=cfg.habitat.dataset.type, config=cfg.habitat.dataset)
    by_mode: Dict[str, List[str]] = {}
    for ep in dataset.episodes:
        key = episode_key(setting.split, episode_scene_name(ep), ep.episode_id)
        by_mode.setdefault(str(ep.target_mode), []).append(key)
    return by_mode, cfg.habitat.dataset.data_path.replace("{split}", setting.split)


def freeze_setting(name: str, overrides: Sequence[str] = (), root: Optional[str] = None) -> str:
    """Recompute a setting's dataset fingerprint, episode count and (``mini``) key list
    from the dataset its config names; rewrite the file; returns its path."""
    from omegaconf import OmegaConf

    setting = load_setting(name, root)
    by_mode, data_path = _selected_keys(setting, overrides)
    raw = OmegaConf.to_container(OmegaConf.load(setting.path))
    digests = dataset_file_digests(data_path)
    raw["dataset"] = {"fingerprint": combine_digests(digests), "files": digests}
    episodes = dict(raw["episodes"])
    if setting.kind == "mini" or setting.mini_fraction is not None:
        keys = select_mini_keys(by_mode, setting.mini_fraction or 0.25)
        episodes.update(selection="keys", rule=MINI_RULE, keys=keys, count=len(keys))
    else:
        episodes["count"] = sum(len(v) for v in by_mode.values())
    raw["episodes"] = episodes
    header = (
        "# A benchmark setting (habitat_mosnav/evaluation/settings.py). The dataset and\n"
        "# episodes blocks are written by `python -m habitat_mosnav.evaluation.settings "
        "freeze`.\n"
    )
    with open(setting.path, "w") as f:
        f.write(header + OmegaConf.to_yaml(OmegaConf.create(raw), sort_keys=False))
    load_setting(setting.path)  # what was written must read back
    return setting.path


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m habitat_mosnav.evaluation.settings",
        description="List, freeze and tabulate benchmark settings.",
    )
    add_version_argument(p)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", allow_abbrev=False, help="the settings' names")
    sub.add_parser(
        "table", allow_abbrev=False, help="the markdown table of settings (docs/EVALUATION.md)"
    )
    f = sub.add_parser(
        "freeze", allow_abbrev=False, help="recompute a setting's dataset fingerprint and episodes"
    )
    f.add_argument("name")
    f.add_argument("--dataset-dir", default=None, help="the dataset_semantic directory")
    f.add_argument("--scene-root", default=None, help="the scenes directory")
    args = p.parse_args(argv)
    try:
        if args.command == "list":
            print("\n".join(list_settings()))
        elif args.command == "table":
            print(settings_table())
        else:
            ov = []
            if args.dataset_dir:
                ov.append(f"habitat.dataset.data_path={os.path.abspath(args.dataset_dir)}")
            if args.scene_root:
                ov.append(f"habitat.dataset.scenes_dir={os.path.abspath(args.scene_root)}")
            print(f"wrote {freeze_setting(args.name, ov)}")
    except SettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
