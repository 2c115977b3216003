//! SSE2 and AVX2 byte shuffle / unshuffle.
//!
//! Core idea: a round of `unpacklo/hi_epi8` over `N` vectors (pairing `v[k]` with
//! `v[k + N/2]`) rotates the bit index of every byte left by one, where the index is
//! (vector number, byte in vector). A tile of 16 elements of `E` bytes has index
//! `(element:4, byte:log2 E)`; the shuffled order is `(byte, element)`, so shuffling is 4
//! rounds and unshuffling `log2 E` rounds. For other sizes we transpose 16x16 byte tiles
//! (overlapping loads/stores for `E < 16`, column tiles for `E > 16`). AVX2 runs two 16-element
//! tiles side by side, one per 128-bit lane. With AVX2 the small sizes that are not powers of
//! two (3, 5, 6, 7: RGB pixels, 48-bit integers...) instead gather each output vector from
//! the `E` input vectors with byte shuffles (`pshufb`, `E * E` per 16 elements), which beats
//! the 16x16 transpose that wastes most of its lanes on them.
#![allow(unsafe_code)]
#![allow(clippy::needless_range_loop)]

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

// ---------- rounds ----------

#[inline]
#[target_feature(enable = "sse2")]
unsafe fn round128<const N: usize>(v: [__m128i; N]) -> [__m128i; N] {
    let h = N / 2;
    let mut o = [_mm_setzero_si128(); N];
    for k in 0..h {
        o[2 * k] = _mm_unpacklo_epi8(v[k], v[k + h]);
        o[2 * k + 1] = _mm_unpackhi_epi8(v[k], v[k + h]);
    }
    o
}

#[inline]
#[target_feature(enable = "sse2")]
unsafe fn rounds128<const N: usize>(mut v: [__m128i; N], count: u32) -> [__m128i; N] {
    for _ in 0..count {
        v = round128(v);
    }
    v
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn round256<const N: usize>(v: [__m256i; N]) -> [__m256i; N] {
    let h = N / 2;
    let mut o = [_mm256_setzero_si256(); N];
    for k in 0..h {
        o[2 * k] = _mm256_unpacklo_epi8(v[k], v[k + h]);
        o[2 * k + 1] = _mm256_unpackhi_epi8(v[k], v[k + h]);
    }
    o
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rounds256<const N: usize>(mut v: [__m256i; N], count: u32) -> [__m256i; N] {
    for _ in 0..count {
        v = round256(v);
    }
    v
}

// ---------- loads and stores (raw pointers; callers keep them in bounds) ----------

#[inline]
#[target_feature(enable = "sse2")]
unsafe fn ld128(p: *const u8) -> __m128i {
    _mm_loadu_si128(p as *const __m128i)
}

#[inline]
#[target_feature(enable = "sse2")]
unsafe fn st128(p: *mut u8, v: __m128i) {
    _mm_storeu_si128(p as *mut __m128i, v)
}

/// Lane 0 from `a`, lane 1 from `b` (16 bytes each).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn ld2x128(a: *const u8, b: *const u8) -> __m256i {
    _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(ld128(a)), ld128(b))
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn ld256(p: *const u8) -> __m256i {
    _mm256_loadu_si256(p as *const __m256i)
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn st256(p: *mut u8, v: __m256i) {
    _mm256_storeu_si256(p as *mut __m256i, v)
}

// ---------- SSE2 tiles: each returns the number of elements done ----------

/// # Safety
/// SSE2 available; `src.len() == dst.len() == n * E`.
#[target_feature(enable = "sse2")]
unsafe fn shuffle_compact_sse2<const E: usize>(src: &[u8], dst: &mut [u8], mut i: usize) -> usize {
    let n = src.len() / E;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    while i + 16 <= n {
        let mut v = [_mm_setzero_si128(); E];
        for k in 0..E {
            // SAFETY: bytes [i*E, (i+16)*E) are inside src.
            v[k] = ld128(sp.add(i * E + 16 * k));
        }
        let v = rounds128(v, 4);
        for p in 0..E {
            // SAFETY: p*n + i + 16 <= E*n.
            st128(dp.add(p * n + i), v[p]);
        }
        i += 16;
    }
    i
}

/// # Safety
/// SSE2 available; `src.len() == dst.len() == n * E`.
#[target_feature(enable = "sse2")]
unsafe fn unshuffle_compact_sse2<const E: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>], mut i: usize) -> usize {
    let n = src.len() / E;
    let g = E.trailing_zeros();
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    while i + 16 <= n {
        let mut v = [_mm_setzero_si128(); E];
        for p in 0..E {
            // SAFETY: p*n + i + 16 <= E*n.
            v[p] = ld128(sp.add(p * n + i));
        }
        let v = rounds128(v, g);
        for k in 0..E {
            // SAFETY: bytes [i*E, (i+16)*E) are inside dst.
            st128(dp.add(i * E + 16 * k), v[k]);
        }
        i += 16;
    }
    i
}

