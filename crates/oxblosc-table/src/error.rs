//! The one error type of the table layer: every message names the column (or file) at fault.

use thiserror::Error as ThisError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, ThisError)]
pub enum Error {
    /// Columns that cannot form a table (shape, grid, lengths, item size).
    #[error("table column {column:?} {reason}")]
    Layout { column: String, reason: String },
    /// Reading a column failed (its chunk, offset and file are in the message).
    #[error("table column {column:?}: {reason}")]
    Column { column: String, reason: String },
    /// The condition could not be evaluated.
    #[error("query: {0}")]
    Eval(String),
}

impl Error {
    pub fn layout(column: &str, reason: impl Into<String>) -> Error {
        Error::Layout { column: column.to_string(), reason: reason.into() }
    }

    pub fn column(column: &str, reason: impl Into<String>) -> Error {
        Error::Column { column: column.to_string(), reason: reason.into() }
    }
}

impl From<oxblosc_frame::Error> for Error {
    fn from(e: oxblosc_frame::Error) -> Error {
        Error::Column { column: String::new(), reason: e.to_string() }
    }
}
