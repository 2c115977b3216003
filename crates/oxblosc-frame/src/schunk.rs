//! The super-chunk: an ordered list of Blosc2 chunks with shared parameters, metalayers and
//! variable-length metalayers (format spec 4.4-4.7).
//!
//! Chunk sizes follow C-Blosc2's frame rules: `chunksize` is -1 until the first chunk, then
//! that chunk's `nbytes`; it becomes 0 (variable) when a chunk follows a shorter one or is
//! larger than `chunksize` (a short *last* chunk keeps it fixed) and never switches back.
//!
//! Chunks are held as [`Slot`]s: bytes in memory, a special value without bytes (zeros, NaN,
//! uninitialised - stored as special offsets in frames), or a position in the frame buffer,
//! file or sparse directory the super-chunk was opened from (read on demand).
//!
//! Appended data is compressed with the super-chunk's cparams; like a C-Blosc2 context, the
//! block size used for the last compressed chunk (clamped to nbytes for a short chunk) is
//! remembered, forced on the next one (Trap 39) and written to the frame header's `blocksize`
//! field. With that, `to_cframe` output is byte-identical to python-blosc2 4.14's for the same
//! appends (checked for BloscLZ, LZ4 and Zstd in tests/interop.rs).

use std::borrow::Cow;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::{Arc, OnceLock};

use oxblosc_chunk::{CParams, ChunkContext, ChunkHeader, DParams, SpecialKind};

use crate::checksum::{self, chunk_checksum, Change, Status, Verdict};
use crate::error::ChunkId;
use crate::header::{check_name, MAX_METALAYERS};
use crate::offsets;
use crate::slots::{Slot, Slots};
use crate::storage::Backing;
use crate::writer::{Change as StorageChange, ChunkList, Committed, Entry, Frame, Rewritten, Writer};
use crate::{Error, Result};

/// Largest read buffer a thread keeps for its next [`SChunk::with_chunk`].
const KEEP_READ_BUF: usize = 64 << 20;

/// Largest compression buffer a thread keeps for its next chunk written from data.
const KEEP_COMPRESS_BUF: usize = 64 << 20;

thread_local! {
    /// This thread's buffer for stored chunks read by [`SChunk::with_chunk`] (taken out while
    /// in use, so a nested call simply gets a fresh one).
    static READ_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// This thread's buffer that chunks written from data are compressed into before they are
    /// stored (a fresh worst-case buffer per chunk cost its page faults and zeroing: 8 MiB
    /// appends took 1.3x python-blosc2's time). Taken out while in use, like `READ_BUF`.
    static COMPRESS_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Largest chunk (bytes) the chunk format allows, header included.
pub(crate) const MAX_CHUNK_LEN: u64 = i32::MAX as u64;

/// A special value to fill chunks with ([`SChunk::fill_special`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecialValue {
    Zeros,
    Nan,
    Uninit,
    /// Every item equals these `typesize` bytes (stored as small repeated-value chunks).
    Value(Vec<u8>),
}

/// Sizes and kind of one chunk ([`SChunk::chunk_info`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkInfo {
    pub nchunk: usize,
    pub nbytes: usize,
    /// Stored bytes (0 for chunks kept as special offsets).
    pub cbytes: usize,
    pub special: SpecialKind,
}

/// An in-memory or file-backed super-chunk.
#[derive(Debug)]
pub struct SChunk {
    pub(crate) cparams: CParams,
    pub(crate) dparams: DParams,
    /// -1 no chunk yet, 0 variable, > 0 fixed.
    pub(crate) chunksize: i64,
    pub(crate) nbytes: u64,
    /// Stored bytes of non-special chunks (plus dead space of a frame we opened).
    pub(crate) stored_cbytes: u64,
    pub(crate) meta: Vec<(String, Vec<u8>)>,
    /// Raw (uncompressed) user bytes.
    pub(crate) vlmeta: Vec<(String, Vec<u8>)>,
    pub(crate) slots: Slots,
    pub(crate) backing: Backing,
    /// Remembered block size (0: none yet), written as the frame header's `blocksize`.
    pub(crate) blocksize: usize,
    /// All chunks are VL-block chunks.
    pub(crate) vlblocks: bool,
    /// Header fields carried over from an opened frame (informational).
    pub(crate) threads: (i16, i16),
    /// Present when opened writable from a file or directory: every change is written there.
    pub(crate) writer: Option<Writer>,
    pub(crate) read_only: bool,
    /// Start (bytes) of every chunk, built on demand for variable-size chunks.
    pub(crate) starts: OnceLock<Vec<u64>>,
    /// Absolute end of the chunks section in a buffer/file backing (reads stop there).
    pub(crate) section_end: u64,
    /// Per-chunk checksums (`checksum.rs`).
    pub(crate) checksums: checksum::State,
    /// The change in progress (undo information), if any.
    pub(crate) txn: Option<Box<Txn>>,
    /// What plugins of this super-chunk's chunks need to know (b2nd block shape), set by
    /// the array layer.
    pub(crate) ctx: ChunkContext,
    /// Picks each new chunk's parameters (None: `cparams` for every chunk).
    pub(crate) tuner: Option<Arc<dyn crate::ChunkTuner>>,
}

/// What a change in progress needs to be rolled back: the view's counters and metalayers as
/// they were, the checksum edits, and storage bookkeeping (the chunk list journals itself).
#[derive(Debug)]
pub(crate) struct Txn {
    chunksize: i64,
    nbytes: u64,
    stored_cbytes: u64,
    blocksize: usize,
    vlblocks: bool,
    meta: Vec<(String, Vec<u8>)>,
    vlmeta: Vec<(String, Vec<u8>)>,
    /// Whole checksum state, saved before enabling or disabling checksums.
    checksums: Option<checksum::State>,
    /// Inverse checksum edits, applied in reverse on rollback.
    sums_undo: Vec<(Change, u64)>,
    /// Sparse chunk files to remove once the change is committed.
    retired: Vec<u64>,
    /// Chunks written to unreferenced space by a batch (sparse: file ids, discarded on rollback).
    staged: Vec<u64>,
    /// Chunks from here on may still be in memory (a batch stages them as it goes).
    stage_from: usize,
    /// Positions before `stage_from` replaced since the last staging (staged too).
    replaced: Vec<usize>,
    /// Locked writers hold the exclusive lock for the whole change.
    held: Option<Arc<crate::lock::LockView>>,
    /// End of the committed chunks section (staging widens it for the change's reads).
    section_end: u64,
}

impl Clone for SChunk {
    /// A clone is an in-memory copy (it shares read-only stored bytes but no writer).
    fn clone(&self) -> Self {
        SChunk {
            cparams: self.cparams.clone(),
            dparams: self.dparams.clone(),
            chunksize: self.chunksize,
            nbytes: self.nbytes,
            stored_cbytes: self.stored_cbytes,
            meta: self.meta.clone(),
            vlmeta: self.vlmeta.clone(),
            slots: self.slots.clone(),
            backing: self.backing.clone(),
            blocksize: self.blocksize,
            vlblocks: self.vlblocks,
            threads: self.threads,
            writer: None,
            read_only: false,
            starts: OnceLock::new(),
            section_end: self.section_end,
            checksums: self.checksums.clone(),
            txn: None,
            ctx: self.ctx.clone(),
            tuner: self.tuner.clone(),
        }
    }
}

fn chunk_err(i: usize) -> impl FnOnce(oxblosc_chunk::Error) -> Error {
    Error::chunk(i)
}

impl SChunk {
    /// Tell the chunk plugins what they need to know about this super-chunk (the b2nd
    /// block shape; C-Blosc2 plugins read it from the super-chunk's metalayer).
    pub fn set_chunk_context(&mut self, ctx: ChunkContext) {
        self.ctx = ctx;
    }

    /// The context set by [`set_chunk_context`](Self::set_chunk_context).
    pub fn chunk_context(&self) -> &ChunkContext {
        &self.ctx
    }

    /// Let `tuner` pick the parameters of every chunk compressed from now on (None: the
    /// super-chunk's cparams). Not stored: a reopened super-chunk has none.
    pub fn set_tuner(&mut self, tuner: Option<Arc<dyn crate::ChunkTuner>>) {
        self.tuner = tuner;
    }

