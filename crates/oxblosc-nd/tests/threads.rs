//! How reads and writes use their threads: writes into an in-memory array build every chunk
//! in one parallel pass (the threads meet once per write, not once per few chunks: each
//! meeting costs a trip through the run queue on a loaded machine), and reads run on the
//! calling thread alongside a helper.

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;
use oxblosc_nd::{DimSlice, Geometry, NdArray};

fn data(n: usize) -> Vec<u8> {
    (0..n as u64).flat_map(|i| ((i / 3) as u32).to_le_bytes()).collect()
}

#[test]
fn in_memory_writes_build_all_chunks_in_one_batch() {
    let cp = CParams { typesize: 4, nthreads: 2, clevel: 5, ..CParams::default() };
    let s = SChunk::new(cp, DParams { nthreads: 2 }).unwrap();
    // 10 x 8 = 80 chunks.
    let geom = Geometry::new(&[100, 64], &[10, 8], &[5, 4], 4).unwrap();
    let d = data(100 * 64);
    let mut a = NdArray::from_buffer(s, geom, Some("<u4"), &d).unwrap();
    assert_eq!(a.write_batches(), 1);
    assert_eq!(a.to_vec().unwrap(), d);
    // An unaligned slab (read-modify-write of the chunks it touches): one more batch.
    let sel = [DimSlice::new(3, 97, 1), DimSlice::new(1, 63, 1)];
    let part = data(94 * 62);
    a.set_slice(&sel, &part).unwrap();
    assert_eq!(a.write_batches(), 2);
    assert_eq!(a.get_slice(&sel).unwrap(), part);
}

/// Reads with 2 threads run on the calling thread too (a helper joins when it can): they
/// make progress while every worker of the shared 2-thread pool is busy elsewhere. (Handing
/// all the work to the pool and sleeping, as before, left the caller waiting on those
/// workers; on a loaded machine the woken workers also queued on one CPU.)
#[test]
fn two_thread_reads_do_not_wait_for_the_shared_pool() {
    let cp = CParams { typesize: 4, nthreads: 2, clevel: 5, ..CParams::default() };
    let s = SChunk::new(cp, DParams { nthreads: 2 }).unwrap();
    let geom = Geometry::new(&[100, 64], &[10, 8], &[5, 4], 4).unwrap();
    let d = data(100 * 64);
    let a = NdArray::from_buffer(s, geom, Some("<u4"), &d).unwrap();
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
        let col = a.get_slice(&[DimSlice::new(0, 100, 1), DimSlice::new(7, 8, 1)]).unwrap();
        let _ = tx.send((a.to_vec().unwrap() == d, col.len()));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(60));
    for _ in 0..2 {
        let _ = release.send(());
    }
    assert_eq!(got.expect("the reads waited for the busy pool"), (true, 100 * 4));
}
