//! One zfp block of 4^d values (d = 1..4) in and out of the bit stream.
//!
//! The steps, per the zfp format: the block's largest exponent `emax` (a block whose values
//! are all zero, or whose precision works out to 0, is a single 0 bit); the values as
//! integers relative to `2^emax` (30 or 62 fraction bits); a lifting transform along each
//! axis (x first); the coefficients in order of total sequency; negabinary; and the bit
//! planes from the top, each as the bits of the coefficients already known to be
//! significant followed by group tests with unary run lengths, within a bit budget.

use super::bits::{BitReader, BitWriter};

/// Largest number of bits a block may take (zfp's `ZFP_MAX_BITS`).
pub(super) const MAX_BITS: u32 = 16658;
/// zfp's `ZFP_MAX_PREC`.
pub(super) const MAX_PREC: u32 = 64;
/// zfp's `ZFP_MIN_EXP`: the smallest exponent of a double.
pub(super) const MIN_EXP: i32 = -1074;

/// The coding parameters of a stream (zfp's minbits, maxbits, maxprec, minexp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Params {
    pub minbits: u32,
    pub maxbits: u32,
    pub maxprec: u32,
    pub minexp: i32,
}

/// Bit planes a block with largest exponent `emax` keeps.
fn precision(emax: i32, p: &Params, dims: usize) -> u32 {
    let planes = i64::from(emax) - i64::from(p.minexp) + 2 * (dims as i64 + 1);
    planes.clamp(0, i64::from(p.maxprec)) as u32
}

/// Sequency order of the coefficients of a 2-D block (index x + 4y), measured from
/// python-blosc2's zfp: by total sequency x+y, then by x^2+y^2.
const ORDER2: [u8; 16] = [0, 1, 4, 5, 2, 8, 6, 9, 3, 12, 10, 7, 13, 11, 14, 15];
/// 3-D (x + 4y + 16z) and 4-D orders, measured the same way (same two sort keys; ties
/// in the order zfp lists them).
const ORDER3: [u8; 64] = [
    0, 1, 4, 16, 20, 17, 5, 2, 8, 32, 21, 6, 18, 24, 9, 33, 36, 3, 12, 48, 22, 25, 37, 40, 34, 10, 7, 19, 28, 13, 49,
    52, 41, 38, 26, 23, 29, 53, 11, 35, 44, 14, 50, 56, 42, 27, 39, 45, 30, 54, 57, 60, 51, 15, 43, 46, 58, 61, 55, 31,
    62, 59, 47, 63,
];
const ORDER4: [u8; 256] = [
    0, 1, 4, 16, 64, 5, 80, 17, 68, 65, 20, 2, 8, 32, 128, 84, 81, 69, 21, 6, 18, 66, 24, 72, 9, 96, 33, 36, 129, 132,
    144, 3, 12, 48, 192, 85, 82, 70, 22, 73, 25, 88, 37, 100, 97, 148, 145, 133, 10, 160, 34, 136, 130, 40, 7, 19, 67,
    28, 76, 13, 112, 49, 52, 193, 196, 208, 86, 89, 101, 149, 161, 137, 41, 134, 38, 164, 26, 152, 146, 104, 98, 74,
    83, 71, 23, 77, 29, 92, 53, 116, 113, 212, 209, 197, 11, 35, 131, 44, 140, 14, 176, 50, 56, 194, 200, 224, 90, 165,
    102, 153, 150, 105, 168, 162, 138, 42, 87, 93, 117, 213, 27, 75, 99, 39, 135, 147, 108, 45, 141, 156, 30, 78, 177,
    180, 54, 114, 120, 57, 198, 210, 216, 201, 225, 228, 15, 240, 51, 204, 195, 60, 169, 166, 154, 106, 91, 103, 151,
    109, 157, 94, 181, 118, 121, 214, 217, 229, 163, 139, 43, 142, 46, 172, 58, 184, 178, 232, 226, 202, 241, 205, 61,
    199, 55, 244, 31, 220, 211, 124, 115, 79, 170, 167, 155, 107, 158, 110, 173, 122, 185, 182, 233, 230, 218, 95, 245,
    119, 221, 215, 125, 242, 206, 62, 203, 59, 248, 47, 236, 227, 188, 179, 143, 171, 174, 186, 234, 246, 222, 126,
    219, 123, 249, 111, 237, 231, 189, 183, 159, 252, 243, 207, 63, 175, 250, 187, 238, 235, 190, 253, 247, 223, 127,
    254, 251, 239, 191, 255,
];

