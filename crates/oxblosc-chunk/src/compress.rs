//! Chunk encoding: Blosc2 (version 5, 32-byte header, as python-blosc2 writes) and Blosc1
//! (version 2, 16-byte header, for zarr/numcodecs and HDF5 filter 32001 readers).
//!
//! Follows format spec 1.17. Blocks are always placed in order and every stream gets the
//! same budget (its own size), so serial and parallel output are byte-identical.

use std::mem::MaybeUninit;

use crate::blocks::{compute_blocksize, compute_blocksize_blosc1, split_block, split_block_blosc1};
use crate::codec::{zstd, Dict};
use crate::format::{
    blosc2_flags, compcode_to_format, flags, version, ChunkHeader, SpecialKind, BLOSC1_MIN_BUFFERSIZE, EXT_HEADER_LEN,
    MAX_BUFFERSIZE, MAX_DICT_SIZE, MAX_HEADER_TYPESIZE, MIN_BUFFERSIZE, MIN_HEADER_LEN, MIN_USEFUL_DICT,
};
use crate::parallel::{front_and_back, with_scratch, Scratch};
use crate::params::CParams;
use crate::pipeline::Pipeline;
use crate::registry::{self, ChunkContext, CodecEntry, CodecParams, DictKind};
use crate::uninit::Prefix;
use crate::{filter, Error, Result};

/// Staging areas larger than this are not kept between calls.
const STAGING_KEEP_LIMIT: usize = 256 << 20;

thread_local! {
    static STAGING: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// What every block of one chunk is encoded from (see `Encoder::place_block`).
struct PlaceArgs<'a> {
    /// The chunk's bytes, or its filtered bytes when a dictionary needed them first.
    input: &'a [u8],
    src: &'a [u8],
    prefiltered: bool,
    dict: Option<&'a Dict<'a>>,
}

/// Largest chunk `compress` can produce for `nbytes` of input (Blosc2).
pub fn max_compressed_len(nbytes: usize) -> usize {
    nbytes + EXT_HEADER_LEN
}

/// Compress `src` into a new Blosc2 chunk.
pub fn compress(src: &[u8], cp: &CParams) -> Result<Vec<u8>> {
    compress_with(src, cp, ChunkContext::NONE)
}

/// [`compress`] for a chunk of a container plugins need to know about (b2nd arrays).
pub fn compress_with(src: &[u8], cp: &CParams, ctx: &ChunkContext) -> Result<Vec<u8>> {
    let mut out = vec![0u8; max_compressed_len(src.len())];
    let n = compress_into_with(src, &mut out, cp, ctx)?;
    out.truncate(n);
    Ok(out)
}

/// Compress `src` into `dst` as a Blosc2 chunk; returns the chunk length.
pub fn compress_into(src: &[u8], dst: &mut [u8], cp: &CParams) -> Result<usize> {
    compress_into_with(src, dst, cp, ChunkContext::NONE)
}

/// [`compress_into`] with the container context of [`compress_with`].
pub fn compress_into_with(src: &[u8], dst: &mut [u8], cp: &CParams, ctx: &ChunkContext) -> Result<usize> {
    Encoder::new(src.len(), cp, Format::Blosc2, ctx)?.run(src, &mut Prefix::init(dst))
}

/// [`compress_into`] into bytes that need not be initialised (a fresh Python `bytes` of
/// [`max_compressed_len`] bytes): the first `n` bytes, `n` returned, hold the chunk. Only
/// bytes the chunk's blocks may occupy are touched, none zero-filled ahead of time.
pub fn compress_into_uninit(src: &[u8], dst: &mut [MaybeUninit<u8>], cp: &CParams) -> Result<usize> {
    Encoder::new(src.len(), cp, Format::Blosc2, ChunkContext::NONE)?.run(src, &mut Prefix::uninit(dst))
}

/// Compress `src` into a new Blosc1 (version 2) chunk. Only SHUFFLE or BITSHUFFLE filters.
pub fn compress_blosc1(src: &[u8], cp: &CParams) -> Result<Vec<u8>> {
    let mut out = vec![0u8; max_blosc1_len(src.len())];
    let n = compress_blosc1_into(src, &mut out, cp)?;
    out.truncate(n);
    Ok(out)
}

