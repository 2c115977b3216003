//! Chunk decoding: every chunk version from Blosc 1.x to Blosc2 VL-blocks, serial or
//! block-parallel, with partial (`getitem`) reads.
//!
//! Untrusted input: every offset and size is checked before use and every failure is an
//! `Error` naming the block and offset. Block starts are treated as arbitrary offsets (C
//! writers with several threads store them unsorted; format spec 1.9, Trap 12).

use crate::codec::{zstd::PreparedDict, Dict};
use crate::filter::{bytedelta, shuffle};
use crate::format::{version, ChunkHeader, SpecialKind};
use crate::parallel::{grow_to, map_jobs, with_scratch, Scratch};
use crate::params::DParams;
use crate::pipeline::Pipeline;
use crate::registry::{self, ChunkContext, CodecEntry, CodecParams, DictKind};
use crate::uninit::{filled_vec, Out};
use crate::{Error, Result};
use std::mem::MaybeUninit;

/// Bytes of a stored (memcpyed) chunk one thread copies at a time when several decode it.
const MEMCPY_JOB: usize = 1 << 20;

/// Sizes recorded in a chunk header: (nbytes, cbytes, blocksize), like `get_cbuffer_sizes`.
pub fn cbuffer_sizes(chunk: &[u8]) -> Result<(usize, usize, usize)> {
    let h = ChunkHeader::parse(chunk)?;
    Ok((h.nbytes, h.cbytes, h.blocksize))
}

/// Decode a chunk into a new buffer of exactly `nbytes` bytes.
pub fn decompress(chunk: &[u8], dp: &DParams) -> Result<Vec<u8>> {
    decompress_with(chunk, dp, ChunkContext::NONE)
}

/// [`decompress`] for a chunk of a container plugins need to know about (b2nd arrays).
pub fn decompress_with(chunk: &[u8], dp: &DParams, ctx: &ChunkContext) -> Result<Vec<u8>> {
    // Validate everything the header implies (VL block sizes, dictionary, stream sizes)
    // before allocating.
    let d = Decoder::new(chunk, ChunkHeader::parse(chunk)?, ctx)?;
    d.check_stream_sizes()?;
    // No zero-fill: the decoder writes every byte of the fresh vector.
    filled_vec(d.h.nbytes, |out| d.decode_all(out, dp.nthreads))
}

/// The decompressed size of a chunk, after validating everything that can be checked
/// without decoding (use it to size a buffer for `decompress_into`).
pub fn decompressed_len(chunk: &[u8]) -> Result<usize> {
    let d = Decoder::new(chunk, ChunkHeader::parse(chunk)?, ChunkContext::NONE)?;
    d.check_stream_sizes()?;
    Ok(d.h.nbytes)
}

/// Decode a chunk into `dst` (at least `nbytes` long). Returns `nbytes`.
pub fn decompress_into(chunk: &[u8], dst: &mut [u8], dp: &DParams) -> Result<usize> {
    decompress_into_with(chunk, dst, dp, ChunkContext::NONE)
}

/// [`decompress_into`] with the container context of [`decompress_with`].
pub fn decompress_into_with(chunk: &[u8], dst: &mut [u8], dp: &DParams, ctx: &ChunkContext) -> Result<usize> {
    let h = ChunkHeader::parse(chunk)?;
    let n = h.nbytes;
    if dst.len() < n {
        return Err(Error::OutputTooSmall { need: n, have: dst.len() });
    }
    Decoder::new(chunk, h, ctx)?.decode_all(Out::init(&mut dst[..n]), dp.nthreads)?;
    Ok(n)
}

/// [`decompress_into`] for a destination whose bytes need not be initialised (a fresh
/// Python `bytes`, a `Vec`'s spare capacity): the decoders and unshuffle write it directly, and
/// only the outputs of plugins and rarer filters are zeroed first (block by block, in cache).
/// On success the first `nbytes` (returned) are initialised; on error the contents are
/// unspecified.
pub fn decompress_into_uninit(chunk: &[u8], dst: &mut [MaybeUninit<u8>], dp: &DParams) -> Result<usize> {
    decompress_into_uninit_with(chunk, dst, dp, ChunkContext::NONE)
}

