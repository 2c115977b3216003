//! The CLI's one error: printed as one line `oxblosc: <what> (<file>, chunk N)` with an exit code.

use std::fmt;
use std::path::Path;

use oxblosc::frame::{self, ChunkId};

/// Exit code of a verify mismatch.
pub const EXIT_MISMATCH: u8 = 1;
/// Exit code of every other error.
pub const EXIT_ERROR: u8 = 2;

#[derive(Debug)]
pub struct CliError {
    pub what: String,
    pub file: Option<String>,
    pub chunk: Option<usize>,
    pub code: u8,
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

impl CliError {
    pub fn new(what: impl Into<String>) -> Self {
        CliError { what: what.into(), file: None, chunk: None, code: EXIT_ERROR }
    }

    pub fn at(what: impl Into<String>, file: impl AsRef<Path>) -> Self {
        CliError::new(what).file(file)
    }

    /// Name the file unless one is already named.
    pub fn file(mut self, file: impl AsRef<Path>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.as_ref().display().to_string());
        }
        self
    }

    pub fn io(e: std::io::Error, file: impl AsRef<Path>) -> Self {
        CliError::at(e.to_string(), file)
    }

    /// A frame-layer error: the file and chunk it names move into the location part.
    pub fn frame(e: frame::Error, file: impl AsRef<Path>) -> Self {
        let (path, inner) = match e {
            frame::Error::File { path, source } => (Some(path), *source),
            e => (None, e),
        };
        let mut out = match inner {
            frame::Error::Chunk { chunk: ChunkId::Data(i), source } => {
                CliError { chunk: Some(i), ..CliError::new(source.to_string()) }
            }
            frame::Error::BadChunk { chunk, offset, reason } => {
                CliError { chunk: Some(chunk), ..CliError::new(format!("{reason} at offset {offset}")) }
            }
            frame::Error::Checksum { chunk, expected, found } => CliError {
                chunk: Some(chunk),
                code: EXIT_MISMATCH,
                ..CliError::new(format!(
                    "checksum mismatch: stored bytes hash to {found:016x}, expected {expected:016x}"
                ))
            },
            e => CliError::new(e.to_string()),
        };
        if let Some(p) = path {
            out = out.file(p);
        }
        out.file(file)
    }

    pub fn chunk_layer(e: oxblosc::chunk::Error, file: impl AsRef<Path>) -> Self {
        CliError::at(e.to_string(), file)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        match (&self.file, self.chunk) {
            (Some(p), Some(c)) => write!(f, " ({p}, chunk {c})"),
            (Some(p), None) => write!(f, " ({p})"),
            (None, Some(c)) => write!(f, " (chunk {c})"),
            (None, None) => Ok(()),
        }
    }
}
