//! Python objects <-> msgpack, the way python-blosc2 stores `meta` and `vlmeta` values.
//!
//! python-blosc2 4.14 packs with msgpack-python (`strict_types=True, use_bin_type=True`) and
//! these conventions, all reproduced here so each side reads the other's values back as the
//! same Python objects:
//!
//! * a tuple is the list `["__tuple__", *items]` (and such a list unpacks to a tuple);
//! * `complex` is extension 44 holding two big-endian float64 (real, imag);
//! * `set`/`frozenset` is extension 45 holding the packed list of its items;
//! * NumPy arrays are extension 46 and embedded super-chunks extension 42: those need NumPy
//!   or the `SChunk` class, so the Python layer builds/reads them through the `default` and
//!   `ext_hook` callables (as msgpack-python's own API does).
//!
//! The byte format itself is the frame crate's msgpack module (bounded decoder, compact
//! encoder); this file only maps Python types onto its [`Value`].

use oxblosc::frame::{msgpack, Value};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyComplex, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyMemoryView, PySet,
    PyString, PyTuple,
};

use crate::buffer::ByteView;

/// Extension codes python-blosc2 reserves (see `blosc2/msgpack_utils.py`).
const EXT_COMPLEX: i8 = 44;
const EXT_SET: i8 = 45;

/// Nesting limit: the same as the decoder's, so we never write what we cannot read back.
const MAX_DEPTH: usize = msgpack::MAX_DEPTH;

struct Packer<'py> {
    default: Option<Bound<'py, PyAny>>,
    ext_type: Option<Bound<'py, PyAny>>,
}

impl<'py> Packer<'py> {
    fn value(&self, obj: &Bound<'py, PyAny>, depth: usize) -> PyResult<Value> {
        if depth > MAX_DEPTH {
            return Err(PyValueError::new_err(format!("value nested deeper than {MAX_DEPTH} levels")));
        }
        if obj.is_none() {
            return Ok(Value::Nil);
        }
        if obj.is_exact_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.extract()?));
        }
        if obj.is_exact_instance_of::<PyInt>() {
            if let Ok(v) = obj.extract::<i64>() {
                return Ok(if v < 0 { Value::Int(v) } else { Value::UInt(v as u64) });
            }
            return obj
                .extract::<u64>()
                .map(Value::UInt)
                .map_err(|_| PyOverflowError::new_err("int too large for msgpack (64 bits at most)"));
        }
        if obj.is_exact_instance_of::<PyFloat>() {
            return Ok(Value::F64(obj.extract()?));
        }
        if obj.is_exact_instance_of::<PyString>() {
            return Ok(Value::Str(obj.extract()?));
        }
        if obj.is_exact_instance_of::<PyBytes>()
            || obj.is_exact_instance_of::<PyByteArray>()
            || obj.is_exact_instance_of::<PyMemoryView>()
        {
            return Ok(Value::Bin(ByteView::readable(obj)?.as_slice().to_vec()));
        }
        if let Ok(l) = obj.downcast_exact::<PyList>() {
            return l.iter().map(|x| self.value(&x, depth + 1)).collect::<PyResult<_>>().map(Value::Array);
        }
        if let Ok(t) = obj.downcast_exact::<PyTuple>() {
            let mut v = Vec::with_capacity(t.len() + 1);
            v.push(Value::Str("__tuple__".into()));
            for x in t.iter() {
                v.push(self.value(&x, depth + 1)?);
            }
            return Ok(Value::Array(v));
        }
        if let Ok(d) = obj.downcast_exact::<PyDict>() {
            let mut m = Vec::with_capacity(d.len());
            for (k, x) in d.iter() {
                m.push((self.value(&k, depth + 1)?, self.value(&x, depth + 1)?));
            }
            return Ok(Value::Map(m));
        }
        if let Ok(c) = obj.downcast_exact::<PyComplex>() {
            let mut d = c.real().to_be_bytes().to_vec();
            d.extend_from_slice(&c.imag().to_be_bytes());
            return Ok(Value::Ext(EXT_COMPLEX, d));
        }
        if obj.is_exact_instance_of::<PySet>() || obj.is_exact_instance_of::<PyFrozenSet>() {
            let items = obj.try_iter()?.map(|x| self.value(&x?, depth + 1)).collect::<PyResult<_>>()?;
            let mut d = Vec::new();
            msgpack::encode(&Value::Array(items), &mut d);
            return Ok(Value::Ext(EXT_SET, d));
        }
        if let Some(et) = &self.ext_type {
            if obj.is_instance(et)? {
                let code: i8 = obj.getattr("code")?.extract()?;
                let data = ByteView::readable(&obj.getattr("data")?)?.as_slice().to_vec();
                return Ok(Value::Ext(code, data));
            }
        }
        if let Some(f) = &self.default {
            let r = f.call1((obj,))?;
            if !r.is(obj) {
                return self.value(&r, depth + 1);
            }
        }
        let tname = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        Err(PyTypeError::new_err(format!("can not serialize {tname:?} object")))
    }
}

