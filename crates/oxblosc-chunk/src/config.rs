//! The one place that reads the environment (architecture rule 2).

use std::sync::OnceLock;

/// Default thread count: `BLOSC_NTHREADS` if set to a positive integer, else all cores
/// (what python-blosc2 does).
pub fn default_nthreads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("BLOSC_NTHREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// `OXBLOSC_LOCK_TIMEOUT` in seconds, when set to a finite non-negative number: how long a
/// frame writer waits for another process's lock. Read on every call (not cached) so a
/// process can change it between opens.
pub fn lock_timeout_secs() -> Option<f64> {
    std::env::var("OXBLOSC_LOCK_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
}

/// `OXBLOSC_SIMD`: the highest SIMD level the filter kernels may use ("scalar", "sse2" or "avx2";
/// anything else or unset = the best the CPU has). For benchmarks and for testing the
/// fallbacks on a machine that has the faster paths.
pub fn simd_cap() -> Option<String> {
    std::env::var("OXBLOSC_SIMD").ok()
}

/// `OXBLOSC_LZ4_DECODER=liblz4`: decode LZ4 with liblz4's `LZ4_decompress_safe` instead of
/// our decoder (for comparisons; both give the same bytes for every block liblz4 accepts
/// except a match at offset 0, which ours rejects). Read once.
pub fn lz4_decoder_is_liblz4() -> bool {
    static LIB: OnceLock<bool> = OnceLock::new();
    *LIB.get_or_init(|| std::env::var("OXBLOSC_LZ4_DECODER").is_ok_and(|v| v.trim() == "liblz4"))
}

/// `OXBLOSC_ZLIB_DECODER=zlib-ng`: inflate zlib blocks with zlib-ng instead of libdeflate
/// (for comparisons; both accept the same complete streams). Read once.
pub fn zlib_decoder_is_zlib_ng() -> bool {
    static LIB: OnceLock<bool> = OnceLock::new();
    *LIB.get_or_init(|| std::env::var("OXBLOSC_ZLIB_DECODER").is_ok_and(|v| v.trim() == "zlib-ng"))
}

/// Data cache sizes of this machine in bytes: (L1d, L2, L3), read once from
/// `/sys/devices/system/cpu/cpu0/cache` (Linux). Levels that cannot be read fall back to
/// 32 KiB, 1 MiB and 8 MiB, common sizes for current x86 and ARM cores. Used to size
/// n-dimensional chunks (near L3) and blocks (near L2).
pub fn cache_sizes() -> (usize, usize, usize) {
    static SIZES: OnceLock<(usize, usize, usize)> = OnceLock::new();
    *SIZES.get_or_init(|| {
        let mut sizes = [32 << 10, 1 << 20, 8 << 20];
        let mut found = [false; 3];
        for i in 0..8 {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok().map(|s| s.trim().to_owned());
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else { continue };
            if kind == "Instruction" {
                continue;
            }
            let bytes = match size.strip_suffix('K') {
                Some(k) => k.parse::<usize>().ok().map(|v| v << 10),
                None => match size.strip_suffix('M') {
                    Some(m) => m.parse::<usize>().ok().map(|v| v << 20),
                    None => size.parse().ok(),
                },
            };
            if let (Ok(l @ 1..=3), Some(b)) = (level.parse::<usize>(), bytes.filter(|&b| b > 0)) {
                if !found[l - 1] {
                    sizes[l - 1] = b;
                    found[l - 1] = true;
                }
            }
        }
        (sizes[0], sizes[1], sizes[2])
    })
}
