//! Storage commits: a writable contiguous frame file or sparse frame directory takes a
//! described change ([`Change`]), writes it and commits it, knowing nothing of the super-chunk
//! that asked. The caller (`SChunk`) updates its own view (chunk slots, counters, checksums)
//! only from what [`Writer::commit`] returns, after it returned `Ok`; after an error nothing
//! the committed header references was touched and the caller rolls its view back.
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
//!   written to a temporary file of its own and renamed over `chunks.b2frame` (atomic), and
//!   only after that are the files of replaced or deleted chunks removed (at worst an orphan
//!   chunk file remains). A failed commit removes the chunk files it wrote.
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
//!   A crash (or an error such as ENOSPC) before 3 leaves the old header pointing at the old,
//!   intact index and trailer; the file may then be longer than `frame_len`, which every
//!   reader accepts and which opening with `Mode::Append` truncates (recovery). The old index
//!   becomes dead space inside the chunks section. The slots ping-pong, so an append rewrites
//!   only what changed: the index is assembled from independently encoded 16 KiB blocks (2048
//!   entries); a slot keeps the blocks it already holds and only the changed ones (for an
//!   append: the last) are re-encoded and written, plus the bstarts (4 bytes per 2048
//!   chunks). Per-append cost is therefore flat (inserts and deletes in the middle shift the
//!   index and stay O(nchunks), as in C). When the chunk area or a slot is full a new extent
//!   is allocated at the end of the file (one full index write, amortised by the geometric
//!   reserve). After a failed commit every cached index block is encoded again next time.
//! * Staging ([`Writer::stage`]): chunks of a multi-chunk change (a batch) are written to the
//!   unreferenced chunk area (or new chunk files) as they come, and one commit at the end
//!   publishes all of them: a crash or error before it leaves the old state.
//! * A frame without data (nbytes 0) is always written compactly through the rewrite below:
//!   C-Blosc2 reads its trailer right after the header, not where the trailer offset says.
//! * Reopening for append reuses the free space between the last stored chunk and the
//!   committed index as the first chunk area.
//! * Dead space (replaced or deleted chunks, abandoned index slots) is bounded: when it exceeds
//!   the live bytes (and 1 MiB plus 4x the index), the frame is rewritten compactly to
//!   a temporary file of its own beside it and renamed over the file (atomic). A compaction that fails is skipped
//!   (its temporary file removed): the change it follows is committed already.
//! * Closing (dropping the writer) moves the index and trailer right after the last chunk
//!   (via a copy past everything when there is no room below the committed index), patches the
//!   header and truncates: a cleanly closed file has the usual compact tail (`frame_len` = file
//!   length) and loads as an in-memory frame too. After a failed commit the writer has
//!   forgotten its index encodings; the close then carries the committed index over from the
//!   file (it is intact where the header points), or leaves the file as committed when that
//!   does not check out. Before that, closing the `SChunk` rewrites
//!   the file compactly when [`Writer::bloated_on_close`] says dead bytes remain (the rewrite
//!   above, under the exclusive lock; a stale view is refused).
//! * Locking: with a lock, every commit (and closing, and a compacting rewrite) runs under the
//!   exclusive lock and bumps the generation; a writer whose view is stale (another writer
//!   committed since) refuses to commit with [`Error::Stale`].
//! * Without a lock, a contiguous writer reads the header back before every write and before
//!   its close and compares it with the one it committed last (a sparse writer: the
//!   [`IndexStamp`] of `chunks.b2frame`): when another handle committed since (a second
//!   writer in this or another process, used one after the other), the stale writer refuses
//!   to write ([`Error::Stale`]) and its close leaves the file alone. Without this, a
//!   writable handle that merely stayed open (say until a garbage collector dropped it) moved
//!   its old index over the newer chunks and cut the file on close. Such writers commit, and
//!   open for writing, under an exclusive `flock` on the frame itself ([`crate::lock::commit_guard`]),
//!   so an opening writer's recovery cut never takes the chunks of a commit in progress. A
//!   writer whose own bytes past `frame_len` were cut by another's opening finds the file
//!   shorter than it left it: chunks its batch staged there make it stale; the index blocks
//!   its spare slot kept are encoded again.

use std::borrow::Cow;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::header::{self, FrameHeader, FIXED_LEN, FRAME_CONTIGUOUS, FRAME_SPARSE};
use crate::live::LiveWriter;
use crate::lock::{LockGuard, LockView};
use crate::offsets;
use crate::slots::{Dirty, BLOCK_ENTRIES};
use crate::storage::{chunk_file_name, write_all_at};
use crate::{Error, Result};

/// Name of the index frame inside a sparse frame directory.
pub const SPARSE_INDEX: &str = "chunks.b2frame";

/// Whether writes are followed by fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Leave flushing to the OS (safe against process crashes for sparse frames).
    #[default]
    None,
    /// fsync chunk data before the index that points to it is published.
    Full,
}

/// Where chunk `i` of the new state is, as the caller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Already stored: absolute position in the file, or chunk file id (sparse).
    Stored(u64),
    /// A special offset value of the offsets index (fixed chunk size only).
    Special(i64),
    /// Not stored yet (bytes from [`ChunkList::bytes`]); `counted`: its bytes are already in
    /// the caller's `stored_cbytes` (a chunk in memory, not a special one being materialised).
    Pending { counted: bool },
}

/// The chunk list of the state to write.
pub(crate) trait ChunkList {
    fn len(&self) -> usize;
    fn entry(&self, i: usize) -> Entry;
    /// The stored bytes of chunk `i` (any entry but `Special`).
    fn bytes(&self, i: usize) -> Result<Cow<'_, [u8]>>;
}

/// Everything a frame holds, as the caller wants it written.
pub(crate) struct Frame<'a> {
    pub chunks: &'a dyn ChunkList,
    pub nbytes: u64,
    /// Header fields; `header_len`, `frame_len`, `frame_type` and `cbytes` are the writer's.
    pub header: FrameHeader,
    pub meta: &'a [(String, Vec<u8>)],
    /// The encoded trailer (vlmetalayers).
    pub trailer: Vec<u8>,
}

