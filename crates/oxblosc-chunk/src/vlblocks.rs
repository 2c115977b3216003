//! Chunks with variable-length blocks (format version 6, format spec 1.12).
//!
//! Each block is one stream `[i32 uncompressed size][payload]`, the payload raw when it has the
//! block's size; the header's blocksize field holds the number of blocks. Used for batches of
//! records of different sizes (python-blosc2's `vlcompress` / BatchArray).

use crate::decompress::decompress_vl;
use crate::format::{compcode_to_format, flags, version, ChunkHeader, EXT_HEADER_LEN, FLAGS2_VLBLOCKS};
use crate::format::{MAX_BUFFERSIZE, MAX_HEADER_TYPESIZE};
use crate::parallel::{map_jobs, with_scratch};
use crate::params::{CParams, DParams};
use crate::pipeline::Pipeline;
use crate::registry::{self, CodecParams};
use crate::{filter, Error, Result};

/// Compress `blocks` (each at least one byte) into one VL-block chunk.
pub fn compress_vlblocks(blocks: &[&[u8]], cp: &CParams) -> Result<Vec<u8>> {
    cp.validate()?;
    let bad = |reason: String| Err(Error::InvalidParam { name: "blocks", reason });
    if blocks.is_empty() {
        return bad("a VL-block chunk needs at least one block".into());
    }
    if let Some(i) = blocks.iter().position(|b| b.is_empty()) {
        return bad(format!("block {i} is empty"));
    }
    let nbytes: usize = blocks.iter().map(|b| b.len()).sum();
    if nbytes > MAX_BUFFERSIZE {
        return Err(Error::InputTooLarge(nbytes));
    }
    if cp.has_filter(filter::DELTA) {
        // C-Blosc2 encodes each VL block against itself but decodes against block 0.
        return Err(Error::InvalidParam { name: "filters", reason: "DELTA is not supported with VL blocks".into() });
    }
    if cp.use_dict {
        return Err(Error::InvalidParam { name: "use_dict", reason: "not supported with VL blocks".into() });
    }
    let hts = if cp.typesize > MAX_HEADER_TYPESIZE { 1 } else { cp.typesize };
    let pipeline = Pipeline::new(&cp.filters, &cp.filters_meta, hts, false, &[])?;
    let codec = registry::codec(cp.codec)?;
    let encode = |i: usize, block: &[u8]| -> Result<Vec<u8>> {
        with_scratch(|s| {
            let filtered = pipeline.forward(block, block, i, &mut s.a, &mut s.b)?;
            let mut out = vec![0u8; 4 + block.len()];
            out[..4].copy_from_slice(&(block.len() as i32).to_le_bytes());
            let p = CodecParams {
                clevel: cp.clevel,
                meta: cp.codec_meta,
                typesize: hts,
                block: i,
                dict: None,
                blockshape: &[],
                blosc1: false,
            };
            let n = if cp.clevel == 0 {
                0
            } else {
                codec.codec.encode(&p, filtered, &mut out[4..]).map_err(|detail| Error::Encode {
                    codec: codec.name,
                    block: i,
                    detail,
                })?
            };
            let n = if n == 0 || n >= block.len() {
                out[4..].copy_from_slice(filtered);
                block.len()
            } else {
                n
            };
            out.truncate(4 + n);
            Ok(out)
        })
    };
    let encoded: Vec<Vec<u8>> = map_jobs(blocks.iter().enumerate().collect(), cp.nthreads, |(i, b)| encode(i, b))?;
    let data_start = EXT_HEADER_LEN + 4 * blocks.len();
    let cbytes = data_start + encoded.iter().map(Vec::len).sum::<usize>();
    if cbytes > i32::MAX as usize {
        return Err(Error::InputTooLarge(cbytes));
    }
    let header = ChunkHeader {
        version: version::BLOSC2_VLBLOCKS,
        versionlz: codec.codec.version(),
        flags: flags::EXTENDED | flags::DONT_SPLIT | compcode_to_format(cp.codec) << flags::CODEC_SHIFT,
        typesize: hts as u8,
        nbytes,
        blocksize: blocks.len(),
        cbytes,
        filters: cp.filters,
        filters_meta: cp.filters_meta,
        udcompcode: cp.codec,
        compcode_meta: cp.codec_meta,
        flags2: FLAGS2_VLBLOCKS,
        blosc2_flags: 0,
    };
    let mut out = vec![0u8; cbytes];
    header.write(&mut out);
    let mut pos = data_start;
    for (i, e) in encoded.iter().enumerate() {
        out[EXT_HEADER_LEN + 4 * i..EXT_HEADER_LEN + 4 * i + 4].copy_from_slice(&(pos as i32).to_le_bytes());
        out[pos..pos + e.len()].copy_from_slice(e);
        pos += e.len();
    }
    Ok(out)
}

/// Decode every block of a VL-block chunk separately.
pub fn decompress_vlblocks(chunk: &[u8], dp: &DParams) -> Result<Vec<Vec<u8>>> {
    decompress_vl(chunk, None, dp.nthreads)
}

/// Decode block `i` of a VL-block chunk.
pub fn vlblock(chunk: &[u8], i: usize) -> Result<Vec<u8>> {
    Ok(decompress_vl(chunk, Some(i), 1)?.remove(0))
}
