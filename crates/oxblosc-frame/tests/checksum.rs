//! Per-chunk checksums: kept through appends/inserts/updates/deletes, persisted in files and
//! sparse directories, reloaded on open, and catching a flipped byte in a stored chunk (with
//! `verify_chunk` and with verify-on-read).

use std::path::PathBuf;

use oxblosc_frame::checksum::{chunk_checksum, VLMETA_NAME};
use oxblosc_frame::{open, CParams, ChecksumStatus, DParams, Error, Mode, SChunk, SpecialValue, Verdict};

fn tmp(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("oxblosc-frame-cksum-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
}

fn cparams() -> CParams {
    CParams { typesize: 4, clevel: 5, codec: 5, ..CParams::default() }
}

fn data(seed: u32, n: usize) -> Vec<u8> {
    (0..n as u32)
        .flat_map(|i| (i.wrapping_mul(2654435761).wrapping_shr(7) ^ seed.wrapping_mul(0x9E37)).to_le_bytes())
        .collect()
}

/// Every chunk's stored hash equals the hash of what `get_chunk` returns.
fn assert_consistent(s: &SChunk) {
    assert_eq!(s.checksums(), ChecksumStatus::On { len: s.nchunks() });
    for i in 0..s.nchunks() {
        assert_eq!(s.chunk_checksum(i), Some(chunk_checksum(&s.get_chunk(i).unwrap())), "chunk {i}");
        assert_eq!(s.verify_chunk(i).unwrap().0, Verdict::Ok);
    }
}

#[test]
fn kept_current_in_memory() {
    let mut s = SChunk::new(cparams(), DParams::default()).unwrap();
    assert_eq!(s.checksums(), ChecksumStatus::Off);
    s.append_data(&data(1, 1000)).unwrap();
    s.enable_checksums().unwrap();
    s.append_data(&data(2, 1000)).unwrap();
    s.insert_data(0, &data(3, 1000)).unwrap();
    s.update_data(1, &data(4, 1000)).unwrap();
    s.fill_special(2000, SpecialValue::Zeros, None).unwrap();
    assert_consistent(&s);
    s.delete_chunk(1).unwrap();
    assert_consistent(&s);
    // The entry travels through a cframe and is hidden from the user's vlmetalayers.
    let back = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
    assert!(!back.vlmeta_names().contains(&VLMETA_NAME));
    assert_consistent(&back);
    s.disable_checksums().unwrap();
    let back = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
    assert_eq!(back.checksums(), ChecksumStatus::Off);
}

#[test]
fn persisted_in_files_and_catch_a_flipped_byte() {
    for contiguous in [true, false] {
        let path = tmp(if contiguous { "contig.b2frame" } else { "sparse.b2frame" });
        {
            let mut s = SChunk::create(&path, contiguous, cparams(), DParams::default()).unwrap();
            s.enable_checksums().unwrap();
            for k in 0..5 {
                s.append_data(&data(k, 4096)).unwrap();
            }
        }
        {
            // Reopen, append more: the hashes follow.
            let mut s = open(&path, Mode::Append).unwrap();
            assert_eq!(s.checksums(), ChecksumStatus::On { len: 5 });
            s.append_data(&data(9, 4096)).unwrap();
        }
        let s = open(&path, Mode::Read).unwrap();
        assert_consistent(&s);
        // Flip one byte in the middle of chunk 3's stored bytes.
        let (file, at) = if contiguous {
            let c = s.get_chunk(3).unwrap().into_owned();
            let bytes = std::fs::read(&path).unwrap();
            let at = bytes.windows(c.len()).position(|w| w == c).unwrap() + c.len() / 2;
            (path.clone(), at)
        } else {
            let mut files: Vec<_> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "chunk"))
                .collect();
            files.sort();
            let len = std::fs::metadata(&files[3]).unwrap().len() as usize;
            (files[3].clone(), len / 2)
        };
        drop(s);
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[at] ^= 0x10;
        std::fs::write(&file, bytes).unwrap();

        let mut s = open(&path, Mode::Read).unwrap();
        for i in [0, 1, 2, 4, 5] {
            assert_eq!(s.verify_chunk(i).unwrap().0, Verdict::Ok);
        }
        match s.verify_chunk(3) {
            Err(Error::File { source, .. }) => {
                assert!(matches!(*source, Error::Checksum { chunk: 3, .. }), "{source}")
            }
            other => panic!("flipped byte not caught: {other:?}"),
        }
        // Verify on read: decoding chunk 3 now fails; without it the read does not check.
        s.set_verify_checksums(true);
        let e = s.decompress_chunk(3).unwrap_err();
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
        assert!(s.get_slice(0, 4096 * 6).is_err());
        assert!(s.decompress_chunk(2).is_ok());
        s.set_verify_checksums(false);
        assert!(s.get_chunk(3).is_ok());
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn without_checksums_chunks_are_unchecked() {
    let mut s = SChunk::new(cparams(), DParams::default()).unwrap();
    s.enable_checksums().unwrap();
    s.append_data(&data(1, 100)).unwrap();
    let frame = s.to_cframe().unwrap();
    let mut u = SChunk::from_cframe(&frame).unwrap();
    assert_consistent(&u);
    u.disable_checksums().unwrap();
    u.append_data(&data(2, 100)).unwrap();
    assert_eq!(u.checksums(), ChecksumStatus::Off);
    assert_eq!(u.verify_chunk(1).unwrap().0, Verdict::NoChecksum);
    assert_eq!(u.verify_chunk(0).unwrap().0, Verdict::NoChecksum);
}

#[test]
fn the_hidden_entry_counts_against_the_vlmetalayer_limit() {
    let mut s = SChunk::new(cparams(), DParams::default()).unwrap();
    s.enable_checksums().unwrap();
    for k in 0..15 {
        s.set_vlmeta(&format!("v{k}"), b"\xc0").unwrap();
    }
    assert!(s.set_vlmeta("v15", b"\xc0").is_err(), "16 user entries + checksums would not reopen");
    let back = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
    assert_eq!(back.vlmeta_names().len(), 15);
    let mut t = SChunk::new(cparams(), DParams::default()).unwrap();
    for k in 0..16 {
        t.set_vlmeta(&format!("v{k}"), b"\xc0").unwrap();
    }
    assert!(t.enable_checksums().is_err());
}

/// A flipped byte in the frame header's typesize or in a metalayer is caught by the digest
/// kept with the checksums: reads and `verify_chunk` fail instead of returning short or
/// misshapen data, and the damaged frame refuses writes (they would make it look valid).
#[test]
fn damaged_header_or_metalayer_is_caught() {
    let path = tmp("head");
    let mut s = SChunk::create(&path, true, cparams(), DParams::default()).unwrap();
    s.add_meta("shape", b"\x93\x01\x02\x03").unwrap();
    for k in 0..3 {
        s.append_data(&data(k, 1000)).unwrap();
    }
    s.enable_checksums().unwrap();
    drop(s);
    let good = std::fs::read(&path).unwrap();
    let meta_at = good.windows(4).position(|w| w == b"\x93\x01\x02\x03").unwrap();
    // Typesize: msgpack int32 at bytes 47..52 of the header (value big-endian at 48..52).
    assert_eq!(&good[47..52], &[0xD2, 0, 0, 0, 4]);
    for (what, at, bit) in [("typesize", 51, 0x0C), ("metalayer", meta_at + 2, 0x01)] {
        let mut bad = good.clone();
        bad[at] ^= bit;
        std::fs::write(&path, &bad).unwrap();
        let s = open(&path, Mode::Read).unwrap();
        assert!(s.verify_checksums());
        let e = s.get_slice(0, s.nitems()).unwrap_err();
        assert!(
            e.to_string().contains("typesize or metalayers") && e.to_string().contains("oxblosc-frame-cksum-head"),
            "{what}: {e}"
        );
        assert!(s.verify_chunk(0).is_err(), "{what}: verify passes");
        let mut w = open(&path, Mode::Append).unwrap();
        assert!(w.append_data(&data(9, 1000)).is_err(), "{what}: a write was accepted");
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), bad, "{what}: the refused write changed the file");
    }
    std::fs::write(&path, &good).unwrap();
    let s = open(&path, Mode::Read).unwrap();
    assert_eq!(s.get_slice(0, s.nitems()).unwrap(), [data(0, 1000), data(1, 1000), data(2, 1000)].concat());
    std::fs::remove_file(&path).unwrap();
}
