//! Per-stream decode time of libdeflate and zlib-ng on the streams Blosc makes from a raw file
//! (blocks of `block` bytes, shuffled with `typesize` and split into byte streams, each
//! compressed at `level`): prints each stream's expansion and both times, to place the
//! routing threshold of decision 0016.
//! `cargo run --release -p oxblosc-chunk --example zlib_inflate_route -- FILE level typesize block_kib [reps]`.
use oxblosc_chunk::codec::zlib;
use oxblosc_chunk::filter::shuffle::shuffle;
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let src = std::fs::read(&a[0]).unwrap();
    let level: u8 = a[1].parse().unwrap();
    let ts: usize = a[2].parse().unwrap();
    let block: usize = a[3].parse::<usize>().unwrap() << 10;
    let reps: usize = a.get(4).map_or(20, |v| v.parse().unwrap());
    let mut streams = Vec::new();
    for b in src.chunks(block).take(std::env::var("NBLOCKS").ok().and_then(|v| v.parse().ok()).unwrap_or(8)) {
        let b = &b[..b.len() - b.len() % ts];
        let mut s = vec![0u8; b.len()];
        if ts > 1 {
            shuffle(ts, b, &mut s);
        } else {
            s.copy_from_slice(b);
        }
        for row in s.chunks(b.len() / ts) {
            let mut out = vec![0u8; row.len() + 1024];
            let n = zlib::compress(level, row, &mut out);
            if n > 0 {
                streams.push((out[..n].to_vec(), row.len()));
            }
        }
    }
    let mut dst = vec![0u8; block];
    let (mut t_ng, mut t_ld) = (0.0, 0.0);
    for (i, (s, len)) in streams.iter().enumerate() {
        let mut best = [f64::MAX; 2];
        for _ in 0..reps {
            for (k, f) in [zlib::decompress_zlib_ng, zlib::decompress_libdeflate].into_iter().enumerate() {
                let t = Instant::now();
                f(s, &mut dst[..*len]).unwrap();
                best[k] = best[k].min(t.elapsed().as_secs_f64());
            }
        }
        t_ng += best[0];
        t_ld += best[1];
        if std::env::var("ALL").is_ok() {
            println!("S {} {} {} {}", a[0], *len as f64 / s.len() as f64, best[0] * 1e6, best[1] * 1e6);
        } else if i < 16 {
            println!(
                "stream {i:3}: expansion {:7.1}  zlib-ng {:7.1} us  libdeflate {:7.1} us  ld/ng {:.2}",
                *len as f64 / s.len() as f64,
                best[0] * 1e6,
                best[1] * 1e6,
                best[1] / best[0]
            );
        }
    }
    println!("total: zlib-ng {:.2} ms, libdeflate {:.2} ms, ld/ng {:.3}", t_ng * 1e3, t_ld * 1e3, t_ld / t_ng);
}
