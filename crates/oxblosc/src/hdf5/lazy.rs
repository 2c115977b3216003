//! Parts of HDF5 chunks read from the file lazily: only the frame header, the offsets index,
//! the Blosc chunk header, its block-offset table and the blocks a part needs.
//!
//! A 32 MiB chunk holds hundreds of blocks; a small selection needs a few of them, so reading
//! the whole stored chunk would cost more than decoding. [`ChunkFile`] keeps the file open and,
//! per stored chunk, what its headers say (its [`Layout`]): a second read of a chunk reads only
//! blocks. The needed blocks are read with positioned reads (adjacent ones coalesced into one
//! read) into a compact copy of the chunk: its header, block-offset table and dictionary, then
//! just those blocks, with the table pointing at their new places and `cbytes` set to the
//! copy's length. (A zeroed buffer of the whole chunk's size cost a memset of the chunk per read
//! once the allocator reused its memory: two thirds of a small read's time, measured.) Small
//! chunks, chunks mostly needed and chunks of unusual layouts (special values, memcpyed,
//! variable-length blocks) are read whole and go through [`read_part_into`]. I/O failures
//! ([`ReadError::Io`]) are kept apart from bad chunk bytes ([`ReadError::Bad`]) so that callers
//! raise the right exception.
//!
//! The layouts stay valid while the file does: every read stats the path; another file there
//! (device, inode) is an I/O error ("replaced"), a changed size or modification time drops
//! them.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::cdvalues::{BLOSC2_ID, BLOSC_ID};
use super::read::{check_out, check_sel, few_blocks, flat_blocks, flat_part, part_bytes, read_part_into, rows, Part};
use crate::chunk::format::{blosc2_flags, flags, FLAGS2_VLBLOCKS};
use crate::chunk::{ChunkHeader, SpecialKind};
use crate::frame::header::{parse_metalayers, FrameHeader, FIXED_LEN};
use crate::nd::{DimSlice, Geometry, Meta};

/// Chunks stored in at most this many bytes are read with one read.
pub const WHOLE_BELOW: usize = 64 << 10;

/// One stored HDF5 chunk: `size` bytes at byte `offset` of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stored {
    pub offset: u64,
    pub size: usize,
}

/// One part of a box read ([`ChunkFile::read_box`]): `sel` of the chunk `at`, placed at
/// `origin` (items, per dim) of the box.
#[derive(Debug, Clone)]
pub struct BoxPart {
    pub at: Stored,
    pub sel: Vec<(u64, u64)>,
    pub origin: Vec<u64>,
}

