//! The frame header: 87-byte fixed part and the metalayers section (format spec 4.2-4.4, 4.7).
//!
//! Positions are relative to the frame start. Metalayer offsets are absolute within the frame
//! and point at each content's `0xC6` byte (Trap 27); the section's `idx_size` is counted from
//! the `0x93` byte (Trap 29) and is written but not trusted on reading (we parse by counts).

use crate::msgpack::{self, Reader};
use crate::{Error, Result};

/// Size of the fixed part of the header.
pub const FIXED_LEN: usize = 87;
/// Smallest possible header (fixed part + empty metalayers section).
pub const MIN_HEADER_LEN: usize = 97;
/// `b2frame\0`.
pub const MAGIC: &[u8; 8] = b"b2frame\0";
/// Most metalayers (and vlmetalayers) a frame holds.
pub const MAX_METALAYERS: usize = 16;
/// Metalayer names are fixstrs shorter than this.
pub const MAX_NAME_LEN: usize = 31;
/// Highest frame format version we read (and write).
pub const MAX_VERSION: u8 = 3;

/// general_flags bits.
pub mod gflags {
    pub const VERSION_MASK: u8 = 0x0F;
    /// Offsets width code 1 (64-bit), the only one ever written.
    pub const OFFSETS_64: u8 = 0x10;
    pub const VARIABLE_CHUNKS: u8 = 0x40;
    pub const VLBLOCKS: u8 = 0x80;
}

/// Frame type low nibble.
pub const FRAME_CONTIGUOUS: u8 = 0;
pub const FRAME_SPARSE: u8 = 1;

/// The fixed part of the frame header, field by field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameHeader {
    pub header_len: u32,
    pub frame_len: u64,
    pub general_flags: u8,
    pub frame_type: u8,
    pub codec_flags: u8,
    pub other_flags: u8,
    pub nbytes: i64,
    pub cbytes: i64,
    pub typesize: i32,
    pub blocksize: i32,
    pub chunksize: i32,
    pub cthreads: i16,
    pub dthreads: i16,
    pub has_vlmeta: bool,
    pub filters: [u8; 6],
    pub udcodec: u8,
    pub compcode_meta: u8,
    pub filters_meta: [u8; 6],
    pub other_flags2: u8,
}

impl FrameHeader {
    /// Frame format version (general_flags bits 0-3).
    pub fn version(&self) -> u8 {
        self.general_flags & gflags::VERSION_MASK
    }

    /// Compcode for new chunks (codec_flags low nibble, 6 = look in byte 77).
    pub fn compcode(&self) -> u8 {
        match self.codec_flags & 0x0F {
            6 => self.udcodec,
            c => c,
        }
    }

    pub fn clevel(&self) -> u8 {
        self.codec_flags >> 4
    }

    /// Split mode id (1..=4) from other_flags bits 0-1.
    pub fn splitmode(&self) -> u8 {
        (self.other_flags & 0x03) + 1
    }

    pub fn is_sparse(&self) -> bool {
        self.frame_type & 0x0F == FRAME_SPARSE
    }

