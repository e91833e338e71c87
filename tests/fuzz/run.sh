#!/bin/sh
# Builds every fuzz target and runs each for SECONDS (default 30), one after
# the other, starting from its seed corpus in tests/fuzz/corpus/<target>.
# New interesting inputs go to a scratch corpus, not into the source tree.
# Fails (exit 1) on the first crash, leak, sanitizer report or timeout; the
# crashing input is left as build-fuzz/<target>-crash-* to be added to the
# corpus and turned into a regression test.
# Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-30}
[ $# -gt 0 ] && shift
targets=${*:-fuzz_trace_json fuzz_trace_jsonl fuzz_trace_csv fuzz_trace_npy fuzz_trace_safetensors fuzz_trace_megatron fuzz_planners fuzz_failif fuzz_zip fuzz_pickle fuzz_layout}
out=${FUZZ_OUT:-$root/build-fuzz}
"$root/tests/fuzz/build.sh" "$out"
status=0
for t in $targets; do
    work=$(mktemp -d)
    echo "== $t for ${secs}s"
    # -timeout: one input may take at most 20 s; -rss_limit_mb keeps a
    # runaway allocation a finding rather than the machine's problem.
    if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$out/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$out/$t-" -print_final_stats=1 \
        "$work" "$root/tests/fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
        echo "FAIL $t: see $out/$t.log"
        grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$out/$t.log" | head -10
        status=1
    else
        grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$out/$t.log" | head -2
    fi
    rm -rf "$work"
done
exit $status
