//! SSE2 / SSSE3 running byte sum (bytedelta decode): log-step prefix sum inside 16 bytes,
//! then the previous vector's last byte broadcast and added.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[inline]
#[target_feature(enable = "sse2")]
unsafe fn scan16(x: __m128i) -> __m128i {
    let x = _mm_add_epi8(x, _mm_slli_si128::<1>(x));
    let x = _mm_add_epi8(x, _mm_slli_si128::<2>(x));
    let x = _mm_add_epi8(x, _mm_slli_si128::<4>(x));
    _mm_add_epi8(x, _mm_slli_si128::<8>(x))
}

/// `d[k] = s[0] + ... + s[k]` (mod 256) over whole 16-byte groups; returns bytes done and
/// the last sum.
///
/// # Safety
/// SSE2 available.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn prefix_sum_sse2(s: &[u8], d: &mut [u8]) -> (usize, u8) {
    let n = s.len().min(d.len()) / 16 * 16;
    let mut carry = _mm_setzero_si128();
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 <= len of both slices.
        let x = _mm_loadu_si128(s.as_ptr().add(i) as *const __m128i);
        let x = _mm_add_epi8(scan16(x), carry);
        _mm_storeu_si128(d.as_mut_ptr().add(i) as *mut __m128i, x);
        // Broadcast byte 15.
        let c = _mm_srli_si128::<15>(x);
        let c = _mm_unpacklo_epi8(c, c);
        let c = _mm_shufflelo_epi16::<0>(c);
        carry = _mm_shuffle_epi32::<0>(c);
        i += 16;
    }
    (n, _mm_cvtsi128_si32(carry) as u8)
}

/// As [`prefix_sum_sse2`], broadcasting with `pshufb`.
///
/// # Safety
/// SSSE3 available.
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn prefix_sum_ssse3(s: &[u8], d: &mut [u8]) -> (usize, u8) {
    let n = s.len().min(d.len()) / 16 * 16;
    let last = _mm_set1_epi8(15);
    let mut carry = _mm_setzero_si128();
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 <= len of both slices.
        let x = _mm_loadu_si128(s.as_ptr().add(i) as *const __m128i);
        let x = _mm_add_epi8(scan16(x), carry);
        _mm_storeu_si128(d.as_mut_ptr().add(i) as *mut __m128i, x);
        carry = _mm_shuffle_epi8(x, last);
        i += 16;
    }
    (n, _mm_cvtsi128_si32(carry) as u8)
}

/// [`scan16`] with fewer byte shuffles: shifts within each 64-bit half (not the shuffle
/// unit's whole-register byte shifts, which all compete for one port on Intel cores), then
/// the low half's last sum added to the high half (`spread7`: byte 7 into bytes 8..15).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn scan16_halves(x: __m128i, spread7: __m128i) -> __m128i {
    let x = _mm_add_epi8(x, _mm_slli_epi64::<8>(x));
    let x = _mm_add_epi8(x, _mm_slli_epi64::<16>(x));
    let x = _mm_add_epi8(x, _mm_slli_epi64::<32>(x));
    _mm_add_epi8(x, _mm_shuffle_epi8(x, spread7))
}

/// [`scan16_halves`] on both 128-bit lanes, then lane 0's last sum added to lane 1: the
/// running sum of 32 bytes (from 0).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn scan32(x: __m256i, spread7: __m256i, last: __m256i) -> __m256i {
    let x = _mm256_add_epi8(x, _mm256_slli_epi64::<8>(x));
    let x = _mm256_add_epi8(x, _mm256_slli_epi64::<16>(x));
    let x = _mm256_add_epi8(x, _mm256_slli_epi64::<32>(x));
    let x = _mm256_add_epi8(x, _mm256_shuffle_epi8(x, spread7));
    // Each lane's byte 15 in every byte of its lane; lane 0's moved to lane 1, zeros below.
    let totals = _mm256_shuffle_epi8(x, last);
    _mm256_add_epi8(x, _mm256_permute2x128_si256::<0x08>(totals, totals))
}

/// Running sums of `E` rows at once, `len` bytes each (a multiple of 16): row `k` is read
/// from `src[k]` and written to `dst + k * stride`, continuing from `carry[k]`, which is
/// updated. One row's sum is a chain of dependent steps (a cross-lane move among them);
/// stepping all rows together lets the CPU overlap the `E` chains.
///
/// # Safety
/// AVX2 available; every `src[k]` holds at least `len` bytes; `dst + k * stride` is valid
/// for `len` bytes of writes for every `k < E`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn prefix_sum_rows_avx2<const E: usize>(
    src: &[&[u8]],
    dst: *mut u8,
    stride: usize,
    len: usize,
    carry: &mut [u8],
) {
    debug_assert!(len.is_multiple_of(16) && src.len() >= E && carry.len() >= E);
    let last = _mm256_set1_epi8(15);
    let spread7 = _mm256_setr_epi8(
        -128, -128, -128, -128, -128, -128, -128, -128, 7, 7, 7, 7, 7, 7, 7, 7, //
        -128, -128, -128, -128, -128, -128, -128, -128, 7, 7, 7, 7, 7, 7, 7, 7,
    );
    let mut c: [__m256i; E] = [_mm256_setzero_si256(); E];
    let mut from: [*const u8; E] = [std::ptr::null(); E];
    for k in 0..E {
        c[k] = _mm256_set1_epi8(carry[k] as i8);
        from[k] = src[k].as_ptr();
    }
    let mut i = 0;
    while i + 32 <= len {
        for k in 0..E {
            // SAFETY: i + 32 <= len, within row k's source and destination.
            let x = _mm256_loadu_si256(from[k].add(i) as *const __m256i);
            let x = _mm256_add_epi8(scan32(x, spread7, last), c[k]);
            _mm256_storeu_si256(dst.add(k * stride + i) as *mut __m256i, x);
            // Byte 31 in every byte: lane 1's byte 15 broadcast, then lane 1 copied down.
            c[k] = _mm256_permute4x64_epi64::<0xFF>(_mm256_shuffle_epi8(x, last));
        }
        i += 32;
    }
    if i < len {
        // One group of 16 left (len is a multiple of 16).
        let spread7 = _mm256_castsi256_si128(spread7);
        let last = _mm256_castsi256_si128(last);
        for k in 0..E {
            // SAFETY: i + 16 == len, within row k's source and destination.
            let x = _mm_loadu_si128(from[k].add(i) as *const __m128i);
            let x = _mm_add_epi8(scan16_halves(x, spread7), _mm256_castsi256_si128(c[k]));
            _mm_storeu_si128(dst.add(k * stride + i) as *mut __m128i, x);
            c[k] = _mm256_castsi128_si256(_mm_shuffle_epi8(x, last));
        }
    }
    for k in 0..E {
        carry[k] = _mm_cvtsi128_si32(_mm256_castsi256_si128(c[k])) as u8;
    }
}
