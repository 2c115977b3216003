//! Query skipping: interval arithmetic over per-block min/max of each input.
//!
//! Every register gets an abstract value: an interval `[lo, hi]` of its non-NaN values (as
//! f64, rounded outwards), whether NaN can occur, and for bools which of false/true can
//! occur. Each instruction maps intervals conservatively (anything unclear widens to "all
//! values"), so `may_match` is false only when no row of the block can satisfy the condition.

use crate::column::ColumnRef;
use crate::compile::{Cmp, Op, Program, Src, F1};
use crate::dtype::{DType, Kind, Scalar};

/// What is known about one input column in a block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueRange {
    lo: f64,
    hi: f64,
    nan: bool,
}

impl ValueRange {
    /// Nothing known: any value, NaN possible.
    pub fn unknown() -> Self {
        ValueRange { lo: f64::NEG_INFINITY, hi: f64::INFINITY, nan: true }
    }

    /// Integers in `min..=max`.
    pub fn int(min: i64, max: i64) -> Self {
        let exact = |v: i64| v.unsigned_abs() <= 1 << 53;
        let lo = if exact(min) { min as f64 } else { down(min as f64) };
        let hi = if exact(max) { max as f64 } else { up(max as f64) };
        ValueRange { lo, hi, nan: false }
    }

    /// Unsigned integers in `min..=max`.
    pub fn uint(min: u64, max: u64) -> Self {
        let lo = if min <= 1 << 53 { min as f64 } else { down(min as f64) };
        let hi = if max <= 1 << 53 { max as f64 } else { up(max as f64) };
        ValueRange { lo, hi, nan: false }
    }

    /// Floats whose non-NaN values lie in `min..=max` (pass NaN, NaN when all are NaN), and
    /// whether any value is NaN.
    pub fn float(min: f64, max: f64, has_nan: bool) -> Self {
        if min.is_nan() || max.is_nan() {
            return ValueRange { lo: f64::INFINITY, hi: f64::NEG_INFINITY, nan: true };
        }
        ValueRange { lo: min, hi: max, nan: has_nan }
    }

    /// Bools: whether some value is false, whether some is true.
    pub fn bool(any_false: bool, any_true: bool) -> Self {
        ValueRange { lo: if any_false { 0.0 } else { 1.0 }, hi: if any_true { 1.0 } else { 0.0 }, nan: false }
    }

    /// From typed min/max scalars (as block statistics store them).
    pub fn from_scalars(min: Scalar, max: Scalar, has_nan: bool) -> Self {
        match (min, max) {
            (Scalar::Bool(a), Scalar::Bool(b)) => ValueRange::bool(!a, b),
            (Scalar::I64(a), Scalar::I64(b)) => ValueRange::int(a, b),
            (Scalar::U64(a), Scalar::U64(b)) => ValueRange::uint(a, b),
            (a, b) => ValueRange::float(a.as_f64(), b.as_f64(), has_nan),
        }
    }