    /// The tuner set by [`set_tuner`](Self::set_tuner).
    pub fn tuner(&self) -> Option<&Arc<dyn crate::ChunkTuner>> {
        self.tuner.as_ref()
    }
}

impl SChunk {
    /// An empty super-chunk compressing with `cparams` (typesize included).
    pub fn new(cparams: CParams, dparams: DParams) -> Result<SChunk> {
        cparams.validate_settings().map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
        Ok(SChunk {
            blocksize: cparams.blocksize,
            cparams,
            dparams,
            chunksize: -1,
            nbytes: 0,
            stored_cbytes: 0,
            meta: Vec::new(),
            vlmeta: Vec::new(),
            slots: Slots::default(),
            backing: Backing::None,
            vlblocks: false,
            threads: (0, 1),
            writer: None,
            read_only: false,
            starts: OnceLock::new(),
            section_end: u64::MAX,
            checksums: checksum::State::default(),
            txn: None,
            ctx: ChunkContext::default(),
            tuner: None,
        })
    }

    // ---------------------------------------------------------------- properties

    pub fn nchunks(&self) -> usize {
        self.slots.len()
    }

    /// Uncompressed bytes.
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// Stored chunk bytes (what a frame's chunks section holds; special offsets count 0).
    pub fn cbytes(&self) -> u64 {
        let nspecial = if self.chunksize > 0 { 0 } else { self.slots.count_special() as u64 };
        self.stored_cbytes + 32 * nspecial
    }

    pub fn cratio(&self) -> f64 {
        match self.cbytes() {
            0 => 0.0,
            c => self.nbytes as f64 / c as f64,
        }
    }

    pub fn typesize(&self) -> usize {
        self.cparams.typesize
    }

    /// -1 before the first chunk, 0 for variable-size chunks, else every chunk's nbytes
    /// (the last may be shorter).
    pub fn chunksize(&self) -> i64 {
        self.chunksize
    }

    /// Number of items (`nbytes / typesize`).
    pub fn nitems(&self) -> u64 {
        self.nbytes / self.typesize() as u64
    }

    pub fn cparams(&self) -> &CParams {
        &self.cparams
    }

    pub fn dparams(&self) -> &DParams {
        &self.dparams
    }

    /// Change how new chunks are compressed (typesize must stay the same once chunks exist).
    pub fn set_cparams(&mut self, cparams: CParams) -> Result<()> {
        cparams.validate_settings().map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
        if !self.slots.is_empty() && cparams.typesize != self.cparams.typesize {
            return Err(Error::param("typesize", "cannot change once the super-chunk holds chunks"));
        }
        self.blocksize = cparams.blocksize;
        self.cparams = cparams;
        Ok(())
    }

    pub fn set_dparams(&mut self, dparams: DParams) {
        self.dparams = dparams;
    }

    /// The block size remembered for new chunks (0 = automatic), as in the frame header.
    pub fn blocksize(&self) -> usize {
        self.blocksize
    }

    /// Whether every chunk uses variable-length blocks (frame general_flags bit 7).
    pub fn is_vlblocks(&self) -> bool {
        self.vlblocks
    }

    // ---------------------------------------------------------------- metalayers

    /// Names of the fixed metalayers, in frame order.
    pub fn meta_names(&self) -> Vec<&str> {
        self.meta.iter().map(|(n, _)| n.as_str()).collect()
    }

    pub fn meta(&self, name: &str) -> Option<&[u8]> {
        self.meta.iter().find(|(n, _)| n == name).map(|(_, c)| c.as_slice())
    }

    /// Add a metalayer. Only before the first chunk (the frame header cannot grow later).
    pub fn add_meta(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.change(|s| s.add_meta_view(name, content))
    }

    fn add_meta_view(&mut self, name: &str, content: &[u8]) -> Result<()> {
        check_name(name)?;
        if !self.slots.is_empty() {
            return Err(Error::param("meta", "metalayers must be added before the first chunk"));
        }
        if self.meta(name).is_some() {
            return Err(Error::param("meta", format!("metalayer {name:?} already exists")));
        }
        if self.meta.len() >= MAX_METALAYERS {
            return Err(Error::param("meta", format!("at most {MAX_METALAYERS} metalayers")));
        }
        if content.len() > u32::MAX as usize / 2 {
            return Err(Error::param("meta", "content too large"));
        }
        self.meta.push((name.to_string(), content.to_vec()));
        Ok(())
    }

    /// Replace a metalayer's content with one of the same length (updated in place in files).
    pub fn update_meta(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.change(|s| s.update_meta_view(name, content))
    }

    fn update_meta_view(&mut self, name: &str, content: &[u8]) -> Result<()> {
        let slot = self
            .meta
            .iter_mut()
            .find(|(n, _)| n == name)
            .ok_or_else(|| Error::NotFound { kind: "metalayer", name: name.to_string() })?;
        if slot.1.len() != content.len() {
            return Err(Error::param(
                "meta",
                format!("new content of {name:?} has {} bytes, the stored one {}", content.len(), slot.1.len()),
            ));
        }
        slot.1.copy_from_slice(content);
        Ok(())
    }

    pub fn vlmeta_names(&self) -> Vec<&str> {
        self.vlmeta.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// A vlmetalayer's user bytes (python-blosc2 stores msgpack there).
    pub fn vlmeta(&self, name: &str) -> Option<&[u8]> {
        self.vlmeta.iter().find(|(n, _)| n == name).map(|(_, c)| c.as_slice())
    }

    /// Add or replace a vlmetalayer.
    pub fn set_vlmeta(&mut self, name: &str, content: &[u8]) -> Result<()> {
        check_name(name)?;
        self.change(|s| {
            if let Some(slot) = s.vlmeta.iter_mut().find(|(n, _)| n == name) {
                slot.1 = content.to_vec();
            } else {
                if s.vlmeta.len() + s.checksums.entries() >= MAX_METALAYERS {
                    return Err(Error::param("vlmeta", format!("at most {MAX_METALAYERS} vlmetalayers")));
                }
                s.vlmeta.push((name.to_string(), content.to_vec()));
            }
            Ok(())
        })
    }

    pub fn delete_vlmeta(&mut self, name: &str) -> Result<()> {
        self.change(|s| {
            let i = s
                .vlmeta
                .iter()
                .position(|(n, _)| n == name)
                .ok_or_else(|| Error::NotFound { kind: "vlmetalayer", name: name.to_string() })?;
            s.vlmeta.remove(i);
            Ok(())
        })
    }

    // ---------------------------------------------------------------- reading chunks

    fn check_index(&self, i: usize) -> Result<()> {
        if i >= self.slots.len() {
            return Err(Error::OutOfRange { what: "chunk", index: i as u64, len: self.slots.len() as u64 });
        }
        Ok(())
    }

    /// The special kind of chunk `i` if it is kept as a special offset.
    pub(crate) fn slot_special(&self, i: usize) -> Option<(SpecialKind, usize)> {
        match self.slots.get(i) {
            Slot::Special { kind, nbytes } => Some((kind, nbytes)),
            _ => None,
        }
    }

    /// Chunk `i` as stored (special offsets materialised as 32-byte special chunks), checked
    /// against its checksum when verifying on read.
    pub fn get_chunk(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let c = self.get_chunk_raw(i)?;
        self.verify_read(i, &c)?;
        Ok(c)
    }

    /// [`get_chunk`](Self::get_chunk) that reuses a buffer: a chunk in memory or mapped is
    /// borrowed (`Some`), any other (read from a file or sparse directory, or materialised) is
    /// put in `buf`, its allocation reused (`None`). A scan over many multi-megabyte chunks
    /// otherwise page-faults in a fresh buffer for each.
    pub fn get_chunk_in(&self, i: usize, buf: &mut Vec<u8>) -> Result<Option<&[u8]>> {
        self.check_index(i)?;
        if let (Slot::Stored(pos), Backing::File { .. } | Backing::Sparse { .. }) = (self.slots.get(i), &self.backing) {
            self.read_stored_into(i, pos, buf).map_err(|e| self.in_backing_file(e))?;
            self.verify_read(i, buf)?;
            return Ok(None);
        }
        match self.get_chunk(i)? {
            Cow::Borrowed(b) => Ok(Some(b)),
            Cow::Owned(v) => {
                buf.clear();
                buf.extend_from_slice(&v); // keeps the allocation
                Ok(None)
            }
        }
    }

    /// Chunk `i` as stored, never checksum-checked.
    pub(crate) fn get_chunk_raw(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        self.check_index(i)?;
        if let Some(b) = self.slots.mem(i) {
            return Ok(Cow::Borrowed(b));
        }
        match self.slots.get(i) {
            Slot::Mem(b) => Ok(Cow::Owned(b.to_vec())),
            Slot::Special { kind, nbytes } => {
                let ts = self.typesize();
                // A special chunk's header typesize must divide nbytes; fall back to 1 when a
                // foreign frame's chunk size is not a whole number of items.
                let ts = if nbytes % ts == 0 { ts } else { 1 };
                let kind = if kind == SpecialKind::Nan && ts != 4 && ts != 8 { SpecialKind::Zeros } else { kind };
                oxblosc_chunk::special_chunk(kind, nbytes, ts, None).map(Cow::Owned).map_err(chunk_err(i))
            }
            Slot::Stored(pos) => self.read_stored(i, pos).map_err(|e| self.in_backing_file(e)),
        }
    }

    /// Name the frame file in errors about its contents.
    pub(crate) fn in_backing_file(&self, e: Error) -> Error {
        match self.backing.path() {
            Some(p) => e.in_file(p),
            None => e,
        }
    }

    fn read_stored(&self, i: usize, pos: u64) -> Result<Cow<'_, [u8]>> {
        match &self.backing {
            Backing::Sparse { .. } | Backing::File { .. } => {
                let mut v = Vec::new();
                self.read_stored_into(i, pos, &mut v)?;
                Ok(Cow::Owned(v))
            }
            b => b.read_at(pos, self.stored_len(i, pos)?, "chunk").map_err(|e| at_chunk(e, i)),
        }
    }

