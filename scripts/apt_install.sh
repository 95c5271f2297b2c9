#!/usr/bin/env bash
# apt_install.sh WHAT PKG...: installs Debian packages (apt-get update first), with sudo
# when not root; one error line when apt-get is unavailable. Used by ensure_*.sh.
set -euo pipefail
what="$1"; shift
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
if ! command -v apt-get >/dev/null; then
  echo "error: $what missing and apt-get unavailable; install $* (or your distro's equivalent)" >&2
  exit 1
fi
echo "Installing $what: $*" >&2
$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
