//! `decompress_into_uninit` (fresh outputs zeroed block by block) decodes exactly what
//! `decompress` does, for every kind of chunk, serial and parallel.

use std::mem::MaybeUninit;

use oxblosc_chunk::{
    compress, decompress, decompress_into_uninit, filter, special_chunk, CParams, DParams, SpecialKind,
};

fn data(n: usize) -> Vec<u8> {
    (0..n as u32).map(|i| ((i / 7) ^ (i % 13)) as u8).collect()
}

fn check(chunk: &[u8], nthreads: usize) {
    let want = decompress(chunk, &DParams { nthreads: 1 }).unwrap();
    // Poisoned spare capacity stands for memory the allocator did not clear.
    let mut v: Vec<u8> = vec![0xA5; want.len() + 3];
    v.clear();
    let spare = &mut v.spare_capacity_mut()[..want.len() + 3];
    let n = decompress_into_uninit(chunk, spare, &DParams { nthreads }).unwrap();
    assert_eq!(n, want.len());
    let got: Vec<u8> = spare[..n].iter().map(written).collect();
    assert!(got == want, "nthreads {nthreads}");
    // Never-written memory: under `valgrind` (memcheck) a byte the decoder skipped is
    // reported when the comparison reads it.
    let mut fresh: Vec<u8> = Vec::with_capacity(want.len());
    let n = decompress_into_uninit(chunk, fresh.spare_capacity_mut(), &DParams { nthreads }).unwrap();
    let got: Vec<u8> = fresh.spare_capacity_mut()[..n].iter().map(written).collect();
    assert!(got == want, "nthreads {nthreads} (fresh)");
}

/// A byte the decoder wrote.
fn written(b: &MaybeUninit<u8>) -> u8 {
    // SAFETY: only called on the first `n` bytes, which decompress_into_uninit initialised.
    unsafe { b.assume_init() }
}

#[test]
fn matches_decompress_for_every_chunk_kind() {
    let src = data(300_001);
    let mut params = Vec::new();
    for filters in [
        [0, 0, 0, 0, 0, filter::SHUFFLE],
        [0, 0, 0, 0, filter::DELTA, filter::BITSHUFFLE],
        [0, 0, 0, 0, filter::SHUFFLE, filter::BYTEDELTA],
        [0; 6],
    ] {
        for (codec, clevel) in [(0u8, 5u8), (1, 1), (2, 4), (4, 3), (5, 3), (1, 0)] {
            for typesize in [4, 3, 12] {
                params.push(CParams { codec, clevel, typesize, filters, blocksize: 16 << 10, ..CParams::default() });
            }
        }
    }
    for cp in params {
        let chunk = compress(&src, &CParams { nthreads: 1, ..cp }).unwrap();
        for nthreads in [1, 3] {
            check(&chunk, nthreads);
        }
    }
    check(&special_chunk(SpecialKind::Nan, 4000, 4, None).unwrap(), 1);
    check(&special_chunk(SpecialKind::Zeros, 4000, 4, None).unwrap(), 2);
    check(&compress(&[], &CParams::default()).unwrap(), 1);
    let memcpyed = CParams { clevel: 0, ..CParams::default() };
    check(&compress(&src[..1001], &memcpyed).unwrap(), 1);
}

/// Split shuffled blocks whose streams are a mix of raw (noise bytes), run (constant byte)
/// and compressed streams: the raw ones are unshuffled straight from the chunk.
#[test]
fn mixed_raw_run_and_coded_streams() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for typesize in [2usize, 4, 8] {
        let src: Vec<u8> = (0..100_003usize)
            .flat_map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (0..typesize).map(move |j| match j {
                    0 => x as u8,
                    j if j + 1 == typesize => 0x43,
                    _ => (i / 64) as u8,
                })
            })
            .collect();
        for codec in [0u8, 1, 5] {
            let cp = CParams {
                codec,
                clevel: 5,
                typesize,
                blocksize: 32 << 10,
                nthreads: 1,
                filters: [0, 0, 0, 0, 0, filter::SHUFFLE],
                ..CParams::default()
            };
            let chunk = compress(&src, &cp).unwrap();
            assert!(decompress(&chunk, &DParams { nthreads: 1 }).unwrap() == src, "typesize {typesize} codec {codec}");
            check(&chunk, 2);
        }
    }
}
