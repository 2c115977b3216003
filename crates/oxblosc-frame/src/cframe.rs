//! Contiguous frames in memory: `to_cframe` / `from_cframe`, and the frame parser shared with
//! frame files and sparse index files (format spec 4.1-4.7).
//!
//! `to_cframe` writes what python-blosc2's `SChunk.to_cframe()` writes: header fields as C-Blosc2
//! fills them (codec_flags = compcode | clevel << 4, other_flags = splitmode - 1, version 2, or 3
//! with the variable / VL-block bits), zero/NaN/uninit chunks as special offsets when the chunk
//! size is fixed (Trap 30), vlmetalayers compressed as Blosc2 chunks with C-Blosc2's default
//! parameters (BloscLZ, clevel 5, typesize 8, shuffle).
//!
//! Reading parses the header, metalayers, trailer and offsets index only; chunks stay where they
//! are until asked for.

use std::sync::{Arc, OnceLock};

use oxblosc_chunk::{CParams, DParams, SpecialKind, SplitMode};

use crate::error::ChunkId;
use crate::header::{self, gflags, FrameHeader, FIXED_LEN, FRAME_CONTIGUOUS};
use crate::offsets::{self, Offset};
use crate::schunk::SChunk;
use crate::slots::Slots;
use crate::storage::{Backing, Source};
use crate::{trailer, Error, Result};

/// The parameters C-Blosc2 compresses vlmetalayer contents with.
pub(crate) fn vlmeta_cparams() -> CParams {
    CParams {
        codec: 0,
        clevel: 5,
        typesize: 8,
        nthreads: 1,
        blocksize: 0,
        splitmode: SplitMode::Auto,
        filters: [0, 0, 0, 0, 0, 1],
        ..CParams::default()
    }
}

/// Largest vlmetalayer content accepted when reading (they are small msgpack values).
pub const MAX_VLMETA_LEN: usize = 256 << 20;

/// What a frame holds besides the chunk bytes.
pub(crate) struct Parsed {
    pub header: FrameHeader,
    pub meta: Vec<(String, Vec<u8>)>,
    pub vlmeta: Vec<(String, Vec<u8>)>,
    pub offsets: Vec<i64>,
    /// Sparse frames: stored index entries past the header's chunk count (entry, chunk file
    /// id), whose chunk files the opener checks are empty (`extra_chunk_error`).
    pub sparse_extra: Vec<(usize, u64)>,
}

/// Parse a frame at `base` in `src`: header, metalayers, trailer, offsets index.
/// `exact` requires `frame_len` to reach the end of `src`.
pub(crate) fn parse(src: &Source, base: u64, sparse: bool, exact: bool) -> Result<Parsed> {
    let avail = src.len().saturating_sub(base);
    let fixed = src.read(base, FIXED_LEN as u64, "frame header")?;
    let h = FrameHeader::parse(&fixed, avail).map_err(|e| shift(e, base))?;
    if exact && h.frame_len != avail {
        return Err(Error::field(
            "frame_len",
            base + 15,
            format!("{} but the buffer holds {avail} bytes from the frame start", h.frame_len),
        ));
    }
    if h.is_sparse() != sparse {
        return Err(Error::field(
            "frame_type",
            base + 26,
            if sparse {
                "expected a sparse frame index (type 1)"
            } else {
                "this is a sparse frame index; open its directory"
            },
        ));
    }
    let hlen = u64::from(h.header_len);
    let head = src.read(base, hlen, "frame header with metalayers")?;
    let meta = header::parse_metalayers(&head).map_err(|e| shift(e, base))?;
    drop(head);
    let tail_pos = base + h.frame_len - trailer::TAIL_LEN as u64;
    let tail = src.read(tail_pos, trailer::TAIL_LEN as u64, "trailer")?;
    let tlen = trailer::trailer_len(&tail, h.frame_len, hlen).map_err(|e| shift(e, base))?;
    let tstart = h.frame_len - tlen;
    let traw = src.read(base + tstart, tlen, "trailer")?;
    let vl_raw = trailer::parse(&traw, tstart).map_err(|e| shift(e, base))?;
    let mut vlmeta = Vec::with_capacity(vl_raw.len());
    for (k, (name, c)) in vl_raw.into_iter().enumerate() {
        let wrap = |source| Error::Chunk { chunk: ChunkId::VlMeta(k), source };
        // A tiny special chunk can claim 2 GB: vlmetalayers are small, refuse absurd ones.
        let n = oxblosc_chunk::decompressed_len(&c).map_err(wrap)?;
        if n > MAX_VLMETA_LEN {
            return Err(Error::field("vlmetalayer", base + tstart, format!("{name:?} claims {n} bytes")));
        }
        let v = oxblosc_chunk::decompress(&c, &DParams { nthreads: 1 }).map_err(wrap)?;
        vlmeta.push((name, v));
    }
    // Offsets index.
    let mut extra = Vec::new();
    let offsets = if h.nbytes == 0 {
        Vec::new()
    } else {
        let index_at = if sparse { hlen } else { hlen.saturating_add(h.cbytes as u64) };
        if index_at >= tstart {
            return Err(Error::field(
                "cbytes",
                base + 39,
                format!("offsets index would start at {index_at}, past the trailer at {tstart}"),
            ));
        }
        let idx = src.read(base + index_at, tstart - index_at, "offsets index")?;
        let nchunks = if h.chunksize > 0 {
            h.nbytes as u64 / h.chunksize as u64 + u64::from(!(h.nbytes as u64).is_multiple_of(h.chunksize as u64))
        } else {
            // Variable chunk sizes: no special offsets, so every chunk is stored (>= 16 bytes).
            let n = offsets::index_len(&idx)? as u64;
            if !sparse && n > h.cbytes as u64 / 16 {
                return Err(Error::field("cbytes", base + 39, format!("{} bytes cannot hold {n} chunks", h.cbytes)));
            }
            n
        };
        if nchunks > (i32::MAX / 8) as u64 {
            return Err(Error::field("nbytes", base + 30, format!("implies {nchunks} chunks")));
        }
        if h.chunksize > 0 {
            extra = extra_entries(base, &h, &idx, nchunks as usize)?;
        }
        offsets::decode_index(&idx, nchunks as usize)?
    };
    if !sparse {
        let hlen = u64::from(h.header_len);
        for &(i, o) in &extra {
            let head = src.read(base + hlen + o, 8, "chunk header")?;
            if let Some(e) = extra_chunk_error(base, &h, offsets.len(), i, &head) {
                return Err(e);
            }
        }
        extra.clear();
    }
    Ok(Parsed { header: h, meta, vlmeta, offsets, sparse_extra: extra })
}

