//! Type checking (NumPy 2 rules) and lowering of an `Expr` to a `Program`: a straight list
//! of typed instructions over registers (inputs, constants, per-block temporaries).

use std::collections::HashMap;

use crate::dtype::{promote, DType, Kind, Scalar, Weak};
use crate::error::{ErrorKind, ExprError};
use crate::eval::cast_scalar;
use crate::parse::{BinOp, Expr, Node, UnOp};

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// One-argument float functions (float in, same float out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum F1 {
    Sqrt,
    Exp,
    Expm1,
    Log,
    Log10,
    Log1p,
    Log2,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Floor,
    Ceil,
    Trunc,
    Exp2,
    Cbrt,
    /// Round half to even (`np.rint`).
    Rint,
    Deg2rad,
    Rad2deg,
}

/// Binary float functions (operands promoted to a float type first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum F2 {
    Hypot,
    Logaddexp,
    Logaddexp2,
    Copysign,
}

/// Instructions. Operand and result types are fixed at compile time; see `eval.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// a -> out's dtype (NumPy `astype` for the safe casts promotion needs).
    Cast,
    /// x != 0 (NaN is true), any numeric -> bool.
    Truth,
    Neg,
    Not,
    BitNot,
    Abs,
    Square,
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    Fmod,
    Min,
    Max,
    Atan2,
    F2(F2),
    /// NaN-ignoring minimum / maximum (`np.fmin`, `np.fmax`).
    Fmin,
    Fmax,
    And,
    Or,
    Xor,
    Cmp(Cmp),
    F1(F1),
    IsNan,
    IsInf,
    IsFinite,
    /// c ? a : b.
    Where,
    /// Fixed-width bytes compared with NUL padding.
    BytesCmp(Cmp),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Src {
    Input(usize),
    Const(Scalar),
    ConstBytes(Vec<u8>),
    /// Result of an instruction, held in scratch slot n.
    Temp(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Reg {
    pub dtype: DType,
    pub src: Src,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Inst {
    pub op: Op,
    pub args: [usize; 3],
    pub out: usize,
}

/// A compiled expression: typed instructions over named inputs. Immutable, `Send + Sync`;
/// evaluate it from any number of threads (each uses its own scratch).
#[derive(Clone, Debug)]
pub struct Program {
    pub(crate) text: String,
    pub(crate) inputs: Vec<String>,
    pub(crate) input_dtypes: Vec<DType>,
    pub(crate) regs: Vec<Reg>,
    pub(crate) insts: Vec<Inst>,
    pub(crate) root: usize,
    pub(crate) slots: Vec<DType>,
}

impl Program {
    /// Input column names in the order `eval` expects them.
    pub fn inputs(&self) -> &[String] {
        &self.inputs
    }

    /// The dtype each input was compiled for.
    pub fn input_dtypes(&self) -> &[DType] {
        &self.input_dtypes
    }

    /// The result's dtype.
    pub fn dtype(&self) -> DType {
        self.regs[self.root].dtype
    }

    /// The expression text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Number of instructions (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.insts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.insts.is_empty()
    }
}

#[derive(Clone, Debug)]
enum Val {
    Weak(Weak),
    Str(Vec<u8>),
    Reg(usize),
}

struct Builder<'e> {
    expr: &'e Expr,
    prog: Program,
    input_regs: HashMap<String, usize>,
    casts: HashMap<(usize, DType), usize>,
}

/// Named constants (a column of the same name takes precedence).
fn named_constant(name: &str) -> Option<Weak> {
    Some(match name {
        "inf" | "Inf" => Weak::Float(f64::INFINITY),
        "nan" | "NaN" => Weak::Float(f64::NAN),
        "pi" => Weak::Float(std::f64::consts::PI),
        _ => return None,
    })
}

/// Names of the functions, for messages and suggestions.
pub const FUNCTIONS: [&str; 51] = [
    "abs",
    "sqrt",
    "exp",
    "expm1",
    "log",
    "log10",
    "log1p",
    "log2",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "floor",
    "ceil",
    "trunc",
    "isnan",
    "isinf",
    "isfinite",
    "where",
    "arctan2",
    "fmod",
    "minimum",
    "maximum",
    "absolute",
    "negative",
    "exp2",
    "cbrt",
    "rint",
    "deg2rad",
    "radians",
    "rad2deg",
    "degrees",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "copysign",
    "fmin",
    "fmax",
    "conj",
    "conjugate",
    "real",
    "square",
    "signbit",
];

fn f1_of(name: &str) -> Option<F1> {
    use F1::*;
    Some(match name {
        "sqrt" => Sqrt,
        "exp" => Exp,
        "expm1" => Expm1,
        "log" => Log,
        "log10" => Log10,
        "log1p" => Log1p,
        "log2" => Log2,
        "sin" => Sin,
        "cos" => Cos,
        "tan" => Tan,
        "arcsin" => Asin,
        "arccos" => Acos,
        "arctan" => Atan,
        "sinh" => Sinh,
        "cosh" => Cosh,
        "exp2" => Exp2,
        "cbrt" => Cbrt,
        "rint" => Rint,
        "deg2rad" | "radians" => Deg2rad,
        "rad2deg" | "degrees" => Rad2deg,
        "tanh" => Tanh,
        "arcsinh" => Asinh,
        "arccosh" => Acosh,
        "arctanh" => Atanh,
        "floor" => Floor,
        "ceil" => Ceil,
        "trunc" => Trunc,
        _ => return None,
    })
}

impl Expr {
    /// Type-check against `schema` (column name -> dtype; `None` for unknown names) and
    /// lower to a [`Program`]. Errors name the position and the column/function.
    pub fn compile(&self, schema: impl Fn(&str) -> Option<DType>) -> Result<Program, ExprError> {
        let mut b = Builder {
            expr: self,
            prog: Program {
                text: self.text.clone(),
                inputs: Vec::new(),
                input_dtypes: Vec::new(),
                regs: Vec::new(),
                insts: Vec::new(),
                root: 0,
                slots: Vec::new(),
            },
            input_regs: HashMap::new(),
            casts: HashMap::new(),
        };
        // Children always precede their parents in the arena: one forward pass, no recursion.
        let mut vals: Vec<Option<Val>> = vec![None; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            let v = match node {
                Node::Lit(w) => Val::Weak(*w),
                Node::Str(s) => Val::Str(s.clone()),
                Node::Name(n) => match schema(n) {
                    Some(dt) => Val::Reg(b.input(n, dt)),
                    None => match named_constant(n) {
                        Some(w) => Val::Weak(w),
                        None => {
                            let e = self.err_at(i, ErrorKind::UnknownName, format!("unknown name '{n}'")).column(n);
                            return Err(if FUNCTIONS.contains(&n.as_str()) {
                                ExprError::new(
                                    ErrorKind::UnknownName,
                                    format!("'{n}' is a function: call it as {n}(...)"),
                                )
                                .at(&self.text, self.spans[i].0, self.spans[i].1)
                                .column(n)
                            } else {
                                e
                            });
                        }
                    },
                },
                Node::Unary(op, a) => b.unary(i, *op, take(&vals, *a))?,
                Node::Binary(op, x, y) => b.binary(i, *op, take(&vals, *x), take(&vals, *y), [*x, *y])?,
                Node::Call(name, args) => {
                    let a: Vec<Val> = args.iter().map(|&k| take(&vals, k)).collect();
                    b.call(i, name, a, args)?
                }
            };
            vals[i] = Some(v);
        }
        let root = match take(&vals, self.root) {
            Val::Reg(r) => r,
            Val::Weak(w) => b.konst_of(self.root, w, w.default_dtype())?,
            Val::Str(s) => {
                let dt = DType::Bytes(s.len().max(1));
                b.reg(dt, Src::ConstBytes(s))
            }
        };
        b.prog.root = root;
        b.allocate_slots();
        Ok(b.prog)
    }

    /// [`Expr::compile`] against a list of columns; an unknown name gets a "did you mean" hint.
    pub fn compile_columns<S: AsRef<str>>(&self, columns: &[(S, DType)]) -> Result<Program, ExprError> {
        self.compile(|n| columns.iter().find(|(c, _)| c.as_ref() == n).map(|(_, d)| *d))
            .map_err(|e| e.with_suggestion(columns.iter().map(|(c, _)| c.as_ref())))
    }
}

fn take(vals: &[Option<Val>], i: usize) -> Val {
    vals[i].clone().expect("children are compiled before parents")
}

fn int_scalar(dt: DType, v: i128) -> Scalar {
    if dt.kind() == Kind::UInt {
        Scalar::U64(v as u64)
    } else {
        Scalar::I64(v as i64)
    }
}

impl Builder<'_> {
    fn err(&self, node: usize, kind: ErrorKind, msg: impl Into<String>) -> ExprError {
        self.expr.err_at(node, kind, msg)
    }

    fn reg(&mut self, dtype: DType, src: Src) -> usize {
        self.prog.regs.push(Reg { dtype, src });
        self.prog.regs.len() - 1
    }

    fn dt(&self, r: usize) -> DType {
        self.prog.regs[r].dtype
    }

    fn input(&mut self, name: &str, dt: DType) -> usize {
        if let Some(&r) = self.input_regs.get(name) {
            return r;
        }
        self.prog.inputs.push(name.to_string());
        self.prog.input_dtypes.push(dt);
        let r = self.reg(dt, Src::Input(self.prog.inputs.len() - 1));
        self.input_regs.insert(name.to_string(), r);
        r
    }

    fn emit(&mut self, op: Op, args: &[usize], dtype: DType) -> usize {
        let out = self.reg(dtype, Src::Temp(usize::MAX));
        let mut a = [usize::MAX; 3];
        a[..args.len()].copy_from_slice(args);
        self.prog.insts.push(Inst { op, args: a, out });
        out
    }

    fn cast(&mut self, r: usize, to: DType) -> usize {
        if self.dt(r) == to {
            return r;
        }
        if let Src::Const(s) = self.prog.regs[r].src {
            // Fold casts of constants (the same conversions the kernels do).
            let v = cast_scalar(s, to);
            return self.reg(to, Src::Const(v));
        }
        if let Some(&c) = self.casts.get(&(r, to)) {
            return c;
        }
        let c = self.emit(Op::Cast, &[r], to);
        self.casts.insert((r, to), c);
        c
    }

    /// A Python literal given the type `dt` (NEP 50); ints must fit, as NumPy 2 requires.
    fn konst_of(&mut self, node: usize, w: Weak, dt: DType) -> Result<usize, ExprError> {
        let s = match (w, dt.kind()) {
            (_, Kind::Bytes) => return Err(self.err(node, ErrorKind::Type, format!("cannot use a number as {dt}"))),
            (Weak::Bool(b), Kind::Bool) => Scalar::Bool(b),
            (Weak::Bool(b), Kind::Float) => Scalar::F64(b as u8 as f64),
            (Weak::Bool(b), _) => int_scalar(dt, b as i128),
            (Weak::Int(v), Kind::Float) => Scalar::F64(v as f64),
            (Weak::Int(v), Kind::Int | Kind::UInt) => {
                let (lo, hi) = dt.int_range().expect("integer type");
                if v < lo || v > hi {
                    return Err(self.err(
                        node,
                        ErrorKind::Overflow,
                        format!("Python integer {v} out of bounds for {dt} (as NumPy 2 refuses it)"),
                    ));
                }
                int_scalar(dt, v)
            }
            (Weak::Int(v), Kind::Bool) => Scalar::Bool(v != 0),
            (Weak::Float(f), Kind::Float) => Scalar::F64(f),
            (Weak::Float(_), _) => {
                return Err(self.err(node, ErrorKind::Type, format!("a float literal cannot be used as {dt}")))
            }
        };
        let s = cast_scalar(s, dt);
        Ok(self.reg(dt, Src::Const(s)))
    }

    /// `v` as a register of type `dt`.
    fn as_reg(&mut self, node: usize, v: &Val, dt: DType) -> Result<usize, ExprError> {
        match v {
            Val::Reg(r) => Ok(self.cast(*r, dt)),
            Val::Weak(w) => self.konst_of(node, *w, dt),
            Val::Str(_) => Err(self.err(node, ErrorKind::Type, "a string can only be compared with a bytes column")),
        }
    }

    /// `v` on its own (a literal gets its default type, as `np.asarray` would).
    fn strong(&mut self, node: usize, v: &Val) -> Result<usize, ExprError> {
        match v {
            Val::Weak(w) => self.konst_of(node, *w, w.default_dtype()),
            Val::Reg(r) => Ok(*r),
            Val::Str(_) => Err(self.err(node, ErrorKind::Type, "a string can only be compared with a bytes column")),
        }
    }

    /// The common type of operands (NEP 50: literals are weak).
    fn common(&self, node: usize, what: &str, vals: &[&Val]) -> Result<DType, ExprError> {
        let strong: Vec<DType> = vals
            .iter()
            .filter_map(|v| match v {
                Val::Reg(r) => Some(self.dt(*r)),
                _ => None,
            })
            .collect();
        let mut t = match strong.first() {
            Some(&t) => t,
            None => unreachable!("callers fold all-literal operands"),
        };
        for &s in &strong[1..] {
            t = promote(t, s)
                .ok_or_else(|| self.err(node, ErrorKind::Type, format!("{what}: no common type for {t} and {s}")))?;
        }
        for v in vals {
            if let Val::Weak(w) = v {
                let k = w.with_strong(t);
                if k.kind() > t.kind() {
                    t = k;
                }
            }
        }
        Ok(t)
    }

    fn unary(&mut self, node: usize, op: UnOp, a: Val) -> Result<Val, ExprError> {
        let r = match a {
            Val::Weak(w) => return fold_unary(op, w).map(Val::Weak).map_err(|m| self.err(node, ErrorKind::Type, m)),
            Val::Str(_) => return Err(self.err(node, ErrorKind::Type, "unary operator on a string")),
            Val::Reg(r) => r,
        };
        let dt = self.dt(r);
        if dt.kind() == Kind::Bytes {
            return Err(self.err(node, ErrorKind::Type, format!("unary operator on a {dt} column")));
        }
        Ok(Val::Reg(match (op, dt.kind()) {
            (UnOp::Neg, Kind::Bool) => {
                return Err(self.err(
                    node,
                    ErrorKind::Type,
                    "the boolean negative '-' is not supported (as in NumPy); use '~' or 'not'",
                ))
            }
            (UnOp::Pos, Kind::Bool) => {
                return Err(self.err(node, ErrorKind::Type, "unary '+' is not supported for bool (as in NumPy)"))
            }
            (UnOp::Neg, _) => self.emit(Op::Neg, &[r], dt),
            (UnOp::Pos, _) => r,
            (UnOp::Invert, Kind::Bool) => self.emit(Op::Not, &[r], dt),
            (UnOp::Invert, Kind::Float) => {
                return Err(self.err(
                    node,
                    ErrorKind::Type,
                    format!("'~'/'not' needs bool or integer operands, not {dt} (compare first: ~(x > 0))"),
                ))
            }
            (UnOp::Invert, _) => self.emit(Op::BitNot, &[r], dt),
        }))
    }

    fn binary(&mut self, node: usize, op: BinOp, a: Val, b: Val, kids: [usize; 2]) -> Result<Val, ExprError> {
        let sym = op.symbol();
        match (&a, &b) {
            (Val::Weak(x), Val::Weak(y)) => {
                return fold_binary(op, *x, *y).map(Val::Weak).map_err(|m| self.err(node, ErrorKind::Type, m))
            }
            (Val::Str(_), Val::Str(_)) => {
                return Err(self.err(node, ErrorKind::Type, "comparing two string literals is not supported"))
            }
            (Val::Str(s), Val::Reg(r)) | (Val::Reg(r), Val::Str(s)) => {
                let dt = self.dt(*r);
                let Some(cmp) = cmp_of(op) else {
                    return Err(self.err(node, ErrorKind::Type, format!("'{sym}' is not defined for strings")));
                };
                if dt.kind() != Kind::Bytes {
                    return Err(self.column_err(node, *r, kids, format!("cannot compare a {dt} column with a string")));
                }
                let c = self.reg(DType::Bytes(s.len().max(1)), Src::ConstBytes(s.clone()));
                let (x, y) = if matches!(a, Val::Reg(_)) { (*r, c) } else { (c, *r) };
                return Ok(Val::Reg(self.emit(Op::BytesCmp(cmp), &[x, y], DType::Bool)));
            }
            (Val::Str(_), _) | (_, Val::Str(_)) => {
                return Err(self.err(node, ErrorKind::Type, format!("'{sym}' between a number and a string")))
            }
            _ => {}
        }
        let t = self.common(node, sym, &[&a, &b]).map_err(|e| self.name_first_column(e, &a, &b))?;
        if t.kind() == Kind::Bytes {
            if let (Val::Reg(x), Val::Reg(y), Some(cmp)) = (&a, &b, cmp_of(op)) {
                return Ok(Val::Reg(self.emit(Op::BytesCmp(cmp), &[*x, *y], DType::Bool)));
            }
            let r = [&a, &b].iter().find_map(|v| if let Val::Reg(r) = v { Some(*r) } else { None }).unwrap_or(0);
            return Err(self.column_err(node, r, kids, format!("'{sym}' is not defined for {t} columns")));
        }
        if let Some(cmp) = cmp_of(op) {
            // NumPy 2 compares integer arrays with out-of-range Python ints exactly.
            if let Some(v) = self.out_of_range_cmp(cmp, &a, &b, t) {
                return Ok(Val::Reg(self.reg(DType::Bool, Src::Const(Scalar::Bool(v)))));
            }
            let (x, y) = (self.as_reg(kids[0], &a, t)?, self.as_reg(kids[1], &b, t)?);
            return Ok(Val::Reg(self.emit(Op::Cmp(cmp), &[x, y], DType::Bool)));
        }
        let bool_ok = |o: Op| if t == DType::Bool { Some(o) } else { None };
        let (op_code, t) = match op {
            BinOp::Add => (bool_ok(Op::Or).unwrap_or(Op::Add), t),
            BinOp::Mul => (bool_ok(Op::And).unwrap_or(Op::Mul), t),
            BinOp::Sub if t == DType::Bool => {
                return Err(self.err(
                    node,
                    ErrorKind::Type,
                    "boolean subtract '-' is not supported (as in NumPy); use '^' for exclusive or",
                ))
            }
            BinOp::Sub => (Op::Sub, t),
            BinOp::Div => (Op::Div, if t.is_float() { t } else { DType::F64 }),
            BinOp::FloorDiv | BinOp::Mod | BinOp::Pow => {
                let t = if t == DType::Bool { DType::I8 } else { t };
                if op == BinOp::Pow {
                    if let (Val::Reg(_), Val::Weak(w)) = (&a, &b) {
                        if let Some(v) = self.pow_fast_path(kids, &a, *w, t)? {
                            return Ok(Val::Reg(v));
                        }
                    }
                }
                (
                    match op {
                        BinOp::FloorDiv => Op::FloorDiv,
                        BinOp::Mod => Op::Mod,
                        _ => Op::Pow,
                    },
                    t,
                )
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                if t.is_float() {
                    let hint = if matches!(op, BinOp::BitAnd | BinOp::BitOr) {
                        " ('&' and '|' bind tighter than comparisons: write (a > 1) & (b < 2))"
                    } else {
                        ""
                    };
                    return Err(self.err(
                        node,
                        ErrorKind::Type,
                        format!("'{sym}' needs bool or integer operands, not {t}{hint}"),
                    ));
                }
                let o = match (op, t == DType::Bool) {
                    (BinOp::BitAnd, _) => Op::And,
                    (BinOp::BitOr, _) => Op::Or,
                    _ => Op::Xor,
                };
                (o, t)
            }
            _ => unreachable!("comparisons handled above"),
        };
        let (x, y) = (self.as_reg(kids[0], &a, t)?, self.as_reg(kids[1], &b, t)?);
        Ok(Val::Reg(self.emit(op_code, &[x, y], t)))
    }

    /// NumPy's `array ** python_scalar` fast paths (2: square, 0.5: sqrt, -1: reciprocal,
    /// 1: copy), which differ from `pow` for -0.0 and -inf; and integers to a negative
    /// literal power are refused up front, as NumPy does even for empty arrays.
    fn pow_fast_path(&mut self, kids: [usize; 2], a: &Val, w: Weak, t: DType) -> Result<Option<usize>, ExprError> {
        let e = match w {
            Weak::Int(v) => v as f64,
            Weak::Float(f) => f,
            Weak::Bool(b) => b as u8 as f64,
        };
        if t.is_int() && e < 0.0 {
            return Err(self.err(kids[1], ErrorKind::Eval, "Integers to negative integer powers are not allowed"));
        }
        let x = self.as_reg(kids[0], a, t)?;
        Ok(if e == 2.0 {
            Some(self.emit(Op::Square, &[x], t))
        } else if e == 1.0 {
            Some(x)
        } else if e == 0.5 && t.is_float() {
            Some(self.emit(Op::F1(F1::Sqrt), &[x], t))
        } else if e == -1.0 && t.is_float() {
            let one = self.reg(t, Src::Const(Scalar::F64(1.0)));
            Some(self.emit(Op::Div, &[one, x], t))
        } else {
            None
        })
    }

    fn column_err(&self, node: usize, r: usize, _kids: [usize; 2], msg: String) -> ExprError {
        let e = self.err(node, ErrorKind::Type, msg);
        match self.prog.regs[r].src {
            Src::Input(i) => e.column(&self.prog.inputs[i]),
            _ => e,
        }
    }

    fn name_first_column(&self, e: ExprError, a: &Val, b: &Val) -> ExprError {
        for v in [a, b] {
            if let Val::Reg(r) = v {
                if let Src::Input(i) = self.prog.regs[*r].src {
                    return e.column(&self.prog.inputs[i]);
                }
            }
        }
        e
    }

    /// `int_array <cmp> python_int` where the int does not fit the array's type: the answer
    /// is the same for every row.
    fn out_of_range_cmp(&self, cmp: Cmp, a: &Val, b: &Val, t: DType) -> Option<bool> {
        let (lo, hi) = t.int_range()?;
        let (v, lit_on_right) = match (a, b) {
            (Val::Reg(_), Val::Weak(Weak::Int(v))) => (*v, true),
            (Val::Weak(Weak::Int(v)), Val::Reg(_)) => (*v, false),
            _ => return None,
        };
        if v >= lo && v <= hi {
            return None;
        }
        // Every array value x is < v (v above the range) or > v (below it).
        let x_less = v > hi;
        let (less, greater) = if lit_on_right { (x_less, !x_less) } else { (!x_less, x_less) };
        Some(match cmp {
            Cmp::Lt | Cmp::Le => less,
            Cmp::Gt | Cmp::Ge => greater,
            Cmp::Eq => false,
            Cmp::Ne => true,
        })
    }

    fn call(&mut self, node: usize, name: &str, args: Vec<Val>, kids: &[usize]) -> Result<Val, ExprError> {
        let nargs = match name {
            "where" => 3,
            "arctan2" | "fmod" | "minimum" | "maximum" | "hypot" | "logaddexp" | "logaddexp2" | "copysign" | "fmin"
            | "fmax" => 2,
            _ if FUNCTIONS.contains(&name) => 1,
            _ => {
                let e = self.err(node, ErrorKind::UnknownName, format!("unknown function '{name}'")).function(name);
                return Err(e.with_suggestion(FUNCTIONS.iter().copied()));
            }
        };
        if args.len() != nargs {
            return Err(self
                .err(node, ErrorKind::Type, format!("{name}() takes {nargs} argument(s), got {}", args.len()))
                .function(name));
        }
        let ferr = |b: &Self, msg: String| b.err(node, ErrorKind::Type, msg).function(name);
        if nargs == 1 {
            let r = self.strong(kids[0], &args[0])?;
            let dt = self.dt(r);
            if dt.kind() == Kind::Bytes {
                return Err(ferr(self, format!("{name}() is not defined for {dt}")));
            }
            let out = match name {
                "abs" | "absolute" => match dt {
                    DType::Bool => r,
                    _ if dt.kind() == Kind::UInt => r,
                    _ => self.emit(Op::Abs, &[r], dt),
                },
                "negative" => match self.unary(node, UnOp::Neg, Val::Reg(r))? {
                    Val::Reg(x) => x,
                    _ => unreachable!(),
                },
                "isnan" | "isinf" | "isfinite" => {
                    if dt.is_float() {
                        let op = match name {
                            "isnan" => Op::IsNan,
                            "isinf" => Op::IsInf,
                            _ => Op::IsFinite,
                        };
                        self.emit(op, &[r], DType::Bool)
                    } else {
                        self.reg(DType::Bool, Src::Const(Scalar::Bool(name == "isfinite")))
                    }
                }
                "floor" | "ceil" | "trunc" if !dt.is_float() => r,
                // Real types only: their conjugate and real part are themselves.
                "real" => r,
                "conj" | "conjugate" if dt == DType::Bool => self.cast(r, DType::I8),
                "conj" | "conjugate" => r,
                "square" => self.emit(Op::Square, &[r], if dt == DType::Bool { DType::I8 } else { dt }),
                "signbit" => {
                    let zero = self.reg(dt, Src::Const(cast_scalar(Scalar::I64(0), dt)));
                    if dt.is_float() {
                        // The sign bit: true for -0.0 and negative NaNs too.
                        let one = self.reg(dt, Src::Const(cast_scalar(Scalar::F64(1.0), dt)));
                        let signed = self.emit(Op::F2(F2::Copysign), &[one, r], dt);
                        self.emit(Op::Cmp(Cmp::Lt), &[signed, zero], DType::Bool)
                    } else {
                        self.emit(Op::Cmp(Cmp::Lt), &[r, zero], DType::Bool)
                    }
                }
                _ => {
                    let f = f1_of(name).expect("listed function");
                    let ft = dt.float_of().expect("numeric");
                    let x = self.cast(r, ft);
                    self.emit(Op::F1(f), &[x], ft)
                }
            };
            return Ok(Val::Reg(out));
        }
        if args.iter().all(|v| matches!(v, Val::Weak(_))) {
            // All literals: give them their default types (NumPy calls on Python scalars).
            let regs: Vec<usize> = (0..nargs).map(|k| self.strong(kids[k], &args[k])).collect::<Result<_, _>>()?;
            let vals: Vec<Val> = regs.into_iter().map(Val::Reg).collect();
            return self.call(node, name, vals, kids);
        }
        if args.iter().any(|v| matches!(v, Val::Str(_))) {
            return Err(ferr(self, format!("{name}() does not take strings")));
        }
        if name == "where" {
            let c = match &args[0] {
                Val::Weak(w) => self.konst_of(kids[0], Weak::Bool(fold_truth(*w)), DType::Bool)?,
                Val::Reg(r) if self.dt(*r) == DType::Bool => *r,
                Val::Reg(r) if self.dt(*r).kind() == Kind::Bytes => {
                    return Err(ferr(self, "where() condition cannot be a bytes column".into()))
                }
                Val::Reg(r) => self.emit(Op::Truth, &[*r], DType::Bool),
                Val::Str(_) => unreachable!(),
            };
            let (a, b) = (&args[1], &args[2]);
            let t = if matches!((a, b), (Val::Weak(_), Val::Weak(_))) {
                let (Val::Weak(x), Val::Weak(y)) = (a, b) else { unreachable!() };
                promote(x.default_dtype(), y.default_dtype()).unwrap_or(DType::F64)
            } else {
                self.common(node, "where()", &[a, b]).map_err(|e| e.function(name))?
            };
            if t.kind() == Kind::Bytes {
                return Err(ferr(self, "where() on bytes columns is not supported".into()));
            }
            // np.where casts an out-of-range int literal (wrapping, with a warning).
            let mut branch = |k: usize, v: &Val| match v {
                Val::Weak(Weak::Int(i)) if t.is_int() => Ok(self.reg(t, Src::Const(cast_scalar(int_scalar(t, *i), t)))),
                other => self.as_reg(kids[k], other, t),
            };
            let (x, y) = (branch(1, a)?, branch(2, b)?);
            return Ok(Val::Reg(self.emit(Op::Where, &[c, x, y], t)));
        }
        let t = self.common(node, name, &[&args[0], &args[1]]).map_err(|e| e.function(name))?;
        if t.kind() == Kind::Bytes {
            return Err(ferr(self, format!("{name}() is not defined for {t}")));
        }
        let (op, t) = match name {
            "arctan2" => (Op::Atan2, t.float_of().expect("numeric")),
            "hypot" => (Op::F2(F2::Hypot), t.float_of().expect("numeric")),
            "logaddexp" => (Op::F2(F2::Logaddexp), t.float_of().expect("numeric")),
            "logaddexp2" => (Op::F2(F2::Logaddexp2), t.float_of().expect("numeric")),
            "copysign" => (Op::F2(F2::Copysign), t.float_of().expect("numeric")),
            "fmin" if t == DType::Bool => (Op::And, t),
            "fmax" if t == DType::Bool => (Op::Or, t),
            "fmin" => (Op::Fmin, t),
            "fmax" => (Op::Fmax, t),
            "fmod" => (Op::Fmod, if t == DType::Bool { DType::I8 } else { t }),
            "minimum" if t == DType::Bool => (Op::And, t),
            "maximum" if t == DType::Bool => (Op::Or, t),
            "minimum" => (Op::Min, t),
            _ => (Op::Max, t),
        };
        let (x, y) = (self.as_reg(kids[0], &args[0], t)?, self.as_reg(kids[1], &args[1], t)?);
        Ok(Val::Reg(self.emit(op, &[x, y], t)))
    }

    /// Give every instruction result a scratch slot, reusing slots of the same dtype once
    /// their last reader has run (keeps the working set small and in cache).
    fn allocate_slots(&mut self) {
        let p = &mut self.prog;
        let mut last_use = vec![0usize; p.regs.len()];
        for (k, inst) in p.insts.iter().enumerate() {
            for &a in inst.args.iter().filter(|&&a| a != usize::MAX) {
                last_use[a] = k;
            }
        }
        last_use[p.root] = usize::MAX;
        let mut free: Vec<usize> = Vec::new();
        for (k, inst) in p.insts.iter().enumerate() {
            let dt = p.regs[inst.out].dtype;
            let slot = match free.iter().position(|&s| p.slots[s] == dt) {
                Some(i) => free.swap_remove(i),
                None => {
                    p.slots.push(dt);
                    p.slots.len() - 1
                }
            };
            p.regs[inst.out].src = Src::Temp(slot);
            // Slots whose value is read for the last time by this instruction become free
            // after it (never its own output slot while it runs).
            for &a in inst.args.iter().filter(|&&a| a != usize::MAX) {
                if last_use[a] == k {
                    if let Src::Temp(s) = p.regs[a].src {
                        if s != slot && !free.contains(&s) {
                            free.push(s);
                        }
                    }
                }
            }
        }
    }
}

