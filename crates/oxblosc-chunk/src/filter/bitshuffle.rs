//! BITSHUFFLE, filter id 2 (format spec 2.4): bit transposition of the whole block.
//!
//! filters_meta is ignored; the element size is the typesize `T`. Of `n = len / T` elements
//! the transform covers `m` of them and the rest of the block is copied unchanged:
//! chunk version >= 3 uses `m = n - n % 8`; version 2 (c-blosc 1.x) transforms all `n`
//! when `n % 8 == 0` and nothing otherwise (spec Trap 4).
//!
//! Bit plane `p = 8*j + b` (byte `j` of the element, bit `b`, LSB first) holds `m / 8`
//! bytes; bit `r` of its byte `k` is bit `b` of byte `j` of element `8*k + r`.

use super::kernels;
use crate::uninit::Out;

/// Blosc2 (chunk version >= 3) rule: transform the first m = n - n%8 elements, copy the tail.
pub fn bitshuffle(typesize: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "bitshuffle: length mismatch");
    let m = elements_v3(typesize, src.len());
    forward_at(kernels::level(), typesize, m * typesize, src, dst);
}

/// Undo [`bitshuffle`].
pub fn bitunshuffle(typesize: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "bitunshuffle: length mismatch");
    let m = elements_v3(typesize, src.len());
    inverse_at(kernels::level(), typesize, m * typesize, src, dst);
}

/// Blosc1 (chunk version 2) rule: only if len >= typesize and n % 8 == 0 transform all n elements
/// and copy the trailing len - n*typesize bytes; otherwise plain copy.
pub fn bitunshuffle_v2(typesize: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "bitunshuffle: length mismatch");
    let m = elements_v2(typesize, src.len());
    inverse_at(kernels::level(), typesize, m * typesize, src, dst);
}

/// Forward transform with the Blosc1 (chunk version 2) rule, for Blosc1 writers.
pub fn bitshuffle_v2(typesize: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "bitshuffle: length mismatch");
    let m = elements_v2(typesize, src.len());
    forward_at(kernels::level(), typesize, m * typesize, src, dst);
}

fn elements_v3(typesize: usize, len: usize) -> usize {
    assert!(typesize >= 1, "bitshuffle: typesize 0");
    let n = len / typesize;
    n - n % 8
}

fn elements_v2(typesize: usize, len: usize) -> usize {
    assert!(typesize >= 1, "bitshuffle: typesize 0");
    let n = len / typesize;
    if n.is_multiple_of(8) {
        n
    } else {
        0
    }
}

/// Transform the first `body` bytes (a multiple of `8 * t`), copy the rest.
pub(crate) fn forward_at(level: kernels::Level, t: usize, body: usize, src: &[u8], dst: &mut [u8]) {
    let (sb, st) = src.split_at(body);
    let (db, dt) = dst.split_at_mut(body);
    if body > 0 && !kernels::bitshuffle(level, t, sb, db) {
        forward_scalar(t, sb, db);
    }
    dt.copy_from_slice(st);
}

/// Inverse of [`forward_at`].
pub(crate) fn inverse_at(level: kernels::Level, t: usize, body: usize, src: &[u8], dst: &mut [u8]) {
    inverse_at_out(level, t, body, src, &mut Out::init(dst));
}

/// [`inverse_at`] into possibly uninitialised output, every byte of which is written.
fn inverse_at_out(level: kernels::Level, t: usize, body: usize, src: &[u8], dst: &mut Out) {
    assert_eq!(src.len(), dst.len(), "bitunshuffle: length mismatch");
    let (sb, st) = src.split_at(body);
    let (mut db, mut dt) = dst.reborrow().split_at(body);
    if body > 0 && !kernels::bitunshuffle(level, t, sb, &mut db) {
        inverse_scalar(t, sb, db.initialised());
    }
    dt.copy_from_slice(st);
}

/// Undo a bitshuffle into possibly uninitialised output (the decoder's last step, so a fresh
/// output buffer is not zero-filled first): `blosc1` selects the chunk version 2 rule.
pub(crate) fn bitunshuffle_out(typesize: usize, blosc1: bool, src: &[u8], dst: &mut Out) {
    let m = if blosc1 { elements_v2(typesize, src.len()) } else { elements_v3(typesize, src.len()) };
    inverse_at_out(kernels::level(), typesize, m * typesize, src, dst);
}

/// Transpose the 8x8 bit matrix held in `x` (row = byte, column = bit): bit `8*r + b`
/// moves to `8*b + r`.
#[inline]
pub(crate) fn transpose8x8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^= t ^ (t << 28);
    x
}

/// Scalar twin: `src.len()` is a multiple of `8 * t`.
pub(crate) fn forward_scalar(t: usize, src: &[u8], dst: &mut [u8]) {
    let plane = src.len() / t / 8;
    for (k, group) in src.chunks_exact(8 * t).enumerate() {
        for j in 0..t {
            let mut x = 0u64;
            for r in 0..8 {
                x |= (group[r * t + j] as u64) << (8 * r);
            }
            let y = transpose8x8(x).to_le_bytes();
            for (b, &byte) in y.iter().enumerate() {
                dst[(8 * j + b) * plane + k] = byte;
            }
        }
    }
}

