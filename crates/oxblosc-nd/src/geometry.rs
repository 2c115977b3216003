//! Two-level partitioning of a b2nd array (format spec 5.2): the chunk grid over the array,
//! the block grid inside each (padded) chunk, and which (chunk, block) pairs a hyperslab
//! touches.
//!
//! Layout facts this module encodes: chunks are numbered in C order over the chunk grid;
//! every chunk holds `prod(extchunks)` items where `extchunks[i]` is `chunks[i]` rounded up
//! to a multiple of `blocks[i]`; inside a chunk the blocks follow each other in C order over
//! the block grid, and inside a block the items are in C order over `blocks`. So one block is
//! one contiguous byte range of the decompressed chunk, which is what lets a read decode only
//! the blocks it needs.

use oxblosc_chunk::format::MAX_BUFFERSIZE;

use crate::meta::{Meta, MAX_DIM};
use crate::{Error, Result};

/// Most chunks an array can have: a frame's offsets index is one Blosc chunk holding one
/// 8-byte offset per chunk. Checked before any per-chunk state is built, so a huge shape
/// with small chunks is refused instead of exhausting memory.
pub const MAX_CHUNKS: u64 = (MAX_BUFFERSIZE / 8) as u64;

/// Validated shape, chunk and block shapes of an array, with everything derived from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub shape: Vec<u64>,
    pub chunks: Vec<u64>,
    pub blocks: Vec<u64>,
    pub typesize: usize,
    /// `chunks` rounded up to a multiple of `blocks` (0 where the chunk is 0).
    pub extchunks: Vec<u64>,
    /// Chunks along each dimension.
    pub grid: Vec<u64>,
    /// Blocks along each dimension inside a chunk.
    pub bgrid: Vec<u64>,
    pub nchunks: u64,
    /// Items of one (padded) chunk and of one block.
    pub chunk_items: usize,
    pub block_items: usize,
    pub blocks_per_chunk: usize,
    /// Items of the array.
    pub nitems: u64,
}

fn checked_product(v: impl IntoIterator<Item = u64>, what: &str) -> Result<u64> {
    v.into_iter()
        .try_fold(1u64, |acc, x| acc.checked_mul(x))
        .ok_or_else(|| Error::geometry(format!("{what} overflows")))
}

impl Geometry {
    /// What chunk plugins (NDCELL, NDMEAN, ...) need to know: the block shape.
    pub fn chunk_context(&self) -> oxblosc_chunk::ChunkContext {
        oxblosc_chunk::ChunkContext { blockshape: self.blocks.iter().map(|&b| b as usize).collect() }
    }

