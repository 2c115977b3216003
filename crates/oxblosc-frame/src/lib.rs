//! oxblosc-frame: Blosc2 super-chunks and their serialisation as frames.
//!
//! Layer L2 of oxblosc (see `docs/architecture.md`): builds on `oxblosc-chunk` only.
//! Format reference: `../shared/research/format-spec.md` section 4 and Traps 26-34.
#![forbid(unsafe_code)]

pub mod error;
pub mod header;
pub mod msgpack;
pub mod offsets;
pub mod trailer;

pub use error::{ChunkId, Error, Result};
