//! Writes into an in-memory array build every chunk in one parallel pass: the threads meet
//! once per write, not once per few chunks (each meeting costs a trip through the run queue
//! on a loaded machine). Files keep bounded batches.

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;
use oxblosc_nd::{DimSlice, Geometry, NdArray};

fn data(n: usize) -> Vec<u8> {
    (0..n as u64).flat_map(|i| ((i / 3) as u32).to_le_bytes()).collect()
}

#[test]
fn in_memory_writes_build_all_chunks_in_one_batch() {
    let cp = CParams { typesize: 4, nthreads: 2, clevel: 5, ..CParams::default() };
    let s = SChunk::new(cp, DParams { nthreads: 2 }).unwrap();
    // 10 x 8 = 80 chunks.
    let geom = Geometry::new(&[100, 64], &[10, 8], &[5, 4], 4).unwrap();
    let d = data(100 * 64);
    let mut a = NdArray::from_buffer(s, geom, Some("<u4"), &d).unwrap();
    assert_eq!(a.write_batches(), 1);
    assert_eq!(a.to_vec().unwrap(), d);
    // An unaligned slab (read-modify-write of the chunks it touches): one more batch.
    let sel = [DimSlice::new(3, 97, 1), DimSlice::new(1, 63, 1)];
    let part = data(94 * 62);
    a.set_slice(&sel, &part).unwrap();
    assert_eq!(a.write_batches(), 2);
    assert_eq!(a.get_slice(&sel).unwrap(), part);
}