    /// Validate a geometry: at most 16 dimensions, chunk and block sizes >= 1 (0 only along
    /// an axis of length 0, as python-blosc2 writes for empty axes), a chunk no larger than
    /// the Blosc2 buffer limit, every product overflow-checked. Blocks larger than chunks are
    /// accepted (C-Blosc2 reads them: the padded chunk is then one block).
    pub fn new(shape: &[u64], chunks: &[u64], blocks: &[u64], typesize: usize) -> Result<Geometry> {
        let ndim = shape.len();
        if ndim > MAX_DIM {
            return Err(Error::geometry(format!("{ndim} dimensions, at most {MAX_DIM} are supported")));
        }
        if chunks.len() != ndim || blocks.len() != ndim {
            return Err(Error::geometry(format!(
                "shape has {ndim} dimensions but chunks has {} and blocks {}",
                chunks.len(),
                blocks.len()
            )));
        }
        if typesize == 0 || typesize > MAX_BUFFERSIZE {
            return Err(Error::geometry(format!("typesize {typesize} is not in 1..={MAX_BUFFERSIZE}")));
        }
        let mut extchunks = Vec::with_capacity(ndim);
        let mut grid = Vec::with_capacity(ndim);
        let mut bgrid = Vec::with_capacity(ndim);
        for d in 0..ndim {
            let (s, c, b) = (shape[d], chunks[d], blocks[d]);
            if s > i64::MAX as u64 {
                return Err(Error::geometry(format!("shape[{d}] = {s} exceeds the int64 range")));
            }
            if c > i32::MAX as u64 || b > i32::MAX as u64 {
                return Err(Error::geometry(format!("chunks[{d}] = {c} or blocks[{d}] = {b} exceeds the int32 range")));
            }
            if c == 0 && s != 0 {
                return Err(Error::geometry(format!("chunks[{d}] is 0 but shape[{d}] is {s} (0 only for empty axes)")));
            }
            if b == 0 && c != 0 {
                return Err(Error::geometry(format!("blocks[{d}] is 0 but chunks[{d}] is {c}")));
            }
            let ext = if b == 0 { 0 } else { c.div_ceil(b) * b };
            extchunks.push(ext);
            grid.push(if s == 0 { 0 } else { s.div_ceil(c) });
            bgrid.push(ext.checked_div(b).unwrap_or(0));
        }
        let chunk_items = checked_product(extchunks.iter().copied(), "chunk items")?;
        let chunk_bytes = chunk_items.checked_mul(typesize as u64).filter(|&n| n <= MAX_BUFFERSIZE as u64);
        if chunk_bytes.is_none() {
            return Err(Error::geometry(format!(
                "a chunk of {chunk_items} items x {typesize} bytes exceeds the Blosc2 limit of {MAX_BUFFERSIZE} bytes \
                 (chunks {chunks:?} padded to blocks {blocks:?})"
            )));
        }
        let block_items = checked_product(blocks.iter().copied(), "block items")?;
        let nchunks = checked_product(grid.iter().copied(), "chunk count")?;
        if nchunks > MAX_CHUNKS {
            return Err(Error::geometry(format!(
                "shape {shape:?} in chunks {chunks:?} needs {nchunks} chunks; a frame holds at most {MAX_CHUNKS} \
                 (its offsets index is one Blosc chunk of 8 bytes per chunk): choose larger chunks"
            )));
        }
        let nitems = checked_product(shape.iter().copied(), "item count")?;
        if nitems.checked_mul(typesize as u64).is_none_or(|n| n > i64::MAX as u64) {
            return Err(Error::geometry(format!("{nitems} items x {typesize} bytes overflows int64")));
        }
        let blocks_per_chunk = checked_product(bgrid.iter().copied(), "blocks per chunk")? as usize;
        Ok(Geometry {
            shape: shape.to_vec(),
            chunks: chunks.to_vec(),
            blocks: blocks.to_vec(),
            typesize,
            extchunks,
            grid,
            bgrid,
            nchunks,
            chunk_items: chunk_items as usize,
            block_items: block_items as usize,
            blocks_per_chunk,
            nitems,
        })
    }

