//! The 16-byte (Blosc1) and 32-byte (Blosc2 extended) chunk header: parse, validate, write.
//!
//! Parsing validates every field against the buffer it came from, so later stages can index
//! without re-checking sizes (format spec 1.2-1.8, 1.13, Traps 5-11).

use super::{
    blosc2_flags, codec_format, codec_id, flags, version, EXT_HEADER_LEN, FLAGS2_VLBLOCKS, MAX_BLOCKSIZE,
    MAX_BUFFERSIZE, MIN_HEADER_LEN,
};
use crate::{Error, Result};

/// What a special chunk stands for (`blosc2_flags` bits 4-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialKind {
    None = 0,
    Zeros = 1,
    Nan = 2,
    Value = 3,
    Uninit = 4,
}

impl SpecialKind {
    fn from_bits(bits: u8) -> Result<Self> {
        Ok(match bits {
            0 => SpecialKind::None,
            1 => SpecialKind::Zeros,
            2 => SpecialKind::Nan,
            3 => SpecialKind::Value,
            4 => SpecialKind::Uninit,
            other => {
                return Err(Error::InvalidHeader {
                    field: "special kind",
                    value: other.into(),
                    reason: "reserved value",
                })
            }
        })
    }
}

/// A parsed and validated chunk header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkHeader {
    pub version: u8,
    pub versionlz: u8,
    pub flags: u8,
    /// Typesize byte of the header (1 when the real typesize exceeds 255).
    pub typesize: u8,
    pub nbytes: usize,
    /// Block size, clamped to `nbytes`; for VL-block chunks the number of blocks.
    pub blocksize: usize,
    pub cbytes: usize,
    /// Filter pipeline, slot 0 runs first on compression.
    pub filters: [u8; 6],
    pub filters_meta: [u8; 6],
    pub udcompcode: u8,
    pub compcode_meta: u8,
    pub flags2: u8,
    pub blosc2_flags: u8,
}

fn read_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

fn non_negative(field: &'static str, value: i32) -> Result<usize> {
    usize::try_from(value).map_err(|_| Error::InvalidHeader { field, value: value.into(), reason: "negative" })
}

