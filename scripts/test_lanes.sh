#!/usr/bin/env bash
# test_lanes.sh PYTHON VENV39 [PYTEST ARGS...]: `make test`'s two lanes side by side. Each
# lane's suite is mostly one process on one core, so on a 2-core machine running them
# together takes the longer lane's time instead of the sum. The 3.9 environment (and its
# wheel, built from this tree) is set up first, so nothing writes into the tree while the
# suites run; the 3.9 lane's output goes to VENV39/pytest.log, printed when both have ended.
# Exit status: non-zero when either lane failed.
set -uo pipefail
py="$1"; venv39="$2"; shift 2
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

lane39=run
bash scripts/setup_py39.sh "$venv39"
rc=$?
if [ "$rc" = 3 ]; then
  lane39=skipped   # the line saying why is printed
elif [ "$rc" != 0 ]; then
  echo "Python 3.9 lane: set-up failed (exit $rc)" >&2
  exit "$rc"
fi

log39="$venv39/pytest.log"
if [ "$lane39" = run ]; then
  bash scripts/test_py39.sh "$venv39" --no-setup "$@" >"$log39" 2>&1 &
  pid39=$!
  # a Ctrl-C or a CI timeout ends both lanes, with the shell's usual exit status
  stop39() { kill -TERM "$pid39" 2>/dev/null; wait "$pid39" 2>/dev/null; exit "$1"; }
  trap 'stop39 130' INT
  trap 'stop39 143' TERM
  echo "Python 3.9 lane: running beside the 3.11 lane; its output ($log39) follows the 3.11 lane's"
fi

echo "== Python 3.11 lane"
# every test, on every core (pytest-xdist; tests/conftest.py says how work is split)
"$py" -m pytest -q -ra -n auto --durations=25 "$@"
rc311=$?

rc39=0
if [ "$lane39" = run ]; then
  wait "$pid39"
  rc39=$?
  trap - INT TERM
  echo "== Python 3.9 lane ($log39)"
  cat "$log39"
fi
echo "== Python 3.11 lane: exit $rc311; Python 3.9 lane: $([ "$lane39" = run ] && echo "exit $rc39" || echo skipped)"
[ "$rc311" = 0 ] && [ "$rc39" = 0 ]
