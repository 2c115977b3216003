//! `oxblosc._native.NativeSChunk`: the frame layer's super-chunk seen from Python.
//!
//! Thin: argument conversion, buffer borrowing, the GIL released around everything that
//! compresses, decompresses or does I/O, and error mapping ([`crate::frame_err`]). The
//! python-blosc2-style class (`oxblosc.SChunk`: defaults, modes, `meta`/`vlmeta` mappings,
//! slicing rules) is `python/oxblosc/schunk.py`.

use std::path::PathBuf;

use oxblosc::chunk::{self, ChunkHeader, DParams, SpecialKind};
use oxblosc::frame::{self, ChunkId, Mode, OpenConfig, SChunk, SpecialValue};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;
use crate::cparams::CParamsArg;
use crate::frame_err;
use crate::shared::Shared;

/// A super-chunk in memory, or backed by a frame file / sparse directory. Shareable between
/// threads: reads run in parallel, changes one at a time ([`Shared`]).
#[pyclass(module = "oxblosc._native", frozen)]
pub struct NativeSChunk {
    pub(crate) inner: Shared<SChunk>,
    /// The file or directory it was opened from or is written to (names it in errors).
    pub(crate) path: Option<PathBuf>,
}

impl NativeSChunk {
    fn new(inner: SChunk, path: Option<PathBuf>) -> Self {
        NativeSChunk { inner: Shared::new(inner), path }
    }

    fn named(&self, e: frame::Error) -> frame::Error {
        match (&self.path, e) {
            (Some(p), e @ (frame::Error::Chunk { .. } | frame::Error::BadChunk { .. })) => e.in_file(p),
            (_, e) => e,
        }
    }
}

fn bytes_vec(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    Ok(ByteView::readable(obj)?.as_slice().to_vec())
}

