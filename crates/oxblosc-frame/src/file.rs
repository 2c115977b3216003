//! Frame files: contiguous frame files (`.b2frame`) and sparse frame directories (format spec
//! 4.1, 4.8), opened lazily and written incrementally.
//!
//! Opening reads the 87-byte header, the metalayers, the trailer and the offsets index; each
//! chunk is read with a positioned read when asked for. A frame may start at an offset inside a
//! larger file ([`open_at`]; read-only).
//!
//! ## Write order and durability
//!
//! The rule: *never overwrite a byte the committed header references; commit by patching the
//! header last*. A process killed at any point leaves the old or the new state (checked by
//! `tests/crash.rs`, which SIGKILLs a writer in a loop and also reads crashed files with
//! python-blosc2). Against power loss, [`SyncMode::Full`] adds fsync at the two barriers.
//!
//! * Sparse frames (directory): a new or updated chunk goes to a **new** `%08X.chunk` file
//!   (id = largest id ever used + 1), never over an existing one. Then the index frame is
//!   written to `chunks.b2frame.tmp` and renamed over `chunks.b2frame` (atomic on POSIX), and
//!   only after that are the files of replaced or deleted chunks removed (at worst an orphan
//!   chunk file remains).
//! * Contiguous files. A frame is `header | chunks section (cbytes) | index | trailer`; readers
//!   (ours, C-Blosc2/python-blosc2) accept dead bytes inside the chunks section, gaps between an
//!   index chunk's bstarts and its blocks, and a file longer than `frame_len` (checked with
//!   python-blosc2 4.14). The writer allocates *extents* past everything the committed state
//!   uses: a chunk area (room for the pending chunks plus a reserve as large as the estimated
//!   live bytes, 1 MiB..1 GiB) followed by two index slots. Each change:
//!   1. writes the new chunks at the free end of the chunk area (unreferenced bytes);
//!   2. writes the new offsets index + trailer into the index slot the header does **not**
//!      point to (the other one holds the committed state), blocks first, then the trailer,
//!      then the 32-byte index chunk header + bstarts; `fsync` with `SyncMode::Full`;
//!   3. commits by patching the header bytes that changed (`frame_len`, `cbytes`, `nbytes`,
//!      `chunksize`, flags: one write of at most 46 bytes in the first page); `fsync`.
//!
//!   A crash before 3 leaves the old header pointing at the old, intact index and trailer; the
//!   file may then be longer than `frame_len`, which every reader accepts and which opening
//!   with [`Mode::Append`] truncates (recovery). The old index becomes dead space inside the
//!   chunks section. The slots ping-pong, so an append rewrites only what changed: the index is
//!   assembled from independently encoded 16 KiB blocks (2048 entries); a slot keeps the blocks
//!   it already holds and only the changed ones (for an append: the last) are re-encoded and
//!   written, plus the bstarts (4 bytes per 2048 chunks). Per-append cost is therefore flat
//!   (inserts and deletes in the middle shift the index and stay O(nchunks), as in C). When the
//!   chunk area or a slot is full a new extent is allocated at the end of the file (one full
//!   index write, amortised by the geometric reserve).
//! * Reopening for append reuses the free space between the last stored chunk and the
//!   committed index as the first chunk area.
//! * Dead space (replaced or deleted chunks, abandoned index slots) is bounded: when it exceeds
//!   the live bytes (and 1 MiB plus 4x the index), the frame is rewritten compactly to
//!   `<file>.oxtmp` and renamed over the file (atomic), as [`SChunk::compact`] does on demand.
//!   Live bytes of a reopened frame are estimated from (up to 4096 sampled) chunk headers.
//! * Closing (dropping the super-chunk) moves the index and trailer right after the last chunk
//!   (via a copy past everything when there is no room below the committed index), patches the
//!   header and truncates: a cleanly closed file has the usual compact tail (`frame_len` = file
//!   length) and loads as an in-memory frame too.
//! * Concurrency: without locking, one writer at a time and readers in other processes may
//!   see an older state or fail on bytes the writer moved (a reader's index can point to
//!   space a later change reused or truncated). With [`OpenConfig::locking`] (module
//!   [`crate::lock`]) every commit above (and closing, and a compacting rewrite) runs under
//!   the exclusive lock and bumps the generation; readers parse and read under the shared
//!   lock and get [`Error::Stale`] instead of bytes from a newer state, then
//!   [`SChunk::refresh`] re-reads header, trailer and index. A writer whose view is stale
//!   (another writer committed) refuses to commit. Memory-mapped readers take no lock.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use oxblosc_chunk::{CParams, DParams};

use crate::cframe;
use crate::header::{self, FIXED_LEN, FRAME_CONTIGUOUS, FRAME_SPARSE};
use crate::lock::{FrameLock, LockGuard, LockView};
use crate::mmap::Map;
use crate::offsets;
use crate::schunk::SChunk;
use crate::slots::{Dirty, Slot, BLOCK_ENTRIES};
use crate::storage::{chunk_file_name, write_all_at, Backing, Source};
use crate::{Error, Result};

/// Name of the index frame inside a sparse frame directory.
pub const SPARSE_INDEX: &str = "chunks.b2frame";

/// How a frame file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Read only.
    #[default]
    Read,
    /// Read and write an existing frame (appends never rewrite stored chunks).
    Append,
}

/// Everything [`open_with`] accepts (python-blosc2's `mode`, `offset`, `locking`, `mmap_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenConfig {
    pub mode: Mode,
    /// Start of a frame embedded in a larger file (read-only, contiguous only).
    pub offset: u64,
    /// Advisory cross-process lock through the `.b2lock` sidecar file ([`crate::lock`]).
    pub locking: bool,
    /// Map the file read-only instead of positioned reads (`Mode::Read`, no locking; see the
    /// SIGBUS hazard in the crate's `mmap` module docs). Sparse directories ignore it.
    pub mmap: bool,
}

/// Whether writes are followed by fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Leave flushing to the OS (safe against process crashes for sparse frames).
    #[default]
    None,
    /// fsync chunk data before the index that points to it is published.
    Full,
}

