//! The HDF5 second partition's native calls: a box of one stored HDF5 chunk.

use std::path::PathBuf;

use oxblosc::hdf5::lazy::{self, PartSpec, ReadError, ReadOpts, Stored};
use oxblosc::hdf5::read::{read_part, read_part_into};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;
use crate::chunk_error;

/// `(bytes, blocks_decoded)`: the C-order bytes of `sel` (`[(start, stop)]` per dim, relative
/// to the chunk) of the chunk `stored` that filter `filter_id` wrote, decoding only the blocks
/// the box needs. With `out` (a writable C-contiguous buffer of exactly the part's bytes, e.g.
/// the caller's NumPy output) the part is decoded into it and `bytes` is None. A bad chunk
/// raises `oxblosc.ChunkError`.
#[pyfunction]
#[pyo3(signature = (filter_id, stored, chunk_dims, typesize, sel, nthreads=1, out=None))]
#[allow(clippy::too_many_arguments)]
pub fn hdf5_read_part<'py>(
    py: Python<'py>,
    filter_id: i32,
    stored: &Bound<'py, PyAny>,
    chunk_dims: Vec<u64>,
    typesize: usize,
    sel: Vec<(u64, u64)>,
    nthreads: usize,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Option<Bound<'py, PyBytes>>, u64)> {
    let view = ByteView::readable(stored)?;
    let bytes = view.as_slice();
    if let Some(out) = out {
        let mut dst = ByteView::writable(out)?;
        let dst = dst.as_mut_slice();
        let n = py
            .allow_threads(|| read_part_into(filter_id, bytes, &chunk_dims, typesize, &sel, nthreads.max(1), dst))
            .map_err(|e| chunk_error(py, e))?;
        return Ok((None, n));
    }
    let part = py
        .allow_threads(|| read_part(filter_id, bytes, &chunk_dims, typesize, &sel, nthreads.max(1)))
        .map_err(|e| chunk_error(py, e))?;
    Ok((Some(PyBytes::new(py, &part.data)), part.blocks_decoded))
}

/// An HDF5 file open for lazy chunk reads (`oxblosc::hdf5::lazy::ChunkFile`): the file stays
/// open and each chunk's headers are read once. `file_id` (device, inode) is the file the
/// chunk addresses came from: a file replaced since, a truncated file or a failed read raise
/// `OSError`; bad chunk bytes raise `oxblosc.ChunkError` (a `ValueError`).
#[pyclass(module = "oxblosc._native", frozen)]
pub struct Hdf5ChunkFile(lazy::ChunkFile);

fn read_error(py: Python<'_>, e: ReadError) -> PyErr {
    match e {
        ReadError::Io(s) => PyOSError::new_err(s),
        ReadError::Bad(s) => chunk_error(py, s),
    }
}

#[pymethods]
impl Hdf5ChunkFile {
    #[new]
    #[pyo3(signature = (path, file_id=None))]
    fn new(py: Python<'_>, path: PathBuf, file_id: Option<(u64, u64)>) -> PyResult<Self> {
        lazy::ChunkFile::open(&path, file_id).map(Hdf5ChunkFile).map_err(|e| read_error(py, e))
    }

