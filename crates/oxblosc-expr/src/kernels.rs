//! Per-type arithmetic (NumPy semantics) and the loop shapes every instruction uses.
//!
//! A kernel is one typed loop over a block (slice op slice, slice op constant, ...); the
//! closures inline, so LLVM vectorises the loops that can be vectorised.

use crate::compile::{Cmp, F1, F2};
use crate::dtype::Scalar;

/// An operand over one block: a slice, or one value broadcast to every row.
#[derive(Clone, Copy)]
pub(crate) enum Opnd<'a, T> {
    S(&'a [T]),
    C(T),
}

#[inline(always)]
pub(crate) fn map1<T: Copy, U: Copy>(a: Opnd<'_, T>, o: &mut [U], f: impl Fn(T) -> U) {
    match a {
        Opnd::S(x) => {
            for (o, &x) in o.iter_mut().zip(x) {
                *o = f(x);
            }
        }
        Opnd::C(c) => o.fill(f(c)),
    }
}

#[inline(always)]
pub(crate) fn map2<T: Copy, U: Copy>(a: Opnd<'_, T>, b: Opnd<'_, T>, o: &mut [U], f: impl Fn(T, T) -> U) {
    match (a, b) {
        (Opnd::S(x), Opnd::S(y)) => {
            for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                *o = f(x, y);
            }
        }
        (Opnd::S(x), Opnd::C(c)) => {
            for (o, &x) in o.iter_mut().zip(x) {
                *o = f(x, c);
            }
        }
        (Opnd::C(c), Opnd::S(y)) => {
            for (o, &y) in o.iter_mut().zip(y) {
                *o = f(c, y);
            }
        }
        (Opnd::C(p), Opnd::C(q)) => o.fill(f(p, q)),
    }
}

#[inline(always)]
pub(crate) fn select<T: Copy>(c: Opnd<'_, bool>, a: Opnd<'_, T>, b: Opnd<'_, T>, o: &mut [T]) {
    let at = |x: &Opnd<'_, T>, i: usize| match x {
        Opnd::S(s) => s[i],
        Opnd::C(v) => *v,
    };
    match (c, a, b) {
        (Opnd::S(c), Opnd::S(x), Opnd::S(y)) => {
            for (((o, &c), &x), &y) in o.iter_mut().zip(c).zip(x).zip(y) {
                *o = if c { x } else { y };
            }
        }
        (Opnd::S(c), Opnd::S(x), Opnd::C(y)) => {
            for ((o, &c), &x) in o.iter_mut().zip(c).zip(x) {
                *o = if c { x } else { y };
            }
        }
        (Opnd::S(c), Opnd::C(x), Opnd::S(y)) => {
            for ((o, &c), &y) in o.iter_mut().zip(c).zip(y) {
                *o = if c { x } else { y };
            }
        }
        (Opnd::S(c), Opnd::C(x), Opnd::C(y)) => map1(Opnd::S(c), o, |c| if c { x } else { y }),
        (Opnd::C(c), a, b) => {
            let src = if c { a } else { b };
            for (i, o) in o.iter_mut().enumerate() {
                *o = at(&src, i);
            }
        }
    }
}

/// `a <op> b` row by row; the operator is chosen once, outside the loop.
#[inline(always)]
pub(crate) fn compare<T: PartialOrd + Copy>(op: Cmp, a: Opnd<'_, T>, b: Opnd<'_, T>, o: &mut [bool]) {
    match op {
        Cmp::Lt => map2(a, b, o, |x, y| x < y),
        Cmp::Le => map2(a, b, o, |x, y| x <= y),
        Cmp::Gt => map2(a, b, o, |x, y| x > y),
        Cmp::Ge => map2(a, b, o, |x, y| x >= y),
        Cmp::Eq => map2(a, b, o, |x, y| x == y),
        Cmp::Ne => map2(a, b, o, |x, y| x != y),
    }
}

/// A float function over a block; the function is chosen once, outside the loop.
#[inline(always)]
pub(crate) fn float_fn<T: Float>(f: F1, a: Opnd<'_, T>, o: &mut [T]) {
    // Constants too: a one-row input must give the same bits as the same row in a slice.
    let done = match a {
        Opnd::S(x) => T::vec_f1(f, x, o),
        Opnd::C(c) => {
            let mut v = [c];
            T::vec_f1(f, &[c], &mut v) && {
                o.fill(v[0]);
                true
            }
        }
    };
    if done {
        return;
    }
    macro_rules! each {
        ($($v:ident),*) => {
            match f { $(F1::$v => map1(a, o, |x: T| x.f1(F1::$v)),)* }
        };
    }
    each!(
        Sqrt, Exp, Expm1, Log, Log10, Log1p, Log2, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh,
        Atanh, Floor, Ceil, Trunc, Exp2, Cbrt, Rint, Deg2rad, Rad2deg
    )
}

