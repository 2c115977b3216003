//! SIMD kernels and runtime CPU dispatch; the only place in the filter layer with `unsafe`.
//!
//! Each kernel has a scalar twin in the safe filter module that calls it; the functions here
//! return `false` when they cannot handle a case so the caller falls back to the twin.

#![allow(unsafe_code)]

use crate::uninit::Out;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod x86_bitshuffle;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod x86_bytedelta;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod x86_shuffle;

/// Instruction-set level used by the kernels, detected once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Scalar,
    #[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
    Sse2,
    #[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
    Avx2,
    /// AVX-512F + BW: only the kernels where it was measured faster use it (bit shuffle);
    /// everything else runs its AVX2 code at this level.
    #[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
    Avx512,
}

/// The best level this CPU supports. `OXBLOSC_SIMD=scalar|sse2|avx2` caps it (for benchmarking
/// and for testing the fallbacks).
pub(crate) fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = match crate::config::simd_cap().as_deref() {
            Some("scalar") => Level::Scalar,
            Some("sse2") => Level::Sse2,
            Some("avx2") => Level::Avx2,
            _ => Level::Avx512,
        };
        detect().min(cap)
    })
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn detect() -> Level {
    if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
        Level::Avx512
    } else if is_x86_feature_detected!("avx2") {
        Level::Avx2
    } else if is_x86_feature_detected!("sse2") {
        Level::Sse2
    } else {
        Level::Scalar
    }
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn detect() -> Level {
    Level::Scalar
}

/// GFNI (Galois-field byte instructions), used at the [`Level::Avx512`] level for the bit
/// unshuffle's 8x8 transposes when present (detected once).
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn gfni() -> bool {
    static GFNI: OnceLock<bool> = OnceLock::new();
    *GFNI.get_or_init(|| is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2"))
}

/// Levels available on this CPU, lowest first (for differential tests).
#[cfg(test)]
pub(crate) fn available_levels() -> Vec<Level> {
    [Level::Scalar, Level::Sse2, Level::Avx2, Level::Avx512].into_iter().filter(|l| *l <= detect()).collect()
}

/// SIMD byte shuffle of `src` (a whole number of elements) into `dst`; `false` = not handled.
pub(crate) fn shuffle(level: Level, e: usize, src: &[u8], dst: &mut [u8]) -> bool {
    debug_assert!(e >= 2 && src.len() == dst.len() && src.len().is_multiple_of(e));
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        let done = match level {
            Level::Scalar => return false,
            // SAFETY: `level` never exceeds what `detect` found on this CPU; lengths as required.
            Level::Sse2 => unsafe { x86_shuffle::shuffle_sse2(e, src, dst, 0) },
            // SAFETY: as above.
            Level::Avx2 | Level::Avx512 => unsafe { x86_shuffle::shuffle_avx2(e, src, dst) },
        };
        shuffle_tail(e, src, dst, done);
        true
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (level, e, src, dst);
        false
    }
}

/// SIMD inverse of [`shuffle`] into possibly uninitialised output (every byte of `dst` is
/// written when it returns `true`); `false` = not handled.
pub(crate) fn unshuffle(level: Level, e: usize, src: &[u8], dst: &mut Out) -> bool {
    debug_assert!(e >= 2 && src.len() == dst.len() && src.len().is_multiple_of(e));
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if level == Level::Scalar {
            return false;
        }
        assert_eq!(src.len(), dst.len(), "unshuffle: length mismatch");
        // SAFETY: the kernels and the tail store only bytes read from `src`.
        let d = unsafe { dst.slots() };
        let done = match level {
            // SAFETY: `level` never exceeds what `detect` found on this CPU; lengths as required.
            Level::Avx2 | Level::Avx512 => unsafe { x86_shuffle::unshuffle_avx2(e, src, d) },
            // SAFETY: as above.
            _ => unsafe { x86_shuffle::unshuffle_sse2(e, src, d, 0) },
        };
        unshuffle_tail(e, src, d, done);
        true
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (level, e, src, dst);
        false
    }
}

/// Does [`unshuffle_rows`] handle `e` rows at `level`?
pub(crate) fn unshuffle_rows_supported(level: Level, e: usize) -> bool {
    cfg!(any(target_arch = "x86", target_arch = "x86_64")) && level >= Level::Avx2 && matches!(e, 2..=8)
}

