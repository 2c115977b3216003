//! Per-block statistics of a column: minimum, maximum and NaN flags of every block.
//!
//! One record per block in python-blosc2's SUMMARY index layout (NumPy structured dtype
//! `[('min', T), ('max', T), ('flags', 'u1')]`, packed, little-endian), so the same bytes are
//! what a table stores for python-blosc2 to read. Min and max ignore NaNs; `flags` bit 0 says
//! every value is NaN (min/max are then meaningless), bit 1 that some value is.
//! Records merge exactly, so appending to a partial block never re-reads it.

use crate::kind::{DType, Kind};

/// Every value of the block is NaN.
pub const ALL_NAN: u8 = 1;
/// Some value of the block is NaN.
pub const HAS_NAN: u8 = 2;

/// What a block can hold, widened to `f64` outward (a skip decision on it is conservative).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub lo: f64,
    pub hi: f64,
    /// Some value may be NaN.
    pub nan: bool,
    /// Every value is NaN: `lo`/`hi` say nothing.
    pub all_nan: bool,
}

/// Bytes of one record for `kind` (`None`: the kind carries no statistics).
pub fn record_len(kind: Kind) -> Option<usize> {
    kind.is_numeric().then(|| 2 * kind.itemsize() + 1)
}

/// The NumPy dtype string of the records (as python-blosc2 writes it in the b2nd metalayer).
pub fn record_dtype(kind: Kind) -> Option<String> {
    if !kind.is_numeric() {
        return None;
    }
    let t = kind.dtype()?.numpy_str();
    let t = t.trim_start_matches('|');
    let t = if t == "b1" { "?" } else { t };
    Some(format!("[('min', '{t}'), ('max', '{t}'), ('flags', 'u1')]"))
}

trait Elem: Copy + PartialOrd {
    const SIZE: usize;
    fn read(b: &[u8]) -> Self;
    fn write(self, out: &mut Vec<u8>);
    fn is_nan(self) -> bool;
    /// (lower, upper) f64 bounds enclosing the value.
    fn widen(self) -> (f64, f64);
}

