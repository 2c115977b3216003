//! Table queries and statistics for `oxblosc.CTable` (`python/oxblosc/ctable.py`).
//!
//! Thin: the columns are `NativeNDArray`s the Python table already holds; a query takes the
//! shared lock of each (and of the validity column) with the GIL released and runs
//! `oxblosc::table::scan` over them.

use oxblosc::table::filter::Condition;
use oxblosc::table::{self, stats, Column, Kind, Scan};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::ByteView;
use crate::ndarray::NativeNDArray;

fn table_err(py: Python<'_>, e: table::Error) -> PyErr {
    match e {
        table::Error::Column { .. } => crate::chunk_error(py, e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Statistics records (python-blosc2 SUMMARY layout) of every `block_rows` rows of `data`,
/// elements of NumPy dtype `dtype` (`itemsize` bytes each). Empty for kinds without them.
#[pyfunction]
pub(crate) fn table_stats<'py>(
    py: Python<'py>,
    dtype: &str,
    itemsize: usize,
    data: &Bound<'py, PyAny>,
    block_rows: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let view = ByteView::readable(data)?;
    let kind = Kind::from_numpy(dtype, itemsize);
    let recs = py.allow_threads(|| stats::summarize(kind, view.as_slice(), block_rows));
    Ok(PyBytes::new(py, &recs))
}

/// The record of a block made of the parts records `a` and `b` describe (empty: cannot merge).
#[pyfunction]
pub(crate) fn table_stats_merge<'py>(
    py: Python<'py>,
    dtype: &str,
    itemsize: usize,
    a: &[u8],
    b: &[u8],
) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &stats::merge(Kind::from_numpy(dtype, itemsize), a, b))
}

/// Check `condition` against columns `(name, dtype, itemsize)`: the names it reads and the
/// NumPy type of its result. Errors name the position and the column.
#[pyfunction]
pub(crate) fn table_compile(condition: &str, columns: Vec<(String, String, usize)>) -> PyResult<(Vec<String>, String)> {
    let kinds: Vec<(&str, Kind)> = columns.iter().map(|(n, d, s)| (n.as_str(), Kind::from_numpy(d, *s))).collect();
    let c = Condition::compile(condition, &kinds).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((c.inputs().to_vec(), c.dtype().numpy_str()))
}

type QueryOut<'py> = (Bound<'py, PyBytes>, Vec<Bound<'py, PyBytes>>, u64, u64, u64, u64);

/// Rows (below `nrows`) where `condition` holds and `valid` is true: their positions (u64
/// bytes, when `positions`) and the values of the `outputs` columns, plus the count, blocks
/// scanned, blocks skipped and column blocks decoded. `columns`: (name, array, NumPy dtype,
/// statistics records or None).
#[pyfunction]
#[pyo3(signature = (columns, valid, nrows, condition, outputs, nthreads, skip, positions))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn table_query<'py>(
    py: Python<'py>,
    columns: Vec<(String, Py<NativeNDArray>, String, Option<Vec<u8>>)>,
    valid: Option<Py<NativeNDArray>>,
    nrows: u64,
    condition: &str,
    outputs: Vec<usize>,
    nthreads: usize,
    skip: bool,
    positions: bool,
) -> PyResult<QueryOut<'py>> {
    let arrays: Vec<&NativeNDArray> = columns.iter().map(|c| c.1.get()).collect();
    let valid_arr = valid.as_ref().map(|v| v.get());
    if outputs.iter().any(|&o| o >= columns.len()) {
        return Err(PyValueError::new_err("output column index out of range"));
    }
    let result = py.allow_threads(|| {
        let guards: Vec<_> = arrays.iter().map(|a| a.shared().read_guard()).collect();
        let vguard = valid_arr.map(|v| v.shared().read_guard());
        let cols: Vec<Column<'_>> = columns
            .iter()
            .zip(&guards)
            .map(|((name, _, dtype, st), g)| Column {
                name,
                arr: g,
                kind: Kind::from_numpy(dtype, g.typesize()),
                stats: st.as_deref(),
            })
            .collect();
        let kinds: Vec<(&str, Kind)> = cols.iter().map(|c| (c.name, c.kind)).collect();
        let cond = Condition::compile(condition, &kinds).map_err(|e| table::Error::Eval(e.to_string()))?;
        if cond.dtype() != oxblosc::table::filter::DType::Bool {
            return Err(table::Error::Eval(format!(
                "the condition {condition:?} gives {} values, not booleans",
                cond.dtype().name()
            )));
        }
        let inputs = cond
            .inputs()
            .iter()
            .map(|n| cols.iter().position(|c| c.name == n).expect("compiled from these columns"))
            .collect();
        let scan = Scan { columns: cols, inputs, outputs, valid: vguard.as_deref(), nrows, nthreads, skip, positions };
        table::run(&scan, &cond)
    });
    let found = result.map_err(|e| table_err(py, e))?;
    let pos: Vec<u8> = found.positions.iter().flat_map(|p| p.to_le_bytes()).collect();
    Ok((
        PyBytes::new(py, &pos),
        found.values.iter().map(|v| PyBytes::new(py, v)).collect(),
        found.count,
        found.blocks_scanned,
        found.blocks_skipped,
        found.column_blocks_decoded,
    ))
}
