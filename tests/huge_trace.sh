#!/bin/sh
# Long-trace check: writes an N-record .jsonl.gz (default 1,000,000; EP16,
# 128 experts, small per-expert token counts, a hot rank), replays it with
# every planner one at a time under /usr/bin/time -v, and reports the peak RSS
# and wall time of each. Memory must be flat: each replay's peak RSS must stay
# within FLAT_MB (default 24) MiB of the same replay over a short prefix of the
# trace (SHORT records, default 20000, above the exact-summary threshold), and
# below MAX_MB (default 256). Then a replay under a pseudo-terminal
# (script -qc) must print a progress line on stderr.
# Usage: tests/huge_trace.sh TAOTSIM [RECORDS]   (needs python3, script, /usr/bin/time)
set -eu
bin=${1:?usage: huge_trace.sh TAOTSIM [RECORDS]}
records=${2:-1000000}
short=${SHORT:-20000}
flat_mb=${FLAT_MB:-24}
max_mb=${MAX_MB:-256}
for tool in python3 script /usr/bin/time; do
    command -v "$tool" >/dev/null 2>&1 || { echo "huge_trace.sh: $tool is missing" >&2; exit 2; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM

# A dedicated writer (taotsim gen spends its time drawing every token): 997
# distinct per-expert count vectors cycled over microbatches x 4 layers.
write_trace() {
    python3 - "$1" "$2" <<'PY'
import gzip, random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
E, R = 128, 16
rows = []
for i in range(997):
    hot = rnd.randrange(R)
    tpe = [rnd.randrange(0, 9) for _ in range(E)]
    for e in range(hot * 8, hot * 8 + 8):
        tpe[e] += rnd.randrange(20, 80)
    rows.append(",".join(map(str, tpe)))
with gzip.open(path, "wt", compresslevel=1) as f:
    f.write('{"format":"moe-routing-trace","version":1,"experts":128,"ep":16,"ranks_per_node":8,'
            '"topk":8,"meta":{"source":"tests/huge_trace.sh"}}\n')
    out = []
    for k in range(n):
        out.append('{"microbatch":%d,"layer":%d,"expert_counts":[%s]}\n' % (k // 4, k % 4, rows[k % 997]))
        if len(out) == 10000:
            f.write("".join(out))
            out = []
    f.write("".join(out))
PY
}

t0=$(date +%s)
write_trace "$dir/huge.jsonl.gz" "$records"
write_trace "$dir/short.jsonl.gz" "$short"
echo "wrote $records records ($(du -h "$dir/huge.jsonl.gz" | cut -f1) gzip) in $(( $(date +%s) - t0 ))s"

peak_kb() { sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$1"; }
wall() { sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1"; }

fail=0
printf '%-22s %12s %14s %10s\n' planner "peak RSS MiB" "short RSS MiB" "wall"
for p in none taot echo llep lplb "taot-split=taot:--taot-phase3=split" "lplb-exact=lplb:--lplb-solver=exact"; do
    TAOTSIM_NO_PROGRESS=1 /usr/bin/time -v "$bin" replay "$dir/short.jsonl.gz" --planners "$p" --format json \
        -o "$dir/short.json" 2>"$dir/short.time"
    if ! TAOTSIM_NO_PROGRESS=1 /usr/bin/time -v "$bin" replay "$dir/huge.jsonl.gz" --planners "$p" --format json \
        -o "$dir/huge.json" 2>"$dir/huge.time"; then
        echo "FAIL $p: replay failed"; tail -5 "$dir/huge.time"; fail=1; continue
    fi
    big=$(peak_kb "$dir/huge.time")
    small=$(peak_kb "$dir/short.time")
    printf '%-22s %12d %14d %10s\n' "${p%%=*}" $((big / 1024)) $((small / 1024)) "$(wall "$dir/huge.time")"
    if [ $((big - small)) -gt $((flat_mb * 1024)) ]; then
        echo "FAIL $p: peak RSS grew from $((small / 1024)) to $((big / 1024)) MiB between $short and $records records"
        fail=1
    fi
    if [ "$big" -gt $((max_mb * 1024)) ]; then
        echo "FAIL $p: peak RSS $((big / 1024)) MiB above $max_mb MiB"
        fail=1
    fi
    grep -q "\"record_count\":[[:space:]]*$records" "$dir/huge.json" || {
        echo "FAIL $p: result does not count $records records"; fail=1; }
done

# Progress: only when stderr is a terminal; script gives the replay one.
script -qc "\"$bin\" replay \"$dir/huge.jsonl.gz\" --planners none -o \"$dir/tty.md\"" "$dir/typescript" \
    >/dev/null 2>&1 </dev/null || true
if grep -q "replay: [0-9]*/[0-9]* ([0-9]*%)" "$dir/typescript"; then
    echo "progress line seen on a terminal: $(tr '\r' '\n' <"$dir/typescript" | grep -m1 'replay: [0-9]')"
else
    echo "FAIL: no progress line on a terminal"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "huge trace: ok"
exit "$fail"
