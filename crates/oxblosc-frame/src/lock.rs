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
//! exclusive lock nest inside it. The exclusive lock itself is taken on a second description
//! of the lock file, so a writer's wait can end with a timeout ([`DEFAULT_TIMEOUT`]).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::pio::{read_exact_at, write_all_at};
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

/// How long a writer waits for the exclusive lock before giving up with a clear error (another
/// process may hold it for as long as it likes; a writer that never gets its turn must not
/// hang forever). Override with `OXBLOSC_LOCK_TIMEOUT` (seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

fn timeout() -> Duration {
    oxblosc_chunk::config::lock_timeout_secs().map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

/// `flock` on the whole file, waiting in the kernel (retrying after signals); with
/// `nonblocking`, `Ok(false)` when another handle holds a conflicting lock.
#[cfg(unix)]
fn os_lock(file: &File, kind: Kind, nonblocking: bool) -> std::io::Result<bool> {
    use rustix::fs::{flock, FlockOperation as Op};
    let op = match (kind, nonblocking) {
        (Kind::Shared, false) => Op::LockShared,
        (Kind::Shared, true) => Op::NonBlockingLockShared,
        (Kind::Exclusive, false) => Op::LockExclusive,
        (Kind::Exclusive, true) => Op::NonBlockingLockExclusive,
        (Kind::Unlock, _) => Op::Unlock,
    };
    loop {
        match flock(file, op) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::WOULDBLOCK) if nonblocking => return Ok(false),
            r => return r.map(|()| true).map_err(std::io::Error::from),
        }
    }
}

#[cfg(not(unix))]
fn os_lock(_file: &File, _kind: Kind, _nonblocking: bool) -> std::io::Result<bool> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "frame locking is only implemented on Unix"))
}

/// An exclusive `flock` held through a description of its own, unlocked explicitly when
/// dropped. Closing alone is not enough: a process forked while the lock is held shares the
/// description, and the lock then stayed until the child closed its copy too (exited), so
/// the parent's next writers timed out. `LOCK_UN` releases it for every copy.
#[derive(Debug)]
pub(crate) struct HeldFlock(File);

impl Drop for HeldFlock {
    fn drop(&mut self) {
        let _ = os_lock(&self.0, Kind::Unlock, false);
    }
}

/// The exclusive lock on a description of its own (`file` opened again), so that a wait that
/// times out can be abandoned: a helper thread waits in the kernel (woken as soon as the lock
/// is free, like any waiter) and hands the locked file over; if nobody takes it any more, the
/// thread drops it, which releases the lock.
fn wait_exclusive(path: &Path) -> std::io::Result<HeldFlock> {
    let f = OpenOptions::new().read(true).write(true).open(path)?;
    lock_within_timeout(f, "the frame lock held by another handle")
}

/// The exclusive `flock` on `f`, waiting at most [`timeout`] (see [`wait_exclusive`]);
/// `what` names the lock in the timeout error.
fn lock_within_timeout(f: File, what: &str) -> std::io::Result<HeldFlock> {
    if os_lock(&f, Kind::Exclusive, true)? {
        return Ok(HeldFlock(f));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // (a lock got after the caller gave up is released when the unsent value is dropped)
        let r = os_lock(&f, Kind::Exclusive, false).map(|_| HeldFlock(f));
        let _ = tx.send(r);
    });
    let limit = timeout();
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("timed out after {:.1} s waiting for {what}", limit.as_secs_f64()),
        )),
    }
}

/// The exclusive `flock` every writer holds on the frame itself (the file, or the directory of
/// a sparse frame) from its staleness check to the end of its write (a locked writer after the
/// lock file's), so that two writers (two processes, or two handles, locked or not) commit
/// one at a time and the later one sees the other's commit (`Error::Stale`) instead of
/// writing over it. No lock file is made
/// and python-blosc2's `locking` protocol is untouched; writers of other libraries are not
/// excluded. Released when the returned guard is dropped. `Ok(None)` when there is no
/// frame at `path` any more (the staleness check reports that) or flock is unavailable. The
/// wait ends with a timeout error like a locked writer's ([`wait_exclusive`]): a holder that
/// never lets go (a stopped process, a child forked mid-commit that inherited the
/// description) once made the writer wait in the kernel forever.
pub(crate) fn commit_guard(path: &Path) -> std::io::Result<Option<HeldFlock>> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    match lock_within_timeout(f, "another writer's commit to finish (an flock on the frame itself)") {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => Ok(None),
        Err(e) => Err(e),
    }
}

#[derive(Debug, Default)]
struct Held {
    shared: usize,
    exclusive: usize,
    /// The description holding the exclusive lock ([`wait_exclusive`]).
    ex: Option<HeldFlock>,
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
            os_lock(&self.file, Kind::Shared, false).map_err(|e| self.err(e))?;
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
            h.ex = Some(wait_exclusive(&self.path).map_err(|e| self.err(e))?);
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
            // Dropping the exclusive description's guard releases its lock.
            if h.ex.take().is_none() {
                let _ = os_lock(&self.file, Kind::Unlock, false);
            }
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

    /// Tell other handles that the frame changed (call with the exclusive lock held). Best
    /// effort: the counter is advisory, and a write that fails halfway (a file size limit,
    /// a full disk) may still have changed it, so this view then takes whatever the file
    /// holds; nothing else can change it while the lock is held.
    pub(crate) fn announce(&self) {
        let _ = self.lock.bump();
        if let Ok(g) = self.lock.generation() {
            self.set_seen(g);
        }
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// What `fork` does to a description held by a thread of the parent: the child gets a
    /// copy (`try_clone` is the same `dup`). Dropping the parent's guard must release the
    /// lock all the same (closing alone left it held by the copy until the child exited).
    #[test]
    fn a_copy_of_the_description_does_not_keep_the_lock() {
        let dir = std::env::temp_dir().join(format!("oxblosc-lock-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let frame = dir.join("f.b2frame");
        std::fs::write(&frame, b"frame").unwrap();
        let free_now = || {
            let f = File::open(&frame).unwrap();
            os_lock(&f, Kind::Exclusive, true).unwrap()
        };
        for _ in 0..2 {
            let guard = commit_guard(&frame).unwrap().expect("flock is available");
            let inherited = guard.0.try_clone().unwrap();
            assert!(!free_now(), "held while the guard lives");
            drop(guard);
            assert!(free_now(), "a copy of the description kept the commit flock");
            drop(inherited);
        }
        // The same for a handle's exclusive lock-file lock.
        let lock = FrameLock::open(&frame).unwrap();
        let g = lock.exclusive().unwrap();
        let inherited = lock.state().ex.as_ref().unwrap().0.try_clone().unwrap();
        drop(g);
        let other = File::open(lock_path(&frame)).unwrap();
        assert!(os_lock(&other, Kind::Exclusive, true).unwrap(), "a copy kept the lock file's lock");
        drop(inherited);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
