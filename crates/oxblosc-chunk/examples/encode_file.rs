//! Compress a raw file in a loop, for profiles (perf, callgrind) next to another library
//! compressing the same bytes:
//! `cargo run --release -p oxblosc-chunk --example encode_file -- FILE CODEC CLEVEL FILTER TYPESIZE [reps] [nthreads]`
//! (CODEC and FILTER as numeric ids: codec 0 blosclz, 1 lz4, 2 lz4hc, 4 zlib, 5 zstd; filter
//! 0 none, 1 shuffle, 2 bitshuffle).

use oxblosc_chunk::{compress_into, max_compressed_len, CParams};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize| -> usize { args[i].parse().expect("a number") };
    let src = std::fs::read(&args[0]).expect("read the input file");
    let mut cp = CParams {
        codec: num(1) as u8,
        clevel: num(2) as u8,
        typesize: num(4),
        nthreads: args.get(6).map_or(1, |_| num(6)),
        ..CParams::default()
    };
    cp.filters[5] = num(3) as u8;
    let reps: usize = args.get(5).and_then(|a| a.parse().ok()).unwrap_or(50);
    // Into one reused buffer: the engine's time, not a fresh allocation's page faults.
    let mut dst = vec![0u8; max_compressed_len(src.len())];
    let mut n = 0;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        n = std::hint::black_box(compress_into(&src, &mut dst, &cp).expect("compress"));
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{:.3} ms per call, {:.2} GB/s, {n} bytes",
        secs * 1e3 / reps as f64,
        (src.len() * reps) as f64 / secs / 1e9
    );
}