/// Persistence state of a super-chunk opened writable.
#[derive(Debug)]
pub(crate) struct Writer {
    path: PathBuf,
    contiguous: bool,
    file: Option<Arc<File>>,
    header_len: u64,
    next_id: u64,
    retired: Vec<u64>,
    sync_mode: SyncMode,
    /// Contiguous files: where the next states go.
    contig: Option<Contig>,
    /// Present with locking: commits take the exclusive lock and bump the generation.
    lock: Option<Arc<LockView>>,
    /// Sparse frames: encoded blocks of the index in `chunks.b2frame`.
    sparse_index: SparseIndex,
}

/// The offsets index of a sparse frame kept as independently encoded 16 KiB blocks (like the
/// contiguous writer's), so a commit re-encodes only the blocks whose entries changed (an
/// append: the last) instead of the whole index; `chunks.b2frame` is still rewritten whole.
#[derive(Debug, Default)]
struct SparseIndex {
    blocks: Vec<Option<Arc<[u8]>>>,
    /// The chunk size the blocks were encoded for (special entries depend on it).
    chunksize: Option<i64>,
}

impl Writer {
    pub(crate) fn retire(&mut self, id: u64) {
        if !self.contiguous {
            self.retired.push(id);
        }
    }
}

/// One encoded block of the offsets index (`i32 csize` + stream), with a unique id so a
/// slot holding the same block can keep it.
#[derive(Debug, Clone)]
struct EncBlock {
    id: u64,
    bytes: Arc<[u8]>,
}

/// A region holding one version of the offsets index chunk followed by the trailer.
#[derive(Debug, Clone, Default)]
struct IndexSlot {
    start: u64,
    cap: u64,
    /// Room for this many bstarts; block data starts at `32 + 4 * bcap`. 0 = nothing laid out.
    bcap: usize,
    /// (block id, position relative to `start`, length) of the blocks the slot holds.
    blocks: Vec<(u64, u64, u64)>,
    /// End (relative) of the block data: the index chunk's cbytes; the trailer follows.
    used: u64,
}

/// A chunk area followed by two index slots, all beyond what older states reference.
#[derive(Debug, Clone)]
struct Extent {
    data_end: u64,
    area_end: u64,
    slots: [IndexSlot; 2],
    /// The slot the header currently points to (None: the index is outside this extent).
    active: Option<usize>,
}

/// Writer state of a contiguous frame file (see the module docs for the write order).
#[derive(Debug)]
pub(crate) struct Contig {
    ext: Option<Extent>,
    /// Encoded index blocks (None: must be re-encoded).
    cache: Vec<Option<EncBlock>>,
    next_block_id: u64,
    /// chunksize and header_len the cached blocks were encoded for.
    encoded_for: (i64, u64),
    /// Header bytes as on disk.
    header: Vec<u8>,
    /// Trailer of the committed state.
    trailer: Vec<u8>,
    nbytes: u64,
    frame_len: u64,
    /// Bytes of the file in use by states and extents (new extents go here).
    file_end: u64,
    /// Index entries of the committed state.
    nentries: usize,
    /// Live chunk bytes = `live_base` + (`stored_cbytes` now - `stored_base`): estimated at
    /// opening (chunk headers read, sampled beyond 4096 chunks), exact after a rewrite.
    live_base: u64,
    stored_base: u64,
    /// Average stored chunk size seen (sizes the chunk reserve of new extents).
    avg_chunk: u64,
    /// Free chunk space found at opening: [start, end) below the committed index.
    recover: Option<(u64, u64)>,
}

impl Contig {
    /// `index_at` = header_len + cbytes of the opened frame.
    fn new(header: Vec<u8>, frame_len: u64, index_at: u64) -> Contig {
        let hlen = header.len() as u64;
        Contig {
            ext: None,
            cache: Vec::new(),
            next_block_id: 0,
            encoded_for: (i64::MIN, 0),
            header,
            trailer: Vec::new(),
            nbytes: 0,
            frame_len,
            file_end: frame_len,
            nentries: 0,
            live_base: index_at.saturating_sub(hlen),
            stored_base: index_at.saturating_sub(hlen),
            avg_chunk: 0,
            recover: None,
        }
    }
}

/// Dead space below which a contiguous file is never compacted.
const COMPACT_MIN: u64 = 1 << 20;

/// Allocate a new extent at the end of the file: a chunk area of `data` bytes plus a reserve
/// as large as the estimated live bytes (1 MiB..1 GiB) and two index slots with room for
/// `index` bytes (index chunk + trailer) and growth. The current extent is abandoned. The
/// reserve doubles the room each time, so a file written by appends abandons O(log n)
/// extents (each leaves its index slots and less than a chunk as dead space); the unused
/// reserve is a hole until written and is cut off when the file is closed.
/// With `area` = Some(free range below the committed index), that range is the chunk area.
fn new_extent(c: &mut Contig, data: u64, nchunks: usize, index: u64, area: Option<(u64, u64)>) -> Extent {
    let cached: u64 = c.cache.iter().map(|b| b.as_ref().map_or(1024, |b| b.bytes.len() as u64)).sum();
    let need = index.max(32 + 8 * c.cache.len() as u64 + cached + 4096);
    let cap = (2 * need + (64 << 10)).div_ceil(4096) * 4096;
    let (data_end, area_end, slots_at) = match area {
        Some((a, b)) => (a, b, c.file_end),
        None => {
            let start = c.file_end.div_ceil(4096) * 4096;
            let live = nchunks as u64 * c.avg_chunk;
            let reserve = data + live.clamp(1 << 20, 1 << 30);
            (start, start + reserve, start + reserve)
        }
    };
    let slot = |k: u64| IndexSlot { start: slots_at + k * cap, cap, ..IndexSlot::default() };
    c.file_end = slots_at + 2 * cap;
    Extent { data_end, area_end, slots: [slot(0), slot(1)], active: None }
}

