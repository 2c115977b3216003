//! Streams stored raw without a filter are copied from `src` only once the chunk is known
//! not to end memcpyed (the blocks the calling thread encodes), and `compress_or_raw` leaves only the header of a
//! memcpyed Blosc2 chunk in `dst`. The chunks stay byte for byte those of the parallel path
//! (whose helpers copy their blocks' raw streams at once) and of `compress`.

use oxblosc_chunk::compress::{compress_or_raw, RawOr};
use oxblosc_chunk::{compress, compress_into, decompress, max_compressed_len, CParams, DParams, SplitMode};

/// Bytes of a xorshift generator: incompressible for every codec.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn cp(codec: u8, clevel: u8, nthreads: usize, blocksize: usize, splitmode: SplitMode) -> CParams {
    CParams { codec, clevel, typesize: 4, nthreads, blocksize, splitmode, filters: [0; 6], ..CParams::default() }
}

#[test]
fn memcpyed_chunks_leave_only_the_header() {
    let src = noise(2 << 20, 7);
    for codec in [0u8, 1, 2, 4, 5] {
        let p = cp(codec, 5, 1, 0, SplitMode::Auto);
        let mut dst = vec![0xa5u8; max_compressed_len(src.len())];
        assert_eq!(compress_or_raw(&src, &mut dst, &p).unwrap(), RawOr::Raw(32), "codec {codec}");
        // No raw stream and no whole copy of the data went into dst: at most the bytes that
        // codecs wrote while trying (none for BloscLZ, whose probe gives up first).
        let copied = dst[32..].iter().zip(&src).filter(|(d, s)| d == s).count();
        assert!(copied < src.len() / 64, "codec {codec}: {copied} bytes of the data in dst");
        if codec == 0 {
            let touched = dst[32..].iter().filter(|&&b| b != 0xa5).count();
            assert!(touched < 1024, "{touched} bytes written besides offsets and sizes");
        }
        let mut whole = dst[..32].to_vec();
        whole.extend_from_slice(&src);
        assert_eq!(whole, compress(&src, &p).unwrap(), "codec {codec}");
        // With two threads the caller's blocks are encoded into dst as above and the
        // helpers' aside: a chunk that ends memcpyed is recognised from the helpers' sizes,
        // and none of their blocks is packed into dst.
        let p2 = cp(codec, 5, 2, 0, SplitMode::Auto);
        let mut dst = vec![0xa5u8; max_compressed_len(src.len())];
        assert_eq!(compress_or_raw(&src, &mut dst, &p2).unwrap(), RawOr::Raw(32), "codec {codec}");
        let copied = dst[32..].iter().zip(&src).filter(|(d, s)| d == s).count();
        assert!(copied < src.len() / 64, "codec {codec}, 2 threads: {copied} bytes of the data in dst");
        assert_eq!(dst[..32], whole[..32], "codec {codec}, 2 threads");
    }
}

#[test]
fn mixed_raw_and_compressed_streams_match_the_parallel_path() {
    // Blocks alternate between noise (stored raw) and a repeating pattern (compressed), with
    // a partial last block; the source starts at an odd offset.
    let bs = 16 << 10;
    let n = 9 * bs + 4 * 333;
    let mut buf = vec![0u8; n + 1];
    let rnd = noise(n, 11);
    for (i, b) in buf[1..].iter_mut().enumerate() {
        *b = if (i / bs) % 2 == 0 { rnd[i] } else { (i % 97) as u8 };
    }
    let src = &buf[1..];
    for codec in [0u8, 1, 4, 5] {
        for split in [SplitMode::Never, SplitMode::Always] {
            let serial = compress(src, &cp(codec, 5, 1, bs, split)).unwrap();
            let parallel = compress(src, &cp(codec, 5, 2, bs, split)).unwrap();
            assert_eq!(serial, parallel, "codec {codec} split {split:?}");
            assert!(serial.len() < n, "codec {codec}: the chunk should not be memcpyed");
            assert_eq!(decompress(&serial, &DParams::default()).unwrap(), src, "codec {codec} split {split:?}");
            // Into a destination of exactly the largest size (the last block goes aside).
            let mut dst = vec![0u8; max_compressed_len(n)];
            let k = compress_into(src, &mut dst, &cp(codec, 5, 1, bs, split)).unwrap();
            assert_eq!(dst[..k], serial[..]);
            let mut dst = vec![0u8; max_compressed_len(n)];
            let r = compress_or_raw(src, &mut dst, &cp(codec, 5, 1, bs, split)).unwrap();
            assert_eq!(r, RawOr::Encoded(serial.len()));
            assert_eq!(dst[..serial.len()], serial[..]);
        }
    }
}

#[test]
fn memcpyed_chunks_decode_in_pieces() {
    // Sizes around the 256 KiB copy pieces, whole decodes and item ranges crossing pieces.
    for n in [1000usize, (256 << 10) - 4, 256 << 10, (3 << 18) + 76, 5 << 20] {
        let src = noise(n, n as u64);
        let c = compress(&src, &cp(0, 5, 1, 0, SplitMode::Auto)).unwrap();
        assert_eq!(c.len(), n + 32, "{n}: not memcpyed");
        assert_eq!(decompress(&c, &DParams::default()).unwrap(), src, "{n}");
        for (start, items) in [(0usize, n / 4), (1, n / 4 - 1), ((256 << 10) / 4 - 3, 7)] {
            if start + items > n / 4 || items == 0 {
                continue;
            }
            let mut out = vec![0u8; items * 4];
            oxblosc_chunk::getitem(&c, start, items, &mut out).unwrap();
            assert_eq!(out, src[start * 4..(start + items) * 4], "{n} {start} {items}");
        }
    }
}