    /// Parse and check the fixed part; `avail` = bytes of frame actually present (file or
    /// buffer length from the frame start), which `frame_len` must not exceed.
    pub fn parse(buf: &[u8], avail: u64) -> Result<Self> {
        if buf.len() < FIXED_LEN {
            return Err(Error::Truncated {
                what: "frame header",
                offset: 0,
                need: FIXED_LEN as u64,
                have: buf.len() as u64,
            });
        }
        let mut r = Reader::new(&buf[..FIXED_LEN], 0);
        r.marker(0x9E, "header array marker")?;
        r.marker(0xA8, "magic marker")?;
        if r.take(8, "magic")? != MAGIC {
            return Err(Error::field("magic", 2, "not \"b2frame\\0\": this is not a Blosc2 frame"));
        }
        let header_len = r.i32_field("header_len")?;
        r.marker(0xCF, "frame_len")?;
        let frame_len = u64::from_be_bytes(r.take(8, "frame_len")?.try_into().expect("8 bytes"));
        r.marker(0xA4, "flags marker")?;
        let fl = r.take(4, "flags")?;
        let (general_flags, frame_type, codec_flags, other_flags) = (fl[0], fl[1], fl[2], fl[3]);
        r.marker(0xD3, "nbytes")?;
        let nbytes = i64::from_be_bytes(r.take(8, "nbytes")?.try_into().expect("8 bytes"));
        r.marker(0xD3, "cbytes")?;
        let cbytes = i64::from_be_bytes(r.take(8, "cbytes")?.try_into().expect("8 bytes"));
        let typesize = r.i32_field("typesize")?;
        let blocksize = r.i32_field("blocksize")?;
        let chunksize = r.i32_field("chunksize")?;
        r.marker(0xD1, "cthreads")?;
        let cthreads = i16::from_be_bytes(r.take(2, "cthreads")?.try_into().expect("2 bytes"));
        r.marker(0xD1, "dthreads")?;
        let dthreads = i16::from_be_bytes(r.take(2, "dthreads")?.try_into().expect("2 bytes"));
        let at = r.offset();
        let has_vlmeta = match r.u8("has_vlmeta")? {
            0xC3 => true,
            0xC2 => false,
            m => return Err(Error::field("has_vlmeta", at, format!("expected 0xC2/0xC3, found 0x{m:02X}"))),
        };
        r.marker(0xD8, "filters ext marker")?;
        let at = r.offset();
        let nfilters = r.u8("nfilters")?;
        if nfilters > 6 {
            return Err(Error::field("nfilters", at, format!("{nfilters} exceeds 6")));
        }
        let ext = r.take(16, "filters")?;
        let mut filters = [0u8; 6];
        filters.copy_from_slice(&ext[0..6]);
        let mut filters_meta = [0u8; 6];
        filters_meta.copy_from_slice(&ext[8..14]);
        let h = FrameHeader {
            header_len: header_len as u32,
            frame_len,
            general_flags,
            frame_type,
            codec_flags,
            other_flags,
            nbytes,
            cbytes,
            typesize,
            blocksize,
            chunksize,
            cthreads,
            dthreads,
            has_vlmeta,
            filters,
            udcodec: ext[6],
            compcode_meta: ext[7],
            filters_meta,
            other_flags2: ext[14],
        };
        // Checks of spec 4.7.
        if h.version() == 0 || h.version() > MAX_VERSION {
            return Err(Error::field(
                "general_flags",
                25,
                format!("frame format version {} is not 1..=3", h.version()),
            ));
        }
        if (general_flags >> 4) & 0x03 != 1 {
            return Err(Error::field("general_flags", 25, "offsets width is not 64-bit"));
        }
        if frame_type & 0x0F > FRAME_SPARSE {
            return Err(Error::field("frame_type", 26, format!("{} is reserved", frame_type & 0x0F)));
        }
        if header_len < MIN_HEADER_LEN as i32 || u64::from(header_len as u32) > frame_len {
            return Err(Error::field("header_len", 11, format!("{header_len} is not in 97..=frame_len ({frame_len})")));
        }
        if frame_len > avail {
            return Err(Error::Truncated { what: "frame (frame_len)", offset: 0, need: frame_len, have: avail });
        }
        if nbytes < 0 {
            return Err(Error::field("nbytes", 30, format!("{nbytes} is negative")));
        }
        if cbytes < 0 {
            return Err(Error::field("cbytes", 39, format!("{cbytes} is negative")));
        }
        if typesize <= 0 {
            return Err(Error::field("typesize", 48, format!("{typesize} is not positive")));
        }
        if blocksize < 0 {
            return Err(Error::field("blocksize", 53, format!("{blocksize} is negative")));
        }
        if chunksize < -1 {
            return Err(Error::field("chunksize", 58, format!("{chunksize} is below -1")));
        }
        if chunksize == -1 && nbytes > 0 {
            return Err(Error::field("chunksize", 58, "frame holds data but no chunk size"));
        }
        Ok(h)
    }

    /// Write the 87-byte fixed part.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(0x9E);
        out.push(0xA8);
        out.extend_from_slice(MAGIC);
        msgpack::put_i32(out, self.header_len as i32);
        msgpack::put_u64(out, self.frame_len);
        out.push(0xA4);
        out.extend_from_slice(&[self.general_flags, self.frame_type, self.codec_flags, self.other_flags]);
        msgpack::put_i64(out, self.nbytes);
        msgpack::put_i64(out, self.cbytes);
        msgpack::put_i32(out, self.typesize);
        msgpack::put_i32(out, self.blocksize);
        msgpack::put_i32(out, self.chunksize);
        msgpack::put_i16(out, self.cthreads);
        msgpack::put_i16(out, self.dthreads);
        out.push(if self.has_vlmeta { 0xC3 } else { 0xC2 });
        out.push(0xD8);
        out.push(6);
        out.extend_from_slice(&self.filters);
        out.push(self.udcodec);
        out.push(self.compcode_meta);
        out.extend_from_slice(&self.filters_meta);
        out.push(self.other_flags2);
        out.push(0);
    }

    /// Overwrite the fields that change as chunks come and go in an already written header
    /// (same layout, same length).
    pub fn patch(&self, header: &mut [u8]) {
        let mut fixed = Vec::with_capacity(FIXED_LEN);
        self.write(&mut fixed);
        header[..FIXED_LEN].copy_from_slice(&fixed);
    }
}

/// Check a metalayer / vlmetalayer name.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::param("name", format!("{name:?} must be 1 to {MAX_NAME_LEN} bytes long")));
    }
    Ok(())
}

/// Length of the metalayers section for these metalayers.
pub fn metalayers_len(metas: &[(String, Vec<u8>)]) -> usize {
    10 + metas.iter().map(|(n, c)| 1 + n.len() + 5 + 5 + c.len()).sum::<usize>()
}