    /// `(bytes, blocks_decoded, bytes_read)`: [`hdf5_read_part`] of the chunk of `size` bytes
    /// at `offset`, reading from the file only the chunk's headers (the first time), block-offset
    /// table and needed blocks. With `out` (as in [`hdf5_read_part`]) the part is decoded into
    /// it and `bytes` is None.
    #[pyo3(signature = (offset, size, filter_id, chunk_dims, typesize, sel, nthreads=1, out=None))]
    #[allow(clippy::too_many_arguments)]
    fn read_part<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        size: usize,
        filter_id: i32,
        chunk_dims: Vec<u64>,
        typesize: usize,
        sel: Vec<(u64, u64)>,
        nthreads: usize,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Option<Bound<'py, PyBytes>>, u64, u64)> {
        let at = Stored { offset, size };
        let spec = PartSpec { filter_id, chunk_dims: &chunk_dims, typesize, sel: &sel };
        let opts = ReadOpts { nthreads: nthreads.max(1), ..ReadOpts::default() };
        if let Some(out) = out {
            let mut dst = ByteView::writable(out)?;
            let dst = dst.as_mut_slice();
            let (n, nread) =
                py.allow_threads(|| self.0.read_part_into(at, &spec, &opts, dst)).map_err(|e| read_error(py, e))?;
            return Ok((None, n, nread));
        }
        let part = py.allow_threads(|| self.0.read_part(at, &spec, &opts)).map_err(|e| read_error(py, e))?;
        Ok((Some(PyBytes::new(py, &part.data)), part.blocks_decoded, part.bytes_read))
    }

    /// `(blocks_decoded, bytes_read, parts_in_place)`: several chunk parts into the C-order
    /// box `out` (a writable buffer of `box_dims` items of `typesize` bytes), each part
    /// `(offset, size, sel, origin)`: `sel` of the chunk stored at `offset`, placed at `origin`
    /// of the box; rows of chunks decoded on up to `nthreads` threads (GIL released). The
    /// exception of a failing part has its index as `part`.
    #[pyo3(signature = (filter_id, chunk_dims, typesize, parts, box_dims, out, nthreads=1))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn read_box<'py>(
        &self,
        py: Python<'py>,
        filter_id: i32,
        chunk_dims: Vec<u64>,
        typesize: usize,
        parts: Vec<(u64, usize, Vec<(u64, u64)>, Vec<u64>)>,
        box_dims: Vec<u64>,
        out: &Bound<'py, PyAny>,
        nthreads: usize,
    ) -> PyResult<(u64, u64, u64)> {
        let parts: Vec<lazy::BoxPart> = parts
            .into_iter()
            .map(|(offset, size, sel, origin)| lazy::BoxPart { at: Stored { offset, size }, sel, origin })
            .collect();
        let spec = PartSpec { filter_id, chunk_dims: &chunk_dims, typesize, sel: &[] };
        let opts = ReadOpts { nthreads: nthreads.max(1), ..ReadOpts::default() };
        let mut dst = ByteView::writable(out)?;
        let dst = dst.as_mut_slice();
        py.allow_threads(|| self.0.read_box(&parts, &spec, &box_dims, &opts, dst)).map_err(|(i, e)| {
            let err = read_error(py, e);
            let _ = err.value(py).setattr("part", i);
            err
        })
    }

    /// Forget the chunk layouts read so far (after writing to the file).
    fn forget(&self) {
        self.0.forget();
    }
}

/// `(chunks, blocks, chunk_bytes, block_bytes, reason)`: HDF5 chunks about the L3 cache and
/// Blosc blocks for the L2 cache (`oxblosc::hdf5::chunking`).
#[pyfunction]
#[pyo3(signature = (shape, itemsize, chunk_bytes=None, block_bytes=None))]
#[allow(clippy::type_complexity)]
pub fn hdf5_suggest_chunks(
    shape: Vec<u64>,
    itemsize: usize,
    chunk_bytes: Option<u64>,
    block_bytes: Option<u64>,
) -> PyResult<(Vec<u64>, Vec<u64>, u64, u64, String)> {
    let s =
        oxblosc::hdf5::chunking::suggest(&shape, itemsize, chunk_bytes, block_bytes).map_err(PyValueError::new_err)?;
    Ok((s.chunks, s.blocks, s.chunk_bytes, s.block_bytes, s.reason))
}

/// The b2nd block shape the Blosc2 filter makes in chunks of `chunk_dims` from blocks of
/// `block_items` items.
#[pyfunction]
pub fn hdf5_block_shape(chunk_dims: Vec<u64>, block_items: u64) -> Vec<u64> {
    oxblosc::hdf5::codec::block_shape(&chunk_dims, block_items)
}
