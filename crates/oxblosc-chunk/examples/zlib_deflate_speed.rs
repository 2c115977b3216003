//! zlib-rs (our deflate) against C zlib-ng's deflate, same level, on 256 KiB blocks of a raw
//! file: `cargo run --release -p oxblosc-chunk --example zlib_deflate_speed -- FILE [level] [rounds]`.
#![allow(unsafe_code)]
use libz_ng_sys as z;
use oxblosc_chunk::codec::zlib;
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let src = std::fs::read(&a[0]).unwrap();
    let level: u8 = a.get(1).map_or(5, |v| v.parse().unwrap());
    let rounds: usize = a.get(2).map_or(5, |v| v.parse().unwrap());
    let block = 256 << 10;
    let mut out = vec![0u8; block + 4096];
    // C zlib-ng state
    let mut s = Box::new(zlib::blank_stream());
    assert_eq!(unsafe { z::zng_deflateInit2(&mut *s, level as i32, 8, 15, 8, 0) }, 0);
    let mut best = [f64::MAX; 2];
    let mut sizes = [0usize; 2];
    for _ in 0..rounds {
        for which in 0..2 {
            let t = Instant::now();
            let mut total = 0;
            for b in src.chunks(block) {
                let n = if which == 0 {
                    zlib::compress(level, b, &mut out[..b.len()])
                } else {
                    unsafe {
                        z::deflateReset(&mut *s);
                        s.next_in = b.as_ptr().cast_mut();
                        s.avail_in = b.len() as u32;
                        s.next_out = out.as_mut_ptr();
                        s.avail_out = b.len() as u32;
                        let r = z::deflate(&mut *s, z::Z_FINISH);
                        if r == z::Z_STREAM_END {
                            s.total_out as usize
                        } else {
                            0
                        }
                    }
                };
                total += n;
            }
            best[which] = best[which].min(t.elapsed().as_secs_f64());
            sizes[which] = total;
        }
    }
    println!(
        "{}: level {level}: zlib-rs {:.1} ms ({} B), C zlib-ng {:.1} ms ({} B), C/rs time {:.3}",
        a[0],
        best[0] * 1e3,
        sizes[0],
        best[1] * 1e3,
        sizes[1],
        best[1] / best[0]
    );
}