/// Column tiles `c` covering `[0, e)` with 16-byte tiles, the last one overlapping (`e >= 16`).
fn col_tiles(e: usize) -> impl Iterator<Item = usize> {
    let last = e - 16;
    (0..e / 16).map(|t| t * 16).chain((!e.is_multiple_of(16)).then_some(last))
}

/// # Safety
/// SSE2 available; `e >= 3`; `src.len() == dst.len() == n * e`.
#[target_feature(enable = "sse2")]
unsafe fn shuffle_generic_sse2(e: usize, src: &[u8], dst: &mut [u8], mut i: usize) -> usize {
    let len = src.len();
    let n = len / e;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    if e < 16 {
        // Overlapping 16-byte loads, one per element; bytes past E are ignored.
        while i + 16 <= n && (i + 15) * e + 16 <= len {
            let mut v = [_mm_setzero_si128(); 16];
            for r in 0..16 {
                // SAFETY: (i+r)*e + 16 <= (i+15)*e + 16 <= len.
                v[r] = ld128(sp.add((i + r) * e));
            }
            let v = rounds128(v, 4);
            for p in 0..e {
                // SAFETY: p*n + i + 16 <= e*n.
                st128(dp.add(p * n + i), v[p]);
            }
            i += 16;
        }
    } else {
        while i + 16 <= n {
            for c in col_tiles(e) {
                let mut v = [_mm_setzero_si128(); 16];
                for r in 0..16 {
                    // SAFETY: (i+r)*e + c + 16 <= (i+r+1)*e <= len since c + 16 <= e.
                    v[r] = ld128(sp.add((i + r) * e + c));
                }
                let v = rounds128(v, 4);
                for p in 0..16 {
                    // SAFETY: (c+p)*n + i + 16 <= e*n.
                    st128(dp.add((c + p) * n + i), v[p]);
                }
            }
            i += 16;
        }
    }
    i
}

/// # Safety
/// SSE2 available; `e >= 3`; `src.len() == dst.len() == n * e`.
#[target_feature(enable = "sse2")]
unsafe fn unshuffle_generic_sse2(e: usize, src: &[u8], dst: &mut [MaybeUninit<u8>], mut i: usize) -> usize {
    let len = src.len();
    let n = len / e;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    if e < 16 {
        // Overlapping 16-byte stores in increasing address order: each spill is rewritten
        // by the next element's store (or the scalar tail, which runs after).
        while i + 16 <= n && (i + 15) * e + 16 <= len {
            let mut v = [_mm_setzero_si128(); 16];
            for p in 0..e {
                // SAFETY: p*n + i + 16 <= e*n.
                v[p] = ld128(sp.add(p * n + i));
            }
            let v = rounds128(v, 4);
            for r in 0..16 {
                // SAFETY: (i+r)*e + 16 <= (i+15)*e + 16 <= len.
                st128(dp.add((i + r) * e), v[r]);
            }
            i += 16;
        }
    } else {
        while i + 16 <= n {
            for c in col_tiles(e) {
                let mut v = [_mm_setzero_si128(); 16];
                for p in 0..16 {
                    // SAFETY: (c+p)*n + i + 16 <= e*n.
                    v[p] = ld128(sp.add((c + p) * n + i));
                }
                let v = rounds128(v, 4);
                for r in 0..16 {
                    // SAFETY: (i+r)*e + c + 16 <= (i+r+1)*e <= len.
                    st128(dp.add((i + r) * e + c), v[r]);
                }
            }
            i += 16;
        }
    }
    i
}

