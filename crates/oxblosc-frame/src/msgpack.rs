//! The msgpack subset frames need (format spec 4.2-4.6), plus a general bounded decoder for
//! displaying vlmetalayer contents.
//!
//! Written by hand, no crate: the frame writer must emit *fixed-width* markers at fixed
//! offsets (`0xD2` int32 for `header_len` even when it fits a fixint, `0xCF` uint64 for
//! `frame_len`, `0xDE`/`0xDC` 16-bit map/array counts, `0xC6` bin32) so fields can be
//! patched in place, which a general encoder such as `rmp` does not help with; and the reader
//! must treat every byte as hostile (every read checks the remaining length, container lengths
//! are checked against the bytes left before anything is allocated, nesting is limited to
//! [`MAX_DEPTH`]), which is a few dozen lines either way. Keeping it here also keeps the frame
//! layer's dependency list to the chunk crate and `thiserror`.
//!
//! msgpack integers are big-endian. Error offsets are absolute: the reader is created with the
//! position of its buffer inside the frame.

use crate::{Error, Result};

/// Deepest container nesting [`Reader::value`] accepts.
pub const MAX_DEPTH: usize = 64;

/// A decoded msgpack value (for display and for python-blosc2-style vlmeta payloads).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    /// Negative integers (and non-negative ones that were encoded signed fit here too).
    Int(i64),
    /// Non-negative integers as written with unsigned markers.
    UInt(u64),
    F32(f32),
    F64(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    /// Extension type: (type code, data). python-blosc2 uses 42 (embedded cframe) and 43.
    Ext(i8, Vec<u8>),
}

