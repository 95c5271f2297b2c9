#!/usr/bin/env bash
# Installs the Debian EGL/Mesa libraries for headless rendering when they are missing.
# The CPU simulator renders RGB-D with moderngl on EGL (Mesa's llvmpipe without a GPU).
set -euo pipefail
if ldconfig -p 2>/dev/null | grep -q 'libEGL_mesa.so' && ldconfig -p | grep -q 'libEGL.so.1'; then
  exit 0
fi
exec bash "$(dirname "$0")/apt_install.sh" "headless EGL libraries" libegl1 libegl-mesa0 libgl1-mesa-dri