/// One change to commit.
pub(crate) struct Change<'a> {
    pub frame: Frame<'a>,
    /// Index blocks whose entries changed since the last commit.
    pub dirty: Dirty,
    pub chunksize: i64,
    /// Bytes of the stored (and in-memory, `Pending { counted: true }`) chunks.
    pub stored_cbytes: u64,
    /// Sparse chunk files no longer referenced once this change is committed.
    pub retired: &'a [u64],
}

/// A chunk the writer stored: index, position (or file id), length.
pub(crate) type Placed = (usize, u64, u64);

/// What a successful commit did; the caller applies it to its view.
#[derive(Debug)]
pub(crate) struct Committed {
    /// Chunks stored by this commit.
    pub stored: Vec<Placed>,
    /// Absolute end of the chunks section (contiguous; `u64::MAX` for sparse frames).
    pub section_end: u64,
    /// Set when the frame was rewritten compactly afterwards.
    pub rewritten: Option<Rewritten>,
    /// Sparse frames: chunks whose file id changed after the commit ([`Writer::compact_ids`]).
    pub renumbered: Vec<(usize, u64)>,
}

/// A contiguous frame rewritten compactly: the new file and every stored chunk's position.
#[derive(Debug)]
pub(crate) struct Rewritten {
    pub file: Arc<File>,
    pub stored: Vec<(usize, u64)>,
    pub cbytes: u64,
    pub section_end: u64,
}

/// Persistence state of a frame opened writable.
#[derive(Debug)]
pub(crate) struct Writer {
    pub(crate) path: PathBuf,
    contiguous: bool,
    file: Option<Arc<File>>,
    header_len: u64,
    next_id: u64,
    pub(crate) sync_mode: SyncMode,
    /// Contiguous files: where the next states go.
    contig: Option<Contig>,
    /// Present with locking: commits take the exclusive lock and bump the generation.
    pub(crate) lock: Option<Arc<LockView>>,
    /// Sparse frames: encoded blocks of the index in `chunks.b2frame`.
    sparse_index: SparseIndex,
    /// Sparse frames: the version of `chunks.b2frame` this writer committed last (or read at
    /// opening).
    sparse_stamp: Option<IndexStamp>,
    /// Contiguous files: counts this writer among the file's writers in this process.
    live: Option<LiveWriter>,
}

/// One committed version of a sparse frame's `chunks.b2frame`. Every commit writes a new
/// file and renames it over the old one, so a changed inode, size or modification time
/// means another handle committed. Unlike the header alone, this also sees a commit that
/// kept every size (a chunk replaced by one of the same length goes to a new chunk file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl IndexStamp {
    pub(crate) fn of(m: &fs::Metadata) -> IndexStamp {
        use std::os::unix::fs::MetadataExt;
        IndexStamp { dev: m.dev(), ino: m.ino(), len: m.len(), mtime: (m.mtime(), m.mtime_nsec()) }
    }
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
    /// The file's length after this writer's last write. Another handle opening the file
    /// for writing cuts bytes past `frame_len` (recovery of an interrupted write) without
    /// changing the header: a shorter file tells this writer that what it wrote there is gone.
    seen_len: u64,
    /// End of the chunks a batch staged and its commit will reference (0: none pending). If
    /// they were cut, the batch cannot commit: the view is stale.
    staged_end: u64,
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
            seen_len: frame_len,
            staged_end: 0,
        }
    }
}

/// Dead space below which a contiguous file is never compacted.
const COMPACT_MIN: u64 = 1 << 20;

/// Closing a file whose chunks section is smaller than this compacts it if it holds any dead
/// byte (the rewrite copies at most 64 MiB, tens of milliseconds); larger files only when the
/// dead bytes exceed 1/16 of the live ones, so each rewrite copies at most 16 bytes per dead
/// byte it removes and a session of a few appends to a big file does not copy the file.
const CLOSE_SMALL: u64 = 64 << 20;

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

