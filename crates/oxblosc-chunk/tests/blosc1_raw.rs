//! `compress_blosc1_or_raw`: a Blosc1 chunk stored raw gets only its header written behind in
//! `dst` (the data are not copied there whole; the caller copies them once, not twice), and
//! header + data are byte for byte the chunk `compress_blosc1` makes; compressible chunks are
//! written whole as before.

use oxblosc_chunk::compress::{compress_blosc1_or_raw, Blosc1Chunk};
use oxblosc_chunk::{compress_blosc1, decompress, max_blosc1_len, CParams, DParams};

/// Bytes of a xorshift generator: incompressible for every codec.
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn cp(codec: u8, clevel: u8, shuffle: u8, nthreads: usize) -> CParams {
    CParams { codec, clevel, typesize: 4, nthreads, filters: [0, 0, 0, 0, 0, shuffle], ..CParams::default() }
}

#[test]
fn raw_chunks_leave_only_the_header_and_match_compress_blosc1() {
    let src = noise(2 << 20);
    for (codec, clevel, shuffle, nthreads) in [(0, 5, 0, 1), (0, 9, 1, 2), (1, 5, 1, 1), (5, 1, 0, 2), (1, 0, 1, 1)] {
        let p = cp(codec, clevel, shuffle, nthreads);
        let mut dst = vec![0xa5u8; max_blosc1_len(src.len())];
        assert_eq!(compress_blosc1_or_raw(&src, &mut dst, &p).unwrap(), Blosc1Chunk::Raw, "{codec} {clevel}");
        // The streams tried on the way may have left bytes in `dst`, never the data whole.
        assert_ne!(dst[16..], src[..], "the data were copied into dst");
        if clevel == 0 {
            assert!(dst[16..].iter().all(|&b| b == 0xa5), "stored without trying any stream");
        }
        let mut whole = dst[..16].to_vec();
        whole.extend_from_slice(&src);
        assert_eq!(whole, compress_blosc1(&src, &p).unwrap());
        assert_eq!(decompress(&whole, &DParams { nthreads: 1 }).unwrap(), src);
    }
}

#[test]
fn compressible_chunks_are_written_whole() {
    let src: Vec<u8> = (0..1u32 << 18).flat_map(|i| (i / 3).to_le_bytes()).collect();
    for nthreads in [1, 2] {
        let p = cp(1, 5, 1, nthreads);
        let mut dst = vec![0u8; max_blosc1_len(src.len())];
        let Blosc1Chunk::Encoded(n) = compress_blosc1_or_raw(&src, &mut dst, &p).unwrap() else {
            panic!("compressible data stored raw");
        };
        assert!(n < src.len() / 4);
        assert_eq!(dst[..n], compress_blosc1(&src, &p).unwrap());
    }
    // Too small for a header.
    assert!(compress_blosc1_or_raw(&src, &mut [0u8; 15], &cp(1, 5, 1, 1)).is_err());
}
