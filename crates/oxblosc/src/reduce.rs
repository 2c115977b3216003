//! Reductions of an array, or of an expression over arrays, over any set of axes, without
//! leaving Rust: each block is decoded (or, for an expression, its operands' blocks decoded
//! and the program run over them) on its own, so it stays in cache, converted to the
//! accumulator's number type and folded straight into the result; nothing else is
//! materialised or compressed. Blocks are split over threads, each part with its own
//! partial result, merged in order at the end: the same bits for any number of threads.
//!
//! A block's valid items (inside the array and its chunk; padding never counts) form a box;
//! its rows along the last axis are either folded into one result cell (last axis reduced)
//! or added item by item into a row of the result (last axis kept). Sums add rows with eight
//! running sums (closer to NumPy's pairwise sums than one running sum). Items are reduced in
//! NumPy's accumulator types ([`Acc`]): integer sums and products wrap in 64 bits as NumPy's
//! do; float32 items are reduced in float64 (the caller rounds the result to float32, at
//! least as accurate as NumPy's float32 pairwise sum). Min, max, argmin and argmax propagate
//! NaN as NumPy does (argmin/argmax: the first NaN; ties: the first index). Means and
//! variances come from these: the caller divides a sum by the count, and sums the squared
//! deviations from the means in a second pass ([`Op::SqDev`]).

use std::borrow::Cow;

use oxblosc_chunk::parallel::pool;
use oxblosc_expr::{DType, Program};
use oxblosc_nd::{Geometry, NdArray};
use rayon::prelude::*;

use crate::lazy::{chunk_origin, eval_block, operand_chunks, ComputeError, Operand};

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
    /// Sum of `(x - mean)²`, the mean of each result cell given (float64 accumulator only).
    SqDev,
    /// Whether any item is non-zero (NaN counts): the result cells are 0 or 1.
    Any,
    /// Whether every item is non-zero.
    All,
    /// The index of the first smallest item (first NaN, if any): flat over the whole array
    /// when every axis is reduced, else along the one reduced axis.
    ArgMin,
    ArgMax,
}

impl Op {
    fn is_arg(self) -> bool {
        matches!(self, Op::ArgMin | Op::ArgMax)
    }
}

/// The number type items are reduced in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acc {
    F64,
    I64,
    U64,
}

impl Acc {
    /// NumPy's accumulator for items of `dt`: float64 for floats, uint64 for unsigned
    /// integers, int64 for signed integers and bools.
    pub fn of(dt: DType) -> Acc {
        match dt {
            DType::F32 | DType::F64 => Acc::F64,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => Acc::U64,
            _ => Acc::I64,
        }
    }
}

