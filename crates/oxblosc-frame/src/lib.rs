//! oxblosc-frame: Blosc2 super-chunks and their serialisation as frames.
//!
//! Layer L2 of oxblosc (see `docs/architecture.md`): builds on `oxblosc-chunk` only.
//! Format reference: `../shared/research/format-spec.md` section 4 and Traps 26-34.
//!
//! * [`SChunk`]: an ordered list of chunks with shared parameters, metalayers (`meta`, fixed
//!   at creation) and variable-length metalayers (`vlmeta`), in memory or backed by a frame.
//! * In-memory contiguous frames: [`SChunk::to_cframe`], [`SChunk::from_cframe`] (and
//!   [`SChunk::from_cframe_at`] for a frame embedded in a larger buffer).
//! * Files: [`open`] / [`open_at`] (contiguous file or sparse directory, chunks read on
//!   demand), [`SChunk::save`], [`SChunk::create`] (writable, every change persisted);
//!   [`open_with`] adds `locking` (advisory cross-process lock, [`lock`]) and read-only
//!   memory mapping.
//! * Per-chunk checksums (opt-in, [`SChunk::enable_checksums`]) in a vlmetalayer other
//!   readers ignore, checked by [`SChunk::verify_chunk`] or on every read.
#![deny(unsafe_code)]

pub mod cframe;
pub mod checksum;
pub mod error;
pub mod file;
pub mod header;
mod live;
pub mod lock;
#[allow(unsafe_code)]
mod mmap;
pub mod msgpack;
pub mod offsets;
mod pio;
pub mod schunk;
mod slots;
mod storage;
pub mod trailer;
pub mod tuner;
mod writer;

pub use checksum::{Status as ChecksumStatus, Verdict};
pub use error::{ChunkId, Error, Result};
pub use file::{open, open_at, open_with, remove, Mode, OpenConfig};
pub use msgpack::Value;
pub use oxblosc_chunk::{CParams, DParams, SpecialKind, SplitMode};
pub use schunk::{ChunkInfo, SChunk, SpecialValue};
pub use storage::chunk_file_name;
pub use tuner::ChunkTuner;
pub use writer::{sweep_stale_temps, SyncMode, SPARSE_INDEX};