/// Element types: how to find their slice in a column and convert scalars.
pub trait Elem: Copy + Default + PartialOrd + Send + Sync + 'static {
    fn of_ref<'a>(c: &crate::ColumnRef<'a>) -> Option<&'a [Self]>;
    fn of_mut<'b>(c: &'b mut crate::ColumnMut<'_>) -> Option<&'b mut [Self]>;
    fn of_col(c: &crate::Column) -> Option<&[Self]>;
    fn from_scalar(s: Scalar) -> Self;
    fn to_scalar(self) -> Scalar;
}

macro_rules! elem {
    ($($v:ident $t:ty),*) => {$(
        impl Elem for $t {
            #[inline]
            fn of_ref<'a>(c: &crate::ColumnRef<'a>) -> Option<&'a [Self]> {
                if let crate::ColumnRef::$v(s) = c { Some(s) } else { None }
            }
            #[inline]
            fn of_mut<'b>(c: &'b mut crate::ColumnMut<'_>) -> Option<&'b mut [Self]> {
                if let crate::ColumnMut::$v(s) = c { Some(s) } else { None }
            }
            #[inline]
            fn of_col(c: &crate::Column) -> Option<&[Self]> {
                if let crate::Column::$v(s) = c { Some(s) } else { None }
            }
            #[inline]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => <Self as Conv>::from_bool(b),
                    Scalar::I64(v) => <Self as Conv>::from_i64(v),
                    Scalar::U64(v) => <Self as Conv>::from_u64(v),
                    Scalar::F64(v) => <Self as Conv>::from_f64(v),
                }
            }
            #[inline]
            fn to_scalar(self) -> Scalar {
                <Self as Conv>::scalar(self)
            }
        }
    )*};
}
crate::column::numeric_variants!(elem);

/// Conversions with C/NumPy `astype` semantics (`as`, bool as 0/1, non-zero as true).
pub(crate) trait Conv {
    fn from_bool(b: bool) -> Self;
    fn from_i64(v: i64) -> Self;
    fn from_u64(v: u64) -> Self;
    fn from_f64(v: f64) -> Self;
    fn scalar(self) -> Scalar;
}

