//! `oxblosc._native.NativeNDArray`: the nd layer's `NdArray` seen from Python.
//!
//! Thin like `schunk.rs`: argument conversion, the GIL released around every read, write
//! and I/O, error mapping. It also answers the super-chunk calls `oxblosc.SChunk` makes on
//! its native object (sizes, cparams, meta/vlmeta, chunks, frames), so `NDArray.schunk` is
//! an `oxblosc.SChunk` over the very same storage. Indexing rules, dtypes and constructors
//! are `python/oxblosc/ndarray.py`.

use std::path::PathBuf;

use oxblosc::chunk::DParams;
use oxblosc::frame::{self, ChunkId, Mode, SChunk};
use oxblosc::nd::{self, DimSlice, Fill, Geometry, NdArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;
use crate::cparams::CParamsArg;
use crate::frame_err;
use crate::schunk::{summarize_chunk, ChunkSummary, NativeSChunk};
use crate::shared::Shared;

/// Map an nd-layer error: frame errors as `frame_err` does, bad arguments -> `ValueError`,
/// a lying metalayer or chunk -> `oxblosc.ChunkError`.
pub(crate) fn nd_err(py: Python<'_>, e: nd::Error) -> PyErr {
    match e {
        nd::Error::Frame(e) => frame_err(py, e),
        nd::Error::Param { .. } => PyValueError::new_err(e.to_string()),
        other => crate::chunk_error(py, other.to_string()),
    }
}

fn sel(v: Vec<(u64, u64, u64)>) -> Vec<DimSlice> {
    v.into_iter().map(|(a, b, s)| DimSlice::new(a, b, s)).collect()
}

/// An n-dimensional array in memory or backed by a frame file / sparse directory. Shareable
/// between threads: reads run in parallel, changes one at a time ([`Shared`]).
#[pyclass(module = "oxblosc._native", frozen)]
pub struct NativeNDArray {
    inner: Shared<NdArray>,
    path: Option<PathBuf>,
}

impl NativeNDArray {
    fn new(inner: NdArray, path: Option<PathBuf>) -> Self {
        NativeNDArray { inner: Shared::new(inner), path }
    }

    /// The engine array behind its lock (table queries read several at once).
    pub(crate) fn shared(&self) -> &Shared<NdArray> {
        &self.inner
    }

    fn schunk_err(&self, py: Python<'_>, e: frame::Error) -> PyErr {
        match (&self.path, e) {
            (Some(p), e @ (frame::Error::Chunk { .. } | frame::Error::BadChunk { .. })) => frame_err(py, e.in_file(p)),
            (_, e) => frame_err(py, e),
        }
    }

    fn err(&self, py: Python<'_>, e: nd::Error) -> PyErr {
        match e {
            nd::Error::Frame(e) => self.schunk_err(py, e),
            e => match &self.path {
                Some(p) => nd_err(py, e).and_note(py, p),
                None => nd_err(py, e),
            },
        }
    }
}

/// Name the file in a Python exception's message.
trait AndNote {
    fn and_note(self, py: Python<'_>, path: &std::path::Path) -> PyErr;
}

impl AndNote for PyErr {
    fn and_note(self, py: Python<'_>, path: &std::path::Path) -> PyErr {
        let msg = format!("{} ({})", self.value(py), path.display());
        if self.is_instance_of::<PyValueError>(py) && !self.is_instance_of::<pyo3::exceptions::PyRuntimeError>(py) {
            PyValueError::new_err(msg)
        } else {
            crate::chunk_error(py, msg)
        }
    }
}

#[pymethods]
impl NativeNDArray {
    /// A new array. `chunks`/`blocks` None: chosen automatically. `fill`: 0 zeros, 1 uninit,
    /// 2 NaN, 3 the `value` bytes; `data` (C-order bytes) overrides the fill. A file is built
    /// under a temporary name and renamed to `urlpath` once complete (replacing what is
    /// there); `staged`: not yet, the caller fills it first, then calls `publish` or `discard`.
    #[staticmethod]
    #[pyo3(signature = (cparams, dthreads, urlpath, contiguous, meta, shape, chunks, blocks, dtype, fill, value, data, locking=false, tuner=None, staged=false))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        cparams: CParamsArg,
        dthreads: usize,
        urlpath: Option<PathBuf>,
        contiguous: bool,
        meta: Vec<(String, Vec<u8>)>,
        shape: Vec<u64>,
        chunks: Option<Vec<u64>>,
        blocks: Option<Vec<u64>>,
        dtype: String,
        fill: u8,
        value: Option<Vec<u8>>,
        data: Option<&Bound<'_, PyAny>>,
        locking: bool,
        tuner: Option<crate::tune::TunerArg>,
        staged: bool,
    ) -> PyResult<Self> {
        if staged && locking {
            return Err(PyValueError::new_err("a staged array is locked when published, not created locked"));
        }
        let cp = cparams.into_cparams()?;
        let tuner = tuner.map(crate::tune::per_chunk).transpose()?;
        let dp = DParams { nthreads: dthreads.max(1) };
        let view = data.map(ByteView::readable).transpose()?;
        let fill = match (fill, value) {
            (0, _) => Fill::Zeros,
            (1, _) => Fill::Uninit,
            (2, _) => Fill::Nan,
            (3, Some(v)) => Fill::Value(v),
            _ => return Err(PyValueError::new_err("fill must be 0 (zeros), 1 (uninit), 2 (nan) or 3 with a value")),
        };
        let (chunks, blocks) = nd::auto::choose(&shape, cp.typesize, chunks.as_deref(), blocks.as_deref());
        let inner = py
            .allow_threads(|| -> nd::Result<NdArray> {
                let geom = Geometry::new(&shape, &chunks, &blocks, cp.typesize)?;
                let Some(p) = &urlpath else {
                    let mut s = SChunk::new(cp.clone(), dp.clone())?;
                    for (name, content) in &meta {
                        s.add_meta(name, content)?;
                    }
                    s.set_tuner(tuner.clone());
                    return match &view {
                        Some(v) => NdArray::from_buffer(s, geom, Some(&dtype), v.as_slice()),
                        None => NdArray::create(s, geom, Some(&dtype), fill),
                    };
                };
                // Built under a temporary name: a failure (or a kill) leaves `p` as it was
                // rather than a frame holding part of the array, or none of it.
                let s = SChunk::create_staged(p, contiguous, cp.clone(), dp.clone())?;
                let build = |mut s: SChunk| -> nd::Result<NdArray> {
                    s.set_cparams(cp.clone())?;
                    for (name, content) in &meta {
                        s.add_meta(name, content)?;
                    }
                    s.set_tuner(tuner.clone());
                    // With data, the chunks go to the file as they are built, and one commit
                    // at the end publishes them (one index write, a compact file).
                    let mut a = match &view {
                        Some(v) => NdArray::from_buffer_appending(s, geom, Some(&dtype), v.as_slice())?,
                        None => NdArray::create(s, geom, Some(&dtype), fill)?,
                    };
                    if !staged {
                        a.schunk_mut().publish(p)?;
                    }
                    if locking {
                        a.schunk_mut().enable_locking()?;
                    }
                    Ok(a)
                };
                let tmp = s.urlpath().map(std::path::Path::to_path_buf);
                build(s).inspect_err(|_| remove_created(tmp.as_deref(), contiguous))
            })
            .map_err(|e| nd_err(py, e))?;
        Ok(NativeNDArray::new(inner, urlpath))
    }

    /// The array stored in a native super-chunk (which is left empty).
    #[staticmethod]
    fn from_schunk(py: Python<'_>, schunk: &Bound<'_, NativeSChunk>) -> PyResult<Self> {
        let s = schunk.get();
        let taken = s
            .inner
            .write(py, |s| -> frame::Result<SChunk> {
                let placeholder = SChunk::new(s.cparams().clone(), s.dparams().clone())?;
                Ok(std::mem::replace(s, placeholder))
            })
            .map_err(|e| frame_err(py, e))?;
        let path = s.path.clone();
        match NdArray::from_schunk(taken) {
            Ok(inner) => Ok(NativeNDArray::new(inner, path)),
            Err(e) => Err(match &path {
                Some(p) => nd_err(py, e).and_note(py, p),
                None => nd_err(py, e),
            }),
        }
    }

    #[staticmethod]
    fn from_cframe(py: Python<'_>, cframe: &Bound<'_, PyAny>) -> PyResult<Self> {
        let view = ByteView::readable(cframe)?;
        let inner = py
            .allow_threads(|| NdArray::from_schunk(SChunk::from_cframe(view.as_slice())?))
            .map_err(|e| nd_err(py, e))?;
        Ok(NativeNDArray::new(inner, None))
    }

    /// Open a b2nd frame file or sparse directory (`locking`, `mmap`: as `NativeSChunk.open`).
    #[staticmethod]
    #[pyo3(signature = (urlpath, writable, locking=false, mmap=false))]
    fn open(py: Python<'_>, urlpath: PathBuf, writable: bool, locking: bool, mmap: bool) -> PyResult<Self> {
        let mode = if writable { Mode::Append } else { Mode::Read };
        let cfg = frame::OpenConfig { mode, offset: 0, locking, mmap };
        let inner = py
            .allow_threads(|| NdArray::from_schunk(frame::open_with(&urlpath, cfg)?))
            .map_err(|e| nd_err(py, e).and_note(py, &urlpath))?;
        Ok(NativeNDArray::new(inner, Some(urlpath)))
    }

    /// Locked handles: follow changes another handle committed; returns whether there were.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.write(py, |a| a.refresh()).map_err(|e| self.err(py, e))
    }

    /// Locked writers: hold the exclusive lock until `release_lock` (blocks other handles).
    fn hold_lock(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.write(py, |a| a.hold_lock()).map_err(|e| self.err(py, e))
    }

    fn release_lock(&self, py: Python<'_>) {
        self.inner.write(py, |a| a.schunk_mut().release_lock());
    }

    #[getter]
    fn locking(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |a| a.schunk().is_locked())
    }

    /// Whether changes are written back to a file or directory.
    #[getter]
    fn writable(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |a| a.schunk().urlpath().is_some())
    }

    // ------------------------------------------------------------ array properties

    #[getter]
    fn shape(&self, py: Python<'_>) -> Vec<u64> {
        self.inner.read(py, |a| a.shape().to_vec())
    }

    #[getter]
    fn chunks(&self, py: Python<'_>) -> Vec<u64> {
        self.inner.read(py, |a| a.chunks().to_vec())
    }

    #[getter]
    fn blocks(&self, py: Python<'_>) -> Vec<u64> {
        self.inner.read(py, |a| a.blocks().to_vec())
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> Option<String> {
        self.inner.read(py, |a| a.dtype().map(str::to_owned))
    }

    #[getter]
    fn blocks_decoded(&self, py: Python<'_>) -> u64 {
        self.inner.read(py, |a| a.blocks_decoded())
    }

    /// Chunks whose needed blocks reads took from the file without the rest (for tests).
    #[getter]
    fn _chunks_read_in_part(&self, py: Python<'_>) -> u64 {
        self.inner.read(py, |a| a.chunks_read_in_part())
    }

    /// Most threads seen inside reads of this handle at once (shows that reads overlap).
    #[getter]
    fn _peak_readers(&self) -> usize {
        self.inner.peak_readers()
    }

    /// Calls so far that could have changed this handle (took its exclusive lock).
    #[getter]
    fn _writes(&self) -> u64 {
        self.inner.writes()
    }

    /// Test hook: wait inside a read until `n` threads were inside reads at once.
    fn _rendezvous(&self, py: Python<'_>, n: usize, timeout: f64) -> bool {
        self.inner.rendezvous(py, n, std::time::Duration::from_secs_f64(timeout.clamp(0.0, 600.0)))
    }

    /// (nchunk, start, stop) per chunk: where each chunk lies in the array.
    fn chunk_region(&self, py: Python<'_>, nchunk: u64) -> PyResult<(Vec<u64>, Vec<u64>)> {
        self.inner.read(py, |a| a.chunk_region(nchunk)).map_err(|e| self.err(py, e))
    }

    // ------------------------------------------------------------ reading and writing

    /// The hyperslab `(start, stop, step)` per dimension into the writable buffer `out`.
    fn get_slice_into(&self, py: Python<'_>, sel_: Vec<(u64, u64, u64)>, out: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut view = ByteView::writable(out)?;
        let buf = view.as_mut_slice();
        let s = sel(sel_);
        self.inner.read(py, |a| a.get_slice_into(&s, buf)).map_err(|e| self.err(py, e))
    }

    fn set_slice(&self, py: Python<'_>, sel_: Vec<(u64, u64, u64)>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let view = ByteView::readable(data)?;
        let s = sel(sel_);
        self.inner.write(py, |a| a.set_slice(&s, view.as_slice())).map_err(|e| self.err(py, e))
    }

    /// One whole chunk compressed under the shared lock (side by side with other writers of
    /// this handle), for `commit_encoded`; None when `sel` is not exactly one whole chunk.
    fn encode_chunk(
        &self,
        py: Python<'_>,
        sel_: Vec<(u64, u64, u64)>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<Option<NativeEncodedChunk>> {
        let view = ByteView::readable(data)?;
        let s = sel(sel_);
        let enc = self.inner.read(py, |a| a.encode_chunk(&s, view.as_slice())).map_err(|e| self.err(py, e))?;
        Ok(enc.map(NativeEncodedChunk))
    }

    /// Store an `encode_chunk` result as one commit; false (nothing written) when the
    /// array's geometry changed since it was encoded.
    fn commit_encoded(&self, py: Python<'_>, enc: &NativeEncodedChunk) -> PyResult<bool> {
        let enc = enc.0.clone();
        self.inner.write(py, |a| a.commit_encoded(enc)).map_err(|e| self.err(py, e))
    }

    fn resize(&self, py: Python<'_>, shape: Vec<u64>) -> PyResult<()> {
        self.inner.write(py, |a| a.resize(&shape)).map_err(|e| self.err(py, e))
    }

    /// Append rows along axis 0; returns the new shape.
    fn append(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let view = ByteView::readable(data)?;
        self.inner.write(py, |a| a.append(view.as_slice()).map(|()| a.shape().to_vec())).map_err(|e| self.err(py, e))
    }

    /// A staged array (`create(..., staged=True)`), filled: rename it to its `urlpath`,
    /// replacing what is there; then lock it if asked. `to`: rename it there instead (an
    /// unlocked handle opened at a temporary name, as `oxblosc.dask.to_oxblosc` stages).
    #[pyo3(signature = (locking=false, to=None))]
    fn publish(&self, py: Python<'_>, locking: bool, to: Option<PathBuf>) -> PyResult<()> {
        let Some(p) = to.as_ref().or(self.path.as_ref()) else { return Ok(()) };
        self.inner
            .write(py, |a| {
                a.schunk_mut().publish(p)?;
                if locking {
                    a.schunk_mut().enable_locking()?;
                }
                Ok(())
            })
            .map_err(|e| self.schunk_err(py, e))
    }

    /// Rewrite a contiguous file without dead space (`SChunk::compact`): for a file locked
    /// writers in other processes filled, whose closes left a reserve before the index.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.write(py, |a| a.schunk_mut().compact()).map_err(|e| self.schunk_err(py, e))
    }

    /// A staged array whose filling failed: remove its temporary file (`urlpath` is left as
    /// it was). The array must not be used after.
    fn discard(&self, py: Python<'_>) {
        self.inner.write(py, |a| a.schunk_mut().discard());
    }

    fn save(&self, py: Python<'_>, urlpath: PathBuf, contiguous: bool) -> PyResult<()> {
        // (An I/O error stays an OSError naming the file: a full disk is no corrupt chunk.)
        self.inner.read(py, |a| a.save(&urlpath, contiguous)).map_err(|e| match e {
            nd::Error::Frame(e) => frame_err(py, e.in_file(&urlpath)),
            e => nd_err(py, e).and_note(py, &urlpath),
        })
    }

    /// An in-memory, writable copy.
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        let s = self.inner.read(py, |a| a.schunk().clone());
        let inner = NdArray::from_schunk(s).map_err(|e| self.err(py, e))?;
        Ok(NativeNDArray::new(inner, None))
    }

    // ------------------------------------------------------------ the super-chunk calls

    #[getter]
    fn nchunks(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |a| a.schunk().nchunks())
    }

    #[getter]
    fn nbytes(&self, py: Python<'_>) -> u64 {
        self.inner.read(py, |a| a.schunk().nbytes())
    }

    #[getter]
    fn cbytes(&self, py: Python<'_>) -> u64 {
        self.inner.read(py, |a| a.schunk().cbytes())
    }

    #[getter]
    fn chunksize(&self, py: Python<'_>) -> i64 {
        self.inner.read(py, |a| a.schunk().chunksize())
    }

    #[getter]
    fn typesize(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |a| a.typesize())
    }

    #[getter]
    fn blocksize(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |a| a.schunk().blocksize())
    }

    #[getter]
    fn cparams(&self, py: Python<'_>) -> CParamsArg {
        CParamsArg::from_cparams(&self.inner.read(py, |a| a.schunk().cparams().clone()))
    }

    /// Let a per-chunk tuner pick the parameters of the chunks written from now on (None:
    /// the array's cparams again).
    fn set_tuner(&self, py: Python<'_>, tuner: Option<crate::tune::TunerArg>) -> PyResult<()> {
        let t = tuner.map(crate::tune::per_chunk).transpose()?;
        self.inner.write(py, |a| a.schunk_mut().set_tuner(t));
        Ok(())
    }

    /// Whether a per-chunk tuner is set.
    #[getter]
    fn tuned(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |a| a.schunk().tuner().is_some())
    }

    fn set_cparams(&self, py: Python<'_>, cparams: CParamsArg) -> PyResult<()> {
        let mut cp = cparams.into_cparams()?;
        self.inner
            .write(py, |a| {
                // The block size belongs to the geometry.
                cp.blocksize = a.geometry().block_bytes();
                a.schunk_mut().set_cparams(cp)
            })
            .map_err(|e| frame_err(py, e))
    }

    #[getter]
    fn dthreads(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |a| a.nthreads())
    }

    fn set_dthreads(&self, py: Python<'_>, nthreads: usize) {
        self.inner.write(py, |a| {
            a.schunk_mut().set_dparams(DParams { nthreads: nthreads.max(1) });
            a.set_nthreads(nthreads);
        });
    }

    fn meta_names(&self, py: Python<'_>) -> Vec<String> {
        self.inner.read(py, |a| a.schunk().meta_names().into_iter().map(String::from).collect())
    }

    fn meta_get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.read(py, |a| a.schunk().meta(name).map(<[u8]>::to_vec)) {
            Some(c) => Ok(PyBytes::new(py, &c)),
            None => Err(frame_err(py, frame::Error::NotFound { kind: "metalayer", name: name.to_string() })),
        }
    }

    fn meta_update(&self, py: Python<'_>, name: &str, content: &Bound<'_, PyAny>) -> PyResult<()> {
        if name == nd::meta::NAME || name == nd::meta::LEGACY_NAME {
            return Err(PyValueError::new_err(format!("the {name:?} metalayer is managed by the array")));
        }
        let content = ByteView::readable(content)?.as_slice().to_vec();
        self.inner.write(py, |a| a.schunk_mut().update_meta(name, &content)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_names(&self, py: Python<'_>) -> Vec<String> {
        self.inner.read(py, |a| a.schunk().vlmeta_names().into_iter().map(String::from).collect())
    }

    fn vlmeta_get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.read(py, |a| a.schunk().vlmeta(name).map(<[u8]>::to_vec)) {
            Some(c) => Ok(PyBytes::new(py, &c)),
            None => Err(frame_err(py, frame::Error::NotFound { kind: "vlmetalayer", name: name.to_string() })),
        }
    }

    fn vlmeta_set(&self, py: Python<'_>, name: &str, content: &Bound<'_, PyAny>) -> PyResult<()> {
        let content = ByteView::readable(content)?.as_slice().to_vec();
        self.inner.write(py, |a| a.schunk_mut().set_vlmeta(name, &content)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_del(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.inner.write(py, |a| a.schunk_mut().delete_vlmeta(name)).map_err(|e| frame_err(py, e))
    }

    fn get_chunk<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<Bound<'py, PyBytes>> {
        let c = self.owned_chunk(py, nchunk)?;
        Ok(PyBytes::new(py, &c))
    }

    fn decompress_chunk<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.inner.read(py, |a| a.schunk().decompress_chunk(nchunk)).map_err(|e| self.schunk_err(py, e))?;
        Ok(PyBytes::new(py, &v))
    }

    /// `(nbytes, cbytes, special, repeated_value, lazychunk)` as `NativeSChunk.chunk_summary`.
    fn chunk_summary<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<ChunkSummary<'py>> {
        let c = self.owned_chunk(py, nchunk)?;
        summarize_chunk(py, &c)
            .map_err(|source| self.schunk_err(py, frame::Error::Chunk { chunk: ChunkId::Data(nchunk), source }))
    }

    fn to_cframe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.inner.read(py, |a| a.to_cframe()).map_err(|e| self.err(py, e))?;
        Ok(PyBytes::new(py, &v))
    }
}

impl NativeNDArray {
    /// A copy of chunk `nchunk` as stored (the lock is not held while Python uses it).
    fn owned_chunk(&self, py: Python<'_>, nchunk: usize) -> PyResult<Vec<u8>> {
        let r = self.inner.read(py, |a| a.schunk().get_chunk(nchunk).map(|c| c.into_owned()));
        r.map_err(|e| self.schunk_err(py, e))
    }
}

/// Remove the frame file (or sparse directory) a failed constructor created. Best effort:
/// the constructor's own error is the one reported.
fn remove_created(path: Option<&std::path::Path>, contiguous: bool) {
    if let Some(path) = path {
        let _ = if contiguous { std::fs::remove_file(path) } else { std::fs::remove_dir_all(path) };
    }
}

/// A chunk compressed by `NativeNDArray.encode_chunk`, waiting for `commit_encoded`.
#[pyclass(module = "oxblosc._native", frozen)]
pub struct NativeEncodedChunk(nd::EncodedChunk);

#[pymethods]
impl NativeEncodedChunk {
    #[getter]
    fn nchunk(&self) -> u64 {
        self.0.nchunk()
    }
}