    /// Stored chunk `i` at `pos` into `buf` (replacing its contents).
    fn read_stored_into(&self, i: usize, pos: u64, buf: &mut Vec<u8>) -> Result<()> {
        match &self.backing {
            Backing::Sparse { dir, .. } => {
                self.backing.read_chunk_file_into(dir, pos, MAX_CHUNK_LEN, None, buf)?;
                check_chunk_len(i, pos, buf, buf.len() as u64).map(drop)
            }
            b => b.read_into(pos, self.stored_len(i, pos)?, "chunk", buf).map_err(|e| at_chunk(e, i)),
        }
    }

    /// The first 32 bytes of stored chunk `i` at `pos` (fewer if the chunk is shorter): its
    /// header, without reading (or checksum-checking) the rest of the chunk.
    fn read_stored_head(&self, i: usize, pos: u64) -> Result<Cow<'_, [u8]>> {
        const HEAD: u64 = 32;
        match &self.backing {
            Backing::Sparse { dir, .. } => {
                let mut v = Vec::new();
                self.backing.read_chunk_file_into(dir, pos, MAX_CHUNK_LEN, Some(HEAD), &mut v)?;
                Ok(Cow::Owned(v))
            }
            b => {
                let n = HEAD.min(self.section_end().saturating_sub(pos));
                b.read_at(pos, n, "chunk header").map_err(|e| at_chunk(e, i))
            }
        }
    }

    /// Run `f` on chunk `i` as stored, checksum-checked like [`SChunk::get_chunk`]. Chunks
    /// stored in a file or a sparse directory are read into a buffer this thread reuses
    /// across calls (up to [`KEEP_READ_BUF`]): a fresh multi-megabyte buffer per chunk costs
    /// more in page faults than the read itself.
    pub fn with_chunk<R, E: From<Error>>(
        &self,
        i: usize,
        f: impl FnOnce(&[u8]) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        self.check_index(i)?;
        let pos = match (self.slots.get(i), &self.backing) {
            (Slot::Stored(pos), Backing::File { .. } | Backing::Sparse { .. }) => pos,
            _ => return f(&self.get_chunk(i)?),
        };
        let mut buf = READ_BUF.with(Cell::take);
        let read = self
            .read_stored_into(i, pos, &mut buf)
            .map_err(|e| self.in_backing_file(e))
            .and_then(|()| self.verify_read(i, &buf));
        let out = match read {
            Ok(()) => f(&buf),
            Err(e) => Err(e.into()),
        };
        if buf.capacity() <= KEEP_READ_BUF {
            READ_BUF.with(|c| c.set(buf));
        }
        out
    }

    /// Bytes `[lo, lo + out.len())` of chunk `i` as stored in its frame file, read without the
    /// rest of the chunk (n-d slices that need a few blocks of large chunks read only those).
    /// Returns how many bytes were read: fewer than asked when the chunk ends first. None,
    /// having read nothing, when the chunk is not stored in a contiguous frame file (memory,
    /// mapped, sparse, special) or when chunk checksums are checked on read (they cover whole
    /// chunks): use [`SChunk::with_chunk`] then.
    pub fn read_stored_part(&self, i: usize, lo: u64, out: &mut [u8]) -> Result<Option<usize>> {
        self.check_index(i)?;
        let pos = match (self.slots.get(i), &self.backing) {
            (Slot::Stored(pos), Backing::File { .. }) if !self.checksums.verify_on_read() => pos,
            _ => return Ok(None),
        };
        let stored = self.stored_len(i, pos)?;
        let n = (out.len() as u64).min(stored.saturating_sub(lo)) as usize;
        self.backing
            .read_into_slice(pos + lo, &mut out[..n], "chunk")
            .map_err(|e| self.in_backing_file(at_chunk(e, i)))?;
        Ok(Some(n))
    }

    /// The stored chunk at the highest position (index, position), if any.
    pub(crate) fn last_stored(&self) -> Option<(usize, u64)> {
        (0..self.slots.len())
            .filter_map(|i| match self.slots.get(i) {
                Slot::Stored(p) => Some((i, p)),
                _ => None,
            })
            .max_by_key(|&(_, p)| p)
    }

    /// Live stored chunk bytes: every chunk header read up to 4096 stored chunks, else an
    /// estimate from 4096 evenly spaced ones (the frame's cbytes may include dead space).
    pub(crate) fn estimate_live(&self) -> Result<u64> {
        let count = self.slots.len() - self.slots.count_special();
        let step = count.div_ceil(4096).max(1);
        let (mut sum, mut k, mut seen) = (0u64, 0u64, 0usize);
        for i in 0..self.slots.len() {
            if self.slots.is_special(i) {
                continue;
            }
            if seen % step == 0 {
                if let Slot::Stored(p) = self.slots.get(i) {
                    sum += self.stored_len(i, p)?;
                    k += 1;
                }
            }
            seen += 1;
        }
        Ok((sum * count as u64).checked_div(k).unwrap_or(0))
    }

    /// Stored length of chunk `i` at `pos` (reads its 16-byte header only, sparse: file size).
    pub(crate) fn stored_len(&self, i: usize, pos: u64) -> Result<u64> {
        match &self.backing {
            Backing::Sparse { dir, .. } => {
                let p = dir.join(crate::storage::chunk_file_name(pos));
                Ok(std::fs::metadata(&p).map_err(|e| Error::io(None, e).in_file(&p))?.len())
            }
            b => {
                let end = self.section_end();
                let head = b
                    .read_at(pos, 16.min(end.saturating_sub(pos)), "chunk header")
                    .map_err(|e| self.in_backing_file(at_chunk(e, i)))?;
                check_chunk_len(i, pos, &head, end.saturating_sub(pos)).map(|n| n as u64)
            }
        }
    }

    /// Absolute end of the stored chunks section (buffer/file backings).
    pub(crate) fn section_end(&self) -> u64 {
        self.section_end
    }

    /// Header of chunk `i` (only its first 32 bytes are read for stored chunks).
    fn chunk_nbytes(&self, i: usize) -> Result<usize> {
        if self.chunksize > 0 {
            let cs = self.chunksize as u64;
            return Ok(if i + 1 == self.slots.len() { (self.nbytes - cs * i as u64) as usize } else { cs as usize });
        }
        match self.slots.get(i) {
            Slot::Special { nbytes, .. } => Ok(nbytes),
            Slot::Mem(b) => Ok(ChunkHeader::parse(&b).map_err(chunk_err(i))?.nbytes),
            Slot::Stored(pos) => {
                let head = self.read_stored_head(i, pos)?;
                if head.len() < 8 {
                    return Err(chunk_err(i)(oxblosc_chunk::Error::Truncated {
                        what: "chunk header",
                        offset: 0,
                        need: 16,
                        have: head.len(),
                    }));
                }
                Ok(i32::from_le_bytes([head[4], head[5], head[6], head[7]]).max(0) as usize)
            }
        }
    }

    /// Byte offset where chunk `i` starts (i == nchunks gives nbytes).
    fn chunk_start(&self, i: usize) -> Result<u64> {
        if self.chunksize > 0 {
            return Ok((self.chunksize as u64 * i as u64).min(self.nbytes));
        }
        if i > self.slots.len() {
            return Err(Error::OutOfRange { what: "chunk", index: i as u64, len: self.slots.len() as u64 });
        }
        if let Some(s) = self.starts.get() {
            return Ok(s[i]);
        }
        let mut s = Vec::with_capacity(self.slots.len() + 1);
        let mut acc = 0u64;
        for j in 0..self.slots.len() {
            s.push(acc);
            acc += self.chunk_nbytes(j)? as u64;
        }
        s.push(acc);
        let v = s[i];
        let _ = self.starts.set(s);
        Ok(v)
    }

    /// Sizes and kind of chunk `i` (reads only the chunk header of stored chunks).
    pub fn chunk_info(&self, i: usize) -> Result<ChunkInfo> {
        self.check_index(i)?;
        if let Some((kind, nbytes)) = self.slot_special(i) {
            let cbytes = if self.chunksize > 0 { 0 } else { 32 };
            return Ok(ChunkInfo { nchunk: i, nbytes, cbytes, special: kind });
        }
        let h = match self.slots.get(i) {
            Slot::Stored(pos) => {
                let head = self.read_stored_head(i, pos).map_err(|e| self.in_backing_file(e))?;
                ChunkHeader::parse_head(&head)
            }
            _ => ChunkHeader::parse(&self.get_chunk(i)?),
        }
        .map_err(chunk_err(i))?;
        Ok(ChunkInfo { nchunk: i, nbytes: h.nbytes, cbytes: h.cbytes, special: h.special().map_err(chunk_err(i))? })
    }

    /// Decompress chunk `i`.
    pub fn decompress_chunk(&self, i: usize) -> Result<Vec<u8>> {
        self.with_chunk(i, |c| {
            oxblosc_chunk::decompress_with(c, &self.dparams, &self.ctx)
                .map_err(chunk_err(i))
                .map_err(|e| self.in_backing_file(e))
        })
    }

    /// Decompress chunk `i` into `dst`; returns its nbytes.
    pub fn decompress_chunk_into(&self, i: usize, dst: &mut [u8]) -> Result<usize> {
        self.with_chunk(i, |c| {
            oxblosc_chunk::decompress_into_with(c, dst, &self.dparams, &self.ctx)
                .map_err(chunk_err(i))
                .map_err(|e| self.in_backing_file(e))
        })
    }

    /// Decompressed chunks in order.
    pub fn iter_chunks(&self) -> impl Iterator<Item = Result<Vec<u8>>> + '_ {
        (0..self.nchunks()).map(move |i| self.decompress_chunk(i))
    }

    /// Sizes and kinds of the chunks in order.
    pub fn iter_chunks_info(&self) -> impl Iterator<Item = Result<ChunkInfo>> + '_ {
        (0..self.nchunks()).map(move |i| self.chunk_info(i))
    }

    /// Find the chunk holding byte `b` (b < nbytes).
    fn chunk_of(&self, b: u64) -> Result<usize> {
        if self.chunksize > 0 {
            return Ok((b / self.chunksize as u64) as usize);
        }
        self.chunk_start(0)?;
        let s = self.starts.get().expect("built above");
        let i = s.partition_point(|&x| x <= b).saturating_sub(1);
        if i >= self.slots.len() {
            return Err(Error::BadChunk {
                chunk: i,
                offset: 0,
                reason: format!("chunk sizes add up to {}, the frame says nbytes = {}", s[s.len() - 1], self.nbytes),
            });
        }
        Ok(i)
    }

    /// Items `[start, stop)` as bytes, across chunk boundaries.
    pub fn get_slice(&self, start: u64, stop: u64) -> Result<Vec<u8>> {
        let len = self.slice_len(start, stop)?;
        let mut out = vec![0u8; len];
        self.get_slice_into(start, stop, &mut out)?;
        Ok(out)
    }

    /// Bytes that items `[start, stop)` take (an error when the range is out of bounds).
    pub fn slice_len(&self, start: u64, stop: u64) -> Result<usize> {
        let n = self.nitems();
        if start > stop || stop > n {
            return Err(Error::OutOfRange { what: "item", index: stop.max(start), len: n });
        }
        usize::try_from((stop - start) * self.typesize() as u64)
            .map_err(|_| Error::InvalidParam { name: "stop", reason: "slice too large for memory".into() })
    }

    /// Like [`SChunk::get_slice`], into the first bytes of `out` (which must hold them):
    /// callers that own an output buffer avoid an allocation and a copy.
    pub fn get_slice_into(&self, start: u64, stop: u64, out: &mut [u8]) -> Result<()> {
        self.slice_pieces(start, stop, out.len(), |i, c, r, part| {
            let dst = &mut out[r];
            match part {
                None => oxblosc_chunk::decompress_into_with(c, dst, &self.dparams, &self.ctx).map(|_| ()),
                Some((lo, len)) => self.decode_part(c, lo, len, dst),
            }
            .map_err(chunk_err(i))
        })
    }

    /// [`SChunk::get_slice_into`] for bytes that need not be initialised (a fresh Python
    /// `bytes`): whole chunks are decoded straight into them without zero-filling; partial
    /// chunks at the ends are zeroed first. On error the contents are unspecified.
    pub fn get_slice_into_uninit(&self, start: u64, stop: u64, out: &mut [MaybeUninit<u8>]) -> Result<()> {
        let nt = self.dparams.nthreads;
        if nt > 1 && self.read_in_parallel(start, stop, out, nt)? {
            return Ok(());
        }
        self.slice_pieces(start, stop, out.len(), |i, c, r, part| {
            let dst = &mut out[r];
            match part {
                None => oxblosc_chunk::decompress_into_uninit_with(c, dst, &self.dparams, &self.ctx).map(|_| ()),
                Some((lo, len)) => self.decode_part(c, lo, len, oxblosc_chunk::zero_init(dst)),
            }
            .map_err(chunk_err(i))
        })
    }

    /// [`SChunk::get_slice_into_uninit`] over several chunks: the chunks are read and
    /// decoded in parallel on `nt` threads, one thread per chunk (the read of one chunk
    /// overlaps the decoding of others, and the threads meet once per slice instead of once
    /// per chunk). Returns false, having done nothing, for slices of fewer than two chunks or
    /// of variable-size chunks (the serial path handles those).
    fn read_in_parallel(&self, start: u64, stop: u64, out: &mut [MaybeUninit<u8>], nt: usize) -> Result<bool> {
        let len = self.slice_len(start, stop)?;
        let ts = self.typesize() as u64;
        let cs = self.chunksize;
        if cs <= 0 || out.len() < len || (stop - start) * ts < 2 * cs as u64 {
            return Ok(false);
        }
        let (b0, b1, cs) = (start * ts, stop * ts, cs as u64);
        // Consecutive pieces of the output, one per chunk: (chunk, its first byte, piece).
        let mut pieces = Vec::new();
        let mut rest = &mut out[..len];
        let mut b = b0;
        while b < b1 {
            let i = (b / cs) as usize;
            let end = ((i as u64 + 1) * cs).min(b1);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut((end - b) as usize);
            pieces.push((i, b - i as u64 * cs, head));
            rest = tail;
            b = end;
        }
        // The caller reads pieces too, its helpers kept off its CPU (`map_jobs`): with the
        // pool's threads alone the caller slept, and on a loaded machine the woken workers
        // often queued on one CPU.
        let dp = DParams { nthreads: 1 };
        oxblosc_chunk::parallel::map_jobs(pieces, nt, |(i, lo, dst)| self.read_piece(i, lo, dst, &dp))?;
        Ok(true)
    }

    /// Bytes `[lo, lo + dst.len())` of chunk `i` (of the fixed chunk size) into `dst`.
    fn read_piece(&self, i: usize, lo: u64, dst: &mut [MaybeUninit<u8>], dp: &DParams) -> Result<()> {
        let expect = self.chunk_nbytes(i)?;
        self.with_chunk(i, |c| -> Result<()> {
            let h = ChunkHeader::parse(c).map_err(chunk_err(i))?;
            if h.nbytes != expect {
                return Err(self.in_backing_file(Error::BadChunk {
                    chunk: i,
                    offset: 0,
                    reason: format!("holds {} bytes, the frame's chunk size says {expect}", h.nbytes),
                }));
            }
            if lo == 0 && dst.len() == expect {
                oxblosc_chunk::decompress_into_uninit_with(c, dst, dp, &self.ctx).map(|_| ())
            } else {
                self.decode_part(c, lo, dst.len() as u64, oxblosc_chunk::zero_init(dst))
            }
            .map_err(chunk_err(i))
        })
    }

    /// Bytes `[lo, lo + len)` of a chunk into `dst`: through `getitem` when they are whole
    /// items of fixed-size blocks, else by decoding the chunk.
    fn decode_part(&self, c: &[u8], lo: u64, len: u64, dst: &mut [u8]) -> oxblosc_chunk::Result<()> {
        let h = ChunkHeader::parse(c)?;
        let hts = u64::from(h.typesize.max(1));
        if h.is_vlblocks() || !lo.is_multiple_of(hts) || !len.is_multiple_of(hts) {
            let all = oxblosc_chunk::decompress_with(c, &self.dparams, &self.ctx)?;
            dst.copy_from_slice(&all[lo as usize..(lo + len) as usize]);
        } else {
            let (start, n) = ((lo / hts) as usize, (len / hts) as usize);
            oxblosc_chunk::getitem_with(c, start, n, dst, &self.ctx)?;
        }
        Ok(())
    }

    /// Walk the chunks holding items `[start, stop)` (checked against an output of `out_len`
    /// bytes): `piece(chunk index, chunk bytes, output byte range, None for the whole chunk
    /// or Some((offset, length)) of a part)`, after checking the chunk's size.
    fn slice_pieces(
        &self,
        start: u64,
        stop: u64,
        out_len: usize,
        mut piece: impl FnMut(usize, &[u8], std::ops::Range<usize>, Option<(u64, u64)>) -> Result<()>,
    ) -> Result<()> {
        let len = self.slice_len(start, stop)?;
        if out_len < len {
            return Err(Error::InvalidParam {
                name: "out",
                reason: format!("holds {out_len} bytes, the slice needs {len}"),
            });
        }
        let ts = self.typesize() as u64;
        let (b0, b1) = (start * ts, stop * ts);
        let mut b = b0;
        while b < b1 {
            let i = self.chunk_of(b)?;
            let cs = self.chunk_start(i)?;
            let ce = cs + self.chunk_nbytes(i)? as u64;
            if ce <= b {
                return Err(Error::BadChunk { chunk: i, offset: 0, reason: "chunk sizes disagree with nbytes".into() });
            }
            let end = ce.min(b1);
            let r = (b - b0) as usize..(end - b0) as usize;
            self.with_chunk(i, |c| -> Result<()> {
                let h = ChunkHeader::parse(c).map_err(chunk_err(i))?;
                if h.nbytes as u64 != ce - cs {
                    return Err(self.in_backing_file(Error::BadChunk {
                        chunk: i,
                        offset: 0,
                        reason: format!("holds {} bytes, the frame's chunk size says {}", h.nbytes, ce - cs),
                    }));
                }
                piece(i, c, r, if b == cs && end == ce { None } else { Some((b - cs, end - b)) })
            })?;
            b = end;
        }
        Ok(())
    }

    /// Overwrite items starting at `start` with `data` (a whole number of items, inside the
    /// existing items); affected chunks are recompressed.
    pub fn set_slice(&mut self, start: u64, data: &[u8]) -> Result<()> {
        self.change(|s| s.set_slice_view(start, data))
    }

    fn set_slice_view(&mut self, start: u64, data: &[u8]) -> Result<()> {
        let ts = self.typesize() as u64;
        if !(data.len() as u64).is_multiple_of(ts) {
            return Err(Error::param("data", format!("{} bytes is not a whole number of items", data.len())));
        }
        let stop = start + data.len() as u64 / ts;
        if stop > self.nitems() {
            return Err(Error::OutOfRange { what: "item", index: stop, len: self.nitems() });
        }
        let (b0, b1) = (start * ts, stop * ts);
        let mut b = b0;
        while b < b1 {
            let i = self.chunk_of(b)?;
            let cs = self.chunk_start(i)?;
            let mut buf = self.decompress_chunk(i)?;
            if buf.len() != self.chunk_nbytes(i)? {
                return Err(Error::BadChunk {
                    chunk: i,
                    offset: 0,
                    reason: "size disagrees with the chunk size".into(),
                });
            }
            let end = (cs + buf.len() as u64).min(b1);
            buf[(b - cs) as usize..(end - cs) as usize].copy_from_slice(&data[(b - b0) as usize..(end - b0) as usize]);
            self.compressed(&buf, |s, c| s.update_view(i, c, None))?;
            b = end;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- writing chunks

    fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }

    /// Compress `data` with the super-chunk's cparams and remembered block size.
    pub fn compress(&mut self, data: &[u8]) -> Result<Vec<u8>> {
        self.compressed(data, |_, c| Ok(c.to_vec()))
    }

    /// Compress `data` (as [`SChunk::compress`]) into this thread's reused buffer and hand
    /// the chunk to `then` (which stores a copy of it).
    fn compressed<T>(&mut self, data: &[u8], then: impl FnOnce(&mut Self, &[u8]) -> Result<T>) -> Result<T> {
        let mut buf = COMPRESS_BUF.with(Cell::take);
        let need = oxblosc_chunk::max_compressed_len(data.len());
        if buf.len() < need {
            buf.resize(need, 0);
        }
        let r = self.compress_into_buf(data, &mut buf[..need]).and_then(|n| then(self, &buf[..n]));
        if buf.capacity() <= KEEP_COMPRESS_BUF {
            COMPRESS_BUF.with(|c| c.set(buf));
        }
        r
    }

    fn compress_into_buf(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let mut cp = self.cparams.clone();
        let hts = if cp.typesize > 255 { 1 } else { cp.typesize };
        if cp.blocksize == 0 && self.blocksize != 0 && self.blocksize.is_multiple_of(hts) {
            cp.blocksize = self.blocksize;
        }
        if let Some(t) = &self.tuner {
            cp = t.choose(data, &cp);
        }
        let n = oxblosc_chunk::compress_into_with(data, out, &cp, &self.ctx)
            .map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
        if let Some(t) = &self.tuner {
            t.compressed(data.len(), n);
        }
        // Like a C-Blosc2 context: the block size just used (clamped to a short chunk's
        // nbytes) is what the next chunk is forced to and what the frame header records.
        let h = ChunkHeader::parse(&out[..n]).map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
        self.blocksize = h.blocksize;
        Ok(n)
    }

    /// Compress and append `data` as one chunk; returns the new number of chunks.
    pub fn append_data(&mut self, data: &[u8]) -> Result<usize> {
        self.change(|s| s.compressed(data, |s, c| s.append_view(c)))
    }

    pub fn insert_data(&mut self, i: usize, data: &[u8]) -> Result<usize> {
        self.change(|s| s.compressed(data, |s, c| s.insert_view(i, c)))
    }

    pub fn update_data(&mut self, i: usize, data: &[u8]) -> Result<usize> {
        self.change(|s| s.compressed(data, |s, c| s.update_view(i, c, None)))
    }

    /// Validate a caller's chunk; returns (nbytes, slot). `shared`: the same bytes already
    /// in an `Arc`, kept as they are instead of copied.
    fn accept_chunk(&mut self, chunk: &[u8], shared: Option<&Arc<[u8]>>) -> Result<(usize, bool, Slot)> {
        let h = ChunkHeader::parse(chunk).map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
        let chunk = &chunk[..h.cbytes];
        let special = h.special().map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
        let slot = match special {
            SpecialKind::Zeros | SpecialKind::Nan | SpecialKind::Uninit => {
                Slot::Special { kind: special, nbytes: h.nbytes }
            }
            _ => {
                self.stored_cbytes += h.cbytes as u64;
                match shared {
                    Some(a) if a.len() == h.cbytes => Slot::Mem(a.clone()),
                    _ => Slot::Mem(Arc::from(chunk)),
                }
            }
        };
        Ok((h.nbytes, h.is_vlblocks(), slot))
    }

    fn slot_cbytes(&self, i: usize) -> Result<u64> {
        match self.slots.get(i) {
            Slot::Special { .. } => Ok(0),
            Slot::Mem(b) => Ok(b.len() as u64),
            Slot::Stored(pos) => self.stored_len(i, pos),
        }
    }

    fn note_vlblocks(&mut self, vl: bool) {
        self.vlblocks = if self.slots.is_empty() { vl } else { self.vlblocks && vl };
    }

    /// Append a compressed chunk; returns the new number of chunks.
    pub fn append_chunk(&mut self, chunk: &[u8]) -> Result<usize> {
        self.change(|s| s.append_view(chunk))
    }

    /// [`SChunk::append_chunk`] with the chunk in an `Arc`, kept as is until stored (no copy;
    /// a file-backed batch writes it out at once).
    pub fn append_chunk_shared(&mut self, chunk: Arc<[u8]>) -> Result<usize> {
        self.change(|s| s.append_shared_view(&chunk, Some(&chunk)))
    }

    /// Insert a compressed chunk at position `i`.
    pub fn insert_chunk(&mut self, i: usize, chunk: &[u8]) -> Result<usize> {
        self.change(|s| s.insert_view(i, chunk))
    }

    /// Replace chunk `i`.
    pub fn update_chunk(&mut self, i: usize, chunk: &[u8]) -> Result<usize> {
        self.change(|s| s.update_view(i, chunk, None))
    }

    /// [`SChunk::update_chunk`] with the chunk in an `Arc` that an in-memory super-chunk
    /// keeps as is (no copy: writers that build many chunks save one pass over them).
    pub fn update_chunk_shared(&mut self, i: usize, chunk: Arc<[u8]>) -> Result<usize> {
        self.change(|s| s.update_view(i, &chunk, Some(&chunk)))
    }

    /// Remove chunk `i`.
    pub fn delete_chunk(&mut self, i: usize) -> Result<usize> {
        self.change(|s| s.delete_view(i))
    }

    fn append_view(&mut self, chunk: &[u8]) -> Result<usize> {
        self.append_shared_view(chunk, None)
    }

    fn append_shared_view(&mut self, chunk: &[u8], shared: Option<&Arc<[u8]>>) -> Result<usize> {
        let (nb, vl, slot) = self.accept_chunk(chunk, shared)?;
        let n = self.slots.len();
        if self.chunksize < 0 {
            self.chunksize = nb as i64;
        } else if self.chunksize > 0 {
            let last = if n == 0 { self.chunksize } else { self.chunk_nbytes(n - 1)? as i64 };
            if nb as i64 > self.chunksize || last < self.chunksize {
                self.chunksize = 0;
            }
        }
        self.note_vlblocks(vl);
        self.slots.push(slot);
        self.nbytes += nb as u64;
        self.note_checksum(Change::Inserted(n))?;
        self.starts = OnceLock::new();
        Ok(self.slots.len())
    }

    fn insert_view(&mut self, i: usize, chunk: &[u8]) -> Result<usize> {
        if i > self.slots.len() {
            return Err(Error::OutOfRange { what: "chunk", index: i as u64, len: self.slots.len() as u64 });
        }
        if i == self.slots.len() {
            return self.append_view(chunk);
        }
        let (nb, vl, slot) = self.accept_chunk(chunk, None)?;
        if self.chunksize > 0 && nb as i64 != self.chunksize {
            self.freeze_variable()?;
        }
        self.note_vlblocks(vl);
        self.slots.insert(i, slot);
        self.nbytes += nb as u64;
        self.note_checksum(Change::Inserted(i))?;
        self.starts = OnceLock::new();
        Ok(self.slots.len())
    }

    fn update_view(&mut self, i: usize, chunk: &[u8], shared: Option<&Arc<[u8]>>) -> Result<usize> {
        self.check_index(i)?;
        let old_nb = self.chunk_nbytes(i)?;
        let old_cb = self.slot_cbytes(i)?;
        let (nb, vl, slot) = self.accept_chunk(chunk, shared)?;
        let last = i + 1 == self.slots.len();
        if self.chunksize > 0 && ((last && nb as i64 > self.chunksize) || (!last && nb as i64 != self.chunksize)) {
            self.freeze_variable()?;
        }
        self.vlblocks = (self.slots.len() == 1 || self.vlblocks) && vl;
        self.retire(i);
        self.slots.set(i, slot);
        if let (Some(t), true) = (&mut self.txn, self.writer.is_some()) {
            t.replaced.push(i);
        }
        self.stored_cbytes = self.stored_cbytes.saturating_sub(old_cb);
        self.nbytes = self.nbytes - old_nb as u64 + nb as u64;
        self.note_checksum(Change::Replaced(i))?;
        self.starts = OnceLock::new();
        Ok(self.slots.len())
    }

    fn delete_view(&mut self, i: usize) -> Result<usize> {
        self.check_index(i)?;
        let nb = self.chunk_nbytes(i)?;
        let cb = self.slot_cbytes(i)?;
        if self.chunksize > 0 && i + 1 != self.slots.len() && (nb as i64) < self.chunksize {
            self.freeze_variable()?;
        }
        self.retire(i);
        self.slots.remove(i);
        self.stored_cbytes = self.stored_cbytes.saturating_sub(cb);
        self.nbytes -= nb as u64;
        self.note_checksum(Change::Removed(i))?;
        self.starts = OnceLock::new();
        Ok(self.slots.len())
    }

    /// Chunk `i` is about to be dropped: a sparse frame removes its file after the commit.
    fn retire(&mut self, i: usize) {
        let sparse = self.writer.as_ref().is_some_and(|w| !w.is_contiguous());
        if let (true, Some(t), Slot::Stored(id)) = (sparse, &mut self.txn, self.slots.get(i)) {
            t.retired.push(id);
        }
    }

    /// Switch to variable chunk sizes: special slots keep their explicit nbytes.
    fn freeze_variable(&mut self) -> Result<()> {
        // Make sure every chunk's nbytes is still known after the switch (it no longer
        // follows from chunksize): specials carry theirs; others have headers.
        self.chunksize = 0;
        Ok(())
    }

    /// Append `nitems` items of a special value without compressing data, in chunks of
    /// the super-chunk's chunk size (or `chunksize` bytes when it has none yet).
    pub fn fill_special(&mut self, nitems: u64, value: SpecialValue, chunksize: Option<usize>) -> Result<usize> {
        self.change(|s| s.fill_special_view(nitems, value, chunksize))
    }

    fn fill_special_view(&mut self, nitems: u64, value: SpecialValue, chunksize: Option<usize>) -> Result<usize> {
        let ts = self.typesize();
        let cs = match (self.chunksize, chunksize) {
            (c, _) if c > 0 => c as usize,
            (_, Some(c)) if c > 0 => c,
            _ => return Err(Error::param("chunksize", "needed: the super-chunk has no fixed chunk size yet")),
        };
        if cs % ts != 0 {
            return Err(Error::param("chunksize", format!("{cs} is not a multiple of typesize {ts}")));
        }
        // Check the last chunk itself: nbytes % chunksize misses a short last chunk when the
        // total happens to be a multiple (e.g. an empty last chunk).
        if self.chunksize > 0
            && !self.slots.is_empty()
            && (!self.nbytes.is_multiple_of(self.chunksize as u64)
                || self.chunk_nbytes(self.slots.len() - 1)? as i64 != self.chunksize)
        {
            return Err(Error::param("fill_special", "the last chunk is not full"));
        }
        if value == SpecialValue::Nan && ts != 4 && ts != 8 {
            return Err(Error::param("value", "NaN needs typesize 4 or 8"));
        }
        let total = nitems.checked_mul(ts as u64).ok_or_else(|| Error::param("nitems", "too large"))?;
        let mut left = total;
        let kind = match &value {
            SpecialValue::Zeros => SpecialKind::Zeros,
            SpecialValue::Nan => SpecialKind::Nan,
            SpecialValue::Uninit => SpecialKind::Uninit,
            SpecialValue::Value(_) => SpecialKind::Value,
        };
        // One repeated-value chunk per distinct size.
        let mut value_chunks: Vec<(usize, Vec<u8>)> = Vec::new();
        while left > 0 {
            let nb = left.min(cs as u64) as usize;
            match &value {
                SpecialValue::Value(v) => {
                    let c = match value_chunks.iter().find(|(n, _)| *n == nb) {
                        Some((_, c)) => c.clone(),
                        None => {
                            let mut c = oxblosc_chunk::special_chunk(kind, nb, ts, Some(v))
                                .map_err(|source| Error::Chunk { chunk: ChunkId::Input, source })?;
                            // With the remembered block size (b2nd's block), as C-Blosc2
                            // writes these: python-blosc2 could not slice an array of
                            // whole-chunk-block value chunks ("Error while getting the buffer").
                            if self.blocksize > 0 && self.blocksize < nb && c.len() >= 16 {
                                c[8..12].copy_from_slice(&(self.blocksize as u32).to_le_bytes());
                            }
                            value_chunks.push((nb, c.clone()));
                            c
                        }
                    };
                    self.append_view(&c)?;
                }
                _ => {
                    if self.chunksize < 0 {
                        self.chunksize = cs as i64;
                    }
                    self.note_vlblocks(false);
                    self.slots.push(Slot::Special { kind, nbytes: nb });
                    self.nbytes += nb as u64;
                    self.note_checksum(Change::Inserted(self.slots.len() - 1))?;
                }
            }
            left -= nb as u64;
        }
        self.starts = OnceLock::new();
        Ok(self.slots.len())
    }

    /// The frame offset value for chunk `i` when it is a special offset in a frame with the
    /// current chunk size (never for variable-size frames, Trap 30).
    pub(crate) fn special_offset_kind(&self, i: usize) -> Option<SpecialKind> {
        if self.chunksize <= 0 {
            return None;
        }
        self.slot_special(i).map(|(k, _)| k)
    }
}

