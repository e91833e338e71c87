#!/usr/bin/env python3
"""Writes the .pt and .npz import fixtures (issue 25) with the real writers:
torch.save for SGLang's expert-distribution dumps, np.savez and
np.savez_compressed for .npz. Next to each input it writes the .npy it must
replay like (np.save of the same counts, folded to logical experts here,
independently of the C reader), and the malformed inputs the reader must
refuse.

Usage: make_pt_fixtures.py DIR         write the fixtures into DIR
       make_pt_fixtures.py --check DIR  regenerate into a scratch directory
                                        and compare with DIR (exit 1 when they
                                        differ, 77 without torch or numpy)
"""
import io
import os
import pickle
import shutil
import sys
import tempfile
import zipfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"make_pt_fixtures.py: {e}: skipped (apt-get install python3-torch python3-numpy)")
    sys.exit(77)


def counts(shape, salt):
    """Deterministic small counts with an all-zero first row (unfilled ring buffer slot)."""
    n = int(np.prod(shape))
    a = (np.arange(n, dtype=np.int64) * 7 + salt * 13) % 11
    a = a.reshape(shape)
    a[(0,) * (len(shape) - 1)] = 0
    return a


def stat_dump(d):
    lc = counts((4, 3, 8), 1).astype(np.int32)
    lc[3] = 0  # ring buffer rows never filled
    torch.save({"rank": 0, "logical_count": torch.from_numpy(lc),
                "average_utilization_rate_over_window": 0.75},
               os.path.join(d, "expert_distribution_recorder_1700000000.0.pt"))
    np.save(os.path.join(d, "stat.npy"), lc)
    # the same archive with every entry deflated (torch.save stores them):
    # the reader inflates instead of reading in place
    src = os.path.join(d, "expert_distribution_recorder_1700000000.0.pt")
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(os.path.join(d, "deflated.pt"), "w") as out:
        for info in z.infolist():
            out.writestr(zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0)), z.read(info.filename),
                         compress_type=zipfile.ZIP_DEFLATED)
    # wrong dtype: float16 counts
    torch.save({"rank": 0, "logical_count": torch.from_numpy(lc.astype(np.float16))},
               os.path.join(d, "bad-dtype.pt"))


# per_pass / per_token: 2 ranks, 2 layers, 8 physical slots over 6 logical experts
L, P, E, R = 2, 8, 6, 2
MAP = np.array([[0, 1, 2, 3, 4, 5, 0, 3], [5, 4, 3, 2, 1, 0, 1, 1]], dtype=np.int64)


def fold(phys):
    """[L, P] physical counts -> [L, E] logical through MAP."""
    out = np.zeros((L, E), dtype=np.int64)
    for layer in range(L):
        for p in range(P):
            out[layer, MAP[layer, p]] += phys[layer, p]
    return out


def per_rank_dumps(d, per_token):
    passes = [3, 4, 5]
    ref = np.zeros((len(passes), L, R, E), dtype=np.int64)
    os.makedirs(d, exist_ok=True)
    for rank in range(R):
        records = []
        for t, fpid in enumerate(passes):
            rec = {"forward_pass_id": fpid, "rank": rank, "gatherer_key": "primary"}
            if per_token:
                tokens, k = 5, 2
                ids = ((np.arange(L * tokens * k) * (3 + rank) + t) % P).reshape(L, tokens, k).astype(np.int32)
                ids[:, -1, :] = -1  # padding
                phys = np.zeros((L, P), dtype=np.int64)
                for layer in range(L):
                    for v in ids[layer].ravel():
                        if v >= 0:
                            phys[layer, v] += 1
                rec["topk_ids_of_layer"] = torch.from_numpy(ids)
                rec["input_ids"] = torch.arange(tokens)
                rec["misc_objects"] = []
            else:
                phys = counts((L, P), rank * 5 + t + 2)
                if t == 0 and rank == 0:
                    phys[:] = 0  # an idle pass on one rank
            rec["global_physical_count"] = torch.from_numpy(phys)
            records.append(rec)
            ref[t, :, rank, :] += fold(phys)
        mode = "per_token" if per_token else "per_pass"
        torch.save({"records": records, "last_physical_to_logical_map": torch.from_numpy(MAP)},
                   os.path.join(d, f"expert_distribution_recorder_1700000000.0_{rank}.pt"))
    np.save(d + ".npy", ref)


def old_map_dump(d):
    """A per_pass dump whose last map leaves slot 7 of layer 1 empty (-1) while
    a record counted tokens there under an earlier map: a warning, not folded."""
    os.makedirs(d, exist_ok=True)
    m = MAP.copy()
    m[1, 7] = -1
    phys = counts((L, P), 9)
    phys[1, 7] = 4
    rec = {"forward_pass_id": 0, "rank": 0, "gatherer_key": "primary", "global_physical_count": torch.from_numpy(phys)}
    torch.save({"records": [rec], "last_physical_to_logical_map": torch.from_numpy(m)},
               os.path.join(d, "expert_distribution_recorder_1700000000.0_0.pt"))


def disagree_dump(d):
    """Two ranks whose last maps differ: an error naming both files."""
    os.makedirs(d, exist_ok=True)
    for rank in range(2):
        m = MAP.copy()
        if rank == 1:
            m[0, 6] = 2
        rec = {"forward_pass_id": 0, "rank": rank, "gatherer_key": "primary",
               "global_physical_count": torch.from_numpy(counts((L, P), rank))}
        torch.save({"records": [rec], "last_physical_to_logical_map": torch.from_numpy(m)},
                   os.path.join(d, f"expert_distribution_recorder_1700000000.0_{rank}.pt"))