/// A box read's slabs: per distinct leading-dim range of the parts, its row count, its rows of
/// `out` and its parts. Parts must lie inside the box, and those sharing rows must share them
/// exactly (a row of chunks).
#[allow(clippy::type_complexity)]
fn slabs<'o>(
    parts: &[BoxPart],
    box_dims: &[u64],
    ts: usize,
    out: &'o mut [u8],
) -> std::result::Result<Vec<(u64, &'o mut [u8], Vec<usize>)>, String> {
    let r = box_dims.len();
    let items: u64 = box_dims.iter().product();
    if r == 0 || out.len() as u64 != items * ts as u64 {
        return Err(format!("an output of {} bytes for a box of {box_dims:?} items of {ts} bytes", out.len()));
    }
    let mut groups: std::collections::BTreeMap<(u64, u64), Vec<usize>> = Default::default();
    for (i, p) in parts.iter().enumerate() {
        let inside = p.sel.len() == r
            && p.origin.len() == r
            && (0..r).all(|d| p.sel[d].0 <= p.sel[d].1 && p.origin[d] + (p.sel[d].1 - p.sel[d].0) <= box_dims[d]);
        if !inside {
            return Err(format!("part {i} ({:?} at {:?}) leaves the box {box_dims:?}", p.sel, p.origin));
        }
        groups.entry((p.origin[0], p.sel[0].1 - p.sel[0].0)).or_default().push(i);
    }
    let row = out.len() / box_dims[0].max(1) as usize;
    let mut rest = out;
    let mut at = 0u64;
    let mut slabs = Vec::with_capacity(groups.len());
    for ((lo, n), idx) in groups {
        if lo < at {
            return Err(format!("parts overlap in rows {lo}..{}", lo + n));
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut((lo - at) as usize * row);
        let (slab, tail) = tail.split_at_mut(n as usize * row);
        rest = tail;
        at = lo + n;
        slabs.push((n, slab, idx));
    }
    Ok(slabs)
}

/// Copy the box of `extent` items at `src_lo` of the C-order `src` (`src_dims` items) to
/// `dst_lo` of the C-order `dst` (`dst_dims` items), items of `ts` bytes, row by row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_box(
    src: &[u8],
    src_dims: &[u64],
    src_lo: &[u64],
    dst: &mut [u8],
    dst_dims: &[u64],
    dst_lo: &[u64],
    extent: &[u64],
    ts: usize,
) {
    let r = extent.len();
    if extent.contains(&0) {
        return;
    }
    let strides = |dims: &[u64]| {
        let mut s = vec![ts; r];
        for d in (0..r.saturating_sub(1)).rev() {
            s[d] = s[d + 1] * dims[d + 1] as usize;
        }
        s
    };
    let (ss, ds) = (strides(src_dims), strides(dst_dims));
    let run = extent[r - 1] as usize * ts;
    let mut idx = vec![0u64; r];
    loop {
        let a: usize = (0..r).map(|d| (src_lo[d] + idx[d]) as usize * ss[d]).sum();
        let b: usize = (0..r).map(|d| (dst_lo[d] + idx[d]) as usize * ds[d]).sum();
        dst[b..b + run].copy_from_slice(&src[a..a + run]);
        // Odometer over all dims but the last.
        let mut d = r - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < extent[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The part to read: the box `sel` (`[start, stop)` per dim, relative to the chunk) of a chunk
/// of `chunk_dims` items of `typesize` bytes that the filter `filter_id` stored.
#[derive(Debug, Clone, Copy)]
pub struct PartSpec<'a> {
    pub filter_id: i32,
    pub chunk_dims: &'a [u64],
    pub typesize: usize,
    pub sel: &'a [(u64, u64)],
}

/// How to read it: decoding threads, and the stored size at or below which a chunk is read
/// whole (tests and fuzzing take the lazy path on small chunks with 0).
#[derive(Debug, Clone, Copy)]
pub struct ReadOpts {
    pub nthreads: usize,
    pub whole_below: usize,
}

impl Default for ReadOpts {
    fn default() -> Self {
        ReadOpts { nthreads: 1, whole_below: WHOLE_BELOW }
    }
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

/// What identifies the file's state: (device, inode), size, modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    id: (u64, u64),
    len: u64,
    mtime: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let id = (0, 0);
        Stamp { id, len: m.len(), mtime: m.modified().ok() }
    }
}

/// The layouts of a file's chunks read so far, per stored chunk and filter.
type Layouts = HashMap<(Stored, i32), Arc<Layout>>;

/// Layouts kept per file at most (each a few KiB); more drop them all.
const MAX_LAYOUTS: usize = 1 << 14;

/// An HDF5 file open for lazy chunk reads, with the layouts of the chunks read so far. Safe to
/// share between threads (positioned reads; the layouts behind a mutex).
#[derive(Debug)]
pub struct ChunkFile {
    path: PathBuf,
    file: File,
    /// The (device, inode) the chunk addresses belong to.
    id: (u64, u64),
    state: Mutex<(Stamp, Layouts)>,
}

impl ChunkFile {
    /// Open `path`. `file_id` (device, inode), when given, is the file the chunk addresses
    /// came from: another file at `path` is an I/O error, not bytes to decode.
    pub fn open(path: &Path, file_id: Option<(u64, u64)>) -> Result<ChunkFile> {
        let io = |e: std::io::Error| ReadError::Io(format!("{}: {e}", path.display()));
        let file = File::open(path).map_err(io)?;
        let stamp = Stamp::of(&file.metadata().map_err(io)?);
        let id = file_id.unwrap_or(stamp.id);
        let f = ChunkFile { path: path.to_path_buf(), file, id, state: Mutex::new((stamp, HashMap::new())) };
        if cfg!(unix) && stamp.id != id {
            return Err(f.replaced(None));
        }
        Ok(f)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Drop the chunk layouts (e.g. after writing to the file).
    pub fn forget(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1.clear();
    }

    fn replaced(&self, at: Option<Stored>) -> ReadError {
        let what = at.map(|a| format!(" (chunk of {} bytes at byte {})", a.size, a.offset)).unwrap_or_default();
        ReadError::Io(format!(
            "{}: the file was replaced since the dataset was opened{what}; reopen it",
            self.path.display()
        ))
    }

    /// The path still names our file; its layouts are dropped when it changed.
    fn check(&self, at: Stored) -> Result<()> {
        let m = std::fs::metadata(&self.path).map_err(|e| ReadError::Io(format!("{}: {e}", self.path.display())))?;
        let now = Stamp::of(&m);
        if cfg!(unix) && now.id != self.id {
            return Err(self.replaced(Some(at)));
        }
        // Before anything is allocated for it: a size from a corrupt chunk index (up to 4 GiB
        // in HDF5's) once cost a zeroed buffer of that size before the read failed.
        if at.offset.checked_add(at.size as u64).is_none_or(|end| end > now.len) {
            return Err(ReadError::Io(format!(
                "{}: chunk of {} bytes at byte {} runs past the end of the file ({} bytes): truncated or corrupt",
                self.path.display(),
                at.size,
                at.offset,
                now.len
            )));
        }
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.0 != now {
            st.0 = now;
            st.1.clear();
        }
        Ok(())
    }

    /// [`read_part_into`] of the chunk `at`, reading only what the part needs, into `out`
    /// (exactly the part's C-order bytes, e.g. the caller's output array). Returns
    /// `(blocks_decoded, bytes_read)`.
    pub fn read_part_into(&self, at: Stored, spec: &PartSpec, opts: &ReadOpts, out: &mut [u8]) -> Result<(u64, u64)> {
        check_sel(spec.chunk_dims, spec.typesize, spec.sel).map_err(ReadError::Bad)?;
        check_out(spec.typesize, spec.sel, out).map_err(ReadError::Bad)?;
        self.check(at)?;
        let mut src = Src { file: &self.file, path: &self.path, at, read: 0 };
        let layout = if at.size <= opts.whole_below { None } else { Some(self.layout(&mut src, spec.filter_id)?) };
        let lazy = match layout.as_deref() {
            Some(Layout::Blocks(b)) => read_blocks(&mut src, b, spec, opts.nthreads, out)?,
            _ => None,
        };
        let decoded = match lazy {
            Some(n) => n,
            None => {
                // A per-thread buffer, reused: a fresh multi-megabyte buffer per read costs more
                // in page faults than reading and decoding (13 ms for 25 MiB, seen in the benchmark).
                let mut buf = READ_BUF.with(|c| c.take());
                let r = read_whole(&mut src, &mut buf, spec, opts.nthreads, out);
                if buf.len() <= KEEP_BUF {
                    READ_BUF.with(|c| c.set(buf));
                }
                r?
            }
        };
        Ok((decoded, src.read))
    }

    /// [`ChunkFile::read_part_into`] into a new buffer.
    pub fn read_part(&self, at: Stored, spec: &PartSpec, opts: &ReadOpts) -> Result<Part> {
        check_sel(spec.chunk_dims, spec.typesize, spec.sel).map_err(ReadError::Bad)?;
        let mut data = vec![0u8; part_bytes(spec.typesize, spec.sel)];
        let (blocks_decoded, bytes_read) = self.read_part_into(at, spec, opts, &mut data)?;
        Ok(Part { data, blocks_decoded, bytes_read })
    }

    /// Several chunk parts into one C-order box `out` of `box_dims` items: part `i` is `sel` of
    /// the chunk `at`, placed at `origin` in the box. Parts in different rows of chunks (their
    /// leading-dim ranges) are decoded on up to `opts.nthreads` threads at once, each into its
    /// own slab of `out`; parts filling their slab decode straight into it. Returns the sums of
    /// `(blocks_decoded, bytes_read, parts_in_place)`, or the failing part's index and error.
    pub fn read_box(
        &self,
        parts: &[BoxPart],
        spec: &PartSpec,
        box_dims: &[u64],
        opts: &ReadOpts,
        out: &mut [u8],
    ) -> std::result::Result<(u64, u64, u64), (usize, ReadError)> {
        let ts = spec.typesize;
        let slabs = slabs(parts, box_dims, ts, out).map_err(|e| (0, ReadError::Bad(e)))?;
        let nt = opts.nthreads.clamp(1, slabs.len().max(1));
        let inner = ReadOpts { nthreads: if nt > 1 { 1 } else { opts.nthreads.max(1) }, ..*opts };
        let run = |(rows, slab, idx): (u64, &mut [u8], Vec<usize>)| {
            let mut sums = (0, 0, 0);
            let slab_dims: Vec<u64> = std::iter::once(rows).chain(box_dims[1..].iter().copied()).collect();
            for i in idx {
                let p = &parts[i];
                let spec = PartSpec { sel: &p.sel, ..*spec };
                let dims: Vec<u64> = p.sel.iter().map(|&(a, b)| b - a).collect();
                let r = if dims == slab_dims {
                    sums.2 += 1;
                    self.read_part_into(p.at, &spec, &inner, slab)
                } else {
                    let n = part_bytes(ts, &p.sel);
                    with_buf(
                        &PART,
                        n,
                        |buf| {
                            let r = self.read_part_into(p.at, &spec, &inner, buf)?;
                            let mut lo = p.origin.clone();
                            lo[0] = 0;
                            copy_box(buf, &dims, &vec![0; dims.len()], slab, &slab_dims, &lo, &dims, ts);
                            Ok(r)
                        },
                        |e| ReadError::Bad(format!("{n} bytes of scratch: {e}")),
                    )
                };
                let (b, n) = r.map_err(|e| (i, e))?;
                sums.0 += b;
                sums.1 += n;
            }
            Ok(sums)
        };
        let results: Vec<_> = if nt == 1 {
            slabs.into_iter().map(run).collect()
        } else {
            let queue = Mutex::new(slabs.into_iter());
            std::thread::scope(|sc| {
                let workers: Vec<_> = (0..nt)
                    .map(|_| {
                        sc.spawn(|| {
                            let mut mine = Vec::new();
                            loop {
                                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                                let Some(job) = next else { break };
                                mine.push(run(job));
                            }
                            mine
                        })
                    })
                    .collect();
                workers.into_iter().flat_map(|w| w.join().expect("a read thread panicked")).collect()
            })
        };
        let mut total = (0, 0, 0);
        for r in results {
            let (a, b, c) = r?;
            total = (total.0 + a, total.1 + b, total.2 + c);
        }
        Ok(total)
    }

    /// The chunk's layout, from the cache or read from its headers (not cached when bad).
    fn layout(&self, src: &mut Src, filter_id: i32) -> Result<Arc<Layout>> {
        let key = (src.at, filter_id);
        if let Some(l) = self.state.lock().unwrap_or_else(|p| p.into_inner()).1.get(&key) {
            return Ok(l.clone());
        }
        let l = Arc::new(match filter_id {
            BLOSC2_ID => blosc2_layout(src)?,
            BLOSC_ID => chunk_layout(src, 0, None)?,
            _ => Layout::Whole,
        });
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.1.len() >= MAX_LAYOUTS {
            st.1.clear();
        }
        st.1.insert(key, l.clone());
        Ok(l)
    }
}

/// What a stored chunk's headers say.
#[derive(Debug)]
enum Layout {
    /// Read it whole (small, special, memcpyed, VL blocks, not one chunk in the frame).
    Whole,
    Blocks(Box<Blocks>),
}

/// A Blosc chunk whose blocks can be read one by one.
#[derive(Debug)]
struct Blocks {
    /// Where the Blosc chunk starts in the stored bytes.
    at: usize,
    /// Its first bytes: header, block-offset table, dictionary.
    prefix: Vec<u8>,
    header_len: usize,
    /// Each block's start and end (the next block's start, or the chunk's end).
    spans: Vec<(usize, usize)>,
    blocksize: usize,
    nbytes: usize,
    /// Delta-filtered blocks decode against block 0.
    delta: bool,
    /// The b2nd metalayer's geometry of a one-chunk frame.
    geom: Option<Geometry>,
}

/// Positioned reads of one stored chunk, counted.
struct Src<'a> {
    file: &'a File,
    path: &'a Path,
    at: Stored,
    read: u64,
}

impl Src<'_> {
    fn where_(&self) -> String {
        format!("{}: chunk of {} bytes at byte {}", self.path.display(), self.at.size, self.at.offset)
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
        read_exact_at(self.file, buf, abs).map_err(|e| {
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

/// Read buffers larger than this are not kept between reads.
const KEEP_BUF: usize = 256 << 20;

thread_local! {
    /// Whole stored chunks, reused.
    static READ_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Compact chunk copies, reused.
    static COMPACT: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Decoded n-d blocks, reused.
    static BLOCKS: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Box parts that are not one run of their slab, reused.
    static PART: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `f` with this thread's buffer `cell` grown to `len` bytes (contents unspecified).
fn with_buf<T>(
    cell: &'static std::thread::LocalKey<std::cell::Cell<Vec<u8>>>,
    len: usize,
    f: impl FnOnce(&mut [u8]) -> Result<T>,
    grow_err: impl FnOnce(std::collections::TryReserveError) -> ReadError,
) -> Result<T> {
    let mut buf = cell.with(|c| c.take());
    if buf.len() < len {
        buf.try_reserve_exact(len - buf.len()).map_err(grow_err)?;
        buf.resize(len, 0);
    }
    let r = f(&mut buf[..len]);
    if buf.len() <= KEEP_BUF {
        cell.with(|c| c.set(buf));
    }
    r
}

/// The whole stored chunk read into `buf` (grown as needed), then [`read_part_into`].
fn read_whole(src: &mut Src, buf: &mut Vec<u8>, spec: &PartSpec, nthreads: usize, out: &mut [u8]) -> Result<u64> {
    let size = src.at.size;
    if buf.len() < size {
        buf.try_reserve_exact(size - buf.len()).map_err(|e| src.bad(&e))?;
        buf.resize(size, 0);
    }
    src.read_into(0, &mut buf[..size])?;
    read_part_into(spec.filter_id, &buf[..size], spec.chunk_dims, spec.typesize, spec.sel, nthreads, out)
        .map_err(|e| src.bad(&e))
}

/// A Blosc2 frame holding one chunk: header and metalayers, the offsets index, then the
/// chunk's own layout.
fn blosc2_layout(src: &mut Src) -> Result<Layout> {
    let size = src.at.size;
    let fixed = src.get(0, FIXED_LEN.min(size))?;
    let h = FrameHeader::parse(&fixed, size as u64).map_err(|e| src.bad(&e))?;
    if h.frame_len != size as u64 || h.nbytes != i64::from(h.chunksize) || h.nbytes <= 0 {
        return Ok(Layout::Whole); // not one chunk filling the stored bytes: the whole read says why
    }
    let hl = h.header_len as usize;
    let mut header = fixed;
    header.extend(src.get(FIXED_LEN, hl - FIXED_LEN)?);
    let metas = parse_metalayers(&header).map_err(|e| src.bad(&e))?;
    // The offsets index follows the chunks section; one entry for one chunk.
    let idx_at = usize::try_from(h.cbytes).ok().and_then(|c| c.checked_add(hl)).filter(|&p| p < size);
    let Some(idx_at) = idx_at else { return Ok(Layout::Whole) };
    let mut idx = src.get(idx_at, 16.min(size - idx_at))?;
    let idx_len = stored_cbytes(&idx).filter(|&n| n >= idx.len() && n <= size - idx_at);
    let Some(idx_len) = idx_len else { return Ok(Layout::Whole) };
    idx.extend(src.get(idx_at + idx.len(), idx_len - idx.len())?);
    let off = crate::frame::offsets::decode_index(&idx, 1).map_err(|e| src.bad(&e))?[0];
    let Some(chunk_at) = usize::try_from(off).ok().and_then(|o| o.checked_add(hl)).filter(|&p| p < size) else {
        return Ok(Layout::Whole); // a special value, or a bad offset the whole read reports
    };
    let meta = metas.iter().find(|(n, _)| n == "b2nd" || n == "caterva").map(|(_, v)| v);
    let geom = match meta {
        Some(m) => {
            let meta = Meta::decode(m).map_err(|e| src.bad(&e))?;
            Geometry::from_meta(&meta, h.typesize as usize).ok().filter(|g| g.nchunks == 1)
        }
        None => None,
    };
    chunk_layout(src, chunk_at, geom)
}

/// The Blosc chunk at `at` of the stored bytes: its header, block-offset table and
/// dictionary. Anything unusual is read whole (that read reports what is wrong).
fn chunk_layout(src: &mut Src, at: usize, geom: Option<Geometry>) -> Result<Layout> {
    let size = src.at.size;
    let mut prefix = src.get(at, 16.min(size - at))?;
    let Some(cbytes) = stored_cbytes(&prefix).filter(|&n| n >= 32 && n <= size - at) else { return Ok(Layout::Whole) };
    let fl = prefix[2];
    if fl & flags::MEMCPYED != 0 {
        return Ok(Layout::Whole);
    }
    let hl = if fl & flags::EXTENDED == flags::EXTENDED { 32 } else { 16 };
    if hl == 32 {
        prefix.extend(src.get(at + 16, 16)?);
        if prefix[31] & blosc2_flags::SPECIAL_MASK != 0 || prefix[30] & FLAGS2_VLBLOCKS != 0 {
            return Ok(Layout::Whole);
        }
    }
    let field = |i: usize| usize::try_from(i32::from_le_bytes(prefix[i..i + 4].try_into().expect("4"))).ok();
    let (Some(nbytes), Some(blocksize)) = (field(4), field(8)) else { return Ok(Layout::Whole) };
    if nbytes == 0 || blocksize == 0 {
        return Ok(Layout::Whole);
    }
    let nblocks = nbytes.div_ceil(blocksize.min(nbytes));
    let table_end = nblocks.checked_mul(4).and_then(|n| n.checked_add(hl)).filter(|&e| e <= cbytes);
    let Some(table_end) = table_end else { return Ok(Layout::Whole) };
    prefix.extend(src.get(at + hl, table_end - hl)?);
    let mut data_start = table_end;
    if hl == 32 && prefix[31] & blosc2_flags::USE_DICT != 0 && table_end + 4 <= cbytes {
        prefix.extend(src.get(at + table_end, 4)?);
        let n = i32::from_le_bytes(prefix[table_end..table_end + 4].try_into().expect("4 bytes"));
        let end = usize::try_from(n).ok().and_then(|n| n.checked_add(table_end + 4)).filter(|&e| e <= cbytes);
        let Some(end) = end else { return Err(src.bad(&format!("dictionary size {n} is not in the chunk"))) };
        prefix.extend(src.get(at + table_end + 4, end - table_end - 4)?);
        data_start = end;
    }
    // The header checked as the decoder will see it: a copy whose cbytes is the prefix's.
    let mut probe = prefix.clone();
    let plen = probe.len() as i32;
    probe[12..16].copy_from_slice(&plen.to_le_bytes());
    let h = ChunkHeader::parse(&probe).map_err(|e| src.bad(&e))?;
    if h.special().map_err(|e| src.bad(&e))? != SpecialKind::None || h.nblocks() != nblocks {
        return Ok(Layout::Whole);
    }
    let starts: Vec<usize> = (0..nblocks)
        .map(|i| i32::from_le_bytes(prefix[hl + 4 * i..hl + 4 * i + 4].try_into().expect("4")) as usize)
        .collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    sorted.dedup();
    // Each block's bytes run to the next block's start (or the chunk's end); bad starts get
    // an empty span and the decoder reports them.
    let spans = starts
        .iter()
        .map(|&s| {
            if s < data_start || s >= cbytes {
                return (s, s);
            }
            let i = sorted.partition_point(|&t| t <= s);
            (s, sorted.get(i).copied().unwrap_or(cbytes).min(cbytes))
        })
        .collect();
    Ok(Layout::Blocks(Box::new(Blocks {
        at,
        prefix,
        header_len: hl,
        spans,
        blocksize: h.blocksize,
        nbytes: h.nbytes,
        delta: h.filters.contains(&crate::chunk::filter::DELTA),
        geom,
    })))
}

/// The part from the blocks it needs (a compact copy of the chunk holding only them); None
/// when most blocks are needed or the n-d layout does not match (read it whole instead).
fn read_blocks(src: &mut Src, l: &Blocks, spec: &PartSpec, nthreads: usize, out: &mut [u8]) -> Result<Option<u64>> {
    let PartSpec { chunk_dims, typesize, sel, .. } = *spec;
    let geom = l.geom.as_ref().filter(|g| g.shape == chunk_dims && g.typesize == typesize);
    let blocks = match geom {
        Some(g) if l.blocksize == g.block_bytes() && l.nbytes == g.chunk_bytes() => {
            let ds: Vec<DimSlice> = sel.iter().map(|&(lo, hi)| DimSlice::new(lo, hi, 1)).collect();
            let plan = g.plan(&ds).map_err(|e| src.bad(&e))?;
            let mut b: Vec<usize> = plan.chunks(g).iter().flat_map(|(_, parts)| plan.blocks_of(g, parts)).collect();
            b.sort_unstable();
            b
        }
        Some(_) => return Ok(None),
        None => flat_blocks(&rows(chunk_dims, typesize, sel), l.blocksize.max(1)),
    };
    if blocks.is_empty() || !few_blocks(blocks.len(), l.spans.len()) {
        return Ok(None);
    }
    let mut want = blocks.clone();
    if l.delta {
        want.push(0);
    }
    let mut ranges: Vec<(usize, usize)> =
        want.iter().filter_map(|&b| l.spans.get(b).copied()).filter(|&(s, e)| e > s).collect();
    ranges.sort_unstable();
    ranges.dedup();
    let ranges = coalesce(&ranges);
    let need = l.prefix.len() + ranges.iter().map(|r| r.1 - r.0).sum::<usize>();
    let chunk_bytes = check_sel(chunk_dims, typesize, sel).map_err(ReadError::Bad)?;
    let where_ = src.where_();
    let bad = |e: &dyn std::fmt::Display| ReadError::Bad(format!("{where_}: {e}"));
    let grow = |e| bad(&e);
    with_buf(
        &COMPACT,
        need,
        |buf| {
            buf[..l.prefix.len()].copy_from_slice(&l.prefix);
            let mut pos = l.prefix.len();
            let mut placed = Vec::with_capacity(ranges.len());
            for &(lo, hi) in &ranges {
                src.read_into(l.at + lo, &mut buf[pos..pos + hi - lo])?;
                placed.push((lo, hi, pos));
                pos += hi - lo;
            }
            for &b in &want {
                let s = l.spans[b].0;
                if let Some(&(lo, _, p)) = placed.iter().find(|&&(lo, hi, _)| lo <= s && s < hi) {
                    let at = l.header_len + 4 * b;
                    buf[at..at + 4].copy_from_slice(&((p + s - lo) as i32).to_le_bytes());
                }
            }
            buf[12..16].copy_from_slice(&(need as i32).to_le_bytes());
            let chunk = &buf[..];
            match geom {
                Some(g) => with_buf(
                    &BLOCKS,
                    g.block_bytes() * blocks.len(),
                    |dec| nd_part(chunk, g, &blocks, sel, nthreads, dec, out).map_err(|e| bad(&e)),
                    |e| bad(&e),
                ),
                None => flat_part(chunk, chunk_dims, typesize, chunk_bytes, sel, nthreads, out).map_err(|e| bad(&e)),
            }
            .map(Some)
        },
        grow,
    )
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
/// blocks into `dec` (their size), then copy each one's part of the box into place in `data`,
/// row by row.
fn nd_part(
    chunk: &[u8],
    g: &Geometry,
    blocks: &[usize],
    sel: &[(u64, u64)],
    nthreads: usize,
    dec: &mut [u8],
    data: &mut [u8],
) -> crate::chunk::Result<u64> {
    let bb = g.block_bytes();
    let ranges: Vec<(usize, usize)> = blocks.iter().map(|&b| (b * bb, (b + 1) * bb)).collect();
    crate::chunk::decompress_ranges(chunk, &ranges, dec, nthreads)?;
    let r = sel.len();
    let out_dims: Vec<u64> = sel.iter().map(|&(lo, hi)| hi - lo).collect();
    for (k, &b) in blocks.iter().enumerate() {
        // The block's origin in the chunk, and its box's overlap with the selection.
        let mut rest = b as u64;
        let mut origin = vec![0u64; r];
        for d in (0..r).rev() {
            origin[d] = (rest % g.bgrid[d]) * g.blocks[d];
            rest /= g.bgrid[d];
        }
        let lo: Vec<u64> = (0..r).map(|d| sel[d].0.max(origin[d])).collect();
        let hi: Vec<u64> = (0..r).map(|d| sel[d].1.min(origin[d] + g.blocks[d])).collect();
        if (0..r).any(|d| lo[d] >= hi[d]) {
            continue;
        }
        let src_lo: Vec<u64> = (0..r).map(|d| lo[d] - origin[d]).collect();
        let dst_lo: Vec<u64> = (0..r).map(|d| lo[d] - sel[d].0).collect();
        let extent: Vec<u64> = (0..r).map(|d| hi[d] - lo[d]).collect();
        let block = &dec[k * bb..(k + 1) * bb];
        copy_box(block, &g.blocks, &src_lo, data, &out_dims, &dst_lo, &extent, g.typesize);
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

    /// [`ChunkFile::read_part`] of a new [`ChunkFile`] (4-byte items, the default options).
    fn read_part_at(
        path: &Path,
        at: Stored,
        filter_id: i32,
        chunk_dims: &[u64],
        sel: &[(u64, u64)],
        nthreads: usize,
    ) -> Result<Part> {
        let spec = PartSpec { filter_id, chunk_dims, typesize: 4, sel };
        ChunkFile::open(path, None)?.read_part(at, &spec, &ReadOpts { nthreads, ..ReadOpts::default() })
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
            let at = Stored { offset: 1000, size: enc.len() };
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
                    let got = read_part_at(&path, at, *id, &dims, &sel, nt).unwrap();
                    assert_eq!(got.data, want.data, "case {k} {sel:?}");
                    assert_eq!(got.blocks_decoded, want.blocks_decoded, "case {k} {sel:?}");
                }
            }
            let row = read_part_at(&path, at, *id, &dims, &[(100, 101), (0, 512)], 1).unwrap();
            assert!(row.bytes_read * 4 < enc.len() as u64, "case {k}: read {} of {}", row.bytes_read, enc.len());
            // Two items: one or two blocks (plus block 0 with delta) of the 64.
            let tiny = read_part_at(&path, at, *id, &dims, &[(7, 9), (3, 5)], 1).unwrap();
            assert!(tiny.bytes_read * 12 < enc.len() as u64, "case {k}: read {} of {}", tiny.bytes_read, enc.len());
            let whole = read_part_at(&path, at, *id, &dims, &[(0, 512), (0, 512)], 1).unwrap();
            // Read whole after the few headers that showed it needs most blocks.
            assert!((enc.len() as u64..enc.len() as u64 + 4096).contains(&whole.bytes_read), "{}", whole.bytes_read);
        }
    }

    #[test]
    fn io_failures_are_io_errors_and_bad_bytes_are_bad() {
        let raw = data(256 * 256);
        let enc = encode_blosc2(&[1, 8192, 4, 1 << 18, 5, 1, 1, 2, 256, 256], &raw).unwrap();
        let (path, _tmp) = file_with(&enc, "err");
        let at = Stored { offset: 1000, size: enc.len() };
        let sel = [(200, 201), (0, 256)];
        let spec = PartSpec { filter_id: BLOSC2_ID, chunk_dims: &[256, 256], typesize: 4, sel: &sel };
        // One open file, its layouts cached, through every change below.
        let f = ChunkFile::open(&path, None).unwrap();
        let read = || f.read_part(at, &spec, &ReadOpts::default());
        assert!(read().is_ok());
        // Another file at the path.
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(&path).unwrap();
            let e = ChunkFile::open(&path, Some((m.dev(), m.ino() + 1))).unwrap_err();
            assert!(matches!(&e, ReadError::Io(s) if s.contains("replaced") && s.contains("c.bin")), "{e}");
        }
        // Corrupted block bytes: Bad, naming the file and the chunk's offset.
        let good = std::fs::read(&path).unwrap();
        let mut bytes = good.clone();
        let mid = 1000 + enc.len() - enc.len() / 8;
        bytes[mid..mid + 2000].iter_mut().for_each(|b| *b ^= 0x5A);
        std::fs::write(&path, &bytes).unwrap();
        let bad = f.read_part(at, &PartSpec { sel: &[(255, 256), (0, 256)], ..spec }, &ReadOpts::default());
        let e = bad.unwrap_err();
        assert!(matches!(&e, ReadError::Bad(s) if s.contains("c.bin") && s.contains("at byte 1000")), "{e}");
        // Corrupted headers (the file rewritten in place, same size): the cached layout is
        // dropped and the headers read again, so the read fails rather than use the old one.
        let mut bytes = good.clone();
        bytes[1016..1080].iter_mut().for_each(|b| *b = 0xFF);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(read(), Err(ReadError::Bad(_))), "{:?}", read().map(|p| p.bytes_read));
        std::fs::write(&path, &good).unwrap();
        assert_eq!(read().unwrap().data, raw[200 * 256 * 4..201 * 256 * 4]);
        // Truncated under us: an I/O error naming the file, the chunk's offset and the file's
        // length, found before anything is read or allocated for the chunk.
        let t = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let cut = 1000 + enc.len() as u64 / 2;
        t.set_len(cut).unwrap();
        let e = read().unwrap_err();
        let past = format!("at byte 1000 runs past the end of the file ({cut} bytes)");
        assert!(matches!(&e, ReadError::Io(s) if s.contains(&past) && s.contains("c.bin")), "{e}");
        // Replaced by another file: an I/O error, whatever that file holds.
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(read(), Err(ReadError::Io(_))));
        std::fs::write(&path, &good).unwrap();
        if cfg!(unix) {
            assert!(matches!(read(), Err(ReadError::Io(s)) if s.contains("replaced")));
        }
    }

    #[test]
    fn a_second_read_of_a_chunk_reads_only_blocks() {
        let raw = data(512 * 512);
        let enc = encode_blosc2(&[1, 16384, 4, 1 << 20, 5, 1, 1, 2, 512, 512], &raw).unwrap();
        let (path, _tmp) = file_with(&enc, "again");
        let at = Stored { offset: 1000, size: enc.len() };
        let sel = [(7, 9), (3, 5)];
        let spec = PartSpec { filter_id: BLOSC2_ID, chunk_dims: &[512, 512], typesize: 4, sel: &sel };
        let f = ChunkFile::open(&path, None).unwrap();
        let first = f.read_part(at, &spec, &ReadOpts::default()).unwrap();
        let second = f.read_part(at, &spec, &ReadOpts::default()).unwrap();
        assert_eq!(first.data, second.data);
        // The headers (frame, index, chunk header and its 64-entry table) are not read again.
        assert!(second.bytes_read + 256 < first.bytes_read, "{} then {}", first.bytes_read, second.bytes_read);
        f.forget();
        assert_eq!(f.read_part(at, &spec, &ReadOpts::default()).unwrap().bytes_read, first.bytes_read);
    }

    #[test]
    fn a_box_over_many_chunks_equals_the_array_on_one_and_two_threads() {
        // A 300 x 200 int32 array in 128 x 128 chunks (3 x 2, edge chunks padded).
        let (rows, cols, c) = (300u64, 200u64, 128u64);
        let item = |i: u64, j: u64| ((i * 7919 + j * 31) % 100_003) as u32;
        let mut file = vec![9u8; 50];
        let mut stored = Vec::new();
        for (ci, cj) in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)] {
            let raw: Vec<u8> = (0..c * c)
                .flat_map(|k| {
                    let (i, j) = (ci * c + k / c, cj * c + k % c);
                    (if i < rows && j < cols { item(i, j) } else { 0 }).to_le_bytes()
                })
                .collect();
            let enc = encode_blosc2(&[1, 4096, 4, (c * c * 4) as u32, 5, 1, 1, 2, c as u32, c as u32], &raw).unwrap();
            stored.push(((ci, cj), Stored { offset: file.len() as u64, size: enc.len() }));
            file.extend(enc);
        }
        let (path, _tmp) = file_with(&file, "box");
        let f = ChunkFile::open(&path, None).unwrap();
        let (lo, hi) = ([10u64, 5], [290u64, 195]);
        let parts: Vec<BoxPart> = stored
            .iter()
            .map(|&((ci, cj), at)| {
                let start = [ci * c, cj * c];
                let sel: Vec<(u64, u64)> =
                    (0..2).map(|d| (lo[d].max(start[d]) - start[d], hi[d].min(start[d] + c) - start[d])).collect();
                let origin = (0..2).map(|d| start[d] + sel[d].0 - lo[d]).collect();
                BoxPart { at: Stored { offset: at.offset + 1000, ..at }, sel, origin }
            })
            .collect();
        let box_dims = [hi[0] - lo[0], hi[1] - lo[1]];
        let want: Vec<u8> =
            (lo[0]..hi[0]).flat_map(|i| (lo[1]..hi[1]).flat_map(move |j| item(i, j).to_le_bytes())).collect();
        let spec = PartSpec { filter_id: BLOSC2_ID, chunk_dims: &[c, c], typesize: 4, sel: &[] };
        for nthreads in [1, 2] {
            let mut out = vec![0u8; want.len()];
            let opts = ReadOpts { nthreads, whole_below: 0 };
            let (blocks, read, _) = f.read_box(&parts, &spec, &box_dims, &opts, &mut out).unwrap();
            assert_eq!(out, want, "{nthreads} threads");
            assert!(blocks > 0 && read > 0);
        }
        // Overlapping rows, a part outside the box, a bad chunk: errors, the last naming its part.
        let mut out = vec![0u8; want.len()];
        let mut bad = parts.clone();
        bad[2].origin[0] -= 1;
        assert!(f.read_box(&bad, &spec, &box_dims, &ReadOpts::default(), &mut out).is_err());
        bad = parts.clone();
        bad[5].origin[1] += 1;
        assert!(f.read_box(&bad, &spec, &box_dims, &ReadOpts::default(), &mut out).is_err());
        bad = parts.clone();
        bad[3].at.offset += 1;
        let (i, e) = f.read_box(&bad, &spec, &box_dims, &ReadOpts::default(), &mut out).unwrap_err();
        assert!(i == 3 && matches!(e, ReadError::Bad(_)), "{i} {e}");
    }

    #[test]
    fn coalesce_merges_touching_ranges() {
        assert_eq!(coalesce(&[(0, 4), (4, 8), (10, 12), (11, 15)]), [(0, 8), (10, 15)]);
    }
}
