//! The per-block filter pipeline: which transforms run, in which order, on which buffers.
//!
//! Compression runs slots 0 -> 5, decompression undoes them 5 -> 0 (format spec 2.2).
//! Lossy filters (TRUNC_PREC, INT_TRUNC) only run forward. The filters are looked up in the
//! registry once per chunk, when the pipeline is built. The pipeline never writes into the
//! caller's input (C-Blosc2 pitfall 4): it ping-pongs between two scratch buffers.

use crate::parallel::grow_to;
use crate::registry::{self, FilterEntry, FilterParams};
use crate::uninit::Out;
use crate::{filter, Error, Result};

/// One filter slot in use, resolved in the registry.
#[derive(Clone, Copy)]
struct Step {
    entry: &'static FilterEntry,
    meta: u8,
}

/// The filters of one chunk, resolved against its typesize and format version.
#[derive(Clone, Default)]
pub struct Pipeline {
    /// Forward order (slot 0 first).
    steps: Vec<Step>,
    /// Backward order: reversed, lossy steps left out.
    back: Vec<Step>,
    typesize: usize,
    blosc1: bool,
    blockshape: Vec<usize>,
}

impl Pipeline {
    /// Resolve filter slots. `typesize` is the header typesize (1 when the real one exceeds
    /// 255); `blosc1` selects the version-2 bitshuffle rule; `blockshape` is the b2nd block
    /// shape for the filters that need it (empty outside arrays).
    pub fn new(filters: &[u8; 6], meta: &[u8; 6], typesize: usize, blosc1: bool, blockshape: &[usize]) -> Result<Self> {
        let mut steps = Vec::new();
        for slot in 0..6 {
            if filters[slot] == filter::NOFILTER {
                continue;
            }
            let entry = registry::filter(filters[slot], slot)?;
            if entry.filter.is_identity(meta[slot], typesize) {
                continue;
            }
            steps.push(Step { entry, meta: meta[slot] });
        }
        let back = steps.iter().rev().copied().filter(|s| !s.entry.filter.lossy()).collect();
        Ok(Pipeline { steps, back, typesize, blosc1, blockshape: blockshape.to_vec() })
    }

    /// Does some step read block 0 (so block 0 must be decoded before the others)?
    pub fn has_delta(&self) -> bool {
        self.steps.iter().any(|s| s.entry.filter.needs_block0())
    }

    /// No backward step: streams can be decoded straight into the output.
    pub fn backward_is_identity(&self) -> bool {
        self.back.is_empty()
    }

    /// The element size when the whole backward pipeline is one SHUFFLE.
    pub fn only_shuffle(&self) -> Option<usize> {
        match self.back[..] {
            [step] if step.entry.id == filter::SHUFFLE => Some(filter::shuffle::elem_size(step.meta, self.typesize)),
            _ => None,
        }
    }

    /// `(e, v1)` when the backward pipeline is exactly BYTEDELTA over `e` streams (`v1`: the
    /// SIMD-build variant, id 34) then SHUFFLE of element size `e`: C-Blosc2's pipeline for
    /// floats, undone in one fused pass ([`filter::bytedelta::decode_unshuffle_rows`]).
    pub fn bytedelta_then_shuffle(&self) -> Option<(usize, bool)> {
        match self.back[..] {
            [bd, sh]
                if sh.entry.id == filter::SHUFFLE
                    && matches!(bd.entry.id, filter::BYTEDELTA | filter::BYTEDELTA_V1) =>
            {
                // (ids 0-159 only ever hold the built-ins: nobody can register these two)
                let e = filter::shuffle::elem_size(sh.meta, self.typesize);
                let streams = filter::shuffle::elem_size(bd.meta, self.typesize);
                (streams == e).then_some((e, bd.entry.id == filter::BYTEDELTA_V1))
            }
            _ => None,
        }
    }

    fn params<'b>(&'b self, step: &Step, block0: &'b [u8], block: usize) -> FilterParams<'b> {
        let (typesize, blosc1, blockshape) = (self.typesize, self.blosc1, &self.blockshape[..]);
        FilterParams { meta: step.meta, typesize, block, block0, blosc1, blockshape }
    }

    /// Run the forward pipeline on block number `block`. Returns the filtered bytes, which
    /// live in `src` (no steps) or in one of the scratch buffers.
    pub fn forward<'a>(
        &self,
        src: &'a [u8],
        block0: &[u8],
        block: usize,
        a: &'a mut Vec<u8>,
        b: &'a mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        if self.steps.is_empty() {
            return Ok(src);
        }
        let n = src.len();
        grow_to(a, n);
        grow_to(b, n);
        // Step k reads `src` (k == 0) or the previous output, and writes the other buffer.
        let (mut cur, mut other) = (a, b);
        for (k, step) in self.steps.iter().enumerate() {
            let input: &[u8] = if k == 0 { src } else { &cur[..n] };
            let p = self.params(step, block0, block);
            step.entry.filter.forward(&p, input, &mut other[..n]).map_err(|r| fail(step, block, r))?;
            std::mem::swap(&mut cur, &mut other);
        }
        Ok(&cur[..n])
    }

    /// Undo the pipeline: `input` holds the decoded streams of block number `block` and is
    /// used as scratch; the result lands in `dst`, every byte of which is written on success.
    /// `block0` is the decoded block 0 (DELTA).
    pub fn backward(
        &self,
        input: &mut Vec<u8>,
        tmp: &mut Vec<u8>,
        mut dst: Out,
        block0: &[u8],
        block: usize,
    ) -> Result<()> {
        let n = dst.len();
        let Some((last, rest)) = self.back.split_last() else {
            dst.copy_from_slice(&input[..n]);
            return Ok(());
        };
        if !rest.is_empty() {
            grow_to(tmp, n);
        }
        let (mut cur, mut other) = (input, tmp);
        for step in rest {
            let p = self.params(step, block0, block);
            step.entry.filter.backward(&p, &cur[..n], &mut other[..n]).map_err(|r| fail(step, block, r))?;
            std::mem::swap(&mut cur, &mut other);
        }
        let p = self.params(last, block0, block);
        if last.entry.id == filter::SHUFFLE {
            // IDs below 32 only ever hold the built-ins: unshuffle writes every byte of `dst`
            // directly, so a fresh output is never zero-filled first.
            filter::shuffle::unshuffle_out(filter::shuffle::elem_size(last.meta, p.typesize), &cur[..n], &mut dst);
            return Ok(());
        }
        if last.entry.id == filter::BITSHUFFLE {
            // Likewise: the bit unshuffle writes every byte of `dst`.
            filter::bitshuffle::bitunshuffle_out(p.typesize, p.blosc1, &cur[..n], &mut dst);
            return Ok(());
        }
        last.entry.filter.backward(&p, &cur[..n], dst.zeroed()).map_err(|r| fail(last, block, r))
    }
}

fn fail(step: &Step, block: usize, reason: String) -> Error {
    Error::Filter { name: step.entry.name, reason: format!("block {block}: {reason}") }
}
