//! The built-in codecs as registry entries (IDs 0, 1, 2, 4, 5, and the Blosc-registered
//! NDLZ, 32, and ZFP, 33-35).
//!
//! Thin adapters from the [`Codec`] trait to the codec modules; the clevel -> codec-level
//! mapping stays in each module (format spec 3.3-3.5).

use super::{blosclz, lz4, ndlz, zfp, zlib, zstd, Dict};
use crate::format::codec_id;
use crate::registry::{BlockTuning, Codec, CodecParams, DictKind};
use crate::uninit::Out;

/// Every built-in codec with its compcode.
pub(crate) fn all() -> Vec<(u8, Box<dyn Codec>)> {
    vec![
        (codec_id::BLOSCLZ, Box::new(BloscLz)),
        (codec_id::LZ4, Box::new(Lz4 { hc: false })),
        (codec_id::LZ4HC, Box::new(Lz4 { hc: true })),
        (codec_id::ZLIB, Box::new(Zlib)),
        (codec_id::ZSTD, Box::new(Zstd)),
        (ndlz::ID, Box::new(ndlz::Ndlz)),
        (zfp::ID_ACC, Box::new(zfp::Zfp(zfp::Mode::Accuracy))),
        (zfp::ID_PREC, Box::new(zfp::Zfp(zfp::Mode::Precision))),
        (zfp::ID_RATE, Box::new(zfp::Zfp(zfp::Mode::Rate))),
    ]
}

/// Decode with built-in codec `id` into possibly uninitialised output, when that codec has
/// such a path (`None`: it has not). On `Some(Ok)` every byte of `out` was written. IDs 0-31
/// can only hold the built-ins.
pub(crate) fn decode_out(id: u8, p: &CodecParams, src: &[u8], out: &mut Out) -> Option<Result<(), String>> {
    Some(match id {
        // BloscLZ reads back its own output through `&mut [u8]`: zeroed only when not yet
        // initialised (its decoder checks that it wrote every byte).
        codec_id::BLOSCLZ => blosclz::decompress(src, out.reborrow().initialised()).map_err(|e| e.to_string()),
        codec_id::LZ4 | codec_id::LZ4HC => match p.dict {
            Some(Dict::Lz4(d)) => lz4::decompress_out(src, out, Some(d)),
            _ => lz4::decompress_out(src, out, None),
        },
        codec_id::ZLIB => zlib::decompress_out(src, out),
        codec_id::ZSTD => match p.dict {
            Some(Dict::Zstd(d)) => zstd::decompress_out(src, out, Some(d)),
            _ => zstd::decompress_out(src, out, None),
        },
        _ => return None,
    })
}

/// LZ4 and BloscLZ add at most 255 output bytes per length-extension byte.
fn lz_expansion(csize: usize) -> Option<usize> {
    Some(csize.saturating_mul(256).saturating_add(1024))
}

struct BloscLz;
impl Codec for BloscLz {
    fn name(&self) -> &str {
        "blosclz"
    }
    fn block_tuning(&self) -> BlockTuning {
        BlockTuning { high_ratio: false, split_max_clevel: Some(9), blosc1_split: true }
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        let probe = if p.blosc1 { blosclz::Probe::Blosc1 } else { blosclz::Probe::Blosc2 };
        Ok(blosclz::compress_for(probe, p.clevel, src, dst))
    }
    fn decode(&self, _: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        blosclz::decompress(src, dst).map_err(|e| e.to_string())
    }
    fn max_expansion(&self, csize: usize) -> Option<usize> {
        lz_expansion(csize)
    }
}

/// LZ4 (compcode 1) and LZ4HC (compcode 2) share one stream format.
struct Lz4 {
    hc: bool,
}
impl Codec for Lz4 {
    fn name(&self) -> &str {
        if self.hc {
            "lz4hc"
        } else {
            "lz4"
        }
    }
    fn block_tuning(&self) -> BlockTuning {
        BlockTuning { high_ratio: self.hc, split_max_clevel: if self.hc { None } else { Some(9) }, blosc1_split: true }
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        Ok(match (self.hc, p.dict) {
            (false, Some(Dict::Lz4(d))) => lz4::compress_with_dict(p.clevel, src, dst, d),
            (false, _) => lz4::compress(p.clevel, src, dst),
            (true, Some(Dict::Lz4(d))) => lz4::compress_hc_with_dict(p.clevel, src, dst, d),
            (true, _) => lz4::compress_hc(p.clevel, src, dst),
        })
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        match p.dict {
            Some(Dict::Lz4(d)) => lz4::decompress_with_dict(src, dst, d),
            _ => lz4::decompress(src, dst),
        }
    }
    fn max_expansion(&self, csize: usize) -> Option<usize> {
        lz_expansion(csize)
    }
    fn dict_kind(&self) -> Option<DictKind> {
        Some(DictKind::Lz4)
    }
}

struct Zlib;
impl Codec for Zlib {
    fn name(&self) -> &str {
        "zlib"
    }
    fn block_tuning(&self) -> BlockTuning {
        BlockTuning { high_ratio: true, split_max_clevel: None, blosc1_split: true }
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        Ok(if p.blosc1 { zlib::compress_blosc1(p.clevel, src, dst) } else { zlib::compress(p.clevel, src, dst) })
    }
    fn decode(&self, _: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        zlib::decompress(src, dst)
    }
    /// Deflate peaks at 1032:1.
    fn max_expansion(&self, csize: usize) -> Option<usize> {
        Some(csize.saturating_mul(1040).saturating_add(1024))
    }
}

/// Zstd's RLE blocks make its ratio effectively unbounded: no expansion bound.
struct Zstd;
impl Codec for Zstd {
    fn name(&self) -> &str {
        "zstd"
    }
    fn block_tuning(&self) -> BlockTuning {
        BlockTuning { high_ratio: true, split_max_clevel: Some(5), blosc1_split: false }
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        Ok(match p.dict {
            Some(Dict::Zstd(d)) => zstd::compress_with_dict(src, dst, d),
            _ if p.blosc1 && p.clevel >= 4 => zstd::compress_reinit(p.clevel, src, dst),
            _ => zstd::compress(p.clevel, src, dst),
        })
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        match p.dict {
            Some(Dict::Zstd(d)) => zstd::decompress_with_dict(src, dst, d),
            _ => zstd::decompress(src, dst),
        }
    }
    fn dict_kind(&self) -> Option<DictKind> {
        Some(DictKind::Zstd)
    }
}
