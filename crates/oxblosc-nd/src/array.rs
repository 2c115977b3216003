//! [`NdArray`]: a b2nd array over a super-chunk.
//!
//! Reads plan the hyperslab ([`crate::geometry`]), fetch each touched chunk once and decode
//! either the few blocks the selection enters (`decompress_ranges`, one job per block) or, when
//! it enters most of them, the whole chunk; special zero chunks are never decoded. Several
//! chunks are fetched in parallel on the chunk engine's pool, then copied into place. A
//! selection inside one chunk whose blocks are laid out in C order (Dask's reads) skips the
//! copy: the touched blocks are decoded straight into the output.
//! Writes replace whole chunks directly and read-modify-write the others; padding outside the
//! array is written as zeros, like C-Blosc2.

use std::sync::atomic::{AtomicU64, Ordering};

use oxblosc_chunk::parallel::{map_jobs, pool};
use oxblosc_chunk::{ChunkHeader, DParams, SpecialKind};
use oxblosc_frame::{SChunk, SpecialValue};
use rayon::prelude::*;

use crate::geometry::{for_each_product, BlockRun, Copier, DimChunk, DimSlice, Geometry, SlicePlan};
use crate::meta::{Meta, LEGACY_NAME, NAME};
use crate::{Error, Result};

/// One chunk's part of a slab read: (chunk, byte ranges of its decoded bytes, output bytes).
type Slab = (u64, Vec<(usize, usize)>, usize);

/// What a new array's chunks initially hold (written as special chunks: no data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fill {
    Zeros,
    Uninit,
    Nan,
    /// Every item equals these `typesize` bytes.
    Value(Vec<u8>),
}

/// A chunk fetched for a read: nothing to decode, or decoded blocks.
/// Each carries the buffer it was given back to the caller for reuse: fresh multi-megabyte
/// buffers per chunk cost more in page faults than decoding into them.
enum Fetched {
    Zeros(Vec<u8>),
    /// The whole chunk: block `b` at `b * block_bytes`.
    Whole(Vec<u8>),
    /// Only the touched blocks, in plan order: the k-th at `k * block_bytes`.
    Listed(Vec<u8>),
}

impl Fetched {
    fn into_buffer(self) -> Vec<u8> {
        match self {
            Fetched::Zeros(b) | Fetched::Whole(b) | Fetched::Listed(b) => b,
        }
    }
}

/// A chunk number and the compressed bytes that replace it (kept as they are by an
/// in-memory super-chunk).
type NewChunk = (u64, std::sync::Arc<[u8]>);

/// One whole chunk compressed by [`NdArray::encode_chunk`], waiting for its commit.
#[derive(Debug, Clone)]
pub struct EncodedChunk {
    n: u64,
    /// The geometry it was encoded for (the commit checks it still holds).
    geom: Geometry,
    chunk: std::sync::Arc<[u8]>,
}

impl EncodedChunk {
    /// The chunk's number.
    pub fn nchunk(&self) -> u64 {
        self.n
    }
}

/// An n-dimensional array stored as a b2nd super-chunk.
#[derive(Debug)]
pub struct NdArray {
    schunk: SChunk,
    geom: Geometry,
    dtype: Option<String>,
    /// The metalayer it was read from (`b2nd` or legacy `caterva`) and whether it had a dtype.
    meta_name: &'static str,
    nthreads: usize,
    decoded_blocks: AtomicU64,
    /// Reads inside one chunk decoded straight into the caller's buffer.
    decoded_in_place: AtomicU64,
    /// Batches of chunks built by writes (see [`NdArray::write_batches`]).
    write_batches: AtomicU64,
    /// Chunks whose needed blocks were read from the file without the rest.
    read_in_part: AtomicU64,
}

impl NdArray {
    /// A new array over `schunk` (empty, typesize set; in memory or a new file) with every
    /// chunk initialised to `fill` without compressing anything. The super-chunk's block size
    /// is forced to the geometry's.
    pub fn create(schunk: SChunk, geom: Geometry, dtype: Option<&str>, fill: Fill) -> Result<NdArray> {
        NdArray::without_chunks(schunk, geom, dtype, |a| a.fill_chunks(a.geom.nchunks, &fill))
    }

    /// The array's metalayer and parameters on an empty `schunk`, then `chunks` adding its
    /// chunks, all as one commit: a file killed between the metalayer and the chunks held a
    /// metalayer describing chunks it did not have (refused when opened).
    fn without_chunks(
        mut schunk: SChunk,
        geom: Geometry,
        dtype: Option<&str>,
        chunks: impl FnOnce(&mut NdArray) -> Result<()>,
    ) -> Result<NdArray> {
        if schunk.nchunks() != 0 || schunk.meta(NAME).is_some() {
            return Err(Error::param("schunk", "must be empty and without a b2nd metalayer"));
        }
        if geom.typesize != schunk.typesize() {
            return Err(Error::param(
                "typesize",
                format!("geometry has {} but the super-chunk {}", geom.typesize, schunk.typesize()),
            ));
        }
        if geom.blocks.iter().zip(&geom.chunks).any(|(b, c)| b > c) {
            return Err(Error::param("blocks", format!("{:?} cannot exceed chunks {:?}", geom.blocks, geom.chunks)));
        }
        if geom.block_bytes() > oxblosc_chunk::format::MAX_BLOCKSIZE {
            return Err(Error::param("blocks", format!("a block of {} bytes exceeds 536866816", geom.block_bytes())));
        }
        if let Some(d) = dtype {
            crate::meta::check_dtype(d).map_err(|r| Error::param("dtype", format!("{d:?}: {r}")))?;
        }
        let mut cp = schunk.cparams().clone();
        cp.blocksize = geom.block_bytes();
        schunk.set_cparams(cp)?;
        schunk.set_chunk_context(geom.chunk_context());
        let nthreads = schunk.dparams().nthreads;
        let meta = geom.to_meta(Some(dtype.unwrap_or("|u1"))).encode();
        let mut a = NdArray {
            schunk,
            geom,
            dtype: dtype.map(str::to_owned),
            meta_name: NAME,
            nthreads,
            decoded_blocks: AtomicU64::new(0),
            decoded_in_place: AtomicU64::new(0),
            write_batches: AtomicU64::new(0),
            read_in_part: AtomicU64::new(0),
        };
        a.atomically(|a| {
            a.schunk.add_meta(NAME, &meta)?;
            chunks(a)
        })?;
        Ok(a)
    }

    /// A new array holding `data` (C order, `nitems * typesize` bytes).
    pub fn from_buffer(schunk: SChunk, geom: Geometry, dtype: Option<&str>, data: &[u8]) -> Result<NdArray> {
        let mut a = NdArray::create(schunk, geom, dtype, Fill::Uninit)?;
        let full: Vec<DimSlice> = a.geom.shape.iter().map(|&s| DimSlice::full(s)).collect();
        a.set_slice(&full, data)?;
        Ok(a)
    }

    /// A new array holding `data` (C order), its chunks compressed and appended in order as
    /// one commit. On a file-backed `schunk` each chunk goes to the file as soon as it is
    /// built (memory stays a few chunks whatever the array's size), and the frame's index is
    /// written once at the end; on an error no chunk becomes part of the frame.
    pub fn from_buffer_appending(schunk: SChunk, geom: Geometry, dtype: Option<&str>, data: &[u8]) -> Result<NdArray> {
        let need = u128::from(geom.nitems) * geom.typesize as u128;
        if need != data.len() as u128 {
            return Err(Error::param("data", format!("{} bytes given, the array has {need}", data.len())));
        }
        // First a complete array of uninitialised chunks (metalayer and chunks in one commit),
        // then the data replacing them: a kill leaves one of the two, both whole arrays.
        let mut a = NdArray::create(schunk, geom, dtype, Fill::Uninit)?;
        let full = a.full_selection();
        a.atomically(|a| a.set_slice_inner(&full, data))?;
        Ok(a)
    }

