//! Zlib (compcode 4, chunk format code 3): RFC 1950 streams, level = clevel (format spec 3.4).
//!
//! Pure Rust through `zlib-rs`, whose output matched C-Blosc2's bundled zlib-ng byte for
//! byte in every case measured (docs/decisions/0001-codec-libraries.md).

use zlib_rs::{DeflateConfig, InflateConfig, ReturnCode};

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
    match rc {
        ReturnCode::Ok if out.len() == want => Ok(()),
        ReturnCode::Ok => Err(format!("zlib stream decoded to {} bytes, expected {want}", out.len())),
        ReturnCode::BufError => Err(format!("zlib stream is truncated or larger than {want} bytes")),
        other => Err(format!("malformed zlib stream ({other:?})")),
    }
}
