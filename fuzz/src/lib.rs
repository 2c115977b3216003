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
    cbuffer_sizes, compress, compress_blosc1, compress_into, decompress, decompress_into, getitem, max_compressed_len,
    CParams, ChunkHeader, DParams, Error, SplitMode,
};

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
    match compress_into(src, &mut small, cp) {
        Ok(n) => check_chunk(&small[..n], src, cp, "compress_into (tight)"),
        Err(Error::OutputTooSmall { .. }) => {}
        Err(e) => panic!("compress_into into {tight} bytes: unexpected error {e}"),
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
