//! Part of one stored HDF5 chunk, decoding only the Blosc blocks the part needs.
//!
//! A Blosc2 (32026) chunk with a `b2nd` metalayer is a one-chunk n-d array whose blocks are
//! n-d boxes: the n-d layer plans and decodes the touched blocks. Any other chunk (rank 1, a
//! plain frame, or a Blosc1 chunk of filter 32001) is the C-order chunk cut into flat blocks:
//! the rows of the part name the blocks to decode. Either way the chunk's size is checked
//! against the dataset's chunk shape first, so a bad chunk is an error, never a wrong copy.

use super::cdvalues::{BLOSC2_ID, BLOSC_ID};
use crate::chunk::{ChunkHeader, DParams, SpecialKind};
use crate::frame::SChunk;
use crate::nd::{DimSlice, NdArray};

type Result<T> = std::result::Result<T, String>;

/// The C-order bytes of the part and the Blosc blocks decoded to get them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub data: Vec<u8>,
    pub blocks_decoded: u64,
    /// Bytes read from a file to get the part (0 when the stored chunk was given in memory).
    pub bytes_read: u64,
}

/// Read `sel` (one `[start, stop)` per dim, relative to the chunk) of the HDF5 chunk `stored`
/// (the bytes the filter `filter_id` wrote for a chunk of `chunk_dims` items of `typesize`).
pub fn read_part(
    filter_id: i32,
    stored: &[u8],
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
) -> Result<Part> {
    check_sel(chunk_dims, typesize, sel)?;
    let mut data = vec![0u8; part_bytes(typesize, sel)];
    let blocks_decoded = read_part_into(filter_id, stored, chunk_dims, typesize, sel, nthreads, &mut data)?;
    Ok(Part { data, blocks_decoded, bytes_read: 0 })
}

