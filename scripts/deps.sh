#!/usr/bin/env bash
# Installs the Debian packages taotsim needs, only those missing (needs root or sudo).
set -euo pipefail
packages="build-essential pkg-config meson ninja-build libcjson-dev libgsl-dev libcriterion-dev \
gnuplot-nox libglpk-dev coinor-libclp-dev coinor-libcbc-dev zlib1g-dev libzip-dev python3-numpy help2man ${TSIM_EXTRA_PACKAGES:-}"
missing=""
for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
# Another apt or dpkg (unattended upgrades, a second install) may hold the
# lock: wait for it up to 10 minutes instead of failing at once.
$sudo apt-get update -qq -o DPkg::Lock::Timeout=600
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 $missing >/dev/null
