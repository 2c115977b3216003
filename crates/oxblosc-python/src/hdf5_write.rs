//! The HDF5 direct chunk write's native call: whole HDF5 chunks encoded as the filter would.

use oxblosc::hdf5::cdvalues::{BLOSC2_ID, BLOSC_ID};
use oxblosc::hdf5::codec::{encode_blosc1, encode_blosc2_threads};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::buffer::ByteView;

/// The bytes filter `filter_id` (32026 or 32001) stores for each full HDF5 chunk in `chunks`
/// (C order) of a dataset whose final cd_values are `cd`, or the reason (a `str`) the filter
/// refuses it (HDF5 then stores it unfiltered when the filter is optional). Chunks are
/// compressed in parallel on up to `nthreads` threads, one chunk's Blosc2 blocks in parallel
/// when there are fewer chunks than threads (GIL released).
#[pyfunction]
#[pyo3(signature = (filter_id, cd, chunks, nthreads=1))]
pub fn hdf5_encode_chunks<'py>(
    py: Python<'py>,
    filter_id: i32,
    cd: Vec<u32>,
    chunks: Vec<Bound<'py, PyAny>>,
    nthreads: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if filter_id != BLOSC2_ID && filter_id != BLOSC_ID {
        return Err(PyValueError::new_err(format!(
            "filter {filter_id} is not Blosc2 ({BLOSC2_ID}) or Blosc ({BLOSC_ID})"
        )));
    }
    let views = chunks.iter().map(ByteView::readable).collect::<PyResult<Vec<_>>>()?;
    let slices: Vec<&[u8]> = views.iter().map(|v| v.as_slice()).collect();
    let nt = nthreads.clamp(1, slices.len().max(1));
    let inner = (nthreads.max(1) / nt).max(1);
    let encode = |data: &[u8]| match filter_id {
        BLOSC2_ID => encode_blosc2_threads(&cd, data, inner),
        _ => encode_blosc1(&cd, data),
    };
    let out: Vec<Result<Vec<u8>, String>> = py.allow_threads(|| {
        if nt == 1 {
            return slices.iter().map(|d| encode(d)).collect();
        }
        let mut out = vec![Err(String::new()); slices.len()];
        std::thread::scope(|sc| {
            let per = slices.len().div_ceil(nt).max(1);
            for (ins, outs) in slices.chunks(per).zip(out.chunks_mut(per)) {
                let encode = &encode;
                sc.spawn(move || {
                    for (i, o) in ins.iter().zip(outs) {
                        *o = encode(i);
                    }
                });
            }
        });
        out
    });
    Ok(out
        .into_iter()
        .map(|r| match r {
            Ok(b) => PyBytes::new(py, &b).into_any(),
            Err(why) => PyString::new(py, &why).into_any(),
        })
        .collect())
}
