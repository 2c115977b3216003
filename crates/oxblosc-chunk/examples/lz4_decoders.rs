//! liblz4's `LZ4_decompress_safe` against our safe-Rust block decoder, on the LZ4 streams a
//! shuffled smooth field produces (one per byte row of every 256 KiB block), and on unshuffled
//! data: `cargo run --release -p oxblosc-chunk --example lz4_decoders -- [typesize] [clevel] [reps]`.

use oxblosc_chunk::codec::{lz4, lz4_block};
use oxblosc_chunk::filter::shuffle::shuffle;
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (ts, clevel, reps) = (
        args.first().copied().unwrap_or(4),
        args.get(1).copied().unwrap_or(5) as u8,
        args.get(2).copied().unwrap_or(30),
    );
    let items = (8 << 20) / ts;
    let value = |i: usize| {
        let (y, x) = ((i / 1440) as f64, (i % 1440) as f64);
        280.0 + 20.0 * (y * 0.01).sin() + 5.0 * (x * 0.02).cos() + (i % 13) as f64 * 0.001
    };
    let src: Vec<u8> = if ts == 8 {
        (0..items).flat_map(|i| value(i).to_le_bytes()).collect()
    } else {
        (0..items).flat_map(|i| (value(i) as f32).to_le_bytes()).collect()
    };
    for shuffled in [true, false] {
        // Streams as the chunk engine makes them: 256 KiB blocks, split into `ts` rows when shuffled.
        let mut streams = Vec::new();
        for block in src.chunks(256 << 10) {
            let mut sh = vec![0u8; block.len()];
            if shuffled {
                shuffle(ts, block, &mut sh)
            } else {
                sh.copy_from_slice(block)
            }
            let rows = if shuffled { ts } else { 1 };
            for row in sh.chunks(block.len() / rows) {
                let mut c = vec![0u8; row.len()];
                let n = lz4::compress(clevel, row, &mut c);
                if n > 0 && n < row.len() {
                    c.truncate(n);
                    streams.push((c, row.to_vec()));
                }
            }
        }
        stats(&streams);
        let total: usize = streams.iter().map(|s| s.1.len()).sum();
        let mut out = vec![0u8; 256 << 10];
        let mut time = |ours: bool| {
            let t = Instant::now();
            for _ in 0..reps {
                for (c, raw) in &streams {
                    let o = &mut out[..raw.len()];
                    if ours {
                        lz4_block::decompress(c, o).unwrap()
                    } else {
                        lz4::decompress(c, o).unwrap()
                    }
                }
            }
            (total * reps) as f64 / t.elapsed().as_secs_f64() / 1e9
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let only = std::env::var("ONLY").unwrap_or_default();
        for _ in 0..5 {
            a.push(if only == "ours" { 1.0 } else { time(false) });
            b.push(if only == "lib" { 1.0 } else { time(true) });
        }
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        println!(
            "typesize {ts} clevel {clevel} shuffled {shuffled}: {} streams, {:.1} MB decoded; liblz4 {:.2} GB/s, ours {:.2} GB/s ({:.2}x)",
            streams.len(), total as f64 / 1e6, a[2], b[2], b[2] / a[2]
        );
    }
}

#[allow(dead_code)]
fn stats(streams: &[(Vec<u8>, Vec<u8>)]) {
    let (mut seqs, mut lits, mut mls, mut short, mut mid, mut nonover) =
        (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    let mut hist = [0usize; 8];
    for (c, _) in streams {
        let mut ip = 0;
        while ip < c.len() {
            let t = c[ip];
            ip += 1;
            let mut l = (t >> 4) as usize;
            if l == 15 {
                loop {
                    let b = c[ip];
                    ip += 1;
                    l += b as usize;
                    if b != 255 {
                        break;
                    }
                }
            }
            ip += l;
            lits += l;
            if ip >= c.len() {
                break;
            }
            let off = u16::from_le_bytes([c[ip], c[ip + 1]]) as usize;
            ip += 2;
            let mut m = (t & 15) as usize;
            if m == 15 {
                loop {
                    let b = c[ip];
                    ip += 1;
                    m += b as usize;
                    if b != 255 {
                        break;
                    }
                }
            }
            m += 4;
            seqs += 1;
            mls += m;
            if off < 16 {
                short += 1
            } else if off < m.div_ceil(32) * 32 {
                mid += 1
            } else {
                nonover += 1
            }
            hist[(usize::BITS - m.leading_zeros()).min(14) as usize / 2] += 1;
        }
    }
    println!("seqs {seqs} lit bytes {lits} match bytes {mls}; off<16 {short}, overlapping {mid}, apart {nonover}; ml log4 hist {hist:?}");
}
