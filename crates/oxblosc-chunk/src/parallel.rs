//! Thread pools, one per requested size, created once and reused by every call.
//!
//! One-thread calls never touch a pool, so they pay no synchronisation at all.
//!
//! `unsafe`: the per-process pool map is reached through a raw pointer (see [`pools`]).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

/// The pools of one process, and which process that is.
///
/// A process forked after a pool was made (Python's `multiprocessing` "fork", Dask's
/// process pools) inherits the pools but none of their threads: work sent there would wait
/// forever. It also inherits this map's lock as it was at the fork: held, if another thread
/// was looking up or making a pool, by a thread that does not exist in the child. So a child
/// touches neither: it installs a map of its own (found by process id before any lock is
/// taken) and leaks the parent's (dropping its pools would signal threads that do not exist).
struct Pools {
    pid: u32,
    map: Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>,
}

/// The current process's [`Pools`], installed once per process and never freed.
static POOLS: AtomicPtr<Pools> = AtomicPtr::new(std::ptr::null_mut());

fn pools() -> &'static Pools {
    let pid = std::process::id();
    loop {
        let current = POOLS.load(Ordering::Acquire);
        // SAFETY: a non-null pointer here came from `Box::into_raw` below and is never freed.
        if let Some(p) = unsafe { current.as_ref() } {
            if p.pid == pid {
                return p;
            }
        }
        let fresh = Box::into_raw(Box::new(Pools { pid, map: Mutex::default() }));
        if POOLS.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire).is_err() {
            // Another thread of this process installed one first: use that one.
            // SAFETY: `fresh` was never shared.
            drop(unsafe { Box::from_raw(fresh) });
        }
    }
}

/// Run `f` while holding the pool map's lock (tests fork while another thread holds it).
#[doc(hidden)]
pub fn with_pool_map_locked<R>(f: impl FnOnce() -> R) -> R {
    let _guard = pools().map.lock().unwrap_or_else(|e| e.into_inner());
    f()
}

/// The shared pool with `n` worker threads (per process, see [`Pools`]).
pub fn pool(n: usize) -> Arc<rayon::ThreadPool> {
    let mut map = pools().map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(n)
        .or_insert_with(|| {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("oxblosc-{i}"))
                    .build()
                    .expect("cannot start worker threads"),
            )
        })
        .clone()
}

/// Per-thread scratch buffers reused across blocks and calls.
#[derive(Default)]
pub struct Scratch {
    pub a: Vec<u8>,
    pub b: Vec<u8>,
    pub c: Vec<u8>,
    /// Rows of one repeated byte, by value (run and zero streams read by the unshuffle in
    /// place of a fill into `a`); kept because a field's constant byte rows (exponents, high
    /// bytes) repeat block after block.
    pub runs: Vec<(u8, Vec<u8>)>,
}

impl Scratch {
    /// A row of `n` bytes of value `v` (filled once, then reused while long enough).
    pub fn run_row(&mut self, v: u8, n: usize) -> &[u8] {
        let at = match self.runs.iter().position(|r| r.0 == v) {
            Some(at) => at,
            None => {
                self.runs.push((v, Vec::new()));
                self.runs.len() - 1
            }
        };
        let row = &mut self.runs[at].1;
        if row.len() < n {
            *row = vec![v; n];
        }
        &row[..n]
    }
}

/// Buffers larger than this are released after use instead of being kept per thread.
const KEEP_LIMIT: usize = 64 << 20;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Run `f` with this thread's scratch buffers. Reusing them avoids allocating and
/// zero-filling (and page-faulting) fresh buffers on every call, which dominated the cost
/// of highly compressible chunks.
pub fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => {
            let r = f(&mut s);
            let s = &mut *s;
            for v in [&mut s.a, &mut s.b, &mut s.c] {
                if v.capacity() > KEEP_LIMIT {
                    *v = Vec::new();
                }
            }
            if s.runs.iter().map(|r| r.1.capacity()).sum::<usize>() > KEEP_LIMIT {
                s.runs.clear();
            }
            r
        }
        // Re-entered on the same thread: use a temporary set.
        Err(_) => f(&mut Scratch::default()),
    })
}