/// Where the reduced items come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// An array's items, of this type.
    Array(&'a NdArray, DType),
    /// A program's results over its operands (as for [`crate::lazy::compute_into`]; at
    /// least one array, all of one geometry), evaluated block by block.
    Expr(&'a Program, &'a [Operand<'a>]),
}

impl<'a> Source<'a> {
    /// The geometry and item type of the reduced items, once the source is checked.
    fn check(&self) -> Result<(&'a Geometry, DType)> {
        let mismatch = |m: String| Err(ComputeError::Mismatch(m));
        match *self {
            Source::Array(a, dt) => {
                if a.typesize() != dt.itemsize() || matches!(dt, DType::Bytes(_)) {
                    return mismatch(format!("the array holds {}-byte items, not {dt}", a.typesize()));
                }
                Ok((a.geometry(), dt))
            }
            Source::Expr(prog, operands) => {
                let Some(g) = operands.iter().find_map(|o| match o {
                    Operand::Array(a) => Some(a.geometry()),
                    Operand::Scalar(_) | Operand::Dense { .. } => None,
                }) else {
                    return mismatch("an expression reduced here needs an array operand".into());
                };
                crate::lazy::check(prog, operands, g, prog.dtype().itemsize())?;
                if matches!(prog.dtype(), DType::Bytes(_)) {
                    return mismatch(format!("cannot reduce items of type {}", prog.dtype()));
                }
                Ok((g, prog.dtype()))
            }
        }
    }
}

/// The result cells, one per item of the kept axes (C order; reduced axes of length 1).
#[derive(Debug, Clone, PartialEq)]
pub enum Cells {
    F64(Vec<f64>),
    I64(Vec<i64>),
    U64(Vec<u64>),
}

/// A reduction's result: the cells, and for argmin/argmax the index of each.
#[derive(Debug, Clone, PartialEq)]
pub struct Reduced {
    pub cells: Cells,
    pub index: Option<Vec<u64>>,
}

/// `op` of the items of `src` over `axes` (sorted, distinct, each < ndim), accumulated in
/// `acc`, with `nthreads` threads. Argmin/argmax take every axis or one. `means` (one per
/// result cell) is required by [`Op::SqDev`].
pub fn reduce(
    src: &Source<'_>,
    op: Op,
    acc: Acc,
    axes: &[usize],
    means: Option<&[f64]>,
    nthreads: usize,
) -> Result<Reduced> {
    let (g, dt) = src.check()?;
    let nd = g.ndim();
    let mismatch = |m: String| Err(ComputeError::Mismatch(m));
    if nd == 0 || axes.iter().any(|&d| d >= nd) || axes.windows(2).any(|w| w[0] >= w[1]) {
        return mismatch(format!("axes {axes:?} do not fit an array of {nd} dimensions"));
    }
    if op.is_arg() && axes.len() != 1 && axes.len() != nd {
        return mismatch(format!("argmin/argmax reduce one axis or all, not {axes:?}"));
    }
    if (dt.is_float() || op == Op::SqDev) && acc != Acc::F64 {
        return mismatch(format!("{op:?} of {dt} items cannot accumulate in {acc:?}"));
    }
    let plan = Plan::new(g, dt, op, axes);
    if op == Op::SqDev && means.map(<[f64]>::len) != Some(plan.cells) {
        return mismatch(format!("squared deviations need {} means", plan.cells));
    }
    let (cells, index) = match acc {
        Acc::F64 => run::<f64>(src, &plan, means, nthreads).map(|(c, i)| (Cells::F64(c), i))?,
        Acc::I64 => run::<i64>(src, &plan, means, nthreads).map(|(c, i)| (Cells::I64(c), i))?,
        Acc::U64 => run::<u64>(src, &plan, means, nthreads).map(|(c, i)| (Cells::U64(c), i))?,
    };
    Ok(Reduced { cells, index: op.is_arg().then_some(index) })
}

/// What every part of a reduction shares: the geometry, which axes are reduced, the
/// strides of the result and the number of its cells.
struct Plan<'g> {
    g: &'g Geometry,
    dt: DType,
    op: Op,
    reduced: Vec<bool>,
    /// Strides of the result in cells (0 on reduced axes).
    ostride: Vec<usize>,
    /// Strides of a block in items.
    bstride: Vec<usize>,
    /// For argmin/argmax over every axis: the array's C strides (flat indices); else empty.
    flat: Vec<u64>,
    cells: usize,
}

impl<'g> Plan<'g> {
    fn new(g: &'g Geometry, dt: DType, op: Op, axes: &[usize]) -> Self {
        let nd = g.ndim();
        let reduced: Vec<bool> = (0..nd).map(|d| axes.contains(&d)).collect();
        let mut ostride = vec![0usize; nd];
        let mut cells = 1usize;
        for d in (0..nd).rev() {
            if !reduced[d] {
                ostride[d] = cells;
                cells *= g.shape[d] as usize;
            }
        }
        let mut bstride = vec![1usize; nd];
        for d in (0..nd - 1).rev() {
            bstride[d] = bstride[d + 1] * g.blocks[d + 1] as usize;
        }
        let mut flat = Vec::new();
        if op.is_arg() && axes.len() == nd {
            flat = vec![1u64; nd];
            for d in (0..nd - 1).rev() {
                flat[d] = flat[d + 1] * g.shape[d + 1];
            }
        }
        Plan { g, dt, op, reduced, ostride, bstride, flat, cells }
    }
}

/// The reduction with accumulator type `T`: cells, and indices for argmin/argmax.
fn run<T: Num>(
    src: &Source<'_>,
    plan: &Plan<'_>,
    means: Option<&[f64]>,
    nthreads: usize,
) -> Result<(Vec<T>, Vec<u64>)> {
    let g = plan.g;
    let op = plan.op;
    let total = g.nchunks as usize * g.blocks_per_chunk;
    // Blocks are split into parts with a partial result each, merged in order: the same
    // parts whatever the number of threads (the same bits), as many as fit PARTIALS_CELLS.
    let parts = (PARTIALS_CELLS / plan.cells.max(1)).clamp(1, MAX_PARTS).min(total.max(1));
    let partials: Vec<(Vec<T>, Vec<u64>)> = pool(nthreads.max(1)).install(|| {
        (0..parts)
            .into_par_iter()
            .map(|p| {
                let mut acc = vec![T::identity(op); plan.cells];
                let mut idx = if op.is_arg() { vec![UNSET; plan.cells] } else { Vec::new() };
                let mut reader = Reader { src, n: None, chunks: Vec::new(), raw: Vec::new() };
                let mut vals: Vec<T> = Vec::new();
                for b in p * total / parts..(p + 1) * total / parts {
                    let (n, k) = (b / g.blocks_per_chunk, b % g.blocks_per_chunk);
                    let Some(bx) = block_box(g, n as u64, k) else { continue };
                    let raw = reader.block(g, n, k)?;
                    if !T::load(plan.dt, raw, &mut vals) {
                        return Err(ComputeError::Mismatch(format!("{} items do not reduce here", plan.dt)));
                    }
                    match op.is_arg() {
                        true => fold_arg(plan, &bx, &vals, &mut acc, &mut idx),
                        false => fold_block(plan, &bx, &vals, means, &mut acc),
                    }
                }
                Ok((acc, idx))
            })
            .collect::<Result<_>>()
    })?;
    let mut it = partials.into_iter();
    let (mut out, mut oidx) = it.next().unwrap_or_else(|| (vec![T::identity(op); plan.cells], vec![UNSET; plan.cells]));
    for (p, pidx) in it {
        if op.is_arg() {
            let min = op == Op::ArgMin;
            for ((o, oi), (x, i)) in out.iter_mut().zip(oidx.iter_mut()).zip(p.into_iter().zip(pidx)) {
                if i != UNSET && better(min, x, i, *o, *oi) {
                    (*o, *oi) = (x, i);
                }
            }
        } else {
            out.iter_mut().zip(p).for_each(|(o, x)| *o = merge(op, *o, x));
        }
    }
    Ok((out, oidx))
}

/// A cell's index before any item reached it.
const UNSET: u64 = u64::MAX;

/// Reads blocks of a source in order, keeping the compressed chunk (or the operands'
/// chunks) of the last block read.
struct Reader<'s, 'a> {
    src: &'s Source<'a>,
    n: Option<usize>,
    chunks: Vec<Option<Cow<'a, [u8]>>>,
    raw: Vec<u8>,
}

impl<'a> Reader<'_, 'a> {
    /// The items of block `k` of chunk `n` (a whole block, padding included).
    fn block(&mut self, g: &Geometry, n: usize, k: usize) -> Result<&[u8]> {
        if self.n != Some(n) {
            self.n = None;
            self.chunks = match *self.src {
                Source::Array(a, _) => vec![Some(a.schunk().get_chunk(n)?)],
                Source::Expr(_, operands) => operand_chunks(operands, n as u64)?,
            };
            self.n = Some(n);
        }
        match *self.src {
            Source::Array(a, _) => {
                let bb = g.block_bytes();
                self.raw.resize(bb, 0);
                let chunk = self.chunks[0].as_deref().expect("an array's chunk");
                oxblosc_chunk::decompress_ranges_with(
                    chunk,
                    &[(k * bb, (k + 1) * bb)],
                    &mut self.raw,
                    1,
                    a.schunk().chunk_context(),
                )
                .map_err(|source| oxblosc_frame::Error::Chunk { chunk: oxblosc_frame::ChunkId::Data(n), source })?;
            }
            Source::Expr(prog, operands) => {
                self.raw.resize(g.block_items * prog.dtype().itemsize(), 0);
                let origin = chunk_origin(g, n as u64);
                eval_block(prog, operands, &self.chunks, g, &origin, n as u64, k, &mut self.raw)?;
            }
        }
        Ok(&self.raw)
    }
}

