//! Compression parameters crossing the Python boundary as one tuple.
//!
//! `core._native_cparams` validates a Python `CParams` and flattens it to
//! `(codec, codec_meta, clevel, use_dict, typesize, nthreads, blocksize, splitmode, filters,
//! filters_meta)`; every native entry point that compresses takes that tuple as one argument.

use oxblosc::chunk::{CParams, SplitMode};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The flattened `CParams` tuple (field order as in the module doc).
#[derive(FromPyObject, IntoPyObject)]
pub(crate) struct CParamsArg(
    pub(crate) u8,
    pub(crate) u8,
    pub(crate) u8,
    pub(crate) bool,
    pub(crate) usize,
    pub(crate) usize,
    pub(crate) usize,
    pub(crate) u8,
    pub(crate) Vec<u8>,
    pub(crate) Vec<u8>,
);

impl CParamsArg {
    /// Check the fields the Python side cannot (split mode id, at most 6 filters).
    pub(crate) fn into_cparams(self) -> PyResult<CParams> {
        Ok(CParams {
            codec: self.0,
            codec_meta: self.1,
            clevel: self.2,
            use_dict: self.3,
            typesize: self.4,
            nthreads: self.5,
            blocksize: self.6,
            splitmode: SplitMode::from_id(self.7).map_err(|e| PyValueError::new_err(e.to_string()))?,
            filters: filters6(self.8, "filters")?,
            filters_meta: filters6(self.9, "filters_meta")?,
        })
    }

    pub(crate) fn from_cparams(c: &CParams) -> Self {
        CParamsArg(
            c.codec,
            c.codec_meta,
            c.clevel,
            c.use_dict,
            c.typesize,
            c.nthreads,
            c.blocksize,
            c.splitmode as u8,
            c.filters.to_vec(),
            c.filters_meta.to_vec(),
        )
    }
}

fn filters6(list: Vec<u8>, what: &str) -> PyResult<[u8; 6]> {
    if list.len() > 6 {
        return Err(PyValueError::new_err(format!("{what} holds at most 6 entries, got {}", list.len())));
    }
    let mut a = [0u8; 6];
    a[..list.len()].copy_from_slice(&list);
    Ok(a)
}
