//! A read-ahead streamer over a frame file: worker threads read and decompress consecutive
//! blocks of rows into a bounded ring of caller-provided buffers, and one consumer takes the
//! filled buffers (in row order, or as they finish) and hands each back when done with it.
//!
//! Rows are the first axis of a b2nd array, or the items of a plain super-chunk. Block `k`
//! holds rows `[k * block_rows, min((k + 1) * block_rows, nrows))`. Each worker has the file
//! open itself (no lock shared between readers; all opened when the stream starts, so they
//! read one version of it) and decodes on its own thread.
//!
//! Ring protocol (why nothing is lost, duplicated or deadlocked): a worker first takes a free
//! buffer, then claims the next sequence number, so claimed numbers are consecutive and each
//! claimed one sits in a buffer being filled. In ordered mode the consumer waits for the
//! smallest unconsumed number: it is either being filled now, or unclaimed, and then every
//! buffer is free (all earlier ones were consumed and released) and a worker claims it.
//! Memory is the ring: `slots` buffers, whatever the file's size. Cyclic streams wrap to
//! block 0 forever; the consumer stops them with [`Streamer::stop`] (also done on drop).
//!
//! Sources: a frame file (each reader opens it itself), or an HDF5 dataset whose chunks a
//! Blosc filter stored ([`Hdf5Rows`]: the chunk addresses come from the caller, e.g. h5py's
//! chunk index; the readers share one open file and read with positioned reads, decoding only
//! in Rust, no HDF5 call).
//!
//! The consumer helps: when the block it waits for is not ready and a buffer is free, it
//! claims and reads the next unclaimed block itself (the wanted one if no reader has claimed
//! it, else a later one while a reader fills the wanted one) instead of sleeping until a
//! reader thread is scheduled: on a busy machine that wait is longer than the read, and a
//! stream with one reader fell behind a plain read loop (issue 12, sessions 8 and 10). It
//! claims the same way the readers do (buffer first, then number), so the protocol above is
//! unchanged: the wanted block is claimed before any later one, so it is being filled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use std::collections::HashMap;

use crate::hdf5::lazy::{copy_box, BoxPart, ChunkFile, PartSpec, ReadError, ReadOpts, Stored};
use oxblosc_frame::{self as frame, Mode};
use oxblosc_nd::{DimSlice, Error, NdArray, Result};

/// What a stream reads.
#[derive(Clone)]
pub enum Source {
    /// A b2nd array or plain super-chunk file (each reader opens it).
    File(PathBuf),
    /// An HDF5 dataset's Blosc chunks (shared by the readers).
    Hdf5(Arc<Hdf5Rows>),
}

impl From<PathBuf> for Source {
    fn from(p: PathBuf) -> Source {
        Source::File(p)
    }
}

impl From<&Path> for Source {
    fn from(p: &Path) -> Source {
        Source::File(p.to_path_buf())
    }
}

impl Source {
    /// What error messages name.
    pub fn path(&self) -> &Path {
        match self {
            Source::File(p) => p,
            Source::Hdf5(h) => h.file.path(),
        }
    }
}

/// Rows (axis 0) of a chunked HDF5 dataset whose chunks the Blosc filter `filter_id` (32001
/// or 32026) stored, read straight from the file: each block's rows are a box of whole rows of
/// chunks, decoded with `ChunkFile::read_box` (only the needed Blosc blocks of chunks cut by
/// the block's first and last row). Chunks never written read as zeros (HDF5's default fill
/// value; the caller refuses other fill values); chunks HDF5 stored unfiltered (the filter
/// refused them: incompressible data) are copied as they are.
#[derive(Debug)]
pub struct Hdf5Rows {
    file: ChunkFile,
    filter_id: i32,
    shape: Vec<u64>,
    chunk_dims: Vec<u64>,
    typesize: usize,
    /// Stored chunks by chunk-grid coordinates, and whether HDF5 stored each unfiltered.
    chunks: HashMap<Vec<u64>, (Stored, bool)>,
    /// For unfiltered chunks (the same file as `file`: checked at open).
    raw: std::fs::File,
    /// The file's state the chunk addresses were listed in ([`FileState`]).
    state: FileState,
}

