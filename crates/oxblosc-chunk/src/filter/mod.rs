//! Filters: reversible (or lossy) byte transforms applied per block before the codec.
//!
//! IDs keep their Blosc2 numbers (format spec section 2). Every filter maps `src` to a
//! `dst` of the same length and writes every byte of `dst` (C-Blosc2 leaves some tails
//! unwritten; we copy them through). Kernels that need `unsafe` live in `kernels/`; `builtin`
//! registers the filters in the registry, where the pipeline finds them.

pub mod bitshuffle;
pub(crate) mod builtin;
pub mod bytedelta;
pub mod delta;
pub mod int_trunc;
pub mod ndcell;
pub mod shuffle;
pub mod trunc_prec;

mod kernels;
#[cfg(test)]
mod testutil;

/// Whether AVX2 code may run (the CPU has it and `OXBLOSC_SIMD` does not cap below it); for
/// code outside the filters that has an AVX2 build (the LZ4 decoder).
pub(crate) fn avx2_allowed() -> bool {
    kernels::level() >= kernels::Level::Avx2
}

/// No filter (also "NOSHUFFLE").
pub const NOFILTER: u8 = 0;
/// Byte shuffle (spec 2.3).
pub const SHUFFLE: u8 = 1;
/// Bit shuffle (spec 2.4).
pub const BITSHUFFLE: u8 = 2;
/// XOR against block 0 (spec 2.5).
pub const DELTA: u8 = 3;
/// Lossy float mantissa truncation (spec 2.6).
pub const TRUNC_PREC: u8 = 4;
/// Cells of b2nd blocks stored together (Blosc-registered plugin; spec 2.8).
pub const NDCELL: u8 = 32;
/// Cells of b2nd blocks replaced by their mean (lossy Blosc-registered plugin; spec 2.8).
pub const NDMEAN: u8 = 33;
/// Original byte delta as written by SIMD builds of C-Blosc2 (spec 2.7).
pub const BYTEDELTA_V1: u8 = 34;
/// Byte delta per stream (spec 2.7).
pub const BYTEDELTA: u8 = 35;
/// Lossy integer truncation (spec 2.8).
pub const INT_TRUNC: u8 = 36;