/// Bytes of an index chunk laid out compactly with room for `bcap` bstarts.
fn compact_index_len(blocks: &[EncBlock], bcap: usize) -> u64 {
    32 + 4 * bcap as u64 + blocks.iter().map(|b| b.bytes.len() as u64).sum::<u64>()
}

/// Where the blocks of a new index version go in a slot.
struct SlotPlan {
    bcap: usize,
    /// (block id, relative position, length) of every block, in index order.
    layout: Vec<(u64, u64, u64)>,
    /// Blocks to write (index, relative position): one contiguous run ending at `used`.
    write: Vec<(usize, u64)>,
    used: u64,
}

/// Place `blocks` in `slot`, keeping the blocks it already holds; None if they do not fit.
fn plan_slot(slot: &IndexSlot, blocks: &[EncBlock], tlen: u64) -> Option<SlotPlan> {
    let nb = blocks.len();
    if nb == 0 {
        return (tlen <= slot.cap).then(|| SlotPlan { bcap: 0, layout: Vec::new(), write: Vec::new(), used: 0 });
    }
    if slot.bcap >= nb {
        let mut used = slot.used;
        let (mut layout, mut write) = (Vec::with_capacity(nb), Vec::new());
        for (j, b) in blocks.iter().enumerate() {
            match slot.blocks.get(j) {
                Some(&(id, p, l)) if id == b.id => layout.push((id, p, l)),
                _ => {
                    let l = b.bytes.len() as u64;
                    layout.push((b.id, used, l));
                    write.push((j, used));
                    used += l;
                }
            }
        }
        // Keep it unless the slot is full or mostly holds stale blocks.
        if used + tlen <= slot.cap && used <= 2 * compact_index_len(blocks, slot.bcap) + (64 << 10) {
            return Some(SlotPlan { bcap: slot.bcap, layout, write, used });
        }
    }
    let bcap = if slot.bcap >= nb { slot.bcap } else { (2 * nb).max(64) };
    let mut used = 32 + 4 * bcap as u64;
    let (mut layout, mut write) = (Vec::with_capacity(nb), Vec::with_capacity(nb));
    for (j, b) in blocks.iter().enumerate() {
        let l = b.bytes.len() as u64;
        layout.push((b.id, used, l));
        write.push((j, used));
        used += l;
    }
    (used + tlen <= slot.cap).then_some(SlotPlan { bcap, layout, write, used })
}

impl Drop for Writer {
    /// Closing a contiguous file: move the index and trailer right after the last chunk and
    /// cut the file there, so a cleanly closed frame has the usual compact tail. Crash-safe
    /// like every other step (written into unreferenced space, header patched, then cut).
    fn drop(&mut self) {
        if let (Some(c), Some(f)) = (&self.contig, &self.file) {
            let lock = self.lock.clone();
            let Ok(_g) = exclusive_fresh(lock.as_deref()) else { return };
            let _ = finalize(c, f, self.header_len, self.sync_mode);
            if let Some(v) = &lock {
                if let Ok(g) = v.lock.bump() {
                    v.set_seen(g);
                }
            }
        }
    }
}

fn finalize(c: &Contig, f: &File, hlen: u64, sync: SyncMode) -> std::io::Result<()> {
    let Some(e) = &c.ext else { return Ok(()) };
    let Some(a) = e.active else { return Ok(()) };
    let mut out = Vec::new();
    if c.nbytes > 0 {
        let mut blocks = Vec::with_capacity(c.cache.len());
        for b in &c.cache {
            match b {
                Some(b) => blocks.push(&*b.bytes),
                None => return Ok(()),
            }
        }
        offsets::assemble_index(&mut out, c.nentries, &blocks);
    }
    out.extend_from_slice(&c.trailer);
    if c.header.len() < FIXED_LEN {
        return Ok(());
    }
    // Index + trailer at `at`, then the header patch that makes them current.
    let put_tail = |at: u64| -> std::io::Result<u64> {
        write_all_at(f, &out, at)?;
        if sync == SyncMode::Full {
            f.sync_data()?;
        }
        let frame_len = at + out.len() as u64;
        let mut patch = c.header[16..47].to_vec();
        patch[..8].copy_from_slice(&frame_len.to_be_bytes());
        patch[23..31].copy_from_slice(&((at - hlen) as i64).to_be_bytes());
        write_all_at(f, &patch, 16)?;
        if sync == SyncMode::Full {
            f.sync_data()?;
        }
        Ok(frame_len)
    };
    let at = e.data_end;
    if at + out.len() as u64 > e.slots[a].start {
        // No room below the current index: first move it past everything, which frees the
        // whole area after the last chunk.
        put_tail(c.file_end.max(c.frame_len))?;
    }
    let frame_len = put_tail(at)?;
    f.set_len(frame_len)
}

/// Locked writers: the exclusive lock, refused when another handle committed since this
/// writer's view was parsed (its changes would overwrite that commit).
fn exclusive_fresh(lock: Option<&LockView>) -> Result<Option<LockGuard<'_>>> {
    let Some(v) = lock else { return Ok(None) };
    let g = v.lock.exclusive()?;
    if v.lock.generation()? != v.seen() {
        return Err(Error::Stale);
    }
    Ok(Some(g))
}

/// Drop the cached encodings of the index blocks `dirty` names (and of every block from
/// `dirty.from` on), size the cache to `nblocks`; returns the blocks to encode again.
fn invalidate<T: Clone>(cache: &mut Vec<Option<T>>, dirty: &Dirty, nblocks: usize) -> Vec<usize> {
    for &b in &dirty.blocks {
        if let Some(e) = cache.get_mut(b) {
            *e = None;
        }
    }
    if let Some(from) = dirty.from {
        cache.truncate(from);
    }
    cache.truncate(nblocks);
    cache.resize(nblocks, None);
    (0..nblocks).filter(|&j| cache[j].is_none()).collect()
}

fn io_at(path: &Path, offset: Option<u64>) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(offset, e).in_file(path)
}

/// Open a frame file or sparse frame directory.
pub fn open(path: impl AsRef<Path>, mode: Mode) -> Result<SChunk> {
    open_with(path, OpenConfig { mode, ..OpenConfig::default() })
}

