//! Stock zlib for Blosc1 chunks (`oxblosc::stock_zlib`): its per-thread deflate state, reused
//! across streams and levels, must never carry anything from one stream into the next.
//!
//! Everything here runs on one thread so that the state really is reused: a stream cut short
//! (output too small, the engine's usual "store this block raw" case), then streams at other
//! levels and sizes. Each stream must be byte for byte what a fresh `compress2` writes (stock
//! zlib with its defaults), and every Blosc1 zlib chunk built on that thread must decode.

use libz_sys as z;
use oxblosc::chunk::{compress_blosc1, decompress, CParams, DParams, SplitMode};
use oxblosc::stock_zlib;

/// xorshift64*: reproducible pseudo-random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Data of a random kind: noise, runs, a ramp, or a mix (so that some streams do not fit).
fn sample(rng: &mut Rng, n: usize) -> Vec<u8> {
    let kind = rng.below(4);
    let mut v = Vec::with_capacity(n);
    let mut x = rng.next();
    for i in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        v.push(match kind {
            0 => (x >> 56) as u8,
            1 => ((i / (1 + (x >> 61) as usize * 97)) % 7) as u8,
            2 => (i / 5) as u8 ^ ((x >> 62) as u8),
            _ if (i / 4096) % 2 == 0 => (x >> 56) as u8,
            _ => (i / 300) as u8,
        });
    }
    v
}

/// What stock zlib's one-shot `compress2` writes (a fresh state per call).
fn reference(level: u8, src: &[u8]) -> Vec<u8> {
    // SAFETY: plain FFI over valid buffers; `compressBound` bounds the output.
    unsafe {
        let mut len = z::compressBound(src.len() as z::uLong);
        let mut out = vec![0u8; len as usize];
        let r = z::compress2(out.as_mut_ptr(), &mut len, src.as_ptr(), src.len() as z::uLong, i32::from(level));
        assert_eq!(r, z::Z_OK);
        out.truncate(len as usize);
        out
    }
}

/// Every level 0-9, after a stream of the same or another level cut short at a random point
/// of its output (or not at all): the next stream is compress2's bytes and decodes.
#[test]
fn streams_after_cut_short_ones_are_fresh_streams_at_every_level() {
    let mut rng = Rng(0x0DDB_1A5E_5BAD_5EED);
    let mut cut = 0;
    for round in 0..300 {
        let level = (round % 10) as u8;
        let before = if rng.below(3) == 0 { rng.below(10) as u8 } else { level };
        let len = 1 + rng.below(70_000) as usize;
        let noisy = sample(&mut rng, len);
        let full = reference(before, &noisy).len();
        // A budget anywhere below what the stream needs: it is cut short mid-stream.
        let budget = rng.below(full as u64) as usize;
        let mut small = vec![0u8; budget];
        assert_eq!(stock_zlib::deflate(before, &noisy, &mut small), 0, "round {round}: {budget} < {full} bytes");
        cut += 1;
        let len = 1 + rng.below(90_000) as usize;
        let src = sample(&mut rng, len);
        let mut out = vec![0u8; src.len() + src.len() / 100 + 64];
        let n = stock_zlib::deflate(level, &src, &mut out);
        let want = reference(level, &src);
        if want.len() <= out.len() {
            assert_eq!(&out[..n], &want[..], "round {round}: level {level} after a cut-short level {before}");
            let mut back = vec![0u8; src.len()];
            oxblosc::chunk::codec::zlib::decompress(&out[..n], &mut back).unwrap();
            assert!(back == src, "round {round}");
        } else {
            assert_eq!(n, 0, "round {round}: does not fit");
        }
    }
    assert_eq!(cut, 300);
}

/// Random Blosc1 zlib chunks (levels 0-9, typesizes, block sizes, shuffles, splits), all on
/// this thread after stock zlib is installed: every chunk decodes to its input.
#[test]
fn blosc1_zlib_chunks_always_decode() {
    stock_zlib::install();
    let mut rng = Rng(0xB105_C0DE_0000_0001);
    for round in 0..200 {
        let typesize = [1usize, 2, 3, 4, 8, 16, 7][rng.below(7) as usize];
        let n = typesize * (1 + rng.below(60_000 / typesize as u64) as usize);
        let src = sample(&mut rng, n);
        let cp = CParams {
            codec: 4,
            clevel: rng.below(10) as u8,
            typesize,
            nthreads: 1,
            blocksize: [0usize, 256, 1000, 4096, 16 << 10, 64 << 10][rng.below(6) as usize],
            splitmode: if rng.below(2) == 0 { SplitMode::Auto } else { SplitMode::Always },
            filters: [0, 0, 0, 0, 0, [0u8, 1, 2][rng.below(3) as usize]],
            ..CParams::default()
        };
        let c = compress_blosc1(&src, &cp).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let back = decompress(&c, &DParams { nthreads: 1 }).unwrap_or_else(|e| panic!("round {round} {cp:?}: {e}"));
        assert!(back == src, "round {round}: {cp:?}");
    }
}
