//! Truncated, bit-flipped and lying frames return errors or correct data, never panic or
//! over-allocate (architecture rule 5).

use std::path::PathBuf;

use oxblosc_frame::{open, Mode, SChunk};

fn shared() -> PathBuf {
    std::env::var_os("OXBLOSC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

const VECTORS: &[&str] = &[
    "varchunks-lz4-3.0.0.b2frame",
    "vlblocks-lz4-fixed-3.0.0.b2frame",
    "vlblocks-lz4-variable-3.0.0.b2frame",
    "tests/fuzz/corpus/frame_simple-lz4.b2frame",
    "tests/fuzz/corpus/frame_simple-zstd.b2frame",
    "plugins/test_data/example_day_month_temp.b2nd",
];

fn vector(name: &str) -> Vec<u8> {
    std::fs::read(shared().join("vectors/c-blosc2-compat").join(name)).expect("vector; set OXBLOSC_SHARED")
}

/// Open and read everything; errors are fine, panics are not. Returns whether it all read.
fn exercise(buf: &[u8]) -> bool {
    let Ok(s) = SChunk::from_cframe(buf) else { return false };
    let mut ok = true;
    for i in 0..s.nchunks() {
        ok &= s.decompress_chunk(i).is_ok();
        ok &= s.chunk_info(i).is_ok();
    }
    let n = s.nitems();
    ok &= s.get_slice(n / 3, n / 3 + n.min(100) / 2).is_ok();
    for name in s.vlmeta_names() {
        let _ = s.vlmeta(name).map(oxblosc_frame::msgpack::decode);
    }
    ok
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn truncated_frames_error() {
    for name in VECTORS {
        let v = vector(name);
        let mut cuts: Vec<usize> = (0..120.min(v.len())).collect();
        cuts.extend((1..60).map(|k| v.len() * k / 60));
        cuts.extend(v.len().saturating_sub(60)..v.len());
        for cut in cuts {
            assert!(!exercise(&v[..cut]) || cut == v.len(), "{name} truncated to {cut} read fully");
            // Embedded reading of a truncated frame must error too.
            let _ = SChunk::from_cframe_at(&v[..cut], 0);
        }
    }
}

#[test]
fn bit_flips_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for name in VECTORS {
        let v = vector(name);
        for round in 0..400 {
            let mut b = v.clone();
            let nflips = 1 + (round % 3);
            for _ in 0..nflips {
                // Favour the header, index and trailer, where the structure lives.
                let r = rng.next() as usize;
                let pos = match r % 3 {
                    0 => r / 3 % 200.min(b.len()),
                    1 => b.len() - 1 - (r / 3 % 300.min(b.len())),
                    _ => r / 3 % b.len(),
                };
                b[pos] ^= 1 << (rng.next() % 8);
            }
            exercise(&b);
        }
    }
}

#[test]
fn lying_fields_error() {
    let v = vector("tests/fuzz/corpus/frame_simple-lz4.b2frame");
    let patch = |at: usize, bytes: &[u8]| {
        let mut b = v.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    // nbytes huge with the same chunksize: would need billions of chunks.
    assert!(SChunk::from_cframe(&patch(30, &i64::MAX.to_be_bytes())).is_err());
    // chunksize 1: 2 million chunks but the index holds 10.
    assert!(SChunk::from_cframe(&patch(58, &1i32.to_be_bytes())).is_err());
    // cbytes pointing past the trailer.
    assert!(SChunk::from_cframe(&patch(39, &(1i64 << 40).to_be_bytes())).is_err());
    // header_len beyond the frame.
    assert!(SChunk::from_cframe(&patch(11, &i32::MAX.to_be_bytes())).is_err());
    // frame_len larger than the buffer.
    let e = SChunk::from_cframe(&patch(16, &(v.len() as u64 + 1).to_be_bytes())).unwrap_err();
    assert!(e.to_string().contains("offset"), "{e}");
    // Magic.
    let e = SChunk::from_cframe(&patch(2, b"b2frome\0")).unwrap_err();
    assert!(e.to_string().contains("magic"), "{e}");
    // Version 4.
    assert!(SChunk::from_cframe(&patch(25, &[0x14])).is_err());
    // trailer_len absurd.
    let n = v.len();
    assert!(SChunk::from_cframe(&patch(n - 22, &u32::MAX.to_be_bytes())).is_err());
    // Garbage.
    assert!(SChunk::from_cframe(&[]).is_err());
    assert!(SChunk::from_cframe(&[0x9E; 200]).is_err());
}

#[test]
fn file_errors_name_the_file() {
    let d = std::env::temp_dir().join(format!("oxblosc-frame-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("bad.b2frame");
    let v = vector("varchunks-lz4-3.0.0.b2frame");
    std::fs::write(&p, &v[..v.len() - 5]).unwrap();
    let e = open(&p, Mode::Read).unwrap_err().to_string();
    assert!(e.contains("bad.b2frame"), "{e}");
    // A chunk whose bytes are corrupted after opening is reported with the file name.
    let mut b = v.clone();
    std::fs::write(&p, &b).unwrap();
    let s = open(&p, Mode::Read).unwrap();
    b[0x61 + 40] ^= 0xFF;
    b[0x61 + 12] = 0xFF; // chunk 0 cbytes
    std::fs::write(&p, &b).unwrap();
    let e = s.decompress_chunk(0).unwrap_err().to_string();
    assert!(e.contains("bad.b2frame") && e.contains("chunk 0"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A damaged `chunksize` (or `nbytes`) makes the header count fewer chunks than the offsets
/// index holds: opening is an error naming the field, where reading used to drop the chunks
/// past the count and size the first one (a special zeros chunk) from the damaged field. Trailing
/// empty chunks, the one legitimate reason for extra entries, still open.
#[test]
fn header_counting_fewer_chunks_than_the_index_is_an_error() {
    use oxblosc_frame::{CParams, DParams};
    let cp = CParams { typesize: 4, ..CParams::default() };
    for zeros_first in [true, false] {
        let mut s = SChunk::new(cp.clone(), DParams::default()).unwrap();
        let chunk = |k: u32| -> Vec<u8> { (0..1000u32).flat_map(|i| (i * 7 + k).to_le_bytes()).collect() };
        s.append_data(&if zeros_first { vec![0u8; 4000] } else { chunk(0) }).unwrap();
        for k in 1..5 {
            s.append_data(&chunk(k)).unwrap();
        }
        let good = s.to_cframe().unwrap();
        assert_eq!(good[57], 0xd2, "chunksize is a msgpack int32 at 57");
        assert_eq!(good[58..62], 4000i32.to_be_bytes());
        let mut bad = good.clone();
        bad[59] ^= 1; // 4000 -> 69536: one chunk of 20000 bytes by the header
        let e = SChunk::from_cframe(&bad).unwrap_err().to_string();
        assert!(e.contains("chunksize") && e.contains("offsets index holds more: entry 1 is a chunk of"), "{e}");
        // The same frame with its true chunksize reads back.
        let r = SChunk::from_cframe(&good).unwrap();
        assert_eq!(r.nchunks(), 5);
        assert_eq!(r.decompress_chunk(4).unwrap(), chunk(4));
    }
    // Trailing empty chunk: the index holds one entry more than nbytes / chunksize counts.
    let mut s = SChunk::new(cp, DParams::default()).unwrap();
    s.append_data(&[1u8; 4000]).unwrap();
    s.append_data(&[2u8; 4000]).unwrap();
    s.append_data(&[]).unwrap();
    let r = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
    assert_eq!(r.nchunks(), 2);
    assert_eq!(r.decompress_chunk(1).unwrap(), vec![2u8; 4000]);
}
