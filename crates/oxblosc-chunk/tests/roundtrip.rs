//! Property tests of the chunk engine: random data (low and high entropy) x codec x clevel x
//! filter pipeline (up to 6 slots, DELTA after SHUFFLE/BITSHUFFLE included) x typesize 1..=300
//! x blocksize (auto or a forced multiple of typesize) x nthreads 1..=3 x split mode.
//!
//! For lossless pipelines `decompress(compress(x)) == x`; every pipeline gives the same bytes
//! serially and in parallel, `getitem` agrees with the full decode, `compress_into` with a
//! too-small destination fails with `Error::OutputTooSmall`, and `decompress_into` honours its
//! length contract. Cases are bounded (sizes up to ~200 KB, 96 cases per property) to keep the
//! dev-profile run under a minute.

use oxblosc_chunk::{
    cbuffer_sizes, compress, compress_into, compress_into_uninit, decompress, decompress_into, decompress_ranges,
    getitem, max_compressed_len, CParams, DParams, Error, SplitMode,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::mem::MaybeUninit;

const NOFILTER: u8 = 0;
const SHUFFLE: u8 = 1;
const BITSHUFFLE: u8 = 2;
const DELTA: u8 = 3;
const TRUNC_PREC: u8 = 4;
const BYTEDELTA: u8 = 35;
const INT_TRUNC: u8 = 36;
const CODECS: [u8; 5] = [0, 1, 2, 4, 5];

/// Deterministic runner: a fixed seed so CI is reproducible.
fn runner(cases: u32) -> TestRunner {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[0x0b; 32]))
}

#[derive(Debug, Clone)]
struct Case {
    data: Vec<u8>,
    cp: CParams,
}

fn lossless(cp: &CParams) -> bool {
    !cp.filters.iter().any(|&f| f == TRUNC_PREC || f == INT_TRUNC)
}

fn data_strategy(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    (0..max_len, 0u8..4, any::<u64>()).prop_map(|(len, kind, seed)| {
        let mut s = seed | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        match kind {
            // high entropy
            0 => (0..len).map(|_| next() as u8).collect(),
            // low entropy: few symbols with runs
            1 => {
                let mut v = Vec::with_capacity(len);
                while v.len() < len {
                    let b = (next() % 3) as u8;
                    let run = (next() % 40) as usize + 1;
                    v.extend(std::iter::repeat_n(b, run.min(len - v.len())));
                }
                v
            }
            // smooth little-endian u32 ramp with noise in the low byte
            2 => (0..len)
                .map(|i| if i % 4 == 0 { (next() % 4) as u8 } else { ((i / 4) >> (8 * (i % 4))) as u8 })
                .collect(),
            // all zero with a few non-zero bytes
            _ => {
                let mut v = vec![0u8; len];
                for _ in 0..(len / 1000) {
                    let at = (next() as usize) % len;
                    v[at] = next() as u8;
                }
                v
            }
        }
    })
}

fn filters_strategy(typesize: usize) -> impl Strategy<Value = ([u8; 6], [u8; 6])> {
    let mut ids = vec![NOFILTER, SHUFFLE, BITSHUFFLE, DELTA];
    if typesize <= 255 {
        ids.push(BYTEDELTA);
    }
    if typesize == 4 || typesize == 8 {
        ids.push(TRUNC_PREC);
    }
    if matches!(typesize, 1 | 2 | 4 | 8) {
        ids.push(INT_TRUNC);
    }
    // 0..=6 filled slots, each slot anywhere in 0..6
    (proptest::collection::vec(proptest::sample::select(ids), 6), any::<[bool; 6]>()).prop_map(move |(f, keep)| {
        let mut filters = [0u8; 6];
        let mut meta = [0u8; 6];
        for i in 0..6 {
            if keep[i] {
                filters[i] = f[i];
                meta[i] = match f[i] {
                    TRUNC_PREC => 7,
                    INT_TRUNC => (-3i8) as u8,
                    _ => 0,
                };
            }
        }
        (filters, meta)
    })
}

