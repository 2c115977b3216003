//! Frame files: contiguous frame files (`.b2frame`) and sparse frame directories (format spec
//! 4.1, 4.8), opened lazily and written incrementally.
//!
//! Opening reads the 87-byte header, the metalayers, the trailer and the offsets index; each
//! chunk is read with a positioned read when asked for. A frame may start at an offset inside a
//! larger file ([`open_at`]; read-only).
//!
//! ## Write order and durability (what is done now, what is left)
//!
//! The rule is *write new data before anything that points to it*:
//!
//! * Sparse frames (directory): a new or updated chunk goes to a **new** `%08X.chunk` file
//!   (id = largest id ever used + 1), never over an existing one. Then the index frame is
//!   written to `chunks.b2frame.tmp` and renamed over `chunks.b2frame` (atomic on POSIX), and
//!   only after that are the files of replaced or deleted chunks removed. A crash at any point
//!   leaves either the old or the new index, both pointing at complete chunk files (at worst an
//!   orphan chunk file remains). This holds without fsync against process kills; against power
//!   loss the file contents must be synced before the rename ([`SyncMode::Full`] does this).
//! * Contiguous files: like C-Blosc2, new chunks are written at the end of the chunks section
//!   (over the old offsets index and trailer), then the new index and trailer, then the header
//!   fields (`frame_len`, `cbytes`, `nbytes`, `chunksize`) are patched. Chunks already stored
//!   are never rewritten (updates write the new chunk at the end and repoint the index; the old
//!   bytes stay as dead space inside the chunks section, which readers ignore). **Crash window:**
//!   between the chunk write and the header patch the header still names the old index
//!   position, now overwritten. Closing it (next step) = append the new chunk + index + trailer
//!   *after* the current trailer and patch the header last, then compact the dead tail on the
//!   following append; or keep a copy of the previous tail in a side journal.
//!   Per-append cost is O(nchunks) today because the whole index is recompressed and written.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use oxblosc_chunk::{CParams, DParams};

use crate::cframe;
use crate::header::{self, FIXED_LEN, FRAME_CONTIGUOUS, FRAME_SPARSE};
use crate::offsets;
use crate::schunk::{SChunk, Slot};
use crate::storage::{chunk_file_name, write_all_at, Backing, Source};
use crate::{Error, Result};

/// Name of the index frame inside a sparse frame directory.
pub const SPARSE_INDEX: &str = "chunks.b2frame";

/// How a frame file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read only.
    Read,
    /// Read and write an existing frame (appends never rewrite stored chunks).
    Append,
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
}

impl Writer {
    pub(crate) fn retire(&mut self, id: u64) {
        if !self.contiguous {
            self.retired.push(id);
        }
    }
}

fn io_at(path: &Path, offset: Option<u64>) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(offset, e).in_file(path)
}

/// Open a frame file or sparse frame directory.
pub fn open(path: impl AsRef<Path>, mode: Mode) -> Result<SChunk> {
    let path = path.as_ref();
    if path.is_dir() {
        open_sparse(path, mode)
    } else {
        open_contiguous(path, 0, mode)
    }
}

/// Open a contiguous frame that starts `offset` bytes into a file (read-only when offset > 0).
pub fn open_at(path: impl AsRef<Path>, offset: u64, mode: Mode) -> Result<SChunk> {
    let path = path.as_ref();
    if offset > 0 && mode != Mode::Read {
        return Err(Error::param("mode", "frames embedded at an offset open read-only").in_file(path));
    }
    open_contiguous(path, offset, mode)
}