def npz_files(d):
    a4 = counts((3, 2, 2, 8), 3).astype(np.int64)
    np.savez(os.path.join(d, "stored.npz"), counts=a4, other=np.zeros(3, dtype=np.int32))
    np.save(os.path.join(d, "stored.npy"), a4)
    a3 = counts((5, 2, 8), 4).astype(np.int32)
    np.savez_compressed(os.path.join(d, "compressed.npz"), a3)
    np.save(os.path.join(d, "compressed.npy"), a3)
    # ultra-ep: loads [layers, forwards, physical experts] per rank
    for name, ranks in (("ultra", 2), ("ultra4", 4)):
        os.makedirs(os.path.join(d, name), exist_ok=True)
        loads = [counts((2, 4, 6), 7 + r).astype(np.int32) for r in range(ranks)]
        for r, x in enumerate(loads):
            np.savez(os.path.join(d, name, f"loads_rank{r}.npz"), loads=x)
        stacked = np.stack([x.transpose(1, 0, 2) for x in loads], axis=2).astype(np.int64)  # [F, L, R, P]
        np.save(os.path.join(d, name + ".npy"), stacked if 6 % ranks == 0 else stacked.sum(axis=2))


def fixed_zip(path, entries):
    """A zip with fixed timestamps (byte-reproducible), entries stored."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)


def malformed(d):
    src = os.path.join(d, "expert_distribution_recorder_1700000000.0.pt")
    data = open(src, "rb").read()
    open(os.path.join(d, "truncated.pt"), "wb").write(data[: len(data) // 2])
    # flip a byte of the storage data: the CRC no longer matches
    with zipfile.ZipFile(src) as z:
        info = next(i for i in z.infolist() if "/data/" in i.filename)
    bad = bytearray(data)
    name_len = len(info.filename.encode())
    extra_len = int.from_bytes(data[info.header_offset + 28: info.header_offset + 30], "little")
    bad[info.header_offset + 30 + name_len + extra_len + 4] ^= 0xFF
    open(os.path.join(d, "crc.pt"), "wb").write(bytes(bad))
    # a zip bomb: 64 MiB of zeros deflated to about 64 KiB
    with zipfile.ZipFile(os.path.join(d, "bomb.npz"), "w", zipfile.ZIP_DEFLATED) as z:
        buf = io.BytesIO()
        np.save(buf, np.zeros((1, 2, 1 << 22), dtype=np.int64))
        z.writestr(zipfile.ZipInfo("counts.npy", date_time=(2024, 1, 1, 0, 0, 0)), buf.getvalue(),
                   compress_type=zipfile.ZIP_DEFLATED)
    # pickles that would run code: GLOBAL and STACK_GLOBAL, then REDUCE
    evil = b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00id\x85R."
    fixed_zip(os.path.join(d, "evil-global.pt"), [("evil/data.pkl", evil)])
    evil4 = b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c\x02id\x94\x85\x94R\x94."
    fixed_zip(os.path.join(d, "evil-stack-global.pt"), [("evil/data.pkl", evil4)])
    assert pickle.loads.__module__  # keep the import: pickle documents the opcodes above
    # per-rank .npz loads whose second rank's .npy header has what numpy
    # never writes (the per-rank reader once had a looser parser of its own
    # that took these): an unknown key, and format version 1.1
    x = counts((2, 4, 6), 9).astype(np.int32)
    for name, magic, extra in (("npz-extra-key", b"\x93NUMPY\x01\x00", ", 'extra': 1"),
                               ("npz-version-1-1", b"\x93NUMPY\x01\x01", "")):
        os.makedirs(os.path.join(d, name), exist_ok=True)
        buf = io.BytesIO()
        np.save(buf, x)
        fixed_zip(os.path.join(d, name, "loads_rank0.npz"), [("loads.npy", buf.getvalue())])
        text = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 4, 6)%s, }" % extra
        text += " " * (-(len(magic) + 2 + len(text) + 1) % 64) + "\n"
        npy = magic + len(text).to_bytes(2, "little") + text.encode() + x.tobytes()
        fixed_zip(os.path.join(d, name, "loads_rank1.npz"), [("loads.npy", npy)])


def write_all(d):
    os.makedirs(d, exist_ok=True)
    stat_dump(d)
    per_rank_dumps(os.path.join(d, "per_pass"), per_token=False)
    per_rank_dumps(os.path.join(d, "per_token"), per_token=True)
    old_map_dump(os.path.join(d, "old_map"))
    disagree_dump(os.path.join(d, "disagree"))
    npz_files(d)
    malformed(d)


def same(a, b):
    """Equal files: the same bytes, or (zip archives whose timestamps differ) the same entries."""
    x, y = open(a, "rb").read(), open(b, "rb").read()
    if x == y:
        return True
    if not (zipfile.is_zipfile(a) and zipfile.is_zipfile(b)):
        return False
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        if za.namelist() != zb.namelist():
            return False
        return all(za.read(n) == zb.read(n) for n in za.namelist())


def check(d):
    scratch = tempfile.mkdtemp()
    try:
        write_all(scratch)
        bad = 0
        for base, _, files in os.walk(scratch):
            for f in sorted(files):
                new = os.path.join(base, f)
                rel = os.path.relpath(new, scratch)
                old = os.path.join(d, rel)
                if not os.path.exists(old) or not same(old, new):
                    print(f"make_pt_fixtures.py: {rel} differs from the committed fixture")
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
