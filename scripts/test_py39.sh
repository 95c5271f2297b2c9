#!/usr/bin/env bash
# test_py39.sh VENV [--no-setup] [PYTEST ARGS...]: the Python 3.9 lane of `make test`: HM3D
# users' stack (scripts/setup_py39.sh: habitat-lab/-baselines v0.3.3 from source, habitat-sim
# 0.3.3, torch 2.8.0, this project from its built wheel), then the tests marked py39 against
# that installed wheel: what differs on that stack (the wheel and its commands, habitat-lab/
# -baselines v0.3.3, habitat-sim cp39, PPO on torch 2.8, README snippets, signals); the
# pure-Python rest runs in the 3.11 lane, and ruff checks the 3.9 grammar of every file.
# --no-setup: the environment is already built (scripts/test_lanes.sh).
# One line and exit 0 when the lane cannot run on this machine (no Python 3.9).
set -uo pipefail
venv="$1"; shift
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--no-setup" ]; then
  shift
else
  bash "$here/scripts/setup_py39.sh" "$venv"
  rc=$?
  if [ "$rc" = 3 ]; then exit 0; fi   # skipped, the line is printed
  if [ "$rc" != 0 ]; then echo "Python 3.9 lane: set-up failed (exit $rc)" >&2; exit "$rc"; fi
fi
set -e
cd "$here"
# pytest's console script, not `python -m pytest`: the repository root stays off sys.path, so
# `import habitat_mosnav` is the installed wheel (tests/conftest.py checks it).
MOSNAV_TEST_INSTALLED_WHEEL=1 exec "$venv/bin/pytest" -q -ra -p no:cacheprovider -m py39 \
  --durations=25 "$@"