/// [`read_part`] into `out` (exactly the part's C-order bytes, e.g. the caller's output
/// array): no buffer of the part's size is allocated. Returns the blocks decoded.
pub fn read_part_into(
    filter_id: i32,
    stored: &[u8],
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> Result<u64> {
    let chunk_bytes = check_sel(chunk_dims, typesize, sel)?;
    check_out(typesize, sel, out)?;
    let len = stored.len();
    let err = |e: &dyn std::fmt::Display| format!("stored chunk of {len} bytes: {e}");
    match filter_id {
        BLOSC2_ID => {
            let s = SChunk::from_cframe(stored).map_err(|e| err(&e))?;
            if s.nchunks() != 1 {
                return Err(err(&format!("the frame holds {} chunks, an HDF5 chunk holds exactly 1", s.nchunks())));
            }
            if s.meta("b2nd").is_some() || s.meta("caterva").is_some() {
                let mut a = NdArray::from_schunk(s).map_err(|e| err(&e))?;
                if a.shape() == chunk_dims && a.typesize() == typesize {
                    a.set_nthreads(nthreads);
                    let ds: Vec<DimSlice> = sel.iter().map(|&(lo, hi)| DimSlice::new(lo, hi, 1)).collect();
                    a.get_slice_into(&ds, out).map_err(|e| err(&e))?;
                    return Ok(a.blocks_decoded());
                }
                // The metalayer describes the bytes differently (e.g. a typesize over 255
                // stored as 1): read the chunk as flat bytes instead.
                let c = a.schunk().get_chunk(0).map_err(|e| err(&e))?;
                flat_part(&c, chunk_dims, typesize, chunk_bytes, sel, nthreads, out).map_err(|e| err(&e))
            } else {
                let c = s.get_chunk(0).map_err(|e| err(&e))?;
                flat_part(&c, chunk_dims, typesize, chunk_bytes, sel, nthreads, out).map_err(|e| err(&e))
            }
        }
        BLOSC_ID => flat_part(stored, chunk_dims, typesize, chunk_bytes, sel, nthreads, out).map_err(|e| err(&e)),
        other => Err(format!("filter {other} is not a Blosc filter ({BLOSC2_ID} or {BLOSC_ID})")),
    }
}

/// The C-order byte size of the box `sel` (checked by [`check_sel`] first).
pub(crate) fn part_bytes(typesize: usize, sel: &[(u64, u64)]) -> usize {
    sel.iter().map(|&(lo, hi)| (hi - lo) as usize).product::<usize>() * typesize
}

/// An output buffer must hold exactly the part: never a short write, never a partial fill.
pub(crate) fn check_out(typesize: usize, sel: &[(u64, u64)], out: &[u8]) -> Result<()> {
    let need = part_bytes(typesize, sel);
    if out.len() != need {
        return Err(format!("the output holds {} bytes, the selection {sel:?} needs {need}", out.len()));
    }
    Ok(())
}

/// The chunk's byte size, once `sel` is known to be a box inside the chunk.
pub(crate) fn check_sel(chunk_dims: &[u64], typesize: usize, sel: &[(u64, u64)]) -> Result<usize> {
    if chunk_dims.is_empty() || sel.len() != chunk_dims.len() {
        return Err(format!("a selection of rank {} for a chunk of rank {}", sel.len(), chunk_dims.len()));
    }
    if let Some(d) = (0..sel.len()).find(|&d| sel[d].0 > sel[d].1 || sel[d].1 > chunk_dims[d]) {
        return Err(format!("selection {:?} leaves the chunk {:?} in dim {d}", sel, chunk_dims));
    }
    chunk_dims
        .iter()
        .try_fold(typesize as u64, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("a chunk of {chunk_dims:?} items of {typesize} bytes is too large"))
}

/// `sel` of a chunk whose blocks are flat byte ranges of the C-order chunk, into `out` (the
/// part's size). A part that is one run of the chunk (the whole chunk, whole rows) decodes
/// straight into `out`; the others decode their blocks into a per-thread reused buffer and
/// copy the rows out. Returns the blocks decoded.
pub(crate) fn flat_part(
    chunk: &[u8],
    chunk_dims: &[u64],
    typesize: usize,
    chunk_bytes: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> crate::chunk::Result<u64> {
    let h = ChunkHeader::parse(chunk)?;
    if h.nbytes != chunk_bytes {
        return Err(crate::chunk::Error::InvalidParam {
            name: "chunk",
            reason: format!("decodes to {} bytes, the dataset's chunks hold {chunk_bytes}", h.nbytes),
        });
    }
    let rows = rows(chunk_dims, typesize, sel);
    if out.is_empty() || rows.is_empty() {
        return Ok(0);
    }
    let bs = h.blocksize.max(1);
    let counted = u64::from(h.special()? == SpecialKind::None);
    let blocks = flat_blocks(&rows, bs);
    let nblocks = h.nblocks().max(1);
    let few = few_blocks(blocks.len(), nblocks);
    if let [(off, len)] = rows[..] {
        if off == 0 && len == chunk_bytes {
            crate::chunk::decompress_into(chunk, out, &DParams { nthreads })?;
            return Ok(counted * nblocks as u64);
        }
        // One run: its pieces block by block (one job each), back to back into `out`.
        let pieces: Vec<(usize, usize)> =
            blocks.iter().map(|&b| ((b * bs).max(off), ((b + 1) * bs).min(off + len))).collect();
        crate::chunk::decompress_ranges(chunk, &pieces, out, nthreads)?;
        return Ok(counted * blocks.len() as u64);
    }
    DECODED.with(|cell| {
        let mut buf = cell.take();
        let r = flat_rows(chunk, &rows, &blocks, bs, chunk_bytes, few, nthreads, &mut buf, out);
        if buf.len() <= KEEP_DECODED {
            cell.set(buf);
        }
        r
    })?;
    Ok(counted * if few { blocks.len() } else { nblocks } as u64)
}

/// Decoded buffers larger than this are not kept between reads.
const KEEP_DECODED: usize = 256 << 20;

thread_local! {
    /// Decoded blocks of a part that is not one run, reused (a fresh multi-MiB buffer per
    /// read costs page faults on every read).
    static DECODED: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The runs `rows` of the chunk copied into `out`, through `buf`: the whole chunk decoded
/// (`few` false), or only `blocks` (`bs` bytes each, sorted) back to back.
#[allow(clippy::too_many_arguments)]
fn flat_rows(
    chunk: &[u8],
    rows: &[(usize, usize)],
    blocks: &[usize],
    bs: usize,
    chunk_bytes: usize,
    few: bool,
    nthreads: usize,
    buf: &mut Vec<u8>,
    out: &mut [u8],
) -> crate::chunk::Result<()> {
    let ranges: Vec<(usize, usize)> = if few {
        blocks.iter().map(|&b| (b * bs, ((b + 1) * bs).min(chunk_bytes))).collect()
    } else {
        vec![(0, chunk_bytes)]
    };
    let need: usize = ranges.iter().map(|r| r.1 - r.0).sum();
    if buf.len() < need {
        buf.try_reserve_exact(need - buf.len()).map_err(|e| crate::chunk::Error::InvalidParam {
            name: "chunk",
            reason: format!("{need} bytes of decode buffer: {e}"),
        })?;
        buf.resize(need, 0);
    }
    if few {
        crate::chunk::decompress_ranges(chunk, &ranges, &mut buf[..need], nthreads)?;
    } else {
        crate::chunk::decompress_into(chunk, &mut buf[..need], &DParams { nthreads })?;
    }
    // Where block `b` starts in `buf`.
    let at = |b: usize| if few { blocks.binary_search(&b).expect("a touched block") * bs } else { b * bs };
    let mut o = 0;
    for &(off, len) in rows {
        let mut pos = off;
        while pos < off + len {
            let b = pos / bs;
            let n = ((b + 1) * bs).min(off + len) - pos;
            let from = at(b) + pos - b * bs;
            out[o..o + n].copy_from_slice(&buf[from..from + n]);
            o += n;
            pos += n;
        }
    }
    Ok(())
}

/// The flat blocks (of `bs` bytes) the byte runs `rows` touch, sorted.
pub(crate) fn flat_blocks(rows: &[(usize, usize)], bs: usize) -> Vec<usize> {
    let mut blocks: Vec<usize> = rows.iter().flat_map(|&(off, len)| off / bs..(off + len).div_ceil(bs)).collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks
}

/// Whether decoding `n` of a chunk's `total` blocks one by one beats decoding it whole (the
/// n-d layer draws the same line).
pub(crate) fn few_blocks(n: usize, total: usize) -> bool {
    n * 2 <= total
}

/// The contiguous byte runs `(offset, len)` of `sel` in a C-order chunk, in C order.
pub(crate) fn rows(chunk_dims: &[u64], typesize: usize, sel: &[(u64, u64)]) -> Vec<(usize, usize)> {
    let r = chunk_dims.len();
    let mut strides = vec![typesize; r];
    for d in (0..r - 1).rev() {
        strides[d] = strides[d + 1] * chunk_dims[d + 1] as usize;
    }
    // Trailing dims taken whole merge into one longer row.
    let mut inner = r - 1;
    while inner > 0 && sel[inner] == (0, chunk_dims[inner]) {
        inner -= 1;
    }
    let row_len = (sel[inner].1 - sel[inner].0) as usize * strides[inner];
    if row_len == 0 || sel[..inner].iter().any(|s| s.0 == s.1) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut idx: Vec<u64> = sel[..inner].iter().map(|s| s.0).collect();
    loop {
        let off =
            (0..inner).map(|d| idx[d] as usize * strides[d]).sum::<usize>() + sel[inner].0 as usize * strides[inner];
        out.push((off, row_len));
        // Odometer over the outer dims.
        let mut d = inner;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < sel[d].1 {
                break;
            }
            idx[d] = sel[d].0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::codec::{encode_blosc1, encode_blosc2};
    use super::*;

    /// `sel` of a C-order array, item by item (the reference).
    fn reference(data: &[u8], dims: &[u64], ts: usize, sel: &[(u64, u64)]) -> Vec<u8> {
        rows(dims, ts, sel).iter().flat_map(|&(o, n)| data[o..o + n].to_vec()).collect()
    }

    #[test]
    fn rows_merge_whole_trailing_dims() {
        assert_eq!(rows(&[4, 5], 1, &[(1, 3), (0, 5)]), [(5, 10)]);
        assert_eq!(rows(&[4, 5], 2, &[(1, 3), (2, 4)]), [(14, 4), (24, 4)]);
        assert_eq!(rows(&[2, 2, 3], 1, &[(0, 2), (1, 2), (0, 1)]), [(3, 1), (9, 1)]);
        assert!(rows(&[4, 5], 1, &[(1, 1), (0, 5)]).is_empty());
    }

    #[test]
    fn parts_equal_the_whole_chunk_cut_and_decode_few_blocks() {
        let dims = [256u64, 256];
        let data: Vec<u8> = (0..256 * 256u32).flat_map(|i| (i % 1000).to_le_bytes()).collect();
        // Blosc2 with b2nd, 16 KiB blocks (64x64 items, 16 in the chunk): one row crosses 4.
        let cd = [1, 16384, 4, 262144, 5, 1, 1, 2, 256, 256];
        let enc = encode_blosc2(&cd, &data).unwrap();
        let a = NdArray::from_schunk(SChunk::from_cframe(&enc).unwrap()).unwrap();
        assert_eq!(a.blocks(), [64, 64]);
        let one_row = read_part(BLOSC2_ID, &enc, &dims, 4, &[(40, 41), (0, 256)], 1).unwrap();
        assert_eq!(one_row.data, reference(&data, &dims, 4, &[(40, 41), (0, 256)]));
        assert_eq!(one_row.blocks_decoded, 4);
        assert_eq!(read_part(BLOSC2_ID, &enc, &dims, 4, &[(40, 41), (3, 60)], 1).unwrap().blocks_decoded, 1);
        let sels = [[(0, 256), (0, 256)], [(3, 200), (7, 9)], [(255, 256), (0, 1)], [(5, 5), (0, 3)]];
        for sel in sels {
            let p = read_part(BLOSC2_ID, &enc, &dims, 4, &sel, 2).unwrap();
            assert_eq!(p.data, reference(&data, &dims, 4, &sel), "b2nd {sel:?}");
        }
        // Flat chunks: rank 1 Blosc2 and Blosc1.
        let flat2 = encode_blosc2(&[1, 16384, 4, 262144, 5, 1, 1], &data).unwrap();
        let flat1 = encode_blosc1(&[2, 2, 4, 262144, 5, 1, 1], &data).unwrap();
        for (id, enc) in [(BLOSC2_ID, &flat2), (BLOSC_ID, &flat1)] {
            let p = read_part(id, enc, &dims, 4, &[(40, 41), (0, 256)], 1).unwrap();
            assert_eq!(p.data, reference(&data, &dims, 4, &[(40, 41), (0, 256)]));
            assert!(p.blocks_decoded <= 2, "{id}: {} blocks", p.blocks_decoded);
            for sel in sels {
                let p = read_part(id, enc, &dims, 4, &sel, 1).unwrap();
                assert_eq!(p.data, reference(&data, &dims, 4, &sel), "{id} {sel:?}");
            }
        }
    }

    #[test]
    fn parts_read_from_a_file_at_an_offset() {
        let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 5).to_le_bytes()).collect();
        let enc = encode_blosc2(&[1, 0, 4, 16000, 5, 1, 1, 2, 40, 100], &data).unwrap();
        let dir = std::env::temp_dir().join(format!("oxblosc-hdf5-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.bin");
        std::fs::write(&path, [vec![9u8; 123], enc.clone(), vec![9u8; 7]].concat()).unwrap();
        let sel = [(3, 9), (10, 90)];
        use super::super::lazy::{ChunkFile, PartSpec, ReadOpts, Stored};
        let spec = PartSpec { filter_id: BLOSC2_ID, chunk_dims: &[40, 100], typesize: 4, sel: &sel };
        let f = ChunkFile::open(&path, None).unwrap();
        let read = |offset, size| f.read_part(Stored { offset, size }, &spec, &ReadOpts::default());
        let p = read(123, enc.len()).unwrap();
        assert_eq!(p.data, reference(&data, &[40, 100], 4, &sel));
        // Past the end of the file, a wrong offset, an absurd size: errors naming the file.
        for (off, size) in [(123, enc.len() + 100), (100, enc.len()), (0, usize::MAX / 2)] {
            let e = read(off, size).unwrap_err();
            assert!(e.to_string().contains("c.bin"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_chunks_and_selections_are_errors() {
        let data = vec![3u8; 8000];
        let cd = [1, 0, 8, 8000, 5, 1, 0, 2, 10, 100];
        let enc = encode_blosc2(&cd, &data).unwrap();
        for cut in [0, 10, enc.len() / 2, enc.len() - 1] {
            assert!(read_part(BLOSC2_ID, &enc[..cut], &[10, 100], 8, &[(0, 1), (0, 1)], 1).is_err());
        }
        assert!(read_part(BLOSC2_ID, &enc, &[10, 50], 8, &[(0, 1), (0, 1)], 1).is_err());
        assert!(read_part(BLOSC2_ID, &enc, &[10, 100], 8, &[(0, 11), (0, 1)], 1).is_err());
        assert!(read_part(BLOSC2_ID, &enc, &[10, 100], 8, &[(0, 1)], 1).is_err());
        assert!(read_part(BLOSC_ID, &enc, &[10, 100], 8, &[(0, 1), (0, 1)], 1).is_err());
        assert!(read_part(1, &enc, &[10, 100], 8, &[(0, 1), (0, 1)], 1).is_err());
        // An output of the wrong size is an error before anything is written.
        for n in [15, 17] {
            let mut out = vec![7u8; n];
            let e = read_part_into(BLOSC2_ID, &enc, &[10, 100], 8, &[(0, 1), (0, 2)], 1, &mut out).unwrap_err();
            assert!(e.contains("needs 16"), "{e}");
            assert!(out.iter().all(|&b| b == 7));
        }
    }
}
