//! Our LZ4 block decoder on its own: arbitrary streams into it and into the plain reference
//! decoder (`lz4_decode::decode_reference`: the same bytes or both an error), and whatever
//! the reference accepts into liblz4 too (the same bytes); arbitrary data through liblz4's
//! encoder into ours.

use oxblosc_chunk::codec::{lz4, lz4_decode};

/// Byte 0: bit 0 picks decode or round trip. Decode: bytes 1-2 the output capacity; with bit
/// 3, byte 3 the length of a dictionary that comes first; the rest is the block. Round trip:
/// bit 1 picks LZ4 or LZ4HC, bits 2-5 the level; the rest is the data.
pub fn fuzz_lz4(data: &[u8]) {
    let Some(&sel) = data.first() else { return };
    if sel & 1 == 0 {
        let Some(c) = data.get(1..3) else { return };
        let cap = usize::from(u16::from_le_bytes([c[0], c[1]]));
        // Bit 3: byte 3 gives the length of a dictionary that comes before the block.
        let (dict, src): (&[u8], &[u8]) = if sel & 8 == 0 {
            (&[], &data[3..])
        } else {
            let Some(&k) = data.get(3) else { return };
            let rest = &data[4..];
            rest.split_at(usize::from(k).min(rest.len()))
        };
        let want = lz4_decode::decode_reference_with_dict(src, cap, dict).ok();
        let mut got = vec![0x5Au8; cap];
        match (lz4_decode::decode_into_with_dict(src, &mut got, dict), &want) {
            (Ok(n), Some(w)) => assert!(got[..n] == w[..], "decoded bytes differ from the reference's"),
            (Err(e), Some(_)) => panic!("the reference accepts a stream ours rejects: {e}"),
            (Ok(n), None) => panic!("ours accepts ({n} bytes) a stream the reference rejects"),
            (Err(_), None) => {}
        }
        if let Some(w) = want {
            let mut lib = vec![0u8; cap];
            let m = lz4::decompress_liblz4_with_dict(src, &mut lib, dict)
                .expect("liblz4 accepts what the reference accepts");
            assert!(lib[..m] == w[..], "liblz4 decodes other bytes than the reference");
        }
        return;
    }
    let level = 1 + (sel >> 2) % 12;
    let block = &data[1..];
    let mut enc = vec![0u8; block.len() + block.len() / 200 + 64];
    let n = if sel & 2 == 0 {
        lz4::compress(level.min(9), block, &mut enc)
    } else {
        lz4::compress_hc(level, block, &mut enc)
    };
    if n == 0 {
        return;
    }
    let mut back = vec![0u8; block.len()];
    let k = lz4_decode::decode_into(&enc[..n], &mut back).expect("liblz4's own stream decodes");
    assert!(k == block.len() && back == block, "round trip differs");
}