/// Pack `obj` as msgpack. Objects of other types are passed to `default`, which returns a
/// packable object or an instance of `ext_type` (with `code` and `data` attributes).
#[pyfunction]
#[pyo3(signature = (obj, default=None, ext_type=None))]
pub fn packb<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    ext_type: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let v = Packer { default, ext_type }.value(obj, 0)?;
    let mut out = Vec::new();
    msgpack::encode(&v, &mut out);
    Ok(PyBytes::new(py, &out))
}

fn to_py<'py>(py: Python<'py>, v: Value, hook: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Nil => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::F32(f) => f64::from(f).into_pyobject(py)?.into_any(),
        Value::F64(f) => f.into_pyobject(py)?.into_any(),
        Value::Str(s) => PyString::new(py, &s).into_any(),
        Value::Bin(b) => PyBytes::new(py, &b).into_any(),
        Value::Array(a) => {
            if matches!(a.first(), Some(Value::Str(s)) if s == "__tuple__") {
                let items = a.into_iter().skip(1).map(|x| to_py(py, x, hook)).collect::<PyResult<Vec<_>>>()?;
                PyTuple::new(py, items)?.into_any()
            } else {
                let items = a.into_iter().map(|x| to_py(py, x, hook)).collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any()
            }
        }
        Value::Map(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(to_py(py, k, hook)?, to_py(py, x, hook)?)?;
            }
            d.into_any()
        }
        Value::Ext(EXT_COMPLEX, d) if d.len() == 16 => {
            let re = f64::from_be_bytes(d[..8].try_into().expect("8 bytes"));
            let im = f64::from_be_bytes(d[8..].try_into().expect("8 bytes"));
            PyComplex::from_doubles(py, re, im).into_any()
        }
        Value::Ext(EXT_SET, d) => {
            let inner = msgpack::decode(&d).map_err(|e| crate::frame_err(py, e))?;
            let Value::Array(items) = inner else {
                return Err(PyValueError::new_err("msgpack set extension does not hold an array"));
            };
            let items = items.into_iter().map(|x| to_py(py, x, hook)).collect::<PyResult<Vec<_>>>()?;
            PySet::new(py, &items)?.into_any()
        }
        Value::Ext(code, d) => match hook {
            Some(h) => h.call1((code, PyBytes::new(py, &d)))?,
            None => return Err(PyValueError::new_err(format!("msgpack extension {code} is not supported"))),
        },
    })
}

/// Unpack one msgpack value; extensions other than complex and set go to `ext_hook(code, data)`.
#[pyfunction]
#[pyo3(signature = (data, ext_hook=None))]
pub fn unpackb<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    ext_hook: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let view = ByteView::readable(data)?;
    let v = msgpack::decode(view.as_slice()).map_err(|e| crate::frame_err(py, e))?;
    drop(view);
    to_py(py, v, ext_hook.as_ref())
}