/// [`decompress_into_uninit`] with the container context of [`decompress_with`].
pub fn decompress_into_uninit_with(
    chunk: &[u8],
    dst: &mut [MaybeUninit<u8>],
    dp: &DParams,
    ctx: &ChunkContext,
) -> Result<usize> {
    let h = ChunkHeader::parse(chunk)?;
    let n = h.nbytes;
    if dst.len() < n {
        return Err(Error::OutputTooSmall { need: n, have: dst.len() });
    }
    Decoder::new(chunk, h, ctx)?.decode_all(Out::uninit(&mut dst[..n]), dp.nthreads)?;
    Ok(n)
}

/// Decode items `[start, start + nitems)` (items of the header's typesize) into `dst`,
/// touching only the blocks that hold them. Returns the number of bytes written.
pub fn getitem(chunk: &[u8], start: usize, nitems: usize, dst: &mut [u8]) -> Result<usize> {
    getitem_with(chunk, start, nitems, dst, ChunkContext::NONE)
}

/// [`getitem`] with the container context of [`decompress_with`].
pub fn getitem_with(chunk: &[u8], start: usize, nitems: usize, dst: &mut [u8], ctx: &ChunkContext) -> Result<usize> {
    let h = ChunkHeader::parse(chunk)?;
    let ts = usize::from(h.typesize);
    let total_items = h.nbytes / ts;
    let end = start.checked_add(nitems).filter(|&e| e <= total_items).ok_or(Error::OutOfRange {
        start,
        end: start.saturating_add(nitems),
        nitems: total_items,
    })?;
    let (lo, hi) = (start * ts, end * ts);
    if dst.len() < hi - lo {
        return Err(Error::OutputTooSmall { need: hi - lo, have: dst.len() });
    }
    Decoder::new(chunk, h, ctx)?.decode_range(lo, hi, &mut dst[..hi - lo])?;
    Ok(hi - lo)
}

/// Decode several byte ranges `[lo, hi)` of a chunk, back to back into `dst`, touching only
/// the blocks that hold them. With `nthreads > 1` the ranges are decoded in parallel (one job
/// per range), which is how an n-dimensional read fetches the few blocks a slice needs.
/// Returns the number of bytes written.
pub fn decompress_ranges(chunk: &[u8], ranges: &[(usize, usize)], dst: &mut [u8], nthreads: usize) -> Result<usize> {
    decompress_ranges_with(chunk, ranges, dst, nthreads, ChunkContext::NONE)
}

/// [`decompress_ranges`] with the container context of [`decompress_with`].
pub fn decompress_ranges_with(
    chunk: &[u8],
    ranges: &[(usize, usize)],
    dst: &mut [u8],
    nthreads: usize,
    ctx: &ChunkContext,
) -> Result<usize> {
    let h = ChunkHeader::parse(chunk)?;
    let mut total = 0usize;
    for &(lo, hi) in ranges {
        if lo > hi || hi > h.nbytes {
            return Err(Error::OutOfRange { start: lo, end: hi, nitems: h.nbytes });
        }
        total += hi - lo;
    }
    if dst.len() < total {
        return Err(Error::OutputTooSmall { need: total, have: dst.len() });
    }
    let d = Decoder::new(chunk, h, ctx)?;
    let mut outs = Vec::with_capacity(ranges.len());
    let mut rest = &mut dst[..total];
    for &(lo, hi) in ranges {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(hi - lo);
        outs.push((lo, hi, head));
        rest = tail;
    }
    let plain = d.h.special()? != SpecialKind::None || d.h.is_memcpyed() || d.h.nbytes == 0;
    let mut block0 = Vec::new();
    if !plain && d.pipeline.has_delta() && d.h.nblocks() > 0 {
        // Blocks > 0 are XORed against block 0 (pitfall 3): decode it once, first.
        block0.resize(d.block_range(0).1, 0);
        with_scratch(|s| d.decode_block(0, Out::init(&mut block0), &[], s))?;
    }
    let one = |(lo, hi, out): (usize, usize, &mut [u8])| -> Result<()> {
        let mut tmp = Vec::new();
        with_scratch(|s| d.decode_range_with(lo, hi, out, &block0, s, &mut tmp))
    };
    map_jobs(outs, nthreads, one)?;
    Ok(total)
}

