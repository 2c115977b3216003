//! `oxblosc._native`: the Rust engine seen from Python.
//!
//! Thin conversions only (architecture rule 3): argument checks that need Python types,
//! buffer borrowing, GIL release around every call, and error mapping. The ergonomic
//! python-blosc2-style API lives in `python/oxblosc/`.
#![deny(unsafe_code)]

mod buffer;
mod cparams;
mod expr;
mod geometry;
mod hdf5;
mod hdf5_write;
mod ndarray;
mod pack;
mod plugins;
mod reduce;
mod schunk;
mod shared;
mod streamer;
mod table;
mod tune;

use oxblosc::chunk::{self, DParams, Error, SpecialKind};
use oxblosc::frame;
use pyo3::exceptions::{PyIndexError, PyKeyError, PyOSError, PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use buffer::ByteView;
use cparams::CParamsArg;

/// Output buffers larger than this are not kept between calls.
const KEEP_OUTPUT_LIMIT: usize = 256 << 20;

thread_local! {
    /// Compression output is written here first and then copied (compressed size only) into
    /// the returned `bytes`: a fresh worst-case buffer per call cost more in page faults than
    /// the codec itself on fast, incompressible cells.
    static OUTPUT: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Compress with `f` into the reused per-thread buffer (sized `capacity`) and return `bytes`.
fn compress_to_bytes<'py>(
    py: Python<'py>,
    capacity: usize,
    f: impl FnOnce(&mut [u8]) -> chunk::Result<usize> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut buf = OUTPUT.with(|c| c.take());
    if buf.len() < capacity {
        buf.resize(capacity, 0);
    }
    let result = py.allow_threads(|| f(&mut buf[..capacity]));
    let out = match result {
        Ok(n) => buffer::new_bytes_with(py, n, |out| {
            copy_released(py, out, &buf[..n]);
            Ok(())
        }),
        Err(e) => Err(to_py(py, e)),
    };
    if buf.capacity() <= KEEP_OUTPUT_LIMIT {
        OUTPUT.with(|c| c.set(buf));
    }
    out
}

/// Map an engine error to the Python exception users of python-blosc2 already catch:
/// bad parameters are `ValueError`; bad chunks raise `oxblosc.ChunkError`, which
/// subclasses both `ValueError` and `RuntimeError`.
fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = e.to_string();
    if is_param_error(&e) {
        PyValueError::new_err(msg)
    } else {
        chunk_error(py, msg)
    }
}

/// Chunk-layer errors that describe the caller's arguments rather than a malformed chunk.
fn is_param_error(e: &Error) -> bool {
    matches!(
        e,
        Error::InvalidParam { .. } | Error::InputTooLarge(_) | Error::OutOfRange { .. } | Error::OutputTooSmall { .. }
    )
}

