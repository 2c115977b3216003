//! The in-kernel query: a condition evaluated block by block over compressed columns.
//!
//! Columns share one chunk/block grid. Chunks are visited in order; the blocks of a chunk are
//! spread over `nthreads` workers. For each block a worker first asks the condition whether
//! the block's statistics allow a match at all (`skip`), then decodes only the columns the
//! condition reads into its own scratch buffers, evaluates, and when rows match decodes the
//! output columns of that block and gathers their values. A chunk's compressed bytes are
//! fetched once per column, and only if some block of it needs the column, so memory stays
//! at a few blocks per thread plus one compressed chunk per column, whatever the table size.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use oxblosc_chunk::decompress::decompress_ranges;
use oxblosc_chunk::parallel::pool;
use oxblosc_nd::NdArray;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::kind::Kind;
use crate::stats::{self, Range};

/// One column taking part in a scan.
pub struct Column<'a> {
    pub name: &'a str,
    pub arr: &'a NdArray,
    pub kind: Kind,
    /// Statistics records (see [`crate::stats`]), one per block of the grid; `None` (or the
    /// wrong count) disables skipping on this column.
    pub stats: Option<&'a [u8]>,
}

/// The decoded rows of one input column in one block (8-byte aligned).
pub struct ColumnBlock<'b> {
    pub kind: Kind,
    pub bytes: &'b [u8],
}

/// A condition evaluated on decoded blocks. Implemented over the expression engine's
/// compiled programs; tests implement it with closures.
pub trait BlockFilter: Sync {
    /// Set `mask` to `rows` booleans: which rows of the block satisfy the condition.
    /// `inputs` follow the order of [`Scan::inputs`].
    fn eval(&self, inputs: &[ColumnBlock<'_>], rows: usize, mask: &mut Vec<bool>) -> std::result::Result<(), String>;

    /// False only when no row whose input values lie in `ranges` (one per input, `None`:
    /// unknown) can satisfy the condition. The default never skips.
    fn may_match(&self, _ranges: &[Option<Range>]) -> bool {
        true
    }
}

/// What to scan and what to return.
pub struct Scan<'a> {
    pub columns: Vec<Column<'a>>,
    /// Columns the condition reads, in the condition's order (indices into `columns`).
    pub inputs: Vec<usize>,
    /// Columns whose values of matching rows are returned (indices into `columns`).
    pub outputs: Vec<usize>,
    /// Row validity (bool per row, python-blosc2's `_valid_rows`): rows marked false never match.
    pub valid: Option<&'a NdArray>,
    /// Rows to scan, from row 0.
    pub nrows: u64,
    pub nthreads: usize,
    /// Use block statistics to skip blocks (false: decode every block; results are equal).
    pub skip: bool,
    /// Return the positions of matching rows (false: only count them).
    pub positions: bool,
}

/// The rows a scan found.
#[derive(Debug, Default)]
pub struct Found {
    /// Matching rows, ascending (empty when positions were not asked for).
    pub positions: Vec<u64>,
    /// Per output column, the matching rows' values back to back (`itemsize` bytes each).
    pub values: Vec<Vec<u8>>,
    pub count: u64,
    /// Blocks of the grid the condition was evaluated on.
    pub blocks_scanned: u64,
    /// Blocks passed over because their statistics rule out a match.
    pub blocks_skipped: u64,
    /// Column blocks decompressed (inputs, validity and outputs).
    pub column_blocks_decoded: u64,
}

#[derive(Default)]
struct BlockOut {
    positions: Vec<u64>,
    values: Vec<Vec<u8>>,
    count: u64,
}

/// The shared grid of a scan: rows per chunk and per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub chunk_rows: u64,
    pub block_rows: u64,
}

impl Grid {
    /// The grid of a 1-d column.
    pub fn of(name: &str, arr: &NdArray) -> Result<Grid> {
        if arr.ndim() != 1 {
            return Err(Error::layout(name, format!("has {} dimensions, a table column has 1", arr.ndim())));
        }
        let (c, b) = (arr.chunks()[0], arr.blocks()[0]);
        if c == 0 || b == 0 {
            return Err(Error::layout(name, "has empty chunks or blocks"));
        }
        Ok(Grid { chunk_rows: c, block_rows: b })
    }

    fn blocks_per_chunk(&self) -> u64 {
        self.chunk_rows.div_ceil(self.block_rows)
    }
}

thread_local! {
    /// Per-thread decoded blocks: one buffer per column of the scan, plus the mask.
    static SCRATCH: RefCell<(Vec<Vec<u64>>, Vec<bool>)> = RefCell::default();
}