fn open_contiguous(path: &Path, base: u64, mode: Mode) -> Result<SChunk> {
    let file = OpenOptions::new().read(true).write(mode == Mode::Append).open(path).map_err(io_at(path, None))?;
    let len = file.metadata().map_err(io_at(path, None))?.len();
    let p = cframe::parse(&Source::File(&file, len), base, false, false).map_err(|e| e.in_file(path))?;
    let hlen = u64::from(p.header.header_len);
    let frame_len = p.header.frame_len;
    let file = Arc::new(file);
    let mut s = cframe::build(p, Backing::File { file: file.clone(), path: path.to_path_buf() }, base, false)
        .map_err(|e| e.in_file(path))?;
    match mode {
        Mode::Read => s.read_only = true,
        Mode::Append => {
            if base + frame_len != len {
                return Err(
                    Error::field("frame_len", 15, format!("{frame_len} but the file holds {len} bytes")).in_file(path)
                );
            }
            s.writer = Some(Writer {
                path: path.to_path_buf(),
                contiguous: true,
                file: Some(file),
                header_len: hlen,
                next_id: 0,
                retired: Vec::new(),
                sync_mode: SyncMode::None,
            });
        }
    }
    Ok(s)
}

fn open_sparse(dir: &Path, mode: Mode) -> Result<SChunk> {
    let ipath = dir.join(SPARSE_INDEX);
    let file = File::open(&ipath).map_err(io_at(&ipath, None))?;
    let len = file.metadata().map_err(io_at(&ipath, None))?.len();
    let p = cframe::parse(&Source::File(&file, len), 0, true, true).map_err(|e| e.in_file(&ipath))?;
    let hlen = u64::from(p.header.header_len);
    let next_id = p.offsets.iter().filter(|&&o| o >= 0).map(|&o| o as u64 + 1).max().unwrap_or(0);
    let mut s = cframe::build(p, Backing::Sparse { dir: dir.to_path_buf() }, 0, true).map_err(|e| e.in_file(dir))?;
    match mode {
        Mode::Read => s.read_only = true,
        Mode::Append => {
            s.writer = Some(Writer {
                path: dir.to_path_buf(),
                contiguous: false,
                file: None,
                header_len: hlen,
                next_id,
                retired: Vec::new(),
                sync_mode: SyncMode::None,
            })
        }
    }
    Ok(s)
}

