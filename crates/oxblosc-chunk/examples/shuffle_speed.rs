//! Byte shuffle / unshuffle speed the way a chunk uses them: a block-sized source kept in
//! cache, the results written block after block over a chunk-sized destination:
//! `cargo run --release -p oxblosc-chunk --example shuffle_speed -- [block KiB] [chunk MiB] [reps]`.
//! Prints GB/s per element size for shuffle and unshuffle.

use oxblosc_chunk::filter::shuffle::{shuffle, unshuffle};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (kib, mib, reps) =
        (args.first().copied().unwrap_or(256), args.get(1).copied().unwrap_or(8), args.get(2).copied().unwrap_or(20));
    let (bs, total) = (kib << 10, mib << 20);
    let src: Vec<u8> = (0..bs).map(|i| ((i * 2_654_435_761usize) >> 13) as u8).collect();
    let mut dst = vec![0u8; total];
    for e in [2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32] {
        let b = bs - bs % e;
        let mut line = format!("e={e:2}");
        for (name, f) in [("shuffle", shuffle as fn(usize, &[u8], &mut [u8])), ("unshuffle", unshuffle)] {
            let t = std::time::Instant::now();
            for _ in 0..reps {
                for out in dst.chunks_exact_mut(bs) {
                    f(e, &src[..b], &mut out[..b]);
                }
            }
            let gbs = (total * reps) as f64 / t.elapsed().as_secs_f64() / 1e9;
            line += &format!("  {name} {gbs:6.2} GB/s");
        }
        println!("{line}");
    }
}