/// [`compress_blosc1`] into `dst` (at least [`max_blosc1_len`] bytes: a caller that reuses
/// one buffer for many chunks avoids faulting in a fresh one per chunk); returns the length.
pub fn compress_blosc1_into(src: &[u8], dst: &mut [u8], cp: &CParams) -> Result<usize> {
    Encoder::new(src.len(), cp, Format::Blosc1, ChunkContext::NONE)?.run(src, &mut Prefix::init(dst))
}

/// [`compress_blosc1_into`] into bytes that need not be initialised (see
/// [`compress_into_uninit`]); `dst` needs [`max_blosc1_len`] bytes.
pub fn compress_blosc1_into_uninit(src: &[u8], dst: &mut [MaybeUninit<u8>], cp: &CParams) -> Result<usize> {
    Encoder::new(src.len(), cp, Format::Blosc1, ChunkContext::NONE)?.run(src, &mut Prefix::uninit(dst))
}

/// What [`compress_blosc1_or_raw`] left in `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blosc1Chunk {
    /// The whole chunk, this long.
    Encoded(usize),
    /// Only the 16-byte header of a chunk stored raw: the chunk is that header then `src`.
    Raw,
}

/// [`compress_blosc1_into`], except that a chunk stored raw (incompressible data) is not
/// copied into `dst`: a caller that copies the chunk out anyway (into a Python `bytes`)
/// then copies `src` once instead of twice. `dst` still needs [`max_blosc1_len`] bytes.
pub fn compress_blosc1_or_raw(src: &[u8], dst: &mut [u8], cp: &CParams) -> Result<Blosc1Chunk> {
    let mut enc = Encoder::new(src.len(), cp, Format::Blosc1, ChunkContext::NONE)?;
    enc.copy_raw = false;
    let n = enc.run(src, &mut Prefix::init(dst))?;
    Ok(if enc.header.flags & flags::MEMCPYED != 0 { Blosc1Chunk::Raw } else { Blosc1Chunk::Encoded(n) })
}

/// What [`compress_or_raw`] left in `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawOr {
    /// The whole chunk, this long.
    Encoded(usize),
    /// Only the header (this long) of a chunk stored raw: the chunk is that header then `src`.
    Raw(usize),
}

/// [`compress_into`], except that a chunk stored raw is not copied into `dst`: a caller
/// that copies the chunk out anyway (into a Python `bytes`) then copies `src` once, where
/// C-Blosc2 copies it twice (streams stored raw, then the whole chunk). `dst` still needs
/// [`max_compressed_len`] bytes.
pub fn compress_or_raw(src: &[u8], dst: &mut [u8], cp: &CParams) -> Result<RawOr> {
    let mut enc = Encoder::new(src.len(), cp, Format::Blosc2, ChunkContext::NONE)?;
    enc.copy_raw = false;
    let n = enc.run(src, &mut Prefix::init(dst))?;
    Ok(if enc.header.flags & flags::MEMCPYED != 0 { RawOr::Raw(enc.hlen()) } else { RawOr::Encoded(n) })
}

/// Largest Blosc1 chunk `nbytes` of input can become.
pub fn max_blosc1_len(nbytes: usize) -> usize {
    nbytes + MIN_HEADER_LEN
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Blosc1,
    Blosc2,
}

/// A compression plan for one buffer: geometry, header and pipeline, decided up front.
struct Encoder {
    cp: CParams,
    /// The codec, looked up once per chunk.
    codec: &'static CodecEntry,
    format: Format,
    header: ChunkHeader,
    pipeline: Pipeline,
    nbytes: usize,
    blocksize: usize,
    nblocks: usize,
    split: bool,
    memcpy: bool,
    blockshape: Vec<usize>,
    /// Copy `src` behind the header of a chunk stored raw (else only the header is written).
    copy_raw: bool,
}

