//! What one HDF5 chunk holds, both ways, without any HDF5 call.
//!
//! Blosc2 (32026): a contiguous frame with exactly one Blosc2 chunk of the full (padded) HDF5
//! chunk; when the chunk rank is 2..=8 the frame carries a `b2nd` metalayer (shape = chunk
//! shape = HDF5 chunk dims, dtype `|V<typesize>`), as PyTables and hdf5plugin write it.
//! Blosc (32001): one Blosc1 chunk.

use super::cdvalues::{blosc1_params, blosc2_params, Params, MAX_RANK};
use crate::chunk::{blocks, CParams, DParams};
use crate::frame::SChunk;
use crate::nd::{Geometry, NdArray};

type Result<T> = std::result::Result<T, String>;

fn cparams(p: &Params) -> CParams {
    CParams {
        codec: p.codec,
        clevel: p.clevel,
        typesize: p.typesize,
        blocksize: p.blocksize,
        splitmode: p.splitmode,
        filters: p.filters,
        filters_meta: p.filters_meta,
        ..CParams::default()
    }
}

/// The b2nd block shape for a chunk: every dim starts at 2 (or the chunk dim if smaller), and
/// sweeps from the last dim to the first double a dim while it fits its chunk dim and the block
/// stays within `target_items` (jumping to the full chunk dim when doubling would pass it).
pub fn block_shape(chunk: &[u64], target_items: u64) -> Vec<u64> {
    let mut b: Vec<u64> = chunk.iter().map(|&c| c.min(2)).collect();
    let items = |b: &[u64]| b.iter().product::<u64>();
    loop {
        let mut grew = false;
        for d in (0..b.len()).rev() {
            let next = (b[d] * 2).min(chunk[d]);
            if next > b[d] && items(&b) / b[d] * next <= target_items {
                b[d] = next;
                grew = true;
            }
        }
        if !grew {
            return b;
        }
    }
}

/// Encode one HDF5 chunk (`data`, the full chunk) for filter 32026.
pub fn encode_blosc2(cd: &[u32], data: &[u8]) -> Result<Vec<u8>> {
    encode_blosc2_threads(cd, data, 0)
}

/// [`encode_blosc2`] compressing the blocks on `nthreads` threads (0: the engine's default):
/// the same bytes (blocks are independent), for direct chunk writes that bypass the pipeline.
pub fn encode_blosc2_threads(cd: &[u32], data: &[u8], nthreads: usize) -> Result<Vec<u8>> {
    let p = blosc2_params(cd)?;
    let mut cp = cparams(&p);
    if nthreads > 0 {
        cp.nthreads = nthreads;
    }
    let err = |e: &dyn std::fmt::Display| format!("Blosc2 filter: cannot compress a {}-byte chunk: {e}", data.len());
    let nd_dims = p.chunk_dims.as_ref().filter(|d| {
        (2..=MAX_RANK).contains(&d.len()) && d.iter().product::<u64>() * p.typesize as u64 == data.len() as u64
    });
    let schunk = SChunk::new(cp.clone(), DParams::default()).map_err(|e| err(&e))?;
    match nd_dims {
        Some(dims) => {
            let t = crate::chunk::registry::codec(cp.codec).map_err(|e| err(&e))?.tuning;
            let split = blocks::split_block(&t, cp.clevel, cp.has_filter(1), cp.typesize, data.len(), cp.splitmode);
            let target = blocks::compute_blocksize(&t, cp.clevel, cp.typesize, data.len(), p.blocksize, split);
            let bshape = block_shape(dims, (target / p.typesize).max(1) as u64);
            let geom = Geometry::new(dims, dims, &bshape, p.typesize).map_err(|e| err(&e))?;
            let dtype = format!("|V{}", p.typesize);
            let a = NdArray::from_buffer(schunk, geom, Some(&dtype), data).map_err(|e| err(&e))?;
            a.to_cframe().map_err(|e| err(&e))
        }
        None => {
            let mut s = schunk;
            s.append_data(data).map_err(|e| err(&e))?;
            s.to_cframe().map_err(|e| err(&e))
        }
    }
}

