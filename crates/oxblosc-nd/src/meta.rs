//! The `b2nd` metalayer: shape, chunk shape, block shape and NumPy dtype string, msgpack-
//! encoded with fixed integer widths (format spec 5.1, Traps 35-36).
//!
//! Writing follows the spec byte for byte (what python-blosc2 and C-Blosc2 write). Reading is
//! strict about what matters (ndim, the integer markers, lengths, the dtype string) and
//! tolerant where C-Blosc2 is: the array length and version bytes are not trusted, the dtype
//! pair is optional, and the legacy `caterva` metalayer (five entries, no dtype) is accepted.
//! Geometry checks (products, zero sizes) live in [`crate::geometry`].

use crate::{Error, Result};

/// Most dimensions a b2nd array can have (`B2ND_MAX_DIM` since c-blosc2 2.21.3).
pub const MAX_DIM: usize = 16;
/// Longest dtype string accepted (a structured dtype with a few thousand fields still fits;
/// a lying length cannot make us copy more than this).
pub const MAX_DTYPE_LEN: usize = 1 << 16;
/// Name of the metalayer, and of its legacy predecessor.
pub const NAME: &str = "b2nd";
pub const LEGACY_NAME: &str = "caterva";

/// Decoded `b2nd` metalayer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub shape: Vec<i64>,
    pub chunkshape: Vec<i32>,
    pub blockshape: Vec<i32>,
    /// 0 = NumPy dtype string (the only format defined).
    pub dtype_format: u8,
    /// The NumPy dtype string (e.g. `<f8`, `|S5`, `[('a', '<i4')]`); None for metalayers
    /// without one (legacy `caterva`, early b2nd).
    pub dtype: Option<String>,
}

impl Meta {
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The metalayer bytes exactly as C-Blosc2 and python-blosc2 write them.
    pub fn encode(&self) -> Vec<u8> {
        let n = self.shape.len();
        let dtype = self.dtype.as_deref().unwrap_or("|u1").as_bytes();
        let mut out = Vec::with_capacity(3 + (1 + 9 * n) + 2 * (1 + 5 * n) + 6 + dtype.len());
        out.extend_from_slice(&[0x97, 0x00, n as u8, 0x90 + n as u8]);
        for &s in &self.shape {
            out.push(0xD3);
            out.extend_from_slice(&s.to_be_bytes());
        }
        for shape in [&self.chunkshape, &self.blockshape] {
            out.push(0x90 + n as u8);
            for &s in shape {
                out.push(0xD2);
                out.extend_from_slice(&s.to_be_bytes());
            }
        }
        out.push(self.dtype_format);
        out.push(0xDB);
        out.extend_from_slice(&(dtype.len() as u32).to_be_bytes());
        out.extend_from_slice(dtype);
        out
    }

