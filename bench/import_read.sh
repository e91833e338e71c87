#!/bin/sh
# Read throughput of the imports (issue 25), two builds side by side in one
# run: bench/import_read.sh BEFORE_TAOTSIM AFTER_TAOTSIM [DIR]
# Writes into DIR (default /tmp/taotsim-import-bench, removed after) one
# int32 [250, 61, 16, 256] array (250 MB) as .npy (np.save), .pt
# (torch.save of {"logical_count": ...}), stored .npz (np.savez) and
# compressed .npz (np.savez_compressed), and a Megatron TP=2, PP=2, EP=4
# directory of 16 rank files. Each file is read by each build 3 times,
# alternating; the table gives the best wall-clock MB/s (taotsim bench
# --read) and the least CPU time (perf stat task-clock, when perf is there).
# The Megatron directory is read with --megatron-parallel by AFTER and as one
# EP group of 16 ranks by BEFORE (a build without the flag): the same bytes.
# bench --read takes no format options, so the layout is timed around
# taotsim validate (MB/s of JSON Lines; the BEFORE row is bench --read's).
# ONLY="a.pt megatron" limits the inputs measured.
set -u
before=$1 after=$2 dir=${3:-/tmp/taotsim-import-bench}
py=/usr/bin/python3
mkdir -p "$dir" || exit 2
trap 'rm -rf "$dir"' EXIT
"$py" - "$dir" <<'PY' || exit 2
import json, os, sys
import numpy as np, torch
d = sys.argv[1]
a = np.random.default_rng(1).integers(0, 50, size=(250, 61, 16, 256), dtype=np.int32)
np.save(os.path.join(d, "a.npy"), a)
torch.save({"rank": 0, "logical_count": torch.from_numpy(a)}, os.path.join(d, "a.pt"))
np.savez(os.path.join(d, "a.npz"), counts=a)
np.savez_compressed(os.path.join(d, "az.npz"), counts=a)
# Megatron TP=2, PP=2, EP=4 on 16 ranks: 2 layers per stage, 250 microbatches,
# 128 tokens x topk 8 per call, 64 experts
m = os.path.join(d, "megatron")
os.makedirs(m)
rng = np.random.default_rng(2)
for g in range(16):
    with open(os.path.join(m, f"router_trace_rank{g}.jsonl"), "w") as f:
        for mb in range(250):
            for layer in range(2):
                ids = np.argsort(rng.random((128, 64)), axis=1)[:, :8].tolist()
                f.write(json.dumps({"step": 0, "stage": "pre_dispatch", "block": "decoder", "layer": layer,
                                    "rank": g, "num_tokens": 128, "topk": 8, "top_indices": ids}) + "\n")
PY
export TAOTSIM_NO_PROGRESS=1
printf '| input | build | best MB/s | least CPU ms |\n|---|---|---:|---:|\n'
for f in ${ONLY:-a.npy a.pt a.npz az.npz megatron}; do
    for which in before after; do eval "echo 0 >\"$dir/$which.mbs\"; echo 999999 >\"$dir/$which.cpu\""; done
    for run in 1 2 3; do
        for which in before after; do
            bin=$before opts=""
            [ "$which" = after ] && bin=$after
            # the layout flag is new: the build before reads the files as one EP group
            [ "$which" = after ] && [ "$f" = megatron ] && opts="--megatron-parallel tp=2,pp=2,ep=4"
            # bench --read takes no format options: a layout is timed through validate
            cmd="bench --read $dir/$f --format csv"
            [ -n "$opts" ] && cmd="validate $dir/$f $opts --rpn 8"
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            mbs=$("$bin" $cmd 2>/dev/null | tail -1 | cut -d, -f5) || mbs=0
            t1=$(date +%s.%N)
            if [ -n "$opts" ]; then
                bytes=$(cat "$dir/$f"/* | wc -c)
                mbs=$(awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / 1e6 / (z - a) }')
            fi
            cpu=999999
            if command -v perf >/dev/null 2>&1; then
                # shellcheck disable=SC2086
                cpu=$(perf stat -x, -e task-clock "$bin" $cmd 2>&1 >/dev/null | grep task-clock | cut -d, -f1 | cut -d. -f1)
            fi
            awk -v a="$mbs" -v b="$(cat "$dir/$which.mbs")" 'BEGIN { print (a + 0 > b + 0) ? a : b }' >"$dir/$which.mbs.new"
            mv "$dir/$which.mbs.new" "$dir/$which.mbs"
            [ "${cpu:-999999}" -lt "$(cat "$dir/$which.cpu")" ] 2>/dev/null && echo "$cpu" >"$dir/$which.cpu"
        done
    done
    for which in before after; do
        printf '| %s | %s | %s | %s |\n' "$f" "$which" "$(cat "$dir/$which.mbs")" "$(cat "$dir/$which.cpu")"
    done
done
