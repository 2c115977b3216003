//! BYTEDELTA, filter ids 35 and 34 (format spec 2.7): byte differences within each stream.
//!
//! filters_meta = number of streams `S` (0 means the super-chunk typesize; the caller resolves
//! it). The block holds `S` streams of `L = len / S` bytes (usually after SHUFFLE by `S`); each
//! byte becomes its difference from the previous byte of its stream (mod 256, starting from 0).
//! The trailing `len - S*L` bytes are copied. Id 34 is the variant written by SIMD builds of
//! C-Blosc2, whose chain restarts at 0 for the last `L % 16` bytes of each stream.

use super::{kernels, shuffle};
use crate::uninit::Out;

/// Forward transform, id 35. `streams >= 1`.
pub fn encode(streams: usize, src: &[u8], dst: &mut [u8]) {
    each_stream(streams, src, dst, |s, d| diff(0, s, d));
}

/// Inverse of [`encode`].
pub fn decode(streams: usize, src: &[u8], dst: &mut [u8]) {
    let lv = kernels::level();
    each_stream(streams, src, dst, |s, d| prefix_sum_at(lv, s, d));
}

/// id 34 as written by SIMD builds of C-Blosc2: running previous-byte restarts at 0 for the last L % 16 bytes of each stream.
pub fn encode_v1(streams: usize, src: &[u8], dst: &mut [u8]) {
    each_stream(streams, src, dst, |s, d| {
        let cut = s.len() - s.len() % 16;
        diff(0, &s[..cut], &mut d[..cut]);
        diff(0, &s[cut..], &mut d[cut..]);
    });
}

/// Inverse of [`encode_v1`].
pub fn decode_v1(streams: usize, src: &[u8], dst: &mut [u8]) {
    let lv = kernels::level();
    each_stream(streams, src, dst, |s, d| {
        let cut = s.len() - s.len() % 16;
        prefix_sum_at(lv, &s[..cut], &mut d[..cut]);
        prefix_sum_at(lv, &s[cut..], &mut d[cut..]);
    });
}

/// Bytes per row in one tile of [`decode_unshuffle_rows`]: `e` rows of running sums (8 KiB
/// at most) stay in L1 until the unshuffle reads them.
const TILE: usize = 1024;

/// Undo BYTEDELTA over `rows.len()` streams and then SHUFFLE of that element size, in one
/// pass: `rows[k]` is stream k of the block (byte k of every element, still as differences),
/// `dst` gets the elements. Equal to [`decode`] (or [`decode_v1`] with `v1`) followed by an
/// unshuffle, without writing the summed block out in between: tile by tile, the rows' sums
/// go to `tile` (scratch) and are interleaved into `dst` from there. Only for the element
/// sizes [`shuffle::rows_supported`] accepts; every byte of `dst` is written.
pub(crate) fn decode_unshuffle_rows(rows: &[&[u8]], v1: bool, tile: &mut Vec<u8>, dst: &mut Out) {
    decode_unshuffle_rows_at(kernels::level(), rows, v1, tile, dst);
}

fn decode_unshuffle_rows_at(lv: kernels::Level, rows: &[&[u8]], v1: bool, tile: &mut Vec<u8>, dst: &mut Out) {
    let e = rows.len();
    let n = rows.first().map_or(0, |r| r.len());
    assert!(
        (1..=shuffle::MAX_ROWS).contains(&e) && rows.iter().all(|r| r.len() == n) && dst.len() == n * e,
        "decode_unshuffle_rows: lengths"
    );
    // The SIMD-build variant's chains restart at 0 for the last n % 16 bytes of each stream.
    let cut = if v1 { n - n % 16 } else { n };
    tile.resize(e * TILE, 0);
    let mut carry = [0u8; shuffle::MAX_ROWS];
    let mut t0 = 0;
    while t0 < n {
        let t1 = (t0 + TILE).min(n);
        // Whole 16-byte groups of the chained part: all rows at once where SIMD allows.
        let simd = (cut.min(t1).saturating_sub(t0)) / 16 * 16;
        let srcs: [&[u8]; shuffle::MAX_ROWS] =
            std::array::from_fn(|k| if k < e { &rows[k][t0..t0 + simd] } else { &[] });
        let done =
            if simd > 0 && kernels::prefix_sum_rows(lv, &srcs[..e], tile, TILE, &mut carry[..e]) { simd } else { 0 };
        for k in 0..e {
            let out = &mut tile[k * TILE..k * TILE + (t1 - t0)];
            let src = &rows[k][t0..t1];
            let a = cut.clamp(t0, t1) - t0; // chained: [done, a); restarting at 0: [a, ..)
            if done < a {
                carry[k] = prefix_sum_from(lv, carry[k], &src[done..a], &mut out[done..a]);
            }
            if a < src.len() {
                prefix_sum_from(lv, 0, &src[a..], &mut out[a..]);
            }
        }
        let w = t1 - t0;
        let sums: [&[u8]; shuffle::MAX_ROWS] =
            std::array::from_fn(|k| if k < e { &tile[k * TILE..k * TILE + w] } else { &[] });
        shuffle::unshuffle_rows_at(lv, &sums[..e], &mut dst.slice(t0 * e, t1 * e));
        t0 = t1;
    }
}

