//! The expression engine for Python: `expr_evaluate(text, {name: array}, nthreads)` and
//! `expr_names(text)`. Operands are NumPy arrays (or anything `numpy.asarray` takes); the
//! text is parsed and typed by `oxblosc::expr`, never by Python.

use oxblosc::expr::{parse, ColumnMut, ColumnRef, DType, ErrorKind, ExprError, Program};
use pyo3::exceptions::{PyNameError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use oxblosc::lazy::{compute_into, ComputeError, Operand};

use crate::buffer::ByteView;
use crate::ndarray::NativeNDArray;

fn expr_err(e: ExprError) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::UnknownName => PyNameError::new_err(msg),
        ErrorKind::Type => PyTypeError::new_err(msg),
        ErrorKind::Overflow => PyOverflowError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// The names an expression reads as columns, in order of first use (`SyntaxError`s are
/// `ValueError`s naming the position).
#[pyfunction]
pub fn expr_names(text: &str) -> PyResult<Vec<String>> {
    let e = parse(text).map_err(expr_err)?;
    Ok(e.names().into_iter().map(String::from).collect())
}

/// Evaluate `text` over `operands` (a dict of arrays of one shape; 0-d arrays and Python
/// scalars broadcast) into a new NumPy array, with `nthreads` threads and the GIL released.
#[pyfunction]
#[pyo3(signature = (text, operands, nthreads=None))]
pub fn expr_evaluate<'py>(
    py: Python<'py>,
    text: &str,
    operands: &Bound<'py, PyDict>,
    nthreads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let expr = parse(text).map_err(expr_err)?;
    let np = py.import("numpy")?;
    let mut names: Vec<String> = Vec::new();
    let mut arrays: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut dtypes: Vec<DType> = Vec::new();
    let mut shape: Option<Bound<'py, PyAny>> = None;
    for name in expr.names() {
        let Some(obj) = operands.get_item(name)? else { continue };
        let arr = np.call_method1("asarray", (obj,))?;
        let dstr: String = arr.getattr("dtype")?.getattr("str")?.extract()?;
        // Big-endian operands are converted to native order by `numpy.require` below.
        let dt = DType::from_numpy_str(&dstr.replace('>', "<")).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "operand '{name}' has dtype {dstr}: supported are bool, int8-64, uint8-64, float32, float64 and S<n> bytes"
            ))
        })?;
        let native = np.call_method1("dtype", (dt.numpy_str(),))?;
        let arr = np.call_method1("require", (arr, native, "CA"))?;
        let ndim: usize = arr.getattr("ndim")?.extract()?;
        if ndim > 0 {
            let s = arr.getattr("shape")?;
            match &shape {
                Some(prev) if !prev.eq(&s)? => {
                    return Err(PyValueError::new_err(format!(
                        "operand '{name}' has shape {s}, another operand {prev}: shapes must match (or be scalars)"
                    )))
                }
                Some(_) => {}
                None => shape = Some(s),
            }
        }
        names.push(name.to_string());
        arrays.push(arr);
        dtypes.push(dt);
    }
    let prog = expr.compile(|n| names.iter().position(|m| m == n).map(|i| dtypes[i])).map_err(|e| {
        let keys: Vec<String> = operands.keys().iter().filter_map(|k| k.extract::<String>().ok()).collect();
        expr_err(e.with_suggestion(keys.iter().map(String::as_str)))
    })?;
    let shape = match shape {
        Some(s) => s,
        None => PyTuple::empty(py).into_any(),
    };
    let out = np.call_method1("empty", (&shape, prog.dtype().numpy_str()))?;
    let views: Vec<ByteView> = prog
        .inputs()
        .iter()
        .map(|n| {
            let i = names.iter().position(|m| m == n).expect("compiled from these names");
            ByteView::readable(&arrays[i])
        })
        .collect::<PyResult<_>>()?;
    let mut out_view = ByteView::writable(&out)?;
    let nthreads = nthreads.unwrap_or_else(oxblosc::chunk::config::default_nthreads).max(1);
    let in_dtypes: Vec<DType> = prog.input_dtypes().to_vec();
    let result_dtype = prog.dtype();
    py.allow_threads(|| -> Result<(), ExprError> {
        let cols: Vec<ColumnRef<'_>> = views
            .iter()
            .zip(&in_dtypes)
            .map(|(v, &dt)| ColumnRef::from_bytes(dt, v.as_slice()))
            .collect::<Result<_, _>>()?;
        let out_col = ColumnMut::from_bytes(result_dtype, out_view.as_mut_slice())?;
        prog.eval_par(&cols, out_col, nthreads)
    })
    .map_err(expr_err)?;
    drop(views);
    drop(out_view);
    Ok(out)
}

