//! Bodies of the cargo-fuzz targets for `oxblosc-chunk`.
//!
//! Every target in `fuzz_targets/` is a one-liner calling one of the `fuzz_*` functions
//! here, so `tests/replay_regressions.rs` can replay saved findings and seed vectors through
//! exactly the same code with a plain `cargo test` (no cargo-fuzz, no nightly).
//!
//! The contract under test (issue 2, "Bad input"): arbitrary bytes never panic, hang or
//! allocate more than the header's validated `nbytes`; valid chunks round-trip; threads do
//! not change results.

use arbitrary::{Arbitrary, Unstructured};
use oxblosc_chunk::{
    cbuffer_sizes, compress, compress_blosc1, compress_into, compress_into_uninit, decompress, decompress_into,
    getitem, max_compressed_len, CParams, ChunkHeader, DParams, Error, SplitMode,
};
use oxblosc_frame::{SChunk, SpecialValue};
use std::mem::MaybeUninit;

pub mod bloscpack;
pub mod expr;
pub mod hdf5;
pub mod lz4;
pub mod nd;
pub mod ndlz;
pub mod plugins;
pub mod zfp;
pub mod zlib;
pub use bloscpack::fuzz_bloscpack;
pub use expr::fuzz_expr_parse;
pub use hdf5::{fuzz_hdf5_decode, fuzz_hdf5_lazy, hdf5_lazy};
pub use lz4::fuzz_lz4;
pub use nd::{fuzz_nd_open, fuzz_nd_slices};
pub use ndlz::fuzz_ndlz;
pub use plugins::fuzz_nd_filters;
pub use zfp::fuzz_zfp;
pub use zlib::fuzz_zlib;

/// Largest `nbytes` a fuzz input may claim before we decode it.
///
/// `decompress` allocates the header's `nbytes` up front (that is the documented, validated
/// upper bound: up to 2 GiB). A 32-byte input can legally claim a 2 GiB special-zeros chunk,
/// and filling it would blow libFuzzer's -rss_limit_mb / -malloc_limit_mb and report an
/// "OOM" that is not a bug. Inputs claiming more than this are only parsed, not decoded.
pub const MAX_FUZZ_NBYTES: usize = 64 << 20;

/// Codecs the engine builds in (compcodes).
pub const CODECS: [u8; 5] = [0, 1, 2, 4, 5];
/// Filter ids the fuzzer picks from (0 = empty slot; 4 and 36 are lossy).
pub const FILTERS: [u8; 8] = [0, 1, 2, 3, 35, 34, 4, 36];
/// Forced block sizes (0 = automatic); small and odd values on purpose.
pub const BLOCKSIZES: [usize; 24] =
    [0, 0, 0, 0, 0, 0, 1, 2, 3, 7, 8, 16, 31, 64, 100, 128, 255, 256, 1000, 1024, 4096, 4097, 8192, 65536];

fn dp(nthreads: usize) -> DParams {
    DParams { nthreads }
}

// ---------------------------------------------------------------------------------------
// decompress: arbitrary bytes
// ---------------------------------------------------------------------------------------

