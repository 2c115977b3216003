//! oxblosc-nd: n-dimensional arrays in the Blosc2 b2nd format.
//!
//! Layer L3 of oxblosc (see `docs/architecture.md`): builds on `oxblosc-frame` and
//! `oxblosc-chunk` only. Format reference: `../shared/research/format-spec.md` section 5 and
//! Traps 35-36.
//!
//! * [`meta`]: the `b2nd` metalayer (and the legacy `caterva` one), strictly validated.
//! * [`geometry`]: chunk grid, padded chunks, block grid, hyperslab plans.
//! * [`auto`]: automatic chunk/block shapes from the machine's cache sizes.
//! * [`NdArray`]: create (special chunks, no data written), read and write hyperslabs
//!   decoding only the blocks they touch, resize, append along axis 0, iterate chunks.
#![forbid(unsafe_code)]

pub mod array;
pub mod auto;
pub mod error;
pub mod geometry;
pub mod meta;
pub mod reference;

pub use array::{EncodedChunk, Fill, NdArray};
pub use error::{Error, Result};
pub use geometry::{DimSlice, Geometry};
pub use meta::{Meta, MAX_DIM};