/// The number types items are reduced in.
trait Num: Copy + PartialOrd + Send + Sync {
    const ZERO: Self;
    const ONE: Self;
    const LOWEST: Self;
    const HIGHEST: Self;
    fn add(self, x: Self) -> Self;
    fn mul(self, x: Self) -> Self;
    fn is_nan(self) -> bool;
    /// `(self - m)²` (float64 only; the others never see [`Op::SqDev`]).
    fn sqdev(self, m: f64) -> Self;
    /// The items `bytes` (little-endian, of type `dt`) converted into `out`; false when
    /// `dt` does not convert to this type.
    fn load(dt: DType, bytes: &[u8], out: &mut Vec<Self>) -> bool;

    fn identity(op: Op) -> Self {
        match op {
            Op::Sum | Op::SqDev | Op::Any | Op::ArgMin | Op::ArgMax => Self::ZERO,
            Op::Prod | Op::All => Self::ONE,
            Op::Min => Self::HIGHEST,
            Op::Max => Self::LOWEST,
        }
    }

    fn truthy(self) -> bool {
        // NaN != 0 holds: NaN is true, as in NumPy.
        self != Self::ZERO
    }
}

/// `bytes` as items of `$src`, each converted by `$conv`, into `$out`.
macro_rules! load_as {
    ($bytes:expr, $out:expr, $src:ty, $conv:expr) => {{
        const W: usize = std::mem::size_of::<$src>();
        $out.clear();
        $out.extend($bytes.chunks_exact(W).map(|b| $conv(<$src>::from_le_bytes(b.try_into().expect("one item")))));
    }};
}