/// Arbitrary bytes as a chunk: never panic; 1 and 2 threads agree; `decompress_into` agrees.
pub fn fuzz_decompress(data: &[u8]) {
    let parsed = ChunkHeader::parse(data);
    let sizes = cbuffer_sizes(data);
    assert_eq!(parsed.is_ok(), sizes.is_ok(), "ChunkHeader::parse and cbuffer_sizes disagree");
    let Ok((nbytes, cbytes, _blocksize)) = sizes else {
        // Nothing is allocated when the header does not parse: decoding must fail too.
        assert!(decompress(data, &dp(1)).is_err(), "decompress accepted a header that does not parse");
        return;
    };
    assert!(cbytes <= data.len(), "cbuffer_sizes: cbytes {cbytes} beyond the buffer {}", data.len());
    if nbytes > MAX_FUZZ_NBYTES {
        return; // see MAX_FUZZ_NBYTES
    }
    let one = decompress(data, &dp(1));
    let two = decompress(data, &dp(2));
    match (&one, &two) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.len(), nbytes, "decompress returned {} bytes, header says {nbytes}", a.len());
            assert!(a == b, "1 and 2 threads decoded different bytes");
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "1 and 2 threads disagree: {:?} vs {:?}",
            one.as_ref().map(|v| v.len()),
            two.as_ref().map(|v| v.len())
        ),
    }
    // decompress_into: the same result into an exact buffer; a short buffer is an error.
    let mut dst = vec![0xA5u8; nbytes];
    match (decompress_into(data, &mut dst, &dp(1)), &one) {
        (Ok(n), Ok(a)) => {
            assert_eq!(n, nbytes);
            assert!(dst == *a, "decompress_into and decompress differ");
        }
        (Err(_), Err(_)) => {}
        (r, _) => panic!("decompress_into ({:?}) and decompress ({:?}) disagree", r, one.as_ref().map(|v| v.len())),
    }
    if nbytes > 0 {
        let mut short = vec![0u8; nbytes - 1];
        let r = decompress_into(data, &mut short, &dp(1));
        assert!(matches!(r, Err(Error::OutputTooSmall { .. })), "short destination: {r:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Parameter generation shared by roundtrip and getitem
// ---------------------------------------------------------------------------------------

/// The fixed-size head of a roundtrip/getitem input; each field is one byte so seed files
/// are easy to write by hand (see `examples/make_seeds.rs`). Missing bytes read as 0.
#[derive(Arbitrary, Debug, Clone, Copy, Default)]
pub struct RawParams {
    pub codec: u8,
    pub clevel: u8,
    pub typesize_lo: u8,
    pub typesize_hi: u8,
    pub nfilters: u8,
    pub filters: [u8; 6],
    pub metas: [u8; 6],
    pub splitmode: u8,
    pub blocksize: u8,
    pub nthreads: u8,
    pub use_dict: u8,
    pub data_mode: u8,
    pub len_lo: u8,
    pub len_hi: u8,
    /// Seed of the PRNG that picks getitem ranges and mutations.
    pub seed: [u8; 4],
}

/// Bytes taken by `RawParams`.
pub const RAW_PARAMS_LEN: usize = 28;

/// Largest buffer the generator builds (keeps zstd -9 + dictionaries fast under ASan).
pub const MAX_GEN_LEN: usize = 64 * 1024;
/// Largest number of blocks a forced small block size may produce.
pub const MAX_GEN_BLOCKS: usize = 4096;

impl RawParams {
    pub fn cparams(&self) -> CParams {
        let nfilters = usize::from(self.nfilters % 7);
        let mut filters = [0u8; 6];
        let mut filters_meta = [0u8; 6];
        for k in 0..nfilters {
            filters[k] = FILTERS[usize::from(self.filters[k]) % FILTERS.len()];
            filters_meta[k] = self.metas[k];
        }
        CParams {
            codec: CODECS[usize::from(self.codec) % CODECS.len()],
            codec_meta: 0,
            clevel: self.clevel % 10,
            use_dict: self.use_dict & 1 == 1,
            typesize: 1 + (usize::from(self.typesize_lo) | usize::from(self.typesize_hi) << 8) % 300,
            nthreads: 1 + usize::from(self.nthreads % 3),
            blocksize: BLOCKSIZES[usize::from(self.blocksize) % BLOCKSIZES.len()],
            splitmode: SplitMode::from_id(1 + self.splitmode % 4).expect("1..=4 are valid"),
            filters,
            filters_meta,
        }
    }

    /// The buffer to compress, from the rest of the input.
    pub fn data(&self, rest: &[u8], cp: &CParams) -> Vec<u8> {
        let mut len = usize::from(self.len_lo) | usize::from(self.len_hi) << 8;
        if cp.blocksize > 0 {
            len = len.min(cp.blocksize * MAX_GEN_BLOCKS);
        }
        len = len.min(MAX_GEN_LEN);
        match self.data_mode % 4 {
            // The raw bytes.
            0 => rest[..rest.len().min(MAX_GEN_LEN)].to_vec(),
            // The bytes repeated (compressible, dictionary-friendly).
            1 => {
                if rest.is_empty() {
                    vec![0; len]
                } else {
                    rest.iter().copied().cycle().take(len).collect()
                }
            }
            // A counter of `typesize`-byte elements (shuffle/delta/bytedelta-friendly) with
            // the raw bytes XORed over its start.
            2 => {
                let ts = cp.typesize;
                let mut v: Vec<u8> =
                    (0..len).map(|j| ((j / ts) as u64).to_le_bytes().get(j % ts).copied().unwrap_or(0)).collect();
                for (d, s) in v.iter_mut().zip(rest) {
                    *d ^= s;
                }
                v
            }
            // Zeros with the raw bytes in the middle (zero runs, special-zero chunks).
            _ => {
                let mut v = vec![0u8; len.max(rest.len())];
                let at = (v.len() - rest.len()) / 2;
                v[at..at + rest.len()].copy_from_slice(rest);
                v
            }
        }
    }

    pub fn seed(&self) -> u64 {
        u64::from(u32::from_le_bytes(self.seed)) | 0x9E37_79B9_0000_0000
    }
}

/// Split a roundtrip/getitem input into its parameters and the rest.
pub fn split_input(data: &[u8]) -> (RawParams, &[u8]) {
    let head = &data[..data.len().min(RAW_PARAMS_LEN)];
    let raw = RawParams::arbitrary(&mut Unstructured::new(head)).unwrap_or_default();
    (raw, &data[head.len()..])
}

/// Does the pipeline give back exactly what went in?
pub fn is_lossless(cp: &CParams) -> bool {
    !cp.has_filter(4) && !cp.has_filter(36)
}

/// A small xorshift PRNG for ranges and mutations (deterministic per input).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform-ish in 0..=n.
    pub fn upto(&mut self, n: usize) -> usize {
        (self.next_u64() % (n as u64 + 1)) as usize
    }
}

// ---------------------------------------------------------------------------------------
// roundtrip: arbitrary parameters + data
// ---------------------------------------------------------------------------------------

/// Compress with fuzz-chosen parameters; valid parameters must round-trip (lossless
/// pipelines), give the same bytes with 1 and 2 threads, and the Blosc1 writer too.
pub fn fuzz_roundtrip(data: &[u8]) {
    let (raw, rest) = split_input(data);
    let cp = raw.cparams();
    let src = raw.data(rest, &cp);
    roundtrip_check(&cp, &src);
}

/// The roundtrip checks for one parameter set and buffer.
pub fn roundtrip_check(cp: &CParams, src: &[u8]) {
    let valid = cp.validate();
    let chunk = match compress(src, cp) {
        Ok(c) => c,
        Err(e) => {
            assert!(valid.is_err(), "compress failed on valid parameters {cp:?} ({} bytes): {e}", src.len());
            return;
        }
    };
    assert!(valid.is_ok(), "compress accepted parameters validate() rejects: {cp:?}");
    assert!(chunk.len() <= max_compressed_len(src.len()), "chunk of {} bytes exceeds max_compressed_len", chunk.len());
    check_chunk(&chunk, src, cp, "compress");

    // Threads must not change the bytes (blocks are written in order).
    for n in [1usize, 2] {
        if n != cp.nthreads {
            let other = compress(src, &CParams { nthreads: n, ..cp.clone() }).expect("same parameters, other nthreads");
            assert!(other == chunk, "compress with nthreads {n} differs from nthreads {} for {cp:?}", cp.nthreads);
        }
    }

    // compress_into: an exact-size buffer gives the same chunk; a tight one fails cleanly
    // or still gives a valid chunk.
    let mut dst = vec![0u8; max_compressed_len(src.len())];
    let n = compress_into(src, &mut dst, cp).expect("compress_into with max_compressed_len");
    assert!(dst[..n] == chunk[..], "compress_into and compress differ");
    let tight = chunk.len().saturating_sub(1 + chunk.len() % 7);
    let mut small = vec![0u8; tight];
    let tight_result = compress_into(src, &mut small, cp);
    match &tight_result {
        Ok(n) => check_chunk(&small[..*n], src, cp, "compress_into (tight)"),
        Err(Error::OutputTooSmall { .. }) => {}
        Err(e) => panic!("compress_into into {tight} bytes: unexpected error {e}"),
    }

    // compress_into_uninit (a Python `bytes` of unknown contents): the same chunk whatever
    // the destination held, and the tight buffer's outcome of compress_into.
    let mut junk = vec![MaybeUninit::new(0xA5u8); max_compressed_len(src.len())];
    let n = compress_into_uninit(src, &mut junk, cp).expect("compress_into_uninit with max_compressed_len");
    // SAFETY: compress_into_uninit initialised the first `n` bytes (and these were anyway).
    assert!(
        junk[..n].iter().zip(&chunk).all(|(a, &b)| unsafe { a.assume_init() } == b),
        "compress_into_uninit differs"
    );
    let mut junk = vec![MaybeUninit::new(0x5Au8); tight];
    match (compress_into_uninit(src, &mut junk, cp), &tight_result) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, *b, "tight compress_into_uninit and compress_into differ in length");
            assert!(junk[..a].iter().zip(&small).all(|(x, &y)| unsafe { x.assume_init() } == y), "tight chunks differ");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("into {tight} bytes: compress_into_uninit {a:?}, compress_into {b:?}"),
    }

    // The Blosc1 writer: only shuffle/bitshuffle and no dictionary; otherwise an error.
    let blosc1_ok = cp.filters.iter().all(|&f| f <= 2) && !cp.use_dict;
    match compress_blosc1(src, cp) {
        Ok(c1) => {
            assert!(blosc1_ok, "compress_blosc1 accepted {cp:?}");
            assert_eq!(c1[0], 2, "Blosc1 chunks are version 2");
            check_chunk(&c1, src, cp, "compress_blosc1");
            for n in [1usize, 2] {
                if n != cp.nthreads {
                    let other =
                        compress_blosc1(src, &CParams { nthreads: n, ..cp.clone() }).expect("blosc1, other nthreads");
                    assert!(other == c1, "compress_blosc1 with nthreads {n} differs");
                }
            }
        }
        Err(e) => assert!(!blosc1_ok, "compress_blosc1 failed on {cp:?}: {e}"),
    }
}