impl Writer {
    /// A contiguous frame file opened for writing: `header` as on disk, the committed
    /// `frame_len`, `index_at` = header_len + cbytes, `recover` = free chunk space below the
    /// committed index, `live` = estimated live chunk bytes out of `stored` (the frame's cbytes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn contiguous(
        path: &Path,
        file: Arc<File>,
        header: Vec<u8>,
        frame_len: u64,
        index_at: u64,
        recover: Option<(u64, u64)>,
        (live, stored): (u64, u64),
        lock: Option<Arc<LockView>>,
    ) -> Writer {
        let header_len = header.len() as u64;
        let registered = Some(LiveWriter::new(&file));
        let mut c = Contig::new(header, frame_len, index_at);
        c.recover = recover;
        c.seen_len = file.metadata().map_or(frame_len, |m| m.len());
        c.live_base = live;
        c.stored_base = stored;
        Writer {
            path: path.to_path_buf(),
            contiguous: true,
            file: Some(file),
            header_len,
            next_id: 0,
            sync_mode: SyncMode::None,
            contig: Some(c),
            lock,
            sparse_index: SparseIndex::default(),
            sparse_stamp: None,
            live: registered,
        }
    }

    /// A sparse frame directory opened for writing; new chunk files start at `next_id`;
    /// `stamp` is the version of its index file that was read.
    pub(crate) fn sparse(
        dir: &Path,
        header_len: u64,
        next_id: u64,
        stamp: IndexStamp,
        lock: Option<Arc<LockView>>,
    ) -> Writer {
        Writer {
            path: dir.to_path_buf(),
            contiguous: false,
            file: None,
            header_len,
            next_id,
            sync_mode: SyncMode::None,
            contig: None,
            lock,
            sparse_index: SparseIndex::default(),
            sparse_stamp: Some(stamp),
            live: None,
        }
    }

    /// Hold the frame's own flock while checking and writing ([`crate::lock::commit_guard`]).
    /// Locked writers take it too, after the lock file's: a locked and an unlocked writer of
    /// one frame (the lock file is advisory, the unlocked one never takes it) otherwise both
    /// passed the staleness check and wrote at the same moment (session 11: a contiguous
    /// file lost 39-73 of ~175 committed appends, a sparse index was left unreadable).
    fn commit_guard(&self) -> Result<Option<crate::lock::HeldFlock>> {
        crate::lock::commit_guard(&self.path).map_err(|e| Error::io(None, e))
    }

    /// Whether another writer of this contiguous file is open in this process ([`crate::live`]).
    pub(crate) fn has_other_writers(&self) -> bool {
        self.live.as_ref().is_some_and(LiveWriter::others)
    }

    /// Whether closing should rewrite the file compactly: this writer committed into a
    /// contiguous file, and the chunks section its close leaves (up to the end of the last
    /// chunk) holds dead bytes ([`CLOSE_SMALL`]); `stored_cbytes` = the caller's stored bytes.
    pub(crate) fn bloated_on_close(&self, stored_cbytes: u64) -> bool {
        let Some(c) = &self.contig else { return false };
        let Some(e) = c.ext.as_ref().filter(|e| e.active.is_some()) else { return false };
        let live = (c.live_base + stored_cbytes).saturating_sub(c.stored_base);
        let section = e.data_end.saturating_sub(self.header_len);
        let dead = section.saturating_sub(live);
        dead > 0 && (section < CLOSE_SMALL || dead > live / 16)
    }

    /// Whether the frame on disk is still the state this writer committed (or read at
    /// opening). Contiguous files: the file still begins with our header. Sparse directories:
    /// `chunks.b2frame` is still our version ([`IndexStamp`]). Another handle that committed
    /// since, in this process or another one and without a shared lock, changed it: writing
    /// from this view would overwrite that handle's chunks (sparse: reuse its chunk file ids)
    /// or index, or cut them off when closing. So a stale writer refuses to write
    /// ([`Error::Stale`]) and closes without touching the file. (Checked under the commit
    /// flock, so a handle writing at the same moment is seen too.)
    pub(crate) fn view_is_current(&self) -> std::io::Result<bool> {
        if !self.contiguous {
            let Some(stamp) = self.sparse_stamp else { return Ok(false) };
            return match fs::metadata(self.path.join(SPARSE_INDEX)) {
                Ok(m) => Ok(IndexStamp::of(&m) == stamp),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(e),
            };
        }
        let (Some(c), Some(f)) = (&self.contig, &self.file) else { return Ok(true) };
        // Another handle may have rewritten the frame into a new file renamed over the path:
        // writing to this one (now unlinked) would lose every change.
        match crate::pio::names_file(&self.path, f) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        }
        let mut now = vec![0u8; c.header.len()];
        match crate::storage::read_exact_at(f, &mut now, 0) {
            Ok(()) => Ok(now == c.header),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether another handle's opening cut what this contiguous writer wrote past
    /// `frame_len` ([`Contig::seen_len`]): chunks a batch staged make the view stale (true);
    /// the index blocks a spare slot kept are only encoded again (the cache is forgotten).
    fn was_cut(&mut self) -> std::io::Result<bool> {
        let (Some(c), Some(f)) = (&mut self.contig, &self.file) else { return Ok(false) };
        let len = f.metadata()?.len();
        if len >= c.seen_len {
            return Ok(false);
        }
        c.seen_len = len;
        if len < c.staged_end {
            return Ok(true);
        }
        self.forget_encodings();
        Ok(false)
    }

    /// Stop writing: the frame changed under this writer (it is replaced by a fresh one).
    pub(crate) fn abandon(&mut self) {
        self.contig = None;
        self.file = None;
    }

    pub(crate) fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// Run `f` under the exclusive lock (locked writers; refused when the view is stale) and
    /// announce whatever it wrote to other handles.
    fn locked<T>(&mut self, f: impl FnOnce(&mut Writer) -> Result<T>) -> Result<T> {
        let lock = self.lock.clone();
        let r = exclusive_fresh(lock.as_deref()).and_then(|_g| {
            let _one_at_a_time = self.commit_guard()?;
            if !self.view_is_current().map_err(|e| Error::io(Some(0), e))? {
                return Err(Error::Stale);
            }
            if self.was_cut().map_err(|e| Error::io(None, e))? {
                return Err(Error::Stale);
            }
            let r = f(self);
            if let (Some(c), Some(file)) = (&mut self.contig, &self.file) {
                // (Written or not: a failed attempt may have extended the file too.)
                c.seen_len = file.metadata().map_or(0, |m| m.len());
            }
            if let Some(v) = &lock {
                // Committed or not (a failed attempt may have written unreferenced bytes),
                // other handles refresh. What this call did is what the caller hears about.
                v.announce();
            }
            r
        });
        r.map_err(|e| e.in_file(&self.path))
    }

    /// Write and commit `ch`. On error nothing the committed header references changed.
    pub(crate) fn commit(&mut self, ch: &Change) -> Result<Committed> {
        self.locked(|w| {
            let r = if w.contiguous { w.commit_contiguous(ch) } else { w.commit_sparse(ch) };
            match (&r, &mut w.contig) {
                (Err(_), _) => w.forget_encodings(),
                (Ok(_), Some(c)) => c.staged_end = 0, // (the batch's chunks are committed now)
                _ => {}
            }
            r
        })
    }

    /// Store chunks `which` (pending entries) in unreferenced space without committing them
    /// (a batch commits them all at once later). Returns where they went.
    pub(crate) fn stage(&mut self, chunks: &dyn ChunkList, which: &[usize]) -> Result<Vec<Placed>> {
        let placed = self.locked(|w| w.store(chunks, which))?;
        if let Some(c) = self.contig.as_mut().filter(|_| self.contiguous) {
            c.staged_end = placed.iter().map(|p| p.1 + p.2).fold(c.staged_end, u64::max);
        }
        Ok(placed)
    }

    /// Forget staged chunks of a batch that was rolled back (sparse: their files are removed).
    pub(crate) fn discard(&mut self, staged: &[u64]) {
        if let Some(c) = &mut self.contig {
            c.staged_end = 0;
        }
        if !self.contiguous {
            for &id in staged {
                let _ = fs::remove_file(self.path.join(chunk_file_name(id)));
            }
        }
    }

    /// Rewrite a contiguous frame compactly (no-op for sparse frames).
    pub(crate) fn compact(&mut self, f: &Frame) -> Result<Option<Rewritten>> {
        if !self.contiguous {
            return Ok(None);
        }
        self.locked(|w| w.rewrite(f).map(Some))
    }

    /// After a failed commit the cached index encodings may describe the failed state.
    fn forget_encodings(&mut self) {
        if let Some(c) = &mut self.contig {
            c.cache.clear();
            c.encoded_for = (i64::MIN, 0);
        }
        self.sparse_index = SparseIndex::default();
    }

    /// Store the pending entries among `which`.
    fn store(&mut self, chunks: &dyn ChunkList, which: &[usize]) -> Result<Vec<Placed>> {
        let mut pending: Vec<(usize, Cow<'_, [u8]>)> = Vec::new();
        for &i in which {
            if matches!(chunks.entry(i), Entry::Pending { .. }) {
                pending.push((i, chunks.bytes(i)?));
            }
        }
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        if !self.contiguous {
            return self.store_sparse(&pending);
        }
        let f = self.file.clone().expect("contiguous writer has a file");
        let c = self.contig.as_mut().expect("contiguous writer state");
        let total: u64 = pending.iter().map(|(_, b)| b.len() as u64).sum();
        c.avg_chunk = total / pending.len() as u64;
        if c.ext.is_none() {
            // An empty free range (a new or full frame) would only allocate index slots.
            if let Some(area) = c.recover.take().filter(|(a, b)| b > a) {
                c.ext = Some(new_extent(c, 0, chunks.len(), 0, Some(area)));
            }
        }
        if c.ext.as_ref().is_none_or(|e| e.data_end + total > e.area_end) {
            c.ext = Some(new_extent(c, total, chunks.len(), 0, None));
        }
        let e = c.ext.as_mut().expect("extent");
        let (mut pos, mut buf, mut placed) = (e.data_end, Vec::new(), Vec::with_capacity(pending.len()));
        for (i, b) in &pending {
            placed.push((*i, pos + buf.len() as u64, b.len() as u64));
            if b.len() >= 1 << 20 {
                // Large chunks are written from where they are (no copy, no big buffer).
                write_all_at(&f, &buf, pos).map_err(io_at(&self.path, Some(pos)))?;
                pos += buf.len() as u64;
                buf.clear();
                write_all_at(&f, b, pos).map_err(io_at(&self.path, Some(pos)))?;
                pos += b.len() as u64;
                continue;
            }
            buf.extend_from_slice(b);
            if buf.len() >= 1 << 20 {
                write_all_at(&f, &buf, pos).map_err(io_at(&self.path, Some(pos)))?;
                pos += buf.len() as u64;
                buf.clear();
            }
        }
        write_all_at(&f, &buf, pos).map_err(io_at(&self.path, Some(pos)))?;
        // Only now is the space taken: a failed write leaves it free for the next attempt.
        e.data_end = pos + buf.len() as u64;
        Ok(placed)
    }

    /// Sparse frames: every pending chunk to a new chunk file (removed again on failure).
    fn store_sparse(&mut self, pending: &[(usize, Cow<'_, [u8]>)]) -> Result<Vec<Placed>> {
        let mut placed: Vec<Placed> = Vec::with_capacity(pending.len());
        let r = (|| -> Result<()> {
            for (i, c) in pending {
                let id = self.next_id;
                let p = self.path.join(chunk_file_name(id));
                self.next_id += 1;
                placed.push((*i, id, c.len() as u64));
                write_new_file(&p, c).map_err(io_at(&p, None))?;
                if self.sync_mode == SyncMode::Full {
                    File::open(&p).and_then(|f| f.sync_all()).map_err(io_at(&p, None))?;
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            self.discard(&placed.iter().map(|p| p.1).collect::<Vec<_>>());
            return Err(e);
        }
        Ok(placed)
    }

    /// Index value of chunk `i`: stored position relative to `base` (contiguous: the header
    /// length; sparse: 0), special offset, or where this commit just placed it.
    fn entry_value(chunks: &dyn ChunkList, i: usize, base: u64, placed: &[Placed]) -> i64 {
        match chunks.entry(i) {
            Entry::Stored(p) => (p - base) as i64,
            Entry::Special(v) => v,
            Entry::Pending { .. } => {
                let k = placed.binary_search_by_key(&i, |p| p.0).expect("pending chunk was placed");
                (placed[k].1 - base) as i64
            }
        }
    }

    /// The stored bytes a commit adds to the caller's count (special chunks materialised).
    fn added_cbytes(chunks: &dyn ChunkList, placed: &[Placed]) -> u64 {
        placed.iter().filter(|p| matches!(chunks.entry(p.0), Entry::Pending { counted: false })).map(|p| p.2).sum()
    }

    /// Persist a change to a contiguous file without touching anything the committed header
    /// references (module docs, "Write order").
    fn commit_contiguous(&mut self, ch: &Change) -> Result<Committed> {
        let fr = &ch.frame;
        let hb0 = header::write_header(&fr.header, fr.meta);
        if fr.nbytes == 0 {
            // C-Blosc2 looks for the trailer of a frame without data right after the header
            // (it ignores the trailer offset then): write such a frame compactly, atomically.
            let rw = self.rewrite(fr)?;
            return Ok(Committed {
                stored: Vec::new(),
                section_end: rw.section_end,
                rewritten: Some(rw),
                renumbered: Vec::new(),
            });
        }
        if hb0.len() as u64 != self.header_len {
            // Metalayers were added (only possible before the first chunk, so stored chunks
            // here are this batch's, staged past the old frame: a new array's, in the same
            // commit as its metalayer). The header cannot grow in place: the frame is written
            // anew (temp file + rename), staged chunks read back one at a time.
            let rw = self.rewrite(fr)?;
            return Ok(Committed {
                stored: Vec::new(),
                section_end: rw.section_end,
                rewritten: Some(rw),
                renumbered: Vec::new(),
            });
        }
        let mut done = self.commit_contig_inner(ch)?;
        // Bound dead space: rewrite compactly (new file + rename) once it exceeds the live bytes.
        // Dead = chunk space below the current extent's free area that holds no live chunk
        // (replaced/deleted chunks, abandoned index regions); the current extent's reserve
        // and index slots are bounded by the live bytes and the index size and not counted.
        let c = self.contig.as_ref().expect("contiguous writer state");
        let stored_now = ch.stored_cbytes + Self::added_cbytes(fr.chunks, &done.stored);
        let live = (c.live_base + stored_now).saturating_sub(c.stored_base);
        let (data_end, index_len) = c.ext.as_ref().map_or((done.section_end, 0), |e| {
            (e.data_end.min(done.section_end), e.active.map_or(0, |a| e.slots[a].used))
        });
        let dead = data_end.saturating_sub(self.header_len).saturating_sub(live);
        if dead > live.max(COMPACT_MIN) + 4 * index_len {
            // Optional: the change is committed whether or not this succeeds.
            done.rewritten = self.rewrite(fr).ok();
        }
        Ok(done)
    }

    fn commit_contig_inner(&mut self, ch: &Change) -> Result<Committed> {
        let f = self.file.clone().expect("contiguous writer has a file");
        let path = self.path.clone();
        let hlen = self.header_len;
        let chunks = ch.frame.chunks;
        let n = chunks.len();
        let nblocks = n.div_ceil(BLOCK_ENTRIES);
        let c = self.contig.as_mut().expect("contiguous writer state");
        if c.encoded_for != (ch.chunksize, hlen) {
            c.cache.clear();
            c.encoded_for = (ch.chunksize, hlen);
        }
        let invalid = invalidate(&mut c.cache, &ch.dirty, nblocks);

        // 1. Chunks not stored yet go to the free part of the chunk area (or a new extent).
        let which: Vec<usize> =
            invalid.iter().flat_map(|&j| j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n)).collect();
        let stored = self.store(chunks, &which)?;
        let c = self.contig.as_mut().expect("contiguous writer state");

        // 2. Re-encode the changed index blocks.
        if ch.frame.nbytes > 0 {
            let mut raw = Vec::with_capacity(BLOCK_ENTRIES * 8);
            for &j in &invalid {
                raw.clear();
                for i in j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n) {
                    raw.extend_from_slice(&Self::entry_value(chunks, i, hlen, &stored).to_le_bytes());
                }
                let bytes = offsets::encode_index_block(&raw)?;
                c.cache[j] = Some(EncBlock { id: c.next_block_id, bytes: Arc::from(bytes) });
                c.next_block_id += 1;
            }
        }
        let trailer = &ch.frame.trailer;
        let blocks: Vec<EncBlock> = if ch.frame.nbytes > 0 {
            c.cache.iter().map(|b| b.clone().expect("encoded")).collect()
        } else {
            Vec::new()
        };

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
        body.extend_from_slice(trailer);
        let tpos = slot.start + plan.used;
        debug_assert_eq!(body_at + body.len() as u64, tpos + trailer.len() as u64);
        write_all_at(&f, &body, body_at).map_err(io_at(&path, Some(body_at)))?;
        if !blocks.is_empty() {
            let mut head = offsets::index_chunk_header(n * 8, plan.used as usize).to_vec();
            for &(_, p, _) in &plan.layout {
                head.extend_from_slice(&(p as i32).to_le_bytes());
            }
            write_all_at(&f, &head, slot.start).map_err(io_at(&path, Some(slot.start)))?;
        }
        slot.bcap = plan.bcap;
        slot.blocks = plan.layout;
        slot.used = plan.used;
        let index_at = slot.start;
        let frame_len = tpos + trailer.len() as u64;
        if self.sync_mode == SyncMode::Full {
            f.sync_data().map_err(io_at(&path, None))?;
        }

        // 4. Commit: patch the header (one small write of the bytes that differ).
        let mut h = ch.frame.header.clone();
        h.frame_type = FRAME_CONTIGUOUS;
        h.cbytes = (index_at - hlen) as i64;
        h.frame_len = frame_len;
        let hb = header::write_header(&h, ch.frame.meta);
        if hb.len() == c.header.len() {
            if let Some(lo) = (0..hb.len()).find(|&k| hb[k] != c.header[k]) {
                let hi = (0..hb.len()).rfind(|&k| hb[k] != c.header[k]).expect("a differing byte") + 1;
                write_all_at(&f, &hb[lo..hi], lo as u64).map_err(io_at(&path, Some(lo as u64)))?;
            }
        } else {
            write_all_at(&f, &hb, 0).map_err(io_at(&path, Some(0)))?;
        }
        if self.sync_mode == SyncMode::Full {
            f.sync_data().map_err(io_at(&path, None))?;
        }
        c.header = hb;
        c.trailer = trailer.clone();
        c.nbytes = ch.frame.nbytes;
        c.nentries = n;
        c.frame_len = frame_len;
        e.active = Some(target);
        Ok(Committed { stored, section_end: index_at, rewritten: None, renumbered: Vec::new() })
    }

    /// Rewrite the whole frame compactly to a temporary file and rename it over the frame
    /// (atomic: a crash leaves the old or the new file), then continue writing the new one.
    fn rewrite(&mut self, fr: &Frame) -> Result<Rewritten> {
        let path = self.path.clone();
        if let Some(f) = &self.file {
            // Renaming over a file created again at this path (an old handle still open while
            // a new frame is made there) would replace that new frame with this old one.
            if !crate::pio::names_file(&path, f).map_err(io_at(&path, None))? {
                let e = std::io::Error::other("the file was removed or replaced since this handle opened it");
                return Err(io_at(&path, None)(e));
            }
        }
        let tmp = unique_temp(&path);
        let out = match write_compact(&tmp, fr, self.sync_mode) {
            Ok(out) => out,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e.in_file(&tmp));
            }
        };
        if let Err(e) = fs::rename(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            return Err(io_at(&path, None)(e));
        }
        if self.sync_mode == SyncMode::Full {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = File::open(dir).and_then(|d| d.sync_all());
            }
        }
        // The rename is the commit: from here on only our own bookkeeping follows.
        let file = Arc::new(OpenOptions::new().read(true).write(true).open(&path).map_err(io_at(&path, None))?);
        let hlen = out.header.len() as u64;
        let section_end = hlen + out.cbytes;
        self.live = Some(LiveWriter::new(&file));
        self.file = Some(file.clone());
        self.header_len = hlen;
        let mut c = Contig::new(out.header, out.len, section_end);
        c.recover = Some((section_end, section_end));
        c.stored_base = out.cbytes;
        self.contig = Some(c);
        Ok(Rewritten { file, stored: out.stored, cbytes: out.cbytes, section_end })
    }

    fn commit_sparse(&mut self, ch: &Change) -> Result<Committed> {
        let chunks = ch.frame.chunks;
        // Index blocks whose entries changed (all of them after opening or a chunksize change).
        let n = chunks.len();
        let nblocks = n.div_ceil(BLOCK_ENTRIES);
        if self.sparse_index.chunksize != Some(ch.chunksize) {
            self.sparse_index.blocks.clear();
            self.sparse_index.chunksize = Some(ch.chunksize);
        }
        let invalid = invalidate(&mut self.sparse_index.blocks, &ch.dirty, nblocks);
        let which: Vec<usize> =
            invalid.iter().flat_map(|&j| j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n)).collect();
        let stored = self.store(chunks, &which)?;
        let cbytes = ch.stored_cbytes + Self::added_cbytes(chunks, &stored);
        // Ids C-Blosc2 would refuse (id + 32 > cbytes) move down before this commit's index is
        // written, so that no committed state has them (a kill between the commit and a later
        // renumbering left python-blosc2 a frame it refused: crash test, round 474 of 500).
        // (`next_id - 1` bounds every id in use: the full scan runs only when it might help.)
        let moves = if self.next_id.saturating_sub(1) + 32 > cbytes {
            self.link_moves(&Self::plan_id_moves(chunks, &stored, ch.retired, cbytes))
        } else {
            Vec::new()
        };
        let moved: std::collections::HashMap<u64, u64> = moves.iter().copied().collect();
        let value = |i: usize| {
            let v = Self::entry_value(chunks, i, 0, &stored);
            if v < 0 {
                v
            } else {
                moved.get(&(v as u64)).map_or(v, |&to| to as i64)
            }
        };
        let invalid = if moves.is_empty() { invalid } else { (0..nblocks).collect() };
        let r = (|| -> Result<()> {
            let index = if ch.frame.nbytes > 0 {
                let mut raw = Vec::with_capacity(BLOCK_ENTRIES * 8);
                for &j in &invalid {
                    raw.clear();
                    for i in j * BLOCK_ENTRIES..((j + 1) * BLOCK_ENTRIES).min(n) {
                        raw.extend_from_slice(&value(i).to_le_bytes());
                    }
                    self.sparse_index.blocks[j] = Some(Arc::from(offsets::encode_index_block(&raw)?));
                }
                let blocks: Vec<&[u8]> =
                    self.sparse_index.blocks.iter().map(|b| &**b.as_ref().expect("encoded")).collect();
                let mut out = Vec::new();
                offsets::assemble_index(&mut out, n, &blocks);
                Some(out)
            } else {
                None
            };
            // A failed write leaves the old index (and so the old stamp) in place.
            self.sparse_stamp =
                Some(write_sparse_index(&self.path, &ch.frame, index.as_deref(), cbytes, self.sync_mode)?);
            Ok(())
        })();
        if let Err(e) = r {
            self.discard(&moves.iter().map(|m| m.1).collect::<Vec<_>>());
            self.discard(&stored.iter().map(|p| p.1).collect::<Vec<_>>());
            return Err(e);
        }
        for &id in ch.retired.iter().chain(moves.iter().map(|m| &m.0)) {
            let _ = fs::remove_file(self.path.join(chunk_file_name(id)));
        }
        let renumbered: Vec<(usize, u64)>;
        if !moves.is_empty() {
            renumbered = (0..n)
                .filter_map(|i| {
                    let v = Self::entry_value(chunks, i, 0, &stored);
                    u64::try_from(v).ok().and_then(|v| moved.get(&v)).map(|&to| (i, to))
                })
                .collect();
            self.next_id = (0..n).map(value).max().map_or(0, |v| v.max(-1) + 1) as u64;
        } else {
            // Optional, like compaction: the change is committed whether or not this succeeds.
            // (When no move could be made above: retired names were in the way, or linking
            // failed.)
            renumbered = self.compact_ids(ch, &stored, cbytes).unwrap_or_default();
        }
        Ok(Committed { stored, section_end: u64::MAX, rewritten: None, renumbered })
    }

    /// Moves (old id, new id) bringing the highest chunk file ids of the new index down to the
    /// lowest ids that neither the committed index (`retired` is still referenced there) nor
    /// the new one uses, when the new index would break C-Blosc2's id bound.
    fn plan_id_moves(chunks: &dyn ChunkList, placed: &[Placed], retired: &[u64], cbytes: u64) -> Vec<(u64, u64)> {
        let ids: std::collections::BTreeSet<u64> = (0..chunks.len())
            .map(|i| Self::entry_value(chunks, i, 0, placed))
            .filter(|&v| v >= 0)
            .map(|v| v as u64)
            .collect();
        let Some(&max_id) = ids.last() else { return Vec::new() };
        if max_id + 32 <= cbytes {
            return Vec::new();
        }
        let retired: std::collections::HashSet<u64> = retired.iter().copied().collect();
        let mut high = ids.iter().rev().copied();
        let mut moves = Vec::new();
        for free in (0..max_id).filter(|k| !ids.contains(k) && !retired.contains(k)) {
            match high.next() {
                Some(h) if h > free => moves.push((h, free)),
                _ => break,
            }
        }
        moves
    }

    /// Hard-link (or copy) each move's chunk file to its new name; all or none: on any error
    /// the new names made so far are removed and no move is made (the commit goes on with
    /// the old ids, and [`Writer::compact_ids`] tries again after it).
    fn link_moves(&self, moves: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut linked = Vec::with_capacity(moves.len());
        for &(old, new) in moves {
            let (from, to) = (self.path.join(chunk_file_name(old)), self.path.join(chunk_file_name(new)));
            let _ = fs::remove_file(&to); // an unreferenced leftover, if any
            if fs::hard_link(&from, &to).or_else(|_| fs::copy(&from, &to).map(drop)).is_err() {
                for &(_, made) in &linked {
                    let _ = fs::remove_file(self.path.join(chunk_file_name(made)));
                }
                return Vec::new();
            }
            linked.push((old, new));
        }
        linked
    }

    /// C-Blosc2 (python-blosc2 4.14) refuses to open a sparse frame in which a chunk file id
    /// plus 32 exceeds the frame's `cbytes` (it bounds ids like contiguous offsets). Appends
    /// and deletes, or a resize that rewrites every chunk, get there (its own writes too).
    /// A commit moves such ids down itself ([`Writer::plan_id_moves`]); this second index
    /// write after it is the fallback for when it could not (the committed index still named
    /// the free ids: retired chunks, now removed). The same moves: hard links (or copies)
    /// under the new names, then an index naming them (atomic rename), then the old names go;
    /// a crash or error before the index leaves only unreferenced files.
    fn compact_ids(&mut self, ch: &Change, placed: &[Placed], cbytes: u64) -> Result<Vec<(usize, u64)>> {
        let chunks = ch.frame.chunks;
        let n = chunks.len();
        let moves = self.link_moves(&Self::plan_id_moves(chunks, placed, &[], cbytes));
        if moves.is_empty() {
            return Ok(Vec::new());
        }
        let moved: std::collections::HashMap<u64, u64> = moves.iter().copied().collect();
        let values: Vec<i64> = (0..n)
            .map(|i| {
                let v = Self::entry_value(chunks, i, 0, placed);
                u64::try_from(v).ok().and_then(|v| moved.get(&v)).map_or(v, |&to| to as i64)
            })
            .collect();
        type Encoded = (Vec<Option<Arc<[u8]>>>, IndexStamp);
        let r = (|| -> Result<Encoded> {
            let mut blocks = Vec::with_capacity(n.div_ceil(BLOCK_ENTRIES));
            for part in values.chunks(BLOCK_ENTRIES) {
                let raw: Vec<u8> = part.iter().flat_map(|v| v.to_le_bytes()).collect();
                blocks.push(Some(Arc::from(offsets::encode_index_block(&raw)?)));
            }
            let refs: Vec<&[u8]> = blocks.iter().map(|b| &**b.as_ref().expect("just encoded")).collect();
            let mut index = Vec::new();
            offsets::assemble_index(&mut index, n, &refs);
            let stamp = write_sparse_index(&self.path, &ch.frame, Some(&index), cbytes, self.sync_mode)?;
            Ok((blocks, stamp))
        })();
        let (blocks, stamp) = match r {
            Ok(v) => v,
            Err(e) => {
                self.discard(&moves.iter().map(|m| m.1).collect::<Vec<_>>());
                return Err(e);
            }
        };
        self.sparse_index.blocks = blocks;
        self.sparse_stamp = Some(stamp);
        for &(old, _) in &moves {
            let _ = fs::remove_file(self.path.join(chunk_file_name(old)));
        }
        self.next_id = values.iter().max().map_or(0, |&v| v.max(-1) + 1) as u64;
        Ok((0..n)
            .filter_map(|i| {
                let v = Self::entry_value(chunks, i, 0, placed);
                u64::try_from(v).ok().and_then(|v| moved.get(&v)).map(|&to| (i, to))
            })
            .collect())
    }
}

