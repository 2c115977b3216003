//! oxblosc-chunk: the Blosc2-compatible meta-compressor.
//!
//! Turns a buffer into a Blosc chunk (header, block starts, per-block streams) and back,
//! byte-compatible with C-Blosc2 and c-blosc 1.x. See `docs/architecture.md`.
//!
//! `unsafe` is denied everywhere except the named modules that need it (SIMD kernels, FFI
//! to the C codec libraries, the fork-safe pool map); each such block carries a `SAFETY:`
//! comment.
#![deny(unsafe_code)]

pub mod blocks;
pub mod codec;
pub mod compress;
pub mod config;
pub mod decompress;
pub mod error;
pub mod filter;
pub mod format;
pub mod native;
pub mod parallel;
pub mod params;
mod pipeline;
pub mod registry;
mod uninit;
pub mod vlblocks;

pub use compress::{
    compress, compress_blosc1, compress_blosc1_into, compress_blosc1_into_uninit, compress_into, compress_into_uninit,
    compress_into_with, compress_with, max_blosc1_len, max_compressed_len, special_chunk,
};
pub use decompress::{
    cbuffer_sizes, decompress, decompress_into, decompress_into_uninit, decompress_into_uninit_with,
    decompress_into_with, decompress_ranges, decompress_ranges_with, decompress_with, decompressed_len, getitem,
    getitem_with,
};
pub use error::{Error, Result};
pub use format::{ChunkHeader, SpecialKind};
pub use params::{CParams, DParams, SplitMode};
pub use registry::{
    register_codec, register_filter, registered_codecs, registered_filters, ChunkContext, Codec, Filter, Origin,
};
pub use uninit::zero_init;
pub use vlblocks::{compress_vlblocks, decompress_vlblocks, vlblock};