/// Open a contiguous frame that starts `offset` bytes into a file (read-only when offset > 0).
pub fn open_at(path: impl AsRef<Path>, offset: u64, mode: Mode) -> Result<SChunk> {
    open_with(path, OpenConfig { mode, offset, ..OpenConfig::default() })
}

/// Open a frame file or sparse directory with every option.
pub fn open_with(path: impl AsRef<Path>, cfg: OpenConfig) -> Result<SChunk> {
    let path = path.as_ref();
    let refuse = |why: &str| Err(Error::param("open", why.to_string()).in_file(path));
    if cfg.offset > 0 && cfg.mode != Mode::Read {
        return refuse("frames embedded at an offset open read-only");
    }
    if cfg.mmap && (cfg.mode != Mode::Read || cfg.locking) {
        return refuse("memory mapping is read-only and cannot be combined with locking");
    }
    if cfg.locking && cfg.offset > 0 {
        return refuse("locking is not supported for frames embedded at an offset");
    }
    let view = if cfg.locking { Some(LockView::new(FrameLock::open(path)?, 0)) } else { None };
    let _guard = match (&view, cfg.mode) {
        (None, _) => None,
        (Some(v), Mode::Read) => Some(v.lock.shared()?),
        (Some(v), Mode::Append) => Some(v.lock.exclusive()?),
    };
    if let Some(v) = &view {
        v.set_seen(v.lock.generation()?);
    }
    if path.is_dir() {
        // Sparse frames ignore `mmap`: each chunk is a small file of its own, read whole.
        if cfg.offset > 0 {
            return refuse("a sparse frame directory cannot be opened at an offset");
        }
        open_sparse(path, cfg.mode, view.clone())
    } else {
        open_contiguous(path, cfg.offset, cfg.mode, view.clone(), cfg.mmap)
    }
}

fn open_contiguous(path: &Path, base: u64, mode: Mode, lock: Option<Arc<LockView>>, mmap: bool) -> Result<SChunk> {
    let file = OpenOptions::new().read(true).write(mode == Mode::Append).open(path).map_err(io_at(path, None))?;
    if mmap {
        let map = Arc::new(Map::open(&file).map_err(io_at(path, None))?);
        let p = cframe::parse(&Source::Bytes(&map), base, false, false).map_err(|e| e.in_file(path))?;
        let mut s = cframe::build(p, Backing::Map { map: map.clone(), path: path.to_path_buf() }, base, false)
            .map_err(|e| e.in_file(path))?;
        s.read_only = true;
        return Ok(s);
    }
    let len = file.metadata().map_err(io_at(path, None))?.len();
    let p = cframe::parse(&Source::File(&file, len), base, false, false).map_err(|e| e.in_file(path))?;
    let hlen = u64::from(p.header.header_len);
    let frame_len = p.header.frame_len;
    let p_cbytes = p.header.cbytes as u64;
    let file = Arc::new(file);
    let backing = Backing::File { file: file.clone(), path: path.to_path_buf(), lock: lock.clone() };
    let mut s = cframe::build(p, backing, base, false).map_err(|e| e.in_file(path))?;
    match mode {
        Mode::Read => s.read_only = true,
        Mode::Append => {
            if base + frame_len < len {
                // Recovery: bytes past frame_len are an interrupted (never committed) write or
                // the spare index slot of the last session; nothing references them.
                file.set_len(base + frame_len).map_err(io_at(path, None))?;
            }
            let mut header = vec![0u8; hlen as usize];
            crate::storage::read_exact_at(&file, &mut header, 0).map_err(io_at(path, Some(0)))?;
            s.slots.set_tracking(true);
            let mut contig = Contig::new(header, frame_len, hlen + p_cbytes);
            // Free space between the last stored chunk and the index (the unused reserve and
            // spare index slot of an earlier session) is reused for new chunks.
            if let Some((i, pos)) = s.last_stored() {
                let end = pos + s.stored_len(i, pos).map_err(|e| e.in_file(path))?;
                if end <= hlen + p_cbytes {
                    contig.recover = Some((end, hlen + p_cbytes));
                }
            } else {
                contig.recover = Some((hlen, hlen + p_cbytes));
            }
            contig.live_base = s.estimate_live().map_err(|e| e.in_file(path))?;
            contig.stored_base = s.stored_cbytes;
            s.writer = Some(Writer {
                path: path.to_path_buf(),
                contiguous: true,
                file: Some(file),
                header_len: hlen,
                next_id: 0,
                retired: Vec::new(),
                sync_mode: SyncMode::None,
                contig: Some(contig),
                lock,
                sparse_index: SparseIndex::default(),
            });
        }
    }
    Ok(s)
}

fn open_sparse(dir: &Path, mode: Mode, lock: Option<Arc<LockView>>) -> Result<SChunk> {
    let ipath = dir.join(SPARSE_INDEX);
    let file = File::open(&ipath).map_err(io_at(&ipath, None))?;
    let len = file.metadata().map_err(io_at(&ipath, None))?.len();
    let p = cframe::parse(&Source::File(&file, len), 0, true, true).map_err(|e| e.in_file(&ipath))?;
    let hlen = u64::from(p.header.header_len);
    let next_id = p.offsets.iter().filter(|&&o| o >= 0).map(|&o| o as u64 + 1).max().unwrap_or(0);
    let backing = Backing::Sparse { dir: dir.to_path_buf(), lock: lock.clone() };
    let mut s = cframe::build(p, backing, 0, true).map_err(|e| e.in_file(dir))?;
    match mode {
        Mode::Read => s.read_only = true,
        Mode::Append => {
            s.slots.set_tracking(true);
            s.writer = Some(Writer {
                path: dir.to_path_buf(),
                contiguous: false,
                file: None,
                header_len: hlen,
                next_id,
                retired: Vec::new(),
                sync_mode: SyncMode::None,
                contig: None,
                lock,
                sparse_index: SparseIndex::default(),
            })
        }
    }
    Ok(s)
}