impl Conv for bool {
    fn from_bool(b: bool) -> Self {
        b
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn from_u64(v: u64) -> Self {
        v != 0
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
}

macro_rules! conv {
    ($($t:ty => $s:ident as $st:ty),*) => {$(
        impl Conv for $t {
            fn from_bool(b: bool) -> Self { b as u8 as $t }
            fn from_i64(v: i64) -> Self { v as $t }
            fn from_u64(v: u64) -> Self { v as $t }
            fn from_f64(v: f64) -> Self { v as $t }
            fn scalar(self) -> Scalar { Scalar::$s(self as $st) }
        }
    )*};
}
conv!(i8 => I64 as i64, i16 => I64 as i64, i32 => I64 as i64, i64 => I64 as i64,
      u8 => U64 as u64, u16 => U64 as u64, u32 => U64 as u64, u64 => U64 as u64,
      f32 => F64 as f64, f64 => F64 as f64);

/// `U::cast_from(x)`: NumPy's `x.astype(U)` for the safe casts promotion inserts.
pub(crate) trait CastFrom<T> {
    fn cast_from(x: T) -> Self;
}

macro_rules! cast_all {
    ($($t:ty),*) => { cast_all!(@outer [$($t),*] $($t),*); };
    (@outer $all:tt $($a:ty),*) => { $( cast_all!(@inner $a $all); )* };
    (@inner $a:ty [$($b:ty),*]) => {
        $( impl CastFrom<$a> for $b { #[inline(always)] fn cast_from(x: $a) -> $b { x as $b } } )*
        impl CastFrom<bool> for $a { #[inline(always)] fn cast_from(x: bool) -> $a { x as u8 as $a } }
    };
}
cast_all!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Arithmetic of numbers (wrapping for integers, IEEE for floats, NumPy's division rules).
pub(crate) trait Num: Elem {
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    /// `//` (floor division; integer division by zero gives 0, as NumPy).
    fn floordiv(self, b: Self) -> Self;
    /// `%` (sign of the divisor; integer modulo zero gives 0).
    fn pymod(self, b: Self) -> Self;
    /// C `fmod` (sign of the dividend).
    fn fmod(self, b: Self) -> Self;
    fn power(self, b: Self) -> Self;
    fn below_zero(self) -> bool;
    fn truth(self) -> bool;
    /// NaN-propagating minimum / maximum (`np.minimum`, `np.maximum`).
    fn min_nan(self, b: Self) -> Self;
    fn max_nan(self, b: Self) -> Self;
    /// NaN-ignoring minimum / maximum (`np.fmin`, `np.fmax`: NaN only when both are).
    fn fmin(self, b: Self) -> Self;
    fn fmax(self, b: Self) -> Self;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)] fn add(self, b: Self) -> Self { self.wrapping_add(b) }
            #[inline(always)] fn sub(self, b: Self) -> Self { self.wrapping_sub(b) }
            #[inline(always)] fn mul(self, b: Self) -> Self { self.wrapping_mul(b) }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn abs(self) -> Self {
                #[allow(unused_comparisons)]
                if self < 0 { self.wrapping_neg() } else { self }
            }
            #[inline(always)] fn floordiv(self, b: Self) -> Self {
                if b == 0 { return 0; }
                let q = self.wrapping_div(b);
                #[allow(unused_comparisons)]
                let adjust = self.wrapping_rem(b) != 0 && ((self < 0) != (b < 0));
                if adjust { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)] fn pymod(self, b: Self) -> Self {
                if b == 0 { return 0; }
                let r = self.wrapping_rem(b);
                #[allow(unused_comparisons)]
                let adjust = r != 0 && ((r < 0) != (b < 0));
                if adjust { r.wrapping_add(b) } else { r }
            }
            #[inline(always)] fn fmod(self, b: Self) -> Self {
                if b == 0 { 0 } else { self.wrapping_rem(b) }
            }
            #[inline(always)] fn power(self, b: Self) -> Self {
                let (mut base, mut e, mut acc) = (self, b, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 { acc = acc.wrapping_mul(base); }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[inline(always)] fn below_zero(self) -> bool {
                #[allow(unused_comparisons)]
                { self < 0 }
            }
            #[inline(always)] fn truth(self) -> bool { self != 0 }
            #[inline(always)] fn min_nan(self, b: Self) -> Self { if self <= b { self } else { b } }
            #[inline(always)] fn max_nan(self, b: Self) -> Self { if self >= b { self } else { b } }
            #[inline(always)] fn fmin(self, b: Self) -> Self { self.min_nan(b) }
            #[inline(always)] fn fmax(self, b: Self) -> Self { self.max_nan(b) }
        }
    )*};
}
int_num!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Integer bit operations (`&`, `|`, `^`, `~`); on bool they are the logical ones.
pub(crate) trait Bits: Elem {
    fn and(self, b: Self) -> Self;
    fn or(self, b: Self) -> Self;
    fn xor(self, b: Self) -> Self;
    fn not(self) -> Self;
}

macro_rules! bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline(always)] fn and(self, b: Self) -> Self { self & b }
            #[inline(always)] fn or(self, b: Self) -> Self { self | b }
            #[inline(always)] fn xor(self, b: Self) -> Self { self ^ b }
            #[inline(always)] fn not(self) -> Self { !self }
        }
    )*};
}
bits!(bool, i8, i16, i32, i64, u8, u16, u32, u64);