fn case_strategy(max_len: usize) -> impl Strategy<Value = Case> {
    let typesize = prop_oneof![
        4 => proptest::sample::select(vec![1usize, 2, 4, 8]),
        2 => 1usize..=300,
        1 => proptest::sample::select(vec![3usize, 16, 255, 256, 300]),
    ];
    typesize.prop_flat_map(move |ts| {
        (
            data_strategy(max_len),
            proptest::sample::select(CODECS.to_vec()),
            0u8..=9,
            filters_strategy(ts),
            prop_oneof![Just(0usize), 1usize..64, 64usize..4096],
            1usize..=3,
            proptest::sample::select(vec![
                SplitMode::Always,
                SplitMode::Never,
                SplitMode::Auto,
                SplitMode::ForwardCompat,
            ]),
            any::<bool>(),
        )
            .prop_map(
                move |(data, codec, clevel, (filters, filters_meta), bmul, nthreads, splitmode, use_dict)| {
                    let use_dict = use_dict && matches!(codec, 1 | 2 | 5);
                    Case {
                        data,
                        cp: CParams {
                            codec,
                            codec_meta: 0,
                            clevel,
                            use_dict,
                            typesize: ts,
                            nthreads,
                            blocksize: bmul * ts,
                            splitmode,
                            filters,
                            filters_meta,
                        },
                    }
                },
            )
    })
}

