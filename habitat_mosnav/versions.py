"""What produced a result: this package's version, its git commit when it runs from a git
checkout, the Python version, and the habitat-lab / habitat-sim versions ("absent" when not
installed).

Recorded in ``run.json`` and ``summary.json`` (``software``) and printed by every command's
``--version``. Standard library only; nothing is imported from habitat.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import platform
import subprocess
from typing import Dict, Optional

__all__ = ["ABSENT", "add_version_argument", "git_commit", "software_versions", "version_text"]

#: The version recorded for a package that is not installed.
ABSENT = "absent"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _git(*args: str) -> Optional[str]:
    try:
        done = subprocess.run(
            ["git", "-C", _PACKAGE_DIR, *args],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit() -> Optional[Dict[str, object]]:
    """``{"commit", "dirty"}`` of the checkout this package runs from; None for an
    installed copy (a site-packages inside some other repository is not "this checkout")."""
    top = _git("rev-parse", "--show-toplevel")
    if not top or os.path.realpath(os.path.join(top, "habitat_mosnav")) != os.path.realpath(
        _PACKAGE_DIR
    ):
        return None
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status)}


def _distribution_version(*names: str) -> Optional[str]:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _habitat_sim_version() -> str:
    version = _distribution_version("habitat-sim", "habitat_sim")
    if version:
        return version
    try:
        if importlib.util.find_spec("habitat_sim") is None:
            return ABSENT
    except (ImportError, ValueError):
        return ABSENT
    import habitat_sim  # a conda install may carry no dist metadata

    return str(getattr(habitat_sim, "__version__", "unknown"))


@functools.lru_cache(maxsize=1)
def software_versions() -> Dict[str, object]:
    """``{"habitat_mosnav", "git", "python", "habitat_lab", "habitat_sim", "habitat_baselines"}``
    (``git``: None outside a checkout; ``python``: e.g. "3.9.18"; the others a version or
    "absent")."""
    from habitat_mosnav import __version__

    return {
        "habitat_mosnav": __version__,
        "git": git_commit(),
        "python": platform.python_version(),
        "habitat_lab": _distribution_version("habitat-lab", "habitat_lab") or ABSENT,
        "habitat_sim": _habitat_sim_version(),
        "habitat_baselines": _distribution_version("habitat-baselines", "habitat_baselines")
        or ABSENT,
    }


def version_text(prog: str) -> str:
    """One line for ``--version``."""
    v = software_versions()
    git = v["git"]
    commit = f" (git {git['commit'][:12]}{', modified' if git['dirty'] else ''})" if git else ""
    return (
        f"{prog} {v['habitat_mosnav']}{commit}; Python {v['python']}, habitat-lab {v['habitat_lab']}, "
        f"habitat-sim {v['habitat_sim']}, habitat-baselines {v['habitat_baselines']}"
    )


def add_version_argument(parser, prog: Optional[str] = None) -> None:
    """``--version``: print :func:`version_text` and exit 0 (computed only when asked: no
    git call on every start, unlike argparse's own ``version`` action)."""
    import argparse

    class VersionAction(argparse.Action):
        def __init__(
            self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
        ):
            super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

        def __call__(self, parser_, namespace, values, option_string=None):
            import sys

            sys.stdout.write(version_text(prog or parser_.prog) + "\n")
            parser_.exit()

    parser.add_argument(
        "--version",
        action=VersionAction,
        help="print the package, git commit, Python, habitat-lab and habitat-sim versions and exit",
    )
