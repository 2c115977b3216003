//! `NdArray::from_buffer_appending` on a new frame file or sparse directory: every chunk is
//! stored as it is built (none stays in memory), the array equals the data, the file reopens,
//! and an error leaves no chunk in the frame.

use std::path::PathBuf;

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::{open, Mode, SChunk};
use oxblosc_nd::{DimSlice, Geometry, NdArray};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("oxblosc-nd-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn data(n: usize) -> Vec<u8> {
    (0..n as u64).flat_map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7).to_le_bytes()).collect()
}

#[test]
fn appended_chunks_go_to_the_file() {
    for (contiguous, nthreads) in [(true, 1), (true, 3), (false, 2)] {
        let p = temp(&format!("build-{contiguous}-{nthreads}.b2nd"));
        let cp = CParams { typesize: 8, nthreads, clevel: 5, ..CParams::default() };
        let s = SChunk::create(&p, contiguous, cp, DParams { nthreads }).unwrap();
        let geom = Geometry::new(&[45, 70], &[8, 16], &[4, 8], 8).unwrap();
        let d = data(45 * 70);
        let a = NdArray::from_buffer_appending(s, geom, Some("<i8"), &d).unwrap();
        assert_eq!(a.schunk().nchunks(), 6 * 5);
        // Nothing held in memory: every chunk is read back from the file.
        assert_eq!(a.to_vec().unwrap(), d);
        let sel = [DimSlice::new(3, 40, 2), DimSlice::new(5, 66, 3)];
        let part = a.get_slice(&sel).unwrap();
        drop(a);
        let b = NdArray::from_schunk(open(&p, Mode::Read).unwrap()).unwrap();
        assert_eq!(b.to_vec().unwrap(), d);
        assert_eq!(b.get_slice(&sel).unwrap(), part);
        drop(b);
        if contiguous {
            std::fs::remove_file(&p).unwrap();
        } else {
            std::fs::remove_dir_all(&p).unwrap();
        }
    }
}

#[test]
fn a_rejected_buffer_leaves_an_empty_frame() {
    let p = temp("short.b2nd");
    let cp = CParams { typesize: 8, nthreads: 2, ..CParams::default() };
    let s = SChunk::create(&p, true, cp, DParams { nthreads: 2 }).unwrap();
    let geom = Geometry::new(&[40, 40], &[8, 8], &[4, 4], 8).unwrap();
    let err = NdArray::from_buffer_appending(s, geom, Some("<i8"), &data(40 * 40 - 1)).unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
    let s = open(&p, Mode::Read).unwrap();
    assert_eq!(s.nchunks(), 0);
    drop(s);
    std::fs::remove_file(&p).unwrap();
}

/// Chunks over 4 MiB on a file (two threads) are built and stored one at a time, each with
/// both threads: whole chunks (the build) and partly covered ones (a slice write).
#[test]
fn large_chunks_one_at_a_time() {
    let p = temp("large.b2nd");
    let nthreads = 2;
    let cp = CParams { typesize: 8, nthreads, clevel: 1, ..CParams::default() };
    let s = SChunk::create(&p, true, cp, DParams { nthreads }).unwrap();
    let (rows, cols) = (1100u64, 1024u64);
    let geom = Geometry::new(&[rows, cols], &[640, 1024], &[64, 1024], 8).unwrap();
    let mut d = data((rows * cols) as usize);
    let mut a = NdArray::from_buffer_appending(s, geom, Some("<i8"), &d).unwrap();
    assert_eq!(a.to_vec().unwrap(), d);
    // Rows 500..1050 of columns 3..9: every chunk partly.
    let new: Vec<u8> = (0..550 * 6u64).flat_map(|i| (!i).to_le_bytes()).collect();
    a.set_slice(&[DimSlice::new(500, 1050, 1), DimSlice::new(3, 9, 1)], &new).unwrap();
    for (k, row) in (500..1050usize).enumerate() {
        let at = (row * cols as usize + 3) * 8;
        d[at..at + 48].copy_from_slice(&new[k * 48..(k + 1) * 48]);
    }
    assert_eq!(a.to_vec().unwrap(), d);
    drop(a);
    assert_eq!(NdArray::from_schunk(open(&p, Mode::Read).unwrap()).unwrap().to_vec().unwrap(), d);
    std::fs::remove_file(&p).unwrap();
}