// ---------- AVX2 tiles: 32 elements, lane 0 = elements i.., lane 1 = elements i+16.. ----------

/// Shuffle elements `i..` (a few one by one until the stores are aligned, then whole tiles
/// of 32); returns the first element not done.
///
/// # Safety
/// AVX2 available; `src.len() == dst.len() == n * E`.
#[target_feature(enable = "avx2")]
unsafe fn shuffle_compact_avx2<const E: usize>(src: &[u8], dst: &mut [u8], mut i: usize) -> usize {
    let n = src.len() / E;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    // Elements one by one until row 0's 32-byte stores are aligned (all rows' when `n` is a
    // multiple of 32), as in `unshuffle_rows_compact_avx2`.
    let mis = (dp as usize + i) % 32;
    if mis != 0 {
        let head = (i + 32 - mis).min(n);
        while i < head {
            for p in 0..E {
                // SAFETY: i < n: p*n + i < E*n and i*E + p < E*n.
                *dp.add(p * n + i) = *sp.add(i * E + p);
            }
            i += 1;
        }
    }
    while i + 32 <= n {
        let mut v = [_mm256_setzero_si256(); E];
        for k in 0..E {
            // SAFETY: bytes [i*E, (i+32)*E) are inside src.
            v[k] = ld2x128(sp.add(i * E + 16 * k), sp.add((i + 16) * E + 16 * k));
        }
        let v = rounds256(v, 4);
        for p in 0..E {
            // SAFETY: p*n + i + 32 <= E*n.
            st256(dp.add(p * n + i), v[p]);
        }
        i += 32;
    }
    i
}

/// # Safety
/// AVX2 available; `src.len() == dst.len() == n * E`.
#[target_feature(enable = "avx2")]
unsafe fn unshuffle_compact_avx2<const E: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>], i: usize) -> usize {
    let n = src.len() / E;
    let sp = src.as_ptr();
    let mut rows = [sp; E];
    for (p, r) in rows.iter_mut().enumerate() {
        // SAFETY: row p starts at p*n <= len.
        *r = sp.add(p * n);
    }
    unshuffle_rows_compact_avx2::<E>(rows, n, dst, i)
}

