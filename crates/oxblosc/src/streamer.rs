//! A read-ahead streamer over a frame file: worker threads read and decompress consecutive
//! blocks of rows into a bounded ring of caller-provided buffers, and one consumer takes the
//! filled buffers (in row order, or as they finish) and hands each back when done with it.
//!
//! Rows are the first axis of a b2nd array, or the items of a plain super-chunk. Block `k`
//! holds rows `[k * block_rows, min((k + 1) * block_rows, nrows))`. Each worker opens the file
//! itself (no lock shared between readers) and decodes on its own thread.
//!
//! Ring protocol (why nothing is lost, duplicated or deadlocked): a worker first takes a free
//! buffer, then claims the next sequence number, so claimed numbers are consecutive and each
//! claimed one sits in a buffer being filled. In ordered mode the consumer waits for the
//! smallest unconsumed number: it is either being filled now, or unclaimed, and then every
//! buffer is free (all earlier ones were consumed and released) and a worker claims it.
//! Memory is the ring: `slots` buffers, whatever the file's size. Cyclic streams wrap to
//! block 0 forever; the consumer stops them with [`Streamer::stop`] (also done on drop).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use oxblosc_frame::{self as frame, Mode};
use oxblosc_nd::{DimSlice, Error, NdArray, Result};

/// What the streamer reads rows from (one per worker thread).
enum Reader {
    /// Rows along axis 0 of an n-d array.
    Array(Box<NdArray>),
    /// Items of a plain super-chunk.
    Items(Box<frame::SChunk>),
}

impl Reader {
    fn open(path: &Path) -> Result<Reader> {
        let mut s = frame::open(path, Mode::Read)?;
        if s.meta_names().iter().any(|n| *n == "b2nd" || *n == "caterva") {
            let mut a = NdArray::from_schunk(s)?;
            a.set_nthreads(1); // parallelism comes from the workers
            return Ok(Reader::Array(Box::new(a)));
        }
        s.set_dparams(frame::DParams { nthreads: 1 });
        Ok(Reader::Items(Box::new(s)))
    }

    /// Number of rows and bytes per row.
    fn rows(&self) -> (u64, usize) {
        match self {
            Reader::Array(a) => {
                let shape = a.shape();
                let row: u64 = shape.iter().skip(1).product();
                (shape.first().copied().unwrap_or(1), row as usize * a.typesize())
            }
            Reader::Items(s) => (s.nitems(), s.typesize()),
        }
    }

    /// Rows `[start, stop)` into `out` (exactly their size).
    fn read(&self, start: u64, stop: u64, out: &mut [u8]) -> Result<()> {
        match self {
            Reader::Array(a) => {
                let mut sel = vec![DimSlice { start, stop, step: 1 }];
                sel.extend(a.shape().iter().skip(1).map(|&n| DimSlice { start: 0, stop: n, step: 1 }));
                if a.shape().is_empty() {
                    sel.clear();
                }
                a.get_slice_into(&sel, out)
            }
            Reader::Items(s) => Ok(s.get_slice_into(start, stop, out)?),
        }
    }
}

/// How a stream runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Rows per block (> 0).
    pub block_rows: u64,
    /// Deliver blocks in row order (else as they finish).
    pub ordered: bool,
    /// Start again at block 0 after the last block, until stopped.
    pub cyclic: bool,
    /// Reader threads (> 0).
    pub nthreads: usize,
}

/// A filled buffer handed to the consumer.
#[derive(Debug)]
pub struct Filled {
    /// Which ring buffer holds the rows (give it back with [`Streamer::release`]).
    pub slot: usize,
    /// Position in the stream (0, 1, 2, ... also across cycles).
    pub seq: u64,
    /// First row of the block.
    pub start: u64,
    /// Rows in the block (the last block may be short).
    pub nrows: u64,
}

struct State {
    free: Vec<usize>,
    /// Finished reads by sequence number: the slot, or the error reading that block.
    done: BTreeMap<u64, (usize, Result<()>)>,
    next_claim: u64,
    next_deliver: u64,
    delivered: u64,
    stopped: bool,
}

struct Inner<B> {
    state: Mutex<State>,
    changed: Condvar,
    slots: Vec<Mutex<B>>,
    opts: Options,
    nrows: u64,
    row_bytes: usize,
    nblocks: u64,
}

impl<B> Inner<B> {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks in the stream (None: cyclic, endless).
    fn total(&self) -> Option<u64> {
        (!self.opts.cyclic).then_some(self.nblocks)
    }

    fn rows_of(&self, seq: u64) -> (u64, u64) {
        let k = seq % self.nblocks.max(1);
        let start = k * self.opts.block_rows;
        (start, (start + self.opts.block_rows).min(self.nrows))
    }
}

/// The running stream; dropping it stops and joins the workers.
pub struct Streamer<B: AsMut<[u8]> + Send + 'static> {
    inner: Arc<Inner<B>>,
    workers: Vec<JoinHandle<()>>,
}