impl Encoder {
    fn new(nbytes: usize, cp: &CParams, format: Format, ctx: &ChunkContext) -> Result<Self> {
        cp.validate()?;
        let codec = registry::codec(cp.codec)?;
        if nbytes > MAX_BUFFERSIZE {
            return Err(Error::InputTooLarge(nbytes));
        }
        let ts = cp.typesize;
        let hts = if ts > MAX_HEADER_TYPESIZE { 1 } else { ts };
        let has_shuffle = cp.has_filter(filter::SHUFFLE);
        let (blocksize, split, memcpy, hlen);
        match format {
            Format::Blosc2 => {
                let split_whole = split_block(&codec.tuning, cp.clevel, has_shuffle, ts, nbytes, cp.splitmode);
                blocksize = compute_blocksize(&codec.tuning, cp.clevel, ts, nbytes, cp.blocksize, split_whole);
                // A block smaller than one element cannot be cut into `typesize` streams
                // (a forced blocksize < typesize with ALWAYS_SPLIT used to panic on
                // zero-length streams; C-Blosc2 writes a corrupt chunk): never split it.
                split = blocksize >= hts
                    && split_block(&codec.tuning, cp.clevel, has_shuffle, hts, blocksize, cp.splitmode);
                memcpy = cp.clevel == 0 || nbytes < MIN_BUFFERSIZE;
                hlen = EXT_HEADER_LEN;
            }
            Format::Blosc1 => {
                if let Some(slot) = cp
                    .filters
                    .iter()
                    .position(|&f| !matches!(f, filter::NOFILTER | filter::SHUFFLE | filter::BITSHUFFLE))
                {
                    return Err(Error::InvalidParam {
                        name: "filters",
                        reason: format!(
                            "Blosc1 chunks carry only shuffle or bitshuffle (slot {slot} holds {})",
                            cp.filters[slot]
                        ),
                    });
                }
                if cp.use_dict {
                    return Err(Error::InvalidParam {
                        name: "use_dict",
                        reason: "Blosc1 chunks have no dictionaries".into(),
                    });
                }
                let judged_on = if cp.blocksize > 0 { cp.blocksize.max(128) } else { nbytes };
                let split_first = split_block_blosc1(&codec.tuning, hts, judged_on);
                blocksize = compute_blocksize_blosc1(&codec.tuning, cp.clevel, ts, nbytes, cp.blocksize, split_first);
                split = split_block_blosc1(&codec.tuning, hts, blocksize);
                memcpy = cp.clevel == 0 || nbytes < BLOSC1_MIN_BUFFERSIZE;
                hlen = MIN_HEADER_LEN;
            }
        }
        let nblocks = if nbytes == 0 { 0 } else { nbytes.div_ceil(blocksize) };
        let mut fl = compcode_to_format(cp.codec) << flags::CODEC_SHIFT;
        if !split {
            fl |= flags::DONT_SPLIT;
        }
        let mut filters = cp.filters;
        let mut filters_meta = cp.filters_meta;
        match format {
            Format::Blosc2 => {
                fl |= flags::EXTENDED;
                if cp.has_filter(filter::DELTA) {
                    fl |= flags::DELTA;
                }
            }
            Format::Blosc1 => {
                // The pipeline lives in the flag bits: one transform in slot 5.
                if has_shuffle {
                    fl |= flags::SHUFFLE;
                    filters = [0, 0, 0, 0, 0, filter::SHUFFLE];
                } else if cp.has_filter(filter::BITSHUFFLE) {
                    fl |= flags::BITSHUFFLE;
                    filters = [0, 0, 0, 0, 0, filter::BITSHUFFLE];
                } else {
                    filters = [0; 6];
                }
                filters_meta = [0; 6];
            }
        }
        let header = ChunkHeader {
            version: if format == Format::Blosc2 { version::BLOSC2 } else { version::BLOSC1 },
            versionlz: codec.codec.version(),
            flags: fl,
            typesize: hts as u8,
            nbytes,
            blocksize,
            cbytes: 0,
            filters,
            filters_meta,
            udcompcode: cp.codec,
            compcode_meta: cp.codec_meta,
            flags2: 0,
            blosc2_flags: 0,
        };
        debug_assert_eq!(header.header_len(), hlen);
        let pipeline = Pipeline::new(&filters, &filters_meta, hts, format == Format::Blosc1, &ctx.blockshape)?;
        Ok(Encoder {
            cp: cp.clone(),
            codec,
            format,
            header,
            pipeline,
            nbytes,
            blocksize,
            nblocks,
            split,
            memcpy,
            blockshape: ctx.blockshape.clone(),
            copy_raw: true,
        })
    }

