//! Decode a chunk read from a file in a loop, for side-by-side profiles (perf, callgrind) with
//! another library decoding the same file:
//! `cargo run --release -p oxblosc-chunk --example decode_file -- FILE [reps] [into|fresh]`.

use oxblosc_chunk::{decompress, decompress_into, decompressed_len, DParams};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let chunk = std::fs::read(&args[0]).expect("read the chunk file");
    let reps: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let fresh = args.get(2).is_some_and(|m| m == "fresh");
    let dp = DParams { nthreads: 1 };
    let mut dst = vec![0u8; decompressed_len(&chunk).expect("a valid chunk")];
    let t = std::time::Instant::now();
    for _ in 0..reps {
        if fresh {
            std::hint::black_box(decompress(&chunk, &dp).expect("decode"));
        } else {
            decompress_into(&chunk, &mut dst, &dp).expect("decode");
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!("{:.3} ms per call, {:.2} GB/s", secs * 1e3 / reps as f64, (dst.len() * reps) as f64 / secs / 1e9);
}