// ---------------------------------------------------------------- changes and commits

impl SChunk {
    /// Make one change to the view (`f`), then commit it to the file or directory behind a
    /// writable super-chunk. If `f` or the commit fails, the view is rolled back to what it
    /// was, so the handle and the file stay exactly as before. Inside a batch
    /// ([`batch`](Self::batch)) changes only accumulate; the batch commits them at once.
    fn change<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.writable()?;
        // Never build on a header that failed its check (the damage would become "valid").
        self.check_header()?;
        if self.txn.is_some() {
            let v = f(self)?;
            self.stage_new()?;
            return Ok(v);
        }
        self.begin()?;
        let r = f(self).and_then(|v| self.sync().map(|()| v));
        self.end(r.is_ok());
        r
    }

    /// Run several changes as one commit: all of them, or (on any error, or a crash before
    /// the end) none. Appended chunks are written to unreferenced space as they come, so
    /// memory stays bounded; only the final commit makes them part of the frame.
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.change(f)
    }

    fn begin(&mut self) -> Result<()> {
        // Locked writers wait their turn, then catch up with what other writers committed.
        let held = match self.writer.as_ref().and_then(|w| w.lock.clone()) {
            Some(v) => {
                v.lock.hold()?;
                if let Err(e) = self.refresh_locked(&v) {
                    v.lock.release();
                    return Err(e);
                }
                Some(v)
            }
            None => None,
        };
        self.slots.begin();
        self.txn = Some(Box::new(Txn {
            chunksize: self.chunksize,
            nbytes: self.nbytes,
            stored_cbytes: self.stored_cbytes,
            blocksize: self.blocksize,
            vlblocks: self.vlblocks,
            meta: self.meta.clone(),
            vlmeta: self.vlmeta.clone(),
            checksums: None,
            sums_undo: Vec::new(),
            retired: Vec::new(),
            staged: Vec::new(),
            stage_from: self.slots.len(),
            replaced: Vec::new(),
            held,
            section_end: self.section_end,
        }));
        Ok(())
    }

    /// End the change in progress: keep it, or undo every edit of the view.
    fn end(&mut self, ok: bool) {
        let Some(t) = self.txn.take() else { return };
        if ok {
            self.slots.commit();
        } else {
            self.slots.rollback();
            self.chunksize = t.chunksize;
            self.nbytes = t.nbytes;
            self.stored_cbytes = t.stored_cbytes;
            self.blocksize = t.blocksize;
            self.vlblocks = t.vlblocks;
            self.meta = t.meta;
            self.vlmeta = t.vlmeta;
            self.section_end = t.section_end;
            for &(c, h) in t.sums_undo.iter().rev() {
                self.checksums.apply(c, h);
            }
            if let Some(cs) = t.checksums {
                let verify = self.checksums.verify_on_read();
                self.checksums = cs;
                self.checksums.set_verify_on_read(verify);
            }
            if let Some(w) = &mut self.writer {
                w.discard(&t.staged);
            }
            self.starts = OnceLock::new();
        }
        if let Some(v) = t.held {
            v.lock.release();
        }
    }

    /// Inside a batch: write chunks appended or replaced since the last call to unreferenced
    /// space, so a batch over a file holds no more than one change's chunks in memory.
    fn stage_new(&mut self) -> Result<()> {
        let Some(t) = self.txn.as_ref().filter(|_| self.writer.is_some()) else { return Ok(()) };
        let from = t.stage_from.min(self.slots.len());
        // Positions recorded before an insert or removal may have moved: staging a chunk at
        // another position is harmless (it is pending there too); one missed stays in memory
        // until the commit.
        let mut which: Vec<usize> = t.replaced.iter().copied().filter(|&i| i < from).collect();
        which.extend(from..self.slots.len());
        which.retain(|&i| self.slots.mem(i).is_some());
        which.sort_unstable();
        which.dedup();
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let r = w.stage(self, &which);
        let sparse = !w.is_contiguous();
        self.writer = Some(w);
        let placed = r?;
        let t = self.txn.as_mut().expect("checked above");
        t.stage_from = self.slots.len();
        t.replaced.clear();
        if sparse {
            t.staged.extend(placed.iter().map(|p| p.1));
        }
        for (i, pos, len) in placed {
            self.slots.set_staged(i, Slot::Stored(pos));
            // The rest of the change reads staged chunks back (an n-d resize zeroes parts of
            // chunks it just placed): they lie past the committed section, so widen it.
            if !sparse {
                self.section_end = self.section_end.max(pos + len);
            }
        }
        Ok(())
    }

    /// The frame as this view describes it, for a storage commit or a copy.
    pub(crate) fn frame(&self) -> Result<Frame<'_>> {
        Ok(Frame {
            chunks: self,
            nbytes: self.nbytes,
            header: self.frame_header(0, 0),
            meta: &self.meta,
            trailer: self.trailer_bytes()?,
        })
    }

    /// Commit the view to the writer (if any); on success adopt where the chunks went.
    pub(crate) fn sync(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let retired = self.txn.as_mut().map(|t| std::mem::take(&mut t.retired)).unwrap_or_default();
        let dirty = self.slots.take_dirty();
        let r = self.frame().and_then(|frame| {
            let ch = StorageChange {
                frame,
                dirty,
                chunksize: self.chunksize,
                stored_cbytes: self.stored_cbytes,
                retired: &retired,
            };
            w.commit(&ch)
        });
        self.writer = Some(w);
        self.apply(r?);
        Ok(())
    }

    /// Adopt a successful commit: chunks it stored, the new end of the chunks section.
    fn apply(&mut self, done: Committed) {
        for (i, pos, len) in done.stored {
            if self.slots.is_special(i) {
                self.stored_cbytes += len;
            }
            self.slots.set(i, Slot::Stored(pos));
        }
        for (i, id) in done.renumbered {
            self.slots.set(i, Slot::Stored(id));
        }
        self.slots.take_dirty(); // the commit encoded those entries already
        self.section_end = done.section_end;
        self.starts = OnceLock::new();
        if let Some(rw) = done.rewritten {
            self.apply_rewrite(rw);
        }
    }

    /// Adopt a compactly rewritten frame file.
    pub(crate) fn apply_rewrite(&mut self, rw: Rewritten) {
        for (i, pos) in rw.stored {
            self.slots.set(i, Slot::Stored(pos));
        }
        self.slots.set_tracking(true);
        self.stored_cbytes = rw.cbytes;
        self.section_end = rw.section_end;
        if let Some(w) = &self.writer {
            self.backing = Backing::File { file: rw.file, path: w.path.clone(), lock: w.lock.clone() };
        }
        self.starts = OnceLock::new();
    }
}

