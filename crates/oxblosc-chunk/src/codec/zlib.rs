//! Zlib (compcode 4, chunk format code 3): RFC 1950 streams, level = clevel (format spec 3.4).
//!
//! Three libraries, each where it is faster. Deflate is `zlib-rs` (a Rust port of zlib-ng: the
//! very streams C-Blosc2's bundled zlib-ng writes; C zlib-ng 2.3.3 writes them too but took
//! 1.1-1.4x its time at level 5; decision 0013). Inflate is libdeflate (one call per whole
//! stream, 1.4-1.8x zlib-ng's speed on most data), except for streams that expand more than
//! 64 times, which C zlib-ng decodes faster (decision 0016). One state per thread and
//! direction (deflate: per level), reset for each stream: building a zlib state allocates and
//! clears its window and tables (~270 KiB), more work than a small stream.

#![allow(unsafe_code)]

use crate::uninit::Out;
use libdeflate_sys as ld;
use libz_ng_sys as z;
use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::os::raw::c_int;
use zlib_rs::{Deflate, DeflateFlush, Status};

/// A deflate with [`compress`]'s contract.
pub type DeflateFn = fn(u8, &[u8], &mut [u8]) -> usize;

/// A deflate for Blosc1 chunks, installed by a higher layer ([`set_blosc1_deflate`]).
static BLOSC1_DEFLATE: std::sync::OnceLock<DeflateFn> = std::sync::OnceLock::new();

/// Compress the zlib streams of Blosc1 chunks with `f` (same contract as [`compress`]) from
/// now on: c-blosc 1.x (numcodecs) uses the stock zlib, whose streams differ from zlib-ng's,
/// so the facade installs stock zlib here to write numcodecs' bytes. Blosc2 chunks keep
/// zlib-ng (C-Blosc2's bytes). The first call wins.
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

/// A zlib-ng stream not yet opened, allocating through [`zalloc`] / [`zfree`] (to be passed
/// to `zng_inflateInit` or `zng_deflateInit2`).
pub fn blank_stream() -> z::z_stream {
    z::z_stream {
        next_in: std::ptr::null_mut(),
        avail_in: 0,
        total_in: 0,
        next_out: std::ptr::null_mut(),
        avail_out: 0,
        total_out: 0,
        msg: std::ptr::null_mut(),
        state: std::ptr::null_mut(),
        zalloc,
        zfree,
        opaque: std::ptr::null_mut(),
        data_type: 0,
        adler: 0,
        reserved: 0,
    }
}

/// A zlib-ng inflate state, boxed because the library keeps a pointer back to it; ended
/// when dropped.
struct Stream {
    z: Box<z::z_stream>,
}

impl Stream {
    /// An inflate state for zlib-wrapped streams with windows up to 32 KiB.
    fn inflate() -> Option<Stream> {
        let mut s = Box::new(blank_stream());
        // SAFETY: `s` is a boxed (never moved) stream with allocation callbacks.
        let r = unsafe { z::zng_inflateInit(&mut *s) };
        (r == z::Z_OK).then_some(Stream { z: s })
    }

    /// Inflate one whole stream from `src` into `n` bytes at `dst` (`Z_FINISH`); returns the
    /// library's code and the bytes written. No pointer into the caller's buffers stays behind.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `n` bytes for the duration of the call.
    unsafe fn run(&mut self, src: &[u8], dst: *mut u8, n: usize) -> (c_int, usize) {
        let (Ok(avail_in), Ok(avail_out)) = (u32::try_from(src.len()), u32::try_from(n)) else {
            return (z::Z_BUF_ERROR, 0);
        };
        let zs = &mut *self.z;
        zs.next_in = src.as_ptr().cast_mut(); // zlib only reads through `next_in`
        zs.avail_in = avail_in;
        zs.next_out = dst;
        zs.avail_out = avail_out;
        // SAFETY: an initialised stream; `next_in`/`next_out` cover `src` and `n` bytes at
        // `dst` (the caller's promise), both alive for the call.
        let r = unsafe { z::inflate(zs, z::Z_FINISH) };
        (zs.next_in, zs.next_out) = (std::ptr::null_mut(), std::ptr::null_mut());
        (r, zs.total_out)
    }