/// `load` for an accumulator `$t` that takes every integer type (and floats if `$floats`).
macro_rules! load_fn {
    ($t:ty, $floats:expr) => {
        fn load(dt: DType, bytes: &[u8], out: &mut Vec<$t>) -> bool {
            match dt {
                DType::Bool => load_as!(bytes, out, u8, |x: u8| (x != 0) as u8 as $t),
                DType::I8 => load_as!(bytes, out, i8, |x| x as $t),
                DType::I16 => load_as!(bytes, out, i16, |x| x as $t),
                DType::I32 => load_as!(bytes, out, i32, |x| x as $t),
                DType::I64 => load_as!(bytes, out, i64, |x| x as $t),
                DType::U8 => load_as!(bytes, out, u8, |x| x as $t),
                DType::U16 => load_as!(bytes, out, u16, |x| x as $t),
                DType::U32 => load_as!(bytes, out, u32, |x| x as $t),
                DType::U64 => load_as!(bytes, out, u64, |x| x as $t),
                DType::F32 if $floats => load_as!(bytes, out, f32, |x| x as $t),
                DType::F64 if $floats => load_as!(bytes, out, f64, |x| x as $t),
                _ => return false,
            }
            true
        }
    };
}

impl Num for f64 {
    // -0.0 + x is x for every x, -0.0 included (0.0 would turn a sum of -0.0 into 0.0).
    const ZERO: f64 = -0.0;
    const ONE: f64 = 1.0;
    const LOWEST: f64 = f64::NEG_INFINITY;
    const HIGHEST: f64 = f64::INFINITY;
    fn add(self, x: f64) -> f64 {
        self + x
    }
    fn mul(self, x: f64) -> f64 {
        self * x
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn sqdev(self, m: f64) -> f64 {
        (self - m) * (self - m)
    }
    load_fn!(f64, true);
}

macro_rules! int_num {
    ($t:ty) => {
        impl Num for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
            const LOWEST: $t = <$t>::MIN;
            const HIGHEST: $t = <$t>::MAX;
            // NumPy's integer sums and products wrap around.
            fn add(self, x: $t) -> $t {
                self.wrapping_add(x)
            }
            fn mul(self, x: $t) -> $t {
                self.wrapping_mul(x)
            }
            fn is_nan(self) -> bool {
                false
            }
            fn sqdev(self, _: f64) -> $t {
                self
            }
            load_fn!($t, false);
        }
    };
}
int_num!(i64);
int_num!(u64);

