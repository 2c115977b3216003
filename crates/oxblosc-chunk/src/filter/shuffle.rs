//! SHUFFLE, filter id 1 (format spec 2.3): byte transposition by element size.
//!
//! `E` = filters_meta, or the typesize when meta is 0 (the caller resolves it). With
//! `n = len / E` elements, byte `j` of element `i` goes to `out[j*n + i]`; the trailing
//! `len % E` bytes are copied unchanged. `E = 1` is the identity.

use super::kernels;
use crate::uninit::Out;

/// The element size of a SHUFFLE slot: its meta, or the typesize when the meta is 0.
pub(crate) fn elem_size(meta: u8, typesize: usize) -> usize {
    if meta == 0 {
        typesize
    } else {
        usize::from(meta)
    }
}

/// Byte-shuffle `src` into `dst` by `elem_size` (callers guarantee equal lengths).
pub fn shuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
    shuffle_at(kernels::level(), elem_size, src, dst);
}

/// Undo [`shuffle`].
pub fn unshuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
    unshuffle_at(kernels::level(), elem_size, src, &mut Out::init(dst));
}

/// [`unshuffle`] into possibly uninitialised output: writes every byte of `dst`.
pub(crate) fn unshuffle_out(elem_size: usize, src: &[u8], dst: &mut Out) {
    unshuffle_at(kernels::level(), elem_size, src, dst);
}

/// Most rows [`unshuffle_rows`] takes.
pub(crate) const MAX_ROWS: usize = 8;

/// Can [`unshuffle_rows`] take `e` rows on this CPU?
pub(crate) fn rows_supported(e: usize) -> bool {
    kernels::unshuffle_rows_supported(kernels::level(), e)
}

/// [`unshuffle`] from the `e` rows of a shuffled buffer held separately (row j = byte j of
/// every element, all of one length): writes every byte of `dst` (`e` times a row's length).
/// Only for the element sizes [`rows_supported`] accepts.
pub(crate) fn unshuffle_rows(rows: &[&[u8]], dst: &mut Out) {
    unshuffle_rows_at(kernels::level(), rows, dst);
}

pub(crate) fn unshuffle_rows_at(level: kernels::Level, rows: &[&[u8]], dst: &mut Out) {
    let n = rows.first().map_or(0, |r| r.len());
    assert!(rows.iter().all(|r| r.len() == n) && dst.len() == n * rows.len(), "unshuffle_rows: lengths");
    if !kernels::unshuffle_rows(level, rows, dst) {
        for (j, row) in rows.iter().enumerate() {
            for (i, b) in row.iter().enumerate() {
                dst.set(i * rows.len() + j, *b);
            }
        }
    }
}

pub(crate) fn shuffle_at(level: kernels::Level, elem_size: usize, src: &[u8], dst: &mut [u8]) {
    assert!(elem_size >= 1, "shuffle: element size 0");
    assert_eq!(src.len(), dst.len(), "shuffle: length mismatch");
    let n = src.len() / elem_size;
    let body = n * elem_size;
    if elem_size == 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let (sb, st) = src.split_at(body);
    let (db, dt) = dst.split_at_mut(body);
    if !kernels::shuffle(level, elem_size, sb, db) {
        shuffle_scalar(elem_size, sb, db);
    }
    dt.copy_from_slice(st);
}

pub(crate) fn unshuffle_at(level: kernels::Level, elem_size: usize, src: &[u8], dst: &mut Out) {
    assert!(elem_size >= 1, "unshuffle: element size 0");
    assert_eq!(src.len(), dst.len(), "unshuffle: length mismatch");
    let n = src.len() / elem_size;
    let body = n * elem_size;
    if elem_size == 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let (sb, st) = src.split_at(body);
    let (mut db, mut dt) = dst.reborrow().split_at(body);
    if !kernels::unshuffle(level, elem_size, sb, &mut db) {
        unshuffle_scalar(elem_size, sb, &mut db);
    }
    dt.copy_from_slice(st);
}

/// Scalar twin: `src.len()` is a multiple of `e`.
pub(crate) fn shuffle_scalar(e: usize, src: &[u8], dst: &mut [u8]) {
    let n = src.len() / e;
    for (j, row) in dst.chunks_exact_mut(n).enumerate() {
        for (o, s) in row.iter_mut().zip(src[j..].iter().step_by(e)) {
            *o = *s;
        }
    }
}

