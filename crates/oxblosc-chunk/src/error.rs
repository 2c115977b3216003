//! The one error type of the chunk layer.
//!
//! Every variant says what is wrong and where (block index, byte offset, id), and maps to a
//! numeric code that mirrors C-Blosc2's `BLOSC2_ERROR_*` space so front-ends can report both.

use thiserror::Error as ThisError;

/// Result alias used across the chunk layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while encoding or decoding a chunk.
#[derive(Debug, Clone, PartialEq, Eq, ThisError)]
pub enum Error {
    /// The buffer is shorter than the structure it must hold.
    #[error("chunk truncated: {what} needs {need} bytes at offset {offset}, buffer has {have}")]
    Truncated { what: &'static str, offset: usize, need: usize, have: usize },
    /// A header field holds an impossible value.
    #[error("invalid chunk header: {field} = {value} ({reason})")]
    InvalidHeader { field: &'static str, value: i64, reason: &'static str },
    /// The chunk declares a format version this build does not read.
    #[error("unsupported chunk format version {0} (this build reads versions 1 to 6)")]
    UnsupportedVersion(u8),
    /// A codec id or format code that nobody registered (the message names a booked
    /// plugin and its provider).
    #[error("{}", crate::registry::describe_missing(crate::registry::Kind::Codec, *id))]
    UnknownCodec { id: u8 },
    /// A filter id that nobody registered (named like codecs).
    #[error("{} (slot {slot})", crate::registry::describe_missing(crate::registry::Kind::Filter, *id))]
    UnknownFilter { id: u8, slot: usize },
    /// The compressed data of one block is inconsistent.
    #[error("corrupt block {block} at offset {offset}: {reason}")]
    CorruptBlock { block: usize, offset: usize, reason: String },
    /// A codec refused the stream.
    #[error("{codec} could not decode block {block} at offset {offset}: {detail}")]
    Codec { codec: &'static str, block: usize, offset: usize, detail: String },
    /// A codec failed (not merely "did not compress") while encoding a block.
    #[error("{codec} could not encode block {block}: {detail}")]
    Encode { codec: &'static str, block: usize, detail: String },
    /// A filter rejected its parameters or data.
    #[error("filter {name}: {reason}")]
    Filter { name: &'static str, reason: String },
    /// A user-supplied parameter is out of range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParam { name: &'static str, reason: String },
    /// The destination buffer cannot hold the result.
    #[error("destination too small: need {need} bytes, have {have}")]
    OutputTooSmall { need: usize, have: usize },
    /// The input is larger than a chunk can hold.
    #[error("input of {0} bytes exceeds the chunk limit of 2147483615 bytes")]
    InputTooLarge(usize),
    /// A requested item range lies outside the chunk.
    #[error("item range [{start}, {end}) is outside the chunk's {nitems} items")]
    OutOfRange { start: usize, end: usize, nitems: usize },
    /// A compiled plugin library could not be used (missing, other ABI, bad descriptor).
    #[error("plugin library {library} {reason}")]
    PluginLoad { library: String, reason: String },
}

impl Error {
    /// The matching C-Blosc2 error code (`BLOSC2_ERROR_*`), for front-ends that report both.
    pub fn code(&self) -> i32 {
        match self {
            Error::Truncated { .. } => -11,     // READ_BUFFER
            Error::InvalidHeader { .. } => -10, // INVALID_HEADER
            Error::UnsupportedVersion(_) => -9, // VERSION_SUPPORT
            Error::UnknownCodec { .. } => -7,   // CODEC_SUPPORT
            Error::UnknownFilter { .. } => -8,  // FILTER_PIPELINE
            Error::CorruptBlock { .. } => -1,   // FAILURE
            Error::Codec { .. } => -6,          // CODEC_DICT / decompression failure
            Error::Encode { .. } => -1,         // FAILURE
            Error::Filter { .. } => -8,         // FILTER_PIPELINE
            Error::InvalidParam { .. } => -12,  // INVALID_PARAM
            Error::OutputTooSmall { .. } => -4, // WRITE_BUFFER
            Error::InputTooLarge(_) => -2,      // DATA
            Error::OutOfRange { .. } => -12,    // INVALID_PARAM
            Error::PluginLoad { .. } => -30,    // PLUGIN_IO
        }
    }
}
