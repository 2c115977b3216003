//! The two zlib inflates on their own (codec 4 routes each stream to one of them by its
//! expansion, decision 0016): arbitrary streams into zlib-ng and libdeflate must give the same
//! bytes or both an error; arbitrary data through zlib-rs's deflate decodes back with both.

use oxblosc_chunk::codec::zlib;

/// Byte 0: bit 0 picks decode or round trip. Decode: bytes 1-3 the output size (up to 4 MiB,
/// so long runs of 258-byte matches fit), the rest is the stream. Round trip: bits 1-4 the
/// level (0-9); the rest is the data.
pub fn fuzz_zlib(data: &[u8]) {
    let Some(&sel) = data.first() else { return };
    if sel & 1 == 0 {
        let Some(c) = data.get(1..4) else { return };
        let want = usize::from(c[0]) | usize::from(c[1]) << 8 | usize::from(c[2] & 0x3F) << 16;
        let src = &data[4..];
        let mut ng = vec![0x5Au8; want];
        let mut ld = vec![0xA5u8; want];
        let (by_ng, by_ld) = (zlib::decompress_zlib_ng(src, &mut ng), zlib::decompress_libdeflate(src, &mut ld));
        let ng_ok = by_ng.is_ok();
        match (by_ng, by_ld) {
            (Ok(()), Ok(())) => assert!(ng == ld, "the two inflates decode other bytes"),
            (Err(e), Ok(())) => panic!("libdeflate accepts a stream zlib-ng rejects: {e}"),
            (Ok(()), Err(e)) => panic!("zlib-ng accepts a stream libdeflate rejects: {e}"),
            (Err(_), Err(_)) => {}
        }
        let mut routed = vec![0u8; want];
        assert_eq!(zlib::decompress(src, &mut routed).is_ok(), ng_ok, "the routed call disagrees");
        return;
    }
    let level = (sel >> 1) % 10;
    let block = &data[1..];
    let mut enc = vec![0u8; block.len() + block.len() / 100 + 64];
    let n = zlib::compress(level, block, &mut enc);
    assert!(n > 0, "a worst-case output always fits");
    for f in [zlib::decompress_zlib_ng, zlib::decompress_libdeflate, zlib::decompress] {
        let mut back = vec![0u8; block.len()];
        f(&enc[..n], &mut back).expect("zlib-rs's own stream decodes");
        assert!(back == block, "round trip differs");
    }
}

/// Decode-mode seeds: zlib-rs streams of a pattern (expansion ~2) and of a run of one byte
/// (expansion > 64: the zlib-ng route), at levels 1 and 9; and their round-trip inputs.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let pattern: Vec<u8> = (0..6000u32).map(|i| (i.wrapping_mul(7) ^ (i >> 3)) as u8 & 0x3F).collect();
    let run = vec![9u8; 60_000];
    let mut out = Vec::new();
    for (name, data) in [("pattern", &pattern), ("run", &run)] {
        for level in [1u8, 9] {
            let mut enc = vec![0u8; data.len() + 64];
            let n = zlib::compress(level, data, &mut enc);
            let len = data.len() as u32;
            let mut seed = vec![0u8, len as u8, (len >> 8) as u8, (len >> 16) as u8];
            seed.extend_from_slice(&enc[..n]);
            out.push(("zlib", format!("seed-{name}-{level}"), seed));
            let mut rt = vec![1 | level << 1];
            rt.extend_from_slice(&data[..data.len().min(4000)]);
            out.push(("zlib", format!("seed-roundtrip-{name}-{level}"), rt));
        }
    }
    out
}
