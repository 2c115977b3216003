//! Opening a large frame must not read it: with positioned reads, opening reads the header,
//! trailer and offsets index only (bytes counted by the kernel in `/proc/self/io` `rchar`);
//! with a read-only memory map, opening touches only those pages (resident set size from
//! `/proc/self/statm`) and `get_chunk` borrows from the map. Each check is paired with a
//! control (reading every chunk does move the counter) so it can fail. Linux only.
#![cfg(target_os = "linux")]

use std::borrow::Cow;

use oxblosc_frame::{open_with, CParams, DParams, Mode, OpenConfig, SChunk};

const CHUNK: usize = 16 << 10;
const NCHUNKS: usize = 2048;

fn proc_field(file: &str, key: &str) -> u64 {
    let s = std::fs::read_to_string(file).unwrap();
    s.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().parse().unwrap()).unwrap()
}

fn rchar() -> u64 {
    proc_field("/proc/self/io", "rchar:")
}

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

/// A frame of NCHUNKS incompressible chunks (stored as memcpy), 32 MiB on disk.
fn make(path: &std::path::Path) {
    let cp = CParams { typesize: 1, clevel: 0, ..CParams::default() };
    let mut s = SChunk::create(path, true, cp, DParams::default()).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; CHUNK];
    for _ in 0..NCHUNKS {
        for b in buf.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        s.append_data(&buf).unwrap();
    }
}

#[test]
fn opening_reads_only_header_and_index() {
    let dir = std::env::temp_dir().join(format!("oxblosc-opencost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.b2frame");
    make(&path);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > (NCHUNKS * CHUNK) as u64);

    // Positioned reads.
    let r0 = rchar();
    let s = open_with(&path, OpenConfig { mode: Mode::Read, ..OpenConfig::default() }).unwrap();
    let opened = rchar() - r0;
    assert_eq!(s.nchunks(), NCHUNKS);
    let mut total = 0usize;
    for i in 0..NCHUNKS {
        total += s.get_chunk(i).unwrap().len();
    }
    let all = rchar() - r0;
    eprintln!("positioned: open read {opened} bytes, all chunks {all} (file {size})");
    assert!(opened < 256 << 10, "opening read {opened} bytes of a {size}-byte frame");
    assert!(all >= total as u64, "the counter misses chunk reads");
    drop(s);

    // Memory map.
    let m0 = rss();
    let s = open_with(&path, OpenConfig { mode: Mode::Read, mmap: true, ..OpenConfig::default() }).unwrap();
    let opened = rss().saturating_sub(m0);
    let mut sum = 0u64;
    for i in 0..NCHUNKS {
        let c = s.get_chunk(i).unwrap();
        assert!(matches!(c, Cow::Borrowed(_)), "chunk {i} was copied out of the map");
        sum += c.iter().step_by(512).map(|&b| u64::from(b)).sum::<u64>();
    }
    let touched = rss().saturating_sub(m0);
    eprintln!("mmap: RSS +{opened} bytes after open, +{touched} after touching every chunk ({sum})");
    assert!(opened < 4 << 20, "opening the map made {opened} bytes resident");
    assert!(touched > (NCHUNKS * CHUNK / 2) as u64, "touching every chunk made only {touched} bytes resident");
    // Mapped reads return the same data as positioned reads.
    let p = open_with(&path, OpenConfig::default()).unwrap();
    for i in [0, 1, NCHUNKS / 2, NCHUNKS - 1] {
        assert_eq!(s.decompress_chunk(i).unwrap(), p.decompress_chunk(i).unwrap());
    }
    // A map is read-only and cannot be locked.
    assert!(open_with(&path, OpenConfig { mode: Mode::Append, mmap: true, ..OpenConfig::default() }).is_err());
    assert!(open_with(&path, OpenConfig { locking: true, mmap: true, ..OpenConfig::default() }).is_err());
    drop((s, p));
    std::fs::remove_dir_all(&dir).unwrap();
}
