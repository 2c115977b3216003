//! oxblosc-chunk: the Blosc2-compatible meta-compressor.
//!
//! Turns a buffer into a Blosc chunk (header, block starts, per-block streams) and back,
//! byte-compatible with C-Blosc2 and c-blosc 1.x. See `docs/architecture.md`.
//!
//! `unsafe` is denied everywhere except the named modules that need it (SIMD kernels and
//! FFI to the C codec libraries); each such block carries a `SAFETY:` comment.
#![deny(unsafe_code)]

pub mod codec;
pub mod error;
pub mod filter;

pub use error::{Error, Result};
