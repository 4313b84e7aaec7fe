#!/usr/bin/env bash
# System packages the C++ builds and tests need: cmake, ninja, ccache, g++ and
# GoogleTest (Debian's libgtest-dev; PyPI has no GoogleTest). Idempotent: only
# missing packages are installed, so warm machines pay nothing.
#
# CI runs two nox sessions at a time and each calls this script: on a machine
# that lacks the packages, the second apt-get would fail on the lock the first
# holds. So the check and the install run under one lock file, and apt itself
# waits for a lock held by anything else (unattended upgrades).
set -euo pipefail

wanted=(cmake ninja-build ccache g++ libgtest-dev binutils)

missing_packages() {
  missing=()
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
}

missing_packages
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
exec 9>"${TMPDIR:-/tmp}/torch-backend-system-deps.lock"
flock --timeout 900 9 || { echo "waited 15 minutes for another install of the system packages" >&2; exit 1; }
missing_packages # what another session installed while this one waited
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing system packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
apt_wait=(-o DPkg::Lock::Timeout=600)
"${sudo_cmd[@]}" apt-get "${apt_wait[@]}" update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get "${apt_wait[@]}" install -y -qq "${missing[@]}"
