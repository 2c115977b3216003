//! Reductions all in Rust with the GIL released (`oxblosc::reduce`):
//! `nd_reduce(array, dtype, op, axes, means, float_acc, nthreads)` of an NDArray's items and
//! `expr_reduce(text, arrays, scalars, op, ...)` of an expression over NDArrays of one
//! geometry (fused: its values are never stored). Both return `(cells, acc, index)`: the
//! result cells as little-endian bytes of the accumulator type `acc` (`"<f8"`, `"<i8"` or
//! `"<u8"`; the reduced axes have length 1) and, for argmin/argmax, the indices (`<u8`).

use oxblosc::expr::DType;
use oxblosc::reduce::{reduce, Acc, Cells, Op, Source};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::expr::{compile_args, compute_err, dense_views, with_operands, ArrayArg, DenseArg, ScalarArg};
use crate::ndarray::NativeNDArray;

type Out<'py> = (Bound<'py, PyBytes>, &'static str, Option<Bound<'py, PyBytes>>);

fn op_of(op: &str) -> PyResult<Op> {
    Ok(match op {
        "sum" => Op::Sum,
        "prod" => Op::Prod,
        "min" => Op::Min,
        "max" => Op::Max,
        "sqdev" => Op::SqDev,
        "any" => Op::Any,
        "all" => Op::All,
        "argmin" => Op::ArgMin,
        "argmax" => Op::ArgMax,
        _ => return Err(PyValueError::new_err(format!("no reduction named {op:?}"))),
    })
}

fn means_of(means: Option<&[u8]>) -> Option<Vec<f64>> {
    means.map(|b| b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
}

/// The accumulator: float64 when asked (means of integers), else NumPy's for `dt`.
fn acc_of(dt: DType, float_acc: bool) -> Acc {
    if float_acc {
        Acc::F64
    } else {
        Acc::of(dt)
    }
}

fn out<'py>(py: Python<'py>, r: oxblosc::reduce::Reduced) -> Out<'py> {
    let (bytes, acc): (Vec<u8>, &'static str) = match r.cells {
        Cells::F64(v) => (v.iter().flat_map(|x| x.to_le_bytes()).collect(), "<f8"),
        Cells::I64(v) => (v.iter().flat_map(|x| x.to_le_bytes()).collect(), "<i8"),
        Cells::U64(v) => (v.iter().flat_map(|x| x.to_le_bytes()).collect(), "<u8"),
    };
    let index = r.index.map(|v| PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()));
    (PyBytes::new(py, &bytes), acc, index)
}

/// `op` ("sum", "prod", "min", "max", "any", "all", "argmin", "argmax", or "sqdev": the sum
/// of squared deviations from `means`, float64 bytes, one per result cell) of the items of
/// `array` (NumPy dtype `dtype`) over `axes`.
#[pyfunction]
#[pyo3(signature = (array, dtype, op, axes, means, float_acc, nthreads))]
#[allow(clippy::too_many_arguments)]
pub fn nd_reduce<'py>(
    py: Python<'py>,
    array: Py<NativeNDArray>,
    dtype: &str,
    op: &str,
    axes: Vec<usize>,
    means: Option<&[u8]>,
    float_acc: bool,
    nthreads: usize,
) -> PyResult<Out<'py>> {
    let op = op_of(op)?;
    let dt = DType::from_numpy_str(dtype).ok_or_else(|| PyTypeError::new_err(format!("cannot reduce {dtype} here")))?;
    let means = means_of(means);
    let r = array
        .get()
        .shared()
        .read(py, |a| reduce(&Source::Array(a, dt), op, acc_of(dt, float_acc), &axes, means.as_deref(), nthreads));
    Ok(out(py, r.map_err(|e| compute_err(py, e))?))
}

/// `op` (as for `nd_reduce`) of the expression `text` over `arrays` (name, NDArray, NumPy
/// dtype; one shape, chunks and blocks) and `scalars` (name, NumPy dtype, bytes), evaluated
/// block by block and folded at once.
#[pyfunction]
#[pyo3(signature = (text, arrays, scalars, op, axes, means, float_acc, nthreads, dense=Vec::new()))]
#[allow(clippy::too_many_arguments)]
pub fn expr_reduce<'py>(
    py: Python<'py>,
    text: &str,
    arrays: Vec<ArrayArg>,
    scalars: Vec<ScalarArg>,
    op: &str,
    axes: Vec<usize>,
    means: Option<&[u8]>,
    float_acc: bool,
    nthreads: usize,
    dense: Vec<DenseArg<'py>>,
) -> PyResult<Out<'py>> {
    let op = op_of(op)?;
    let dense = dense_views(dense)?;
    let (prog, schema) = compile_args(text, &arrays, &scalars, &dense)?;
    let means = means_of(means);
    let acc = acc_of(prog.dtype(), float_acc);
    let r = py.allow_threads(|| {
        with_operands(&prog, &schema, &arrays, &scalars, &dense, |operands| {
            reduce(&Source::Expr(&prog, operands), op, acc, &axes, means.as_deref(), nthreads)
        })
    });
    Ok(out(py, r.map_err(|e| compute_err(py, e))?))
}
