//! Thread pools, one per requested size, created once and reused by every call.
//!
//! One-thread calls never touch a pool, so they pay no synchronisation at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The shared pool with `n` worker threads.
pub fn pool(n: usize) -> Arc<rayon::ThreadPool> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    pools
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

/// Per-thread scratch buffers reused across blocks.
#[derive(Default)]
pub struct Scratch {
    pub a: Vec<u8>,
    pub b: Vec<u8>,
    pub c: Vec<u8>,
}
