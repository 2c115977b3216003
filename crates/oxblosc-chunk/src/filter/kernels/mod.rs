//! SIMD kernels and runtime CPU dispatch; the only place in the filter layer with `unsafe`.
//!
//! Each kernel has a scalar twin in the safe filter module that calls it; the functions here
//! return `false` when they cannot handle a case so the caller falls back to the twin.

use std::sync::OnceLock;

/// Instruction-set level used by the kernels, detected once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Scalar,
    #[cfg_attr(
        not(any(target_arch = "x86", target_arch = "x86_64")),
        allow(dead_code)
    )]
    Sse2,
    #[cfg_attr(
        not(any(target_arch = "x86", target_arch = "x86_64")),
        allow(dead_code)
    )]
    Avx2,
}

/// The best level this CPU supports. `OXBLOSC_SIMD=scalar|sse2` caps it (for benchmarking).
pub(crate) fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = match std::env::var("OXBLOSC_SIMD").as_deref() {
            Ok("scalar") => Level::Scalar,
            Ok("sse2") => Level::Sse2,
            _ => Level::Avx2,
        };
        detect().min(cap)
    })
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn detect() -> Level {
    if is_x86_feature_detected!("avx2") {
        Level::Avx2
    } else if is_x86_feature_detected!("sse2") {
        Level::Sse2
    } else {
        Level::Scalar
    }
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn detect() -> Level {
    Level::Scalar
}

/// Levels available on this CPU, lowest first (for differential tests).
#[cfg(test)]
pub(crate) fn available_levels() -> Vec<Level> {
    [Level::Scalar, Level::Sse2, Level::Avx2]
        .into_iter()
        .filter(|l| *l <= detect())
        .collect()
}

/// SIMD byte shuffle of `src` (a whole number of elements) into `dst`; `false` = not handled.
pub(crate) fn shuffle(_level: Level, _e: usize, _src: &[u8], _dst: &mut [u8]) -> bool {
    false
}

/// SIMD inverse of [`shuffle`]; `false` = not handled.
pub(crate) fn unshuffle(_level: Level, _e: usize, _src: &[u8], _dst: &mut [u8]) -> bool {
    false
}

/// SIMD bit shuffle of `src` (a multiple of `8 * t` bytes); `false` = not handled.
pub(crate) fn bitshuffle(_level: Level, _t: usize, _src: &[u8], _dst: &mut [u8]) -> bool {
    false
}

/// SIMD inverse of [`bitshuffle`]; `false` = not handled.
pub(crate) fn bitunshuffle(_level: Level, _t: usize, _src: &[u8], _dst: &mut [u8]) -> bool {
    false
}