/// Everything needed to decode the blocks of one validated chunk.
struct Decoder<'a> {
    chunk: &'a [u8],
    h: ChunkHeader,
    /// The codec, looked up once per chunk (None for chunks without streams).
    codec: Option<&'static CodecEntry>,
    pipeline: Pipeline,
    dict: Option<Dict<'a>>,
    /// First byte after bstarts and the dictionary.
    data_start: usize,
    /// VL chunks: (uncompressed offset, size, payload start, payload len) per block.
    vl: Vec<(usize, usize, usize, usize)>,
    /// The b2nd block shape for plugins ([`ChunkContext`]).
    blockshape: Vec<usize>,
}

fn read_i32(buf: &[u8], at: usize, what: &'static str) -> Result<i32> {
    match buf.get(at..at + 4) {
        Some(b) => Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(Error::Truncated { what, offset: at, need: 4, have: buf.len().saturating_sub(at) }),
    }
}

impl<'a> Decoder<'a> {
    fn new(chunk: &'a [u8], h: ChunkHeader, ctx: &ChunkContext) -> Result<Self> {
        let chunk = &chunk[..h.cbytes];
        let plain = h.special()? != SpecialKind::None || h.is_memcpyed() || h.nbytes == 0;
        let mut d = Decoder {
            chunk,
            codec: if plain { None } else { Some(registry::codec(h.compcode()?)?) },
            pipeline: Pipeline::default(),
            dict: None,
            data_start: h.header_len(),
            vl: Vec::new(),
            blockshape: ctx.blockshape.clone(),
            h,
        };
        if plain {
            return Ok(d);
        }
        let blosc1 = d.h.version <= version::BLOSC1;
        d.pipeline =
            Pipeline::new(&d.h.filters, &d.h.filters_meta, usize::from(d.h.typesize), blosc1, &ctx.blockshape)?;
        d.data_start = d.h.header_len() + 4 * d.h.nblocks();
        if d.h.uses_dict() {
            d.load_dict()?;
        }
        if d.h.is_vlblocks() {
            d.index_vl_blocks()?;
        }
        Ok(d)
    }

    fn load_dict(&mut self) -> Result<()> {
        let at = self.data_start;
        let dsize = read_i32(self.chunk, at, "dictionary size")?;
        let dsize = usize::try_from(dsize).ok().filter(|&s| s > 0 && s <= crate::format::MAX_DICT_SIZE).ok_or(
            Error::InvalidHeader { field: "dictionary size", value: dsize.into(), reason: "must be in 1..=32768" },
        )?;
        let bytes = self.chunk.get(at + 4..at + 4 + dsize).ok_or(Error::Truncated {
            what: "dictionary",
            offset: at + 4,
            need: dsize,
            have: self.chunk.len().saturating_sub(at + 4),
        })?;
        let codec = self.codec()?;
        self.dict =
            Some(match codec.codec.dict_kind() {
                Some(DictKind::Zstd) => Dict::Zstd(PreparedDict::for_decompression(bytes).ok_or_else(|| {
                    Error::Codec { codec: codec.name, block: 0, offset: at + 4, detail: "unusable dictionary".into() }
                })?),
                Some(DictKind::Lz4) => Dict::Lz4(bytes),
                None => {
                    return Err(Error::InvalidHeader {
                        field: "blosc2_flags",
                        value: self.h.blosc2_flags.into(),
                        reason: "dictionary flag set for a codec without dictionaries",
                    })
                }
            });
        self.data_start = at + 4 + dsize;
        Ok(())
    }

