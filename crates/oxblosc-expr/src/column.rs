//! Typed column views (`ColumnRef`, `ColumnMut`) and owned columns (`Column`).
//!
//! One enum variant per element type, so a kernel picks its typed loop once per block.

use crate::dtype::{DType, Scalar};
use crate::error::{ErrorKind, ExprError};

macro_rules! numeric_variants {
    ($mac:ident) => {
        $mac! {
            Bool bool, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64, F32 f32, F64 f64
        }
    };
}
pub(crate) use numeric_variants;

macro_rules! def_columns {
    ($($v:ident $t:ty),*) => {
        /// A borrowed column (one block of it, or all of it). Fixed-width bytes hold
        /// `width` bytes per row.
        #[derive(Clone, Copy, Debug)]
        pub enum ColumnRef<'a> {
            $($v(&'a [$t]),)*
            Bytes { width: usize, data: &'a [u8] },
        }

        /// A mutable column view the result is written into.
        #[derive(Debug)]
        pub enum ColumnMut<'a> {
            $($v(&'a mut [$t]),)*
            Bytes { width: usize, data: &'a mut [u8] },
        }

        /// An owned column.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Column {
            $($v(Vec<$t>),)*
            Bytes { width: usize, data: Vec<u8> },
        }

        impl<'a> ColumnRef<'a> {
            pub fn dtype(&self) -> DType {
                match self { $(ColumnRef::$v(_) => DType::$v,)* ColumnRef::Bytes { width, .. } => DType::Bytes(*width) }
            }
            /// Number of rows.
            pub fn len(&self) -> usize {
                match self { $(ColumnRef::$v(s) => s.len(),)* ColumnRef::Bytes { width, data } => data.len() / (*width).max(1) }
            }
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Rows `start..end`.
            pub fn slice(&self, start: usize, end: usize) -> ColumnRef<'a> {
                match *self {
                    $(ColumnRef::$v(s) => ColumnRef::$v(&s[start..end]),)*
                    ColumnRef::Bytes { width, data } => ColumnRef::Bytes { width, data: &data[start * width..end * width] },
                }
            }
            /// The raw bytes (native endianness).
            pub fn as_bytes(&self) -> &'a [u8] {
                match *self { $(ColumnRef::$v(s) => crate::cast::bytes_of(s),)* ColumnRef::Bytes { data, .. } => data }
            }
            /// Row `i` as a scalar (`None` for bytes or out of range).
            pub fn get(&self, i: usize) -> Option<Scalar> {
                use crate::kernels::Elem;
                match self { $(ColumnRef::$v(s) => s.get(i).map(|x| x.to_scalar()),)* ColumnRef::Bytes { .. } => None }
            }
        }

        impl<'a> ColumnMut<'a> {
            pub fn dtype(&self) -> DType {
                match self { $(ColumnMut::$v(_) => DType::$v,)* ColumnMut::Bytes { width, .. } => DType::Bytes(*width) }
            }
            pub fn len(&self) -> usize {
                match self { $(ColumnMut::$v(s) => s.len(),)* ColumnMut::Bytes { width, data } => data.len() / (*width).max(1) }
            }
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Rows `start..end`, reborrowed.
            pub fn slice_mut(&mut self, start: usize, end: usize) -> ColumnMut<'_> {
                match self {
                    $(ColumnMut::$v(s) => ColumnMut::$v(&mut s[start..end]),)*
                    ColumnMut::Bytes { width, data } => ColumnMut::Bytes { width: *width, data: &mut data[start * *width..end * *width] },
                }
            }
            /// Split into consecutive pieces of `rows` rows (the last may be shorter).
            pub fn into_chunks(self, rows: usize) -> Vec<ColumnMut<'a>> {
                let rows = rows.max(1);
                match self {
                    $(ColumnMut::$v(s) => s.chunks_mut(rows).map(ColumnMut::$v).collect(),)*
                    ColumnMut::Bytes { width, data } => {
                        data.chunks_mut(rows * width.max(1)).map(|d| ColumnMut::Bytes { width, data: d }).collect()
                    }
                }
            }
        }

        impl Column {
            /// `len` rows of zeros (false, 0, 0.0, empty bytes).
            pub fn zeros(dtype: DType, len: usize) -> Column {
                match dtype {
                    $(DType::$v => Column::$v(vec![<$t>::default(); len]),)*
                    DType::Bytes(w) => Column::Bytes { width: w, data: vec![0; w * len] },
                }
            }
            pub fn dtype(&self) -> DType {
                self.as_ref().dtype()
            }
            pub fn len(&self) -> usize {
                self.as_ref().len()
            }
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            pub fn as_ref(&self) -> ColumnRef<'_> {
                match self { $(Column::$v(v) => ColumnRef::$v(v),)* Column::Bytes { width, data } => ColumnRef::Bytes { width: *width, data } }
            }
            pub fn as_mut(&mut self) -> ColumnMut<'_> {
                match self {
                    $(Column::$v(v) => ColumnMut::$v(v),)*
                    Column::Bytes { width, data } => ColumnMut::Bytes { width: *width, data },
                }
            }
            /// Make this a `dtype` column of `len` rows, reusing its allocation when the
            /// type matches (contents unspecified).
            pub fn reset(&mut self, dtype: DType, len: usize) {
                match (self, dtype) {
                    $((Column::$v(v), DType::$v) => v.resize(len, <$t>::default()),)*
                    (Column::Bytes { width, data }, DType::Bytes(w)) if *width == w => data.resize(w * len, 0),
                    (me, _) => *me = Column::zeros(dtype, len),
                }
            }
        }
    };
}
numeric_variants!(def_columns);