/// A chunk we wrote: sizes are right, it decodes (1 and 2 threads) to `src` when lossless.
fn check_chunk(chunk: &[u8], src: &[u8], cp: &CParams, what: &str) {
    let (nbytes, cbytes, _) = cbuffer_sizes(chunk).unwrap_or_else(|e| panic!("{what}: header does not parse: {e}"));
    assert_eq!(nbytes, src.len(), "{what}: nbytes");
    assert_eq!(cbytes, chunk.len(), "{what}: cbytes");
    let one =
        decompress(chunk, &dp(1)).unwrap_or_else(|e| panic!("{what}: our own chunk does not decode ({cp:?}): {e}"));
    let two = decompress(chunk, &dp(2)).unwrap_or_else(|e| panic!("{what}: does not decode with 2 threads: {e}"));
    assert!(one == two, "{what}: 1 and 2 threads decode differently");
    assert_eq!(one.len(), src.len(), "{what}: decoded length");
    if is_lossless(cp) {
        if let Some(i) = one.iter().zip(src).position(|(a, b)| a != b) {
            panic!("{what}: round trip differs at byte {i} of {} ({cp:?})", src.len());
        }
    }
}

// ---------------------------------------------------------------------------------------
// getitem: valid chunks and mutated/arbitrary bytes
// ---------------------------------------------------------------------------------------

/// Number of ranges tried per chunk.
const RANGES: usize = 8;

/// First byte even: build a valid chunk from the parameters and check random ranges
/// against the full decode, then mutate it and check nothing panics. First byte odd: the
/// rest (after the parameter head) is an arbitrary chunk.
pub fn fuzz_getitem(data: &[u8]) {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let (raw, rest) = split_input(data);
    let mut rng = Rng::new(raw.seed());
    if mode & 1 == 1 {
        arbitrary_getitem(rest, &mut rng);
        return;
    }
    let cp = raw.cparams();
    let src = raw.data(rest, &cp);
    let Ok(chunk) = compress(src.as_slice(), &cp) else {
        return;
    };
    let full = decompress(&chunk, &dp(1)).expect("our own chunk decodes");
    if is_lossless(&cp) {
        assert!(full == src, "round trip differs ({cp:?})");
    }
    let ts = usize::from(ChunkHeader::parse(&chunk).expect("our header parses").typesize);
    let nitems = full.len() / ts;
    let mut buf = Vec::new();
    for _ in 0..RANGES {
        let (start, n) = pick_range(&mut rng, nitems);
        buf.clear();
        buf.resize(n * ts, 0);
        let got = getitem(&chunk, start, n, &mut buf).unwrap_or_else(|e| {
            panic!("getitem({start}, {n}) of {nitems} items failed on a valid chunk ({cp:?}): {e}")
        });
        assert_eq!(got, n * ts);
        assert!(
            buf[..] == full[start * ts..(start + n) * ts],
            "getitem({start}, {n}) differs from the full decode ({cp:?})"
        );
    }
    // Out-of-range requests are errors, not panics.
    let mut one = vec![0u8; ts];
    assert!(getitem(&chunk, nitems, 1, &mut one).is_err(), "getitem past the end succeeded");
    assert!(getitem(&chunk, usize::MAX, 2, &mut one).is_err(), "getitem with overflowing range succeeded");
    if nitems > 0 {
        let mut short = vec![0u8; nitems * ts - 1];
        assert!(getitem(&chunk, 0, nitems, &mut short).is_err(), "getitem into a short buffer succeeded");
    }

    // Mutate the chunk: flip bytes, rewrite header fields, truncate. Nothing may panic.
    let mut bad = chunk.clone();
    let nmut = 1 + rng.upto(3);
    for _ in 0..nmut {
        if bad.is_empty() {
            break;
        }
        match rng.next_u64() % 4 {
            0 => {
                let i = rng.upto(bad.len() - 1);
                bad[i] ^= 1 << (rng.next_u64() % 8);
            }
            1 => {
                let i = rng.upto(bad.len() - 1);
                bad[i] = rng.next_u64() as u8;
            }
            2 => {
                // A header byte (sizes, flags, filters) or a block start.
                let i = rng.upto(bad.len().min(48) - 1);
                bad[i] = rng.next_u64() as u8;
            }
            _ => {
                let keep = rng.upto(bad.len());
                bad.truncate(keep);
            }
        }
    }
    arbitrary_getitem(&bad, &mut rng);
}