/// Trailing empty chunks make an offsets index hold more entries than `nbytes / chunksize`
/// counts (readers, C-Blosc2's too, derive the count from the header and skip them). Any other
/// stored chunk past that count means the header's sizes are wrong (a damaged `chunksize` or
/// `nbytes`): reading would drop those chunks and size the others from the damaged field,
/// silently. C-Blosc2's repeated-value index (`fill_special`) may claim more entries: skipped.
/// Returns the stored entries past the count (entry, position or sparse chunk file id), whose
/// chunks must then be empty ([`extra_chunk_error`] otherwise).
fn extra_entries(base: u64, h: &FrameHeader, idx: &[u8], nchunks: usize) -> Result<Vec<(usize, u64)>> {
    /// More trailing empty chunks than this is not a frame anyone wrote.
    const MAX_EXTRA: usize = 1024;
    let held = offsets::index_len(idx)?;
    let index_head =
        oxblosc_chunk::ChunkHeader::parse(idx).map_err(|source| Error::Chunk { chunk: ChunkId::Index, source })?;
    let repeated = !matches!(index_head.special(), Ok(SpecialKind::None));
    if held <= nchunks || repeated {
        return Ok(Vec::new());
    }
    if held - nchunks > MAX_EXTRA {
        return Err(extra_error(base, h, nchunks, format!("{held} entries, more than {MAX_EXTRA} past the end")));
    }
    let mut stored = Vec::new();
    for (i, v) in offsets::decode_index(idx, held)?.into_iter().enumerate().skip(nchunks) {
        if let Offset::Stored(o) = Offset::decode(v, i)? {
            stored.push((i, o));
        }
    }
    Ok(stored)
}

/// The error for entry `i` past the header's chunk count holding a chunk of `n` bytes (its
/// header's nbytes, from the 8 bytes `head`); None when the chunk is empty.
pub(crate) fn extra_chunk_error(base: u64, h: &FrameHeader, nchunks: usize, i: usize, head: &[u8]) -> Option<Error> {
    let n = i32::from_le_bytes(head.get(4..8)?.try_into().ok()?);
    (n != 0).then(|| extra_error(base, h, nchunks, format!("entry {i} is a chunk of {n} bytes")))
}

fn extra_error(base: u64, h: &FrameHeader, nchunks: usize, why: String) -> Error {
    Error::field(
        "chunksize",
        base + 58,
        format!(
            "chunksize {} and nbytes {} imply {nchunks} chunk(s), but the offsets index holds more: {why}",
            h.chunksize, h.nbytes
        ),
    )
}

