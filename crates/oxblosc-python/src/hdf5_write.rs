//! The HDF5 direct chunk write's native call: one HDF5 chunk encoded as the filter would.

use oxblosc::hdf5::cdvalues::{BLOSC2_ID, BLOSC_ID};
use oxblosc::hdf5::codec::{encode_blosc1, encode_blosc2_threads};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;

/// The bytes filter `filter_id` (32026 or 32001) stores for the full HDF5 chunk `data` of a
/// dataset whose final cd_values are `cd`, Blosc2 blocks compressed on `nthreads` threads
/// (GIL released). A chunk Blosc cannot shrink raises ValueError (the caller stores it raw).
#[pyfunction]
#[pyo3(signature = (filter_id, cd, data, nthreads=1))]
pub fn hdf5_encode_chunk<'py>(
    py: Python<'py>,
    filter_id: i32,
    cd: Vec<u32>,
    data: &Bound<'py, PyAny>,
    nthreads: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let view = ByteView::readable(data)?;
    let bytes = view.as_slice();
    let out = py
        .allow_threads(|| match filter_id {
            BLOSC2_ID => encode_blosc2_threads(&cd, bytes, nthreads.max(1)),
            BLOSC_ID => encode_blosc1(&cd, bytes),
            other => Err(format!("filter {other} is not Blosc2 ({BLOSC2_ID}) or Blosc ({BLOSC_ID})")),
        })
        .map_err(PyValueError::new_err)?;
    Ok(PyBytes::new(py, &out))
}