impl ChunkHeader {
    /// Parse the header at the start of `buf` and check it against `buf.len()`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = Self::parse_head(buf)?;
        if h.cbytes > buf.len() {
            return Err(Error::Truncated { what: "chunk (cbytes)", offset: 0, need: h.cbytes, have: buf.len() });
        }
        Ok(h)
    }

    /// Parse and check a header from the chunk's first bytes only (32 suffice), without
    /// requiring the `cbytes` the header announces to be at hand: for describing a stored
    /// chunk without reading it.
    pub fn parse_head(buf: &[u8]) -> Result<Self> {
        if buf.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated { what: "chunk header", offset: 0, need: MIN_HEADER_LEN, have: buf.len() });
        }
        let ver = buf[0];
        if ver == 0 || ver > version::MAX_KNOWN {
            return Err(Error::UnsupportedVersion(ver));
        }
        let fl = buf[2];
        let nbytes = non_negative("nbytes", read_i32(buf, 4))?;
        let raw_blocksize = non_negative("blocksize", read_i32(buf, 8))?;
        let cbytes = non_negative("cbytes", read_i32(buf, 12))?;
        let mut h = ChunkHeader {
            version: ver,
            versionlz: buf[1],
            flags: fl,
            typesize: buf[3],
            nbytes,
            blocksize: raw_blocksize,
            cbytes,
            filters: [0; 6],
            filters_meta: [0; 6],
            udcompcode: 0,
            compcode_meta: 0,
            flags2: 0,
            blosc2_flags: 0,
        };
        if h.is_extended() {
            if buf.len() < EXT_HEADER_LEN {
                return Err(Error::Truncated {
                    what: "extended chunk header",
                    offset: 0,
                    need: EXT_HEADER_LEN,
                    have: buf.len(),
                });
            }
            h.filters.copy_from_slice(&buf[16..22]);
            h.udcompcode = buf[22];
            h.compcode_meta = buf[23];
            h.filters_meta.copy_from_slice(&buf[24..30]);
            h.flags2 = buf[30];
            h.blosc2_flags = buf[31];
            if ver == version::BLOSC2_ALPHA {
                // Alphas left the sixth slot uninitialised.
                h.filters[5] = 0;
                h.filters_meta[5] = 0;
            }
        } else {
            h.filters = legacy_filters(fl);
        }
        h.validate()?;
        Ok(h)
    }

    fn validate(&mut self) -> Result<()> {
        let hlen = self.header_len();
        if self.nbytes > MAX_BUFFERSIZE {
            return Err(Error::InvalidHeader {
                field: "nbytes",
                value: self.nbytes as i64,
                reason: "larger than the 2147483615-byte chunk limit",
            });
        }
        if self.cbytes < hlen {
            return Err(Error::InvalidHeader {
                field: "cbytes",
                value: self.cbytes as i64,
                reason: "smaller than the header",
            });
        }
        if self.typesize == 0 {
            return Err(Error::InvalidHeader { field: "typesize", value: 0, reason: "must be at least 1" });
        }
        if self.blosc2_flags & blosc2_flags::LAZY != 0 {
            return Err(Error::InvalidHeader {
                field: "blosc2_flags",
                value: self.blosc2_flags.into(),
                reason: "lazy chunks exist only in memory",
            });
        }
        if self.blosc2_flags & blosc2_flags::INSTRUMENTED != 0 {
            return Err(Error::InvalidHeader {
                field: "blosc2_flags",
                value: self.blosc2_flags.into(),
                reason: "instrumented chunks hold statistics, not data",
            });
        }
        if self.flags2 & !FLAGS2_VLBLOCKS != 0 {
            return Err(Error::InvalidHeader {
                field: "blosc2_flags2",
                value: self.flags2.into(),
                reason: "unknown bits set",
            });
        }
        let special = self.special()?;
        if special != SpecialKind::None {
            return self.validate_special(special);
        }
        if self.is_memcpyed() {
            if self.cbytes != self.nbytes + hlen {
                return Err(Error::InvalidHeader {
                    field: "cbytes",
                    value: self.cbytes as i64,
                    reason: "memcpyed chunk must be nbytes + header length",
                });
            }
            return Ok(());
        }
        if self.nbytes == 0 {
            // Empty chunk; the blocksize field is arbitrary.
            return Ok(());
        }
        if self.is_vlblocks() {
            let nblocks = self.blocksize;
            if nblocks == 0 || nblocks > self.nbytes {
                return Err(Error::InvalidHeader {
                    field: "nblocks",
                    value: nblocks as i64,
                    reason: "VL-block chunk needs 1..=nbytes blocks",
                });
            }
        } else {
            if self.blocksize == 0 || self.blocksize > MAX_BLOCKSIZE {
                return Err(Error::InvalidHeader {
                    field: "blocksize",
                    value: self.blocksize as i64,
                    reason: "must be in 1..=536866816",
                });
            }
            self.blocksize = self.blocksize.min(self.nbytes);
        }
        let bstarts_end = hlen + 4 * self.nblocks();
        if bstarts_end > self.cbytes {
            return Err(Error::Truncated { what: "block starts", offset: hlen, need: bstarts_end, have: self.cbytes });
        }
        self.compcode()?;
        Ok(())
    }

    fn validate_special(&self, kind: SpecialKind) -> Result<()> {
        let ts = usize::from(self.typesize);
        match kind {
            SpecialKind::Nan if ts != 4 && ts != 8 => Err(Error::InvalidHeader {
                field: "typesize",
                value: ts as i64,
                reason: "NaN chunks need typesize 4 or 8",
            }),
            SpecialKind::Nan if !self.nbytes.is_multiple_of(ts) => Err(Error::InvalidHeader {
                field: "nbytes",
                value: self.nbytes as i64,
                reason: "not a multiple of typesize",
            }),
            SpecialKind::Value => {
                let width = self.cbytes - EXT_HEADER_LEN;
                if width == 0 || !self.nbytes.is_multiple_of(width) {
                    return Err(Error::InvalidHeader {
                        field: "cbytes",
                        value: self.cbytes as i64,
                        reason: "repeated value width must divide nbytes",
                    });
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Bits 0 and 2 of `flags` both set: 32-byte header.
    pub fn is_extended(&self) -> bool {
        self.flags & flags::EXTENDED == flags::EXTENDED
    }

    pub fn header_len(&self) -> usize {
        if self.is_extended() {
            EXT_HEADER_LEN
        } else {
            MIN_HEADER_LEN
        }
    }

    pub fn is_memcpyed(&self) -> bool {
        self.flags & flags::MEMCPYED != 0
    }

    pub fn is_vlblocks(&self) -> bool {
        self.flags2 & FLAGS2_VLBLOCKS != 0
    }

    pub fn uses_dict(&self) -> bool {
        self.blosc2_flags & blosc2_flags::USE_DICT != 0
    }

    pub fn dont_split(&self) -> bool {
        self.flags & flags::DONT_SPLIT != 0
    }

    /// The special-value kind of the chunk.
    pub fn special(&self) -> Result<SpecialKind> {
        SpecialKind::from_bits((self.blosc2_flags & blosc2_flags::SPECIAL_MASK) >> 4)
    }

    /// The codec (compcode) of the streams, derived from the format code in `flags`.
    pub fn compcode(&self) -> Result<u8> {
        match self.flags >> flags::CODEC_SHIFT {
            codec_format::BLOSCLZ => Ok(codec_id::BLOSCLZ),
            // lz4 and lz4hc share one stream format.
            codec_format::LZ4 => Ok(codec_id::LZ4),
            codec_format::ZLIB => Ok(codec_id::ZLIB),
            codec_format::ZSTD => Ok(codec_id::ZSTD),
            // Plugin codecs: the real id is in the extended header; the registry decides.
            codec_format::USER if self.is_extended() => Ok(self.udcompcode),
            codec_format::SNAPPY => Err(Error::UnknownCodec { id: 3 }),
            other => Err(Error::UnknownCodec { id: other }),
        }
    }

    /// Number of blocks (0 for empty, memcpyed and special chunks).
    pub fn nblocks(&self) -> usize {
        if self.nbytes == 0 || self.is_memcpyed() || self.blosc2_flags & blosc2_flags::SPECIAL_MASK != 0 {
            0
        } else if self.is_vlblocks() {
            self.blocksize
        } else {
            self.nbytes.div_ceil(self.blocksize)
        }
    }

    /// Size of block `i` (fixed-size blocks only).
    pub fn block_len(&self, i: usize) -> usize {
        let start = i * self.blocksize;
        self.blocksize.min(self.nbytes - start)
    }

    /// Serialise into the first 16 or 32 bytes of `out`.
    pub fn write(&self, out: &mut [u8]) {
        out[0] = self.version;
        out[1] = self.versionlz;
        out[2] = self.flags;
        out[3] = self.typesize;
        out[4..8].copy_from_slice(&(self.nbytes as i32).to_le_bytes());
        out[8..12].copy_from_slice(&(self.blocksize as i32).to_le_bytes());
        out[12..16].copy_from_slice(&(self.cbytes as i32).to_le_bytes());
        if self.is_extended() {
            out[16..22].copy_from_slice(&self.filters);
            out[22] = self.udcompcode;
            out[23] = self.compcode_meta;
            out[24..30].copy_from_slice(&self.filters_meta);
            out[30] = self.flags2;
            out[31] = self.blosc2_flags;
        }
    }
}

/// Pipeline implied by a 16-byte header's flag bits (shuffle/bitshuffle in slot 5, delta in 4).
fn legacy_filters(fl: u8) -> [u8; 6] {
    let mut f = [0u8; 6];
    if fl & flags::SHUFFLE != 0 {
        f[5] = crate::filter::SHUFFLE;
    } else if fl & flags::BITSHUFFLE != 0 {
        f[5] = crate::filter::BITSHUFFLE;
    }
    if fl & flags::DELTA != 0 {
        f[4] = crate::filter::DELTA;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(nbytes: i32, blocksize: i32, cbytes: i32) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[0] = 5;
        b[1] = 1;
        b[2] = 0x05;
        b[3] = 4;
        b[4..8].copy_from_slice(&nbytes.to_le_bytes());
        b[8..12].copy_from_slice(&blocksize.to_le_bytes());
        b[12..16].copy_from_slice(&cbytes.to_le_bytes());
        b
    }

    #[test]
    fn rejects_short_and_lying_headers() {
        assert!(matches!(ChunkHeader::parse(&[5; 10]), Err(Error::Truncated { .. })));
        assert!(matches!(ChunkHeader::parse(&ext(-1, 4, 32)), Err(Error::InvalidHeader { field: "nbytes", .. })));
        assert!(matches!(ChunkHeader::parse(&ext(100, 4, 64)), Err(Error::Truncated { .. })));
        assert!(matches!(ChunkHeader::parse(&ext(100, 0, 32)), Err(Error::InvalidHeader { field: "blocksize", .. })));
        let mut v = ext(0, 1, 32);
        v[0] = 9;
        assert_eq!(ChunkHeader::parse(&v), Err(Error::UnsupportedVersion(9)));
    }

    #[test]
    fn special_zero_and_clamp() {
        let mut z = ext(1 << 30, 4096, 32);
        z[31] = 0x10;
        let h = ChunkHeader::parse(&z).unwrap();
        assert_eq!(h.special().unwrap(), SpecialKind::Zeros);
        assert_eq!(h.nblocks(), 0);
        let mut c = ext(10, 4096, 32 + 4 + 4 + 10);
        c.resize(50, 0);
        let h = ChunkHeader::parse(&c).unwrap();
        assert_eq!(h.blocksize, 10);
        assert_eq!(h.nblocks(), 1);
    }
}