/// Write a whole header: fixed part (with `header_len` set here) and metalayers.
pub fn write_header(h: &FrameHeader, metas: &[(String, Vec<u8>)]) -> Vec<u8> {
    let header_len = FIXED_LEN + metalayers_len(metas);
    let mut h = h.clone();
    h.header_len = header_len as u32;
    let mut out = Vec::with_capacity(header_len);
    h.write(&mut out);
    let idx_size = 1 + 3 + 3 + metas.iter().map(|(n, _)| 1 + n.len() + 5).sum::<usize>();
    out.push(0x93);
    msgpack::put_u16(&mut out, idx_size as u16);
    out.push(0xDE);
    out.extend_from_slice(&(metas.len() as u16).to_be_bytes());
    let mut pos = FIXED_LEN + idx_size + 3;
    for (name, content) in metas {
        msgpack::put_fixstr(&mut out, name.as_bytes());
        msgpack::put_i32(&mut out, pos as i32);
        pos += 5 + content.len();
    }
    out.push(0xDC);
    out.extend_from_slice(&(metas.len() as u16).to_be_bytes());
    for (_, content) in metas {
        msgpack::put_bin32(&mut out, content);
    }
    debug_assert_eq!(out.len(), header_len);
    out
}

/// Parse the metalayers section of a header (`header` = the first `header_len` bytes).
pub fn parse_metalayers(header: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let hlen = header.len() as u64;
    let mut r = Reader::new(&header[FIXED_LEN..], FIXED_LEN as u64);
    r.marker(0x93, "metalayers array marker")?;
    r.u16_field("metalayers idx_size")?;
    let at = r.offset();
    let n = r.count16(0xDE, "metalayers map")?;
    if n > MAX_METALAYERS {
        return Err(Error::field("metalayers count", at, format!("{n} exceeds {MAX_METALAYERS}")));
    }
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.fixstr("metalayer name")?;
        let at = r.offset();
        let off = r.i32_field("metalayer offset")?;
        if off < 0 || off as u64 + 5 > hlen {
            return Err(Error::field("metalayer offset", at, format!("{off} is outside the header ({hlen} bytes)")));
        }
        names.push((name, off as usize));
    }
    let at = r.offset();
    let m = r.count16(0xDC, "metalayers contents")?;
    if m != n {
        return Err(Error::field("metalayers contents", at, format!("{m} contents for {n} names")));
    }
    let mut out = Vec::with_capacity(n);
    for (name, off) in names {
        let mut c = Reader::new(&header[off..], off as u64);
        let content = c.bin32("metalayer content")?;
        out.push((name, content.to_vec()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FrameHeader {
        FrameHeader {
            header_len: 0,
            frame_len: 1000,
            general_flags: 0x12,
            frame_type: 0,
            codec_flags: 0x55,
            other_flags: 2,
            nbytes: 100000,
            cbytes: 96,
            typesize: 4,
            blocksize: 0,
            chunksize: 40000,
            cthreads: 0,
            dthreads: 1,
            has_vlmeta: true,
            filters: [0, 0, 0, 0, 0, 1],
            udcodec: 5,
            compcode_meta: 0,
            filters_meta: [0; 6],
            other_flags2: 0,
        }
    }

    #[test]
    fn header_round_trip_matches_python_blosc2_layout() {
        let metas = vec![("m1".to_string(), vec![0xC4, 3, b'a', b'b', b'c'])];
        let bytes = write_header(&sample(), &metas);
        assert_eq!(bytes.len(), 0x73);
        // idx_size 15, map entry m1 -> 105 (python-blosc2 4.14 writes exactly this).
        assert_eq!(&bytes[87..103], &[0x93, 0xCD, 0, 0x0F, 0xDE, 0, 1, 0xA2, b'm', b'1', 0xD2, 0, 0, 0, 0x69, 0xDC]);
        let h = FrameHeader::parse(&bytes, 1000).unwrap();
        assert_eq!(h.header_len, 0x73);
        assert_eq!(parse_metalayers(&bytes).unwrap(), metas);
        let empty = write_header(&sample(), &[]);
        assert_eq!(&empty[87..], &[0x93, 0xCD, 0, 7, 0xDE, 0, 0, 0xDC, 0, 0]);
    }

    #[test]
    fn bad_fields_name_their_offset() {
        let mut bytes = write_header(&sample(), &[]);
        bytes[3] = b'X';
        let e = FrameHeader::parse(&bytes, 1000).unwrap_err().to_string();
        assert!(e.contains("magic"), "{e}");
        let mut bytes = write_header(&sample(), &[]);
        bytes[25] = 0x14;
        assert!(FrameHeader::parse(&bytes, 1000).unwrap_err().to_string().contains("version"));
        let bytes = write_header(&sample(), &[]);
        assert!(FrameHeader::parse(&bytes, 999).is_err());
    }
}
