//! Lazy expressions evaluated into the caller's buffer (a NumPy result in C order), without
//! leaving Rust: for each block, the operands' blocks are decoded on their own (they stay in
//! cache) and the program writes its results straight into their place in the output; no
//! operand is materialised and nothing is copied twice.
//!
//! Threads own disjoint slabs of the output along the first axis (one row of blocks of a row
//! of chunks, or of whole chunks when an operand is read from a file, so no chunk is read
//! twice from disk). Within a block, the items that are contiguous in the output too form a
//! segment: a row along the last axis, or more when the block spans the trailing axes whole.

use oxblosc_chunk::parallel::pool;
use oxblosc_expr::Program;
use oxblosc_nd::Geometry;
use rayon::prelude::*;

use crate::lazy::{check, eval_run, operand_chunks, with_operand_blocks, ComputeError, Operand};
use crate::reduce::block_box;

type Result<T> = std::result::Result<T, ComputeError>;

/// Evaluate `prog` (inputs in the order of `prog.inputs()`, given as `operands`: at least
/// one array, all of one geometry) into `out`, the whole result in C order, with `nthreads`
/// threads. On error `out` holds a part of the result.
pub fn evaluate_into(prog: &Program, operands: &[Operand<'_>], out: &mut [u8], nthreads: usize) -> Result<()> {
    let Some(g) = operands.iter().find_map(|o| match o {
        Operand::Array(a) => Some(a.geometry()),
        Operand::Scalar(_) | Operand::Dense { .. } => None,
    }) else {
        return Err(ComputeError::Mismatch("an expression evaluated here needs an array operand".into()));
    };
    let ts = prog.dtype().itemsize();
    check(prog, operands, g, ts)?;
    if out.len() as u64 != g.nitems * ts as u64 {
        return Err(ComputeError::Mismatch(format!(
            "the output has {} bytes, the result {}",
            out.len(),
            g.nitems * ts as u64
        )));
    }
    if g.nitems == 0 {
        return Ok(());
    }
    let files = operands.iter().any(|o| matches!(o, Operand::Array(a) if a.schunk().reads_from_files()));
    let step = if files { g.chunks[0] } else { g.blocks[0] };
    let row_bytes = g.shape[1..].iter().product::<u64>() as usize * ts;
    // (chunk row, block row within it or every block, first and end index along axis 0)
    let mut slabs: Vec<(u64, Option<u64>, u64, &mut [u8])> = Vec::new();
    let mut rest = out;
    for c0 in 0..g.grid[0] {
        let end = ((c0 + 1) * g.chunks[0]).min(g.shape[0]);
        let mut lo = c0 * g.chunks[0];
        for b0 in 0.. {
            if lo >= end {
                break;
            }
            let hi = (lo + step).min(end);
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut((hi - lo) as usize * row_bytes);
            slabs.push((c0, (!files).then_some(b0), lo, piece));
            rest = tail;
            lo = hi;
        }
    }
    let seg = Segments::new(g, ts);
    pool(nthreads.max(1)).install(|| {
        slabs.into_par_iter().try_for_each(|(c0, b0, lo, piece)| fill_slab(prog, operands, g, &seg, c0, b0, lo, piece))
    })
}

/// The output slab of chunk row `c0` (block row `b0` of it, or all of it), which starts at
/// index `lo` of the first axis.
#[allow(clippy::too_many_arguments)]
fn fill_slab(
    prog: &Program,
    operands: &[Operand<'_>],
    g: &Geometry,
    seg: &Segments,
    c0: u64,
    b0: Option<u64>,
    lo: u64,
    piece: &mut [u8],
) -> Result<()> {
    let per_row: u64 = g.grid[1..].iter().product();
    let blocks_per_row = g.blocks_per_chunk / g.bgrid[0] as usize;
    let ks = match b0 {
        Some(b) => b as usize * blocks_per_row..(b as usize + 1) * blocks_per_row,
        None => 0..g.blocks_per_chunk,
    };
    let skip = lo as usize * seg.astride[0] * seg.ts;
    for n in c0 * per_row..(c0 + 1) * per_row {
        let chunks = operand_chunks(operands, n)?;
        for k in ks.clone() {
            let Some(bx) = block_box(g, n, k) else { continue };
            with_operand_blocks(operands, &chunks, g, n, k, |blocks| {
                seg.each(&bx.start, &bx.valid, |from, to, len| {
                    let to = to * seg.ts - skip;
                    eval_run(prog, operands, blocks, from, len, &mut piece[to..to + len * seg.ts])
                })
            })?;
        }
    }
    Ok(())
}

/// How a block's valid items split into runs contiguous in the block and in the output.
struct Segments {
    /// The axis segments run along (the axes after it are whole in every block).
    s: usize,
    /// Items per index of axis `s` (the block's trailing axes).
    inner: usize,
    bstride: Vec<usize>,
    astride: Vec<usize>,
    ts: usize,
}

impl Segments {
    fn new(g: &Geometry, ts: usize) -> Self {
        let nd = g.ndim();
        let full = (0..nd).rev().take_while(|&d| g.blocks[d] == g.shape[d]).count();
        let s = (nd - full).saturating_sub(1);
        let (mut bstride, mut astride) = (vec![1usize; nd], vec![1usize; nd]);
        for d in (0..nd - 1).rev() {
            bstride[d] = bstride[d + 1] * g.blocks[d + 1] as usize;
            astride[d] = astride[d + 1] * g.shape[d + 1] as usize;
        }
        let inner = g.blocks[s + 1..].iter().product::<u64>() as usize;
        Segments { s, inner, bstride, astride, ts }
    }

    /// `f(first item in the block, first item in the output, items)` for each segment of
    /// the block whose valid part starts at `start` (global) and spans `valid`.
    fn each(&self, start: &[u64], valid: &[u64], mut f: impl FnMut(usize, usize, usize) -> Result<()>) -> Result<()> {
        let s = self.s;
        let len = valid[s] as usize * self.inner;
        let mut idx = vec![0u64; s];
        loop {
            let (mut from, mut to) = (0usize, start[s] as usize * self.astride[s]);
            for d in 0..s {
                from += idx[d] as usize * self.bstride[d];
                to += (start[d] + idx[d]) as usize * self.astride[d];
            }
            f(from, to, len)?;
            let Some(d) = (0..s).rev().find(|&d| idx[d] + 1 < valid[d]) else { return Ok(()) };
            idx[d] += 1;
            idx[d + 1..].fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxblosc_chunk::{CParams, DParams};
    use oxblosc_expr::{parse, DType};
    use oxblosc_frame::SChunk;
    use oxblosc_nd::NdArray;

    fn array(shape: &[u64], chunks: &[u64], blocks: &[u64], v: &[f64]) -> NdArray {
        let cp = CParams { typesize: 8, nthreads: 1, clevel: 5, ..CParams::default() };
        let g = Geometry::new(shape, chunks, blocks, 8).unwrap();
        let data: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        NdArray::from_buffer(SChunk::new(cp, DParams { nthreads: 1 }).unwrap(), g, Some("<f8"), &data).unwrap()
    }

    #[test]
    fn every_item_lands_in_place_for_any_geometry_and_threads() {
        // Edge chunks, blocks not dividing chunks, blocks spanning trailing axes whole.
        let cases: [(&[u64], &[u64], &[u64]); 4] = [
            (&[7, 10, 5], &[3, 4, 5], &[2, 3, 2]),
            (&[7, 10, 5], &[3, 10, 5], &[2, 10, 5]),
            (&[9, 6, 4], &[4, 6, 4], &[1, 3, 4]),
            (&[11], &[4], &[3]),
        ];
        let expr = parse("a * 2.0 + b").unwrap();
        let prog = expr.compile_columns(&[("a", DType::F64), ("b", DType::F64)]).unwrap();
        for (shape, chunks, blocks) in cases {
            let n = shape.iter().product::<u64>() as usize;
            let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let y: Vec<f64> = (0..n).map(|i| (i % 7) as f64 * 0.5).collect();
            let (a, b) = (array(shape, chunks, blocks, &x), array(shape, chunks, blocks, &y));
            let want: Vec<u8> = x.iter().zip(&y).flat_map(|(x, y)| (x * 2.0 + y).to_le_bytes()).collect();
            for nt in [1, 3] {
                let mut out = vec![0xAAu8; n * 8];
                evaluate_into(&prog, &[Operand::Array(&a), Operand::Array(&b)], &mut out, nt).unwrap();
                assert!(out == want, "{shape:?} {chunks:?} {blocks:?} with {nt} threads");
            }
            let mut short = vec![0u8; n * 8 - 8];
            let e = evaluate_into(&prog, &[Operand::Array(&a), Operand::Array(&b)], &mut short, 1).unwrap_err();
            assert!(matches!(e, ComputeError::Mismatch(_)));
        }
    }

    #[test]
    fn a_chunk_that_fails_to_decode_is_named() {
        let (shape, chunks, blocks): (&[u64], &[u64], &[u64]) = (&[7, 10, 5], &[3, 4, 5], &[2, 3, 2]);
        let n = 350;
        let mut a = array(shape, chunks, blocks, &(0..n).map(|i| i as f64).collect::<Vec<_>>());
        let mut c = a.schunk().get_chunk(2).unwrap().into_owned();
        c[40..].iter_mut().for_each(|b| *b = 0xA5);
        a.schunk_mut().update_chunk(2, &c).unwrap();
        let prog = parse("a + 1.0").unwrap().compile_columns(&[("a", DType::F64)]).unwrap();
        for nt in [1, 2] {
            let mut out = vec![0u8; n * 8];
            let e = evaluate_into(&prog, &[Operand::Array(&a)], &mut out, nt).unwrap_err();
            assert!(e.to_string().contains("chunk 2"), "{e}");
            let src = crate::reduce::Source::Expr(&prog, &[Operand::Array(&a)]);
            let e = crate::reduce::reduce(&src, crate::reduce::Op::Sum, crate::reduce::Acc::F64, &[0], None, nt);
            assert!(e.unwrap_err().to_string().contains("chunk 2"));
            let src = crate::reduce::Source::Array(&a, DType::F64);
            let e = crate::reduce::reduce(&src, crate::reduce::Op::Max, crate::reduce::Acc::F64, &[1, 2], None, nt);
            assert!(e.unwrap_err().to_string().contains("chunk 2"));
        }
    }
}
