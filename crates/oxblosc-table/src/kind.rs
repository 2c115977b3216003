//! Column element kinds: which NumPy dtypes a query can compute with.
//!
//! Columns hold NumPy dtypes (the b2nd metalayer's dtype string). Those the expression
//! engine knows (numbers, bool, fixed-width bytes; datetime64/timedelta64 as the 64-bit
//! integers they are) take part in conditions, and the numeric ones carry block statistics;
//! anything else (UCS4 strings, big-endian numbers, ...) is only stored and gathered.

pub use oxblosc_expr::DType;

/// The element kind of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A type conditions compute with.
    Typed(DType),
    /// Stored and gathered only: `itemsize` bytes.
    Opaque(usize),
}

impl Kind {
    /// The kind of a NumPy dtype string as b2nd stores it (`'<f8'`, `'|b1'`, `'<M8[s]'`,
    /// `'|S5'`, `'<U3'`) for items of `itemsize` bytes.
    pub fn from_numpy(dtype: &str, itemsize: usize) -> Kind {
        let t = dtype.trim_start_matches(['<', '|', '=']);
        let time = (t.starts_with("M8") || t.starts_with("m8")) && !dtype.starts_with('>');
        let d = if time { Some(DType::I64) } else { DType::from_numpy_str(dtype) };
        match d {
            Some(d) if d.itemsize() == itemsize => Kind::Typed(d),
            _ => Kind::Opaque(itemsize),
        }
    }

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        match self {
            Kind::Typed(d) => d.itemsize(),
            Kind::Opaque(n) => n,
        }
    }

    /// The engine's type, when conditions can use the column.
    pub fn dtype(self) -> Option<DType> {
        match self {
            Kind::Typed(d) => Some(d),
            Kind::Opaque(_) => None,
        }
    }

    /// Whether the column carries statistics (numbers and bool).
    pub fn is_numeric(self) -> bool {
        matches!(self, Kind::Typed(d) if !matches!(d, DType::Bytes(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::{DType, Kind};

    #[test]
    fn numpy_strings() {
        assert_eq!(Kind::from_numpy("<f8", 8), Kind::Typed(DType::F64));
        assert_eq!(Kind::from_numpy("|b1", 1), Kind::Typed(DType::Bool));
        assert_eq!(Kind::from_numpy("<M8[s]", 8), Kind::Typed(DType::I64));
        assert_eq!(Kind::from_numpy("|u1", 1), Kind::Typed(DType::U8));
        assert_eq!(Kind::from_numpy("|S5", 5), Kind::Typed(DType::Bytes(5)));
        assert_eq!(Kind::from_numpy("<U3", 12), Kind::Opaque(12));
        assert_eq!(Kind::from_numpy(">i4", 4), Kind::Opaque(4));
        assert_eq!(Kind::from_numpy("<i4", 8), Kind::Opaque(8));
        assert!(!Kind::from_numpy("|S5", 5).is_numeric() && Kind::from_numpy("<i2", 2).is_numeric());
    }
}