#[pymethods]
impl NativeSChunk {
    /// A new, empty super-chunk; written to `urlpath` (replacing what is there) when given.
    /// `staged`: under a temporary name until `publish` (the caller adds data first).
    #[staticmethod]
    #[pyo3(signature = (cparams, dthreads, urlpath, contiguous, meta, locking=false, staged=false))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        cparams: CParamsArg,
        dthreads: usize,
        urlpath: Option<PathBuf>,
        contiguous: bool,
        meta: Vec<(String, Vec<u8>)>,
        locking: bool,
        staged: bool,
    ) -> PyResult<Self> {
        if staged && locking {
            return Err(PyValueError::new_err("a staged super-chunk is locked when published, not created locked"));
        }
        let cp = cparams.into_cparams()?;
        let dp = DParams { nthreads: dthreads.max(1) };
        let inner = py
            .allow_threads(|| -> frame::Result<SChunk> {
                // A file gets its metalayers under a temporary name, then is renamed into
                // place: a kill in between left a frame without them at `urlpath`.
                let mut s = match &urlpath {
                    None => SChunk::new(cp.clone(), dp)?,
                    Some(p) => SChunk::create_staged(p, contiguous, cp.clone(), dp)?,
                };
                let mut published = false;
                let built = (|| {
                    if urlpath.is_some() {
                        s.set_cparams(cp)?;
                    }
                    for (name, content) in &meta {
                        s.add_meta(name, content)?;
                    }
                    if let Some(p) = urlpath.as_ref().filter(|_| !staged) {
                        s.publish(p)?;
                        published = true;
                    }
                    if locking {
                        s.enable_locking()?;
                    }
                    Ok(())
                })();
                if let Err(e) = built {
                    // Only the temporary is ours to remove: once published, the (empty) frame
                    // at `urlpath` stays, as an NDArray's does, and the error says why it is
                    // not locked.
                    if urlpath.is_some() && !published {
                        s.discard();
                    }
                    return Err(e);
                }
                Ok(s)
            })
            .map_err(|e| frame_err(py, e))?;
        Ok(NativeSChunk::new(inner, urlpath))
    }

    /// Let a per-chunk tuner pick the parameters of the chunks compressed from now on
    /// (None: the super-chunk's cparams again).
    fn set_tuner(&self, py: Python<'_>, tuner: Option<crate::tune::TunerArg>) -> PyResult<()> {
        let t = tuner.map(crate::tune::per_chunk).transpose()?;
        self.inner.write(py, |s| s.set_tuner(t));
        Ok(())
    }

    /// Whether a per-chunk tuner is set.
    #[getter]
    fn tuned(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |s| s.tuner().is_some())
    }

    /// A super-chunk read from an in-memory contiguous frame (copied once).
    #[staticmethod]
    fn from_cframe(py: Python<'_>, cframe: &Bound<'_, PyAny>) -> PyResult<Self> {
        let view = ByteView::readable(cframe)?;
        let inner = py.allow_threads(|| SChunk::from_cframe(view.as_slice())).map_err(|e| frame_err(py, e))?;
        Ok(NativeSChunk::new(inner, None))
    }

    /// Open a frame file (at `offset`) or sparse directory; every change is persisted when
    /// `writable`. `locking`: advisory `.b2lock` lock; `mmap`: map the file read-only.
    #[staticmethod]
    #[pyo3(signature = (urlpath, offset, writable, locking=false, mmap=false))]
    fn open(
        py: Python<'_>,
        urlpath: PathBuf,
        offset: u64,
        writable: bool,
        locking: bool,
        mmap: bool,
    ) -> PyResult<Self> {
        let mode = if writable { Mode::Append } else { Mode::Read };
        let cfg = OpenConfig { mode, offset, locking, mmap };
        let inner = py.allow_threads(|| frame::open_with(&urlpath, cfg)).map_err(|e| frame_err(py, e))?;
        Ok(NativeSChunk::new(inner, Some(urlpath)))
    }

    /// A staged super-chunk (`create(..., staged=True)`), filled: rename it to its
    /// `urlpath`, replacing what is there; then lock it if asked.
    #[pyo3(signature = (locking=false))]
    fn publish(&self, py: Python<'_>, locking: bool) -> PyResult<()> {
        let Some(p) = &self.path else { return Ok(()) };
        self.inner
            .write(py, |s| {
                s.publish(p)?;
                if locking {
                    s.enable_locking()?;
                }
                Ok(())
            })
            .map_err(|e| frame_err(py, e))
    }

    /// A staged super-chunk whose filling failed: remove its temporary file (`urlpath` is
    /// left as it was). It must not be used after.
    fn discard(&self, py: Python<'_>) {
        self.inner.write(py, SChunk::discard);
    }

    /// Locked handles: re-read the frame if another handle changed it; returns whether it did.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.write(py, |s| s.refresh()).map_err(|e| frame_err(py, e))
    }

    /// Locked writers: hold the exclusive lock until `release_lock` (blocks other handles).
    fn hold_lock(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.write(py, |s| s.hold_lock()).map_err(|e| frame_err(py, e))
    }

    fn release_lock(&self, py: Python<'_>) {
        self.inner.write(py, |s| s.release_lock());
    }

    #[getter]
    fn locking(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |s| s.is_locked())
    }

    /// Whether changes are written back to a file or directory.
    #[getter]
    fn writable(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |s| s.urlpath().is_some())
    }

    /// An in-memory, writable copy (stored chunks are still read from the same backing).
    fn copy(&self, py: Python<'_>) -> Self {
        NativeSChunk::new(self.inner.read(py, |s| s.clone()), self.path.clone())
    }

    /// Most threads seen inside reads of this handle at once (shows that reads overlap).
    #[getter]
    fn _peak_readers(&self) -> usize {
        self.inner.peak_readers()
    }

    /// Test hook: wait inside a read until `n` threads were inside reads at once.
    fn _rendezvous(&self, py: Python<'_>, n: usize, timeout: f64) -> bool {
        self.inner.rendezvous(py, n, std::time::Duration::from_secs_f64(timeout.clamp(0.0, 600.0)))
    }

    #[getter]
    fn nchunks(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |s| s.nchunks())
    }

    #[getter]
    fn nbytes(&self, py: Python<'_>) -> u64 {
        self.inner.read(py, |s| s.nbytes())
    }

    #[getter]
    fn cbytes(&self, py: Python<'_>) -> u64 {
        self.inner.read(py, |s| s.cbytes())
    }

    /// -1 before the first chunk, 0 for variable-size chunks.
    #[getter]
    fn chunksize(&self, py: Python<'_>) -> i64 {
        self.inner.read(py, |s| s.chunksize())
    }

    #[getter]
    fn typesize(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |s| s.typesize())
    }

    #[getter]
    fn blocksize(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |s| s.blocksize())
    }

    #[getter]
    fn cparams(&self, py: Python<'_>) -> CParamsArg {
        CParamsArg::from_cparams(&self.inner.read(py, |s| s.cparams().clone()))
    }

    fn set_cparams(&self, py: Python<'_>, cparams: CParamsArg) -> PyResult<()> {
        let cp = cparams.into_cparams()?;
        self.inner.write(py, |s| s.set_cparams(cp)).map_err(|e| frame_err(py, e))
    }

    #[getter]
    fn dthreads(&self, py: Python<'_>) -> usize {
        self.inner.read(py, |s| s.dparams().nthreads)
    }

    fn set_dthreads(&self, py: Python<'_>, nthreads: usize) {
        self.inner.write(py, |s| s.set_dparams(DParams { nthreads: nthreads.max(1) }));
    }

    // ------------------------------------------------------------ checksums

    /// Check every chunk read against its stored checksum.
    #[getter]
    fn verify_checksums(&self, py: Python<'_>) -> bool {
        self.inner.read(py, |s| s.verify_checksums())
    }

    fn set_verify_checksums(&self, py: Python<'_>, on: bool) {
        self.inner.write(py, |s| s.set_verify_checksums(on));
    }

    /// `ValueError` when the frame carries no (readable) checksums.
    fn require_checksums(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.read(py, |s| s.require_checksums()).map_err(|e| frame_err(py, self.named(e)))
    }

    fn enable_checksums(&self, py: Python<'_>) -> PyResult<()> {
        let r = self.inner.write(py, |s| s.enable_checksums());
        r.map_err(|e| frame_err(py, self.named(e)))
    }

    fn disable_checksums(&self, py: Python<'_>) -> PyResult<()> {
        let r = self.inner.write(py, |s| s.disable_checksums());
        r.map_err(|e| frame_err(py, self.named(e)))
    }

    /// ("off", 0), ("on", hashed chunks) or ("unreadable", reason).
    fn checksum_status(&self, py: Python<'_>) -> (String, String) {
        match self.inner.read(py, |s| s.checksums()) {
            frame::ChecksumStatus::Off => ("off".into(), String::new()),
            frame::ChecksumStatus::On { len } => ("on".into(), len.to_string()),
            frame::ChecksumStatus::Unreadable(r) => ("unreadable".into(), r),
        }
    }

    /// Check chunk `nchunk`'s checksum and decode it: True if it had a checksum, False if not;
    /// raises on a mismatch or a chunk that does not decode.
    fn verify_chunk(&self, py: Python<'_>, nchunk: usize) -> PyResult<bool> {
        match self.inner.read(py, |s| s.verify_chunk(nchunk).map(|(v, _)| v)) {
            Ok(v) => Ok(v == frame::Verdict::Ok),
            Err(e) => Err(frame_err(py, self.named(e))),
        }
    }

    // ------------------------------------------------------------ metalayers

    fn meta_names(&self, py: Python<'_>) -> Vec<String> {
        self.inner.read(py, |s| s.meta_names().into_iter().map(String::from).collect())
    }

    fn meta_get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.read(py, |s| s.meta(name).map(<[u8]>::to_vec)) {
            Some(c) => Ok(PyBytes::new(py, &c)),
            None => Err(frame_err(py, frame::Error::NotFound { kind: "metalayer", name: name.to_string() })),
        }
    }

    fn meta_update(&self, py: Python<'_>, name: &str, content: &Bound<'_, PyAny>) -> PyResult<()> {
        let content = bytes_vec(content)?;
        self.inner.write(py, |s| s.update_meta(name, &content)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_names(&self, py: Python<'_>) -> Vec<String> {
        self.inner.read(py, |s| s.vlmeta_names().into_iter().map(String::from).collect())
    }

    fn vlmeta_get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.read(py, |s| s.vlmeta(name).map(<[u8]>::to_vec)) {
            Some(c) => Ok(PyBytes::new(py, &c)),
            None => Err(frame_err(py, frame::Error::NotFound { kind: "vlmetalayer", name: name.to_string() })),
        }
    }

    fn vlmeta_set(&self, py: Python<'_>, name: &str, content: &Bound<'_, PyAny>) -> PyResult<()> {
        let content = bytes_vec(content)?;
        self.inner.write(py, |s| s.set_vlmeta(name, &content)).map_err(|e| frame_err(py, e))
    }

    fn vlmeta_del(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.inner.write(py, |s| s.delete_vlmeta(name)).map_err(|e| frame_err(py, e))
    }

    // ------------------------------------------------------------ writing

    fn append_data(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = ByteView::readable(data)?;
        self.inner.write(py, |s| s.append_data(view.as_slice())).map_err(|e| frame_err(py, e))
    }

    fn insert_data(&self, py: Python<'_>, nchunk: usize, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = ByteView::readable(data)?;
        self.inner.write(py, |s| s.insert_data(nchunk, view.as_slice())).map_err(|e| frame_err(py, e))
    }

    fn update_data(&self, py: Python<'_>, nchunk: usize, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = ByteView::readable(data)?;
        self.inner.write(py, |s| s.update_data(nchunk, view.as_slice())).map_err(|e| frame_err(py, e))
    }

    /// Append `data` as items: first fill a short last chunk up to the chunk size, then
    /// append chunks of `chunksize` bytes (the super-chunk's own when it has a fixed one).
    fn extend(&self, py: Python<'_>, data: &Bound<'_, PyAny>, chunksize: usize) -> PyResult<usize> {
        let view = ByteView::readable(data)?;
        if chunksize == 0 {
            return Err(PyValueError::new_err("chunksize must be positive"));
        }
        self.inner
            .write(py, |s| -> frame::Result<usize> {
                let data = view.as_slice();
                let mut pos = 0;
                let cs = s.chunksize();
                if s.nchunks() > 0 && cs > 0 && s.nbytes() % cs as u64 != 0 && !data.is_empty() {
                    let last = s.nchunks() - 1;
                    let mut buf = s.decompress_chunk(last)?;
                    let take = (cs as usize).saturating_sub(buf.len()).min(data.len());
                    buf.extend_from_slice(&data[..take]);
                    s.update_data(last, &buf)?;
                    pos = take;
                }
                let step = if cs > 0 { cs as usize } else { chunksize };
                for piece in data[pos..].chunks(step) {
                    s.append_data(piece)?;
                }
                Ok(s.nchunks())
            })
            .map_err(|e| frame_err(py, e))
    }

    fn append_chunk(&self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = ByteView::readable(chunk)?;
        self.inner.write(py, |s| s.append_chunk(view.as_slice())).map_err(|e| frame_err(py, e))
    }

    fn insert_chunk(&self, py: Python<'_>, nchunk: usize, chunk: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = ByteView::readable(chunk)?;
        self.inner.write(py, |s| s.insert_chunk(nchunk, view.as_slice())).map_err(|e| frame_err(py, e))
    }

    fn update_chunk(&self, py: Python<'_>, nchunk: usize, chunk: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = ByteView::readable(chunk)?;
        self.inner.write(py, |s| s.update_chunk(nchunk, view.as_slice())).map_err(|e| frame_err(py, e))
    }

    fn delete_chunk(&self, py: Python<'_>, nchunk: usize) -> PyResult<usize> {
        self.inner.write(py, |s| s.delete_chunk(nchunk)).map_err(|e| frame_err(py, e))
    }

    /// Overwrite items from `start` with `data` (inside the existing items).
    fn set_slice(&self, py: Python<'_>, start: u64, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let view = ByteView::readable(data)?;
        self.inner.write(py, |s| s.set_slice(start, view.as_slice())).map_err(|e| frame_err(py, e))
    }

    /// Append `nitems` of a special value (kind 1 zeros, 2 NaN, 3 `value`, 4 uninitialized)
    /// in chunks of the super-chunk's chunk size, or `chunksize` bytes when it has none yet.
    #[pyo3(signature = (nitems, kind, value, chunksize))]
    fn fill_special(
        &self,
        py: Python<'_>,
        nitems: u64,
        kind: u8,
        value: Option<Vec<u8>>,
        chunksize: Option<usize>,
    ) -> PyResult<usize> {
        let v = match (kind, value) {
            (1, _) => SpecialValue::Zeros,
            (2, _) => SpecialValue::Nan,
            (3, Some(v)) => SpecialValue::Value(v),
            (4, _) => SpecialValue::Uninit,
            (3, None) => return Err(PyValueError::new_err("value cannot be None when special_value is VALUE")),
            (k, _) => {
                return Err(PyValueError::new_err(format!("special value {k} is not ZERO, NAN, VALUE or UNINIT")))
            }
        };
        self.inner.write(py, |s| s.fill_special(nitems, v, chunksize)).map_err(|e| frame_err(py, e))
    }

    // ------------------------------------------------------------ reading

    /// Chunk `nchunk` as stored (chunks kept as special offsets come back as 32-byte chunks).
    fn get_chunk<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<Bound<'py, PyBytes>> {
        let c = self.owned_chunk(py, nchunk)?;
        Ok(PyBytes::new(py, &c))
    }

    /// `(nbytes, cbytes, special, repeated_value, lazychunk)` of a chunk, as python-blosc2's
    /// `iterchunks_info` reports them: `lazychunk` is the 32-byte header (plus the value of a
    /// repeated-value chunk); `repeated_value` is None unless special == 3.
    fn chunk_summary<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<ChunkSummary<'py>> {
        let c = self.owned_chunk(py, nchunk)?;
        summarize_chunk(py, &c)
            .map_err(|source| frame_err(py, self.named(frame::Error::Chunk { chunk: ChunkId::Data(nchunk), source })))
    }

    /// Decodes straight from the frame (its reused read buffer, or the chunk in memory) into
    /// the new `bytes`, sized from the chunk's header: no owned copy of the stored chunk.
    fn decompress_chunk<'py>(&self, py: Python<'py>, nchunk: usize) -> PyResult<Bound<'py, PyBytes>> {
        // The `bytes` is made with the GIL and filled under a second read lock; a writer on
        // another thread may replace the chunk in between, so a size that no longer matches
        // is measured again rather than decoded short.
        for _ in 0..64 {
            let n = self.inner.read(py, |s| s.chunk_info(nchunk)).map_err(|e| frame_err(py, self.named(e)))?.nbytes;
            let mut resized = false;
            let out = crate::buffer::new_bytes_with(py, n, |buf| {
                self.inner
                    .read(py, |s| {
                        s.with_chunk(nchunk, |c| {
                            let at = |source| frame::Error::Chunk { chunk: ChunkId::Data(nchunk), source };
                            if chunk::decompressed_len(c).map_err(at)? != buf.len() {
                                return Ok(false);
                            }
                            chunk::decompress_into_uninit(c, buf, s.dparams()).map(|_| true).map_err(at)
                        })
                    })
                    .map_err(|e| frame_err(py, self.named(e)))
                    .and_then(|done| {
                        resized = !done;
                        // An unfilled `bytes` is dropped unseen.
                        if done {
                            Ok(())
                        } else {
                            Err(PyValueError::new_err("chunk resized"))
                        }
                    })
            });
            if !resized {
                return out;
            }
        }
        Err(PyValueError::new_err(format!("chunk {nchunk} kept changing size while being read")))
    }

    /// Decompress chunk `nchunk` into the writable buffer `dst`; returns its nbytes.
    fn decompress_chunk_into(&self, py: Python<'_>, nchunk: usize, dst: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut out = ByteView::writable(dst)?;
        let buf = out.as_mut_slice();
        self.inner.read(py, |s| s.decompress_chunk_into(nchunk, buf)).map_err(|e| frame_err(py, self.named(e)))
    }

    /// Items `[start, stop)` (already clamped by the caller) as bytes.
    fn get_slice<'py>(&self, py: Python<'py>, start: u64, stop: u64) -> PyResult<Bound<'py, PyBytes>> {
        let len = self.inner.read(py, |s| s.slice_len(start, stop)).map_err(|e| frame_err(py, e))?;
        // Decode straight into the `bytes` object: no intermediate Vec and copy. (A change
        // between the two reads that makes the range invalid is reported by the second.)
        crate::buffer::new_bytes_with(py, len, |buf| {
            self.inner.read(py, |s| fill_slice(s, start, stop, buf)).map_err(|e| frame_err(py, self.named(e)))
        })
    }

    /// Items `[start, stop)` into the first bytes of the writable buffer `dst`.
    fn get_slice_into(&self, py: Python<'_>, start: u64, stop: u64, dst: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut out = ByteView::writable(dst)?;
        let buf = out.as_mut_slice();
        self.inner.read(py, |s| s.get_slice_into(start, stop, buf)).map_err(|e| frame_err(py, self.named(e)))
    }

    /// The whole super-chunk as an in-memory contiguous frame.
    fn to_cframe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.inner.read(py, |s| s.to_cframe()).map_err(|e| frame_err(py, self.named(e)))?;
        Ok(PyBytes::new(py, &v))
    }
}