    /// View a super-chunk carrying a `b2nd` (or legacy `caterva`) metalayer as an array,
    /// after checking the metalayer against the frame: chunk count, chunk size, block size.
    pub fn from_schunk(mut schunk: SChunk) -> Result<NdArray> {
        let (meta_name, dtype, geom) = Self::parse(&schunk)?;
        // New chunks, and the frame header that C-Blosc2 builds special chunks from, carry
        // the geometry's block size (python-blosc2 cannot slice zero chunks added by a
        // resize otherwise).
        if schunk.blocksize() != geom.block_bytes() && geom.block_bytes() > 0 {
            let mut cp = schunk.cparams().clone();
            cp.blocksize = geom.block_bytes();
            schunk.set_cparams(cp)?;
        }
        schunk.set_chunk_context(geom.chunk_context());
        let nthreads = schunk.dparams().nthreads;
        let zero = || AtomicU64::new(0);
        Ok(NdArray {
            schunk,
            geom,
            dtype,
            meta_name,
            nthreads,
            decoded_blocks: zero(),
            decoded_in_place: zero(),
            write_batches: zero(),
            read_in_part: zero(),
        })
    }

    /// The metalayer of `schunk`, checked against the frame: its name, dtype and geometry.
    fn parse(schunk: &SChunk) -> Result<(&'static str, Option<String>, Geometry)> {
        let (meta_name, bytes) = match (schunk.meta(NAME), schunk.meta(LEGACY_NAME)) {
            (Some(b), _) => (NAME, b),
            (None, Some(b)) => (LEGACY_NAME, b),
            (None, None) => return Err(Error::NotAnArray),
        };
        let meta = Meta::decode(bytes)?;
        let geom = Geometry::from_meta(&meta, schunk.typesize())?;
        if geom.nchunks != schunk.nchunks() as u64 {
            return Err(Error::geometry(format!(
                "the metalayer describes {} chunks (shape {:?}, chunks {:?}) but the frame holds {}",
                geom.nchunks,
                geom.shape,
                geom.chunks,
                schunk.nchunks()
            )));
        }
        if geom.nchunks > 0 && schunk.chunksize() != geom.chunk_bytes() as i64 {
            return Err(Error::geometry(format!(
                "chunks of {} bytes expected from the geometry, the frame's chunk size is {}",
                geom.chunk_bytes(),
                schunk.chunksize()
            )));
        }
        Ok((meta_name, meta.dtype, geom))
    }

    /// Locked handles: follow changes another handle committed (shape included). Returns
    /// whether there were any; see `SChunk::refresh`.
    pub fn refresh(&mut self) -> Result<bool> {
        if !self.schunk.refresh()? {
            return Ok(false);
        }
        self.reload()?;
        Ok(true)
    }

    /// Locked writers: hold the exclusive lock across several changes (see
    /// `SChunk::hold_lock`, which catches up with other writers first).
    pub fn hold_lock(&mut self) -> Result<()> {
        self.schunk.hold_lock()?;
        self.reload()
    }

    /// Take name, dtype and geometry from the super-chunk's metalayer again (after it
    /// caught up with another handle's changes or rolled one back).
    fn reload(&mut self) -> Result<()> {
        let (meta_name, dtype, geom) = Self::parse(&self.schunk)?;
        (self.meta_name, self.dtype, self.geom) = (meta_name, dtype, geom);
        Ok(())
    }