impl ChunkList for SChunk {
    fn len(&self) -> usize {
        self.slots.len()
    }

    fn entry(&self, i: usize) -> Entry {
        match self.slots.get(i) {
            Slot::Stored(p) => Entry::Stored(p),
            // Special offsets only with a fixed chunk size (Trap 30); else stored as chunks.
            Slot::Special { kind, .. } if self.chunksize > 0 => Entry::Special(offsets::special_offset(kind)),
            Slot::Special { .. } => Entry::Pending { counted: false },
            Slot::Mem(_) => Entry::Pending { counted: true },
        }
    }

    fn bytes(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        self.get_chunk(i)
    }
}

// ---------------------------------------------------------------- checksums

impl SChunk {
    /// Start keeping checksums: hashes every existing chunk (reads them all) and keeps them
    /// current from now on. A no-op when checksums are already kept.
    pub fn enable_checksums(&mut self) -> Result<()> {
        if self.checksums.enabled() {
            return Ok(());
        }
        if self.checksums.entries() == 0 && self.vlmeta.len() >= MAX_METALAYERS {
            return Err(Error::param("checksums", "the frame already holds the maximum of 16 vlmetalayers"));
        }
        let mut sums = Vec::with_capacity(self.nchunks());
        for i in 0..self.nchunks() {
            sums.push(chunk_checksum(&self.get_chunk_raw(i)?));
        }
        self.change_checksums(Some(sums))
    }

