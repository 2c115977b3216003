//! The frame trailer: vlmetalayers, trailer length and (empty) fingerprint (format spec 4.6).
//!
//! Offsets of vlmetalayer contents are relative to the **trailer start** and `idx_size` is
//! counted from the `0xCD` byte (Traps 27, 29; the header counts from `0x93`). Contents are
//! compressed Blosc2 chunks of the user bytes; this module moves them as opaque bytes.

use crate::header::{MAX_METALAYERS, MAX_NAME_LEN};
use crate::msgpack::{self, Reader};
use crate::{Error, Result};

/// Bytes from the end of the frame that hold `0xCE trailer_len 0xD8 type fingerprint[16]`.
pub const TAIL_LEN: usize = 23;
/// Trailer without vlmetalayers.
pub const MIN_TRAILER_LEN: usize = 35;
/// Smallest trailer_len C-Blosc2 accepts.
pub const TRAILER_MINLEN: u64 = 25;

/// Read `trailer_len` from the last [`TAIL_LEN`] bytes of a frame of `frame_len` bytes whose
/// header is `header_len` long.
pub fn trailer_len(tail: &[u8], frame_len: u64, header_len: u64) -> Result<u64> {
    let at = frame_len.saturating_sub(TAIL_LEN as u64);
    if tail.len() < TAIL_LEN || frame_len < TAIL_LEN as u64 {
        return Err(Error::Truncated { what: "trailer", offset: at, need: TAIL_LEN as u64, have: tail.len() as u64 });
    }
    let t = &tail[tail.len() - TAIL_LEN..];
    if t[0] != 0xCE {
        return Err(Error::field("trailer_len marker", at, format!("expected 0xCE, found 0x{:02X}", t[0])));
    }
    let len = u64::from(u32::from_be_bytes([t[1], t[2], t[3], t[4]]));
    if len < TRAILER_MINLEN || len > frame_len.saturating_sub(header_len) {
        return Err(Error::field(
            "trailer_len",
            at + 1,
            format!("{len} is not in {TRAILER_MINLEN}..={}", frame_len.saturating_sub(header_len)),
        ));
    }
    if t[5] != 0xD8 {
        return Err(Error::field("fingerprint marker", at + 5, format!("expected 0xD8, found 0x{:02X}", t[5])));
    }
    Ok(len)
}

/// Parse the trailer (`trailer` = exactly its bytes, `start` = its frame offset): the
/// vlmetalayers as (name, compressed content).
pub fn parse(trailer: &[u8], start: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let mut r = Reader::new(trailer, start);
    r.marker(0x94, "trailer array marker")?;
    let at = r.offset();
    let version = r.u8("trailer version")?;
    if version > 0x7F {
        return Err(Error::field("trailer version", at, format!("0x{version:02X} is not a positive fixint")));
    }
    r.marker(0x93, "vlmetalayers array marker")?;
    r.u16_field("vlmetalayers idx_size")?;
    let at = r.offset();
    let n = r.count16(0xDE, "vlmetalayers map")?;
    if n > MAX_METALAYERS {
        return Err(Error::field("vlmetalayers count", at, format!("{n} exceeds {MAX_METALAYERS}")));
    }
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.fixstr("vlmetalayer name")?;
        debug_assert!(name.len() <= MAX_NAME_LEN);
        let at = r.offset();
        let off = r.i32_field("vlmetalayer offset")?;
        if off < 0 || off as u64 + 5 > trailer.len() as u64 {
            return Err(Error::field(
                "vlmetalayer offset",
                at,
                format!("{off} is outside the trailer ({} bytes)", trailer.len()),
            ));
        }
        names.push((name, off as usize));
    }
    let at = r.offset();
    let m = r.count16(0xDC, "vlmetalayers contents")?;
    if m != n {
        return Err(Error::field("vlmetalayers contents", at, format!("{m} contents for {n} names")));
    }
    let mut out = Vec::with_capacity(n);
    for (name, off) in names {
        let mut c = Reader::new(&trailer[off..], start + off as u64);
        out.push((name, c.bin32("vlmetalayer content")?.to_vec()));
    }
    Ok(out)
}

/// Write a trailer holding these vlmetalayers (name, compressed content).
pub fn write(vlmetas: &[(String, Vec<u8>)]) -> Vec<u8> {
    let idx_size = 3 + 3 + vlmetas.iter().map(|(n, _)| 1 + n.len() + 5).sum::<usize>();
    let len = 3 + idx_size + 3 + vlmetas.iter().map(|(_, c)| 5 + c.len()).sum::<usize>() + TAIL_LEN;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&[0x94, 0x01, 0x93]);
    msgpack::put_u16(&mut out, idx_size as u16);
    out.push(0xDE);
    out.extend_from_slice(&(vlmetas.len() as u16).to_be_bytes());
    let mut pos = 3 + idx_size + 3;
    for (name, content) in vlmetas {
        msgpack::put_fixstr(&mut out, name.as_bytes());
        msgpack::put_i32(&mut out, pos as i32);
        pos += 5 + content.len();
    }
    out.push(0xDC);
    out.extend_from_slice(&(vlmetas.len() as u16).to_be_bytes());
    for (_, content) in vlmetas {
        msgpack::put_bin32(&mut out, content);
    }
    msgpack::put_u32(&mut out, len as u32);
    out.push(0xD8);
    out.push(0); // fingerprint kind: none
    out.extend_from_slice(&[0u8; 16]);
    debug_assert_eq!(out.len(), len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_trailer_bytes() {
        let t = write(&[]);
        assert_eq!(t.len(), MIN_TRAILER_LEN);
        assert_eq!(&t[..19], &[0x94, 1, 0x93, 0xCD, 0, 6, 0xDE, 0, 0, 0xDC, 0, 0, 0xCE, 0, 0, 0, 0x23, 0xD8, 0]);
        assert_eq!(trailer_len(&t, 200, 97).unwrap(), 35);
        assert!(parse(&t, 0).unwrap().is_empty());
    }

    #[test]
    fn vlmeta_offsets_relative_to_trailer() {
        let metas = vec![("k".to_string(), vec![9u8; 34])];
        let t = write(&metas);
        // python-blosc2 4.14: idx_size 13, content at trailer offset 19, trailer_len 0x51.
        assert_eq!(&t[3..6], &[0xCD, 0, 13]);
        assert_eq!(&t[11..16], &[0xD2, 0, 0, 0, 19]);
        assert_eq!(t.len(), 0x51);
        assert_eq!(parse(&t, 500).unwrap(), metas);
    }
}
