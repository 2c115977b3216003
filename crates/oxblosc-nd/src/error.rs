//! The one error type of the n-dimensional layer.
//!
//! Metalayer errors name the field and its byte offset inside the metalayer; geometry errors
//! name the dimension; everything from the frame layer passes through unchanged (it already
//! names chunk, offset and file).

use thiserror::Error as ThisError;

/// Result alias used across the nd layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, writing or slicing a b2nd array.
#[derive(Debug, Clone, ThisError)]
pub enum Error {
    /// The `b2nd` (or `caterva`) metalayer is malformed or lies.
    #[error("b2nd metalayer: {field} at byte {offset}: {reason}")]
    Meta { field: &'static str, offset: usize, reason: String },
    /// Shape, chunks and blocks do not describe a storable array (or disagree with the frame).
    #[error("invalid b2nd geometry: {0}")]
    Geometry(String),
    /// A caller's argument (slice bounds, buffer length, shape) is unusable.
    #[error("invalid parameter {name}: {reason}")]
    Param { name: &'static str, reason: String },
    /// The super-chunk carries no `b2nd` or `caterva` metalayer.
    #[error("not an n-dimensional array: the super-chunk has no b2nd (or caterva) metalayer")]
    NotAnArray,
    /// A chunk of the array disagrees with the array's geometry.
    #[error("chunk {chunk}: {reason}")]
    BadChunk { chunk: u64, reason: String },
    /// From the frame layer (chunk, offset and file already named).
    #[error(transparent)]
    Frame(#[from] oxblosc_frame::Error),
}

impl Error {
    /// The matching C-Blosc2 error code (`BLOSC2_ERROR_*`).
    pub fn code(&self) -> i32 {
        match self {
            Error::Meta { .. } => -10,     // INVALID_HEADER
            Error::Geometry(_) => -10,     // INVALID_HEADER
            Error::Param { .. } => -12,    // INVALID_PARAM
            Error::NotAnArray => -29,      // METALAYER_NOT_FOUND
            Error::BadChunk { .. } => -21, // DATA
            Error::Frame(e) => e.code(),
        }
    }

    pub(crate) fn param(name: &'static str, reason: impl Into<String>) -> Error {
        Error::Param { name, reason: reason.into() }
    }

    pub(crate) fn geometry(reason: impl Into<String>) -> Error {
        Error::Geometry(reason.into())
    }
}

impl From<oxblosc_chunk::Error> for Error {
    fn from(source: oxblosc_chunk::Error) -> Self {
        Error::Frame(oxblosc_frame::Error::Chunk { chunk: oxblosc_frame::ChunkId::Input, source })
    }
}
