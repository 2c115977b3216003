//! Codecs: one module per codec, each turning one stream into a payload and back.
//!
//! `builtin` registers them in the registry under their Blosc compcodes (0 blosclz, 1 lz4,
//! 2 lz4hc, 4 zlib, 5 zstd) and the Blosc-registered NDLZ (32) and ZFP (33-35); the engine finds
//! them there. Encoders return 0 for "did not
//! fit the budget" so the caller can store the stream raw.

pub mod blosclz;
pub(crate) mod builtin;
pub mod lz4;
pub mod lz4_decode;
pub mod ndlz;
pub mod zfp;
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
        let p = CodecParams { clevel, meta: 0, typesize: 1, block: 0, dict: None, blockshape: &[], blosc1: false };
        registry::codec(codec).unwrap().codec.encode(&p, src, dst).unwrap()
    }

    fn decode(codec: u8, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let p = CodecParams { clevel: 0, meta: 0, typesize: 1, block: 0, dict: None, blockshape: &[], blosc1: false };
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

    /// `decode_out` (possibly uninitialised output) of every built-in codec that has it
    /// decodes what `decode` does, refuses wrong sizes and corrupt payloads, and its reused
    /// per-thread state (zlib) is not disturbed by a failed stream.
    #[test]
    fn decode_out_matches_decode() {
        use crate::uninit::Out;
        let p = CodecParams { clevel: 0, meta: 0, typesize: 1, block: 0, dict: None, blockshape: &[], blosc1: false };
        let data: Vec<u8> = (0..50_001u32).flat_map(|i| ((i / 5) ^ (i % 11)).to_le_bytes()).collect();
        let other: Vec<u8> = (0..7_777u32).map(|i| (i * 7 / 3) as u8).collect();
        for codec in [codec_id::BLOSCLZ, codec_id::LZ4, codec_id::LZ4HC, codec_id::ZLIB, codec_id::ZSTD] {
            let pack = |src: &[u8]| {
                let mut c = vec![0u8; src.len()];
                let n = encode(codec, 5, src, &mut c);
                c.truncate(n);
                c
            };
            let (c1, c2) = (pack(&data), pack(&other));
            let run = |c: &[u8], n: usize| -> Result<Vec<u8>, String> {
                let mut v: Vec<u8> = vec![0xA5; n];
                v.clear();
                let mut out = Out::uninit(&mut v.spare_capacity_mut()[..n]);
                crate::codec::builtin::decode_out(codec, &p, c, &mut out).expect("has an Out path")?;
                // SAFETY: decode_out returned Ok, so it wrote all n bytes.
                #[allow(unsafe_code)]
                unsafe {
                    v.set_len(n)
                };
                Ok(v)
            };
            assert!(run(&c1, data.len()).unwrap() == data, "codec {codec}");
            // Into initialised bytes holding stale data (a reused scratch buffer).
            let mut stale = vec![0xA5u8; data.len()];
            crate::codec::builtin::decode_out(codec, &p, &c1, &mut Out::init(&mut stale)).expect("Out path").unwrap();
            assert!(stale == data, "codec {codec} over stale bytes");
            assert!(run(&c1, data.len() - 1).is_err(), "codec {codec} short");
            assert!(run(&c1, data.len() + 1).is_err(), "codec {codec} long");
            let mut bad = c1.clone();
            let mid = bad.len() / 2;
            bad.truncate(mid);
            assert!(run(&bad, data.len()).is_err(), "codec {codec} truncated");
            assert!(run(&c2, other.len()).unwrap() == other, "codec {codec} after a failure");
            let mut back = vec![0u8; other.len()];
            decode(codec, &c2, &mut back).unwrap();
            assert_eq!(back, other);
        }
        assert!(crate::codec::builtin::decode_out(crate::codec::ndlz::ID, &p, &[], &mut Out::uninit(&mut [])).is_none());
    }
}
