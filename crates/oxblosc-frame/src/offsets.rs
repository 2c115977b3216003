//! The offsets index chunk and special offsets (format spec 4.5, Traps 28, 30).
//!
//! The index is a normal Blosc2 chunk holding `nchunks` little-endian i64 values, compressed
//! as C-Blosc2's append path does: typesize 8, BloscLZ, clevel 5, shuffle, blocksize 16 KiB,
//! NEVER_SPLIT (our BloscLZ is byte-exact, so the index bytes match C's single-threaded output).
//! A non-negative value is a position (cframe: relative to the end of the header; sframe: a
//! chunk file id); a negative one is a special chunk whose kind sits in the top byte.

use oxblosc_chunk::{CParams, DParams, SpecialKind, SplitMode};

use crate::error::ChunkId;
use crate::{Error, Result};

/// What an entry of the offsets index stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offset {
    /// Stored chunk: position (cframe, relative to the end of the header) or file id (sframe).
    Stored(u64),
    /// A chunk that is not stored: zeros, NaN or uninitialised.
    Special(SpecialKind),
}

/// Encode a special kind as an offset value (`0x80 | kind` in the most significant byte).
pub fn special_offset(kind: SpecialKind) -> i64 {
    i64::from_le_bytes([0, 0, 0, 0, 0, 0, 0, 0x80 | kind as u8])
}

impl Offset {
    pub fn encode(self) -> i64 {
        match self {
            Offset::Stored(o) => o as i64,
            Offset::Special(k) => special_offset(k),
        }
    }

    /// Classify an index value; `nchunk` only feeds the error.
    pub fn decode(v: i64, nchunk: usize) -> Result<Offset> {
        if v >= 0 {
            return Ok(Offset::Stored(v as u64));
        }
        let b = v.to_le_bytes();
        let kind = match b[7] {
            0x81 => SpecialKind::Zeros,
            0x82 => SpecialKind::Nan,
            0x84 => SpecialKind::Uninit,
            other => {
                return Err(Error::BadChunk {
                    chunk: nchunk,
                    offset: 0,
                    reason: format!("offsets index entry 0x{v:016X} has reserved special kind byte 0x{other:02X}"),
                })
            }
        };
        Ok(Offset::Special(kind))
    }
}

/// The cparams C-Blosc2 uses for the offsets index.
pub fn index_cparams() -> CParams {
    CParams {
        codec: 0,
        clevel: 5,
        typesize: 8,
        nthreads: 1,
        blocksize: 16 * 1024,
        splitmode: SplitMode::Never,
        filters: [0, 0, 0, 0, 0, 1],
        ..CParams::default()
    }
}

/// Compress the index values into an index chunk.
pub fn encode_index(offsets: &[i64]) -> Result<Vec<u8>> {
    let raw: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    oxblosc_chunk::compress(&raw, &index_cparams()).map_err(|source| Error::Chunk { chunk: ChunkId::Index, source })
}

/// Decode an index chunk holding at least `nchunks` entries (C reads the first `nchunks`).
pub fn decode_index(chunk: &[u8], nchunks: usize) -> Result<Vec<i64>> {
    let wrap = |source| Error::Chunk { chunk: ChunkId::Index, source };
    let n = oxblosc_chunk::decompressed_len(chunk).map_err(wrap)?;
    if n % 8 != 0 || n / 8 < nchunks {
        return Err(Error::BadChunk {
            chunk: nchunks,
            offset: 0,
            reason: format!("offsets index holds {n} bytes, {nchunks} chunks need {}", nchunks * 8),
        });
    }
    // Decode only the entries needed: C-Blosc2's fill_special writes the index as a
    // repeated-value chunk, which may claim more entries than the frame uses.
    let h = oxblosc_chunk::ChunkHeader::parse(chunk).map_err(wrap)?;
    let raw = if h.typesize == 8 && !h.is_vlblocks() {
        let mut raw = vec![0u8; nchunks * 8];
        oxblosc_chunk::getitem(chunk, 0, nchunks, &mut raw).map_err(wrap)?;
        raw
    } else {
        oxblosc_chunk::decompress(chunk, &DParams { nthreads: 1 }).map_err(wrap)?
    };
    Ok(raw.chunks_exact(8).take(nchunks).map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes"))).collect())
}

/// Number of index entries the index chunk itself holds (for variable-size frames).
pub fn index_len(chunk: &[u8]) -> Result<usize> {
    let n = oxblosc_chunk::decompressed_len(chunk).map_err(|source| Error::Chunk { chunk: ChunkId::Index, source })?;
    Ok(n / 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_offsets() {
        assert_eq!(special_offset(SpecialKind::Zeros) as u64, 0x8100_0000_0000_0000);
        assert_eq!(Offset::decode(special_offset(SpecialKind::Nan), 0).unwrap(), Offset::Special(SpecialKind::Nan));
        assert!(Offset::decode(i64::from_le_bytes([0, 0, 0, 0, 0, 0, 0, 0x83]), 0).is_err());
        let idx = encode_index(&[0, 100, special_offset(SpecialKind::Uninit)]).unwrap();
        assert_eq!(decode_index(&idx, 3).unwrap()[2], special_offset(SpecialKind::Uninit));
        assert!(decode_index(&idx, 4).is_err());
    }
}