    /// Parse metalayer bytes (either `b2nd` or legacy `caterva` content).
    pub fn decode(buf: &[u8]) -> Result<Meta> {
        let mut r = Cursor { buf, pos: 0 };
        let head = r.u8("array header")?;
        if !(0x95..=0x97).contains(&head) {
            return Err(r.err_at(0, "array header", format!("{head:#04x} is not a msgpack fixarray of 5 to 7")));
        }
        let version = r.u8("version")?;
        if version > 0x7F {
            return Err(r.err_at(1, "version", format!("{version:#04x} is not a positive fixint")));
        }
        let ndim = usize::from(r.u8("ndim")?);
        if ndim > MAX_DIM {
            return Err(r.err_at(2, "ndim", format!("{ndim} exceeds the maximum of {MAX_DIM} dimensions")));
        }
        r.array_header(ndim, "shape")?;
        let shape = (0..ndim).map(|_| r.int(0xD3, 8, "shape")).collect::<Result<Vec<i64>>>()?;
        r.array_header(ndim, "chunkshape")?;
        let chunkshape = (0..ndim).map(|_| r.int(0xD2, 4, "chunkshape").map(|v| v as i32)).collect::<Result<_>>()?;
        r.array_header(ndim, "blockshape")?;
        let blockshape = (0..ndim).map(|_| r.int(0xD2, 4, "blockshape").map(|v| v as i32)).collect::<Result<_>>()?;
        let mut meta = Meta { shape, chunkshape, blockshape, dtype_format: 0, dtype: None };
        if r.pos == buf.len() || head == 0x95 {
            return Ok(meta);
        }
        let at = r.pos;
        meta.dtype_format = r.u8("dtype format")?;
        if meta.dtype_format != 0 {
            return Err(r.err_at(
                at,
                "dtype format",
                format!("{} is not 0 (NumPy dtype string, the only format defined)", meta.dtype_format),
            ));
        }
        let at = r.pos;
        let len = match r.u8("dtype")? {
            m @ 0xA0..=0xBF => usize::from(m - 0xA0),
            0xD9 => usize::from(r.u8("dtype length")?),
            0xDA => r.uint(2, "dtype length")? as usize,
            0xDB => r.uint(4, "dtype length")? as usize,
            m => return Err(r.err_at(at, "dtype", format!("marker {m:#04x} is not a msgpack string"))),
        };
        if len > MAX_DTYPE_LEN {
            return Err(r.err_at(at, "dtype", format!("length {len} exceeds the limit of {MAX_DTYPE_LEN} bytes")));
        }
        let bytes = r.take(len, "dtype")?;
        let s = std::str::from_utf8(bytes).map_err(|_| r.err_at(at, "dtype", "not valid UTF-8".into()))?;
        check_dtype(s).map_err(|reason| r.err_at(at, "dtype", format!("{s:.80?}: {reason}")))?;
        meta.dtype = Some(s.to_owned());
        Ok(meta)
    }
}

/// A light syntactic check of a NumPy dtype string: a simple type (`<f8`, `|S5`, `<M8[ns]`,
/// `bool`) or a Python literal list/tuple description (`[('a', '<i4'), ...]`) with balanced
/// brackets and quotes and no control characters. The Python layer does the full parse.
pub fn check_dtype(s: &str) -> std::result::Result<(), String> {
    if s.is_empty() {
        return Err("empty".into());
    }
    if s.chars().any(|c| c.is_control()) {
        return Err("contains control characters".into());
    }
    if s.starts_with('[') || s.starts_with('(') || s.starts_with('{') {
        return check_balanced(s);
    }
    let body = s.strip_prefix(['<', '>', '|', '=']).unwrap_or(s);
    let (name, unit) = match body.find('[') {
        Some(i) => (&body[..i], Some(&body[i..])),
        None => (body, None),
    };
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '?') {
        return Err("not a NumPy type code".into());
    }
    if !name[1..].chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err("not a NumPy type code".into());
    }
    if let Some(u) = unit {
        let inner = u.strip_prefix('[').and_then(|u| u.strip_suffix(']'));
        if !inner.is_some_and(|i| !i.is_empty() && i.chars().all(|c| c.is_ascii_alphanumeric())) {
            return Err("bad unit suffix (expected e.g. [ns])".into());
        }
    }
    Ok(())
}

