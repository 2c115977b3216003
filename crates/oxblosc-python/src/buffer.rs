//! Borrow the bytes of any buffer-protocol object (bytes, bytearray, memoryview, NumPy).
//!
//! `PyBuffer<u8>` insists on the `B` item format, which a float64 array does not have, so
//! we ask for a plain contiguous byte view through the C API. This is the crate's only FFI.
#![allow(unsafe_code)]

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;

/// A held buffer view; released on drop (with the GIL, as CPython requires).
pub struct ByteView {
    view: Box<ffi::Py_buffer>,
}

// SAFETY: the exporter keeps the memory alive and unmoved while the view is held; we only
// hand out the slice while the `ByteView` lives, and release it with the GIL held.
unsafe impl Send for ByteView {}
unsafe impl Sync for ByteView {}

impl ByteView {
    fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let mut view: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        let flags = if writable { ffi::PyBUF_WRITABLE | ffi::PyBUF_C_CONTIGUOUS } else { ffi::PyBUF_C_CONTIGUOUS };
        // SAFETY: `view` is a valid, writable Py_buffer; on failure CPython sets an exception.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            let err = PyErr::take(obj.py());
            return Err(match err {
                Some(e) if e.is_instance_of::<PyBufferError>(obj.py()) && writable => {
                    PyTypeError::new_err("dst must be a writable, C-contiguous buffer (bytearray, NumPy array, ...)")
                }
                _ => PyTypeError::new_err(format!(
                    "expected a C-contiguous object supporting the buffer protocol, got {}",
                    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                )),
            });
        }
        Ok(ByteView { view })
    }

    /// A read-only view of `obj`.
    pub fn readable(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::get(obj, false)
    }

    /// A writable view of `obj`.
    pub fn writable(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::get(obj, true)
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.view.len == 0 || self.view.buf.is_null() {
            return &[];
        }
        // SAFETY: CPython guarantees `buf` points to `len` contiguous readable bytes while the
        // view is held.
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.view.len as usize) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.view.len == 0 || self.view.buf.is_null() {
            return &mut [];
        }
        debug_assert_eq!(self.view.readonly, 0);
        // SAFETY: the view was requested with PyBUF_WRITABLE, so `buf` is writable for `len` bytes;
        // `&mut self` makes this the only slice handed out.
        unsafe { std::slice::from_raw_parts_mut(self.view.buf as *mut u8, self.view.len as usize) }
    }
}

impl Drop for ByteView {
    fn drop(&mut self) {
        Python::with_gil(|_| {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer and is released once.
            unsafe { ffi::PyBuffer_Release(&mut *self.view) };
        });
    }
}

/// A new `bytes` of `len` bytes whose contents `fill` writes, without zero-filling them first
/// (a fresh multi-MiB `bytes` costs a whole extra pass over memory otherwise). `fill` gets
/// the bytes as `MaybeUninit` and must initialise all of them when it returns `Ok`; on error
/// the object is dropped unseen.
pub fn new_bytes_with<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [std::mem::MaybeUninit<u8>]) -> PyResult<()>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let size = ffi::Py_ssize_t::try_from(len).map_err(|_| pyo3::exceptions::PyMemoryError::new_err(len))?;
    // SAFETY: a NULL source asks CPython for an uninitialised bytes object of `size` bytes;
    // a NULL result carries a Python exception, which from_owned_ptr_or_err takes.
    let obj = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyBytes_FromStringAndSize(std::ptr::null(), size))? };
    // SAFETY: `obj` is a bytes object with `len` writable bytes at PyBytes_AsString; nothing
    // else can see it yet (we hold its only reference), and MaybeUninit makes no claim about
    // the contents.
    let buf = unsafe {
        std::slice::from_raw_parts_mut(ffi::PyBytes_AsString(obj.as_ptr()).cast::<std::mem::MaybeUninit<u8>>(), len)
    };
    fill(buf)?;
    Ok(obj.downcast_into::<pyo3::types::PyBytes>()?)
}

