//! The naive reference for checking the slice planner: the C-order item offset of every
//! position a selection visits, computed one multi-index at a time with no chunk or block
//! knowledge. Used by the integration tests and the `nd_slices` fuzz target, never by the
//! read/write paths (it is O(selection) in memory).

use crate::geometry::DimSlice;

/// Item offsets (C order, in items) of every selected multi-index, in selection order.
pub fn offsets(shape: &[u64], sel: &[DimSlice]) -> Vec<usize> {
    let mut strides = vec![1u64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let counts: Vec<u64> = sel.iter().map(DimSlice::len).collect();
    let total: u64 = counts.iter().product();
    (0..total)
        .map(|k| {
            let (mut r, mut off) = (k, 0);
            for d in (0..sel.len()).rev() {
                off += (sel[d].start + (r % counts[d]) * sel[d].step) * strides[d];
                r /= counts[d];
            }
            off as usize
        })
        .collect()
}