    /// The range of the values in `col` (its min/max and NaN flag; `unknown` for bytes).
    /// An empty column gives an empty range (nothing can match).
    pub fn of_column(col: ColumnRef<'_>) -> Self {
        fn ints<T: Copy + Ord>(v: &[T], f: impl Fn(T, T) -> ValueRange) -> ValueRange {
            match (v.iter().min(), v.iter().max()) {
                (Some(&lo), Some(&hi)) => f(lo, hi),
                _ => ValueRange { lo: f64::INFINITY, hi: f64::NEG_INFINITY, nan: false },
            }
        }
        fn floats(v: impl Iterator<Item = f64>) -> ValueRange {
            let (mut lo, mut hi, mut nan) = (f64::INFINITY, f64::NEG_INFINITY, false);
            for x in v {
                if x.is_nan() {
                    nan = true;
                } else {
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
            }
            ValueRange { lo, hi, nan }
        }
        match col {
            ColumnRef::Bool(v) => ValueRange::bool(v.iter().any(|b| !b), v.iter().any(|&b| b)),
            ColumnRef::I8(v) => ints(v, |a, b| ValueRange::int(a as i64, b as i64)),
            ColumnRef::I16(v) => ints(v, |a, b| ValueRange::int(a as i64, b as i64)),
            ColumnRef::I32(v) => ints(v, |a, b| ValueRange::int(a as i64, b as i64)),
            ColumnRef::I64(v) => ints(v, ValueRange::int),
            ColumnRef::U8(v) => ints(v, |a, b| ValueRange::uint(a as u64, b as u64)),
            ColumnRef::U16(v) => ints(v, |a, b| ValueRange::uint(a as u64, b as u64)),
            ColumnRef::U32(v) => ints(v, |a, b| ValueRange::uint(a as u64, b as u64)),
            ColumnRef::U64(v) => ints(v, ValueRange::uint),
            ColumnRef::F32(v) => floats(v.iter().map(|&x| x as f64)),
            ColumnRef::F64(v) => floats(v.iter().copied()),
            ColumnRef::Bytes { .. } => ValueRange::unknown(),
        }
    }

    fn empty(&self) -> bool {
        self.lo > self.hi
    }

    fn of_type(dt: DType) -> Self {
        match dt.kind() {
            Kind::Bool => ValueRange::bool(true, true),
            Kind::Float => Self::unknown(),
            Kind::Bytes => Self::unknown(),
            _ => {
                let (lo, hi) = dt.int_range().expect("int");
                ValueRange { lo: down(lo as f64), hi: up(hi as f64), nan: false }
            }
        }
    }

    fn can_true(&self) -> bool {
        self.hi >= 1.0 || self.nan
    }

    fn can_false(&self) -> bool {
        self.lo <= 0.0
    }
}

fn up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

fn down(x: f64) -> f64 {
    -up(-x)
}

/// Widen an interval computed with rounding error (a few ulps of f32 or f64).
fn widen(lo: f64, hi: f64, dt: DType) -> (f64, f64) {
    let rel = if dt == DType::F32 { 1e-6 } else { 1e-12 };
    let w = |x: f64, dir: f64| if x.is_finite() { x + dir * (x.abs() * rel + f64::MIN_POSITIVE) } else { x };
    (down(w(lo, -1.0)), up(w(hi, 1.0)))
}

fn interval(lo: f64, hi: f64, nan: bool, dt: DType) -> ValueRange {
    if lo.is_nan() || hi.is_nan() {
        return ValueRange::of_type(dt).with_nan(dt);
    }
    let (lo, hi) = widen(lo, hi, dt);
    let r = ValueRange { lo, hi, nan };
    if let Some((tlo, thi)) = dt.int_range() {
        // Integer results outside the type wrap around: anything is possible.
        if lo < tlo as f64 || hi > thi as f64 {
            return ValueRange::of_type(dt);
        }
    }
    r
}

impl ValueRange {
    fn with_nan(mut self, dt: DType) -> Self {
        self.nan = dt.is_float();
        self
    }
}

fn cmp_range(op: Cmp, a: &ValueRange, b: &ValueRange) -> ValueRange {
    let nan = a.nan || b.nan;
    if a.empty() || b.empty() {
        // Only NaN on one side: every comparison is false except `!=`.
        return ValueRange::bool(op != Cmp::Ne || !nan, op == Cmp::Ne && nan);
    }
    let (t, f) = match op {
        Cmp::Lt => (a.lo < b.hi, a.hi >= b.lo),
        Cmp::Le => (a.lo <= b.hi, a.hi > b.lo),
        Cmp::Gt => (a.hi > b.lo, a.lo <= b.hi),
        Cmp::Ge => (a.hi >= b.lo, a.lo < b.hi),
        Cmp::Eq => (a.lo <= b.hi && b.lo <= a.hi, !(a.lo == a.hi && b.lo == b.hi && a.lo == b.lo)),
        Cmp::Ne => (!(a.lo == a.hi && b.lo == b.hi && a.lo == b.lo), a.lo <= b.hi && b.lo <= a.hi),
    };
    let (t, f) = if nan { (t || op == Cmp::Ne, f || op != Cmp::Ne) } else { (t, f) };
    ValueRange::bool(f, t)
}

fn monotone(f: F1) -> Option<bool> {
    use F1::*;
    match f {
        Sqrt | Exp | Expm1 | Log | Log10 | Log1p | Log2 | Atan | Sinh | Tanh | Asinh | Acosh | Atanh | Asin | Floor
        | Ceil | Trunc => Some(true),
        Acos => Some(false),
        _ => None,
    }
}

impl Program {
    /// Whether some row of a block whose inputs lie in `ranges` (one per [`Program::inputs`])
    /// may make the (bool) result true. Conservative: `false` only when no row can match.
    /// Non-bool results and a wrong number of ranges give `true`.
    pub fn may_match(&self, ranges: &[ValueRange]) -> bool {
        if ranges.len() != self.inputs.len() || self.dtype() != DType::Bool {
            return true;
        }
        self.ranges(ranges)[self.root].can_true()
    }