fn check_balanced(s: &str) -> std::result::Result<(), String> {
    let mut stack = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' | '(' | '{' => {
                if stack.len() >= 64 {
                    return Err("nested more than 64 levels".into());
                }
                stack.push(c);
            }
            ']' | ')' | '}' => {
                let open = match c {
                    ']' => '[',
                    ')' => '(',
                    _ => '{',
                };
                if stack.pop() != Some(open) {
                    return Err(format!("unbalanced {c:?}"));
                }
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err("unterminated quote".into());
    }
    if !stack.is_empty() {
        return Err("unclosed bracket".into());
    }
    Ok(())
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn err_at(&self, offset: usize, field: &'static str, reason: String) -> Error {
        Error::Meta { field, offset, reason }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8]> {
        let have = self.buf.len() - self.pos;
        if n > have {
            return Err(self.err_at(self.pos, field, format!("needs {n} bytes, metalayer has {have} left")));
        }
        let buf: &'a [u8] = self.buf;
        let s = &buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8> {
        Ok(self.take(1, field)?[0])
    }

    fn uint(&mut self, width: usize, field: &'static str) -> Result<u64> {
        Ok(self.take(width, field)?.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn array_header(&mut self, ndim: usize, field: &'static str) -> Result<()> {
        let at = self.pos;
        let m = self.u8(field)?;
        if usize::from(m) != 0x90 + ndim {
            return Err(self.err_at(at, field, format!("array marker {m:#04x}, expected {:#04x}", 0x90 + ndim)));
        }
        Ok(())
    }

    /// A signed big-endian integer with exactly this marker and width.
    fn int(&mut self, marker: u8, width: usize, field: &'static str) -> Result<i64> {
        let at = self.pos;
        let m = self.u8(field)?;
        if m != marker {
            return Err(self.err_at(at, field, format!("integer marker {m:#04x}, expected {marker:#04x}")));
        }
        let v = self.uint(width, field)?;
        Ok(if width == 8 { v as i64 } else { i64::from(v as u32 as i32) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_bytes() {
        let m = Meta {
            shape: vec![400, 3],
            chunkshape: vec![110, 3],
            blockshape: vec![57, 3],
            dtype_format: 0,
            dtype: Some("|u1".into()),
        };
        let mut expect = vec![0x97, 0x00, 0x02, 0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0x01, 0x90, 0xd3, 0, 0, 0, 0, 0, 0, 0, 3];
        expect.extend_from_slice(&[
            0x92, 0xd2, 0, 0, 0, 0x6e, 0xd2, 0, 0, 0, 3, 0x92, 0xd2, 0, 0, 0, 0x39, 0xd2, 0, 0, 0, 3,
        ]);
        expect.extend_from_slice(&[0x00, 0xdb, 0, 0, 0, 3, b'|', b'u', b'1']);
        assert_eq!(m.encode(), expect);
        assert_eq!(Meta::decode(&expect).unwrap(), m);
    }

    #[test]
    fn legacy_caterva_without_dtype() {
        let m = Meta { shape: vec![5], chunkshape: vec![2], blockshape: vec![1], dtype_format: 0, dtype: None };
        let mut b = m.encode();
        b.truncate(b.len() - 9);
        b[0] = 0x95;
        assert_eq!(Meta::decode(&b).unwrap(), m);
    }

    #[test]
    fn dtype_syntax() {
        for ok in ["<f8", "|b1", "<M8[ns]", ">m8[s]", "|S5", "<U3", "[('a', '<i4'), ('b', [('c', '<f8')])]", "|V16"] {
            assert!(check_dtype(ok).is_ok(), "{ok}");
        }
        for bad in ["", "<", "<8f", "<M8[", "<M8[n s]", "[('a', '<i4')", "[('a, '<i4')]", "a\u{1}b", "f8)"] {
            assert!(check_dtype(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_metalayers_are_refused() {
        let good =
            Meta { shape: vec![4, 4], chunkshape: vec![2, 2], blockshape: vec![1, 1], dtype_format: 0, dtype: None }
                .encode();
        // Every truncation is an error, never a panic (except cutting exactly before the
        // optional dtype pair).
        for n in (0..good.len()).filter(|&n| n != good.len() - 9) {
            assert!(Meta::decode(&good[..n]).is_err(), "truncated at {n}");
        }
        let mut b = good.clone();
        b[2] = 17;
        let e = Meta::decode(&b).unwrap_err().to_string();
        assert!(e.contains("ndim") && e.contains("17"), "{e}");
        let mut b = good.clone();
        b[4] = 0xD2;
        assert!(Meta::decode(&b).unwrap_err().to_string().contains("shape"));
        let mut b = good.clone();
        let at = b.len() - 7;
        b[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = Meta::decode(&b).unwrap_err().to_string();
        assert!(e.contains("exceeds the limit"), "{e}");
        let mut b = good.clone();
        let at = b.len() - 3;
        b[at] = b'#';
        assert!(Meta::decode(&b).unwrap_err().to_string().contains("dtype"));
        let mut b = good;
        let at = b.len() - 9;
        b[at] = 1;
        assert!(Meta::decode(&b).unwrap_err().to_string().contains("dtype format"));
    }
}
