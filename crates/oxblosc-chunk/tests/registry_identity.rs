//! Chunks written through the registry are byte-identical to those the engine wrote before
//! it had one (hard-coded dispatch, commit da768b5): one digest over a matrix of every
//! built-in codec and filter, typesizes, clevels, splits, dictionaries and thread counts.
//! (C-Blosc2's own vectors are checked byte for byte in `tests/vectors.rs` and the Python
//! byte-identity tests.)

use oxblosc_chunk::{compress, compress_blosc1, decompress, CParams, DParams, SplitMode};

/// FNV-1a, 64 bits: enough to notice any changed byte.
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// Compressible, varied data: a slow ramp with noise from a fixed LCG.
fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((i / 64) as u8).wrapping_add(((x >> 60) as u8) & 3)
        })
        .collect()
}

#[test]
fn builtins_through_the_registry_write_the_same_bytes_as_before() {
    let filter_sets: [[u8; 6]; 9] = [
        [0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0, 2],
        [0, 0, 0, 0, 3, 1],
        [1, 35, 0, 0, 0, 0],
        [1, 34, 0, 0, 0, 0],
        [4, 1, 0, 0, 0, 0],
        [36, 2, 0, 0, 0, 0],
        [3, 0, 0, 0, 0, 0],
    ];
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    // The Blosc2 and Blosc1 chunks alone, too.
    let (mut h2, mut h1) = (h, h);
    let mut count = 0;
    for codec in [0u8, 1, 2, 4, 5] {
        for (k, filters) in filter_sets.iter().enumerate() {
            for typesize in [1usize, 2, 4, 8] {
                let metas = match filters[0] {
                    4 if typesize == 4 => [10u8, 0, 0, 0, 0, 0],
                    4 if typesize == 8 => [20, 0, 0, 0, 0, 0],
                    4 => continue,
                    36 => [(typesize * 8 - 3) as u8, 0, 0, 0, 0, 0],
                    _ => [0; 6],
                };
                for clevel in [1u8, 5, 9] {
                    for (splitmode, use_dict) in [(SplitMode::Auto, false), (SplitMode::Always, true)] {
                        let src = data(40_000 + 8 * k, u64::from(codec) * 31 + typesize as u64);
                        let cp = CParams {
                            codec,
                            clevel,
                            typesize,
                            filters: *filters,
                            filters_meta: metas,
                            splitmode,
                            use_dict,
                            blocksize: if use_dict { 4096 } else { 0 },
                            nthreads: 1 + usize::from(use_dict),
                            ..CParams::default()
                        };
                        let c = compress(&src, &cp).unwrap();
                        let back = decompress(&c, &DParams { nthreads: 2 }).unwrap();
                        assert_eq!(back.len(), src.len());
                        fnv(&mut h, &c);
                        fnv(&mut h2, &c);
                        count += 1;
                        if filters.iter().all(|&f| matches!(f, 0..=2)) && !use_dict {
                            let c1 = compress_blosc1(&src, &cp).unwrap();
                            fnv(&mut h, &c1);
                            fnv(&mut h1, &c1);
                        }
                    }
                }
            }
        }
    }
    println!("{count} chunks, digest {h:#018x}, Blosc2 {h2:#018x}, Blosc1 {h1:#018x}");
    assert_eq!(h2, EXPECTED_BLOSC2, "built-in Blosc2 chunks changed ({count} chunks)");
    assert_eq!(h1, EXPECTED_BLOSC1, "built-in Blosc1 chunks changed");
}

/// Digest of the Blosc2 chunks, the same as on the engine before the registry (commit
/// da768b5, whose digest of both kinds was 0x24ee_ff36_ab22_aaf4 until session 9).
const EXPECTED_BLOSC2: u64 = 0x5874_422c_cf09_56f5;
/// Digest of the Blosc1 chunks since session 9 (BloscLZ with c-blosc 1.x's match back-off:
/// numcodecs' bytes, checked in `python/tests/test_numcodecs_codecs.py`; before it
/// 0x3a07_aa95_afc0_8d36; zlib here is still zlib-rs: stock zlib is installed by the Python
/// module).
const EXPECTED_BLOSC1: u64 = 0xbef9_33f2_099e_7033;