/// SIMD unshuffle from separate rows of equal length (row j = byte j of every element) into
/// `dst`, every byte of which is written when it returns `true`; `false` = not handled.
pub(crate) fn unshuffle_rows(level: Level, rows: &[&[u8]], dst: &mut Out) -> bool {
    let e = rows.len();
    if !unshuffle_rows_supported(level, e) {
        return false;
    }
    let n = rows[0].len();
    assert!(rows.iter().all(|r| r.len() == n) && dst.len() == n * e, "unshuffle_rows: lengths");
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        // SAFETY: the kernel and the tail store only bytes read from the rows.
        let d = unsafe { dst.slots() };
        // SAFETY: `unshuffle_rows_supported` checked AVX2 (never above what `detect` found) and
        // e in {2, 4, 8}; lengths asserted above.
        let done = unsafe { x86_shuffle::unshuffle_rows_avx2(rows, n, d) };
        for i in done..n {
            for (j, row) in rows.iter().enumerate() {
                d[i * e + j] = MaybeUninit::new(row[i]);
            }
        }
    }
    true
}

/// Scalar shuffle of elements `i0..n` (the part the SIMD tiles did not cover).
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
fn shuffle_tail(e: usize, src: &[u8], dst: &mut [u8], i0: usize) {
    let n = src.len() / e;
    for i in i0..n {
        for j in 0..e {
            dst[j * n + i] = src[i * e + j];
        }
    }
}

#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
fn unshuffle_tail(e: usize, src: &[u8], dst: &mut [MaybeUninit<u8>], i0: usize) {
    let n = src.len() / e;
    for i in i0..n {
        for j in 0..e {
            dst[i * e + j] = MaybeUninit::new(src[j * n + i]);
        }
    }
}

/// Elements per bitshuffle pass: the byte-shuffled slice (`K * t` bytes) stays in L1/L2.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
fn bit_chunk(t: usize) -> usize {
    ((BIT_SCRATCH / t) / 32 * 32).max(32)
}

/// Bytes of the byte-shuffled slice a bitshuffle pass keeps on the stack.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
const BIT_SCRATCH: usize = 16 * 1024;

/// `n` bytes of scratch: on the stack (no allocation per block), on the heap for the element
/// sizes above 512 whose 32-element minimum slice does not fit.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
fn bit_scratch<'a>(stack: &'a mut [u8; BIT_SCRATCH], heap: &'a mut Vec<u8>, n: usize) -> &'a mut [u8] {
    if n <= BIT_SCRATCH {
        &mut stack[..n]
    } else {
        heap.resize(n, 0);
        heap
    }
}

/// SIMD bit shuffle of `src` (a multiple of `8 * t` bytes); `false` = not handled.
///
/// Per slice of `K` elements: byte-shuffle into scratch rows (SIMD), then bit-transpose every
/// row into its eight planes (SIMD).
pub(crate) fn bitshuffle(level: Level, t: usize, src: &[u8], dst: &mut [u8]) -> bool {
    debug_assert!(t >= 1 && src.len() == dst.len() && src.len().is_multiple_of(8 * t));
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if level == Level::Scalar {
            return false;
        }
        let m = src.len() / t;
        let plane_len = m / 8;
        let k = bit_chunk(t);
        let (mut stack, mut heap) = ([0u8; BIT_SCRATCH], Vec::new());
        let scratch = bit_scratch(&mut stack, &mut heap, if t == 1 { 0 } else { k.min(m) * t });
        let mut i0 = 0;
        while i0 < m {
            let kc = k.min(m - i0);
            let part = &src[i0 * t..(i0 + kc) * t];
            let rows: &[u8] = if t == 1 {
                part
            } else {
                let s = &mut scratch[..kc * t];
                shuffle(level, t, part, s);
                s
            };
            for (j, row) in rows.chunks_exact(kc).enumerate() {
                let planes = &mut dst[8 * j * plane_len..(8 * j + 8) * plane_len];
                let off = i0 / 8;
                match level {
                    // SAFETY: `level` never exceeds what `detect` found on this CPU.
                    Level::Avx512 => unsafe { x86_bitshuffle::row_to_planes_avx512(row, planes, plane_len, off) },
                    // SAFETY: as above.
                    Level::Avx2 => unsafe { x86_bitshuffle::row_to_planes_avx2(row, planes, plane_len, off) },
                    // SAFETY: as above.
                    _ => unsafe { x86_bitshuffle::row_to_planes_sse2(row, planes, plane_len, off) },
                }
            }
            i0 += kc;
        }
        true
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (level, t, src, dst);
        false
    }
}