/// Scalar twin: `src.len()` is a multiple of `8 * t`.
pub(crate) fn inverse_scalar(t: usize, src: &[u8], dst: &mut [u8]) {
    let plane = src.len() / t / 8;
    for (k, group) in dst.chunks_exact_mut(8 * t).enumerate() {
        for j in 0..t {
            let mut x = [0u8; 8];
            for (b, byte) in x.iter_mut().enumerate() {
                *byte = src[(8 * j + b) * plane + k];
            }
            let y = transpose8x8(u64::from_le_bytes(x));
            for r in 0..8 {
                group[r * t + j] = (y >> (8 * r)) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::kernels::available_levels;
    use crate::filter::testutil::*;

    /// Bit-by-bit definition from the spec, v3 rule.
    fn naive(t: usize, src: &[u8]) -> Vec<u8> {
        let m = elements_v3(t, src.len());
        let plane = m / 8;
        let mut out = src.to_vec();
        out[..m * t].fill(0);
        for e in 0..m {
            for j in 0..t {
                for b in 0..8 {
                    let bit = (src[e * t + j] >> b) & 1;
                    out[(8 * j + b) * plane + e / 8] |= bit << (e % 8);
                }
            }
        }
        out
    }

    #[test]
    fn known_int32_0_to_7() {
        let src: Vec<u8> = (0..8i32).flat_map(|v| v.to_le_bytes()).collect();
        let mut dst = vec![0u8; 32];
        bitshuffle(4, &src, &mut dst);
        assert_eq!(dst[0], 0xAA);
        assert_eq!(dst[1], 0xCC);
        assert_eq!(dst[2], 0xF0);
        assert!(dst[3..].iter().all(|&b| b == 0));
    }

    #[test]
    fn v2_rule() {
        let src: Vec<u8> = (0..36u8).collect();
        let mut dst = vec![0u8; 36];
        // 9 elements of 4 bytes: not a multiple of 8, so a plain copy.
        bitshuffle_v2(4, &src, &mut dst);
        assert_eq!(dst, src);
        bitunshuffle_v2(4, &src, &mut dst);
        assert_eq!(dst, src);
        // 8 elements of 4 bytes plus 3 trailing bytes: all 8 transformed, tail copied.
        let src: Vec<u8> = (0..35u8).collect();
        let mut enc = vec![0u8; 35];
        bitshuffle_v2(4, &src, &mut enc);
        assert_eq!(&enc[..32], &naive(4, &src[..32])[..]);
        assert_eq!(&enc[32..], &src[32..]);
        let mut back = vec![0u8; 35];
        bitunshuffle_v2(4, &enc, &mut back);
        assert_eq!(back, src);
        // Shorter than one element.
        let mut d = [0u8; 3];
        bitunshuffle_v2(4, &[1, 2, 3], &mut d);
        assert_eq!(d, [1, 2, 3]);
    }

    #[test]
    fn differential_all_levels() {
        let mut rng = Rng::new(2);
        for t in typesizes() {
            for len in lengths() {
                if t > 32 && len > 5000 && len % 7 != 0 {
                    continue; // keep the naive reference affordable
                }
                let off = 1 + (len % 15);
                let buf = rng.bytes(len + off);
                let src = &buf[off..];
                let want = naive(t, src);
                for &lv in &available_levels() {
                    let m = elements_v3(t, len);
                    let mut dbuf = vec![0xEEu8; len + 16];
                    let dst = &mut dbuf[off..off + len];
                    forward_at(lv, t, m * t, src, dst);
                    assert_eq!(dst, &want[..], "bitshuffle t={t} len={len} {lv:?}");
                    let mut bbuf = vec![0xEEu8; len + 16];
                    let back = &mut bbuf[(off + 5) % 16..(off + 5) % 16 + len];
                    inverse_at(lv, t, m * t, &want, back);
                    assert_eq!(back, src, "bitunshuffle t={t} len={len} {lv:?}");
                }
            }
        }
    }

    /// The decoder's path (the one that may write into uninitialised output) writes every
    /// byte, at every level and for both version rules: output prefilled with 0x00 and with
    /// 0xFF must come out equal.
    #[test]
    fn inverse_into_uninit_writes_every_byte() {
        let mut rng = Rng::new(5);
        for t in [1, 2, 3, 4, 8, 16] {
            for len in [0, 7, 64, 200, 256 * 8 + 24, 4096 + 8 * t + 3, 65_536 + 16 * t] {
                let src = rng.bytes(len);
                for blosc1 in [false, true] {
                    let m = if blosc1 { elements_v2(t, len) } else { elements_v3(t, len) };
                    let mut want = vec![0u8; len];
                    inverse_at(kernels::Level::Scalar, t, m * t, &src, &mut want);
                    for &lv in &available_levels() {
                        for fill in [0x00u8, 0xFF] {
                            let mut buf = vec![fill; len + 3];
                            inverse_at_out(lv, t, m * t, &src, &mut Out::init(&mut buf[3..]));
                            assert_eq!(&buf[3..], &want[..], "t={t} len={len} blosc1={blosc1} {lv:?} fill {fill:#x}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn compat_vector_2_20() {
        let Some(file) = compat_vector("bitshuffle-2.20.0.cdata") else {
            return;
        };
        let reference = reference_data();
        let mut out = vec![0u8; reference.len()];
        bitshuffle(4, &reference, &mut out);
        assert!(out == file, "bitshuffle of reference data differs from bitshuffle-2.20.0.cdata");
        bitunshuffle(4, &file, &mut out);
        assert!(out == reference, "bitunshuffle of bitshuffle-2.20.0.cdata differs");
    }

    #[test]
    #[ignore]
    fn filter_speed_bitshuffle() {
        let len = 8 << 20;
        let src = Rng::new(7).bytes(len);
        let mut dst = vec![0u8; len];
        for t in [1, 2, 4, 8, 3, 16] {
            report_speed(&format!("bitshuffle t={t}"), len, || bitshuffle(t, &src, &mut dst));
            report_speed(&format!("bitunshuffle t={t}"), len, || bitunshuffle(t, &src, &mut dst));
        }
    }
}