fn check_case(case: &Case) -> Result<(), TestCaseError> {
    let Case { data, cp } = case;
    let chunk = compress(data, cp).map_err(|e| TestCaseError::fail(format!("compress failed: {e} ({cp:?})")))?;
    let one = DParams { nthreads: 1 };
    prop_assert!(chunk.len() <= max_compressed_len(data.len()));
    let (nbytes, cbytes, _) = cbuffer_sizes(&chunk).unwrap();
    prop_assert_eq!(nbytes, data.len());
    prop_assert_eq!(cbytes, chunk.len());

    // serial == parallel bytes
    for nt in [1, 2, 3] {
        let other_cp = CParams { nthreads: nt, ..cp.clone() };
        let other = compress(data, &other_cp).unwrap();
        prop_assert!(other == chunk, "nthreads={} output differs from nthreads={}", nt, cp.nthreads);
    }

    // compress_into_uninit (a fresh Python `bytes`) writes the same chunk whatever the
    // destination held before, at every thread count, and fails like compress_into when short
    for nt in [1, 2, 3] {
        let other_cp = CParams { nthreads: nt, ..cp.clone() };
        for fill in [0x00u8, 0xA5, 0xFF] {
            let mut dst = vec![MaybeUninit::new(fill); max_compressed_len(data.len())];
            let n = compress_into_uninit(data, &mut dst, &other_cp).unwrap();
            let got: Vec<u8> = dst[..n].iter().map(|b| unsafe { b.assume_init() }).collect();
            prop_assert!(got == chunk, "compress_into_uninit ({} threads, old bytes {}) wrote another chunk", nt, fill);
        }
        if !chunk.is_empty() {
            let cap = chunk.len() - 1;
            let mut short = vec![MaybeUninit::new(0xA5u8); cap];
            let mut init = vec![0xA5u8; cap];
            let (a, b) = (compress_into_uninit(data, &mut short, &other_cp), compress_into(data, &mut init, &other_cp));
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    let same = a == b && short[..a].iter().zip(&init).all(|(x, &y)| unsafe { x.assume_init() } == y);
                    prop_assert!(same, "into {} bytes: uninit and init wrote different chunks", cap);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "into {} bytes: uninit {:?}, init {:?}", cap, a, b),
            }
        }
    }

    // round trip (lossless) and thread-count independence of decoding (all pipelines)
    let back = decompress(&chunk, &one).unwrap();
    if lossless(cp) {
        prop_assert!(back == *data, "round trip differs ({cp:?}, {} bytes)", data.len());
    }
    prop_assert_eq!(back.len(), data.len());
    for nt in [2, 3] {
        let again = decompress(&chunk, &DParams { nthreads: nt }).unwrap();
        prop_assert!(again == back, "decoding with {} threads differs", nt);
    }

    // decompress_into: exact and larger dst; the tail past nbytes is untouched
    let mut dst = vec![0xEEu8; data.len() + 7];
    prop_assert_eq!(decompress_into(&chunk, &mut dst, &DParams { nthreads: cp.nthreads }).unwrap(), data.len());
    prop_assert!(dst[..data.len()] == back[..]);
    prop_assert!(dst[data.len()..].iter().all(|&b| b == 0xEE));
    if !data.is_empty() {
        let mut small = vec![0u8; data.len() - 1];
        let err = decompress_into(&chunk, &mut small, &one).unwrap_err();
        prop_assert!(matches!(err, Error::OutputTooSmall { .. }), "got {err:?}");
    }

    // getitem consistency (items of the header typesize)
    let hts = if cp.typesize > 255 { 1 } else { cp.typesize };
    let nitems = data.len() / hts;
    let mut s = (data.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut ranges = vec![(0, nitems), (0, 0), (nitems, 0)];
    for _ in 0..6 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let start = if nitems == 0 { 0 } else { (s as usize) % (nitems + 1) };
        let n = if nitems - start == 0 { 0 } else { ((s >> 32) as usize) % (nitems - start + 1) };
        ranges.push((start, n));
    }
    for (start, n) in ranges {
        let mut out = vec![0u8; n * hts];
        let w = getitem(&chunk, start, n, &mut out)
            .map_err(|e| TestCaseError::fail(format!("getitem({start},{n}): {e}")))?;
        prop_assert_eq!(w, n * hts);
        prop_assert!(out[..] == back[start * hts..(start + n) * hts], "getitem({}, {}) differs", start, n);
    }
    // decompress_ranges: several byte ranges back to back, serial and parallel, equal the
    // same bytes of the full decode (ranges in any order, overlapping, empty).
    let byte_ranges: Vec<(usize, usize)> = (0..5)
        .map(|k| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let lo = (s as usize) % (data.len() + 1);
            let hi = lo + ((s >> 32) as usize) % (data.len() - lo + 1);
            if k == 4 {
                (lo, lo)
            } else {
                (lo, hi)
            }
        })
        .collect();
    let expect: Vec<u8> = byte_ranges.iter().flat_map(|&(lo, hi)| back[lo..hi].iter().copied()).collect();
    for nt in [1, 3] {
        let mut out = vec![0u8; expect.len()];
        let w = decompress_ranges(&chunk, &byte_ranges, &mut out, nt)
            .map_err(|e| TestCaseError::fail(format!("decompress_ranges({byte_ranges:?}): {e}")))?;
        prop_assert_eq!(w, expect.len());
        prop_assert!(out == expect, "decompress_ranges({:?}, nthreads {}) differs", byte_ranges, nt);
    }
    let e = decompress_ranges(&chunk, &[(0, data.len() + 1)], &mut vec![0u8; data.len() + 1], 1).unwrap_err();
    prop_assert!(matches!(e, Error::OutOfRange { .. }), "got {e:?}");
    if nitems > 0 {
        let mut out = vec![0u8; hts * 2];
        let e = getitem(&chunk, nitems, 1, &mut out).unwrap_err();
        prop_assert!(matches!(e, Error::OutOfRange { .. }), "got {e:?}");
    }

    // compress_into with a too-small destination
    if !chunk.is_empty() {
        for cap in [0, chunk.len() / 2, chunk.len() - 1] {
            let mut dst = vec![0u8; cap];
            match compress_into(data, &mut dst, cp) {
                Err(Error::OutputTooSmall { .. }) => {}
                // A different (smaller, still valid) encoding may fit, e.g. memcpy fallback paths.
                Ok(n) => {
                    prop_assert!(n <= cap);
                    let again = decompress(&dst[..n], &one).unwrap();
                    prop_assert!(again == back, "compress_into into {} bytes produced a different chunk", cap);
                }
                Err(e) => prop_assert!(false, "compress_into into {} bytes: unexpected error {:?}", cap, e),
            }
            // Every thread count gives the same outcome near the end of `dst` too.
            let mut serial = vec![0u8; cap];
            let first = compress_into(data, &mut serial, &CParams { nthreads: 1, ..cp.clone() });
            for nt in [2, 3] {
                let mut other = vec![0u8; cap];
                let r = compress_into(data, &mut other, &CParams { nthreads: nt, ..cp.clone() });
                match (&first, &r) {
                    (Ok(a), Ok(b)) => prop_assert!(
                        a == b && serial[..*a] == other[..*b],
                        "compress_into into {} bytes: {} threads wrote another chunk",
                        cap,
                        nt
                    ),
                    (Err(_), Err(_)) => {}
                    _ => prop_assert!(
                        false,
                        "compress_into into {} bytes: 1 thread {:?}, {} threads {:?}",
                        cap,
                        first,
                        nt,
                        r
                    ),
                }
            }
        }
    }
    Ok(())
}

