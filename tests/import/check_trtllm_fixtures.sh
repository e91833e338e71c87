#!/bin/sh
# Regenerates the TensorRT-LLM statistics fixtures with torch (bincount as the
# stack counts) and compares them with the committed ones in tests/import/trtllm.
# Exits 77 (skip) when no python3 has torch (Debian: python3-torch).
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then
        exec "$p" "$root/tests/import/make_trtllm_fixtures.py" --check "$root/tests/import/trtllm"
    fi
done
echo "trtllm fixtures: no python3 with torch (apt-get install python3-torch): skipped"
exit 77