/// Remove a frame file or a sparse frame directory (only a directory holding `chunks.b2frame`
/// and chunk files is removed).
pub fn remove(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    if path.is_dir() {
        if !path.join(SPARSE_INDEX).exists() {
            return Err(Error::param("path", "directory is not a sparse frame").in_file(path));
        }
        fs::remove_dir_all(path).map_err(io_at(path, None))
    } else if path.exists() {
        fs::remove_file(path).map_err(io_at(path, None))
    } else {
        Ok(())
    }
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
        let f = File::create(path).map_err(io_at(path, None))?;
        let hlen = (FIXED_LEN + header::metalayers_len(&self.meta)) as u64;
        let mut pos = hlen;
        let mut offs = Vec::with_capacity(self.slots.len());
        for i in 0..self.slots.len() {
            if self.special_offset_kind(i).is_some() {
                offs.push(self.index_entry(i, None));
                continue;
            }
            let c = self.get_chunk(i)?;
            write_all_at(&f, &c, pos).map_err(io_at(path, Some(pos)))?;
            offs.push((pos - hlen) as i64);
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
        Ok(())
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
        write_sparse_index(self, dir, &offs, cbytes, SyncMode::None)
    }

    /// Persist pending changes (called after every change of a writable file-backed schunk).
    pub(crate) fn sync(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let r = if w.contiguous { self.sync_contiguous(&mut w) } else { self.sync_sparse(&mut w) };
        let path = w.path.clone();
        self.writer = Some(w);
        r.map_err(|e| e.in_file(path))
    }

    /// Slots that must be stored before writing the index: chunks in memory, and special
    /// chunks when the chunk size is variable (no special offsets then, Trap 30).
    fn pending(&self, i: usize) -> bool {
        match self.slots[i] {
            Slot::Mem(_) => true,
            Slot::Special { .. } => self.chunksize <= 0,
            Slot::Stored(_) => false,
        }
    }

    fn sync_contiguous(&mut self, w: &mut Writer) -> Result<()> {
        let f = w.file.clone().expect("contiguous writer has a file");
        let path = w.path.clone();
        let hb0 = header::write_header(&self.frame_header(FRAME_CONTIGUOUS, 0), &self.meta);
        if hb0.len() as u64 != w.header_len {
            // Metalayers changed size: only possible while no chunk is stored.
            if self.slots.iter().any(|s| matches!(s, Slot::Stored(_))) {
                return Err(Error::param("meta", "the header cannot change size once chunks are stored"));
            }
            w.header_len = hb0.len() as u64;
            self.section_end = w.header_len;
        }
        let hlen = w.header_len;
        let mut pos = self.section_end;
        for i in 0..self.slots.len() {
            if !self.pending(i) {
                continue;
            }
            let c = self.get_chunk(i)?.into_owned();
            write_all_at(&f, &c, pos).map_err(io_at(&path, Some(pos)))?;
            if matches!(self.slots[i], Slot::Special { .. }) {
                self.stored_cbytes += c.len() as u64;
            }
            self.slots[i] = Slot::Stored(pos);
            pos += c.len() as u64;
        }
        self.section_end = pos;
        let cbytes = pos - hlen;
        let offs: Vec<i64> = (0..self.slots.len())
            .map(|i| match self.slots[i] {
                Slot::Stored(p) => self.index_entry(i, Some(p - hlen)),
                _ => self.index_entry(i, None),
            })
            .collect();
        if self.nbytes > 0 {
            let ix = offsets::encode_index(&offs)?;
            write_all_at(&f, &ix, pos).map_err(io_at(&path, Some(pos)))?;
            pos += ix.len() as u64;
        }
        let t = self.trailer_bytes()?;
        write_all_at(&f, &t, pos).map_err(io_at(&path, Some(pos)))?;
        pos += t.len() as u64;
        f.set_len(pos).map_err(io_at(&path, None))?;
        if w.sync_mode == SyncMode::Full {
            f.sync_data().map_err(io_at(&path, None))?;
        }
        let mut h = self.frame_header(FRAME_CONTIGUOUS, cbytes);
        h.frame_len = pos;
        let hb = header::write_header(&h, &self.meta);
        write_all_at(&f, &hb, 0).map_err(io_at(&path, Some(0)))?;
        if w.sync_mode == SyncMode::Full {
            f.sync_data().map_err(io_at(&path, None))?;
        }
        self.starts = OnceLock::new();
        Ok(())
    }

    fn sync_sparse(&mut self, w: &mut Writer) -> Result<()> {
        let dir = w.path.clone();
        for i in 0..self.slots.len() {
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
            if matches!(self.slots[i], Slot::Special { .. }) {
                self.stored_cbytes += c.len() as u64;
            }
            self.slots[i] = Slot::Stored(id);
            w.next_id += 1;
        }
        let offs: Vec<i64> = (0..self.slots.len())
            .map(|i| match self.slots[i] {
                Slot::Stored(id) => self.index_entry(i, Some(id)),
                _ => self.index_entry(i, None),
            })
            .collect();
        write_sparse_index(self, &dir, &offs, self.stored_cbytes, w.sync_mode)?;
        for id in w.retired.drain(..) {
            let _ = fs::remove_file(dir.join(chunk_file_name(id)));
        }
        Ok(())
    }
}

/// Write `chunks.b2frame` of a sparse frame atomically (temp file + rename).
fn write_sparse_index(s: &SChunk, dir: &Path, offs: &[i64], cbytes: u64, sync: SyncMode) -> Result<()> {
    let index = if s.nbytes > 0 { Some(offsets::encode_index(offs)?) } else { None };
    let trailer = s.trailer_bytes()?;
    let mut h = s.frame_header(FRAME_SPARSE, cbytes);
    let hlen = FIXED_LEN + header::metalayers_len(&s.meta);
    h.frame_len = (hlen + index.as_ref().map_or(0, Vec::len) + trailer.len()) as u64;
    let mut out = header::write_header(&h, &s.meta);
    if let Some(ix) = &index {
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