/// A bounded cursor over msgpack bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    /// `base` = where `buf` starts inside the frame (for error offsets).
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// Position inside `buf`.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Absolute offset of the cursor (base + pos).
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn err(&self, reason: impl Into<String>) -> Error {
        Error::Msgpack { offset: self.offset(), reason: reason.into() }
    }

    /// Take `n` bytes.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what,
                offset: self.offset(),
                need: n as u64,
                have: self.remaining() as u64,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn be<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Require the marker byte `m` (the field name goes into the error).
    pub fn marker(&mut self, m: u8, field: &'static str) -> Result<()> {
        let at = self.offset();
        let got = self.u8(field)?;
        if got != m {
            return Err(Error::field(field, at, format!("expected msgpack marker 0x{m:02X}, found 0x{got:02X}")));
        }
        Ok(())
    }

    /// `0xD2` + i32 BE.
    pub fn i32_field(&mut self, field: &'static str) -> Result<i32> {
        self.marker(0xD2, field)?;
        Ok(i32::from_be_bytes(self.be(field)?))
    }

    /// `0xCD` + u16 BE.
    pub fn u16_field(&mut self, field: &'static str) -> Result<u16> {
        self.marker(0xCD, field)?;
        Ok(u16::from_be_bytes(self.be(field)?))
    }

    /// `0xDE` (map16) or `0xDC` (array16) + u16 BE count.
    pub fn count16(&mut self, m: u8, field: &'static str) -> Result<usize> {
        self.marker(m, field)?;
        Ok(u16::from_be_bytes(self.be(field)?) as usize)
    }

    /// A fixstr (`0xA0 | len`, len < 32).
    pub fn fixstr(&mut self, field: &'static str) -> Result<String> {
        let at = self.offset();
        let m = self.u8(field)?;
        if m & 0xE0 != 0xA0 {
            return Err(Error::field(field, at, format!("expected a fixstr (0xA0..0xBF), found 0x{m:02X}")));
        }
        let s = self.take(usize::from(m & 0x1F), field)?;
        String::from_utf8(s.to_vec()).map_err(|_| Error::field(field, at, "name is not UTF-8"))
    }

    /// `0xC6` + u32 BE length + bytes.
    pub fn bin32(&mut self, field: &'static str) -> Result<&'a [u8]> {
        self.marker(0xC6, field)?;
        let n = u32::from_be_bytes(self.be(field)?) as usize;
        self.take(n, field)
    }

    /// Decode one general msgpack value.
    pub fn value(&mut self) -> Result<Value> {
        self.value_at(0)
    }

    fn len_checked(&mut self, n: usize, min_each: usize) -> Result<usize> {
        if n.saturating_mul(min_each) > self.remaining() {
            return Err(self.err(format!("container of {n} elements cannot fit in {} bytes", self.remaining())));
        }
        Ok(n)
    }

    fn len_of<const N: usize>(&mut self) -> Result<usize> {
        let b: [u8; N] = self.be("length")?;
        Ok(b.iter().fold(0usize, |acc, &x| (acc << 8) | usize::from(x)))
    }

    fn value_at(&mut self, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        let at = self.offset();
        let m = self.u8("msgpack value")?;
        Ok(match m {
            0x00..=0x7F => Value::UInt(m.into()),
            0xE0..=0xFF => Value::Int(i64::from(m as i8)),
            0x80..=0x8F => self.map(usize::from(m & 0x0F), depth)?,
            0x90..=0x9F => self.array(usize::from(m & 0x0F), depth)?,
            0xA0..=0xBF => self.str(usize::from(m & 0x1F), at)?,
            0xC0 => Value::Nil,
            0xC2 => Value::Bool(false),
            0xC3 => Value::Bool(true),
            0xC4 => {
                let n = self.len_of::<1>()?;
                Value::Bin(self.take(n, "bin")?.to_vec())
            }
            0xC5 => {
                let n = self.len_of::<2>()?;
                Value::Bin(self.take(n, "bin")?.to_vec())
            }
            0xC6 => {
                let n = self.len_of::<4>()?;
                Value::Bin(self.take(n, "bin")?.to_vec())
            }
            0xC7 => {
                let n = self.len_of::<1>()?;
                self.ext(n)?
            }
            0xC8 => {
                let n = self.len_of::<2>()?;
                self.ext(n)?
            }
            0xC9 => {
                let n = self.len_of::<4>()?;
                self.ext(n)?
            }
            0xCA => Value::F32(f32::from_be_bytes(self.be("float32")?)),
            0xCB => Value::F64(f64::from_be_bytes(self.be("float64")?)),
            0xCC => Value::UInt(self.u8("uint8")?.into()),
            0xCD => Value::UInt(u16::from_be_bytes(self.be("uint16")?).into()),
            0xCE => Value::UInt(u32::from_be_bytes(self.be("uint32")?).into()),
            0xCF => Value::UInt(u64::from_be_bytes(self.be("uint64")?)),
            0xD0 => Value::Int(i8::from_be_bytes(self.be("int8")?).into()),
            0xD1 => Value::Int(i16::from_be_bytes(self.be("int16")?).into()),
            0xD2 => Value::Int(i32::from_be_bytes(self.be("int32")?).into()),
            0xD3 => Value::Int(i64::from_be_bytes(self.be("int64")?)),
            0xD4 => self.ext(1)?,
            0xD5 => self.ext(2)?,
            0xD6 => self.ext(4)?,
            0xD7 => self.ext(8)?,
            0xD8 => self.ext(16)?,
            0xD9 => {
                let n = self.len_of::<1>()?;
                self.str(n, at)?
            }
            0xDA => {
                let n = self.len_of::<2>()?;
                self.str(n, at)?
            }
            0xDB => {
                let n = self.len_of::<4>()?;
                self.str(n, at)?
            }
            0xDC => {
                let n = self.len_of::<2>()?;
                self.array(n, depth)?
            }
            0xDD => {
                let n = self.len_of::<4>()?;
                self.array(n, depth)?
            }
            0xDE => {
                let n = self.len_of::<2>()?;
                self.map(n, depth)?
            }
            0xDF => {
                let n = self.len_of::<4>()?;
                self.map(n, depth)?
            }
            0xC1 => return Err(Error::Msgpack { offset: at, reason: "0xC1 is never used".into() }),
        })
    }

    fn str(&mut self, n: usize, at: u64) -> Result<Value> {
        let s = self.take(n, "str")?;
        String::from_utf8(s.to_vec())
            .map(Value::Str)
            .map_err(|_| Error::Msgpack { offset: at, reason: "str is not UTF-8".into() })
    }

    fn ext(&mut self, n: usize) -> Result<Value> {
        let t = self.u8("ext type")? as i8;
        Ok(Value::Ext(t, self.take(n, "ext data")?.to_vec()))
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value> {
        let n = self.len_checked(n, 1)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.value_at(depth + 1)?);
        }
        Ok(Value::Array(v))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value> {
        let n = self.len_checked(n, 2)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.value_at(depth + 1)?;
            v.push((k, self.value_at(depth + 1)?));
        }
        Ok(Value::Map(v))
    }
}

/// Decode exactly one value filling `buf`.
pub fn decode(buf: &[u8]) -> Result<Value> {
    let mut r = Reader::new(buf, 0);
    let v = r.value()?;
    if r.remaining() != 0 {
        return Err(Error::Msgpack { offset: r.pos() as u64, reason: format!("{} trailing bytes", r.remaining()) });
    }
    Ok(v)
}

// ---- fixed-width writers used by the frame header and trailer ----

pub fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.push(0xD1);
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.push(0xD2);
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.push(0xD3);
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.push(0xCF);
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.push(0xCE);
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.push(0xCD);
    out.extend_from_slice(&v.to_be_bytes());
}

/// fixstr; the caller guarantees `s.len() < 32`.
pub fn put_fixstr(out: &mut Vec<u8>, s: &[u8]) {
    debug_assert!(s.len() < 32);
    out.push(0xA0 | s.len() as u8);
    out.extend_from_slice(s);
}

