//! DELTA, filter id 3 (format spec 2.5): XOR every block against block 0 of the chunk.
//!
//! filters_meta is ignored. The lag `w` is the typesize if it is 1, 2, 4 or 8, else 8 when
//! the typesize is a multiple of 8, else 1. Block 0 is XORed with itself at lag `w`; other
//! blocks with the original block 0, so block 0 must be fully decoded first (spec Trap 16).
//! Bytes past the last whole word are copied through (C-Blosc2 leaves them unwritten).

/// The XOR lag for a typesize.
pub fn word_width(typesize: usize) -> usize {
    match typesize {
        1 | 2 | 4 | 8 => typesize,
        t if t % 8 == 0 => 8,
        _ => 1,
    }
}

/// Encode one block. `block0` = the ORIGINAL, unfiltered bytes of block 0 of the chunk (len >= src.len() unless is_block0).
///
/// A `block0` shorter than `src` only covers its own length; the rest is copied through.
pub fn encode(typesize: usize, block0: &[u8], is_block0: bool, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "delta: length mismatch");
    let w = word_width(typesize);
    let q = src.len() / w * w;
    if is_block0 {
        let lead = w.min(q);
        dst[..lead].copy_from_slice(&src[..lead]);
        for ((o, a), b) in dst[lead..q].iter_mut().zip(&src[lead..q]).zip(&src[..q - lead]) {
            *o = a ^ b;
        }
        dst[q..].copy_from_slice(&src[q..]);
    } else {
        let q = q.min(block0.len());
        xor_into(&src[..q], &block0[..q], &mut dst[..q]);
        dst[q..].copy_from_slice(&src[q..]);
    }
}

/// Decode one block. `block0` = the fully decoded block 0 (ignored when is_block0; then running XOR at lag w).
pub fn decode(typesize: usize, block0: &[u8], is_block0: bool, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "delta: length mismatch");
    let w = word_width(typesize);
    let q = src.len() / w * w;
    if is_block0 {
        running_xor(w, &src[..q], &mut dst[..q]);
        dst[q..].copy_from_slice(&src[q..]);
    } else {
        let q = q.min(block0.len());
        xor_into(&src[..q], &block0[..q], &mut dst[..q]);
        dst[q..].copy_from_slice(&src[q..]);
    }
}

fn xor_into(a: &[u8], b: &[u8], dst: &mut [u8]) {
    for ((o, x), y) in dst.iter_mut().zip(a).zip(b) {
        *o = x ^ y;
    }
}

/// `dst[k] = src[k] ^ dst[k - w]` (with `dst[k] = src[k]` for `k < w`); `w` divides 8.
///
/// Works on 64-bit words: an in-word prefix XOR at lag `w`, then the carry of the previous
/// word's last `w` bytes, broadcast.
fn running_xor(w: usize, src: &[u8], dst: &mut [u8]) {
    let mut carry = 0u64; // last w bytes of the previous output word, repeated
    let mut sc = src.chunks_exact(8);
    let mut dc = dst.chunks_exact_mut(8);
    for (s, d) in (&mut sc).zip(&mut dc) {
        let mut x = u64::from_le_bytes(s.try_into().unwrap());
        let mut lag = 8 * w;
        while lag < 64 {
            x ^= x << lag;
            lag *= 2;
        }
        x ^= carry;
        d.copy_from_slice(&x.to_le_bytes());
        carry = broadcast_top(x, w);
    }
    let (s, d) = (sc.remainder(), dc.into_remainder());
    let c = carry.to_le_bytes();
    for k in 0..s.len() {
        let prev = if k >= w { d[k - w] } else { c[8 - w + k] };
        d[k] = s[k] ^ prev;
    }
}

/// The top `w` bytes of `x` repeated across a word (`w` divides 8).
fn broadcast_top(x: u64, w: usize) -> u64 {
    match w {
        8 => x,
        4 => (x >> 32) * 0x0000_0001_0000_0001,
        2 => (x >> 48) * 0x0001_0001_0001_0001,
        _ => (x >> 56) * 0x0101_0101_0101_0101,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::testutil::*;

    fn naive_decode0(w: usize, src: &[u8]) -> Vec<u8> {
        let q = src.len() / w * w;
        let mut out = src.to_vec();
        for k in w..q {
            out[k] ^= out[k - w];
        }
        out
    }

    #[test]
    fn widths() {
        assert_eq!(word_width(1), 1);
        assert_eq!(word_width(2), 2);
        assert_eq!(word_width(3), 1);
        assert_eq!(word_width(4), 4);
        assert_eq!(word_width(8), 8);
        assert_eq!(word_width(12), 1);
        assert_eq!(word_width(16), 8);
        assert_eq!(word_width(24), 8);
    }

    #[test]
    fn known_block0() {
        let src = [1u8, 2, 3, 4, 5, 6, 7];
        let mut dst = [0u8; 7];
        encode(2, &[], true, &src, &mut dst);
        assert_eq!(dst, [1, 2, 1 ^ 3, 2 ^ 4, 3 ^ 5, 4 ^ 6, 7]);
        let mut back = [0u8; 7];
        decode(2, &[], true, &dst, &mut back);
        assert_eq!(back, src);
    }

    #[test]
    fn round_trips() {
        let mut rng = Rng::new(3);
        for t in typesizes() {
            for len in lengths() {
                let block0 = rng.bytes(len + 5);
                let w = word_width(t);
                let mut enc0 = vec![0u8; block0.len()];
                encode(t, &block0, true, &block0, &mut enc0);
                let mut dec0 = vec![0xEEu8; block0.len()];
                decode(t, &[], true, &enc0, &mut dec0);
                assert_eq!(dec0, block0, "block0 t={t} len={len}");
                let q = block0.len() / w * w;
                assert_eq!(&enc0[q..], &block0[q..], "tail copied");
                assert_eq!(naive_decode0(w, &enc0), block0);

                let src = rng.bytes(len);
                let mut enc = vec![0u8; len];
                encode(t, &block0, false, &src, &mut enc);
                let q = len / w * w;
                for k in 0..len {
                    let want = if k < q { src[k] ^ block0[k] } else { src[k] };
                    assert_eq!(enc[k], want);
                }
                let mut dec = vec![0xEEu8; len];
                decode(t, &dec0, false, &enc, &mut dec);
                assert_eq!(dec, src, "block t={t} len={len}");
            }
        }
    }
}
