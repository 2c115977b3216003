//! HDF5 chunk and Blosc block shapes for a dataset, the way the second partition wants them.
//!
//! HDF5 chunks are made big (about the L3 cache: fewer chunk-index entries, better threading
//! across blocks, one read per chunk for large reads) while the Blosc blocks inside stay about
//! half the L2 cache (a block and its decoded copy fit L2; a small read decodes little). The
//! chunk is filled in C order (whole trailing axes while they fit, then part of the next one,
//! rounded down to two significant digits), so writing slabs along the first axis writes whole
//! chunks. The block shape is the one the Blosc2 filter derives from a block size
//! ([`super::codec::block_shape`]), so the filter and a direct chunk write agree on it.

use super::cdvalues::MAX_RANK;
use super::codec::block_shape;
use crate::chunk::format::MAX_BUFFERSIZE;

/// A proposal: shapes, their byte sizes, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub chunks: Vec<u64>,
    pub blocks: Vec<u64>,
    pub chunk_bytes: u64,
    pub block_bytes: u64,
    pub reason: String,
}

/// HDF5 chunk dims are 32-bit.
const MAX_DIM: u64 = u32::MAX as u64;

/// The default targets in bytes: (chunk, block) from this machine's (L2, L3).
pub fn default_targets() -> (u64, u64) {
    let (_l1, l2, l3) = crate::chunk::config::cache_sizes();
    ((l3 as u64).max(1 << 20), (l2 as u64 / 2).clamp(32 << 10, 4 << 20))
}

/// Propose chunks and blocks for a dataset of `shape` (0 = an axis that will grow) and items
/// of `itemsize` bytes; `chunk_target`/`block_target` in bytes (None: from the caches).
pub fn suggest(
    shape: &[u64],
    itemsize: usize,
    chunk_target: Option<u64>,
    block_target: Option<u64>,
) -> Result<Suggestion, String> {
    if shape.is_empty() {
        return Err("a scalar (0-d) dataset cannot be chunked".into());
    }
    if itemsize == 0 {
        return Err("items of 0 bytes cannot be chunked".into());
    }
    let (dc, db) = default_targets();
    let ts = itemsize as u64;
    // Blosc chunks hold under 2 GiB (HDF5's own limit is 4 GiB).
    let limit = MAX_BUFFERSIZE as u64;
    let chunk_target = chunk_target.unwrap_or(dc).clamp(ts, limit);
    let block_target = block_target.unwrap_or(db).clamp(ts, chunk_target);
    let bound: Vec<u64> = shape.iter().map(|&s| if s == 0 { MAX_DIM } else { s.min(MAX_DIM) }).collect();
    let mut chunks = crate::nd::auto::fill_c_order(&bound, chunk_target / ts);
    if let Some(d) = (0..chunks.len()).rev().find(|&d| chunks[d] < bound[d]) {
        chunks[d] = crate::nd::auto::round_two_digits(chunks[d]);
    }
    let items: u64 = chunks.iter().product();
    let block_items = (block_target / ts).max(1);
    let blocks = if (2..=MAX_RANK).contains(&chunks.len()) {
        block_shape(&chunks, block_items)
    } else {
        // Rank 1 (and above 8): flat blocks of the C-order chunk.
        let mut b = vec![1; chunks.len()];
        b[chunks.len() - 1] = block_items.min(items);
        if chunks.len() == 1 {
            b
        } else {
            crate::nd::auto::fill_c_order(&chunks, block_items)
        }
    };
    let chunk_bytes = items * ts;
    let block_bytes = blocks.iter().product::<u64>() * ts;
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let kib = |b: u64| b as f64 / 1024.0;
    let whole = chunks.iter().zip(&bound).all(|(c, b)| c == b);
    let chunk_why = if chunk_target == dc.clamp(ts, limit) { "about the L3 cache" } else { "the target given" };
    let block_why = if block_target == db.clamp(ts, chunk_target) {
        "half the L2 cache: a block and its decoded copy fit in it"
    } else {
        "the target given"
    };
    let layout = if whole {
        "the whole dataset fits one chunk"
    } else {
        "filled in C order, so slabs along the first axis write whole chunks"
    };
    let reason = format!(
        "chunks of {:.1} MiB ({chunk_why}: few HDF5 index entries, many blocks per chunk to \
         compress in parallel; {layout}); blocks of {:.0} KiB ({block_why}), the least a read decodes",
        mib(chunk_bytes),
        kib(block_bytes),
    );
    Ok(Suggestion { chunks, blocks, chunk_bytes, block_bytes, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_chunks_small_blocks_within_limits() {
        for rank in 1..=8usize {
            for ts in [1usize, 2, 4, 8, 16] {
                for shape in [vec![1u64; rank], vec![7; rank], vec![100_000; rank], vec![0; rank]] {
                    let s = suggest(&shape, ts, Some(32 << 20), Some(128 << 10)).unwrap();
                    assert!(s.chunk_bytes <= 32 << 20 && s.chunk_bytes <= MAX_BUFFERSIZE as u64, "{s:?}");
                    assert!(s.block_bytes <= (128 << 10).max(ts as u64), "{s:?}");
                    for ((&c, &b), &n) in s.chunks.iter().zip(&s.blocks).zip(&shape) {
                        assert!(c >= 1 && b >= 1 && b <= c && (n == 0 || c <= n), "{s:?}");
                    }
                    // The Blosc2 filter derives the same block shape from the block size.
                    if (2..=8).contains(&rank) {
                        assert_eq!(block_shape(&s.chunks, s.blocks.iter().product()), s.blocks);
                    }
                }
            }
        }
        // Tiny: one chunk; huge targets stay under Blosc's 2 GiB.
        assert_eq!(suggest(&[3, 4], 8, None, None).unwrap().chunks, [3, 4]);
        let s = suggest(&[1 << 40], 16, Some(1 << 40), None).unwrap();
        assert!(s.chunk_bytes <= MAX_BUFFERSIZE as u64 && s.chunks[0] <= MAX_DIM);
        assert_eq!(suggest(&[10_000, 1000], 4, Some(8 << 20), None).unwrap().chunks, [2000, 1000]);
        assert!(suggest(&[], 4, None, None).is_err() && suggest(&[4], 0, None, None).is_err());
        assert!(suggest(&[4], 8, None, None).unwrap().reason.contains("L3"));
    }
}
