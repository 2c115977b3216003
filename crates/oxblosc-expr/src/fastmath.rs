//! Vectorisable `sin`, `cos`, `exp`, `log` over slices (f64 arithmetic; f32 arguments are
//! widened, computed with shorter series and rounded once; which ones the engine uses:
//! [`VecMath::vec_f1`]). Compiled twice: for the baseline target,
//! and for AVX2 + FMA, chosen at run time (`wide`).
//!
//! The platform libm computes one element per call and dominates expressions such as
//! `a * b + sin(c)`. Here every lane runs the same branch-free arithmetic (range reduction,
//! a polynomial, an exponent rebuild with integer bit operations), so LLVM vectorises the
//! loop for the baseline SSE2 target. Lanes outside the fast range (NaN, infinities, huge
//! arguments, zero/negative/subnormal `log` inputs, `exp` results near overflow/underflow)
//! are recomputed with libm afterwards, so special values behave exactly as before.
//!
//! Accuracy (checked in the tests): within 2 ULP of libm for f64, and for f32 the f64 result
//! rounded once (at most 1 ULP from the correctly rounded value; checked on a dense sample of
//! every function, and on every f32 of the fast range for `sin`/`cos` by an ignored test).
//!
//! Derivations (standard math, written for this crate):
//! - sin/cos: k = round(x * 2/pi); r = x - k*pi/2 with pi/2 split into five 27-bit parts, so
//!   every product k*part is exact for |k| < 2^26 and the subtractions are exact until the
//!   last (Cody-Waite); then Taylor series of sin and cos on |r| <= pi/4 (to r^17 and r^18,
//!   truncation below 2^-60 relative), the quadrant k mod 4 selecting and negating.
//! - exp: k = round(x / ln2), r = x - k*ln2 (two parts), exp(r) by its Taylor series to r^13
//!   on |r| <= ln2/2, times 2^k built from the exponent bits.
//! - log: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f);
//!   log(1+f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(s^2)), R the atanh series to s^20.

use crate::compile::F1;

/// Lanes evaluated together before the rare libm fix-up.
const LANES: usize = 8;

/// 1.5 * 2^52: adding and subtracting it rounds an f64 below 2^51 to the nearest integer,
/// and the low bits of the sum are that integer (no float-to-int conversion needed).
const ROUND: f64 = 6755399441055744.0;

/// Slice kernels for the functions that have a fast path; `false` means "not handled here".
pub(crate) trait VecMath: Copy {
    /// The kernels the engine uses: only where they measured faster than glibc's scalar
    /// functions. On the baseline (SSE2, two f64 lanes, no FMA) target: f64 `sin` and `cos`
    /// (2x; glibc's table-driven `exp` and `log` were as fast). On CPUs with AVX2 and FMA
    /// (4 lanes, fused multiply-adds): f64 `sin cos` (4x glibc) and `exp log` (2x), and f32
    /// `sin cos` (1.5-2.7x glibc's `sinf`/`cosf`) and `exp log` (1-5x `expf`/`logf`, median
    /// 1.4x). On the baseline target f32 `sin cos` were 0.7-1.4x glibc, so every f32 function
    /// stays glibc's there (docs/benchmarks.md, lazy section).
    fn vec_f1(f: F1, x: &[Self], o: &mut [Self]) -> bool;
    /// Every kernel of this module (tested), for the widest instruction set the CPU runs.
    fn kernel_f1(f: F1, x: &[Self], o: &mut [Self]) -> bool;
}

impl VecMath for f64 {
    fn vec_f1(f: F1, x: &[f64], o: &mut [f64]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if wide() {
            return wide::kernel_f1(f, x, o);
        }
        matches!(f, F1::Sin | F1::Cos) && Self::kernel_f1(f, x, o)
    }
    fn kernel_f1(f: F1, x: &[f64], o: &mut [f64]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if wide() {
            return wide::kernel_f1(f, x, o);
        }
        kernel_f1::<Plain>(f, x, o)
    }
}