fn cmp_of(op: BinOp) -> Option<Cmp> {
    Some(match op {
        BinOp::Lt => Cmp::Lt,
        BinOp::Le => Cmp::Le,
        BinOp::Gt => Cmp::Gt,
        BinOp::Ge => Cmp::Ge,
        BinOp::Eq => Cmp::Eq,
        BinOp::Ne => Cmp::Ne,
        _ => return None,
    })
}

fn fold_truth(w: Weak) -> bool {
    match w {
        Weak::Bool(b) => b,
        Weak::Int(v) => v != 0,
        Weak::Float(f) => f != 0.0,
    }
}

const INT_LO: i128 = i64::MIN as i128;
const INT_HI: i128 = u64::MAX as i128;

fn fit(v: Option<i128>) -> Result<Weak, String> {
    match v {
        Some(v) if (INT_LO..=INT_HI).contains(&v) => Ok(Weak::Int(v)),
        _ => Err("integer arithmetic on literals leaves the 64-bit range".into()),
    }
}

/// Python's own arithmetic on literals (the result stays weak).
fn fold_unary(op: UnOp, w: Weak) -> Result<Weak, String> {
    Ok(match (op, w) {
        (UnOp::Neg, Weak::Bool(b)) => Weak::Int(-(b as i128)),
        (UnOp::Neg, Weak::Int(v)) => fit(Some(-v))?,
        (UnOp::Neg, Weak::Float(f)) => Weak::Float(-f),
        (UnOp::Pos, Weak::Bool(b)) => Weak::Int(b as i128),
        (UnOp::Pos, w) => w,
        (UnOp::Invert, Weak::Bool(b)) => Weak::Bool(!b),
        (UnOp::Invert, Weak::Int(v)) => fit(Some(-v - 1))?,
        (UnOp::Invert, Weak::Float(_)) => return Err("'~' is not defined for float literals".into()),
    })
}

