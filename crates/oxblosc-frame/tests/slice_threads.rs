//! `SChunk` slices over several chunks with 2 threads run on the calling thread too (a
//! helper joins when it can): they make progress while every worker of the shared 2-thread
//! pool is busy elsewhere. (Handing the chunks to the pool and sleeping, as before, left
//! the caller waiting on those workers; on a loaded machine the woken workers also queued
//! on one CPU.)

use std::mem::MaybeUninit;

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;

#[test]
fn two_thread_slices_do_not_wait_for_the_shared_pool() {
    let cp = CParams { typesize: 4, nthreads: 2, clevel: 5, ..CParams::default() };
    let mut s = SChunk::new(cp, DParams { nthreads: 2 }).unwrap();
    let data: Vec<u8> = (0..4 * 4096u32).flat_map(|i| (i / 5).to_le_bytes()).collect();
    for c in data.chunks(4 * 4096 / 4) {
        s.append_data(c).unwrap();
    }
    let pool = oxblosc_chunk::parallel::pool(2);
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let hold = std::sync::Arc::new(std::sync::Mutex::new(hold));
    let started = std::sync::Arc::new(std::sync::Barrier::new(3));
    for _ in 0..2 {
        let (hold, started) = (hold.clone(), started.clone());
        pool.spawn(move || {
            started.wait();
            let _ = hold.lock().unwrap().recv();
        });
    }
    started.wait(); // both workers are now busy until released
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Items 100..16000: parts of the first and last chunks, two whole ones between.
        let mut out = vec![MaybeUninit::<u8>::uninit(); (16000 - 100) * 4];
        s.get_slice_into_uninit(100, 16000, &mut out).unwrap();
        // SAFETY: a successful `get_slice_into_uninit` has written every byte of the slice.
        let got: Vec<u8> = out.iter().map(|b| unsafe { b.assume_init() }).collect();
        let _ = tx.send(got);
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(60));
    for _ in 0..2 {
        let _ = release.send(());
    }
    assert_eq!(got.expect("the slice waited for the busy pool"), data[400..64000]);
}