#[test]
fn roundtrip_small_buffers() {
    runner(128).run(&case_strategy(2_000), |c| check_case(&c)).unwrap();
}

#[test]
fn roundtrip_multi_block() {
    runner(96).run(&case_strategy(200_000), |c| check_case(&c)).unwrap();
}

/// Every codec x clevel x a fixed set of pipelines, on one multi-block buffer of each kind:
/// a deterministic sweep complementing the random cases.
#[test]
fn sweep_codecs_clevels_pipelines() {
    let pipelines: [[u8; 6]; 8] = [
        [0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, SHUFFLE],
        [BITSHUFFLE, 0, 0, 0, 0, 0],
        [DELTA, 0, 0, 0, 0, 0],
        [SHUFFLE, DELTA, 0, 0, 0, 0],
        [BITSHUFFLE, DELTA, 0, 0, 0, 0],
        [SHUFFLE, BYTEDELTA, 0, 0, 0, 0],
        [SHUFFLE, DELTA, BITSHUFFLE, SHUFFLE, BYTEDELTA, SHUFFLE],
    ];
    let data: Vec<u8> = (0..60_001u32).flat_map(|i| ((i / 3) as u16 ^ (i as u16 % 7)).to_le_bytes()).collect();
    for codec in CODECS {
        for clevel in [0, 1, 5, 9] {
            for filters in pipelines {
                for (ts, bs) in [(2usize, 0usize), (8, 8 * 1000), (3, 3 * 555)] {
                    let cp = CParams {
                        codec,
                        clevel,
                        typesize: ts,
                        blocksize: bs,
                        filters,
                        nthreads: 2,
                        ..CParams::default()
                    };
                    let d = &data[..data.len() / ts * ts];
                    let c = compress(d, &cp).unwrap();
                    assert_eq!(decompress(&c, &DParams { nthreads: 2 }).unwrap(), d, "{cp:?}");
                    assert_eq!(compress(d, &CParams { nthreads: 1, ..cp.clone() }).unwrap(), c, "{cp:?}");
                }
            }
        }
    }
}

#[test]
fn delta_ragged_tail_is_preserved() {
    // Pitfall 5: DELTA must write every byte, also a trailing partial word.
    for ts in [2usize, 4, 8, 16] {
        let data: Vec<u8> = (0..10_007u32).map(|i| (i * 31 % 251) as u8).collect();
        for filters in [[DELTA, 0, 0, 0, 0, 0], [SHUFFLE, DELTA, 0, 0, 0, 0]] {
            let cp = CParams { typesize: ts, filters, blocksize: ts * 100, nthreads: 1, ..CParams::default() };
            let c = compress(&data, &cp).unwrap();
            assert_eq!(decompress(&c, &DParams { nthreads: 3 }).unwrap(), data, "ts={ts} {filters:?}");
        }
    }
}

#[test]
fn input_larger_than_limit_is_rejected_without_work() {
    // Only checks the parameter path; does not allocate 2 GB.
    let cp = CParams { typesize: 0, ..CParams::default() };
    assert!(matches!(compress(b"abc", &cp), Err(Error::InvalidParam { .. })));
    let cp = CParams { nthreads: 0, ..CParams::default() };
    assert!(matches!(compress(b"abc", &cp), Err(Error::InvalidParam { .. })));
    let cp = CParams { clevel: 10, ..CParams::default() };
    assert!(matches!(compress(b"abc", &cp), Err(Error::InvalidParam { .. })));
    let cp = CParams { codec: 3, ..CParams::default() };
    // Bad parameters are InvalidParam; UnknownCodec/UnknownFilter are reserved for chunks.
    assert!(matches!(compress(b"abc", &cp), Err(Error::InvalidParam { name: "codec", .. })));
    let cp = CParams { filters: [0, 0, 0, 0, 0, 99], ..CParams::default() };
    match compress(b"abc", &cp) {
        Err(Error::InvalidParam { name: "filters", reason }) => assert!(reason.contains("slot 5 holds 99"), "{reason}"),
        other => panic!("expected InvalidParam for filter 99, got {other:?}"),
    }
}