/// A compact contiguous frame written by [`write_compact`].
pub(crate) struct Compact {
    pub header: Vec<u8>,
    pub cbytes: u64,
    pub len: u64,
    /// Index and absolute position of every stored (non special-offset) chunk.
    pub stored: Vec<(usize, u64)>,
}

/// Write `fr` as a compact contiguous frame file at `path` (created or truncated).
pub(crate) fn write_compact(path: &Path, fr: &Frame, sync: SyncMode) -> Result<Compact> {
    let f = File::create(path).map_err(io_at(path, None))?;
    let hlen = (FIXED_LEN + header::metalayers_len(fr.meta)) as u64;
    let mut pos = hlen;
    let n = fr.chunks.len();
    let mut offs = Vec::with_capacity(n);
    let mut stored = Vec::new();
    for i in 0..n {
        if let Entry::Special(v) = fr.chunks.entry(i) {
            offs.push(v);
            continue;
        }
        let c = fr.chunks.bytes(i)?;
        write_all_at(&f, &c, pos).map_err(io_at(path, Some(pos)))?;
        offs.push((pos - hlen) as i64);
        stored.push((i, pos));
        pos += c.len() as u64;
    }
    let cbytes = pos - hlen;
    if fr.nbytes > 0 {
        let ix = offsets::encode_index(&offs)?;
        write_all_at(&f, &ix, pos).map_err(io_at(path, Some(pos)))?;
        pos += ix.len() as u64;
    }
    write_all_at(&f, &fr.trailer, pos).map_err(io_at(path, Some(pos)))?;
    pos += fr.trailer.len() as u64;
    let mut h = fr.header.clone();
    h.frame_type = FRAME_CONTIGUOUS;
    h.cbytes = cbytes as i64;
    h.frame_len = pos;
    let hb = header::write_header(&h, fr.meta);
    write_all_at(&f, &hb, 0).map_err(io_at(path, Some(0)))?;
    if sync == SyncMode::Full {
        f.sync_all().map_err(io_at(path, None))?;
    }
    Ok(Compact { header: hb, cbytes, len: pos, stored })
}