    // ------------------------------------------------------------------ properties

    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }

    pub fn shape(&self) -> &[u64] {
        &self.geom.shape
    }

    pub fn chunks(&self) -> &[u64] {
        &self.geom.chunks
    }

    pub fn blocks(&self) -> &[u64] {
        &self.geom.blocks
    }

    pub fn ndim(&self) -> usize {
        self.geom.ndim()
    }

    pub fn typesize(&self) -> usize {
        self.geom.typesize
    }

    /// The NumPy dtype string of the metalayer (None when it has none).
    pub fn dtype(&self) -> Option<&str> {
        self.dtype.as_deref()
    }

    pub fn schunk(&self) -> &SChunk {
        &self.schunk
    }

    /// The super-chunk, for metalayer/vlmeta edits and persistence. Changing its chunks
    /// directly can break the array's invariants (checked again by [`NdArray::from_schunk`]).
    pub fn schunk_mut(&mut self) -> &mut SChunk {
        &mut self.schunk
    }

    pub fn into_schunk(self) -> SChunk {
        self.schunk
    }

    pub fn nthreads(&self) -> usize {
        self.nthreads
    }

    /// Threads used by reads and writes (1 = everything on the calling thread).
    pub fn set_nthreads(&mut self, n: usize) {
        self.nthreads = n.max(1);
    }

    /// Blocks decompressed by reads of this array so far (special chunks cost none). Lets
    /// tests prove that a slice decodes only the blocks it touches.
    pub fn blocks_decoded(&self) -> u64 {
        self.decoded_blocks.load(Ordering::Relaxed)
    }

    /// Reads inside one chunk decoded straight into the output (no intermediate buffer:
    /// blocks laid out in C order, only the touched ones decoded), for tests.
    pub fn chunks_decoded_in_place(&self) -> u64 {
        self.decoded_in_place.load(Ordering::Relaxed)
    }

    /// Chunks of which reads of this handle read only the needed blocks from the file (not
    /// the whole stored chunk), for tests.
    pub fn chunks_read_in_part(&self) -> u64 {
        self.read_in_part.load(Ordering::Relaxed)
    }

    /// Batches of chunks built by writes of this handle so far, for tests. Each batch ends
    /// with the threads waiting for the slowest of them: on a loaded machine every such wait
    /// is a trip through the run queue (milliseconds), so fewer batches write faster.
    pub fn write_batches(&self) -> u64 {
        self.write_batches.load(Ordering::Relaxed)
    }

    // ------------------------------------------------------------------ reading

    /// The hyperslab `sel` (one `DimSlice` per dimension) as C-order bytes.
    pub fn get_slice(&self, sel: &[DimSlice]) -> Result<Vec<u8>> {
        let need = self.sel_bytes(sel)?;
        // A selection that fits the address space may still not fit memory: an error, not
        // an abort (and checked before the plan, which grows with the selection too).
        let mut out = Vec::new();
        out.try_reserve_exact(need)
            .map_err(|_| Error::param("slice", format!("{need} bytes of output cannot be allocated")))?;
        let plan = self.geom.plan(sel)?;
        out.resize(need, 0);
        self.read_selection(sel, &plan, &mut out)?;
        Ok(out)
    }

    /// [`NdArray::get_slice`] into the caller's buffer (exactly the selection's size).
    pub fn get_slice_into(&self, sel: &[DimSlice], out: &mut [u8]) -> Result<()> {
        let need = self.sel_bytes(sel)?;
        if out.len() != need {
            return Err(Error::param("out", format!("{} bytes given, the selection has {need}", out.len())));
        }
        let plan = self.geom.plan(sel)?;
        self.read_selection(sel, &plan, out)
    }

    /// Read `sel` (planned as `plan`) into `out`.
    fn read_selection(&self, sel: &[DimSlice], plan: &SlicePlan, out: &mut [u8]) -> Result<()> {
        if let Some((n, ranges)) = self.one_chunk_ranges(sel) {
            return self.decode_ranges_into(n, &ranges, out, self.nthreads);
        }
        match self.slab_ranges(sel) {
            Some(slabs) => self.decode_slabs_into(slabs, out),
            None => self.read_plan(plan, out),
        }
    }

    /// Whether a chunk's decoded bytes are the chunk in C order, padded on one axis: blocks
    /// one item thick on every axis before that one (the split axis), whole after it; on the
    /// split axis an edge block's padding follows its items, so the decoded bytes are the C
    /// order of `extchunks` (the chunk padded to whole blocks).
    fn blocks_in_c_order(&self) -> bool {
        let g = &self.geom;
        if g.ndim() == 0 || g.chunks.contains(&0) {
            return false;
        }
        let split = g.blocks.iter().position(|&b| b != 1).unwrap_or(g.ndim() - 1);
        g.blocks.iter().zip(&g.chunks).enumerate().all(|(d, (&b, &c))| match d.cmp(&split) {
            std::cmp::Ordering::Less => b == 1,
            std::cmp::Ordering::Equal => b <= c,
            std::cmp::Ordering::Greater => b == c,
        })
    }

    /// For a step-1 selection that spans several chunks along the first axis only and, on
    /// every other axis, a whole chunk: (chunk, its ranges as [`Self::one_chunk_ranges`]
    /// gives them, output bytes) per chunk, in output order. Each chunk's part of the
    /// C-order output is then one contiguous piece, decoded straight into it (a full read
    /// of an array whose chunks span the inner axes, as the automatic shapes of a field do:
    /// no chunk-sized buffer and no copy into the output, which took 12% of such a read).
    /// None otherwise (the general path).
    fn slab_ranges(&self, sel: &[DimSlice]) -> Option<Vec<Slab>> {
        let g = &self.geom;
        if sel.len() != g.ndim() || sel.iter().any(|s| s.step != 1 || s.stop <= s.start) || !self.blocks_in_c_order() {
            return None;
        }
        let whole_chunk = |(d, s): (usize, &DimSlice)| {
            let c = g.chunks[d];
            s.start % c == 0 && s.stop == (s.start + c).min(g.shape[d])
        };
        if !sel.iter().enumerate().skip(1).all(whole_chunk) {
            return None;
        }
        let c0 = g.chunks[0];
        let row = sel[1..].iter().map(|s| s.stop - s.start).product::<u64>() as usize * g.typesize;
        let mut slabs = Vec::new();
        let mut t = sel[0].start;
        while t < sel[0].stop {
            let end = ((t / c0 + 1) * c0).min(sel[0].stop);
            let mut part = sel.to_vec();
            part[0] = DimSlice::new(t, end, 1);
            let (n, ranges) = self.one_chunk_ranges(&part)?;
            slabs.push((n, ranges, (end - t) as usize * row));
            t = end;
        }
        Some(slabs)
    }

    /// Decode `slabs` (see [`Self::slab_ranges`]) into consecutive pieces of `out`, one chunk
    /// per job on the array's threads (the calling thread takes jobs too); fewer chunks than
    /// threads are decoded one after the other, each on all the threads.
    fn decode_slabs_into(&self, slabs: Vec<Slab>, out: &mut [u8]) -> Result<()> {
        let mut jobs = Vec::with_capacity(slabs.len());
        let mut rest = out;
        for (n, ranges, len) in slabs {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            jobs.push((n, ranges, head));
            rest = tail;
        }
        if jobs.len() < self.nthreads {
            return jobs
                .into_iter()
                .try_for_each(|(n, ranges, piece)| self.decode_ranges_into(n, &ranges, piece, self.nthreads));
        }
        map_jobs(jobs, self.nthreads, |(n, ranges, piece)| self.decode_ranges_into(n, &ranges, piece, 1))?;
        Ok(())
    }

    /// For a step-1 selection inside one chunk whose blocks are in C order: that chunk and
    /// the byte ranges of its decoded bytes that, back to back, are the selection's C-order
    /// output, cut at block boundaries (one decode job per block). Such a read decodes only
    /// the blocks it touches, straight into the output: no chunk-sized buffer and no copy (a
    /// fresh multi-megabyte buffer per read cost more than the decoding; Dask reads whole
    /// chunks and, for slabs, parts of chunks this way). None when some block would be
    /// decoded twice (a selection narrower than a block on the inner axes): the general path
    /// decodes it once and copies.
    fn one_chunk_ranges(&self, sel: &[DimSlice]) -> Option<(u64, Vec<(usize, usize)>)> {
        let g = &self.geom;
        if sel.len() != g.ndim() || sel.iter().any(|s| s.step != 1 || s.stop <= s.start) || !self.blocks_in_c_order() {
            return None;
        }
        let coords: Vec<u64> = sel.iter().zip(&g.chunks).map(|(s, &c)| s.start / c).collect();
        if sel.iter().zip(&g.chunks).zip(&coords).any(|((s, &c), &k)| (s.stop - 1) / c != k) {
            return None;
        }
        // The selection relative to the chunk, and byte strides of the chunk's C order.
        let rel: Vec<(u64, u64)> =
            sel.iter().zip(&g.chunks).zip(&coords).map(|((s, &c), &k)| (s.start - k * c, s.stop - k * c)).collect();
        // (Of the padded chunk: the decoded bytes' order, see `blocks_in_c_order`.)
        let mut strides = vec![g.typesize as u64; g.ndim()];
        for d in (0..g.ndim() - 1).rev() {
            strides[d] = strides[d + 1] * g.extchunks[d + 1];
        }
        // Inner axes selected whole (padding included) fold into the run of axis `k`.
        let mut k = g.ndim() - 1;
        while k > 0 && rel[k] == (0, g.extchunks[k]) {
            k -= 1;
        }
        let run = (rel[k].1 - rel[k].0) * strides[k];
        let bb = g.block_bytes() as u64;
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut idx: Vec<u64> = rel[..k].iter().map(|r| r.0).collect();
        loop {
            let lo = idx.iter().zip(&strides).map(|(i, s)| i * s).sum::<u64>() + rel[k].0 * strides[k];
            let mut p = lo;
            while p < lo + run {
                let q = (lo + run).min((p / bb + 1) * bb);
                if ranges.last().is_some_and(|&(_, h)| (h as u64 - 1) / bb == p / bb) {
                    return None;
                }
                ranges.push((p as usize, q as usize));
                p = q;
            }
            // Next index of the outer axes (odometer, last axis fastest).
            let mut d = k;
            loop {
                if d == 0 {
                    return Some((g.chunk_index(&coords), ranges));
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < rel[d].1 {
                    break;
                }
                idx[d] = rel[d].0;
            }
        }
    }

    /// Decode `ranges` of chunk `n` (see [`Self::one_chunk_ranges`]) back to back into `out`,
    /// on `nthreads` threads.
    fn decode_ranges_into(&self, n: u64, ranges: &[(usize, usize)], out: &mut [u8], nthreads: usize) -> Result<()> {
        self.with_checked_chunk(n, |c| {
            let err = |source| oxblosc_frame::Error::Chunk { chunk: oxblosc_frame::ChunkId::Data(n as usize), source };
            let special = ChunkHeader::parse(c).and_then(|h| h.special()).map_err(err)?;
            if matches!(special, SpecialKind::Zeros | SpecialKind::Uninit) {
                out.fill(0);
            } else if ranges.len() == 1 && ranges[0] == (0, self.geom.chunk_bytes()) {
                let dp = DParams { nthreads };
                oxblosc_chunk::decompress_into_with(c, out, &dp, self.schunk.chunk_context()).map_err(err)?;
            } else {
                let ctx = self.schunk.chunk_context();
                oxblosc_chunk::decompress_ranges_with(c, ranges, out, nthreads, ctx).map_err(err)?;
            }
            self.decoded_in_place.fetch_add(1, Ordering::Relaxed);
            if special == SpecialKind::None {
                self.decoded_blocks.fetch_add(ranges.len() as u64, Ordering::Relaxed);
            }
            Ok(())
        })
    }

    /// The whole array as C-order bytes.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        self.get_slice(&self.full_selection())
    }

    /// Start and stop (per dimension) of the part of the array chunk `n` holds.
    pub fn chunk_region(&self, n: u64) -> Result<(Vec<u64>, Vec<u64>)> {
        if n >= self.geom.nchunks {
            return Err(Error::param("chunk", format!("{n} is out of range ({} chunks)", self.geom.nchunks)));
        }
        Ok(self.geom.chunk_region(n))
    }

    /// Iterate over chunks in storage order: (start, stop, C-order bytes of that region).
    pub fn iter_chunks(&self) -> impl Iterator<Item = Result<(Vec<u64>, Vec<u64>, Vec<u8>)>> + '_ {
        (0..self.geom.nchunks).map(move |n| {
            let (start, stop) = self.geom.chunk_region(n);
            let sel: Vec<DimSlice> = start.iter().zip(&stop).map(|(&a, &b)| DimSlice::new(a, b, 1)).collect();
            let data = self.get_slice(&sel)?;
            Ok((start, stop, data))
        })
    }

    fn full_selection(&self) -> Vec<DimSlice> {
        self.geom.shape.iter().map(|&s| DimSlice::full(s)).collect()
    }

    /// Bytes of a selection (checked before anything is planned or allocated).
    fn sel_bytes(&self, sel: &[DimSlice]) -> Result<usize> {
        sel.iter()
            .try_fold(1u64, |acc, s| acc.checked_mul(s.len()))
            .and_then(|n| n.checked_mul(self.geom.typesize as u64))
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= isize::MAX as usize)
            .ok_or_else(|| Error::param("slice", "selection too large for memory"))
    }

    /// Read a planned selection into `out` with the array's threads. Pieces of the
    /// selection along the outermost axis that selects more than one position own
    /// contiguous pieces of the C-order output, so several are read fully in parallel
    /// (decode and copy): rows of chunks, or rows of blocks when there are too few chunk
    /// rows to keep the threads busy (blocks of different block rows are disjoint, so
    /// nothing is decoded twice). Otherwise the chunks are pipelined.
    fn read_plan(&self, plan: &SlicePlan, out: &mut [u8]) -> Result<()> {
        let nt = self.nthreads;
        if nt <= 1 {
            return self.read_chunks(plan, out, nt);
        }
        // Block rows of one chunk re-read the chunk: only where that costs no I/O.
        let in_memory = !self.schunk.reads_from_files();
        for (d, dim) in plan.dims.iter().enumerate() {
            let rows: Vec<DimChunk> = if in_memory && dim.len() < 2 * nt {
                dim.iter().flat_map(|c| c.runs.iter().map(|r| DimChunk { chunk: c.chunk, runs: vec![*r] })).collect()
            } else {
                dim.clone()
            };
            if rows.len() < 2 {
                if plan.out_shape[d] == 1 {
                    continue; // a single position: the next axis still splits the output
                }
                break;
            }
            let piece_bytes = plan.out_shape[d + 1..].iter().product::<u64>() as usize * self.geom.typesize;
            let mut pieces = Vec::with_capacity(rows.len());
            let mut rest = out;
            for row in &rows {
                let n: usize = row.runs.iter().map(|r| r.len).sum();
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(n * piece_bytes);
                pieces.push((row, head));
                rest = tail;
            }
            // The calling thread reads pieces too, helpers kept off its CPU (`map_jobs`): woken
            // pool threads were queued on one CPU behind each other for whole reads (a column
            // of the 415 MB field: 49 ms at one thread's speed under load).
            map_jobs(pieces, nt, |(row, piece)| self.read_chunks(&plan.piece(d, row), piece, 1))?;
            return Ok(());
        }
        self.read_chunks(plan, out, nt)
    }

    fn read_chunks(&self, plan: &SlicePlan, out: &mut [u8], nt: usize) -> Result<()> {
        let chunks = plan.chunks(&self.geom);
        let copier = Copier::new(&self.geom, plan);
        let zero_block = vec![0u8; self.geom.block_bytes()];
        if nt <= 1 || chunks.len() <= 1 {
            // This thread's decode buffer, reused across calls: parallel reads call this
            // once per row of chunks, and a fresh chunk-sized buffer each time cost more in
            // page faults than the decoding.
            let mut buf = DECODE_BUF.with(std::cell::Cell::take);
            for (n, parts) in &chunks {
                let f = self.fetch(*n, plan, parts, nt, buf)?;
                buf = self.scatter(&copier, parts, f, &zero_block, out);
            }
            if buf.capacity() <= 64 << 20 {
                DECODE_BUF.with(|c| c.set(buf));
            }
            return Ok(());
        }
        // Pipeline: the pool decodes up to `window` chunks ahead while this thread copies
        // each finished one into place (in any order: chunks write disjoint items).
        let window = nt * 2;
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Fetched>)>();
        pool(nt).in_place_scope(|scope| {
            let spawn = |k: usize, buf: Vec<u8>| {
                let tx = tx.clone();
                let (n, parts) = &chunks[k];
                scope.spawn(move |_| {
                    let _ = tx.send((k, self.fetch(*n, plan, parts, 1, buf)));
                });
            };
            let mut next = 0;
            while next < chunks.len().min(window) {
                spawn(next, Vec::new());
                next += 1;
            }
            let mut first_err = None;
            for _ in 0..chunks.len() {
                let (k, f) = rx.recv().expect("a decode job always reports");
                let buf = match f {
                    Ok(f) if first_err.is_none() => self.scatter(&copier, &chunks[k].1, f, &zero_block, out),
                    Ok(f) => f.into_buffer(),
                    Err(e) => {
                        first_err.get_or_insert(e);
                        Vec::new()
                    }
                };
                if next < chunks.len() && first_err.is_none() {
                    spawn(next, buf);
                    next += 1;
                } else if next < chunks.len() {
                    // Stop issuing work; account for the jobs never spawned.
                    break;
                }
            }
            first_err.map_or(Ok(()), Err)
        })
    }

    /// Chunk `n` checked against the geometry (its uncompressed size).
    fn checked_chunk(&self, n: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        let c = self.schunk.get_chunk(n as usize)?;
        self.check_chunk(n, &c)?;
        Ok(c)
    }

    /// Run `f` on chunk `n` checked against the geometry, read through the frame's reused
    /// per-thread buffer ([`SChunk::with_chunk`]).
    fn with_checked_chunk<R>(&self, n: u64, f: impl FnOnce(&[u8]) -> Result<R>) -> Result<R> {
        self.schunk.with_chunk(n as usize, |c| {
            self.check_chunk(n, c)?;
            f(c)
        })
    }

    /// Chunk `n`'s header says it holds a whole chunk of the geometry.
    fn check_chunk(&self, n: u64, c: &[u8]) -> Result<()> {
        let h = ChunkHeader::parse(c).map_err(|source| oxblosc_frame::Error::Chunk {
            chunk: oxblosc_frame::ChunkId::Data(n as usize),
            source,
        })?;
        if h.nbytes != self.geom.chunk_bytes() {
            return Err(Error::BadChunk {
                chunk: n,
                reason: format!("holds {} bytes, the geometry needs {}", h.nbytes, self.geom.chunk_bytes()),
            });
        }
        Ok(())
    }

    /// Decode what the selection needs of chunk `n` into `buf` (reused, resized as needed).
    fn fetch(
        &self,
        n: u64,
        plan: &SlicePlan,
        parts: &[&DimChunk],
        nthreads: usize,
        mut buf: Vec<u8>,
    ) -> Result<Fetched> {
        let blocks = plan.blocks_of(&self.geom, parts);
        if blocks.len() * 2 <= self.geom.blocks_per_chunk
            && self.schunk.reads_from_files()
            && self.fetch_part_from_file(n, &blocks, nthreads, &mut buf)?
        {
            return Ok(Fetched::Listed(buf));
        }
        self.with_checked_chunk(n, |c| {
            let err = |source| oxblosc_frame::Error::Chunk { chunk: oxblosc_frame::ChunkId::Data(n as usize), source };
            let h = ChunkHeader::parse(c).map_err(err)?;
            let special = h.special().map_err(err)?;
            if matches!(special, SpecialKind::Zeros | SpecialKind::Uninit) {
                return Ok(Fetched::Zeros(buf));
            }
            let bb = self.geom.block_bytes();
            let counted = if special == SpecialKind::None { 1 } else { 0 };
            // Decoding overwrites every byte it is given: no need to clear a reused buffer.
            if blocks.len() * 2 > self.geom.blocks_per_chunk {
                buf.resize(self.geom.chunk_bytes(), 0);
                let ctx = self.schunk.chunk_context();
                oxblosc_chunk::decompress_into_with(c, &mut buf, &DParams { nthreads }, ctx).map_err(err)?;
                self.decoded_blocks.fetch_add(counted * self.geom.blocks_per_chunk as u64, Ordering::Relaxed);
                return Ok(Fetched::Whole(buf));
            }
            let ranges: Vec<(usize, usize)> = blocks.iter().map(|&b| (b * bb, (b + 1) * bb)).collect();
            buf.resize(blocks.len() * bb, 0);
            oxblosc_chunk::decompress_ranges_with(c, &ranges, &mut buf, nthreads, self.schunk.chunk_context())
                .map_err(err)?;
            self.decoded_blocks.fetch_add(counted * blocks.len() as u64, Ordering::Relaxed);
            Ok(Fetched::Listed(buf))
        })
    }

    /// [`Self::fetch`] of a few `blocks` of chunk `n` stored in a frame file, reading only
    /// what they need: the chunk's header and block-offset table, then each block's stream,
    /// placed at its own offset in a per-thread copy of the stored chunk (the bytes between
    /// are never read by the decoder), decoded into `out` (the k-th block at `k *
    /// block_bytes`). A slice needing 2 of a chunk's 33 blocks read the whole 4 MB chunk
    /// before (python-blosc2 reads the blocks only). Returns false, having decoded nothing,
    /// when the chunk is not read from a frame file this way (see
    /// `SChunk::read_stored_part`), is special, or has a layout that is read whole
    /// (memcpyed, variable-length blocks, a dictionary, a block table that does not add up:
    /// the whole read reports what is wrong).
    fn fetch_part_from_file(&self, n: u64, blocks: &[usize], nthreads: usize, out: &mut Vec<u8>) -> Result<bool> {
        let mut stored = PART_BUF.with(std::cell::Cell::take);
        let r = self.read_blocks_stored(n, blocks, &mut stored);
        let r = match r {
            Ok(true) => {
                let bb = self.geom.block_bytes();
                let ranges: Vec<(usize, usize)> = blocks.iter().map(|&b| (b * bb, (b + 1) * bb)).collect();
                out.resize(blocks.len() * bb, 0);
                oxblosc_chunk::decompress_ranges_with(&stored, &ranges, out, nthreads, self.schunk.chunk_context())
                    .map(|_| {
                        self.decoded_blocks.fetch_add(blocks.len() as u64, Ordering::Relaxed);
                        self.read_in_part.fetch_add(1, Ordering::Relaxed);
                        true
                    })
                    .map_err(|source| {
                        let chunk = oxblosc_frame::ChunkId::Data(n as usize);
                        oxblosc_frame::Error::Chunk { chunk, source }.into()
                    })
            }
            other => other,
        };
        if stored.capacity() <= 64 << 20 {
            PART_BUF.with(|c| c.set(stored));
        }
        r
    }

    /// The header, block table and `blocks`' streams of stored chunk `n` into `stored`, at
    /// their offsets in the chunk (see [`Self::fetch_part_from_file`]); false when that does
    /// not apply.
    fn read_blocks_stored(&self, n: u64, blocks: &[usize], stored: &mut Vec<u8>) -> Result<bool> {
        const HEAD: usize = 32;
        let nb = self.geom.blocks_per_chunk;
        let table = HEAD + 4 * nb;
        if stored.len() < table {
            stored.resize(table, 0);
        }
        let Some(got) = self.schunk.read_stored_part(n as usize, 0, &mut stored[..table])? else {
            return Ok(false);
        };
        let Ok(h) = ChunkHeader::parse_head(&stored[..got]) else { return Ok(false) };
        let plain = matches!(h.special(), Ok(SpecialKind::None))
            && h.header_len() == HEAD
            && h.nbytes == self.geom.chunk_bytes()
            && h.nblocks() == nb
            && !(h.is_memcpyed() || h.is_vlblocks() || h.uses_dict());
        if !plain || got < table || h.cbytes < table {
            return Ok(false);
        }
        let starts: Vec<usize> = stored[HEAD..table]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .collect();
        let mut sorted = starts.clone();
        sorted.sort_unstable();
        // A block's stream runs to the next block's start (or the chunk's end).
        let mut ranges: Vec<(usize, usize)> = blocks
            .iter()
            .map(|&b| {
                let a = starts[b];
                (a, sorted.get(sorted.partition_point(|&x| x <= a)).copied().unwrap_or(h.cbytes))
            })
            .collect();
        if ranges.iter().any(|&(a, e)| a < table || e > h.cbytes || a >= e) {
            return Ok(false);
        }
        ranges.sort_unstable();
        ranges.dedup();
        stored.resize(h.cbytes, 0); // (only grows the reused buffer: stale bytes are never read)
        let mut k = 0;
        while k < ranges.len() {
            // Adjacent streams in one read.
            let (a, mut e) = ranges[k];
            while k + 1 < ranges.len() && ranges[k + 1].0 == e {
                k += 1;
                e = ranges[k].1;
            }
            if self.schunk.read_stored_part(n as usize, a as u64, &mut stored[a..e])? != Some(e - a) {
                return Ok(false);
            }
            k += 1;
        }
        Ok(true)
    }

    /// Copy a fetched chunk's selected items into `out`; returns the buffer for reuse.
    fn scatter(&self, copier: &Copier<'_>, parts: &[&DimChunk], f: Fetched, zero: &[u8], out: &mut [u8]) -> Vec<u8> {
        let bb = self.geom.block_bytes();
        match &f {
            Fetched::Zeros(_) => for_each_runs(parts, |runs, _| copier.read(runs, zero, out)),
            Fetched::Whole(b) => {
                let bgrid = &self.geom.bgrid;
                for_each_runs(parts, |runs, _| {
                    let id = block_id(runs, bgrid);
                    copier.read(runs, &b[id * bb..(id + 1) * bb], out)
                });
            }
            Fetched::Listed(b) => for_each_runs(parts, |runs, k| copier.read(runs, &b[k * bb..(k + 1) * bb], out)),
        }
        f.into_buffer()
    }

    // ------------------------------------------------------------------ writing

    /// Write `data` (C-order bytes of the selection's shape) into the hyperslab `sel`:
    /// every chunk it touches, or (on an error) none of them.
    pub fn set_slice(&mut self, sel: &[DimSlice], data: &[u8]) -> Result<()> {
        self.atomically(|a| a.set_slice_inner(sel, data))
    }

    fn set_slice_inner(&mut self, sel: &[DimSlice], data: &[u8]) -> Result<()> {
        let need = self.sel_bytes(sel)?;
        let plan = self.geom.plan(sel)?;
        if data.len() != need {
            return Err(Error::param("data", format!("{} bytes given, the selection has {need}", data.len())));
        }
        self.write_plan(&plan, Some(data))
    }

    // -------------------------------------------------- encoding ahead of a commit

    /// Compress `data` (C-order bytes of `sel`) into its chunk without writing anything, when
    /// `sel` is exactly one whole chunk (its part inside the array, step 1) and no tuner is
    /// set; None otherwise. Needs only `&self`: writers holding a shared handle (Dask tasks
    /// in threads) or a locked file (writer processes) compress side by side and take the
    /// exclusive lock only for [`Self::commit_encoded`]. Before this, a locked writer
    /// compressed under the frame's exclusive lock, so two writer processes compressed one
    /// at a time.
    pub fn encode_chunk(&self, sel: &[DimSlice], data: &[u8]) -> Result<Option<EncodedChunk>> {
        if self.schunk.tuner().is_some() || data.len() != self.sel_bytes(sel)? {
            return Ok(None);
        }
        let plan = self.geom.plan(sel)?;
        let chunks = plan.chunks(&self.geom);
        let [(n, parts)] = chunks.as_slice() else { return Ok(None) };
        if !self.geom.covers_chunk(&plan, parts) {
            return Ok(None);
        }
        let mut cp = self.schunk.cparams().clone();
        cp.blocksize = self.geom.block_bytes();
        let built = self.build_chunk(&plan, *n, parts, Some(data), &cp, self.nthreads)?;
        Ok(built.map(|(n, chunk)| EncodedChunk { n, geom: self.geom.clone(), chunk }))
    }

    /// Store a chunk from [`Self::encode_chunk`] as one commit (a locked writer catches up
    /// with other writers first). Returns false, changing nothing, when the array's geometry
    /// is no longer the one it was encoded for (another handle resized it): the caller then
    /// writes the data the usual way.
    pub fn commit_encoded(&mut self, enc: EncodedChunk) -> Result<bool> {
        self.atomically(|a| {
            if a.geom != enc.geom || enc.n as usize >= a.schunk.nchunks() {
                return Ok(false);
            }
            a.schunk.update_chunk_shared(enc.n as usize, enc.chunk)?;
            Ok(true)
        })
    }

    /// Write zeros into the hyperslab, leaving chunks that are already zero untouched.
    fn zero_slice(&mut self, sel: &[DimSlice]) -> Result<()> {
        let plan = self.geom.plan(sel)?;
        self.write_plan(&plan, None)
    }

    fn write_plan(&mut self, plan: &SlicePlan, data: Option<&[u8]>) -> Result<()> {
        let chunks = plan.chunks(&self.geom);
        let mut cp = self.schunk.cparams().clone();
        cp.blocksize = self.geom.block_bytes();
        let nt = self.nthreads;
        // Batches bound the compressed chunks held before they are stored. A per-chunk tuner
        // sees the chunks one at a time, in order (its picks then do not depend on timing).
        // A file stores each batch as it comes, so there batches stay near WRITE_BATCH bytes:
        // chunks too large for one per thread are built one at a time (each with every
        // thread), then stored. In memory every chunk is kept anyway: one parallel pass
        // builds them all, so the threads never wait for each other between batches (under
        // a loaded machine each such wait is a trip through the run queue).
        let file = self.schunk.reads_from_files();
        let cb = self.geom.chunk_bytes().max(1);
        let one_by_one = file && cb.saturating_mul(nt) > WRITE_BATCH;
        let sequential = nt <= 1 || self.schunk.tuner().is_some() || one_by_one;
        let per_batch = match (file, sequential) {
            (true, true) => 1,
            (true, false) => (WRITE_BATCH / cb).clamp(nt, nt * 4),
            (false, true) => nt * 4,
            (false, false) => chunks.len().max(1),
        };
        for batch in chunks.chunks(per_batch) {
            self.write_batches.fetch_add(1, Ordering::Relaxed);
            let built: Vec<Option<NewChunk>> = if sequential || batch.len() <= 1 {
                batch
                    .iter()
                    .map(|(n, parts)| self.build_chunk(plan, *n, parts, data, &cp, nt))
                    .collect::<Result<_>>()?
            } else {
                // On the pool's threads, not with the caller working too (`map_jobs`, as reads
                // do): chunks built on the calling thread (Python's main thread) took 2-4x the
                // page faults for their memory (glibc's main heap there), 40% more CPU for an
                // 830 MB `asarray`.
                pool(nt).install(|| {
                    batch
                        .par_iter()
                        .map(|(n, parts)| self.build_chunk(plan, *n, parts, data, &cp, 1))
                        .collect::<Result<_>>()
                })?
            };
            for r in built {
                match r {
                    // A chunk past the last one (only while `from_buffer_appending` builds
                    // the array, in chunk order) is appended: a file stores it right away.
                    Some((n, c)) if n as usize == self.schunk.nchunks() => {
                        self.schunk.append_chunk_shared(c)?;
                    }
                    Some((n, c)) => {
                        self.schunk.update_chunk_shared(n as usize, c)?;
                    }
                    None => {}
                }
            }
        }
        Ok(())
    }

    /// The new compressed bytes of chunk `n` after writing `data` (None: zeros) into the
    /// part `parts` of the selection; None when nothing changes (zeros into a zero chunk).
    fn build_chunk(
        &self,
        plan: &SlicePlan,
        n: u64,
        parts: &[&DimChunk],
        data: Option<&[u8]>,
        cp: &oxblosc_chunk::CParams,
        threads: usize,
    ) -> Result<Option<NewChunk>> {
        let covers = self.geom.covers_chunk(plan, parts);
        let old = if covers { None } else { Some(self.checked_chunk(n)?) };
        if data.is_none() {
            if let Some(c) = &old {
                if matches!(ChunkHeader::parse(c)?.special()?, SpecialKind::Zeros | SpecialKind::Uninit) {
                    return Ok(None);
                }
            }
        }
        if covers {
            // The chunk is one range of the source, laid out as stored: compressed from there.
            let direct = data.and_then(|d| d.get(self.geom.chunk_source_range(plan, parts)?));
            if let Some(src) = direct {
                return with_build_buffers(|_, cbuf| self.compress_built(n, src, cbuf, cp, threads)).map(Some);
            }
        }
        with_build_buffers(|buf, cbuf| {
            let cb = self.geom.chunk_bytes();
            if old.is_some() {
                buf.resize(cb, 0); // (decoding overwrites every byte)
            } else if covers && data.is_some() {
                // Every item inside the array is written below: only blocks that reach past
                // its edge need zeros first (a full clear cost a tenth of a write).
                buf.resize(cb, 0);
                self.zero_edge_blocks(n, buf);
            } else {
                buf.clear();
                buf.resize(cb, 0);
            }
            if let Some(c) = &old {
                oxblosc_chunk::decompress_into_with(
                    c,
                    buf,
                    &DParams { nthreads: threads },
                    self.schunk.chunk_context(),
                )?;
            }
            let copier = Copier::new(&self.geom, plan);
            let bb = self.geom.block_bytes();
            let bgrid = &self.geom.bgrid;
            match data {
                Some(d) => for_each_runs(parts, |runs, _| {
                    let id = block_id(runs, bgrid);
                    copier.write(runs, &mut buf[id * bb..(id + 1) * bb], d);
                }),
                None if covers => {}
                None => {
                    // Zero the selected items block by block (no selection-sized buffer).
                    for_each_runs(parts, |runs, _| {
                        let id = block_id(runs, bgrid);
                        copier.zero(runs, &mut buf[id * bb..(id + 1) * bb]);
                    });
                }
            }
            if data.is_none() && covers {
                let c = oxblosc_chunk::special_chunk(SpecialKind::Zeros, buf.len(), self.geom.typesize, None)?;
                return Ok(Some((n, c.into())));
            }
            self.compress_built(n, buf, cbuf, cp, threads).map(Some)
        })
    }

    /// Compress the bytes of chunk `n` (through the tuner, if any) using `cbuf` as room.
    fn compress_built(
        &self,
        n: u64,
        buf: &[u8],
        cbuf: &mut Vec<u8>,
        cp: &oxblosc_chunk::CParams,
        threads: usize,
    ) -> Result<NewChunk> {
        cbuf.resize(oxblosc_chunk::max_compressed_len(buf.len()), 0);
        let tuner = self.schunk.tuner();
        let mut cp = match tuner {
            Some(t) => t.choose(buf, cp),
            None => cp.clone(),
        };
        // The geometry fixes the block size whatever a tuner picks.
        (cp.nthreads, cp.blocksize) = (threads, self.geom.block_bytes());
        let len = oxblosc_chunk::compress_into_with(buf, cbuf, &cp, self.schunk.chunk_context())?;
        if let Some(t) = tuner {
            t.compressed(buf.len(), len);
        }
        Ok((n, std::sync::Arc::from(&cbuf[..len])))
    }

    /// Zero the blocks of chunk `n` that reach past the array's edge (or the chunk's, when
    /// blocks do not divide it): their padding is stored as zeros, like C-Blosc2 does.
    fn zero_edge_blocks(&self, n: u64, buf: &mut [u8]) {
        let g = &self.geom;
        let (start, stop) = g.chunk_region(n);
        let bb = g.block_bytes();
        let mut coords = vec![0u64; g.ndim()];
        for (id, block) in buf.chunks_exact_mut(bb.max(1)).take(g.blocks_per_chunk).enumerate() {
            let mut rest = id as u64;
            for d in (0..g.ndim()).rev() {
                coords[d] = rest % g.bgrid[d];
                rest /= g.bgrid[d];
            }
            if (0..g.ndim()).any(|d| start[d] + (coords[d] + 1) * g.blocks[d] > stop[d]) {
                block.fill(0);
            }
        }
    }

    // ------------------------------------------------------------------ shape changes

    /// Change the shape (same number of dimensions). New items read as zeros; chunks that
    /// stay keep their compressed bytes.
    pub fn resize(&mut self, new_shape: &[u64]) -> Result<()> {
        self.atomically(|a| a.resize_inner(new_shape, true))
    }

    /// Append `data` (C-order rows of `shape[1..]`) along axis 0: the streaming primitive.
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        self.atomically(|a| a.append_inner(data))
    }

    fn append_inner(&mut self, data: &[u8]) -> Result<()> {
        if self.ndim() == 0 {
            return Err(Error::param("append", "a 0-d array has no axis to append along"));
        }
        let row: u64 = self.geom.shape[1..].iter().product::<u64>() * self.geom.typesize as u64;
        if row == 0 {
            return if data.is_empty() {
                Ok(())
            } else {
                Err(Error::param("data", "the array's rows hold no items; nothing can be appended"))
            };
        }
        if !(data.len() as u64).is_multiple_of(row) {
            return Err(Error::param("data", format!("{} bytes is not a whole number of {row}-byte rows", data.len())));
        }
        let k = data.len() as u64 / row;
        let old0 = self.geom.shape[0];
        let mut shape = self.geom.shape.clone();
        shape[0] = old0.checked_add(k).ok_or_else(|| Error::param("data", "shape overflows"))?;
        self.resize_inner(&shape, false)?;
        let mut sel = self.full_selection();
        sel[0] = DimSlice::new(old0, shape[0], 1);
        self.set_slice_inner(&sel, data)
    }

    /// Run `f` (several chunk and metalayer changes) as one commit of the super-chunk: on
    /// any error neither the file nor this handle (shape included) changes.
    fn atomically<T>(&mut self, f: impl FnOnce(&mut NdArray) -> Result<T>) -> Result<T> {
        let geom = self.geom.clone();
        let stand_in = SChunk::new(self.schunk.cparams().clone(), self.schunk.dparams().clone())?;
        let mut s = std::mem::replace(&mut self.schunk, stand_in);
        // `batch` hands the super-chunk back inside its transaction; `f` works on it through
        // `self`, and it is returned to `batch` to commit or roll back.
        let mut err = None;
        let r = s.batch(|s| {
            std::mem::swap(s, &mut self.schunk);
            // A locked writer's batch starts by catching up with other writers' commits.
            let r = if self.schunk.is_locked() { self.reload().and_then(|()| f(self)) } else { f(self) };
            std::mem::swap(s, &mut self.schunk);
            r.map_err(|e| match e {
                Error::Frame(e) => e,
                other => {
                    err = Some(other);
                    oxblosc_frame::Error::InvalidParam { name: "nd", reason: "operation failed".into() }
                }
            })
        });
        self.schunk = s;
        if r.is_err() && self.reload().is_err() {
            self.geom = geom; // (the rolled-back super-chunk always parses; belt and braces)
        }
        match (r, err) {
            (Ok(v), _) => Ok(v),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(e.into()),
        }
    }

    fn resize_inner(&mut self, new_shape: &[u64], zero_new: bool) -> Result<()> {
        let old = self.geom.clone();
        if new_shape.len() != old.ndim() {
            return Err(Error::param("shape", format!("{} dimensions, the array has {}", new_shape.len(), old.ndim())));
        }
        if old.chunks.iter().zip(new_shape).any(|(&c, &s)| c == 0 && s != 0) {
            return Err(Error::param("shape", "an axis with chunk length 0 cannot grow"));
        }
        if old.ndim() == 0 {
            return Ok(());
        }
        let new = Geometry::new(new_shape, &old.chunks, &old.blocks, old.typesize)?;
        self.clear_cut_cells(&new)?;
        let prefix_only = old.grid[1..] == new.grid[1..] || old.nchunks == 0;
        let (on, nn) = (old.nchunks as usize, new.nchunks as usize);
        if prefix_only {
            // Chunk numbers of the chunks that stay do not change.
            for i in (nn..on).rev() {
                self.schunk.delete_chunk(i)?;
            }
            self.geom = new;
            if nn > on {
                self.fill_chunks((nn - on) as u64, &Fill::Zeros)?;
            }
        } else if old.grid.iter().zip(&new.grid).any(|(a, b)| a < b)
            && old.grid.iter().zip(&new.grid).any(|(a, b)| a > b)
        {
            // One axis gains chunks and another loses some: shrink to the common part first,
            // then grow, so that each step moves chunks in one direction only (below).
            let common: Vec<u64> = old.shape.iter().zip(new_shape).map(|(&a, &b)| a.min(b)).collect();
            self.resize_inner(&common, zero_new)?;
            return self.resize_inner(new_shape, zero_new);
        } else {
            // Chunk (c) moves from its old number to its new one, one chunk in memory at a
            // time (a file-backed array may be far larger than memory). Growing moves chunks to
            // higher numbers: go from the last down, each source is read before it is
            // overwritten. Shrinking moves them lower: go up, then cut the tail.
            let zero = oxblosc_chunk::special_chunk(SpecialKind::Zeros, new.chunk_bytes(), new.typesize, None)?;
            let grows = nn >= on;
            if grows {
                for _ in on..nn {
                    self.schunk.append_chunk(&zero)?;
                }
            }
            let order: Box<dyn Iterator<Item = usize>> = if grows { Box::new((0..nn).rev()) } else { Box::new(0..nn) };
            for i in order {
                let c = new.chunk_coords(i as u64);
                if c.iter().zip(&old.grid).all(|(&c, &g)| c < g) {
                    let from = old.chunk_index(&c) as usize;
                    if from != i {
                        let bytes = self.schunk.get_chunk(from)?.into_owned();
                        self.schunk.update_chunk(i, &bytes)?;
                    }
                } else if i < on {
                    self.schunk.update_chunk(i, &zero)?;
                }
            }
            for i in (nn..on).rev() {
                self.schunk.delete_chunk(i)?;
            }
            self.geom = new;
        }
        self.write_meta()?;
        if zero_new {
            // Parts of kept edge chunks that were padding (or cut off by a shrink) are now
            // inside the array: make them zeros.
            for d in 0..old.ndim() {
                let edge = old.grid[d] * old.chunks[d];
                let (lo, hi) = (old.shape[d], self.geom.shape[d].min(edge));
                if lo >= hi {
                    continue;
                }
                let sel: Vec<DimSlice> = (0..old.ndim())
                    .map(|e| {
                        if e == d {
                            DimSlice::new(lo, hi, 1)
                        } else {
                            DimSlice::new(0, self.geom.shape[e].min(old.grid[e] * old.chunks[e]), 1)
                        }
                    })
                    .collect();
                self.zero_slice(&sel)?;
            }
        }
        Ok(())
    }

    /// Cells that shrinking to `new` cuts off inside chunks that stay become padding. C-Blosc2
    /// does not clear padding when it grows an array, so a file shrunk here and grown by
    /// python-blosc2 would show the old values again (as its own files do): clear them while
    /// they are still inside the array. Only the chunks on the new edge are rewritten.
    fn clear_cut_cells(&mut self, new: &Geometry) -> Result<()> {
        let old = self.geom.clone();
        let kept: Vec<u64> = (0..old.ndim()).map(|e| old.shape[e].min(new.grid[e] * old.chunks[e])).collect();
        for d in 0..old.ndim() {
            let (lo, hi) = (new.shape[d], kept[d]);
            if lo >= hi || kept.contains(&0) {
                continue;
            }
            let sel: Vec<DimSlice> = (0..old.ndim())
                .map(|e| DimSlice::new(if e == d { lo } else { 0 }, if e == d { hi } else { kept[e] }, 1))
                .collect();
            self.zero_slice(&sel)?;
        }
        Ok(())
    }

    fn write_meta(&mut self) -> Result<()> {
        let mut bytes = self.geom.to_meta(self.dtype.as_deref()).encode();
        let old_len = self.schunk.meta(self.meta_name).map_or(0, <[u8]>::len);
        if self.dtype.is_none() && old_len + 9 == bytes.len() {
            // A metalayer without dtype (legacy caterva): keep its 5-entry form.
            bytes.truncate(old_len);
            bytes[0] = 0x95;
        }
        self.schunk.update_meta(self.meta_name, &bytes)?;
        Ok(())
    }

    /// Append `n` chunks of `fill` as special chunks.
    fn fill_chunks(&mut self, n: u64, fill: &Fill) -> Result<()> {
        let cb = self.geom.chunk_bytes();
        if n == 0 || cb == 0 {
            return Ok(());
        }
        let ts = self.geom.typesize as u64;
        let nitems = n.checked_mul(cb as u64 / ts).ok_or_else(|| Error::param("shape", "too many items"))?;
        let value = match fill {
            Fill::Zeros => SpecialValue::Zeros,
            Fill::Uninit => SpecialValue::Uninit,
            Fill::Nan => SpecialValue::Nan,
            Fill::Value(v) => SpecialValue::Value(v.clone()),
        };
        self.schunk.fill_special(nitems, value, Some(cb))?;
        Ok(())
    }

    // ------------------------------------------------------------------ persistence

    /// The array as an in-memory contiguous frame.
    pub fn to_cframe(&self) -> Result<Vec<u8>> {
        Ok(self.schunk.to_cframe()?)
    }

    /// Write the array to `path` (a frame file, or a sparse directory when not contiguous).
    pub fn save(&self, path: impl AsRef<std::path::Path>, contiguous: bool) -> Result<()> {
        Ok(self.schunk.save(path, contiguous)?)
    }
}

