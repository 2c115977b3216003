//! SSE2 and AVX2 bit transposition of byte rows (the second half of bitshuffle; the first
//! half is the byte shuffle in `x86_shuffle`).
//!
//! A row holds byte `j` of consecutive elements. Forward: `movemask_epi8` collects bit 7 of
//! 16/32 bytes at once, then every byte is doubled to bring the next bit up. Inverse: the
//! plane bytes of each group of 8 elements are gathered into one 64-bit lane and that 8x8
//! bit matrix is transposed with three masked shift/XOR steps.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86")]
use std::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::filter::bitshuffle::transpose8x8;
use std::mem::MaybeUninit;

/// Planes `8*j .. 8*j+8` live at `planes[b * plane_len + off ..]`; a row has `row.len()`
/// bytes (a multiple of 8), written to bytes `off .. off + row.len()/8` of each plane.
///
/// # Safety
/// AVX2 available.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn row_to_planes_avx2(row: &[u8], planes: &mut [u8], plane_len: usize, off: usize) {
    check(row.len(), planes.len(), plane_len, off);
    let (rp, pp) = (row.as_ptr(), planes.as_mut_ptr());
    let mut i = 0;
    while i + 64 <= row.len() {
        // SAFETY: i + 64 <= row.len().
        let mut v0 = _mm256_loadu_si256(rp.add(i) as *const __m256i);
        let mut v1 = _mm256_loadu_si256(rp.add(i + 32) as *const __m256i);
        for b in (0..8).rev() {
            let lo = _mm256_movemask_epi8(v0) as u32 as u64;
            let hi = _mm256_movemask_epi8(v1) as u32 as u64;
            // SAFETY: b*plane_len + off + i/8 + 8 <= 8*plane_len (checked above).
            (pp.add(b * plane_len + off + i / 8) as *mut u64).write_unaligned((lo | hi << 32).to_le());
            v0 = _mm256_add_epi8(v0, v0);
            v1 = _mm256_add_epi8(v1, v1);
        }
        i += 64;
    }
    row_to_planes_sse2(&row[i..], planes, plane_len, off + i / 8);
}

/// AVX-512BW twin of [`row_to_planes_avx2`]: `vpmovb2m` takes bit 7 of 64 bytes in one
/// instruction, half the mask extractions of AVX2 (`vpmovmskb`, 32 bytes), which bound its
/// speed (measured: the AVX2 kernel took 44% of an LZ4 + bitshuffle compression of int8 data).
///
/// # Safety
/// AVX-512F and AVX-512BW available.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn row_to_planes_avx512(row: &[u8], planes: &mut [u8], plane_len: usize, off: usize) {
    check(row.len(), planes.len(), plane_len, off);
    let (rp, pp) = (row.as_ptr(), planes.as_mut_ptr());
    let mut i = 0;
    while i + 64 <= row.len() {
        // SAFETY: i + 64 <= row.len().
        let mut v = _mm512_loadu_si512(rp.add(i) as *const __m512i);
        for b in (0..8).rev() {
            let bits = _mm512_movepi8_mask(v);
            // SAFETY: b*plane_len + off + i/8 + 8 <= 8*plane_len (checked above).
            (pp.add(b * plane_len + off + i / 8) as *mut u64).write_unaligned(bits.to_le());
            v = _mm512_add_epi8(v, v);
        }
        i += 64;
    }
    row_to_planes_sse2(&row[i..], planes, plane_len, off + i / 8);
}

/// The row fits its planes: `row_len % 8 == 0` and `off + row_len/8 <= plane_len`.
#[inline]
fn check(row_len: usize, planes_len: usize, plane_len: usize, off: usize) {
    assert!(row_len.is_multiple_of(8) && off + row_len / 8 <= plane_len && 8 * plane_len <= planes_len);
}

/// SSE2 twin of [`row_to_planes_avx2`].
///
/// # Safety
/// SSE2 available.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn row_to_planes_sse2(row: &[u8], planes: &mut [u8], plane_len: usize, off: usize) {
    check(row.len(), planes.len(), plane_len, off);
    let (rp, pp) = (row.as_ptr(), planes.as_mut_ptr());
    let mut i = 0;
    while i + 16 <= row.len() {
        // SAFETY: i + 16 <= row.len().
        let mut v = _mm_loadu_si128(rp.add(i) as *const __m128i);
        for b in (0..8).rev() {
            let m = _mm_movemask_epi8(v) as u16;
            // SAFETY: b*plane_len + off + i/8 + 2 <= 8*plane_len (checked above).
            (pp.add(b * plane_len + off + i / 8) as *mut u16).write_unaligned(m.to_le());
            v = _mm_add_epi8(v, v);
        }
        i += 16;
    }
    row_to_planes_scalar(&row[i..], planes, plane_len, off + i / 8);
}