/// Add `base` to the frame-relative offset of a parse error.
fn shift(e: Error, base: u64) -> Error {
    if base == 0 {
        return e;
    }
    match e {
        Error::Truncated { what, offset, need, have } => Error::Truncated { what, offset: offset + base, need, have },
        Error::InvalidField { field, offset, reason } => Error::InvalidField { field, offset: offset + base, reason },
        Error::Msgpack { offset, reason } => Error::Msgpack { offset: offset + base, reason },
        e => e,
    }
}

/// Build a super-chunk over a parsed frame; `base` = frame start within the backing.
pub(crate) fn build(mut p: Parsed, backing: Backing, base: u64, sparse: bool) -> Result<SChunk> {
    let raw_vlmeta = p.vlmeta.iter().filter(|(n, _)| n == crate::checksum::VLMETA_NAME).cloned().collect::<Vec<_>>();
    let mut checksums = crate::checksum::State::take_from(&mut p.vlmeta);
    checksums.check_head(&raw_vlmeta, crate::checksum::header_digest(p.header.typesize.max(0) as usize, &p.meta));
    let h = &p.header;
    let splitmode = SplitMode::from_id(h.splitmode()).unwrap_or(SplitMode::Auto);
    let cparams = CParams {
        codec: h.compcode(),
        codec_meta: h.compcode_meta,
        clevel: h.clevel(),
        use_dict: h.other_flags2 & 1 != 0,
        typesize: h.typesize as usize,
        blocksize: h.blocksize as usize,
        splitmode,
        filters: h.filters,
        filters_meta: h.filters_meta,
        ..CParams::default()
    };
    let hlen = u64::from(h.header_len);
    let n = p.offsets.len();
    let mut offsets = p.offsets;
    // Converted in place: opening 10^7 chunks holds one 80 MB vector, not two.
    for (i, o) in offsets.iter_mut().enumerate() {
        let v = match Offset::decode(*o, i)? {
            Offset::Special(kind) => {
                if h.chunksize <= 0 {
                    return Err(Error::BadChunk {
                        chunk: i,
                        offset: base + hlen,
                        reason: "special offset in a frame without a fixed chunk size".into(),
                    });
                }
                let cs = h.chunksize as u64;
                let rem = h.nbytes as u64 % cs;
                let nbytes = if i + 1 == n && rem != 0 { rem } else { cs } as usize;
                Slots::special(kind, nbytes)
            }
            Offset::Stored(o) if sparse => Slots::stored(o),
            Offset::Stored(o) => {
                if o.saturating_add(16) > h.cbytes as u64 {
                    return Err(Error::BadChunk {
                        chunk: i,
                        offset: base + hlen,
                        reason: format!("offset {o} is outside the chunks section ({} bytes)", h.cbytes),
                    });
                }
                Slots::stored(base + hlen + o)
            }
        };
        *o = v as i64;
    }
    let slots = Slots::from_values(offsets.into_iter().map(|v| v as u64).collect());
    Ok(SChunk {
        cparams,
        dparams: DParams::default(),
        chunksize: i64::from(h.chunksize),
        nbytes: h.nbytes as u64,
        stored_cbytes: h.cbytes as u64,
        meta: p.meta,
        vlmeta: p.vlmeta,
        slots,
        backing,
        blocksize: h.blocksize as usize,
        vlblocks: h.general_flags & gflags::VLBLOCKS != 0,
        threads: (h.cthreads, h.dthreads),
        writer: None,
        read_only: false,
        starts: OnceLock::new(),
        section_end: if sparse { u64::MAX } else { base + hlen + h.cbytes as u64 },
        checksums,
        txn: None,
        ctx: Default::default(),
        tuner: None,
    })
}

impl SChunk {
    /// Read a contiguous frame from memory (the buffer is copied once; chunks are decoded
    /// only when asked for). `frame_len` must equal the buffer length.
    pub fn from_cframe(buf: &[u8]) -> Result<SChunk> {
        Self::from_cframe_arc(Arc::from(buf), 0, true)
    }

    /// Like [`from_cframe`](Self::from_cframe) without copying.
    pub fn from_cframe_vec(buf: Vec<u8>) -> Result<SChunk> {
        Self::from_cframe_arc(Arc::from(buf), 0, true)
    }

    /// Read a frame embedded at `offset` in a larger buffer (it may end before the buffer).
    pub fn from_cframe_at(buf: &[u8], offset: usize) -> Result<SChunk> {
        Self::from_cframe_arc(Arc::from(buf), offset as u64, false)
    }

