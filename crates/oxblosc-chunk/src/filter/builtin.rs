//! The built-in filters as registry entries (IDs 1-4 and the Blosc-registered plugins
//! 32-36), adapting the [`Filter`] trait to the filter modules.

use super::{bitshuffle, bytedelta, delta, int_trunc, ndcell, shuffle, trunc_prec};
use crate::registry::{Filter, FilterParams};
use crate::Error;

/// Every built-in filter with its id.
pub(crate) fn all() -> Vec<(u8, Box<dyn Filter>)> {
    vec![
        (super::SHUFFLE, Box::new(Shuffle)),
        (super::BITSHUFFLE, Box::new(BitShuffle)),
        (super::DELTA, Box::new(Delta)),
        (super::TRUNC_PREC, Box::new(Trunc { int: false })),
        (super::BYTEDELTA_V1, Box::new(ByteDelta { v1: true })),
        (super::BYTEDELTA, Box::new(ByteDelta { v1: false })),
        (super::INT_TRUNC, Box::new(Trunc { int: true })),
        (super::NDCELL, Box::new(ndcell::NdCell)),
        (super::NDMEAN, Box::new(ndcell::NdMean)),
    ]
}

/// The filter's meta, or the typesize when meta is 0 (shuffle element size, bytedelta
/// stream count).
fn meta_or_typesize(p: &FilterParams) -> usize {
    shuffle::elem_size(p.meta, p.typesize)
}

/// Keep the reason of a filter module's error (the pipeline adds the filter's name).
fn reason(e: Error) -> String {
    match e {
        Error::Filter { reason, .. } => reason,
        other => other.to_string(),
    }
}

struct Shuffle;
impl Filter for Shuffle {
    fn name(&self) -> &str {
        "shuffle"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        shuffle::shuffle(meta_or_typesize(p), src, dst);
        Ok(())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        shuffle::unshuffle(meta_or_typesize(p), src, dst);
        Ok(())
    }
    /// Element size 1 makes (byte) shuffle the identity: skip the copy.
    fn is_identity(&self, meta: u8, typesize: usize) -> bool {
        if meta == 0 {
            typesize == 1
        } else {
            meta == 1
        }
    }
}

/// Blosc1 (version 2) chunks follow the older rule of format spec 2.4.
struct BitShuffle;
impl Filter for BitShuffle {
    fn name(&self) -> &str {
        "bitshuffle"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        if p.blosc1 {
            bitshuffle::bitshuffle_v2(p.typesize, src, dst)
        } else {
            bitshuffle::bitshuffle(p.typesize, src, dst)
        }
        Ok(())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        if p.blosc1 {
            bitshuffle::bitunshuffle_v2(p.typesize, src, dst)
        } else {
            bitshuffle::bitunshuffle(p.typesize, src, dst)
        }
        Ok(())
    }
}

struct Delta;
impl Filter for Delta {
    fn name(&self) -> &str {
        "delta"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        delta::encode(p.typesize, p.block0, p.block == 0, src, dst);
        Ok(())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        delta::decode(p.typesize, p.block0, p.block == 0, src, dst);
        Ok(())
    }
    fn needs_block0(&self) -> bool {
        true
    }
}

/// TRUNC_PREC (floats) and INT_TRUNC (integers): lossy, forward only.
struct Trunc {
    int: bool,
}
impl Filter for Trunc {
    fn name(&self) -> &str {
        if self.int {
            "int_trunc"
        } else {
            "trunc_prec"
        }
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let meta = p.meta as i8;
        if self.int {
            int_trunc::forward(meta, p.typesize, src, dst).map_err(reason)
        } else {
            trunc_prec::forward(meta, p.typesize, src, dst).map_err(reason)
        }
    }
    fn backward(&self, _: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        dst.copy_from_slice(src);
        Ok(())
    }
    fn lossy(&self) -> bool {
        true
    }
    fn validate(&self, meta: u8, typesize: usize) -> Result<(), String> {
        if self.int {
            int_trunc::validate(meta as i8, typesize).map_err(reason)
        } else {
            trunc_prec::validate(meta as i8, typesize).map_err(reason)
        }
    }
}

/// BYTEDELTA (35) and the original SIMD-build variant (34).
struct ByteDelta {
    v1: bool,
}
impl Filter for ByteDelta {
    fn name(&self) -> &str {
        if self.v1 {
            "bytedelta_buggy"
        } else {
            "bytedelta"
        }
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        if self.v1 {
            bytedelta::encode_v1(meta_or_typesize(p), src, dst)
        } else {
            bytedelta::encode(meta_or_typesize(p), src, dst)
        }
        Ok(())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        if self.v1 {
            bytedelta::decode_v1(meta_or_typesize(p), src, dst)
        } else {
            bytedelta::decode(meta_or_typesize(p), src, dst)
        }
        Ok(())
    }
}
