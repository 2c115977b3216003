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

/// Append to `out` the index chunk of `nentries` entries made of `blocks` (each from
/// [`encode_index_block`], in order): header, bstarts, blocks.
pub(crate) fn assemble_index(out: &mut Vec<u8>, nentries: usize, blocks: &[&[u8]]) {
    let data0 = 32 + 4 * blocks.len();
    let total = data0 + blocks.iter().map(|b| b.len()).sum::<usize>();
    out.reserve(total);
    out.extend_from_slice(&index_chunk_header(nentries * 8, total));
    let mut pos = data0;
    for b in blocks {
        out.extend_from_slice(&(pos as i32).to_le_bytes());
        pos += b.len();
    }
    for b in blocks {
        out.extend_from_slice(b);
    }
}

/// Compress the index values into an index chunk.
pub fn encode_index(offsets: &[i64]) -> Result<Vec<u8>> {
    let raw: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    oxblosc_chunk::compress(&raw, &index_cparams()).map_err(|source| Error::Chunk { chunk: ChunkId::Index, source })
}

/// Raw bytes of one index block (up to 2048 entries).
pub(crate) const INDEX_BLOCKSIZE: usize = 16 * 1024;

/// Encode one block of index entries (`raw` = up to 16 KiB of little-endian i64) as it sits
/// inside an index chunk: `i32 csize` + stream (NEVER_SPLIT: one stream per block). Blocks of
/// a Blosc2 chunk are independent, so an index chunk can be assembled from blocks encoded at
/// different times ([`index_chunk_header`] + bstarts + these bytes).
pub(crate) fn encode_index_block(raw: &[u8]) -> Result<Vec<u8>> {
    debug_assert!(raw.len().is_multiple_of(8) && !raw.is_empty() && raw.len() <= INDEX_BLOCKSIZE);
    let wrap = |source| Error::Chunk { chunk: ChunkId::Index, source };
    let c = oxblosc_chunk::compress(raw, &index_cparams()).map_err(wrap)?;
    let h = oxblosc_chunk::ChunkHeader::parse(&c).map_err(wrap)?;
    let normal = !h.is_memcpyed()
        && h.special().map_err(wrap)? == SpecialKind::None
        && h.nblocks() == 1
        && h.blocksize == raw.len()
        && c[2] == template()[2];
    if normal {
        let b0 = i32::from_le_bytes(c[32..36].try_into().expect("4 bytes")) as usize;
        if b0 == 36 && b0 < h.cbytes {
            return Ok(c[b0..h.cbytes].to_vec());
        }
    }
    // Stored uncompressed: a stream whose size equals the block size holds the filtered
    // (shuffled) bytes as they are.
    let mut out = Vec::with_capacity(4 + raw.len());
    out.extend_from_slice(&(raw.len() as i32).to_le_bytes());
    let mut sh = vec![0u8; raw.len()];
    oxblosc_chunk::filter::shuffle::shuffle(8, raw, &mut sh);
    out.extend_from_slice(&sh);
    Ok(out)
}

/// Header of an index chunk compressed with [`index_cparams`] (a full 16 KiB block).
fn template() -> &'static [u8; 32] {
    static T: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let raw: Vec<u8> = (0..2048i64).flat_map(|i| (i * 4099 + i % 7).to_le_bytes()).collect();
        let c = oxblosc_chunk::compress(&raw, &index_cparams()).expect("index template compresses");
        c[..32].try_into().expect("32-byte header")
    })
}

/// The 32-byte header of an index chunk of `nbytes` (entries x 8) and `cbytes` assembled from
/// [`encode_index_block`] blocks.
pub(crate) fn index_chunk_header(nbytes: usize, cbytes: usize) -> [u8; 32] {
    let mut h = *template();
    h[4..8].copy_from_slice(&(nbytes as i32).to_le_bytes());
    h[8..12].copy_from_slice(&(nbytes.min(INDEX_BLOCKSIZE) as i32).to_le_bytes());
    h[12..16].copy_from_slice(&(cbytes as i32).to_le_bytes());
    h
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
    let to_i64 = |b: &[u8]| i64::from_le_bytes(b.try_into().expect("8 bytes"));
    if h.typesize == 8 && !h.is_vlblocks() {
        // Block by block, so the only large allocation is the result.
        let step = (h.blocksize / 8).max(1);
        let mut out = Vec::with_capacity(nchunks);
        let mut raw = vec![0u8; step.min(nchunks) * 8];
        let mut i = 0;
        while i < nchunks {
            let k = step.min(nchunks - i);
            oxblosc_chunk::getitem(chunk, i, k, &mut raw[..k * 8]).map_err(wrap)?;
            out.extend(raw[..k * 8].chunks_exact(8).map(to_i64));
            i += k;
        }
        Ok(out)
    } else {
        let raw = oxblosc_chunk::decompress(chunk, &DParams { nthreads: 1 }).map_err(wrap)?;
        Ok(raw.chunks_exact(8).take(nchunks).map(to_i64).collect())
    }
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

    #[test]
    fn assembled_index_decodes() {
        for n in [1usize, 2, 5, 2047, 2048, 2049, 5000, 6144] {
            let offs: Vec<i64> = (0..n as i64)
                .map(|i| if i % 5 == 3 { special_offset(SpecialKind::Zeros) } else { i * 4100 + i % 13 })
                .collect();
            let raw: Vec<u8> = offs.iter().flat_map(|o| o.to_le_bytes()).collect();
            let blocks: Vec<Vec<u8>> = raw.chunks(INDEX_BLOCKSIZE).map(|b| encode_index_block(b).unwrap()).collect();
            // Leave a gap after bstarts, as the frame writer does.
            let nb = blocks.len();
            let data0 = 32 + 4 * (nb + 3);
            let total = data0 + blocks.iter().map(Vec::len).sum::<usize>();
            let mut c = index_chunk_header(raw.len(), total).to_vec();
            let mut pos = data0;
            for b in &blocks {
                c.extend_from_slice(&(pos as i32).to_le_bytes());
                pos += b.len();
            }
            c.resize(data0, 0);
            for b in &blocks {
                c.extend_from_slice(b);
            }
            assert_eq!(decode_index(&c, n).unwrap(), offs, "n = {n}");
            let all = oxblosc_chunk::decompress(&c, &DParams { nthreads: 1 }).unwrap();
            assert_eq!(all, raw);
        }
    }
}