/// An array operand: (name, array, NumPy dtype); a scalar: (name, NumPy dtype, its bytes);
/// a dense operand: (name, NumPy dtype, a C-contiguous NumPy array, its broadcast dims).
pub(crate) type ArrayArg = (String, Py<NativeNDArray>, String);
pub(crate) type ScalarArg = (String, String, Vec<u8>);
pub(crate) type DenseArg<'py> = (String, String, Bound<'py, PyAny>, Vec<u64>);

/// A dense operand's bytes, borrowed (no copy) for the call: see `oxblosc::lazy::Operand::Dense`.
pub(crate) struct Dense {
    name: String,
    dtype: String,
    view: ByteView,
    dims: Vec<u64>,
}

/// Borrow the bytes of each dense operand (with the GIL, before it is released).
pub(crate) fn dense_views(args: Vec<DenseArg<'_>>) -> PyResult<Vec<Dense>> {
    args.into_iter()
        .map(|(name, dtype, arr, dims)| Ok(Dense { name, dtype, view: ByteView::readable(&arr)?, dims }))
        .collect()
}

/// `text` compiled over `arrays` and `scalars`, with the schema it was compiled against.
pub(crate) fn compile_args(
    text: &str,
    arrays: &[ArrayArg],
    scalars: &[ScalarArg],
    dense: &[Dense],
) -> PyResult<(Program, Vec<(String, DType)>)> {
    let expr = parse(text).map_err(expr_err)?;
    let dtype_of = |dstr: &str, name: &str| {
        DType::from_numpy_str(dstr).ok_or_else(|| {
            PyTypeError::new_err(format!("operand '{name}' has dtype {dstr}, which expressions do not take"))
        })
    };
    let mut schema: Vec<(String, DType)> = Vec::new();
    for (name, _, d) in arrays {
        schema.push((name.clone(), dtype_of(d, name)?));
    }
    for (name, d, _) in scalars {
        schema.push((name.clone(), dtype_of(d, name)?));
    }
    for d in dense {
        schema.push((d.name.clone(), dtype_of(&d.dtype, &d.name)?));
    }
    let prog = expr.compile_columns(&schema).map_err(expr_err)?;
    Ok((prog, schema))
}