/// Uncompressed bytes of the chunks one write batch builds before storing them in a file.
const WRITE_BATCH: usize = 8 << 20;

thread_local! {
    /// Per-thread buffer for decoded chunks of reads (taken out while in use).
    static DECODE_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Per-thread stand-in for stored chunks read in part (`fetch_part_from_file`).
    static PART_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Per-thread (uncompressed, compressed) buffers for building chunks, reused across
    /// chunks and calls: fresh multi-megabyte buffers cost more in page faults than the work.
    static BUILD: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = Default::default();
}

fn with_build_buffers<R>(f: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>) -> R) -> R {
    BUILD.with(|cell| match cell.try_borrow_mut() {
        Ok(mut b) => {
            let (buf, cbuf) = &mut *b;
            let r = f(buf, cbuf);
            // Huge chunks are not kept around between calls.
            for v in [buf, cbuf] {
                if v.capacity() > 64 << 20 {
                    *v = Vec::new();
                }
            }
            r
        }
        Err(_) => f(&mut Vec::new(), &mut Vec::new()),
    })
}

/// Linear index (C order over the block grid) of the block a combination of runs lies in.
fn block_id(runs: &[&BlockRun], bgrid: &[u64]) -> usize {
    runs.iter().zip(bgrid).fold(0usize, |acc, (r, &n)| acc * n as usize + r.block as usize)
}

/// Visit every combination of block runs of a chunk's parts (in plan order), with its
/// position `k` in that order.
fn for_each_runs(parts: &[&DimChunk], mut f: impl FnMut(&[&BlockRun], usize)) {
    let lists: Vec<&[BlockRun]> = parts.iter().map(|p| p.runs.as_slice()).collect();
    let mut k = 0;
    for_each_product(&lists, |runs| {
        f(runs, k);
        k += 1;
    });
}
