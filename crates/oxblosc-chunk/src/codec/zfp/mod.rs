//! ZFP, the Blosc-registered lossy codecs 33 (`zfp_acc`), 34 (`zfp_prec`) and 35
//! (`zfp_rate`): our own implementation of the zfp 1.0 stream, written from the zfp format
//! description and checked value for value and byte for byte against C-Blosc2's plugin as
//! python-blosc2 4.14.1 ships it (docs/decisions/0003-zfp.md).
//!
//! How C-Blosc2's plugin uses zfp (worked out from the wheel's output):
//!
//! * **Field.** Each Blosc block is one zfp field: its b2nd block shape (1-4 dimensions; the
//!   last, fastest-varying one is zfp's x) of float32 (typesize 4) or float64 (typesize 8).
//!   The codec knows only the typesize, so int32/int64 items are coded as if their bits were
//!   floats, as in C-Blosc2. Other typesizes, more than 4 dimensions or a block dimension
//!   under 4 are refused (C-Blosc2 fails the array creation for them).
//! * **Stream.** No zfp header: the blocks of 4^d values follow each other in the order of
//!   the field (x fastest), edge blocks padded as zfp pads them, and the stream ends padded
//!   to a whole 64-bit word. The decoder therefore takes the mode from `codec_meta`.
//! * **Modes** (`codec_meta` = m):
//!   - ACC: m is a signed byte; tolerance 10^m, so zfp's smallest coded exponent is
//!     `e_min = floor(log2(10^m))`: a block whose largest exponent is `e` keeps
//!     `e - e_min + 2d + 2` bit planes (at most 64; none: a 1-bit empty block), at most
//!     16658 bits.
//!   - PREC: every block keeps `m + 2d + 3` bit planes (at most 64; d = dimensions).
//!   - RATE: m percent of the item's bits per value: each block takes exactly
//!     `round(4^d * m% * 8 * typesize)` bits (at least 1 + the exponent bits); above 100 the
//!     stream is larger than the data and the block is stored raw.
//! * The chunk's filters run before zfp (python-blosc2's default SHUFFLE included, which
//!   makes the floats zfp sees meaningless: pass `filters=[]` for useful results).

mod bits;
mod block;

use bits::{BitReader, BitWriter};
use block::{Params, Real, MAX_BITS, MAX_PREC, MIN_EXP};

use crate::registry::{Codec, CodecParams};

/// The Blosc-registered ids.
pub const ID_ACC: u8 = 33;
pub const ID_PREC: u8 = 34;
pub const ID_RATE: u8 = 35;

/// The three ZFP modes, one codec each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Accuracy,
    Precision,
    Rate,
}

impl Mode {
    /// The mode of a Blosc codec id.
    pub fn from_id(id: u8) -> Option<Mode> {
        match id {
            ID_ACC => Some(Mode::Accuracy),
            ID_PREC => Some(Mode::Precision),
            ID_RATE => Some(Mode::Rate),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Accuracy => "zfp_acc",
            Mode::Precision => "zfp_prec",
            Mode::Rate => "zfp_rate",
        }
    }

    /// zfp's coding parameters for `meta` on items of `typesize` bytes in `dims` dimensions.
    fn params(self, meta: u8, typesize: usize, dims: usize) -> Params {
        let free = Params { minbits: 1, maxbits: MAX_BITS, maxprec: MAX_PREC, minexp: MIN_EXP };
        match self {
            Mode::Accuracy => {
                let tol = 10f64.powi(i32::from(meta as i8));
                Params { minexp: tol.frexp_exp() - 1, ..free }
            }
            Mode::Precision => Params { maxprec: (u32::from(meta) + 2 * dims as u32 + 3).min(MAX_PREC), ..free },
            Mode::Rate => {
                let values = 1u64 << (2 * dims);
                let bits = (values * u64::from(meta) * 8 * typesize as u64 + 50) / 100;
                let ebits = if typesize == 4 { f32::EBITS } else { f64::EBITS };
                let bits = (bits.min(u64::from(u32::MAX)) as u32).max(1 + ebits);
                Params { minbits: bits, maxbits: bits, ..free }
            }
        }
    }
}

