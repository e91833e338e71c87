#!/usr/bin/env bash
# ThreadSanitizer over the studies' parallel grid at -j 4 (issue 11): builds
# taotsim with -Db_sanitize=thread in build-tsan and runs every study on a
# small grid; any data race halts with a report. Usage: tests/tsan.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=build-tsan
if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" -Db_sanitize=thread -Dbuildtype=debugoptimized -Dtests=disabled -Dcuda=disabled >/dev/null
fi
ninja -C "$dir" taotsim >/dev/null
bin=$dir/taotsim
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 TAOTSIM_NO_PROGRESS=1
run() { # description, args...
    local what=$1
    shift
    if "$bin" "$@" >/dev/null; then echo "ok   $what"; else echo "FAIL $what"; exit 1; fi
}
run "table1 -j 4" table1 -j 4 --planners taot,echo,llep,lplb,eplb
run "sweep -j 4" sweep -j 4 --lambda-plan 1,3,5 --lambda-eval 1,3
run "ablation -j 4" ablation -j 4 --seeds 1,2 --microbatches 2 --layers 1
run "scaling -j 4" scaling -j 4 --eps 8,16 --imbalances 0.3,0.7 --slot-list 1,2 --microbatches 2 --layers 1 --no-timing
# replay -j parses JSON Lines on helper threads (issue 26), and an indexed
# shard seeks and parses in parallel too
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" gen -o "$tmp/t.jsonl.gz" --ep 8 --experts 32 --topk 4 --tokens 64 --microbatches 200 --layers 4 \
    --hot-fraction 0.1 2>/dev/null
zcat "$tmp/t.jsonl.gz" >"$tmp/t.jsonl"
run "replay .jsonl -j 4" replay "$tmp/t.jsonl" -j 4 --planners none,taot,echo,lplb,eplb
run "replay .jsonl.gz -j 3" replay "$tmp/t.jsonl.gz" -j 3 --planners taot,llep
# several gzip members (about 1 MiB of text each), so the planning threads
# inflate members too (the first member is always the reading thread's)
"$bin" gen -o "$tmp/m.jsonl.gz" --ep 8 --experts 32 --topk 4 --tokens 64 --microbatches 2000 --layers 4 \
    --hot-fraction 0.1 --gzip-level 1 --generator 2 2>/dev/null
run "replay blocked .jsonl.gz -j 4 (members inflated in parallel)" replay "$tmp/m.jsonl.gz" -j 4 --planners none,echo
# generator version 3 on 4 threads: the Poisson tables the record's thread
# builds, read by the others; calibrated on a sample, then written in one pass
run "gen --generator 3 -j 4" gen -j 4 --generator 3 -o "$tmp/g3.jsonl" --ep 32 --tokens 256 --microbatches 200 \
    --layers 2
"$bin" index --every 64 "$tmp/t.jsonl" >/dev/null
run "indexed shard -j 4" replay "$tmp/t.jsonl" -j 4 --planners none,echo --shard 2/5 -o "$tmp/p.json"
echo "tsan: every study, replay and gen ran at -j 3-4 without a data race"
