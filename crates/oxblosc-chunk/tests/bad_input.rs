//! Untrusted chunks: truncation at every length, seeded bit flips and lying headers never panic,
//! hang or over-allocate; they return an `Error` (with a message) or, for flips that still form a
//! valid chunk, exactly `nbytes` bytes.

use oxblosc_chunk::{
    cbuffer_sizes, compress, compress_blosc1, decompress, decompress_into, getitem, special_chunk, CParams, DParams,
    Error, SpecialKind,
};

const SHUFFLE: u8 = 1;
const BITSHUFFLE: u8 = 2;
const DELTA: u8 = 3;

fn sample(n: usize) -> Vec<u8> {
    (0..n as u32).flat_map(|i| (((i as f32) * 0.01).sin() * 1000.0).to_le_bytes()).take(n).collect()
}

fn chunks() -> Vec<(&'static str, Vec<u8>)> {
    let a = sample(12_000);
    let cp = |codec, filters, bs, use_dict| CParams {
        codec,
        typesize: 4,
        filters,
        blocksize: bs,
        use_dict,
        nthreads: 1,
        ..CParams::default()
    };
    let big: Vec<u8> = a.iter().cycle().take(36_000).copied().collect();
    vec![
        ("lz4-shuffle", compress(&a, &cp(1, [0, 0, 0, 0, 0, SHUFFLE], 2048, false)).unwrap()),
        ("zstd-dict", compress(&big, &cp(5, [0, 0, 0, 0, 0, SHUFFLE], 8192, true)).unwrap()),
        ("lz4-dict", compress(&big, &cp(1, [0, 0, 0, 0, 0, SHUFFLE], 8192, true)).unwrap()),
        ("blosclz-delta", compress(&a, &cp(0, [SHUFFLE, DELTA, 0, 0, 0, 0], 2048, false)).unwrap()),
        ("zlib-bitshuffle", compress(&a, &cp(4, [BITSHUFFLE, 0, 0, 0, 0, 0], 4096, false)).unwrap()),
        ("memcpy", compress(&a[..1000], &CParams { clevel: 0, ..CParams::default() }).unwrap()),
        ("blosc1", compress_blosc1(&a, &cp(1, [0, 0, 0, 0, 0, SHUFFLE], 0, false)).unwrap()),
        ("value", special_chunk(SpecialKind::Value, 8000, 8, Some(b"12345678")).unwrap()),
    ]
}