/// Unshuffle elements `i..` (a few one by one until the stores are aligned, then whole
/// tiles of 32) from `E` rows of `n` bytes into `dst`; returns the first element not done.
///
/// # Safety
/// AVX2 available; every `rows[p]` is valid for reads of `n` bytes; `dst.len() == n * E`.
#[target_feature(enable = "avx2")]
unsafe fn unshuffle_rows_compact_avx2<const E: usize>(
    rows: [*const u8; E],
    n: usize,
    dst: &mut [MaybeUninit<u8>],
    mut i: usize,
) -> usize {
    let g = E.trailing_zeros();
    let dp = dst.as_mut_ptr().cast::<u8>();
    // Elements one by one until the stores below are 32-byte aligned: outputs (NumPy arrays,
    // Python bytes) usually start 16 bytes past it, and then every other 32-byte store
    // crossed a cache line (unshuffle 17.6 -> 26.2 GB/s for E = 4 once aligned, this host).
    let mis = (dp as usize + i * E) % 32;
    if mis != 0 && mis.is_multiple_of(E) {
        let head = (i + (32 - mis) / E).min(n);
        while i < head {
            for p in 0..E {
                // SAFETY: i < n: inside row p and inside dst.
                *dp.add(i * E + p) = *rows[p].add(i);
            }
            i += 1;
        }
    }
    while i + 32 <= n {
        let mut v = [_mm256_setzero_si256(); E];
        for p in 0..E {
            // SAFETY: i + 32 <= n.
            v[p] = ld256(rows[p].add(i));
        }
        let v = rounds256(v, g);
        // Lane 0 of v[k] belongs at i*E + 16k, lane 1 at (i+16)*E + 16k: pair the lanes of
        // v[k] and v[k+1] into whole 32-byte stores (half the stores, no extracts).
        for k in (0..E).step_by(2) {
            // SAFETY: bytes [i*E, (i+32)*E) are inside dst.
            st256(dp.add(i * E + 16 * k), _mm256_permute2x128_si256::<0x20>(v[k], v[k + 1]));
            st256(dp.add((i + 16) * E + 16 * k), _mm256_permute2x128_si256::<0x31>(v[k], v[k + 1]));
        }
        i += 32;
    }
    i
}

// ---------- AVX2 byte-gather tiles for element sizes 3, 5, 6 and 7 ----------

/// Byte-shuffle masks over one 16-element tile, seen as `E` vectors of 16 bytes either way:
/// interleaved (`16k + b` = byte `(16k + b) % E` of element `(16k + b) / E`) or rows (row `j`,
/// byte `b` = byte `j` of element `b`). `to_interleaved[k][j]` moves row `j`'s bytes to their
/// places in interleaved vector `k`, `to_rows[j][k]` the bytes of interleaved vector `k` to
/// their places in row `j`; other bytes are zeroed (0x80), so ORing over the sources assembles
/// each vector.
struct GatherMasks<const E: usize> {
    to_interleaved: [[[u8; 16]; E]; E],
    to_rows: [[[u8; 16]; E]; E],
}

impl<const E: usize> GatherMasks<E> {
    fn new() -> Self {
        let mut m = GatherMasks { to_interleaved: [[[0x80; 16]; E]; E], to_rows: [[[0x80; 16]; E]; E] };
        for p in 0..16 * E {
            let (k, b) = (p / 16, p % 16);
            let (elem, j) = (p / E, p % E);
            m.to_interleaved[k][j][b] = elem as u8;
            m.to_rows[j][k][elem] = b as u8;
        }
        m
    }
}

/// A 16-byte mask in both lanes.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn mask256(m: &[u8; 16]) -> __m256i {
    _mm256_broadcastsi128_si256(ld128(m.as_ptr()))
}

/// Lane `la` of `a` then lane `lb` of `b`, as one 32-byte vector.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn join_lanes(a: __m256i, la: usize, b: __m256i, lb: usize) -> __m256i {
    match (la, lb) {
        (0, 0) => _mm256_permute2x128_si256::<0x20>(a, b),
        (0, _) => _mm256_permute2x128_si256::<0x30>(a, b),
        (_, 0) => _mm256_permute2x128_si256::<0x21>(a, b),
        _ => _mm256_permute2x128_si256::<0x31>(a, b),
    }
}

