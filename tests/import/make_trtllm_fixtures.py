#!/usr/bin/env python3
"""Writes TensorRT-LLM expert-statistics fixtures (issue 25) the way the
stack writes them: the PyTorch backend's ExpertStatistic counts each MoE
call's routed expert ids with torch.bincount(ids.flatten(), minlength=E),
adds the counts of repeated calls of one layer in one iteration into the
tensor named "{iter}_{layer}", and at the end of the window rank 0 writes
meta_info.json ({"num_experts", "num_experts_per_token"}) and every rank r
writes rank{r}.safetensors. Next to each directory it writes the JSON Lines
trace it must replay like (the same bincounts, written here independently
of the C reader), and the malformed directories the reader must refuse.

safetensors files are written byte for byte as safetensors.torch.save_file
does (Debian 12 has no python3-safetensors): an 8-byte little-endian header
length, a compact JSON header ("__metadata__" first when given, then the
tensors sorted by dtype, largest first, then by name), padded with spaces to
a multiple of 8, then the tensors' bytes in that order.

Usage: make_trtllm_fixtures.py DIR          write the fixtures into DIR
       make_trtllm_fixtures.py --check DIR  regenerate into a scratch directory
                                            and compare with DIR (exit 1 when
                                            they differ, 77 without torch)
"""
import json
import os
import shutil
import struct
import sys
import tempfile

try:
    import torch
except ImportError as e:
    print(f"make_trtllm_fixtures.py: {e}: skipped (apt-get install python3-torch)")
    sys.exit(77)

ST_DTYPE = {torch.int64: "I64", torch.int32: "I32", torch.float32: "F32"}
# safetensors' Dtype enum order (the serializer sorts by it, largest first)
ST_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
            "I64", "U64"]


def save_file(tensors, path, metadata=None):
    """safetensors.torch.save_file, byte for byte."""
    items = sorted(tensors.items(), key=lambda kv: (-ST_ORDER.index(ST_DTYPE[kv[1].dtype]), kv[0]))
    header, blobs, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in items:
        data = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class Recorder:
    """One rank's ExpertStatistic: a window of iterations, bincounts per (iter, layer)."""

    def __init__(self, rank, experts):
        self.rank, self.experts, self.records, self.meta = rank, experts, {}, None

    def add(self, it, layer, ids):
        if self.meta is None:
            self.meta = {"num_experts": self.experts, "num_experts_per_token": ids.size(-1)}
        counts = torch.bincount(ids.flatten(), minlength=self.experts)
        key = f"{it}_{layer}"
        if key not in self.records:
            self.records[key] = counts.cpu()
        else:
            self.records[key] += counts.cpu()

    def write(self, d, extra_meta=None):
        os.makedirs(d, exist_ok=True)
        if self.rank == 0:
            meta = dict(self.meta)
            meta.update(extra_meta or {})
            with open(os.path.join(d, "meta_info.json"), "w") as f:
                json.dump(meta, f)
        save_file(self.records, os.path.join(d, f"rank{self.rank}.safetensors"))


def run(ranks, experts, topk, iters, layers, seed, same_tokens=False):
    """Routes tokens on every rank (attention DP: each rank its own tokens;
    same_tokens: every rank the same ones, as with attention DP off). The
    last layer is called twice per iteration (its counts add up)."""
    g = torch.Generator().manual_seed(seed)
    recs = [Recorder(r, experts) for r in range(ranks)]
    for it in iters:
        for layer in layers:
            calls = 2 if layer == layers[-1] else 1
            for _ in range(calls):
                shared = None
                for r in range(ranks):
                    tokens = 3 + (it + layer + r) % 5
                    if same_tokens and shared is not None:
                        ids = shared
                    else:
                        scores = torch.rand(tokens, experts, generator=g) + torch.linspace(0, 0.5, experts)
                        ids = torch.topk(scores, topk, dim=-1).indices.to(torch.int32)
                        shared = ids
                    recs[r].add(it, layer, ids)
    return recs