impl NativeSChunk {
    /// A copy of chunk `nchunk` as stored (the lock is not held while Python uses it).
    fn owned_chunk(&self, py: Python<'_>, nchunk: usize) -> PyResult<Vec<u8>> {
        self.inner.read(py, |s| s.get_chunk(nchunk).map(|c| c.into_owned())).map_err(|e| frame_err(py, e))
    }
}

/// `get_slice_into` over fresh, uninitialised bytes: whole chunks are decoded straight into
/// them (no zero-fill pass; it cost a sixth of an 80 MB read).
fn fill_slice(s: &SChunk, start: u64, stop: u64, buf: &mut [std::mem::MaybeUninit<u8>]) -> frame::Result<()> {
    s.get_slice_into_uninit(start, stop, buf)
}

/// What `chunk_summary` returns: (nbytes, cbytes, special, repeated value, lazy chunk).
pub(crate) type ChunkSummary<'py> = (usize, usize, u8, Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>);

/// The `chunk_summary` of stored chunk bytes (shared with `NativeNDArray`).
pub(crate) fn summarize_chunk<'py>(py: Python<'py>, c: &[u8]) -> chunk::Result<ChunkSummary<'py>> {
    let h = ChunkHeader::parse(c)?;
    let special = h.special()?;
    let hlen = if h.is_extended() { 32 } else { 16 };
    let (value, lazy) = match special {
        SpecialKind::None => (None, &c[..hlen.min(c.len())]),
        SpecialKind::Value => (Some(PyBytes::new(py, &c[hlen.min(h.cbytes)..h.cbytes])), &c[..h.cbytes]),
        _ => (None, &c[..h.cbytes]),
    };
    Ok((h.nbytes, h.cbytes, special as u8, value, PyBytes::new(py, lazy)))
}

/// Remove a frame file or sparse frame directory (nothing happens when it does not exist).
#[pyfunction]
pub fn remove_urlpath(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    py.allow_threads(|| frame::remove(&path)).map_err(|e| frame_err(py, e))
}

/// Remove what killed processes left of their staged temporaries for `path` (best effort;
/// for writers that stage under a name of their own, such as `oxblosc.dask.to_oxblosc`).
#[pyfunction]
pub fn sweep_stale_temps(py: Python<'_>, path: PathBuf) {
    py.allow_threads(|| frame::sweep_stale_temps(&path));
}