/// Unshuffle elements `i..` (whole tiles of 32) from `E` rows of `n` bytes into `dst`
/// (E = 3, 5, 6 or 7).
///
/// # Safety
/// AVX2 available; every `rows[p]` is valid for reads of `n` bytes; `dst.len() == n * E`.
#[target_feature(enable = "avx2")]
unsafe fn unshuffle_rows_gather_avx2<const E: usize>(
    rows: [*const u8; E],
    n: usize,
    dst: &mut [MaybeUninit<u8>],
    mut i: usize,
) -> usize {
    let table = GatherMasks::<E>::new();
    let mut masks = [[_mm256_setzero_si256(); E]; E];
    for k in 0..E {
        for j in 0..E {
            masks[k][j] = mask256(&table.to_interleaved[k][j]);
        }
    }
    let dp = dst.as_mut_ptr().cast::<u8>();
    while i + 32 <= n {
        let mut v = [_mm256_setzero_si256(); E];
        for j in 0..E {
            // SAFETY: i + 32 <= n.
            v[j] = ld256(rows[j].add(i));
        }
        let mut o = [_mm256_setzero_si256(); E];
        for k in 0..E {
            let mut acc = _mm256_shuffle_epi8(v[0], masks[k][0]);
            for j in 1..E {
                acc = _mm256_or_si256(acc, _mm256_shuffle_epi8(v[j], masks[k][j]));
            }
            o[k] = acc;
        }
        // The 32 elements' bytes are 2E pieces of 16: lane 0 of o[0..E], then lane 1 of
        // o[0..E]. Store them two by two (E is odd or 6: pairs may straddle the lanes).
        for q in (0..2 * E).step_by(2) {
            let (a, b) = (q, q + 1);
            let v = join_lanes(o[a % E], a / E, o[b % E], b / E);
            // SAFETY: i*E + 16q + 32 <= (i + 32)*E <= n*E.
            st256(dp.add(i * E + 16 * q), v);
        }
        i += 32;
    }
    i
}

/// Shuffle elements `i..` (whole tiles of 32) of `src` into `dst` (E = 3, 5, 6 or 7).
///
/// # Safety
/// AVX2 available; `src.len() == dst.len() == n * E`.
#[target_feature(enable = "avx2")]
unsafe fn shuffle_gather_avx2<const E: usize>(src: &[u8], dst: &mut [u8], mut i: usize) -> usize {
    let n = src.len() / E;
    let table = GatherMasks::<E>::new();
    let mut masks = [[_mm256_setzero_si256(); E]; E];
    for j in 0..E {
        for k in 0..E {
            masks[j][k] = mask256(&table.to_rows[j][k]);
        }
    }
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    while i + 32 <= n {
        let mut v = [_mm256_setzero_si256(); E];
        for k in 0..E {
            // SAFETY: bytes [i*E, (i+32)*E) are inside src.
            v[k] = ld2x128(sp.add(i * E + 16 * k), sp.add((i + 16) * E + 16 * k));
        }
        for j in 0..E {
            let mut acc = _mm256_shuffle_epi8(v[0], masks[j][0]);
            for k in 1..E {
                acc = _mm256_or_si256(acc, _mm256_shuffle_epi8(v[k], masks[j][k]));
            }
            // SAFETY: j*n + i + 32 <= E*n.
            st256(dp.add(j * n + i), acc);
        }
        i += 32;
    }
    i
}

/// Unshuffle from separate rows (element sizes 2 to 8); returns the elements done.
///
/// # Safety
/// AVX2 available; every row has `n` bytes; `dst.len() == n * rows.len()`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unshuffle_rows_avx2(rows: &[&[u8]], n: usize, dst: &mut [MaybeUninit<u8>]) -> usize {
    fn ptrs<const E: usize>(rows: &[&[u8]]) -> [*const u8; E] {
        std::array::from_fn(|p| rows[p].as_ptr())
    }
    match rows.len() {
        2 => unshuffle_rows_compact_avx2::<2>(ptrs(rows), n, dst, 0),
        4 => unshuffle_rows_compact_avx2::<4>(ptrs(rows), n, dst, 0),
        8 => unshuffle_rows_compact_avx2::<8>(ptrs(rows), n, dst, 0),
        3 => unshuffle_rows_gather_avx2::<3>(ptrs(rows), n, dst, 0),
        5 => unshuffle_rows_gather_avx2::<5>(ptrs(rows), n, dst, 0),
        6 => unshuffle_rows_gather_avx2::<6>(ptrs(rows), n, dst, 0),
        7 => unshuffle_rows_gather_avx2::<7>(ptrs(rows), n, dst, 0),
        _ => 0,
    }
}

