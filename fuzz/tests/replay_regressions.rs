//! Replays every saved fuzz finding (`fuzz/regressions/<target>/<name>`), the generated
//! seeds, and the small C-Blosc2 compat vectors through the fuzz target bodies.
//! Runs on stable with plain `cargo test` (no cargo-fuzz needed).

use std::path::{Path, PathBuf};

fn run(target: &str, data: &[u8]) {
    match target {
        "decompress" => oxblosc_fuzz::fuzz_decompress(data),
        "roundtrip" => oxblosc_fuzz::fuzz_roundtrip(data),
        "getitem" => oxblosc_fuzz::fuzz_getitem(data),
        "frame_open" => oxblosc_fuzz::fuzz_frame_open(data),
        "frame_ops" => oxblosc_fuzz::fuzz_frame_ops(data),
        "nd_open" => oxblosc_fuzz::fuzz_nd_open(data),
        "nd_slices" => oxblosc_fuzz::fuzz_nd_slices(data),
        "bloscpack" => oxblosc_fuzz::fuzz_bloscpack(data),
        "hdf5_decode" => oxblosc_fuzz::fuzz_hdf5_decode(data),
        "hdf5_lazy" => oxblosc_fuzz::fuzz_hdf5_lazy(data),
        "nd_filters" => oxblosc_fuzz::fuzz_nd_filters(data),
        "ndlz" => oxblosc_fuzz::fuzz_ndlz(data),
        "lz4" => oxblosc_fuzz::fuzz_lz4(data),
        "zlib" => oxblosc_fuzz::fuzz_zlib(data),
        "zfp_acc" => oxblosc_fuzz::fuzz_zfp(oxblosc_chunk::codec::zfp::Mode::Accuracy, data),
        "zfp_prec" => oxblosc_fuzz::fuzz_zfp(oxblosc_chunk::codec::zfp::Mode::Precision, data),
        "zfp_rate" => oxblosc_fuzz::fuzz_zfp(oxblosc_chunk::codec::zfp::Mode::Rate, data),
        "expr_parse" => oxblosc_fuzz::fuzz_expr_parse(data),
        other => panic!("unknown fuzz target directory {other:?}"),
    }
}

/// Run each case, collecting the names of the ones that panic (all are tried).
fn replay(cases: Vec<(String, String, Vec<u8>)>) -> usize {
    let mut failed = Vec::new();
    let n = cases.len();
    for (target, name, data) in cases {
        let r = std::panic::catch_unwind(|| run(&target, &data));
        if r.is_err() {
            failed.push(format!("{target}/{name}"));
        }
    }
    assert!(failed.is_empty(), "{} of {n} inputs panic: {failed:?}", failed.len());
    n
}

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

#[test]
fn regressions() {
    let mut cases = Vec::new();
    for target in [
        "decompress",
        "roundtrip",
        "getitem",
        "frame_open",
        "frame_ops",
        "nd_open",
        "nd_slices",
        "bloscpack",
        "hdf5_decode",
        "hdf5_lazy",
        "nd_filters",
        "ndlz",
        "lz4",
        "zlib",
        "zfp_acc",
        "zfp_prec",
        "zfp_rate",
        "expr_parse",
    ] {
        for p in files(&fuzz_dir().join("regressions").join(target)) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name.ends_with(".md") {
                continue;
            }
            cases.push((target.to_string(), name, std::fs::read(&p).unwrap()));
        }
    }
    let n = replay(cases);
    eprintln!("replayed {n} regression files");
}

#[test]
fn generated_seeds() {
    let cases = oxblosc_fuzz::seeds().into_iter().map(|(t, n, d)| (t.to_string(), n, d)).collect();
    replay(cases);
}

#[test]
fn compat_vectors() {
    let shared =
        std::env::var_os("OXBLOSC_SHARED").map(PathBuf::from).unwrap_or_else(|| fuzz_dir().join("../../shared"));
    let dir = shared.join("vectors/c-blosc2-compat");
    let mut cases = Vec::new();
    for p in files(&dir) {
        if p.extension().is_none_or(|e| e != "cdata") || std::fs::metadata(&p).unwrap().len() >= 40 * 1024 {
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&p).unwrap();
        cases.push(("getitem".to_string(), name.clone(), oxblosc_fuzz::getitem_arbitrary_input(&data, 42)));
        cases.push(("decompress".to_string(), name, data));
    }
    if cases.is_empty() {
        eprintln!("no compat vectors under {} (set OXBLOSC_SHARED); skipped", dir.display());
        return;
    }
    let n = replay(cases);
    eprintln!("replayed {n} vector inputs");
}

