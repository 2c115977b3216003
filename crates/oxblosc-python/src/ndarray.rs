//! `oxblosc._native.NativeNDArray`: the nd layer's `NdArray` seen from Python.
//!
//! Thin like `schunk.rs`: argument conversion, the GIL released around every read, write
//! and I/O, error mapping. It also answers the super-chunk calls `oxblosc.SChunk` makes on
//! its native object (sizes, cparams, meta/vlmeta, chunks, frames), so `NDArray.schunk` is
//! an `oxblosc.SChunk` over the very same storage. Indexing rules, dtypes and constructors
//! are `python/oxblosc/ndarray.py`.

use std::path::PathBuf;

use oxblosc::chunk::{ChunkHeader, DParams, SpecialKind};
use oxblosc::frame::{self, ChunkId, Mode, SChunk};
use oxblosc::nd::{self, DimSlice, Fill, Geometry, NdArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;
use crate::cparams::CParamsArg;
use crate::frame_err;
use crate::schunk::NativeSChunk;

/// Map an nd-layer error: frame errors as `frame_err` does, bad arguments -> `ValueError`,
/// a lying metalayer or chunk -> `oxblosc.ChunkError`.
fn nd_err(py: Python<'_>, e: nd::Error) -> PyErr {
    match e {
        nd::Error::Frame(e) => frame_err(py, e),
        nd::Error::Param { .. } => PyValueError::new_err(e.to_string()),
        other => crate::chunk_error(py, other.to_string()),
    }
}

fn sel(v: Vec<(u64, u64, u64)>) -> Vec<DimSlice> {
    v.into_iter().map(|(a, b, s)| DimSlice::new(a, b, s)).collect()
}

/// An n-dimensional array in memory or backed by a frame file / sparse directory.
#[pyclass(module = "oxblosc._native")]
pub struct NativeNDArray {
    inner: NdArray,
    path: Option<PathBuf>,
}

impl NativeNDArray {
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
    /// 2 NaN, 3 the `value` bytes; `data` (C-order bytes) overrides the fill.
    #[staticmethod]
    #[pyo3(signature = (cparams, dthreads, urlpath, contiguous, meta, shape, chunks, blocks, dtype, fill, value, data))]
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
    ) -> PyResult<Self> {
        let cp = cparams.into_cparams()?;
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
                let mut s = match &urlpath {
                    None => SChunk::new(cp.clone(), dp)?,
                    Some(p) => {
                        let mut s = SChunk::create(p, contiguous, cp.clone(), dp)?;
                        s.set_cparams(cp.clone())?;
                        s
                    }
                };
                for (name, content) in &meta {
                    s.add_meta(name, content)?;
                }
                match &view {
                    Some(v) => NdArray::from_buffer(s, geom, Some(&dtype), v.as_slice()),
                    None => NdArray::create(s, geom, Some(&dtype), fill),
                }
            })
            .map_err(|e| nd_err(py, e))?;
        Ok(NativeNDArray { inner, path: urlpath })
    }

    /// The array stored in a native super-chunk (which is left empty).
    #[staticmethod]
    fn from_schunk(py: Python<'_>, schunk: &Bound<'_, NativeSChunk>) -> PyResult<Self> {
        let mut s = schunk.borrow_mut();
        let placeholder =
            SChunk::new(s.inner.cparams().clone(), s.inner.dparams().clone()).map_err(|e| frame_err(py, e))?;
        let taken = std::mem::replace(&mut s.inner, placeholder);
        let path = s.path.clone();
        match NdArray::from_schunk(taken) {
            Ok(inner) => Ok(NativeNDArray { inner, path }),
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
        Ok(NativeNDArray { inner, path: None })
    }

    #[staticmethod]
    fn open(py: Python<'_>, urlpath: PathBuf, writable: bool) -> PyResult<Self> {
        let mode = if writable { Mode::Append } else { Mode::Read };
        let inner = py
            .allow_threads(|| NdArray::from_schunk(frame::open(&urlpath, mode)?))
            .map_err(|e| nd_err(py, e).and_note(py, &urlpath))?;
        Ok(NativeNDArray { inner, path: Some(urlpath) })
    }

    // ------------------------------------------------------------ array properties

    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.inner.shape().to_vec()
    }

    #[getter]
    fn chunks(&self) -> Vec<u64> {
        self.inner.chunks().to_vec()
    }

    #[getter]
    fn blocks(&self) -> Vec<u64> {
        self.inner.blocks().to_vec()
    }

    #[getter]
    fn dtype(&self) -> Option<String> {
        self.inner.dtype().map(str::to_owned)
    }

    #[getter]
    fn blocks_decoded(&self) -> u64 {
        self.inner.blocks_decoded()
    }

    /// (nchunk, start, stop) per chunk: where each chunk lies in the array.
    fn chunk_region(&self, py: Python<'_>, nchunk: u64) -> PyResult<(Vec<u64>, Vec<u64>)> {
        self.inner.chunk_region(nchunk).map_err(|e| self.err(py, e))
    }

    // ------------------------------------------------------------ reading and writing

    /// The hyperslab `(start, stop, step)` per dimension into the writable buffer `out`.
    fn get_slice_into(&self, py: Python<'_>, sel_: Vec<(u64, u64, u64)>, out: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut view = ByteView::writable(out)?;
        let buf = view.as_mut_slice();
        let s = sel(sel_);
        py.allow_threads(|| self.inner.get_slice_into(&s, buf)).map_err(|e| self.err(py, e))
    }

    fn set_slice(&mut self, py: Python<'_>, sel_: Vec<(u64, u64, u64)>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let view = ByteView::readable(data)?;
        let s = sel(sel_);
        let inner = &mut self.inner;
        let r = py.allow_threads(|| inner.set_slice(&s, view.as_slice()));
        r.map_err(|e| self.err(py, e))
    }

    fn resize(&mut self, py: Python<'_>, shape: Vec<u64>) -> PyResult<()> {
        let inner = &mut self.inner;
        let r = py.allow_threads(|| inner.resize(&shape));
        r.map_err(|e| self.err(py, e))
    }

    fn append(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let view = ByteView::readable(data)?;
        let inner = &mut self.inner;
        let r = py.allow_threads(|| inner.append(view.as_slice()));
        r.map_err(|e| self.err(py, e))
    }

    fn save(&self, py: Python<'_>, urlpath: PathBuf, contiguous: bool) -> PyResult<()> {
        py.allow_threads(|| self.inner.save(&urlpath, contiguous)).map_err(|e| nd_err(py, e).and_note(py, &urlpath))
    }

    /// An in-memory, writable copy.
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        let s = self.inner.schunk().clone();
        let inner = NdArray::from_schunk(s).map_err(|e| self.err(py, e))?;
        Ok(NativeNDArray { inner, path: None })
    }

    // ------------------------------------------------------------ the super-chunk calls

    #[getter]
    fn nchunks(&self) -> usize {
        self.inner.schunk().nchunks()
    }

    #[getter]
    fn nbytes(&self) -> u64 {
        self.inner.schunk().nbytes()
    }

    #[getter]
    fn cbytes(&self) -> u64 {
        self.inner.schunk().cbytes()
    }

    #[getter]
    fn chunksize(&self) -> i64 {
        self.inner.schunk().chunksize()
    }

    #[getter]
    fn typesize(&self) -> usize {
        self.inner.typesize()
    }

    #[getter]
    fn blocksize(&self) -> usize {
        self.inner.schunk().blocksize()
    }

    #[getter]
    fn cparams(&self) -> CParamsArg {
        CParamsArg::from_cparams(self.inner.schunk().cparams())
    }

    fn set_cparams(&mut self, py: Python<'_>, cparams: CParamsArg) -> PyResult<()> {
        let mut cp = cparams.into_cparams()?;
        // The block size belongs to the geometry.
        cp.blocksize = self.inner.geometry().block_bytes();
        self.inner.schunk_mut().set_cparams(cp).map_err(|e| frame_err(py, e))
    }

    #[getter]
    fn dthreads(&self) -> usize {
        self.inner.nthreads()
    }

    fn set_dthreads(&mut self, nthreads: usize) {
        self.inner.schunk_mut().set_dparams(DParams { nthreads: nthreads.max(1) });
        self.inner.set_nthreads(nthreads);
    }

    fn meta_names(&self) -> Vec<String> {
        self.inner.schunk().meta_names().into_iter().map(String::from).collect()
    }

    fn meta_get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.inner.schunk();
        let c = s.meta(name).ok_or_else(|| frame::Error::NotFound { kind: "metalayer", name: name.to_string() });
        c.map(|c| PyBytes::new(py, c)).map_err(|e| frame_err(py, e))
    }

    fn meta_update(&mut self, py: Python<'_>, name: &str, content: &Bound<'_, PyAny>) -> PyResult<()> {
        if name == nd::meta::NAME || name == nd::meta::LEGACY_NAME {
            return Err(PyValueError::new_err(format!("the {name:?} metalayer is managed by the array")));
        }
        let content = ByteView::readable(content)?.as_slice().to_vec();
        let s = self.inner.schunk_mut();
        py.allow_threads(|| s.update_meta(name, &content)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_names(&self) -> Vec<String> {
        self.inner.schunk().vlmeta_names().into_iter().map(String::from).collect()
    }

    fn vlmeta_get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.inner.schunk();
        let c = s.vlmeta(name).ok_or_else(|| frame::Error::NotFound { kind: "vlmetalayer", name: name.to_string() });
        c.map(|c| PyBytes::new(py, c)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_set(&mut self, py: Python<'_>, name: &str, content: &Bound<'_, PyAny>) -> PyResult<()> {
        let content = ByteView::readable(content)?.as_slice().to_vec();
        let s = self.inner.schunk_mut();
        py.allow_threads(|| s.set_vlmeta(name, &content)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_del(&mut self, py: Python<'_>, name: &str) -> PyResult<()> {
        let s = self.inner.schunk_mut();
        py.allow_threads(|| s.delete_vlmeta(name)).map_err(|e| frame_err(py, e))
    }

    fn get_chunk<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.inner.schunk();
        let c = py.allow_threads(|| s.get_chunk(nchunk).map(|c| c.into_owned())).map_err(|e| self.schunk_err(py, e))?;
        Ok(PyBytes::new(py, &c))
    }

    fn decompress_chunk<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<Bound<'py, PyBytes>> {
        let s = self.inner.schunk();
        let v = py.allow_threads(|| s.decompress_chunk(nchunk)).map_err(|e| self.schunk_err(py, e))?;
        Ok(PyBytes::new(py, &v))
    }

    /// `(nbytes, cbytes, special, repeated_value, lazychunk)` as `NativeSChunk.chunk_summary`.
    #[allow(clippy::type_complexity)]
    fn chunk_summary<'py>(
        &self,
        py: Python<'py>,
        nchunk: usize,
    ) -> PyResult<(usize, usize, u8, Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>)> {
        let s = self.inner.schunk();
        let c = py.allow_threads(|| s.get_chunk(nchunk).map(|c| c.into_owned())).map_err(|e| self.schunk_err(py, e))?;
        let chunk_err = |source| self.schunk_err(py, frame::Error::Chunk { chunk: ChunkId::Data(nchunk), source });
        let h = ChunkHeader::parse(&c).map_err(chunk_err)?;
        let special = h.special().map_err(chunk_err)?;
        let hlen = h.header_len();
        let value = (special == SpecialKind::Value).then(|| PyBytes::new(py, &c[hlen.min(h.cbytes)..h.cbytes]));
        let lazy = if special == SpecialKind::None { &c[..hlen.min(c.len())] } else { &c[..h.cbytes] };
        Ok((h.nbytes, h.cbytes, special as u8, value, PyBytes::new(py, lazy)))
    }

    fn to_cframe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = py.allow_threads(|| self.inner.to_cframe()).map_err(|e| self.err(py, e))?;
        Ok(PyBytes::new(py, &v))
    }
}
