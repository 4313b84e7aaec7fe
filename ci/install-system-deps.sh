#!/usr/bin/env bash
# System packages the C++ builds and tests need: cmake, ninja, ccache, g++ and
# GoogleTest (Debian's libgtest-dev; PyPI has no GoogleTest). Idempotent: only
# missing packages are installed, so warm machines pay nothing.
set -euo pipefail

wanted=(cmake ninja-build ccache g++ libgtest-dev binutils)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing system packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
