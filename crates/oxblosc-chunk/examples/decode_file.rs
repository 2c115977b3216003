//! Decode a chunk read from a file in a loop, for side-by-side profiles (perf, callgrind) with
//! another library decoding the same file (`examples/c/b2_decode_loop.c` takes the same arguments):
//! `cargo run --release -p oxblosc-chunk --example decode_file -- FILE [reps] [into|fresh]
//! [trash_mib] [RAWFILE CODEC CLEVEL FILTER TYPESIZE]`.
//! `trash_mib`: dirty that many MiB of another buffer before each call; RAWFILE...: compress that
//! file (ids as in `encode_file`) before each call, the decode right after a compression of
//! decision 0011. The median call is printed too.

use oxblosc_chunk::{
    compress_into, decompress, decompress_into, decompressed_len, max_compressed_len, CParams, DParams,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let chunk = std::fs::read(&args[0]).expect("read the chunk file");
    let reps: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let fresh = args.get(2).is_some_and(|m| m == "fresh");
    let dp = DParams { nthreads: 1 };
    let mut dst = vec![0u8; decompressed_len(&chunk).expect("a valid chunk")];
    let trash_len = args.get(3).map_or(0, |m| m.parse::<usize>().expect("MiB") << 20);
    let mut trash = vec![1u8; trash_len];
    let num = |i: usize| -> usize { args[i].parse().expect("a number") };
    let raw = args.get(4).map(|p| std::fs::read(p).expect("read the raw file"));
    let mut cp = CParams::default();
    if raw.is_some() {
        (cp.codec, cp.clevel, cp.typesize, cp.nthreads) = (num(5) as u8, num(6) as u8, num(8), 1);
        cp.filters[5] = num(7) as u8;
    }
    let mut cout = vec![0u8; raw.as_ref().map_or(0, |r| max_compressed_len(r.len()))];
    let mut calls = Vec::with_capacity(reps);
    let t = std::time::Instant::now();
    for _ in 0..reps {
        for line in trash.chunks_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        if let Some(r) = &raw {
            std::hint::black_box(compress_into(r, &mut cout, &cp).expect("compress"));
        }
        let c = std::time::Instant::now();
        if fresh {
            std::hint::black_box(decompress(&chunk, &dp).expect("decode"));
        } else {
            decompress_into(&chunk, &mut dst, &dp).expect("decode");
        }
        calls.push(c.elapsed().as_secs_f64());
    }
    let secs = t.elapsed().as_secs_f64();
    calls.sort_by(f64::total_cmp);
    let median = calls[reps / 2];
    if trash_len == 0 && raw.is_none() {
        println!("{:.3} ms per call, {:.2} GB/s", secs * 1e3 / reps as f64, (dst.len() * reps) as f64 / secs / 1e9);
    }
    println!("median call {:.3} ms, min {:.3} ms", median * 1e3, calls[0] * 1e3);
}