    /// The geometry a metalayer describes (negative values refused, naming the dimension).
    pub fn from_meta(meta: &Meta, typesize: usize) -> Result<Geometry> {
        let conv = |v: &[i64], what: &str| -> Result<Vec<u64>> {
            v.iter()
                .enumerate()
                .map(|(d, &x)| u64::try_from(x).map_err(|_| Error::geometry(format!("{what}[{d}] = {x} is negative"))))
                .collect()
        };
        let widen = |v: &[i32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>();
        Geometry::new(
            &conv(&meta.shape, "shape")?,
            &conv(&widen(&meta.chunkshape), "chunks")?,
            &conv(&widen(&meta.blockshape), "blocks")?,
            typesize,
        )
    }

    /// The metalayer describing this geometry with `dtype`.
    pub fn to_meta(&self, dtype: Option<&str>) -> Meta {
        Meta {
            shape: self.shape.iter().map(|&s| s as i64).collect(),
            chunkshape: self.chunks.iter().map(|&s| s as i32).collect(),
            blockshape: self.blocks.iter().map(|&s| s as i32).collect(),
            dtype_format: 0,
            dtype: dtype.map(str::to_owned),
        }
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Uncompressed bytes of every chunk (the super-chunk's `chunksize`).
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_items * self.typesize
    }

    /// Bytes of one block (the Blosc2 `blocksize` of the chunks).
    pub fn block_bytes(&self) -> usize {
        self.block_items * self.typesize
    }

    /// Grid coordinates of chunk `n` (C order).
    pub fn chunk_coords(&self, mut n: u64) -> Vec<u64> {
        let mut c = vec![0; self.ndim()];
        for d in (0..self.ndim()).rev() {
            c[d] = n % self.grid[d];
            n /= self.grid[d];
        }
        c
    }

    /// Linear (C order) index of the chunk with grid coordinates `coords`.
    pub fn chunk_index(&self, coords: &[u64]) -> u64 {
        coords.iter().zip(&self.grid).fold(0, |acc, (&c, &g)| acc * g + c)
    }

    /// The part of the array chunk `n` holds: `(start, stop)` per dimension.
    pub fn chunk_region(&self, n: u64) -> (Vec<u64>, Vec<u64>) {
        let c = self.chunk_coords(n);
        let start: Vec<u64> = c.iter().zip(&self.chunks).map(|(&c, &s)| c * s).collect();
        let stop = start.iter().zip(&self.chunks).zip(&self.shape).map(|((&a, &c), &s)| (a + c).min(s)).collect();
        (start, stop)
    }

    /// Where item `index` lives: (chunk number, byte offset in the decompressed chunk).
    pub fn locate(&self, index: &[u64]) -> Result<(u64, usize)> {
        if index.len() != self.ndim() || index.iter().zip(&self.shape).any(|(&i, &s)| i >= s) {
            return Err(Error::param("index", format!("{index:?} is outside shape {:?}", self.shape)));
        }
        let mut chunk = 0u64;
        let (mut block, mut elem) = (0usize, 0usize);
        for (d, &i) in index.iter().enumerate() {
            let (c, r) = (i / self.chunks[d], (i % self.chunks[d]) as usize);
            let b = self.blocks[d] as usize;
            chunk = chunk * self.grid[d] + c;
            block = block * self.bgrid[d] as usize + r / b;
            elem = elem * b + r % b;
        }
        Ok((chunk, (block * self.block_items + elem) * self.typesize))
    }

    /// Validate a hyperslab and plan which chunks and blocks it touches.
    pub fn plan(&self, sel: &[DimSlice]) -> Result<SlicePlan> {
        if sel.len() != self.ndim() {
            return Err(Error::param("slice", format!("{} dimensions for a {}-d array", sel.len(), self.ndim())));
        }
        for (d, s) in sel.iter().enumerate() {
            if s.step == 0 || s.start > s.stop || s.stop > self.shape[d] {
                return Err(Error::param(
                    "slice",
                    format!(
                        "dimension {d}: start {} stop {} step {} is not within 0..={}",
                        s.start, s.stop, s.step, self.shape[d]
                    ),
                ));
            }
        }
        // A plan holds one run per (dimension, block entered), at most the selected count
        // along that dimension: bounded by the selection's size once no axis is empty. An
        // empty axis selects nothing, however long the others are (fuzz finding nd_open/oom-*).
        let empty = sel.iter().any(DimSlice::is_empty);
        let dims = sel.iter().enumerate().map(|(d, s)| if empty { Vec::new() } else { self.plan_dim(d, s) }).collect();
        Ok(SlicePlan {
            out_shape: sel.iter().map(DimSlice::len).collect(),
            steps: sel.iter().map(|s| s.step).collect(),
            dims,
        })
    }

    /// One dimension of a plan: for each chunk and block the selection enters, the run of
    /// selected positions inside that block.
    fn plan_dim(&self, d: usize, s: &DimSlice) -> Vec<DimChunk> {
        let (cs, bs) = (self.chunks[d], self.blocks[d]);
        let count = s.len();
        let mut out: Vec<DimChunk> = Vec::new();
        let (mut p, mut o) = (s.start, 0u64);
        while o < count {
            let c = p / cs;
            let r = p - c * cs;
            let b = r / bs;
            let region_end = (c * cs + (b + 1) * bs).min((c + 1) * cs).min(self.shape[d]);
            let n = ((region_end - p).div_ceil(s.step)).min(count - o);
            let run = BlockRun { block: b, src: (r - b * bs) as usize, dst: o, len: n as usize };
            match out.last_mut() {
                Some(last) if last.chunk == c => last.runs.push(run),
                _ => out.push(DimChunk { chunk: c, runs: vec![run] }),
            }
            p += n * s.step;
            o += n;
        }
        out
    }

    /// The bytes of a C-order source of the selection's shape (`plan.out_shape`) that are the
    /// chunk `parts` covers (see [`Self::covers_chunk`]) exactly as the chunk stores them, when
    /// there is such a single range: the chunk lies inside the array (no padding, blocks divide
    /// it), its blocks tile it in C order (1 along the dimensions before some axis, whole after
    /// it), and it is one run of the source (1 along the dimensions before some axis, the
    /// selection's whole extent after it). Then the chunk can be compressed from the source
    /// without gathering it first (1-D arrays, full-width rows, python-blosc2's slab shapes).
    pub(crate) fn chunk_source_range(&self, plan: &SlicePlan, parts: &[&DimChunk]) -> Option<std::ops::Range<usize>> {
        let nd = self.ndim();
        if nd == 0 || parts.len() != nd || plan.out_shape.len() != nd {
            return None;
        }
        for (d, part) in parts.iter().enumerate() {
            let end = part.chunk.checked_add(1)?.checked_mul(self.chunks[d])?;
            if end > self.shape[d] || self.blocks[d] == 0 || !self.chunks[d].is_multiple_of(self.blocks[d]) {
                return None;
            }
        }
        let k = (0..nd).find(|&d| self.blocks[d] != 1).unwrap_or(nd);
        if (k + 1..nd).any(|d| self.blocks[d] != self.chunks[d]) {
            return None;
        }
        let m = (0..nd).find(|&d| self.chunks[d] != 1).unwrap_or(nd);
        if (m + 1..nd).any(|d| self.chunks[d] != plan.out_shape[d]) {
            return None;
        }
        let (mut first, mut stride) = (0u64, 1u64);
        for d in (0..nd).rev() {
            first = first.checked_add(parts[d].runs.first()?.dst.checked_mul(stride)?)?;
            stride = stride.checked_mul(plan.out_shape[d])?;
        }
        let lo = usize::try_from(first).ok()?.checked_mul(self.typesize)?;
        Some(lo..lo.checked_add(self.chunk_bytes())?)
    }

    /// True when the selection `parts` (one per dim) covers chunk's valid region with step 1.
    pub(crate) fn covers_chunk(&self, plan: &SlicePlan, parts: &[&DimChunk]) -> bool {
        parts.iter().enumerate().all(|(d, part)| {
            let valid = (self.shape[d] - part.chunk * self.chunks[d]).min(self.chunks[d]);
            plan.steps[d] == 1 && part.runs.iter().map(|r| r.len as u64).sum::<u64>() == valid
        })
    }
}

/// A `start:stop:step` selection along one dimension (step >= 1, bounds inside the shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DimSlice {
    pub start: u64,
    pub stop: u64,
    pub step: u64,
}

impl DimSlice {
    pub fn new(start: u64, stop: u64, step: u64) -> DimSlice {
        DimSlice { start, stop, step }
    }