def write_jsonl(recs, path, topk):
    """The reference: one record per (iteration, layer), row r = rank r's bincount."""
    keys = sorted({tuple(map(int, k.split("_"))) for k in recs[0].records})
    E = recs[0].experts
    with open(path, "w") as f:
        f.write(json.dumps({"format": "moe-routing-trace", "version": 1, "experts": E, "ep": len(recs),
                            "ranks_per_node": 8, "topk": topk}, separators=(",", ":")) + "\n")
        for it, layer in keys:
            rows = [rec.records[f"{it}_{layer}"].tolist() for rec in recs]
            f.write(json.dumps({"microbatch": it, "layer": layer, "counts": rows}, separators=(",", ":")) + "\n")


def good(d):
    recs = run(4, 8, 2, range(100, 103), [3, 4, 5], seed=1)
    for rec in recs:
        rec.write(os.path.join(d, "stats"))
    write_jsonl(recs, os.path.join(d, "stats.jsonl"), 2)
    # the dispatch-dump variant: ep_size and experts_per_rank in the meta,
    # and rank{r}_numtokens.json beside the statistics
    recs = run(2, 8, 2, range(0, 2), [0, 1], seed=2)
    for rec in recs:
        rec.write(os.path.join(d, "dispatch"), {"ep_size": 2, "experts_per_rank": 4})
        tokens = {k: 4 for k in rec.records}
        with open(os.path.join(d, "dispatch", f"rank{rec.rank}_numtokens.json"), "w") as f:
            json.dump(tokens, f)
    write_jsonl(recs, os.path.join(d, "dispatch.jsonl"), 2)
    # attention DP off: every rank routes the same tokens
    for rec in run(2, 4, 1, range(5, 7), [0], seed=3, same_tokens=True):
        rec.write(os.path.join(d, "same"))


def malformed(d):
    def base(_what):
        return run(2, 4, 2, range(0, 2), [0, 1], seed=4)
    # rank 1 misses a tensor rank 0 has
    recs = base("disagree")
    del recs[1].records["1_0"]
    for rec in recs:
        rec.write(os.path.join(d, "bad-disagree"))
    # rank 1's file is missing, rank 2's is there
    recs = run(3, 6, 2, range(0, 1), [0], seed=5)
    for rec in (recs[0], recs[2]):
        rec.write(os.path.join(d, "bad-missing-rank"))
    # meta_info.json without num_experts
    recs = base("meta")
    for rec in recs:
        rec.write(os.path.join(d, "bad-meta"))
    with open(os.path.join(d, "bad-meta", "meta_info.json"), "w") as f:
        json.dump({"num_experts_per_token": 2}, f)
    # a tensor of the wrong length
    recs = base("shape")
    recs[1].records["0_1"] = torch.zeros(5, dtype=torch.int64)
    for rec in recs:
        rec.write(os.path.join(d, "bad-shape"))
    # a tensor name that is no "{iter}_{layer}"
    recs = base("name")
    recs[0].records["x_1"] = torch.zeros(4, dtype=torch.int64)
    for rec in recs:
        rec.write(os.path.join(d, "bad-name"))
    # a negative count
    recs = base("negative")
    recs[1].records["1_1"][2] = -3
    for rec in recs:
        rec.write(os.path.join(d, "bad-negative"))
    # float counts
    recs = base("float")
    recs[0].records["0_0"] = recs[0].records["0_0"].to(torch.float32)
    for rec in recs:
        rec.write(os.path.join(d, "bad-dtype"))
    # rank 1's file cut short
    recs = base("truncated")
    for rec in recs:
        rec.write(os.path.join(d, "bad-truncated"))
    p = os.path.join(d, "bad-truncated", "rank1.safetensors")
    data = open(p, "rb").read()
    open(p, "wb").write(data[:-10])
    # ep_size that the rank files do not match
    recs = base("ep")
    for rec in recs:
        rec.write(os.path.join(d, "bad-ep-size"), {"ep_size": 4})


def write_all(d):
    os.makedirs(d, exist_ok=True)
    good(d)
    malformed(d)


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
                    print(f"make_trtllm_fixtures.py: {rel} differs from the committed fixture")
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