/// One ZFP mode as a registry codec.
pub struct Zfp(pub Mode);

impl Codec for Zfp {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        let shape = geometry(self.0, p, src.len())?;
        if let Some(d) = shape.iter().find(|&&d| d < 4) {
            return Err(format!(
                "{}: every block dimension must be at least 4 (block shape {:?} has {d}), as C-Blosc2 requires",
                self.0.name(),
                p.blockshape
            ));
        }
        Ok(compress(self.0, p.meta, p.typesize, &shape, src, dst))
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let shape = geometry(self.0, p, dst.len())?;
        decompress(self.0, p.meta, p.typesize, &shape, src, dst)
    }
    /// One bit (an all-zero block in ACC/PREC mode) stands for at most 256 doubles.
    fn max_expansion(&self, csize: usize) -> Option<usize> {
        Some(csize.saturating_mul(8 * 256 * 8).saturating_add(1 << 20))
    }
}

/// The block shape checked against the typesize and the block's byte length.
fn geometry(mode: Mode, p: &CodecParams, len: usize) -> Result<Vec<usize>, String> {
    let name = mode.name();
    if p.typesize != 4 && p.typesize != 8 {
        return Err(format!("{name} works on 4- or 8-byte items (float32/float64) only (typesize {})", p.typesize));
    }
    match p.blockshape.len() {
        0 => return Err(format!("{name} needs a b2nd array (no block shape: not an array chunk)")),
        1..=4 => {}
        n => return Err(format!("{name} works on 1- to 4-dimensional arrays only (block shape has {n} dimensions)")),
    }
    let items = p.blockshape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if items.and_then(|n| n.checked_mul(p.typesize)) != Some(len) {
        return Err(format!("{name}: block of {len} bytes does not match the block shape {:?}", p.blockshape));
    }
    Ok(p.blockshape.to_vec())
}

/// Compress one Blosc block; 0 when the stream does not fit `dst`.
pub fn compress(mode: Mode, meta: u8, typesize: usize, shape: &[usize], src: &[u8], dst: &mut [u8]) -> usize {
    let p = mode.params(meta, typesize, shape.len());
    let mut w = BitWriter::new(dst);
    let ok = if typesize == 4 {
        Field::new(shape).encode::<f32>(&p, src, &mut w)
    } else {
        Field::new(shape).encode::<f64>(&p, src, &mut w)
    };
    if !ok {
        return 0;
    }
    w.finish().unwrap_or(0)
}

/// Decode one Blosc block (`dst` is the whole block).
pub fn decompress(
    mode: Mode,
    meta: u8,
    typesize: usize,
    shape: &[usize],
    src: &[u8],
    dst: &mut [u8],
) -> Result<(), String> {
    if (typesize != 4 && typesize != 8) || shape.is_empty() || shape.len() > 4 {
        return Err(format!("{}: unsupported typesize {typesize} or {}-d block shape", mode.name(), shape.len()));
    }
    let p = mode.params(meta, typesize, shape.len());
    let mut r = BitReader::new(src);
    let ok = if typesize == 4 {
        Field::new(shape).decode::<f32>(&p, &mut r, dst)
    } else {
        Field::new(shape).decode::<f64>(&p, &mut r, dst)
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{}: truncated or corrupt stream ({} bytes)", mode.name(), src.len()))
    }
}

/// A block shape seen as a grid of zfp blocks.
struct Field<'a> {
    shape: &'a [usize],
    /// Item strides of `shape` (C order).
    strides: [usize; 4],
    dims: usize,
}

impl<'a> Field<'a> {
    fn new(shape: &'a [usize]) -> Self {
        let dims = shape.len();
        let mut strides = [0usize; 4];
        let mut s = 1;
        for j in (0..dims).rev() {
            strides[j] = s;
            s *= shape[j];
        }
        Field { shape, strides, dims }
    }

