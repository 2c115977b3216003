//! A condition written as text, compiled by the expression engine (`oxblosc-expr`) against
//! the table's column types, as a [`BlockFilter`] for [`crate::scan`].

use oxblosc_expr::{parse, ColumnMut, ColumnRef, ExprError, Program, ValueRange};
pub use oxblosc_expr::DType;

use crate::kind::Kind;
use crate::scan::{BlockFilter, ColumnBlock};
use crate::stats::Range;

/// The expression engine's type of a column kind (`None`: cannot take part in a condition).
pub fn dtype_of(kind: Kind) -> Option<DType> {
    Some(match kind {
        Kind::Bool => DType::Bool,
        Kind::I8 => DType::I8,
        Kind::I16 => DType::I16,
        Kind::I32 => DType::I32,
        Kind::I64 => DType::I64,
        Kind::U8 => DType::U8,
        Kind::U16 => DType::U16,
        Kind::U32 => DType::U32,
        Kind::U64 => DType::U64,
        Kind::F32 => DType::F32,
        Kind::F64 => DType::F64,
        Kind::Bytes(n) => DType::Bytes(n),
        Kind::Opaque(_) => return None,
    })
}

/// A compiled boolean condition over named columns.
pub struct Condition {
    prog: Program,
}

impl Condition {
    /// Parse and type `text` against `columns` (name, kind); the result must be boolean.
    /// Columns of kinds a condition cannot use are unknown names to it.
    pub fn compile(text: &str, columns: &[(&str, Kind)]) -> Result<Condition, ExprError> {
        let schema: Vec<(&str, DType)> = columns.iter().filter_map(|&(n, k)| dtype_of(k).map(|d| (n, d))).collect();
        let prog = parse(text)?.compile_columns(&schema)?;
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

/// A typed view of a decoded block; booleans go through `bools` (a byte is not a valid
/// `bool` unless it is 0 or 1, so they are converted, not reinterpreted).
fn column_ref<'b>(b: &ColumnBlock<'b>, bools: &'b [bool]) -> ColumnRef<'b> {
    use bytemuck::cast_slice as c;
    let s = b.bytes;
    match b.kind {
        Kind::Bool => ColumnRef::Bool(bools),
        Kind::I8 => ColumnRef::I8(c(s)),
        Kind::I16 => ColumnRef::I16(c(s)),
        Kind::I32 => ColumnRef::I32(c(s)),
        Kind::I64 => ColumnRef::I64(c(s)),
        Kind::U8 => ColumnRef::U8(s),
        Kind::U16 => ColumnRef::U16(c(s)),
        Kind::U32 => ColumnRef::U32(c(s)),
        Kind::U64 => ColumnRef::U64(c(s)),
        Kind::F32 => ColumnRef::F32(c(s)),
        Kind::F64 => ColumnRef::F64(c(s)),
        Kind::Bytes(width) | Kind::Opaque(width) => ColumnRef::Bytes { width, data: s },
    }
}

impl BlockFilter for Condition {
    fn eval(&self, inputs: &[ColumnBlock<'_>], rows: usize, mask: &mut Vec<bool>) -> Result<(), String> {
        mask.clear();
        mask.resize(rows, false);
        let bools: Vec<Vec<bool>> = inputs
            .iter()
            .map(|b| if b.kind == Kind::Bool { b.bytes.iter().map(|&x| x != 0).collect() } else { Vec::new() })
            .collect();
        let refs: Vec<ColumnRef<'_>> = inputs.iter().zip(&bools).map(|(b, v)| column_ref(b, v)).collect();
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