fn order(dims: usize) -> &'static [u8] {
    const ORDER1: [u8; 4] = [0, 1, 2, 3];
    match dims {
        1 => &ORDER1,
        2 => &ORDER2,
        3 => &ORDER3,
        _ => &ORDER4,
    }
}

/// The integer type of a block: wrapping arithmetic as the C code's two's complement.
pub(super) trait Int: Copy + Default {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn shr1(self) -> Self;
    fn shl1(self) -> Self;
}

macro_rules! int_impl {
    ($t:ty) => {
        impl Int for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn shr1(self) -> Self {
                self >> 1
            }
            #[inline(always)]
            fn shl1(self) -> Self {
                self.wrapping_shl(1)
            }
        }
    };
}
int_impl!(i32);
int_impl!(i64);

/// Forward lifting of four values: one step of zfp's decorrelating transform.
#[inline(always)]
fn fwd_lift<I: Int>(v: [I; 4]) -> [I; 4] {
    let [mut x, mut y, mut z, mut w] = v;
    x = x.add(w).shr1();
    w = w.sub(x);
    z = z.add(y).shr1();
    y = y.sub(z);
    x = x.add(z).shr1();
    z = z.sub(x);
    w = w.add(y).shr1();
    y = y.sub(w);
    w = w.add(y.shr1());
    y = y.sub(w.shr1());
    [x, y, z, w]
}

/// Exact inverse of [`fwd_lift`] on what it produces.
#[inline(always)]
fn inv_lift<I: Int>(v: [I; 4]) -> [I; 4] {
    let [mut x, mut y, mut z, mut w] = v;
    y = y.add(w.shr1());
    w = w.sub(y.shr1());
    y = y.add(w);
    w = w.shl1().sub(y);
    z = z.add(x);
    x = x.shl1().sub(z);
    y = y.add(z);
    z = z.shl1().sub(y);
    w = w.add(x);
    x = x.shl1().sub(w);
    [x, y, z, w]
}

/// Apply `lift` along axis `axis` (stride 4^axis) of a 4^dims block.
#[inline(always)]
fn along<I: Int, F: Fn([I; 4]) -> [I; 4]>(b: &mut [I], dims: usize, axis: usize, lift: F) {
    let s = 1usize << (2 * axis);
    let n = 1usize << (2 * dims);
    for hi in (0..n).step_by(4 * s) {
        for base in hi..hi + s {
            let out = lift([b[base], b[base + s], b[base + 2 * s], b[base + 3 * s]]);
            b[base] = out[0];
            b[base + s] = out[1];
            b[base + 2 * s] = out[2];
            b[base + 3 * s] = out[3];
        }
    }
}

/// A floating-point element type zfp codes (f32 with 32-bit integers, f64 with 64-bit).
pub(super) trait Real: Copy + Default + PartialOrd + 'static {
    type I: Int;
    const SIZE: usize;
    /// Exponent bits and bias.
    const EBITS: u32;
    const EBIAS: i32;
    /// Bits of the block integers.
    const IBITS: u32;
    fn read(b: &[u8]) -> Self;
    fn write(self, b: &mut [u8]);
    fn abs(self) -> Self;
    /// `frexp`'s exponent of a positive value (0 for infinity, as glibc gives).
    fn frexp_exp(self) -> i32;
    /// `2^e` in this type, rounded as `ldexp(1, e)` (0 below the smallest subnormal, inf above).
    fn pow2(e: i32) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Truncate to the block integer; NaN and out-of-range give the minimum integer (what
    /// x86's conversion gives the C code).
    fn to_int(self) -> Self::I;
    fn from_int(i: Self::I) -> Self;
    /// Negabinary of a block integer, and back.
    fn to_nb(i: Self::I) -> u64;
    fn from_nb(u: u64) -> Self::I;
    fn zero() -> Self {
        Self::default()
    }
}

