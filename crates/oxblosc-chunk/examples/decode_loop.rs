//! Decode one LZ4 + shuffle chunk of a smooth float32 field in a loop (for `perf`/callgrind):
//! `cargo run --release -p oxblosc-chunk --example decode_loop -- [MiB] [reps]`.

use oxblosc_chunk::{compress, decompress_into, CParams, DParams};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (mib, reps) = (args.first().copied().unwrap_or(8), args.get(1).copied().unwrap_or(200));
    let n = mib << 18;
    let src: Vec<u8> = (0..n)
        .flat_map(|i| {
            let (y, x) = ((i / 1440) as f32, (i % 1440) as f32);
            (280.0 + 20.0 * (y * 0.01).sin() + 5.0 * (x * 0.02).cos() + (i % 13) as f32 * 0.001).to_le_bytes()
        })
        .collect();
    let cp = CParams { codec: 1, clevel: 5, typesize: 4, nthreads: 1, ..CParams::default() };
    let chunk = compress(&src, &cp).expect("compress");
    let mut dst = vec![0u8; src.len()];
    let t = std::time::Instant::now();
    for _ in 0..reps {
        decompress_into(&chunk, &mut dst, &DParams { nthreads: 1 }).expect("decode");
    }
    let secs = t.elapsed().as_secs_f64();
    assert!(dst == src);
    println!("ratio {:.2}, {:.2} GB/s", src.len() as f64 / chunk.len() as f64, (src.len() * reps) as f64 / secs / 1e9);
}
