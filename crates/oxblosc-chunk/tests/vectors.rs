//! Every chunk in ../shared/vectors/c-blosc2-compat decodes to the data its README describes.

use std::path::PathBuf;

use oxblosc_chunk::{decompress, getitem, ChunkHeader, DParams};

fn shared() -> PathBuf {
    std::env::var_os("OXBLOSC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

fn vector(name: &str) -> Vec<u8> {
    let p = shared().join("vectors/c-blosc2-compat").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("test vector {} missing ({e}); set OXBLOSC_SHARED", p.display()))
}

/// The reference data: little-endian int32 0..999_999.
fn reference() -> Vec<u8> {
    (0..1_000_000i32).flat_map(|i| i.to_le_bytes()).collect()
}

fn check(name: &str, compare: usize) {
    let chunk = vector(name);
    let want = reference();
    for nthreads in [1, 2, 3] {
        let got = decompress(&chunk, &DParams { nthreads }).unwrap_or_else(|e| panic!("{name}: {e}"));
        let h = ChunkHeader::parse(&chunk).unwrap();
        assert_eq!(got.len(), h.nbytes, "{name}");
        assert!(got[..compare] == want[..compare], "{name} with {nthreads} threads differs from the reference");
    }
}

macro_rules! vectors {
    ($($test:ident: $file:expr, $compare:expr;)*) => {$(
        #[test]
        fn $test() { check($file, $compare); }
    )*};
}

vectors! {
    blosc_1_3_0_blosclz: "blosc-1.3.0-blosclz.cdata", 4_000_000;
    blosc_1_3_0_lz4: "blosc-1.3.0-lz4.cdata", 4_000_000;
    blosc_1_3_0_lz4hc: "blosc-1.3.0-lz4hc.cdata", 4_000_000;
    blosc_1_3_0_zlib: "blosc-1.3.0-zlib.cdata", 4_000_000;
    blosc_1_7_0_blosclz: "blosc-1.7.0-blosclz.cdata", 4_000_000;
    blosc_1_7_0_lz4: "blosc-1.7.0-lz4.cdata", 4_000_000;
    blosc_1_7_0_lz4hc: "blosc-1.7.0-lz4hc.cdata", 4_000_000;
    blosc_1_7_0_zlib: "blosc-1.7.0-zlib.cdata", 4_000_000;
    blosc_1_11_1_blosclz: "blosc-1.11.1-blosclz.cdata", 4_000_000;
    blosc_1_11_1_lz4: "blosc-1.11.1-lz4.cdata", 4_000_000;
    blosc_1_11_1_lz4hc: "blosc-1.11.1-lz4hc.cdata", 4_000_000;
    blosc_1_11_1_zlib: "blosc-1.11.1-zlib.cdata", 4_000_000;
    blosc_1_11_1_zstd: "blosc-1.11.1-zstd.cdata", 4_000_000;
    blosc_1_14_0_blosclz: "blosc-1.14.0-blosclz.cdata", 4_000_000;
    blosc_1_14_0_lz4: "blosc-1.14.0-lz4.cdata", 4_000_000;
    blosc_1_14_0_lz4hc: "blosc-1.14.0-lz4hc.cdata", 4_000_000;
    blosc_1_14_0_zlib: "blosc-1.14.0-zlib.cdata", 4_000_000;
    blosc_1_14_0_zstd: "blosc-1.14.0-zstd.cdata", 4_000_000;
    // Last block stored without bitshuffle (element count not a multiple of 8).
    blosc_1_17_1_bitshuffle4: "blosc-1.17.1-lz4-bitshuffle4-memcpy.cdata", 641_092;
    // 1.17.1 never wrote the final 4 bytes.
    blosc_1_17_1_bitshuffle8: "blosc-1.17.1-lz4-bitshuffle8-nomemcpy.cdata", 641_088;
    // The 3 trailing bytes are not reference data.
    blosc_1_18_0_bitshuffle4: "blosc-1.18.0-lz4-bitshuffle4-memcpy.cdata", 641_088;
    blosc_1_18_0_bitshuffle8: "blosc-1.18.0-lz4-bitshuffle8-nomemcpy.cdata", 641_088;
    blosc_2_0_0_bitshuffle4: "blosc-2.0.0-lz4-bitshuffle4-memcpy.cdata", 641_092;
    blosc_2_0_0_bitshuffle8: "blosc-2.0.0-lz4-bitshuffle8-nomemcpy.cdata", 641_092;
    blosc_3_0_0_blosclz: "blosc-blosclz-3.0.0.cdata", 4_000_000;
    blosc_3_0_0_lz4: "blosc-lz4-3.0.0.cdata", 4_000_000;
    blosc_3_0_0_zstd: "blosc-zstd-3.0.0.cdata", 4_000_000;
}

#[test]
fn blosc_1_18_tail_bytes_are_copied_verbatim() {
    let got = decompress(&vector("blosc-1.18.0-lz4-bitshuffle4-memcpy.cdata"), &DParams { nthreads: 1 }).unwrap();
    assert_eq!(&got[641_088..], &[0x40, 0x41, 0x42]);
}

#[test]
fn rainfall_grid_is_a_plausible_precipitation_field() {
    let got = decompress(&vector("bench/rainfall-grid-150x150.bin"), &DParams { nthreads: 1 }).unwrap();
    assert_eq!(got.len(), 150 * 150 * 4);
    let values: Vec<f32> = got.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let max = values.iter().cloned().fold(f32::MIN, f32::max);
    let min = values.iter().cloned().fold(f32::MAX, f32::min);
    assert!(min >= 0.0 && (9.0..9.1).contains(&max), "range {min}..{max}");
}

#[test]
fn getitem_matches_full_decode_on_every_version() {
    let want = reference();
    for name in [
        "blosc-1.14.0-lz4.cdata",
        "blosc-lz4-3.0.0.cdata",
        "blosc-zstd-3.0.0.cdata",
        "blosc-2.0.0-lz4-bitshuffle8-nomemcpy.cdata",
    ] {
        let chunk = vector(name);
        let ts = usize::from(ChunkHeader::parse(&chunk).unwrap().typesize);
        for (start, n) in [(0usize, 1usize), (12_345, 100), (65_000, 300), (65_530, 20), (60_000, 1)] {
            let mut out = vec![0u8; n * ts];
            assert_eq!(getitem(&chunk, start, n, &mut out).unwrap(), n * ts);
            assert_eq!(out, want[start * ts..(start + n) * ts], "{name} items {start}+{n}");
        }
    }
}