/// Remove a frame file or a sparse frame directory (only a directory holding `chunks.b2frame`
/// and chunk files is removed), with its `.b2lock` lock file as python-blosc2 does.
pub fn remove(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    if path.is_dir() {
        if !path.join(SPARSE_INDEX).exists() {
            return Err(Error::param("path", "directory is not a sparse frame").in_file(path));
        }
        return fs::remove_dir_all(path).map_err(io_at(path, None));
    }
    let lock = crate::lock::lock_path(path);
    if lock.exists() {
        fs::remove_file(&lock).map_err(io_at(&lock, None))?;
    }
    if path.exists() {
        fs::remove_file(path).map_err(io_at(path, None))?;
    }
    Ok(())
}

impl SChunk {
    /// Create a new, empty frame at `path` (replacing an existing frame there) and return the
    /// super-chunk writing to it: every change is persisted as it is made.
    pub fn create(path: impl AsRef<Path>, contiguous: bool, cparams: CParams, dparams: DParams) -> Result<SChunk> {
        let nthreads = cparams.nthreads;
        let s = SChunk::new(cparams, dparams.clone())?;
        s.save(&path, contiguous)?;
        let mut s = open(path, Mode::Append)?;
        s.cparams.nthreads = nthreads;
        s.dparams = dparams;
        Ok(s)
    }

    /// Where this super-chunk is persisted, if it was opened writable.
    pub fn urlpath(&self) -> Option<&Path> {
        self.writer.as_ref().map(|w| w.path.as_path())
    }

    /// True when stored chunks are read from a file or sparse directory (each `get_chunk`
    /// is then a read), whether or not it was opened writable.
    pub fn reads_from_files(&self) -> bool {
        matches!(self.backing, Backing::File { .. } | Backing::Sparse { .. }) || self.writer.is_some()
    }

    /// Rewrite a contiguous frame file opened writable without dead space (written to a
    /// temporary file, then renamed over the frame: a crash leaves the old or the new file).
    /// Done automatically when the dead space written by this session exceeds the live bytes.
    pub fn compact(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let lock = w.lock.clone();
        let r = exclusive_fresh(lock.as_deref()).and_then(|_g| {
            let r = if w.contiguous { self.rewrite_contiguous(&mut w) } else { Ok(()) };
            if let Some(v) = &lock {
                v.set_seen(v.lock.bump()?);
            }
            r
        });
        let path = w.path.clone();
        self.writer = Some(w);
        r.map_err(|e| e.in_file(path))
    }

    /// Whether this handle was opened with locking.
    pub fn is_locked(&self) -> bool {
        self.backing.lock_view().is_some()
    }

    /// Locked read-only handles: if another handle committed a change since this one parsed
    /// the frame, parse it again (header, metalayers, trailer, index; chunks stay on disk).
    /// Returns whether it did. A locked *writer* never re-syncs: a stale writer gets
    /// [`Error::Stale`] (one writer at a time). Unlocked handles: always `Ok(false)`.
    pub fn refresh(&mut self) -> Result<bool> {
        let Some(view) = self.backing.lock_view().cloned() else { return Ok(false) };
        {
            let _g = view.lock.shared()?;
            if view.lock.generation()? == view.seen() {
                return Ok(false);
            }
        }
        let path = self.backing.path().expect("locked handles have a path").to_path_buf();
        if self.writer.is_some() {
            return Err(Error::Stale.in_file(path));
        }
        let mut fresh = open_with(&path, OpenConfig { locking: true, ..OpenConfig::default() })?;
        fresh.cparams.nthreads = self.cparams.nthreads;
        fresh.dparams = self.dparams.clone();
        fresh.set_verify_checksums(self.verify_checksums());
        *self = fresh;
        Ok(true)
    }

    /// Locked writers: hold the exclusive lock across several changes until
    /// [`release_lock`](Self::release_lock), so other locked handles see all of them or none
    /// (python-blosc2's `holding_lock`). Fails with [`Error::Stale`] if another handle
    /// committed since this writer's view.
    pub fn hold_lock(&mut self) -> Result<()> {
        let Some(v) = self.writer.as_ref().and_then(|w| w.lock.clone()) else {
            return Err(Error::param("locking", "holding the lock needs a writable handle opened with locking"));
        };
        std::mem::forget(exclusive_fresh(Some(&v))?);
        Ok(())
    }

    /// End one [`hold_lock`](Self::hold_lock).
    pub fn release_lock(&mut self) {
        if let Some(v) = self.writer.as_ref().and_then(|w| w.lock.as_ref()) {
            v.lock.release();
        }
    }

    /// Start locking a handle opened (or created) without it; the frame is assumed to be in
    /// the state this handle knows (call right after creating or opening it).
    pub fn enable_locking(&mut self) -> Result<()> {
        if self.is_locked() {
            return Ok(());
        }
        let Some(path) = self.backing.path().map(Path::to_path_buf) else {
            return Err(Error::param("locking", "only frames on disk can be locked"));
        };
        if matches!(self.backing, Backing::Map { .. }) {
            return Err(Error::param("locking", "a memory-mapped frame cannot be locked").in_file(path));
        }
        let view = LockView::new(FrameLock::open(&path)?, 0);
        {
            let _g = view.lock.exclusive()?;
            view.set_seen(view.lock.bump()?);
        }
        match &mut self.backing {
            Backing::File { lock, .. } | Backing::Sparse { lock, .. } => *lock = Some(view.clone()),
            _ => {}
        }
        if let Some(w) = &mut self.writer {
            w.lock = Some(view);
        }
        Ok(())
    }

    /// Whether writes to the file are fsynced before the index that points to them.
    pub fn set_sync_mode(&mut self, mode: SyncMode) {
        if let Some(w) = &mut self.writer {
            w.sync_mode = mode;
        }
    }

    /// Write a copy of this super-chunk to `path` as a contiguous frame file or a sparse
    /// directory, replacing a frame already there. The super-chunk stays where it was.
    pub fn save(&self, path: impl AsRef<Path>, contiguous: bool) -> Result<()> {
        let path = path.as_ref();
        remove(path)?;
        if contiguous {
            self.save_contiguous(path).map_err(|e| e.in_file(path))
        } else {
            self.save_sparse(path).map_err(|e| e.in_file(path))
        }
    }