/// A file's state as `stat` gives it: (device, inode), size, modification time (ns since the
/// epoch). The chunk addresses of an HDF5 file hold only while it stays the same: a writer
/// (an append, a rewritten chunk) moves chunks and frees their old space, which HDF5 reuses
/// for other chunks, so an old address can hold another chunk's valid bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileState {
    pub id: (u64, u64),
    pub len: u64,
    pub mtime_ns: i128,
}

impl FileState {
    /// The state of the file at `path` now.
    pub fn of(path: &Path) -> std::io::Result<FileState> {
        let m = std::fs::metadata(path)?;
        let mtime_ns = m.modified().ok().and_then(|t| {
            Some(match t.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => i128::try_from(d.as_nanos()).ok()?,
                Err(e) => -i128::try_from(e.duration().as_nanos()).ok()?,
            })
        });
        Ok(FileState { id: file_id_of(&m), len: m.len(), mtime_ns: mtime_ns.unwrap_or(0) })
    }
}

impl Hdf5Rows {
    /// The dataset of `shape` in chunks of `chunk_dims` items of `typesize` bytes in the file
    /// at `path` (`state`: the file's state when the addresses were listed; None: now);
    /// `stored`: each written chunk's first item (HDF5's chunk offset), where its bytes lie
    /// and whether HDF5 stored it unfiltered. Reads fail once the file is no longer in that
    /// state (another file there, or written since: the addresses may be stale).
    pub fn new(
        path: &Path,
        state: Option<FileState>,
        filter_id: i32,
        shape: Vec<u64>,
        chunk_dims: Vec<u64>,
        typesize: usize,
        stored: Vec<(Vec<u64>, Stored, bool)>,
    ) -> Result<Hdf5Rows> {
        let bad = |reason: String| Error::Param { name: "hdf5 dataset", reason };
        if shape.is_empty() || shape.len() != chunk_dims.len() || chunk_dims.contains(&0) || typesize == 0 {
            return Err(bad(format!(
                "shape {shape:?}, chunks {chunk_dims:?}, typesize {typesize}: not a chunked n-d dataset"
            )));
        }
        let mut chunks = HashMap::with_capacity(stored.len());
        for (start, at, raw) in stored {
            let inside = start.len() == shape.len()
                && start.iter().zip(&shape).zip(&chunk_dims).all(|((&s, &n), &c)| s % c == 0 && s < n);
            if !inside {
                return Err(bad(format!(
                    "chunk offset {start:?} is not a chunk of shape {shape:?} in chunks {chunk_dims:?}"
                )));
            }
            chunks.insert(start.iter().zip(&chunk_dims).map(|(&s, &c)| s / c).collect(), (at, raw));
        }
        let io = |e: std::io::Error| hdf5_err(ReadError::Io(format!("{}: {e}", path.display())), None);
        let state = match state {
            Some(s) => s,
            None => FileState::of(path).map_err(io)?,
        };
        let file = ChunkFile::open(path, Some(state.id)).map_err(|e| hdf5_err(e, None))?;
        let raw = std::fs::File::open(path).map_err(io)?;
        if let Ok(m) = raw.metadata() {
            if cfg!(unix) && file_id_of(&m) != state.id {
                return Err(hdf5_err(
                    ReadError::Io(format!("{}: the file was replaced; reopen it", path.display())),
                    None,
                ));
            }
        }
        let rows = Hdf5Rows { file, filter_id, shape, chunk_dims, typesize, chunks, raw, state };
        rows.unchanged()?;
        Ok(rows)
    }

    /// The file is still in the state its chunk addresses were listed in.
    fn unchanged(&self) -> Result<()> {
        let path = self.file.path();
        let now = FileState::of(path).map_err(|e| hdf5_err(ReadError::Io(format!("{}: {e}", path.display())), None))?;
        if now == self.state {
            return Ok(());
        }
        let what = if cfg!(unix) && now.id != self.state.id { "was replaced" } else { "was written" };
        Err(hdf5_err(
            ReadError::Io(format!(
                "{}: the file {what} since the stream's chunk addresses were listed (HDF5 moves \
                 chunks a writer changes and reuses their space): start a new stream",
                path.display()
            )),
            None,
        ))
    }