/// A slice that needs a few blocks of each chunk of a frame file reads only those blocks
/// (and the chunk's header and block table), not the whole stored chunk; the result is the
/// same, and damaged block bytes are reported as an error of that chunk.
#[test]
fn few_blocks_are_read_from_the_file_alone() {
    let p = temp("part.b2nd");
    let cp = CParams { typesize: 4, nthreads: 2, clevel: 5, ..CParams::default() };
    let s = SChunk::create(&p, true, cp, DParams { nthreads: 2 }).unwrap();
    // Chunks of 4 fields of 64 x 64, blocks of 8 rows: 32 blocks per chunk, 10 chunks.
    let geom = Geometry::new(&[40, 64, 64], &[4, 64, 64], &[1, 8, 64], 4).unwrap();
    let d: Vec<u8> = (0..40 * 64 * 64u32).flat_map(|i| ((i / 7) ^ ((i % 64) * 3)).to_le_bytes()).collect();
    drop(NdArray::from_buffer_appending(s, geom, Some("<u4"), &d).unwrap());
    let item = |t: usize, y: usize, x: usize| &d[((t * 64 + y) * 64 + x) * 4..][..4];
    let a = NdArray::from_schunk(open(&p, Mode::Read).unwrap()).unwrap();
    // Row 10 of every field: one block of each field, 4 of each chunk's 32.
    let row = a.get_slice(&[DimSlice::new(0, 40, 1), DimSlice::new(10, 11, 1), DimSlice::new(0, 64, 1)]).unwrap();
    let want: Vec<u8> = (0..40).flat_map(|t| (0..64).flat_map(move |x| item(t, 10, x).to_vec())).collect();
    assert_eq!(row, want);
    assert_eq!((a.chunks_read_in_part(), a.blocks_decoded()), (10, 40));
    // A box inside one block of one chunk, with a step.
    let bx = a.get_slice(&[DimSlice::new(13, 14, 1), DimSlice::new(17, 23, 2), DimSlice::new(5, 60, 9)]).unwrap();
    let want: Vec<u8> =
        (17..23).step_by(2).flat_map(|y| (5..60).step_by(9).flat_map(move |x| item(13, y, x).to_vec())).collect();
    assert_eq!(bx, want);
    assert_eq!(a.chunks_read_in_part(), 11);
    // A whole read decodes whole chunks.
    assert_eq!(a.to_vec().unwrap(), d);
    assert_eq!(a.chunks_read_in_part(), 11);
    drop(a);
    // Damage the middle of chunk 0's stored bytes (its blocks' streams): the slice fails,
    // naming chunk 0, instead of returning wrong items.
    let mut bytes = std::fs::read(&p).unwrap();
    let s = open(&p, Mode::Read).unwrap();
    let c0 = s.get_chunk(0).unwrap().into_owned();
    drop(s);
    let at = bytes.windows(c0.len()).position(|w| w == &c0[..]).unwrap();
    for b in &mut bytes[at + c0.len() / 2..at + c0.len() / 2 + 64] {
        *b ^= 0x5A;
    }
    std::fs::write(&p, &bytes).unwrap();
    let a = NdArray::from_schunk(open(&p, Mode::Read).unwrap()).unwrap();
    let mut failed = 0;
    for y in (0..64).step_by(8) {
        match a.get_slice(&[DimSlice::new(0, 4, 1), DimSlice::new(y, y + 1, 1), DimSlice::new(0, 64, 1)]) {
            Ok(v) => assert_eq!(
                v,
                (0..4).flat_map(|t| (0..64).flat_map(move |x| item(t, y as usize, x).to_vec())).collect::<Vec<u8>>()
            ),
            Err(e) => {
                failed += 1;
                assert!(e.to_string().contains("chunk 0"), "{e}");
            }
        }
    }
    assert!(failed > 0, "the damaged blocks were not noticed");
    drop(a);
    std::fs::remove_file(&p).unwrap();
}

/// A new array filled with a value (stored repeated-value chunks, not special ones) on a
/// file: the metalayer and those chunks are one commit, which resizes the contiguous
/// file's header; the chunks must not be staged where the header grows (this was refused:
/// "the header cannot change size once chunks are stored").
#[test]
fn a_new_array_filled_with_a_value_on_a_file() {
    for contiguous in [true, false] {
        let p = temp(&format!("full-{contiguous}.b2nd"));
        let cp = CParams { typesize: 8, nthreads: 1, clevel: 5, ..CParams::default() };
        let s = SChunk::create(&p, contiguous, cp, DParams { nthreads: 1 }).unwrap();
        let geom = Geometry::new(&[1000], &[100], &[10], 8).unwrap();
        let a = NdArray::create(s, geom, Some("<i8"), oxblosc_nd::Fill::Value(3i64.to_le_bytes().to_vec())).unwrap();
        let want: Vec<u8> = (0..1000).flat_map(|_| 3i64.to_le_bytes()).collect();
        assert_eq!(a.to_vec().unwrap(), want);
        drop(a);
        let b = NdArray::from_schunk(open(&p, Mode::Read).unwrap()).unwrap();
        assert_eq!(b.to_vec().unwrap(), want);
        drop(b);
        if contiguous {
            std::fs::remove_file(&p).unwrap();
        } else {
            std::fs::remove_dir_all(&p).unwrap();
        }
    }
}