    /// The codec of a chunk with streams.
    fn codec(&self) -> Result<&'static CodecEntry> {
        self.codec.ok_or(Error::InvalidHeader {
            field: "flags",
            value: self.h.flags.into(),
            reason: "chunk has no streams",
        })
    }

    fn bstart(&self, i: usize) -> Result<usize> {
        let at = self.h.header_len() + 4 * i;
        let v = read_i32(self.chunk, at, "block start")?;
        usize::try_from(v).ok().filter(|&s| s >= self.data_start && s < self.chunk.len()).ok_or_else(|| {
            Error::CorruptBlock {
                block: i,
                offset: at,
                reason: format!("block start {v} outside the data area [{}, {})", self.data_start, self.chunk.len()),
            }
        })
    }

    /// VL blocks: sizes come from the stream prefixes, payload lengths from sorted bstarts.
    fn index_vl_blocks(&mut self) -> Result<()> {
        let n = self.h.nblocks();
        let starts: Vec<usize> = (0..n).map(|i| self.bstart(i)).collect::<Result<_>>()?;
        let mut out_off = 0usize;
        for i in 0..n {
            let end = if i + 1 < n { starts[i + 1] } else { self.chunk.len() };
            if end < starts[i] + 4 {
                return Err(Error::CorruptBlock {
                    block: i,
                    offset: starts[i],
                    reason: "VL block starts are not increasing".into(),
                });
            }
            let size = read_i32(self.chunk, starts[i], "VL block size")?;
            let size = usize::try_from(size).ok().filter(|&s| s > 0).ok_or_else(|| Error::CorruptBlock {
                block: i,
                offset: starts[i],
                reason: format!("VL block size {size} must be positive"),
            })?;
            self.vl.push((out_off, size, starts[i] + 4, end - starts[i] - 4));
            out_off = out_off.checked_add(size).filter(|&o| o <= self.h.nbytes).ok_or_else(|| Error::CorruptBlock {
                block: i,
                offset: starts[i],
                reason: format!("VL block sizes exceed nbytes {}", self.h.nbytes),
            })?;
        }
        if out_off != self.h.nbytes {
            return Err(Error::InvalidHeader {
                field: "nbytes",
                value: self.h.nbytes as i64,
                reason: "differs from the sum of VL block sizes",
            });
        }
        Ok(())
    }

    /// Fill `out` (bytes `lo..lo + out.len()` of the chunk's data) for special, memcpyed and
    /// empty chunks; false otherwise.
    fn decode_plain(&self, lo: usize, out: &mut Out) -> Result<bool> {
        match self.h.special()? {
            SpecialKind::None => {}
            SpecialKind::Zeros | SpecialKind::Uninit => {
                out.fill(0);
                return Ok(true);
            }
            SpecialKind::Nan => {
                let nan: &[u8] = if self.h.typesize == 4 { &f32::NAN.to_le_bytes() } else { &f64::NAN.to_le_bytes() };
                fill_pattern(out, nan, lo);
                return Ok(true);
            }
            SpecialKind::Value => {
                fill_pattern(out, &self.chunk[32..], lo);
                return Ok(true);
            }
        }
        if self.h.is_memcpyed() {
            let start = self.h.header_len() + lo;
            let src = &self.chunk[start..start + out.len()];
            // In pieces: glibc copies a multi-MiB block with a 4 x 64-byte vector loop and
            // 256 KiB with `rep movsb`, which measured ~12% faster on this AMD CPU (perf of
            // both; 256 KiB is also about the block C-Blosc2 copies at a time).
            const PIECE: usize = 256 << 10;
            for (k, piece) in src.chunks(PIECE).enumerate() {
                out.slice(k * PIECE, k * PIECE + piece.len()).copy_from_slice(piece);
            }
            return Ok(true);
        }
        // An empty chunk has nothing to write.
        Ok(self.h.nbytes == 0)
    }

    fn nthreads_for(&self, requested: usize) -> usize {
        requested.clamp(1, self.h.nblocks().max(1))
    }

    /// Decode the whole chunk into `out` (exactly nbytes), writing every byte on success.
    fn decode_all(&self, mut out: Out, nthreads: usize) -> Result<()> {
        let special = self.h.special()? != SpecialKind::None;
        if !special && self.h.is_memcpyed() && nthreads > 1 && out.len() >= 2 * MEMCPY_JOB {
            // A stored (incompressible) chunk is a plain copy: in pieces on the threads, as
            // C-Blosc2 copies it block by block on its threads (one core's copy bandwidth
            // made it 4-7% slower than python-blosc2's with 2 threads).
            let mut jobs = Vec::with_capacity(out.len().div_ceil(MEMCPY_JOB));
            let (mut lo, mut rest) = (0, out);
            while rest.len() > 0 {
                let take = MEMCPY_JOB.min(rest.len());
                let (piece, tail) = rest.split_at(take);
                jobs.push((lo, piece));
                lo += MEMCPY_JOB;
                rest = tail;
            }
            map_jobs(jobs, nthreads, |(lo, mut piece)| self.decode_plain(lo, &mut piece))?;
            return Ok(());
        }
        if special || self.h.is_memcpyed() || self.h.nbytes == 0 {
            self.decode_plain(0, &mut out)?;
            return Ok(());
        }
        let nthreads = self.nthreads_for(nthreads);
        let mut blocks = self.split_blocks(out).into_iter();
        let Some(first) = blocks.next() else { return Ok(()) };
        if self.pipeline.has_delta() {
            // Block 0 must be completely decoded before any block that references it
            // (C-Blosc2 pitfall 1); a failure here stops everything (pitfall 2). It is read
            // back, so it is zeroed first (one block, DELTA chunks only).
            let first = first.zeroed();
            with_scratch(|s| self.decode_block(0, Out::init(first), &[], s))?;
            let first: &[u8] = first;
            let rest = blocks.enumerate().map(|(i, b)| (i + 1, b));
            return self.decode_blocks(rest, first, nthreads);
        }
        self.decode_blocks(std::iter::once(first).chain(blocks).enumerate(), &[], nthreads)
    }

    /// Decode the numbered blocks, serially or on `nthreads` workers.
    fn decode_blocks<'o>(
        &self,
        blocks: impl Iterator<Item = (usize, Out<'o>)>,
        block0: &[u8],
        nthreads: usize,
    ) -> Result<()> {
        if nthreads == 1 {
            return with_scratch(|s| blocks.into_iter().try_for_each(|(i, b)| self.decode_block(i, b, block0, s)));
        }
        let all: Vec<(usize, Out)> = blocks.collect();
        map_jobs(all, nthreads, |(i, b)| with_scratch(|s| self.decode_block(i, b, block0, s)))?;
        Ok(())
    }

    /// Split the output into the per-block slices.
    fn split_blocks<'o>(&self, mut out: Out<'o>) -> Vec<Out<'o>> {
        let n = self.h.nblocks();
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            let len = if self.h.is_vlblocks() { self.vl[i].1 } else { self.h.block_len(i) };
            let (head, tail) = out.split_at(len);
            v.push(head);
            out = tail;
        }
        v
    }

    fn block_range(&self, i: usize) -> (usize, usize) {
        if self.h.is_vlblocks() {
            (self.vl[i].0, self.vl[i].0 + self.vl[i].1)
        } else {
            (i * self.h.blocksize, i * self.h.blocksize + self.h.block_len(i))
        }
    }

    /// Decode bytes `[lo, hi)` of the chunk, decoding only the blocks involved.
    fn decode_range(&self, lo: usize, hi: usize, out: &mut [u8]) -> Result<()> {
        if lo == hi {
            return Ok(());
        }
        let plain = self.h.special()? != SpecialKind::None || self.h.is_memcpyed();
        let mut s = Scratch::default();
        let mut block0 = Vec::new();
        if !plain && self.pipeline.has_delta() {
            // Blocks > 0 are XORed against block 0 (pitfall 3): decode it first.
            block0.resize(self.block_range(0).1, 0);
            self.decode_block(0, Out::init(&mut block0), &[], &mut s)?;
        }
        self.decode_range_with(lo, hi, out, &block0, &mut s, &mut Vec::new())
    }

    /// `decode_range` with block 0 already decoded (DELTA chunks, else empty) and the
    /// caller's scratch buffers.
    fn decode_range_with(
        &self,
        lo: usize,
        hi: usize,
        out: &mut [u8],
        block0: &[u8],
        s: &mut Scratch,
        tmp: &mut Vec<u8>,
    ) -> Result<()> {
        if lo == hi {
            return Ok(());
        }
        if self.h.special()? != SpecialKind::None || self.h.is_memcpyed() {
            self.decode_plain(lo, &mut Out::init(out))?;
            return Ok(());
        }
        // Fixed-size blocks: go straight to the ones holding [lo, hi).
        let candidates = if self.h.is_vlblocks() || self.h.blocksize == 0 {
            0..self.h.nblocks()
        } else {
            lo / self.h.blocksize..((hi - 1) / self.h.blocksize + 1).min(self.h.nblocks())
        };
        for i in candidates {
            let (b_lo, b_hi) = self.block_range(i);
            if b_hi <= lo || b_lo >= hi {
                continue;
            }
            let (c_lo, c_hi) = (lo.max(b_lo), hi.min(b_hi));
            let dst = &mut out[c_lo - lo..c_hi - lo];
            if i == 0 && !block0.is_empty() {
                dst.copy_from_slice(&block0[c_lo - b_lo..c_hi - b_lo]);
            } else if c_lo == b_lo && c_hi == b_hi {
                self.decode_block(i, Out::init(dst), block0, s)?;
            } else {
                tmp.resize(b_hi - b_lo, 0);
                self.decode_block(i, Out::init(tmp), block0, s)?;
                dst.copy_from_slice(&tmp[c_lo - b_lo..c_hi - b_lo]);
            }
        }
        Ok(())
    }

    /// Decode block `i` into `dst` (its exact size), writing every byte on success.
    /// `block0` = decoded block 0 (DELTA).
    fn decode_block(&self, i: usize, mut dst: Out, block0: &[u8], s: &mut Scratch) -> Result<()> {
        let bsize = dst.len();
        if let Some(e) = self.pipeline.only_shuffle() {
            if !self.h.is_vlblocks() && self.nstreams(i, bsize) == e && shuffle::rows_supported(e) {
                return self.decode_block_rows(i, dst, e, s);
            }
        }
        if let Some((e, v1)) = self.pipeline.bytedelta_then_shuffle() {
            let nstreams = self.nstreams(i, bsize);
            let rows_fit = nstreams == e || (nstreams == 1 && bsize.is_multiple_of(e));
            if !self.h.is_vlblocks() && rows_fit && shuffle::rows_supported(e) {
                return self.decode_block_rows_bytedelta(i, dst, e, v1, s);
            }
        }
        let direct = self.pipeline.backward_is_identity();
        let mut scratch;
        let target = if direct {
            dst.reborrow()
        } else {
            grow_to(&mut s.a, bsize);
            scratch = Out::init(&mut s.a[..bsize]);
            scratch.reborrow()
        };
        let mut target = target;
        if self.h.is_vlblocks() {
            let (_, _, p, len) = self.vl[i];
            self.decode_stream(i, p, len, &mut target)?;
        } else {
            self.decode_streams(i, &mut target)?;
        }
        if !direct {
            self.pipeline.backward(&mut s.a, &mut s.b, dst, block0, i)?;
        }
        Ok(())
    }

    /// A block split into `e` streams whose only filter is a shuffle of element size `e`:
    /// stream k is byte k of every element. Decoded streams land in scratch, raw ones are read
    /// in place from the chunk, and one unshuffle pass interleaves them into `dst` (no copy
    /// of raw streams into scratch first).
    fn decode_block_rows(&self, i: usize, mut dst: Out, e: usize, s: &mut Scratch) -> Result<()> {
        let bsize = dst.len();
        self.with_block_rows(i, bsize, e, s, |rows, _| shuffle::unshuffle_rows(rows, &mut dst))
    }

    /// A block (split into `e` streams, or one stream of a whole number of elements) whose
    /// filters are SHUFFLE by `e` then BYTEDELTA over `e` streams: the shuffled rows (as in
    /// [`Self::decode_block_rows`]) are summed and interleaved into `dst` in one pass over
    /// L1-sized tiles, instead of a bytedelta pass over the whole block into a second
    /// scratch buffer followed by an unshuffle pass.
    fn decode_block_rows_bytedelta(&self, i: usize, mut dst: Out, e: usize, v1: bool, s: &mut Scratch) -> Result<()> {
        let bsize = dst.len();
        self.with_block_rows(i, bsize, e, s, |rows, tile| bytedelta::decode_unshuffle_rows(rows, v1, tile, &mut dst))
    }

    /// Decode block `i` (`bsize` bytes) as its `e` shuffled rows and call `f` with them and a
    /// spare scratch buffer. Split into `e` streams: coded streams are decoded into scratch,
    /// streams stored raw are read in place from the chunk, runs of one byte come from the
    /// per-thread cache (no fill); one stream (of whole elements): the decoded block is the
    /// rows one after another.
    fn with_block_rows<R>(
        &self,
        i: usize,
        bsize: usize,
        e: usize,
        s: &mut Scratch,
        f: impl FnOnce(&[&[u8]], &mut Vec<u8>) -> R,
    ) -> Result<R> {
        grow_to(&mut s.a, bsize);
        let mut raw: [Row<'a>; shuffle::MAX_ROWS] = [Row::Decoded; shuffle::MAX_ROWS];
        if self.nstreams(i, bsize) == e {
            self.decode_streams_raw(i, &mut Out::init(&mut s.a[..bsize]), Some(&mut raw[..e]))?;
        } else {
            self.decode_streams(i, &mut Out::init(&mut s.a[..bsize]))?;
        }
        let n = bsize / e;
        for r in &raw[..e] {
            if let Row::Run(v) = *r {
                s.run_row(v, n);
            }
        }
        let Scratch { a, b, runs, .. } = s;
        let run = |v: u8| runs.iter().find(|r| r.0 == v).map_or(&[][..], |r| &r.1[..n]);
        let mut rows: [&[u8]; shuffle::MAX_ROWS] = [&[]; shuffle::MAX_ROWS];
        for (k, row) in rows[..e].iter_mut().enumerate() {
            *row = match raw[k] {
                Row::Stored(p) => p,
                Row::Run(v) => run(v),
                Row::Decoded => &a[k * n..(k + 1) * n],
            };
        }
        Ok(f(&rows[..e], b))
    }

    fn nstreams(&self, i: usize, bsize: usize) -> usize {
        let ts = usize::from(self.h.typesize);
        let leftover = bsize < self.h.blocksize;
        if self.h.dont_split() || leftover {
            return 1;
        }
        if self.h.version <= version::BLOSC1 && (ts > 16 || self.h.blocksize / ts < 128) {
            // c-blosc <= 1.10 decided splitting implicitly (format spec 1.10).
            return 1;
        }
        let _ = i;
        ts
    }

    /// Decode the streams of block `i`, writing every byte of `dst` on success.
    fn decode_streams(&self, i: usize, dst: &mut Out) -> Result<()> {
        self.decode_streams_raw(i, dst, None)
    }

    /// [`Self::decode_streams`]; with `raw`, streams stored raw or as a run of one byte are
    /// not written into `dst` (their bytes there stay unwritten): `raw[k]` says where stream k
    /// is instead.
    fn decode_streams_raw(&self, i: usize, dst: &mut Out, mut raw: Option<&mut [Row<'a>]>) -> Result<()> {
        let bsize = dst.len();
        let nstreams = self.nstreams(i, bsize);
        if !bsize.is_multiple_of(nstreams) {
            return Err(Error::CorruptBlock {
                block: i,
                offset: 0,
                reason: format!("block of {bsize} bytes cannot hold {nstreams} equal streams"),
            });
        }
        let neblock = bsize / nstreams;
        let mut pos = self.bstart(i)?;
        for k in 0..nstreams {
            let mut out = dst.slice(k * neblock, (k + 1) * neblock);
            let csize = read_i32(self.chunk, pos, "stream size")?;
            pos += 4;
            if csize == 0 {
                match raw.as_deref_mut() {
                    Some(r) => r[k] = Row::Run(0),
                    None => out.fill(0),
                }
            } else if csize < 0 {
                let token = *self.chunk.get(pos).ok_or(Error::Truncated {
                    what: "run token",
                    offset: pos,
                    need: 1,
                    have: 0,
                })?;
                if token & 1 == 0 {
                    return Err(Error::CorruptBlock {
                        block: i,
                        offset: pos,
                        reason: format!("unsupported run token {token:#04x}"),
                    });
                }
                // A run stands for one byte value, 1..=255 (-csize); C-Blosc2 refuses
                // anything beyond that (BLOSC2_ERROR_RUN_LENGTH) rather than keeping its low byte.
                let Ok(v) = u8::try_from(csize.unsigned_abs()) else {
                    return Err(Error::CorruptBlock {
                        block: i,
                        offset: pos - 4,
                        reason: format!("run stream size {csize} is not -1..-255 (one byte value)"),
                    });
                };
                match raw.as_deref_mut() {
                    Some(r) => r[k] = Row::Run(v),
                    None => out.fill(v),
                }
                pos += 1;
            } else {
                let len = csize as usize;
                match raw.as_deref_mut() {
                    Some(r) if len == neblock => r[k] = Row::Stored(self.payload(pos, len)?),
                    _ => self.decode_stream(i, pos, len, &mut out)?,
                }
                pos += len;
            }
        }
        Ok(())
    }

    /// Walk every stream prefix (no decoding) and reject payloads that cannot possibly expand
    /// to their stream's size, so a chunk lying about nbytes is refused before the output is
    /// allocated. Zero and run streams legitimately stand for any size.
    fn check_stream_sizes(&self) -> Result<()> {
        // An empty chunk has no streams whatever its flags say (as `decompress_into` sees it).
        if self.h.is_vlblocks() || self.h.special()? != SpecialKind::None || self.h.is_memcpyed() || self.h.nbytes == 0
        {
            return Ok(());
        }
        let codec = self.codec()?;
        for i in 0..self.h.nblocks() {
            let bsize = self.h.block_len(i);
            let nstreams = self.nstreams(i, bsize);
            let neblock = bsize / nstreams;
            let mut pos = self.bstart(i)?;
            for _ in 0..nstreams {
                let csize = read_i32(self.chunk, pos, "stream size")?;
                pos += 4;
                if csize < 0 {
                    pos += 1;
                } else if csize > 0 {
                    let len = csize as usize;
                    if len != neblock && codec.codec.max_expansion(len).is_some_and(|max| max < neblock) {
                        return Err(Error::CorruptBlock {
                            block: i,
                            offset: pos - 4,
                            reason: format!("a {len}-byte {} stream cannot decode to {neblock} bytes", codec.name),
                        });
                    }
                    pos = pos.saturating_add(len);
                }
            }
        }
        Ok(())
    }

    /// The stream payload at `[pos, pos + len)`.
    fn payload(&self, pos: usize, len: usize) -> Result<&'a [u8]> {
        self.chunk.get(pos..pos.saturating_add(len)).ok_or(Error::Truncated {
            what: "stream",
            offset: pos,
            need: len,
            have: self.chunk.len().saturating_sub(pos),
        })
    }

    /// Decode the payload at `[pos, pos + len)` into `out` (raw when it has out's length),
    /// writing every byte of `out` on success.
    fn decode_stream(&self, i: usize, pos: usize, len: usize, out: &mut Out) -> Result<()> {
        let payload = self.payload(pos, len)?;
        if len == out.len() {
            out.copy_from_slice(payload);
            return Ok(());
        }
        let codec = self.codec()?;
        let p = CodecParams {
            clevel: 0,
            meta: self.h.compcode_meta,
            typesize: usize::from(self.h.typesize),
            block: i,
            dict: self.dict.as_ref(),
            blockshape: &self.blockshape,
            blosc1: false,
        };
        // Built-in codecs (IDs below 32) decode into `out` directly; others get it zeroed.
        let r = match crate::codec::builtin::decode_out(codec.id, &p, payload, out) {
            Some(r) if codec.id < registry::FIRST_GLOBAL_ID => r,
            _ => codec.codec.decode(&p, payload, out.reborrow().zeroed()),
        };
        r.map_err(|detail| Error::Codec { codec: codec.name, block: i, offset: pos, detail })
    }
}