/// Two partial results of the same cell merged (or a partial and an item).
#[inline(always)]
fn merge<T: Num>(op: Op, acc: T, x: T) -> T {
    match op {
        Op::Sum | Op::SqDev => acc.add(x),
        Op::Prod => acc.mul(x),
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
        Op::Any => {
            if acc.truthy() || x.truthy() {
                T::ONE
            } else {
                T::ZERO
            }
        }
        Op::All => {
            if acc.truthy() && x.truthy() {
                T::ONE
            } else {
                T::ZERO
            }
        }
        Op::ArgMin | Op::ArgMax => unreachable!("argmin/argmax merge values with their indices"),
    }
}

/// Whether item `v` at index `i` replaces the cell's `av` at `ai`: smaller (larger), or
/// equal at a smaller index; the first NaN beats everything.
#[inline(always)]
fn better<T: Num>(min: bool, v: T, i: u64, av: T, ai: u64) -> bool {
    if ai == UNSET {
        return true;
    }
    match (v.is_nan(), av.is_nan()) {
        (true, true) => i < ai,
        (true, false) => true,
        (false, true) => false,
        _ => (if min { v < av } else { v > av }) || (v == av && i < ai),
    }
}

/// The valid part of block `k` of chunk `n`: its first item's global coordinates and its
/// extent per axis; None when it is all padding.
pub(crate) struct BlockBox {
    pub(crate) start: Vec<u64>,
    pub(crate) valid: Vec<u64>,
}

