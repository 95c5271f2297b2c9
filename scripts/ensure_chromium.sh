#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the report page (mosnav-report's
# index.html) is tested in a real headless browser (tests/test_report.py).
set -euo pipefail
for bin in chromium chromium-browser google-chrome; do
  if command -v "$bin" >/dev/null; then exit 0; fi
done
exec bash "$(dirname "$0")/apt_install.sh" "a headless browser for the report page test" chromium