    fn save_contiguous(&self, path: &Path) -> Result<()> {
        self.save_contiguous_at(path, SyncMode::None).map(|_| ())
    }

    /// Write a compact contiguous frame to `path`; returns the absolute position of every
    /// stored (non special-offset) chunk, in order.
    fn save_contiguous_at(&self, path: &Path, sync: SyncMode) -> Result<Vec<u64>> {
        let f = File::create(path).map_err(io_at(path, None))?;
        let hlen = (FIXED_LEN + header::metalayers_len(&self.meta)) as u64;
        let mut pos = hlen;
        let mut offs = Vec::with_capacity(self.slots.len());
        let mut stored = Vec::new();
        for i in 0..self.slots.len() {
            if self.special_offset_kind(i).is_some() {
                offs.push(self.index_entry(i, None));
                continue;
            }
            let c = self.get_chunk(i)?;
            write_all_at(&f, &c, pos).map_err(io_at(path, Some(pos)))?;
            offs.push((pos - hlen) as i64);
            stored.push(pos);
            pos += c.len() as u64;
        }
        let cbytes = pos - hlen;
        if self.nbytes > 0 {
            let ix = offsets::encode_index(&offs)?;
            write_all_at(&f, &ix, pos).map_err(io_at(path, Some(pos)))?;
            pos += ix.len() as u64;
        }
        let t = self.trailer_bytes()?;
        write_all_at(&f, &t, pos).map_err(io_at(path, Some(pos)))?;
        pos += t.len() as u64;
        let mut h = self.frame_header(FRAME_CONTIGUOUS, cbytes);
        h.frame_len = pos;
        let hb = header::write_header(&h, &self.meta);
        write_all_at(&f, &hb, 0).map_err(io_at(path, Some(0)))?;
        if sync == SyncMode::Full {
            f.sync_all().map_err(io_at(path, None))?;
        }
        Ok(stored)
    }

    fn save_sparse(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(io_at(dir, None))?;
        let mut offs = Vec::with_capacity(self.slots.len());
        let mut id = 0u64;
        let mut cbytes = 0u64;
        for i in 0..self.slots.len() {
            if self.special_offset_kind(i).is_some() {
                offs.push(self.index_entry(i, None));
                continue;
            }
            let c = self.get_chunk(i)?;
            let p = dir.join(chunk_file_name(id));
            fs::write(&p, &c).map_err(io_at(&p, None))?;
            cbytes += c.len() as u64;
            offs.push(id as i64);
            id += 1;
        }
        let index = if self.nbytes > 0 { Some(offsets::encode_index(&offs)?) } else { None };
        write_sparse_index(self, dir, index.as_deref(), cbytes, SyncMode::None)
    }

    /// Persist pending changes (called after every change of a writable file-backed schunk).
    pub(crate) fn sync(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let lock = w.lock.clone();
        let r = exclusive_fresh(lock.as_deref()).and_then(|_g| {
            let r = if w.contiguous { self.sync_contiguous(&mut w) } else { self.sync_sparse(&mut w) };
            // Whatever was written (even by a failed attempt) is announced to other handles.
            if let Some(v) = &lock {
                let g = v.lock.bump()?;
                v.set_seen(g);
            }
            r
        });
        let path = w.path.clone();
        self.writer = Some(w);
        r.map_err(|e| e.in_file(path))
    }

    /// Slots that must be stored before writing the index: chunks in memory, and special
    /// chunks when the chunk size is variable (no special offsets then, Trap 30).
    fn pending(&self, i: usize) -> bool {
        match self.slots.get(i) {
            Slot::Mem(_) => true,
            Slot::Special { .. } => self.chunksize <= 0,
            Slot::Stored(_) => false,
        }
    }

    /// Index value of chunk `i` in a contiguous file with a header of `hlen` bytes.
    fn contig_entry(&self, i: usize, hlen: u64) -> i64 {
        match self.slots.get(i) {
            Slot::Stored(p) => self.index_entry(i, Some(p - hlen)),
            _ => self.index_entry(i, None),
        }
    }

    /// Persist the current state to a contiguous file without touching anything the
    /// committed header references (module docs, "Write order").
    fn sync_contiguous(&mut self, w: &mut Writer) -> Result<()> {
        let f = w.file.clone().expect("contiguous writer has a file");
        let path = w.path.clone();
        let hb0 = header::write_header(&self.frame_header(FRAME_CONTIGUOUS, 0), &self.meta);
        if hb0.len() as u64 != w.header_len {
            // Metalayers changed size: only possible while no chunk is stored.
            if self.slots.any_stored() {
                return Err(Error::param("meta", "the header cannot change size once chunks are stored"));
            }
            return self.rewrite_contiguous(w);
        }
        let hlen = w.header_len;
        let mut c = w.contig.take().expect("contiguous writer state");
        let r = self.sync_contig_inner(w, &mut c, &f, &path, hlen);
        w.contig = Some(c);
        r?;
        // Bound dead space: rewrite compactly (new file + rename) once it exceeds the live bytes.
        // Dead = chunk space below the current extent's free area that holds no live chunk
        // (replaced/deleted chunks, abandoned index regions); the current extent's reserve
        // and index slots are bounded by the live bytes and the index size and not counted.
        let c = w.contig.as_ref().expect("contiguous writer state");
        let live = (c.live_base + self.stored_cbytes).saturating_sub(c.stored_base);
        let (data_end, index_len) = c.ext.as_ref().map_or((self.section_end, 0), |e| {
            (e.data_end.min(self.section_end), e.active.map_or(0, |a| e.slots[a].used))
        });
        let dead = data_end.saturating_sub(hlen).saturating_sub(live);
        if dead > live.max(COMPACT_MIN) + 4 * index_len {
            self.rewrite_contiguous(w)?;
        }
        Ok(())
    }