/// Split shuffled blocks whose byte rows are runs (zero or one repeated value, different per
/// block) decode right, in every decode mode, also when an earlier chunk left longer cached
/// rows of the same values in this thread (the unshuffle reads run rows from a cache).
#[test]
fn run_rows_of_split_blocks() {
    for typesize in [2usize, 4, 8] {
        for blocksize in [64 * 1024, 16 * 1024, 4096] {
            // Per element: byte 0 noise, the top byte constant per block (0 in block 0), the
            // others constant per chunk; 5 full blocks and a leftover.
            let n = (5 * blocksize + 3 * typesize) / typesize;
            let mut state = 0x9E37_79B9u32;
            let data: Vec<u8> = (0..n)
                .flat_map(|i| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    let block = (i * typesize / blocksize) as u8;
                    (0..typesize).map(move |j| match j {
                        0 => (state >> 24) as u8,
                        j if j == typesize - 1 => block.wrapping_mul(37),
                        j => 0xC0 | j as u8,
                    })
                })
                .collect();
            for codec in [0u8, 1, 5] {
                let cp = CParams {
                    codec,
                    clevel: 5,
                    typesize,
                    blocksize,
                    splitmode: SplitMode::Always,
                    nthreads: 1,
                    ..CParams::default()
                };
                let chunk = compress(&data, &cp).unwrap();
                let what = format!("typesize {typesize} blocksize {blocksize} codec {codec}");
                assert!(decompress(&chunk, &DParams { nthreads: 1 }).unwrap() == data, "{what}");
                let mut into = vec![0xA5u8; data.len()];
                decompress_into(&chunk, &mut into, &DParams { nthreads: 2 }).unwrap();
                assert!(into == data, "{what}, into, 2 threads");
                let lo = blocksize + 3 * typesize;
                let mut part = vec![0u8; 2 * blocksize];
                getitem(&chunk, lo / typesize, part.len() / typesize, &mut part).unwrap();
                assert!(part == data[lo..lo + part.len()], "{what}, getitem");
            }
        }
    }
}

/// SHUFFLE then BYTEDELTA (C-Blosc2's float pipeline) is decoded by one fused pass when the
/// block's rows line up with the element size (split streams, or one stream of whole
/// elements): every element size (fused for 2-8, generic above), both bytedelta ids, split
/// and unsplit blocks, a leftover block, a bytedelta stream count other than the element
/// size (generic), streams stored raw (random bytes), runs (constant high bytes) and
/// compressible rows, 1 and 2 threads, into a caller buffer and into new bytes.
#[test]
fn shuffle_then_bytedelta_decodes_exactly() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for ts in [1usize, 2, 3, 4, 5, 6, 7, 8, 9, 16] {
        let n = 20_011 * ts; // a leftover block after whole blocks
        let kinds: [Vec<u8>; 3] = [
            (0..n).map(|_| next() as u8).collect(),
            // floats-like: the top byte of every element constant, the next smooth, the rest noise
            (0..n)
                .map(|i| match (i % ts, ts) {
                    (k, _) if k + 1 == ts => 0x41,
                    (k, _) if k + 2 == ts => (i / ts / 97) as u8,
                    _ => next() as u8,
                })
                .collect(),
            (0..n).map(|i| ((i / ts) as u32).wrapping_mul(3).to_le_bytes()[i % ts % 4]).collect(),
        ];
        for data in &kinds {
            for (bd, bd_meta) in [(BYTEDELTA, 0u8), (34, 0), (BYTEDELTA, (ts / 2) as u8)] {
                for splitmode in [SplitMode::Always, SplitMode::Never] {
                    for codec in [0u8, 1, 5] {
                        let cp = CParams {
                            codec,
                            clevel: 5,
                            typesize: ts,
                            blocksize: ts * 1024,
                            splitmode,
                            filters: [SHUFFLE, bd, 0, 0, 0, 0],
                            filters_meta: [0, bd_meta, 0, 0, 0, 0],
                            nthreads: 1,
                            ..CParams::default()
                        };
                        let c = compress(data, &cp).unwrap();
                        for nthreads in [1, 2] {
                            let what =
                                format!("ts={ts} bytedelta={bd}/{bd_meta} {splitmode:?} codec={codec} T{nthreads}");
                            assert!(decompress(&c, &DParams { nthreads }).unwrap() == *data, "{what}");
                            let mut out = vec![0xA5u8; n];
                            decompress_into(&c, &mut out, &DParams { nthreads }).unwrap();
                            assert!(out == *data, "{what} (into a buffer)");
                        }
                    }
                }
            }
        }
    }
}