impl Real for f32 {
    type I = i32;
    const SIZE: usize = 4;
    const EBITS: u32 = 8;
    const EBIAS: i32 = 127;
    const IBITS: u32 = 32;
    #[inline(always)]
    fn read(b: &[u8]) -> Self {
        f32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
    }
    #[inline(always)]
    fn write(self, b: &mut [u8]) {
        b.copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn frexp_exp(self) -> i32 {
        let bits = self.to_bits();
        let e = ((bits >> 23) & 0xff) as i32;
        match e {
            0xff => 0,
            0 => 32 - (bits & 0x7f_ffff).leading_zeros() as i32 - 149,
            _ => e - 126,
        }
    }
    fn pow2(e: i32) -> Self {
        match e {
            128.. => f32::INFINITY,
            -126..=127 => f32::from_bits(((e + 127) as u32) << 23),
            -149..=-127 => f32::from_bits(1u32 << (e + 149)),
            _ => 0.0,
        }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    #[inline(always)]
    fn to_int(self) -> i32 {
        if (-2147483648.0..2147483648.0).contains(&self) {
            self as i32
        } else {
            i32::MIN
        }
    }
    #[inline(always)]
    fn from_int(i: i32) -> Self {
        i as f32
    }
    #[inline(always)]
    fn to_nb(i: i32) -> u64 {
        const M: u32 = 0xaaaa_aaaa;
        u64::from((i as u32).wrapping_add(M) ^ M)
    }
    #[inline(always)]
    fn from_nb(u: u64) -> i32 {
        const M: u32 = 0xaaaa_aaaa;
        ((u as u32) ^ M).wrapping_sub(M) as i32
    }
}

impl Real for f64 {
    type I = i64;
    const SIZE: usize = 8;
    const EBITS: u32 = 11;
    const EBIAS: i32 = 1023;
    const IBITS: u32 = 64;
    #[inline(always)]
    fn read(b: &[u8]) -> Self {
        f64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
    }
    #[inline(always)]
    fn write(self, b: &mut [u8]) {
        b.copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn frexp_exp(self) -> i32 {
        let bits = self.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i32;
        match e {
            0x7ff => 0,
            0 => 64 - (bits & 0xf_ffff_ffff_ffff).leading_zeros() as i32 - 1074,
            _ => e - 1022,
        }
    }
    fn pow2(e: i32) -> Self {
        match e {
            1024.. => f64::INFINITY,
            -1022..=1023 => f64::from_bits(((e + 1023) as u64) << 52),
            -1074..=-1023 => f64::from_bits(1u64 << (e + 1074)),
            _ => 0.0,
        }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    #[inline(always)]
    fn to_int(self) -> i64 {
        if (-(2f64.powi(63))..2f64.powi(63)).contains(&self) {
            self as i64
        } else {
            i64::MIN
        }
    }
    #[inline(always)]
    fn from_int(i: i64) -> Self {
        i as f64
    }
    #[inline(always)]
    fn to_nb(i: i64) -> u64 {
        const M: u64 = 0xaaaa_aaaa_aaaa_aaaa;
        (i as u64).wrapping_add(M) ^ M
    }
    #[inline(always)]
    fn from_nb(u: u64) -> i64 {
        const M: u64 = 0xaaaa_aaaa_aaaa_aaaa;
        (u ^ M).wrapping_sub(M) as i64
    }
}

/// The block's exponent: that of its largest magnitude, at least `1 - EBIAS`; `-EBIAS`
/// when every value is zero (or NaN).
fn block_exponent<R: Real>(vals: &[R]) -> i32 {
    let mut max = R::zero();
    for &v in vals {
        let a = v.abs();
        if max < a {
            max = a;
        }
    }
    if max > R::zero() {
        max.frexp_exp().max(1 - R::EBIAS)
    } else {
        -R::EBIAS
    }
}

/// A bit plane of up to 256 coefficients.
#[derive(Default, Clone, Copy)]
struct Plane([u64; 4]);

impl Plane {
    /// Bit `k` of every coefficient.
    #[inline(always)]
    fn of(data: &[u64], k: u32) -> Plane {
        let mut p = Plane::default();
        for (w, chunk) in p.0.iter_mut().zip(data.chunks(64)) {
            for (i, &d) in chunk.iter().enumerate() {
                *w |= ((d >> k) & 1) << i;
            }
        }
        p
    }
    #[inline(always)]
    fn set(&mut self, i: usize) {
        self.0[i >> 6] |= 1u64 << (i & 63);
    }
    /// The first set bit at `i` or above.
    #[inline(always)]
    fn next_one(&self, i: usize) -> Option<usize> {
        let mut w = i >> 6;
        let mut x = self.0[w] >> (i & 63) << (i & 63);
        loop {
            if x != 0 {
                return Some(w * 64 + x.trailing_zeros() as usize);
            }
            w += 1;
            if w == 4 {
                return None;
            }
            x = self.0[w];
        }
    }
}

/// Encode the negabinary coefficients `data` plane by plane within `maxbits`; bits written.
///
/// Per plane: the bits of the first `n` coefficients (those found significant earlier)
/// verbatim; then, while bits remain, a group test "is any later coefficient 1 in this
/// plane", and if so a unary run of zeros up to that coefficient, ended by a 1 unless it is
/// the last coefficient; that coefficient joins the first `n`.
fn encode_ints(w: &mut BitWriter, maxbits: u32, maxprec: u32, data: &[u64], ibits: u32) -> u32 {
    let size = data.len();
    let last = size - 1;
    let kmin = ibits.saturating_sub(maxprec);
    let mut bits = maxbits as usize;
    let mut n = 0usize;
    let mut k = ibits;
    // Planes above the highest bit of every coefficient are empty: no need to gather them.
    let any_bits = data.iter().fold(0u64, |a, &d| a | d);
    while bits > 0 && k > kmin {
        k -= 1;
        let plane = if (any_bits >> k) & 1 != 0 { Plane::of(data, k) } else { Plane::default() };
        let m = n.min(bits);
        bits -= m;
        let mut i = 0;
        while i < m {
            let take = (m - i).min(64);
            w.write_bits(plane.0[i >> 6], take as u32);
            i += take;
        }
        while n < size && bits > 0 {
            bits -= 1;
            let next = plane.next_one(n);
            w.write_bit(next.is_some());
            let Some(p) = next else { break };
            // The run: zeros up to p, then a 1 when p is not the last coefficient.
            let want = if p < last { p - n + 1 } else { last - n };
            let run = want.min(bits);
            bits -= run;
            if p < last && run == want {
                w.pad((run - 1) as u64);
                w.write_bit(true);
                n = p;
            } else {
                w.pad(run as u64);
                n += run;
            }
            n += 1;
        }
    }
    maxbits - bits as u32
}

/// Decode what [`encode_ints`] wrote into `data` (length = block size); bits read.
fn decode_ints(r: &mut BitReader, maxbits: u32, maxprec: u32, data: &mut [u64], ibits: u32) -> u32 {
    let size = data.len();
    let last = size - 1;
    data.fill(0);
    let kmin = ibits.saturating_sub(maxprec);
    let mut bits = maxbits as usize;
    let mut n = 0usize;
    let mut k = ibits;
    while bits > 0 && k > kmin {
        k -= 1;
        let mut plane = Plane::default();
        let m = n.min(bits);
        bits -= m;
        let mut i = 0;
        while i < m {
            let take = (m - i).min(64);
            plane.0[i >> 6] = r.read_bits(take as u32);
            i += take;
        }
        while n < size && bits > 0 {
            bits -= 1;
            if !r.read_bit() {
                break;
            }
            let (zeros, one) = r.read_unary((last - n).min(bits));
            bits -= zeros + usize::from(one);
            n += zeros;
            plane.set(n);
            n += 1;
        }
        // Deposit the plane: branchless, every coefficient of a non-empty word.
        for (word, chunk) in plane.0.iter().zip(data.chunks_mut(64)) {
            if *word != 0 {
                for (i, d) in chunk.iter_mut().enumerate() {
                    *d |= ((word >> i) & 1) << k;
                }
            }
        }
    }
    maxbits - bits as u32
}

/// Encode one block of `4^dims` values.
/// Working space for one block, reused from block to block (zeroing 3 KiB per 16-value
/// block would cost more than coding it).
pub(super) struct Scratch<R: Real> {
    ints: [R::I; 256],
    coded: [u64; 256],
}

impl<R: Real> Scratch<R> {
    pub(super) fn new() -> Self {
        Scratch { ints: [R::I::default(); 256], coded: [0; 256] }
    }
}

pub(super) fn encode_block<R: Real>(w: &mut BitWriter, p: &Params, dims: usize, vals: &[R], sc: &mut Scratch<R>) {
    let emax = block_exponent(vals);
    let maxprec = precision(emax, p, dims);
    let e = if maxprec > 0 { (emax + R::EBIAS) as u32 } else { 0 };
    if e == 0 {
        w.write_bit(false);
        if p.minbits > 1 {
            w.pad(u64::from(p.minbits - 1));
        }
        return;
    }
    let head = 1 + R::EBITS;
    w.write_bits(2 * u64::from(e) + 1, head);
    let scale = R::pow2(R::IBITS as i32 - 2 - emax);
    let ints = &mut sc.ints[..vals.len()];
    for (i, &v) in ints.iter_mut().zip(vals) {
        *i = v.mul(scale).to_int();
    }
    for axis in 0..dims {
        along(ints, dims, axis, fwd_lift::<R::I>);
    }
    let coded = &mut sc.coded[..vals.len()];
    for (c, &src) in coded.iter_mut().zip(order(dims)) {
        *c = R::to_nb(ints[src as usize]);
    }
    let used = head + encode_ints(w, p.maxbits.saturating_sub(head), maxprec, coded, R::IBITS);
    if used < p.minbits {
        w.pad(u64::from(p.minbits - used));
    }
}

/// Decode one block of `4^dims` values into `vals`.
pub(super) fn decode_block<R: Real>(r: &mut BitReader, p: &Params, dims: usize, vals: &mut [R], sc: &mut Scratch<R>) {
    if !r.read_bit() {
        vals.fill(R::zero());
        if p.minbits > 1 {
            r.skip(u64::from(p.minbits - 1));
        }
        return;
    }
    let emax = r.read_bits(R::EBITS) as i32 - R::EBIAS;
    let maxprec = precision(emax, p, dims);
    let head = 1 + R::EBITS;
    let coded = &mut sc.coded[..vals.len()];
    let used = head + decode_ints(r, p.maxbits.saturating_sub(head), maxprec, coded, R::IBITS);
    if used < p.minbits {
        r.skip(u64::from(p.minbits - used));
    }
    let ints = &mut sc.ints[..vals.len()];
    for (&c, &dst) in coded.iter().zip(order(dims)) {
        ints[dst as usize] = R::from_nb(c);
    }
    for axis in (0..dims).rev() {
        along(ints, dims, axis, inv_lift::<R::I>);
    }
    let scale = R::pow2(emax - (R::IBITS as i32 - 2));
    for (v, &i) in vals.iter_mut().zip(ints.iter()) {
        *v = scale.mul(R::from_int(i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_permutations_sorted_by_sequency() {
        for dims in 1..=4 {
            let o = order(dims);
            assert_eq!(o.len(), 1 << (2 * dims));
            let mut seen = vec![false; o.len()];
            o.iter().for_each(|&i| seen[i as usize] = true);
            assert!(seen.iter().all(|&s| s));
            let key = |m: u8| {
                let c: Vec<u32> = (0..dims).map(|a| u32::from(m >> (2 * a)) & 3).collect();
                (c.iter().sum::<u32>(), c.iter().map(|x| x * x).sum::<u32>())
            };
            assert!(o.windows(2).all(|w| key(w[0]) <= key(w[1])), "dims {dims}");
        }
    }

    #[test]
    fn lifting_inverts_and_matches_the_transform_matrix() {
        // First column of zfp's forward transform: (4, 5, -4, -2) / 16.
        assert_eq!(fwd_lift([16i32, 0, 0, 0]), [4, 5, -4, -2]);
        for v in [[1i64 << 40, -(1 << 39), 12345, -7], [3, 1, 4, 1]] {
            let f = fwd_lift(v);
            assert_eq!(fwd_lift(inv_lift(f)), f);
        }
    }

    #[test]
    fn float_helpers_follow_libm() {
        assert_eq!(1.0f32.frexp_exp(), 1);
        assert_eq!(0.75f64.frexp_exp(), 0);
        assert_eq!(f32::from_bits(1).frexp_exp(), -148);
        assert_eq!(f64::from_bits(1).frexp_exp(), -1073);
        assert_eq!(f32::pow2(-150), 0.0);
        assert_eq!(f32::pow2(-149), f32::from_bits(1));
        assert_eq!(f64::pow2(1024), f64::INFINITY);
        assert_eq!(f32::NAN.to_int(), i32::MIN);
        assert_eq!(f64::INFINITY.to_int(), i64::MIN);
        for i in [0i32, 1, -1, i32::MAX, i32::MIN, 12345] {
            assert_eq!(f32::from_nb(f32::to_nb(i)), i);
        }
    }
}
