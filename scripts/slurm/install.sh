#!/usr/bin/env bash
# Installs Debian's Slurm (controller, node daemon, client) and MUNGE for the
# one-node test cluster of scripts/slurm/local-cluster.sh; only what is missing.
# Exit status: 0 installed (or already there), 77 the packages could not be
# installed (no root/sudo, no apt, no network): callers turn that into a skip.
set -uo pipefail
packages="slurmctld slurmd slurm-client munge"
missing=""
for p in $packages; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
command -v apt-get >/dev/null 2>&1 || { echo "install.sh: no apt-get; cannot install:$missing" >&2; exit 77; }
if [ "$(id -u)" = 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "install.sh: not root and no password-less sudo; cannot install:$missing" >&2
    exit 77
fi
echo "installing:$missing" >&2
# The package scripts try to start the daemons through init: forbid that
# (policy-rc.d exit 101), the cluster script starts its own.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && own_policy=1
fi
status=0
$sudo apt-get update -qq >&2 || status=$?
if [ "$status" = 0 ]; then
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null || status=$?
fi
[ "$own_policy" = 1 ] && $sudo rm -f "$policy"
if [ "$status" != 0 ]; then
    echo "install.sh: apt-get failed (status $status); cannot install:$missing" >&2
    exit 77
fi
for p in $missing; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' ||
        { echo "install.sh: $p is still not installed" >&2; exit 77; }
done
exit 0
