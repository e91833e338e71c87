#!/usr/bin/env python3
"""Writes the import test inputs into DIR, each with the same counts as a
reference JSON trace (trace-format.md) computed here, independently of the C
readers. The .npy files are written by numpy itself (np.save and
np.lib.format.write_array for versions 2.0 and 3.0); the .safetensors files
are numpy bytes behind a header built as the format describes it; the
Megatron directories hold router_trace_rank{N}.jsonl lines as json.dumps
writes them.

DIR/cases.txt lists one case a line: NAME|INPUT|OPTIONS|REFERENCE (OPTIONS
are the reader options convert and replay need, e.g. "--ep 4").

Usage: make_data.py DIR [--big-npy BYTES] [--big-megatron CALLS]
(the big inputs are for bench --read, not for the tests)."""
import gzip
import json
import os
import struct
import sys

import numpy as np

HEADER = {"format": "moe-routing-trace", "version": 1}


def reference(path, experts, ep, records, topk=None):
    doc = dict(HEADER, experts=experts, ep=ep)
    if topk:
        doc["topk"] = topk
    doc["records"] = records
    with open(path, "w") as f:
        json.dump(doc, f)


def records_from_totals(arr):
    """[L,E] or [T,L,E] -> records of expert_counts, all-zero rows skipped."""
    if arr.ndim == 2:
        arr = arr[np.newaxis]
    out = []
    for t in range(arr.shape[0]):
        for layer in range(arr.shape[1]):
            row = arr[t, layer]
            if not row.any():
                continue
            out.append({"microbatch": t, "layer": layer, "expert_counts": [int(v) for v in row]})
    return out


def records_from_ranks(arr):
    """[T,L,R,E] -> records of per-source counts, all-zero records skipped."""
    out = []
    for t in range(arr.shape[0]):
        for layer in range(arr.shape[1]):
            block = arr[t, layer]
            if not block.any():
                continue
            out.append({"microbatch": t, "layer": layer, "counts": [[int(v) for v in r] for r in block]})
    return out


def write_npy(path, arr, version):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype name, array) in data order."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    blobs, offset = [], 0
    for name, dtype, arr in tensors:
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def counts(rng, shape, dtype, hot=40):
    arr = rng.integers(0, hot, size=shape)
    return arr.astype(dtype)