/// An `oxblosc.ChunkError` (malformed chunk or frame) with `msg`.
fn chunk_error(py: Python<'_>, msg: String) -> PyErr {
    match py.import("oxblosc._errors").and_then(|m| m.getattr("ChunkError")) {
        Ok(cls) => PyErr::from_type(cls.downcast_into().expect("ChunkError is a type"), msg),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}

/// An `oxblosc.FrameChangedError` (a locked handle's view is out of date) with `msg`.
fn stale_error(py: Python<'_>, msg: String) -> PyErr {
    match py.import("oxblosc._errors").and_then(|m| m.getattr("FrameChangedError")) {
        Ok(cls) => PyErr::from_type(cls.downcast_into().expect("FrameChangedError is a type"), msg),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}

/// Map a frame-layer error: I/O -> `OSError` (the errno picks `FileNotFoundError` & co, and
/// `filename` names the file), missing metalayer -> `KeyError`, bad chunk index ->
/// `IndexError`, bad argument or write to a read-only super-chunk -> `ValueError`, anything
/// malformed -> `oxblosc.ChunkError`. The message always names the file when there is one.
pub(crate) fn frame_err(py: Python<'_>, e: frame::Error) -> PyErr {
    let msg = e.to_string();
    let (root, path) = match &e {
        frame::Error::File { path, source } => (source.as_ref(), Some(path.display().to_string())),
        other => (other, None),
    };
    match root {
        frame::Error::Io { source, .. } => match source.raw_os_error() {
            Some(errno) => PyOSError::new_err((errno, root.to_string(), path)),
            // A lock wait that ran out (`OXBLOSC_LOCK_TIMEOUT`): TimeoutError, still an OSError.
            None if source.kind() == std::io::ErrorKind::TimedOut => PyTimeoutError::new_err(msg),
            None => PyOSError::new_err(msg),
        },
        frame::Error::NotFound { name, .. } => PyKeyError::new_err(name.clone()),
        frame::Error::Stale => stale_error(py, msg),
        frame::Error::OutOfRange { .. } => PyIndexError::new_err(msg),
        frame::Error::InvalidParam { .. } | frame::Error::ReadOnly => PyValueError::new_err(msg),
        frame::Error::Chunk { source, .. } if is_param_error(source) => PyValueError::new_err(msg),
        _ => chunk_error(py, msg),
    }
}

/// Compress a buffer into a Blosc2 chunk (python-blosc2's `compress2` semantics).
#[pyfunction]
fn compress2<'py>(py: Python<'py>, src: &Bound<'py, PyAny>, cparams: CParamsArg) -> PyResult<Bound<'py, PyBytes>> {
    let cp = cparams.into_cparams()?;
    let view = ByteView::readable(src)?;
    let data = view.as_slice();
    let capacity = chunk::max_compressed_len(data.len());
    if let Some(r) = compress_straight(py, data, capacity, |dst| chunk::compress_into_uninit(data, dst, &cp)) {
        return r;
    }
    // Incompressible data are stored raw: header then `data`, copied once into the `bytes`.
    use chunk::compress::{compress_or_raw, RawOr};
    let mut raw = false;
    let head = compress_to_bytes(py, chunk::max_compressed_len(data.len()), |dst| {
        Ok(match compress_or_raw(data, dst, &cp)? {
            RawOr::Encoded(n) => n,
            RawOr::Raw(hlen) => {
                raw = true;
                hlen
            }
        })
    })?;
    if raw {
        header_then(py, head.as_bytes(), data)
    } else {
        Ok(head)
    }
}

/// The common start of `compress2` and `compress_blosc1`: an input past the chunk limit is
/// refused before any output is allocated (the worst case would be as large); where the
/// interpreter allows it, `f` compresses straight into the returned `bytes`, shrunk to the
/// chunk's length afterwards (`Some`). `None`: the caller compresses into a buffer and copies.
fn compress_straight<'py>(
    py: Python<'py>,
    data: &[u8],
    capacity: usize,
    f: impl FnOnce(&mut [std::mem::MaybeUninit<u8>]) -> chunk::Result<usize> + Send,
) -> Option<PyResult<Bound<'py, PyBytes>>> {
    if data.len() > chunk::format::MAX_BUFFERSIZE {
        return Some(Err(to_py(py, Error::InputTooLarge(data.len()))));
    }
    buffer::can_shrink_bytes().then(|| buffer::new_bytes_upto(py, capacity, f)?.map_err(|e| to_py(py, e)))
}

/// Whether `compress2`/`compress_blosc1` write straight into the returned `bytes` here (the
/// interpreter exports `_PyBytes_Resize` and `OXBLOSC_NO_BYTES_RESIZE` is unset); for tests.
#[pyfunction]
fn compresses_into_bytes() -> bool {
    buffer::can_shrink_bytes()
}

/// A new `bytes` holding `head` then `data` (a chunk stored raw), each copied once.
fn header_then<'py>(py: Python<'py>, head: &[u8], data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    buffer::new_bytes_with(py, head.len() + data.len(), |out| {
        let (h, rest) = out.split_at_mut(head.len());
        copy_released(py, h, head);
        copy_released(py, rest, data);
        Ok(())
    })
}

/// Copies at least this long into a new `bytes` run without the GIL.
const GIL_FREE_COPY: usize = 64 << 10;

/// Copy `src` into `dst` (a `bytes` being built, the same length), without the GIL when it is
/// long: nothing else can see that `bytes` yet, and Zarr's codec threads, which run chunks
/// concurrently, spent a raw (incompressible) chunk's whole copy waiting for one another.
fn copy_released(py: Python<'_>, dst: &mut [std::mem::MaybeUninit<u8>], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    // Byte-wise writes that the compiler turns into memcpy (MSRV 1.80 predates
    // `write_copy_of_slice`).
    let copy = |dst: &mut [std::mem::MaybeUninit<u8>]| {
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(s);
        }
    };
    if src.len() >= GIL_FREE_COPY {
        py.allow_threads(|| copy(dst));
    } else {
        copy(dst);
    }
}

