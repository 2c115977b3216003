"""python-blosc2 side of the frame interop tests (crates/oxblosc-frame/tests/interop.rs).

    python pyinterop.py generate OUTDIR   write frames with python-blosc2 + OUTDIR/MANIFEST.txt
    python pyinterop.py check OUTDIR      read the frames listed in OUTDIR/MANIFEST.txt (written
                                          by oxblosc) with python-blosc2; print one line per
                                          frame ("ok NAME" or "FAIL NAME: why"); exit 1 on any FAIL

MANIFEST.txt (same format both ways, one record per line, fields separated by single spaces):

    frame NAME KIND typesize=T chunksize=C nbytes=N nchunks=K     KIND: file | sparse | cframe
    chunk I LEN CHECKSUM                                           of the decompressed chunk
    meta NAME HEX                                                  raw metalayer content
    vlmeta NAME HEX                                                msgpack of the vlmeta value
    end

CHECKSUM = sum(b[i] * (i % 65521 + 1)) mod 2**64 over the chunk bytes.
"""

import os
import shutil
import sys

import blosc2
import msgpack
import numpy as np


def checksum(b):
    a = np.frombuffer(b, dtype=np.uint8).astype(np.uint64)
    w = (np.arange(a.size, dtype=np.uint64) % 65521) + 1
    return int(np.sum(a * w, dtype=np.uint64))


def packb(v):
    return msgpack.packb(v, use_bin_type=True)


def describe(name, kind, s):
    lines = [
        f"frame {name} {kind} typesize={s.typesize} chunksize={s.chunksize} nbytes={s.nbytes} nchunks={s.nchunks}"
    ]
    for i in range(s.nchunks):
        c = s.decompress_chunk(i)
        lines.append(f"chunk {i} {len(c)} {checksum(c)}")
    for k in s.meta.keys():
        lines.append(f"meta {k} {packb(s.meta[k]).hex()}")
    for k in s.vlmeta.keys():
        lines.append(f"vlmeta {k} {packb(s.vlmeta[k]).hex()}")
    lines.append("end")
    return lines


def cp(codec, typesize, **kw):
    return dict(codec=codec, typesize=typesize, nthreads=1, **kw)


def generate(out):
    os.makedirs(out, exist_ok=True)
    manifest = []
    C = blosc2.Codec

    def keep(name, kind, s):
        manifest.extend(describe(name, kind, s))

    # 1. contiguous file, zstd, metalayers + vlmeta, short last chunk.
    p = os.path.join(out, "zstd_meta.b2frame")
    s = blosc2.SChunk(chunksize=4000, urlpath=p, mode="w", contiguous=True,
                      meta={"m1": b"abc", "shape": [5, 6]}, cparams=cp(C.ZSTD, 4))
    for k in range(4):
        s.append_data(np.arange(k * 1000, (k + 1) * 1000, dtype=np.int32))
    s.append_data(np.arange(300, dtype=np.int32) * 7)
    s.vlmeta["k"] = "v"
    s.vlmeta["d"] = {"a": 1, "b": [1, 2.5]}
    keep("zstd_meta.b2frame", "file", s)

    # 2. sparse directory, lz4, meta + vlmeta.
    p = os.path.join(out, "lz4_sparse.b2frame")
    s = blosc2.SChunk(chunksize=8000, urlpath=p, mode="w", contiguous=False,
                      meta={"x": 1}, cparams=cp(C.LZ4, 8))
    for k in range(3):
        s.append_data(np.arange(k * 1000, (k + 1) * 1000, dtype=np.int64) ** 2)
    s.insert_data(1, np.full(1000, 42, dtype=np.int64), copy=True)
    s.vlmeta["info"] = b"bytes here"
    keep("lz4_sparse.b2frame", "sparse", s)

    # 3. special chunks via fill_special, then data, contiguous file, blosclz.
    p = os.path.join(out, "specials.b2frame")
    s = blosc2.SChunk(chunksize=8000, urlpath=p, mode="w", contiguous=True, cparams=cp(C.BLOSCLZ, 8))
    s.fill_special(3000, blosc2.SpecialValue.NAN)
    s.append_data(np.zeros(1000, dtype=np.float64))
    s.append_data(np.linspace(0, 1, 1000))
    keep("specials.b2frame", "file", s)

    p = os.path.join(out, "zeros_sparse.b2frame")
    s = blosc2.SChunk(chunksize=4000, urlpath=p, mode="w", contiguous=False, cparams=cp(C.ZSTD, 4))
    s.fill_special(2500, blosc2.SpecialValue.ZERO)
    keep("zeros_sparse.b2frame", "sparse", s)

    p = os.path.join(out, "uninit.b2frame")
    s = blosc2.SChunk(chunksize=4000, urlpath=p, mode="w", contiguous=True, cparams=cp(C.LZ4, 4))
    s.fill_special(2000, blosc2.SpecialValue.UNINIT)
    for i in range(s.nchunks):  # uninit content is undefined: overwrite before describing
        s.update_data(i, np.full(1000, i, dtype=np.int32), copy=True)
    keep("uninit.b2frame", "file", s)

    # 4. variable chunk sizes, zlib, in-memory cframe.
    s = blosc2.SChunk(cparams=cp(C.ZLIB, 4))
    for n in (1000, 500, 2000, 10, 1500):
        s.append_data(np.arange(n, dtype=np.int32) + n)
    with open(os.path.join(out, "zlib_variable.cframe"), "wb") as f:
        f.write(s.to_cframe())
    keep("zlib_variable.cframe", "cframe", s)

    # 5. lz4hc + bitshuffle + delta, typesize 8, many small chunks.
    s = blosc2.SChunk(chunksize=800, cparams=cp(C.LZ4HC, 8, filters=[blosc2.Filter.DELTA, blosc2.Filter.BITSHUFFLE],
                                                   filters_meta=[0, 0]))
    for k in range(40):
        s.append_data(np.arange(k * 100, (k + 1) * 100, dtype=np.float64) / 3)
    with open(os.path.join(out, "lz4hc_many.cframe"), "wb") as f:
        f.write(s.to_cframe())
    keep("lz4hc_many.cframe", "cframe", s)

    # 6. byte-identity reference: blosclz and lz4, nthreads 1, arange * k; the Rust test builds
    # the same super-chunk and compares to_cframe bytes.
    for name, codec in (("ident_blosclz.cframe", C.BLOSCLZ), ("ident_lz4.cframe", C.LZ4),
                        ("ident_zstd.cframe", C.ZSTD)):
        s = blosc2.SChunk(chunksize=40000, cparams=cp(codec, 4))
        for k in range(1, 4):
            s.append_data(np.arange(10000, dtype=np.int32) * k)
        s.append_data(np.arange(500, dtype=np.int32))
        with open(os.path.join(out, name), "wb") as f:
            f.write(s.to_cframe())
        keep(name, "cframe", s)
    # Same, chunks of 10000, 5000, 10000 items (variable: the short chunk's block size sticks).
    s = blosc2.SChunk(cparams=cp(C.LZ4, 4))
    for n in (10000, 5000, 10000):
        s.append_data(np.arange(n, dtype=np.int32))
    with open(os.path.join(out, "ident_var_lz4.cframe"), "wb") as f:
        f.write(s.to_cframe())
    keep("ident_var_lz4.cframe", "cframe", s)

    header = [
        f"# Frames written by python-blosc2 {blosc2.__version__} (C-Blosc2 bundled with that wheel), numpy, nthreads=1,",
        "# by `pyinterop.py generate` (see that file for the parameters of each frame: codecs zstd/lz4/blosclz/",
        "# zlib/lz4hc, metalayers, vlmetalayers, fill_special NaN/zeros/uninit, variable chunk sizes, sparse dirs).",
        "# Regenerate: python pyinterop.py generate golden (never hand-edit). Format: see pyinterop.py.",
    ]
    with open(os.path.join(out, "MANIFEST.txt"), "w") as f:
        f.write("\n".join(header + manifest) + "\n")