/// The f64 kernels, with multiply-adds as `A` does them.
#[inline(always)]
fn kernel_f1<A: MulAdd>(f: F1, x: &[f64], o: &mut [f64]) -> bool {
    match f {
        F1::Sin => run(x, o, |v| sincos::<A>(v, 0), f64::sin, sincos_ok),
        F1::Cos => run(x, o, |v| sincos::<A>(v, 1), f64::cos, sincos_ok),
        F1::Exp => run(x, o, exp::<A>, f64::exp, exp_ok),
        F1::Log => run(x, o, log::<A>, f64::ln, log_ok),
        _ => return false,
    }
    true
}

/// How the polynomials' `a * b + c` steps are done: two roundings on the baseline target,
/// one fused instruction where the CPU has FMA (then also 4 lanes wide: [`wide`]).
trait MulAdd {
    fn mul_add(a: f64, b: f64, c: f64) -> f64;
}

struct Plain;

impl MulAdd for Plain {
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
}

struct Fused;

impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// The CPU runs AVX2 and FMA (checked once): the kernels are then compiled for them
/// ([`wide::kernel_f1`]), 4 f64 lanes and fused multiply-adds, about 2x the baseline.
#[cfg(target_arch = "x86_64")]
fn wide() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"))
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod wide {
    use super::{Fused, F1};

    /// [`super::kernel_f1`] compiled for AVX2 + FMA; only called after [`super::wide`].
    pub(super) fn kernel_f1(f: F1, x: &[f64], o: &mut [f64]) -> bool {
        // SAFETY: the CPU supports AVX2 and FMA (`wide()` checked it before this call).
        unsafe { kernel_f1_avx2(f, x, o) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel_f1_avx2(f: F1, x: &[f64], o: &mut [f64]) -> bool {
        super::kernel_f1::<Fused>(f, x, o)
    }

    /// [`super::kernel_f1_32`] compiled for AVX2 + FMA; only called after [`super::wide`].
    pub(super) fn kernel_f1_32(f: F1, x: &[f32], o: &mut [f32]) -> bool {
        // SAFETY: the CPU supports AVX2 and FMA (`wide()` checked it before this call).
        unsafe { kernel_f1_32_avx2(f, x, o) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel_f1_32_avx2(f: F1, x: &[f32], o: &mut [f32]) -> bool {
        super::kernel_f1_32::<Fused>(f, x, o)
    }
}

impl VecMath for f32 {
    fn vec_f1(f: F1, x: &[f32], o: &mut [f32]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if wide() {
            return wide::kernel_f1_32(f, x, o);
        }
        let _ = (f, x, o);
        false
    }
    fn kernel_f1(f: F1, x: &[f32], o: &mut [f32]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if wide() {
            return wide::kernel_f1_32(f, x, o);
        }
        kernel_f1_32::<Plain>(f, x, o)
    }
}

/// The f32 kernels: the f64 steps with series only as long as f32 needs, rounded once.
#[inline(always)]
fn kernel_f1_32<A: MulAdd>(f: F1, x: &[f32], o: &mut [f32]) -> bool {
    let ok32 = |v: f32| sincos_ok(v as f64);
    match f {
        F1::Sin => run(x, o, |v| sincos32::<A>(v, 0), f32::sin, ok32),
        F1::Cos => run(x, o, |v| sincos32::<A>(v, 1), f32::cos, ok32),
        F1::Exp => run(x, o, exp32::<A>, f32::exp, |v: f32| !v.is_nan()),
        F1::Log => run(x, o, log32::<A>, f32::ln, |v| log_ok(v as f64)),
        _ => return false,
    }
    true
}

/// `o[i] = fast(x[i])`, then `slow(x[i])` for the lanes where `ok(x[i])` is false.
#[inline(always)]
fn run<T: Copy + Default>(x: &[T], o: &mut [T], fast: impl Fn(T) -> T, slow: impl Fn(T) -> T, ok: impl Fn(T) -> bool) {
    let mut xc = x.chunks_exact(LANES);
    let mut oc = o.chunks_exact_mut(LANES);
    for (x, o) in (&mut xc).zip(&mut oc) {
        let mut bad = 0u32;
        for (o, &v) in o.iter_mut().zip(x) {
            *o = fast(v);
            bad |= !ok(v) as u32;
        }
        if bad != 0 {
            fix(x, o, &slow, &ok);
        }
    }
    let (x, o) = (xc.remainder(), oc.into_remainder());
    let mut buf = [T::default(); LANES];
    buf[..x.len()].copy_from_slice(x);
    for v in buf.iter_mut() {
        *v = fast(*v);
    }
    o.copy_from_slice(&buf[..x.len()]);
    fix(x, o, &slow, &ok);
}

#[inline(never)]
fn fix<T: Copy>(x: &[T], o: &mut [T], slow: &impl Fn(T) -> T, ok: &impl Fn(T) -> bool) {
    for (o, &v) in o.iter_mut().zip(x) {
        if !ok(v) {
            *o = slow(v);
        }
    }
}

/// `c[0] + z * (c[1] + z * (c[2] + ...))`.
#[inline(always)]
fn horner<A: MulAdd, const N: usize>(z: f64, c: [f64; N]) -> f64 {
    let mut acc = c[N - 1];
    for &ci in c[..N - 1].iter().rev() {
        acc = A::mul_add(acc, z, ci);
    }
    acc
}

/// |x| <= 2^25: k stays below 2^26, so the reduction's products are exact. Zero goes to
/// libm too: the polynomial would turn sin(-0) into +0.
#[inline(always)]
fn sincos_ok(x: f64) -> bool {
    x.abs() <= 33554432.0 && x != 0.0
}

/// pi/2 as five parts of at most 27 significant bits each (sum exact to about 2^-142).
const PIO2: [f64; 5] =
    [1.570796325802803, 9.920935739593517e-10, 5.721188709663575e-18, 1.6446256892965207e-26, 4.3359050443915694e-35];
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;

/// `sin(x)` (`shift` 0) or `cos(x)` = sin(x + pi/2) (`shift` 1), valid where `sincos_ok`.
#[inline(always)]
fn sincos<A: MulAdd>(x: f64, shift: u64) -> f64 {
    let t = x * TWO_OVER_PI + ROUND;
    let q = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(shift);
    let k = t - ROUND;
    let r = (((x - k * PIO2[0]) - k * PIO2[1]) - k * PIO2[2] - k * PIO2[3]) - k * PIO2[4];
    let z = r * r;
    // sin r = r - r^3/3! + ... + r^17/17!;  cos r = 1 - r^2/2! + ... + r^18/18!
    let s = r + r
        * z
        * horner::<A, _>(
            z,
            [
                -1.0 / 6.0,
                1.0 / 120.0,
                -1.0 / 5040.0,
                1.0 / 362880.0,
                -1.0 / 39916800.0,
                1.0 / 6227020800.0,
                -1.0 / 1307674368000.0,
                1.0 / 355687428096000.0,
            ],
        );
    let c = 1.0 - 0.5 * z
        + z * z
            * horner::<A, _>(
                z,
                [
                    1.0 / 24.0,
                    -1.0 / 720.0,
                    1.0 / 40320.0,
                    -1.0 / 3628800.0,
                    1.0 / 479001600.0,
                    -1.0 / 87178291200.0,
                    1.0 / 20922789888000.0,
                    -1.0 / 6402373705728000.0,
                ],
            );
    // Odd quadrants take the cosine; quadrants 2 and 3 negate.
    let odd = (q & 1).wrapping_neg();
    let v = (s.to_bits() & !odd) | (c.to_bits() & odd);
    f64::from_bits(v ^ ((q & 2) << 62))
}

/// pi/2 - PIO2[0] - PIO2[1], rounded: three parts are enough for f32 arguments.
const PIO2_LO: f64 = 5.721188726109832e-18;

/// f32 `sin(x)` (`shift` 0) or `cos(x)` (`shift` 1), valid where `sincos_ok`: the reduction
/// of [`sincos`] with three parts of pi/2, Taylor series to r^11 and r^12 (truncation below
/// 2^-36 relative), all in f64, then one rounding to f32.
#[inline(always)]
fn sincos32<A: MulAdd>(x: f32, shift: u64) -> f32 {
    let x = x as f64;
    let t = x * TWO_OVER_PI + ROUND;
    let q = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(shift);
    let k = t - ROUND;
    let r = ((x - k * PIO2[0]) - k * PIO2[1]) - k * PIO2_LO;
    let z = r * r;
    let s = r + r * z * horner::<A, _>(z, [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0, -1.0 / 39916800.0]);
    let c = 1.0 - 0.5 * z
        + z * z * horner::<A, _>(z, [1.0 / 24.0, -1.0 / 720.0, 1.0 / 40320.0, -1.0 / 3628800.0, 1.0 / 479001600.0]);
    let odd = (q & 1).wrapping_neg();
    let v = (s.to_bits() & !odd) | (c.to_bits() & odd);
    f64::from_bits(v ^ ((q & 2) << 62)) as f32
}

const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
const INV_LN2: f64 = std::f64::consts::LOG2_E;

/// The result and 2^k stay normal and finite.
#[inline(always)]
fn exp_ok(x: f64) -> bool {
    (-708.0..=709.0).contains(&x)
}

#[inline(always)]
fn exp<A: MulAdd>(x: f64) -> f64 {
    let t = x * INV_LN2 + ROUND;
    let k = t - ROUND;
    let ki = t.to_bits().wrapping_sub(ROUND.to_bits());
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let p = 1.0
        + r
        + r * r
            * horner::<A, _>(
                r,
                [
                    1.0 / 2.0,
                    1.0 / 6.0,
                    1.0 / 24.0,
                    1.0 / 120.0,
                    1.0 / 720.0,
                    1.0 / 5040.0,
                    1.0 / 40320.0,
                    1.0 / 362880.0,
                    1.0 / 3628800.0,
                    1.0 / 39916800.0,
                    1.0 / 479001600.0,
                    1.0 / 6227020800.0,
                ],
            );
    // Outside exp_ok the lane is recomputed, so a wrapped exponent here is harmless.
    p * f64::from_bits(ki.wrapping_add(1023) << 52)
}

/// f32 `exp`, valid for every non-NaN `x`: the steps of [`exp`] in f64 with the series to
/// r^8 (truncation below 2^-32 relative on |r| <= ln2/2), rounded once to f32. `x` is first
/// clamped to [-150, 100], where f32 results are already 0 and infinity, and the rounding
/// overflows to infinity and rounds tiny results to subnormals or zero as f32 does.
#[inline(always)]
fn exp32<A: MulAdd>(x: f32) -> f32 {
    let x = (x as f64).clamp(-150.0, 100.0);
    let t = x * INV_LN2 + ROUND;
    let k = t - ROUND;
    let ki = t.to_bits().wrapping_sub(ROUND.to_bits());
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let p = 1.0
        + r
        + r * r
            * horner::<A, _>(
                r,
                [1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40320.0],
            );
    (p * f64::from_bits(ki.wrapping_add(1023) << 52)) as f32
}

/// f32 `log`: the steps of [`log`] in f64 with the atanh series to s^12 (|s| <= 0.172, so
/// the first term left out is below 2^-36 relative), rounded once to f32.
#[inline(always)]
fn log32<A: MulAdd>(x: f32) -> f32 {
    let x = x as f64;
    let h = x.to_bits().wrapping_add(0x3FF0000000000000 - SQRT_HALF_BITS);
    let m = f64::from_bits((h & 0x000F_FFFF_FFFF_FFFF).wrapping_add(SQRT_HALF_BITS));
    let e = f64::from_bits(0x4330000000000000 | (h >> 52)) - (4503599627370496.0 + 1023.0);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner::<A, _>(z, [2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0, 2.0 / 13.0]);
    let hfsq = 0.5 * f * f;
    (e * std::f64::consts::LN_2 + (f - (hfsq - s * (hfsq + r)))) as f32
}

/// Positive, normal, finite.
#[inline(always)]
fn log_ok(x: f64) -> bool {
    (f64::MIN_POSITIVE..=f64::MAX).contains(&x)
}

/// Bits of sqrt(1/2): mantissas are brought into [sqrt(1/2), sqrt(2)).
const SQRT_HALF_BITS: u64 = 0x3FE6A09E667F3BCD;

#[inline(always)]
fn log<A: MulAdd>(x: f64) -> f64 {
    let h = x.to_bits().wrapping_add(0x3FF0000000000000 - SQRT_HALF_BITS);
    let m = f64::from_bits((h & 0x000F_FFFF_FFFF_FFFF).wrapping_add(SQRT_HALF_BITS));
    // The biased exponent (0..2047) as a float without an int-to-float conversion.
    let e = f64::from_bits(0x4330000000000000 | (h >> 52)) - (4503599627370496.0 + 1023.0);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner::<A, _>(
        z,
        [
            2.0 / 3.0,
            2.0 / 5.0,
            2.0 / 7.0,
            2.0 / 9.0,
            2.0 / 11.0,
            2.0 / 13.0,
            2.0 / 15.0,
            2.0 / 17.0,
            2.0 / 19.0,
            2.0 / 21.0,
        ],
    );
    let hfsq = 0.5 * f * f;
    e * LN2_HI + (f - (hfsq - (s * (hfsq + r) + e * LN2_LO)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite f64 of the same sign.
    fn ulp64(a: f64, b: f64) -> u64 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        let key = |v: f64| {
            let b = v.to_bits() as i64;
            if b < 0 {
                i64::MIN - b
            } else {
                b
            }
        };
        key(a).abs_diff(key(b))
    }

    fn ulp32(a: f32, b: f32) -> u64 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        let key = |v: f32| {
            let b = v.to_bits() as i32 as i64;
            if b < 0 {
                i32::MIN as i64 - b
            } else {
                b
            }
        };
        key(a).abs_diff(key(b))
    }

    /// A function, its libm f64 and f32 versions.
    type Case = (F1, fn(f64) -> f64, fn(f32) -> f32);

    const FUNCS: [Case; 4] = [
        (F1::Sin, f64::sin, f32::sin),
        (F1::Cos, f64::cos, f32::cos),
        (F1::Exp, f64::exp, f32::exp),
        (F1::Log, f64::ln, f32::ln),
    ];

    type Kernel = fn(F1, &[f64], &mut [f64]) -> bool;

    /// Worst ULP distance of the slice kernel from libm over `xs` (f64), for the kernel this
    /// CPU runs and for both ways of doing multiply-adds (plain, fused).
    fn worst64(f: F1, libm: fn(f64) -> f64, xs: &[f64]) -> (u64, f64) {
        let kernels: [Kernel; 3] = [f64::kernel_f1, kernel_f1::<Plain>, kernel_f1::<Fused>];
        let mut worst = (0, 0.0);
        for k in kernels {
            let mut o = vec![0.0; xs.len()];
            assert!(k(f, xs, &mut o));
            let w = xs.iter().zip(&o).map(|(&x, &y)| (ulp64(y, libm(x)), x)).max_by_key(|p| p.0).unwrap();
            if w.0 >= worst.0 {
                worst = w;
            }
        }
        worst
    }

    type Kernel32 = fn(F1, &[f32], &mut [f32]) -> bool;

    /// The f32 kernel this CPU runs, and both ways of doing multiply-adds.
    const KERNELS32: [Kernel32; 3] = [f32::kernel_f1, kernel_f1_32::<Plain>, kernel_f1_32::<Fused>];

    /// Worst ULP distance of the f32 `sin`/`cos` kernels from the correctly rounded value
    /// (glibc's f64 result rounded to f32), over every f32 whose bits are in `bits`.
    fn worst_sincos32(bits: impl Iterator<Item = u32>) -> [(u64, f32); 2] {
        let xs: Vec<f32> = bits.map(f32::from_bits).collect();
        let mut o = vec![0f32; xs.len()];
        let mut worst = [(0u64, 0f32); 2];
        for (w, (f, libm, _)) in worst.iter_mut().zip(FUNCS) {
            let want: Vec<f32> = xs.iter().map(|&x| libm(x as f64) as f32).collect();
            for k in KERNELS32 {
                assert!(k(f, &xs, &mut o));
                for ((&x, &y), &want) in xs.iter().zip(&o).zip(&want) {
                    let d = ulp32(y, want);
                    if d > w.0 {
                        *w = (d, x);
                    }
                }
            }
        }
        worst
    }

    #[test]
    fn f32_sincos_within_one_ulp_near_multiples_of_half_pi_and_at_the_limits() {
        // The 64 floats around each of the first 20000 multiples of pi/2, every 1000th up
        // to the fast range's end (2^25), and the floats around that end.
        let mut bits = Vec::new();
        for k in (1..20_000u64).chain((20_000..21_000_000).step_by(1000)) {
            let c = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
            for b in c.to_bits() - 32..c.to_bits() + 32 {
                bits.extend([b, b | 0x8000_0000]);
            }
        }
        let end = 33554432f32.to_bits();
        bits.extend((end - 4096..end + 4096).flat_map(|b| [b, b | 0x8000_0000]));
        // Small and subnormal arguments, where sin x rounds to x.
        bits.extend((0..1u32 << 20).map(|i| i * 1021));
        for (worst, at) in worst_sincos32(bits.into_iter()) {
            assert!(worst <= 1, "{worst} ulp at {at:e}");
        }
    }

    /// Every f32 of the fast range |x| <= 2^25 (outside it the lanes are glibc's, checked by
    /// `special_values_are_libms_bit_for_bit`); a few minutes in a release build:
    /// `cargo test --release -p oxblosc-expr --lib every_f32 -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn every_f32_sincos_within_one_ulp() {
        let end = 33554432f32.to_bits();
        let mut worst = [(0u64, 0f32); 2];
        for start in (0..=end).step_by(1 << 24) {
            let bits = start..=(start | 0xFF_FFFF).min(end);
            for (w, n) in worst.iter_mut().zip(worst_sincos32(bits.flat_map(|b| [b, b | 0x8000_0000]))) {
                if n.0 > w.0 {
                    *w = n;
                }
            }
        }
        println!("worst sin {:?}, cos {:?}", worst[0], worst[1]);
        for (worst, at) in worst {
            assert!(worst <= 1, "{worst} ulp at {at:e}");
        }
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed
    }

    #[test]
    fn f32_dense_sample_within_one_ulp_of_rounded_f64_libm() {
        // Every 97th bit pattern of both signs (~44 million inputs), in batches.
        let mut worst = [(0u64, 0f32); 4];
        let mut o = vec![0f32; 1 << 20];
        for batch in (0..u32::MAX / 97).step_by(1 << 20) {
            let xs: Vec<f32> =
                (batch..(batch + (1 << 20)).min(u32::MAX / 97)).map(|i| f32::from_bits(i * 97)).collect();
            for (w, (f, libm, _)) in worst.iter_mut().zip(FUNCS) {
                for k in KERNELS32 {
                    assert!(k(f, &xs, &mut o[..xs.len()]));
                    for (&x, &y) in xs.iter().zip(&o) {
                        let d = ulp32(y, libm(x as f64) as f32);
                        if d > w.0 {
                            *w = (d, x);
                        }
                    }
                }
            }
        }
        for ((worst, at), (f, ..)) in worst.into_iter().zip(FUNCS) {
            assert!(worst <= 1, "{f:?} f32: {worst} ulp at {at:e}");
        }
    }

    #[test]
    fn f64_random_and_edges_within_two_ulp_of_libm() {
        let mut seed = 7u64;
        // Random bit patterns (every magnitude) and random values in the fast ranges.
        let mut xs: Vec<f64> = (0..200_000).map(|_| f64::from_bits(lcg(&mut seed))).collect();
        xs.extend((0..200_000).map(|_| (lcg(&mut seed) >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 1000.0));
        xs.extend((0..100_000).map(|_| (lcg(&mut seed) >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0));
        // Near multiples of pi/2 (large cancellation in the reduction) and near the limits.
        for k in 1..2000i64 {
            let c = k as f64 * std::f64::consts::FRAC_PI_2;
            xs.extend([c, c.next_up(), c.next_down(), -c]);
        }
        for v in [33554432.0f64, 33554431.9, -33554432.0, 709.0, -708.0, 708.9, 1e-300, 5e-324, 2.2250738585072014e-308]
        {
            xs.extend([v, v.next_up(), v.next_down()]);
        }
        for (f, libm, _) in FUNCS {
            let (worst, at) = worst64(f, libm, &xs);
            assert!(worst <= 2, "{f:?} f64: {worst} ulp at {at:e}");
        }
    }

    #[test]
    fn special_values_are_libms_bit_for_bit() {
        // Values outside every fast range, or at its edges; -0/+0 keep their sign.
        let specials = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            1e22,
            -1e300,
            710.0,
            -745.2,
            -800.0,
            -1.0,
            1.0,
        ];
        let oks: [fn(f64) -> bool; 4] = [sincos_ok, sincos_ok, exp_ok, log_ok];
        let mut outside = 0;
        for ((f, libm, libm32), ok) in FUNCS.into_iter().zip(oks) {
            // Every position in a chunk and in the remainder.
            let xs: Vec<f64> = specials.iter().cycle().take(specials.len() * 9 + 3).copied().collect();
            let mut o = vec![0.0; xs.len()];
            assert!(f64::kernel_f1(f, &xs, &mut o));
            for (&x, &y) in xs.iter().zip(&o) {
                let want = libm(x);
                if ok(x) {
                    assert!(ulp64(y, want) <= 2, "{f:?}({x:e}) = {y:e}, libm {want:e}");
                } else {
                    outside += 1;
                    assert!(
                        y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                        "{f:?}({x:e}) = {y:e}, libm {want:e}"
                    );
                }
            }
            let xs32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let mut o32 = vec![0f32; xs32.len()];
            assert!(f32::kernel_f1(f, &xs32, &mut o32));
            for (&x, &y) in xs32.iter().zip(&o32) {
                if ok(x as f64) {
                    assert!(ulp32(y, libm(x as f64) as f32) <= 1, "{f:?}({x:e}) f32 = {y:e}");
                } else {
                    let want = libm32(x);
                    assert!(
                        y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                        "{f:?}({x:e}) f32 = {y:e}, libm {want:e}"
                    );
                }
            }
        }
        assert!(outside > 200);
    }

    #[test]
    fn other_functions_are_left_to_libm() {
        let mut o = [0.0; 4];
        #[cfg(target_arch = "x86_64")]
        let wide = wide();
        #[cfg(not(target_arch = "x86_64"))]
        let wide = false;
        assert_eq!(f64::vec_f1(F1::Log, &[1.0; 4], &mut o), wide);
        assert_eq!(f64::vec_f1(F1::Exp, &[1.0; 4], &mut o), wide);
        assert_eq!(f32::vec_f1(F1::Sin, &[1.0; 4], &mut [0.0; 4]), wide);
        assert_eq!(f32::vec_f1(F1::Cos, &[1.0; 4], &mut [0.0; 4]), wide);
        assert_eq!(f32::vec_f1(F1::Exp, &[1.0; 4], &mut [0.0; 4]), wide);
        assert_eq!(f32::vec_f1(F1::Log, &[1.0; 4], &mut [0.0; 4]), wide);
        assert!(f64::vec_f1(F1::Sin, &[1.0; 4], &mut o));
        assert!(!f64::kernel_f1(F1::Tan, &[1.0; 4], &mut o));
        assert!(!f32::kernel_f1(F1::Sqrt, &[1.0; 4], &mut [0.0; 4]));
    }
}
