//! The two b2nd files written by C-Blosc2 (`vectors/c-blosc2-compat/plugins/test_data`):
//! metalayer, geometry checks against the frame, and every item compared with a reference
//! built independently here from the spec's layout formula (format spec 5.2) over the raw
//! decompressed chunks.

use std::path::PathBuf;

use oxblosc_frame::{open, Mode};
use oxblosc_nd::{DimSlice, NdArray};

fn vector(name: &str) -> PathBuf {
    let shared = std::env::var_os("OXBLOSC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let p = shared.join("vectors/c-blosc2-compat/plugins/test_data").join(name);
    assert!(p.exists(), "test vector {} missing; set OXBLOSC_SHARED", p.display());
    p
}

/// Reference: place every item of every raw chunk by the spec's formula, written out
/// longhand (no shared code with the crate's geometry module).
fn reference(a: &NdArray) -> Vec<u8> {
    let (shape, chunks, blocks, t) = (a.shape().to_vec(), a.chunks().to_vec(), a.blocks().to_vec(), a.typesize());
    let n = shape.len();
    let ext: Vec<u64> = (0..n).map(|d| chunks[d].div_ceil(blocks[d]) * blocks[d]).collect();
    let grid: Vec<u64> = (0..n).map(|d| shape[d].div_ceil(chunks[d])).collect();
    let nitems: u64 = shape.iter().product();
    let mut out = vec![0u8; nitems as usize * t];
    for g in 0..nitems {
        // global multi-index of item g (C order)
        let mut idx = vec![0u64; n];
        let mut r = g;
        for d in (0..n).rev() {
            idx[d] = r % shape[d];
            r /= shape[d];
        }
        let (mut ci, mut bi, mut ei) = (0u64, 0u64, 0u64);
        for d in 0..n {
            let c = idx[d] / chunks[d];
            let rr = idx[d] % chunks[d];
            ci = ci * grid[d] + c;
            bi = bi * (ext[d] / blocks[d]) + rr / blocks[d];
            ei = ei * blocks[d] + rr % blocks[d];
        }
        let chunk = a.schunk().decompress_chunk(ci as usize).unwrap();
        let block_items: u64 = blocks.iter().product();
        let off = ((bi * block_items + ei) as usize) * t;
        out[g as usize * t..(g as usize + 1) * t].copy_from_slice(&chunk[off..off + t]);
    }
    out
}

#[test]
fn item_prices_reads_like_the_spec_layout() {
    let s = open(vector("example_item_prices.b2nd"), Mode::Read).unwrap();
    let a = NdArray::from_schunk(s).unwrap();
    assert_eq!(a.shape(), &[12, 25, 250]);
    assert_eq!(a.chunks(), &[8, 10, 50]);
    assert_eq!(a.blocks(), &[4, 5, 10]);
    assert_eq!(a.typesize(), 4);
    assert_eq!(a.dtype(), Some("|u1"));
    let all = a.to_vec().unwrap();
    assert_eq!(all.len(), 75_000 * 4);
    assert!(all == reference(&a), "full read differs from the spec layout");
    let f: Vec<f32> = all.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    assert!(f.iter().all(|v| v.is_finite() && *v > 0.0), "prices are positive floats");
    // A slice with steps equals the same positions of the full read.
    let sel = [DimSlice::new(1, 12, 3), DimSlice::new(2, 25, 7), DimSlice::new(5, 250, 31)];
    let part = a.get_slice(&sel).unwrap();
    let mut expect = Vec::new();
    for i in (1..12).step_by(3) {
        for j in (2..25).step_by(7) {
            for k in (5..250).step_by(31) {
                let g = (i * 25 + j) * 250 + k;
                expect.extend_from_slice(&all[g * 4..g * 4 + 4]);
            }
        }
    }
    assert_eq!(part, expect);
}

#[test]
fn day_month_temp_reads_like_the_spec_layout() {
    let s = open(vector("example_day_month_temp.b2nd"), Mode::Read).unwrap();
    let a = NdArray::from_schunk(s).unwrap();
    assert_eq!((a.shape(), a.chunks(), a.blocks()), (&[400, 3][..], &[110, 3][..], &[57, 3][..]));
    assert_eq!(a.typesize(), 4);
    let all = a.to_vec().unwrap();
    assert!(all == reference(&a));
    // Row 123 alone (one block of chunk 1).
    let row = a.get_slice(&[DimSlice::new(123, 124, 1), DimSlice::full(3)]).unwrap();
    assert_eq!(row, all[123 * 12..124 * 12]);
}