impl<'a> ColumnRef<'a> {
    /// View native-endian bytes as a `dtype` column. Fails when the length is not a multiple
    /// of the item size, the buffer is not aligned for the type, or a bool byte is not 0/1.
    pub fn from_bytes(dtype: DType, bytes: &'a [u8]) -> Result<ColumnRef<'a>, ExprError> {
        let bad = |why: &str| ExprError::new(ErrorKind::Input, format!("{} bytes as {dtype}: {why}", bytes.len()));
        if dtype.itemsize() == 0 || !bytes.len().is_multiple_of(dtype.itemsize()) {
            return Err(bad("not a whole number of items"));
        }
        macro_rules! cast {
            ($v:ident) => {
                crate::cast::cast_slice(bytes).map(ColumnRef::$v).ok_or_else(|| bad("buffer not aligned for the type"))
            };
        }
        match dtype {
            DType::Bool => crate::cast::bools(bytes).map(ColumnRef::Bool).map_err(|i| {
                ExprError::new(ErrorKind::Input, format!("bool column holds byte {} at row {i} (not 0 or 1)", bytes[i]))
            }),
            DType::I8 => cast!(I8),
            DType::I16 => cast!(I16),
            DType::I32 => cast!(I32),
            DType::I64 => cast!(I64),
            DType::U8 => cast!(U8),
            DType::U16 => cast!(U16),
            DType::U32 => cast!(U32),
            DType::U64 => cast!(U64),
            DType::F32 => cast!(F32),
            DType::F64 => cast!(F64),
            DType::Bytes(width) => Ok(ColumnRef::Bytes { width, data: bytes }),
        }
    }
}

impl<'a> ColumnMut<'a> {
    /// View native-endian bytes as a writable `dtype` column (bool bytes are zeroed first).
    /// Fails on a length that is not a multiple of the item size or a misaligned buffer.
    pub fn from_bytes(dtype: DType, bytes: &'a mut [u8]) -> Result<ColumnMut<'a>, ExprError> {
        let n = bytes.len();
        let bad = |why: &str| ExprError::new(ErrorKind::Input, format!("{n} output bytes as {dtype}: {why}"));
        if dtype.itemsize() == 0 || !n.is_multiple_of(dtype.itemsize()) {
            return Err(bad("not a whole number of items"));
        }
        macro_rules! cast {
            ($v:ident) => {
                crate::cast::cast_slice_mut(bytes)
                    .map(ColumnMut::$v)
                    .ok_or_else(|| bad("buffer not aligned for the type"))
            };
        }
        match dtype {
            DType::Bool => Ok(ColumnMut::Bool(crate::cast::bools_mut(bytes))),
            DType::I8 => cast!(I8),
            DType::I16 => cast!(I16),
            DType::I32 => cast!(I32),
            DType::I64 => cast!(I64),
            DType::U8 => cast!(U8),
            DType::U16 => cast!(U16),
            DType::U32 => cast!(U32),
            DType::U64 => cast!(U64),
            DType::F32 => cast!(F32),
            DType::F64 => cast!(F64),
            DType::Bytes(width) => Ok(ColumnMut::Bytes { width, data: bytes }),
        }
    }
}