fn pick_range(rng: &mut Rng, nitems: usize) -> (usize, usize) {
    let start = rng.upto(nitems);
    let n = match rng.next_u64() % 4 {
        0 => nitems - start,
        1 => rng.upto((nitems - start).min(3)),
        _ => rng.upto(nitems - start),
    };
    (start, n)
}

/// getitem (and decompress) on bytes that may not be a valid chunk: never panic; when the
/// whole chunk decodes, every in-range getitem succeeds and matches the full decode.
fn arbitrary_getitem(chunk: &[u8], rng: &mut Rng) {
    let Ok(h) = ChunkHeader::parse(chunk) else {
        let mut dst = [0u8; 16];
        assert!(getitem(chunk, 0, 1, &mut dst).is_err(), "getitem accepted a header that does not parse");
        return;
    };
    if h.nbytes > MAX_FUZZ_NBYTES {
        return; // see MAX_FUZZ_NBYTES
    }
    let ts = usize::from(h.typesize);
    let nitems = h.nbytes / ts;
    let full = decompress(chunk, &dp(1)).ok();
    let mut buf = Vec::new();
    for _ in 0..RANGES {
        let (start, n) = pick_range(rng, nitems);
        buf.clear();
        buf.resize(n * ts, 0);
        let r = getitem(chunk, start, n, &mut buf);
        if let Some(full) = &full {
            let got = r.unwrap_or_else(|e| panic!("getitem({start}, {n}) failed on a chunk that decompresses: {e}"));
            assert_eq!(got, n * ts);
            assert!(buf[..] == full[start * ts..(start + n) * ts], "getitem({start}, {n}) differs from decompress");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Seeds (written by examples/make_seeds.rs, replayed by tests/replay_regressions.rs)
// ---------------------------------------------------------------------------------------

/// Encode a parameter head (the inverse of `split_input` for the fields that matter).
#[allow(clippy::too_many_arguments)]
pub fn encode_params(
    codec_idx: u8,
    clevel: u8,
    typesize: u16,
    filters: &[(u8, u8)],
    splitmode: u8,
    blocksize_idx: u8,
    nthreads: u8,
    use_dict: bool,
    data_mode: u8,
    len: u16,
    seed: u32,
) -> Vec<u8> {
    let mut v = vec![0u8; RAW_PARAMS_LEN];
    v[0] = codec_idx;
    v[1] = clevel;
    v[2..4].copy_from_slice(&(typesize - 1).to_le_bytes());
    v[4] = filters.len() as u8;
    for (k, &(fidx, meta)) in filters.iter().enumerate() {
        v[5 + k] = fidx;
        v[11 + k] = meta;
    }
    v[17] = splitmode - 1;
    v[18] = blocksize_idx;
    v[19] = nthreads - 1;
    v[20] = u8::from(use_dict);
    v[21] = data_mode;
    v[22..24].copy_from_slice(&len.to_le_bytes());
    v[24..28].copy_from_slice(&seed.to_le_bytes());
    v
}

/// Index of a filter id in `FILTERS`.
pub fn fidx(id: u8) -> u8 {
    FILTERS.iter().position(|&f| f == id).expect("known filter") as u8
}

/// Generated seeds: (target, file name, bytes).
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let (sh, bs, de, bd, bd1, tp, it) = (fidx(1), fidx(2), fidx(3), fidx(35), fidx(34), fidx(4), fidx(36));
    // (name, params head, tail bytes)
    let pattern: Vec<u8> = (0u8..=200).map(|i| i.wrapping_mul(7) ^ (i >> 3)).collect();
    let heads: Vec<(&str, Vec<u8>)> = vec![
        ("blosclz-shuffle-i32", encode_params(0, 5, 4, &[(sh, 0)], 4, 0, 1, false, 2, 4096, 1)),
        ("lz4-bitshuffle-f64", encode_params(1, 9, 8, &[(bs, 0)], 3, 0, 2, false, 2, 8000, 2)),
        ("lz4hc-delta-shuffle", encode_params(2, 6, 2, &[(de, 0), (sh, 0)], 1, 13, 1, false, 2, 3000, 3)),
        ("zlib-bytedelta", encode_params(3, 3, 4, &[(sh, 0), (bd, 0)], 4, 17, 2, false, 1, 2000, 4)),
        ("zstd-dict", encode_params(4, 5, 8, &[(sh, 0)], 4, 19, 3, true, 1, 20000, 5)),
        ("lz4-dict", encode_params(1, 5, 4, &[(sh, 0)], 4, 17, 2, true, 1, 20000, 6)),
        ("zstd-trunc-prec", encode_params(4, 1, 8, &[(tp, 20), (sh, 0)], 2, 0, 1, false, 2, 1000, 7)),
        (
            "blosclz-int-trunc-bytedelta-v1",
            encode_params(0, 9, 4, &[(it, 3), (sh, 0), (bd1, 0)], 4, 0, 2, false, 2, 1500, 8),
        ),
        ("zeros", encode_params(0, 5, 8, &[(sh, 0)], 4, 0, 2, false, 3, 3000, 9)),
        ("tiny", encode_params(1, 5, 3, &[(sh, 0)], 4, 0, 1, false, 0, 0, 10)),
        ("typesize-300", encode_params(4, 5, 300, &[(sh, 0), (de, 0)], 1, 17, 2, false, 2, 3000, 11)),
        ("odd-blocksize", encode_params(0, 5, 7, &[(sh, 7)], 1, 12, 2, false, 2, 700, 12)),
    ];
    let mut out = Vec::new();
    for (name, head) in &heads {
        let mut rt = head.clone();
        rt.extend_from_slice(&pattern);
        out.push(("roundtrip", format!("seed-{name}"), rt.clone()));
        let mut gi = vec![0u8];
        gi.extend_from_slice(&rt);
        out.push(("getitem", format!("seed-{name}"), gi));
        // The chunk itself, for the arbitrary-bytes targets.
        let (raw, rest) = split_input(&rt);
        let cp = raw.cparams();
        let src = raw.data(rest, &cp);
        for (kind, chunk) in [("", compress(&src, &cp)), ("-blosc1", compress_blosc1(&src, &cp))] {
            if let Ok(chunk) = chunk {
                if chunk.len() <= 40 * 1024 {
                    out.push(("decompress", format!("seed-{name}{kind}"), chunk.clone()));
                    out.push(("getitem", format!("seed-chunk-{name}{kind}"), getitem_arbitrary_input(&chunk, 77)));
                }
            }
        }
    }
    for (name, kind, nbytes, ts, value) in [
        ("zeros", oxblosc_chunk::SpecialKind::Zeros, 4000usize, 4usize, None),
        ("nan", oxblosc_chunk::SpecialKind::Nan, 800, 8, None),
        ("uninit", oxblosc_chunk::SpecialKind::Uninit, 96, 2, None),
        ("value", oxblosc_chunk::SpecialKind::Value, 300, 3, Some(&[1u8, 2, 3][..])),
    ] {
        let chunk = oxblosc_chunk::special_chunk(kind, nbytes, ts, value).expect("special chunk");
        out.push(("decompress", format!("seed-special-{name}"), chunk.clone()));
        out.push(("getitem", format!("seed-special-{name}"), getitem_arbitrary_input(&chunk, 5)));
    }
    // lz4: real LZ4 and LZ4HC streams of a pattern (decode mode, exact capacity) and the
    // pattern for the round trip.
    for (name, hc, level) in [("lz4-1", false, 1u8), ("lz4-9", false, 9), ("lz4hc-9", true, 9)] {
        let data: Vec<u8> = pattern.iter().cycle().take(3000).enumerate().map(|(i, b)| b ^ (i / 97) as u8).collect();
        let mut enc = vec![0u8; data.len() + 64];
        let n = if hc {
            oxblosc_chunk::codec::lz4::compress_hc(level, &data, &mut enc)
        } else {
            oxblosc_chunk::codec::lz4::compress(level, &data, &mut enc)
        };
        let mut seed = vec![0u8];
        seed.extend_from_slice(&(data.len() as u16).to_le_bytes());
        seed.extend_from_slice(&enc[..n]);
        out.push(("lz4", format!("seed-{name}"), seed.clone()));
        // The same block after a 40-byte dictionary (decode with a dictionary, bit 3).
        let mut with_dict = vec![8u8, seed[1], seed[2], 40];
        with_dict.extend_from_slice(&pattern[..40]);
        with_dict.extend_from_slice(&seed[3..]);
        out.push(("lz4", format!("seed-dict-{name}"), with_dict));
        let mut rt = vec![1 | u8::from(hc) << 1 | (level - 1) << 2];
        rt.extend_from_slice(&data);
        out.push(("lz4", format!("seed-roundtrip-{name}"), rt));
    }
    // frame_ops: head (codec, clevel, typesize index, filters/blocksize) + ops (see apply_op).
    let ops: Vec<u8> = vec![
        8, 0, 3, 1, 2, 3, // add_meta m0 = [1, 2, 3]
        0, 64, 0, // append 64 items (counter)
        0, 64, 1, // append 64 items (random)
        2, 1, 64, 2, 7, // insert 64 items of 7 at 1
        3, 0, 64, 3, // update chunk 0 with zeros
        5, 40, 0, 50, 0, // set_slice at 40, 50 items
        7, 1, 4, 9, 8, 7, 6, // set_vlmeta v1
        9, // to_cframe -> from_cframe
        6, 100, 0, 63, // fill_special 100 zeros
        6, 64, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8, // fill_special value
        4, 2, // delete chunk 2
        0, 10, 0, // short chunk (variable sizes from now on)
        2, 0, 5, 1, // insert short chunk at 0
        9, 5, 3, 1, 90, 0, 7, 1, 2, 1, 2, 9,
    ];
    for (name, head) in [
        ("blosclz-i32", [0u8, 5, 2, 1]),
        ("lz4-f64-bitshuffle-bs64", [1, 5, 3, 2 | 4 << 3]),
        ("zstd-u8-delta", [4, 3, 0, 3 | 4]),
        ("zlib-ts3-bs16", [3, 1, 4, 1 | 3 << 3]),
        ("lz4hc-u16-nan-less", [2, 9, 1, 0]),
    ] {
        let mut v = head.to_vec();
        v.extend_from_slice(&ops);
        out.push(("frame_ops", format!("seed-{name}"), v));
    }
    out.extend(zlib::seeds());
    out.extend(nd::seeds());
    out.extend(bloscpack::seeds());
    out.extend(expr::seeds());
    out
}

/// A getitem input in arbitrary-bytes mode (odd first byte) around `chunk`.
pub fn getitem_arbitrary_input(chunk: &[u8], seed: u32) -> Vec<u8> {
    let mut v = vec![1u8];
    let mut head = vec![0u8; RAW_PARAMS_LEN];
    head[24..28].copy_from_slice(&seed.to_le_bytes());
    v.extend_from_slice(&head);
    v.extend_from_slice(chunk);
    v
}

// ---------------------------------------------------------------------------------------
// frame_open: arbitrary bytes as a contiguous frame
// ---------------------------------------------------------------------------------------

/// Largest total `nbytes` (and largest single chunk) a fuzzed frame may claim before we
/// decode it. A 100-byte frame can legally claim 2^63 bytes of special zero chunks (special
/// offsets cost 8 bytes in the index, nothing in the chunks section) or a chunk of 2 GiB;
/// decoding those would hit libFuzzer's -rss_limit_mb / -malloc_limit_mb and report an OOM
/// that is not a bug. Such frames are only opened and walked (sizes, meta), not decoded.
pub const MAX_FUZZ_FRAME_NBYTES: u64 = 64 << 20;

/// Offsets tried for `from_cframe_at` (junk prefix length).
const FRAME_OFFSETS: [usize; 4] = [1, 3, 8, 17];

/// Arbitrary bytes as a cframe: opening never panics; when it opens, every chunk, the
/// metalayers and a few slices are read; what decodes is consistent (chunk vs slice vs the
/// same frame embedded at an offset vs a `to_cframe` round trip).
pub fn fuzz_frame_open(data: &[u8]) {
    let direct = SChunk::from_cframe(data);
    // The same bytes behind a junk prefix: from_cframe_at is more lenient (the frame may
    // end before the buffer), so it must open whatever from_cframe opens.
    let off = FRAME_OFFSETS[data.len() % FRAME_OFFSETS.len()];
    let mut buf = vec![0xEEu8; off];
    buf.extend_from_slice(data);
    let at = SChunk::from_cframe_at(&buf, off);
    if direct.is_ok() {
        assert!(at.is_ok(), "from_cframe opens but from_cframe_at({off}) fails: {:?}", at.as_ref().err());
    }
    // Also out-of-range offsets: errors, not panics.
    let _ = SChunk::from_cframe_at(data, data.len());
    let _ = SChunk::from_cframe_at(data, data.len() + 1);
    let _ = SChunk::from_cframe_at(data, usize::MAX);

    let a = direct.ok().map(|s| walk_frame(&s));
    let b = at.ok().map(|s| walk_frame(&s));
    if let (Some(Some(a)), Some(Some(b))) = (&a, &b) {
        assert!(a == b, "from_cframe and from_cframe_at({off}) decode different chunks");
    }
    // Re-serialise what decoded completely: it must reopen to the same content.
    if let Some(Some(chunks)) = &a {
        let s = SChunk::from_cframe(data).expect("opened once already");
        if let Ok(frame) = s.to_cframe() {
            let s2 = SChunk::from_cframe(&frame)
                .unwrap_or_else(|e| panic!("to_cframe of an opened frame does not reopen: {e}"));
            assert_eq!(s2.nchunks(), chunks.len(), "to_cframe round trip: nchunks");
            for (i, c) in chunks.iter().enumerate() {
                let d = s2.decompress_chunk(i).unwrap_or_else(|e| panic!("to_cframe round trip: chunk {i}: {e}"));
                assert!(d == *c, "to_cframe round trip: chunk {i} differs");
            }
            assert!(s2.meta_names() == s.meta_names(), "to_cframe round trip: meta names");
            assert!(s2.vlmeta_names() == s.vlmeta_names(), "to_cframe round trip: vlmeta names");
        }
    }
}

/// Read everything from an opened frame; the decoded chunks when all of them decode.
fn walk_frame(s: &SChunk) -> Option<Vec<Vec<u8>>> {
    let _ = (s.nbytes(), s.cbytes(), s.cratio(), s.typesize(), s.chunksize(), s.nitems(), s.blocksize());
    for name in s.meta_names() {
        assert!(s.meta(name).is_some(), "meta name {name:?} listed but not found");
    }
    for name in s.vlmeta_names() {
        assert!(s.vlmeta(name).is_some(), "vlmeta name {name:?} listed but not found");
    }
    let _ = s.meta("");
    let _ = s.vlmeta("missing");
    let n = s.nchunks();
    let _ = s.get_chunk(n);
    let _ = s.decompress_chunk(n);
    if s.nbytes() > MAX_FUZZ_FRAME_NBYTES {
        return None; // see MAX_FUZZ_FRAME_NBYTES
    }
    let mut all = Some(Vec::new());
    let mut decoded = 0u64;
    for i in 0..n {
        let _ = s.chunk_info(i);
        let chunk = s.get_chunk(i);
        let Ok(chunk) = chunk else {
            all = None;
            let _ = s.decompress_chunk(i);
            continue;
        };
        let claimed = oxblosc_chunk::cbuffer_sizes(&chunk).map(|(nb, _, _)| nb as u64).unwrap_or(0);
        decoded += claimed;
        if claimed > MAX_FUZZ_FRAME_NBYTES || decoded > MAX_FUZZ_FRAME_NBYTES {
            return None; // see MAX_FUZZ_FRAME_NBYTES (chunks may claim more than the frame)
        }
        match s.decompress_chunk(i) {
            Ok(d) => {
                let direct = decompress(&chunk, &dp(1));
                if let Ok(direct) = direct {
                    assert!(direct == d, "decompress_chunk({i}) differs from decompressing get_chunk({i})");
                }
                if let Some(v) = all.as_mut() {
                    v.push(d);
                }
            }
            Err(_) => all = None,
        }
    }
    // Slices: the whole range, the halves, one item, empty and out of range.
    let ni = s.nitems();
    let full = s.get_slice(0, ni);
    for (a, b) in [(0, ni / 2), (ni / 2, ni), (ni / 3, ni / 3 + 1), (ni, ni), (1, 0), (0, ni + 1), (ni, u64::MAX)] {
        if let (Ok(part), Ok(full)) = (s.get_slice(a, b), &full) {
            let ts = s.typesize() as u64;
            assert!(
                part[..] == full[(a * ts) as usize..(b * ts) as usize],
                "get_slice({a}, {b}) differs from the full slice"
            );
        }
    }
    if let (Some(chunks), Ok(full)) = (&all, &full) {
        let cat: Vec<u8> = chunks.concat();
        if cat.len() == full.len() {
            assert!(cat == *full, "get_slice(0, nitems) differs from the decoded chunks");
        }
    }
    all
}

// ---------------------------------------------------------------------------------------
// frame_ops: a sequence of super-chunk operations checked against a model
// ---------------------------------------------------------------------------------------

/// At most this many operations per input.
pub const MAX_FRAME_OPS: usize = 48;
/// At most this many items per appended/inserted/updated chunk or slice.
pub const MAX_FRAME_ITEMS: usize = 96;

const FRAME_TYPESIZES: [usize; 5] = [1, 2, 4, 8, 3];
const FRAME_BLOCKSIZES: [usize; 6] = [0, 0, 0, 16, 64, 256];

/// The model: chunks as plain bytes, plus vlmeta and meta.
#[derive(Default, Debug)]
struct Model {
    chunks: Vec<Vec<u8>>,
    vlmeta: Vec<(String, Vec<u8>)>,
    meta: Vec<(String, Vec<u8>)>,
}

/// Reads bytes of the op stream; 0 when exhausted.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Bytes<'_> {
    pub(crate) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }
}

