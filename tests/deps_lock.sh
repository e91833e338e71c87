#!/bin/sh
# scripts/deps.sh waits for a dpkg/apt lock held by another apt instead of
# failing at once: both apt-get calls (update, install) carry apt's lock
# timeout. Runs deps.sh against a fake dpkg (every package missing), apt-get
# and sudo that only record their arguments. Usage: tests/deps_lock.sh SOURCE_ROOT
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
fake=$(mktemp -d) && [ -d "$fake" ] || { echo "deps_lock: no scratch directory"; exit 1; }
trap 'rm -rf "$fake"' EXIT
printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg"
printf '#!/bin/sh\necho "$*" >>"%s/apt.log"\n' "$fake" >"$fake/apt-get"
printf '#!/bin/sh\nexec "$@"\n' >"$fake/sudo"
chmod +x "$fake/dpkg" "$fake/apt-get" "$fake/sudo"
if ! PATH="$fake:$PATH" "$root/scripts/deps.sh" 2>/dev/null; then
    echo "deps_lock: scripts/deps.sh failed with the fake apt-get"
    echo "script: 0 passed, 1 failed"
    exit 1
fi
pass=0
fail=0
for call in update install; do
    if grep "^$call " "$fake/apt.log" | grep -q -- '-o DPkg::Lock::Timeout=600'; then
        pass=$((pass + 1))
    else
        echo "deps_lock: apt-get $call does not wait for the lock: $(grep -- "$call" "$fake/apt.log")"
        fail=$((fail + 1))
    fi
done
echo "script: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