    /// Visit every zfp block in field order with (first item, extent per axis).
    fn for_each_block(&self, mut f: impl FnMut(usize, [usize; 4]) -> bool) -> bool {
        let d = self.dims;
        let counts: Vec<usize> = self.shape.iter().map(|s| s.div_ceil(4)).collect();
        if counts.contains(&0) {
            return true;
        }
        let mut idx = [0usize; 4];
        loop {
            let mut base = 0;
            let mut ext = [1usize; 4];
            for j in 0..d {
                base += idx[j] * 4 * self.strides[j];
                ext[j] = (self.shape[j] - idx[j] * 4).min(4);
            }
            if !f(base, ext) {
                return false;
            }
            if !advance(&mut idx[..d], &counts[..d]) {
                return true;
            }
        }
    }

    /// Call `f(item offset, block position)` for every row of valid items of a block, the
    /// row along the last axis (`ext[d-1]` items).
    fn rows(&self, base: usize, ext: [usize; 4], mut f: impl FnMut(usize, usize)) {
        let d = self.dims;
        let mut idx = [0usize; 4];
        loop {
            let mut off = base;
            let mut pos = 0;
            for (&i, &stride) in idx[..d - 1].iter().zip(&self.strides) {
                off += i * stride;
                pos = pos * 4 + i;
            }
            f(off, pos * 4);
            if !advance(&mut idx[..d - 1], &ext[..d - 1]) {
                return;
            }
        }
    }

    fn encode<R: Real>(&self, p: &Params, src: &[u8], w: &mut BitWriter) -> bool {
        let d = self.dims;
        let n = 1usize << (2 * d);
        let mut vals = [R::zero(); 256];
        let mut sc = block::Scratch::<R>::new();
        self.for_each_block(|base, ext| {
            let row = ext[d - 1];
            self.rows(base, ext, |off, pos| {
                for x in 0..row {
                    vals[pos + x] = R::read(&src[(off + x) * R::SIZE..]);
                }
            });
            if ext[..d].iter().any(|&e| e < 4) {
                pad(&mut vals[..n], d, &ext);
            }
            block::encode_block(w, p, d, &vals[..n], &mut sc);
            !w.overflowed()
        })
    }

    fn decode<R: Real>(&self, p: &Params, r: &mut BitReader, dst: &mut [u8]) -> bool {
        let d = self.dims;
        let n = 1usize << (2 * d);
        let mut vals = [R::zero(); 256];
        let mut sc = block::Scratch::<R>::new();
        self.for_each_block(|base, ext| {
            block::decode_block(r, p, d, &mut vals[..n], &mut sc);
            if r.overrun() {
                return false;
            }
            let row = ext[d - 1];
            self.rows(base, ext, |off, pos| {
                for x in 0..row {
                    vals[pos + x].write(&mut dst[(off + x) * R::SIZE..][..R::SIZE]);
                }
            });
            true
        })
    }
}

/// Fill the positions of a partial block outside the field as zfp does, axis by axis from
/// the fastest: with `k` valid values `a b c` along a line, the line becomes `a a a a`
/// (k = 1), `a b b a` (k = 2) or `a b c a` (k = 3).
fn pad<R: Real>(vals: &mut [R], dims: usize, ext: &[usize; 4]) {
    for axis in (0..dims).rev() {
        let k = ext[axis];
        if k >= 4 {
            continue;
        }
        let s = 1usize << (2 * (dims - 1 - axis));
        for base in (0..vals.len()).step_by(4 * s).flat_map(|hi| hi..hi + s) {
            let v0 = vals[base];
            if k == 1 {
                vals[base + s] = v0;
                vals[base + 2 * s] = v0;
            } else if k == 2 {
                vals[base + 2 * s] = vals[base + s];
            }
            vals[base + 3 * s] = v0;
        }
    }
}

#[cfg(test)]
mod tests;

/// Step the multi-index `idx` (last axis fastest) within `ext`; false after the last one.
fn advance(idx: &mut [usize], ext: &[usize]) -> bool {
    for j in (0..idx.len()).rev() {
        idx[j] += 1;
        if idx[j] < ext[j] {
            return true;
        }
        idx[j] = 0;
    }
    false
}