/// # Safety
/// AVX2 available; `e >= 3`; `src.len() == dst.len() == n * e`.
#[target_feature(enable = "avx2")]
unsafe fn shuffle_generic_avx2(e: usize, src: &[u8], dst: &mut [u8], mut i: usize) -> usize {
    let len = src.len();
    let n = len / e;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    if e < 16 {
        while i + 32 <= n && (i + 31) * e + 16 <= len {
            let mut v = [_mm256_setzero_si256(); 16];
            for r in 0..16 {
                // SAFETY: (i+16+r)*e + 16 <= (i+31)*e + 16 <= len.
                v[r] = ld2x128(sp.add((i + r) * e), sp.add((i + 16 + r) * e));
            }
            let v = rounds256(v, 4);
            for p in 0..e {
                // SAFETY: p*n + i + 32 <= e*n.
                st256(dp.add(p * n + i), v[p]);
            }
            i += 32;
        }
    } else {
        // Rows `n` bytes apart with `n` a multiple of 1 KiB (power-of-two sizes and blocks)
        // fall into the same few cache sets: storing 32 bytes to 16 rows per tile evicted each
        // half-written line before its other half came (e = 32: 2-4 GB/s). Two tiles per
        // column, then each row's 64 bytes back to back (e = 32: 3x faster; other strides keep
        // the plain loop, which the staging would slow down).
        while n.is_multiple_of(1024) && i + 64 <= n {
            for c in col_tiles(e) {
                let mut stage = [[_mm256_setzero_si256(); 2]; 16];
                for t in 0..2 {
                    let i = i + 32 * t;
                    let mut v = [_mm256_setzero_si256(); 16];
                    for r in 0..16 {
                        // SAFETY: c + 16 <= e, and element i+16+r < n.
                        v[r] = ld2x128(sp.add((i + r) * e + c), sp.add((i + 16 + r) * e + c));
                    }
                    let v = rounds256(v, 4);
                    for p in 0..16 {
                        stage[p][t] = v[p];
                    }
                }
                for p in 0..16 {
                    // SAFETY: (c+p)*n + i + 64 <= e*n.
                    st256(dp.add((c + p) * n + i), stage[p][0]);
                    st256(dp.add((c + p) * n + i + 32), stage[p][1]);
                }
            }
            i += 64;
        }
        while i + 32 <= n {
            for c in col_tiles(e) {
                let mut v = [_mm256_setzero_si256(); 16];
                for r in 0..16 {
                    // SAFETY: c + 16 <= e, and element i+16+r < n.
                    v[r] = ld2x128(sp.add((i + r) * e + c), sp.add((i + 16 + r) * e + c));
                }
                let v = rounds256(v, 4);
                for p in 0..16 {
                    // SAFETY: (c+p)*n + i + 32 <= e*n.
                    st256(dp.add((c + p) * n + i), v[p]);
                }
            }
            i += 32;
        }
    }
    i
}

/// # Safety
/// AVX2 available; `e >= 3`; `src.len() == dst.len() == n * e`.
#[target_feature(enable = "avx2")]
unsafe fn unshuffle_generic_avx2(e: usize, src: &[u8], dst: &mut [MaybeUninit<u8>], mut i: usize) -> usize {
    let len = src.len();
    let n = len / e;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
    if e < 16 {
        while i + 32 <= n && (i + 31) * e + 16 <= len {
            let mut v = [_mm256_setzero_si256(); 16];
            for p in 0..e {
                // SAFETY: p*n + i + 32 <= e*n.
                v[p] = ld256(sp.add(p * n + i));
            }
            let v = rounds256(v, 4);
            // Increasing address order, so every spill is rewritten later.
            for r in 0..16 {
                // SAFETY: (i+r)*e + 16 <= len.
                st128(dp.add((i + r) * e), _mm256_castsi256_si128(v[r]));
            }
            for r in 0..16 {
                // SAFETY: (i+16+r)*e + 16 <= (i+31)*e + 16 <= len.
                st128(dp.add((i + 16 + r) * e), _mm256_extracti128_si256::<1>(v[r]));
            }
            i += 32;
        }
    } else {
        while i + 32 <= n {
            for c in col_tiles(e) {
                let mut v = [_mm256_setzero_si256(); 16];
                for p in 0..16 {
                    // SAFETY: (c+p)*n + i + 32 <= e*n.
                    v[p] = ld256(sp.add((c + p) * n + i));
                }
                let v = rounds256(v, 4);
                for r in 0..16 {
                    // SAFETY: c + 16 <= e and element i+16+r < n.
                    st128(dp.add((i + r) * e + c), _mm256_castsi256_si128(v[r]));
                    st128(dp.add((i + 16 + r) * e + c), _mm256_extracti128_si256::<1>(v[r]));
                }
            }
            i += 32;
        }
    }
    i
}