/// Decode one stored chunk of filter 32026 into the full HDF5 chunk.
pub fn decode_blosc2(cd: &[u32], stored: &[u8]) -> Result<Vec<u8>> {
    let err = |e: &dyn std::fmt::Display| format!("Blosc2 filter: stored chunk of {} bytes: {e}", stored.len());
    let s = SChunk::from_cframe(stored).map_err(|e| err(&e))?;
    if s.nchunks() != 1 {
        return Err(err(&format!("the frame holds {} chunks, an HDF5 chunk holds exactly 1", s.nchunks())));
    }
    let out = if s.meta("b2nd").is_some() || s.meta("caterva").is_some() {
        NdArray::from_schunk(s).and_then(|a| a.to_vec()).map_err(|e| err(&e))?
    } else {
        s.decompress_chunk(0).map_err(|e| err(&e))?
    };
    check_len(cd, out.len()).map_err(|e| err(&e))?;
    Ok(out)
}

/// Slot 3 (when set) is the chunk size HDF5 expects back.
fn check_len(cd: &[u32], got: usize) -> Result<()> {
    match cd.get(3) {
        Some(&want) if want != 0 && want as usize != got => {
            Err(format!("decodes to {got} bytes, the dataset's chunks hold {want}"))
        }
        _ => Ok(()),
    }
}

/// Encode one HDF5 chunk for filter 32001. Like hdf5-blosc, fail (so that HDF5 stores the
/// chunk raw, the filter being optional) when the chunk would not shrink. Zlib streams come
/// from stock zlib, as c-blosc 1.x's (the plugin and the Python extension write the same bytes).
pub fn encode_blosc1(cd: &[u32], data: &[u8]) -> Result<Vec<u8>> {
    crate::stock_zlib::install();
    let p = blosc1_params(cd)?;
    let out = crate::chunk::compress_blosc1(data, &cparams(&p))
        .map_err(|e| format!("Blosc filter: cannot compress a {}-byte chunk: {e}", data.len()))?;
    if out.len() > data.len() {
        return Err(format!("Blosc filter: a {}-byte chunk does not compress", data.len()));
    }
    Ok(out)
}

/// Decode one stored chunk of filter 32001.
pub fn decode_blosc1(cd: &[u32], stored: &[u8]) -> Result<Vec<u8>> {
    let err = |e: &dyn std::fmt::Display| format!("Blosc filter: stored chunk of {} bytes: {e}", stored.len());
    let out = crate::chunk::decompress(stored, &DParams::default()).map_err(|e| err(&e))?;
    check_len(cd, out.len()).map_err(|e| err(&e))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_shape_grows_evenly_within_the_chunk() {
        assert_eq!(block_shape(&[1000, 1500], 65536), [256, 256]);
        assert_eq!(block_shape(&[4, 5], 1 << 20), [4, 5]);
        assert_eq!(block_shape(&[1, 7, 3], 8), [1, 2, 3]);
    }

    #[test]
    fn round_trips_both_filters_for_ranks_1_to_3() {
        let data: Vec<u8> = (0..4800u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        for cd in [
            vec![1, 0, 4, 19200, 5, 1, 5],
            vec![1, 0, 4, 19200, 5, 2, 1, 2, 60, 80],
            vec![1, 0, 4, 19200, 9, 1, 4, 3, 10, 20, 24],
        ] {
            let enc = encode_blosc2(&cd, &data).unwrap();
            assert_eq!(&enc[2..9], b"b2frame");
            assert_eq!(decode_blosc2(&cd, &enc).unwrap(), data);
            let has_nd = SChunk::from_cframe(&enc).unwrap().meta("b2nd").is_some();
            assert_eq!(has_nd, cd.len() > 7);
        }
        let cd = [2, 2, 4, 19200, 5, 1, 1];
        assert_eq!(decode_blosc1(&cd, &encode_blosc1(&cd, &data).unwrap()).unwrap(), data);
    }

    #[test]
    fn bad_chunks_are_errors() {
        let data = vec![7u8; 4000];
        let cd = [1, 0, 8, 4000, 5, 1, 0, 2, 10, 50];
        let enc = encode_blosc2(&cd, &data).unwrap();
        for cut in [0, 10, enc.len() / 2, enc.len() - 1] {
            assert!(decode_blosc2(&cd, &enc[..cut]).is_err(), "cut at {cut}");
        }
        // A frame whose chunk size disagrees with the dataset's.
        assert!(decode_blosc2(&[1, 0, 8, 8000], &enc).is_err());
        assert!(decode_blosc1(&[2, 2, 8, 4000], &enc).is_err());
    }
}
