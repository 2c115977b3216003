//! Thread pools, one per requested size, created once and reused by every call, and
//! [`map_jobs`], the calling thread working alongside them.
//!
//! One-thread calls never touch a pool, so they pay no synchronisation at all.
//!
//! `unsafe`: the per-process pool map is reached through a raw pointer (see [`pools`]).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Condvar, Mutex};

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
    /// The helper pools of [`map_jobs`], by number of helpers.
    helpers: Mutex<HashMap<usize, Arc<Helpers>>>,
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
        let fresh = Box::into_raw(Box::new(Pools { pid, map: Mutex::default(), helpers: Mutex::default() }));
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

/// The worker threads [`map_jobs`] wakes to help the calling thread, kept apart from the
/// shared [`pool`]s because their CPU affinity is set per call (see [`Helpers::place`]).
struct Helpers {
    pool: rayon::ThreadPool,
    placement: Mutex<placement::Placement>,
}

impl Helpers {
    fn get(n: usize) -> Arc<Helpers> {
        let mut map = pools().helpers.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(n)
            .or_insert_with(|| {
                let placement = Mutex::new(placement::Placement::default());
                let tids = placement::Tids::default();
                let record = tids.clone();
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("oxblosc-helper-{i}"))
                    .start_handler(move |_| record.add_current())
                    .build()
                    .expect("cannot start worker threads");
                // Every worker has run its start handler (recorded its id) once it took a job.
                pool.broadcast(|_| ());
                placement.lock().unwrap_or_else(|e| e.into_inner()).tids = tids;
                Arc::new(Helpers { pool, placement })
            })
            .clone()
    }

    /// Keep the helpers off the CPU the caller runs on (when it may run elsewhere). Woken
    /// helpers were otherwise often queued on the caller's CPU, behind the caller, which then
    /// did every job itself (measured: 2 threads at 0.96x of one in one run out of two).
    fn place(&self) {
        self.placement.lock().unwrap_or_else(|e| e.into_inner()).away_from_caller();
    }

    /// Run `main` on the calling thread while `count` helpers run `help`, and return once
    /// `main` is done and every helper that *started* `help` has finished it. A helper that
    /// starts later does nothing (`help` must leave nothing undone when a helper skips it, as
    /// [`map_jobs`]' queue does). A panic in `help` is resumed here.
    fn join_late<M>(&self, count: usize, help: &(dyn Fn() + Sync), main: impl FnOnce() -> M) -> M {
        let call = Arc::new(LateCall::new(help));
        for _ in 0..count {
            let call = Arc::clone(&call);
            self.pool.spawn(move || call.help());
        }
        let guard = CloseOnDrop(&call);
        let out = main();
        drop(guard);
        if let Some(p) = call.lock().panic.take() {
            std::panic::resume_unwind(p);
        }
        out
    }

    /// Undo [`Self::place`] once the caller has run out of jobs: a helper still working (or
    /// still waiting for its CPU, taken by another process) may then move to the caller's CPU,
    /// which the caller is about to leave idle while it waits.
    fn release(&self) {
        self.placement.lock().unwrap_or_else(|e| e.into_inner()).anywhere();
    }
}

