//! The HDF5 second partition's native calls: a box of one stored HDF5 chunk.

use std::path::PathBuf;

use oxblosc::hdf5::lazy::{self, ReadError, Stored};
use oxblosc::hdf5::read::{read_part, read_part_at};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;
use crate::chunk_error;

/// `(bytes, blocks_decoded)`: the C-order bytes of `sel` (`[(start, stop)]` per dim, relative
/// to the chunk) of the chunk `stored` that filter `filter_id` wrote, decoding only the blocks
/// the box needs. A bad chunk raises `oxblosc.ChunkError`.
#[pyfunction]
#[pyo3(signature = (filter_id, stored, chunk_dims, typesize, sel, nthreads=1))]
pub fn hdf5_read_part<'py>(
    py: Python<'py>,
    filter_id: i32,
    stored: &Bound<'py, PyAny>,
    chunk_dims: Vec<u64>,
    typesize: usize,
    sel: Vec<(u64, u64)>,
    nthreads: usize,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let view = ByteView::readable(stored)?;
    let bytes = view.as_slice();
    let part = py
        .allow_threads(|| read_part(filter_id, bytes, &chunk_dims, typesize, &sel, nthreads.max(1)))
        .map_err(|e| chunk_error(py, e))?;
    Ok((PyBytes::new(py, &part.data), part.blocks_decoded))
}

/// [`hdf5_read_part`] of the chunk in the `size` bytes at `offset` of the file `path`, read by
/// Rust (GIL released) straight into the buffer it decodes from.
#[pyfunction]
#[pyo3(signature = (path, offset, size, filter_id, chunk_dims, typesize, sel, nthreads=1))]
#[allow(clippy::too_many_arguments)]
pub fn hdf5_read_part_at<'py>(
    py: Python<'py>,
    path: PathBuf,
    offset: u64,
    size: usize,
    filter_id: i32,
    chunk_dims: Vec<u64>,
    typesize: usize,
    sel: Vec<(u64, u64)>,
    nthreads: usize,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let part = py
        .allow_threads(|| read_part_at(&path, offset, size, filter_id, &chunk_dims, typesize, &sel, nthreads.max(1)))
        .map_err(|e| chunk_error(py, e))?;
    Ok((PyBytes::new(py, &part.data), part.blocks_decoded))
}

/// `(bytes, blocks_decoded, bytes_read)`: [`hdf5_read_part_at`] reading from the file only the
/// chunk's headers, block-offset table and needed blocks. `file_id` (device, inode) is the file
/// the address came from: a file replaced since, a truncated file or a failed read raise
/// `OSError`; bad chunk bytes raise `oxblosc.ChunkError` (a `ValueError`).
#[pyfunction]
#[pyo3(signature = (path, offset, size, filter_id, chunk_dims, typesize, sel, nthreads=1, file_id=None))]
#[allow(clippy::too_many_arguments)]
pub fn hdf5_read_part_lazy<'py>(
    py: Python<'py>,
    path: PathBuf,
    offset: u64,
    size: usize,
    filter_id: i32,
    chunk_dims: Vec<u64>,
    typesize: usize,
    sel: Vec<(u64, u64)>,
    nthreads: usize,
    file_id: Option<(u64, u64)>,
) -> PyResult<(Bound<'py, PyBytes>, u64, u64)> {
    let at = Stored { path: &path, offset, size, file_id };
    let part = py
        .allow_threads(|| lazy::read_part_at(&at, filter_id, &chunk_dims, typesize, &sel, nthreads.max(1)))
        .map_err(|e| match e {
            ReadError::Io(s) => PyOSError::new_err(s),
            ReadError::Bad(s) => chunk_error(py, s),
        })?;
    Ok((PyBytes::new(py, &part.data), part.blocks_decoded, part.bytes_read))
}