/// Byte 0-3: codec, clevel, typesize, filters/blocksize; then ops of one opcode byte and
/// its arguments. Every op is applied to an `SChunk` and to `Model`; after each the
/// super-chunk's decoded content must equal the model's. Failed ops must change nothing.
pub fn fuzz_frame_ops(data: &[u8]) {
    let mut b = Bytes(data);
    let (codec, clevel, tsb, fb) = (b.u8(), b.u8(), b.u8(), b.u8());
    let ts = FRAME_TYPESIZES[usize::from(tsb) % FRAME_TYPESIZES.len()];
    let mut filters = [0u8; 6];
    filters[0] = [0u8, 1, 2, 3][usize::from(fb & 3)];
    if fb & 4 != 0 {
        filters[1] = 1;
    }
    let cp = CParams {
        codec: CODECS[usize::from(codec) % CODECS.len()],
        clevel: clevel % 10,
        typesize: ts,
        nthreads: 1,
        blocksize: FRAME_BLOCKSIZES[usize::from(fb >> 3) % FRAME_BLOCKSIZES.len()],
        filters,
        ..CParams::default()
    };
    let mut s = SChunk::new(cp.clone(), dp(1)).unwrap_or_else(|e| panic!("SChunk::new({cp:?}): {e}"));
    let mut m = Model::default();
    let mut rng = Rng::new(u64::from(tsb) << 8 | u64::from(fb) | 0x5151_0000);
    for step in 0..MAX_FRAME_OPS {
        if b.0.is_empty() {
            break;
        }
        let op = b.u8();
        let n = m.chunks.len();
        let desc = apply_op(&mut s, &mut m, &mut b, &mut rng, op, ts, n);
        check_model(&s, &m, &format!("step {step}: {desc}"));
    }
    let frame = s.to_cframe().unwrap_or_else(|e| panic!("final to_cframe: {e}"));
    let s2 = SChunk::from_cframe(&frame).unwrap_or_else(|e| panic!("final from_cframe: {e}"));
    empty_frame_drops_chunks(&s2, &mut m);
    check_model(&s2, &m, "final to_cframe -> from_cframe");
}