pub fn put_bin32(out: &mut Vec<u8>, b: &[u8]) {
    out.push(0xC6);
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

// ---- general compact encoder (what msgpack-python writes with use_bin_type=True) ----

/// Encode `v` with the smallest markers, as msgpack-python does.
pub fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Nil => out.push(0xC0),
        Value::Bool(b) => out.push(if *b { 0xC3 } else { 0xC2 }),
        Value::UInt(u) => encode_uint(*u, out),
        Value::Int(i) if *i >= 0 => encode_uint(*i as u64, out),
        Value::Int(i) => {
            let i = *i;
            if i >= -32 {
                out.push(i as i8 as u8);
            } else if i >= i8::MIN.into() {
                out.push(0xD0);
                out.push(i as i8 as u8);
            } else if i >= i16::MIN.into() {
                out.push(0xD1);
                out.extend_from_slice(&(i as i16).to_be_bytes());
            } else if i >= i32::MIN.into() {
                out.push(0xD2);
                out.extend_from_slice(&(i as i32).to_be_bytes());
            } else {
                out.push(0xD3);
                out.extend_from_slice(&i.to_be_bytes());
            }
        }
        Value::F32(f) => {
            out.push(0xCA);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Value::F64(f) => {
            out.push(0xCB);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Value::Str(s) => {
            let n = s.len();
            if n < 32 {
                out.push(0xA0 | n as u8);
            } else {
                encode_len(n, [0xD9, 0xDA, 0xDB], out);
            }
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bin(b) => {
            encode_len(b.len(), [0xC4, 0xC5, 0xC6], out);
            out.extend_from_slice(b);
        }
        Value::Array(a) => {
            if a.len() < 16 {
                out.push(0x90 | a.len() as u8);
            } else {
                encode_len16(a.len(), [0xDC, 0xDD], out);
            }
            for x in a {
                encode(x, out);
            }
        }
        Value::Map(m) => {
            if m.len() < 16 {
                out.push(0x80 | m.len() as u8);
            } else {
                encode_len16(m.len(), [0xDE, 0xDF], out);
            }
            for (k, x) in m {
                encode(k, out);
                encode(x, out);
            }
        }
        Value::Ext(t, d) => {
            match d.len() {
                1 => out.push(0xD4),
                2 => out.push(0xD5),
                4 => out.push(0xD6),
                8 => out.push(0xD7),
                16 => out.push(0xD8),
                n => encode_len(n, [0xC7, 0xC8, 0xC9], out),
            }
            out.push(*t as u8);
            out.extend_from_slice(d);
        }
    }
}

fn encode_uint(u: u64, out: &mut Vec<u8>) {
    if u < 128 {
        out.push(u as u8);
    } else if u <= u8::MAX.into() {
        out.push(0xCC);
        out.push(u as u8);
    } else if u <= u16::MAX.into() {
        out.push(0xCD);
        out.extend_from_slice(&(u as u16).to_be_bytes());
    } else if u <= u32::MAX.into() {
        out.push(0xCE);
        out.extend_from_slice(&(u as u32).to_be_bytes());
    } else {
        out.push(0xCF);
        out.extend_from_slice(&u.to_be_bytes());
    }
}

fn encode_len(n: usize, markers: [u8; 3], out: &mut Vec<u8>) {
    if n <= u8::MAX.into() {
        out.push(markers[0]);
        out.push(n as u8);
    } else if n <= u16::MAX.into() {
        out.push(markers[1]);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(markers[2]);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_len16(n: usize, markers: [u8; 2], out: &mut Vec<u8>) {
    if n <= u16::MAX.into() {
        out.push(markers[0]);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(markers[1]);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_general_values() {
        let v = Value::Map(vec![
            (Value::Str("a".into()), Value::Array(vec![Value::UInt(1), Value::Int(-200), Value::F64(1.5)])),
            (Value::Str("b".repeat(40)), Value::Bin(vec![7; 300])),
            (Value::Nil, Value::Ext(42, vec![1, 2, 3])),
            (Value::Bool(true), Value::UInt(1 << 40)),
        ]);
        let mut out = Vec::new();
        encode(&v, &mut out);
        assert_eq!(decode(&out).unwrap(), v);
    }

    #[test]
    fn python_style_bytes() {
        // msgpack.packb("v") and packb(b"abc") with use_bin_type=True.
        assert_eq!(decode(&[0xA1, b'v']).unwrap(), Value::Str("v".into()));
        assert_eq!(decode(&[0xC4, 3, b'a', b'b', b'c']).unwrap(), Value::Bin(b"abc".to_vec()));
    }

    #[test]
    fn hostile_input_errors() {
        // Huge declared lengths, deep nesting, truncation: errors, no allocation or panic.
        assert!(decode(&[0xDD, 0xFF, 0xFF, 0xFF, 0xFF]).is_err());
        assert!(decode(&[0xDF, 0xFF, 0xFF, 0xFF, 0xFF, 0]).is_err());
        assert!(decode(&[0xC6, 0xFF, 0xFF, 0xFF, 0xFF]).is_err());
        assert!(decode(&[0x91; 200]).is_err());
        for n in 0..9 {
            assert!(decode(&[0xCB, 0, 0, 0, 0, 0, 0, 0, 0][..n]).is_err());
        }
        assert!(decode(&[0xC1]).is_err());
    }
}
