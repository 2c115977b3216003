//! The one error type of the frame layer.
//!
//! Every variant names what is wrong and where: the frame field, the byte offset (relative to
//! the frame start unless said otherwise), the chunk index, and - through [`Error::File`] - the
//! file. Codes mirror C-Blosc2's `BLOSC2_ERROR_*` space like the chunk layer's.

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error as ThisError;

/// Result alias used across the frame layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while building, reading or writing a super-chunk or frame.
#[derive(Debug, Clone, ThisError)]
pub enum Error {
    /// The buffer or file ends before a structure it must hold.
    #[error("frame truncated: {what} needs {need} bytes at offset {offset}, frame has {have}")]
    Truncated { what: &'static str, offset: u64, need: u64, have: u64 },
    /// A frame header, metalayer or trailer field holds an impossible value.
    #[error("invalid frame field {field} at offset {offset}: {reason}")]
    InvalidField { field: &'static str, offset: u64, reason: String },
    /// Malformed msgpack (wrong marker, bad length, too deep).
    #[error("bad msgpack at offset {offset}: {reason}")]
    Msgpack { offset: u64, reason: String },
    /// A chunk (stored in the frame, given by the caller or the offsets index) failed.
    #[error("chunk {chunk}: {source}")]
    Chunk { chunk: ChunkId, source: oxblosc_chunk::Error },
    /// A chunk's entry in the offsets index or its stored bytes are inconsistent.
    #[error("chunk {chunk} at offset {offset}: {reason}")]
    BadChunk { chunk: usize, offset: u64, reason: String },
    /// A chunk's stored bytes do not match the checksum kept for it (`checksum.rs`).
    #[error("chunk {chunk}: checksum mismatch (stored bytes hash to {found:016x}, expected {expected:016x})")]
    Checksum { chunk: usize, expected: u64, found: u64 },
    /// A chunk or item index outside the super-chunk.
    #[error("{what} {index} is out of range (super-chunk has {len})")]
    OutOfRange { what: &'static str, index: u64, len: u64 },
    /// A parameter or operation the super-chunk cannot accept.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParam { name: &'static str, reason: String },
    /// No metalayer or vlmetalayer with that name.
    #[error("no {kind} named {name:?}")]
    NotFound { kind: &'static str, name: String },
    /// The super-chunk was opened read-only.
    #[error("the super-chunk is read-only (opened with mode r)")]
    ReadOnly,
    /// An operating-system I/O error.
    #[error("I/O error{}: {source}", offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
    Io { offset: Option<u64>, source: Arc<std::io::Error> },
    /// A handle's view is older than the frame on disk: another handle committed a change
    /// since it was parsed (locked handles: call `SChunk::refresh` and retry; unlocked
    /// writers notice it from the header before writing and reopen).
    #[error("the frame was changed by another handle since this one read it (refresh a locked handle, or reopen, and retry)")]
    Stale,
    /// Any of the above, while working on a file or directory.
    #[error("{source} ({})", path.display())]
    File { path: PathBuf, source: Box<Error> },
}

/// Which chunk a [`Error::Chunk`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkId {
    /// Logical chunk number in the super-chunk.
    Data(usize),
    /// The offsets index chunk.
    Index,
    /// The content of the vlmetalayer with this position in the trailer.
    VlMeta(usize),
    /// A chunk handed in by the caller.
    Input,
}

impl std::fmt::Display for ChunkId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkId::Data(i) => write!(f, "{i}"),
            ChunkId::Index => f.write_str("(offsets index)"),
            ChunkId::VlMeta(i) => write!(f, "(vlmetalayer {i})"),
            ChunkId::Input => f.write_str("(input)"),
        }
    }
}

impl Error {
    /// The matching C-Blosc2 error code (`BLOSC2_ERROR_*`).
    pub fn code(&self) -> i32 {
        match self {
            Error::Truncated { .. } => -11,               // READ_BUFFER
            Error::InvalidField { .. } => -10,            // INVALID_HEADER
            Error::Msgpack { .. } => -10,                 // INVALID_HEADER
            Error::Chunk { source, .. } => source.code(), // from the chunk layer
            Error::BadChunk { .. } => -21,                // CHUNK_APPEND/GET: FRAME_SPECIAL / DATA
            Error::Checksum { .. } => -21,                // stored chunk bytes damaged
            Error::OutOfRange { .. } => -12,              // INVALID_PARAM
            Error::InvalidParam { .. } => -12,            // INVALID_PARAM
            Error::NotFound { .. } => -29,                // METALAYER_NOT_FOUND
            Error::ReadOnly => -30,                       // INVALID_INDEX-ish: write refused
            Error::Io { .. } => -13,                      // FILE_READ / FILE_WRITE
            Error::Stale => -13,                          // FILE_READ: view out of date
            Error::File { source, .. } => source.code(),
        }
    }

    /// Attach the file or directory this error happened in (once).
    pub fn in_file(self, path: impl Into<PathBuf>) -> Error {
        match self {
            e @ Error::File { .. } => e,
            e => Error::File { path: path.into(), source: Box::new(e) },
        }
    }

    /// Whether this is (or wraps) [`Error::Stale`].
    pub fn is_stale(&self) -> bool {
        match self {
            Error::Stale => true,
            Error::File { source, .. } => source.is_stale(),
            _ => false,
        }
    }

    pub(crate) fn io(offset: Option<u64>, e: std::io::Error) -> Error {
        Error::Io { offset, source: Arc::new(e) }
    }

    pub(crate) fn chunk(i: usize) -> impl FnOnce(oxblosc_chunk::Error) -> Error {
        move |source| Error::Chunk { chunk: ChunkId::Data(i), source }
    }

    pub(crate) fn field(field: &'static str, offset: u64, reason: impl Into<String>) -> Error {
        Error::InvalidField { field, offset, reason: reason.into() }
    }

    pub(crate) fn param(name: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidParam { name, reason: reason.into() }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::io(None, e)
    }
}
