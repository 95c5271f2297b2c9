#!/usr/bin/env bash
# setup_py39.sh VENV: the Python 3.9 lane's environment, built the way an HM3D user's conda
# environment is (habitat-sim 0.3.3's conda packages exist for Python 3.9 only):
#   habitat-lab and habitat-baselines installed editable from their v0.3.3 source tree,
#   habitat-sim 0.3.3 (../shared/wheels' cp39 build stands in for conda's package),
#   torch 2.8.0 (the newest with cp39 wheels),
#   then this project from its *built wheel* (not editable), with its test and baselines extras.
# Exit 3 with one line when the lane cannot run here (no Python 3.9, no habitat-lab tarball).
set -euo pipefail
venv="$1"
here="$(cd "$(dirname "$0")/.." && pwd)"
shared="$here/../shared"
tarball="$shared/habitat-lab/habitat-lab-v0.3.3.tar.gz"

py39="$(bash "$here/scripts/find_python39.sh" || true)"
if [ -z "$py39" ]; then
  echo "Python 3.9 lane: skipped (no Python 3.9 on this machine: set PYTHON39=/path/to/python3.9)" >&2
  exit 3
fi
if [ ! -f "$tarball" ]; then
  echo "Python 3.9 lane: skipped (no $tarball: habitat-lab v0.3.3's source tree)" >&2
  exit 3
fi

# This machine's index has no python-version metadata for sdists: prefer wheels (a user's
# PyPI does not need it, and no core dependency needs a compiler on 3.9).
PIP=("$venv/bin/python" -m pip install -q --prefer-binary)
if [ ! -f "$venv/.stack-installed" ]; then
  rm -rf "$venv"
  "$py39" -m venv "$venv"
  "${PIP[@]}" --upgrade pip wheel "setuptools>=77" build twine
  mkdir -p "$venv/src"
  tar xzf "$tarball" -C "$venv/src"
  lab="$venv/src/habitat-lab-0.3.3"
  "${PIP[@]}" -e "$lab/habitat-lab"
  "${PIP[@]}" torch==2.8.0 torchvision==0.23.0
  "${PIP[@]}" -e "$lab/habitat-baselines"
  wheel=$(ls "$shared"/wheels/habitat_sim-0.3.3-cp39-*.whl 2>/dev/null | head -n 1 || true)
  if [ -n "$wheel" ]; then
    bash "$here/scripts/ensure_habitat_sim.sh" "$venv" "$wheel"
  else
    echo "Python 3.9 lane: no cp39 habitat-sim wheel in ../shared/wheels; its tests will be skipped" >&2
  fi
  touch "$venv/.stack-installed"
fi

# The project itself, from the sdist -> wheel that `python -m build` makes, every time
# (the source may have changed since the last run).
dist="$venv/dist"
rm -rf "$dist"
if ! "$venv/bin/python" -m build --outdir "$dist" "$here" >"$venv/build.log" 2>&1; then
  tail -n 30 "$venv/build.log" >&2; echo "Python 3.9 lane: python -m build failed (log: $venv/build.log)" >&2; exit 1
fi
"$venv/bin/python" -m twine check --strict "$dist"/* >/dev/null
whl=$(ls "$dist"/habitat_mosnav-*.whl)
"${PIP[@]}" --force-reinstall --no-deps "$whl"
"${PIP[@]}" "$whl[test,baselines]"
"$venv/bin/python" - <<'EOF'
import importlib.metadata as md
import sys
lab = md.version("habitat-lab")
assert lab == "0.3.3", f"pip replaced the editable habitat-lab 0.3.3 with {lab}"
print(f"Python {sys.version.split()[0]} lane: habitat-lab {lab} (source), "
      f"habitat-baselines {md.version('habitat-baselines')}, torch {md.version('torch')}, "
      f"habitat_mosnav {md.version('habitat_mosnav')} (wheel)", file=sys.stderr)
EOF