    fn sync_contig_inner(&mut self, w: &Writer, c: &mut Contig, f: &File, path: &Path, hlen: u64) -> Result<()> {
        let n = self.slots.len();
        let nblocks = n.div_ceil(BLOCK_ENTRIES);
        let dirty = self.slots.take_dirty();
        if c.encoded_for != (self.chunksize, hlen) {
            c.cache.clear();
            c.encoded_for = (self.chunksize, hlen);
        }
        let invalid = invalidate(&mut c.cache, &dirty, nblocks);

        // 1. Chunks not stored yet go to the free part of the chunk area (or a new extent).
        let mut pending: Vec<(usize, Arc<[u8]>)> = Vec::new();
        for &j in &invalid {
            for i in j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n) {
                if self.pending(i) {
                    let b: Arc<[u8]> = match self.slots.get(i) {
                        Slot::Mem(b) => b,
                        _ => Arc::from(self.get_chunk(i)?.into_owned()),
                    };
                    pending.push((i, b));
                }
            }
        }
        let total: u64 = pending.iter().map(|(_, b)| b.len() as u64).sum();
        if !pending.is_empty() {
            c.avg_chunk = total / pending.len() as u64;
        }
        if c.ext.is_none() {
            // An empty free range (a new or full frame) would only allocate index slots.
            if let Some(area) = c.recover.take().filter(|(a, b)| b > a) {
                c.ext = Some(new_extent(c, 0, n, 0, Some(area)));
            }
        }
        let room = c.ext.as_ref().is_some_and(|e| e.data_end + total <= e.area_end);
        if !room && total > 0 {
            c.ext = Some(new_extent(c, total, n, 0, None));
        }
        if total > 0 {
            let e = c.ext.as_mut().expect("extent");
            let mut pos = e.data_end;
            let mut buf = Vec::new();
            for (i, b) in &pending {
                if matches!(self.slots.get(*i), Slot::Special { .. }) {
                    self.stored_cbytes += b.len() as u64;
                }
                self.slots.set(*i, Slot::Stored(pos + buf.len() as u64));
                buf.extend_from_slice(b);
                if buf.len() >= 1 << 20 {
                    write_all_at(f, &buf, pos).map_err(io_at(path, Some(pos)))?;
                    pos += buf.len() as u64;
                    buf.clear();
                }
            }
            write_all_at(f, &buf, pos).map_err(io_at(path, Some(pos)))?;
            e.data_end = pos + buf.len() as u64;
            // Those changes are already covered by the invalid blocks.
            self.slots.take_dirty();
        }

