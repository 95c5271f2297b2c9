#!/usr/bin/env bash
# Installs the Debian EGL/Mesa libraries for headless rendering when they are missing.
# The CPU simulator renders RGB-D with moderngl on EGL (Mesa's llvmpipe without a GPU).
set -euo pipefail
if ldconfig -p 2>/dev/null | grep -q 'libEGL_mesa.so' && ldconfig -p | grep -q 'libEGL.so.1'; then
  exit 0
fi
pkgs="libegl1 libegl-mesa0 libgl1-mesa-dri"
echo "Installing headless EGL libraries: $pkgs" >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
if ! command -v apt-get >/dev/null; then
  echo "error: EGL libraries missing and apt-get unavailable; install $pkgs (or your distro's equivalent)" >&2
  exit 1
fi
$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