    /// The whole axis of length `n`.
    pub fn full(n: u64) -> DimSlice {
        DimSlice { start: 0, stop: n, step: 1 }
    }

    /// Number of selected positions.
    pub fn len(&self) -> u64 {
        if self.step == 0 || self.stop <= self.start {
            0
        } else {
            (self.stop - self.start).div_ceil(self.step)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Selected positions of one dimension inside one block: `len` positions starting at
/// in-block offset `src` (then every `step`), landing at output indices `dst..dst + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRun {
    pub block: u64,
    pub src: usize,
    pub dst: u64,
    pub len: usize,
}

/// The blocks one dimension of a selection enters inside chunk coordinate `chunk`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimChunk {
    pub chunk: u64,
    pub runs: Vec<BlockRun>,
}

/// A validated hyperslab: per dimension, the chunks and blocks it enters.
#[derive(Debug, Clone)]
pub struct SlicePlan {
    pub out_shape: Vec<u64>,
    pub steps: Vec<u64>,
    pub dims: Vec<Vec<DimChunk>>,
}

/// Visit every combination of one element per list (C order, last list fastest).
pub(crate) fn for_each_product<'a, T>(lists: &[&'a [T]], mut f: impl FnMut(&[&'a T])) {
    if lists.iter().any(|l| l.is_empty()) {
        return;
    }
    let mut idx = vec![0usize; lists.len()];
    let mut cur: Vec<&'a T> = lists.iter().map(|l| &l[0]).collect();
    loop {
        f(&cur);
        let mut d = lists.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < lists[d].len() {
                cur[d] = &lists[d][idx[d]];
                break;
            }
            idx[d] = 0;
            cur[d] = &lists[d][0];
        }
    }
}

impl SlicePlan {
    /// The part of this plan in `row` along axis `d`: one of `dims[d]` or a subset of its
    /// runs, with output indices along `d` starting at 0. When every axis before `d` selects
    /// one position, reads of different rows write disjoint, contiguous pieces of the output.
    pub fn piece(&self, d: usize, row: &DimChunk) -> SlicePlan {
        let first = row.runs.first().map_or(0, |r| r.dst);
        let runs = row.runs.iter().map(|r| BlockRun { dst: r.dst - first, ..*r }).collect();
        let mut dims = self.dims.clone();
        dims[d] = vec![DimChunk { chunk: row.chunk, runs }];
        let mut out_shape = self.out_shape.clone();
        out_shape[d] = row.runs.iter().map(|r| r.len as u64).sum();
        SlicePlan { out_shape, steps: self.steps.clone(), dims }
    }