    /// Stop keeping checksums (the vlmetalayer is dropped with the next write).
    pub fn disable_checksums(&mut self) -> Result<()> {
        self.change_checksums(None)
    }

    fn change_checksums(&mut self, sums: Option<Vec<u64>>) -> Result<()> {
        if self.writer.is_none() {
            // In memory (or read-only and never written back): just the view.
            self.checksums.set_sums(sums);
            return Ok(());
        }
        self.change(|s| {
            if let Some(t) = &mut s.txn {
                t.checksums.get_or_insert_with(|| s.checksums.clone());
            }
            s.checksums.set_sums(sums);
            Ok(())
        })
    }

    /// Whether this super-chunk keeps checksums, and for how many chunks.
    pub fn checksums(&self) -> Status {
        self.checksums.status()
    }

    /// The stored hash of chunk `i`, if there is one.
    pub fn chunk_checksum(&self, i: usize) -> Option<u64> {
        self.checksums.get(i)
    }

    /// Check every chunk against its hash when it is read ([`get_chunk`](Self::get_chunk) and
    /// everything that decompresses). Chunks without a hash pass. On by default for frames
    /// that carry checksums; turning it off trades that safety for speed.
    pub fn set_verify_checksums(&mut self, on: bool) {
        self.checksums.set_verify_on_read(on);
    }