    fn hlen(&self) -> usize {
        self.header.header_len()
    }

    fn run(&mut self, src: &[u8], dst: &mut Prefix<'_>) -> Result<usize> {
        debug_assert_eq!(src.len(), self.nbytes);
        let hlen = self.hlen();
        if dst.len() < hlen {
            return Err(Error::OutputTooSmall { need: hlen, have: dst.len() });
        }
        if self.memcpy || hlen + 4 * self.nblocks > dst.len() {
            if self.memcpy && self.format == Format::Blosc2 {
                // What C-Blosc2 writes for chunks stored raw from the start.
                self.header.flags = flags::EXTENDED | flags::MEMCPYED;
            }
            return self.write_memcpy(src, dst);
        }
        match self.encode_blocks(src, dst)? {
            Some(n) => Ok(n),
            None => self.write_memcpy(src, dst),
        }
    }

    fn write_memcpy(&mut self, src: &[u8], dst: &mut Prefix<'_>) -> Result<usize> {
        let hlen = self.hlen();
        let total = hlen + src.len();
        if dst.len() < total {
            return Err(Error::OutputTooSmall { need: total, have: dst.len() });
        }
        self.header.flags |= flags::MEMCPYED;
        self.header.blosc2_flags &= !blosc2_flags::USE_DICT;
        self.header.cbytes = total;
        self.header.write(dst.upto(hlen));
        if self.copy_raw {
            dst.write_at(hlen, src);
        }
        Ok(total)
    }

    /// Largest encoding of a block: every stream stored raw behind its 4-byte size.
    fn worst_block_len(&self, bsize: usize) -> usize {
        4 * self.nstreams(bsize) + bsize
    }

    fn nstreams(&self, bsize: usize) -> usize {
        if self.split && bsize == self.blocksize {
            usize::from(self.header.typesize)
        } else {
            1
        }
    }