fn nbytes_of(c: &[u8]) -> Option<usize> {
    c.get(4..8).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// Every entry point; none may panic. Returns the decompress result.
fn exercise(c: &[u8]) -> Result<Vec<u8>, Error> {
    for nt in [1, 2] {
        let r = decompress(c, &DParams { nthreads: nt });
        match &r {
            Ok(v) => assert_eq!(Some(v.len()), nbytes_of(c)),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    let _ = cbuffer_sizes(c);
    let mut out = [0u8; 64];
    let _ = getitem(c, 3, 5, &mut out);
    let mut dst = vec![0u8; 64 * 1024];
    let _ = decompress_into(c, &mut dst, &DParams { nthreads: 2 });
    decompress(c, &DParams { nthreads: 1 })
}

#[test]
fn truncated_at_every_length() {
    for (name, c) in chunks() {
        let full = decompress(&c, &DParams { nthreads: 1 }).unwrap();
        for n in 0..c.len() {
            assert!(exercise(&c[..n]).is_err(), "{name}: truncated to {n} bytes decoded");
        }
        let mut longer = c.clone();
        longer.extend_from_slice(&[0u8; 10]);
        assert_eq!(decompress(&longer, &DParams { nthreads: 1 }).unwrap(), full, "{name}");
    }
}

#[test]
fn seeded_bit_flips() {
    let mut s: u64 = 0x5EED_0F0B_10C5;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut errs = 0usize;
    let mut total = 0usize;
    for (name, c) in chunks() {
        for _ in 0..500 {
            let mut b = c.clone();
            let flips = [1, 1, 2, 8][(next() % 4) as usize];
            for _ in 0..flips {
                let pos = if next() % 10 < 7 { next() as usize % b.len() } else { next() as usize % b.len().min(64) };
                if name == "value" && (5..8).contains(&pos) {
                    continue; // special chunks legitimately decode to any nbytes; keep runs short
                }
                b[pos] ^= 1 << (next() % 8);
            }
            total += 1;
            errs += exercise(&b).is_err() as usize;
        }
    }
    assert!(errs > total / 10, "suspiciously few errors: {errs}/{total}");
}

fn set_i32(c: &mut [u8], at: usize, v: i32) {
    c[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn lies() -> Vec<(&'static str, Vec<u8>)> {
    let all = chunks();
    let get = |n: &str| all.iter().find(|(k, _)| *k == n).unwrap().1.clone();
    let lz4 = get("lz4-shuffle");
    let first = i32::from_le_bytes(lz4[32..36].try_into().unwrap()) as usize;
    let mut v: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let mut with = |name, f: &dyn Fn(&mut Vec<u8>), base: &Vec<u8>| {
        let mut c = base.clone();
        f(&mut c);
        v.push((name, c));
    };
    // A run stream stands for one byte value: csize -1..-255 and a token byte with bit 0 set.
    // C-Blosc2 refuses sizes beyond -255; keeping only the low byte would decode wrong data.
    let runs = compress(&[0xFFu8; 4096], &CParams { typesize: 1, nthreads: 1, ..CParams::default() }).unwrap();
    let run_at = i32::from_le_bytes(runs[32..36].try_into().unwrap()) as usize;
    assert_eq!(runs[run_at..run_at + 5], [1, 255, 255, 255, 1], "a -255 run with token 1");
    assert_eq!(decompress(&runs, &DParams::default()).unwrap(), [0xFFu8; 4096]);
    with("run length -263", &|c| set_i32(c, run_at, -263), &runs);
    with("run length -256", &|c| set_i32(c, run_at, -256), &runs);
    with("run length -511", &|c| set_i32(c, run_at, -511), &runs);
    with("run length i32::MIN", &|c| set_i32(c, run_at, i32::MIN), &runs);
    with("huge nbytes", &|c| set_i32(c, 4, 2_000_000_000), &lz4);
    with("negative nbytes", &|c| set_i32(c, 4, -5), &lz4);
    with("negative blocksize", &|c| set_i32(c, 8, -4096), &lz4);
    with("negative cbytes", &|c| set_i32(c, 12, -1), &lz4);
    with(
        "cbytes > len",
        &|c| {
            let n = c.len() as i32;
            set_i32(c, 12, n + 1)
        },
        &lz4,
    );
    with("cbytes < header", &|c| set_i32(c, 12, 20), &lz4);
    with("blocksize 0", &|c| set_i32(c, 8, 0), &lz4);
    with("blocksize > max", &|c| set_i32(c, 8, 536_866_817), &lz4);
    with("typesize 0", &|c| c[3] = 0, &lz4);
    with(
        "bstart past end",
        &|c| {
            let n = c.len() as i32;
            set_i32(c, 32, n + 100)
        },
        &lz4,
    );
    with("bstart negative", &|c| set_i32(c, 36, -8), &lz4);
    with("bstart in header", &|c| set_i32(c, 32, 4), &lz4);
    with(
        "csize past end",
        &|c| {
            let n = c.len() as i32;
            set_i32(c, first, n)
        },
        &lz4,
    );
    with("csize negative garbage", &|c| set_i32(c, first, -1_000_000), &lz4);
    with("csize i32::MIN", &|c| set_i32(c, first, i32::MIN), &lz4);
    with("version 0", &|c| c[0] = 0, &lz4);
    with("version 7", &|c| c[0] = 7, &lz4);
    with("version 255", &|c| c[0] = 255, &lz4);
    with("flags2 unknown bit", &|c| c[30] = 0x02, &lz4);
    with("codec format 5", &|c| c[2] = (c[2] & 0x1F) | (5 << 5), &lz4);
    with(
        "codec format 6 unknown plugin",
        &|c| {
            c[2] = (c[2] & 0x1F) | (6 << 5);
            c[22] = 200;
        },
        &lz4,
    );
    with("codec format 7", &|c| c[2] = (c[2] & 0x1F) | (7 << 5), &lz4);
    with("unknown filter", &|c| c[16] = 99, &lz4);
    with("instrumented", &|c| c[31] |= 0x80, &lz4);
    let zero = special_chunk(SpecialKind::Zeros, 800, 8, None).unwrap();
    for (name, k) in [("special kind 5", 5u8), ("special kind 6", 6), ("special kind 7", 7)] {
        with(name, &|c| c[31] = k << 4, &zero);
    }
    let nan = special_chunk(SpecialKind::Nan, 800, 8, None).unwrap();
    with(
        "NaN special typesize 3",
        &|c| {
            c[3] = 3;
            set_i32(c, 4, 900);
        },
        &nan,
    );
    with("value special nbytes not multiple", &|c| set_i32(c, 4, 8001), &get("value"));
    with("memcpy cbytes mismatch", &|c| set_i32(c, 4, 2000), &get("memcpy"));
    let z = get("zstd-dict");
    let nblocks = nbytes_of(&z).unwrap().div_ceil(8192);
    let off = 32 + 4 * nblocks;
    for (name, d) in [
        ("dict size 0", 0),
        ("dict size negative", -3),
        ("dict size > 32 KiB", 40_000),
        ("dict past end", z.len() as i32),
    ] {
        with(name, &|c| set_i32(c, off, d), &z);
    }
    with("dict garbage", &|c| c[off + 4..off + 68].fill(0), &z);
    // VL-blocks chunk: 2 raw blocks of 100 bytes
    let mut vl = vec![0u8; 32];
    vl[..4].copy_from_slice(&[6, 1, 0x05 | 0x10 | (1 << 5), 1]);
    vl[22] = 1;
    vl[30] = 1;
    vl.extend_from_slice(&40i32.to_le_bytes());
    vl.extend_from_slice(&144i32.to_le_bytes());
    vl.extend_from_slice(&100i32.to_le_bytes());
    vl.extend((0..100).map(|i| i as u8));
    vl.extend_from_slice(&100i32.to_le_bytes());
    vl.extend((100..200).map(|i| i as u8));
    set_i32(&mut vl, 4, 200);
    set_i32(&mut vl, 8, 2);
    let n = vl.len() as i32;
    set_i32(&mut vl, 12, n);
    assert_eq!(decompress(&vl, &DParams { nthreads: 1 }).unwrap(), (0..200).map(|i| i as u8).collect::<Vec<_>>());
    with("vl nbytes != sum", &|c| set_i32(c, 4, 300), &vl);
    with("vl nbytes huge", &|c| set_i32(c, 4, 2_000_000_000), &vl);
    with("vl nblocks huge", &|c| set_i32(c, 8, 1_000_000), &vl);
    with("vl nblocks 0", &|c| set_i32(c, 8, 0), &vl);
    with("vl block size lie", &|c| set_i32(c, 40, 5000), &vl);
    with("vl negative size", &|c| set_i32(c, 40, -100), &vl);
    with(
        "vl bstarts unsorted",
        &|c| {
            set_i32(c, 32, 144);
            set_i32(c, 36, 40);
        },
        &vl,
    );
    v
}

#[test]
fn lying_headers_are_errors() {
    for (name, c) in lies() {
        let r = exercise(&c);
        assert!(r.is_err(), "{name}: decoded to {} bytes instead of failing", r.map(|v| v.len()).unwrap_or(0));
        let e = r.unwrap_err();
        assert!(e.code() < 0, "{name}");
    }
}

#[test]
fn specific_error_variants() {
    let l = lies();
    let get = |n: &str| l.iter().find(|(k, _)| *k == n).unwrap().1.clone();
    let d = |c: Vec<u8>| decompress(&c, &DParams { nthreads: 1 }).unwrap_err();
    assert!(matches!(d(get("version 7")), Error::UnsupportedVersion(7)));
    assert!(matches!(d(get("version 255")), Error::UnsupportedVersion(255)));
    assert!(matches!(d(get("unknown filter")), Error::UnknownFilter { id: 99, .. }));
    assert!(matches!(d(get("codec format 5")), Error::UnknownCodec { .. }));
    assert!(matches!(d(get("blocksize 0")), Error::InvalidHeader { field: "blocksize", .. }));
    assert!(matches!(d(get("negative nbytes")), Error::InvalidHeader { field: "nbytes", .. }));
    for run in ["run length -263", "run length -256", "run length -511", "run length i32::MIN"] {
        let e = d(get(run));
        assert!(matches!(e, Error::CorruptBlock { block: 0, .. }), "{run}: {e:?}");
        assert!(e.to_string().contains("is not -1..-255"), "{run}: {e}");
    }
    let e = d(Vec::new());
    assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
}

#[test]
fn corrupt_delta_block0_with_threads_returns() {
    // Pitfall 2: a failing block 0 of a DELTA chunk must not strand other workers.
    let c = chunks().into_iter().find(|(k, _)| *k == "blosclz-delta").unwrap().1;
    let first = i32::from_le_bytes(c[32..36].try_into().unwrap()) as usize;
    let mut b = c.clone();
    for x in &mut b[first + 4..first + 40] {
        *x = 0xFF;
    }
    for nt in [1, 2, 4, 8] {
        let _ = decompress(&b, &DParams { nthreads: nt });
    }
}