    fn from_cframe_arc(buf: Arc<[u8]>, base: u64, exact: bool) -> Result<SChunk> {
        let p = parse(&Source::Bytes(&buf), base, false, exact)?;
        build(p, Backing::Buffer(buf), base, false)
    }

    /// Frame header describing this super-chunk (`header_len`/`frame_len` left to the caller).
    pub(crate) fn frame_header(&self, frame_type: u8, cbytes: u64) -> FrameHeader {
        let cp = &self.cparams;
        let variable = self.chunksize == 0;
        let vl = self.vlblocks && !self.slots.is_empty();
        let version = if variable || vl { 3 } else { 2 };
        let general_flags = version
            | gflags::OFFSETS_64
            | if variable { gflags::VARIABLE_CHUNKS } else { 0 }
            | if vl { gflags::VLBLOCKS } else { 0 };
        let compcode_nibble = if cp.codec < 6 { cp.codec } else { 6 };
        FrameHeader {
            header_len: 0,
            frame_len: 0,
            general_flags,
            frame_type,
            codec_flags: compcode_nibble | (cp.clevel << 4),
            other_flags: (cp.splitmode as u8).wrapping_sub(1) & 0x03,
            nbytes: self.nbytes as i64,
            cbytes: cbytes as i64,
            typesize: cp.typesize as i32,
            blocksize: self.blocksize as i32,
            chunksize: self.chunksize as i32,
            cthreads: self.threads.0,
            dthreads: self.threads.1,
            has_vlmeta: !self.vlmeta.is_empty() || self.checksums.entries() > 0,
            filters: cp.filters,
            udcodec: cp.codec,
            compcode_meta: cp.codec_meta,
            filters_meta: cp.filters_meta,
            other_flags2: u8::from(cp.use_dict),
        }
    }

    /// vlmetalayers compressed for the trailer.
    pub(crate) fn trailer_bytes(&self) -> Result<Vec<u8>> {
        let mut v = Vec::with_capacity(self.vlmeta.len());
        for (k, (name, content)) in self.vlmeta.iter().enumerate() {
            let c = oxblosc_chunk::compress(content, &vlmeta_cparams())
                .map_err(|source| Error::Chunk { chunk: ChunkId::VlMeta(k), source })?;
            v.push((name.clone(), c));
        }
        let head = crate::checksum::header_digest(self.typesize(), &self.meta);
        if let Some(sums) = self.checksums.encoded(head) {
            let c = oxblosc_chunk::compress(&sums, &vlmeta_cparams())
                .map_err(|source| Error::Chunk { chunk: ChunkId::VlMeta(v.len()), source })?;
            v.push((crate::checksum::VLMETA_NAME.to_string(), c));
        }
        Ok(trailer::write(&v))
    }

    /// Index value for chunk `i` placed at `pos` (relative to the chunks section / file id),
    /// or the special offset.
    pub(crate) fn index_entry(&self, i: usize, pos: Option<u64>) -> i64 {
        match self.special_offset_kind(i) {
            Some(k) => offsets::special_offset(k),
            None => pos.unwrap_or(0) as i64,
        }
    }

    /// Serialise as a contiguous frame, as python-blosc2's `SChunk.to_cframe()` does.
    pub fn to_cframe(&self) -> Result<Vec<u8>> {
        let mut chunks = Vec::new();
        let mut offs = Vec::with_capacity(self.slots.len());
        for i in 0..self.slots.len() {
            if self.special_offset_kind(i).is_some() {
                offs.push(self.index_entry(i, None));
                continue;
            }
            let c = self.get_chunk(i)?;
            offs.push(chunks.len() as i64);
            chunks.extend_from_slice(&c);
        }
        let index = if self.nbytes > 0 { Some(offsets::encode_index(&offs)?) } else { None };
        let trailer = self.trailer_bytes()?;
        let mut h = self.frame_header(FRAME_CONTIGUOUS, chunks.len() as u64);
        let hlen = FIXED_LEN + header::metalayers_len(&self.meta);
        h.frame_len = (hlen + chunks.len() + index.as_ref().map_or(0, Vec::len) + trailer.len()) as u64;
        let mut out = header::write_header(&h, &self.meta);
        out.reserve(h.frame_len as usize - hlen);
        out.extend_from_slice(&chunks);
        if let Some(ix) = &index {
            out.extend_from_slice(ix);
        }
        out.extend_from_slice(&trailer);
        debug_assert_eq!(out.len() as u64, h.frame_len);
        Ok(out)
    }
}
