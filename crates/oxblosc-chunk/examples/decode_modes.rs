//! Decode one chunk of a smooth float field in a loop, for `perf`/callgrind and quick timings:
//! `cargo run --release -p oxblosc-chunk --example decode_modes -- MODE CODEC TYPESIZE [MiB] [reps]`
//! with MODE `into` (caller buffer), `fresh` (`decompress`, a new vector), `uninit`
//! (`decompress_into_uninit` into a vector's spare capacity), `compress` (`compress_into` of
//! the source, for the encode side) or `memcpy` (the same bytes copied), CODEC a Blosc compcode (0 blosclz, 1 lz4, 4 zlib, 5 zstd) and TYPESIZE 4 or 8.
//! `OXBLOSC_EX_THREADS=N` runs the decode/compress calls with N threads (thread scaling).

use oxblosc_chunk::{compress, compress_into, decompress, decompress_into, decompress_into_uninit, CParams, DParams};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map_or("into", String::as_str).to_owned();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (codec, typesize, mib, reps) = (num(1, 1) as u8, num(2, 4), num(3, 8), num(4, 20));
    let items = (mib << 20) / typesize;
    let value = |i: usize| {
        let (y, x) = ((i / 1440) as f64, (i % 1440) as f64);
        280.0 + 20.0 * (y * 0.01).sin() + 5.0 * (x * 0.02).cos() + (i % 13) as f64 * 0.001
    };
    let src: Vec<u8> = if typesize == 8 {
        (0..items).flat_map(|i| value(i).to_le_bytes()).collect()
    } else {
        (0..items).flat_map(|i| (value(i) as f32).to_le_bytes()).collect()
    };
    let nthreads = std::env::var("OXBLOSC_EX_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let cp = CParams { codec, clevel: 5, typesize, nthreads, ..CParams::default() };
    let chunk = compress(&src, &cp).expect("compress");
    let dp = DParams { nthreads };
    let mut dst = vec![0u8; src.len()];
    let mut cbuf = vec![0u8; src.len() + 64];
    let cpu0 = process_cpu_secs();
    let t = std::time::Instant::now();
    for _ in 0..reps {
        match mode.as_str() {
            "memcpy" => std::hint::black_box(&mut dst).copy_from_slice(std::hint::black_box(&src)),
            "fresh" => dst = decompress(&chunk, &dp).expect("decode"),
            "compress" => {
                let n = compress_into(&src, &mut cbuf, &cp).expect("compress");
                assert_eq!(n, chunk.len());
            }
            "uninit" => {
                let mut v: Vec<u8> = Vec::with_capacity(src.len());
                let n = decompress_into_uninit(&chunk, v.spare_capacity_mut(), &dp).expect("decode");
                assert_eq!(n, src.len());
                std::hint::black_box(&v);
            }
            _ => {
                decompress_into(&chunk, &mut dst, &dp).expect("decode");
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = process_cpu_secs() - cpu0;
    assert!(matches!(mode.as_str(), "uninit" | "compress") || dst == src);
    println!(
        "{mode} codec {codec} typesize {typesize} threads {nthreads}: ratio {:.2}, {:.2} GB/s, {:.3} ms wall {:.3} ms CPU per call",
        src.len() as f64 / chunk.len() as f64,
        (src.len() * reps) as f64 / secs / 1e9,
        secs * 1e3 / reps as f64,
        cpu * 1e3 / reps as f64
    );
}

/// CPU time of the whole process (all threads), in seconds.
fn process_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