    /// Make the state ready for a new stream; false if the library refuses.
    fn reset(&mut self) -> bool {
        // SAFETY: an initialised stream.
        unsafe { z::inflateReset(&mut *self.z) == z::Z_OK }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised and is ended once.
        unsafe { z::inflateEnd(&mut *self.z) };
    }
}

thread_local! {
    /// This thread's zlib-rs deflate state with its level (the level also picks the match
    /// strategy, so a reset state at the same level writes the same bytes as a fresh one).
    static DEFLATE: RefCell<Option<(u8, Deflate)>> = const { RefCell::new(None) };
    static INFLATE: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// Take this thread's inflate state (made afresh if there is none, or if the reset fails)
/// and run `f` on it; `None` if no state can be made or the cell is busy.
fn with_inflate<T>(f: impl FnOnce(&mut Stream) -> T) -> Option<T> {
    INFLATE.with(|c| {
        let mut slot = c.try_borrow_mut().ok()?;
        let reused = slot.take().and_then(|mut s| s.reset().then_some(s));
        let s = slot.insert(match reused {
            Some(s) => s,
            None => Stream::inflate()?,
        });
        Some(f(s))
    })
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
    // SAFETY: `dst` is valid for writes of its length.
    unsafe { inflate_into(src, dst.as_mut_ptr(), dst.len()) }
}

/// [`decompress`] with zlib-ng whatever the stream's expansion (for comparisons and fuzzing).
pub fn decompress_zlib_ng(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    // SAFETY: `dst` is valid for writes of its length.
    unsafe { zlib_ng_into(src, dst.as_mut_ptr(), dst.len()) }
}

/// [`decompress`] with libdeflate whatever the stream's expansion (for comparisons and fuzzing).
pub fn decompress_libdeflate(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    // SAFETY: `dst` is valid for writes of its length.
    unsafe { libdeflate_into(src, dst.as_mut_ptr(), dst.len()) }
}

/// [`decompress`] into possibly uninitialised output; on `Ok` every byte of `dst` was written.
pub(crate) fn decompress_out(src: &[u8], dst: &mut Out) -> Result<(), String> {
    let want = dst.len();
    // SAFETY: inflate only stores decoded bytes; `inflate_into` accepts only a finished
    // stream of exactly `want` bytes, the whole of `dst`.
    let slots = unsafe { dst.slots() };
    unsafe { inflate_into(src, slots.as_mut_ptr().cast(), want) }
}

/// Streams that expand more than this many times go to zlib-ng, the others to libdeflate
/// (decision 0016): such streams are mostly 258-byte matches, which zlib-ng copies 32 bytes
/// at a time and libdeflate 8; below it libdeflate's Huffman decoding is 1.4-1.8x faster.
const ZLIB_NG_ABOVE_EXPANSION: usize = 64;

/// Inflate `src` into the `want` bytes at `dst`; `Ok` only when the stream ends exactly there.
///
/// # Safety
/// `dst` must be valid for writes of `want` bytes.
unsafe fn inflate_into(src: &[u8], dst: *mut u8, want: usize) -> Result<(), String> {
    let zlib_ng = crate::config::zlib_decoder_is_zlib_ng() || want / ZLIB_NG_ABOVE_EXPANSION >= src.len();
    // SAFETY: the caller's promise about `dst`.
    unsafe {
        if zlib_ng {
            zlib_ng_into(src, dst, want)
        } else {
            libdeflate_into(src, dst, want)
        }
    }
}

/// [`inflate_into`] with this thread's zlib-ng state.
///
/// # Safety
/// `dst` must be valid for writes of `want` bytes.
unsafe fn zlib_ng_into(src: &[u8], dst: *mut u8, want: usize) -> Result<(), String> {
    // SAFETY: the caller's promise about `dst`.
    let r = with_inflate(|s| unsafe { s.run(src, dst, want) });
    match r {
        None => Err("zlib: no inflate state (out of memory)".to_string()),
        Some((z::Z_STREAM_END, got)) if got == want => Ok(()),
        Some((z::Z_STREAM_END, got)) => Err(format!("zlib stream decoded to {got} bytes, expected {want}")),
        Some((z::Z_BUF_ERROR | z::Z_OK, _)) => Err(format!("zlib stream is truncated or larger than {want} bytes")),
        Some((code, _)) => Err(format!("malformed zlib stream (zlib-ng code {code})")),
    }
}

/// A libdeflate decompressor (it keeps no state between streams, only its tables' room).
struct Decompressor(*mut ld::libdeflate_decompressor);

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: allocated by `libdeflate_alloc_decompressor`, freed once.
        unsafe { ld::libdeflate_free_decompressor(self.0) };
    }
}

