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
