#!/usr/bin/env bash
# find_python39.sh: prints the path of a working Python 3.9 interpreter, or nothing (exit 1).
# Looks at $PYTHON39, then python3.9 on PATH (a pyenv shim that refuses does not count), then
# pyenv's installed versions.
set -uo pipefail
works() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 9))' >/dev/null 2>&1; }
for cand in "${PYTHON39:-}" "$(command -v python3.9 2>/dev/null)"; do
  if works "$cand"; then echo "$cand"; exit 0; fi
done
if command -v pyenv >/dev/null 2>&1; then
  for cand in "$(pyenv root)"/versions/3.9*/bin/python3.9; do
    if works "$cand"; then echo "$cand"; exit 0; fi
  done
fi
exit 1
