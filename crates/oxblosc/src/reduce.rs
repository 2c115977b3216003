//! Reductions of a float64 array over any set of axes, without leaving Rust: each block is
//! decoded on its own (it stays in cache) and folded straight into the result, blocks split
//! over threads, each thread with its own partial result, merged in order at the end.
//!
//! A block's valid items (inside the array and its chunk; padding never counts) form a box;
//! its rows along the last axis are either folded into one result cell (last axis reduced)
//! or added item by item into a row of the result (last axis kept). Sums add rows with eight
//! running sums (closer to NumPy's pairwise sums than one running sum). Min and max propagate
//! NaN as NumPy does. Means and variances come from these: the caller divides a sum by the
//! count, and sums the squared deviations from the means in a second pass ([`Op::SqDev`]).

use oxblosc_chunk::parallel::pool;
use oxblosc_nd::NdArray;
use rayon::prelude::*;

use crate::lazy::ComputeError;

type Result<T> = std::result::Result<T, ComputeError>;

/// Cells of all partial results together (beyond that, fewer parts and fewer threads).
const PARTIALS_CELLS: usize = 1 << 21;
/// Parts the blocks are split into at most (threads beyond that have nothing to do).
const MAX_PARTS: usize = 16;

/// What a reduction folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Sum,
    Prod,
    Min,
    Max,
    /// Sum of `(x - mean)²`, the mean of each result cell given.
    SqDev,
}

impl Op {
    fn identity(self) -> f64 {
        match self {
            // -0.0 + x is x for every x, -0.0 included (0.0 would turn a sum of -0.0 into 0.0).
            Op::Sum | Op::SqDev => -0.0,
            Op::Prod => 1.0,
            Op::Min => f64::INFINITY,
            Op::Max => f64::NEG_INFINITY,
        }
    }

    /// Two partial results of the same cell merged.
    #[inline(always)]
    fn merge(self, acc: f64, x: f64) -> f64 {
        match self {
            Op::Sum | Op::SqDev => acc + x,
            Op::Prod => acc * x,
            // A NaN wins, and stays (comparisons with it are false).
            Op::Min => {
                if x < acc || x.is_nan() {
                    x
                } else {
                    acc
                }
            }
            Op::Max => {
                if x > acc || x.is_nan() {
                    x
                } else {
                    acc
                }
            }
        }
    }
}

