//! Automatic chunk and block shapes.
//!
//! Rule (ours; python-blosc2 4.14 picks shapes of the same kind):
//! * chunk target = L3 / 4, clamped to 1..=16 MiB, so a chunk and its decompressed copy
//!   stay in the last-level cache next to the other cores' working sets;
//! * block target = L2 / 8, clamped to 16..=256 KiB, so a block and the codec's scratch fit
//!   in L2 (and a one-item read decompresses little);
//! * shapes are filled in C order: whole trailing axes while they fit the target, then as
//!   many positions of the next axis as fit, 1 along the axes before it. A chunk (and a
//!   block inside it) is then one contiguous run of the array, so the way arrays are
//!   usually produced, slab by slab along the first axis (`a[i:j] = ...`, `append`),
//!   writes whole chunks: no chunk is read back and rewritten, and a file written that way
//!   holds no dead copies. (A square-ish shape made every slab touch every chunk column,
//!   partially: 5.7x python-blosc2's time and 2.5x the final file size while writing.)
//! * the chunk's partial axis (the one only part of which fits) is rounded down to two
//!   significant digits (1048 rows -> 1000), so slabs of round sizes (100, 500, 1000, 10^4
//!   rows) are whole chunks too (at most ~10% below the target); the block's partial axis
//!   then divides the chunk's when a divisor at least half as long exists (no padded blocks).
//! * a zero-length axis is treated as unbounded for the chunk (so the array can grow by
//!   `append`); a 0-d array has empty shapes.
//!
//! Cache sizes come from `oxblosc_chunk::config::cache_sizes` (the one config spot).

/// Chunk and block targets in bytes for this machine.
pub fn targets() -> (usize, usize) {
    let (_l1, l2, l3) = oxblosc_chunk::config::cache_sizes();
    ((l3 / 4).clamp(1 << 20, 16 << 20), (l2 / 8).clamp(16 << 10, 256 << 10))
}

/// The C-order shape within `limit` (per axis) holding at most `target_items` (at least 1
/// per axis): whole trailing axes while they fit, then part of the next one.
pub fn fill_c_order(limit: &[u64], target_items: u64) -> Vec<u64> {
    let mut s = vec![1u64; limit.len()];
    let mut room = target_items.max(1);
    for d in (0..limit.len()).rev() {
        let l = limit[d].max(1);
        if l > room {
            s[d] = room;
            break;
        }
        s[d] = l;
        room /= l;
    }
    s
}

/// `n` rounded down to two significant decimal digits (1048 -> 1000, 349 -> 340, 7 -> 7).
pub fn round_two_digits(n: u64) -> u64 {
    let mut unit = 1;
    while n / unit >= 100 {
        unit *= 10;
    }
    n / unit * unit
}

/// The axis along which only part of `limit` fits in `shape` (the first from the end).
fn partial_axis(shape: &[u64], limit: &[u64]) -> Option<usize> {
    (0..shape.len()).rev().find(|&d| shape[d] < limit[d])
}

/// Automatic (chunks, blocks) for `shape` and `typesize`, filling in only the axes the
/// caller left unspecified (`None`).
pub fn choose(shape: &[u64], typesize: usize, chunks: Option<&[u64]>, blocks: Option<&[u64]>) -> (Vec<u64>, Vec<u64>) {
    let (chunk_target, block_target) = targets();
    let ts = typesize.max(1) as u64;
    let chunks = match chunks {
        Some(c) => c.to_vec(),
        None => {
            let limit: Vec<u64> = shape.iter().map(|&s| if s == 0 { u64::MAX >> 1 } else { s }).collect();
            let mut c = fill_c_order(&limit, chunk_target as u64 / ts);
            if let Some(d) = partial_axis(&c, &limit) {
                c[d] = round_two_digits(c[d]);
            }
            // Given blocks: chunks hold at least one block.
            match blocks {
                Some(b) => c.iter().zip(b).map(|(&c, &b)| c.max(b)).collect(),
                None => c,
            }
        }
    };
    let blocks = match blocks {
        Some(b) => b.to_vec(),
        None => {
            let mut b: Vec<u64> =
                fill_c_order(&chunks, block_target as u64 / ts).iter().zip(&chunks).map(|(&b, &c)| b.min(c)).collect();
            if let Some(d) = partial_axis(&b, &chunks) {
                if let Some(div) = (b[d].div_ceil(2)..=b[d]).rev().find(|&x| x > 0 && chunks[d] % x == 0) {
                    b[d] = div;
                }
            }
            b
        }
    };
    (chunks, blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_in_c_order_within_limits() {
        assert_eq!(fill_c_order(&[1000, 1000], 10_000), vec![10, 1000]);
        assert_eq!(fill_c_order(&[3, 1000], 10_000), vec![3, 1000]);
        assert_eq!(fill_c_order(&[50, 100, 300], 100_000), vec![3, 100, 300]);
        assert_eq!(fill_c_order(&[10, 1 << 20], 1000), vec![1, 1000]);
        assert_eq!(fill_c_order(&[], 10), Vec::<u64>::new());
        assert_eq!(fill_c_order(&[5, 0], 0), vec![1, 1]);
        let s = fill_c_order(&[50, 100, 300, 250], 1 << 20);
        assert!(s.iter().product::<u64>() <= 1 << 20);
        assert!(s.iter().zip([50, 100, 300, 250]).all(|(&a, b)| a <= b));
    }

    #[test]
    fn rounds_the_partial_axis() {
        assert_eq!([1048, 349, 7, 100, 999, 123_456].map(round_two_digits), [1000, 340, 7, 100, 990, 120_000]);
        assert_eq!(partial_axis(&[3, 100, 300], &[50, 100, 300]), Some(0));
        assert_eq!(partial_axis(&[50, 100, 300], &[50, 100, 300]), None);
    }

    #[test]
    fn chunks_and_blocks_are_contiguous_runs() {
        // Whole rows, as many as fit: a slab of rows is whole chunks and whole blocks.
        let (c, b) = choose(&[100_000, 1000], 8, None, None);
        assert_eq!((c[1], b[1]), (1000, 1000));
        assert!(c[0] > 1 && (1..=c[0]).contains(&b[0]) && c[0] % b[0] == 0);
        let (c, _) = choose(&[0, 1000], 8, None, None);
        assert!(c[0] > 1 && c[1] == 1000, "an empty first axis still gets rows to append into");
    }

    #[test]
    fn choose_fills_only_missing() {
        // An empty trailing axis is unbounded: in C order it takes the whole target.
        let (c, b) = choose(&[100, 0], 8, None, None);
        assert_eq!(c[0], 1);
        assert!(c[1] > 1000 && b.iter().zip(&c).all(|(b, c)| b <= c));
        let (c, b) = choose(&[10, 10], 4, Some(&[5, 5]), None);
        assert_eq!((c, b), (vec![5, 5], vec![5, 5]));
        let (c, b) = choose(&[1 << 30], 8, None, Some(&[1 << 22]));
        assert_eq!((c[0] >= b[0], b), (true, vec![1 << 22]));
    }
}
