//! oxblosc-table: columnar compressed tables, layer L4 of oxblosc (see `docs/architecture.md`).
//!
//! A table is one 1-d b2nd array per column on a shared chunk/block grid, plus a row-validity
//! column (python-blosc2's `CTable` layout; the directory/file layout itself is assembled by
//! the Python layer from arrays and super-chunks). This crate holds what must be fast:
//!
//! * [`stats`]: per-block min/max/NaN records (python-blosc2's SUMMARY index layout), exact
//!   merges for appends, conservative `f64` ranges for skipping.
//! * [`scan`]: the in-kernel query: blocks skipped by statistics, only the needed columns
//!   decoded into per-thread scratch, evaluated, matching rows gathered, in parallel.
//! * [`kind`]: which NumPy dtypes take part in conditions.
#![forbid(unsafe_code)]

pub mod error;
pub mod filter;
pub mod kind;
pub mod scan;
pub mod stats;

pub use error::{Error, Result};
pub use kind::Kind;
pub use scan::{run, BlockFilter, Column, ColumnBlock, Found, Grid, Scan};
