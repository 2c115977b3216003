//! Zlib (compcode 4, chunk format code 3): RFC 1950 streams, level = clevel (format spec 3.4).
//!
//! Pure Rust through `zlib-rs`, whose output matched C-Blosc2's bundled zlib-ng byte for
//! byte in every case measured (docs/decisions/0001-codec-libraries.md).

#![allow(unsafe_code)]

use crate::uninit::Out;
use std::cell::RefCell;
use zlib_rs::{Deflate, DeflateFlush, Inflate, InflateConfig, InflateFlush, ReturnCode, Status};

thread_local! {
    /// One deflate state per thread with its level, reset for each stream: building one
    /// allocates and clears its window and hash tables (~270 KiB), more work than a small
    /// stream's compression. A different level builds a new state (the level also picks the
    /// match strategy, so a reset state at the same level writes the same bytes as a fresh one).
    static DEFLATE: RefCell<Option<(u8, Deflate)>> = const { RefCell::new(None) };
}

/// A deflate with [`compress`]'s contract.
pub type DeflateFn = fn(u8, &[u8], &mut [u8]) -> usize;

/// A deflate for Blosc1 chunks, installed by a higher layer ([`set_blosc1_deflate`]).
static BLOSC1_DEFLATE: std::sync::OnceLock<DeflateFn> = std::sync::OnceLock::new();

/// Compress the zlib streams of Blosc1 chunks with `f` (same contract as [`compress`]) from
/// now on: c-blosc 1.x (numcodecs) uses the stock zlib, whose streams differ from zlib-rs's,
/// so the facade installs stock zlib here to write numcodecs' bytes. Blosc2 chunks keep
/// zlib-rs (C-Blosc2's zlib-ng bytes). The first call wins.
pub fn set_blosc1_deflate(f: DeflateFn) {
    let _ = BLOSC1_DEFLATE.set(f);
}

/// [`compress`] for a Blosc1 chunk (the installed deflate, if any).
pub(crate) fn compress_blosc1(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    match BLOSC1_DEFLATE.get() {
        Some(f) => f(clevel, src, dst),
        None => compress(clevel, src, dst),
    }
}

/// Compress at zlib level `clevel`; 0 when the result does not fit `dst`.
pub fn compress(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    DEFLATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let def = match slot.as_mut() {
            Some((lv, d)) if *lv == clevel => {
                d.reset();
                d
            }
            _ => &mut slot.insert((clevel, Deflate::new(i32::from(clevel), true, 15))).1,
        };
        match def.compress(src, dst, DeflateFlush::Finish) {
            Ok(Status::StreamEnd) => usize::try_from(def.total_out()).unwrap_or(0),
            // Output full (or any error): the caller stores the block another way. The state
            // is dropped: zlib-rs 0.6's reset of a level-1 state cut short mid-stream leaves
            // something behind, and the next stream came out undecodable (session 9).
            _ => {
                *slot = None;
                0
            }
        }
    })
}

/// Decode one zlib stream into exactly `dst.len()` bytes.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let want = dst.len();
    let (out, rc) = zlib_rs::decompress_slice(dst, src, InflateConfig::default());
    result(out.len(), want, rc)
}

thread_local! {
    /// One inflate state per thread, reset for each stream instead of built afresh.
    static INFLATE: RefCell<Inflate> = RefCell::new(Inflate::new(true, 15));
}

/// [`decompress`] into possibly uninitialised output; on `Ok` every byte of `dst` was written.
/// Reuses this thread's inflate state across streams (building one per stream allocated and
/// initialised its tables each time).
pub(crate) fn decompress_out(src: &[u8], dst: &mut Out) -> Result<(), String> {
    let want = dst.len();
    INFLATE.with(|cell| {
        let mut inf = cell.borrow_mut();
        inf.reset(true);
        // SAFETY: inflate only stores decoded (initialised) bytes; `result` accepts only a
        // finished stream whose output is exactly `want` bytes, the whole of `dst`.
        let r = inf.decompress_uninit(src, unsafe { dst.slots() }, InflateFlush::Finish);
        let got = usize::try_from(inf.total_out()).unwrap_or(usize::MAX);
        match r {
            Ok(Status::StreamEnd) => result(got, want, ReturnCode::Ok),
            Ok(_) => result(got, want, ReturnCode::BufError),
            Err(e) => result(got, want, e.into()),
        }
    })
}

fn result(got: usize, want: usize, rc: ReturnCode) -> Result<(), String> {
    match rc {
        ReturnCode::Ok if got == want => Ok(()),
        ReturnCode::Ok => Err(format!("zlib stream decoded to {got} bytes, expected {want}")),
        ReturnCode::BufError => Err(format!("zlib stream is truncated or larger than {want} bytes")),
        other => Err(format!("malformed zlib stream ({other:?})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zlib_rs::DeflateConfig;

    fn fresh(clevel: u8, src: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; src.len() * 2 + 1024];
        let (out, rc) = zlib_rs::compress_slice(&mut buf, src, DeflateConfig::new(i32::from(clevel)));
        assert_eq!(rc, ReturnCode::Ok);
        out.to_vec()
    }

    /// The reused per-thread state writes exactly what a fresh state writes, whatever came
    /// before it on this thread: other levels, other data, a stream that did not fit.
    #[test]
    fn reused_state_matches_fresh_state() {
        let a: Vec<u8> = (0..70_000u32).flat_map(|i| ((i / 7) as u16).to_le_bytes()).collect();
        let b: Vec<u8> = (0..50_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut tiny = [0u8; 16];
        for clevel in [1u8, 5, 5, 9, 0, 1, 9, 3] {
            for src in [&a[..], &b[..], &a[..1000]] {
                let mut dst = vec![0u8; src.len() + 1024];
                let n = compress(clevel, src, &mut dst);
                assert_eq!(&dst[..n], &fresh(clevel, src)[..], "clevel {clevel}, {} bytes", src.len());
                let mut back = vec![0u8; src.len()];
                decompress(&dst[..n], &mut back).unwrap();
                assert_eq!(back, src);
                // A stream too large for its output leaves the state to be reset next time.
                assert_eq!(compress(clevel, &b, &mut tiny), 0);
            }
        }
    }

    /// A stream that ran out of output after writing most of it (an incompressible block
    /// larger than its budget, as the engine gives each block) must not leave anything in
    /// the state for the next stream. Found by the tuner's exhaustive search (session 9):
    /// zlib level 1 with shuffle after level-1 blocks of unfiltered floats wrote streams
    /// that neither oxblosc nor C-Blosc2 could decode.
    #[test]
    fn a_stream_cut_short_leaves_no_trace() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let smooth: Vec<u8> = (0..100_000u32).flat_map(|i| ((i / 3) as u16).to_le_bytes()).collect();
        for clevel in [1u8, 2, 5, 9] {
            let full = fresh(clevel, &noise).len();
            assert!(full > noise.len(), "the noise does not compress");
            for budget in [full - 1, full - 100, noise.len() - 1, noise.len() / 2] {
                let mut dst = vec![0u8; budget];
                assert_eq!(compress(clevel, &noise, &mut dst), 0, "clevel {clevel}, budget {budget}");
                let mut out = vec![0u8; smooth.len() + 1024];
                let n = compress(clevel, &smooth, &mut out);
                assert!(out[..n] == fresh(clevel, &smooth)[..], "clevel {clevel}, budget {budget}");
                let mut back = vec![0u8; smooth.len()];
                decompress(&out[..n], &mut back).unwrap();
                assert!(back == smooth, "clevel {clevel}, budget {budget}");
            }
        }
    }
}
