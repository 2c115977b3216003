//! python-blosc2 interop, both directions.
//!
//! * `golden_python_frames` (always): the frames in tests/data/golden (written by python-blosc2
//!   4.14.1, see MANIFEST.txt) read with identical data, meta and vlmeta; our `to_cframe` of the
//!   same operations is byte-identical to python-blosc2's for BloscLZ.
//! * `python_interop` (runs when env `OXBLOSC_INTEROP_PY` names a python with blosc2 + numpy +
//!   msgpack, else it prints a skip note and passes): runs `tests/data/pyinterop.py generate`,
//!   reads everything it wrote, then writes our own frames (files, sparse dirs, cframes) and has
//!   `pyinterop.py check` read them back with python-blosc2.

use std::path::{Path, PathBuf};
use std::process::Command;

use oxblosc_frame::{msgpack, open, CParams, DParams, Mode, SChunk, SpecialValue, Value};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn shared() -> PathBuf {
    std::env::var_os("OXBLOSC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxblosc-frame-interop-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// sum(b[i] * (i % 65521 + 1)) mod 2^64 (same as pyinterop.py).
fn checksum(b: &[u8]) -> u64 {
    b.iter().enumerate().fold(0u64, |acc, (i, &x)| acc.wrapping_add(u64::from(x) * (i as u64 % 65521 + 1)))
}

#[derive(Debug, Default)]
struct Frame {
    name: String,
    kind: String,
    fields: Vec<(String, i64)>,
    chunks: Vec<(usize, u64)>,
    meta: Vec<(String, Vec<u8>)>,
    vlmeta: Vec<(String, Vec<u8>)>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn parse_manifest(path: &Path) -> Vec<Frame> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut cur = Frame::default();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        match t.first().copied() {
            None => {}
            Some(x) if x.starts_with('#') => {}
            Some("frame") => {
                cur = Frame { name: t[1].into(), kind: t[2].into(), ..Frame::default() };
                for kv in &t[3..] {
                    let (k, v) = kv.split_once('=').unwrap();
                    cur.fields.push((k.into(), v.parse().unwrap()));
                }
            }
            Some("chunk") => cur.chunks.push((t[2].parse().unwrap(), t[3].parse().unwrap())),
            Some("meta") => cur.meta.push((t[1].into(), unhex(t.get(2).unwrap_or(&"")))),
            Some("vlmeta") => cur.vlmeta.push((t[1].into(), unhex(t.get(2).unwrap_or(&"")))),
            Some("end") => out.push(std::mem::take(&mut cur)),
            Some(other) => panic!("bad manifest line {other}"),
        }
    }
    out
}

fn describe(name: &str, kind: &str, s: &SChunk) -> String {
    let mut o = format!(
        "frame {name} {kind} typesize={} chunksize={} nbytes={} nchunks={}\n",
        s.typesize(),
        s.chunksize(),
        s.nbytes(),
        s.nchunks()
    );
    for i in 0..s.nchunks() {
        let c = s.decompress_chunk(i).unwrap();
        o += &format!("chunk {i} {} {}\n", c.len(), checksum(&c));
    }
    for n in s.meta_names() {
        o += &format!("meta {n} {}\n", hex(s.meta(n).unwrap()));
    }
    for n in s.vlmeta_names() {
        o += &format!("vlmeta {n} {}\n", hex(s.vlmeta(n).unwrap()));
    }
    o + "end\n"
}

fn open_frame(dir: &Path, f: &Frame) -> SChunk {
    let p = dir.join(&f.name);
    match f.kind.as_str() {
        "cframe" => SChunk::from_cframe(&std::fs::read(&p).unwrap()),
        _ => open(&p, Mode::Read),
    }
    .unwrap_or_else(|e| panic!("{}: {e}", f.name))
}

/// Read every frame of a python-written manifest and compare.
fn check_python_frames(dir: &Path) -> usize {
    let frames = parse_manifest(&dir.join("MANIFEST.txt"));
    assert!(!frames.is_empty());
    for f in &frames {
        let s = open_frame(dir, f);
        let what = &f.name;
        for (k, v) in &f.fields {
            let got = match k.as_str() {
                "typesize" => s.typesize() as i64,
                "chunksize" => s.chunksize(),
                "nbytes" => s.nbytes() as i64,
                "nchunks" => s.nchunks() as i64,
                _ => continue,
            };
            assert_eq!(got, *v, "{what}: {k}");
        }
        for (i, (n, cs)) in f.chunks.iter().enumerate() {
            let c = s.decompress_chunk(i).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!((c.len(), checksum(&c)), (*n, *cs), "{what}: chunk {i}");
        }
        let mut names: Vec<&str> = s.meta_names();
        names.sort();
        let mut want: Vec<&str> = f.meta.iter().map(|(n, _)| n.as_str()).collect();
        want.sort();
        assert_eq!(names, want, "{what}: meta names");
        for (n, v) in &f.meta {
            assert_eq!(s.meta(n).unwrap(), v.as_slice(), "{what}: meta {n}");
        }
        assert_eq!(s.vlmeta_names().len(), f.vlmeta.len(), "{what}: vlmeta names");
        for (n, v) in &f.vlmeta {
            assert_eq!(s.vlmeta(n).unwrap(), v.as_slice(), "{what}: vlmeta {n}");
            msgpack::decode(v).unwrap();
        }
        // Our rewrite of their frame reads back the same.
        let again = SChunk::from_cframe(&s.to_cframe().unwrap()).unwrap();
        assert_eq!(again.nchunks(), s.nchunks());
        for i in 0..s.nchunks() {
            assert!(again.decompress_chunk(i).unwrap() == s.decompress_chunk(i).unwrap(), "{what}: rewrite chunk {i}");
        }
    }
    frames.len()
}

fn ident_schunk(codec: u8, variable: bool) -> SChunk {
    let mut s =
        SChunk::new(CParams { codec, typesize: 4, nthreads: 1, ..CParams::default() }, DParams::default()).unwrap();
    if variable {
        for n in [10_000, 5_000, 10_000] {
            s.append_data(&ints(0..n)).unwrap();
        }
        return s;
    }
    for k in 1..4i32 {
        let d: Vec<u8> = (0..10_000i32).flat_map(|i| (i * k).to_le_bytes()).collect();
        s.append_data(&d).unwrap();
    }
    s.append_data(&ints(0..500)).unwrap();
    s
}

/// Compare our `to_cframe` with python-blosc2's for the same operations. Returns None when
/// identical, else the first differing byte.
fn ident_diff(dir: &Path, name: &str, codec: u8) -> Option<usize> {
    let theirs = std::fs::read(dir.join(name)).unwrap();
    let ours = ident_schunk(codec, name.contains("_var_")).to_cframe().unwrap();
    if ours == theirs {
        None
    } else {
        Some(ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len())))
    }
}

