//! Our LZ4 block decoder against liblz4's `LZ4_decompress_safe` on the streams Blosc makes
//! (a smooth float32 field or the raw file `LZ4_DATA`, shuffled with `typesize` and split
//! into byte streams, or whole 256 KiB blocks when `typesize` is 1):
//! `cargo run --release -p oxblosc-chunk --example lz4_decode_speed -- [MiB] [rounds] [clevel] [hc] [typesize]`.

use oxblosc_chunk::codec::{lz4, lz4_decode};
use oxblosc_chunk::filter::shuffle::shuffle;
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let mib = args.first().copied().unwrap_or(8);
    let rounds = args.get(1).copied().unwrap_or(30);
    let clevel = args.get(2).copied().unwrap_or(5) as u8;
    let hc = args.get(3).copied().unwrap_or(0) == 1;
    let ts = args.get(4).copied().unwrap_or(4);
    let n = mib << 18;
    let src: Vec<u8> = if let Ok(path) = std::env::var("LZ4_DATA") {
        let mut v = std::fs::read(path).expect("LZ4_DATA");
        v.truncate(n * 4);
        v
    } else {
        (0..n)
            .flat_map(|i| {
                let (y, x) = ((i / 1440) as f32, (i % 1440) as f32);
                (280.0 + 20.0 * (y * 0.01).sin() + 5.0 * (x * 0.02).cos() + (i % 13) as f32 * 0.001).to_le_bytes()
            })
            .collect()
    };
    let block = 256 << 10;
    let mut streams = Vec::new();
    for b in src.chunks(block) {
        let b = &b[..b.len() - b.len() % ts];
        let mut s = vec![0u8; b.len()];
        if ts > 1 {
            shuffle(ts, b, &mut s);
        } else {
            s.copy_from_slice(b);
        }
        for row in s.chunks(b.len() / ts) {
            let mut enc = vec![0u8; row.len() + row.len() / 200 + 64];
            let k = if hc { lz4::compress_hc(clevel, row, &mut enc) } else { lz4::compress(clevel, row, &mut enc) };
            if k > 0 {
                enc.truncate(k);
                streams.push((enc, row.to_vec()));
            }
        }
    }
    if std::env::var("LZ4_STATS").is_ok() {
        stats(&streams);
    }
    let total: usize = streams.iter().map(|s| s.1.len()).sum();
    let csize: usize = streams.iter().map(|s| s.0.len()).sum();
    let mut out = vec![0u8; block];
    let (mut t_lib, mut t_ours) = (Vec::new(), Vec::new());
    // Each stream is decoded by both, back to back, the first alternating (whichever runs
    // second finds the stream in cache).
    for r in 0..rounds {
        let (mut lib, mut ours) = (0f64, 0f64);
        for (i, (enc, row)) in streams.iter().enumerate() {
            for turn in 0..2 {
                let t = Instant::now();
                if (turn + i + r) % 2 == 0 {
                    lz4::decompress_liblz4(enc, &mut out[..row.len()]).unwrap();
                    lib += t.elapsed().as_secs_f64();
                } else {
                    let k = lz4_decode::decode_into(enc, &mut out[..row.len()]).unwrap();
                    ours += t.elapsed().as_secs_f64();
                    assert_eq!(k, row.len());
                }
            }
        }
        t_lib.push(lib);
        t_ours.push(ours);
    }
    for (enc, row) in &streams {
        let k = lz4_decode::decode_into(enc, &mut out[..row.len()]).unwrap();
        assert_eq!(&out[..k], &row[..]);
    }
    t_lib.sort_by(f64::total_cmp);
    t_ours.sort_by(f64::total_cmp);
    let (a, b) = (t_lib[rounds / 2], t_ours[rounds / 2]);
    println!(
        "{} streams, ratio {:.2}: liblz4 {:.2} GB/s, ours {:.2} GB/s, ours/liblz4 {:.3}",
        streams.len(),
        total as f64 / csize as f64,
        total as f64 / a / 1e9,
        total as f64 / b / 1e9,
        a / b
    );
}

fn stats(streams: &[(Vec<u8>, Vec<u8>)]) {
    let (mut nseq, mut lits, mut mls) = (0usize, 0usize, 0usize);
    let mut off_b = [0usize; 6]; // <8, <16, <32, <64, <1024, >=1024
    let mut lit_b = [0usize; 5]; // 0, <16, <64, <256, >=256
    let mut ml_b = [0usize; 5]; // 4, <=8, <=18, <=64, >64
    for (enc, _) in streams {
        let mut p = 0;
        while p < enc.len() {
            let t = enc[p];
            p += 1;
            let mut l = (t >> 4) as usize;
            if l == 15 {
                loop {
                    let b = enc[p];
                    p += 1;
                    l += b as usize;
                    if b != 255 {
                        break;
                    }
                }
            }
            p += l;
            lits += l;
            nseq += 1;
            lit_b[if l == 0 {
                0
            } else if l < 16 {
                1
            } else if l < 64 {
                2
            } else if l < 256 {
                3
            } else {
                4
            }] += 1;
            if p >= enc.len() {
                break;
            }
            let o = enc[p] as usize | (enc[p + 1] as usize) << 8;
            p += 2;
            let mut m = (t & 15) as usize;
            if m == 15 {
                loop {
                    let b = enc[p];
                    p += 1;
                    m += b as usize;
                    if b != 255 {
                        break;
                    }
                }
            }
            m += 4;
            mls += m;
            off_b[if o < 8 {
                0
            } else if o < 16 {
                1
            } else if o < 32 {
                2
            } else if o < 64 {
                3
            } else if o < 1024 {
                4
            } else {
                5
            }] += 1;
            ml_b[if m == 4 {
                0
            } else if m <= 8 {
                1
            } else if m <= 18 {
                2
            } else if m <= 64 {
                3
            } else {
                4
            }] += 1;
        }
    }
    eprintln!("seqs {nseq} lit bytes {lits} match bytes {mls}; lit 0/<16/<64/<256/more {lit_b:?}; off <8/<16/<32/<64/<1K/more {off_b:?}; ml 4/<=8/<=18/<=64/more {ml_b:?}");
}
