//! Advisory cross-process locking of a frame (`locking=True`), compatible with C-Blosc2 >= 3.2
//! and python-blosc2 >= 4.8.
//!
//! The lock is a sidecar file: `<file>.b2lock` beside a contiguous frame, `<dir>/.b2lock` inside
//! a sparse frame directory. It is locked with `flock(2)` (through rustix; other platforms
//! refuse `locking` for now, C-Blosc2 uses `LockFileEx` on Windows): shared while a handle reads stored chunks or parses the frame, exclusive while a
//! writer commits a change. Bytes 8..16 of the lock file hold a generation counter (u64 LE)
//! that every committed change increments under the exclusive lock; a handle remembers the
//! generation its view was parsed at, so a change made through another handle is detected even
//! when the frame's length did not change. Bytes 0..8 are kept as found (zero when we create
//! the file). Layout, file names and lock kinds were checked against python-blosc2 4.14.1
//! (strace and the lock file's bytes after each operation).
//!
//! Advisory: only handles that lock too are protected. Not safe on NFS (flock is emulated
//! with byte-range locks or not propagated, depending on the client) nor for memory-mapped
//! readers (they read without taking the lock).
//!
//! `flock` locks belong to an open file description: two `FrameLock`s (two handles, even in
//! one process) exclude each other, but requests through one `FrameLock` would convert its
//! lock instead of waiting. So each `FrameLock` counts its own holders: the first shared holder
//! takes the OS lock and the last releases it, and shared requests while this handle holds the
//! exclusive lock nest inside it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::storage::{read_exact_at, write_all_at};
use crate::{Error, Result};

/// Name of the lock file inside a sparse frame directory.
pub const SPARSE_LOCK: &str = ".b2lock";
/// Suffix added to a contiguous frame file's name.
pub const LOCK_SUFFIX: &str = ".b2lock";

/// Where the lock file of the frame at `path` lives.
pub fn lock_path(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(SPARSE_LOCK)
    } else {
        let mut p = path.as_os_str().to_owned();
        p.push(LOCK_SUFFIX);
        PathBuf::from(p)
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Shared,
    Exclusive,
    Unlock,
}

/// How long a writer waits for the exclusive lock before giving up with a clear error (another process
/// may hold it for as long as it likes; a writer that never gets its turn must not hang
/// forever). Override with `OXBLOSC_LOCK_TIMEOUT` (seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

fn timeout() -> Duration {
    std::env::var("OXBLOSC_LOCK_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

/// `flock` on the whole file (retrying after signals); the exclusive lock waits up to
/// `timeout()`.
#[cfg(unix)]
fn os_lock(file: &File, kind: Kind) -> std::io::Result<()> {
    use rustix::fs::{flock, FlockOperation};
    // Readers wait in the kernel (woken as soon as a writer lets go, so they follow a busy
    // writer); writers poll, so their wait can end with a timeout.
    let op = match kind {
        Kind::Shared => FlockOperation::LockShared,
        Kind::Exclusive => FlockOperation::NonBlockingLockExclusive,
        Kind::Unlock => FlockOperation::Unlock,
    };
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        match flock(file, op) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let limit = timeout();
                if start.elapsed() >= limit {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "timed out after {:.1} s waiting for the frame lock held by another handle",
                            limit.as_secs_f64()
                        ),
                    ));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            r => return r.map_err(std::io::Error::from),
        }
    }
}

#[cfg(not(unix))]
fn os_lock(_file: &File, _kind: Kind) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "frame locking is only implemented on Unix"))
}

#[derive(Debug, Default)]
struct Held {
    shared: usize,
    exclusive: usize,
}

/// An open lock file.
#[derive(Debug)]
pub struct FrameLock {
    file: File,
    path: PathBuf,
    held: Mutex<Held>,
}

/// Holds the lock (shared or exclusive) until dropped.
#[must_use]
pub struct LockGuard<'a> {
    lock: &'a FrameLock,
    exclusive: bool,
}

