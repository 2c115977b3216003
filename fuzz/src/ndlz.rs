//! The NDLZ codec (32) on its own: arbitrary streams into its decoder, and arbitrary blocks
//! through encode + decode (must give the block back).

use oxblosc_chunk::codec::ndlz;

/// Largest block the target decodes (bytes).
const MAX_BLOCK: usize = 1 << 16;

/// Byte 0: bit 0 picks 4x4 or 8x8 cells, bit 1 decode or round trip. Decode: the rest is a
/// stream (its header gives the block size). Round trip: bytes 1-2 are the block shape
/// (1-64 each), the rest (repeated) fills the block.
pub fn fuzz_ndlz(data: &[u8]) {
    let Some(&sel) = data.first() else { return };
    let n = if sel & 1 == 0 { 4 } else { 8 };
    if sel & 2 == 0 {
        let s = &data[1..];
        let Some(h) = s.get(1..9) else { return };
        let b0 = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let b1 = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        match b0.checked_mul(b1) {
            Some(len) if len <= MAX_BLOCK => {
                let mut dst = vec![0u8; len];
                let _ = ndlz::decode(s, n, &mut dst);
            }
            _ => {}
        }
        return;
    }
    let (Some(&d0), Some(&d1)) = (data.get(1), data.get(2)) else { return };
    let (b0, b1) = (1 + usize::from(d0 % 64), 1 + usize::from(d1 % 64));
    let fill = &data[3..];
    let block: Vec<u8> =
        if fill.is_empty() { vec![0; b0 * b1] } else { fill.iter().copied().cycle().take(b0 * b1).collect() };
    let mut enc = vec![0u8; b0 * b1 + 64];
    let len = ndlz::encode(&block, b0, b1, n, &mut enc);
    if len > 0 {
        let mut back = vec![0u8; block.len()];
        ndlz::decode(&enc[..len], n, &mut back).expect("our own stream decodes");
        assert!(back == block, "round trip differs ({b0}x{b1}, cells {n})");
    }
}

#[cfg(test)]
mod tests {
    /// The seeds (python-blosc2 NDLZ streams) decode, so the target starts from real streams.
    #[test]
    fn seeds_decode() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions/ndlz");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let data = std::fs::read(e.unwrap().path()).unwrap();
            let s = &data[1..];
            let b0 = u32::from_le_bytes(s[1..5].try_into().unwrap()) as usize;
            let b1 = u32::from_le_bytes(s[5..9].try_into().unwrap()) as usize;
            let mut dst = vec![0u8; b0 * b1];
            super::ndlz::decode(s, if data[0] & 1 == 0 { 4 } else { 8 }, &mut dst).unwrap();
            n += 1;
        }
        assert!(n >= 4);
    }
}
