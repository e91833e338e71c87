#!/usr/bin/env python3
"""Writes Megatron-Core router trace directories under tensor, pipeline and
expert parallelism (issue 25), and the JSON Lines trace each must read as.

Megatron places global rank g on its expert grid in the order of the order
string (default tp-cp-ep-dp-pp, the first varying fastest): expert-TP rank
(etp, default tp), EP rank, expert data parallel group and pipeline stage.
A stage holds a contiguous block of layers and numbers them from 0 in its
"layer" field; each rank writes router_trace_rank{g}.jsonl with its global
rank in "rank". With sequence parallelism every TP rank routes its own slice
of the tokens, so an EP rank's row is the sum of its expert-TP ranks' calls;
without it (tokens=same), every TP rank routes the same tokens.

The reference records come out in the order the reader reads them: expert
data parallel group, then stage, then microbatch, then layer. This script
places ranks with its own code (not the C reader's).

Usage: make_megatron_fixtures.py DIR          write the fixtures into DIR
       make_megatron_fixtures.py --check DIR  regenerate and compare
"""
import json
import os
import random
import shutil
import sys
import tempfile

ORDER = "tp-cp-ep-dp-pp"


def place(g, sizes, order=ORDER):
    """{dim: coordinate} of global rank g; sizes {dim: size}, order fastest first."""
    out, stride = {}, 1
    for dim in order.split("-"):
        out[dim] = (g // stride) % sizes[dim]
        stride *= sizes[dim]
    return out


def write_dir(d, ref, tp, pp, ep, world, layers, experts, topk, steps, mbs, seed, same_tokens=False,
              dense_last=False, dense_first=False, recompute=False):
    """One run. dense_last: the last layer of every stage has no router;
    dense_first: the first layer of the model has none (first-k-dense).
    recompute: activation recompute runs each microbatch's routers again in
    the backward pass, last layer first, on the same tokens (ref: None)."""
    etp = tp
    edp = world // (etp * ep * pp)
    sizes = {"tp": etp, "cp": 1, "ep": ep, "dp": edp, "pp": pp}
    places = [place(g, sizes) for g in range(world)]
    lps = layers // pp
    rng = random.Random(seed)
    lines = {g: [] for g in range(world)}
    records = []  # (group, stage, step, mb, layer, counts)
    for step in range(steps):
        for mb in range(mbs):
            forward = {g: len(lines[g]) for g in range(world)}
            for layer in range(layers):
                stage = layer // lps
                if dense_last and layer % lps == lps - 1:
                    continue
                if dense_first and layer == 0:
                    continue
                for group in range(edp):
                    counts = [[0] * experts for _ in range(ep)]
                    for j in range(ep):
                        shared = None
                        for t in range(etp):
                            g = next(x for x in range(world) if places[x] == {"tp": t, "cp": 0, "ep": j, "dp": group,
                                                                               "pp": stage})
                            n = 2 + (step + mb + layer + j + t) % 3
                            if same_tokens and shared is not None:
                                rows = shared
                            else:
                                rows = [rng.sample(range(experts), topk) for _ in range(n)]
                                shared = rows
                            if not same_tokens or t == 0:
                                for row in rows:
                                    for e in row:
                                        counts[j][e] += 1
                            lines[g].append({"step": step, "stage": "pre_dispatch", "block": "decoder",
                                             "layer": layer - stage * lps, "rank": g, "num_tokens": len(rows),
                                             "topk": topk, "top_indices": rows})
                    records.append((group, stage, step, mb, layer, counts))
            if recompute:
                for g in range(world):
                    lines[g].extend(reversed(lines[g][forward[g]:]))
    os.makedirs(d, exist_ok=True)
    for g in range(world):
        with open(os.path.join(d, f"router_trace_rank{g}.jsonl"), "w") as f:
            for x in lines[g]:
                f.write(json.dumps(x) + "\n")
    if ref is None:
        return
    records.sort(key=lambda r: (r[0], r[1], r[2], r[3], r[4]))
    with open(ref, "w") as f:
        f.write(json.dumps({"format": "moe-routing-trace", "version": 1, "experts": experts, "ep": ep,
                            "ranks_per_node": 8, "topk": topk}, separators=(",", ":")) + "\n")
        for group, stage, step, mb, layer, counts in records:
            rec = {"microbatch": step * mbs + mb, "layer": layer}
            if edp > 1:
                rec["dataset"] = f"ep-group-{group}"
            rec["counts"] = counts
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def write_all(d):
    # the docs' example: TP=2, PP=2, EP=4 on 16 ranks (one expert data parallel group)
    write_dir(os.path.join(d, "tp2pp2ep4"), os.path.join(d, "tp2pp2ep4.jsonl"), 2, 2, 4, 16, 4, 8, 2, 2, 2, 1)
    # 32 ranks: two expert data parallel groups
    write_dir(os.path.join(d, "tp2pp2ep4x2"), os.path.join(d, "tp2pp2ep4x2.jsonl"), 2, 2, 4, 32, 4, 8, 2, 1, 2, 2)
    # inference without sequence parallelism: every TP rank routes the same tokens
    write_dir(os.path.join(d, "tp2pp2ep2same"), os.path.join(d, "tp2pp2ep2same.jsonl"), 2, 2, 2, 8, 4, 4, 1, 1, 2,
              3, same_tokens=True)
    # the last layer of each stage has no router: the layers per stage need --num-layers
    write_dir(os.path.join(d, "pp2dense"), os.path.join(d, "pp2dense.jsonl"), 1, 2, 2, 4, 6, 4, 2, 1, 1, 4,
              dense_last=True)
    # the model's first layer has no router: stage 0 records fewer calls than
    # stage 1, which only pipeline parallelism explains
    write_dir(os.path.join(d, "pp2first"), os.path.join(d, "pp2first.jsonl"), 1, 2, 2, 4, 4, 8, 2, 1, 2, 5,
              dense_first=True)
    # activation recompute: every router call comes twice in its step
    write_dir(os.path.join(d, "recompute"), None, 1, 1, 2, 2, 2, 8, 2, 2, 2, 6, recompute=True)


def check(d):
    scratch = tempfile.mkdtemp()
    try:
        write_all(scratch)
        bad = 0
        for base, _, files in os.walk(scratch):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(base, f), scratch)
                old = os.path.join(d, rel)
                if not os.path.exists(old) or open(old, "rb").read() != open(os.path.join(scratch, rel), "rb").read():
                    print(f"make_megatron_fixtures.py: {rel} differs from the committed fixture")
                    bad += 1
        return 1 if bad else 0
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    write_all(sys.argv[1])