impl FrameLock {
    /// Open (creating it if needed) the lock file of the frame at `frame`.
    pub fn open(frame: &Path) -> Result<FrameLock> {
        let path = lock_path(frame);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(None, e).in_file(&path))?;
        Ok(FrameLock { file, path, held: Mutex::new(Held::default()) })
    }

    fn state(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, e: std::io::Error) -> Error {
        Error::io(None, e).in_file(&self.path)
    }

    /// Wait for the shared lock (readers).
    pub fn shared(&self) -> Result<LockGuard<'_>> {
        let mut h = self.state();
        if h.shared == 0 && h.exclusive == 0 {
            os_lock(&self.file, Kind::Shared).map_err(|e| self.err(e))?;
        }
        h.shared += 1;
        Ok(LockGuard { lock: self, exclusive: false })
    }

    /// Wait for the exclusive lock (a writer committing a change). Not taken while this same
    /// lock is held shared (that would deadlock or silently convert it).
    pub fn exclusive(&self) -> Result<LockGuard<'_>> {
        let mut h = self.state();
        if h.shared > 0 {
            return Err(Error::param("locking", "exclusive lock requested while this handle reads"));
        }
        if h.exclusive == 0 {
            os_lock(&self.file, Kind::Exclusive).map_err(|e| self.err(e))?;
        }
        h.exclusive += 1;
        Ok(LockGuard { lock: self, exclusive: true })
    }

    /// Take the exclusive lock until [`release`](Self::release) (nests like the guards).
    pub fn hold(&self) -> Result<()> {
        std::mem::forget(self.exclusive()?);
        Ok(())
    }

    /// End one [`hold`](Self::hold) (no-op without one).
    pub fn release(&self) {
        self.drop_one(true);
    }

    fn drop_one(&self, exclusive: bool) {
        let mut h = self.state();
        let n = if exclusive { &mut h.exclusive } else { &mut h.shared };
        if *n == 0 {
            return;
        }
        *n -= 1;
        if h.shared == 0 && h.exclusive == 0 {
            let _ = os_lock(&self.file, Kind::Unlock);
        }
    }

    /// The generation counter (0 for a new, empty lock file). Call with the lock held.
    pub fn generation(&self) -> Result<u64> {
        let len = self.file.metadata().map_err(|e| self.err(e))?.len();
        if len < 16 {
            return Ok(0);
        }
        let mut b = [0u8; 8];
        read_exact_at(&self.file, &mut b, 8).map_err(|e| self.err(e))?;
        Ok(u64::from_le_bytes(b))
    }

    /// Increment the generation; returns the new value. Call with the exclusive lock held.
    pub fn bump(&self) -> Result<u64> {
        let len = self.file.metadata().map_err(|e| self.err(e))?.len();
        let mut rec = [0u8; 16];
        if len >= 16 {
            read_exact_at(&self.file, &mut rec, 0).map_err(|e| self.err(e))?;
        }
        let g = u64::from_le_bytes(rec[8..16].try_into().expect("8 bytes")).wrapping_add(1);
        rec[8..16].copy_from_slice(&g.to_le_bytes());
        write_all_at(&self.file, &rec, 0).map_err(|e| self.err(e))?;
        Ok(g)
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.lock.drop_one(self.exclusive);
    }
}

/// A handle's lock plus the generation its view of the frame was parsed at.
#[derive(Debug)]
pub(crate) struct LockView {
    pub(crate) lock: FrameLock,
    seen: AtomicU64,
}

impl LockView {
    pub(crate) fn new(lock: FrameLock, seen: u64) -> Arc<LockView> {
        Arc::new(LockView { lock, seen: AtomicU64::new(seen) })
    }

    pub(crate) fn seen(&self) -> u64 {
        self.seen.load(Ordering::Acquire)
    }

    pub(crate) fn set_seen(&self, g: u64) {
        self.seen.store(g, Ordering::Release);
    }

    /// Take the shared lock and check that no other handle committed since this view was
    /// parsed; reads of stored bytes happen while the returned guard lives.
    pub(crate) fn read_guard(&self) -> Result<LockGuard<'_>> {
        let g = self.lock.shared()?;
        if self.lock.generation()? != self.seen() {
            return Err(Error::Stale);
        }
        Ok(g)
    }
}
