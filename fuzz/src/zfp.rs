//! The ZFP codecs (33-35) on their own: arbitrary streams into each mode's decoder, and
//! arbitrary blocks through encode + decode.

use oxblosc_chunk::codec::zfp::{self, Mode};

/// Largest block the target codes (items).
const MAX_ITEMS: usize = 1 << 16;

/// Byte 0: bit 0 float32/float64, bits 1-2 dimensions - 1, bit 3 decode (0) or round trip
/// (1). Byte 1: `codec_meta`. Then one byte per dimension: the block shape (decode: 1-32,
/// round trip: 4-19). The rest: the stream (decode) or the bytes that fill the block,
/// repeated (round trip: the stream must decode, and a fixed-rate stream has its exact size).
pub fn fuzz_zfp(mode: Mode, data: &[u8]) {
    let (Some(&sel), Some(&meta)) = (data.first(), data.get(1)) else { return };
    let typesize = if sel & 1 == 0 { 4 } else { 8 };
    let dims = 1 + usize::from((sel >> 1) & 3);
    let round_trip = sel & 8 != 0;
    let Some(dim_bytes) = data.get(2..2 + dims) else { return };
    let shape: Vec<usize> =
        dim_bytes.iter().map(|&b| if round_trip { 4 + usize::from(b % 16) } else { 1 + usize::from(b % 32) }).collect();
    let items: usize = shape.iter().product();
    if items > MAX_ITEMS {
        return;
    }
    let rest = &data[2 + dims..];
    let len = items * typesize;
    if !round_trip {
        let mut dst = vec![0u8; len];
        let _ = zfp::decompress(mode, meta, typesize, &shape, rest, &mut dst);
        return;
    }
    let block: Vec<u8> = if rest.is_empty() { vec![0; len] } else { rest.iter().copied().cycle().take(len).collect() };
    // Room for the largest stream: every zfp block at zfp's cap (16658 bits) or, for fixed
    // rate, at its rate (up to 255% of the item bits, above the cap for 4-d blocks).
    let zblocks: usize = shape.iter().map(|d| d.div_ceil(4)).product();
    let rate_bits = ((1usize << (2 * dims)) * usize::from(meta) * 8 * typesize + 50) / 100;
    let rate_bits = rate_bits.max(if typesize == 4 { 9 } else { 12 });
    let mut enc = vec![0u8; zblocks * (rate_bits.max(16658) / 8 + 1) + 8];
    let n = zfp::compress(mode, meta, typesize, &shape, &block, &mut enc);
    assert!(n > 0 && n % 8 == 0, "the worst-case budget always fits ({n} bytes)");
    let mut back = vec![0u8; len];
    zfp::decompress(mode, meta, typesize, &shape, &enc[..n], &mut back).expect("our own stream decodes");
    if mode == Mode::Rate {
        assert_eq!(n, (zblocks * rate_bits).div_ceil(64) * 8, "fixed-rate size");
    }
}
