//! oxblosc-expr: the expression engine of oxblosc (table queries, lazy array expressions).
//!
//! ```text
//! parse(text) -> Expr                       tokens + Pratt parser, hostile input bounded
//! Expr::names() / Expr::compile(schema)     NumPy 2 typing (NEP 50) -> Program
//! Program::inputs() / dtype()               what to feed, what comes out
//! Program::eval_into(&[ColumnRef], ColumnMut)   one block, typed loops, thread-local scratch
//! Program::eval_par(.., nthreads)           a long in-RAM input over blocks, N threads
//! Program::may_match(&[ValueRange])         block skipping from per-block min/max
//! ```
//!
//! # Semantics (NumPy 2)
//! - Operators `+ - * / // % **`, unary `- + ~`, comparisons `< <= > >= == !=` (chains
//!   `a < b < c` mean `(a < b) & (b < c)`), `& | ^` (bitwise on integers, logical on bool),
//!   `and or not` (the same as `& | ~`, as in pandas' query), parentheses. Python's
//!   precedence: `&`, `|` bind tighter than comparisons, so write `(a > 1) & (b < 2)`.
//! - Literals: Python ints (decimal, `0x`, `0o`, `0b`, `_`), floats (`1e3`, `.5`), `True`,
//!   `False`, strings (`'abc'`, `b'abc'`: compared with fixed-width bytes columns, NUL padded),
//!   and the names `inf`, `nan`, `pi` unless a column has that name.
//! - Types follow NumPy 2 (NEP 50): a column's type wins over a Python literal of the same
//!   kind (`float32_col > 0.1` compares in float32; `int8_col + 1` stays int8), an int literal
//!   that does not fit the column's type is an error (NumPy 2's `OverflowError`) except in
//!   comparisons, which are exact; `/` of integers gives float64; integer arithmetic wraps;
//!   integer `//`, `%`, `fmod` by zero give 0 (NumPy gives 0 and warns); integers to negative
//!   integer powers are an error; bool `+`/`*` are or/and, bool `-` and unary `-` are errors.
//! - Functions: `abs absolute negative sqrt exp expm1 log log10 log1p log2 sin cos tan arcsin
//!   arccos arctan sinh cosh tanh arcsinh arccosh arctanh floor ceil trunc isnan isinf
//!   isfinite exp2 cbrt rint deg2rad (radians) rad2deg (degrees) signbit square conj
//!   (conjugate) real where(c, a, b) arctan2 fmod minimum maximum fmin fmax (NaN-ignoring)
//!   hypot logaddexp logaddexp2 copysign`. Where NumPy would return float16
//!   (float functions of bool, int8, uint8) we return float32; transcendental functions use
//!   the platform libm (float64 `sin cos`: the vectorised kernels of `fastmath`, within 2 ULP
//!   of libm), so they may differ from NumPy's SIMD versions in the last bits.
//! - Broadcasting: every input has the output's number of rows, or one row (a scalar).
//!
//! # Limits
//! Text at most [`MAX_TEXT_LEN`] bytes, [`MAX_DEPTH`] nesting levels, [`MAX_NODES`] nodes,
//! numeric literals of [`MAX_NUMBER_LEN`] characters; every violation is an [`ExprError`]
//! with the byte offset and a caret excerpt, never a panic.
#![deny(unsafe_code)]

mod cast;
mod column;
mod compile;
mod dtype;
mod error;
mod eval;
mod fastmath;
mod kernels;
mod parse;
mod range;

pub use column::{Column, ColumnMut, ColumnRef};
pub use compile::{Program, FUNCTIONS};
pub use dtype::{promote, DType, Kind, Scalar, Weak};
pub use error::{ErrorKind, ExprError};
pub use eval::{Scratch, PAR_ROWS, SUB};
pub use parse::{parse, BinOp, Expr, Node, UnOp, MAX_DEPTH, MAX_NODES, MAX_NUMBER_LEN, MAX_STRING_LEN, MAX_TEXT_LEN};
pub use range::ValueRange;

/// Parse, compile against the given columns and evaluate with `nthreads` threads: the
/// one-call form (all columns the same length, or one row to broadcast).
pub fn evaluate(text: &str, columns: &[(&str, ColumnRef<'_>)], nthreads: usize) -> Result<Column, ExprError> {
    let expr = parse(text)?;
    let schema: Vec<(&str, DType)> = columns.iter().map(|(n, c)| (*n, c.dtype())).collect();
    let prog = expr.compile_columns(&schema)?;
    let inputs: Vec<ColumnRef<'_>> = prog
        .inputs()
        .iter()
        .map(|n| columns.iter().find(|(c, _)| c == n).map(|(_, col)| *col).expect("compiled from these columns"))
        .collect();
    let n = inputs.iter().map(|c| c.len()).find(|&l| l != 1).or(inputs.first().map(|c| c.len())).unwrap_or(1);
    let mut out = Column::zeros(prog.dtype(), n);
    prog.eval_par(&inputs, out.as_mut(), nthreads)?;
    Ok(out)
}
