//! Zstd (compcode 5, chunk format code 4): one zstd frame per stream (format spec 3.5).
//!
//! libzstd 1.5.7 through `zstd-safe` (the version C-Blosc2 3.3 bundles, so payloads are
//! byte-identical). Level = 2*clevel - 1 for clevel < 9, the maximum level for 9.
//! Contexts are kept per thread: creating one per block cost a peer 17% of its time.

#![allow(unsafe_code)]

use crate::uninit::Out;
use std::cell::RefCell;
use zstd_safe::{CCtx, CDict, DCtx, DDict, WriteBuf};

thread_local! {
    static CCTX: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// The zstd level used for a Blosc clevel.
pub fn level(clevel: u8) -> i32 {
    if clevel >= 9 {
        zstd_safe::max_c_level()
    } else {
        2 * i32::from(clevel) - 1
    }
}

/// Compress at the level for `clevel`; 0 when the frame does not fit `dst`.
pub fn compress(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    CCTX.with(|c| c.borrow_mut().compress(dst, src, level(clevel)).unwrap_or(0))
}

fn decoded(r: Result<usize, usize>, want: usize) -> Result<(), String> {
    match r {
        Ok(n) if n == want => Ok(()),
        Ok(n) => Err(format!("zstd frame decoded to {n} bytes, expected {want}")),
        Err(code) => Err(format!("malformed zstd frame ({})", zstd_safe::get_error_name(code))),
    }
}

/// Decode one zstd frame into exactly `dst.len()` bytes.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let want = dst.len();
    DCTX.with(|d| decoded(d.borrow_mut().decompress(dst, src), want))
}

/// Possibly uninitialised output for libzstd: the first `filled` bytes are initialised.
struct Sink {
    ptr: *mut u8,
    cap: usize,
    filled: usize,
}

// SAFETY: `as_slice` covers only the `filled` bytes libzstd reported written, `capacity` and
// `as_mut_ptr` describe the `Out` the sink was made from (alive for the sink's use), and
// libzstd stores only decoded, initialised bytes there.
unsafe impl WriteBuf for Sink {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: the first `filled` bytes were written by libzstd (filled_until).
        unsafe { std::slice::from_raw_parts(self.ptr, self.filled) }
    }
    fn capacity(&self) -> usize {
        self.cap
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
    unsafe fn filled_until(&mut self, n: usize) {
        self.filled = n;
    }
}

/// Decode one zstd frame (with a prepared dictionary, if any) into exactly `dst.len()`
/// bytes of possibly uninitialised output; on `Ok` every byte of `dst` was written.
pub(crate) fn decompress_out(src: &[u8], dst: &mut Out, dict: Option<&PreparedDict>) -> Result<(), String> {
    let want = dst.len();
    // SAFETY: libzstd stores only initialised bytes; the sink lives only during this call,
    // while `dst` is borrowed exclusively.
    let mut sink = Sink { ptr: unsafe { dst.slots() }.as_mut_ptr().cast(), cap: want, filled: 0 };
    let r = match dict {
        Some(d) => {
            let Some(ddict) = d.ddict.as_ref() else { return Err("no decompression dictionary".into()) };
            DCTX.with(|c| c.borrow_mut().decompress_using_ddict(&mut sink, src, ddict))
        }
        None => DCTX.with(|c| c.borrow_mut().decompress(&mut sink, src)),
    };
    decoded(r, want)
}

/// A dictionary digested once per chunk for both directions.
pub struct PreparedDict<'a> {
    cdict: Option<CDict<'a>>,
    ddict: Option<DDict<'a>>,
}

impl<'a> PreparedDict<'a> {
    /// For compression: C-Blosc2 builds the CDict at level 1 whatever the clevel.
    pub fn for_compression(bytes: &'a [u8]) -> Option<Self> {
        CDict::try_create(bytes, 1).map(|c| PreparedDict { cdict: Some(c), ddict: None })
    }
    /// For decompression.
    pub fn for_decompression(bytes: &'a [u8]) -> Option<Self> {
        DDict::try_create(bytes).map(|d| PreparedDict { cdict: None, ddict: Some(d) })
    }
}

/// Compress with a prepared dictionary.
pub fn compress_with_dict(src: &[u8], dst: &mut [u8], dict: &PreparedDict) -> usize {
    let Some(cdict) = dict.cdict.as_ref() else { return 0 };
    CCTX.with(|c| c.borrow_mut().compress_using_cdict(dst, src, cdict).unwrap_or(0))
}

/// Decode a frame made with a dictionary.
pub fn decompress_with_dict(src: &[u8], dst: &mut [u8], dict: &PreparedDict) -> Result<(), String> {
    let Some(ddict) = dict.ddict.as_ref() else { return Err("no decompression dictionary".into()) };
    let want = dst.len();
    DCTX.with(|d| decoded(d.borrow_mut().decompress_using_ddict(dst, src, ddict), want))
}

/// Train a dictionary of at most `capacity` bytes from equal-size samples.
pub fn train(samples: &[u8], sample_sizes: &[usize], capacity: usize) -> Option<Vec<u8>> {
    let mut dict = Vec::with_capacity(capacity);
    zstd_safe::train_from_buffer(&mut dict, samples, sample_sizes).ok()?;
    Some(dict)
}
