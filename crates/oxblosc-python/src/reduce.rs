//! `nd_reduce_f64(array, op, axes, means, nthreads)`: a reduction of a float64 NDArray over
//! `axes`, all in Rust with the GIL released (`oxblosc::reduce`); the result cells as
//! little-endian float64 bytes (the reduced axes have length 1).

use oxblosc::lazy::ComputeError;
use oxblosc::reduce::{reduce_f64, Op};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::ndarray::NativeNDArray;

/// `op` is "sum", "prod", "min", "max" or "sqdev" (sum of squared deviations from `means`,
/// float64 bytes, one per result cell).
#[pyfunction]
#[pyo3(signature = (array, op, axes, means, nthreads))]
pub fn nd_reduce_f64<'py>(
    py: Python<'py>,
    array: Py<NativeNDArray>,
    op: &str,
    axes: Vec<usize>,
    means: Option<&[u8]>,
    nthreads: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let op = match op {
        "sum" => Op::Sum,
        "prod" => Op::Prod,
        "min" => Op::Min,
        "max" => Op::Max,
        "sqdev" => Op::SqDev,
        _ => return Err(PyValueError::new_err(format!("no float64 reduction named {op:?}"))),
    };
    let means: Option<Vec<f64>> =
        means.map(|b| b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect());
    let r = array.get().shared().read(py, |a| reduce_f64(a, op, &axes, means.as_deref(), nthreads));
    let cells = r.map_err(|e| match e {
        ComputeError::Nd(e) => crate::ndarray::nd_err(py, e),
        e => PyValueError::new_err(e.to_string()),
    })?;
    let bytes: Vec<u8> = cells.iter().flat_map(|x| x.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}
