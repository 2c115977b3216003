//! The Bloscpack reader (`oxblosc::bloscpack`) on arbitrary bytes, and small `.blp` files
//! written here from the format description (seeds, and tests without the Python package).

use std::io::Read;

use oxblosc::bloscpack::Reader;
use oxblosc_chunk::{cbuffer_sizes, compress_blosc1, decompress, CParams, DParams};

use crate::MAX_FUZZ_NBYTES;

/// Arbitrary bytes as a `.blp`: never panic, never allocate past the input or a chunk's
/// validated size; every chunk the reader hands out is a whole Blosc1 buffer.
pub fn fuzz_bloscpack(data: &[u8]) {
    let Ok(mut r) = Reader::new(data, data.len() as u64, 1) else { return };
    let chunk_size = r.header().chunk_size;
    let mut n = 0usize;
    while let Ok(Some(c)) = r.next_raw_chunk() {
        n += 1;
        assert!(c.len() >= 16 && n * 16 <= data.len(), "chunk {n}: {} bytes", c.len());
        if let Ok((nbytes, _, _)) = cbuffer_sizes(&c) {
            if nbytes <= MAX_FUZZ_NBYTES {
                let _ = decompress(&c, &DParams { nthreads: 1 });
            }
        }
    }
    // The decompressed stream, when every chunk is known to be small.
    if (0..=MAX_FUZZ_NBYTES as i32).contains(&chunk_size) {
        if let Ok(mut r) = Reader::new(data, data.len() as u64, 1) {
            let mut out = Vec::new();
            if r.read_to_end(&mut out).is_ok() {
                if let Some(n) = r.header().nbytes() {
                    assert_eq!(out.len() as u64, n, "a complete read has the header's size");
                }
            }
        }
    }
}

/// A `.blp` of `data` (format 3) in `chunk_size` pieces: Blosc1 chunks (blosclz, shuffle),
/// digest `checksum` (0 none, 1 adler32, 2 crc32 computed; others zero-filled),
/// optional offsets and uncompressed JSON metadata.
pub fn write_blp(
    data: &[u8],
    chunk_size: usize,
    typesize: u8,
    checksum: u8,
    offsets: bool,
    meta: Option<&[u8]>,
) -> Vec<u8> {
    let digest_len = [0usize, 4, 4, 16, 20, 28, 32, 48, 64][checksum as usize];
    let digest = |b: &[u8]| -> Vec<u8> {
        match checksum {
            1 => adler32(b).to_le_bytes().to_vec(),
            2 => crc32(b).to_le_bytes().to_vec(),
            _ => vec![0u8; digest_len],
        }
    };
    let pieces: Vec<&[u8]> = if data.is_empty() { vec![&[][..]] } else { data.chunks(chunk_size.max(1)).collect() };
    let nchunks = pieces.len() as i64;
    let spare = if offsets { 2 * nchunks } else { 0 };
    let mut out = b"blpk\x03".to_vec();
    out.push(u8::from(offsets) | (u8::from(meta.is_some()) << 1));
    out.extend([checksum, typesize]);
    out.extend((if data.is_empty() { 0 } else { chunk_size as i32 }).to_le_bytes());
    out.extend((pieces.last().map_or(0, |p| p.len()) as i32).to_le_bytes());
    out.extend(nchunks.to_le_bytes());
    out.extend(spare.to_le_bytes());
    if let Some(m) = meta {
        let reserved = m.len() * 2;
        out.extend(b"JSON\0\0\0\0");
        out.extend([0u8, 1, 0, 0]); // options, adler32, no codec, level 0
        for v in [m.len(), reserved, m.len()] {
            out.extend((v as u32).to_le_bytes());
        }
        out.extend([0u8; 8]);
        out.extend(m);
        out.resize(out.len() + reserved - m.len(), 0);
        out.extend(adler32(m).to_le_bytes());
    }
    let offsets_at = out.len();
    if offsets {
        out.resize(out.len() + 8 * (nchunks + spare) as usize, 0xFF);
    }
    let cp = CParams { typesize: usize::from(typesize.max(1)), codec: 0, ..CParams::default() };
    for (k, p) in pieces.iter().enumerate() {
        if offsets {
            let at = offsets_at + 8 * k;
            let here = (out.len() as i64).to_le_bytes();
            out[at..at + 8].copy_from_slice(&here);
        }
        let c = compress_blosc1(p, &cp).expect("blosc1 chunk");
        out.extend(&c);
        out.extend(digest(&c));
    }
    out
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u64, 0u64);
    for &x in data {
        a = (a + u64::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    ((b << 16) | a) as u32
}

fn crc32(data: &[u8]) -> u32 {
    // Table-free reflected CRC-32, written independently of the reader's.
    let mut crc = 0xFFFF_FFFFu32;
    for &x in data {
        let mut v = (crc ^ u32::from(x)) & 0xFF;
        for _ in 0..8 {
            v = if v & 1 == 1 { 0xEDB8_8320 ^ (v >> 1) } else { v >> 1 };
        }
        crc = (crc >> 8) ^ v;
    }
    crc ^ 0xFFFF_FFFF
}

/// Seed `.blp` files: each option combination once.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let data: Vec<u8> = (0..5000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    let meta = br#"{"dtype":"'<u4'","shape":[5000],"order":"C","container":"numpy"}"#;
    vec![
        ("bloscpack", "seed-adler-offsets-meta".into(), write_blp(&data, 4096, 4, 1, true, Some(meta))),
        ("bloscpack", "seed-crc-plain".into(), write_blp(&data, 3000, 4, 2, false, None)),
        ("bloscpack", "seed-none-one-chunk".into(), write_blp(&data[..100], 4096, 1, 0, false, None)),
        ("bloscpack", "seed-empty".into(), write_blp(&[], 4096, 8, 1, true, None)),
    ]
}
