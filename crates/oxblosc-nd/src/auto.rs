//! Automatic chunk and block shapes.
//!
//! Rule (ours; python-blosc2 chooses differently and need not match):
//! * chunk target = L3 / 4, clamped to 1..=16 MiB, so a chunk and its decompressed copy
//!   stay in the last-level cache next to the other cores' working sets;
//! * block target = L2 / 8, clamped to 16..=256 KiB, so a block and the codec's scratch fit
//!   in L2 (and a one-item read decompresses little);
//! * a shape is grown evenly: start from 1 along every axis and, from the last axis to the
//!   first, double each axis (capped at the array's, resp. the chunk's, length) while the
//!   total stays within the target; when no axis can double any more, fill the remaining
//!   budget from the last axis backwards. Blocks are grown the same way inside the chunk.
//! * a zero-length axis is treated as unbounded for the chunk (so the array can grow by
//!   `append`); a 0-d array has empty shapes.
//!
//! Cache sizes come from `oxblosc_chunk::config::cache_sizes` (the one config spot).

/// Chunk and block targets in bytes for this machine.
pub fn targets() -> (usize, usize) {
    let (_l1, l2, l3) = oxblosc_chunk::config::cache_sizes();
    ((l3 / 4).clamp(1 << 20, 16 << 20), (l2 / 8).clamp(16 << 10, 256 << 10))
}

/// Grow a shape evenly within `limit` (per axis) until `target_items` would be exceeded.
pub fn grow_evenly(limit: &[u64], target_items: u64) -> Vec<u64> {
    let n = limit.len();
    let mut s = vec![1u64; n];
    let target = target_items.max(1);
    let prod = |s: &[u64]| s.iter().try_fold(1u64, |a, &x| a.checked_mul(x)).unwrap_or(u64::MAX);
    loop {
        let mut changed = false;
        for d in (0..n).rev() {
            let grown = (s[d] * 2).min(limit[d]);
            if grown > s[d] && prod(&s) / s[d] * grown <= target {
                s[d] = grown;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for d in (0..n).rev() {
        let others = prod(&s) / s[d];
        s[d] = (target / others).clamp(s[d], limit[d].max(s[d]));
    }
    s
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
            grow_evenly(&limit, chunk_target as u64 / ts)
        }
    };
    let blocks = match blocks {
        Some(b) => b.to_vec(),
        None => grow_evenly(&chunks, block_target as u64 / ts).iter().zip(&chunks).map(|(&b, &c)| b.min(c)).collect(),
    };
    (chunks, blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_evenly_and_respects_limits() {
        assert_eq!(grow_evenly(&[1000, 1000], 10_000), vec![64, 156]);
        assert_eq!(grow_evenly(&[3, 1000], 10_000), vec![3, 1000]);
        assert_eq!(grow_evenly(&[], 10), Vec::<u64>::new());
        assert_eq!(grow_evenly(&[5], 0), vec![1]);
        let s = grow_evenly(&[50, 100, 300, 250], 1 << 20);
        assert!(s.iter().product::<u64>() <= 1 << 20);
        assert!(s.iter().zip([50, 100, 300, 250]).all(|(&a, b)| a <= b));
    }

    #[test]
    fn choose_fills_only_missing() {
        let (c, b) = choose(&[100, 0], 8, None, None);
        assert_eq!(c[0], 100);
        assert!(c[1] > 0 && b.iter().zip(&c).all(|(b, c)| b <= c));
        let (c, b) = choose(&[10, 10], 4, Some(&[5, 5]), None);
        assert_eq!((c, b), (vec![5, 5], vec![5, 5]));
    }
}
