//! Zlib (compcode 4, chunk format code 3): RFC 1950 streams, level = clevel (format spec 3.4).
//!
//! Pure Rust through `zlib-rs`, whose output matched C-Blosc2's bundled zlib-ng byte for
//! byte in every case measured (docs/decisions/0001-codec-libraries.md).

#![allow(unsafe_code)]

use crate::uninit::Out;
use std::cell::RefCell;
use zlib_rs::{DeflateConfig, Inflate, InflateConfig, InflateFlush, ReturnCode, Status};

/// Compress at zlib level `clevel`; 0 when the result does not fit `dst`.
pub fn compress(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    let (out, rc) = zlib_rs::compress_slice(dst, src, DeflateConfig::new(i32::from(clevel)));
    if rc == ReturnCode::Ok {
        out.len()
    } else {
        0
    }
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
