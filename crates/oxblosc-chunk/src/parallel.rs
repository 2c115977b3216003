//! Thread pools, one per requested size, created once and reused by every call.
//!
//! One-thread calls never touch a pool, so they pay no synchronisation at all.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The pools of this process, and which process that is.
type Pools = (u32, HashMap<usize, Arc<rayon::ThreadPool>>);

/// The shared pool with `n` worker threads.
///
/// A process forked after a pool was made (Python's `multiprocessing` "fork", Dask's
/// process pools) inherits the pool but none of its threads: work sent there would wait
/// forever. So pools belong to the process id that made them; a child leaks the parent's
/// (dropping them would signal threads that do not exist) and makes its own.
pub fn pool(n: usize) -> Arc<rayon::ThreadPool> {
    static POOLS: OnceLock<Mutex<Pools>> = OnceLock::new();
    let mut guard = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if guard.0 != pid {
        std::mem::forget(std::mem::take(&mut guard.1));
        guard.0 = pid;
    }
    guard
        .1
        .entry(n)
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
            r
        }
        // Re-entered on the same thread: use a temporary set.
        Err(_) => f(&mut Scratch::default()),
    })
}
