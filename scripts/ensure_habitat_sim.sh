#!/usr/bin/env bash
# ensure_habitat_sim.sh VENV [WHEEL]: installs ../shared/wheels' headless habitat-sim 0.3.3 (a test
# build of habitat-sim's own source for this machine kind) and the Debian libraries it links,
# when the wheel is there and the venv has no habitat-sim yet. Tests marked habitat_sim then
# run on both simulators; without the wheel they skip in one line. Users install habitat-sim
# from conda (README); the wheel is never a dependency of the package.
set -euo pipefail
venv="$1"
here="$(cd "$(dirname "$0")/.." && pwd)"
# the build for the venv's Python (cp311, cp39, ...)
tag=$("$venv/bin/python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
wheel="${2:-$(ls "$here"/../shared/wheels/habitat_sim-0.3.3-"$tag"-*.whl 2>/dev/null | head -n 1 || true)}"
if [ -z "$wheel" ]; then
  echo "habitat-sim: no wheel in ../shared/wheels; its tests will be skipped" >&2
  exit 0
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libassimp.so.5' || ! ldconfig -p | grep -q 'libOpenGL.so.0'; then
  bash "$here/scripts/apt_install.sh" "habitat-sim's libraries" \
    libegl1 libopengl0 libglvnd0 libegl-mesa0 libgl1-mesa-dri libassimp5
fi
if "$venv/bin/python" -c "import habitat_sim" >/dev/null 2>&1; then
  exit 0
fi
echo "Installing habitat-sim 0.3.3 for the tests: $(basename "$wheel")" >&2
"$venv/bin/python" -m pip install -q --prefer-binary "$wheel"
