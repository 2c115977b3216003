//! Frame files: contiguous frame files (`.b2frame`) and sparse frame directories (format spec
//! 4.1, 4.8), opened lazily; writable ones commit every change through [`crate::writer`]
//! (write order, durability and recovery are described there).
//!
//! Opening reads the 87-byte header, the metalayers, the trailer and the offsets index; each
//! chunk is read with a positioned read when asked for. A frame may start at an offset inside a
//! larger file ([`open_at`]; read-only).
//!
//! Concurrency: without locking, one writer at a time and readers in other processes may see
//! an older state or fail on bytes the writer moved. With [`OpenConfig::locking`] (module
//! [`crate::lock`]) every commit runs under the exclusive lock and bumps the generation;
//! readers parse and read under the shared lock and get [`Error::Stale`] instead of bytes from
//! a newer state, then [`SChunk::refresh`] re-reads header, trailer and index. A locked writer
//! waits for the exclusive lock before each change and re-reads a stale view first
//! ([`SChunk::refresh`]), so several writers take turns. Memory-mapped readers take no lock.

use std::fs::{self, File, OpenOptions};
use std::path::Path;
use std::sync::Arc;

use oxblosc_chunk::{CParams, DParams};

use crate::cframe;
use crate::lock::{FrameLock, LockView};
use crate::mmap::Map;
use crate::schunk::SChunk;
use crate::storage::{Backing, Source};
use crate::writer::{
    sweep_stale_temps, unique_temp, write_compact, write_sparse_copy, IndexStamp, SyncMode, Writer, SPARSE_INDEX,
};
use crate::{Error, Result};

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
    // A writer parses and recovers under the commit flock ([`crate::lock::commit_guard`]):
    // another process's writer mid-commit has written chunks and index past `frame_len` and
    // not yet patched the header, and cutting the file there (recovery, below) left its
    // committed chunks as holes of zeros (session 11: an open that wrote nothing corrupted
    // a writer's file in 3 runs of 3). Bytes a batch of another writer staged earlier, cut
    // here, are caught by that writer's staleness check (`Contig::seen_len`).
    let _one_at_a_time = match mode {
        Mode::Append => crate::lock::commit_guard(path).map_err(io_at(path, None))?,
        Mode::Read => None,
    };
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
            // (Not while another writer of this file is open in this process: the bytes may
            // be its spare index slot; see `live`.)
            if base + frame_len < len && !crate::live::has_writer(&file) {
                // Recovery: bytes past frame_len are an interrupted (never committed) write or
                // the spare index slot of the last session; nothing references them.
                file.set_len(base + frame_len).map_err(io_at(path, None))?;
                // Another locked writer may still count on the bytes just cut (its spare index
                // slot): announce the change so it re-reads the frame before writing again.
                if let Some(v) = &lock {
                    v.set_seen(v.lock.bump()?);
                }
            }
            let mut header = vec![0u8; hlen as usize];
            crate::storage::read_exact_at(&file, &mut header, 0).map_err(io_at(path, Some(0)))?;
            s.slots.set_tracking(true);
            // Free space between the last stored chunk and the index (the unused reserve and
            // spare index slot of an earlier session) is reused for new chunks.
            // The committed index starts at header + cbytes, except in a frame without chunks:
            // C-Blosc2 then writes the trailer right after the header and may keep the cbytes
            // of chunks it deleted (a 132-byte frame claiming 308), so nothing there is free.
            let index_at = hlen + p_cbytes;
            let recover = match s.last_stored() {
                _ if index_at > frame_len || s.nchunks() == 0 => None,
                Some((i, pos)) => {
                    let end = pos + s.stored_len(i, pos).map_err(|e| e.in_file(path))?;
                    (end <= index_at).then_some((end, index_at))
                }
                None => Some((hlen, index_at)),
            };
            let live = s.estimate_live().map_err(|e| e.in_file(path))?;
            let w = Writer::contiguous(
                path,
                file,
                header,
                frame_len,
                hlen + p_cbytes,
                recover,
                (live, s.stored_cbytes),
                lock,
            );
            s.writer = Some(w);
        }
    }
    Ok(s)
}