thread_local! {
    static LIBDEFLATE: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
}

/// [`inflate_into`] with libdeflate: one call decodes the whole stream (header, blocks,
/// Adler-32), which is how Blosc stores it.
///
/// # Safety
/// `dst` must be valid for writes of `want` bytes.
unsafe fn libdeflate_into(src: &[u8], dst: *mut u8, want: usize) -> Result<(), String> {
    let r = LIBDEFLATE.with(|c| {
        let mut slot = c.try_borrow_mut().ok()?;
        if slot.is_none() {
            // SAFETY: plain allocation; null when out of memory.
            let d = unsafe { ld::libdeflate_alloc_decompressor() };
            if d.is_null() {
                return None;
            }
            *slot = Some(Decompressor(d));
        }
        let d = slot.as_ref()?.0;
        let mut got = 0usize;
        // SAFETY: `d` is this thread's decompressor; libdeflate reads `src` and writes at
        // most `want` bytes at `dst` (the caller's promise).
        let code =
            unsafe { ld::libdeflate_zlib_decompress(d, src.as_ptr().cast(), src.len(), dst.cast(), want, &mut got) };
        Some((code, got))
    });
    match r {
        None => Err("zlib: no inflate state (out of memory)".to_string()),
        Some((ld::libdeflate_result_LIBDEFLATE_SUCCESS, got)) if got == want => Ok(()),
        Some((ld::libdeflate_result_LIBDEFLATE_SUCCESS, got)) => {
            Err(format!("zlib stream decoded to {got} bytes, expected {want}"))
        }
        Some((ld::libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE, _)) => {
            Err(format!("zlib stream is truncated or larger than {want} bytes"))
        }
        Some((ld::libdeflate_result_LIBDEFLATE_BAD_DATA, _)) => Err("malformed or truncated zlib stream".to_string()),
        Some((code, _)) => Err(format!("malformed zlib stream (libdeflate code {code})")),
    }
}

/// Bytes before each block handed to zlib, holding the allocation's size for [`zfree`].
const HEAD: usize = 16;

/// zlib's allocator on Rust's global allocator (also handed to stock zlib by the facade:
/// the callback types are the same).
///
/// # Safety
/// Called by zlib only.
pub unsafe extern "C" fn zalloc(_: z::voidpf, items: z::uInt, size: z::uInt) -> z::voidpf {
    let Some(n) = (items as usize).checked_mul(size as usize).and_then(|n| n.checked_add(HEAD)) else {
        return std::ptr::null_mut();
    };
    let Ok(layout) = Layout::from_size_align(n, HEAD) else { return std::ptr::null_mut() };
    // SAFETY: `layout` has a non-zero size; the size is stored in the first `HEAD` bytes
    // (aligned for a usize) and the block after them is handed out.
    unsafe {
        let p = alloc(layout);
        if p.is_null() {
            return std::ptr::null_mut();
        }
        p.cast::<usize>().write(n);
        p.add(HEAD).cast()
    }
}