/// Frame vectors (C-Blosc2 compat `*.b2frame`, `tests/fuzz/corpus/*.b2frame`, the frame
/// crate's golden files) through `frame_open`; each is also a `frame_ops` input (the bytes
/// read as an op stream: nothing in particular, but a fixed, varied sample).
#[test]
fn frame_vectors() {
    let shared =
        std::env::var_os("OXBLOSC_SHARED").map(PathBuf::from).unwrap_or_else(|| fuzz_dir().join("../../shared"));
    let root = fuzz_dir().join("..");
    let mut cases = Vec::new();
    for (dir, ext) in [
        (shared.join("vectors/c-blosc2-compat"), Some("b2frame")),
        (root.join("tests/fuzz/corpus"), Some("b2frame")),
        (root.join("crates/oxblosc-frame/tests/data/golden"), None),
    ] {
        for p in files(&dir) {
            if ext.is_some_and(|x| p.extension().is_none_or(|e| e != x)) || p.extension().is_some_and(|e| e == "txt") {
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let data = std::fs::read(&p).unwrap();
            cases.push(("frame_ops".to_string(), name.clone(), data.clone()));
            cases.push(("frame_open".to_string(), name, data));
        }
    }
    assert!(cases.len() >= 2 * 9, "the frame crate's golden files are missing ({} cases)", cases.len());
    let n = replay(cases);
    eprintln!("replayed {n} frame inputs");
}

/// The C-Blosc2 b2nd files (and every frame vector) through `nd_open`.
#[test]
fn nd_vectors() {
    let shared =
        std::env::var_os("OXBLOSC_SHARED").map(PathBuf::from).unwrap_or_else(|| fuzz_dir().join("../../shared"));
    let mut cases = Vec::new();
    for dir in [shared.join("vectors/c-blosc2-compat/plugins/test_data"), shared.join("vectors/c-blosc2-compat")] {
        for p in files(&dir) {
            if p.extension().is_none_or(|e| e != "b2nd" && e != "b2frame") {
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            cases.push(("nd_open".to_string(), name, std::fs::read(&p).unwrap()));
        }
    }
    assert!(cases.len() >= 2, "the b2nd vectors are missing (set OXBLOSC_SHARED)");
    let n = replay(cases);
    eprintln!("replayed {n} nd inputs");
}

/// The seed writer and the fuzz bodies read the parameter head the same way.
#[test]
fn params_head_layout() {
    let head = oxblosc_fuzz::encode_params(4, 7, 300, &[(1, 0), (3, 9)], 2, 5, 3, true, 2, 1234, 99);
    let (raw, rest) = oxblosc_fuzz::split_input(&head);
    assert!(rest.is_empty());
    let cp = raw.cparams();
    assert_eq!((cp.codec, cp.clevel, cp.typesize, cp.nthreads, cp.use_dict), (5, 7, 300, 3, true));
    assert_eq!(cp.filters, [1, 3, 0, 0, 0, 0]);
    assert_eq!(cp.filters_meta, [0, 9, 0, 0, 0, 0]);
    assert_eq!(cp.splitmode, oxblosc_chunk::SplitMode::Never);
    assert_eq!(cp.blocksize, oxblosc_fuzz::BLOCKSIZES[5]);
    assert_eq!(raw.seed, 99u32.to_le_bytes());
}

/// The seed `.blp` files (written from the format description) read back whole.
#[test]
fn bloscpack_seeds_read_back() {
    for (_, name, blp) in oxblosc_fuzz::bloscpack::seeds() {
        let mut r = oxblosc::bloscpack::Reader::new(&blp[..], blp.len() as u64, 1).expect(&name);
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut r, &mut out).expect(&name);
        assert_eq!(Some(out.len() as u64), r.header().nbytes(), "{name}");
    }
}

/// Every seed `.blp` with each of its first 256 bytes changed, and cut at many lengths:
/// the reader refuses or reads, never panics (a deterministic sweep over the headers).
#[test]
fn bloscpack_mutations() {
    let mut cases = Vec::new();
    for (_, name, blp) in oxblosc_fuzz::bloscpack::seeds() {
        for i in 0..blp.len().min(256) {
            for v in [0u8, 0xFF, blp[i] ^ 0x80, blp[i].wrapping_add(1)] {
                let mut m = blp.clone();
                m[i] = v;
                cases.push(("bloscpack".to_string(), format!("{name}@{i}={v}"), m));
            }
        }
        for cut in (0..blp.len()).step_by(7) {
            cases.push(("bloscpack".to_string(), format!("{name}[..{cut}]"), blp[..cut].to_vec()));
        }
    }
    let n = replay(cases);
    eprintln!("replayed {n} mutated .blp inputs");
}

/// HDF5 filter chunks (a 1-D frame, a b2nd frame, a Blosc1 chunk) and every truncation and
/// single-byte corruption of them through `hdf5_decode`, plus encode round trips.
#[test]
fn hdf5_chunks() {
    let data: Vec<u8> = (0..2400u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
    let le = |cd: &[u32]| cd.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    let mut cases = Vec::new();
    for (sel_bit, cd) in [
        (0u8, vec![1, 0, 4, 9600, 5, 1, 5]),
        (0, vec![1, 0, 4, 9600, 5, 2, 1, 2, 40, 60]),
        (1, vec![2, 2, 4, 9600, 5, 1, 1]),
    ] {
        let chunk = if sel_bit == 0 {
            oxblosc_hdf5::codec::encode_blosc2(&cd, &data).unwrap()
        } else {
            oxblosc_hdf5::codec::encode_blosc1(&cd, &data).unwrap()
        };
        let head = |sel: u8| [&[sel | ((cd.len() as u8) << 1)][..], &le(&cd)].concat();
        cases.push(("hdf5_decode".to_string(), format!("encode {cd:?}"), [&head(0x80 | sel_bit)[..], &data].concat()));
        for cut in (0..chunk.len()).step_by(13) {
            cases.push((
                "hdf5_decode".to_string(),
                format!("{cd:?} cut {cut}"),
                [&head(sel_bit)[..], &chunk[..cut]].concat(),
            ));
        }
        for at in (0..chunk.len()).step_by(7) {
            let mut bad = chunk.clone();
            bad[at] ^= 0xA5;
            cases.push(("hdf5_decode".to_string(), format!("{cd:?} flip {at}"), [&head(sel_bit)[..], &bad].concat()));
        }
    }
    let n = replay(cases);
    eprintln!("replayed {n} HDF5 filter inputs");
}

/// The lazy read path on HDF5 chunks with many small blocks (b2nd, flat Blosc2 with delta,
/// Blosc1): valid chunks read exactly as in memory for several boxes; every truncation and
/// single-byte corruption through `hdf5_lazy` never panics.
#[test]
fn hdf5_lazy_chunks() {
    let data: Vec<u8> = (0..2400u32).flat_map(|i| (i / 7 + i % 5).to_le_bytes()).collect();
    let mut cases = Vec::new();
    for (sel_bit, cd) in [
        (0u8, vec![1, 512, 4, 9600, 5, 1, 1, 2, 40, 60]),
        (0, vec![1, 512, 4, 9600, 5, 3, 5]),
        (1, vec![2, 2, 4, 9600, 1, 0, 1]),
    ] {
        let chunk = if sel_bit == 0 {
            oxblosc_hdf5::codec::encode_blosc2(&cd, &data).unwrap()
        } else {
            oxblosc_hdf5::codec::encode_blosc1(&cd, &data).unwrap()
        };
        // typesize 4 (byte 3 -> 1 + 3), rank 2: dims 40 x 60, then (start, len) per dim.
        for (a, n, b, m) in [(0, 40, 0, 60), (3, 2, 7, 5), (39, 1, 0, 60), (10, 20, 59, 1), (5, 0, 1, 3)] {
            let head = [sel_bit, 3, 1, 39, a, n, 59, b, m];
            let input = [&head[..], &chunk].concat();
            oxblosc_fuzz::hdf5_lazy(&input, true);
            cases.push(("hdf5_lazy".to_string(), format!("{cd:?} box {a} {n} {b} {m}"), input));
        }
        let head = [sel_bit, 3, 1, 39, 3, 4, 59, 10, 20];
        for cut in (0..chunk.len()).step_by(17) {
            cases.push(("hdf5_lazy".to_string(), format!("{cd:?} cut {cut}"), [&head[..], &chunk[..cut]].concat()));
        }
        for at in (0..chunk.len()).step_by(5) {
            let mut bad = chunk.clone();
            bad[at] ^= 0xA5;
            cases.push(("hdf5_lazy".to_string(), format!("{cd:?} flip {at}"), [&head[..], &bad].concat()));
        }
    }
    let n = replay(cases);
    eprintln!("replayed {n} lazy HDF5 read inputs");
}

/// The ZFP seeds (python-blosc2 streams of each mode, 1-4 d, float32/float64) decode without
/// error, so the three targets start from real streams.
#[test]
fn zfp_seeds_decode() {
    use oxblosc_chunk::codec::zfp::{decompress, Mode};
    for (dir, mode) in [("zfp_acc", Mode::Accuracy), ("zfp_prec", Mode::Precision), ("zfp_rate", Mode::Rate)] {
        let seeds: Vec<PathBuf> = files(&fuzz_dir().join("regressions").join(dir))
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("wheel-")))
            .collect();
        assert!(seeds.len() >= 8, "{dir}");
        for p in seeds {
            let d = std::fs::read(&p).unwrap();
            let dims = 1 + usize::from((d[0] >> 1) & 3);
            let typesize = if d[0] & 1 == 0 { 4 } else { 8 };
            let shape: Vec<usize> = d[2..2 + dims].iter().map(|&b| 1 + usize::from(b)).collect();
            let mut out = vec![0u8; shape.iter().product::<usize>() * typesize];
            decompress(mode, d[1], typesize, &shape, &d[2 + dims..], &mut out).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        }
    }
}