macro_rules! num_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b[..Self::SIZE].try_into().expect("sized"))
            }
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[allow(clippy::unnecessary_cast)]
            fn is_nan(self) -> bool {
                (self as f64).is_nan()
            }
            #[allow(clippy::unnecessary_cast)]
            fn widen(self) -> (f64, f64) {
                let f = self as f64;
                // Integers past 2^53 round: step at least one ulp outward so the bound holds.
                if !f.is_finite() || f.abs() < 9.0e15 {
                    (f, f)
                } else {
                    (f - f.abs() * f64::EPSILON, f + f.abs() * f64::EPSILON)
                }
            }
        }
    )*};
}
num_elem!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl Elem for bool {
    const SIZE: usize = 1;
    fn is_nan(self) -> bool {
        false
    }
    fn read(b: &[u8]) -> Self {
        b[0] != 0
    }
    fn write(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn widen(self) -> (f64, f64) {
        let f = self as u8 as f64;
        (f, f)
    }
}

/// One record of `vals` (a whole number of `T`s, at least one).
fn summarize_one<T: Elem>(vals: &[u8], out: &mut Vec<u8>) {
    let mut it = vals.chunks_exact(T::SIZE).map(T::read);
    let (mut lo, mut hi, mut nan, mut any) = (None::<T>, None::<T>, false, false);
    for v in &mut it {
        if v.is_nan() {
            nan = true;
            continue;
        }
        any = true;
        match (lo, hi) {
            (Some(l), Some(h)) => {
                if v < l {
                    lo = Some(v)
                }
                if v > h {
                    hi = Some(v)
                }
            }
            _ => (lo, hi) = (Some(v), Some(v)),
        }
    }
    push_record(lo, hi, flags(nan, !any), vals, out);
}

fn flags(nan: bool, all_nan: bool) -> u8 {
    (if nan { HAS_NAN } else { 0 }) | (if all_nan { ALL_NAN | HAS_NAN } else { 0 })
}

fn push_record<T: Elem>(lo: Option<T>, hi: Option<T>, flags: u8, any_vals: &[u8], out: &mut Vec<u8>) {
    match (lo, hi) {
        (Some(l), Some(h)) => {
            l.write(out);
            h.write(out);
        }
        // All NaN: min/max carry the first value's bytes (unused; readers check the flag).
        _ => {
            out.extend_from_slice(&any_vals[..T::SIZE]);
            out.extend_from_slice(&any_vals[..T::SIZE]);
        }
    }
    out.push(flags);
}

fn merge_one<T: Elem>(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    let n = T::SIZE;
    let (fa, fb) = (a[2 * n], b[2 * n]);
    let (a_all, b_all) = (fa & ALL_NAN != 0, fb & ALL_NAN != 0);
    let nan = (fa | fb) & HAS_NAN != 0;
    let (lo, hi) = match (a_all, b_all) {
        (true, true) => (None, None),
        (false, true) => (Some(T::read(a)), Some(T::read(&a[n..]))),
        (true, false) => (Some(T::read(b)), Some(T::read(&b[n..]))),
        (false, false) => {
            let (la, ha, lb, hb) = (T::read(a), T::read(&a[n..]), T::read(b), T::read(&b[n..]));
            (Some(if lb < la { lb } else { la }), Some(if hb > ha { hb } else { ha }))
        }
    };
    push_record(lo, hi, flags(nan, a_all && b_all), a, out);
}

fn range_of<T: Elem>(rec: &[u8]) -> Range {
    let n = T::SIZE;
    let f = rec[2 * n];
    let (lo, _) = T::read(rec).widen();
    let (_, hi) = T::read(&rec[n..]).widen();
    Range { lo, hi, nan: f & HAS_NAN != 0, all_nan: f & ALL_NAN != 0 }
}

macro_rules! dispatch {
    ($kind:expr, $f:ident ( $($arg:expr),* )) => {
        match $kind {
            Kind::Typed(DType::Bool) => $f::<bool>($($arg),*),
            Kind::Typed(DType::I8) => $f::<i8>($($arg),*),
            Kind::Typed(DType::I16) => $f::<i16>($($arg),*),
            Kind::Typed(DType::I32) => $f::<i32>($($arg),*),
            Kind::Typed(DType::I64) => $f::<i64>($($arg),*),
            Kind::Typed(DType::U8) => $f::<u8>($($arg),*),
            Kind::Typed(DType::U16) => $f::<u16>($($arg),*),
            Kind::Typed(DType::U32) => $f::<u32>($($arg),*),
            Kind::Typed(DType::U64) => $f::<u64>($($arg),*),
            Kind::Typed(DType::F32) => $f::<f32>($($arg),*),
            Kind::Typed(DType::F64) => $f::<f64>($($arg),*),
            Kind::Typed(DType::Bytes(_)) | Kind::Opaque(_) => unreachable!("checked by the caller"),
        }
    };
}

/// Records of every block of `data` (elements of `kind`, starting at a block boundary; the
/// last block may be short). Empty for kinds without statistics.
pub fn summarize(kind: Kind, data: &[u8], block_items: usize) -> Vec<u8> {
    let Some(rl) = record_len(kind) else { return Vec::new() };
    let step = block_items.max(1) * kind.itemsize();
    let mut out = Vec::with_capacity(data.len().div_ceil(step) * rl);
    for block in data.chunks(step) {
        let whole = block.len() - block.len() % kind.itemsize();
        if whole > 0 {
            dispatch!(kind, summarize_one(&block[..whole], &mut out));
        }
    }
    out
}

/// The record of a block made of the blocks (or block parts) `a` and `b` describe.
pub fn merge(kind: Kind, a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(rl) = record_len(kind) {
        if a.len() == rl && b.len() == rl {
            dispatch!(kind, merge_one(a, b, &mut out));
        }
    }
    out
}

/// The value range one record describes (`None` for kinds without statistics or a record of
/// the wrong size).
pub fn range(kind: Kind, rec: &[u8]) -> Option<Range> {
    let rl = record_len(kind)?;
    (rec.len() == rl).then(|| dispatch!(kind, range_of(rec)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn blocks_nan_and_merge() {
        let data = f64s(&[3.0, f64::NAN, f64::NAN, f64::NAN, -1.0, 7.5]);
        let recs = summarize(Kind::Typed(DType::F64), &data, 2);
        assert_eq!(recs.len(), 3 * 17);
        let r: Vec<Range> = recs.chunks(17).map(|c| range(Kind::Typed(DType::F64), c).unwrap()).collect();
        assert_eq!((r[0].lo, r[0].hi, r[0].nan, r[0].all_nan), (3.0, 3.0, true, false));
        assert!(r[1].all_nan && r[1].nan);
        assert_eq!((r[2].lo, r[2].hi, r[2].nan), (-1.0, 7.5, false));
        let m = merge(Kind::Typed(DType::F64), &recs[17..34], &recs[34..]);
        let m = range(Kind::Typed(DType::F64), &m).unwrap();
        assert_eq!((m.lo, m.hi, m.nan, m.all_nan), (-1.0, 7.5, true, false));
        let whole = summarize(Kind::Typed(DType::F64), &data, 6);
        let folded =
            merge(Kind::Typed(DType::F64), &merge(Kind::Typed(DType::F64), &recs[..17], &recs[17..34]), &recs[34..]);
        assert_eq!(whole, folded);
    }

    #[test]
    fn infinities_stay_bounds() {
        let recs = summarize(Kind::Typed(DType::F64), &f64s(&[f64::NEG_INFINITY, 1.0, f64::INFINITY]), 3);
        let r = range(Kind::Typed(DType::F64), &recs).unwrap();
        assert_eq!((r.lo, r.hi, r.nan, r.all_nan), (f64::NEG_INFINITY, f64::INFINITY, false, false));
    }

    #[test]
    fn big_integers_widen_outward() {
        let v = (1i64 << 60) + 1;
        let recs = summarize(Kind::Typed(DType::I64), &v.to_le_bytes(), 4);
        let r = range(Kind::Typed(DType::I64), &recs).unwrap();
        assert!(r.lo <= v as f64 && r.hi >= v as f64 && r.lo < r.hi);
        assert!(summarize(Kind::Opaque(3), b"abcdef", 1).is_empty());
        assert_eq!(record_dtype(Kind::Typed(DType::I32)).unwrap(), "[('min', '<i4'), ('max', '<i4'), ('flags', 'u1')]");
        assert_eq!(record_dtype(Kind::Typed(DType::Bool)).unwrap(), "[('min', '?'), ('max', '?'), ('flags', 'u1')]");
    }
}