    /// Items selected.
    pub fn nitems(&self) -> u64 {
        self.out_shape.iter().product()
    }

    /// The chunks touched, each with its per-dimension parts (C order of chunk numbers).
    pub fn chunks(&self, g: &Geometry) -> Vec<(u64, Vec<&DimChunk>)> {
        let lists: Vec<&[DimChunk]> = self.dims.iter().map(|v| v.as_slice()).collect();
        let mut out = Vec::new();
        for_each_product(&lists, |parts| {
            let coords: Vec<u64> = parts.iter().map(|p| p.chunk).collect();
            out.push((g.chunk_index(&coords), parts.to_vec()));
        });
        out
    }

    /// Linear indices (C order over the block grid) of the blocks `parts` touch in its chunk.
    pub fn blocks_of(&self, g: &Geometry, parts: &[&DimChunk]) -> Vec<usize> {
        let lists: Vec<&[BlockRun]> = parts.iter().map(|p| p.runs.as_slice()).collect();
        let mut out = Vec::new();
        for_each_product(&lists, |runs| {
            out.push(runs.iter().zip(&g.bgrid).fold(0usize, |acc, (r, &n)| acc * n as usize + r.block as usize));
        });
        out
    }

    /// Every (chunk, block) pair the hyperslab touches.
    pub fn pairs(&self, g: &Geometry) -> Vec<(u64, usize)> {
        self.chunks(g)
            .into_iter()
            .flat_map(|(c, parts)| self.blocks_of(g, &parts).into_iter().map(move |b| (c, b)))
            .collect()
    }
}

/// Copy between a decoded block and the C-order selection buffer, for one combination of
/// per-dimension runs. `to_block` false reads the block into `sel`, true writes `sel` into it.
pub(crate) struct Copier<'a> {
    pub g: &'a Geometry,
    pub steps: &'a [u64],
    /// Strides (items) of the selection buffer and of a block.
    pub sel_strides: Vec<usize>,
    pub block_strides: Vec<usize>,
}