pub(crate) fn block_box(g: &Geometry, n: u64, k: usize) -> Option<BlockBox> {
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

/// Calls `f(first item in the block, first result cell, global coordinates of the first
/// item)` for each valid row (along the last axis) of the block box `bx`.
fn rows(plan: &Plan<'_>, bx: &BlockBox, mut f: impl FnMut(usize, usize, &[u64])) {
    let nd = plan.g.ndim();
    let last = nd - 1;
    let base: usize = (0..nd).map(|d| bx.start[d] as usize * plan.ostride[d]).sum();
    let mut idx = vec![0u64; last];
    let mut coords = bx.start.clone();
    loop {
        let (mut from, mut o) = (0usize, base);
        for d in 0..last {
            from += idx[d] as usize * plan.bstride[d];
            o += idx[d] as usize * plan.ostride[d];
            coords[d] = bx.start[d] + idx[d];
        }
        f(from, o, &coords);
        // Next row: the odometer over the axes before the last, within the valid box.
        let Some(d) = (0..last).rev().find(|&d| idx[d] + 1 < bx.valid[d]) else { break };
        idx[d] += 1;
        idx[d + 1..].fill(0);
    }
}

/// Fold the valid items of one block (`vals`, the block's C order) into `acc`.
fn fold_block<T: Num>(plan: &Plan<'_>, bx: &BlockBox, vals: &[T], means: Option<&[f64]>, acc: &mut [T]) {
    let op = plan.op;
    let last = plan.g.ndim() - 1;
    let len = bx.valid[last] as usize;
    rows(plan, bx, |from, o, _| {
        let row = &vals[from..from + len];
        if plan.reduced[last] {
            let m = means.map_or(0.0, |m| m[o]);
            acc[o] = merge(op, acc[o], fold_row(op, row, m));
            return;
        }
        let cells = &mut acc[o..o + len];
        match (op, means) {
            (Op::SqDev, Some(m)) => {
                for ((c, x), m) in cells.iter_mut().zip(row).zip(&m[o..o + len]) {
                    *c = c.add(x.sqdev(*m));
                }
            }
            (Op::Sum, _) => cells.iter_mut().zip(row).for_each(|(c, x)| *c = c.add(*x)),
            _ => cells.iter_mut().zip(row).for_each(|(c, x)| *c = merge(op, *c, *x)),
        }
    });
}

/// Fold the valid items of one block into argmin/argmax cells (`acc` values, `idx` indices).
fn fold_arg<T: Num>(plan: &Plan<'_>, bx: &BlockBox, vals: &[T], acc: &mut [T], idx: &mut [u64]) {
    let min = plan.op == Op::ArgMin;
    let last = plan.g.ndim() - 1;
    let len = bx.valid[last] as usize;
    // The one reduced axis, when not all are.
    let axis = plan.reduced.iter().position(|&r| r).unwrap_or(last);
    rows(plan, bx, |from, o, coords| {
        let row = &vals[from..from + len];
        if plan.reduced[last] {
            // The whole row goes to one cell: its best item first.
            let (mut bj, mut bv) = (0, row[0]);
            if !bv.is_nan() {
                for (j, &x) in row.iter().enumerate().skip(1) {
                    if x.is_nan() {
                        (bj, bv) = (j, x);
                        break;
                    }
                    if (min && x < bv) || (!min && x > bv) {
                        (bj, bv) = (j, x);
                    }
                }
            }
            let i = match plan.flat.is_empty() {
                true => coords[last] + bj as u64,
                false => coords.iter().zip(&plan.flat).map(|(c, s)| c * s).sum::<u64>() + bj as u64,
            };
            if better(min, bv, i, acc[o], idx[o]) {
                (acc[o], idx[o]) = (bv, i);
            }
            return;
        }
        let i = coords[axis];
        for (j, &x) in row.iter().enumerate() {
            if better(min, x, i, acc[o + j], idx[o + j]) {
                (acc[o + j], idx[o + j]) = (x, i);
            }
        }
    });
}

/// One row folded to a value (`m`: the mean, for [`Op::SqDev`]).
fn fold_row<T: Num>(op: Op, row: &[T], m: f64) -> T {
    match op {
        Op::Sum => lanes(row, op, |a, x| a.add(x)),
        Op::SqDev => lanes(row, op, |a, x| a.add(x.sqdev(m))),
        Op::Prod => lanes(row, op, |a, x| a.mul(x)),
        _ => lanes(row, op, |a, x| merge(op, a, x)),
    }
}

/// `row` folded with `f` into eight running values (one per lane: independent chains the
/// compiler can vectorise), merged at the end.
#[inline(always)]
fn lanes<T: Num>(row: &[T], op: Op, f: impl Fn(T, T) -> T) -> T {
    let mut l = [T::identity(op); 8];
    let mut rows = row.chunks_exact(8);
    for r in &mut rows {
        for (a, &x) in l.iter_mut().zip(r) {
            *a = f(*a, x);
        }
    }
    let rest = rows.remainder().iter().fold(T::identity(op), |a, &x| f(a, x));
    let m = |a: T, b: T| merge(op, a, b);
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

    fn reduce_f64(a: &NdArray, op: Op, axes: &[usize], means: Option<&[f64]>, nt: usize) -> Result<Vec<f64>> {
        match reduce(&Source::Array(a, DType::F64), op, Acc::F64, axes, means, nt)?.cells {
            Cells::F64(v) => Ok(v),
            c => panic!("float64 cells expected, got {c:?}"),
        }
    }

    /// The reduction computed item by item over the whole array.
    fn naive(v: &[f64], op: Op, axes: &[usize], means: Option<&[f64]>) -> Vec<f64> {
        let kept: Vec<usize> = (0..3).filter(|d| !axes.contains(d)).collect();
        let cells: usize = kept.iter().map(|&d| SHAPE[d] as usize).product();
        let mut out = vec![<f64 as Num>::identity(op); cells];
        for (i, &x) in v.iter().enumerate() {
            let c = [i / 50, i / 5 % 10, i % 5];
            let o = kept.iter().fold(0, |acc, &d| acc * SHAPE[d] as usize + c[d]);
            let x = match op {
                Op::SqDev => (x - means.unwrap()[o]) * (x - means.unwrap()[o]),
                _ => x,
            };
            out[o] = if op == Op::SqDev { out[o] + x } else { merge(op, out[o], x) };
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

    /// An array of `dt` items (`bytes`, little-endian) with the test geometry.
    fn typed(dt: DType, bytes: &[u8]) -> NdArray {
        let ts = dt.itemsize();
        let cp = CParams { typesize: ts, nthreads: 1, clevel: 5, ..CParams::default() };
        let g = Geometry::new(&SHAPE, &CHUNKS, &BLOCKS, ts).unwrap();
        NdArray::from_buffer(SChunk::new(cp, DParams { nthreads: 1 }).unwrap(), g, Some(&dt.numpy_str()), bytes)
            .unwrap()
    }

    #[test]
    fn integers_wrap_in_64_bits_and_keep_their_sign() {
        let n: usize = SHAPE.iter().product::<u64>() as usize;
        // int8 items near the ends of their range: the sums leave int8 (NumPy sums in int64).
        let v: Vec<i8> = (0..n).map(|i| if i % 3 == 0 { -128 } else { 127 - (i % 7) as i8 }).collect();
        let a = typed(DType::I8, &v.iter().map(|&x| x as u8).collect::<Vec<_>>());
        let src = Source::Array(&a, DType::I8);
        let sum = reduce(&src, Op::Sum, Acc::I64, &[0, 1, 2], None, 2).unwrap();
        assert_eq!(sum.cells, Cells::I64(vec![v.iter().map(|&x| x as i64).sum()]));
        let min = reduce(&src, Op::Min, Acc::I64, &[0, 1, 2], None, 2).unwrap();
        assert_eq!(min.cells, Cells::I64(vec![-128]));
        // A product that overflows 64 bits wraps, whatever the order (multiplication mod 2^64).
        let big: Vec<u64> = (0..n as u64).map(|i| u64::MAX - i * 977).collect();
        let b = typed(DType::U64, &big.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
        let src = Source::Array(&b, DType::U64);
        let prod = reduce(&src, Op::Prod, Acc::U64, &[0, 1, 2], None, 3).unwrap();
        assert_eq!(prod.cells, Cells::U64(vec![big.iter().fold(1u64, |a, &x| a.wrapping_mul(x))]));
        let max = reduce(&src, Op::Max, Acc::U64, &[1], None, 1).unwrap();
        let Cells::U64(m) = max.cells else { panic!() };
        assert_eq!(m[0], u64::MAX, "uint64 items keep their top bit");
        // Floats refuse an integer accumulator, SqDev any but float64.
        assert!(reduce(&Source::Array(&a, DType::F32), Op::Sum, Acc::I64, &[0], None, 1).is_err());
        assert!(reduce(&src, Op::SqDev, Acc::U64, &[0], Some(&[0.0; 50]), 1).is_err());
    }

    #[test]
    fn argmin_argmax_take_the_first_index_and_the_first_nan() {
        let n: usize = SHAPE.iter().product::<u64>() as usize;
        // Few distinct values: many ties, spread over every chunk.
        let mut v: Vec<f64> = (0..n).map(|i| ((i * 7) % 5) as f64).collect();
        let a = array(&v);
        let flat = |op, v: &[f64]| reduce(&Source::Array(&array(v), DType::F64), op, Acc::F64, &[0, 1, 2], None, 2);
        // The first index of the minimum/maximum in C order, not the first block read.
        let first = |want: f64, v: &[f64]| v.iter().position(|&x| x == want).unwrap() as u64;
        assert_eq!(flat(Op::ArgMin, &v).unwrap().index, Some(vec![first(0.0, &v)]));
        assert_eq!(flat(Op::ArgMax, &v).unwrap().index, Some(vec![first(4.0, &v)]));
        // Along axis 1 (kept last axis) and axis 2 (reduced last axis), against a naive scan.
        for axis in [0usize, 1, 2] {
            let r = reduce(&Source::Array(&a, DType::F64), Op::ArgMin, Acc::F64, &[axis], None, 3).unwrap();
            let idx = r.index.unwrap();
            let kept: Vec<usize> = (0..3).filter(|&d| d != axis).collect();
            let mut want = vec![(f64::INFINITY, u64::MAX); idx.len()];
            for (i, &x) in v.iter().enumerate() {
                let c = [i / 50, i / 5 % 10, i % 5];
                let o = kept.iter().fold(0, |acc, &d| acc * SHAPE[d] as usize + c[d]);
                if x < want[o].0 {
                    want[o] = (x, c[axis] as u64);
                }
            }
            assert_eq!(idx, want.iter().map(|w| w.1).collect::<Vec<_>>(), "axis {axis}");
        }
        // Two NaNs: the first one wins both (in the last chunk, then earlier too).
        v[n - 2] = f64::NAN;
        v[n - 1] = f64::NAN;
        assert_eq!(flat(Op::ArgMin, &v).unwrap().index, Some(vec![n as u64 - 2]));
        v[61] = f64::NAN;
        assert_eq!(flat(Op::ArgMax, &v).unwrap().index, Some(vec![61]));
        assert!(reduce(&Source::Array(&a, DType::F64), Op::ArgMin, Acc::F64, &[0, 1], None, 1).is_err());
    }

    #[test]
    fn any_all_and_expressions_fold_without_storing_the_values() {
        let n: usize = SHAPE.iter().product::<u64>() as usize;
        let mut v: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
        v[200] = 0.0;
        let a = array(&v);
        let src = Source::Array(&a, DType::F64);
        let all = reduce(&src, Op::All, Acc::F64, &[0, 1, 2], None, 2).unwrap();
        assert_eq!(all.cells, Cells::F64(vec![0.0]));
        let any = reduce(&src, Op::Any, Acc::F64, &[0], None, 2).unwrap();
        let Cells::F64(c) = any.cells else { panic!() };
        assert!(c.iter().all(|&x| x == 1.0), "every cell has a non-zero item");
        // (a * 2 > 300).sum() over every axis and along axis 1, fused, against the items.
        let expr = oxblosc_expr::parse("a * 2.0 > 300.0").unwrap();
        let prog = expr.compile_columns(&[("a".to_string(), DType::F64)]).unwrap();
        let ops = [Operand::Array(&a)];
        let src = Source::Expr(&prog, &ops);
        let r = reduce(&src, Op::Sum, Acc::of(prog.dtype()), &[0, 1, 2], None, 2).unwrap();
        assert_eq!(r.cells, Cells::I64(vec![v.iter().filter(|&&x| x * 2.0 > 300.0).count() as i64]));
        let expr = oxblosc_expr::parse("a * a + 1.0").unwrap();
        let prog = expr.compile_columns(&[("a".to_string(), DType::F64)]).unwrap();
        let src = Source::Expr(&prog, &ops);
        let got = reduce(&src, Op::Max, Acc::F64, &[1], None, 1).unwrap();
        let sq: Vec<f64> = v.iter().map(|x| x * x + 1.0).collect();
        assert_eq!(got.cells, Cells::F64(naive(&sq, Op::Max, &[1], None)));
        assert_eq!(reduce(&src, Op::Max, Acc::F64, &[1], None, 3).unwrap(), got);
    }
}