/// Run `f` on every job with `nthreads` threads: the calling thread and `nthreads - 1`
/// workers of a shared pool, each taking the next job from one queue until none is left.
/// Returns the results in job order, or the error of the lowest-numbered failed job (jobs not
/// yet started when one fails are skipped).
///
/// Why not `pool(n).install(par_iter)`: there the caller sleeps while `n` pool threads, asleep
/// between calls, are woken one after the other; on a 2-CPU VM a call of a few hundred
/// microseconds then often ran at one-thread speed (the woken workers were placed on one CPU
/// until the load balancer moved one, a few milliseconds later: 2 threads measured 0.94-1.05x
/// of one). Here the caller starts on the first job at once and wakes only `n - 1` helpers; a
/// helper that starts late finds fewer jobs left, so a call is never much slower than with
/// one thread. And the caller never waits for a helper that has not started by the time the
/// jobs run out ([`Helpers::join_late`]): a helper woken on a CPU busy with another process
/// may start milliseconds later, and waiting for it (as a rayon scope does) made a 0.4 ms call
/// take 1.6 ms (session 8, `genotype_i1` lz4hc/none at 2 threads: 0.25x python-blosc2).
pub fn map_jobs<T, R, E>(jobs: Vec<T>, nthreads: usize, f: impl Fn(T) -> Result<R, E> + Sync) -> Result<Vec<R>, E>
where
    T: Send,
    R: Send,
    E: Send,
{
    let njobs = jobs.len();
    let nthreads = nthreads.clamp(1, njobs.max(1));
    if nthreads == 1 {
        return jobs.into_iter().map(f).collect();
    }
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let failed = AtomicBool::new(false);
    // Each thread's (job number, outcome) pairs.
    let drain = || {
        let mut done = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, job)) = next else { break };
            let r = f(job);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            done.push((i, r));
        }
        done
    };
    let helpers = Mutex::new(Vec::new());
    let help = || {
        let d = drain();
        helpers.lock().unwrap_or_else(|e| e.into_inner()).push(d);
    };
    let mine = with_helpers(nthreads - 1, &help, drain);
    let mut slots: Vec<Option<Result<R, E>>> = std::iter::repeat_with(|| None).take(njobs).collect();
    let helpers = helpers.into_inner().unwrap_or_else(|e| e.into_inner());
    for (i, r) in mine.into_iter().chain(helpers.into_iter().flatten()) {
        slots[i] = Some(r);
    }
    let mut out = Vec::with_capacity(njobs);
    for slot in slots {
        match slot {
            Some(Ok(r)) => out.push(r),
            Some(Err(e)) => return Err(e),
            // Skipped after a failure (which comes later in job order): report that failure.
            None => {}
        }
    }
    debug_assert!(out.len() == njobs || !failed.load(Ordering::Relaxed));
    Ok(out)
}

/// What [`front_and_back`] did: the caller ran jobs `0..front` itself; `back` holds the
/// helpers' results for jobs `front..njobs`, in job order. `stopped`: the caller's `front`
/// returned `false`, and the jobs after it may not have run (`back` is then incomplete).
pub struct FrontBack<R> {
    pub front: usize,
    pub back: Vec<R>,
    pub stopped: bool,
}

