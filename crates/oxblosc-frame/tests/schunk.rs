//! SChunk operations against a simple model, in memory and persisted to frame files.

use std::path::PathBuf;

use oxblosc_frame::{open, CParams, DParams, Mode, SChunk, SpecialKind, SpecialValue};

fn cp(codec: u8, typesize: usize) -> CParams {
    CParams { codec, typesize, nthreads: 1, ..CParams::default() }
}

fn ints(range: std::ops::Range<i32>) -> Vec<u8> {
    range.flat_map(|i| i.to_le_bytes()).collect()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxblosc-frame-schunk-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn all_data(s: &SChunk) -> Vec<u8> {
    s.iter_chunks().flat_map(|c| c.unwrap()).collect()
}

#[test]
fn chunksize_rules() {
    let mut s = SChunk::new(cp(5, 4), DParams::default()).unwrap();
    assert_eq!(s.chunksize(), -1);
    s.append_data(&ints(0..1000)).unwrap();
    assert_eq!(s.chunksize(), 4000);
    s.append_data(&ints(0..500)).unwrap(); // short last chunk keeps it fixed
    assert_eq!(s.chunksize(), 4000);
    assert_eq!(s.nitems(), 1500);
    s.append_data(&ints(0..1000)).unwrap(); // follows a shorter one
    assert_eq!(s.chunksize(), 0);
    let mut t = SChunk::new(cp(5, 4), DParams::default()).unwrap();
    t.append_data(&ints(0..1000)).unwrap();
    t.append_data(&ints(0..2000)).unwrap(); // larger
    assert_eq!(t.chunksize(), 0);
    let back = SChunk::from_cframe(&t.to_cframe().unwrap()).unwrap();
    assert_eq!(back.chunksize(), 0);
    assert_eq!(all_data(&back), all_data(&t));
}

#[test]
fn insert_update_delete_and_slices() {
    for codec in [0u8, 1, 2, 4, 5] {
        let mut s = SChunk::new(cp(codec, 4), DParams::default()).unwrap();
        let mut model: Vec<Vec<u8>> = Vec::new();
        for k in 0..6 {
            let c = ints(k * 1000..(k + 1) * 1000);
            s.append_data(&c).unwrap();
            model.push(c);
        }
        s.insert_data(2, &ints(-1000..0)).unwrap();
        model.insert(2, ints(-1000..0));
        s.update_data(4, &ints(7000..8000)).unwrap();
        model[4] = ints(7000..8000);
        s.delete_chunk(0).unwrap();
        model.remove(0);
        let flat: Vec<u8> = model.concat();
        assert_eq!(all_data(&s), flat, "codec {codec}");
        assert_eq!(s.get_slice(999, 2001).unwrap(), flat[999 * 4..2001 * 4]);
        // set_slice across three chunks.
        let patch = ints(900_000..902_100);
        s.set_slice(950, &patch).unwrap();
        let mut want = flat.clone();
        want[950 * 4..(950 + 2100) * 4].copy_from_slice(&patch);
        assert_eq!(s.get_slice(0, s.nitems()).unwrap(), want);
        assert!(s.get_slice(0, s.nitems() + 1).is_err());
        let back = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
        assert_eq!(all_data(&back), want);
        assert_eq!(back.cbytes(), s.cbytes());
    }
}

#[test]
fn specials_as_offsets() {
    let mut s = SChunk::new(cp(5, 8), DParams::default()).unwrap();
    s.append_data(&vec![0u8; 80_000]).unwrap(); // compresses to a zero special
    s.fill_special(30_000, SpecialValue::Nan, None).unwrap();
    s.fill_special(10_000, SpecialValue::Uninit, None).unwrap();
    s.fill_special(10_000, SpecialValue::Value(7u64.to_le_bytes().to_vec()), None).unwrap();
    assert_eq!(s.nchunks(), 1 + 3 + 1 + 1);
    assert_eq!(s.chunk_info(0).unwrap().special, SpecialKind::Zeros);
    let f = s.to_cframe().unwrap();
    let back = SChunk::from_cframe(&f).unwrap();
    assert_eq!(back.chunk_info(1).unwrap().special, SpecialKind::Nan);
    assert_eq!(back.chunk_info(3).unwrap().nbytes, 80_000);
    assert_eq!(back.chunk_info(4).unwrap().special, SpecialKind::Uninit);
    assert_eq!(back.chunk_info(5).unwrap().cbytes, 40); // repeated value: stored, 32 + 8 bytes
    let nan = back.decompress_chunk(1).unwrap();
    assert!(nan.chunks(8).all(|x| f64::from_le_bytes(x.try_into().unwrap()).is_nan()));
    let v = back.decompress_chunk(5).unwrap();
    assert!(v.chunks(8).all(|x| u64::from_le_bytes(x.try_into().unwrap()) == 7));
    assert_eq!(back.cbytes(), s.cbytes());
}

#[test]
fn meta_and_vlmeta() {
    let mut s = SChunk::new(cp(5, 4), DParams::default()).unwrap();
    s.add_meta("m1", b"\xc4\x03abc").unwrap();
    s.set_vlmeta("k", b"\xa1v").unwrap();
    s.append_data(&ints(0..100)).unwrap();
    assert!(s.add_meta("m2", b"x").is_err());
    assert!(s.update_meta("m1", b"xx").is_err());
    s.update_meta("m1", b"\xc4\x03xyz").unwrap();
    s.set_vlmeta("k", b"\xa3new").unwrap();
    s.set_vlmeta("k2", &[1, 2, 3]).unwrap();
    s.delete_vlmeta("k2").unwrap();
    let back = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
    assert_eq!(back.meta("m1").unwrap(), b"\xc4\x03xyz");
    assert_eq!(back.vlmeta("k").unwrap(), b"\xa3new");
    assert_eq!(back.vlmeta_names(), ["k"]);
    assert_eq!(
        oxblosc_frame::msgpack::decode(back.vlmeta("k").unwrap()).unwrap(),
        oxblosc_frame::Value::Str("new".into())
    );
}

#[test]
fn file_backed_append_persists_every_change() {
    let d = tmpdir("files");
    for contiguous in [true, false] {
        let p = d.join(if contiguous { "c.b2frame" } else { "s.b2frame" });
        let mut s = SChunk::create(&p, contiguous, cp(5, 4), DParams::default()).unwrap();
        s.add_meta("m", b"meta").unwrap();
        s.set_vlmeta("v", b"\xa1x").unwrap();
        let mut model = Vec::new();
        for k in 0..5 {
            s.append_data(&ints(k * 100..(k + 1) * 100)).unwrap();
            model.push(ints(k * 100..(k + 1) * 100));
        }
        let size_before =
            std::fs::metadata(if contiguous { p.clone() } else { p.join("chunks.b2frame") }).unwrap().len();
        drop(s);
        let r = open(&p, Mode::Read).unwrap();
        assert_eq!(all_data(&r), model.concat(), "contiguous={contiguous}");
        assert_eq!(r.meta("m").unwrap(), b"meta");
        assert!(r.clone().append_data(&[0; 4]).is_ok()); // a clone is an in-memory copy
        let mut ro = open(&p, Mode::Read).unwrap();
        assert!(ro.append_data(&[0; 4]).is_err());
        // Reopen for appending: existing chunk bytes are not rewritten.
        let mut a = open(&p, Mode::Append).unwrap();
        a.append_data(&ints(500..600)).unwrap();
        model.push(ints(500..600));
        a.update_data(1, &ints(-100..0)).unwrap();
        model[1] = ints(-100..0);
        a.insert_data(0, &ints(9000..9100)).unwrap();
        model.insert(0, ints(9000..9100));
        a.delete_chunk(3).unwrap();
        model.remove(3);
        a.fill_special(250, SpecialValue::Zeros, None).unwrap();
        model.push(vec![0; 400]);
        model.push(vec![0; 400]);
        model.push(vec![0; 200]);
        a.update_meta("m", b"atem").unwrap();
        a.set_vlmeta("w", b"\x01").unwrap();
        drop(a);
        let r = open(&p, Mode::Read).unwrap();
        assert_eq!(all_data(&r), model.concat(), "contiguous={contiguous}");
        assert_eq!(r.meta("m").unwrap(), b"atem");
        assert_eq!(r.vlmeta("w").unwrap(), b"\x01");
        assert!(size_before > 0);
        // The file is a valid cframe for in-memory readers too.
        if contiguous {
            let m = SChunk::from_cframe(&std::fs::read(&p).unwrap()).unwrap();
            assert_eq!(all_data(&m), model.concat());
        } else {
            // Replaced and deleted chunks' files are gone: one file per stored chunk.
            let files = std::fs::read_dir(&p).unwrap().count();
            assert_eq!(files, 1 + 6, "sparse dir holds index + stored chunks");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn frame_embedded_in_a_file() {
    let d = tmpdir("embedded");
    let mut s = SChunk::new(cp(1, 4), DParams::default()).unwrap();
    s.append_data(&ints(0..3000)).unwrap();
    let f = s.to_cframe().unwrap();
    let mut big = b"some prefix bytes".repeat(10);
    let at = big.len() as u64;
    big.extend_from_slice(&f);
    big.extend_from_slice(b"suffix");
    let p = d.join("big.bin");
    std::fs::write(&p, &big).unwrap();
    let r = oxblosc_frame::open_at(&p, at, Mode::Read).unwrap();
    assert_eq!(all_data(&r), ints(0..3000));
    assert!(oxblosc_frame::open_at(&p, at, Mode::Append).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Random append/insert/update/delete/fill/set_slice sequences against a model, in memory
/// and persisted (contiguous file, sparse directory), checked after every step and on reopen.
#[test]
fn random_operations_match_model() {
    let d = tmpdir("random");
    for (target, seed) in [("mem", 1u64), ("contiguous", 2), ("sparse", 3)] {
        let mut rng = Rng(0x1234_5678 ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let path = d.join(format!("{target}.b2frame"));
        let mut s = match target {
            "mem" => SChunk::new(cp(1, 4), DParams::default()).unwrap(),
            t => SChunk::create(&path, t == "contiguous", cp(1, 4), DParams::default()).unwrap(),
        };
        let mut model: Vec<Vec<u8>> = Vec::new();
        let full = 256usize; // items per chunk
        for step in 0..60 {
            let n = model.len();
            let data = |rng: &mut Rng| {
                let a = rng.below(100_000) as i32;
                ints(a..a + full as i32)
            };
            match rng.below(7) {
                0 | 1 => {
                    let c = data(&mut rng);
                    s.append_data(&c).unwrap();
                    model.push(c);
                }
                2 if n > 0 => {
                    let i = rng.below(n + 1);
                    let c = data(&mut rng);
                    s.insert_data(i, &c).unwrap();
                    model.insert(i, c);
                }
                3 if n > 0 => {
                    let i = rng.below(n);
                    let c = data(&mut rng);
                    s.update_data(i, &c).unwrap();
                    model[i] = c;
                }
                4 if n > 1 => {
                    let i = rng.below(n);
                    s.delete_chunk(i).unwrap();
                    model.remove(i);
                }
                5 => {
                    s.fill_special(full as u64, SpecialValue::Zeros, Some(full * 4)).unwrap();
                    model.push(vec![0; full * 4]);
                }
                6 if n > 0 => {
                    let total = n * full;
                    let start = rng.below(total);
                    let len = rng.below(total - start).min(600);
                    let patch = ints(-(len as i32)..0);
                    s.set_slice(start as u64, &patch).unwrap();
                    let mut flat = model.concat();
                    flat[start * 4..(start + len) * 4].copy_from_slice(&patch);
                    model = flat.chunks(full * 4).map(<[u8]>::to_vec).collect();
                }
                _ => {}
            }
            assert_eq!(s.nchunks(), model.len(), "{target} step {step}");
            assert!(all_data(&s) == model.concat(), "{target} step {step}");
        }
        if target != "mem" {
            drop(s);
            let r = open(&path, Mode::Read).unwrap();
            assert!(all_data(&r) == model.concat(), "{target} reopened");
            assert_eq!(r.chunksize(), (full * 4) as i64);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn stored_sum(s: &SChunk) -> u64 {
    (0..s.nchunks()).map(|i| s.get_chunk(i).unwrap().len() as u64).sum()
}

/// Closing a file written live compacts it: its header `cbytes` (where the index sits) is the
/// bytes of its chunks, as in the same frame built in memory, not the chunk areas' dead space.
#[test]
fn closed_file_cbytes_is_its_chunks() {
    let d = tmpdir("closecb");
    let p = d.join("cb.b2frame");
    let data: Vec<u8> = (0..10_000).flat_map(|i| f64::from(i).to_le_bytes()).collect();
    let cparams = CParams { typesize: 8, nthreads: 1, ..CParams::default() };
    let mut m = SChunk::new(cparams.clone(), DParams::default()).unwrap();
    m.append_data(&data).unwrap();
    m.set_vlmeta("a", b"hello").unwrap();
    let mem = m.to_cframe().unwrap();

    let mut s = SChunk::create(&p, true, cparams.clone(), DParams::default()).unwrap();
    s.append_data(&data).unwrap();
    s.set_vlmeta("a", b"hello").unwrap();
    assert_eq!(s.cbytes(), m.cbytes());
    drop(s);
    let r = open(&p, Mode::Read).unwrap();
    assert_eq!(r.cbytes(), m.cbytes(), "reopened cbytes");
    assert_eq!(r.cbytes(), stored_sum(&r));
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(len.abs_diff(mem.len() as u64) <= 16, "file {len} bytes, in-memory frame {}", mem.len());
    drop(r);

    // Later sessions (updates leave the old copy dead, appends open new chunk areas).
    let mut want = data.clone();
    for session in 0..3i32 {
        let mut s = open(&p, Mode::Append).unwrap();
        let more = ints(session * 100..session * 100 + 20_000);
        s.append_data(&more).unwrap();
        s.update_data(0, &data).unwrap();
        want.extend_from_slice(&more);
        drop(s);
        let r = open(&p, Mode::Read).unwrap();
        assert_eq!(r.cbytes(), stored_sum(&r), "session {session}");
        assert_eq!(all_data(&r), want);
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len < r.cbytes() + 512, "session {session}: file {len} bytes, chunks {}", r.cbytes());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// An old handle closed after a new frame was created at its path (Python: `s = SChunk(...,
/// mode="w")` rebinding `s`) must not compact its old frame over the new one.
#[test]
fn closing_an_old_handle_leaves_a_recreated_file_alone() {
    let d = tmpdir("recreated");
    let p = d.join("f.b2frame");
    let mut old = SChunk::create(&p, true, cp(1, 4), DParams::default()).unwrap();
    old.append_data(&ints(0..1000)).unwrap();
    let mut new = SChunk::create(&p, true, cp(1, 4), DParams::default()).unwrap();
    new.append_data(&ints(5000..7000)).unwrap();
    drop(new);
    let before = std::fs::read(&p).unwrap();
    drop(old);
    assert!(std::fs::read(&p).unwrap() == before, "the old handle's close replaced the new frame");
    assert_eq!(all_data(&open(&p, Mode::Read).unwrap()), ints(5000..7000));
    let _ = std::fs::remove_dir_all(&d);
}

/// Stored chunks of files and sparse directories are read through a per-thread buffer that
/// `with_chunk` reuses: chunks of different sizes in any order, nested calls, several threads
/// and a failed read in between all give each chunk's own bytes.
#[test]
fn reads_through_the_reused_buffer_give_each_chunks_own_bytes() {
    let dir = tmpdir("readbuf");
    for contiguous in [true, false] {
        let path = dir.join(if contiguous { "f.b2frame" } else { "d.b2frame" });
        let sizes = [50_000, 300, 120_000, 7, 64_000];
        let parts: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(k, &n)| ints(k as i32 * 1000..k as i32 * 1000 + n)).collect();
        {
            let mut s = SChunk::create(&path, contiguous, cp(5, 4), DParams::default()).unwrap();
            for p in &parts {
                s.append_data(p).unwrap();
            }
        }
        let s = open(&path, Mode::Read).unwrap();
        let stored: Vec<Vec<u8>> = (0..parts.len()).map(|i| s.get_chunk(i).unwrap().into_owned()).collect();
        for &i in &[2usize, 1, 3, 0, 4, 2, 3] {
            assert_eq!(s.decompress_chunk(i).unwrap(), parts[i], "chunk {i}");
            let got = s.with_chunk(i, |c| Ok::<_, oxblosc_frame::Error>(c.to_vec())).unwrap();
            assert_eq!(got, stored[i], "stored bytes of chunk {i}");
        }
        // Nested: the inner read must not clobber the outer chunk's bytes.
        let (outer, inner) = s
            .with_chunk(2, |a| {
                let b = s.with_chunk(0, |b| Ok::<_, oxblosc_frame::Error>(b.to_vec()))?;
                Ok::<_, oxblosc_frame::Error>((a.to_vec(), b))
            })
            .unwrap();
        assert_eq!((outer, inner), (stored[2].clone(), stored[0].clone()));
        // Threads read their own buffers.
        std::thread::scope(|sc| {
            for t in 0..3 {
                let (s, parts) = (&s, &parts);
                sc.spawn(move || {
                    for r in 0..20 {
                        let i = (t + r) % parts.len();
                        assert_eq!(s.decompress_chunk(i).unwrap(), parts[i]);
                    }
                });
            }
        });
        // An error inside the callback comes back as is; the next read is unaffected.
        let e = s.with_chunk(1, |_| Err::<(), _>(oxblosc_frame::Error::Stale)).unwrap_err();
        assert!(e.is_stale());
        assert!(s.with_chunk(99, |_| Ok::<_, oxblosc_frame::Error>(())).is_err());
        assert_eq!(s.decompress_chunk(4).unwrap(), parts[4]);
        let mut all = vec![0u8; parts.iter().map(Vec::len).sum()];
        s.get_slice_into(0, all.len() as u64 / 4, &mut all).unwrap();
        assert_eq!(all, parts.concat());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `chunk_info` reads only a stored chunk's header: sizes agree with the whole chunk's header
/// in memory, in a contiguous file and in a sparse directory, and a sparse chunk file cut
/// after its header still describes itself while decoding it names the damage.
#[test]
fn chunk_info_reads_only_the_header() {
    let dir = tmpdir("info");
    let sizes = [50_000, 300, 120_000, 7];
    let parts: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(k, &n)| ints(k as i32 * 9..k as i32 * 9 + n)).collect();
    let mut mem = SChunk::new(cp(5, 4), DParams::default()).unwrap();
    for p in &parts {
        mem.append_data(p).unwrap();
    }
    for contiguous in [true, false] {
        let path = dir.join(if contiguous { "f.b2frame" } else { "d.b2frame" });
        {
            let mut s = SChunk::create(&path, contiguous, cp(5, 4), DParams::default()).unwrap();
            for p in &parts {
                s.append_data(p).unwrap();
            }
        }
        let s = open(&path, Mode::Read).unwrap();
        for (i, p) in parts.iter().enumerate() {
            let (a, b) = (s.chunk_info(i).unwrap(), mem.chunk_info(i).unwrap());
            assert_eq!((a.nbytes, a.cbytes, a.special), (p.len(), s.get_chunk(i).unwrap().len(), b.special));
            assert_eq!((a.nbytes, a.cbytes), (b.nbytes, b.cbytes), "chunk {i}");
        }
        let mut all = vec![0u8; parts.iter().map(Vec::len).sum::<usize>()];
        s.get_slice_into(0, all.len() as u64 / 4, &mut all).unwrap();
        assert_eq!(all, mem.iter_chunks().flat_map(|c| c.unwrap()).collect::<Vec<_>>());
    }
    // Cut the sparse directory's third chunk file after its 32-byte header.
    let sparse = dir.join("d.b2frame");
    let victim = std::fs::read_dir(&sparse)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "chunk"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..32]).unwrap();
    let s = open(&sparse, Mode::Read).unwrap();
    let info = s.chunk_info(2).unwrap();
    assert_eq!((info.nbytes, info.cbytes), (120_000 * 4, bytes.len()));
    let err = s.decompress_chunk(2).unwrap_err().to_string();
    assert!(err.contains("chunk 2"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `get_chunk_in` gives the bytes `get_chunk` gives: borrowed from memory, read into the
/// caller's buffer (its allocation reused) from a file, special chunks materialised there.
#[test]
fn get_chunk_in_matches_get_chunk() {
    let dir = tmpdir("chunk-in");
    let path = dir.join("f.b2frame");
    let mut mem = SChunk::new(cp(1, 4), DParams::default()).unwrap();
    let mut file = SChunk::create(&path, true, cp(1, 4), DParams::default()).unwrap();
    for s in [&mut mem, &mut file] {
        s.append_data(&ints(0..1000)).unwrap();
        s.fill_special(1000, SpecialValue::Zeros, None).unwrap();
        s.append_data(&ints(500..1500)).unwrap();
    }
    drop(file);
    let file = open(&path, Mode::Read).unwrap();
    let mut buf = Vec::with_capacity(1 << 16);
    let cap = buf.capacity();
    for i in 0..3 {
        let want = mem.get_chunk(i).unwrap().into_owned();
        assert_eq!(mem.get_chunk_in(i, &mut buf).unwrap(), if i == 1 { None } else { Some(&want[..]) });
        if i == 1 {
            assert_eq!(buf, want); // a special chunk is made, not borrowed
        }
        assert_eq!(file.get_chunk_in(i, &mut buf).unwrap(), None);
        assert_eq!(buf, file.get_chunk(i).unwrap().into_owned());
        assert_eq!(buf, want);
    }
    assert!(buf.capacity() >= cap, "the buffer was reallocated smaller");
    assert!(file.get_chunk_in(3, &mut buf).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Chunk file ids of a sparse frame stay below C-Blosc2's bound (id + 32 <= cbytes; the wheel
/// refuses larger ones, its own files included) through appends + deletes and through a batch
/// that replaces every chunk: the ids are compacted after the commit, the data and a reopened
/// view are unchanged, and no file is left behind.
#[test]
fn sparse_chunk_ids_stay_within_cblosc2_bound() {
    let dir = tmpdir("sparse-ids").join("s.b2frame");
    let mut s = SChunk::create(&dir, false, cp(5, 4), DParams::default()).unwrap();
    for k in 0..100 {
        s.append_data(&ints(k * 4..k * 4 + 4)).unwrap();
    }
    for _ in 0..98 {
        s.delete_chunk(0).unwrap();
    }
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&dir), ["00000000.chunk", "00000001.chunk", "chunks.b2frame"]);
    assert_eq!(all_data(&s), ints(392..400));
    // A batch replacing every chunk (as an n-d resize does), then more appends.
    s.batch(|s| {
        for i in 0..2 {
            s.update_data(i, &ints(1000 + i as i32 * 4..1004 + i as i32 * 4))?;
        }
        Ok(())
    })
    .unwrap();
    // A batch that replaces the first chunks and deletes all others (an n-d shrink).
    for k in 0..98 {
        s.append_data(&ints(k * 4..k * 4 + 4)).unwrap();
    }
    s.batch(|s| {
        s.update_data(1, &ints(1004..1008))?;
        while s.nchunks() > 2 {
            s.delete_chunk(2)?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(names(&dir), ["00000000.chunk", "00000001.chunk", "chunks.b2frame"]);
    assert_eq!(all_data(&s), ints(1000..1008));
    s.append_data(&ints(7..11)).unwrap();
    let files = names(&dir);
    assert_eq!(files.len(), 4, "{files:?}");
    let max_id = files[..3].iter().map(|f| u64::from_str_radix(&f[..8], 16).unwrap()).max().unwrap();
    assert!(max_id + 32 <= s.cbytes(), "{files:?}, cbytes {}", s.cbytes());
    let want = [ints(1000..1008), ints(7..11)].concat();
    assert_eq!(all_data(&s), want);
    drop(s);
    assert_eq!(all_data(&open(&dir, Mode::Read).unwrap()), want);
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

/// `s = open(p, Append)` run twice in one process keeps the first handle alive while the
/// second opens. Closing the first used to tidy the file under the second (rewrite + rename
/// when it held dead bytes: the second then wrote to an unlinked file and every later change
/// was lost without an error). Now the first leaves the file to the second.
#[test]
fn closing_a_writer_leaves_the_file_to_another_writer_of_it() {
    for bloat in [false, true] {
        let path = tmpdir(&format!("two-writers-{bloat}")).join("f.b2frame");
        let mut s = SChunk::create(&path, true, cp(5, 4), DParams::default()).unwrap();
        for k in 0..4 {
            s.append_data(&ints(k * 100..k * 100 + 100)).unwrap();
        }
        drop(s);
        let mut a = open(&path, Mode::Append).unwrap();
        if bloat {
            // replaced chunks leave dead bytes: closing `a` alone would rewrite the file
            for k in 0..4 {
                a.update_data(k, &ints(1000 + k as i32 * 100..1100 + k as i32 * 100)).unwrap();
            }
        }
        let mut b = open(&path, Mode::Append).unwrap();
        drop(a);
        b.append_data(&ints(7..107)).unwrap();
        let first: Vec<u8> = (0..4)
            .flat_map(|k| if bloat { ints(1000 + k * 100..1100 + k * 100) } else { ints(k * 100..k * 100 + 100) })
            .collect();
        let want = [first, ints(7..107)].concat();
        assert_eq!(all_data(&open(&path, Mode::Read).unwrap()), want, "bloat {bloat}: before closing b");
        drop(b);
        assert_eq!(all_data(&open(&path, Mode::Read).unwrap()), want, "bloat {bloat}: after closing b");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

/// A frame file replaced under an open writer (another process rewrote it and renamed the
/// copy over the path): the writer refuses to write (`Stale`) instead of writing to the
/// unlinked file, and the new file keeps its contents.
#[test]
fn a_writer_refuses_to_write_to_a_file_replaced_under_it() {
    let path = tmpdir("replaced").join("f.b2frame");
    let mut s = SChunk::create(&path, true, cp(5, 4), DParams::default()).unwrap();
    s.append_data(&ints(0..100)).unwrap();
    let copy = path.with_extension("copy");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    let e = s.append_data(&ints(100..200)).unwrap_err();
    assert!(e.is_stale(), "{e}");
    assert_eq!(s.nchunks(), 1, "the handle's view is unchanged");
    drop(s);
    assert_eq!(all_data(&open(&path, Mode::Read).unwrap()), ints(0..100));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A batch that replaces existing chunks of a frame on disk (what an n-d compute into a new
/// file does: every chunk starts as zeros) writes each replacement out as it comes and keeps
/// none in memory until the commit: the caller's shared bytes are released at once and the
/// file grows during the batch. (Before, only appended chunks were staged: computing a large
/// result into a file held all of it, compressed, in memory.) A failed batch still leaves
/// the frame as before.
#[test]
fn a_batch_replacing_chunks_of_a_file_keeps_none_in_memory() {
    let n = 8usize;
    let chunk_items = 1 << 16;
    for contiguous in [true, false] {
        let path = tmpdir(&format!("batch-replace-{contiguous}")).join("f.b2frame");
        let mut s = SChunk::create(&path, contiguous, cp(0, 4), DParams::default()).unwrap();
        s.fill_special((n * chunk_items) as u64, SpecialValue::Zeros, Some(chunk_items * 4)).unwrap();
        // Bytes allocated on disk (a contiguous writer's reserve is a hole until written).
        let on_disk = |p: &std::path::Path| -> u64 {
            use std::os::unix::fs::MetadataExt;
            if p.is_dir() {
                std::fs::read_dir(p).unwrap().map(|e| e.unwrap().metadata().unwrap().blocks() * 512).sum()
            } else {
                std::fs::metadata(p).unwrap().blocks() * 512
            }
        };
        let want: Vec<std::sync::Arc<[u8]>> = (0..n).map(|k| noise_chunk(k as u32 + 1, chunk_items * 4)).collect();
        let before = on_disk(&path);
        s.batch(|s| {
            for (i, c) in want.iter().enumerate() {
                s.update_chunk_shared(i, c.clone())?;
                assert_eq!(std::sync::Arc::strong_count(c), 1, "chunk {i} is still held in memory by the batch");
                assert!(
                    on_disk(&path) >= before + (i as u64 + 1) * (chunk_items as u64 * 4),
                    "chunk {i} not written out"
                );
            }
            Ok(())
        })
        .unwrap();
        let expect: Vec<Vec<u8>> =
            want.iter().map(|c| oxblosc_chunk::decompress(c, &DParams::default()).unwrap()).collect();
        assert_eq!(all_data(&s), expect.concat());
        // A batch that fails after replacing chunks leaves the committed ones.
        let r = s.batch(|s| {
            s.update_chunk_shared(0, want[1].clone())?;
            s.update_chunk_shared(1, want[0].clone())?;
            s.update_chunk_shared(1, want[2].clone())?;
            s.delete_chunk(99)
        });
        assert!(r.is_err());
        assert_eq!(all_data(&s), expect.concat());
        drop(s);
        assert_eq!(all_data(&open(&path, Mode::Read).unwrap()), expect.concat());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

fn s_compress(data: &[u8]) -> Vec<u8> {
    oxblosc_chunk::compress(data, &oxblosc_chunk::CParams { typesize: 4, ..Default::default() }).unwrap()
}

/// A batch that adds a metalayer to a new contiguous file and then its chunks (a new array's
/// one commit) stages the chunks as they come, like any batch, though the header grows: the
/// commit writes the frame anew, reading staged chunks back. (Session 9 kept such a batch's
/// chunks in memory until the commit instead.) Sparse directories are staged the same way.
#[test]
fn a_batch_adding_a_metalayer_and_chunks_keeps_no_chunk_in_memory() {
    let n = 6usize;
    let chunk_items = 1 << 16;
    for contiguous in [true, false] {
        let path = tmpdir(&format!("batch-meta-{contiguous}")).join("f.b2frame");
        let mut s = SChunk::create(&path, contiguous, cp(0, 4), DParams::default()).unwrap();
        let want: Vec<std::sync::Arc<[u8]>> = (0..n).map(|k| noise_chunk(k as u32 + 7, chunk_items * 4)).collect();
        s.batch(|s| {
            s.add_meta("b2nd", &[0x90; 300])?;
            for (i, c) in want.iter().enumerate() {
                s.append_chunk_shared(c.clone())?;
                assert_eq!(std::sync::Arc::strong_count(c), 1, "chunk {i} is still held in memory by the batch");
            }
            Ok(())
        })
        .unwrap();
        let expect: Vec<Vec<u8>> =
            want.iter().map(|c| oxblosc_chunk::decompress(c, &DParams::default()).unwrap()).collect();
        assert_eq!(all_data(&s), expect.concat());
        drop(s);
        let r = open(&path, Mode::Read).unwrap();
        assert_eq!(r.meta("b2nd"), Some(&[0x90u8; 300][..]));
        assert_eq!(all_data(&r), expect.concat());
        if contiguous {
            // written anew: no staging area left behind
            let len = std::fs::metadata(&path).unwrap().len();
            assert!(len < r.cbytes() + 4096, "{len} bytes for {} of chunks", r.cbytes());
        }
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

/// A compressed chunk of `nbytes` of noise (codec 0 = BloscLZ: stored about raw).
fn noise_chunk(seed: u32, nbytes: usize) -> std::sync::Arc<[u8]> {
    let mut x = seed.wrapping_mul(0x9E37_79B9);
    let data: Vec<u8> = (0..nbytes)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    std::sync::Arc::from(s_compress(&data))
}

/// What another process's `open(path, Append)` does to bytes past the committed `frame_len`:
/// it cuts them (recovery of an interrupted write) without touching the header. A writer
/// that had written there (the chunks a batch staged, or the index blocks its spare slot
/// keeps) used to commit a frame referencing the cut bytes: chunks of zeros, an index that
/// no reader accepts. It now sees its view as stale and commits nothing; the file keeps the
/// last committed state.
#[test]
fn bytes_cut_under_a_writer_make_its_view_stale() {
    let path = tmpdir("cut-under").join("f.b2frame");
    let mut s = SChunk::create(&path, true, cp(1, 4), DParams::default()).unwrap();
    s.append_data(&ints(0..4096)).unwrap();
    drop(s);
    let cut_to_frame_len = |path: &std::path::Path| {
        let head = std::fs::read(path).unwrap();
        assert_eq!(head[15], 0xCF, "frame_len's msgpack marker");
        let frame_len = u64::from_be_bytes(head[16..24].try_into().unwrap());
        assert!(frame_len < head.len() as u64, "nothing past frame_len to cut");
        std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(frame_len).unwrap();
    };
    let mut a = open(&path, Mode::Append).unwrap();
    let e = a
        .batch(|a| {
            for k in 1..4 {
                a.append_data(&ints(k * 4096..(k + 1) * 4096))?;
            }
            cut_to_frame_len(&path); // as a writer opening in another process
            a.append_data(&ints(4 * 4096..5 * 4096))
        })
        .unwrap_err();
    assert!(e.is_stale(), "{e}");
    assert_eq!(a.nchunks(), 1, "the handle's view is unchanged");
    drop(a);
    assert_eq!(all_data(&open(&path, Mode::Read).unwrap()), ints(0..4096));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
