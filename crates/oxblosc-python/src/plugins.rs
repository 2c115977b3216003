//! User codecs and filters written in Python, registered in the engine's registry.
//!
//! The callbacks take python-blosc2's arguments `(input, output, meta, context)`: `input` and
//! `output` are fresh uint8 NumPy arrays (copies: a callback that keeps them cannot reach
//! engine memory later), `meta` the slot's parameter. python-blosc2 passes its `SChunk` as
//! the fourth argument; oxblosc runs plugins on plain chunks and in several threads too, so it
//! passes a `PluginContext` with the `typesize` callbacks usually read from the `SChunk`.
//!
//! Compression and decompression run with the GIL released; each callback takes the GIL for
//! its own duration only, so worker threads take turns in Python and never wait on a thread
//! that waits on them. A callback that raises or returns a wrong size is an error for that
//! block (the chunk fails; nothing half-written is returned).

use std::path::PathBuf;

use oxblosc::chunk::native;
use oxblosc::chunk::registry::{self, Codec, CodecParams, Filter, FilterParams, Origin};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

use crate::buffer::ByteView;

/// The fourth callback argument: what a callback may want to know about the chunk.
#[pyclass(frozen, get_all, module = "oxblosc")]
pub struct PluginContext {
    /// Element size of the chunk (as in its header: 1 when above 255).
    typesize: usize,
    /// Index of the block being processed.
    block: usize,
    /// Compression level (0 when decoding).
    clevel: u8,
}

/// Fresh uint8 arrays holding a copy of `src` and `out_len` zeros.
fn arrays<'py>(py: Python<'py>, src: &[u8], out_len: usize) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let frombuffer = py.import("numpy")?.getattr("frombuffer")?;
    let input = frombuffer.call1((PyByteArray::new(py, src), "u1"))?;
    let output = frombuffer.call1((PyByteArray::new_with(py, out_len, |_| Ok(()))?, "u1"))?;
    Ok((input, output))
}

/// Call `f(input, output, meta, context)`; returns its result and the output array.
fn call<'py>(
    py: Python<'py>,
    f: &Py<PyAny>,
    src: &[u8],
    out_len: usize,
    meta: u8,
    ctx: PluginContext,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (input, output) = arrays(py, src, out_len)?;
    let r = f.bind(py).call1((input, &output, meta, ctx))?;
    Ok((r, output))
}

/// Copy the first `n` bytes of the callback's output array into `dst`.
fn copy_out(output: &Bound<'_, PyAny>, dst: &mut [u8]) -> PyResult<()> {
    let view = ByteView::readable(output)?;
    let n = dst.len();
    dst.copy_from_slice(&view.as_slice()[..n]);
    Ok(())
}

/// The callback's return value as a byte count.
fn returned_size(r: &Bound<'_, PyAny>, what: &str) -> Result<i64, String> {
    r.extract::<i64>().map_err(|_| {
        let got = r.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        format!("the {what} must return the number of bytes it wrote (an int), got {got}")
    })
}

fn raised(what: &str, e: PyErr) -> String {
    format!("the Python {what} raised {e}")
}

struct PyCodec {
    name: String,
    version: u8,
    encoder: Py<PyAny>,
    decoder: Py<PyAny>,
}

impl Codec for PyCodec {
    fn name(&self) -> &str {
        &self.name
    }
    fn version(&self) -> u8 {
        self.version
    }
    /// 0 ("could not compress": the stream is stored raw), as in python-blosc2.
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        Python::with_gil(|py| {
            let ctx = PluginContext { typesize: p.typesize, block: p.block, clevel: p.clevel };
            let (r, output) = call(py, &self.encoder, src, dst.len(), p.meta, ctx).map_err(|e| raised("encoder", e))?;
            let n = returned_size(&r, "encoder")?;
            let n = usize::try_from(n).map_err(|_| format!("the encoder returned {n}, a negative size"))?;
            if n > dst.len() {
                return Err(format!("the encoder returned {n}, more than its output's {} bytes", dst.len()));
            }
            copy_out(&output, &mut dst[..n]).map_err(|e| e.to_string())?;
            Ok(n)
        })
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        Python::with_gil(|py| {
            let ctx = PluginContext { typesize: p.typesize, block: p.block, clevel: 0 };
            let (r, output) = call(py, &self.decoder, src, dst.len(), p.meta, ctx).map_err(|e| raised("decoder", e))?;
            let n = returned_size(&r, "decoder")?;
            if n != dst.len() as i64 {
                return Err(format!("the decoder returned {n}, expected {} bytes", dst.len()));
            }
            copy_out(&output, dst).map_err(|e| e.to_string())
        })
    }
}

struct PyFilter {
    name: String,
    forward: Py<PyAny>,
    backward: Py<PyAny>,
}