/// Run jobs `0..jobs.len()` with `nthreads` threads, the caller taking them from the front in
/// order (`front(i)`, on the calling thread) and `nthreads - 1` helpers from the back
/// (`back(i, job)`), until they meet.
///
/// Why: a chunk's blocks are placed in order, so only the caller, which encodes blocks
/// 0, 1, 2, ... itself, knows where each of its blocks goes and can write it straight into
/// the output; the helpers' blocks go through a staging area and are copied after. Taking
/// from both ends keeps the copied part to the helpers' share (none when a helper starts
/// late), where one shared queue mixed the two and made every block go through staging.
/// Helpers join late as in [`map_jobs`]: the caller never waits for one that has not started.
///
/// `front` returning `false` stops the call (no further job is handed out). Errors: the
/// lowest-numbered failed job's (the caller's jobs come before every helper's).
pub fn front_and_back<T, R, E>(
    jobs: Vec<T>,
    nthreads: usize,
    mut front: impl FnMut(usize) -> Result<bool, E>,
    back: impl Fn(usize, T) -> Result<R, E> + Sync,
) -> Result<FrontBack<R>, E>
where
    T: Send,
    R: Send,
    E: Send,
{
    let njobs = jobs.len();
    let nthreads = nthreads.clamp(1, njobs.max(1));
    // (next job from the front, end of the jobs not yet taken from the back, the jobs).
    struct Claims<T> {
        next: usize,
        end: usize,
        jobs: Vec<Option<T>>,
    }
    let claims = Mutex::new(Claims { next: 0, end: njobs, jobs: jobs.into_iter().map(Some).collect() });
    let lock = || claims.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    let done = Mutex::new(Vec::new());
    let help = || {
        let mut mine = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let claimed = {
                let mut c = lock();
                if c.end > c.next {
                    c.end -= 1;
                    let i = c.end;
                    c.jobs[i].take().map(|job| (i, job))
                } else {
                    None
                }
            };
            let Some((i, job)) = claimed else { break };
            let r = back(i, job);
            let failed = r.is_err();
            mine.push((i, r));
            if failed {
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        done.lock().unwrap_or_else(|e| e.into_inner()).push(mine);
    };
    let mut run_front = || -> Result<(usize, bool), E> {
        // However the caller's part ends (the ends met, `false`, an error, a panic), helpers
        // stop claiming: after a stop or a failure their work would be wasted.
        let _stop = StopOnDrop(&stop);
        let mut ran = 0;
        loop {
            let i = {
                let mut c = lock();
                if c.next >= c.end || stop.load(Ordering::Relaxed) {
                    return Ok((ran, false));
                }
                c.next += 1;
                c.next - 1
            };
            ran = i + 1;
            if !front(i)? {
                return Ok((ran, true));
            }
        }
    };
    let mine = if nthreads == 1 { run_front() } else { with_helpers(nthreads - 1, &help, run_front) };
    let (front, stopped) = mine?;
    if stopped {
        return Ok(FrontBack { front, back: Vec::new(), stopped });
    }
    let mut results: Vec<(usize, Result<R, E>)> =
        done.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect();
    results.sort_unstable_by_key(|r| r.0);
    let mut back = Vec::with_capacity(results.len());
    for (_, r) in results {
        back.push(r?);
    }
    // Without a stop every job was claimed (the caller runs until the two ends meet) and
    // every claiming helper has finished (`join_late`).
    debug_assert_eq!(front + back.len(), njobs);
    Ok(FrontBack { front, back, stopped })
}

/// Sets its flag when dropped, also by a panic.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Run `main` on the calling thread while `count` helpers run `help` ([`Helpers::join_late`]),
/// the helpers kept off the caller's CPU until `main` is done ([`Helpers::place`]).
fn with_helpers<M>(count: usize, help: &(dyn Fn() + Sync), main: impl FnOnce() -> M) -> M {
    let team = Helpers::get(count);
    team.place();
    team.join_late(count, help, || {
        let m = main();
        team.release();
        m
    })
}

/// One [`Helpers::join_late`] call as its helpers see it.
struct LateCall {
    state: Mutex<LateState>,
    idle: Condvar,
    /// The caller's `help`, its lifetime erased: dereferenced only by a helper that found the
    /// call open and counted itself in `active`; the caller closes the call and waits for
    /// `active` to drop to 0 before `help` goes away ([`CloseOnDrop`]).
    help: *const (dyn Fn() + Sync + 'static),
}

#[derive(Default)]
struct LateState {
    open: bool,
    active: usize,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

// SAFETY: `help` points to a `Sync` closure and is only called under the protocol above.
unsafe impl Send for LateCall {}
// SAFETY: as above; everything else is behind the mutex.
unsafe impl Sync for LateCall {}

impl LateCall {
    fn new(help: &(dyn Fn() + Sync)) -> Self {
        let help: *const (dyn Fn() + Sync + '_) = help;
        // SAFETY: only the lifetime changes; see the field's comment for why it is not outlived.
        let help = unsafe { std::mem::transmute::<*const (dyn Fn() + Sync + '_), *const (dyn Fn() + Sync)>(help) };
        LateCall { state: Mutex::new(LateState { open: true, ..LateState::default() }), idle: Condvar::new(), help }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A helper's part: run `help` if the call is still open.
    fn help(&self) {
        {
            let mut s = self.lock();
            if !s.open {
                return;
            }
            s.active += 1;
        }
        // SAFETY: the call was open when this helper counted itself in, so the caller is
        // waiting in `CloseOnDrop` (or still working) and `help` is alive until `active` is 0.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*self.help)() }));
        let mut s = self.lock();
        if let Err(p) = r {
            s.panic.get_or_insert(p);
        }
        s.active -= 1;
        if s.active == 0 {
            self.idle.notify_all();
        }
    }
}

/// Closes a [`LateCall`] and waits for its active helpers, also when the caller unwinds.
struct CloseOnDrop<'a>(&'a LateCall);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.open = false;
        while s.active > 0 {
            s = self.0.idle.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
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

/// Make `v` at least `n` bytes long (new bytes zeroed); never shorter. Scratch buffers are
/// shared by compression and decompression on a thread: shrinking one to a short tail block
/// or a small chunk made the next full-size block zero-fill the difference again (a
/// block-sized `memset` per call when small and large chunks alternate).
pub fn grow_to(v: &mut Vec<u8>, n: usize) {
    if v.len() < n {
        v.resize(n, 0);
    }
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

/// Where helper threads may run (Linux: CPU affinity; elsewhere nothing is done).
mod placement {
    use std::sync::{Arc, Mutex};

    #[cfg(target_os = "linux")]
    use rustix::thread::{CpuSet, Pid};

    /// Thread ids of a pool's workers, recorded by each worker as it starts.
    #[derive(Clone, Default)]
    pub struct Tids {
        #[cfg(target_os = "linux")]
        ids: Arc<Mutex<Vec<Pid>>>,
        #[cfg(not(target_os = "linux"))]
        _none: Arc<Mutex<()>>,
    }

    impl Tids {
        pub fn add_current(&self) {
            #[cfg(target_os = "linux")]
            self.ids.lock().unwrap_or_else(|e| e.into_inner()).push(rustix::thread::gettid());
        }
    }

    /// The helpers' ids and the CPU set they were last given.
    #[derive(Default)]
    pub struct Placement {
        pub tids: Tids,
        #[cfg(target_os = "linux")]
        applied: Option<(CpuSet, usize)>,
    }

    impl Placement {
        /// Allow the helpers every CPU the caller may use but the one it is on now (nothing
        /// changes when that leaves none). Set again only when the set changes.
        pub fn away_from_caller(&mut self) {
            #[cfg(target_os = "linux")]
            {
                let Ok(mut others) = rustix::thread::sched_getaffinity(None) else { return };
                others.unset(rustix::thread::sched_getcpu());
                if others.count() == 0 {
                    return;
                }
                let ids = self.tids.ids.lock().unwrap_or_else(|e| e.into_inner());
                if self.applied == Some((others, ids.len())) {
                    return;
                }
                for &tid in ids.iter() {
                    // A refusal (a sandbox, a thread gone) only leaves the placement to the kernel.
                    let _ = rustix::thread::sched_setaffinity(Some(tid), &others);
                }
                self.applied = Some((others, ids.len()));
            }
        }

        /// Allow the helpers every CPU the caller may use (when they were restricted).
        pub fn anywhere(&mut self) {
            #[cfg(target_os = "linux")]
            {
                if self.applied.take().is_none() {
                    return;
                }
                let Ok(all) = rustix::thread::sched_getaffinity(None) else { return };
                for &tid in self.tids.ids.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                    let _ = rustix::thread::sched_setaffinity(Some(tid), &all);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Condvar;
    use std::time::Duration;

    #[test]
    fn grow_to_zero_fills_new_bytes_and_never_shrinks() {
        let mut v = vec![7u8; 4];
        grow_to(&mut v, 6);
        assert_eq!(v, [7, 7, 7, 7, 0, 0]);
        v[5] = 9;
        grow_to(&mut v, 2);
        assert_eq!(v, [7, 7, 7, 7, 0, 9], "a shorter request keeps the buffer as it is");
    }

    #[test]
    fn map_jobs_keeps_job_order_and_runs_each_job_once() {
        for nthreads in [1, 2, 3, 8] {
            let runs = AtomicUsize::new(0);
            let out = map_jobs((0..100).collect(), nthreads, |i: usize| -> Result<usize, ()> {
                runs.fetch_add(1, Ordering::Relaxed);
                Ok(i * 3)
            })
            .unwrap();
            assert_eq!(out, (0..100).map(|i| i * 3).collect::<Vec<_>>(), "nthreads {nthreads}");
            assert_eq!(runs.load(Ordering::Relaxed), 100);
        }
        assert_eq!(map_jobs(Vec::<u8>::new(), 4, |_| Ok::<u8, ()>(0)).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn map_jobs_reports_the_lowest_failed_job() {
        for nthreads in [1, 2, 4] {
            let r = map_jobs((0..50).collect(), nthreads, |i: usize| if i == 7 || i == 30 { Err(i) } else { Ok(i) });
            // Job 7 always runs (jobs are taken in order, and job 30 after it).
            assert_eq!(r, Err(7), "nthreads {nthreads}");
        }
    }

    /// Every job runs once: the caller's from the front in order, the helpers' after them.
    #[test]
    fn front_and_back_splits_the_jobs_at_one_point() {
        // Not 5 threads: `helpers_are_kept_off_the_callers_cpu` holds that team's helpers.
        for nthreads in [1, 2, 3, 6] {
            for njobs in [0, 1, 2, 3, 64, 257] {
                let runs: Vec<AtomicUsize> = (0..njobs).map(|_| AtomicUsize::new(0)).collect();
                let mut order = Vec::new();
                let helped = AtomicBool::new(false);
                let r = front_and_back(
                    (0..njobs).map(|i| i * 10).collect(),
                    nthreads,
                    |i| {
                        runs[i].fetch_add(1, Ordering::Relaxed);
                        order.push(i);
                        // The first job waits (up to 10 s) for a helper to take one (a single
                        // job gets no helper).
                        let t = std::time::Instant::now();
                        while i == 0
                            && nthreads > 1
                            && njobs > 1
                            && !helped.load(Ordering::Relaxed)
                            && t.elapsed().as_secs() < 10
                        {
                            std::thread::sleep(Duration::from_micros(50));
                        }
                        Ok::<bool, ()>(true)
                    },
                    |i, job: usize| {
                        runs[i].fetch_add(1, Ordering::Relaxed);
                        assert_eq!(job, i * 10, "a helper got another job's input");
                        helped.store(true, Ordering::Relaxed);
                        Ok((i, job + 1))
                    },
                )
                .unwrap();
                if nthreads > 1 && njobs > 1 {
                    assert!(r.front < njobs, "no helper took a job in 10 s (nthreads {nthreads} njobs {njobs})");
                }
                assert!(!r.stopped);
                assert_eq!(order, (0..r.front).collect::<Vec<_>>(), "nthreads {nthreads} njobs {njobs}");
                let want: Vec<(usize, usize)> = (r.front..njobs).map(|i| (i, i * 10 + 1)).collect();
                assert_eq!(r.back, want, "nthreads {nthreads} njobs {njobs}");
                assert!(runs.iter().all(|n| n.load(Ordering::Relaxed) == 1), "nthreads {nthreads} njobs {njobs}");
                if nthreads == 1 {
                    assert_eq!(r.front, njobs);
                }
            }
        }
    }

    /// The caller's `false` stops the call; errors: the lowest-numbered failed job's.
    #[test]
    fn front_and_back_stops_and_reports_failures() {
        for nthreads in [1, 2, 4] {
            let r = front_and_back(vec![(); 100], nthreads, |i| Ok::<bool, usize>(i < 3), |_, ()| Ok(())).unwrap();
            assert!(r.stopped && r.front == 4 && r.back.is_empty(), "nthreads {nthreads}");
            // The caller's job 0 fails: whatever the helpers did, that is the error.
            let e = front_and_back(vec![(); 100], nthreads, Err, |i, ()| if i == 99 { Err(i) } else { Ok(()) });
            assert_eq!(e.err(), Some(0), "nthreads {nthreads}");
            // Only a back job fails: it is reported (here every job may have run by then).
            let e = front_and_back(
                vec![(); 100],
                nthreads,
                |_| {
                    std::thread::sleep(Duration::from_micros(200));
                    Ok(true)
                },
                |i, ()| if i == 99 { Err(i) } else { Ok(()) },
            );
            match e {
                Err(i) => assert_eq!(i, 99),
                Ok(r) => assert_eq!(r.front, 100, "no helper ran, so the caller did every job"),
            }
        }
    }

    /// A panic in the caller's job stops the helpers at their current job (they would
    /// otherwise take every job left before the panic reached the caller).
    #[test]
    fn front_and_back_stops_the_helpers_when_the_caller_panics() {
        let back_runs = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            front_and_back(
                vec![(); 2000],
                2,
                |i| {
                    // Job 0 waits (up to 10 s) until a helper has taken a job.
                    let t = std::time::Instant::now();
                    while back_runs.load(Ordering::Relaxed) == 0 && t.elapsed().as_secs() < 10 {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    if i == 1 {
                        panic!("caller job failed");
                    }
                    Ok::<bool, ()>(true)
                },
                |_, ()| {
                    back_runs.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                    Ok(())
                },
            )
        }));
        let p = r.err().expect("the caller's panic reaches the caller");
        assert_eq!(p.downcast_ref::<&str>(), Some(&"caller job failed"));
        let n = back_runs.load(Ordering::Relaxed);
        assert!(n < 1000, "helpers ran {n} of the 1998 jobs left after the caller's panic");
    }

    #[test]
    fn map_jobs_inside_a_pool_worker() {
        let out = pool(2).install(|| map_jobs((0..20).collect(), 2, |i: u32| Ok::<u32, ()>(i + 1)).unwrap());
        assert_eq!(out, (1..21).collect::<Vec<_>>());
    }

    /// The caller returns once the jobs are done, without waiting for helpers that never
    /// started (here: every helper thread is held by other work for the whole call). A rayon
    /// scope waits for them; on a loaded machine that made short calls several times slower.
    #[test]
    fn map_jobs_does_not_wait_for_helpers_that_never_started() {
        // 6 helpers (7 threads): a team no other test uses.
        let team = Helpers::get(6);
        let gate = Arc::new((Mutex::new((0usize, false)), Condvar::new()));
        for _ in 0..6 {
            let gate = Arc::clone(&gate);
            team.pool.spawn(move || {
                let (lock, cv) = &*gate;
                let mut g = lock.lock().unwrap();
                g.0 += 1;
                cv.notify_all();
                while !g.1 {
                    g = cv.wait(g).unwrap();
                }
            });
        }
        {
            let (lock, cv) = &*gate;
            let g = lock.lock().unwrap();
            let (g, _) = cv.wait_timeout_while(g, Duration::from_secs(60), |g| g.0 < 6).unwrap();
            assert_eq!(g.0, 6, "the helper threads did not all start");
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let caller = std::thread::spawn(move || {
            let out = map_jobs((0..20).collect(), 7, |i: u32| Ok::<u32, ()>(i * 2)).unwrap();
            tx.send(out).unwrap();
        });
        let got = rx.recv_timeout(Duration::from_secs(30));
        // Let the helpers go (also when the assertion below fails, so the caller can end).
        let (lock, cv) = &*gate;
        lock.lock().unwrap().1 = true;
        cv.notify_all();
        assert_eq!(
            got.expect("map_jobs waited for helpers that had not started"),
            (0..20).map(|i| i * 2).collect::<Vec<_>>()
        );
        caller.join().unwrap();
    }

    /// A panic in a job run by a helper reaches the caller (and nothing is left running).
    #[test]
    fn map_jobs_resumes_a_helper_panic() {
        let caller = std::thread::current().id();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            map_jobs((0..64).collect(), 2, |i: u32| -> Result<u32, ()> {
                if std::thread::current().id() != caller {
                    panic!("helper job {i} failed");
                }
                std::thread::sleep(Duration::from_millis(2));
                Ok(i)
            })
        }));
        // Either a helper ran a job (and its panic reached us) or the caller did every job.
        match r {
            Err(p) => assert!(p.downcast_ref::<String>().is_some_and(|m| m.starts_with("helper job"))),
            Ok(out) => assert_eq!(out.unwrap(), (0..64).collect::<Vec<_>>()),
        }
    }

    /// While the caller works, the helper may not run on the caller's CPU (when the process
    /// may use another one): on a 2-CPU machine, helpers queued behind the caller did no work.
    /// Afterwards it may run anywhere again. Fails without [`Helpers::place`] or without
    /// [`Helpers::release`].
    #[cfg(target_os = "linux")]
    #[test]
    fn helpers_are_kept_off_the_callers_cpu() {
        let allowed = rustix::thread::sched_getaffinity(None).unwrap();
        if allowed.count() < 2 {
            return; // one CPU: nothing to keep apart
        }
        let caller = std::thread::current().id();
        let helper_started = (Mutex::new(false), Condvar::new());
        let helper_sets = Mutex::new(Vec::new());
        // 5 threads = 4 helpers, a team no other test uses (their calls would release it).
        map_jobs((0..8).collect(), 5, |_: usize| -> Result<(), ()> {
            let (lock, cv) = &helper_started;
            if std::thread::current().id() == caller {
                // Wait for the helper to take a job, so that one surely runs there.
                let g = lock.lock().unwrap();
                let (g, _) = cv.wait_timeout_while(g, Duration::from_secs(60), |started| !*started).unwrap();
                assert!(*g, "the helper thread never ran a job");
            } else {
                // The first helper job runs while the caller is still busy (it waits for it).
                let mut started = lock.lock().unwrap();
                if !*started {
                    helper_sets.lock().unwrap().push(rustix::thread::sched_getaffinity(None).unwrap().count());
                    *started = true;
                    cv.notify_all();
                }
            }
            Ok(())
        })
        .unwrap();
        let sets = helper_sets.into_inner().unwrap();
        assert_eq!(sets, [allowed.count() - 1], "helper CPU set size while the caller worked");
        // Released afterwards: the helper may run on every CPU the caller may.
        let team = Helpers::get(4);
        let helper_now = team.pool.install(|| rustix::thread::sched_getaffinity(None).unwrap().count());
        assert_eq!(helper_now, allowed.count(), "helper CPU set size after the call");
    }
}