/// SIMD inverse of [`bitshuffle`] into possibly uninitialised output (every byte of `dst` is
/// written when it returns `true`); `false` = not handled (`dst` untouched).
pub(crate) fn bitunshuffle(level: Level, t: usize, src: &[u8], dst: &mut Out) -> bool {
    debug_assert!(t >= 1 && src.len() == dst.len() && src.len().is_multiple_of(8 * t));
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if level == Level::Scalar {
            return false;
        }
        let m = src.len() / t;
        let plane_len = m / 8;
        let k = bit_chunk(t);
        let (mut stack, mut heap) = ([0u8; BIT_SCRATCH], Vec::new());
        let scratch = bit_scratch(&mut stack, &mut heap, if t == 1 { 0 } else { k.min(m) * t });
        let mut i0 = 0;
        while i0 < m {
            let kc = k.min(m - i0);
            let mut out = dst.slice(i0 * t, (i0 + kc) * t);
            // SAFETY (both): the row kernels store only bytes computed from the planes.
            let rows: &mut [MaybeUninit<u8>] = if t == 1 {
                unsafe { out.slots() }
            } else {
                // (MaybeUninit<u8> has the layout of u8.)
                unsafe { &mut *(&mut scratch[..kc * t] as *mut [u8] as *mut [MaybeUninit<u8>]) }
            };
            for (j, row) in rows.chunks_exact_mut(kc).enumerate() {
                let planes = &src[8 * j * plane_len..(8 * j + 8) * plane_len];
                let off = i0 / 8;
                match level {
                    // SAFETY: `level` never exceeds what `detect` found on this CPU.
                    Level::Avx512 if gfni() => unsafe {
                        x86_bitshuffle::planes_to_row_gfni(planes, plane_len, off, row)
                    },
                    // SAFETY: as above.
                    Level::Avx2 | Level::Avx512 => unsafe {
                        x86_bitshuffle::planes_to_row_avx2(planes, plane_len, off, row)
                    },
                    // SAFETY: as above.
                    _ => unsafe { x86_bitshuffle::planes_to_row_sse2(planes, plane_len, off, row) },
                }
            }
            if t > 1 {
                unshuffle(level, t, &scratch[..kc * t], &mut out);
            }
            i0 += kc;
        }
        true
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (level, t, src, dst);
        false
    }
}

/// Running sums of `rows` (equal lengths, a multiple of 16) into consecutive rows of `dst`
/// (`stride` bytes apart), continuing from `carry` (updated); `false` = not handled.
pub(crate) fn prefix_sum_rows(level: Level, rows: &[&[u8]], dst: &mut [u8], stride: usize, carry: &mut [u8]) -> bool {
    let (e, len) = (rows.len(), rows.first().map_or(0, |r| r.len()));
    assert!(
        len.is_multiple_of(16)
            && carry.len() >= e
            && rows.iter().all(|r| r.len() == len)
            && (e == 0 || (e - 1) * stride + len <= dst.len())
            && len <= stride,
        "prefix_sum_rows: lengths"
    );
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if level < Level::Avx2 {
            return false;
        }
        let d = dst.as_mut_ptr();
        // SAFETY: AVX2 was detected; the lengths were asserted above: row k
        // writes dst[k * stride .. k * stride + len], inside `dst`.
        unsafe {
            match e {
                2 => x86_bytedelta::prefix_sum_rows_avx2::<2>(rows, d, stride, len, carry),
                3 => x86_bytedelta::prefix_sum_rows_avx2::<3>(rows, d, stride, len, carry),
                4 => x86_bytedelta::prefix_sum_rows_avx2::<4>(rows, d, stride, len, carry),
                5 => x86_bytedelta::prefix_sum_rows_avx2::<5>(rows, d, stride, len, carry),
                6 => x86_bytedelta::prefix_sum_rows_avx2::<6>(rows, d, stride, len, carry),
                7 => x86_bytedelta::prefix_sum_rows_avx2::<7>(rows, d, stride, len, carry),
                8 => x86_bytedelta::prefix_sum_rows_avx2::<8>(rows, d, stride, len, carry),
                _ => return false,
            }
        }
        true
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (level, dst, stride);
        false
    }
}

/// SIMD running byte sum for bytedelta decode: fills a prefix of `d`, returns its length
/// and the last sum (`(0, 0)` = not handled).
pub(crate) fn prefix_sum(level: Level, s: &[u8], d: &mut [u8]) -> (usize, u8) {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        match level {
            Level::Scalar => (0, 0),
            // SAFETY: `level` never exceeds what `detect` found; AVX2 implies SSSE3.
            Level::Avx2 | Level::Avx512 => unsafe { x86_bytedelta::prefix_sum_ssse3(s, d) },
            // SAFETY: as above.
            Level::Sse2 => unsafe { x86_bytedelta::prefix_sum_sse2(s, d) },
        }
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (level, s, d);
        (0, 0)
    }
}