    /// Compress every block; `None` when the result would not fit (store raw instead).
    fn encode_blocks(&mut self, src: &[u8], dst: &mut Prefix<'_>) -> Result<Option<usize>> {
        let hlen = self.hlen();
        dst.upto(hlen + 4 * self.nblocks); // header and block starts
        let nthreads = self.cp.nthreads.clamp(1, self.nblocks.max(1));
        // Dictionaries need the whole chunk filtered first; the dictionary goes after bstarts.
        let filtered;
        let dict_bytes = if self.cp.use_dict && self.format == Format::Blosc2 {
            filtered = self.filter_all(src)?;
            self.build_dict(&filtered)
        } else {
            filtered = Vec::new();
            None
        };
        let dict = match (&dict_bytes, self.codec.codec.dict_kind()) {
            (Some(d), Some(DictKind::Zstd)) => zstd::PreparedDict::for_compression(d).map(Dict::Zstd),
            (Some(d), Some(DictKind::Lz4)) => Some(Dict::Lz4(d)),
            _ => None,
        };
        let mut pos = hlen + 4 * self.nblocks;
        if let Some(d) = &dict_bytes {
            if dict.is_some() {
                let end = pos + 4 + d.len();
                if end > dst.len() {
                    return Ok(None);
                }
                dst.write_at(pos, &(d.len() as i32).to_le_bytes());
                dst.write_at(pos + 4, d);
                pos = end;
                self.header.blosc2_flags |= blosc2_flags::USE_DICT;
            }
        }
        let input: &[u8] = if dict.is_some() { &filtered } else { src };
        let prefiltered = dict.is_some();
        let mut all_zero_runs = dict.is_none() && self.format == Format::Blosc2;
        let bs = self.blocksize;
        // Streams stored raw straight from `src` (no filter), copied in only once the chunk is
        // known not to end memcpyed: (offset in dst, offset in src, length).
        let mut deferred: Vec<(usize, usize, usize)> = Vec::new();
        // Each block the caller encodes in order goes straight into `dst` (`place_block`);
        // with more threads, helpers take blocks from the back into slots of a staging area
        // reused across calls, packed after the caller's once the two ends meet.
        let place = PlaceArgs { input, src, prefiltered, dict: dict.as_ref() };
        if nthreads == 1 {
            let ok = with_scratch(|s| -> Result<bool> {
                for i in 0..self.nblocks {
                    match self.place_block(i, &place, dst, pos, s, &mut deferred)? {
                        Some((n, zero)) => {
                            all_zero_runs &= zero;
                            pos += n;
                        }
                        None => return Ok(false),
                    }
                }
                Ok(true)
            })?;
            if !ok {
                return Ok(None);
            }
        } else {
            let slot = self.worst_block_len(bs);
            let results = STAGING.with(|cell| -> Result<Option<(usize, bool)>> {
                let mut staging = cell.take();
                staging.resize(slot * self.nblocks, 0);
                let slots: Vec<&mut [u8]> = staging.chunks_mut(slot).collect();
                let mut at = pos;
                let mut zero_runs = all_zero_runs;
                let run = front_and_back(
                    slots,
                    nthreads,
                    |i| {
                        let placed = with_scratch(|s| self.place_block(i, &place, dst, at, s, &mut deferred))?;
                        let Some((n, zero)) = placed else { return Ok(false) };
                        at += n;
                        zero_runs &= zero;
                        Ok(true)
                    },
                    |i, out| {
                        let block = &input[i * bs..((i + 1) * bs).min(self.nbytes)];
                        with_scratch(|s| self.encode_block(i, block, src, prefiltered, dict.as_ref(), out, s, None))
                    },
                )?;
                let packed = if run.stopped {
                    None
                } else {
                    // A chunk that would be larger than `dst` or than storing raw ends memcpyed
                    // (below): known from the sizes alone, so the staged blocks are not packed.
                    let total = run.back.iter().fold(at, |t, &(n, _)| t.saturating_add(n));
                    let mut packed = (total <= dst.len().min(self.nbytes + hlen)).then_some((at, zero_runs));
                    for (k, &(n, zero)) in run.back.iter().enumerate() {
                        let Some((p, z)) = packed else { break };
                        let i = run.front + k;
                        dst.write_at(hlen + 4 * i, &(p as i32).to_le_bytes());
                        dst.write_at(p, &staging[i * slot..i * slot + n]);
                        packed = Some((p + n, z && zero));
                    }
                    packed
                };
                if staging.capacity() <= STAGING_KEEP_LIMIT {
                    cell.set(staging);
                }
                Ok(packed)
            })?;
            match results {
                Some((p, z)) => {
                    pos = p;
                    all_zero_runs = z;
                }
                None => return Ok(None),
            }
        }
        if pos > self.nbytes + hlen {
            // Larger than storing raw: C-Blosc2 stores such chunks memcpyed.
            return Ok(None);
        }
        for &(at, from, len) in &deferred {
            dst.write_at(at, &src[from..from + len]);
        }
        if all_zero_runs && self.nblocks > 0 {
            // Every stream was a zero run: a 32-byte special-zero chunk says the same.
            self.header.blosc2_flags |= (SpecialKind::Zeros as u8) << blosc2_flags::SPECIAL_SHIFT;
            pos = EXT_HEADER_LEN;
        }
        self.header.cbytes = pos;
        self.header.write(dst.upto(hlen));
        Ok(Some(pos))
    }