    fn ranges(&self, inputs: &[ValueRange]) -> Vec<ValueRange> {
        let mut r: Vec<ValueRange> = self
            .regs
            .iter()
            .map(|reg| match &reg.src {
                Src::Input(i) => {
                    let mut v = inputs[*i];
                    if !reg.dtype.is_float() {
                        v.nan = false;
                    }
                    v
                }
                Src::Const(Scalar::Bool(b)) => ValueRange::bool(!b, *b),
                Src::Const(Scalar::I64(v)) => ValueRange::int(*v, *v),
                Src::Const(Scalar::U64(v)) => ValueRange::uint(*v, *v),
                // Float constants hold the exact value of their type (f32 values are exact in f64).
                Src::Const(Scalar::F64(x)) => ValueRange::float(*x, *x, x.is_nan()),
                _ => ValueRange::of_type(reg.dtype),
            })
            .collect();
        for inst in &self.insts {
            let [a, b, c] = inst.args;
            let dt = self.regs[inst.out].dtype;
            let get = |k: usize| r[k];
            let v = match inst.op {
                Op::Cast => {
                    let x = get(a);
                    if x.empty() {
                        x
                    } else {
                        interval(x.lo, x.hi, x.nan && dt.is_float(), dt)
                    }
                }
                Op::Cmp(op) => cmp_range(op, &get(a), &get(b)),
                Op::And if dt == DType::Bool => {
                    let (x, y) = (get(a), get(b));
                    ValueRange::bool(x.can_false() || y.can_false(), x.can_true() && y.can_true())
                }
                Op::Or if dt == DType::Bool => {
                    let (x, y) = (get(a), get(b));
                    ValueRange::bool(x.can_false() && y.can_false(), x.can_true() || y.can_true())
                }
                Op::Xor if dt == DType::Bool => ValueRange::bool(true, true),
                Op::Not if dt == DType::Bool => {
                    let x = get(a);
                    ValueRange::bool(x.can_true(), x.can_false())
                }
                Op::Truth => {
                    let x = get(a);
                    ValueRange::bool(!x.empty() && x.lo <= 0.0 && x.hi >= 0.0, x.nan || x.lo < 0.0 || x.hi > 0.0)
                }
                Op::Where => {
                    let (cnd, x, y) = (get(a), get(b), get(c));
                    match (cnd.can_true(), cnd.can_false()) {
                        (true, false) => x,
                        (false, true) => y,
                        _ => ValueRange { lo: x.lo.min(y.lo), hi: x.hi.max(y.hi), nan: x.nan || y.nan },
                    }
                }
                Op::IsNan | Op::IsInf | Op::IsFinite => {
                    let x = get(a);
                    let has_inf = x.lo == f64::NEG_INFINITY || x.hi == f64::INFINITY;
                    let has_finite = !x.empty() && (x.lo.is_finite() || x.hi.is_finite() || x.lo < x.hi);
                    match inst.op {
                        Op::IsNan => ValueRange::bool(!x.empty(), x.nan),
                        Op::IsInf => ValueRange::bool(x.nan || has_finite, has_inf),
                        _ => ValueRange::bool(x.nan || has_inf, has_finite),
                    }
                }
                _ if dt == DType::Bool => ValueRange::bool(true, true),
                Op::Add | Op::Sub | Op::Mul | Op::Neg | Op::Abs | Op::Square | Op::Div | Op::Min | Op::Max => {
                    arith(inst.op, get(a), if b == usize::MAX { get(a) } else { get(b) }, dt)
                }
                Op::F1(f) => {
                    let x = get(a);
                    match monotone(f) {
                        _ if x.empty() => x,
                        Some(inc) => {
                            let (p, q) = (x.lo.f1(f), x.hi.f1(f));
                            let (lo, hi) = if inc { (p, q) } else { (q, p) };
                            // Out-of-domain parts give NaN: keep the NaN flag then.
                            let nan = x.nan || p.is_nan() || q.is_nan();
                            if p.is_nan() || q.is_nan() {
                                ValueRange::of_type(dt).with_nan(dt)
                            } else {
                                interval(lo, hi, nan, dt)
                            }
                        }
                        None if matches!(f, F1::Sin | F1::Cos) => ValueRange { lo: -1.0, hi: 1.0, nan: true },
                        None => ValueRange::of_type(dt).with_nan(dt),
                    }
                }
                _ => ValueRange::of_type(dt).with_nan(dt),
            };
            r[inst.out] = v;
        }
        r
    }
}

use crate::kernels::Float;

fn arith(op: Op, x: ValueRange, y: ValueRange, dt: DType) -> ValueRange {
    if x.empty() || y.empty() {
        return ValueRange { lo: f64::INFINITY, hi: f64::NEG_INFINITY, nan: dt.is_float() };
    }
    let nan = (x.nan || y.nan) && dt.is_float();
    let corners = |f: &dyn Fn(f64, f64) -> f64| {
        let v = [f(x.lo, y.lo), f(x.lo, y.hi), f(x.hi, y.lo), f(x.hi, y.hi)];
        if v.iter().any(|z| z.is_nan()) {
            None
        } else {
            Some((v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max)))
        }
    };
    let res = match op {
        Op::Add => corners(&|p, q| p + q),
        Op::Sub => corners(&|p, q| p - q),
        Op::Mul => corners(&|p, q| p * q),
        Op::Div if y.lo > 0.0 || y.hi < 0.0 => corners(&|p, q| p / q),
        Op::Div => None,
        Op::Neg => Some((-x.hi, -x.lo)),
        Op::Abs | Op::Square => {
            let (m, n) = (x.lo.abs(), x.hi.abs());
            let (lo, hi) = if x.lo <= 0.0 && x.hi >= 0.0 { (0.0, m.max(n)) } else { (m.min(n), m.max(n)) };
            Some(if op == Op::Square { (lo * lo, hi * hi) } else { (lo, hi) })
        }
        Op::Min => Some((x.lo.min(y.lo), x.hi.min(y.hi))),
        Op::Max => Some((x.lo.max(y.lo), x.hi.max(y.hi))),
        _ => None,
    };
    match res {
        Some((lo, hi)) => interval(lo, hi, nan, dt),
        None => ValueRange::of_type(dt).with_nan(dt),
    }
}
