//! Codecs: one module per codec, each turning one stream into a payload and back.
//!
//! The dispatch here maps Blosc compcodes (0 blosclz, 1 lz4, 2 lz4hc, 4 zlib, 5 zstd) to
//! the modules and fixes the clevel -> codec-level mapping of format spec 3.3-3.5.
//! Encoders return 0 for "did not fit the budget" so the caller can store the stream raw.

pub mod blosclz;
pub mod lz4;
pub mod zlib;
pub mod zstd;

use crate::format::codec_id;

/// A chunk dictionary prepared for the codec that uses it (format spec 1.11).
pub enum Dict<'a> {
    Lz4(&'a [u8]),
    Zstd(zstd::PreparedDict<'a>),
}

/// Is `compcode` a codec this build can encode and decode?
pub fn is_supported(compcode: u8) -> bool {
    matches!(compcode, codec_id::BLOSCLZ | codec_id::LZ4 | codec_id::LZ4HC | codec_id::ZLIB | codec_id::ZSTD)
}

/// Compress one stream. Returns the payload length or 0 when it does not fit `dst`.
pub fn encode(compcode: u8, clevel: u8, src: &[u8], dst: &mut [u8], dict: Option<&Dict>) -> usize {
    match (compcode, dict) {
        (codec_id::BLOSCLZ, _) => blosclz::compress(clevel, src, dst),
        (codec_id::LZ4, Some(Dict::Lz4(d))) => lz4::compress_with_dict(clevel, src, dst, d),
        (codec_id::LZ4, _) => lz4::compress(clevel, src, dst),
        (codec_id::LZ4HC, Some(Dict::Lz4(d))) => lz4::compress_hc_with_dict(clevel, src, dst, d),
        (codec_id::LZ4HC, _) => lz4::compress_hc(clevel, src, dst),
        (codec_id::ZLIB, _) => zlib::compress(clevel, src, dst),
        (codec_id::ZSTD, Some(Dict::Zstd(d))) => zstd::compress_with_dict(src, dst, d),
        (codec_id::ZSTD, _) => zstd::compress(clevel, src, dst),
        _ => 0,
    }
}

/// Decode one stream into exactly `dst.len()` bytes; the error text says why not.
pub fn decode(compcode: u8, src: &[u8], dst: &mut [u8], dict: Option<&Dict>) -> Result<(), String> {
    match (compcode, dict) {
        (codec_id::BLOSCLZ, _) => blosclz::decompress(src, dst).map_err(|e| e.to_string()),
        (codec_id::LZ4 | codec_id::LZ4HC, Some(Dict::Lz4(d))) => lz4::decompress_with_dict(src, dst, d),
        (codec_id::LZ4 | codec_id::LZ4HC, _) => lz4::decompress(src, dst),
        (codec_id::ZLIB, _) => zlib::decompress(src, dst),
        (codec_id::ZSTD, Some(Dict::Zstd(d))) => zstd::decompress_with_dict(src, dst, d),
        (codec_id::ZSTD, _) => zstd::decompress(src, dst),
        (other, _) => Err(format!("codec {other} is not built in")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_and_respects_budget() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        for codec in [codec_id::LZ4, codec_id::LZ4HC, codec_id::ZLIB, codec_id::ZSTD] {
            for clevel in [1u8, 5, 9] {
                let mut out = vec![0u8; data.len()];
                let n = encode(codec, clevel, &data, &mut out, None);
                assert!(n > 0 && n < data.len(), "codec {codec} clevel {clevel}");
                let mut back = vec![0u8; data.len()];
                decode(codec, &out[..n], &mut back, None).unwrap();
                assert_eq!(back, data);
                // A budget that is too small must fail cleanly.
                let mut tiny = vec![0u8; 8];
                assert_eq!(encode(codec, clevel, &data, &mut tiny, None), 0);
                // A wrong output size must be an error.
                let mut short = vec![0u8; data.len() - 1];
                assert!(decode(codec, &out[..n], &mut short, None).is_err());
                let mut long = vec![0u8; data.len() + 1];
                assert!(decode(codec, &out[..n], &mut long, None).is_err());
            }
        }
    }
}