/// A stored (memcpyed) chunk decodes by plain copies, split between the threads when there
/// are several: every size around the per-thread piece (1 MiB) and odd ones, into a caller
/// buffer, to new bytes and by ranges.
#[test]
fn stored_chunks_decode_on_several_threads() {
    for n in [(2 << 20) - 1, 2 << 20, (2 << 20) + 1, (5 << 20) + 12_345, 8 << 20] {
        let data: Vec<u8> = (0..n).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3]).collect();
        let cp = CParams { clevel: 0, typesize: 1, nthreads: 1, ..CParams::default() };
        let c = compress(&data, &cp).unwrap();
        assert_eq!(c[2] & 0x2, 0x2, "clevel 0 stores the chunk (memcpyed flag)");
        for nthreads in [1, 2, 3, 4] {
            let p = DParams { nthreads };
            assert!(decompress(&c, &p).unwrap() == data, "n={n} T{nthreads}");
            let mut out = vec![0u8; n];
            decompress_into(&c, &mut out, &p).unwrap();
            assert!(out == data, "n={n} T{nthreads} (into)");
        }
    }
}

/// Damaged SHUFFLE + BYTEDELTA chunks (the fused decode, split and unsplit) and stored
/// chunks (the threaded copy): every single-byte change and random multi-byte damage gives
/// an error or some bytes, never a panic, with 1 and 2 threads.
#[test]
fn damaged_chunks_on_the_new_paths_never_panic() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let data: Vec<u8> = (0..24_000u32).flat_map(|i| ((i / 7) as f32 * 0.5 + (i % 3) as f32).to_le_bytes()).collect();
    let mut chunks = Vec::new();
    for splitmode in [SplitMode::Always, SplitMode::Never] {
        for bd in [BYTEDELTA, 34] {
            let cp = CParams {
                codec: 1,
                clevel: 5,
                typesize: 4,
                blocksize: 16 << 10,
                splitmode,
                filters: [SHUFFLE, bd, 0, 0, 0, 0],
                ..CParams::default()
            };
            chunks.push(compress(&data, &cp).unwrap());
        }
    }
    let big: Vec<u8> = (0..(3 << 20) + 17).map(|_| next() as u8).collect();
    chunks.push(compress(&big, &CParams { clevel: 0, typesize: 1, ..CParams::default() }).unwrap());
    for c in &chunks {
        let head = c.len().min(400);
        for pos in 0..head {
            for nthreads in [1, 2] {
                let mut bad = c.clone();
                bad[pos] ^= 0x5A;
                let _ = decompress(&bad, &DParams { nthreads });
            }
        }
        for _ in 0..300 {
            let mut bad = c.clone();
            for _ in 0..1 + next() % 8 {
                let at = (next() as usize) % bad.len();
                bad[at] = next() as u8;
            }
            let _ = decompress(&bad, &DParams { nthreads: 2 });
            let mut out = vec![0u8; data.len().max(big.len())];
            let _ = decompress_into(&bad, &mut out, &DParams { nthreads: 1 });
        }
    }
}
