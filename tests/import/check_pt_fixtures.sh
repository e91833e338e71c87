#!/bin/sh
# Regenerates the .pt and .npz fixtures with the real writers (torch.save,
# np.savez) and compares them with the committed ones in tests/import/pt.
# Exits 77 (skip) when no python3 has torch and numpy (Debian: python3-torch).
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch, numpy' >/dev/null 2>&1; then
        exec "$p" "$root/tests/import/make_pt_fixtures.py" --check "$root/tests/import/pt"
    fi
done
echo "pt fixtures: no python3 with torch and numpy (apt-get install python3-torch): skipped"
exit 77