/// Compress into a Blosc1 (version 2) chunk, readable by c-blosc 1.x, numcodecs and zarr.
#[pyfunction]
#[pyo3(signature = (src, codec, clevel, typesize, nthreads, blocksize, shuffle))]
#[allow(clippy::too_many_arguments)]
fn compress_blosc1<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    codec: u8,
    clevel: u8,
    typesize: usize,
    nthreads: usize,
    blocksize: usize,
    shuffle: u8,
) -> PyResult<Bound<'py, PyBytes>> {
    let cp =
        CParamsArg(codec, 0, clevel, false, typesize, nthreads, blocksize, 4, vec![0, 0, 0, 0, 0, shuffle], vec![])
            .into_cparams()?;
    let view = ByteView::readable(src)?;
    let data = view.as_slice();
    let capacity = chunk::max_blosc1_len(data.len());
    if let Some(r) = compress_straight(py, data, capacity, |dst| chunk::compress_blosc1_into_uninit(data, dst, &cp)) {
        return r;
    }
    // Incompressible data are stored raw: the chunk is a header then `data`, copied once,
    // straight into the `bytes` (not into the output buffer first).
    use chunk::compress::{compress_blosc1_or_raw, Blosc1Chunk};
    let mut raw = false;
    let head = compress_to_bytes(py, chunk::max_blosc1_len(data.len()), |dst| {
        match compress_blosc1_or_raw(data, dst, &cp)? {
            Blosc1Chunk::Encoded(n) => Ok(n),
            Blosc1Chunk::Raw => {
                raw = true;
                Ok(chunk::format::MIN_HEADER_LEN)
            }
        }
    })?;
    if !raw {
        return Ok(head);
    }
    header_then(py, head.as_bytes(), data)
}

/// Compress a list of buffers into one chunk with variable-length blocks (format version 6).
#[pyfunction]
fn compress_vlblocks<'py>(
    py: Python<'py>,
    blocks: Vec<Bound<'py, PyAny>>,
    cparams: CParamsArg,
) -> PyResult<Bound<'py, PyBytes>> {
    let cp = cparams.into_cparams()?;
    let views = blocks.iter().map(ByteView::readable).collect::<PyResult<Vec<_>>>()?;
    let slices: Vec<&[u8]> = views.iter().map(ByteView::as_slice).collect();
    let out = py.allow_threads(|| chunk::compress_vlblocks(&slices, &cp)).map_err(|e| to_py(py, e))?;
    Ok(PyBytes::new(py, &out))
}

/// Decode each block of a VL-block chunk into its own bytes.
#[pyfunction]
fn decompress_vlblocks<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    nthreads: usize,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let view = ByteView::readable(src)?;
    let data = view.as_slice();
    let dp = DParams { nthreads: nthreads.max(1) };
    let blocks = py.allow_threads(|| chunk::decompress_vlblocks(data, &dp)).map_err(|e| to_py(py, e))?;
    Ok(blocks.iter().map(|b| PyBytes::new(py, b)).collect())
}

/// Decompress a chunk into new bytes.
#[pyfunction]
fn decompress2<'py>(py: Python<'py>, src: &Bound<'py, PyAny>, nthreads: usize) -> PyResult<Bound<'py, PyBytes>> {
    let view = ByteView::readable(src)?;
    let chunk_bytes = view.as_slice();
    let nbytes = chunk::decompressed_len(chunk_bytes).map_err(|e| to_py(py, e))?;
    let dp = DParams { nthreads: nthreads.max(1) };
    buffer::new_bytes_with(py, nbytes, |buf| {
        py.allow_threads(|| chunk::decompress_into_uninit(chunk_bytes, buf, &dp)).map(|_| ()).map_err(|e| to_py(py, e))
    })
}

/// Decompress a chunk into a caller-provided writable buffer; returns the bytes written.
#[pyfunction]
fn decompress2_into(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dst: &Bound<'_, PyAny>,
    nthreads: usize,
) -> PyResult<usize> {
    let view = ByteView::readable(src)?;
    let mut out = ByteView::writable(dst)?;
    let dp = DParams { nthreads: nthreads.max(1) };
    let chunk_bytes = view.as_slice();
    let dst_bytes = out.as_mut_slice();
    py.allow_threads(|| chunk::decompress_into(chunk_bytes, dst_bytes, &dp)).map_err(|e| to_py(py, e))
}

/// `(nbytes, cbytes, blocksize)` from a chunk header.
#[pyfunction]
fn get_cbuffer_sizes(py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<(usize, usize, usize)> {
    let view = ByteView::readable(src)?;
    chunk::cbuffer_sizes(view.as_slice()).map_err(|e| to_py(py, e))
}

/// Items `[start, start + nitems)` of a chunk, decoding only the blocks that hold them.
#[pyfunction]
fn getitem<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    start: usize,
    nitems: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let view = ByteView::readable(src)?;
    let chunk_bytes = view.as_slice();
    let h = chunk::ChunkHeader::parse(chunk_bytes).map_err(|e| to_py(py, e))?;
    let len = nitems.saturating_mul(usize::from(h.typesize));
    if start.saturating_add(nitems).saturating_mul(usize::from(h.typesize)) > h.nbytes {
        return Err(to_py(
            py,
            Error::OutOfRange { start, end: start.saturating_add(nitems), nitems: h.nbytes / usize::from(h.typesize) },
        ));
    }
    PyBytes::new_with(py, len, |buf| {
        py.allow_threads(|| chunk::getitem(chunk_bytes, start, nitems, buf)).map(|_| ()).map_err(|e| to_py(py, e))
    })
}