#[test]
fn golden_python_frames() {
    let dir = data_dir().join("golden");
    assert_eq!(check_python_frames(&dir), 11);
    // BloscLZ is reproduced byte for byte, so the whole frame must be identical.
    assert_eq!(ident_diff(&dir, "ident_blosclz.cframe", 0), None, "blosclz frame differs from python-blosc2's");
    // LZ4 and Zstd payloads come from the C libraries; identical while their versions match
    // the wheel's (lz4 1.10 / zstd 1.5 today), so report rather than fail.
    for (name, codec) in [("ident_lz4.cframe", 1), ("ident_var_lz4.cframe", 1), ("ident_zstd.cframe", 5)] {
        eprintln!("{name}: first differing byte = {:?}", ident_diff(&dir, name, codec));
    }
}

fn ints(range: std::ops::Range<i32>) -> Vec<u8> {
    range.flat_map(|i| i.to_le_bytes()).collect()
}

fn packed(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    msgpack::encode(v, &mut out);
    out
}

/// Write our own frames for python-blosc2 to read; returns the manifest text.
fn write_our_frames(dir: &Path) -> String {
    let mut manifest = String::new();
    let cp = |codec, typesize| CParams { codec, typesize, nthreads: 1, ..CParams::default() };

    // a. contiguous file (save), zstd, metalayers + vlmeta, short last chunk.
    let mut s = SChunk::new(cp(5, 4), DParams::default()).unwrap();
    s.add_meta("m1", &packed(&Value::Bin(b"abc".to_vec()))).unwrap();
    s.add_meta("shape", &packed(&Value::Array(vec![Value::UInt(5), Value::UInt(6)]))).unwrap();
    for k in 0..4 {
        s.append_data(&ints(k * 1000..(k + 1) * 1000)).unwrap();
    }
    s.append_data(&ints(0..300)).unwrap();
    s.set_vlmeta("k", &packed(&Value::Str("v".into()))).unwrap();
    s.set_vlmeta(
        "d",
        &packed(&Value::Map(vec![
            (Value::Str("a".into()), Value::UInt(1)),
            (Value::Str("b".into()), Value::Array(vec![Value::UInt(1), Value::F64(2.5)])),
        ])),
    )
    .unwrap();
    s.save(dir.join("ox_zstd_meta.b2frame"), true).unwrap();
    manifest += &describe("ox_zstd_meta.b2frame", "file", &s);
    s.save(dir.join("ox_zstd_meta_sparse.b2frame"), false).unwrap();
    manifest += &describe("ox_zstd_meta_sparse.b2frame", "sparse", &s);

    // b. file-backed writes (create + append/insert/update/delete), contiguous and sparse.
    for contiguous in [true, false] {
        let name = if contiguous { "ox_live.b2frame" } else { "ox_live_sparse.b2frame" };
        let mut s = SChunk::create(dir.join(name), contiguous, cp(1, 8), DParams::default()).unwrap();
        s.add_meta("x", &packed(&Value::UInt(1))).unwrap();
        for k in 0..5i64 {
            let d: Vec<u8> = (k * 1000..(k + 1) * 1000).flat_map(|i| (i * i).to_le_bytes()).collect();
            s.append_data(&d).unwrap();
        }
        s.insert_data(1, &[42u8; 8000]).unwrap();
        s.update_data(3, &[7u8; 8000]).unwrap();
        s.delete_chunk(4).unwrap();
        s.fill_special(2000, SpecialValue::Zeros, None).unwrap();
        s.set_vlmeta("info", &packed(&Value::Bin(b"bytes here".to_vec()))).unwrap();
        drop(s);
        let s = open(dir.join(name), Mode::Read).unwrap();
        manifest += &describe(name, if contiguous { "file" } else { "sparse" }, &s);
    }

    // c. specials (NaN, zeros, uninit, repeated value) + data, blosclz, cframe.
    let mut s = SChunk::new(cp(0, 8), DParams::default()).unwrap();
    s.fill_special(3000, SpecialValue::Nan, Some(8000)).unwrap();
    s.append_data(&[0u8; 8000]).unwrap();
    s.fill_special(1000, SpecialValue::Value(3.5f64.to_le_bytes().to_vec()), None).unwrap();
    let lin: Vec<u8> = (0..1000).flat_map(|i| (i as f64 / 999.0).to_le_bytes()).collect();
    s.append_data(&lin).unwrap();
    std::fs::write(dir.join("ox_specials.cframe"), s.to_cframe().unwrap()).unwrap();
    manifest += &describe("ox_specials.cframe", "cframe", &s);

    // d. variable chunk sizes, zlib, cframe.
    let mut s = SChunk::new(cp(4, 4), DParams::default()).unwrap();
    for n in [1000, 500, 2000, 10, 1500] {
        s.append_data(&ints(n..2 * n)).unwrap();
    }
    assert_eq!(s.chunksize(), 0);
    std::fs::write(dir.join("ox_zlib_variable.cframe"), s.to_cframe().unwrap()).unwrap();
    manifest += &describe("ox_zlib_variable.cframe", "cframe", &s);

    // e. lz4hc + delta + bitshuffle, many chunks, sparse.
    let mut c = cp(2, 8);
    c.filters = [0, 0, 0, 0, 3, 2];
    let mut s = SChunk::new(c, DParams::default()).unwrap();
    for k in 0..40 {
        let d: Vec<u8> = (k * 100..(k + 1) * 100).flat_map(|i| (i as f64 / 3.0).to_le_bytes()).collect();
        s.append_data(&d).unwrap();
    }
    s.save(dir.join("ox_lz4hc_many.b2frame"), false).unwrap();
    manifest += &describe("ox_lz4hc_many.b2frame", "sparse", &s);

    // f. C-Blosc2 vectors rewritten by us (variable chunks, VL blocks, b2nd metalayer).
    for (name, v) in [
        ("ox_varchunks.cframe", "varchunks-lz4-3.0.0.b2frame"),
        ("ox_vlblocks.cframe", "vlblocks-lz4-variable-3.0.0.b2frame"),
        ("ox_frame_simple.cframe", "tests/fuzz/corpus/frame_simple-zstd.b2frame"),
    ] {
        let Ok(bytes) = std::fs::read(shared().join("vectors/c-blosc2-compat").join(v)) else { continue };
        let mut s = SChunk::from_cframe(&bytes).unwrap();
        // frame_simple's vlmetalayer holds raw bytes 0..9, not msgpack: python-blosc2 cannot
        // unpack it (its own limitation), so leave it out of the comparison.
        for n in s.vlmeta_names().into_iter().map(String::from).collect::<Vec<_>>() {
            s.delete_vlmeta(&n).unwrap();
        }
        std::fs::write(dir.join(name), s.to_cframe().unwrap()).unwrap();
        manifest += &describe(name, "cframe", &s);
    }
    manifest
}

#[test]
fn python_interop() {
    let Some(py) = std::env::var_os("OXBLOSC_INTEROP_PY") else {
        eprintln!("python_interop skipped: set OXBLOSC_INTEROP_PY to a python with blosc2, numpy and msgpack");
        return;
    };
    let script = data_dir().join("pyinterop.py");
    // python-blosc2 -> oxblosc.
    let gen = tmpdir("pygen");
    let st = Command::new(&py).arg(&script).arg("generate").arg(&gen).status().unwrap();
    assert!(st.success(), "pyinterop.py generate failed");
    let n = check_python_frames(&gen);
    eprintln!("python-blosc2 -> oxblosc: {n} frames read identically");
    // oxblosc -> python-blosc2.
    let ours = tmpdir("ours");
    let manifest = write_our_frames(&ours);
    std::fs::write(ours.join("MANIFEST.txt"), manifest).unwrap();
    let out = Command::new(&py).arg(&script).arg("check").arg(&ours).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("oxblosc -> python-blosc2:\n{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "python-blosc2 could not read our frames:\n{report}");
    let _ = std::fs::remove_dir_all(&gen);
    let _ = std::fs::remove_dir_all(&ours);
}
