//! NDCELL (filter 32) and NDMEAN (filter 33): the Blosc-registered b2nd filters.
//!
//! Both cut a b2nd block (C order, `blockshape` items) into cells of edge `meta` and write
//! the cells one after the other (cells in C order over the cell grid, each cell's items in
//! C order; cells at the upper edges are cut to what remains of the block). NDCELL writes
//! the items themselves (reversible: similar values end up next to each other); NDMEAN
//! writes every item of a cell as the cell's mean (lossy; floats only). Decoding scatters
//! the cells back. Byte-compatible with C-Blosc2's plugins, including two of their rules:
//! NDMEAN's cell edges are clipped to the block per dimension, but its cell origins advance
//! by the (clipped) edge of dimension 0 in every dimension; the mean is accumulated in the
//! element type, row by row.

use crate::registry::{Filter, FilterParams};

/// Largest number of dimensions of a b2nd array.
const MAX_DIM: usize = 16;

/// How one filter lays out its cells in a block.
struct Cells {
    /// Cell edge per dimension.
    edge: Vec<usize>,
    /// Multiplier of a cell's grid index, per dimension, giving its origin (see module doc).
    step: Vec<usize>,
}

fn check_block(name: &str, p: &FilterParams, len: usize) -> Result<(), String> {
    let shape = p.blockshape;
    if shape.is_empty() || shape.len() > MAX_DIM {
        return Err(format!(
            "{name} works on blocks of b2nd arrays (n-dimensional blocks), but this chunk has no block shape"
        ));
    }
    if p.meta == 0 {
        return Err(format!("{name} needs a cell edge (filters_meta) of at least 1"));
    }
    let items: usize = shape.iter().product();
    if items.checked_mul(p.typesize) != Some(len) {
        return Err(format!(
            "{name}: block of {len} bytes is not the block shape {shape:?} of {}-byte items",
            p.typesize
        ));
    }
    Ok(())
}

/// Visit every cell in order: `f(rows)` gets the cell's rows as (first item, length).
fn walk(
    shape: &[usize],
    cells: &Cells,
    mut f: impl FnMut(&[(usize, usize)]) -> Result<(), String>,
) -> Result<(), String> {
    let nd = shape.len();
    let grid: Vec<usize> = (0..nd).map(|i| shape[i].div_ceil(cells.edge[i])).collect();
    let mut stride = vec![1usize; nd];
    for i in (0..nd - 1).rev() {
        stride[i] = stride[i + 1] * shape[i + 1];
    }
    let total: usize = shape.iter().product();
    let mut rows = Vec::new();
    let mut ii = vec![0usize; nd];
    let mut pad = vec![0usize; nd];
    let mut kk = vec![0usize; nd];
    for _ in 0..grid.iter().product::<usize>() {
        let origin: usize = (0..nd).map(|i| ii[i] * cells.step[i] * stride[i]).sum();
        for i in 0..nd {
            let rest = shape[i] % cells.edge[i];
            pad[i] = if rest != 0 && ii[i] == grid[i] - 1 { rest } else { cells.edge[i] };
        }
        rows.clear();
        kk.iter_mut().for_each(|k| *k = 0);
        let nrows: usize = pad[..nd - 1].iter().product();
        for _ in 0..nrows {
            let start = origin + (0..nd - 1).map(|i| kk[i] * stride[i]).sum::<usize>();
            if start + pad[nd - 1] > total {
                return Err("cell outside the block".into());
            }
            rows.push((start, pad[nd - 1]));
            // Next row: C-order increment over the first nd - 1 dimensions of the cell.
            for i in (0..nd - 1).rev() {
                kk[i] += 1;
                if kk[i] < pad[i] {
                    break;
                }
                kk[i] = 0;
            }
        }
        f(&rows)?;
        for i in (0..nd).rev() {
            ii[i] += 1;
            if ii[i] < grid[i] {
                break;
            }
            ii[i] = 0;
        }
    }
    Ok(())
}

/// Gather the cells of `src` into `dst`, one after the other.
fn gather(shape: &[usize], cells: &Cells, ts: usize, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let mut o = 0;
    walk(shape, cells, |rows| {
        for &(start, len) in rows {
            let n = len * ts;
            dst[o..o + n].copy_from_slice(&src[start * ts..start * ts + n]);
            o += n;
        }
        Ok(())
    })
}

/// Scatter consecutive cells of `src` back to their places in `dst`.
fn scatter(shape: &[usize], cells: &Cells, ts: usize, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let mut i = 0;
    walk(shape, cells, |rows| {
        for &(start, len) in rows {
            let n = len * ts;
            dst[start * ts..start * ts + n].copy_from_slice(&src[i..i + n]);
            i += n;
        }
        Ok(())
    })
}

/// NDCELL: cells of edge `meta` in every dimension (not clipped to the block).
pub struct NdCell;

impl NdCell {
    fn cells(p: &FilterParams, len: usize) -> Result<Cells, String> {
        check_block("ndcell", p, len)?;
        let m = usize::from(p.meta);
        let nd = p.blockshape.len();
        let cell_items = m.checked_pow(nd as u32).unwrap_or(usize::MAX);
        if len < cell_items.saturating_mul(p.typesize) {
            return Err(format!("ndcell: a cell of edge {m} is larger than the block {:?}", p.blockshape));
        }
        Ok(Cells { edge: vec![m; nd], step: vec![m; nd] })
    }
}

impl Filter for NdCell {
    fn name(&self) -> &str {
        "ndcell"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let cells = Self::cells(p, src.len())?;
        gather(p.blockshape, &cells, p.typesize, src, dst)
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let cells = Self::cells(p, src.len())?;
        scatter(p.blockshape, &cells, p.typesize, src, dst)
    }
}

