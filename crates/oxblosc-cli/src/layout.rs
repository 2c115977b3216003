//! How `.npy` <-> `.b2nd` conversions walk an array with bounded memory.
//!
//! A `.npy` file holds its items contiguously, in C order or (Fortran) with the first axis
//! fastest. Both are walked as a sequence of *pieces*: hyperslabs that are contiguous in the
//! file and at most `budget` bytes, so a conversion holds a piece or two whatever the array
//! size. Fortran order is handled as C order of the reversed shape (the file's own view), a
//! piece being transposed with [`reverse_axes`] on its way in or out.

use oxblosc::nd::DimSlice;

/// The first axis `d` whose trailing items (`shape[d+1..]`) fit `budget_items`, and how many
/// steps along `d` fit with them (at least 1).
fn split_axis(shape: &[u64], budget_items: u64) -> (usize, u64) {
    let n = shape.len();
    let mut trailing = 1u64;
    let mut d = n - 1;
    // Walk from the last axis back while the trailing block still fits.
    for k in (0..n).rev() {
        d = k;
        let next = trailing.saturating_mul(shape[k].max(1));
        if k == 0 || next > budget_items {
            break;
        }
        trailing = next;
    }
    // `trailing` = items of shape[d+1..]; now take as many steps along d as fit.
    let steps = (budget_items / trailing.max(1)).clamp(1, shape[d].max(1));
    (d, steps)
}

/// Chunks for a new array written from a C-order stream: 1 along the leading axes, full
/// along the trailing ones, so each chunk is one contiguous run of the stream of at most
/// `budget` bytes (or one trailing row when a row alone is larger).
pub fn stream_chunks(shape: &[u64], itemsize: usize, budget: usize) -> Vec<u64> {
    if shape.is_empty() {
        return Vec::new();
    }
    let (d, steps) = split_axis(shape, (budget / itemsize.max(1)).max(1) as u64);
    (0..shape.len())
        .map(|k| {
            if k < d {
                1
            } else if k == d {
                steps
            } else {
                shape[k].max(1)
            }
        })
        .collect()
}