def parse_manifest(path):
    frames = []
    cur = None
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t or t[0].startswith("#"):
                continue
            if t[0] == "frame":
                cur = dict(name=t[1], kind=t[2], chunks=[], meta={}, vlmeta={})
                for kv in t[3:]:
                    k, v = kv.split("=")
                    cur[k] = int(v)
            elif t[0] == "chunk":
                cur["chunks"].append((int(t[2]), int(t[3])))
            elif t[0] in ("meta", "vlmeta"):
                cur[t[0]][t[1]] = bytes.fromhex(t[2]) if len(t) > 2 else b""
            elif t[0] == "end":
                frames.append(cur)
    return frames


def check_one(out, fr):
    p = os.path.join(out, fr["name"])
    if fr["kind"] == "cframe":
        with open(p, "rb") as f:
            s = blosc2.schunk_from_cframe(f.read(), copy=True)
    else:
        s = blosc2.open(p, mode="r")
    for key in ("typesize", "chunksize", "nbytes", "nchunks"):
        if getattr(s, key) != fr[key]:
            return f"{key} = {getattr(s, key)}, manifest says {fr[key]}"
    for i, (n, cs) in enumerate(fr["chunks"]):
        c = s.decompress_chunk(i)
        if len(c) != n or checksum(c) != cs:
            return f"chunk {i} differs"
    if sorted(s.meta.keys()) != sorted(fr["meta"]):
        return f"meta names {sorted(s.meta.keys())} != {sorted(fr['meta'])}"
    for k, v in fr["meta"].items():
        if packb(s.meta[k]) != v:
            return f"meta {k} differs"
    if sorted(s.vlmeta.keys()) != sorted(fr["vlmeta"]):
        return f"vlmeta names {sorted(s.vlmeta.keys())} != {sorted(fr['vlmeta'])}"
    for k, v in fr["vlmeta"].items():
        if packb(s.vlmeta[k]) != v:
            return f"vlmeta {k} differs: {s.vlmeta[k]!r}"
    return None


def check(out):
    bad = 0
    for fr in parse_manifest(os.path.join(out, "MANIFEST.txt")):
        try:
            why = check_one(out, fr)
        except Exception as e:  # report, keep going
            why = f"{type(e).__name__}: {e}"
        if why:
            bad += 1
            print(f"FAIL {fr['name']}: {why}")
        else:
            print(f"ok {fr['name']}")
    print(f"python-blosc2 {blosc2.__version__}: {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "generate":
        if os.path.exists(out):
            shutil.rmtree(out)
        generate(out)
    elif mode == "check":
        sys.exit(check(out))
    else:
        sys.exit(f"unknown mode {mode}")