/// Where one stream of a split block is, for the unshuffle that reads the streams in place.
#[derive(Clone, Copy)]
enum Row<'a> {
    /// Decoded into the scratch buffer, at the stream's place.
    Decoded,
    /// Stored raw: its payload in the chunk.
    Stored(&'a [u8]),
    /// One byte repeated (a zero or run stream).
    Run(u8),
}

/// Fill `out` with `pattern` repeated, as if the repetition started at byte `phase`... of the
/// chunk (so partial reads stay aligned to the value).
fn fill_pattern(out: &mut Out, pattern: &[u8], phase: usize) {
    let w = pattern.len();
    for k in 0..out.len() {
        out.set(k, pattern[(phase + k) % w]);
    }
}

/// Decode blocks of a VL-block chunk separately: all of them, or only block `only`.
pub(crate) fn decompress_vl(chunk: &[u8], only: Option<usize>, nthreads: usize) -> Result<Vec<Vec<u8>>> {
    let d = Decoder::new(chunk, ChunkHeader::parse(chunk)?, ChunkContext::NONE)?;
    if !d.h.is_vlblocks() {
        return Err(Error::InvalidHeader {
            field: "blosc2_flags2",
            value: d.h.flags2.into(),
            reason: "not a VL-block chunk",
        });
    }
    let indices: Vec<usize> = match only {
        Some(i) if i >= d.vl.len() => return Err(Error::OutOfRange { start: i, end: i + 1, nitems: d.vl.len() }),
        Some(i) => vec![i],
        None => (0..d.vl.len()).collect(),
    };
    let one =
        |i: usize| -> Result<Vec<u8>> { filled_vec(d.vl[i].1, |out| with_scratch(|s| d.decode_block(i, out, &[], s))) };
    map_jobs(indices, nthreads, one)
}