/// Float functions (the platform's libm, as NumPy's scalar paths; `sin cos exp log` over
/// slices from the vectorised kernels of `fastmath`).
pub(crate) trait Float: Num + crate::fastmath::VecMath {
    fn div(self, b: Self) -> Self;
    fn f1(self, f: F1) -> Self;
    fn atan2(self, b: Self) -> Self;
    fn f2(self, f: F2, b: Self) -> Self;
    fn is_inf(self) -> bool;
}

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)] fn add(self, b: Self) -> Self { self + b }
            #[inline(always)] fn sub(self, b: Self) -> Self { self - b }
            #[inline(always)] fn mul(self, b: Self) -> Self { self * b }
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn abs(self) -> Self { <$t>::abs(self) }
            #[inline(always)] fn floordiv(self, b: Self) -> Self {
                if b == 0.0 { return self / b; }
                let m = self % b;
                let mut div = (self - m) / b;
                if m != 0.0 && ((b < 0.0) != (m < 0.0)) { div -= 1.0; }
                if div != 0.0 {
                    let f = div.floor();
                    if div - f > 0.5 { f + 1.0 } else { f }
                } else {
                    (0.0 as $t).copysign(self / b)
                }
            }
            #[inline(always)] fn pymod(self, b: Self) -> Self {
                let m = self % b;
                if b == 0.0 { return m; }
                if m != 0.0 {
                    if (b < 0.0) != (m < 0.0) { m + b } else { m }
                } else {
                    (0.0 as $t).copysign(b)
                }
            }
            #[inline(always)] fn fmod(self, b: Self) -> Self { self % b }
            #[inline(always)] fn power(self, b: Self) -> Self { self.powf(b) }
            #[inline(always)] fn below_zero(self) -> bool { self < 0.0 }
            #[inline(always)] fn truth(self) -> bool { self != 0.0 }
            #[inline(always)] fn min_nan(self, b: Self) -> Self { if self <= b || self.is_nan() { self } else { b } }
            #[inline(always)] fn max_nan(self, b: Self) -> Self { if self >= b || self.is_nan() { self } else { b } }
            #[inline(always)] fn fmin(self, b: Self) -> Self { if self <= b || b.is_nan() { self } else { b } }
            #[inline(always)] fn fmax(self, b: Self) -> Self { if self >= b || b.is_nan() { self } else { b } }
        }
        impl Float for $t {
            #[inline(always)] fn div(self, b: Self) -> Self { self / b }
            #[inline(always)] fn f1(self, f: F1) -> Self {
                match f {
                    F1::Sqrt => self.sqrt(),
                    F1::Exp => self.exp(),
                    F1::Expm1 => self.exp_m1(),
                    F1::Log => self.ln(),
                    F1::Log10 => self.log10(),
                    F1::Log1p => self.ln_1p(),
                    F1::Log2 => self.log2(),
                    F1::Sin => self.sin(),
                    F1::Cos => self.cos(),
                    F1::Tan => self.tan(),
                    F1::Asin => self.asin(),
                    F1::Acos => self.acos(),
                    F1::Atan => self.atan(),
                    F1::Sinh => self.sinh(),
                    F1::Cosh => self.cosh(),
                    F1::Tanh => self.tanh(),
                    F1::Asinh => self.asinh(),
                    F1::Acosh => self.acosh(),
                    F1::Atanh => self.atanh(),
                    F1::Floor => self.floor(),
                    F1::Ceil => self.ceil(),
                    F1::Trunc => self.trunc(),
                    F1::Exp2 => self.exp2(),
                    F1::Cbrt => self.cbrt(),
                    F1::Rint => self.round_ties_even(),
                    F1::Deg2rad => self.to_radians(),
                    F1::Rad2deg => self.to_degrees(),
                }
            }
            #[inline(always)] fn f2(self, f: F2, b: Self) -> Self {
                match f {
                    F2::Hypot => self.hypot(b),
                    F2::Copysign => self.copysign(b),
                    // log(e^x + e^y) without overflow: the larger plus log1p(e^-|x - y|).
                    F2::Logaddexp | F2::Logaddexp2 => {
                        let base2 = f == F2::Logaddexp2;
                        if self == b {
                            // Equal infinities too (x - y would be NaN).
                            return self + if base2 { 1.0 } else { std::f64::consts::LN_2 as $t };
                        }
                        let d = self - b;
                        let (big, small_exp) = if d > 0.0 { (self, -d) } else if d <= 0.0 { (b, d) } else { return d };
                        if base2 {
                            big + small_exp.exp2().ln_1p() * (std::f64::consts::LOG2_E as $t)
                        } else {
                            big + small_exp.exp().ln_1p()
                        }
                    }
                }
            }
            #[inline(always)] fn atan2(self, b: Self) -> Self { <$t>::atan2(self, b) }
            #[inline(always)] fn is_inf(self) -> bool { <$t>::is_infinite(self) }
        }
    )*};
}
float!(f32, f64);

/// Compare two fixed-width byte strings as NumPy does (shorter padded with NULs).
pub(crate) fn cmp_padded(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        std::cmp::Ordering::Equal => {}
        o => return o,
    }
    if a[n..].iter().any(|&c| c != 0) {
        std::cmp::Ordering::Greater
    } else if b[n..].iter().any(|&c| c != 0) {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    }
}