    pub fn verify_checksums(&self) -> bool {
        self.checksums.verify_on_read()
    }

    /// Refuse when a caller explicitly asks for verification of a frame without checksums
    /// (nothing could be checked; silently passing would mislead).
    pub fn require_checksums(&self) -> Result<()> {
        match self.checksums() {
            Status::On { .. } => Ok(()),
            Status::Unreadable(reason) => Err(self.in_backing_file(Error::param("checksums", reason))),
            Status::Off => Err(self.in_backing_file(Error::param(
                "verify_checksums",
                "this frame carries no checksums, so nothing can be verified (open it without verify_checksums=True, or add them with enable_checksums)",
            ))),
        }
    }

    /// Compare chunk `i`'s stored bytes with its hash, then decode it: a mismatch is
    /// [`Error::Checksum`], a chunk that does not decode is the decoder's error. Chunks
    /// past the end of the hashes (another writer appended) give [`Verdict::NoChecksum`].
    /// Also returns the chunk's decoded size.
    pub fn verify_chunk(&self, i: usize) -> Result<(Verdict, usize)> {
        self.check_header()?;
        let c = self.get_chunk_raw(i)?;
        let verdict = match self.chunk_checksum(i) {
            Some(expected) => {
                self.compare(i, expected, &c)?;
                Verdict::Ok
            }
            None => Verdict::NoChecksum,
        };
        if let Status::Unreadable(reason) = self.checksums() {
            return Err(self.in_backing_file(Error::param("checksums", reason)));
        }
        let out = oxblosc_chunk::decompress_with(&c, self.dparams(), &self.ctx)
            .map_err(Error::chunk(i))
            .map_err(|e| self.in_backing_file(e))?;
        Ok((verdict, out.len()))
    }

