//! Array geometry questions answered without an array: the automatic chunk and block shapes
//! the constructors would choose (python-blosc2's `compute_chunks_blocks`).

use oxblosc::nd;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `(chunks, blocks)` for `shape` and `typesize`, filling in whichever is `None` exactly as
/// `NativeNDArray.create` does; the result is checked like an array's geometry.
#[pyfunction]
#[pyo3(signature = (shape, typesize, chunks=None, blocks=None))]
pub fn auto_chunks_blocks(
    shape: Vec<u64>,
    typesize: usize,
    chunks: Option<Vec<u64>>,
    blocks: Option<Vec<u64>>,
) -> PyResult<(Vec<u64>, Vec<u64>)> {
    let (chunks, blocks) = nd::auto::choose(&shape, typesize, chunks.as_deref(), blocks.as_deref());
    nd::Geometry::new(&shape, &chunks, &blocks, typesize).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((chunks, blocks))
}