/// Write `fr` as a new sparse frame directory (chunk files numbered from 0, then the index).
pub(crate) fn write_sparse_copy(dir: &Path, fr: &Frame) -> Result<()> {
    fs::create_dir_all(dir).map_err(io_at(dir, None))?;
    let n = fr.chunks.len();
    let mut offs = Vec::with_capacity(n);
    let (mut id, mut cbytes) = (0u64, 0u64);
    for i in 0..n {
        if let Entry::Special(v) = fr.chunks.entry(i) {
            offs.push(v);
            continue;
        }
        let c = fr.chunks.bytes(i)?;
        let p = dir.join(chunk_file_name(id));
        write_new_file(&p, &c).map_err(io_at(&p, None))?;
        cbytes += c.len() as u64;
        offs.push(id as i64);
        id += 1;
    }
    let index = if fr.nbytes > 0 { Some(offsets::encode_index(&offs)?) } else { None };
    write_sparse_index(dir, fr, index.as_deref(), cbytes, SyncMode::None).map(drop)
}

/// Write a chunk file as a new file. Whatever had that name is unlinked first, never written
/// through: after a crash an unreferenced name can still be a hard link to a chunk that the
/// index references under another id (a renumbering interrupted before the old names went).
fn write_new_file(p: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::io::Write::write_all(&mut OpenOptions::new().write(true).create_new(true).open(p)?, bytes)
}