/// Frees what [`zalloc`] handed out.
///
/// # Safety
/// `p` must be null or come from [`zalloc`].
pub unsafe extern "C" fn zfree(_: z::voidpf, p: z::voidpf) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `zalloc`: its allocation starts `HEAD` bytes before, with its size.
    unsafe {
        let base = p.cast::<u8>().sub(HEAD);
        let n = base.cast::<usize>().read();
        dealloc(base, Layout::from_size_align_unchecked(n, HEAD));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zlib_rs::{DeflateConfig, ReturnCode};

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

    /// Both inflates, by name, for tests that must reach each whatever the stream's expansion.
    type Inflate = fn(&[u8], &mut [u8]) -> Result<(), String>;
    const INFLATES: [(&str, Inflate); 2] = [("zlib-ng", decompress_zlib_ng), ("libdeflate", decompress_libdeflate)];

    /// Each inflate (zlib-ng's reused state, libdeflate's decompressor) reports truncated,
    /// too long, too short and corrupt streams as errors, writes nothing past its output, and
    /// decodes the next good stream correctly after each failure.
    #[test]
    fn inflate_reports_bad_streams_and_recovers() {
        let src: Vec<u8> = (0..60_000u32).flat_map(|i| ((i / 5) as u16).to_le_bytes()).collect();
        let good = fresh(5, &src);
        let mut corrupt = good.clone();
        corrupt[good.len() / 2] ^= 0x55;
        let mut bad_check = good.clone();
        *bad_check.last_mut().unwrap() ^= 1; // the Adler-32 trailer
        let cases: [(&[u8], usize, &str); 6] = [
            (&good[..good.len() / 3], src.len(), "truncated"),
            (&good, src.len() - 1, "larger than"),
            (&good, src.len() + 1, "decoded to"),
            (&corrupt, src.len(), ""),
            (&bad_check, src.len(), "malformed"),
            (&[0x78, 0x9c, 0xff, 0xff], 10, ""),
        ];
        for (name, f) in INFLATES {
            for (stream, want, msg) in cases {
                let mut dst = vec![0xAAu8; want + 64];
                let err = f(stream, &mut dst[..want]).unwrap_err();
                assert!(err.contains(msg), "{name}: {err}");
                assert!(dst[want..].iter().all(|&b| b == 0xAA), "{name} wrote past its output");
                let mut back = vec![0u8; src.len()];
                f(&good, &mut back).unwrap();
                assert!(back == src, "{name}");
            }
        }
    }

    /// The two inflates decode every stream to the same bytes: data from incompressible to
    /// runs of one byte (expansions from 1 to ~1000, on both sides of the routing threshold),
    /// levels 0/1/5/9, sizes from 0 to 300 KB; and `decompress` (the routed call) does too.
    #[test]
    fn both_inflates_agree_across_expansions() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut expansions = Vec::new();
        for len in [0usize, 1, 7, 300, 4096, 65_536, 300_000] {
            for run in [1usize, 3, 16, 200, 5000, usize::MAX] {
                // Bytes that change every `run` positions, by a random step: smaller runs are
                // less compressible; `usize::MAX` is one byte repeated.
                let mut v = next() as u8;
                let src: Vec<u8> = (0..len)
                    .map(|i| {
                        if run != usize::MAX && i % run == 0 {
                            v = v.wrapping_add(next() as u8 | 1);
                        }
                        v
                    })
                    .collect();
                for clevel in [0u8, 1, 5, 9] {
                    let stream = fresh(clevel, &src);
                    expansions.push(len / stream.len());
                    for (name, f) in INFLATES {
                        let mut back = vec![0x55u8; len];
                        f(&stream, &mut back).unwrap_or_else(|e| panic!("{name}, len {len}, run {run}: {e}"));
                        assert!(back == src, "{name}, len {len}, run {run}, clevel {clevel}");
                    }
                    let mut back = vec![0x55u8; len];
                    decompress(&stream, &mut back).unwrap();
                    assert!(back == src);
                }
            }
        }
        let above = expansions.iter().filter(|&&x| x >= ZLIB_NG_ABOVE_EXPANSION).count();
        assert!(above > 5 && above < expansions.len() - 5, "both routes are exercised: {above}");
    }
}
