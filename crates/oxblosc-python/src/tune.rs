//! `oxblosc.tune`'s engine: the Rust tuner run with the GIL released, its points returned
//! as plain tuples (`python/oxblosc/tuning.py` builds the `CParams` and the table).

use std::time::Duration;

use oxblosc::tune::{self as engine, Measured, Objective, TuneOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::buffer::ByteView;

/// `(codec, clevel, filters, filters_meta, splitmode, blocksize, ratio, cspeed, dspeed)`,
/// speeds in bytes per second.
type Row = (u8, u8, Vec<u8>, Vec<u8>, u8, usize, f64, f64, f64);

fn row(m: &Measured) -> Row {
    let c = &m.candidate;
    (
        c.codec,
        c.clevel,
        c.filters.to_vec(),
        c.filters_meta.to_vec(),
        c.splitmode as u8,
        c.blocksize,
        m.ratio,
        m.cspeed,
        m.dspeed,
    )
}

/// Tune on the bytes of `data`: `(best, front, every point measured, sample bytes, seconds,
/// truncated by the budget)`. `exhaustive` measures the whole search space instead.
#[pyfunction]
#[pyo3(signature = (data, objective, time_budget, typesize, allow_lossy, seed, exhaustive=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn tune(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    objective: &str,
    time_budget: f64,
    typesize: usize,
    allow_lossy: bool,
    seed: u64,
    exhaustive: bool,
) -> PyResult<(Row, Vec<Row>, Vec<Row>, usize, f64, bool)> {
    let objective: Objective = objective.parse().map_err(PyValueError::new_err)?;
    if !(time_budget.is_finite() && time_budget >= 0.0) {
        return Err(PyValueError::new_err(format!("time_budget must be a non-negative number, got {time_budget}")));
    }
    let opts =
        TuneOptions { objective, time_budget: Duration::from_secs_f64(time_budget), typesize, allow_lossy, seed };
    let view = ByteView::readable(data)?;
    let bytes = view.as_slice();
    let r = py
        .allow_threads(|| if exhaustive { engine::exhaustive(bytes, &opts) } else { engine::tune(bytes, &opts) })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((
        row(&r.best),
        r.front.iter().map(row).collect(),
        r.measured.iter().map(row).collect(),
        r.sample_bytes,
        r.elapsed.as_secs_f64(),
        r.truncated,
    ))
}

/// The per-chunk tuner's settings as Python passes them: `(objective, every, drift,
/// time_budget seconds, allow_lossy, seed)`.
pub(crate) type TunerArg = (String, usize, f64, f64, bool, u64);

/// A per-chunk tuner ([`oxblosc::chunk_tuner`]) from its Python settings.
pub(crate) fn per_chunk(arg: TunerArg) -> PyResult<std::sync::Arc<dyn oxblosc::frame::ChunkTuner>> {
    let (objective, every, drift, budget, allow_lossy, seed) = arg;
    let objective: Objective = objective.parse().map_err(PyValueError::new_err)?;
    if !(drift.is_finite() && drift >= 0.0 && budget.is_finite() && budget >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "tuner drift and time_budget must be non-negative numbers, got {drift} and {budget}"
        )));
    }
    let time_budget = Duration::from_secs_f64(budget);
    let opts = oxblosc::chunk_tuner::PerChunkOptions { objective, every, drift, time_budget, allow_lossy, seed };
    Ok(std::sync::Arc::new(oxblosc::chunk_tuner::PerChunkTuner::new(opts)))
}
