//! Shared helpers for the filter tests: deterministic random data and the shared vectors.

use std::path::PathBuf;

/// Small xorshift generator: deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// Element sizes exercised by every differential test.
pub fn typesizes() -> Vec<usize> {
    let mut v: Vec<usize> = (1..=32).collect();
    v.extend([64, 255]);
    v
}

/// Buffer lengths exercised by every differential test.
pub fn lengths() -> Vec<usize> {
    let mut v: Vec<usize> = (0..300).collect();
    v.extend([1021, 4099, 8191, 65_537, 100_003]);
    v
}

/// The shared directory (`OXBLOSC_SHARED`, else `<repo>/../shared`).
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("OXBLOSC_SHARED") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// A compat vector, or `None` (with a printed note) when it is missing.
pub fn compat_vector(name: &str) -> Option<Vec<u8>> {
    let path = shared_dir().join("vectors/c-blosc2-compat").join(name);
    match std::fs::read(&path) {
        Ok(v) => Some(v),
        Err(e) => {
            eprintln!("note: skipping, cannot read {}: {e}", path.display());
            None
        }
    }
}

/// The reference data of the compat vectors: int32 0..999_999, little-endian.
pub fn reference_data() -> Vec<u8> {
    (0..1_000_000i32).flat_map(|v| v.to_le_bytes()).collect()
}

/// Seconds-per-call timer for the ignored throughput tests; prints GB/s.
pub fn report_speed(name: &str, bytes: usize, mut f: impl FnMut()) {
    f();
    let reps = 20;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        f();
    }
    let secs = t.elapsed().as_secs_f64() / reps as f64;
    println!("{name:<40} {:7.2} GB/s", bytes as f64 / secs / 1e9);
}
