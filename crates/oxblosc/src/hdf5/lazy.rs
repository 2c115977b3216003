//! Part of one HDF5 chunk read from the file lazily: only the frame header, the offsets
//! index, the Blosc chunk header, its block-offset table and the blocks the part needs.
//!
//! A 32 MiB chunk holds hundreds of blocks; a small selection needs a few of them, so reading
//! the whole stored chunk would cost more than decoding. The needed pieces are read with
//! positioned reads (adjacent blocks coalesced into one read) into a zeroed buffer of the
//! chunk's size (the OS maps untouched pages lazily, so it costs nothing for the bytes never
//! read), and only those blocks are decoded. Small chunks, chunks mostly needed and chunks of
//! unusual layouts (special values, memcpyed, variable-length blocks) are read whole and go
//! through [`read_part`]. I/O failures ([`ReadError::Io`]) are kept apart from bad chunk
//! bytes ([`ReadError::Bad`]) so that callers raise the right exception.

use std::fs::File;
use std::path::Path;

use super::cdvalues::{BLOSC2_ID, BLOSC_ID};
use super::read::{check_out, check_sel, few_blocks, flat_blocks, flat_part, part_bytes, read_part_into, rows, Part};
use crate::chunk::{ChunkHeader, SpecialKind};
use crate::frame::header::{parse_metalayers, FrameHeader, FIXED_LEN};
use crate::nd::{DimSlice, Geometry, Meta};

/// Chunks stored in at most this many bytes are read with one read.
pub const WHOLE_BELOW: usize = 64 << 10;

/// One stored HDF5 chunk: `size` bytes at `offset` of the file `path`. `file_id` (device,
/// inode), when given, is the file the chunk addresses came from: another file at `path`
/// (replaced since) is an I/O error, not bytes to decode.
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    pub path: &'a Path,
    pub offset: u64,
    pub size: usize,
    pub file_id: Option<(u64, u64)>,
}

/// Why a part could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The file could not be read as addressed (missing, replaced, truncated, EIO).
    Io(String),
    /// The stored bytes are not a valid chunk for this dataset, or the request is invalid.
    Bad(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(s) | ReadError::Bad(s) => f.write_str(s),
        }
    }
}

type Result<T> = std::result::Result<T, ReadError>;

/// Positioned reads of one stored chunk, counted.
struct Src<'a> {
    file: File,
    at: &'a Stored<'a>,
    read: u64,
}

impl Src<'_> {
    fn where_(&self) -> String {
        format!("{}: chunk of {} bytes at byte {}", self.at.path.display(), self.at.size, self.at.offset)
    }

    fn bad(&self, e: &dyn std::fmt::Display) -> ReadError {
        ReadError::Bad(format!("{}: {e}", self.where_()))
    }

    /// Fill `buf` with the stored chunk's bytes from `pos` (relative to the chunk).
    fn read_into(&mut self, pos: usize, buf: &mut [u8]) -> Result<()> {
        if !matches!(pos.checked_add(buf.len()), Some(end) if end <= self.at.size) {
            return Err(self.bad(&format!("{} bytes at {pos} run past the stored chunk", buf.len())));
        }
        let abs = self.at.offset + pos as u64;
        read_exact_at(&self.file, buf, abs).map_err(|e| {
            ReadError::Io(format!("{}: reading {} bytes at file offset {abs}: {e}", self.where_(), buf.len()))
        })?;
        self.read += buf.len() as u64;
        Ok(())
    }

    fn get(&mut self, pos: usize, len: usize) -> Result<Vec<u8>> {
        let mut v = vec![0u8; len];
        self.read_into(pos, &mut v)?;
        Ok(v)
    }
}

/// [`read_part`] of a chunk stored in a file, reading only what the part needs.
pub fn read_part_at(
    at: &Stored,
    filter_id: i32,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
) -> Result<Part> {
    read_part_at_lazy_above(at, WHOLE_BELOW, filter_id, chunk_dims, typesize, sel, nthreads)
}

