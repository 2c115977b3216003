//! Column element kinds: which NumPy dtypes a query can compute with.
//!
//! Columns hold NumPy dtypes (the b2nd metalayer's dtype string). Numbers, booleans and
//! datetime64/timedelta64 (64-bit integers underneath) take part in expressions and carry
//! block statistics; fixed-width bytes/strings are only stored and gathered.

/// The element kind of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
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
    /// Fixed-width bytes (NumPy `S<n>`): compared with string literals, no statistics.
    Bytes(usize),
    /// Stored and gathered only (fixed-width bytes, strings, anything else): `itemsize` bytes.
    Opaque(usize),
}

impl Kind {
    /// The kind of a NumPy dtype string as b2nd stores it (`'<f8'`, `'|b1'`, `'<M8[s]'`,
    /// `'|S5'`, `'<U3'`). Big-endian numbers are opaque (never computed on).
    pub fn from_numpy(dtype: &str, itemsize: usize) -> Kind {
        let (order, rest) = match dtype.chars().next() {
            Some(c @ ('<' | '>' | '|' | '=')) => (c, &dtype[1..]),
            _ => ('=', dtype),
        };
        let little = order != '>' || itemsize == 1;
        let code = rest.chars().next().unwrap_or(' ');
        let size: Option<usize> = rest[code.len_utf8()..].split('[').next().and_then(|s| s.parse().ok());
        let k = match (code, size) {
            ('b', Some(1)) | ('?', _) => Kind::Bool,
            ('i', Some(1)) => Kind::I8,
            ('i', Some(2)) => Kind::I16,
            ('i', Some(4)) => Kind::I32,
            ('i', Some(8)) | ('M', Some(8)) | ('m', Some(8)) => Kind::I64,
            ('u', Some(1)) => Kind::U8,
            ('u', Some(2)) => Kind::U16,
            ('u', Some(4)) => Kind::U32,
            ('u', Some(8)) => Kind::U64,
            ('f', Some(4)) => Kind::F32,
            ('f', Some(8)) => Kind::F64,
            ('S', Some(n)) if n == itemsize => Kind::Bytes(n),
            _ => Kind::Opaque(itemsize),
        };
        if !little || k.itemsize() != itemsize {
            Kind::Opaque(itemsize)
        } else {
            k
        }
    }

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        match self {
            Kind::Bool | Kind::I8 | Kind::U8 => 1,
            Kind::I16 | Kind::U16 => 2,
            Kind::I32 | Kind::U32 | Kind::F32 => 4,
            Kind::I64 | Kind::U64 | Kind::F64 => 8,
            Kind::Bytes(n) | Kind::Opaque(n) => n,
        }
    }

    /// Whether queries compute with it (and it carries statistics).
    pub fn is_numeric(self) -> bool {
        !matches!(self, Kind::Bytes(_) | Kind::Opaque(_))
    }

    pub fn is_float(self) -> bool {
        matches!(self, Kind::F32 | Kind::F64)
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn numpy_strings() {
        assert_eq!(Kind::from_numpy("<f8", 8), Kind::F64);
        assert_eq!(Kind::from_numpy("|b1", 1), Kind::Bool);
        assert_eq!(Kind::from_numpy("<M8[s]", 8), Kind::I64);
        assert_eq!(Kind::from_numpy("|u1", 1), Kind::U8);
        assert_eq!(Kind::from_numpy("|S5", 5), Kind::Bytes(5));
        assert_eq!(Kind::from_numpy("<U3", 12), Kind::Opaque(12));
        assert_eq!(Kind::from_numpy(">i4", 4), Kind::Opaque(4));
        assert_eq!(Kind::from_numpy("<i4", 8), Kind::Opaque(8));
    }
}
