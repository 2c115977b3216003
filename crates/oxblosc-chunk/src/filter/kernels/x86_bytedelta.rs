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