/// `f` over the operands of `prog` (in the order of its inputs), with a read lock on each
/// distinct array (an array may stand behind several names). Call with the GIL released.
pub(crate) fn with_operands<R>(
    prog: &Program,
    schema: &[(String, DType)],
    arrays: &[ArrayArg],
    scalars: &[ScalarArg],
    dense: &[Dense],
    f: impl FnOnce(&[Operand<'_>]) -> Result<R, ComputeError>,
) -> Result<R, ComputeError> {
    let natives: Vec<&NativeNDArray> = arrays.iter().map(|a| a.1.get()).collect();
    let mut distinct: Vec<&NativeNDArray> = Vec::new();
    for a in &natives {
        if !distinct.iter().any(|d| std::ptr::eq(*d, *a)) {
            distinct.push(a);
        }
    }
    let guards: Vec<_> = distinct.iter().map(|a| a.shared().read_guard()).collect();
    let operands: Vec<Operand<'_>> = prog
        .inputs()
        .iter()
        .map(|n| {
            if let Some(i) = arrays.iter().position(|a| &a.0 == n) {
                let g = distinct.iter().position(|d| std::ptr::eq(*d, natives[i])).expect("listed above");
                return Ok(Operand::Array(&guards[g]));
            }
            if let Some(d) = dense.iter().find(|d| &d.name == n) {
                return Ok(Operand::Dense { bytes: d.view.as_slice(), dims: &d.dims });
            }
            let (_, _, bytes) = scalars.iter().find(|s| &s.0 == n).expect("compiled from these names");
            let dt = schema.iter().find(|s| &s.0 == n).expect("compiled from these names").1;
            ColumnRef::from_bytes(dt, bytes).map(Operand::Scalar).map_err(ComputeError::Expr)
        })
        .collect::<Result<_, ComputeError>>()?;
    f(&operands)
}

/// A `ComputeError` as the Python exception for it.
pub(crate) fn compute_err(py: Python<'_>, e: ComputeError) -> PyErr {
    match e {
        ComputeError::Nd(e) => crate::ndarray::nd_err(py, e),
        ComputeError::Expr(e) => expr_err(e),
        ComputeError::Mismatch(m) => PyValueError::new_err(m),
    }
}

/// Evaluate `text` into every chunk of the new array `out`, all in Rust with the GIL
/// released (`oxblosc::lazy`): `arrays` are (name, array, NumPy dtype) with `out`'s shape,
/// chunks and blocks; `scalars` are (name, NumPy dtype, the value's bytes).
#[pyfunction]
#[pyo3(signature = (text, arrays, scalars, out, nthreads, dense=Vec::new()))]
pub fn expr_compute(
    py: Python<'_>,
    text: &str,
    arrays: Vec<ArrayArg>,
    scalars: Vec<ScalarArg>,
    out: Py<NativeNDArray>,
    nthreads: usize,
    dense: Vec<DenseArg<'_>>,
) -> PyResult<()> {
    let dense = dense_views(dense)?;
    let (prog, schema) = compile_args(text, &arrays, &scalars, &dense)?;
    let out = out.get();
    if arrays.iter().any(|a| std::ptr::eq(a.1.get(), out)) {
        return Err(PyValueError::new_err("the output array cannot be an operand"));
    }
    let r = out.shared().write(py, |o| {
        with_operands(&prog, &schema, &arrays, &scalars, &dense, |operands| compute_into(&prog, operands, o, nthreads))
    });
    r.map_err(|e| compute_err(py, e))
}

/// Evaluate `text` over `arrays` (NDArrays of one shape, chunks and blocks) and `scalars`
/// into `out`, a writable C-contiguous NumPy array of the result's shape and type, all in
/// Rust with the GIL released (`oxblosc::lazy_read`): operands' blocks decoded one by one,
/// results written in place.
#[pyfunction]
#[pyo3(signature = (text, arrays, scalars, out, nthreads, dense=Vec::new()))]
pub fn expr_read(
    py: Python<'_>,
    text: &str,
    arrays: Vec<ArrayArg>,
    scalars: Vec<ScalarArg>,
    out: &Bound<'_, PyAny>,
    nthreads: usize,
    dense: Vec<DenseArg<'_>>,
) -> PyResult<()> {
    let dense = dense_views(dense)?;
    let (prog, schema) = compile_args(text, &arrays, &scalars, &dense)?;
    let dstr: String = out.getattr("dtype")?.getattr("str")?.extract()?;
    if DType::from_numpy_str(&dstr) != Some(prog.dtype()) {
        return Err(PyTypeError::new_err(format!("out has dtype {dstr}, the result is {}", prog.dtype())));
    }
    let mut view = ByteView::writable(out)?;
    let buf = view.as_mut_slice();
    let r = py.allow_threads(|| {
        with_operands(&prog, &schema, &arrays, &scalars, &dense, |operands| {
            oxblosc::lazy_read::evaluate_into(&prog, operands, buf, nthreads)
        })
    });
    drop(view);
    r.map_err(|e| compute_err(py, e))
}