fn row_to_planes_scalar(row: &[u8], planes: &mut [u8], plane_len: usize, off: usize) {
    for (k, g) in row.chunks_exact(8).enumerate() {
        let y = transpose8x8(u64::from_le_bytes(g.try_into().unwrap())).to_le_bytes();
        for (b, &byte) in y.iter().enumerate() {
            planes[b * plane_len + off + k] = byte;
        }
    }
}

/// Inverse of [`row_to_planes_avx2`]: fill `row` (possibly uninitialised; every byte is
/// written) from the planes.
///
/// # Safety
/// AVX2 available.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn planes_to_row_avx2(planes: &[u8], plane_len: usize, off: usize, row: &mut [MaybeUninit<u8>]) {
    let full = row.len() / 32 * 32;
    // In each lane, dword b holds plane bytes g0..g3; regroup to [g][b] per lane.
    let regroup = _mm256_setr_epi8(
        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, //
        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
    );
    // Then qword g = [planes 0..4 of group g, planes 4..8 of group g].
    let merge = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    check(row.len(), planes.len(), plane_len, off);
    let pp = planes.as_ptr();
    let mut i = 0;
    while i + 256 <= full {
        // SAFETY: b*plane_len + off + i/8 + 32 <= 8*plane_len and i + 256 <= row.len().
        planes_to_row256_avx2(pp.add(off + i / 8), plane_len, row.as_mut_ptr().add(i).cast());
        i += 256;
    }
    while i < full {
        let mut d = [0i32; 8];
        for (b, w) in d.iter_mut().enumerate() {
            // SAFETY: b*plane_len + off + i/8 + 4 <= 8*plane_len (checked above).
            *w = i32::from_le((pp.add(b * plane_len + off + i / 8) as *const i32).read_unaligned());
        }
        let v = _mm256_setr_epi32(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
        let v = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, regroup), merge);
        let v = transpose8x8_avx2(v);
        // SAFETY: i + 32 <= row.len().
        _mm256_storeu_si256(row.as_mut_ptr().add(i) as *mut __m256i, v);
        i += 32;
    }
    planes_to_row_sse2(planes, plane_len, off + full / 8, &mut row[full..]);
}

/// 256 bytes of a row from 32 bytes of each of its 8 planes (at `p + b * plane_len`): the
/// planes are interleaved bytewise in three unpack rounds, so that each 64-bit lane holds one
/// group's 8 plane bytes, and each lane's 8x8 bit matrix is transposed. Whole-vector loads,
/// where gathering 4 bytes per plane for every 32 output bytes cost 22% more instructions.
///
/// # Safety
/// AVX2 available; `p + b * plane_len .. + 32` readable for b < 8; `out` valid for 256 bytes.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn planes_to_row256_avx2(p: *const u8, plane_len: usize, out: *mut u8) {
    let v: [__m256i; 8] = std::array::from_fn(|b| _mm256_loadu_si256(p.add(b * plane_len) as *const __m256i));
    store_groups(gather_groups(v).map(|x| transpose8x8_avx2(x)), out);
}

/// [`planes_to_row256_avx2`] with GFNI: one `vgf2p8affineqb` per 8x8 bit transpose (the
/// matrix operand is the group's plane bytes, in reverse plane order; the constant picks
/// bit j of each row into byte j) instead of nine shift/xor/and steps.
///
/// # Safety
/// AVX2 and GFNI available; as [`planes_to_row256_avx2`].
#[inline]
#[target_feature(enable = "avx2,gfni")]
unsafe fn planes_to_row256_gfni(p: *const u8, plane_len: usize, out: *mut u8) {
    let v: [__m256i; 8] = std::array::from_fn(|b| _mm256_loadu_si256(p.add((7 - b) * plane_len) as *const __m256i));
    let pick = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
    store_groups(gather_groups(v).map(|m| _mm256_gf2p8affine_epi64_epi8::<0>(pick, m)), out);
}

/// Interleave 8 vectors of plane bytes (32 groups each) so that each 64-bit lane holds one
/// group's 8 bytes in vector order: vector `2q` holds groups (4q, 4q+1) in its low 128-bit
/// lane and (16+4q, 16+4q+1) in its high one, vector `2q+1` the next two of each.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn gather_groups(v: [__m256i; 8]) -> [__m256i; 8] {
    // Per 128-bit lane: r1 pairs vectors (2k, 2k+1) for groups 0-7 (lo) and 8-15 (hi).
    let r1: [__m256i; 8] = std::array::from_fn(|k| {
        let (a, b) = (v[k & !1], v[k | 1]);
        if k % 2 == 0 {
            _mm256_unpacklo_epi8(a, b)
        } else {
            _mm256_unpackhi_epi8(a, b)
        }
    });
    std::array::from_fn(|i| {
        // Groups 4q..4q+4 of the lane: vectors 0-3 in `a`, 4-7 in `b` (32 bits each).
        let q = i / 2;
        let (x, y) = (q / 2, q % 2 == 1);
        let un16 = |m: __m256i, n: __m256i| if y { _mm256_unpackhi_epi16(m, n) } else { _mm256_unpacklo_epi16(m, n) };
        let a = un16(r1[x], r1[2 + x]);
        let b = un16(r1[4 + x], r1[6 + x]);
        if i % 2 == 0 {
            _mm256_unpacklo_epi32(a, b)
        } else {
            _mm256_unpackhi_epi32(a, b)
        }
    })
}