/// Write `chunks.b2frame` of a sparse frame (header, `index` chunk, trailer) atomically
/// (temp file + rename); returns the new version's stamp (taken before the rename, so a
/// commit by another handle just after it is not mistaken for ours).
/// A temporary name beside `path` that no other writer (thread or process) uses: two handles
/// writing the same frame without `locking` once shared one name, so one renamed the other's
/// half-written file into place (a sparse index of 0 bytes: the frame was unreadable).
pub(crate) fn unique_temp(path: &Path) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".oxtmp-{}-{n}", std::process::id()));
    PathBuf::from(tmp)
}

/// How long a temporary must have been left untouched before [`sweep_stale_temps`] removes
/// it: the process named in it looks gone, but it may live in another PID namespace
/// (a container sharing the directory) and still be writing.
const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Remove what killed processes left of their temporaries for `path` ([`unique_temp`]
/// names: `<path>.oxtmp-<pid>-<n>`, files or sparse directories, possibly a whole array's
/// worth of data, and their `.b2lock` files): those of a process id that is not running here
/// (Linux: no `/proc/<pid>`) and untouched for [`STALE_TEMP_AGE`]. Best effort: errors are ignored. Elsewhere nothing
/// is removed (no cheap check that a process is gone).
pub fn sweep_stale_temps(path: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = fs::read_dir(dir) else { return };
    let prefix = format!("{name}.oxtmp-");
    for e in entries.flatten() {
        let file_name = e.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|rest| rest.split_once('-'))
            // `<n>` is the temporary itself, `<n>.b2lock` the lock file a locked writer of it made
            .and_then(|(pid, n)| {
                n.strip_suffix(crate::lock::LOCK_SUFFIX).unwrap_or(n).parse::<u64>().ok().and(pid.parse::<u32>().ok())
            })
        else {
            continue;
        };
        let running = pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists();
        let Ok(meta) = fs::symlink_metadata(e.path()) else { continue };
        let old = meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age >= STALE_TEMP_AGE);
        if running || !old {
            continue;
        }
        let _ = if meta.is_dir() { fs::remove_dir_all(e.path()) } else { fs::remove_file(e.path()) };
    }
}