/// Run `scan` with `filter`.
pub fn run(scan: &Scan<'_>, filter: &dyn BlockFilter) -> Result<Found> {
    let grid = check(scan)?;
    let ncols = scan.columns.len();
    let nchunks = scan.nrows.div_ceil(grid.chunk_rows);
    let bpc = grid.blocks_per_chunk();
    let stats_ok: Vec<bool> = scan
        .columns
        .iter()
        .map(|c| {
            let total_blocks = scan.nrows.div_ceil(grid.block_rows);
            // Records are per `block_rows` rows of the whole column: they line up with the
            // (chunk, block) grid only when blocks tile chunks exactly.
            match (c.stats, stats::record_len(c.kind)) {
                (Some(s), Some(rl)) => {
                    grid.chunk_rows % grid.block_rows == 0 && s.len() as u64 >= total_blocks * rl as u64
                }
                _ => false,
            }
        })
        .collect();
    let decoded = AtomicU64::new(0);
    let (mut scanned, mut skipped) = (0u64, 0u64);
    let mut found = Found { values: vec![Vec::new(); scan.outputs.len()], ..Found::default() };
    let threads = scan.nthreads.max(1);
    // Which blocks can match (statistics), before anything is fetched.
    let mut live: Vec<(u64, u64)> = Vec::new();
    for ci in 0..nchunks {
        let chunk_row0 = ci * grid.chunk_rows;
        let nblocks = (scan.nrows - chunk_row0).div_ceil(grid.block_rows).min(bpc);
        for bi in 0..nblocks {
            let g = (chunk_row0 / grid.block_rows + bi) as usize;
            let keep = !scan.skip || {
                let ranges: Vec<Option<Range>> = scan
                    .inputs
                    .iter()
                    .map(|&i| {
                        let c = &scan.columns[i];
                        let rl = stats::record_len(c.kind)?;
                        let s = c.stats.filter(|_| stats_ok[i])?;
                        stats::range(c.kind, &s[g * rl..(g + 1) * rl])
                    })
                    .collect();
                filter.may_match(&ranges)
            };
            if keep {
                live.push((ci, bi));
            } else {
                skipped += 1;
            }
        }
    }
    scanned += live.len() as u64;
    // Chunks borrowed from memory or a map cost nothing to fetch: all blocks go to the
    // workers at once. Chunks read from a file are fetched once per chunk (batches).
    let borrowed = match live.first() {
        None => true,
        Some(&(ci, _)) => matches!(scan.columns[0].arr.schunk().get_chunk(ci as usize), Ok(Cow::Borrowed(_))),
    };
    let batches: Vec<&[(u64, u64)]> =
        if borrowed { vec![&live[..]] } else { live.chunk_by(|a, b| a.0 == b.0).collect() };
    // Buffers of chunks read in one batch, reused by the next ones.
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::default();
    for batch in batches {
        let cache: Vec<OnceLock<Result<Cow<'_, [u8]>>>> = (0..=ncols).map(|_| OnceLock::new()).collect();
        let fetch = |i: usize, ci: u64| -> Result<Cow<'_, [u8]>> {
            let (name, arr) = if i == ncols {
                ("_valid_rows", scan.valid.expect("validity fetched only when present"))
            } else {
                (scan.columns[i].name, scan.columns[i].arr)
            };
            let err = |e: oxblosc_frame::Error| Error::column(name, e.to_string());
            if borrowed {
                return arr.schunk().get_chunk(ci as usize).map_err(err);
            }
            let read = || {
                let mut buf = spare.lock().map(|mut s| s.pop()).ok().flatten().unwrap_or_default();
                match arr.schunk().get_chunk_in(ci as usize, &mut buf).map_err(err)? {
                    Some(b) => Ok(Cow::Borrowed(b)),
                    None => Ok(Cow::Owned(buf)),
                }
            };
            match cache[i].get_or_init(read) {
                Ok(c) => Ok(Cow::Borrowed(&c[..])),
                Err(e) => Err(e.clone()),
            }
        };
        let one = |&(ci, bi): &(u64, u64)| block(scan, filter, grid, ci, bi, &fetch, &decoded);
        let outs: Vec<Result<BlockOut>> = if threads == 1 || batch.len() == 1 {
            batch.iter().map(one).collect()
        } else {
            pool(threads).install(|| batch.par_iter().map(one).collect())
        };
        if let Ok(mut s) = spare.lock() {
            s.extend(cache.into_iter().filter_map(|c| match c.into_inner() {
                Some(Ok(Cow::Owned(v))) => Some(v),
                _ => None,
            }));
        }
        for o in outs {
            let o = o?;
            found.count += o.count;
            found.positions.extend_from_slice(&o.positions);
            for (dst, v) in found.values.iter_mut().zip(o.values) {
                dst.extend_from_slice(&v);
            }
        }
    }
    found.blocks_scanned = scanned;
    found.blocks_skipped = skipped;
    found.column_blocks_decoded = decoded.load(Ordering::Relaxed);
    Ok(found)
}

