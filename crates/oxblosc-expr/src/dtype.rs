//! Element types and NumPy 2's type promotion (NEP 50: Python literals are "weak").

use std::fmt;

/// The element type of a column, an intermediate or a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// Fixed-width bytes (NumPy `S<n>`): only compared with string literals or each other.
    Bytes(usize),
}

/// The broad kind of a type, in NumPy's promotion order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Bool,
    UInt,
    Int,
    Float,
    Bytes,
}

impl DType {
    /// Every numeric type and bool (not `Bytes`).
    pub const ALL: [DType; 11] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
            DType::Bytes(n) => n,
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            DType::Bool => Kind::Bool,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => Kind::UInt,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => Kind::Int,
            DType::F32 | DType::F64 => Kind::Float,
            DType::Bytes(_) => Kind::Bytes,
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self.kind(), Kind::Int | Kind::UInt)
    }

    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// NumPy's short name (`"float32"`, `"bool"`, `"S8"`).
    pub fn name(self) -> String {
        match self {
            DType::Bool => "bool".into(),
            DType::I8 => "int8".into(),
            DType::I16 => "int16".into(),
            DType::I32 => "int32".into(),
            DType::I64 => "int64".into(),
            DType::U8 => "uint8".into(),
            DType::U16 => "uint16".into(),
            DType::U32 => "uint32".into(),
            DType::U64 => "uint64".into(),
            DType::F32 => "float32".into(),
            DType::F64 => "float64".into(),
            DType::Bytes(n) => format!("S{n}"),
        }
    }

    /// The NumPy type string, little-endian (`"<f4"`, `"|b1"`, `"|S8"`).
    pub fn numpy_str(self) -> String {
        match self {
            DType::Bool => "|b1".into(),
            DType::I8 => "|i1".into(),
            DType::U8 => "|u1".into(),
            DType::I16 => "<i2".into(),
            DType::U16 => "<u2".into(),
            DType::I32 => "<i4".into(),
            DType::U32 => "<u4".into(),
            DType::I64 => "<i8".into(),
            DType::U64 => "<u8".into(),
            DType::F32 => "<f4".into(),
            DType::F64 => "<f8".into(),
            DType::Bytes(n) => format!("|S{n}"),
        }
    }

    /// Parse a NumPy type string (`"<f4"`, `"f8"`, `"int32"`, `"bool"`, `"|S5"`); big-endian refused.
    pub fn from_numpy_str(s: &str) -> Option<DType> {
        let t = s.trim_start_matches(['<', '|', '=']);
        if s.starts_with('>') {
            return None;
        }
        Some(match t {
            "b1" | "?" | "bool" => DType::Bool,
            "i1" | "int8" => DType::I8,
            "i2" | "int16" => DType::I16,
            "i4" | "int32" => DType::I32,
            "i8" | "int64" => DType::I64,
            "u1" | "uint8" => DType::U8,
            "u2" | "uint16" => DType::U16,
            "u4" | "uint32" => DType::U32,
            "u8" | "uint64" => DType::U64,
            "f4" | "float32" => DType::F32,
            "f8" | "float64" => DType::F64,
            _ => {
                let n = t.strip_prefix('S')?.parse().ok()?;
                if n == 0 {
                    return None;
                }
                DType::Bytes(n)
            }
        })
    }

    fn int_bits(self) -> u32 {
        8 * self.itemsize() as u32
    }

    fn signed_of_bits(bits: u32) -> Option<DType> {
        Some(match bits {
            8 => DType::I8,
            16 => DType::I16,
            32 => DType::I32,
            64 => DType::I64,
            _ => return None,
        })
    }

    /// Inclusive value range of an integer type (as i128), `None` for others.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::I8 => (i8::MIN as i128, i8::MAX as i128),
            DType::I16 => (i16::MIN as i128, i16::MAX as i128),
            DType::I32 => (i32::MIN as i128, i32::MAX as i128),
            DType::I64 => (i64::MIN as i128, i64::MAX as i128),
            DType::U8 => (0, u8::MAX as i128),
            DType::U16 => (0, u16::MAX as i128),
            DType::U32 => (0, u32::MAX as i128),
            DType::U64 => (0, u64::MAX as i128),
            _ => return None,
        })
    }

    /// The float type NumPy's float functions (`sqrt`, `sin`, `/`-style) give for this input.
    ///
    /// NumPy gives float16 for bool/int8/uint8; we have no float16 and give float32 (documented).
    pub fn float_of(self) -> Option<DType> {
        Some(match self {
            DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::F32 => DType::F32,
            DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::F64 => DType::F64,
            DType::Bytes(_) => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// `np.result_type(a, b)` for two arrays ("strong" types). `None` when NumPy has no common
/// type we support (bytes with numbers).
pub fn promote(a: DType, b: DType) -> Option<DType> {
    use DType::*;
    if a == b {
        return Some(a);
    }
    match (a, b) {
        (Bytes(x), Bytes(y)) => Some(Bytes(x.max(y))),
        (Bytes(_), _) | (_, Bytes(_)) => None,
        (Bool, t) | (t, Bool) => Some(t),
        _ => {
            let (ka, kb) = (a.kind(), b.kind());
            Some(match (ka, kb) {
                (Kind::Float, Kind::Float) => F64,
                (Kind::Float, _) => float_with_int(a, b),
                (_, Kind::Float) => float_with_int(b, a),
                _ if ka == kb => {
                    if a.itemsize() >= b.itemsize() {
                        a
                    } else {
                        b
                    }
                }
                _ => {
                    let (s, u) = if ka == Kind::Int { (a, b) } else { (b, a) };
                    if s.int_bits() > u.int_bits() {
                        s
                    } else {
                        DType::signed_of_bits(u.int_bits() * 2).unwrap_or(F64)
                    }
                }
            })
        }
    }
}

fn float_with_int(f: DType, i: DType) -> DType {
    if f == DType::F64 || i.itemsize() >= 4 {
        DType::F64
    } else {
        DType::F32
    }
}

/// A Python literal's value; it takes the type of the array it meets (NEP 50).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Weak {
    Bool(bool),
    /// Range-checked to fit `i64` or `u64` when it gets a type.
    Int(i128),
    Float(f64),
}

impl Weak {
    /// The type the literal gets on its own (`np.asarray(x).dtype`).
    pub fn default_dtype(self) -> DType {
        match self {
            Weak::Bool(_) => DType::Bool,
            Weak::Int(v) if v > i64::MAX as i128 => DType::U64,
            Weak::Int(_) => DType::I64,
            Weak::Float(_) => DType::F64,
        }
    }

    /// The type of `strong <op> weak` (NEP 50): the strong type unless the literal's kind
    /// is higher (an int literal with bool gives int64, a float literal with ints float64).
    pub fn with_strong(self, strong: DType) -> DType {
        match (self, strong.kind()) {
            (_, Kind::Bytes) => strong,
            (Weak::Bool(_), _) => strong,
            (Weak::Int(_), Kind::Bool) => DType::I64,
            (Weak::Int(_), _) => strong,
            (Weak::Float(_), Kind::Float) => strong,
            (Weak::Float(_), _) => DType::F64,
        }
    }
}

/// A typed scalar value (a literal once typed, a per-block min/max, a broadcast operand).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::I64(v) => v as f64,
            Scalar::U64(v) => v as f64,
            Scalar::F64(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn numpy_promotion_samples() {
        assert_eq!(promote(I8, U8), Some(I16));
        assert_eq!(promote(I64, U64), Some(F64));
        assert_eq!(promote(U32, I32), Some(I64));
        assert_eq!(promote(I16, F32), Some(F32));
        assert_eq!(promote(I32, F32), Some(F64));
        assert_eq!(promote(U16, I32), Some(I32));
        assert_eq!(promote(Bool, U8), Some(U8));
        assert_eq!(promote(F32, F64), Some(F64));
        assert_eq!(promote(Bytes(3), F64), None);
        assert_eq!(Weak::Int(1).with_strong(Bool), I64);
        assert_eq!(Weak::Float(1.0).with_strong(F32), F32);
        assert_eq!(Weak::Float(1.0).with_strong(I8), F64);
        assert_eq!(Weak::Int(1).with_strong(U8), U8);
        for d in DType::ALL {
            assert_eq!(DType::from_numpy_str(&d.numpy_str()), Some(d));
            assert_eq!(DType::from_numpy_str(&d.name()), Some(d));
        }
    }
}