impl PyFilter {
    fn run(&self, f: &Py<PyAny>, what: &str, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        Python::with_gil(|py| {
            let ctx = PluginContext { typesize: p.typesize, block: p.block, clevel: 0 };
            let (_, output) = call(py, f, src, dst.len(), p.meta, ctx).map_err(|e| raised(what, e))?;
            copy_out(&output, dst).map_err(|e| e.to_string())
        })
    }
}

impl Filter for PyFilter {
    fn name(&self) -> &str {
        &self.name
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        self.run(&self.forward, "forward function", p, src, dst)
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        self.run(&self.backward, "backward function", p, src, dst)
    }
}

fn registered(r: oxblosc::chunk::Result<()>) -> PyResult<()> {
    r.map_err(|e| PyValueError::new_err(e.to_string()))
}

/// User plugins (no package) take 160-255; plugins from installed packages 32-255.
fn origin(package: Option<String>) -> Origin {
    package.map_or(Origin::User, Origin::Package)
}

/// Register a Python codec under `id`.
#[pyfunction]
#[pyo3(signature = (name, id, encoder, decoder, version, package=None))]
fn register_codec(
    name: String,
    id: u8,
    encoder: Py<PyAny>,
    decoder: Py<PyAny>,
    version: u8,
    package: Option<String>,
) -> PyResult<()> {
    registered(registry::register_codec(id, Box::new(PyCodec { name, version, encoder, decoder }), origin(package)))
}

/// Register a Python filter under `id`.
#[pyfunction]
#[pyo3(signature = (id, forward, backward, name, package=None))]
fn register_filter(
    id: u8,
    forward: Py<PyAny>,
    backward: Py<PyAny>,
    name: String,
    package: Option<String>,
) -> PyResult<()> {
    registered(registry::register_filter(id, Box::new(PyFilter { name, forward, backward }), origin(package)))
}

/// The registry's loader: asks `oxblosc.plugins` to load the installed package that
/// declares `id` (entry points), once; then looks on `OXBLOSC_PLUGIN_PATH` as the CLI does.
/// Failures leave the id unregistered (the caller's error then names the id and the
/// failure); the Python side warns about a plugin that fails to load.
fn load_from_packages(kind: registry::Kind, id: u8) {
    let name = if kind == registry::Kind::Codec { "codec" } else { "filter" };
    Python::with_gil(|py| {
        if let Err(e) = py.import("oxblosc.plugins").and_then(|m| m.call_method1("_load_entry_point", (name, id))) {
            e.write_unraisable(py, None);
        }
    });
    let found = match kind {
        registry::Kind::Codec => registry::registered_codecs().iter().any(|r| r.id == id),
        registry::Kind::Filter => registry::registered_filters().iter().any(|r| r.id == id),
    };
    if !found {
        oxblosc::plugins::load_once(kind, id, &oxblosc::plugins::path_var_dirs());
    }
}

/// Register `kind` `id` from the compiled library an entry point value names, relative to
/// `base` (the directory holding the package's dist-info).
#[pyfunction]
fn load_compiled_plugin(
    py: Python<'_>,
    kind: &str,
    id: u8,
    base: PathBuf,
    value: &str,
    package: String,
) -> PyResult<()> {
    let kind = if kind == "codec" { registry::Kind::Codec } else { registry::Kind::Filter };
    let Some(library) = oxblosc::plugins::library_path(&base, value) else {
        return Err(PyValueError::new_err(format!("entry point value {value:?} of {package} does not name a library")));
    };
    py.allow_threads(|| native::register_from_library(kind, id, &library, Origin::Package(package)))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Install the package loader (called once by `oxblosc.plugins` at import).
#[pyfunction]
fn enable_package_loader() -> bool {
    registry::set_loader(load_from_packages)
}

type Row = (u8, String, u8, String);

fn rows(list: Vec<registry::Registered>) -> Vec<Row> {
    list.into_iter().map(|r| (r.id, r.name.to_owned(), r.version, r.origin.to_string())).collect()
}

/// Every registered codec as `(id, name, version, origin)`.
#[pyfunction]
fn registered_codecs() -> Vec<Row> {
    rows(registry::registered_codecs())
}

/// Every registered filter as `(id, name, version, origin)`.
#[pyfunction]
fn registered_filters() -> Vec<Row> {
    rows(registry::registered_filters())
}

/// Add this module's functions and classes to `_native`.
pub(crate) fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(register_codec, m)?)?;
    m.add_function(wrap_pyfunction!(register_filter, m)?)?;
    m.add_function(wrap_pyfunction!(registered_codecs, m)?)?;
    m.add_function(wrap_pyfunction!(registered_filters, m)?)?;
    m.add_function(wrap_pyfunction!(enable_package_loader, m)?)?;
    m.add_function(wrap_pyfunction!(load_compiled_plugin, m)?)?;
    m.add_class::<PluginContext>()
}