    /// Forward-filter every block into one buffer (for dictionary training).
    fn filter_all(&self, src: &[u8]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; src.len()];
        let mut s = Scratch::default(); // once per chunk, only with dictionaries
        let bs = self.blocksize;
        for (i, o) in out.chunks_mut(bs).enumerate() {
            let block = &src[i * bs..i * bs + o.len()];
            o.copy_from_slice(self.pipeline.forward(block, &src[..bs], i, &mut s.a, &mut s.b)?);
        }
        Ok(out)
    }

    /// The chunk dictionary of format spec 1.11, or None when too small to help.
    fn build_dict(&self, filtered: &[u8]) -> Option<Vec<u8>> {
        let kind = self.codec.codec.dict_kind()?;
        let nbytes = filtered.len();
        let max = MAX_DICT_SIZE.min(nbytes / 20);
        let per_block = if self.split { usize::from(self.header.typesize) } else { 1 };
        let nsamples = (self.nblocks * per_block).max(8);
        let sample = nbytes / nsamples / 16;
        if max < MIN_USEFUL_DICT || sample == 0 {
            return None;
        }
        if kind == DictKind::Zstd {
            zstd::train(&filtered[..nsamples * sample], &vec![sample; nsamples], max)
        } else {
            Some(filtered[..(nsamples * sample).min(max)].to_vec())
        }
    }

    /// Encode block `i` straight into `dst` at `pos` and record its start; `None` when it
    /// does not fit there (the chunk is then stored raw). Streams stored raw from `src` are
    /// pushed to `deferred` with their place in `dst` (see [`Self::encode_block`]).
    fn place_block(
        &self,
        i: usize,
        a: &PlaceArgs<'_>,
        dst: &mut Prefix<'_>,
        pos: usize,
        s: &mut Scratch,
        deferred: &mut Vec<(usize, usize, usize)>,
    ) -> Result<Option<(usize, bool)>> {
        let hlen = self.hlen();
        let bs = self.blocksize;
        let block = &a.input[i * bs..((i + 1) * bs).min(self.nbytes)];
        let worst = self.worst_block_len(block.len());
        // The bytes this block may occupy (zeroed first where never written: see `Prefix`).
        let dst = dst.upto((pos + worst).min(dst.len()));
        dst[hlen + 4 * i..hlen + 4 * i + 4].copy_from_slice(&(pos as i32).to_le_bytes());
        if dst.len() - pos >= worst {
            let first = deferred.len();
            let r = self.encode_block(
                i,
                block,
                a.src,
                a.prefiltered,
                a.dict,
                &mut dst[pos..pos + worst],
                s,
                Some(deferred),
            )?;
            for d in &mut deferred[first..] {
                d.0 += pos;
            }
            return Ok(Some(r));
        }
        // Near the end of `dst`: encode aside, then see whether it fits.
        let mut tmp = std::mem::take(&mut s.c);
        tmp.resize(worst, 0);
        let r = self.encode_block(i, block, a.src, a.prefiltered, a.dict, &mut tmp, s, None);
        let fits = matches!(r, Ok((n, _)) if pos + n <= dst.len());
        if fits {
            let n = r.as_ref().map_or(0, |r| r.0);
            dst[pos..pos + n].copy_from_slice(&tmp[..n]);
        }
        s.c = tmp;
        let r = r?;
        Ok(fits.then_some(r))
    }

    /// Encode block `i` into `out`, returning (bytes written, every stream a zero run).
    /// With `deferred`, a stream stored raw that is a slice of `src` is not copied: its
    /// (offset in `out`, offset in `src`, length) is pushed for the caller to copy.
    #[allow(clippy::too_many_arguments)]
    fn encode_block(
        &self,
        i: usize,
        block: &[u8],
        src: &[u8],
        prefiltered: bool,
        dict: Option<&Dict>,
        out: &mut [u8],
        s: &mut Scratch,
        mut deferred: Option<&mut Vec<(usize, usize, usize)>>,
    ) -> Result<(usize, bool)> {
        let filtered: &[u8] = if prefiltered {
            block
        } else {
            let block0 = &src[..self.blocksize.min(src.len())];
            self.pipeline.forward(block, block0, i, &mut s.a, &mut s.b)?
        };
        let nstreams = self.nstreams(block.len());
        let neblock = block.len() / nstreams;
        let runs = self.format == Format::Blosc2;
        let mut pos = 0;
        let mut all_zero = true;
        let params = CodecParams {
            clevel: self.cp.clevel,
            meta: self.cp.codec_meta,
            typesize: usize::from(self.header.typesize),
            block: i,
            dict,
            blockshape: &self.blockshape,
            blosc1: self.format == Format::Blosc1,
        };
        for stream in filtered.chunks_exact(neblock) {
            if runs {
                let v = stream[0];
                // All bytes equal <=> the stream equals itself shifted by one (a memcmp).
                if stream[1..] == stream[..neblock - 1] {
                    if v == 0 {
                        out[pos..pos + 4].copy_from_slice(&0i32.to_le_bytes());
                        pos += 4;
                    } else {
                        out[pos..pos + 4].copy_from_slice(&(-i32::from(v)).to_le_bytes());
                        out[pos + 4] = 0x01;
                        pos += 5;
                        all_zero = false;
                    }
                    continue;
                }
            }
            all_zero = false;
            let payload = &mut out[pos + 4..pos + 4 + neblock];
            let n = self.codec.codec.encode(&params, stream, payload).map_err(|detail| Error::Encode {
                codec: self.codec.name,
                block: i,
                detail,
            })?;
            let n = if n == 0 || n >= neblock {
                // Where the stream's bytes sit inside `src` (address arithmetic only).
                let from = (stream.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize);
                match deferred.as_deref_mut() {
                    Some(list) if from < src.len() && src.len() - from >= neblock => {
                        list.push((pos + 4, from, neblock));
                    }
                    _ => payload.copy_from_slice(stream),
                }
                neblock
            } else {
                n
            };
            out[pos..pos + 4].copy_from_slice(&(n as i32).to_le_bytes());
            pos += 4 + n;
        }
        Ok((pos, all_zero))
    }
}

