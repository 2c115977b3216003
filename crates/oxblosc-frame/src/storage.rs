//! Where stored chunks live: an in-memory frame buffer, a frame file read with positioned
//! reads, or the chunk files of a sparse frame directory.
//!
//! Nothing here loads more than asked: a chunk is read when it is requested (its 16-byte
//! header first when only its sizes are needed).

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::lock::{LockGuard, LockView};
use crate::mmap::Map;
pub(crate) use crate::pio::{read_exact_at, write_all_at};
use crate::{Error, Result};

/// The bytes behind `Slot::Stored` positions.
#[derive(Debug, Clone)]
pub(crate) enum Backing {
    /// No stored chunks (a super-chunk built in memory).
    None,
    /// A frame in memory; positions are absolute within the buffer.
    Buffer(Arc<[u8]>),
    /// A frame file; positions are absolute within the file. With `lock` (locking=True),
    /// every read holds the shared lock and fails with `Error::Stale` once another handle
    /// has committed a change.
    File { file: Arc<File>, path: PathBuf, lock: Option<Arc<LockView>> },
    /// A frame file mapped read-only; positions are absolute within the file.
    Map { map: Arc<Map>, path: PathBuf },
    /// A sparse frame directory; positions are chunk file ids.
    Sparse { dir: PathBuf, lock: Option<Arc<LockView>> },
}

/// Sparse frame chunk file name for an id (`%08X.chunk`).
pub fn chunk_file_name(id: u64) -> String {
    format!("{id:08X}.chunk")
}

/// A readable frame source (buffer or file) for parsing headers, trailers and the index.
pub(crate) enum Source<'a> {
    Bytes(&'a [u8]),
    File(&'a File, u64),
}

impl Source<'_> {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Source::Bytes(b) => b.len() as u64,
            Source::File(_, len) => *len,
        }
    }

    /// `n` bytes at `pos`, or a Truncated error naming `what`.
    pub(crate) fn read(&self, pos: u64, n: u64, what: &'static str) -> Result<Cow<'_, [u8]>> {
        check_range(pos, n, self.len(), what)?;
        match self {
            Source::Bytes(b) => Ok(Cow::Borrowed(&b[pos as usize..(pos + n) as usize])),
            Source::File(f, _) => {
                let mut v = vec![0u8; n as usize];
                read_exact_at(f, &mut v, pos).map_err(|e| Error::io(Some(pos), e))?;
                Ok(Cow::Owned(v))
            }
        }
    }
}

/// `n` bytes at `pos` lie inside `len` bytes, else a Truncated error naming `what`.
fn check_range(pos: u64, n: u64, len: u64, what: &'static str) -> Result<()> {
    match pos.checked_add(n) {
        Some(end) if end <= len => Ok(()),
        _ => Err(Error::Truncated { what, offset: pos, need: n, have: len.saturating_sub(pos) }),
    }
}

impl Backing {
    /// The lock of a handle opened with locking.
    pub(crate) fn lock_view(&self) -> Option<&Arc<LockView>> {
        match self {
            Backing::File { lock, .. } | Backing::Sparse { dir: _, lock } => lock.as_ref(),
            _ => None,
        }
    }

    /// The file or directory behind the stored chunks.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Backing::File { path, .. } | Backing::Map { path, .. } => Some(path),
            Backing::Sparse { dir, .. } => Some(dir),
            Backing::None | Backing::Buffer(_) => None,
        }
    }

    /// For locked handles: the shared lock, held while stored bytes are read.
    pub(crate) fn read_guard(&self) -> Result<Option<LockGuard<'_>>> {
        self.lock_view().map(|v| v.read_guard()).transpose()
    }

    /// Read `n` bytes at absolute `pos` (buffer, map or file backings).
    pub(crate) fn read_at(&self, pos: u64, n: u64, what: &'static str) -> Result<Cow<'_, [u8]>> {
        fn borrow<'b>(b: &'b [u8], pos: u64, n: u64, what: &'static str) -> Result<Cow<'b, [u8]>> {
            let len = Source::Bytes(b).read(pos, n, what)?.len();
            Ok(Cow::Borrowed(&b[pos as usize..pos as usize + len]))
        }
        match self {
            Backing::Buffer(b) => borrow(b, pos, n, what),
            Backing::Map { map, .. } => borrow(map, pos, n, what),
            Backing::File { .. } => {
                let mut v = Vec::new();
                self.read_into(pos, n, what, &mut v)?;
                Ok(Cow::Owned(v))
            }
            Backing::None | Backing::Sparse { .. } => {
                Err(Error::param("storage", "no contiguous frame behind this super-chunk"))
            }
        }
    }

    /// [`Backing::read_at`] into `buf` (replacing its contents): a caller that reuses one
    /// buffer for many chunk reads of a file avoids faulting in fresh pages for each.
    pub(crate) fn read_into(&self, pos: u64, n: u64, what: &'static str, buf: &mut Vec<u8>) -> Result<()> {
        let Backing::File { file, .. } = self else {
            let c = self.read_at(pos, n, what)?;
            buf.clear();
            buf.extend_from_slice(&c);
            return Ok(());
        };
        let _g = self.read_guard()?;
        let len = file.metadata().map_err(|e| Error::io(None, e))?.len();
        check_range(pos, n, len, what)?;
        // The read overwrites every byte: a reused buffer is not cleared first (a memset of
        // each whole chunk read, a tenth of a file read's CPU).
        buf.resize(n as usize, 0);
        read_exact_at(file, buf, pos).map_err(|e| Error::io(Some(pos), e))
    }

    /// Read `out.len()` bytes at absolute `pos` of a frame file into `out` (file backings only:
    /// the others borrow their bytes).
    pub(crate) fn read_into_slice(&self, pos: u64, out: &mut [u8], what: &'static str) -> Result<()> {
        let Backing::File { file, .. } = self else {
            return Err(Error::param("storage", "not a frame file"));
        };
        let _g = self.read_guard()?;
        let len = file.metadata().map_err(|e| Error::io(None, e))?.len();
        check_range(pos, out.len() as u64, len, what)?;
        read_exact_at(file, out, pos).map_err(|e| Error::io(Some(pos), e))
    }

    /// Read a chunk file of a sparse frame (refused above `max` bytes) into `buf` (replacing
    /// its contents): the whole file, or only its first `head` bytes when given.
    pub(crate) fn read_chunk_file_into(
        &self,
        dir: &Path,
        id: u64,
        max: u64,
        head: Option<u64>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let _g = self.read_guard()?;
        let p = dir.join(chunk_file_name(id));
        let f = File::open(&p).map_err(|e| Error::io(None, e).in_file(&p))?;
        let len = f.metadata().map_err(|e| Error::io(None, e).in_file(&p))?.len();
        if len > max {
            return Err(Error::field("chunk file size", 0, format!("{len} bytes exceeds the chunk limit")).in_file(&p));
        }
        buf.resize(head.map_or(len, |h| h.min(len)) as usize, 0); // (overwritten by the read)
        read_exact_at(&f, buf, 0).map_err(|e| Error::io(Some(0), e).in_file(&p))
    }
}