        // 2. Re-encode the changed index blocks.
        if self.nbytes > 0 {
            let mut raw = Vec::with_capacity(BLOCK_ENTRIES * 8);
            for &j in &invalid {
                raw.clear();
                for i in j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n) {
                    raw.extend_from_slice(&self.contig_entry(i, hlen).to_le_bytes());
                }
                let bytes = offsets::encode_index_block(&raw)?;
                c.cache[j] = Some(EncBlock { id: c.next_block_id, bytes: Arc::from(bytes) });
                c.next_block_id += 1;
            }
        }
        let trailer = self.trailer_bytes()?;
        let blocks: Vec<EncBlock> =
            if self.nbytes > 0 { c.cache.iter().map(|b| b.clone().expect("encoded")).collect() } else { Vec::new() };

        // 3. Lay the index + trailer out in the spare slot (or a new extent's first slot).
        let target = c.ext.as_ref().map(|e| e.active.map_or(0, |a| 1 - a));
        let mut plan = match (&c.ext, target) {
            (Some(e), Some(t)) => plan_slot(&e.slots[t], &blocks, trailer.len() as u64),
            _ => None,
        };
        let mut target = target.unwrap_or(0);
        if plan.is_none() {
            let need = compact_index_len(&blocks, blocks.len().max(32) * 2) + trailer.len() as u64;
            c.ext = Some(new_extent(c, 0, n, need, None));
            target = 0;
            plan = plan_slot(&c.ext.as_ref().expect("extent").slots[0], &blocks, trailer.len() as u64);
        }
        let plan = plan.expect("a fresh slot fits the index");
        let e = c.ext.as_mut().expect("extent");
        let slot = &mut e.slots[target];
        let mut body = Vec::new();
        for &(j, _) in &plan.write {
            body.extend_from_slice(&blocks[j].bytes);
        }
        let body_at = slot.start + plan.write.first().map_or(plan.used, |&(_, p)| p);
        body.extend_from_slice(&trailer);
        let tpos = slot.start + plan.used;
        debug_assert_eq!(body_at + body.len() as u64, tpos + trailer.len() as u64);
        write_all_at(f, &body, body_at).map_err(io_at(path, Some(body_at)))?;
        if !blocks.is_empty() {
            let mut head = offsets::index_chunk_header(n * 8, plan.used as usize).to_vec();
            for &(_, p, _) in &plan.layout {
                head.extend_from_slice(&(p as i32).to_le_bytes());
            }
            write_all_at(f, &head, slot.start).map_err(io_at(path, Some(slot.start)))?;
        }
        slot.bcap = plan.bcap;
        slot.blocks = plan.layout;
        slot.used = plan.used;
        let index_at = slot.start;
        let frame_len = tpos + trailer.len() as u64;
        if w.sync_mode == SyncMode::Full {
            f.sync_data().map_err(io_at(path, None))?;
        }

        // 4. Commit: patch the header (one small write of the bytes that differ).
        let mut h = self.frame_header(FRAME_CONTIGUOUS, index_at - hlen);
        h.frame_len = frame_len;
        let hb = header::write_header(&h, &self.meta);
        if hb.len() == c.header.len() {
            if let Some(lo) = (0..hb.len()).find(|&k| hb[k] != c.header[k]) {
                let hi = (0..hb.len()).rfind(|&k| hb[k] != c.header[k]).expect("a differing byte") + 1;
                write_all_at(f, &hb[lo..hi], lo as u64).map_err(io_at(path, Some(lo as u64)))?;
            }
        } else {
            write_all_at(f, &hb, 0).map_err(io_at(path, Some(0)))?;
        }
        if w.sync_mode == SyncMode::Full {
            f.sync_data().map_err(io_at(path, None))?;
        }
        c.header = hb;
        c.trailer = trailer;
        c.nbytes = self.nbytes;
        c.nentries = n;
        c.frame_len = frame_len;
        e.active = Some(target);
        self.section_end = index_at;
        self.starts = OnceLock::new();
        Ok(())
    }

    /// Rewrite the whole frame compactly to a temporary file and rename it over the frame
    /// (atomic: a crash leaves the old or the new file), then continue writing the new one.
    fn rewrite_contiguous(&mut self, w: &mut Writer) -> Result<()> {
        let path = w.path.clone();
        let mut tmp = path.clone().into_os_string();
        tmp.push(".oxtmp");
        let tmp = PathBuf::from(tmp);
        let stored = self.save_contiguous_at(&tmp, w.sync_mode).map_err(|e| e.in_file(&tmp))?;
        fs::rename(&tmp, &path).map_err(io_at(&path, None))?;
        if w.sync_mode == SyncMode::Full {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = File::open(dir).and_then(|d| d.sync_all());
            }
        }
        let file = Arc::new(OpenOptions::new().read(true).write(true).open(&path).map_err(io_at(&path, None))?);
        let mut k = 0;
        for i in 0..self.slots.len() {
            if self.special_offset_kind(i).is_none() {
                self.slots.set(i, Slot::Stored(stored[k]));
                k += 1;
            }
        }
        self.slots.set_tracking(true);
        let len = file.metadata().map_err(io_at(&path, None))?.len();
        let p = cframe::parse(&Source::File(&file, len), 0, false, true)?;
        let hlen = u64::from(p.header.header_len);
        self.stored_cbytes = p.header.cbytes as u64;
        self.section_end = hlen + p.header.cbytes as u64;
        let mut header = vec![0u8; hlen as usize];
        crate::storage::read_exact_at(&file, &mut header, 0).map_err(io_at(&path, Some(0)))?;
        self.backing = Backing::File { file: file.clone(), path: path.clone(), lock: w.lock.clone() };
        w.file = Some(file);
        w.header_len = hlen;
        let mut c = Contig::new(header, len, hlen + p.header.cbytes as u64);
        c.recover = Some((self.section_end, self.section_end));
        c.stored_base = self.stored_cbytes;
        w.contig = Some(c);
        self.starts = OnceLock::new();
        Ok(())
    }

    fn sync_sparse(&mut self, w: &mut Writer) -> Result<()> {
        let dir = w.path.clone();
        // Index blocks whose entries changed (all of them after opening or a chunksize change).
        let n = self.slots.len();
        let nblocks = n.div_ceil(BLOCK_ENTRIES);
        let dirty = self.slots.take_dirty();
        let ix = &mut w.sparse_index;
        if ix.chunksize != Some(self.chunksize) {
            ix.blocks.clear();
            ix.chunksize = Some(self.chunksize);
        }
        let invalid = invalidate(&mut ix.blocks, &dirty, nblocks);
        let changed = invalid.iter().flat_map(|&j| j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n));
        for i in changed.collect::<Vec<_>>() {
            if !self.pending(i) {
                continue;
            }
            let c = self.get_chunk(i)?.into_owned();
            let id = w.next_id;
            let p = dir.join(chunk_file_name(id));
            fs::write(&p, &c).map_err(io_at(&p, None))?;
            if w.sync_mode == SyncMode::Full {
                File::open(&p).and_then(|f| f.sync_all()).map_err(io_at(&p, None))?;
            }
            if self.slots.is_special(i) {
                self.stored_cbytes += c.len() as u64;
            }
            self.slots.set(i, Slot::Stored(id));
            w.next_id += 1;
        }
        self.slots.take_dirty(); // the chunks just stored are in `invalid` blocks already
        let index = if self.nbytes > 0 {
            let mut raw = Vec::with_capacity(BLOCK_ENTRIES * 8);
            for &j in &invalid {
                raw.clear();
                for i in j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n) {
                    let e = match self.slots.get(i) {
                        Slot::Stored(id) => self.index_entry(i, Some(id)),
                        _ => self.index_entry(i, None),
                    };
                    raw.extend_from_slice(&e.to_le_bytes());
                }
                w.sparse_index.blocks[j] = Some(Arc::from(offsets::encode_index_block(&raw)?));
            }
            let blocks: Vec<&[u8]> = w.sparse_index.blocks.iter().map(|b| &**b.as_ref().expect("encoded")).collect();
            let mut out = Vec::new();
            offsets::assemble_index(&mut out, n, &blocks);
            Some(out)
        } else {
            None
        };
        write_sparse_index(self, &dir, index.as_deref(), self.stored_cbytes, w.sync_mode)?;
        for id in w.retired.drain(..) {
            let _ = fs::remove_file(dir.join(chunk_file_name(id)));
        }
        Ok(())
    }
}

/// Write `chunks.b2frame` of a sparse frame (header, `index` chunk, trailer) atomically
/// (temp file + rename).
fn write_sparse_index(s: &SChunk, dir: &Path, index: Option<&[u8]>, cbytes: u64, sync: SyncMode) -> Result<()> {
    let trailer = s.trailer_bytes()?;
    let mut h = s.frame_header(FRAME_SPARSE, cbytes);
    let hlen = FIXED_LEN + header::metalayers_len(&s.meta);
    h.frame_len = (hlen + index.map_or(0, <[u8]>::len) + trailer.len()) as u64;
    let mut out = header::write_header(&h, &s.meta);
    if let Some(ix) = index {
        out.extend_from_slice(ix);
    }
    out.extend_from_slice(&trailer);
    let tmp = dir.join(format!("{SPARSE_INDEX}.tmp"));
    fs::write(&tmp, &out).map_err(io_at(&tmp, None))?;
    if sync == SyncMode::Full {
        File::open(&tmp).and_then(|f| f.sync_all()).map_err(io_at(&tmp, None))?;
    }
    let dst = dir.join(SPARSE_INDEX);
    fs::rename(&tmp, &dst).map_err(io_at(&dst, None))?;
    Ok(())
}