/// A special-value chunk: kind 1 zeros, 2 NaN, 3 repeated `value`, 4 uninitialized.
#[pyfunction]
#[pyo3(signature = (kind, nbytes, typesize, value=None))]
fn special_chunk<'py>(
    py: Python<'py>,
    kind: u8,
    nbytes: usize,
    typesize: usize,
    value: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let kind = match kind {
        1 => SpecialKind::Zeros,
        2 => SpecialKind::Nan,
        3 => SpecialKind::Value,
        4 => SpecialKind::Uninit,
        _ => return Err(PyValueError::new_err(format!("special kind {kind} is not ZERO, NAN, VALUE or UNINIT"))),
    };
    let out = chunk::special_chunk(kind, nbytes, typesize, value.as_deref()).map_err(|e| to_py(py, e))?;
    Ok(PyBytes::new(py, &out))
}

/// The decoded header of a chunk, as a dict (for `info` and tests).
#[pyfunction]
fn chunk_info<'py>(py: Python<'py>, src: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let view = ByteView::readable(src)?;
    let h = chunk::ChunkHeader::parse(view.as_slice()).map_err(|e| to_py(py, e))?;
    let d = PyDict::new(py);
    d.set_item("version", h.version)?;
    d.set_item("flags", h.flags)?;
    d.set_item("typesize", h.typesize)?;
    d.set_item("nbytes", h.nbytes)?;
    d.set_item("cbytes", h.cbytes)?;
    d.set_item("blocksize", h.blocksize)?;
    d.set_item("nblocks", h.nblocks())?;
    d.set_item("extended", h.is_extended())?;
    d.set_item("memcpyed", h.is_memcpyed())?;
    d.set_item("split", !h.dont_split())?;
    d.set_item("vlblocks", h.is_vlblocks())?;
    d.set_item("use_dict", h.uses_dict())?;
    d.set_item("special", h.special().map_err(|e| to_py(py, e))? as u8)?;
    d.set_item("codec", h.compcode().ok().map(|c| if c == 1 && h.udcompcode == 2 { 2 } else { c }))?;
    d.set_item("filters", h.filters.to_vec())?;
    d.set_item("filters_meta", h.filters_meta.to_vec())?;
    Ok(d)
}

/// Number of cores the default thread count is based on.
#[pyfunction]
fn default_nthreads() -> usize {
    chunk::config::default_nthreads()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Blosc1 (numcodecs) zlib streams from stock zlib: numcodecs' bytes (docs/datastack.md).
    oxblosc::stock_zlib::install();
    m.add_function(wrap_pyfunction!(compress2, m)?)?;
    m.add_function(wrap_pyfunction!(compresses_into_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(compress_blosc1, m)?)?;
    m.add_function(wrap_pyfunction!(decompress2, m)?)?;
    m.add_function(wrap_pyfunction!(compress_vlblocks, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_vlblocks, m)?)?;
    m.add_function(wrap_pyfunction!(decompress2_into, m)?)?;
    m.add_function(wrap_pyfunction!(get_cbuffer_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(getitem, m)?)?;
    m.add_function(wrap_pyfunction!(special_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_info, m)?)?;
    m.add_function(wrap_pyfunction!(default_nthreads, m)?)?;
    m.add_function(wrap_pyfunction!(tune::tune, m)?)?;
    m.add_function(wrap_pyfunction!(pack::packb, m)?)?;
    m.add_function(wrap_pyfunction!(pack::unpackb, m)?)?;
    m.add_function(wrap_pyfunction!(schunk::remove_urlpath, m)?)?;
    m.add_function(wrap_pyfunction!(schunk::sweep_stale_temps, m)?)?;
    m.add_function(wrap_pyfunction!(geometry::auto_chunks_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5::hdf5_read_part, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_stats, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_stats_merge, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_compile, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_query, m)?)?;
    m.add_function(wrap_pyfunction!(expr::expr_evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(expr::expr_names, m)?)?;
    m.add_function(wrap_pyfunction!(expr::expr_compute, m)?)?;
    m.add_function(wrap_pyfunction!(expr::expr_read, m)?)?;
    m.add_function(wrap_pyfunction!(reduce::nd_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(reduce::expr_reduce, m)?)?;
    m.add_class::<hdf5::Hdf5ChunkFile>()?;
    m.add_function(wrap_pyfunction!(hdf5::hdf5_suggest_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5::hdf5_block_shape, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_write::hdf5_encode_chunks, m)?)?;
    m.add_class::<schunk::NativeSChunk>()?;
    m.add_class::<ndarray::NativeNDArray>()?;
    m.add_class::<streamer::NativeStreamer>()?;
    plugins::add_to(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