impl<'a> Copier<'a> {
    pub fn new(g: &'a Geometry, plan: &'a SlicePlan) -> Copier<'a> {
        let n = g.ndim();
        let mut sel_strides = vec![1usize; n];
        let mut block_strides = vec![1usize; n];
        for d in (0..n.saturating_sub(1)).rev() {
            sel_strides[d] = sel_strides[d + 1] * plan.out_shape[d + 1] as usize;
            block_strides[d] = block_strides[d + 1] * g.blocks[d + 1] as usize;
        }
        Copier { g, steps: &plan.steps, sel_strides, block_strides }
    }

    /// Copy the selected items of one block (`runs`: one run per dimension) into `sel`.
    pub fn read(&self, runs: &[&BlockRun], block: &[u8], sel: &mut [u8]) {
        self.walk(0, runs, 0, 0, &mut |b, s, n| sel[s..s + n].copy_from_slice(&block[b..b + n]));
    }

    /// Copy the items of `sel` that fall in one block into that block.
    pub fn write(&self, runs: &[&BlockRun], block: &mut [u8], sel: &[u8]) {
        self.walk(0, runs, 0, 0, &mut |b, s, n| block[b..b + n].copy_from_slice(&sel[s..s + n]));
    }

    /// Zero the selected items of one block.
    pub fn zero(&self, runs: &[&BlockRun], block: &mut [u8]) {
        self.walk(0, runs, 0, 0, &mut |b, _, n| block[b..b + n].fill(0));
    }

    /// Call `f(block byte offset, selection byte offset, bytes)` for every contiguous piece.
    fn walk(&self, d: usize, runs: &[&BlockRun], b_off: usize, s_off: usize, f: &mut impl FnMut(usize, usize, usize)) {
        let t = self.g.typesize;
        if d == runs.len() {
            return f(b_off * t, s_off * t, t);
        }
        let r = runs[d];
        let step = self.steps[d] as usize;
        let b0 = b_off + r.src * self.block_strides[d];
        let s0 = s_off + r.dst as usize * self.sel_strides[d];
        if d + 1 == runs.len() {
            // The last dimension: one piece when contiguous, else item by item.
            if step == 1 {
                return f(b0 * t, s0 * t, r.len * t);
            }
            for k in 0..r.len {
                f((b0 + k * step) * t, (s0 + k) * t, t);
            }
            return;
        }
        if d + 2 == runs.len() {
            // Second to last: loop the last dimension's pieces here (no recursion per item).
            let (r2, step2) = (runs[d + 1], self.steps[d + 1] as usize);
            for k in 0..r.len {
                let b1 = b0 + k * step * self.block_strides[d] + r2.src;
                let s1 = s0 + k * self.sel_strides[d] + r2.dst as usize;
                if step2 == 1 {
                    f(b1 * t, s1 * t, r2.len * t);
                } else {
                    for j in 0..r2.len {
                        f((b1 + j * step2) * t, (s1 + j) * t, t);
                    }
                }
            }
            return;
        }
        for k in 0..r.len {
            self.walk(d + 1, runs, b0 + k * step * self.block_strides[d], s0 + k * self.sel_strides[d], f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(shape: &[u64], chunks: &[u64], blocks: &[u64]) -> Geometry {
        Geometry::new(shape, chunks, blocks, 4).unwrap()
    }

    /// Chunk `n`'s byte range in a C-order source of the selection, or None.
    fn source_range(geom: &Geometry, sel: &[DimSlice], n: u64) -> Option<std::ops::Range<usize>> {
        let plan = geom.plan(sel).unwrap();
        let coords = geom.chunk_coords(n);
        let parts: Vec<&DimChunk> =
            plan.dims.iter().zip(&coords).map(|(dim, c)| dim.iter().find(|p| p.chunk == *c).unwrap()).collect();
        assert!(geom.covers_chunk(&plan, &parts));
        geom.chunk_source_range(&plan, &parts)
    }

    #[test]
    fn chunks_that_are_one_range_of_the_source() {
        let full = |shape: &[u64]| shape.iter().map(|&s| DimSlice::full(s)).collect::<Vec<_>>();
        // 1-D: every whole chunk is a range; the edge chunk (padded) is not.
        let a = g(&[100], &[30], &[10]);
        assert_eq!(source_range(&a, &full(&[100]), 1), Some(120..240));
        assert_eq!(source_range(&a, &full(&[100]), 3), None);
        // Blocks that do not divide the chunk pad it.
        assert_eq!(source_range(&g(&[100], &[30], &[20]), &full(&[100]), 0), None);
        // Full-width rows, blocks of rows: a range; half-width chunks are not (in this source).
        let b = g(&[8, 6], &[2, 6], &[1, 6]);
        assert_eq!(source_range(&b, &full(&[8, 6]), 2), Some(4 * 6 * 4..6 * 6 * 4));
        assert_eq!(source_range(&g(&[8, 6], &[2, 3], &[1, 3]), &full(&[8, 6]), 0), None);
        // ... but a selection exactly one chunk wide makes them one.
        let half = [DimSlice::full(8), DimSlice::new(3, 6, 1)];
        assert_eq!(source_range(&g(&[8, 6], &[2, 3], &[1, 3]), &half, 3), Some(2 * 3 * 4..4 * 3 * 4));
        // python-blosc2's slab shapes: (1, H, W) chunks of (1, h, W) blocks.
        let c = g(&[3, 10, 4], &[1, 10, 4], &[1, 5, 4]);
        assert_eq!(source_range(&c, &full(&[3, 10, 4]), 2), Some(2 * 160..3 * 160));
        // Blocks not in C order of the chunk (split along the last axis): not a range.
        assert_eq!(source_range(&g(&[3, 10, 4], &[1, 10, 4], &[1, 10, 2]), &full(&[3, 10, 4]), 0), None);
        // Cubes: not a range.
        assert_eq!(source_range(&g(&[8, 8], &[4, 4], &[2, 2]), &full(&[8, 8]), 0), None);
    }

    #[test]
    fn chunk_count_is_bounded_by_the_offsets_index() {
        let n = MAX_CHUNKS;
        assert_eq!(Geometry::new(&[n], &[1], &[1], 1).unwrap().nchunks, n);
        let e = Geometry::new(&[n + 1], &[1], &[1], 1).unwrap_err().to_string();
        assert!(e.contains("choose larger chunks"), "{e}");
        assert!(Geometry::new(&[1 << 31, 1 << 31], &[1, 1], &[1, 1], 1).is_err());
    }

    #[test]
    fn derived_sizes() {
        let x = g(&[400, 3], &[110, 3], &[57, 3]);
        assert_eq!(x.extchunks, vec![114, 3]);
        assert_eq!(x.grid, vec![4, 1]);
        assert_eq!(x.nchunks, 4);
        assert_eq!(x.chunk_bytes(), 114 * 3 * 4);
        assert_eq!(x.block_bytes(), 57 * 3 * 4);
        assert_eq!(x.blocks_per_chunk, 2);
        // 0-d: one chunk of one item.
        let z = g(&[], &[], &[]);
        assert_eq!((z.nchunks, z.chunk_items, z.block_items, z.nitems), (1, 1, 1, 1));
        // Zero-length axis: no chunks at all.
        let e = g(&[3, 0, 4], &[3, 0, 4], &[3, 0, 4]);
        assert_eq!((e.nchunks, e.chunk_bytes(), e.nitems), (0, 0, 0));
        // Block larger than chunk: the padded chunk is one block.
        let b = g(&[10], &[4], &[6]);
        assert_eq!((b.extchunks[0], b.bgrid[0], b.nchunks), (6, 1, 3));
    }

    #[test]
    fn locate_matches_spec_formula() {
        let x = g(&[12, 25, 250], &[8, 10, 50], &[4, 5, 10]);
        // item (9, 13, 77): chunk (1, 1, 1); r = (1, 3, 27); block (0, 0, 2); elem (1, 3, 7)
        let (c, off) = x.locate(&[9, 13, 77]).unwrap();
        assert_eq!(c, (3 + 1) * 5 + 1);
        // block grid [2, 2, 5]: block (0, 0, 2) is number 2; elem (1, 3, 7) in [4, 5, 10]
        let block = 2;
        let elem = (5 + 3) * 10 + 7;
        assert_eq!(off, (block * 200 + elem) * 4);
        assert!(x.locate(&[12, 0, 0]).is_err());
    }

    #[test]
    fn bad_geometries_are_refused_with_the_dimension() {
        let e = Geometry::new(&[10, 10], &[0, 5], &[1, 1], 4).unwrap_err().to_string();
        assert!(e.contains("chunks[0]"), "{e}");
        let e = Geometry::new(&[10], &[5], &[0], 4).unwrap_err().to_string();
        assert!(e.contains("blocks[0]"), "{e}");
        let e = Geometry::new(&[1 << 40, 1 << 40], &[1 << 20, 1 << 20], &[1, 1], 8).unwrap_err().to_string();
        assert!(e.contains("limit"), "{e}");
        let e = Geometry::new(&[u64::MAX / 2, u64::MAX / 2], &[1, 1], &[1, 1], 1).unwrap_err().to_string();
        assert!(e.contains("overflow") || e.contains("int64"), "{e}");
        let e = Geometry::new(&[1; 17], &[1; 17], &[1; 17], 1).unwrap_err().to_string();
        assert!(e.contains("17 dimensions"), "{e}");
    }

    #[test]
    fn plan_lists_touched_pairs() {
        let x = g(&[10, 10], &[4, 4], &[2, 2]);
        // Row 5, columns 0..10 step 1: chunk row 1, chunks 3,4,5; block row 0 (r = 1 -> b 0),
        // every block column.
        let p = x.plan(&[DimSlice::new(5, 6, 1), DimSlice::full(10)]).unwrap();
        let pairs = p.pairs(&x);
        assert_eq!(pairs, vec![(3, 0), (3, 1), (4, 0), (4, 1), (5, 0)]);
        // Column with step 5: positions 0 and 5.
        let p = x.plan(&[DimSlice::new(0, 10, 5), DimSlice::new(9, 10, 1)]).unwrap();
        assert_eq!(p.pairs(&x), vec![(2, 0), (5, 0)]);
        assert!(x.plan(&[DimSlice::new(0, 11, 1), DimSlice::full(10)]).is_err());
        // An empty axis: nothing is planned along the huge one (fuzz nd_open/oom-*).
        let huge = g(&[1 << 44, 0], &[2, 1], &[1, 1]);
        let p = huge.plan(&[DimSlice::full(1 << 44), DimSlice::full(0)]).unwrap();
        assert!(p.dims.iter().all(Vec::is_empty) && p.pairs(&huge).is_empty());
        assert!(x.plan(&[DimSlice::new(0, 1, 0), DimSlice::full(10)]).is_err());
    }
}