/// [`read_part_at`] reading chunks stored in `whole_below` bytes or less whole (tests and
/// fuzzing take the lazy path on small chunks with 0).
pub fn read_part_at_lazy_above(
    at: &Stored,
    whole_below: usize,
    filter_id: i32,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
) -> Result<Part> {
    check_sel(chunk_dims, typesize, sel).map_err(ReadError::Bad)?;
    let mut data = vec![0u8; part_bytes(typesize, sel)];
    let (blocks_decoded, bytes_read) =
        read_part_at_into_above(at, whole_below, filter_id, chunk_dims, typesize, sel, nthreads, &mut data)?;
    Ok(Part { data, blocks_decoded, bytes_read })
}

/// [`read_part_at`] into `out` (exactly the part's C-order bytes, e.g. the caller's output
/// array): `(blocks_decoded, bytes_read)`. A part that is the whole chunk or one run of it
/// decodes straight into `out`.
#[allow(clippy::too_many_arguments)]
pub fn read_part_at_into(
    at: &Stored,
    filter_id: i32,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> Result<(u64, u64)> {
    read_part_at_into_above(at, WHOLE_BELOW, filter_id, chunk_dims, typesize, sel, nthreads, out)
}

#[allow(clippy::too_many_arguments)]
fn read_part_at_into_above(
    at: &Stored,
    whole_below: usize,
    filter_id: i32,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> Result<(u64, u64)> {
    check_sel(chunk_dims, typesize, sel).map_err(ReadError::Bad)?;
    check_out(typesize, sel, out).map_err(ReadError::Bad)?;
    let file = File::open(at.path).map_err(|e| ReadError::Io(format!("{}: {e}", at.path.display())))?;
    check_identity(&file, at)?;
    let mut src = Src { file, at, read: 0 };
    let lazy = if at.size <= whole_below {
        None
    } else {
        match filter_id {
            BLOSC2_ID => lazy_blosc2(&mut src, chunk_dims, typesize, sel, nthreads, out)?,
            BLOSC_ID => lazy_chunk(&mut src, 0, None, chunk_dims, typesize, sel, nthreads, out)?,
            _ => None,
        }
    };
    let decoded = match lazy {
        Some(n) => n,
        None => {
            // A per-thread buffer, reused: a fresh multi-megabyte buffer per read costs more in
            // page faults than reading and decoding (13 ms for 25 MiB, seen in the benchmark).
            let mut buf = READ_BUF.with(|c| c.take());
            let r = read_whole(&mut src, &mut buf, filter_id, chunk_dims, typesize, sel, nthreads, out);
            if buf.len() <= KEEP_READ_BUF {
                READ_BUF.with(|c| c.set(buf));
            }
            r?
        }
    };
    Ok((decoded, src.read))
}

/// Read buffers larger than this are not kept between reads.
const KEEP_READ_BUF: usize = 256 << 20;

thread_local! {
    static READ_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The whole stored chunk read into `buf` (grown as needed), then [`read_part_into`].
#[allow(clippy::too_many_arguments)]
fn read_whole(
    src: &mut Src,
    buf: &mut Vec<u8>,
    filter_id: i32,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> Result<u64> {
    let size = src.at.size;
    if buf.len() < size {
        buf.try_reserve_exact(size - buf.len()).map_err(|e| src.bad(&e))?;
        buf.resize(size, 0);
    }
    src.read_into(0, &mut buf[..size])?;
    read_part_into(filter_id, &buf[..size], chunk_dims, typesize, sel, nthreads, out).map_err(|e| src.bad(&e))
}

#[cfg(unix)]
fn check_identity(file: &File, at: &Stored) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Some((dev, ino)) = at.file_id else { return Ok(()) };
    let m = file.metadata().map_err(|e| ReadError::Io(format!("{}: {e}", at.path.display())))?;
    if (m.dev(), m.ino()) != (dev, ino) {
        return Err(ReadError::Io(format!(
            "{}: the file was replaced since the dataset was opened (chunk of {} bytes at byte {}); reopen it",
            at.path.display(),
            at.size,
            at.offset
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_identity(_: &File, _: &Stored) -> Result<()> {
    Ok(())
}

/// A Blosc2 frame holding one chunk: header and metalayers, the offsets index, then the
/// chunk itself lazily. None: read it whole instead.
fn lazy_blosc2(
    src: &mut Src,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> Result<Option<u64>> {
    let size = src.at.size;
    let fixed = src.get(0, FIXED_LEN.min(size))?;
    let h = FrameHeader::parse(&fixed, size as u64).map_err(|e| src.bad(&e))?;
    if h.frame_len != size as u64 || h.nbytes != i64::from(h.chunksize) || h.nbytes <= 0 {
        return Ok(None); // not one chunk filling the stored bytes: the whole read says why
    }
    let hl = h.header_len as usize;
    let mut header = fixed;
    header.extend(src.get(FIXED_LEN, hl - FIXED_LEN)?);
    let metas = parse_metalayers(&header).map_err(|e| src.bad(&e))?;
    // The offsets index follows the chunks section; one entry for one chunk.
    let idx_at = usize::try_from(h.cbytes).ok().and_then(|c| c.checked_add(hl)).filter(|&p| p < size);
    let Some(idx_at) = idx_at else { return Ok(None) };
    let mut idx = src.get(idx_at, 16.min(size - idx_at))?;
    let idx_len = stored_cbytes(&idx).filter(|&n| n >= idx.len() && n <= size - idx_at);
    let Some(idx_len) = idx_len else { return Ok(None) };
    idx.extend(src.get(idx_at + idx.len(), idx_len - idx.len())?);
    let off = crate::frame::offsets::decode_index(&idx, 1).map_err(|e| src.bad(&e))?[0];
    let Some(chunk_at) = usize::try_from(off).ok().and_then(|o| o.checked_add(hl)).filter(|&p| p < size) else {
        return Ok(None); // a special value, or a bad offset the whole read reports
    };
    let meta = metas.iter().find(|(n, _)| n == "b2nd" || n == "caterva").map(|(_, v)| v);
    let geom = match meta {
        Some(m) => {
            let meta = Meta::decode(m).map_err(|e| src.bad(&e))?;
            Geometry::from_meta(&meta, h.typesize as usize)
                .ok()
                .filter(|g| g.shape == chunk_dims && g.typesize == typesize && g.nchunks == 1)
        }
        None => None,
    };
    lazy_chunk(src, chunk_at, geom.as_ref(), chunk_dims, typesize, sel, nthreads, out)
}

/// The Blosc chunk at `at` of the stored bytes: header, block starts, the needed blocks.
/// `geom`: its n-d blocks (a b2nd chunk), else flat blocks of the C-order chunk.
#[allow(clippy::too_many_arguments)]
fn lazy_chunk(
    src: &mut Src,
    at: usize,
    geom: Option<&Geometry>,
    chunk_dims: &[u64],
    typesize: usize,
    sel: &[(u64, u64)],
    nthreads: usize,
    out: &mut [u8],
) -> Result<Option<u64>> {
    let size = src.at.size;
    let head = src.get(at, 16.min(size - at))?;
    let Some(cbytes) = stored_cbytes(&head).filter(|&n| n >= 16 && n <= size - at) else { return Ok(None) };
    // Zeroed by the allocator (calloc: fresh pages, never touched unless read into), after a
    // fallible reservation so that an absurd size is an error, not an abort.
    Vec::<u8>::new().try_reserve_exact(cbytes).map_err(|e| src.bad(&e))?;
    let mut chunk = vec![0u8; cbytes];
    chunk[..16].copy_from_slice(&head);
    if head[2] & 0x05 == 0x05 {
        src.read_into(at + 16, &mut chunk[16..32.min(cbytes)])?;
    }
    let h = ChunkHeader::parse(&chunk).map_err(|e| src.bad(&e))?;
    if h.special().map_err(|e| src.bad(&e))? != SpecialKind::None || h.is_memcpyed() || h.is_vlblocks() {
        return Ok(None);
    }
    let nblocks = h.nblocks();
    let blocks = match geom {
        Some(g) if h.blocksize == g.block_bytes() && h.nbytes == g.chunk_bytes() => {
            let ds: Vec<DimSlice> = sel.iter().map(|&(lo, hi)| DimSlice::new(lo, hi, 1)).collect();
            let plan = g.plan(&ds).map_err(|e| src.bad(&e))?;
            let mut b: Vec<usize> = plan.chunks(g).iter().flat_map(|(_, parts)| plan.blocks_of(g, parts)).collect();
            b.sort_unstable();
            b
        }
        Some(_) => return Ok(None),
        None => flat_blocks(&rows(chunk_dims, typesize, sel), h.blocksize.max(1)),
    };
    if blocks.is_empty() || !few_blocks(blocks.len(), nblocks) {
        return Ok(None);
    }
    // The block-offset table (and a dictionary after it).
    let hl = h.header_len();
    let table_end = hl + 4 * nblocks;
    if table_end > cbytes {
        return Err(src.bad(&format!("a table of {nblocks} block offsets does not fit {cbytes} bytes")));
    }
    src.read_into(at + hl, &mut chunk[hl..table_end])?;
    let mut data_start = table_end;
    if h.uses_dict() && table_end + 4 <= cbytes {
        src.read_into(at + table_end, &mut chunk[table_end..table_end + 4])?;
        let n = i32::from_le_bytes(chunk[table_end..table_end + 4].try_into().expect("4 bytes"));
        let end = usize::try_from(n).ok().and_then(|n| n.checked_add(table_end + 4)).filter(|&e| e <= cbytes);
        let Some(end) = end else { return Err(src.bad(&format!("dictionary size {n} is not in the chunk"))) };
        src.read_into(at + table_end + 4, &mut chunk[table_end + 4..end])?;
        data_start = end;
    }
    let starts: Vec<usize> = (0..nblocks)
        .map(|i| i32::from_le_bytes(chunk[hl + 4 * i..hl + 4 * i + 4].try_into().expect("4")) as usize)
        .collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    // Delta blocks decode against block 0.
    let delta = h.filters.contains(&crate::chunk::filter::DELTA);
    let mut want: Vec<usize> = blocks.clone();
    if delta {
        want.push(0);
    }
    // Each block's bytes run to the next block's start (or the chunk's end); bad starts are
    // not read, and the decoder reports them.
    let mut ranges: Vec<(usize, usize)> = want
        .iter()
        .map(|&b| starts[b])
        .filter(|&s| s >= data_start && s < cbytes)
        .map(|s| (s, sorted.iter().copied().find(|&t| t > s).unwrap_or(cbytes).min(cbytes)))
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    for (lo, hi) in coalesce(&ranges) {
        src.read_into(at + lo, &mut chunk[lo..hi])?;
    }
    let chunk_bytes = check_sel(chunk_dims, typesize, sel).map_err(ReadError::Bad)?;
    let part = match geom {
        Some(g) => nd_part(&chunk, g, &blocks, sel, nthreads, out),
        None => flat_part(&chunk, chunk_dims, typesize, chunk_bytes, sel, nthreads, out),
    };
    part.map(Some).map_err(|e| src.bad(&e))
}

/// The `cbytes` field of a Blosc chunk header (bytes 12..16), when the header is there.
fn stored_cbytes(head: &[u8]) -> Option<usize> {
    let b = head.get(12..16)?;
    usize::try_from(i32::from_le_bytes(b.try_into().ok()?)).ok()
}

/// Sorted ranges with touching or overlapping neighbours merged (one read each).
fn coalesce(ranges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for &(lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// `sel` of a b2nd chunk from its `blocks` (sorted C-order block numbers): decode those
/// blocks, then copy each one's part of the box into place in `out`, row by row.
fn nd_part(
    chunk: &[u8],
    g: &Geometry,
    blocks: &[usize],
    sel: &[(u64, u64)],
    nthreads: usize,
    data: &mut [u8],
) -> crate::chunk::Result<u64> {
    let bb = g.block_bytes();
    let ranges: Vec<(usize, usize)> = blocks.iter().map(|&b| (b * bb, (b + 1) * bb)).collect();
    let mut dec = vec![0u8; bb * blocks.len()];
    crate::chunk::decompress_ranges(chunk, &ranges, &mut dec, nthreads)?;
    let r = sel.len();
    let ts = g.typesize;
    let out_dims: Vec<usize> = sel.iter().map(|&(lo, hi)| (hi - lo) as usize).collect();
    let stride = |dims: &[usize]| {
        let mut s = vec![ts; r];
        for d in (0..r - 1).rev() {
            s[d] = s[d + 1] * dims[d + 1];
        }
        s
    };
    let bshape: Vec<usize> = g.blocks.iter().map(|&b| b as usize).collect();
    let (ostride, bstride) = (stride(&out_dims), stride(&bshape));
    for (k, &b) in blocks.iter().enumerate() {
        // The block's origin in the chunk, and its box's overlap with the selection.
        let mut rest = b;
        let mut origin = vec![0usize; r];
        for d in (0..r).rev() {
            let n = g.bgrid[d] as usize;
            origin[d] = (rest % n) * bshape[d];
            rest /= n;
        }
        let lo: Vec<usize> = (0..r).map(|d| (sel[d].0 as usize).max(origin[d])).collect();
        let hi: Vec<usize> = (0..r).map(|d| (sel[d].1 as usize).min(origin[d] + bshape[d])).collect();
        if (0..r).any(|d| lo[d] >= hi[d]) {
            continue;
        }
        let block = &dec[k * bb..(k + 1) * bb];
        let run = (hi[r - 1] - lo[r - 1]) * ts;
        let mut idx = lo.clone();
        loop {
            let src: usize = (0..r).map(|d| (idx[d] - origin[d]) * bstride[d]).sum();
            let dst: usize = (0..r).map(|d| (idx[d] - sel[d].0 as usize) * ostride[d]).sum();
            data[dst..dst + run].copy_from_slice(&block[src..src + run]);
            // Odometer over all dims but the last.
            let mut d = r - 1;
            loop {
                if d == 0 {
                    break;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < hi[d] {
                    break;
                }
                idx[d] = lo[d];
            }
            if d == 0 && idx[0] == lo[0] {
                break;
            }
        }
    }
    Ok(blocks.len() as u64)
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(f: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::codec::{encode_blosc1, encode_blosc2};
    use super::super::read::read_part;
    use super::*;

    /// Noisy but compressible data: chunks stay well above [`WHOLE_BELOW`].
    fn data(n: usize) -> Vec<u8> {
        let mut x = 12345u32;
        (0..n as u32)
            .flat_map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (i / 7 + (x >> 28)).to_le_bytes()
            })
            .collect()
    }

    struct Tmp(std::path::PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The chunk written at byte 1000 of a file; its path and the temp dir.
    fn file_with(enc: &[u8], name: &str) -> (std::path::PathBuf, Tmp) {
        let dir = std::env::temp_dir().join(format!("oxblosc-hdf5-lazy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.bin");
        std::fs::write(&path, [vec![7u8; 1000], enc.to_vec(), vec![7u8; 100]].concat()).unwrap();
        (path, Tmp(dir))
    }

    #[test]
    fn small_parts_read_few_bytes_and_equal_the_whole_read() {
        let dims = [512u64, 512];
        let raw = data(512 * 512);
        // b2nd (64x64 blocks of 16 KiB), flat Blosc2 with delta (block 0 is read too), Blosc1
        // at clevel 1 (16 KiB blocks; at level 5 c-blosc makes 2 blocks of 512 KiB here).
        let cases = [
            (BLOSC2_ID, encode_blosc2(&[1, 16384, 4, 1 << 20, 5, 1, 1, 2, 512, 512], &raw).unwrap()),
            (BLOSC2_ID, encode_blosc2(&[1, 16384, 4, 1 << 20, 5, 3, 5], &raw).unwrap()),
            (BLOSC_ID, encode_blosc1(&[2, 2, 4, 1 << 20, 1, 0, 1], &raw).unwrap()),
        ];
        for (k, (id, enc)) in cases.iter().enumerate() {
            assert!(enc.len() > 4 * WHOLE_BELOW, "case {k}: {} bytes", enc.len());
            let (path, _tmp) = file_with(enc, &k.to_string());
            let at = Stored { path: &path, offset: 1000, size: enc.len(), file_id: None };
            let sels = [
                [(100, 101), (0, 512)],
                [(7, 9), (3, 5)],
                [(0, 512), (0, 512)],
                [(63, 65), (63, 200)],
                [(511, 512), (500, 512)],
                [(3, 3), (0, 4)],
            ];
            for sel in sels {
                let want = read_part(*id, enc, &dims, 4, &sel, 1).unwrap();
                for nt in [1, 2] {
                    let got = read_part_at(&at, *id, &dims, 4, &sel, nt).unwrap();
                    assert_eq!(got.data, want.data, "case {k} {sel:?}");
                    assert_eq!(got.blocks_decoded, want.blocks_decoded, "case {k} {sel:?}");
                }
            }
            let row = read_part_at(&at, *id, &dims, 4, &[(100, 101), (0, 512)], 1).unwrap();
            assert!(row.bytes_read * 4 < enc.len() as u64, "case {k}: read {} of {}", row.bytes_read, enc.len());
            // Two items: one or two blocks (plus block 0 with delta) of the 64.
            let tiny = read_part_at(&at, *id, &dims, 4, &[(7, 9), (3, 5)], 1).unwrap();
            assert!(tiny.bytes_read * 12 < enc.len() as u64, "case {k}: read {} of {}", tiny.bytes_read, enc.len());
            let whole = read_part_at(&at, *id, &dims, 4, &[(0, 512), (0, 512)], 1).unwrap();
            // Read whole after the few headers that showed it needs most blocks.
            assert!((enc.len() as u64..enc.len() as u64 + 4096).contains(&whole.bytes_read), "{}", whole.bytes_read);
        }
    }

    #[test]
    fn io_failures_are_io_errors_and_bad_bytes_are_bad() {
        let raw = data(256 * 256);
        let enc = encode_blosc2(&[1, 8192, 4, 1 << 18, 5, 1, 1, 2, 256, 256], &raw).unwrap();
        let (path, _tmp) = file_with(&enc, "err");
        let at = Stored { path: &path, offset: 1000, size: enc.len(), file_id: None };
        let sel = [(200, 201), (0, 256)];
        assert!(read_part_at(&at, BLOSC2_ID, &[256, 256], 4, &sel, 1).is_ok());
        // Another file at the path.
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(&path).unwrap();
            let other = Stored { file_id: Some((m.dev(), m.ino() + 1)), ..at };
            let e = read_part_at(&other, BLOSC2_ID, &[256, 256], 4, &sel, 1).unwrap_err();
            assert!(matches!(&e, ReadError::Io(s) if s.contains("replaced") && s.contains("c.bin")), "{e}");
        }
        // Corrupted block bytes: Bad, naming the file and the chunk's offset.
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = 1000 + enc.len() - enc.len() / 8;
        bytes[mid..mid + 2000].iter_mut().for_each(|b| *b ^= 0x5A);
        std::fs::write(&path, &bytes).unwrap();
        let e = read_part_at(&at, BLOSC2_ID, &[256, 256], 4, &sel, 1).unwrap_err();
        assert!(matches!(&e, ReadError::Bad(s) if s.contains("c.bin") && s.contains("at byte 1000")), "{e}");
        // Truncated under us: an I/O error naming the file offset of the failed read.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(1000 + enc.len() as u64 / 2).unwrap();
        let e = read_part_at(&at, BLOSC2_ID, &[256, 256], 4, &sel, 1).unwrap_err();
        assert!(matches!(&e, ReadError::Io(s) if s.contains("file offset") && s.contains("c.bin")), "{e}");
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(read_part_at(&at, BLOSC2_ID, &[256, 256], 4, &sel, 1), Err(ReadError::Io(_))));
    }

    #[test]
    fn coalesce_merges_touching_ranges() {
        assert_eq!(coalesce(&[(0, 4), (4, 8), (10, 12), (11, 15)]), [(0, 8), (10, 15)]);
    }
}
