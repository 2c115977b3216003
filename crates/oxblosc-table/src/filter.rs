//! A condition written as text, compiled by the expression engine (`oxblosc-expr`) against
//! the table's column types, as a [`BlockFilter`] for [`crate::scan`].

pub use crate::kind::DType;
use oxblosc_expr::{parse, ColumnMut, ColumnRef, ExprError, Program, ValueRange};

use crate::kind::Kind;
use crate::scan::{BlockFilter, ColumnBlock};
use crate::stats::Range;

/// A compiled boolean condition over named columns.
pub struct Condition {
    prog: Program,
}

impl Condition {
    /// Parse and type `text` against `columns` (name, kind); the result must be boolean.
    /// Columns of kinds a condition cannot use are unknown names to it.
    pub fn compile(text: &str, columns: &[(&str, Kind)]) -> Result<Condition, Box<ExprError>> {
        let schema: Vec<(&str, DType)> = columns.iter().filter_map(|&(n, k)| k.dtype().map(|d| (n, d))).collect();
        let expr = parse(text).map_err(Box::new)?;
        let prog = expr.compile_columns(&schema).map_err(Box::new)?;
        Ok(Condition { prog })
    }

    /// Names of the columns the condition reads, in the order [`BlockFilter::eval`] wants them.
    pub fn inputs(&self) -> &[String] {
        self.prog.inputs()
    }

    /// The type of the result (`Bool` for a condition).
    pub fn dtype(&self) -> DType {
        self.prog.dtype()
    }
}

impl BlockFilter for Condition {
    fn eval(&self, inputs: &[ColumnBlock<'_>], rows: usize, mask: &mut Vec<bool>) -> Result<(), String> {
        mask.clear();
        mask.resize(rows, false);
        // Blocks are 8-byte aligned scratch; a bool byte other than 0/1 (a damaged column) is
        // an error, not a guess.
        let refs = inputs
            .iter()
            .map(|b| {
                let dt = b
                    .kind
                    .dtype()
                    .ok_or_else(|| format!("a column of {:?} cannot take part in a condition", b.kind))?;
                ColumnRef::from_bytes(dt, b.bytes).map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<ColumnRef<'_>>, String>>()?;
        self.prog.eval_into(&refs, ColumnMut::Bool(mask)).map_err(|e| e.to_string())
    }

    fn may_match(&self, ranges: &[Option<Range>]) -> bool {
        let vr: Vec<ValueRange> = ranges
            .iter()
            .zip(self.prog.input_dtypes())
            .map(|(r, dt)| match (r, dt) {
                (None, _) => ValueRange::unknown(),
                (Some(r), DType::Bool) => ValueRange::bool(r.lo <= 0.0, r.hi >= 1.0),
                (Some(r), _) if r.all_nan => ValueRange::float(f64::NAN, f64::NAN, true),
                (Some(r), _) => ValueRange::float(r.lo, r.hi, r.nan),
            })
            .collect();
        self.prog.may_match(&vr)
    }
}