// ---------- entry points: return the number of elements done (rest is the caller's) ----------

/// # Safety
/// SSE2 available; `e >= 2`; `src.len() == dst.len()`, a multiple of `e`.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn shuffle_sse2(e: usize, src: &[u8], dst: &mut [u8], i: usize) -> usize {
    match e {
        2 => shuffle_compact_sse2::<2>(src, dst, i),
        4 => shuffle_compact_sse2::<4>(src, dst, i),
        8 => shuffle_compact_sse2::<8>(src, dst, i),
        _ => shuffle_generic_sse2(e, src, dst, i),
    }
}

/// # Safety
/// SSE2 available; `e >= 2`; `src.len() == dst.len()`, a multiple of `e`.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn unshuffle_sse2(e: usize, src: &[u8], dst: &mut [MaybeUninit<u8>], i: usize) -> usize {
    match e {
        2 => unshuffle_compact_sse2::<2>(src, dst, i),
        4 => unshuffle_compact_sse2::<4>(src, dst, i),
        8 => unshuffle_compact_sse2::<8>(src, dst, i),
        _ => unshuffle_generic_sse2(e, src, dst, i),
    }
}

/// # Safety
/// AVX2 available; `e >= 2`; `src.len() == dst.len()`, a multiple of `e`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn shuffle_avx2(e: usize, src: &[u8], dst: &mut [u8]) -> usize {
    let i = match e {
        2 => shuffle_compact_avx2::<2>(src, dst, 0),
        4 => shuffle_compact_avx2::<4>(src, dst, 0),
        8 => shuffle_compact_avx2::<8>(src, dst, 0),
        3 => shuffle_gather_avx2::<3>(src, dst, 0),
        5 => shuffle_gather_avx2::<5>(src, dst, 0),
        6 => shuffle_gather_avx2::<6>(src, dst, 0),
        7 => shuffle_gather_avx2::<7>(src, dst, 0),
        _ => shuffle_generic_avx2(e, src, dst, 0),
    };
    shuffle_sse2(e, src, dst, i)
}

/// # Safety
/// AVX2 available; `e >= 2`; `src.len() == dst.len()`, a multiple of `e`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn unshuffle_avx2(e: usize, src: &[u8], dst: &mut [MaybeUninit<u8>]) -> usize {
    let i = match e {
        2 => unshuffle_compact_avx2::<2>(src, dst, 0),
        4 => unshuffle_compact_avx2::<4>(src, dst, 0),
        8 => unshuffle_compact_avx2::<8>(src, dst, 0),
        3 | 5 | 6 | 7 if !src.is_empty() => {
            let n = src.len() / e;
            let mut rows: [&[u8]; 8] = [&[]; 8];
            for (r, row) in rows.iter_mut().zip(src.chunks_exact(n)) {
                *r = row;
            }
            unshuffle_rows_avx2(&rows[..e], n, dst)
        }
        _ => unshuffle_generic_avx2(e, src, dst, 0),
    };
    unshuffle_sse2(e, src, dst, i)
}