    /// Rows `[start, stop)` into `out` (exactly their bytes), refused when the file changed
    /// since the addresses were listed, before or while they were read.
    fn read(&self, start: u64, stop: u64, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        self.unchanged()?;
        self.read_listed(start, stop, out)?;
        self.unchanged()
    }

    fn read_listed(&self, start: u64, stop: u64, out: &mut [u8]) -> Result<()> {
        let (nd, c0) = (self.shape.len(), self.chunk_dims[0]);
        // Chunk counts along the other axes.
        let grid: Vec<u64> = (1..nd).map(|d| self.shape[d].div_ceil(self.chunk_dims[d])).collect();
        let (mut parts, mut where_, mut raws) = (Vec::new(), Vec::new(), Vec::new());
        let mut missing = false;
        for r in start / c0..=(stop - 1) / c0 {
            let (lo, hi) = (start.max(r * c0), stop.min((r + 1) * c0));
            let mut k = vec![0u64; nd - 1];
            loop {
                let coords: Vec<u64> = std::iter::once(r).chain(k.iter().copied()).collect();
                match self.chunks.get(&coords) {
                    Some(&(at, raw)) => {
                        let mut sel = vec![(lo - r * c0, hi - r * c0)];
                        let mut origin = vec![lo - start];
                        for d in 1..nd {
                            let c = self.chunk_dims[d];
                            sel.push((0, c.min(self.shape[d] - k[d - 1] * c)));
                            origin.push(k[d - 1] * c);
                        }
                        let part = BoxPart { at, sel, origin };
                        if raw {
                            raws.push((part, coords));
                        } else {
                            parts.push(part);
                            where_.push(coords);
                        }
                    }
                    None => missing = true,
                }
                // Next combination of the other axes' chunks (C order).
                let Some(d) = (0..nd - 1).rev().find(|&d| k[d] + 1 < grid[d]) else { break };
                k[d] += 1;
                k[d + 1..].fill(0);
            }
        }
        if missing {
            out.fill(0);
        }
        let box_dims: Vec<u64> = std::iter::once(stop - start).chain(self.shape[1..].iter().copied()).collect();
        for (p, coords) in &raws {
            self.copy_raw(p, coords, &box_dims, out)?;
        }
        let spec =
            PartSpec { filter_id: self.filter_id, chunk_dims: &self.chunk_dims, typesize: self.typesize, sel: &[] };
        let opts = ReadOpts { nthreads: 1, ..ReadOpts::default() };
        self.file.read_box(&parts, &spec, &box_dims, &opts, out).map(|_| ()).map_err(|(i, e)| {
            let at = parts.get(i).map(|p| {
                let c = where_[i].as_slice();
                // Its number in C order over the chunk grid.
                let n = c.iter().enumerate().fold(0, |n, (d, &x)| n * self.shape[d].div_ceil(self.chunk_dims[d]) + x);
                (p.at, c, n)
            });
            hdf5_err(e, at)
        })
    }
}

impl Hdf5Rows {
    /// Copy the part `p` of a chunk HDF5 stored unfiltered (C-order items of the whole chunk).
    fn copy_raw(&self, p: &BoxPart, coords: &[u64], box_dims: &[u64], out: &mut [u8]) -> Result<()> {
        let n = coords.iter().enumerate().fold(0, |n, (d, &x)| n * self.shape[d].div_ceil(self.chunk_dims[d]) + x);
        let want = self.chunk_dims.iter().product::<u64>() as usize * self.typesize;
        if p.at.size != want {
            let reason =
                format!("HDF5 chunk {coords:?} is stored unfiltered in {} bytes, a chunk has {want}", p.at.size);
            return Err(Error::BadChunk { chunk: n, reason });
        }
        let mut buf = vec![0u8; want];
        read_exact_at(&self.raw, &mut buf, p.at.offset).map_err(|e| {
            hdf5_err(ReadError::Io(format!("{}: {e}", self.file.path().display())), Some((p.at, coords, n)))
        })?;
        let lo: Vec<u64> = p.sel.iter().map(|s| s.0).collect();
        let extent: Vec<u64> = p.sel.iter().map(|s| s.1 - s.0).collect();
        copy_box(&buf, &self.chunk_dims, &lo, out, box_dims, &p.origin, &extent, self.typesize);
        Ok(())
    }
}