fn as_num(w: Weak) -> Weak {
    match w {
        Weak::Bool(b) => Weak::Int(b as i128),
        other => other,
    }
}

fn fold_binary(op: BinOp, x: Weak, y: Weak) -> Result<Weak, String> {
    use crate::eval::{py_floordiv_f64, py_mod_f64};
    if let (Some(cmp), a, b) = (cmp_of(op), x, y) {
        let (a, b) = (lit_f64(a), lit_f64(b));
        let exact = match (as_num(x), as_num(y)) {
            (Weak::Int(p), Weak::Int(q)) => Some(p.cmp(&q)),
            _ => None,
        };
        let ord = exact.or_else(|| a.partial_cmp(&b));
        return Ok(Weak::Bool(match (cmp, ord) {
            (Cmp::Ne, None) => true,
            (_, None) => false,
            (Cmp::Lt, Some(o)) => o.is_lt(),
            (Cmp::Le, Some(o)) => o.is_le(),
            (Cmp::Gt, Some(o)) => o.is_gt(),
            (Cmp::Ge, Some(o)) => o.is_ge(),
            (Cmp::Eq, Some(o)) => o.is_eq(),
            (Cmp::Ne, Some(o)) => o.is_ne(),
        }));
    }
    if let (Weak::Bool(a), Weak::Bool(b)) = (x, y) {
        match op {
            BinOp::BitAnd => return Ok(Weak::Bool(a & b)),
            BinOp::BitOr => return Ok(Weak::Bool(a | b)),
            BinOp::BitXor => return Ok(Weak::Bool(a ^ b)),
            _ => {}
        }
    }
    let zero_div = || Err::<Weak, String>("division by zero in a literal expression".into());
    match (as_num(x), as_num(y)) {
        (Weak::Int(a), Weak::Int(b)) => match op {
            BinOp::Add => fit(a.checked_add(b)),
            BinOp::Sub => fit(a.checked_sub(b)),
            BinOp::Mul => fit(a.checked_mul(b)),
            BinOp::Div if b == 0 => zero_div(),
            BinOp::Div => Ok(Weak::Float(a as f64 / b as f64)),
            BinOp::FloorDiv | BinOp::Mod if b == 0 => zero_div(),
            BinOp::FloorDiv => fit(Some(a / b - i128::from(a % b != 0 && (a < 0) != (b < 0)))),
            BinOp::Mod => {
                let r = a % b;
                fit(Some(if r != 0 && (r < 0) != (b < 0) { r + b } else { r }))
            }
            BinOp::Pow if b < 0 && a == 0 => zero_div(),
            BinOp::Pow if b < 0 => Ok(Weak::Float((a as f64).powf(b as f64))),
            BinOp::Pow => fit(u32::try_from(b).ok().and_then(|e| a.checked_pow(e))),
            BinOp::BitAnd => fit(Some(a & b)),
            BinOp::BitOr => fit(Some(a | b)),
            BinOp::BitXor => fit(Some(a ^ b)),
            _ => unreachable!(),
        },
        (a, b) => {
            let (a, b) = (lit_f64(a), lit_f64(b));
            Ok(Weak::Float(match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div | BinOp::FloorDiv | BinOp::Mod if b == 0.0 => return zero_div(),
                BinOp::Div => a / b,
                BinOp::FloorDiv => py_floordiv_f64(a, b),
                BinOp::Mod => py_mod_f64(a, b),
                BinOp::Pow => {
                    if a == 0.0 && b < 0.0 {
                        return zero_div();
                    }
                    if a < 0.0 && b.fract() != 0.0 {
                        return Err("negative literal to a fractional power (complex result)".into());
                    }
                    a.powf(b)
                }
                _ => return Err(format!("'{}' is not defined for float literals", op.symbol())),
            }))
        }
    }
}

fn lit_f64(w: Weak) -> f64 {
    match w {
        Weak::Bool(b) => b as u8 as f64,
        Weak::Int(v) => v as f64,
        Weak::Float(f) => f,
    }
}