fn write_sparse_index(dir: &Path, fr: &Frame, index: Option<&[u8]>, cbytes: u64, sync: SyncMode) -> Result<IndexStamp> {
    let mut h = fr.header.clone();
    h.frame_type = FRAME_SPARSE;
    h.cbytes = cbytes as i64;
    let hlen = FIXED_LEN + header::metalayers_len(fr.meta);
    h.frame_len = (hlen + index.map_or(0, <[u8]>::len) + fr.trailer.len()) as u64;
    let mut out = header::write_header(&h, fr.meta);
    if let Some(ix) = index {
        out.extend_from_slice(ix);
    }
    out.extend_from_slice(&fr.trailer);
    let tmp = unique_temp(&dir.join(SPARSE_INDEX));
    let r = fs::write(&tmp, &out).map_err(io_at(&tmp, None)).and_then(|()| {
        if sync == SyncMode::Full {
            File::open(&tmp).and_then(|f| f.sync_all()).map_err(io_at(&tmp, None))?;
        }
        let stamp = fs::metadata(&tmp).map(|m| IndexStamp::of(&m)).map_err(io_at(&tmp, None))?;
        let dst = dir.join(SPARSE_INDEX);
        fs::rename(&tmp, &dst).map_err(io_at(&dst, None)).map(|()| stamp)
    });
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

impl Drop for Writer {
    /// Closing a contiguous file: move the index and trailer right after the last chunk and
    /// cut the file there, so a cleanly closed frame has the usual compact tail. Crash-safe
    /// like every other step (written into unreferenced space, header patched, then cut).
    fn drop(&mut self) {
        if self.has_other_writers() {
            return; // their spare index slot may lie past our tail: the last one tidies up
        }
        if let (Some(c), Some(f)) = (&self.contig, &self.file) {
            let lock = self.lock.clone();
            let Ok(_g) = exclusive_fresh(lock.as_deref()) else { return };
            let Ok(_one_at_a_time) = self.commit_guard() else { return };
            if !matches!(self.view_is_current(), Ok(true)) {
                return; // another handle wrote the file since: its state stays
            }
            let _ = finalize(c, f, self.header_len, self.sync_mode);
            if let Some(v) = &lock {
                v.announce();
            }
        }
    }
}

fn finalize(c: &Contig, f: &File, hlen: u64, sync: SyncMode) -> std::io::Result<()> {
    let Some(e) = &c.ext else { return Ok(()) };
    let Some(a) = e.active else { return Ok(()) };
    let mut out = Vec::new();
    if c.nbytes > 0 {
        let cached: Option<Vec<&[u8]>> = c.cache.iter().map(|b| b.as_ref().map(|b| &*b.bytes)).collect();
        match cached {
            Some(blocks) if blocks.len() == c.nentries.div_ceil(BLOCK_ENTRIES) => {
                offsets::assemble_index(&mut out, c.nentries, &blocks);
            }
            // A failed commit forgot the encodings (`forget_encodings`): the committed index
            // is still intact where the header points, so it is carried over as it is.
            _ => match committed_index(c, f, hlen)? {
                Some(index) => out = index,
                None => return Ok(()), // leave the committed state as it is
            },
        }
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

/// The committed offsets index chunk, read back from where the committed header points
/// (`header_len + cbytes`); None when what is there does not look like the index of
/// `c.nentries` entries ending where the trailer begins.
fn committed_index(c: &Contig, f: &File, hlen: u64) -> std::io::Result<Option<Vec<u8>>> {
    let Some(cbytes) = c.header.get(39..47).map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes"))) else {
        return Ok(None);
    };
    let Some(at) = u64::try_from(cbytes).ok().and_then(|n| n.checked_add(hlen)) else { return Ok(None) };
    let mut head = [0u8; 32];
    crate::pio::read_exact_at(f, &mut head, at)?;
    let Ok(h) = oxblosc_chunk::ChunkHeader::parse_head(&head) else { return Ok(None) };
    let end = at.checked_add(h.cbytes as u64).and_then(|e| e.checked_add(c.trailer.len() as u64));
    if h.nbytes != 8 * c.nentries || h.cbytes < head.len() || end != Some(c.frame_len) {
        return Ok(None);
    }
    let mut index = vec![0u8; h.cbytes];
    crate::pio::read_exact_at(f, &mut index, at)?;
    Ok(Some(index))
}

/// Locked writers: the exclusive lock, refused when another handle committed since this
/// writer's view was parsed (its changes would overwrite that commit).
pub(crate) fn exclusive_fresh(lock: Option<&LockView>) -> Result<Option<LockGuard<'_>>> {
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
