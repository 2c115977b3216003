//! Filters: reversible (or lossy) byte transforms applied per block before the codec.
//!
//! IDs keep their Blosc2 numbers (format spec section 2). Every filter maps `src` to a
//! `dst` of the same length and writes every byte of `dst` (C-Blosc2 leaves some tails
//! unwritten; we copy them through). Kernels that need `unsafe` live in `kernels/`.