/// Build a special-value chunk (zeros, NaN, uninit, or a repeated `value`) without data.
pub fn special_chunk(kind: SpecialKind, nbytes: usize, typesize: usize, value: Option<&[u8]>) -> Result<Vec<u8>> {
    if nbytes > MAX_BUFFERSIZE {
        return Err(Error::InputTooLarge(nbytes));
    }
    if typesize == 0 || !nbytes.is_multiple_of(typesize) {
        return Err(Error::InvalidParam {
            name: "nbytes",
            reason: format!("{nbytes} is not a multiple of typesize {typesize}"),
        });
    }
    let body: &[u8] = match (kind, value) {
        (SpecialKind::Value, Some(v)) if v.len() == typesize => v,
        (SpecialKind::Value, _) => {
            return Err(Error::InvalidParam {
                name: "value",
                reason: format!("must hold exactly typesize = {typesize} bytes"),
            })
        }
        (SpecialKind::Nan, _) if typesize != 4 && typesize != 8 => {
            return Err(Error::InvalidParam { name: "typesize", reason: "NaN chunks need typesize 4 or 8".into() })
        }
        (SpecialKind::None, _) => {
            return Err(Error::InvalidParam { name: "kind", reason: "not a special value".into() })
        }
        _ => &[],
    };
    if nbytes == 0 {
        // An empty chunk carries no value; C-Blosc2 rejects an empty repeated-value chunk,
        // so write the plain empty chunk it writes itself.
        return compress(&[], &CParams { typesize, nthreads: 1, clevel: 0, ..CParams::default() });
    }
    let header = ChunkHeader {
        version: version::BLOSC2,
        versionlz: 1,
        flags: flags::EXTENDED,
        typesize: if typesize > MAX_HEADER_TYPESIZE { 1 } else { typesize as u8 },
        nbytes,
        blocksize: nbytes.clamp(1, crate::format::MAX_BLOCKSIZE),
        cbytes: EXT_HEADER_LEN + body.len(),
        filters: [0; 6],
        filters_meta: [0; 6],
        udcompcode: 0,
        compcode_meta: 0,
        flags2: 0,
        blosc2_flags: (kind as u8) << blosc2_flags::SPECIAL_SHIFT,
    };
    let mut out = vec![0u8; header.cbytes];
    header.write(&mut out);
    out[EXT_HEADER_LEN..].copy_from_slice(body);
    Ok(out)
}