/// Running sum of `s` into `d` continuing from `prev`; returns the last sum.
fn prefix_sum_from(level: kernels::Level, prev: u8, s: &[u8], d: &mut [u8]) -> u8 {
    if prev == 0 {
        let (done, acc) = kernels::prefix_sum(level, s, d);
        return prefix_sum(acc, &s[done..], &mut d[done..]);
    }
    prefix_sum(prev, s, d)
}

fn each_stream(streams: usize, src: &[u8], dst: &mut [u8], mut f: impl FnMut(&[u8], &mut [u8])) {
    assert!(streams >= 1, "bytedelta: zero streams");
    assert_eq!(src.len(), dst.len(), "bytedelta: length mismatch");
    let l = src.len() / streams;
    let body = l * streams;
    if l > 0 {
        for (s, d) in src[..body].chunks_exact(l).zip(dst[..body].chunks_exact_mut(l)) {
            f(s, d);
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// `d[k] = s[k] - s[k-1]`, with `s[-1] = prev`.
fn diff(prev: u8, s: &[u8], d: &mut [u8]) {
    if let (Some(&first), Some(o)) = (s.first(), d.first_mut()) {
        *o = first.wrapping_sub(prev);
        for ((o, a), b) in d[1..].iter_mut().zip(&s[1..]).zip(s) {
            *o = a.wrapping_sub(*b);
        }
    }
}

/// Running sum from 0: SIMD for whole 16-byte groups, then the scalar twin.
fn prefix_sum_at(level: kernels::Level, s: &[u8], d: &mut [u8]) {
    let (done, acc) = kernels::prefix_sum(level, s, d);
    prefix_sum(acc, &s[done..], &mut d[done..]);
}

/// `d[k] = s[k] + d[k-1]`, with `d[-1] = prev`; returns the last sum (`prev` when empty).
/// Eight bytes at a time: an in-word prefix sum with per-byte carries kept apart by adding
/// byte-wise (no carry across byte lanes).
fn prefix_sum(prev: u8, s: &[u8], d: &mut [u8]) -> u8 {
    let mut acc = prev;
    let mut sc = s.chunks_exact(8);
    let mut dc = d.chunks_exact_mut(8);
    for (s8, d8) in (&mut sc).zip(&mut dc) {
        let mut x = u64::from_le_bytes(s8.try_into().unwrap());
        x = add_bytes(x, x << 8);
        x = add_bytes(x, x << 16);
        x = add_bytes(x, x << 32);
        x = add_bytes(x, (acc as u64) * 0x0101_0101_0101_0101);
        d8.copy_from_slice(&x.to_le_bytes());
        acc = (x >> 56) as u8;
    }
    for (o, v) in dc.into_remainder().iter_mut().zip(sc.remainder()) {
        acc = acc.wrapping_add(*v);
        *o = acc;
    }
    acc
}

/// Lane-wise `a + b` on eight bytes (mod 256 per byte).
#[inline]
fn add_bytes(a: u64, b: u64) -> u64 {
    const H: u64 = 0x8080_8080_8080_8080;
    ((a & !H) + (b & !H)) ^ ((a ^ b) & H)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fused pass equals bytedelta decode then a scalar unshuffle, at every SIMD level,
    /// for every element size 1-8, both variants, rows at odd addresses, lengths around the
    /// 16-byte groups and the tile size (carries across tiles), and rows of one byte.
    #[test]
    fn decode_unshuffle_rows_matches_the_two_passes() {
        let mut rng = Rng::new(11);
        for e in 1..=shuffle::MAX_ROWS {
            for n in (0..40).chain([255, 1023, 1024, 1025, 2048 + 15, 3 * TILE + 17, 10_000]) {
                let mut src = rng.bytes(n * e);
                if n > 0 && e > 1 {
                    src[..n].fill(7); // a run row, as the engine passes for run streams
                }
                for v1 in [false, true] {
                    let mut summed = vec![0u8; n * e];
                    if v1 {
                        decode_v1(e, &src, &mut summed);
                    } else {
                        decode(e, &src, &mut summed);
                    }
                    let mut want = vec![0u8; n * e];
                    shuffle::unshuffle_at(kernels::Level::Scalar, e, &summed, &mut Out::init(&mut want));
                    let copies: Vec<Vec<u8>> =
                        (0..e).map(|j| [vec![0u8; 1 + j % 3], src[j * n..(j + 1) * n].to_vec()].concat()).collect();
                    let rows: Vec<&[u8]> = copies.iter().enumerate().map(|(j, c)| &c[1 + j % 3..]).collect();
                    for &lv in &kernels::available_levels() {
                        let mut got = vec![0xEEu8; n * e];
                        let mut tile = Vec::new();
                        decode_unshuffle_rows_at(lv, &rows, v1, &mut tile, &mut Out::init(&mut got));
                        assert!(got == want, "e={e} n={n} v1={v1} {lv:?}");
                    }
                }
            }
        }
    }
    use crate::filter::testutil::*;

    #[test]
    fn known() {
        let src = [1u8, 3, 6, 10, 200, 100, 0, 5, 9];
        let mut enc = [0u8; 9];
        encode(2, &src, &mut enc);
        assert_eq!(enc, [1, 2, 3, 4, 200, 156, 156, 5, 9]);
        let mut dec = [0u8; 9];
        decode(2, &enc, &mut dec);
        assert_eq!(dec, src);
    }

    #[test]
    fn v1_restarts_for_the_tail() {
        let src: Vec<u8> = (0..40u8).map(|v| v.wrapping_mul(7)).collect();
        let mut enc = vec![0u8; 40];
        encode_v1(2, &src, &mut enc); // L = 20: 16 chained bytes, then 4 restarting at 0
        let mut want = vec![0u8; 40];
        for s in 0..2 {
            for k in 0..20 {
                let prev = if k == 0 || k == 16 { 0 } else { src[s * 20 + k - 1] };
                want[s * 20 + k] = src[s * 20 + k].wrapping_sub(prev);
            }
        }
        assert_eq!(enc, want);
        let mut dec = vec![0u8; 40];
        decode_v1(2, &enc, &mut dec);
        assert_eq!(dec, src);
    }

    #[test]
    fn round_trips() {
        let mut rng = Rng::new(4);
        for s in typesizes() {
            for len in lengths() {
                let src = rng.bytes(len);
                let mut enc = vec![0u8; len];
                let mut dec = vec![0xEEu8; len];
                encode(s, &src, &mut enc);
                let l = len / s;
                for k in 0..len {
                    let want = if k >= l * s || k % l == 0 { src[k] } else { src[k].wrapping_sub(src[k - 1]) };
                    assert_eq!(enc[k], want, "s={s} len={len} k={k}");
                }
                decode(s, &enc, &mut dec);
                assert_eq!(dec, src);
                encode_v1(s, &src, &mut enc);
                decode_v1(s, &enc, &mut dec);
                assert_eq!(dec, src);
            }
        }
    }

    #[test]
    fn prefix_sum_differential() {
        let mut rng = Rng::new(5);
        for len in lengths() {
            let off = 1 + len % 15;
            let buf = rng.bytes(len + off);
            let s = &buf[off..];
            let mut want = vec![0u8; len];
            prefix_sum(0, s, &mut want);
            let mut acc = 0u8;
            for (k, v) in s.iter().enumerate() {
                acc = acc.wrapping_add(*v);
                assert_eq!(want[k], acc);
            }
            for &lv in &kernels::available_levels() {
                let mut dbuf = vec![0xEEu8; len + 16];
                let d = &mut dbuf[(off + 7) % 16..(off + 7) % 16 + len];
                prefix_sum_at(lv, s, d);
                assert_eq!(d, &want[..], "len={len} {lv:?}");
            }
        }
    }

    #[test]
    #[ignore]
    fn filter_speed_bytedelta() {
        let len = 8 << 20;
        let src = Rng::new(7).bytes(len);
        let mut dst = vec![0u8; len];
        for s in [1, 4, 8] {
            report_speed(&format!("bytedelta encode s={s}"), len, || encode(s, &src, &mut dst));
            report_speed(&format!("bytedelta decode s={s}"), len, || decode(s, &src, &mut dst));
        }
    }
}
