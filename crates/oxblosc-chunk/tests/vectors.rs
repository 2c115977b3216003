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

/// The chunks of a C-Blosc2 3.0.0 contiguous frame: they sit back to back after the
/// frame header (its length is the big-endian i32 at byte 11; the chunks section length is
/// the big-endian i64 at byte 39). Enough frame parsing to reach chunk vectors.
fn frame_chunks(name: &str) -> Vec<Vec<u8>> {
    let f = vector(name);
    let hlen = i32::from_be_bytes(f[11..15].try_into().unwrap()) as usize;
    let section = i64::from_be_bytes(f[39..47].try_into().unwrap()) as usize;
    let mut chunks = Vec::new();
    let mut off = hlen;
    while off < hlen + section {
        let cbytes = i32::from_le_bytes(f[off + 12..off + 16].try_into().unwrap()) as usize;
        chunks.push(f[off..off + cbytes].to_vec());
        off += cbytes;
    }
    chunks
}

/// Every byte repeats with period 50 and each period is 49 printable characters plus NUL.
fn assert_text_pattern(data: &[u8], what: &str) {
    assert_eq!(data[49], 0, "{what}: byte 49 should be NUL");
    assert!(data[..49].iter().all(|b| (0x20..0x7f).contains(b)), "{what}: pattern not printable");
    for (i, &b) in data.iter().enumerate() {
        assert_eq!(b, data[i % 50], "{what}: byte {i} breaks the 50-byte period");
    }
}

#[test]
fn variable_length_block_chunks_decode() {
    for (name, sizes) in [
        ("vlblocks-lz4-fixed-3.0.0.b2frame", [2000, 2000, 2000, 2000, 2000]),
        ("vlblocks-lz4-variable-3.0.0.b2frame", [1000, 1500, 2000, 2500, 3000]),
    ] {
        let chunks = frame_chunks(name);
        assert_eq!(chunks.len(), 5);
        for (k, (chunk, size)) in chunks.iter().zip(sizes).enumerate() {
            let h = ChunkHeader::parse(chunk).unwrap();
            assert!(h.is_vlblocks() && h.version == 6);
            for nthreads in [1, 2] {
                let got = decompress(chunk, &DParams { nthreads }).unwrap();
                assert_eq!(got.len(), size);
                for (b, block) in got.chunks(500).enumerate() {
                    assert_text_pattern(block, &format!("{name} chunk {k} block {b}"));
                }
            }
            // Partial reads across VL block boundaries.
            let full = decompress(chunk, &DParams { nthreads: 1 }).unwrap();
            let end = size.min(1150);
            let mut part = vec![0u8; end - 450];
            getitem(chunk, 450, end - 450, &mut part).unwrap();
            assert_eq!(part, full[450..end]);
        }
    }
}

#[test]
fn variable_size_chunks_decode() {
    let chunks = frame_chunks("varchunks-lz4-3.0.0.b2frame");
    let sizes: Vec<usize> = chunks.iter().map(|c| decompress(c, &DParams { nthreads: 2 }).unwrap().len()).collect();
    assert_eq!(sizes, [1000, 500, 2000, 520, 301]);
    for (k, c) in chunks.iter().enumerate() {
        assert_text_pattern(&decompress(c, &DParams { nthreads: 1 }).unwrap(), &format!("chunk {k}"));
    }
}

#[test]
fn tiny_lz4_chunk_claiming_gigabytes_is_refused_before_allocating() {
    // 4 blocks of 512 MiB, each "compressed" to a 10-byte LZ4 stream: impossible (LZ4 expands
    // at most ~255:1), so decompress must fail on the sizes, not try to allocate 2 GiB.
    let nblocks = 4usize;
    let blocksize = 512 * 1024 * 1024 - 4096;
    let mut c = vec![0u8; 32 + 4 * nblocks + nblocks * 14];
    c[..4].copy_from_slice(&[5, 1, 0x35, 1]); // v5, lz4, DONT_SPLIT, extended header, typesize 1
    c[4..8].copy_from_slice(&((nblocks * blocksize) as i32).to_le_bytes());
    c[8..12].copy_from_slice(&(blocksize as i32).to_le_bytes());
    let cbytes = c.len() as i32;
    c[12..16].copy_from_slice(&cbytes.to_le_bytes());
    for b in 0..nblocks {
        let start = 32 + 4 * nblocks + 14 * b;
        c[32 + 4 * b..36 + 4 * b].copy_from_slice(&(start as i32).to_le_bytes());
        c[start..start + 4].copy_from_slice(&10i32.to_le_bytes());
    }
    let err = oxblosc_chunk::decompressed_len(&c).unwrap_err();
    assert!(err.to_string().contains("cannot decode to"), "{err}");
    assert!(decompress(&c, &DParams { nthreads: 2 }).is_err());
}

#[test]
fn vl_block_chunks_round_trip_and_read_c_written_blocks() {
    use oxblosc_chunk::{compress_vlblocks, decompress_vlblocks, vlblock, CParams};
    let blocks: Vec<Vec<u8>> =
        (1..=7usize).map(|k| (0..k * 997).map(|i| ((i / (k + 3)) % 251) as u8).collect()).collect();
    let refs: Vec<&[u8]> = blocks.iter().map(Vec::as_slice).collect();
    for codec in [0u8, 1, 2, 4, 5] {
        for nthreads in [1, 3] {
            let cp = CParams { codec, typesize: 4, nthreads, ..CParams::default() };
            let c = compress_vlblocks(&refs, &cp).unwrap();
            let h = ChunkHeader::parse(&c).unwrap();
            assert!(h.is_vlblocks() && h.version == 6 && h.dont_split() && h.nblocks() == 7);
            assert_eq!(decompress_vlblocks(&c, &DParams { nthreads }).unwrap(), blocks);
            assert_eq!(decompress(&c, &DParams { nthreads: 2 }).unwrap(), blocks.concat());
            assert_eq!(vlblock(&c, 3).unwrap(), blocks[3]);
            assert!(vlblock(&c, 7).is_err());
            // Serial and parallel output are the same bytes.
            let c1 = compress_vlblocks(&refs, &CParams { nthreads: 1, ..cp.clone() }).unwrap();
            assert_eq!(c, c1);
        }
    }
    let cp = CParams::default();
    assert!(compress_vlblocks(&[], &cp).is_err());
    assert!(compress_vlblocks(&[b"ab", b""], &cp).is_err());
    assert!(compress_vlblocks(&[b"ab"], &CParams { filters: [3, 0, 0, 0, 0, 0], ..cp }).is_err());
    // Blocks of the C-Blosc2 3.0.0 VL vectors, one at a time.
    for chunk in frame_chunks("vlblocks-lz4-variable-3.0.0.b2frame") {
        let all = decompress_vlblocks(&chunk, &DParams { nthreads: 2 }).unwrap();
        assert!(all.iter().all(|b| b.len() == 500));
        for (i, b) in all.iter().enumerate() {
            assert_text_pattern(b, &format!("VL block {i}"));
        }
    }
}
