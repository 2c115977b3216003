//! The per-block filter pipeline: which transforms run, in which order, on which buffers.
//!
//! Compression runs slots 0 -> 5, decompression undoes them 5 -> 0 (format spec 2.2).
//! Lossy filters (TRUNC_PREC, INT_TRUNC) only run forward. The pipeline never writes into
//! the caller's input (C-Blosc2 pitfall 4): it ping-pongs between two scratch buffers.

use crate::filter::{self, bitshuffle, bytedelta, delta, int_trunc, shuffle, trunc_prec};
use crate::{Error, Result};

/// One resolved filter step, with its element size / stream count already decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Shuffle(usize),
    BitShuffle { typesize: usize, blosc1: bool },
    Delta(usize),
    TruncPrec { meta: i8, typesize: usize },
    IntTrunc { meta: i8, typesize: usize },
    ByteDelta(usize),
    ByteDeltaV1(usize),
}

impl Step {
    fn lossy(self) -> bool {
        matches!(self, Step::TruncPrec { .. } | Step::IntTrunc { .. })
    }
}

/// The filters of one chunk, resolved against its typesize and format version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pipeline {
    steps: Vec<Step>,
}

impl Pipeline {
    /// Resolve filter slots. `typesize` is the header typesize (1 when the real one exceeds
    /// 255); `blosc1` selects the version-2 bitshuffle rule.
    pub fn new(filters: &[u8; 6], meta: &[u8; 6], typesize: usize, blosc1: bool) -> Result<Self> {
        let mut steps = Vec::new();
        for slot in 0..6 {
            let m = meta[slot];
            let or_typesize = if m == 0 { typesize } else { usize::from(m) };
            let step = match filters[slot] {
                filter::NOFILTER => continue,
                // Element size 1 makes (byte) shuffle the identity: skip the copy.
                filter::SHUFFLE if or_typesize == 1 => continue,
                filter::SHUFFLE => Step::Shuffle(or_typesize),
                filter::BITSHUFFLE => Step::BitShuffle { typesize, blosc1 },
                filter::DELTA => Step::Delta(typesize),
                filter::TRUNC_PREC => Step::TruncPrec { meta: m as i8, typesize },
                filter::INT_TRUNC => Step::IntTrunc { meta: m as i8, typesize },
                filter::BYTEDELTA => Step::ByteDelta(or_typesize),
                filter::BYTEDELTA_V1 => Step::ByteDeltaV1(or_typesize),
                id => return Err(Error::UnknownFilter { id, slot }),
            };
            steps.push(step);
        }
        Ok(Pipeline { steps })
    }

    /// Does some step read block 0 (so block 0 must be decoded before the others)?
    pub fn has_delta(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Delta(_)))
    }

    /// No backward step: streams can be decoded straight into the output.
    pub fn backward_is_identity(&self) -> bool {
        self.steps.iter().all(|s| s.lossy())
    }

    /// Run the forward pipeline on one block. Returns the filtered bytes, which live in
    /// `src` (no steps) or in one of the scratch buffers.
    pub fn forward<'a>(
        &self,
        src: &'a [u8],
        block0: &[u8],
        is_block0: bool,
        a: &'a mut Vec<u8>,
        b: &'a mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        if self.steps.is_empty() {
            return Ok(src);
        }
        let n = src.len();
        a.resize(n, 0);
        b.resize(n, 0);
        // Step k reads `src` (k == 0) or the previous output, and writes the other buffer.
        let (mut cur, mut other) = (a, b);
        for (k, step) in self.steps.iter().enumerate() {
            let input: &[u8] = if k == 0 { src } else { &cur[..] };
            forward_step(*step, input, &mut other[..], block0, is_block0)?;
            std::mem::swap(&mut cur, &mut other);
        }
        Ok(&cur[..])
    }

    /// Undo the pipeline: `input` holds the decoded streams of a block and is used as
    /// scratch; the result lands in `dst`. `block0` is the decoded block 0 (for DELTA).
    pub fn backward(
        &self,
        input: &mut Vec<u8>,
        tmp: &mut Vec<u8>,
        dst: &mut [u8],
        block0: &[u8],
        is_block0: bool,
    ) -> Result<()> {
        let steps: Vec<Step> = self.steps.iter().rev().copied().filter(|s| !s.lossy()).collect();
        let n = dst.len();
        tmp.resize(n, 0);
        let (mut cur, mut other) = (input, tmp);
        for (k, step) in steps.iter().enumerate() {
            if k + 1 == steps.len() {
                backward_step(*step, &cur[..n], dst, block0, is_block0);
            } else {
                backward_step(*step, &cur[..n], &mut other[..n], block0, is_block0);
                std::mem::swap(&mut cur, &mut other);
            }
        }
        if steps.is_empty() {
            dst.copy_from_slice(&cur[..n]);
        }
        Ok(())
    }
}

fn forward_step(step: Step, src: &[u8], dst: &mut [u8], block0: &[u8], is_block0: bool) -> Result<()> {
    match step {
        Step::Shuffle(e) => shuffle::shuffle(e, src, dst),
        Step::BitShuffle { typesize, blosc1: false } => bitshuffle::bitshuffle(typesize, src, dst),
        Step::BitShuffle { typesize, blosc1: true } => bitshuffle::bitshuffle_v2(typesize, src, dst),
        Step::Delta(ts) => delta::encode(ts, block0, is_block0, src, dst),
        Step::TruncPrec { meta, typesize } => trunc_prec::forward(meta, typesize, src, dst)?,
        Step::IntTrunc { meta, typesize } => int_trunc::forward(meta, typesize, src, dst)?,
        Step::ByteDelta(s) => bytedelta::encode(s, src, dst),
        Step::ByteDeltaV1(s) => bytedelta::encode_v1(s, src, dst),
    }
    Ok(())
}

fn backward_step(step: Step, src: &[u8], dst: &mut [u8], block0: &[u8], is_block0: bool) {
    match step {
        Step::Shuffle(e) => shuffle::unshuffle(e, src, dst),
        Step::BitShuffle { typesize, blosc1: false } => bitshuffle::bitunshuffle(typesize, src, dst),
        Step::BitShuffle { typesize, blosc1: true } => bitshuffle::bitunshuffle_v2(typesize, src, dst),
        Step::Delta(ts) => delta::decode(ts, block0, is_block0, src, dst),
        Step::ByteDelta(s) => bytedelta::decode(s, src, dst),
        Step::ByteDeltaV1(s) => bytedelta::decode_v1(s, src, dst),
        Step::TruncPrec { .. } | Step::IntTrunc { .. } => dst.copy_from_slice(src),
    }
}