/// Evaluate block `bi` of chunk `ci`: decode the inputs (and validity), run the condition,
/// and for matching rows decode and gather the outputs.
fn block<'c>(
    scan: &Scan<'_>,
    filter: &dyn BlockFilter,
    grid: Grid,
    ci: u64,
    bi: u64,
    fetch: &(dyn Fn(usize, u64) -> Result<Cow<'c, [u8]>> + Sync),
    decoded: &AtomicU64,
) -> Result<BlockOut> {
    let ncols = scan.columns.len();
    let chunk_row0 = ci * grid.chunk_rows;
    let row0 = chunk_row0 + bi * grid.block_rows;
    let rows = grid.block_rows.min(grid.chunk_rows - bi * grid.block_rows).min(scan.nrows - row0) as usize;
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (bufs, mask) = &mut *guard;
        if bufs.len() < ncols + 1 {
            bufs.resize_with(ncols + 1, Vec::new);
        }
        let mut done = vec![false; ncols + 1];
        let mut decode = |i: usize, bufs: &mut Vec<Vec<u64>>| -> Result<()> {
            if done[i] {
                return Ok(());
            }
            let size = if i == ncols { 1 } else { scan.columns[i].kind.itemsize() };
            let chunk = fetch(i, ci)?;
            let lo = (bi * grid.block_rows) as usize * size;
            let n = rows * size;
            let buf = &mut bufs[i];
            buf.resize(n.div_ceil(8), 0);
            let dst = &mut bytemuck::cast_slice_mut::<u64, u8>(buf)[..n];
            decompress_ranges(&chunk, &[(lo, lo + n)], dst, 1).map_err(|e| {
                let name = if i == ncols { "_valid_rows" } else { scan.columns[i].name };
                Error::column(name, format!("chunk {ci}, rows {row0}..{}: {e}", row0 + rows as u64))
            })?;
            decoded.fetch_add(1, Ordering::Relaxed);
            done[i] = true;
            Ok(())
        };
        for &i in &scan.inputs {
            decode(i, bufs)?;
        }
        if scan.valid.is_some() {
            decode(ncols, bufs)?;
        }
        {
            let views: Vec<ColumnBlock<'_>> = scan
                .inputs
                .iter()
                .map(|&i| {
                    let c = &scan.columns[i];
                    ColumnBlock {
                        kind: c.kind,
                        bytes: &bytemuck::cast_slice::<u64, u8>(&bufs[i])[..rows * c.kind.itemsize()],
                    }
                })
                .collect();
            filter.eval(&views, rows, mask).map_err(Error::Eval)?;
        }
        if mask.len() != rows {
            return Err(Error::Eval(format!("the condition gave {} values for a block of {rows} rows", mask.len())));
        }
        if scan.valid.is_some() {
            let v = &bytemuck::cast_slice::<u64, u8>(&bufs[ncols])[..rows];
            mask.iter_mut().zip(v).for_each(|(m, &ok)| *m &= ok != 0);
        }
        let count = mask.iter().filter(|&&m| m).count();
        let mut out = BlockOut { count: count as u64, ..BlockOut::default() };
        if count == 0 {
            return Ok(out);
        }
        if scan.positions {
            out.positions = mask.iter().enumerate().filter(|(_, &m)| m).map(|(r, _)| row0 + r as u64).collect();
        }
        for &o in &scan.outputs {
            decode(o, bufs)?;
            let size = scan.columns[o].kind.itemsize();
            let src = bytemuck::cast_slice::<u64, u8>(&bufs[o]);
            let mut vals = Vec::with_capacity(count * size);
            for (r, _) in mask.iter().enumerate().filter(|(_, &m)| m) {
                vals.extend_from_slice(&src[r * size..(r + 1) * size]);
            }
            out.values.push(vals);
        }
        Ok(out)
    })
}

/// Every column (and the validity column) 1-d, on one grid, at least `nrows` long.
fn check(scan: &Scan<'_>) -> Result<Grid> {
    let mut grid = None;
    let all = scan.columns.iter().map(|c| (c.name, c.arr)).chain(scan.valid.map(|v| ("_valid_rows", v)));
    for (name, arr) in all {
        let g = Grid::of(name, arr)?;
        if arr.shape()[0] < scan.nrows {
            return Err(Error::layout(name, format!("holds {} rows, the table {}", arr.shape()[0], scan.nrows)));
        }
        match grid {
            None => grid = Some(g),
            Some(g0) if g0 != g => {
                return Err(Error::layout(
                    name,
                    format!(
                        "chunks/blocks of {}/{} rows differ from the other columns' {}/{}",
                        g.chunk_rows, g.block_rows, g0.chunk_rows, g0.block_rows
                    ),
                ))
            }
            _ => {}
        }
    }
    for c in &scan.columns {
        if c.kind.itemsize() != c.arr.typesize() {
            return Err(Error::layout(
                c.name,
                format!("items of {} bytes, the dtype says {}", c.arr.typesize(), c.kind.itemsize()),
            ));
        }
    }
    if let Some(&i) = scan.inputs.iter().chain(&scan.outputs).find(|&&i| i >= scan.columns.len()) {
        return Err(Error::Eval(format!("column index {i} out of range")));
    }
    grid.ok_or_else(|| Error::layout("table", "has no columns"))
}