/// Chunk data of `nitems` items: a counter, raw stream bytes, a constant or zeros.
fn gen_data(b: &mut Bytes, rng: &mut Rng, nitems: usize, ts: usize) -> Vec<u8> {
    let len = nitems * ts;
    match b.u8() % 4 {
        0 => (0..len).map(|j| (j / ts) as u8 ^ (j % ts) as u8).collect(),
        1 => (0..len).map(|_| rng.next_u64() as u8).collect(),
        2 => vec![b.u8(); len],
        _ => vec![0; len],
    }
}

fn apply_op(s: &mut SChunk, m: &mut Model, b: &mut Bytes, rng: &mut Rng, op: u8, ts: usize, n: usize) -> String {
    match op % 10 {
        0 | 1 => {
            let items = usize::from(b.u8()) % (MAX_FRAME_ITEMS + 1);
            let d = gen_data(b, rng, items, ts);
            let r = s.append_data(&d);
            if r.is_ok() {
                m.chunks.push(d);
            }
            format!("append {items} items -> {:?}", r.map_err(|e| e.to_string()))
        }
        2 => {
            let i = usize::from(b.u8()) % (n + 1);
            let items = usize::from(b.u8()) % (MAX_FRAME_ITEMS + 1);
            let d = gen_data(b, rng, items, ts);
            let r = s.insert_data(i, &d);
            if r.is_ok() {
                m.chunks.insert(i, d);
            }
            format!("insert {items} items at {i} -> {:?}", r.map_err(|e| e.to_string()))
        }
        3 => {
            let i = usize::from(b.u8()) % n.max(1);
            let items = usize::from(b.u8()) % (MAX_FRAME_ITEMS + 1);
            let d = gen_data(b, rng, items, ts);
            let r = s.update_data(i, &d);
            if r.is_ok() {
                m.chunks[i] = d;
            } else {
                assert!(n == 0, "update_data({i}) of {n} with {items} items failed: {r:?}");
            }
            format!("update {i} with {items} items -> {:?}", r.map_err(|e| e.to_string()))
        }
        4 => {
            let i = usize::from(b.u8()) % n.max(1);
            let r = s.delete_chunk(i);
            if n > 0 {
                assert!(r.is_ok(), "delete_chunk({i}) of {n} failed: {r:?}");
                m.chunks.remove(i);
            } else {
                assert!(r.is_err(), "delete_chunk on an empty super-chunk succeeded");
            }
            format!("delete {i}")
        }
        5 => {
            let total: usize = m.chunks.iter().map(Vec::len).sum();
            let nitems = total / ts;
            let start = usize::from(b.u16()) % (nitems + 1);
            let len = usize::from(b.u8()) % (nitems - start + 1).min(MAX_FRAME_ITEMS + 1);
            let d = gen_data(b, rng, len, ts);
            let r = s.set_slice(start as u64, &d);
            if r.is_ok() {
                let mut flat: Vec<u8> = m.chunks.concat();
                flat[start * ts..(start + len) * ts].copy_from_slice(&d);
                let mut at = 0;
                for c in &mut m.chunks {
                    let l = c.len();
                    c.copy_from_slice(&flat[at..at + l]);
                    at += l;
                }
            } else if total % ts == 0 {
                panic!("set_slice({start}, {len} items) of {nitems} failed: {r:?}");
            }
            format!("set_slice {start} +{len} -> {:?}", r.map_err(|e| e.to_string()))
        }
        6 => {
            let nitems = u64::from(b.u8() % 200);
            let kind = b.u8();
            let cs = (1 + usize::from(b.u8() % 64)) * ts;
            let value = match kind % 4 {
                0 => SpecialValue::Zeros,
                1 => SpecialValue::Nan,
                2 => SpecialValue::Uninit,
                _ => SpecialValue::Value((0..ts).map(|_| b.u8()).collect()),
            };
            let before = s.nchunks();
            let r = s.fill_special(nitems, value.clone(), Some(cs));
            if r.is_ok() {
                for i in before..s.nchunks() {
                    let d = s.decompress_chunk(i).unwrap_or_else(|e| panic!("fill_special chunk {i}: {e}"));
                    match &value {
                        SpecialValue::Zeros => assert!(d.iter().all(|&x| x == 0), "zeros chunk {i} not zero"),
                        SpecialValue::Nan if ts == 4 => assert!(
                            d.chunks_exact(4).all(|x| f32::from_le_bytes(x.try_into().unwrap()).is_nan()),
                            "NaN chunk {i}"
                        ),
                        SpecialValue::Nan => assert!(
                            d.chunks_exact(8).all(|x| f64::from_le_bytes(x.try_into().unwrap()).is_nan()),
                            "NaN chunk {i}"
                        ),
                        SpecialValue::Value(v) => {
                            assert!(d.chunks_exact(ts).all(|x| x == &v[..]), "value chunk {i}")
                        }
                        SpecialValue::Uninit => {}
                    }
                    m.chunks.push(d);
                }
                let added: usize = m.chunks[before..].iter().map(Vec::len).sum();
                assert_eq!(added as u64, nitems * ts as u64, "fill_special({nitems}) added {added} bytes");
            }
            format!("fill_special {nitems} {value:?} cs {cs} -> {:?}", r.map_err(|e| e.to_string()))
        }
        7 => {
            let name = format!("v{}", b.u8() % 4);
            let len = usize::from(b.u8() % 40);
            let content: Vec<u8> = (0..len).map(|_| b.u8()).collect();
            let r = s.set_vlmeta(&name, &content);
            assert!(r.is_ok(), "set_vlmeta({name:?}): {r:?}");
            match m.vlmeta.iter_mut().find(|(k, _)| *k == name) {
                Some(slot) => slot.1 = content,
                None => m.vlmeta.push((name.clone(), content)),
            }
            format!("set_vlmeta {name}")
        }
        8 => {
            let name = format!("m{}", b.u8() % 3);
            let len = usize::from(b.u8() % 24);
            let content: Vec<u8> = (0..len).map(|_| b.u8()).collect();
            let exists = m.meta.iter().any(|(k, _)| *k == name);
            let r = s.add_meta(&name, &content);
            if n == 0 && !exists {
                assert!(r.is_ok(), "add_meta({name:?}) before any chunk: {r:?}");
                m.meta.push((name.clone(), content));
            } else {
                assert!(r.is_err(), "add_meta({name:?}) succeeded with {n} chunks / existing name");
            }
            format!("add_meta {name}")
        }
        _ => {
            let frame = s.to_cframe().unwrap_or_else(|e| panic!("to_cframe: {e}"));
            *s = SChunk::from_cframe(&frame).unwrap_or_else(|e| panic!("from_cframe of our own frame: {e}"));
            empty_frame_drops_chunks(s, m);
            format!("to_cframe/from_cframe ({} bytes)", frame.len())
        }
    }
}

