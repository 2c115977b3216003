//! Codecs: one module per codec, each turning one stream into a payload and back.
//!
//! `builtin` registers them in the registry under their Blosc compcodes (0 blosclz, 1 lz4,
//! 2 lz4hc, 4 zlib, 5 zstd); the engine finds them there. Encoders return 0 for "did not
//! fit the budget" so the caller can store the stream raw.

pub mod blosclz;
pub(crate) mod builtin;
pub mod lz4;
pub mod ndlz;
pub mod zlib;
pub mod zstd;

/// A chunk dictionary prepared for the codec that uses it (format spec 1.11).
pub enum Dict<'a> {
    Lz4(&'a [u8]),
    Zstd(zstd::PreparedDict<'a>),
}

#[cfg(test)]
mod tests {
    use crate::format::codec_id;
    use crate::registry::{self, CodecParams};

    fn encode(codec: u8, clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
        let p = CodecParams { clevel, meta: 0, typesize: 1, block: 0, dict: None, blockshape: &[] };
        registry::codec(codec).unwrap().codec.encode(&p, src, dst).unwrap()
    }

    fn decode(codec: u8, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let p = CodecParams { clevel: 0, meta: 0, typesize: 1, block: 0, dict: None, blockshape: &[] };
        registry::codec(codec).unwrap().codec.decode(&p, src, dst)
    }

    #[test]
    fn every_codec_round_trips_and_respects_budget() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        for codec in [codec_id::LZ4, codec_id::LZ4HC, codec_id::ZLIB, codec_id::ZSTD] {
            for clevel in [1u8, 5, 9] {
                let mut out = vec![0u8; data.len()];
                let n = encode(codec, clevel, &data, &mut out);
                assert!(n > 0 && n < data.len(), "codec {codec} clevel {clevel}");
                let mut back = vec![0u8; data.len()];
                decode(codec, &out[..n], &mut back).unwrap();
                assert_eq!(back, data);
                // A budget that is too small must fail cleanly.
                let mut tiny = vec![0u8; 8];
                assert_eq!(encode(codec, clevel, &data, &mut tiny), 0);
                // A wrong output size must be an error.
                let mut short = vec![0u8; data.len() - 1];
                assert!(decode(codec, &out[..n], &mut short).is_err());
                let mut long = vec![0u8; data.len() + 1];
                assert!(decode(codec, &out[..n], &mut long).is_err());
            }
        }
    }
}