/// Scalar twin: `src.len()` is a multiple of `e`; writes every byte of `dst`.
pub(crate) fn unshuffle_scalar(e: usize, src: &[u8], dst: &mut Out) {
    let n = src.len() / e;
    for (j, row) in src.chunks_exact(n).enumerate() {
        for (i, s) in row.iter().enumerate() {
            dst.set(i * e + j, *s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::kernels::available_levels;
    use crate::filter::testutil::*;

    fn naive(e: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / e;
        let mut out = src.to_vec();
        for i in 0..n {
            for j in 0..e {
                out[j * n + i] = src[i * e + j];
            }
        }
        out
    }

    #[test]
    fn known_small() {
        let src = [1, 2, 3, 4, 5, 6, 7];
        let mut dst = [0u8; 7];
        shuffle(2, &src, &mut dst);
        assert_eq!(dst, [1, 3, 5, 2, 4, 6, 7]);
        let mut back = [0u8; 7];
        unshuffle(2, &dst, &mut back);
        assert_eq!(back, src);
    }

    #[test]
    fn differential_all_levels() {
        let mut rng = Rng::new(1);
        for e in typesizes() {
            for len in lengths() {
                let off = 1 + (len % 15);
                let buf = rng.bytes(len + off);
                let src = &buf[off..];
                let want = naive(e, src);
                for &lv in &available_levels() {
                    let mut dbuf = vec![0xEEu8; len + 16];
                    let dst = &mut dbuf[off..off + len];
                    shuffle_at(lv, e, src, dst);
                    assert_eq!(dst, &want[..], "shuffle e={e} len={len} {lv:?}");
                    let mut bbuf = vec![0xEEu8; len + 16];
                    let back = &mut bbuf[(off + 3) % 16..(off + 3) % 16 + len];
                    unshuffle_at(lv, e, &want, &mut Out::init(back));
                    assert_eq!(back, src, "unshuffle e={e} len={len} {lv:?}");
                }
            }
        }
    }

    /// The rows kernel equals the contiguous unshuffle, rows placed anywhere (unaligned).
    #[test]
    fn unshuffle_rows_matches_unshuffle() {
        let mut rng = Rng::new(3);
        for e in 2..=8 {
            for n in (0..200).chain([1021, 4099, 65_537]) {
                let src = rng.bytes(n * e);
                let mut want = vec![0u8; n * e];
                unshuffle_at(kernels::Level::Scalar, e, &src, &mut Out::init(&mut want));
                let copies: Vec<Vec<u8>> =
                    (0..e).map(|j| [vec![0u8; 1 + j % 3], src[j * n..(j + 1) * n].to_vec()].concat()).collect();
                let rows: Vec<&[u8]> = copies.iter().enumerate().map(|(j, c)| &c[1 + j % 3..]).collect();
                for &lv in &available_levels() {
                    // Destinations at every offset from a 64-byte boundary (the kernel aligns
                    // its stores first).
                    for off in [0, 1, 2, 4, 8, 16, 24, 31] {
                        let mut backing = vec![0xEEu8; n * e + 128];
                        let base = (64 - backing.as_ptr() as usize % 64) % 64 + off;
                        let got = &mut backing[base..base + n * e];
                        unshuffle_rows_at(lv, &rows, &mut Out::init(got));
                        assert!(*got == want[..], "e={e} n={n} {lv:?} dst offset {off}");
                    }
                }
            }
        }
    }

    #[test]
    fn compat_vector_2_20() {
        let Some(file) = compat_vector("shuffle-2.20.0.cdata") else {
            return;
        };
        let reference = reference_data();
        let mut out = vec![0u8; reference.len()];
        shuffle(4, &reference, &mut out);
        assert!(out == file, "shuffle of reference data differs from shuffle-2.20.0.cdata");
        unshuffle(4, &file, &mut out);
        assert!(out == reference, "unshuffle of shuffle-2.20.0.cdata differs from reference");
    }

    #[test]
    #[ignore]
    fn filter_speed_shuffle() {
        let len = 8 << 20;
        let src = Rng::new(7).bytes(len);
        let mut dst = vec![0u8; len];
        report_speed("memcpy", len, || std::hint::black_box(&mut dst).copy_from_slice(std::hint::black_box(&src)));
        for e in [2, 3, 4, 8, 12, 16, 32] {
            report_speed(&format!("shuffle e={e}"), len, || shuffle(e, &src, &mut dst));
            report_speed(&format!("unshuffle e={e}"), len, || unshuffle(e, &src, &mut dst));
        }
    }
}