/// NDMEAN: every item of a cell becomes the cell's mean (float32/float64 only).
pub struct NdMean;

impl NdMean {
    fn cells(p: &FilterParams, len: usize) -> Result<Cells, String> {
        check_block("ndmean", p, len)?;
        if p.typesize != 4 && p.typesize != 8 {
            return Err(format!("ndmean works on float32 or float64 items, not {}-byte ones", p.typesize));
        }
        let edge: Vec<usize> = p.blockshape.iter().map(|&b| usize::from(p.meta).min(b)).collect();
        let step = vec![edge[0]; edge.len()];
        Ok(Cells { edge, step })
    }
}

/// The mean of a cell's rows, accumulated in the element type row by row, as `T` bytes.
macro_rules! cell_mean {
    ($t:ty, $src:expr, $rows:expr) => {{
        let mut sum: $t = 0.0;
        let mut n = 0usize;
        for &(start, len) in $rows {
            for k in start..start + len {
                let b = &$src[k * size_of::<$t>()..(k + 1) * size_of::<$t>()];
                sum += <$t>::from_le_bytes(b.try_into().expect("item size"));
            }
            n += len;
        }
        ((sum / n as $t).to_le_bytes().to_vec(), n)
    }};
}

impl Filter for NdMean {
    fn name(&self) -> &str {
        "ndmean"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let cells = Self::cells(p, src.len())?;
        let mut o = 0;
        walk(p.blockshape, &cells, |rows| {
            let (mean, n) = if p.typesize == 4 { cell_mean!(f32, src, rows) } else { cell_mean!(f64, src, rows) };
            for _ in 0..n {
                dst[o..o + mean.len()].copy_from_slice(&mean);
                o += mean.len();
            }
            Ok(())
        })
    }
    /// When the block is thinner than a cell in dimension 0, C-Blosc2's cell origins step by
    /// that thickness in every dimension, so cells overlap and some items belong to no cell;
    /// C-Blosc2 then refuses to read its own chunk. We scatter the cells in order (a later
    /// cell wins an item) and give 0 to items no cell covers (docs/plugins.md).
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let cells = Self::cells(p, src.len())?;
        if cells.step != cells.edge {
            dst.fill(0);
        }
        scatter(p.blockshape, &cells, p.typesize, src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(shape: &[usize], meta: u8, ts: usize) -> FilterParams<'_> {
        FilterParams { meta, typesize: ts, block: 0, block0: &[], blosc1: false, blockshape: shape }
    }

    #[test]
    fn ndcell_2d_orders_cells_and_round_trips() {
        // 4x5 block of u8, cells 2x2: the last column of cells is 2x1.
        let shape = [4, 5];
        let src: Vec<u8> = (0..20).collect();
        let mut out = vec![0; 20];
        NdCell.forward(&params(&shape, 2, 1), &src, &mut out).unwrap();
        assert_eq!(out, [0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 15, 16, 12, 13, 17, 18, 14, 19]);
        let mut back = vec![0; 20];
        NdCell.backward(&params(&shape, 2, 1), &out, &mut back).unwrap();
        assert_eq!(back, src);
    }

    /// Blocks thinner than a cell in dimension 0: overlapping cells, two columns no cell
    /// reaches. Those come out 0 whatever the output buffer held (C-Blosc2 refuses to read).
    #[test]
    fn ndmean_thin_block_uncovered_items_are_zero() {
        let shape = [3, 12];
        let src: Vec<u8> = (0..36).flat_map(|v| (v as f32).to_le_bytes()).collect();
        let mut enc = vec![0; src.len()];
        NdMean.forward(&params(&shape, 4, 4), &src, &mut enc).unwrap();
        let mut back = vec![0xFF; src.len()];
        NdMean.backward(&params(&shape, 4, 4), &enc, &mut back).unwrap();
        let got: Vec<f32> = back.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        // Cells at columns 0, 3, 6 (4 wide; a later cell wins), columns 10-11 uncovered.
        let row = [13.5, 13.5, 13.5, 16.5, 16.5, 16.5, 19.5, 19.5, 19.5, 19.5, 0., 0.];
        assert_eq!(got, [row, row, row].concat());
    }

    #[test]
    fn ndmean_writes_cell_means() {
        let shape = [2, 4];
        let src: Vec<u8> = [1f32, 2., 3., 4., 5., 6., 7., 8.].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![0; 32];
        NdMean.forward(&params(&shape, 2, 4), &src, &mut out).unwrap();
        let got: Vec<f32> = out.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(got, [3.5, 3.5, 3.5, 3.5, 5.5, 5.5, 5.5, 5.5]);
        let mut back = vec![0; 32];
        NdMean.backward(&params(&shape, 2, 4), &out, &mut back).unwrap();
        let got: Vec<f32> = back.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(got, [3.5, 3.5, 5.5, 5.5, 3.5, 3.5, 5.5, 5.5]);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let mut out = vec![0; 20];
        let src = vec![0u8; 20];
        assert!(NdCell.forward(&params(&[], 2, 1), &src, &mut out).unwrap_err().contains("no block shape"));
        assert!(NdCell.forward(&params(&[4, 5], 0, 1), &src, &mut out).is_err());
        assert!(NdCell.forward(&params(&[4, 4], 2, 1), &src, &mut out).unwrap_err().contains("not the block shape"));
        assert!(NdCell.forward(&params(&[4, 5], 9, 1), &src, &mut out).unwrap_err().contains("larger than the block"));
        assert!(NdMean.forward(&params(&[4, 5], 2, 1), &src, &mut out).unwrap_err().contains("float32"));
    }
}
