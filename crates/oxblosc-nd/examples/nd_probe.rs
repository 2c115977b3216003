//! Ad-hoc timing probe (not a benchmark): where does a 4-d read spend its time?
use std::time::Instant;

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;
use oxblosc_nd::{DimSlice, Geometry, NdArray};

fn main() {
    let shape = [20u64, 50, 150, 125];
    let n: u64 = shape.iter().product();
    let data: Vec<u8> = (0..n).flat_map(|i| (((i as f64) * 1e-6).sin() * 1e4).round().to_le_bytes()).collect();
    let nt = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let cp = CParams { typesize: 8, clevel: 1, nthreads: nt, ..CParams::default() };
    let g = Geometry::new(&shape, &[10, 25, 50, 50], &[3, 5, 10, 20], 8).unwrap();
    let t = Instant::now();
    let a = NdArray::from_buffer(SChunk::new(cp, DParams { nthreads: nt }).unwrap(), g, Some("<f8"), &data).unwrap();
    println!("write {:?} cbytes {}", t.elapsed(), a.schunk().cbytes());
    let full: Vec<DimSlice> = shape.iter().map(|&s| DimSlice::full(s)).collect();
    let t = Instant::now();
    let v = a.get_slice(&full).unwrap();
    println!("read {:?} ok {}", t.elapsed(), v == data);
    let t = Instant::now();
    for i in 0..a.schunk().nchunks() {
        a.schunk().decompress_chunk(i).unwrap();
    }
    println!("decompress all chunks serially {:?}", t.elapsed());
    for k in 0..4 {
        let mut sel = full.clone();
        sel[k] = DimSlice::new(7, 8, 1);
        let t = Instant::now();
        for _ in 0..5 {
            a.get_slice(&sel).unwrap();
        }
        println!("slice axis {k}: {:?} per read, blocks {}", t.elapsed() / 5, a.blocks_decoded());
    }
}