/// Store the transposed groups of [`gather_groups`] as 256 row bytes (group g at `8g`).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store_groups(t: [__m256i; 8], out: *mut u8) {
    for q in 0..4 {
        let (lo, hi) = (t[2 * q], t[2 * q + 1]);
        // Lane 0 holds groups of the first 16 (row bytes 32q..), lane 1 of the next 16 (128 + 32q..).
        _mm256_storeu_si256(out.add(32 * q) as *mut __m256i, _mm256_permute2x128_si256::<0x20>(lo, hi));
        _mm256_storeu_si256(out.add(128 + 32 * q) as *mut __m256i, _mm256_permute2x128_si256::<0x31>(lo, hi));
    }
}

/// [`planes_to_row_avx2`] whose 256-byte steps use GFNI ([`planes_to_row256_gfni`]).
///
/// # Safety
/// AVX2 and GFNI available.
#[target_feature(enable = "avx2,gfni")]
pub(super) unsafe fn planes_to_row_gfni(planes: &[u8], plane_len: usize, off: usize, row: &mut [MaybeUninit<u8>]) {
    check(row.len(), planes.len(), plane_len, off);
    let pp = planes.as_ptr();
    let full = row.len() / 256 * 256;
    let mut i = 0;
    while i < full {
        // SAFETY: b*plane_len + off + i/8 + 32 <= 8*plane_len and i + 256 <= row.len().
        planes_to_row256_gfni(pp.add(off + i / 8), plane_len, row.as_mut_ptr().add(i).cast());
        i += 256;
    }
    planes_to_row_avx2(planes, plane_len, off + full / 8, &mut row[full..]);
}

/// SSE2 twin of [`planes_to_row_avx2`].
///
/// # Safety
/// SSE2 available.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn planes_to_row_sse2(planes: &[u8], plane_len: usize, off: usize, row: &mut [MaybeUninit<u8>]) {
    let full = row.len() / 16 * 16;
    let lo = _mm_set1_epi16(0x00FF);
    check(row.len(), planes.len(), plane_len, off);
    let pp = planes.as_ptr();
    let mut i = 0;
    while i < full {
        let mut d = [0i16; 8];
        for (b, w) in d.iter_mut().enumerate() {
            // SAFETY: b*plane_len + off + i/8 + 2 <= 8*plane_len (checked above).
            *w = i16::from_le((pp.add(b * plane_len + off + i / 8) as *const i16).read_unaligned());
        }
        let v = _mm_setr_epi16(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
        // Word b = [plane b group 0, plane b group 1]; split into qword 0 = group 0 bytes.
        let v = _mm_packus_epi16(_mm_and_si128(v, lo), _mm_srli_epi16::<8>(v));
        let v = transpose8x8_sse2(v);
        // SAFETY: i + 16 <= row.len().
        _mm_storeu_si128(row.as_mut_ptr().add(i) as *mut __m128i, v);
        i += 16;
    }
    planes_to_row_scalar(planes, plane_len, off + full / 8, &mut row[full..]);
}

fn planes_to_row_scalar(planes: &[u8], plane_len: usize, off: usize, row: &mut [MaybeUninit<u8>]) {
    for (k, g) in row.chunks_exact_mut(8).enumerate() {
        let mut x = [0u8; 8];
        for (b, byte) in x.iter_mut().enumerate() {
            *byte = planes[b * plane_len + off + k];
        }
        for (slot, byte) in g.iter_mut().zip(transpose8x8(u64::from_le_bytes(x)).to_le_bytes()) {
            *slot = MaybeUninit::new(byte);
        }
    }
}

/// [`transpose8x8`] on each 64-bit lane.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn transpose8x8_avx2(x: __m256i) -> __m256i {
    let t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<7>(x)), _mm256_set1_epi64x(0x00AA_00AA_00AA_00AA));
    let x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<7>(t)));
    let t =
        _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<14>(x)), _mm256_set1_epi64x(0x0000_CCCC_0000_CCCC));
    let x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<14>(t)));
    let t =
        _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<28>(x)), _mm256_set1_epi64x(0x0000_0000_F0F0_F0F0));
    _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<28>(t)))
}

/// [`transpose8x8`] on each 64-bit lane.
#[inline]
#[target_feature(enable = "sse2")]
unsafe fn transpose8x8_sse2(x: __m128i) -> __m128i {
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<7>(x)), _mm_set1_epi64x(0x00AA_00AA_00AA_00AA));
    let x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<7>(t)));
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<14>(x)), _mm_set1_epi64x(0x0000_CCCC_0000_CCCC));
    let x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<14>(t)));
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<28>(x)), _mm_set1_epi64x(0x0000_0000_F0F0_F0F0));
    _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<28>(t)))
}
