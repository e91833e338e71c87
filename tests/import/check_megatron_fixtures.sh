#!/bin/sh
# Regenerates the Megatron parallel-layout fixtures (plain Python) and
# compares them with the committed ones in tests/import/megatron.
# Exits 77 (skip) without python3.
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1; then
        exec "$p" "$root/tests/import/make_megatron_fixtures.py" --check "$root/tests/import/megatron"
    fi
done
echo "megatron fixtures: no python3: skipped"
exit 77
