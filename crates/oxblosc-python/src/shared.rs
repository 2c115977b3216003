//! A native object shared by several Python threads.
//!
//! The Python classes are `frozen` (no PyO3 borrow flag, so no "Already borrowed" when two
//! threads call one handle) and keep the engine object behind a read-write lock: reads run
//! side by side, changes one at a time and never while a read is under way, so nothing
//! tears. The lock is only ever waited on with the GIL released (inside `allow_threads`),
//! and no guard outlives the closure: a thread blocked on the lock never holds the GIL that
//! the lock's holder may need, so the two locks cannot deadlock.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

pub(crate) struct Shared<T> {
    lock: RwLock<T>,
    /// Threads inside a read right now (evidence that reads overlap; see `rendezvous`).
    readers: AtomicUsize,
    /// The most threads ever inside reads at once.
    peak: AtomicUsize,
    /// Calls that took the exclusive lock (could have changed the object): lets Python tell
    /// an untouched copy of a file's array from a changed one.
    writes: AtomicU64,
}

/// Counts one reader in `readers` while alive.
struct Inside<'a>(&'a AtomicUsize);

impl<'a> Inside<'a> {
    fn new(n: &'a AtomicUsize, peak: &AtomicUsize) -> Self {
        let now = n.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        Inside(n)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<T: Send + Sync> Shared<T> {
    pub(crate) fn new(value: T) -> Self {
        let (readers, peak, writes) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicU64::new(0));
        Shared { lock: RwLock::new(value), readers, peak, writes }
    }

    /// Run `f` on the object under the shared lock, with the GIL released.
    pub(crate) fn read<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&T) -> R + Send) -> R {
        py.allow_threads(|| {
            // A panic cannot leave a half-made change behind a read lock; after one under
            // the write lock the engine's own invariants (commit last) still hold.
            let g = self.lock.read().unwrap_or_else(PoisonError::into_inner);
            let _inside = Inside::new(&self.readers, &self.peak);
            f(&g)
        })
    }

    /// The shared lock itself, for a caller already inside `allow_threads` that reads several
    /// objects at once (a table's columns); never call it with the GIL held.
    pub(crate) fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        self.lock.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` on the object under the exclusive lock, with the GIL released.
    pub(crate) fn write<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut T) -> R + Send) -> R {
        self.writes.fetch_add(1, Ordering::SeqCst);
        py.allow_threads(|| f(&mut self.lock.write().unwrap_or_else(PoisonError::into_inner)))
    }

    /// Calls so far that took the exclusive lock.
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// The most threads that were inside reads of this object at the same moment.
    pub(crate) fn peak_readers(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Enter a read and stay there until `n` threads have been inside reads of this object
    /// at once (true), or `timeout` passes (false). Lets tests show that reads of one handle
    /// really overlap: with reads serialised the second thread could never get in.
    pub(crate) fn rendezvous(&self, py: Python<'_>, n: usize, timeout: Duration) -> bool {
        self.read(py, |_| {
            let end = Instant::now() + timeout;
            while self.peak.load(Ordering::SeqCst) < n {
                if Instant::now() >= end {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            true
        })
    }
}
