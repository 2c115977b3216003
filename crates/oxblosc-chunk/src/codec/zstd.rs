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

/// Workspaces larger than this are not kept for [`compress_reinit`] (level 22 on big blocks).
const REINIT_KEEP_LIMIT: usize = 64 << 20;

thread_local! {
    /// The memory [`compress_reinit`] builds its context in, reused across calls.
    static REINIT_WS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// [`compress`] with a context built anew for this stream in reused memory (no allocation):
/// same bytes. A context that compressed earlier streams continues their index and leaves its
/// tables as they were; at zstd levels >= 7 that made a Blosc1 chunk of 32 KiB streams 4-13%
/// slower than a clean context (the way c-blosc 1.x calls zstd), and at levels 1-5 a clean
/// start costs more than it saves (issue 12: Zarr zstd writes). Used for Blosc1 chunks from
/// clevel 4 (zstd level 7) on.
pub fn compress_reinit(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    let lv = level(clevel);
    // SAFETY: plain libzstd calls. The workspace is 8-byte aligned (u64s), `words * 8` bytes
    // long, and outlives the context built in it (used only inside this closure); `dst` and
    // `src` are valid for their lengths.
    let done = REINIT_WS.with(|ws| unsafe {
        let need = zstd_sys::ZSTD_estimateCCtxSize_usingCParams(zstd_sys::ZSTD_getCParams(lv, src.len() as u64, 0));
        let mut ws = ws.borrow_mut();
        let words = need.div_ceil(8);
        if ws.len() < words {
            ws.resize(words, 0);
        }
        let cctx = zstd_sys::ZSTD_initStaticCCtx(ws.as_mut_ptr().cast(), words * 8);
        let n = if cctx.is_null() {
            None
        } else {
            let n = zstd_sys::ZSTD_compressCCtx(
                cctx,
                dst.as_mut_ptr().cast(),
                dst.len(),
                src.as_ptr().cast(),
                src.len(),
                lv,
            );
            if zstd_sys::ZSTD_isError(n) == 0 {
                Some(n)
            } else if zstd_sys::ZSTD_getErrorCode(n) == zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall {
                Some(0)
            } else {
                None // e.g. a workspace estimate too small: the usual context does it
            }
        };
        if ws.len() * 8 > REINIT_KEEP_LIMIT {
            *ws = Vec::new();
        }
        n
    });
    done.unwrap_or_else(|| compress(clevel, src, dst))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `.cargo/config.toml` builds libzstd with 64-byte function alignment: otherwise its
    /// match finder sat wherever our Rust code before it ended, and the same instructions ran
    /// up to 31% slower or faster from one build to the next (decision 0014). Six entry points
    /// from different source files: unpinned they sit at different offsets modulo 64 from one
    /// another (16 and 48 in session 11's build), so no shift of the library passes.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn libzstd_functions_start_on_cache_lines() {
        let entries: [(&str, usize); 6] = [
            ("ZSTD_compressCCtx", zstd_sys::ZSTD_compressCCtx as *const () as usize),
            ("ZSTD_decompressDCtx", zstd_sys::ZSTD_decompressDCtx as *const () as usize),
            ("ZSTD_createCCtx", zstd_sys::ZSTD_createCCtx as *const () as usize),
            ("ZSTD_getFrameContentSize", zstd_sys::ZSTD_getFrameContentSize as *const () as usize),
            ("ZSTD_estimateCCtxSize_usingCParams", zstd_sys::ZSTD_estimateCCtxSize_usingCParams as *const () as usize),
            ("ZSTD_isError", zstd_sys::ZSTD_isError as *const () as usize),
        ];
        for (name, addr) in entries {
            assert_eq!(addr % 64, 0, "{name} at {addr:#x}: libzstd built without -falign-functions=64");
        }
    }

    #[test]
    fn a_reinitialised_context_writes_the_usual_bytes() {
        // A smooth series (compressible) and noise (incompressible), after other streams.
        let smooth: Vec<u8> = (0..40_000u32).flat_map(|i| ((i as f32 / 97.0).sin() * 1e4).to_le_bytes()).collect();
        let mut x = 0x9e37_79b9_u32;
        let noise: Vec<u8> = (0..70_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        for clevel in 1..=9u8 {
            for src in [&smooth[..32 << 10], &smooth[..], &noise[..], &noise[..1000]] {
                let (mut a, mut b) = (vec![0u8; src.len() + 64], vec![0u8; src.len() + 64]);
                let (na, nb) = (compress(clevel, src, &mut a), compress_reinit(clevel, src, &mut b));
                assert!(na > 0 && a[..na] == b[..nb], "clevel {clevel}, {} bytes", src.len());
                let mut back = vec![0u8; src.len()];
                decompress(&b[..nb], &mut back).unwrap();
                assert_eq!(back, src);
                // An output that cannot hold the frame: 0, as `compress` says.
                assert_eq!(compress_reinit(clevel, src, &mut b[..src.len() / 4]), 0);
            }
        }
    }
}
