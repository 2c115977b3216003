//! Lazy array expressions computed into a new array, chunk by chunk, without leaving Rust.
//!
//! When every array operand has the result's geometry (shape, chunks, blocks; item sizes may
//! differ), block `k` of chunk `n` holds the same items in all of them. So for each chunk of
//! the result, each block of every operand is decoded on its own (the operands' blocks and
//! the engine's temporaries stay in cache), the program runs over it straight into the
//! result chunk's block, and the finished chunk is compressed whole. One worker per thread
//! of the chunk engine's pool claims chunks in order and builds each alone (the blocks of
//! the last chunk are evaluated by all of them); the compressed chunks replace the result's
//! chunks in order, as one commit of its super-chunk. Memory: the operands' compressed chunks plus
//! a chunk buffer and a compressed-chunk buffer per worker (kept for the next call).
//!
//! Padding items (outside the array, in edge chunks and blocks) are written as zeros and the
//! program never sees them, so garbage in another writer's padding cannot raise errors.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use oxblosc_chunk::{parallel::pool, ChunkContext, ChunkHeader};
use oxblosc_expr::{ColumnMut, ColumnRef, ExprError, Program};
use oxblosc_nd::{Geometry, NdArray};
use rayon::prelude::*;

/// An operand of [`compute_into`]: an array with the result's geometry, or one value
/// broadcast to every item (a one-row column).
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    Array(&'a NdArray),
    Scalar(ColumnRef<'a>),
    /// An array in memory (C order, native item type), with the result's number of
    /// dimensions and each length the result's or 1 (broadcast along that axis): a NumPy
    /// operand, or a small array of another shape or geometry. Each block of it is gathered
    /// from these bytes as the blocks of stored operands are decoded.
    Dense {
        bytes: &'a [u8],
        dims: &'a [u64],
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    #[error(transparent)]
    Nd(#[from] oxblosc_nd::Error),
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// The operands or the output do not fit the program or each other.
    #[error("{0}")]
    Mismatch(String),
}

impl From<oxblosc_frame::Error> for ComputeError {
    fn from(e: oxblosc_frame::Error) -> Self {
        ComputeError::Nd(e.into())
    }
}

impl From<oxblosc_chunk::Error> for ComputeError {
    fn from(e: oxblosc_chunk::Error) -> Self {
        ComputeError::Nd(e.into())
    }
}

type Result<T> = std::result::Result<T, ComputeError>;

thread_local! {
    /// Decoded operand blocks, reused by each worker across blocks and calls.
    static BLOCKS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Evaluate `prog` (inputs in the order of `prog.inputs()`, given as `operands`) into every
/// chunk of `out`, with `nthreads` threads. On any error `out` is left as it was.
pub fn compute_into(prog: &Program, operands: &[Operand<'_>], out: &mut NdArray, nthreads: usize) -> Result<()> {
    let geom = out.geometry().clone();
    check(prog, operands, &geom, out.typesize())?;
    let nt = nthreads.max(1);
    let mut cp = out.schunk().cparams().clone();
    cp.blocksize = geom.block_bytes();
    // Each chunk is compressed by the thread that built it (a lone chunk: by all of them).
    cp.nthreads = if geom.nchunks == 1 { nt } else { 1 };
    let ctx = out.schunk().chunk_context().clone();
    compute_workers(prog, operands, out, nt, &geom, &cp, &ctx)
}

/// Work buffers larger than this (a chunk) are not kept between calls.
const WORK_KEEP_LIMIT: usize = 64 << 20;

thread_local! {
    /// A worker's chunk and compressed-chunk buffers, kept for the next compute: fresh
    /// chunk-sized buffers cost a page fault per 4 KiB page at every call.
    static WORK: std::cell::Cell<(Vec<u8>, Vec<u8>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// What the workers of [`compute_workers`] share: the super-chunk being written, the
/// compressed chunks finished ahead of their turn, and the next chunk to store.
struct Store<'s> {
    schunk: &'s mut oxblosc_frame::SChunk,
    ahead: BTreeMap<u64, Arc<[u8]>>,
    next: u64,
    failure: Option<(u64, ComputeError)>,
}

fn compute_workers(
    prog: &Program,
    operands: &[Operand<'_>],
    out: &mut NdArray,
    nt: usize,
    geom: &Geometry,
    cp: &oxblosc_chunk::CParams,
    ctx: &ChunkContext,
) -> Result<()> {
    let nchunks = geom.nchunks;
    let claim = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut failure = None;
    let stored = out.schunk_mut().batch(|s| {
        // `nt` workers claim chunks in order and each builds its chunk alone (evaluate every
        // block, compress), so no thread ever waits on another: no barrier per chunk, no
        // idle thread behind a stolen job. Chunks are stored in order by whichever worker
        // finishes the next one to store. Memory: one result chunk and one compressed chunk
        // per worker, plus chunks finished ahead (at most one per worker).
        let store = Mutex::new(Store { schunk: s, ahead: BTreeMap::new(), next: 0, failure: None });
        // The last chunk is evaluated block-parallel: a worker with no chunk left to claim
        // helps with it instead of idling. (It is compressed by one thread still: a parallel
        // compression would add the engine's chunk-sized staging area to the peak memory.)
        pool(nt).scope(|sc| {
            for _ in 0..nt.min(nchunks as usize) {
                sc.spawn(|_| {
                    let (mut chunk, mut packed) = WORK.take();
                    while !stop.load(Ordering::Relaxed) {
                        let n = claim.fetch_add(1, Ordering::Relaxed);
                        if n >= nchunks {
                            break;
                        }
                        let last = n + 1 == nchunks;
                        let built = eval_chunk(prog, operands, geom, n, &mut chunk, last)
                            .and_then(|_| compress_chunk(&chunk, &mut packed, cp, ctx));
                        let mut st = store.lock().unwrap_or_else(|e| e.into_inner());
                        let r = built.and_then(|len| {
                            let st = &mut *st;
                            if n == st.next {
                                // Its turn: stored straight from the work buffer (a file
                                // writes it out; only memory storage copies it).
                                st.schunk.update_chunk(n as usize, &packed[..len])?;
                                st.next += 1;
                            } else {
                                st.ahead.insert(n, Arc::from(&packed[..len]));
                            }
                            while let Some(c) = st.ahead.remove(&st.next) {
                                st.schunk.update_chunk_shared(st.next as usize, c)?;
                                st.next += 1;
                            }
                            Ok(())
                        });
                        if let Err(e) = r {
                            stop.store(true, Ordering::Relaxed);
                            // The error of the first chunk in order (as one thread would see).
                            if !matches!(&st.failure, Some(f) if f.0 < n) {
                                st.failure = Some((n, e));
                            }
                        }
                    }
                    if chunk.capacity() <= WORK_KEEP_LIMIT {
                        WORK.set((chunk, packed));
                    }
                });
            }
        });
        let st = store.into_inner().unwrap_or_else(|e| e.into_inner());
        match st.failure {
            None => Ok(()),
            Some((_, e)) => {
                failure = Some(e);
                Err(oxblosc_frame::Error::InvalidParam { name: "expr", reason: "a chunk failed".into() })
            }
        }
    });
    match (stored, failure) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(e.into()),
    }
}

/// `chunk` compressed into `packed` (kept from chunk to chunk); returns its length.
fn compress_chunk(
    chunk: &[u8],
    packed: &mut Vec<u8>,
    cp: &oxblosc_chunk::CParams,
    ctx: &ChunkContext,
) -> Result<usize> {
    // The compressed buffer starts zeroed by the allocator, so its unused tail costs no memory.
    let max = oxblosc_chunk::max_compressed_len(chunk.len());
    if packed.len() < max {
        *packed = vec![0; max];
    }
    Ok(oxblosc_chunk::compress_into_with(chunk, packed, cp, ctx)?)
}

/// Chunk `n` of the result, evaluated block by block (in parallel or not) into `chunk`.
fn eval_chunk(
    prog: &Program,
    operands: &[Operand<'_>],
    geom: &Geometry,
    n: u64,
    chunk: &mut Vec<u8>,
    parallel: bool,
) -> Result<()> {
    let chunks = operand_chunks(operands, n)?;
    let origin = chunk_origin(geom, n);
    // Every byte is written below (results or zero padding): no need to clear.
    chunk.resize(geom.chunk_bytes(), 0);
    let block = |(k, out): (usize, &mut [u8])| eval_block(prog, operands, &chunks, geom, &origin, n, k, out);
    match parallel {
        true => chunk.par_chunks_mut(geom.block_bytes()).enumerate().try_for_each(block),
        false => chunk.chunks_mut(geom.block_bytes()).enumerate().try_for_each(block),
    }
}

/// The compressed chunk `n` of each array operand (None for scalars), checked to hold a
/// whole chunk of its geometry.
pub(crate) fn operand_chunks<'o>(operands: &[Operand<'o>], n: u64) -> Result<Vec<Option<Cow<'o, [u8]>>>> {
    operands
        .iter()
        .map(|op| match op {
            Operand::Array(a) => {
                let c = a.schunk().get_chunk(n as usize)?;
                let h = ChunkHeader::parse(&c).map_err(|source| oxblosc_frame::Error::Chunk {
                    chunk: oxblosc_frame::ChunkId::Data(n as usize),
                    source,
                })?;
                if h.nbytes != a.geometry().chunk_bytes() {
                    return Err(oxblosc_nd::Error::BadChunk {
                        chunk: n,
                        reason: format!("holds {} bytes, the geometry needs {}", h.nbytes, a.geometry().chunk_bytes()),
                    }
                    .into());
                }
                Ok(Some(c))
            }
            Operand::Scalar(_) | Operand::Dense { .. } => Ok(None),
        })
        .collect()
}

/// The global coordinates of chunk `n`'s first item.
pub(crate) fn chunk_origin(geom: &Geometry, n: u64) -> Vec<u64> {
    geom.chunk_coords(n).iter().zip(&geom.chunks).map(|(c, s)| c * s).collect()
}

/// Block `k` of the result's chunk `n` (at `origin`), into `out` (the block's bytes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn eval_block(
    prog: &Program,
    operands: &[Operand<'_>],
    chunks: &[Option<Cow<'_, [u8]>>],
    geom: &Geometry,
    origin: &[u64],
    n: u64,
    k: usize,
    out: &mut [u8],
) -> Result<()> {
    let runs = valid_runs(geom, origin, k);
    // Zero the padding: the gaps between runs and after the last.
    let size = prog.dtype().itemsize();
    let mut end = 0;
    for &(start, len) in runs.iter().chain([&(geom.block_items, 0)]) {
        out[end * size..start * size].fill(0);
        end = start + len;
    }
    if runs.is_empty() {
        return Ok(());
    }
    with_operand_blocks(operands, chunks, geom, n, k, |blocks| {
        for &(start, len) in &runs {
            eval_run(prog, operands, blocks, start, len, &mut out[start * size..(start + len) * size])?;
        }
        Ok(())
    })
}

/// `f` over block `k` of each array operand (decoded from `chunks`, the operands' chunk
/// `n`, or gathered from a dense operand, into this thread's buffers of the result's
/// geometry `geom`; a scalar's buffer is empty).
pub(crate) fn with_operand_blocks<R>(
    operands: &[Operand<'_>],
    chunks: &[Option<Cow<'_, [u8]>>],
    geom: &Geometry,
    n: u64,
    k: usize,
    f: impl FnOnce(&[Vec<u8>]) -> Result<R>,
) -> Result<R> {
    BLOCKS.with(|cell| {
        let mut held = cell.try_borrow_mut();
        let mut fresh = Vec::new();
        let blocks: &mut Vec<Vec<u8>> = match held.as_deref_mut() {
            Ok(b) => b,
            Err(_) => &mut fresh,
        };
        blocks.resize_with(operands.len(), Vec::new);
        for ((op, c), b) in operands.iter().zip(chunks).zip(blocks.iter_mut()) {
            if let (Operand::Array(a), Some(c)) = (op, c) {
                let bb = a.geometry().block_bytes();
                b.resize(bb, 0);
                oxblosc_chunk::decompress_ranges_with(c, &[(k * bb, (k + 1) * bb)], b, 1, a.schunk().chunk_context())
                    .map_err(|source| oxblosc_frame::Error::Chunk {
                    chunk: oxblosc_frame::ChunkId::Data(n as usize),
                    source,
                })?;
            } else if let Operand::Dense { bytes, dims } = op {
                let size = bytes.len() / dims.iter().product::<u64>().max(1) as usize;
                b.resize(geom.block_items * size, 0);
                if let Some(bx) = crate::reduce::block_box(geom, n, k) {
                    gather_dense(bytes, dims, size, geom, &bx.start, &bx.valid, b);
                }
            }
        }
        f(blocks)
    })
}

/// The block of a dense operand (`bytes` of shape `dims`, `size`-byte items) whose valid part
/// starts at global `start` and spans `valid`, into `out` (laid out as a block of `geom`;
/// items outside the valid part are left as they are: padding nobody reads).
fn gather_dense(
    bytes: &[u8],
    dims: &[u64],
    size: usize,
    geom: &Geometry,
    start: &[u64],
    valid: &[u64],
    out: &mut [u8],
) {
    let nd = dims.len();
    let last = nd - 1;
    // Item strides of the dense array (0 along broadcast axes) and of the block.
    let (mut dstride, mut bstride) = (vec![0usize; nd], vec![1usize; nd]);
    let mut acc = 1usize;
    for d in (0..nd).rev() {
        dstride[d] = if dims[d] == 1 { 0 } else { acc };
        acc *= dims[d] as usize;
        if d < last {
            bstride[d] = bstride[d + 1] * geom.blocks[d + 1] as usize;
        }
    }
    let run = valid[last] as usize;
    let mut idx = vec![0u64; last];
    loop {
        let (mut from, mut to) = (0usize, 0usize);
        for d in 0..last {
            from += (start[d] + idx[d]) as usize * dstride[d];
            to += idx[d] as usize * bstride[d];
        }
        from += start[last] as usize * dstride[last];
        let dst = &mut out[to * size..(to + run) * size];
        if dstride[last] == 0 {
            let one = &bytes[from * size..(from + 1) * size];
            dst.chunks_exact_mut(size).for_each(|c| c.copy_from_slice(one));
        } else {
            dst.copy_from_slice(&bytes[from * size..(from + run) * size]);
        }
        // Next row over the axes before the last (C order).
        let Some(d) = (0..last).rev().find(|&d| idx[d] + 1 < valid[d]) else { break };
        idx[d] += 1;
        idx[d + 1..].fill(0);
    }
}

/// The program over items `start..start + len` of the operands' decoded `blocks`, into
/// `out` (those items' bytes).
pub(crate) fn eval_run(
    prog: &Program,
    operands: &[Operand<'_>],
    blocks: &[Vec<u8>],
    start: usize,
    len: usize,
    out: &mut [u8],
) -> Result<()> {
    let cols: Vec<ColumnRef<'_>> = operands
        .iter()
        .zip(blocks)
        .zip(prog.input_dtypes())
        .map(|((op, b), &dt)| match op {
            Operand::Array(_) | Operand::Dense { .. } => {
                ColumnRef::from_bytes(dt, &b[start * dt.itemsize()..(start + len) * dt.itemsize()])
            }
            Operand::Scalar(c) => Ok(*c),
        })
        .collect::<std::result::Result<_, _>>()?;
    prog.eval_into(&cols, ColumnMut::from_bytes(prog.dtype(), out)?)?;
    Ok(())
}

/// The runs `(first item, items)` of block `k` of the chunk at `origin` that lie inside the
/// array and the chunk, in the block's C order (one run for an interior block; none when
/// the block is all padding).
fn valid_runs(geom: &Geometry, origin: &[u64], k: usize) -> Vec<(usize, usize)> {
    let nd = geom.ndim();
    let mut rest = k as u64;
    let mut valid = vec![0u64; nd];
    for d in (0..nd).rev() {
        let b = rest % geom.bgrid[d];
        rest /= geom.bgrid[d];
        let start = b * geom.blocks[d];
        let in_chunk = geom.chunks[d].saturating_sub(start);
        let in_array = geom.shape[d].saturating_sub(origin[d] + start);
        valid[d] = geom.blocks[d].min(in_chunk).min(in_array);
    }
    if valid.contains(&0) {
        return Vec::new();
    }
    // The last axis cut short; the axes after it are whole, so each run spans them.
    let Some(j) = (0..nd).rev().find(|&d| valid[d] < geom.blocks[d]) else {
        return vec![(0, geom.block_items)];
    };
    let inner: u64 = geom.blocks[j + 1..].iter().product();
    let len = (valid[j] * inner) as usize;
    let mut runs = Vec::new();
    let mut idx = vec![0u64; j];
    loop {
        let start = idx.iter().enumerate().fold(0u64, |acc, (d, &i)| acc * geom.blocks[d] + i) * geom.blocks[j] * inner;
        runs.push((start as usize, len));
        // Next index over the axes before `j` (C order).
        let Some(d) = (0..j).rev().find(|&d| idx[d] + 1 < valid[d]) else { break };
        idx[d] += 1;
        idx[d + 1..].fill(0);
    }
    runs
}

/// Every operand fits: one per program input, arrays of the result's geometry and of the
/// input's item size, scalars of one row; the output holds the program's type.
pub(crate) fn check(prog: &Program, operands: &[Operand<'_>], geom: &Geometry, out_typesize: usize) -> Result<()> {
    let mismatch = |m: String| Err(ComputeError::Mismatch(m));
    if operands.len() != prog.inputs().len() {
        return mismatch(format!("{} operands given, the program reads {}", operands.len(), prog.inputs().len()));
    }
    if out_typesize != prog.dtype().itemsize() {
        return mismatch(format!("the output holds {out_typesize}-byte items, the result is {}", prog.dtype()));
    }
    for ((op, name), dt) in operands.iter().zip(prog.inputs()).zip(prog.input_dtypes()) {
        match op {
            Operand::Array(a) => {
                let g = a.geometry();
                if g.shape != geom.shape || g.chunks != geom.chunks || g.blocks != geom.blocks {
                    return mismatch(format!(
                        "operand '{name}' has shape {:?}, chunks {:?}, blocks {:?}; the output {:?}, {:?}, {:?}",
                        g.shape, g.chunks, g.blocks, geom.shape, geom.chunks, geom.blocks
                    ));
                }
                if a.typesize() != dt.itemsize() {
                    return mismatch(format!("operand '{name}' holds {}-byte items, not {dt}", a.typesize()));
                }
            }
            Operand::Scalar(c) => {
                if c.len() != 1 || c.dtype() != *dt {
                    return mismatch(format!("operand '{name}' must be one {dt} value"));
                }
            }
            Operand::Dense { bytes, dims } => {
                let fits = dims.len() == geom.ndim() && dims.iter().zip(&geom.shape).all(|(&d, &s)| d == 1 || d == s);
                let items = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                if !fits || items.and_then(|i| i.checked_mul(dt.itemsize() as u64)) != Some(bytes.len() as u64) {
                    return mismatch(format!(
                        "operand '{name}' of shape {dims:?} and {} bytes does not broadcast to {:?} as {dt}",
                        bytes.len(),
                        geom.shape
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxblosc_chunk::{CParams, DParams, SpecialKind};
    use oxblosc_expr::{parse, DType};
    use oxblosc_frame::SChunk;
    use oxblosc_nd::Fill;

    // Edge chunks on every axis, and blocks that do not divide the chunks (padding inside
    // chunks too): 7 = 3 + 3 + 1, 10 = 4 + 4 + 2 with blocks of 3 in chunks of 4, ...
    const SHAPE: [u64; 3] = [7, 10, 5];
    const CHUNKS: [u64; 3] = [3, 4, 5];
    const BLOCKS: [u64; 3] = [2, 3, 2];

    fn array(dtype: &str, typesize: usize, data: &[u8]) -> NdArray {
        let cp = CParams { typesize, nthreads: 1, clevel: 5, ..CParams::default() };
        let g = Geometry::new(&SHAPE, &CHUNKS, &BLOCKS, typesize).unwrap();
        NdArray::from_buffer(SChunk::new(cp, DParams { nthreads: 1 }).unwrap(), g, Some(dtype), data).unwrap()
    }

    fn empty(dtype: &str, typesize: usize) -> NdArray {
        let cp = CParams { typesize, nthreads: 1, clevel: 5, ..CParams::default() };
        let g = Geometry::new(&SHAPE, &CHUNKS, &BLOCKS, typesize).unwrap();
        NdArray::create(SChunk::new(cp, DParams { nthreads: 1 }).unwrap(), g, Some(dtype), Fill::Zeros).unwrap()
    }

    fn nitems() -> usize {
        SHAPE.iter().product::<u64>() as usize
    }

    fn f64s(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn i64s(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn program(text: &str, schema: &[(&str, DType)]) -> Program {
        parse(text).unwrap().compile_columns(schema).unwrap()
    }

    /// Every chunk, decoded (padding included).
    fn decoded_chunks(a: &NdArray) -> Vec<Vec<u8>> {
        (0..a.schunk().nchunks()).map(|n| a.schunk().decompress_chunk(n).unwrap()).collect()
    }

    /// Dense operands (a full one, and ones broadcast along each axis and along several)
    /// give the values of the same expression over expanded arrays, in compute (zero
    /// padding as a written array) and in `[:]`; a dense operand of a shape that does not
    /// broadcast, or of the wrong size, is refused.
    #[test]
    fn dense_operands_broadcast_like_numpy() {
        let n = nitems();
        let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let aa = array("<f8", 8, &f64s(&a));
        let full: Vec<f64> = (0..n).map(|i| i as f64 - 3.0).collect();
        let idx = |i: usize| [i / 50, (i / 5) % 10, i % 5];
        for dims in [vec![7u64, 10, 5], vec![1, 10, 1], vec![7, 1, 1], vec![1, 1, 5], vec![7, 10, 1], vec![1, 1, 1]] {
            let stride = [dims[1] * dims[2], dims[2], 1];
            let at = |i: usize| -> f64 {
                let c = idx(i);
                let j: u64 = (0..3).map(|d| if dims[d] == 1 { 0 } else { c[d] as u64 * stride[d] }).sum();
                full[j as usize]
            };
            let m = dims.iter().product::<u64>() as usize;
            let bytes = f64s(&full[..m]);
            let prog = program("a * 2 + d", &[("a", DType::F64), ("d", DType::F64)]);
            let ops = [Operand::Array(&aa), Operand::Dense { bytes: &bytes, dims: &dims }];
            let want: Vec<f64> = (0..n).map(|i| a[i] * 2.0 + at(i)).collect();
            let mut out = empty("<f8", 8);
            compute_into(&prog, &ops, &mut out, 2).unwrap();
            assert_eq!(decoded_chunks(&out), decoded_chunks(&array("<f8", 8, &f64s(&want))), "dims {dims:?}");
            let mut read = vec![0u8; n * 8];
            crate::lazy_read::evaluate_into(&prog, &ops, &mut read, 2).unwrap();
            assert_eq!(read, f64s(&want), "dims {dims:?}");
        }
        let bytes = f64s(&full[..10]);
        let prog = program("a * 2 + d", &[("a", DType::F64), ("d", DType::F64)]);
        for dims in [vec![1u64, 10], vec![1, 5, 2], vec![1, 10, 2]] {
            let ops = [Operand::Array(&aa), Operand::Dense { bytes: &bytes, dims: &dims }];
            let e = compute_into(&prog, &ops, &mut empty("<f8", 8), 1).unwrap_err();
            assert!(matches!(e, ComputeError::Mismatch(ref m) if m.contains("does not broadcast")), "{dims:?}: {e}");
        }
    }

    #[test]
    fn values_and_zero_padding_match_a_written_array() {
        let n = nitems();
        let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 7.0).collect();
        let b: Vec<i32> = (0..n).map(|i| (i as i32 * 7919) % 101 - 50).collect();
        let want: Vec<f64> = a.iter().zip(&b).map(|(x, &y)| (x * 2.0 + y as f64 - 1.5).sin()).collect();
        let (aa, ba) =
            (array("<f8", 8, &f64s(&a)), array("<i4", 4, &b.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()));
        let s = 1.5f64.to_le_bytes();
        let prog = program("sin(a * 2 + b - s)", &[("a", DType::F64), ("b", DType::I32), ("s", DType::F64)]);
        let ops: Vec<Operand<'_>> = prog
            .inputs()
            .iter()
            .map(|n| match n.as_str() {
                "a" => Operand::Array(&aa),
                "b" => Operand::Array(&ba),
                _ => Operand::Scalar(ColumnRef::from_bytes(DType::F64, &s).unwrap()),
            })
            .collect();
        for nthreads in [1, 3] {
            let mut out = empty("<f8", 8);
            compute_into(&prog, &ops, &mut out, nthreads).unwrap();
            // The same engine over the whole array in memory gives the same bits.
            let mut direct = vec![0u8; n * 8];
            let cols = [aa.to_vec().unwrap(), ba.to_vec().unwrap()];
            let refs: Vec<ColumnRef<'_>> = prog
                .inputs()
                .iter()
                .map(|name| match name.as_str() {
                    "a" => ColumnRef::from_bytes(DType::F64, &cols[0]).unwrap(),
                    "b" => ColumnRef::from_bytes(DType::I32, &cols[1]).unwrap(),
                    _ => ColumnRef::from_bytes(DType::F64, &s).unwrap(),
                })
                .collect();
            prog.eval_into(&refs, ColumnMut::from_bytes(DType::F64, &mut direct).unwrap()).unwrap();
            assert_eq!(out.to_vec().unwrap(), direct);
            let got: Vec<f64> = direct.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-12, "{g} vs {w}");
            }
            // Padding is zeros, as in an array written from the same values.
            assert_eq!(decoded_chunks(&out), decoded_chunks(&array("<f8", 8, &direct)));
        }
    }

    #[test]
    fn one_chunk_and_more_threads_than_chunks_give_the_same_array() {
        // One chunk (its blocks in parallel), and 9 chunks with 16 threads (idle workers).
        let n = nitems();
        let v: Vec<f64> = (0..n).map(|i| i as f64 * 0.25).collect();
        let prog = program("a * a - 1", &[("a", DType::F64)]);
        let want: Vec<u8> = f64s(&v.iter().map(|x| x * x - 1.0).collect::<Vec<_>>());
        for chunks in [SHAPE, CHUNKS] {
            let cp = CParams { typesize: 8, nthreads: 1, clevel: 5, ..CParams::default() };
            let g = Geometry::new(&SHAPE, &chunks, &BLOCKS, 8).unwrap();
            let sc = || SChunk::new(cp.clone(), DParams { nthreads: 1 }).unwrap();
            let a = NdArray::from_buffer(sc(), g.clone(), Some("<f8"), &f64s(&v)).unwrap();
            for nthreads in [1, 2, 16] {
                let mut out = NdArray::create(sc(), g.clone(), Some("<f8"), Fill::Zeros).unwrap();
                compute_into(&prog, &[Operand::Array(&a)], &mut out, nthreads).unwrap();
                assert_eq!(out.to_vec().unwrap(), want, "chunks {chunks:?}, {nthreads} threads");
            }
        }
    }

    #[test]
    fn padding_values_never_reach_the_program() {
        // `a ** b` fails for a negative integer exponent: put -1 in b's padding only.
        let n = nitems();
        let aa = array("<i8", 8, &i64s(&vec![3; n]));
        let mut ba = array("<i8", 8, &i64s(&(0..n as i64).map(|i| i % 4 + 1).collect::<Vec<_>>()));
        for c in 0..ba.schunk().nchunks() {
            let mut items = ba.schunk().decompress_chunk(c).unwrap();
            for item in items.chunks_mut(8) {
                if item == [0; 8] {
                    item.copy_from_slice(&(-1i64).to_le_bytes()); // only padding holds 0
                }
            }
            let packed = oxblosc_chunk::compress(&items, ba.schunk().cparams()).unwrap();
            ba.schunk_mut().update_chunk(c, &packed).unwrap();
        }
        let prog = program("a ** b", &[("a", DType::I64), ("b", DType::I64)]);
        let mut out = empty("<i8", 8);
        compute_into(&prog, &[Operand::Array(&aa), Operand::Array(&ba)], &mut out, 2).unwrap();
        let got: Vec<i64> =
            out.to_vec().unwrap().chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
        let want: Vec<i64> = (0..n as i64).map(|i| 3i64.pow((i % 4 + 1) as u32)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn errors_leave_the_output_untouched() {
        let n = nitems();
        let prog = program("a + 1", &[("a", DType::F64)]);
        let special = |o: &NdArray| {
            (0..o.schunk().nchunks()).all(|c| {
                ChunkHeader::parse(&o.schunk().get_chunk(c).unwrap()).unwrap().special().unwrap() == SpecialKind::Zeros
            })
        };
        // Another geometry.
        let cp = CParams { typesize: 8, nthreads: 1, ..CParams::default() };
        let g = Geometry::new(&SHAPE, &[7, 10, 5], &BLOCKS, 8).unwrap();
        let other =
            NdArray::from_buffer(SChunk::new(cp, DParams::default()).unwrap(), g, Some("<f8"), &f64s(&vec![1.0; n]))
                .unwrap();
        let mut out = empty("<f8", 8);
        let e = compute_into(&prog, &[Operand::Array(&other)], &mut out, 2).unwrap_err();
        assert!(matches!(e, ComputeError::Mismatch(_)) && e.to_string().contains("chunks [7, 10, 5]"), "{e}");
        assert!(special(&out));
        // A chunk that fails to decode (its third, after two good ones), with 1 and 2 threads.
        let mut bad = array("<f8", 8, &f64s(&(0..n).map(|i| i as f64).collect::<Vec<_>>()));
        let mut c = bad.schunk().get_chunk(2).unwrap().into_owned();
        let last = c.len() - 1;
        c[last] ^= 0xFF;
        c[40..].iter_mut().for_each(|b| *b = 0xA5);
        bad.schunk_mut().update_chunk(2, &c).unwrap();
        for nthreads in [1, 2] {
            let mut out = empty("<f8", 8);
            let e = compute_into(&prog, &[Operand::Array(&bad)], &mut out, nthreads).unwrap_err();
            assert!(e.to_string().contains("chunk 2"), "{e}");
            assert!(special(&out));
        }
        // Output of another item size.
        let mut out = empty("<f4", 4);
        assert!(matches!(compute_into(&prog, &[Operand::Array(&bad)], &mut out, 1), Err(ComputeError::Mismatch(_))));
    }
}
