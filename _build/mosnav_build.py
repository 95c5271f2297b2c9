"""PEP 517 build backend: setuptools' own (``setuptools.build_meta``), plus the start-up
hook ``habitat_mosnav_compat.pth`` at the root of every wheel it builds, regular and
editable alike, so ``import habitat`` works without habitat-sim whichever of ``habitat`` /
``habitat_mosnav`` a program imports first (see ``_habitat_mosnav_pth.py``).

Only public interfaces: the PEP 517 hooks of setuptools and the wheel file format (the
file is added to the finished wheel together with its RECORD line), never setuptools'
private editable-install strategy.
"""
from __future__ import annotations

import base64
import hashlib
import os
import zipfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks used unchanged)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

PTH_NAME = "habitat_mosnav_compat.pth"
PTH_LINE = b"import _habitat_mosnav_pth\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def add_pth(wheel_path: str) -> None:
    """Rewrite ``wheel_path`` with :data:`PTH_NAME` at its root and listed in RECORD."""
    tmp = wheel_path + ".tmp"
    with zipfile.ZipFile(wheel_path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        record = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        for info in src.infolist():
            if info.filename not in (record, PTH_NAME):
                dst.writestr(info, src.read(info.filename))
        lines = [line for line in src.read(record).decode().splitlines()
                 if line and not line.startswith(PTH_NAME + ",")]
        dst.writestr(PTH_NAME, PTH_LINE)
        lines.insert(len(lines) - 1 if lines and lines[-1].startswith(record + ",") else len(lines),
                     _record_line(PTH_NAME, PTH_LINE))
        dst.writestr(record, "\n".join(lines) + "\n")
    os.replace(tmp, wheel_path)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    add_pth(os.path.join(wheel_directory, name))
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_pth(os.path.join(wheel_directory, name))
    return name