def megatron_dir(path, rng, ranks, steps, microbatches, layers, topk, experts_seen, gz_rank=None,
                 extras=True):
    """Writes the directory and returns (records, experts) of the reference:
    one record per (step, call i of a layer in that step, layer), counts[N][e]
    the bincount of rank N's ids, microbatches numbered on across steps."""
    os.makedirs(path, exist_ok=True)
    lines = {n: [] for n in range(ranks)}
    records = []
    mb_base = 0
    max_id = -1
    for step in range(steps):
        calls = {}
        for mb in range(microbatches):
            for layer in range(layers):
                i = calls.get(layer, 0)
                calls[layer] = i + 1
                rec = {"microbatch": mb_base + i, "layer": layer, "counts": []}
                for n in range(ranks):
                    tokens = int(rng.integers(1, 9))
                    ids = [sorted(rng.choice(experts_seen, size=topk, replace=False).tolist()) for _ in range(tokens)]
                    max_id = max(max_id, max(max(r) for r in ids))
                    row = [0] * experts_seen
                    for r in ids:
                        for e in r:
                            row[e] += 1
                    rec["counts"].append(row)
                    call = {"step": step, "stage": "pre_dispatch", "block": "decoder", "layer": layer, "rank": n,
                            "num_tokens": tokens, "topk": topk, "top_indices": ids}
                    lines[n].append(json.dumps(call))
                records.append(rec)
            if extras:
                # an MTP call and another stage's call: neither is a decoder record
                for n in range(ranks):
                    lines[n].append(json.dumps({"step": step, "stage": "pre_dispatch", "block": "mtp", "mtp_idx": 0,
                                                "layer": 0, "rank": n, "num_tokens": 1, "topk": topk,
                                                "top_indices": [list(range(topk))]}))
                    lines[n].append(json.dumps({"step": step, "stage": "post_combine", "block": "decoder",
                                                "layer": 0, "rank": n, "num_tokens": 1, "topk": topk,
                                                "top_indices": [list(range(topk))]}))
        mb_base += max(calls.values())
    experts = -(-(max_id + 1) // ranks) * ranks
    for rec in records:
        for row in rec["counts"]:
            row.extend([0] * (experts - len(row)))
    for n in range(ranks):
        text = "\n".join(lines[n]) + "\n"
        name = os.path.join(path, "router_trace_rank%d.jsonl" % n)
        if n == gz_rank:
            with gzip.open(name + ".gz", "wt") as f:
                f.write(text)
        else:
            with open(name, "w") as f:
                f.write(text)
    return records, experts


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    args = sys.argv[2:]
    if args and args[0] == "--big-npy":
        # T x L x R x E int64, about BYTES in all: bench --read
        want = int(args[1])
        L, R, E = 16, 8, 256
        T = max(1, want // (L * R * E * 8))
        path = os.path.join(out, "big.npy")
        arr = np.lib.format.open_memmap(path, mode="w+", dtype="<i8", shape=(T, L, R, E))
        rng = np.random.default_rng(5)
        for t in range(T):
            arr[t] = rng.integers(0, 16, size=(L, R, E))
        arr.flush()
        print(path)
        return
    if args and args[0] == "--big-megatron":
        # CALLS router calls in all (over 8 ranks): bench --read
        calls = int(args[1])
        ranks, layers, topk, experts = 8, 16, 8, 256
        per_rank = max(1, calls // ranks)
        path = os.path.join(out, "megatron-big")
        os.makedirs(path, exist_ok=True)
        rng = np.random.default_rng(6)
        for n in range(ranks):
            with open(os.path.join(path, "router_trace_rank%d.jsonl" % n), "w") as f:
                for c in range(per_rank):
                    step, layer = c // (layers * 4), c % layers
                    ids = rng.integers(0, experts, size=(64, topk)).tolist()
                    f.write(json.dumps({"step": step, "stage": "pre_dispatch", "block": "decoder", "layer": layer,
                                        "rank": n, "num_tokens": 64, "topk": topk, "top_indices": ids}) + "\n")
        print(path)
        return

    rng = np.random.default_rng(2024)
    cases = []

    def case(name, inp, opts, ref):
        cases.append("|".join([name, inp, opts, ref]))

    # .npy: every version, dtype and shape
    a = counts(rng, (6, 16), "<i4")
    np.save(os.path.join(out, "le-i4.npy"), a)  # numpy picks version 1.0
    reference(os.path.join(out, "le-i4.ref.json"), 16, 4, records_from_totals(a))
    case("npy [L,E] <i4 v1", "le-i4.npy", "--ep 4", "le-i4.ref.json")

    b = counts(rng, (5, 3, 16), "<i8")
    b[1] = 0  # a ring buffer's unused row
    b[3, 2] = 0
    write_npy(os.path.join(out, "tle-i8-v2.npy"), b, (2, 0))
    reference(os.path.join(out, "tle-i8-v2.ref.json"), 16, 8, records_from_totals(b))
    case("npy [T,L,E] <i8 v2 (zero rows)", "tle-i8-v2.npy", "--ep 8", "tle-i8-v2.ref.json")

    c = counts(rng, (3, 2, 16), "<u4")
    write_npy(os.path.join(out, "tle-u4-v3.npy"), c, (3, 0))
    reference(os.path.join(out, "tle-u4-v3.ref.json"), 16, 2, records_from_totals(c))
    case("npy [T,L,E] <u4 v3", "tle-u4-v3.npy", "--ep 2", "tle-u4-v3.ref.json")

    d = counts(rng, (3, 2, 4, 16), "<u8")
    np.save(os.path.join(out, "tlre-u8.npy"), d)
    reference(os.path.join(out, "tlre-u8.ref.json"), 16, 4, records_from_ranks(d))
    case("npy [T,L,R,E] <u8", "tlre-u8.npy", "", "tlre-u8.ref.json")

    e = counts(rng, (2, 3, 4, 16), "<f4")
    np.save(os.path.join(out, "tlre-f4.npy"), e)
    reference(os.path.join(out, "tlre-f4.ref.json"), 16, 4, records_from_ranks(e))
    case("npy [T,L,R,E] <f4", "tlre-f4.npy", "", "tlre-f4.ref.json")

    f = counts(rng, (4, 2, 16), "<f8")
    write_npy(os.path.join(out, "tle-f8-v2.npy"), f, (2, 0))
    reference(os.path.join(out, "tle-f8-v2.ref.json"), 16, 4, records_from_totals(f))
    case("npy [T,L,E] <f8 v2", "tle-f8-v2.npy", "--ep 4", "tle-f8-v2.ref.json")

    # safetensors: the default tensor, --tensor, every dtype
    g = counts(rng, (3, 2, 4, 16), "<i8")
    g[2, 1] = 0
    other = rng.normal(size=(7,)).astype("<f4")
    write_safetensors(os.path.join(out, "counts.safetensors"),
                      [("other", "F32", other), ("counts", "I64", g)], {"model": "test", "step": "12"})
    reference(os.path.join(out, "counts.ref.json"), 16, 4, records_from_ranks(g))
    case("safetensors counts I64 [T,L,R,E]", "counts.safetensors", "", "counts.ref.json")
    for dtype, np_dtype in (("I32", "<i4"), ("U32", "<u4"), ("U64", "<u8"), ("F32", "<f4"), ("F64", "<f8")):
        h = counts(rng, (4, 3, 16), np_dtype)
        name = "load-%s.safetensors" % dtype.lower()
        write_safetensors(os.path.join(out, name), [("expert_load", dtype, h)])
        refname = "load-%s.ref.json" % dtype.lower()
        reference(os.path.join(out, refname), 16, 4, records_from_totals(h))
        case("safetensors --tensor %s [T,L,E]" % dtype, name, "--ep 4 --tensor expert_load", refname)

    # Megatron directories
    recs, experts = megatron_dir(os.path.join(out, "megatron"), rng, ranks=4, steps=3, microbatches=2, layers=3,
                                 topk=2, experts_seen=14)
    reference(os.path.join(out, "megatron.ref.json"), experts, 4, recs, topk=2)
    case("megatron (E inferred)", "megatron", "", "megatron.ref.json")
    recs, _ = megatron_dir(os.path.join(out, "megatron-gz"), rng, ranks=2, steps=2, microbatches=3, layers=2,
                           topk=3, experts_seen=8, gz_rank=1, extras=False)
    for rec in recs:
        for row in rec["counts"]:
            row.extend([0] * (12 - len(row)))
    reference(os.path.join(out, "megatron-gz.ref.json"), 12, 2, recs, topk=3)
    case("megatron --experts 12, a .jsonl.gz rank", "megatron-gz", "--experts 12", "megatron-gz.ref.json")

    # CSV: any tag column, and per-rank rows
    k = counts(rng, (2, 2, 2, 8), "<i8")
    with open(os.path.join(out, "ranks.csv"), "w") as fh:
        fh.write("index,skew,iteration,layer_idx,rank,%s\n" % ",".join(str(i) for i in range(8)))
        n = 0
        for t in range(2):
            for layer in range(2):
                for r in (1, 0):
                    fh.write("%d,0.9,%d,%d,%d,%s\n" % (n, t, layer, r, ",".join(str(int(v)) for v in k[t, layer, r])))
                    n += 1
    recs = records_from_ranks(k)
    for rec in recs:
        rec["dataset"] = "0.9"
    reference(os.path.join(out, "ranks.ref.json"), 8, 2, recs)
    case("csv with a skew tag and a rank column", "ranks.csv", "", "ranks.ref.json")

    with open(os.path.join(out, "cases.txt"), "w") as fh:
        fh.write("\n".join(cases) + "\n")


if __name__ == "__main__":
    main()