/// The pieces of a C-order walk of `shape`: contiguous hyperslabs of at most `budget` bytes
/// (at least one trailing row), aligned to `chunks` along the split axis when a whole chunk
/// extent fits, in stream order.
pub fn pieces(shape: &[u64], chunks: &[u64], itemsize: usize, budget: usize) -> Vec<Vec<DimSlice>> {
    if shape.is_empty() || shape.contains(&0) {
        return Vec::new();
    }
    let (d, mut steps) = split_axis(shape, (budget / itemsize.max(1)).max(1) as u64);
    let c = chunks.get(d).copied().unwrap_or(1).max(1);
    if steps >= c {
        steps -= steps % c;
    }
    let mut out = Vec::new();
    // Odometer over the leading axes 0..d, then steps along d.
    let mut idx = vec![0u64; d];
    loop {
        let mut start = 0;
        while start < shape[d] {
            let stop = (start + steps).min(shape[d]);
            let mut sel: Vec<DimSlice> = shape.iter().map(|&s| DimSlice::full(s)).collect();
            for (k, &i) in idx.iter().enumerate() {
                sel[k] = DimSlice::new(i, i + 1, 1);
            }
            sel[d] = DimSlice::new(start, stop, 1);
            out.push(sel);
            start = stop;
        }
        // Next leading index.
        let mut k = d;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// The C-order bytes of the array whose C-order bytes are `src` with shape `src_shape`,
/// axes reversed (the transpose). Equivalently: Fortran-order bytes <-> C-order bytes of
/// the same logical array, `src_shape` being the reversed logical shape.
pub fn reverse_axes(src: &[u8], src_shape: &[u64], itemsize: usize) -> Vec<u8> {
    let mut out = vec![0u8; src.len()];
    let n = src_shape.len();
    if n <= 1 || src.is_empty() {
        out.copy_from_slice(src);
        return out;
    }
    // Output shape r = reversed src shape; output axis k advances the source by the Fortran
    // stride of r: f[k] = prod(r[..k]) items. The output's C strides: c[k] = prod(r[k+1..]).
    let r: Vec<usize> = src_shape.iter().rev().map(|&x| x as usize).collect();
    let mut f = vec![1usize; n];
    let mut c = vec![1usize; n];
    for k in 1..n {
        f[k] = f[k - 1] * r[k - 1];
    }
    for k in (0..n - 1).rev() {
        c[k] = c[k + 1] * r[k + 1];
    }
    // For each index of the middle axes, transpose the (axis 0, axis n-1) plane in tiles:
    // the source is contiguous along axis 0, the output along axis n-1.
    const TILE: usize = 32;
    let (a, b) = (r[0], r[n - 1]);
    let mut mid = vec![0usize; n - 2];
    loop {
        let mo: usize = (1..n - 1).map(|k| mid[k - 1] * c[k]).sum();
        let ms: usize = (1..n - 1).map(|k| mid[k - 1] * f[k]).sum();
        for i0 in (0..a).step_by(TILE) {
            for j0 in (0..b).step_by(TILE) {
                for i in i0..(i0 + TILE).min(a) {
                    for j in j0..(j0 + TILE).min(b) {
                        let o = (i * c[0] + mo + j) * itemsize;
                        let s = (i + ms + j * f[n - 1]) * itemsize;
                        out[o..o + itemsize].copy_from_slice(&src[s..s + itemsize]);
                    }
                }
            }
        }
        let mut k = n - 2;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            mid[k] += 1;
            if mid[k] < r[k + 1] {
                break;
            }
            mid[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Item index of the C-order position `idx` in `shape`.
    fn c_index(shape: &[u64], idx: &[u64]) -> u64 {
        shape.iter().zip(idx).fold(0, |acc, (&s, &i)| acc * s + i)
    }

    #[test]
    fn reverse_axes_is_the_transpose() {
        for shape in [vec![3u64, 5], vec![2, 3, 4], vec![40, 1, 70], vec![2, 3, 4, 5], vec![7]] {
            let n: u64 = shape.iter().product();
            let src: Vec<u8> = (0..n).flat_map(|i| (i as u16).to_le_bytes()).collect();
            let out = reverse_axes(&src, &shape, 2);
            let rshape: Vec<u64> = shape.iter().rev().copied().collect();
            // Every output item (C order of rshape) is the source item at the reversed index.
            let mut idx = vec![0u64; shape.len()];
            for k in 0..n {
                let mut rem = k;
                for d in (0..rshape.len()).rev() {
                    idx[d] = rem % rshape[d];
                    rem /= rshape[d];
                }
                let ridx: Vec<u64> = idx.iter().rev().copied().collect();
                let s = c_index(&shape, &ridx) as usize;
                assert_eq!(&out[k as usize * 2..k as usize * 2 + 2], &src[s * 2..s * 2 + 2], "{shape:?}");
            }
            assert_eq!(reverse_axes(&out, &rshape, 2), src);
        }
    }

    #[test]
    fn pieces_tile_the_array_in_stream_order() {
        for (shape, chunks, budget) in [
            (vec![100u64, 30], vec![7u64, 30], 8 * 30 * 20),
            (vec![5, 1000], vec![5, 1000], 8 * 100),
            (vec![4, 3, 2], vec![1, 1, 2], 16),
            (vec![9], vec![4], 8 * 4),
        ] {
            let ps = pieces(&shape, &chunks, 8, budget);
            let mut next = 0u64;
            for p in &ps {
                let items: u64 = p.iter().map(DimSlice::len).product();
                assert!(items * 8 <= budget as u64 || items == *shape.last().unwrap(), "{shape:?}");
                let first: Vec<u64> = p.iter().map(|s| s.start).collect();
                assert_eq!(c_index(&shape, &first), next, "{shape:?}: contiguous, in order");
                next += items;
            }
            assert_eq!(next, shape.iter().product::<u64>());
        }
    }

    #[test]
    fn stream_chunks_are_contiguous_runs() {
        assert_eq!(stream_chunks(&[1000, 30], 8, 8 * 30 * 10), vec![10, 30]);
        assert_eq!(stream_chunks(&[10, 1000, 30], 8, 8 * 30 * 10), vec![1, 10, 30]);
        assert_eq!(stream_chunks(&[3, 4], 8, 1 << 20), vec![3, 4]);
        assert_eq!(stream_chunks(&[2, 1_000_000], 8, 1000), vec![1, 125]);
    }
}
