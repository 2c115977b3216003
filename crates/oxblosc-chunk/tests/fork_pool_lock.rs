//! A process forked while another thread holds the lock of the thread-pool map.
//!
//! The child inherits the lock in its held state but not the thread holding it: a child
//! that takes that lock to find (or make) its own pool waits forever. The child here must
//! compress and decompress with worker threads; the parent waits for it with a timeout (a
//! hang is reported as a failure, not waited out). This file holds only this test, so no
//! other test thread is running while it forks.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use oxblosc_chunk::{compress, decompress, parallel, CParams, DParams};

fn round_trip_with_threads() -> bool {
    let data: Vec<u8> = (0..4_000_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
    let cp = CParams { codec: 1, typesize: 4, nthreads: 2, blocksize: 1 << 16, ..CParams::default() };
    let Ok(chunk) = compress(&data, &cp) else { return false };
    decompress(&chunk, &DParams { nthreads: 2 }).is_ok_and(|back| back == data)
}

/// Wait for `pid` for at most `limit`; kill it and return `None` if it is still running.
fn wait_with_timeout(pid: libc::pid_t, limit: Duration) -> Option<libc::c_int> {
    let deadline = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own child, with a valid out pointer.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return Some(status);
        }
        if Instant::now() > deadline {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn child_forked_while_a_thread_holds_the_pool_map_lock_compresses() {
    assert!(round_trip_with_threads(), "the parent's 2-thread pool works");
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = thread::spawn(move || {
        parallel::with_pool_map_locked(|| {
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
    });
    held_rx.recv().unwrap();
    // SAFETY: the child only compresses, decompresses and calls _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(round_trip_with_threads).unwrap_or(false);
        // SAFETY: leave the child without running the test harness's exit path.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let status = wait_with_timeout(pid, Duration::from_secs(60));
    let status = status.expect("the forked child hung on the pool map lock its parent's thread held");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child round trip failed: {status}");
    assert!(round_trip_with_threads(), "the parent still works");
}
