//! `NativeStreamer`: the facade's read-ahead [`oxblosc::streamer`] with NumPy arrays as the
//! ring buffers. The Python side allocates the arrays and hands out views of them, so blocks
//! reach the consumer without a copy; the reader threads never touch the GIL.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use oxblosc::hdf5::lazy::Stored;
use oxblosc::streamer::{FileState, Hdf5Rows, Options, Source, Streamer};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::buffer::ByteView;
use crate::ndarray::nd_err;

/// A ring buffer: a held, writable view of a NumPy array.
struct Slot(ByteView);

impl AsMut<[u8]> for Slot {
    fn as_mut(&mut self) -> &mut [u8] {
        self.0.as_mut_slice()
    }
}

#[pyclass(frozen)]
pub struct NativeStreamer {
    /// `None` once closed. Read-locked by `next`/`release` (which may wait for a block),
    /// write-locked only to drop it after `halt` woke every waiter.
    inner: RwLock<Option<Streamer<Slot>>>,
    path: PathBuf,
}

impl NativeStreamer {
    fn start(py: Python<'_>, source: Source, opts: Options, buffers: Vec<Bound<'_, PyAny>>) -> PyResult<Self> {
        let slots = buffers.iter().map(|b| ByteView::writable(b).map(Slot)).collect::<PyResult<Vec<_>>>()?;
        let path = source.path().to_path_buf();
        let s = py.allow_threads(|| Streamer::start(source, opts, slots)).map_err(|e| nd_err(py, e))?;
        Ok(NativeStreamer { inner: RwLock::new(Some(s)), path })
    }
}

#[pymethods]
impl NativeStreamer {
    #[new]
    #[pyo3(signature = (path, block_rows, ordered, cyclic, nthreads, buffers))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        block_rows: u64,
        ordered: bool,
        cyclic: bool,
        nthreads: usize,
        buffers: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let opts = Options { block_rows, ordered, cyclic, nthreads };
        Self::start(py, Source::File(path), opts, buffers)
    }

    /// A stream over the rows of an HDF5 dataset of `shape` in chunks of `chunk_dims` items
    /// of `typesize` bytes, stored by the Blosc filter `filter_id` in the file at `path`;
    /// `stored`: `(chunk offset in items, byte address, stored size, unfiltered)` of every
    /// written chunk (h5py's chunk index), listed while the file was in `file_state`
    /// (`(st_dev, st_ino, st_size, st_mtime_ns)`, taken before listing: reads fail once the
    /// file changed). Never-written chunks read as zeros.
    #[staticmethod]
    #[pyo3(signature = (path, file_state, filter_id, shape, chunk_dims, typesize, stored, block_rows, ordered, cyclic, nthreads, buffers))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn hdf5(
        py: Python<'_>,
        path: PathBuf,
        file_state: Option<(u64, u64, u64, i128)>,
        filter_id: i32,
        shape: Vec<u64>,
        chunk_dims: Vec<u64>,
        typesize: usize,
        stored: Vec<(Vec<u64>, u64, usize, bool)>,
        block_rows: u64,
        ordered: bool,
        cyclic: bool,
        nthreads: usize,
        buffers: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let stored =
            stored.into_iter().map(|(start, offset, size, raw)| (start, Stored { offset, size }, raw)).collect();
        let state = file_state.map(|(dev, ino, len, mtime_ns)| FileState { id: (dev, ino), len, mtime_ns });
        let rows = py
            .allow_threads(|| Hdf5Rows::new(&path, state, filter_id, shape, chunk_dims, typesize, stored))
            .map_err(|e| nd_err(py, e))?;
        let opts = Options { block_rows, ordered, cyclic, nthreads };
        Self::start(py, Source::Hdf5(Arc::new(rows)), opts, buffers)
    }

    /// `(rows, bytes per row)` of the source.
    fn shape(&self) -> (u64, usize) {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).as_ref().map_or((0, 0), |s| s.shape())
    }

    /// The next filled block as `(slot, seq, start_row, nrows)`, None at the end (or closed).
    fn next(&self, py: Python<'_>) -> PyResult<Option<(usize, u64, u64, u64)>> {
        let got = py.allow_threads(|| self.inner.read().unwrap_or_else(PoisonError::into_inner).as_ref()?.next());
        match got {
            None => Ok(None),
            Some(Ok(f)) => Ok(Some((f.slot, f.seq, f.start, f.nrows))),
            Some(Err((start, stop, e))) => {
                let err = nd_err(py, e);
                let msg = format!("rows {start}..{stop} of {}: {}", self.path.display(), err.value(py));
                Err(if err.is_instance_of::<PyOSError>(py) {
                    PyOSError::new_err(msg)
                } else if err.is_instance_of::<PyValueError>(py)
                    && !err.is_instance_of::<pyo3::exceptions::PyRuntimeError>(py)
                {
                    PyValueError::new_err(msg)
                } else {
                    crate::chunk_error(py, msg)
                })
            }
        }
    }

    /// Give a slot back to the readers.
    fn release(&self, slot: usize) {
        if let Some(s) = self.inner.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
            s.release(slot);
        }
    }

    /// Stop the readers and release the buffers (idempotent).
    fn close(&self, py: Python<'_>) {
        let taken = py.allow_threads(|| {
            if let Some(s) = self.inner.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
                s.halt();
            }
            let mut guard = self.inner.write().unwrap_or_else(PoisonError::into_inner);
            let mut s = guard.take();
            if let Some(s) = s.as_mut() {
                s.stop(); // joins the readers
            }
            s
        });
        drop(taken); // the buffer views are released here, with the GIL held
    }
}