impl<B: AsMut<[u8]> + Send + 'static> Streamer<B> {
    /// Start streaming `path` into `buffers` (each at least `block_rows` rows long; their
    /// number bounds what is read ahead). Fails before any thread starts on a bad file or
    /// argument.
    pub fn start(path: impl Into<PathBuf>, opts: Options, mut buffers: Vec<B>) -> Result<Streamer<B>> {
        let path = path.into();
        if opts.block_rows == 0 || opts.nthreads == 0 || buffers.is_empty() {
            return Err(Error::Param {
                name: "streamer",
                reason: "block_rows, nthreads and buffers must be > 0".into(),
            });
        }
        let first = Reader::open(&path)?;
        let (nrows, row_bytes) = first.rows();
        let need = usize::try_from(opts.block_rows)
            .ok()
            .and_then(|r| r.checked_mul(row_bytes))
            .ok_or_else(|| Error::Param { name: "block_rows", reason: "a block does not fit in memory".into() })?;
        if let Some(i) = buffers.iter_mut().position(|b| b.as_mut().len() < need) {
            return Err(Error::Param {
                name: "buffers",
                reason: format!("buffer {i} is shorter than a block ({need} bytes)"),
            });
        }
        let nblocks = nrows.div_ceil(opts.block_rows);
        let nslots = buffers.len();
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                free: (0..nslots).rev().collect(),
                done: BTreeMap::new(),
                next_claim: 0,
                next_deliver: 0,
                delivered: 0,
                stopped: false,
            }),
            changed: Condvar::new(),
            slots: buffers.into_iter().map(Mutex::new).collect(),
            opts,
            nrows,
            row_bytes,
            nblocks,
        });
        let mut readers = vec![Some(first)];
        readers.resize_with(opts.nthreads, || None);
        let workers = readers
            .into_iter()
            .enumerate()
            .map(|(i, reader)| {
                let (inner, path) = (Arc::clone(&inner), path.clone());
                std::thread::Builder::new()
                    .name(format!("oxblosc-stream-{i}"))
                    .spawn(move || worker(&inner, &path, reader))
                    .map_err(|e| Error::Param {
                        name: "nthreads",
                        reason: format!("cannot start a reader thread: {e}"),
                    })
            })
            .collect::<Result<Vec<_>>>();
        let workers = match workers {
            Ok(w) => w,
            Err(e) => {
                inner.lock().stopped = true;
                inner.changed.notify_all();
                return Err(e);
            }
        };
        Ok(Streamer { inner, workers })
    }

    /// Rows in the source and bytes per row.
    pub fn shape(&self) -> (u64, usize) {
        (self.inner.nrows, self.inner.row_bytes)
    }

    /// The next filled buffer (blocking), `None` at the end of a non-cyclic stream or once
    /// stopped. A read error is returned at its block's place (ordered) or when it happens,
    /// naming the rows; the stream stops there.
    pub fn next(&self) -> Option<std::result::Result<Filled, (u64, u64, Error)>> {
        let inner = &*self.inner;
        let mut st = inner.lock();
        loop {
            if st.stopped || inner.total().is_some_and(|t| st.delivered >= t) {
                return None;
            }
            let key = if inner.opts.ordered {
                st.done.contains_key(&st.next_deliver).then_some(st.next_deliver)
            } else {
                st.done.keys().next().copied()
            };
            if let Some(seq) = key {
                let (slot, res) = st.done.remove(&seq).expect("key present");
                st.next_deliver += 1;
                st.delivered += 1;
                let (start, stop) = inner.rows_of(seq);
                return Some(match res {
                    Ok(()) => Ok(Filled { slot, seq, start, nrows: stop - start }),
                    Err(e) => {
                        st.stopped = true;
                        inner.changed.notify_all();
                        Err((start, stop, e))
                    }
                });
            }
            st = inner.changed.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Give buffer `slot` back to the readers.
    pub fn release(&self, slot: usize) {
        let mut st = self.inner.lock();
        if slot < self.inner.slots.len() && !st.free.contains(&slot) {
            st.free.push(slot);
            self.inner.changed.notify_all();
        }
    }

    /// Stop the stream without waiting: every waiting [`Streamer::next`] returns `None`.
    pub fn halt(&self) {
        self.inner.lock().stopped = true;
        self.inner.changed.notify_all();
    }

    /// Stop reading; waits for the workers to finish the block they are on.
    pub fn stop(&mut self) {
        self.halt();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }

    /// Buffer `slot` (for the consumer, between [`Streamer::next`] and [`Streamer::release`]).
    pub fn with_slot<R>(&self, slot: usize, f: impl FnOnce(&mut B) -> R) -> R {
        f(&mut self.inner.slots[slot].lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<B: AsMut<[u8]> + Send + 'static> Drop for Streamer<B> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One reader thread: take a free buffer, claim the next block, fill it, publish it.
fn worker<B: AsMut<[u8]>>(inner: &Inner<B>, path: &Path, reader: Option<Reader>) {
    let mut reader = reader.map(Ok);
    loop {
        let (slot, seq) = {
            let mut st = inner.lock();
            loop {
                let exhausted = inner.total().is_some_and(|t| st.next_claim >= t) || inner.nblocks == 0;
                if st.stopped || exhausted {
                    return;
                }
                if let Some(slot) = st.free.pop() {
                    let seq = st.next_claim;
                    st.next_claim += 1;
                    break (slot, seq);
                }
                st = inner.changed.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let (start, stop) = inner.rows_of(seq);
        let res = match reader.get_or_insert_with(|| Reader::open(path)) {
            Ok(r) => {
                let mut buf = inner.slots[slot].lock().unwrap_or_else(PoisonError::into_inner);
                let len = (stop - start) as usize * inner.row_bytes;
                r.read(start, stop, &mut buf.as_mut()[..len])
            }
            Err(e) => Err(Error::Param { name: "source", reason: format!("a reader could not open the file: {e}") }),
        };
        let mut st = inner.lock();
        st.done.insert(seq, (slot, res));
        inner.changed.notify_all();
    }
}