fn open_sparse(dir: &Path, mode: Mode, lock: Option<Arc<LockView>>) -> Result<SChunk> {
    let ipath = dir.join(SPARSE_INDEX);
    let file = File::open(&ipath).map_err(io_at(&ipath, None))?;
    let len = file.metadata().map_err(io_at(&ipath, None))?.len();
    let p = cframe::parse(&Source::File(&file, len), 0, true, true).map_err(|e| e.in_file(&ipath))?;
    for &(i, id) in &p.sparse_extra {
        let cpath = dir.join(crate::storage::chunk_file_name(id));
        let mut head = [0u8; 8];
        File::open(&cpath).and_then(|f| crate::pio::read_exact_at(&f, &mut head, 0)).map_err(io_at(&cpath, None))?;
        if let Some(e) = cframe::extra_chunk_error(0, &p.header, p.offsets.len(), i, &head) {
            return Err(e.in_file(&ipath));
        }
    }
    let hlen = u64::from(p.header.header_len);
    let next_id = p.offsets.iter().filter(|&&o| o >= 0).map(|&o| o as u64 + 1).max().unwrap_or(0);
    let backing = Backing::Sparse { dir: dir.to_path_buf(), lock: lock.clone() };
    let mut s = cframe::build(p, backing, 0, true).map_err(|e| e.in_file(dir))?;
    match mode {
        Mode::Read => s.read_only = true,
        Mode::Append => {
            s.slots.set_tracking(true);
            let stamp = IndexStamp::of(&file.metadata().map_err(io_at(&ipath, None))?);
            s.writer = Some(Writer::sparse(dir, hlen, next_id, stamp, lock));
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
        // Renamed away first, then emptied: a process killed while removing used to leave a
        // directory of chunk files without its index, which neither opened nor could be
        // removed (not a sparse frame any more); now at worst a temporary directory remains.
        let tmp = unique_temp(path);
        fs::rename(path, &tmp).map_err(io_at(path, None))?;
        return fs::remove_dir_all(&tmp).map_err(io_at(path, None));
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

/// Move the frame file or sparse directory at `from` (just written under a temporary name
/// beside `path`) to `path`, replacing a frame there (with its `.b2lock` file) in one step:
/// other processes and a crash see the old frame or the new one, never a missing or half
/// one. A directory at `path` that is not a sparse frame is refused and left alone.
pub(crate) fn replace(from: &Path, path: &Path) -> Result<()> {
    let Ok(old) = fs::symlink_metadata(path) else {
        return fs::rename(from, path).map_err(io_at(path, None));
    };
    if old.is_dir() && !path.join(SPARSE_INDEX).exists() {
        return Err(Error::param("path", "directory is not a sparse frame").in_file(path));
    }
    if fs::symlink_metadata(from).is_err() {
        return Err(io_at(from, None)(std::io::Error::from(std::io::ErrorKind::NotFound)));
    }
    // The old frame's lock file holds its generation counter and goes with it: inside a
    // sparse directory it goes by itself; beside a file it is named now, while `path` is
    // still that file, and removed once the new frame is in place.
    let old_lock = (!old.is_dir()).then(|| crate::lock::lock_path(path));
    let drop_old_lock = || match old_lock.as_deref().map(fs::remove_file) {
        Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => Err(io_at(old_lock.as_deref().unwrap(), None)(e)),
        _ => Ok(()),
    };
    // A file over a file: rename(2) replaces it atomically everywhere.
    if !old.is_dir() && !from.is_dir() {
        fs::rename(from, path).map_err(io_at(path, None))?;
        return drop_old_lock();
    }
    // A directory is involved. Linux swaps the two names atomically (whatever their kinds);
    // the old frame, now under the temporary name, is removed after. Only when the exchange
    // is unsupported (another OS, or a file system without it) is the old frame removed
    // first: a crash in between leaves no frame at `path`. Any other failure (the new frame
    // vanished, no permission) is reported with both frames left where they were.
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        use rustix::io::Errno;
        match renameat_with(CWD, from, CWD, path, RenameFlags::EXCHANGE) {
            Ok(()) => {
                drop_old_lock()?;
                return if old.is_dir() { fs::remove_dir_all(from) } else { fs::remove_file(from) }
                    .map_err(io_at(from, None));
            }
            Err(e) if e == Errno::INVAL || e == Errno::NOSYS || e == Errno::OPNOTSUPP => {}
            Err(e) => return Err(io_at(from, None)(std::io::Error::from(e))),
        }
    }
    remove(path)?;
    fs::rename(from, path).map_err(io_at(path, None))
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

    /// [`create`](Self::create) under a temporary name beside `path`, for a frame that must
    /// appear whole or not at all: fill it, then [`publish`](Self::publish) it to `path` (or
    /// [`discard`](Self::discard) it). Until then `path` keeps whatever it held. A process
    /// killed before publishing leaves only the temporary (`<path>.oxtmp-<pid>-<n>`); the
    /// next staged creation at `path` removes such leftovers once stale ([`sweep_stale_temps`]).
    pub fn create_staged(
        path: impl AsRef<Path>,
        contiguous: bool,
        cparams: CParams,
        dparams: DParams,
    ) -> Result<SChunk> {
        sweep_stale_temps(path.as_ref());
        SChunk::create(unique_temp(path.as_ref()), contiguous, cparams, dparams)
    }

    /// Move this writable handle's frame to `path` (see [`replace`]); the handle keeps
    /// working on it there. Not for locked handles (their lock file is named after the path:
    /// enable locking after publishing) nor inside a batch.
    pub fn publish(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        if self.is_locked() || self.txn.is_some() {
            return Err(Error::param("publish", "not while locked or inside a batch").in_file(path));
        }
        let Some(w) = &mut self.writer else {
            return Err(Error::param("publish", "only a writable frame on disk can be published").in_file(path));
        };
        replace(&w.path, path)?;
        w.path = path.to_path_buf();
        match &mut self.backing {
            Backing::File { path: p, .. } | Backing::Sparse { dir: p, .. } => *p = path.to_path_buf(),
            _ => {}
        }
        Ok(())
    }

    /// Remove the frame of a handle made by [`create_staged`](Self::create_staged) and never
    /// published (a failed fill); the handle must not be used after.
    pub fn discard(&mut self) {
        if let Some(mut w) = self.writer.take() {
            w.abandon();
            let _ = remove(&w.path);
        }
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
    /// Done automatically when the dead space written by this session exceeds the live bytes,
    /// and when closing (dropping) a handle that leaves dead space (see `compact_on_close`).
    pub fn compact(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let r = self.frame().and_then(|fr| w.compact(&fr));
        self.writer = Some(w);
        if let Some(rw) = r? {
            self.apply_rewrite(rw);
        }
        Ok(())
    }

    /// Closing: rewrite a contiguous file this handle wrote compactly when it keeps dead
    /// space ([`Writer::bloated_on_close`]), so a closed file's `cbytes` is its chunks' bytes
    /// as in python-blosc2's files. Skipped inside a batch (the view is not committed) and on
    /// any error, a stale locked view included: the file then stays as committed and the
    /// writer's own close moves its tail after the last chunk.
    fn compact_on_close(&mut self) {
        let bloated =
            self.writer.as_ref().is_some_and(|w| !w.has_other_writers() && w.bloated_on_close(self.stored_cbytes));
        if bloated && self.txn.is_none() {
            let _ = self.compact();
        }
    }

    /// Whether this handle was opened with locking.
    pub fn is_locked(&self) -> bool {
        self.backing.lock_view().is_some()
    }

    /// Locked handles: if another handle committed a change since this one parsed the frame,
    /// parse it again (header, metalayers, trailer, index; chunks stay on disk). Returns
    /// whether it did. Writers do it under the exclusive lock before every change, so several
    /// locked writers take turns. Unlocked handles: always `Ok(false)`.
    pub fn refresh(&mut self) -> Result<bool> {
        let Some(view) = self.backing.lock_view().cloned() else { return Ok(false) };
        if self.writer.is_some() {
            let _g = view.lock.exclusive()?;
            return self.refresh_locked(&view);
        }
        let _g = view.lock.shared()?;
        self.refresh_locked(&view)
    }

    /// [`refresh`](Self::refresh) with the lock held (exclusive for writers).
    pub(crate) fn refresh_locked(&mut self, view: &Arc<LockView>) -> Result<bool> {
        let g = view.lock.generation()?;
        // A locked writer killed after its commit but before bumping the generation leaves the
        // frame changed under the same generation: a writer whose view no longer matches the
        // frame catches up too (it refused every later write as stale: 3-writer kill test).
        let behind = self.writer.as_ref().is_some_and(|w| matches!(w.view_is_current(), Ok(false)));
        if g == view.seen() && !behind {
            return Ok(false);
        }
        let path = self.backing.path().expect("locked handles have a path").to_path_buf();
        let mode = if self.writer.is_some() { Mode::Append } else { Mode::Read };
        if let Some(w) = &mut self.writer {
            // Its view is out of date: it must not write anything when dropped.
            w.abandon();
        }
        view.set_seen(g);
        let mut fresh = if path.is_dir() {
            open_sparse(&path, mode, Some(view.clone()))?
        } else {
            open_contiguous(&path, 0, mode, Some(view.clone()), false)?
        };
        fresh.cparams.nthreads = self.cparams.nthreads;
        fresh.dparams = self.dparams.clone();
        fresh.set_verify_checksums(self.verify_checksums());
        if let (Some(a), Some(b)) = (&mut fresh.writer, &self.writer) {
            a.sync_mode = b.sync_mode;
        }
        *self = fresh;
        Ok(true)
    }

    /// Locked writers: hold the exclusive lock across several changes until
    /// [`release_lock`](Self::release_lock), so other locked handles see all of them or none
    /// (python-blosc2's `holding_lock`). Waits for the lock, then catches up with changes
    /// other handles committed.
    pub fn hold_lock(&mut self) -> Result<()> {
        let Some(v) = self.writer.as_ref().and_then(|w| w.lock.clone()) else {
            return Err(Error::param("locking", "holding the lock needs a writable handle opened with locking"));
        };
        v.lock.hold()?;
        if let Err(e) = self.refresh_locked(&v) {
            v.lock.release();
            return Err(e);
        }
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
    ///
    /// Written under a temporary name, then renamed into place: a process killed while saving
    /// (also inside [`SChunk::create`]) leaves no half-written frame at `path` (one whose
    /// header was not written yet could not be opened).
    pub fn save(&self, path: impl AsRef<Path>, contiguous: bool) -> Result<()> {
        let path = path.as_ref();
        let fr = self.frame()?;
        let tmp = unique_temp(path);
        let r = if contiguous {
            write_compact(&tmp, &fr, SyncMode::None).map(|_| ())
        } else {
            write_sparse_copy(&tmp, &fr)
        };
        let r = r.and_then(|()| replace(&tmp, path));
        if r.is_err() {
            let _ = if contiguous { fs::remove_file(&tmp) } else { fs::remove_dir_all(&tmp) };
        }
        r.map_err(|e| e.in_file(path))
    }
}

impl Drop for SChunk {
    fn drop(&mut self) {
        self.compact_on_close();
    }
}