/// `op` of the float64 array `a` over `axes` (sorted, distinct, each < ndim), with
/// `nthreads` threads. The result holds one cell per item of the kept axes (C order; the
/// reduced axes have length 1). `means` (one per result cell) is required by [`Op::SqDev`].
pub fn reduce_f64(a: &NdArray, op: Op, axes: &[usize], means: Option<&[f64]>, nthreads: usize) -> Result<Vec<f64>> {
    let g = a.geometry();
    let nd = g.ndim();
    let mismatch = |m: String| Err(ComputeError::Mismatch(m));
    if a.typesize() != 8 {
        return mismatch(format!("reductions here take float64 items, the array holds {}-byte items", a.typesize()));
    }
    if nd == 0 || axes.iter().any(|&d| d >= nd) || axes.windows(2).any(|w| w[0] >= w[1]) {
        return mismatch(format!("axes {axes:?} do not fit an array of {nd} dimensions"));
    }
    let reduced: Vec<bool> = (0..nd).map(|d| axes.contains(&d)).collect();
    // Strides of the result (0 on reduced axes) and of a block, in items.
    let mut ostride = vec![0usize; nd];
    let mut cells = 1usize;
    for d in (0..nd).rev() {
        if !reduced[d] {
            ostride[d] = cells;
            cells *= g.shape[d] as usize;
        }
    }
    if op == Op::SqDev && means.map(<[f64]>::len) != Some(cells) {
        return mismatch(format!("squared deviations need {cells} means"));
    }
    let total = g.nchunks as usize * g.blocks_per_chunk;
    // Blocks are split into parts with a partial result each, merged in order: the same
    // parts whatever the number of threads (the same bits), as many as fit PARTIALS_CELLS.
    let parts = (PARTIALS_CELLS / cells.max(1)).clamp(1, MAX_PARTS).min(total.max(1));
    let ctx = a.schunk().chunk_context();
    let partials: Vec<Vec<f64>> = pool(nthreads.max(1)).install(|| {
        (0..parts)
            .into_par_iter()
            .map(|p| {
                let mut acc = vec![op.identity(); cells];
                let mut block = vec![0u8; g.block_bytes()];
                let mut held: Option<(usize, std::borrow::Cow<'_, [u8]>)> = None;
                for b in p * total / parts..(p + 1) * total / parts {
                    let (n, k) = (b / g.blocks_per_chunk, b % g.blocks_per_chunk);
                    let Some(boxed) = block_box(g, n as u64, k) else { continue };
                    if held.as_ref().map(|h| h.0) != Some(n) {
                        held = Some((n, a.schunk().get_chunk(n)?));
                    }
                    let chunk = &held.as_ref().expect("just set").1;
                    let bb = block.len();
                    oxblosc_chunk::decompress_ranges_with(chunk, &[(k * bb, (k + 1) * bb)], &mut block, 1, ctx)
                        .map_err(|source| oxblosc_frame::Error::Chunk {
                            chunk: oxblosc_frame::ChunkId::Data(n),
                            source,
                        })?;
                    fold_block(op, g, &boxed, &reduced, &ostride, &block, means, &mut acc);
                }
                Ok(acc)
            })
            .collect::<Result<_>>()
    })?;
    let mut it = partials.into_iter();
    let mut out = it.next().unwrap_or_else(|| vec![op.identity(); cells]);
    for p in it {
        out.iter_mut().zip(p).for_each(|(o, x)| *o = op.merge(*o, x));
    }
    Ok(out)
}

/// The valid part of block `k` of chunk `n`: its first item's global coordinates and its
/// extent per axis; None when it is all padding.
struct BlockBox {
    start: Vec<u64>,
    valid: Vec<u64>,
}

fn block_box(g: &oxblosc_nd::Geometry, n: u64, k: usize) -> Option<BlockBox> {
    let nd = g.ndim();
    let cc = g.chunk_coords(n);
    let mut rest = k as u64;
    let (mut start, mut valid) = (vec![0u64; nd], vec![0u64; nd]);
    for d in (0..nd).rev() {
        let b = rest % g.bgrid[d];
        rest /= g.bgrid[d];
        let in_chunk = b * g.blocks[d];
        start[d] = cc[d] * g.chunks[d] + in_chunk;
        valid[d] = g.blocks[d].min(g.chunks[d].saturating_sub(in_chunk)).min(g.shape[d].saturating_sub(start[d]));
    }
    (!valid.contains(&0)).then_some(BlockBox { start, valid })
}

/// Fold the valid items of one decoded block (`bytes`, the block's C order) into `acc`.
#[allow(clippy::too_many_arguments)]
fn fold_block(
    op: Op,
    g: &oxblosc_nd::Geometry,
    bx: &BlockBox,
    reduced: &[bool],
    ostride: &[usize],
    bytes: &[u8],
    means: Option<&[f64]>,
    acc: &mut [f64],
) {
    let nd = g.ndim();
    let last = nd - 1;
    let mut bstride = vec![1usize; nd];
    for d in (0..last).rev() {
        bstride[d] = bstride[d + 1] * g.blocks[d + 1] as usize;
    }
    let base: usize = (0..nd).map(|d| bx.start[d] as usize * ostride[d]).sum();
    let len = bx.valid[last] as usize;
    let mut idx = vec![0u64; last];
    loop {
        let (mut from, mut o) = (0usize, base);
        for d in 0..last {
            from += idx[d] as usize * bstride[d];
            o += idx[d] as usize * ostride[d];
        }
        let row = &bytes[from * 8..(from + len) * 8];
        if reduced[last] {
            let m = means.map_or(0.0, |m| m[o]);
            acc[o] = op.merge(acc[o], fold_row(op, row, m));
        } else {
            let cells = &mut acc[o..o + len];
            let items = row.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")));
            match (op, means) {
                (Op::SqDev, Some(m)) => {
                    for ((c, x), m) in cells.iter_mut().zip(items).zip(&m[o..o + len]) {
                        *c += (x - m) * (x - m);
                    }
                }
                (Op::Sum, _) => cells.iter_mut().zip(items).for_each(|(c, x)| *c += x),
                _ => cells.iter_mut().zip(items).for_each(|(c, x)| *c = op.merge(*c, x)),
            }
        }
        // Next row: the odometer over the axes before the last, within the valid box.
        let Some(d) = (0..last).rev().find(|&d| idx[d] + 1 < bx.valid[d]) else { break };
        idx[d] += 1;
        idx[d + 1..].fill(0);
    }
}

/// One row folded to a value (`m`: the mean, for [`Op::SqDev`]).
fn fold_row(op: Op, row: &[u8], m: f64) -> f64 {
    match op {
        Op::Sum => lanes(row, op, |a, x| a + x),
        Op::SqDev => lanes(row, op, |a, x| a + (x - m) * (x - m)),
        Op::Prod => lanes(row, op, |a, x| a * x),
        Op::Min => lanes(row, op, |a, x| if x < a || x.is_nan() { x } else { a }),
        Op::Max => lanes(row, op, |a, x| if x > a || x.is_nan() { x } else { a }),
    }
}

/// `row` folded with `f` into eight running values (one per lane: independent chains the
/// compiler can vectorise), merged at the end.
#[inline(always)]
fn lanes(row: &[u8], op: Op, f: impl Fn(f64, f64) -> f64) -> f64 {
    let item = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
    let mut l = [op.identity(); 8];
    let mut rows = row.chunks_exact(64);
    for r in &mut rows {
        for (j, a) in l.iter_mut().enumerate() {
            *a = f(*a, item(&r[j * 8..j * 8 + 8]));
        }
    }
    let rest = rows.remainder().chunks_exact(8).fold(op.identity(), |a, b| f(a, item(b)));
    let m = |a: f64, b: f64| op.merge(a, b);
    m(m(m(m(l[0], l[1]), m(l[2], l[3])), m(m(l[4], l[5]), m(l[6], l[7]))), rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxblosc_chunk::{CParams, DParams};
    use oxblosc_frame::SChunk;
    use oxblosc_nd::Geometry;

    // Edge chunks on every axis and blocks that do not divide the chunks (padding inside).
    const SHAPE: [u64; 3] = [7, 10, 5];
    const CHUNKS: [u64; 3] = [3, 4, 5];
    const BLOCKS: [u64; 3] = [2, 3, 2];

    fn array(v: &[f64]) -> NdArray {
        let cp = CParams { typesize: 8, nthreads: 1, clevel: 5, ..CParams::default() };
        let g = Geometry::new(&SHAPE, &CHUNKS, &BLOCKS, 8).unwrap();
        let data: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        NdArray::from_buffer(SChunk::new(cp, DParams { nthreads: 1 }).unwrap(), g, Some("<f8"), &data).unwrap()
    }

    /// The reduction computed item by item over the whole array.
    fn naive(v: &[f64], op: Op, axes: &[usize], means: Option<&[f64]>) -> Vec<f64> {
        let kept: Vec<usize> = (0..3).filter(|d| !axes.contains(d)).collect();
        let cells: usize = kept.iter().map(|&d| SHAPE[d] as usize).product();
        let mut out = vec![op.identity(); cells];
        for (i, &x) in v.iter().enumerate() {
            let c = [i / 50, i / 5 % 10, i % 5];
            let o = kept.iter().fold(0, |acc, &d| acc * SHAPE[d] as usize + c[d]);
            let x = match op {
                Op::SqDev => (x - means.unwrap()[o]) * (x - means.unwrap()[o]),
                _ => x,
            };
            out[o] = if op == Op::SqDev { out[o] + x } else { op.merge(out[o], x) };
        }
        out
    }

    #[test]
    fn every_axis_set_matches_item_by_item_and_padding_is_ignored() {
        let n: usize = SHAPE.iter().product::<u64>() as usize;
        // Positive values: the padding's zeros would change min and prod if read.
        let v: Vec<f64> = (0..n).map(|i| 1.0 + ((i * 37) % 101) as f64 / 64.0).collect();
        let a = array(&v);
        let sets: [&[usize]; 8] = [&[], &[0], &[1], &[2], &[0, 1], &[0, 2], &[1, 2], &[0, 1, 2]];
        for axes in sets {
            for op in [Op::Sum, Op::Prod, Op::Min, Op::Max] {
                let got = reduce_f64(&a, op, axes, None, 1).unwrap();
                let want = naive(&v, op, axes, None);
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-12 * w.abs(), "{op:?} {axes:?}: {g} vs {w}");
                }
                assert_eq!(got.len(), want.len());
                // The same bits with any number of threads.
                assert_eq!(reduce_f64(&a, op, axes, None, 3).unwrap(), got);
            }
            let means: Vec<f64> = (0..naive(&v, Op::Sum, axes, None).len()).map(|i| 1.5 + i as f64 * 0.01).collect();
            let got = reduce_f64(&a, Op::SqDev, axes, Some(&means), 2).unwrap();
            for (g, w) in got.iter().zip(naive(&v, Op::SqDev, axes, Some(&means))) {
                assert!((g - w).abs() <= 1e-12 * w.abs(), "sqdev {axes:?}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn nan_wins_min_and_max_and_bad_arguments_are_errors() {
        let n: usize = SHAPE.iter().product::<u64>() as usize;
        let mut v: Vec<f64> = (0..n).map(|i| i as f64).collect();
        v[n - 1] = f64::NAN; // in the last (edge) chunk
        let a = array(&v);
        for op in [Op::Min, Op::Max, Op::Sum] {
            let all = reduce_f64(&a, op, &[0, 1, 2], None, 2).unwrap();
            assert!(all[0].is_nan(), "{op:?}");
        }
        let rows = reduce_f64(&a, Op::Min, &[2], None, 2).unwrap();
        assert!(rows[69].is_nan() && rows[..69].iter().all(|x| !x.is_nan()));
        assert!(matches!(reduce_f64(&a, Op::Sum, &[3], None, 1), Err(ComputeError::Mismatch(_))));
        assert!(matches!(reduce_f64(&a, Op::Sum, &[1, 0], None, 1), Err(ComputeError::Mismatch(_))));
        assert!(matches!(reduce_f64(&a, Op::SqDev, &[0], None, 1), Err(ComputeError::Mismatch(_))));
    }
}