/// (device, inode) of a file.
fn file_id_of(m: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        (0, 0)
    }
}

/// A positioned read of exactly `buf.len()` bytes.
fn read_exact_at(f: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = f;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// An HDF5 read failure as the streamer's error: I/O stays I/O (Python's `OSError`), bad
/// bytes name the stored chunk.
fn hdf5_err(e: ReadError, at: Option<(Stored, &[u64], u64)>) -> Error {
    match e {
        ReadError::Io(s) => Error::Frame(frame::Error::Io {
            offset: at.map(|a| a.0.offset),
            source: Arc::new(std::io::Error::other(s)),
        }),
        ReadError::Bad(s) => match at {
            Some((a, coords, n)) => Error::BadChunk {
                chunk: n,
                reason: format!("HDF5 chunk {coords:?} of the grid ({} bytes at byte {}): {s}", a.size, a.offset),
            },
            None => Error::Param { name: "hdf5 chunk", reason: s },
        },
    }
}

/// `n` readers of `source`, all opened now and all on the same file: a file replaced by a
/// rename while the stream runs (as a publish or `to_oxblosc` does) must not reach readers
/// that would open it later, or blocks of the two versions would mix in one stream (they
/// did, silently). Each open file keeps the version it opened; the path's identity is
/// compared before and after, and the opening starts again if the file changed meanwhile.
fn open_readers(source: &Source, n: usize) -> Result<Vec<Reader>> {
    let identity = || match source {
        Source::File(p) => std::fs::metadata(p).ok().map(|m| file_id_of(&m)),
        Source::Hdf5(_) => None, // one shared open file
    };
    for _ in 0..3 {
        let before = identity();
        let readers = (0..n).map(|_| Reader::open(source)).collect::<Result<Vec<_>>>()?;
        if identity() == before {
            return Ok(readers);
        }
    }
    Err(Error::Param {
        name: "source",
        reason: format!("{} kept being replaced while the stream opened it", source.path().display()),
    })
}

/// What the streamer reads rows from (one per worker thread).
enum Reader {
    /// Rows along axis 0 of an n-d array.
    Array(Box<NdArray>),
    /// Items of a plain super-chunk.
    Items(Box<frame::SChunk>),
    /// Rows of an HDF5 dataset.
    Hdf5(Arc<Hdf5Rows>),
}

impl Reader {
    fn open(source: &Source) -> Result<Reader> {
        let path = match source {
            Source::File(p) => p,
            Source::Hdf5(h) => return Ok(Reader::Hdf5(Arc::clone(h))),
        };
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
            Reader::Hdf5(h) => (h.shape[0], h.shape[1..].iter().product::<u64>() as usize * h.typesize),
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
            Reader::Hdf5(h) => h.read(start, stop, out),
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

    /// Whether every block of a finite stream has been claimed (or there are none).
    fn exhausted(&self, st: &State) -> bool {
        self.total().is_some_and(|t| st.next_claim >= t) || self.nblocks == 0
    }

    /// Claim the next block into a free buffer, if there is one (the lock is held).
    fn claim(&self, st: &mut State) -> Option<(usize, u64)> {
        let slot = st.free.pop()?;
        st.next_claim += 1;
        Some((slot, st.next_claim - 1))
    }
}

impl<B: AsMut<[u8]>> Inner<B> {
    /// Read block `seq` into buffer `slot` with `reader`, then publish it.
    fn fill(&self, reader: &Reader, slot: usize, seq: u64) {
        let (start, stop) = self.rows_of(seq);
        let res = {
            let mut buf = self.slots[slot].lock().unwrap_or_else(PoisonError::into_inner);
            let len = (stop - start) as usize * self.row_bytes;
            reader.read(start, stop, &mut buf.as_mut()[..len])
        };
        let mut st = self.lock();
        st.done.insert(seq, (slot, res));
        self.changed.notify_all();
    }
}

/// The running stream; dropping it stops and joins the workers.
pub struct Streamer<B: AsMut<[u8]> + Send + 'static> {
    inner: Arc<Inner<B>>,
    workers: Vec<JoinHandle<()>>,
    /// The consumer's own reader, for the blocks it reads itself.
    own: Mutex<Reader>,
}

impl<B: AsMut<[u8]> + Send + 'static> Streamer<B> {
    /// Start streaming `source` (a file's path, or [`Source::Hdf5`]) into `buffers` (each at
    /// least `block_rows` rows long; their number bounds what is read ahead). Fails before
    /// any thread starts on a bad file or argument.
    pub fn start(source: impl Into<Source>, opts: Options, buffers: Vec<B>) -> Result<Streamer<B>> {
        Self::start_with_readers(source, opts, buffers, opts.nthreads)
    }

    /// [`Streamer::start`] with `nreaders` reader threads (0 in tests: the consumer reads all).
    fn start_with_readers(
        source: impl Into<Source>,
        opts: Options,
        mut buffers: Vec<B>,
        nreaders: usize,
    ) -> Result<Streamer<B>> {
        let source = source.into();
        if opts.block_rows == 0 || opts.nthreads == 0 || buffers.is_empty() {
            return Err(Error::Param {
                name: "streamer",
                reason: "block_rows, nthreads and buffers must be > 0".into(),
            });
        }
        let mut readers = open_readers(&source, nreaders + 1)?;
        let own = readers.pop().expect("at least one reader");
        let (nrows, row_bytes) = own.rows();
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
        let workers = readers
            .into_iter()
            .enumerate()
            .map(|(i, reader)| {
                let inner = Arc::clone(&inner);
                std::thread::Builder::new()
                    .name(format!("oxblosc-stream-{i}"))
                    .spawn(move || worker(&inner, &reader))
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
        Ok(Streamer { inner, workers, own: Mutex::new(own) })
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
            // Nothing to hand out: read the next unclaimed block here rather than sleep (the
            // wanted one, or, while a reader still fills that, a later one).
            if !inner.exhausted(&st) {
                if let Some((slot, seq)) = inner.claim(&mut st) {
                    drop(st);
                    inner.fill(&self.own.lock().unwrap_or_else(PoisonError::into_inner), slot, seq);
                    st = inner.lock();
                    continue;
                }
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
fn worker<B: AsMut<[u8]>>(inner: &Inner<B>, reader: &Reader) {
    loop {
        let (slot, seq) = {
            let mut st = inner.lock();
            loop {
                if st.stopped || inner.exhausted(&st) {
                    return;
                }
                if let Some(claimed) = inner.claim(&mut st) {
                    break claimed;
                }
                st = inner.changed.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        inner.fill(reader, slot, seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A frame file of `n` u32 items 0, 1, 2, ... in chunks of 1000 items.
    fn items_file(name: &str, n: u32) -> PathBuf {
        let path = std::env::temp_dir().join(format!("oxblosc-streamer-{}-{name}.b2frame", std::process::id()));
        let cp = frame::CParams { typesize: 4, nthreads: 1, ..frame::CParams::default() };
        let mut s = frame::SChunk::create(&path, true, cp, frame::DParams { nthreads: 1 }).unwrap();
        let data: Vec<u8> = (0..n).flat_map(u32::to_le_bytes).collect();
        for c in data.chunks(4000) {
            s.append_data(c).unwrap();
        }
        path
    }

    /// Every block a stream with no reader threads delivers: the consumer reads them all.
    fn drain(path: PathBuf, ordered: bool, cyclic: bool, take: usize) -> Vec<(u64, Vec<u8>)> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let opts = Options { block_rows: 300, ordered, cyclic, nthreads: 1 };
            let s = Streamer::start_with_readers(path, opts, vec![vec![0u8; 1200]; 2], 0).unwrap();
            let mut got = Vec::new();
            while got.len() < take {
                let Some(f) = s.next() else { break };
                let f = f.unwrap();
                got.push((f.start, s.with_slot(f.slot, |b| b[..f.nrows as usize * 4].to_vec())));
                s.release(f.slot);
            }
            tx.send(got).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(60)).expect("the consumer waited for readers that do not exist")
    }

    #[test]
    fn the_consumer_reads_blocks_no_reader_claimed() {
        let path = items_file("help", 2500);
        let all: Vec<u8> = (0..2500u32).flat_map(u32::to_le_bytes).collect();
        for ordered in [true, false] {
            let got = drain(path.clone(), ordered, false, usize::MAX);
            assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), (0..2500).step_by(300).collect::<Vec<u64>>());
            assert_eq!(got.concat_bytes(), all);
        }
        let cyc = drain(path.clone(), true, true, 20);
        assert_eq!(cyc.iter().map(|g| g.0).collect::<Vec<_>>()[8..11], [2400, 0, 300]);
        assert_eq!(cyc[9].1, all[..1200]);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn the_consumer_reads_ahead_while_a_reader_fills_the_wanted_block() {
        let path = items_file("ahead", 2500);
        let opts = Options { block_rows: 300, ordered: true, cyclic: false, nthreads: 1 };
        let s = Arc::new(Streamer::start_with_readers(path.clone(), opts, vec![vec![0u8; 1200]; 3], 0).unwrap());
        // A "reader" claims block 0 and has not filled it yet.
        let (slot0, seq0) = s.inner.claim(&mut s.inner.lock()).unwrap();
        assert_eq!(seq0, 0);
        let consumer = {
            let s = Arc::clone(&s);
            std::thread::spawn(move || s.next().map(|f| f.map(|f| (f.seq, f.start)).ok()))
        };
        // Meanwhile the consumer reads blocks 1 and 2 into the two other buffers.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while s.inner.lock().done.len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the consumer slept instead of reading ahead");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(s.inner.lock().done.keys().copied().collect::<Vec<_>>(), [1, 2]);
        // The reader finishes block 0: delivered first, in order.
        let own = Reader::open(&Source::File(path.clone())).unwrap();
        s.inner.fill(&own, slot0, seq0);
        assert_eq!(consumer.join().unwrap(), Some(Some((0, 0))));
        let all: Vec<u8> = (0..2500u32).flat_map(u32::to_le_bytes).collect();
        let mut got = s.with_slot(slot0, |b| b.clone());
        s.release(slot0);
        while let Some(f) = s.next() {
            let f = f.unwrap();
            assert_eq!(f.start, 300 * f.seq);
            got.extend(s.with_slot(f.slot, |b| b[..f.nrows as usize * 4].to_vec()));
            s.release(f.slot);
        }
        assert_eq!(got, all);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn every_reader_reads_the_file_the_stream_started_on() {
        let path = items_file("replaced", 2500);
        let other = items_file("replacement", 1200); // another file, renamed over it below
        let opts = Options { block_rows: 300, ordered: true, cyclic: false, nthreads: 3 };
        let s = Streamer::start(path.clone(), opts, vec![vec![0u8; 1200]; 1]).unwrap();
        let first = s.next().unwrap().unwrap();
        std::fs::rename(&other, &path).unwrap(); // as a publish replaces a file
        let mut got = s.with_slot(first.slot, |b| b.clone());
        s.release(first.slot);
        while let Some(f) = s.next() {
            let f = f.unwrap();
            got.extend(s.with_slot(f.slot, |b| b[..f.nrows as usize * 4].to_vec()));
            s.release(f.slot);
        }
        // (readers opened on their first block read the 1200-item file: short blocks, an error)
        assert_eq!(got, (0..2500u32).flat_map(u32::to_le_bytes).collect::<Vec<u8>>());
        let _ = std::fs::remove_file(path);
    }

    trait ConcatBytes {
        fn concat_bytes(&self) -> Vec<u8>;
    }

    impl ConcatBytes for Vec<(u64, Vec<u8>)> {
        fn concat_bytes(&self) -> Vec<u8> {
            self.iter().flat_map(|g| g.1.iter().copied()).collect()
        }
    }
}