/// CPython's `_PyBytes_Resize`, looked up at run time: it is not in the limited API this
/// abi3 extension is built against, so it is never linked; where the running interpreter
/// exports it (every CPython on Unix), a `bytes` filled to less than its allocated size is
/// shrunk in place instead of being copied into a second, exact-size `bytes`.
type ResizeFn = unsafe extern "C" fn(*mut *mut ffi::PyObject, ffi::Py_ssize_t) -> std::os::raw::c_int;

fn bytes_resize() -> Option<ResizeFn> {
    static RESIZE: std::sync::OnceLock<Option<ResizeFn>> = std::sync::OnceLock::new();
    *RESIZE.get_or_init(|| {
        if std::env::var_os("OXBLOSC_NO_BYTES_RESIZE").is_some() {
            return None;
        }
        #[cfg(unix)]
        {
            // SAFETY: dlsym with RTLD_DEFAULT only looks a name up; the symbol, when found,
            // is CPython's `int _PyBytes_Resize(PyObject **, Py_ssize_t)`, whose signature
            // has not changed since Python 3.0.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_PyBytes_Resize".as_ptr()) };
            if !p.is_null() {
                return Some(unsafe { std::mem::transmute::<*mut libc::c_void, ResizeFn>(p) });
            }
        }
        None
    })
}

/// Whether [`new_bytes_upto`] can shrink a `bytes` in place (else it copies once).
pub fn can_shrink_bytes() -> bool {
    bytes_resize().is_some()
}

/// A new `bytes` of at most `capacity` bytes: `fill` writes its first `n` bytes and returns
/// `n` (or an error, and the object is dropped unseen); the object is then shrunk to `n` in
/// place, so the result is written once, where compressing into a buffer and copying the
/// result into an exact-size `bytes` writes it twice. Requires [`can_shrink_bytes`]. `fill`
/// runs without the GIL: nothing else can see the object yet.
pub fn new_bytes_upto<'py, E: Send>(
    py: Python<'py>,
    capacity: usize,
    fill: impl FnOnce(&mut [std::mem::MaybeUninit<u8>]) -> Result<usize, E> + Send,
) -> PyResult<Result<Bound<'py, pyo3::types::PyBytes>, E>> {
    let resize = bytes_resize().expect("callers check can_shrink_bytes");
    if capacity == 0 {
        // CPython hands out one shared empty `bytes`: never written to nor resized.
        return Ok(fill(&mut []).map(|_| pyo3::types::PyBytes::new(py, &[])));
    }
    let size = ffi::Py_ssize_t::try_from(capacity).map_err(|_| pyo3::exceptions::PyMemoryError::new_err(capacity))?;
    // SAFETY: a NULL source asks CPython for an uninitialised bytes object of `size` bytes;
    // a NULL result carries a Python exception, which from_owned_ptr_or_err takes.
    let obj = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyBytes_FromStringAndSize(std::ptr::null(), size))? };
    // The buffer's address crosses into the GIL-free closure as an integer: the object stays
    // alive (we hold its only reference) and unseen by anyone else while `fill` runs.
    // SAFETY: `obj` is a bytes object.
    let addr = unsafe { ffi::PyBytes_AsString(obj.as_ptr()) } as usize;
    let filled = py.allow_threads(move || {
        // SAFETY: `addr` points at the `capacity` bytes of `obj` (above), borrowed by nobody
        // else; MaybeUninit makes no claim about their contents.
        let buf = unsafe { std::slice::from_raw_parts_mut(addr as *mut std::mem::MaybeUninit<u8>, capacity) };
        fill(buf)
    });
    let n = match filled {
        Ok(n) if n <= capacity => n,
        Ok(n) => return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("wrote {n} bytes into {capacity}"))),
        Err(e) => return Ok(Err(e)),
    };
    let mut ptr = obj.into_ptr();
    // SAFETY: `ptr` is our only reference to a bytes object (reference count one) whose first
    // `n` bytes `fill` initialised; on failure CPython frees it, sets `ptr` to NULL and
    // raises MemoryError. Shrinking keeps the first `n` bytes.
    if unsafe { resize(&mut ptr, n as ffi::Py_ssize_t) } != 0 {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `ptr` is our owned, non-NULL reference to the shrunk bytes.
    Ok(Ok(unsafe { Bound::from_owned_ptr(py, ptr) }.downcast_into::<pyo3::types::PyBytes>()?))
}