/// Trailing empty chunks do not survive a frame round trip (known, not fixed; the frame
/// format shares it with C-Blosc2): with a fixed chunk size a reader derives nchunks as
/// ceil(nbytes / chunksize) (regressions/frame_ops/trailing-empty-chunk-lost-fixed-chunksize),
/// and a frame with nbytes 0 has no offsets index at all (`to_cframe` writes one only when
/// nbytes > 0; regressions/frame_ops/empty-chunks-lost-in-cframe). Drop exactly those from
/// the model; anything else lost is still a failure.
fn empty_frame_drops_chunks(reopened: &SChunk, m: &mut Model) {
    while m.chunks.len() > reopened.nchunks() && m.chunks.last().is_some_and(Vec::is_empty) {
        m.chunks.pop();
    }
}

fn check_model(s: &SChunk, m: &Model, when: &str) {
    assert_eq!(s.nchunks(), m.chunks.len(), "{when}: nchunks");
    let total: usize = m.chunks.iter().map(Vec::len).sum();
    assert_eq!(s.nbytes(), total as u64, "{when}: nbytes");
    for (i, c) in m.chunks.iter().enumerate() {
        let d = s.decompress_chunk(i).unwrap_or_else(|e| panic!("{when}: decompress_chunk({i}): {e}"));
        assert!(d == *c, "{when}: chunk {i} differs from the model ({} vs {} bytes)", d.len(), c.len());
        let raw = s.get_chunk(i).unwrap_or_else(|e| panic!("{when}: get_chunk({i}): {e}"));
        let d2 = decompress(&raw, &dp(1)).unwrap_or_else(|e| panic!("{when}: get_chunk({i}) does not decode: {e}"));
        assert!(d2 == *c, "{when}: get_chunk({i}) decodes differently");
    }
    let ts = s.typesize();
    if total % ts == 0 {
        let ni = (total / ts) as u64;
        let full = s.get_slice(0, ni).unwrap_or_else(|e| panic!("{when}: get_slice(0, {ni}): {e}"));
        assert!(full == m.chunks.concat(), "{when}: get_slice differs from the model");
        if ni > 2 {
            let (a, z) = (ni / 3, ni - ni / 4);
            let part = s.get_slice(a, z).unwrap_or_else(|e| panic!("{when}: get_slice({a}, {z}): {e}"));
            assert!(part[..] == full[a as usize * ts..z as usize * ts], "{when}: get_slice({a}, {z})");
        }
    }
    assert!(s.meta_names() == m.meta.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), "{when}: meta names");
    for (k, v) in &m.meta {
        assert!(s.meta(k) == Some(&v[..]), "{when}: meta {k}");
    }
    assert!(s.vlmeta_names() == m.vlmeta.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), "{when}: vlmeta names");
    for (k, v) in &m.vlmeta {
        assert!(s.vlmeta(k) == Some(&v[..]), "{when}: vlmeta {k}");
    }
}
