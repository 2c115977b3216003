//! Scale measurements (ignored by default; run in release, one test per process):
//!
//! ```text
//! cargo test --release -p oxblosc-frame --test scale -- --ignored --nocapture --test-threads=1 append_cost
//! cargo test --release -p oxblosc-frame --test scale -- --ignored --nocapture --test-threads=1 special_10m_create
//! cargo test --release -p oxblosc-frame --test scale -- --ignored --nocapture --test-threads=1 special_10m_open
//! ```
//!
//! `OXBLOSC_SCALE_DIR` sets where the frames go (default: the temp dir); they are kept so the
//! open test can run in a fresh process.

use std::path::PathBuf;
use std::time::Instant;

use oxblosc_frame::{open, CParams, DParams, Mode, SChunk, SpecialKind, SpecialValue};

fn dir() -> PathBuf {
    let d = std::env::var_os("OXBLOSC_SCALE_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn proc_status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string() + " kB")
        .unwrap_or_else(|| "?".into())
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn random_reads(s: &SChunk, n: usize) -> f64 {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let t = Instant::now();
    for _ in 0..n {
        let i = rng.below(s.nchunks());
        std::hint::black_box(s.decompress_chunk(i).unwrap());
    }
    t.elapsed().as_secs_f64() / n as f64 * 1e6
}

#[test]
#[ignore]
fn append_cost() {
    let total: usize = std::env::var("OXBLOSC_SCALE_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    // OXBLOSC_SCALE_SPARSE=1: a sparse directory; OXBLOSC_SCALE_LOCKING=1: with locking.
    let sparse = std::env::var_os("OXBLOSC_SCALE_SPARSE").is_some();
    let locking = std::env::var_os("OXBLOSC_SCALE_LOCKING").is_some();
    let path = dir().join(if sparse { "scale-append.b2dir" } else { "scale-append.b2frame" });
    let cp = CParams { typesize: 4, clevel: 5, nthreads: 1, ..CParams::default() };
    let mut s = SChunk::create(&path, !sparse, cp, DParams::default()).unwrap();
    if locking {
        s.enable_locking().unwrap();
    }
    let size = |p: &std::path::Path| -> u64 {
        match std::fs::read_dir(p) {
            Ok(d) => d.map(|e| e.unwrap().metadata().unwrap().len()).sum(),
            Err(_) => std::fs::metadata(p).unwrap().len(),
        }
    };
    let mut data = vec![0u8; 4096];
    let t0 = Instant::now();
    let mut window = Instant::now();
    let mut worst = 0f64;
    let kind = if sparse { "sparse directory" } else { "contiguous file" };
    println!("4 KiB chunks appended to a {kind} frame (clevel 5, int32 ramp data, locking {locking})");
    for i in 0..total {
        for (k, c) in data.chunks_exact_mut(4).enumerate() {
            c.copy_from_slice(&((i * 1024 + k) as u32).to_le_bytes());
        }
        let t = Instant::now();
        s.append_data(&data).unwrap();
        worst = worst.max(t.elapsed().as_secs_f64());
        let n = i + 1;
        if [1_000, 10_000, 100_000, 1_000_000, 10_000_000].contains(&n) {
            println!(
                "  {n:>9} chunks: mean {:.2} us/append since the previous mark, slowest single append {:.0} us, \
                 file {} bytes",
                window.elapsed().as_secs_f64() * 1e6 / (n - if n == 1000 { 0 } else { n / 10 }) as f64,
                worst * 1e6,
                size(&path)
            );
            window = Instant::now();
            worst = 0.0;
        }
    }
    println!("  total {:.1} s for {total} appends", t0.elapsed().as_secs_f64());
    drop(s);
    let t = Instant::now();
    let s = open(&path, Mode::Read).unwrap();
    println!(
        "  reopen {:.1} ms ({} chunks, file {} bytes after close); random decompress_chunk {:.1} us",
        t.elapsed().as_secs_f64() * 1e3,
        s.nchunks(),
        size(&path),
        random_reads(&s, 10_000)
    );
    // Appending after reopening: the first append rewrites the index once, then flat again.
    drop(s);
    let mut s = open(&path, Mode::Append).unwrap();
    let t = Instant::now();
    s.append_data(&data).unwrap();
    let first = t.elapsed().as_secs_f64() * 1e6;
    let t = Instant::now();
    for _ in 0..1000 {
        s.append_data(&data).unwrap();
    }
    println!(
        "  after reopen: first append {first:.0} us, next 1000 {:.2} us each",
        t.elapsed().as_secs_f64() * 1e6 / 1000.0
    );
}

#[test]
#[ignore]
fn special_10m_create() {
    let path = dir().join("scale-special.b2frame");
    let cp = CParams { typesize: 4, nthreads: 1, ..CParams::default() };
    let mut s = SChunk::create(&path, true, cp, DParams::default()).unwrap();
    let t = Instant::now();
    s.fill_special(10_000_000 * 1024, SpecialValue::Zeros, Some(4096)).unwrap();
    println!(
        "fill_special 10^7 zero chunks: {:.2} s, file {} bytes, peak RSS {}",
        t.elapsed().as_secs_f64(),
        std::fs::metadata(&path).unwrap().len(),
        proc_status("VmHWM")
    );
    let z = oxblosc_chunk::special_chunk(SpecialKind::Zeros, 4096, 4, None).unwrap();
    let t = Instant::now();
    for _ in 0..1000 {
        s.append_chunk(&z).unwrap();
    }
    println!("  append special chunk at 10^7 chunks: {:.2} us each", t.elapsed().as_secs_f64() * 1e6 / 1000.0);
    let t = Instant::now();
    drop(s);
    println!(
        "  close {:.1} ms, file {} bytes",
        t.elapsed().as_secs_f64() * 1e3,
        std::fs::metadata(&path).unwrap().len()
    );
}

#[test]
#[ignore]
fn special_10m_open() {
    let path = dir().join("scale-special.b2frame");
    let rss0 = proc_status("VmRSS");
    let t = Instant::now();
    let s = open(&path, Mode::Read).unwrap();
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let lat = random_reads(&s, 10_000);
    println!(
        "open 10^7-chunk frame: {open_ms:.0} ms ({} chunks); 10 000 random decompress_chunk {lat:.2} us each; \
         RSS before {rss0}, after {}, peak {}",
        s.nchunks(),
        proc_status("VmRSS"),
        proc_status("VmHWM")
    );
    drop(s);
    let t = Instant::now();
    let mut s = open(&path, Mode::Append).unwrap();
    let open_a = t.elapsed().as_secs_f64() * 1e3;
    let z = oxblosc_chunk::special_chunk(SpecialKind::Zeros, 4096, 4, None).unwrap();
    let t = Instant::now();
    s.append_chunk(&z).unwrap();
    let first = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    for _ in 0..1000 {
        s.append_chunk(&z).unwrap();
    }
    println!(
        "  open for append {open_a:.0} ms, first append {first:.1} ms (index re-encoded once), then {:.2} us each; peak RSS {}",
        t.elapsed().as_secs_f64() * 1e6 / 1000.0,
        proc_status("VmHWM")
    );
}