    /// The typesize and metalayers must match the digest stored with the chunk hashes (frames
    /// written before the digest existed, or without checksums, pass).
    pub fn check_header(&self) -> Result<()> {
        if self.checksums.head_mismatch() {
            return Err(self.in_backing_file(Error::field(
                "header",
                0,
                "the typesize or metalayers differ from the digest stored with the checksums (damaged, or changed by a program that does not update it)",
            )));
        }
        Ok(())
    }

    /// More hashes than chunks: chunks were removed by a writer that does not keep them.
    pub fn checksum_count_mismatch(&self) -> Option<(usize, usize)> {
        let n = self.checksums.len()?;
        (n > self.nchunks()).then_some((n, self.nchunks()))
    }

    fn compare(&self, i: usize, expected: u64, stored: &[u8]) -> Result<()> {
        let found = chunk_checksum(stored);
        if found != expected {
            return Err(self.in_backing_file(Error::Checksum { chunk: i, expected, found }));
        }
        Ok(())
    }

    /// Hook of [`get_chunk`](Self::get_chunk): check chunk `i` when verifying on read.
    pub(crate) fn verify_read(&self, i: usize, stored: &[u8]) -> Result<()> {
        if !self.checksums.verify_on_read() {
            return Ok(());
        }
        self.check_header()?;
        match self.chunk_checksum(i) {
            Some(expected) => self.compare(i, expected, stored),
            None => Ok(()),
        }
    }

    /// Hook of every chunk-list change: keep the hashes aligned with the chunks (recording
    /// how to undo it). Hashes already out of step (another writer changed the frame) are
    /// left alone.
    fn note_checksum(&mut self, change: Change) -> Result<()> {
        if !self.checksums.follows(change, self.nchunks()) {
            return Ok(());
        }
        let h = match change {
            Change::Removed(_) => 0,
            Change::Inserted(i) | Change::Replaced(i) => chunk_checksum(&self.get_chunk_raw(i)?),
        };
        let undo = self.checksums.apply(change, h);
        if let Some(t) = &mut self.txn {
            t.sums_undo.push(undo);
        }
        Ok(())
    }
}

/// Check the 16 first bytes of a stored chunk against the room it has; returns its cbytes.
fn check_chunk_len(i: usize, pos: u64, head: &[u8], room: u64) -> Result<usize> {
    if head.len() < 16 {
        return Err(Error::BadChunk {
            chunk: i,
            offset: pos,
            reason: "chunk header runs past the chunks section".into(),
        });
    }
    let cbytes = i32::from_le_bytes([head[12], head[13], head[14], head[15]]);
    if cbytes < 16 || cbytes as u64 > room {
        return Err(Error::BadChunk {
            chunk: i,
            offset: pos,
            reason: format!("chunk cbytes {cbytes} does not fit the {room} bytes available"),
        });
    }
    Ok(cbytes as usize)
}

fn at_chunk(e: Error, i: usize) -> Error {
    match e {
        Error::Truncated { offset, need, have, .. } => {
            Error::BadChunk { chunk: i, offset, reason: format!("needs {need} bytes, {have} available") }
        }
        e => e,
    }
}
