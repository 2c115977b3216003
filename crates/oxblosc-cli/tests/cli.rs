//! Runs the real binary: round trips, stdin/stdout, append, info, verify, error handling,
//! overwrite rules and interop with python-blosc2 (when `OXBLOSC_INTEROP_PY` names a python
//! with blosc2 and numpy, as `make test` sets it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_oxblosc")
}

fn oxblosc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin()).args(args).output().expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Run with `input` on stdin; returns (code, stdout bytes, stderr).
fn oxblosc_stdin(args: &[&str], input: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (out.status.code().unwrap_or(-1), out.stdout, String::from_utf8_lossy(&out.stderr).into())
}

fn vector(name: &str) -> String {
    let shared = std::env::var_os("OXBLOSC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("vectors/c-blosc2-compat").join(name).to_string_lossy().into_owned()
}

struct TmpDir(PathBuf);

impl TmpDir {
    fn new(tag: &str) -> TmpDir {
        let d = std::env::temp_dir().join(format!("oxblosc-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
    fn p(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Numerical-looking bytes (compressible but not trivial), deterministic.
fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 3 == 0 {
                (i / 64) as u8
            } else {
                (x % 7) as u8
            }
        })
        .collect()
}

fn one_error_line(err: &str) {
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("oxblosc: "), "{err}");
}

#[test]
fn help_and_version() {
    let (code, out, _) = oxblosc(&["--help"]);
    assert_eq!(code, 0);
    for cmd in ["compress", "decompress", "append", "info", "verify", "Examples", "Exit status"] {
        assert!(out.contains(cmd), "--help lacks {cmd}: {out}");
    }
    for cmd in ["compress", "decompress", "append", "info", "verify", "chunk-info", "chunk-check"] {
        let (code, out, err) = oxblosc(&[cmd, "--help"]);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(out.contains("Example"), "{cmd} --help has no examples: {out}");
    }
    let (code, out, _) = oxblosc(&["compress", "--help"]);
    assert_eq!(code, 0);
    for opt in ["--codec", "--clevel", "--filter", "--typesize", "--chunk-size", "--block-size", "--threads"] {
        assert!(out.contains(opt), "compress --help lacks {opt}");
    }
    for opt in ["--split", "--sparse", "--no-checksum", "--force", "--quiet"] {
        assert!(out.contains(opt), "compress --help lacks {opt}");
    }
    let (code, out, _) = oxblosc(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("oxblosc "));
}

#[test]
fn usage_errors_are_one_line_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["compress"],
        &["compress", "--codec", "brotli", "x"],
        &["compress", "--clevel", "12", "x"],
        &["compress", "--filter", "shufle", "/etc/hostname", "/nonexistent-dir/x"],
    ] {
        let (code, out, err) = oxblosc(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        one_error_line(&err);
    }
}

#[test]
fn chunk_info_describes_a_c_blosc2_chunk() {
    let (code, out, err) = oxblosc(&["chunk-info", &vector("blosc-zstd-3.0.0.cdata")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("codec           zstd"), "{out}");
    assert!(out.contains("nbytes          4000000"), "{out}");
    let (code, out, err) = oxblosc(&["info", &vector("blosc-zstd-3.0.0.cdata")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kind            chunk") && out.contains("4000000"), "{out}");
    let (code, out, err) = oxblosc(&["verify", &vector("blosc-zstd-3.0.0.cdata")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("4000000 bytes decoded"), "{out}");
}

#[test]
fn corrupt_chunk_is_one_line_and_exit_2() {
    let t = TmpDir::new("garbage");
    let path = t.p("garbage");
    std::fs::write(&path, b"\x05\x01\x05\x04\xff\xff\xff\x7f\x00\x01\x00\x00\x30\x00\x00\x00 not a chunk at all......")
        .unwrap();
    for cmd in ["chunk-check", "info", "decompress"] {
        let args: Vec<&str> = if cmd == "decompress" { vec![cmd, &path, "-"] } else { vec![cmd, path.as_str()] };
        let (code, out, err) = oxblosc(&args);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(out.is_empty());
        one_error_line(&err);
        assert!(err.contains(&path), "{err}");
    }
}

#[test]
fn round_trips_raw_files() {
    let t = TmpDir::new("roundtrip");
    let sizes = [0usize, 1, 7, 4095, 100_003, 3 * 65536 + 5];
    let variants: [&[&str]; 5] = [
        &[],
        &["--codec", "lz4", "--clevel", "9", "--filter", "shuffle", "--filter", "bytedelta", "--typesize", "4"],
        &["--codec", "blosclz", "--filter", "bitshuffle", "--typesize", "2", "--no-checksum"],
        &["--codec", "zlib", "--filter", "delta", "--typesize", "1", "--split", "never", "--block-size", "16K"],
        &["--sparse", "--codec", "lz4hc", "--threads", "1"],
    ];
    for (k, &n) in sizes.iter().enumerate() {
        let input = t.p(&format!("in{k}.bin"));
        let orig = data(n, k as u64);
        std::fs::write(&input, &orig).unwrap();
        for (v, extra) in variants.iter().enumerate() {
            let frame = t.p(&format!("in{k}-{v}.b2frame"));
            let out = t.p(&format!("out{k}-{v}.bin"));
            let mut args = vec!["compress", "-q", "--chunk-size", "64K"];
            args.extend_from_slice(extra);
            args.extend([input.as_str(), frame.as_str()]);
            let (code, _, err) = oxblosc(&args);
            assert_eq!(code, 0, "compress {n} bytes {extra:?}: {err}");
            assert_eq!(Path::new(&frame).is_dir(), extra.contains(&"--sparse"));
            let (code, _, err) = oxblosc(&["decompress", "-q", &frame, &out]);
            assert_eq!(code, 0, "decompress {n} bytes {extra:?}: {err}");
            assert_eq!(std::fs::read(&out).unwrap(), orig, "{n} bytes {extra:?}");
            let (code, so, err) = oxblosc(&["verify", &frame]);
            assert_eq!(code, 0, "verify {n} bytes {extra:?}: {err}");
            let nchunks = n.div_ceil(65536);
            let expect = if extra.contains(&"--no-checksum") {
                format!("{nchunks} chunks decoded, 0 checksums match (file has no checksums)")
            } else {
                format!("{nchunks} chunks decoded, {nchunks} checksums match (")
            };
            assert!(so.contains(&expect), "{so}");
        }
    }
    // Default output names: INPUT.b2frame and back.
    let input = t.p("named.dat");
    std::fs::write(&input, data(5000, 9)).unwrap();
    assert_eq!(oxblosc(&["compress", &input]).0, 0);
    std::fs::remove_file(&input).unwrap();
    assert_eq!(oxblosc(&["decompress", &format!("{input}.b2frame")]).0, 0);
    assert_eq!(std::fs::read(&input).unwrap(), data(5000, 9));
}

#[test]
fn stdin_and_stdout() {
    let orig = data(300_001, 3);
    let (code, frame, err) = oxblosc_stdin(&["compress", "--chunk-size", "64K", "-", "-"], &orig);
    assert_eq!(code, 0, "{err}");
    assert!(frame.len() < orig.len() && frame.len() > 100, "{} bytes from {}", frame.len(), orig.len());
    let (code, back, err) = oxblosc_stdin(&["decompress", "-", "-"], &frame);
    assert_eq!(code, 0, "{err}");
    assert_eq!(back, orig);
    // A file to stdout, and stdin to a file.
    let t = TmpDir::new("stdio");
    let f = t.p("x.b2frame");
    std::fs::write(&f, &frame).unwrap();
    let out = Command::new(bin()).args(["decompress", &f, "-"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, orig);
    let (code, _, err) = oxblosc_stdin(&["compress", "-", &t.p("y.b2frame")], &orig);
    assert_eq!(code, 0, "{err}");
    let (code, back, _) = oxblosc_stdin(&["decompress", &t.p("y.b2frame"), "-"], b"");
    assert_eq!(code, 0);
    assert_eq!(back, orig);
    // A sparse frame cannot go to stdout.
    let (code, _, err) = oxblosc_stdin(&["compress", "--sparse", "-", "-"], &orig);
    assert_eq!(code, 2);
    one_error_line(&err);
}

/// Parse `"key": <number>` out of info's JSON (enough for these checks).
fn json_num(json: &str, key: &str) -> u64 {
    let at = json.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {json}"));
    json[at + key.len() + 4..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

#[test]
fn append_keeps_chunk_size_and_checksums() {
    let t = TmpDir::new("append");
    let (a, b) = (data(150_000, 1), data(200_000, 2));
    std::fs::write(t.p("a"), &a).unwrap();
    std::fs::write(t.p("b"), &b).unwrap();
    let f = t.p("ab.b2frame");
    assert_eq!(oxblosc(&["compress", "--chunk-size", "64K", &t.p("a"), &f]).0, 0);
    let (code, _, err) = oxblosc(&["append", &f, &t.p("b")]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = oxblosc_stdin(&["append", &f, "-"], &a);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = oxblosc(&["info", "--json", &f]);
    assert_eq!(code, 0, "{err}");
    let total = (2 * a.len() + b.len()) as u64;
    assert_eq!(json_num(&json, "nbytes"), total);
    assert_eq!(json_num(&json, "chunksize"), 65536, "short last chunk filled before appending: {json}");
    assert_eq!(json_num(&json, "nchunks"), total.div_ceil(65536));
    assert!(json.contains(&format!("xxh3-64 for {} of {} chunks", total.div_ceil(65536), total.div_ceil(65536))));
    let (code, so, err) = oxblosc(&["verify", &f]);
    assert_eq!(code, 0, "{err}{so}");
    assert_eq!(oxblosc(&["decompress", &f, &t.p("out")]).0, 0);
    assert_eq!(std::fs::read(t.p("out")).unwrap(), [a.clone(), b, a].concat());
}

#[test]
fn info_text_json_and_chunk_table() {
    let t = TmpDir::new("info");
    std::fs::write(t.p("x"), data(200_000, 4)).unwrap();
    let f = t.p("x.b2frame");
    let args = ["compress", "--codec", "lz4", "--clevel", "7", "--filter", "trunc_prec:-2", "--filter", "shuffle"];
    let (code, _, err) = oxblosc(&[&args[..], &["--typesize", "4", "--chunk-size", "64K", &t.p("x"), &f]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = oxblosc(&["info", "--chunks", &f]);
    assert_eq!(code, 0, "{err}");
    for want in ["kind            frame", "codec           lz4", "clevel          7", "typesize        4"] {
        assert!(out.contains(want), "no {want:?} in {out}");
    }
    assert!(out.contains(r#"["trunc_prec:-2", "shuffle"]"#), "{out}");
    assert!(out.contains("nbytes          200000") && out.contains("chunksize       65536"), "{out}");
    // Chunk table: 4 rows, the last one short.
    let rows: Vec<&str> = out.lines().skip_while(|l| !l.trim_start().starts_with("chunk ")).skip(1).collect();
    assert_eq!(rows.len(), 4, "{out}");
    assert!(rows[3].contains(&(200_000 - 3 * 65536).to_string()), "{}", rows[3]);
    let (code, json, _) = oxblosc(&["info", "--json", "--chunks", &f]);
    assert_eq!(code, 0);
    assert!(json.starts_with('{') && json.trim_end().ends_with('}'), "{json}");
    assert!(json.contains("\"kind\": \"frame\"") && json.contains("\"chunk_table\": [{\"chunk\": 0"), "{json}");
    // Sparse kind.
    let d = t.p("x.sparse");
    assert_eq!(oxblosc(&["compress", "--sparse", &t.p("x"), &d]).0, 0);
    let (_, out, _) = oxblosc(&["info", &d]);
    assert!(out.contains("kind            sparse"), "{out}");
}

/// Offsets of stored chunks in a contiguous frame, from `info --json --chunks` is not enough
/// (it has no positions): find each chunk's bytes with the library.
fn chunk_positions(path: &str) -> Vec<(usize, usize)> {
    let bytes = std::fs::read(path).unwrap();
    let s = oxblosc::frame::SChunk::from_cframe(&bytes).unwrap();
    (0..s.nchunks())
        .map(|i| {
            let c = s.get_chunk(i).unwrap().into_owned();
            let at = bytes.windows(c.len()).position(|w| w == c.as_slice()).unwrap();
            (at, c.len())
        })
        .collect()
}

#[test]
fn verify_catches_a_flipped_byte_in_each_chunk() {
    let t = TmpDir::new("flip");
    std::fs::write(t.p("x"), data(5 * 16384, 5)).unwrap();
    let f = t.p("x.b2frame");
    assert_eq!(oxblosc(&["compress", "--chunk-size", "16K", "--codec", "lz4", &t.p("x"), &f]).0, 0);
    let good = std::fs::read(&f).unwrap();
    for (i, (at, len)) in chunk_positions(&f).into_iter().enumerate() {
        for off in [at + 32, at + len / 2, at + len - 1] {
            let mut bad = good.clone();
            bad[off] ^= 0x04;
            std::fs::write(&f, &bad).unwrap();
            let (code, out, err) = oxblosc(&["verify", &f]);
            assert_eq!(code, 1, "chunk {i} byte {off}: {out}{err}");
            assert!(err.contains(&format!("chunk {i})")), "{err}");
            assert!(out.contains(&format!("FAILED: damaged chunks [{i}]")), "{out}");
            // decompress --verify refuses it too (exit 1), without --verify it may decode.
            let (code, _, err) = oxblosc(&["decompress", "--verify", "-f", &f, &t.p("out")]);
            assert_eq!(code, 1, "{err}");
            one_error_line(&err);
            assert!(!Path::new(&t.p("out")).exists(), "no output left behind after a failure");
        }
    }
}

/// Every byte position of a small frame (header, chunks, index, trailer): a flipped bit is
/// caught by verify (exit 1 or 2) or leaves the decompressed bytes unchanged - never silent
/// corruption.
#[test]
fn no_flipped_bit_goes_unnoticed() {
    let t = TmpDir::new("sweep");
    let orig = data(3 * 2048 + 100, 6);
    std::fs::write(t.p("x"), &orig).unwrap();
    let f = t.p("x.b2frame");
    assert_eq!(oxblosc(&["compress", "--chunk-size", "2K", "--codec", "blosclz", "--clevel", "1", &t.p("x"), &f]).0, 0);
    let good = std::fs::read(&f).unwrap();
    let positions = chunk_positions(&f);
    let chunks_end = positions.iter().map(|(a, l)| a + l).max().unwrap();
    let (mut caught, mut harmless) = (0, 0);
    let mut classes = [0usize; 3]; // header, chunks, index+trailer caught
    let step = (good.len() / 400).max(1);
    eprintln!("frame {} bytes, chunks {positions:?}", good.len());
    for off in (0..good.len()).step_by(step) {
        let mut bad = good.clone();
        bad[off] ^= 1 << (off % 8);
        std::fs::write(&f, &bad).unwrap();
        let (code, _, err) = oxblosc(&["verify", "-q", &f]);
        if code != 0 {
            assert!(code == 1 || code == 2, "{code}");
            assert!(!err.is_empty());
            caught += 1;
            let class = if off < positions[0].0 {
                0
            } else if off < chunks_end {
                1
            } else {
                2
            };
            classes[class] += 1;
            continue;
        }
        let out = t.p("out");
        let (code, _, err) = oxblosc(&["decompress", "-f", &f, &out]);
        assert_eq!(code, 0, "verify passed but decompress failed at byte {off}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), orig, "silent corruption: byte {off} flipped, verify passed");
        harmless += 1;
    }
    eprintln!(
        "{caught} flips caught (header {}, chunks {}, index+trailer {}), {harmless} harmless",
        classes[0], classes[1], classes[2]
    );
    assert!(classes.iter().all(|&c| c > 0), "every position class has caught flips: {classes:?}");
}

#[test]
fn truncated_and_garbage_frames_exit_2() {
    let t = TmpDir::new("trunc");
    std::fs::write(t.p("x"), data(100_000, 7)).unwrap();
    let f = t.p("x.b2frame");
    assert_eq!(oxblosc(&["compress", "--chunk-size", "16K", &t.p("x"), &f]).0, 0);
    let good = std::fs::read(&f).unwrap();
    for cut in [good.len() - 1, good.len() / 2, 90, 20] {
        std::fs::write(&f, &good[..cut]).unwrap();
        for cmd in [&["info"][..], &["verify"], &["decompress", "-f"]] {
            let mut args = cmd.to_vec();
            args.push(&f);
            let out = t.p("out");
            if cmd[0] == "decompress" {
                args.push(&out);
            }
            let (code, _, err) = oxblosc(&args);
            assert_eq!(code, 2, "{cmd:?} on {cut} bytes: {err}");
            one_error_line(&err);
            assert!(err.contains(&f), "{err}");
        }
    }
    // Garbage after a valid magic.
    let mut g = good[..11].to_vec();
    g.extend(std::iter::repeat_n(0xA5u8, 500));
    std::fs::write(&f, &g).unwrap();
    let (code, _, err) = oxblosc(&["info", &f]);
    assert_eq!(code, 2);
    one_error_line(&err);
    // Missing files.
    let (code, _, err) = oxblosc(&["decompress", &t.p("missing.b2frame")]);
    assert_eq!(code, 2);
    one_error_line(&err);
}

#[test]
fn never_overwrites_without_force() {
    let t = TmpDir::new("force");
    std::fs::write(t.p("x"), data(1000, 8)).unwrap();
    let f = t.p("x.b2frame");
    std::fs::write(&f, b"precious").unwrap();
    let (code, _, err) = oxblosc(&["compress", &t.p("x"), &f]);
    assert_eq!(code, 2);
    one_error_line(&err);
    assert!(err.contains("-f"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), b"precious");
    assert_eq!(oxblosc(&["compress", "-f", &t.p("x"), &f]).0, 0);
    let (code, _, err) = oxblosc(&["decompress", &f, &t.p("x")]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(oxblosc(&["decompress", "--force", &f, &t.p("x")]).0, 0);
    assert_eq!(std::fs::read(t.p("x")).unwrap(), data(1000, 8));
    // -f replaces a sparse directory by a file and back.
    let d = t.p("d");
    assert_eq!(oxblosc(&["compress", "--sparse", &t.p("x"), &d]).0, 0);
    assert_eq!(oxblosc(&["compress", &t.p("x"), &d]).0, 2);
    assert_eq!(oxblosc(&["compress", "-f", &t.p("x"), &d]).0, 0);
    assert!(Path::new(&d).is_file());
    // Nothing but the outputs is left in the directory (no temporary names).
    let mut names: Vec<String> =
        std::fs::read_dir(&t.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["d", "x", "x.b2frame"]);
}

fn has_temporary(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains(".oxtmp-"))
}

/// `oxblosc compress - OUT` fed 1 MiB on stdin (kept open, so it cannot finish), returned once
/// its temporary output exists; the caller interrupts it.
fn compress_in_progress(t: &TmpDir, out: &str, seed: u64) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = Command::new(bin())
        .args(["compress", "--chunk-size", "64K", "-", out])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&data(1 << 20, seed)).unwrap();
    stdin.flush().unwrap();
    for _ in 0..500 {
        if has_temporary(&t.0) {
            return (child, stdin);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the output is not written under a temporary name first");
}

#[test]
fn interrupted_run_leaves_nothing_under_the_final_name() {
    let t = TmpDir::new("kill");
    let out = t.p("out.b2frame");
    let (mut child, stdin) = compress_in_progress(&t, &out, 11);
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert!(!Path::new(&out).exists(), "an interrupted run left {out}");
}

/// Ctrl-C (SIGINT) and SIGTERM remove the temporary output and exit 130 (SIGKILL, above,
/// cannot be handled and leaves only a hidden temporary file).
#[cfg(unix)]
#[test]
fn signals_remove_the_temporary_output() {
    for sig in ["-INT", "-TERM"] {
        let t = TmpDir::new(&format!("sig{sig}"));
        let out = t.p("out.b2frame");
        let (child, stdin) = compress_in_progress(&t, &out, 12);
        let status = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let done = child.wait_with_output().unwrap();
        drop(stdin);
        assert_eq!(done.status.code(), Some(130), "{sig}: exit code after the signal");
        assert!(String::from_utf8_lossy(&done.stderr).contains("interrupted"), "{sig}: says why it stopped");
        assert!(!has_temporary(&t.0), "{sig}: the temporary output was left behind");
        assert!(!Path::new(&out).exists(), "{sig}: an interrupted run left {out}");
    }
}

// ------------------------------------------------------------------ python-blosc2 interop

fn python() -> Option<std::ffi::OsString> {
    let py = std::env::var_os("OXBLOSC_INTEROP_PY");
    if py.is_none() {
        eprintln!("skipped: set OXBLOSC_INTEROP_PY to a python with blosc2 and numpy");
    }
    py
}

fn run_py(py: &std::ffi::OsStr, code: &str) -> String {
    let out = Command::new(py).arg("-c").arg(code).output().unwrap();
    assert!(out.status.success(), "python failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn python_blosc2_reads_our_frames_and_we_read_theirs() {
    let Some(py) = python() else { return };
    let t = TmpDir::new("py");
    let orig = data(500_000, 12);
    std::fs::write(t.p("x"), &orig).unwrap();
    let f = t.p("x.b2frame");
    let d = t.p("x.sparse");
    assert_eq!(oxblosc(&["compress", "--chunk-size", "64K", "--filter", "bytedelta:2", &t.p("x"), &f]).0, 0);
    assert_eq!(oxblosc(&["compress", "--sparse", "--chunk-size", "64K", &t.p("x"), &d]).0, 0);
    // python-blosc2 reads both, sees the checksum entry as an ordinary vlmeta, and appends.
    let out = run_py(
        &py,
        &format!(
            r#"
import blosc2
orig = open({x:?}, "rb").read()
for p in ({f:?}, {d:?}):
    s = blosc2.open(p)
    assert bytes(s[:]) == orig, p
    e = s.vlmeta["_oxblosc_checksums"]
    assert e["alg"] == "xxh3-64" and len(e["sums"]) == 8 * s.nchunks, e
s = blosc2.open({f:?}, mode="a")
s.append_data(b"\x01" * 65536)
print("ok", s.nchunks)
"#,
            x = t.p("x"),
            f = f,
            d = d
        ),
    );
    assert!(out.starts_with("ok 9"), "{out}");
    // After python-blosc2's append: chunks it wrote have no checksum; the rest still match.
    let (code, so, err) = oxblosc(&["verify", &f]);
    assert_eq!(code, 0, "{so}{err}");
    assert!(so.contains("8 checksums match, 1 without checksum"), "{so}");
    // Files python-blosc2 writes: SChunk frame, sparse SChunk, NDArray (.b2nd) with vlmeta.
    run_py(
        &py,
        &format!(
            r#"
import blosc2, numpy as np
s = blosc2.SChunk(chunksize=40000, data=np.arange(50000, dtype="i4").tobytes(),
                  cparams=blosc2.CParams(typesize=4, codec=blosc2.Codec.LZ4, clevel=6), urlpath={a:?}, mode="w")
s.vlmeta["note"] = {{"who": "python-blosc2", "n": [1, 2.5]}}
blosc2.SChunk(chunksize=40000, data=b"abc" * 30000, urlpath={b:?}, contiguous=False, mode="w")
a = blosc2.asarray(np.linspace(0, 1, 3000).reshape(30, 100), chunks=(10, 50), blocks=(5, 25), urlpath={c:?}, mode="w")
a.vlmeta["unit"] = "m"
"#,
            a = t.p("py.b2frame"),
            b = t.p("py.sparse"),
            c = t.p("py.b2nd")
        ),
    );
    let (code, out, err) = oxblosc(&["info", &t.p("py.b2frame")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("codec           lz4") && out.contains("nbytes          200000"), "{out}");
    assert!(out.contains("checksums       none") && out.contains(r#"note"#), "{out}");
    assert!(
        out.contains("  note\n    who ") && out.contains("python-blosc2\n    n ") && out.contains("[1, 2.5]"),
        "{out}"
    );
    let (code, out, err) = oxblosc(&["info", &t.p("py.sparse")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kind            sparse") && out.contains("nbytes          90000"), "{out}");
    let (code, out, err) = oxblosc(&["info", "--json", &t.p("py.b2nd")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"kind\": \"b2nd\"") && out.contains("\"shape\": [30, 100]"), "{out}");
    assert!(out.contains("\"chunks\": [10, 50]") && out.contains("\"blocks\": [5, 25]"), "{out}");
    assert!(out.contains("\"dtype\": \"<f8\"") && out.contains("\"unit\": \"m\""), "{out}");
    for p in ["py.b2frame", "py.sparse", "py.b2nd"] {
        let (code, so, err) = oxblosc(&["verify", &t.p(p)]);
        assert_eq!(code, 0, "{p}: {so}{err}");
        assert!(so.contains("(file has no checksums)"), "{so}");
    }
    let (code, _, err) = oxblosc(&["decompress", &t.p("py.b2frame"), &t.p("py.raw")]);
    assert_eq!(code, 0, "{err}");
    let want: Vec<u8> = (0..50000i32).flat_map(|i| i.to_le_bytes()).collect();
    assert_eq!(std::fs::read(t.p("py.raw")).unwrap(), want);
}

/// `.npy` and `.b2nd` inputs are tuned on their data with their own item size (4 here; raw
/// files default to 8), not on the `.npy` header or the b2nd's stored bytes.
#[test]
fn tune_reads_npy_and_b2nd_with_their_item_size() {
    let t = TmpDir::new("tune-npy");
    // A smooth float32 ramp: shuffle or bytedelta find its constant high bytes only when
    // they know the element size.
    let vals: Vec<u8> = (0..60_000).flat_map(|i| (1000.0 + i as f32 * 0.25).to_le_bytes()).collect();
    let npy = t.p("a.npy");
    std::fs::write(&npy, npy_bytes("<f4", false, &[60_000], &vals, 1)).unwrap();
    let b2nd = t.p("a.b2nd");
    let (code, _, err) = oxblosc(&["compress", "-q", &npy, &b2nd]);
    assert_eq!(code, 0, "{err}");
    let mut picks = Vec::new();
    for input in [&npy, &b2nd] {
        let (code, out, err) = oxblosc(&["tune", "--objective", "ratio", "--seed", "3", input]);
        assert_eq!(code, 0, "{input}: {err}");
        let opts = out.lines().find_map(|l| l.strip_prefix("compress options: ")).expect("options line").to_string();
        assert!(opts.contains("--typesize 4"), "{input}: {opts}");
        // The recommendation compresses the same values (as raw bytes) and round-trips.
        let raw = t.p("vals.bin");
        std::fs::write(&raw, &vals).unwrap();
        let frame = t.p("vals.b2frame");
        let mut args = vec!["compress", "-q", "-f"];
        args.extend(opts.split(' '));
        args.extend([raw.as_str(), frame.as_str()]);
        let (code, _, err) = oxblosc(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let back = t.p("back.bin");
        assert_eq!(oxblosc(&["decompress", "-q", "-f", &frame, &back]).0, 0);
        assert_eq!(std::fs::read(&back).unwrap(), vals, "{input}");
        picks.push(opts);
    }
    // Same values, same seed: the same pick from the .npy and from the .b2nd.
    assert_eq!(picks[0], picks[1]);
}

// ------------------------------------------------------------------ .npy <-> .b2nd

/// A `.npy` file written by hand (format 1.0, or `major` when given), so these tests need no NumPy.
fn npy_bytes(descr: &str, fortran: bool, shape: &[u64], data: &[u8], major: u8) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_txt = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let fo = if fortran { "True" } else { "False" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': {fo}, 'shape': {shape_txt}, }}");
    let lenb = if major == 1 { 2 } else { 4 };
    let total = (10 + lenb - 2 + dict.len() + 1).div_ceil(64) * 64;
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([major, 0]);
    out.extend(&((total - 8 - lenb) as u32).to_le_bytes()[..lenb]);
    out.extend(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(data);
    out
}

/// `np.save` pickles arrays of Python objects: the CLI says so instead of reporting a size
/// mismatch, and writes nothing.
#[test]
fn npy_of_python_objects_is_refused_by_name() {
    let t = TmpDir::new("npy-objects");
    // A pickle stands in for the payload (any bytes: the header alone decides).
    for (k, descr) in ["|O", "<O"].iter().enumerate() {
        let f = t.p(&format!("o{k}.npy"));
        std::fs::write(&f, npy_bytes(descr, false, &[2], b"\x80\x04\x95 pickled objects", 1)).unwrap();
        let (code, _, err) = oxblosc(&["compress", "-q", &f]);
        assert_eq!(code, 2, "{descr}: {err}");
        assert!(err.contains("Python objects") && err.contains("not supported"), "{descr}: {err}");
        assert!(!std::path::Path::new(&t.p(&format!("o{k}.b2nd"))).exists());
    }
}

#[test]
fn npy_round_trips_are_byte_identical() {
    let t = TmpDir::new("npy");
    let cases: Vec<(&str, usize, bool, Vec<u64>, u8)> = vec![
        ("<f8", 8, false, vec![300, 70], 1),
        ("<i4", 4, true, vec![200, 300], 1),
        ("|u1", 1, false, vec![100_001], 2),
        ("<f8", 8, false, vec![], 1),
        ("<i2", 2, false, vec![0, 5], 1),
        ("<c16", 16, false, vec![50, 3], 3),
        ("|S5", 5, false, vec![21], 1),
        ("<U3", 12, true, vec![3, 4, 5], 1),
        ("|b1", 1, false, vec![4, 5, 6], 1),
        (">f4", 4, false, vec![1000], 1),
        ("<M8[ns]", 8, false, vec![10], 1),
        ("<f2", 2, false, vec![77, 3], 1),
        ("|V300", 300, false, vec![40], 1),
    ];
    for (k, (descr, size, fortran, shape, major)) in cases.iter().enumerate() {
        let n: u64 = shape.iter().product();
        let data = data(n as usize * size, k as u64);
        let orig = npy_bytes(descr, *fortran, shape, &data, *major);
        let f = t.p(&format!("a{k}.npy"));
        std::fs::write(&f, &orig).unwrap();
        let (code, _, err) = oxblosc(&["compress", "-q", &f]);
        assert_eq!(code, 0, "{descr} {shape:?}: {err}");
        let b2nd = t.p(&format!("a{k}.b2nd"));
        let (code, json, _) = oxblosc(&["info", "--json", &b2nd]);
        assert_eq!(code, 0);
        assert!(json.contains("\"kind\": \"b2nd\"") && json.contains(&format!("\"dtype\": \"{descr}\"")), "{json}");
        // The logical shape, whatever the file's order.
        let stored_txt: Vec<String> = shape.iter().map(u64::to_string).collect();
        let array_shape = format!("\"ndim\": {}, \"shape\": [{}]", shape.len(), stored_txt.join(", "));
        assert!(json.contains(&array_shape), "{array_shape} in {json}");
        let (code, so, err) = oxblosc(&["verify", &b2nd]);
        assert_eq!(code, 0, "{so}{err}");
        std::fs::remove_file(&f).unwrap();
        let (code, _, err) = oxblosc(&["decompress", "-q", &b2nd]);
        assert_eq!(code, 0, "{descr} {shape:?}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), orig, "{descr} {shape:?} fortran={fortran}");
        // To stdout too.
        let out = Command::new(bin()).args(["decompress", &b2nd, "-"]).output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, orig);
    }
    // A truncated .npy is refused with one line.
    let f = t.p("short.npy");
    let mut b = npy_bytes("<f8", false, &[100], &data(800, 1), 1);
    b.truncate(b.len() - 3);
    std::fs::write(&f, b).unwrap();
    let (code, _, err) = oxblosc(&["compress", &f]);
    assert_eq!(code, 2);
    one_error_line(&err);
    assert!(err.contains("797 data bytes") && !Path::new(&t.p("short.b2nd")).exists(), "{err}");
}

#[test]
fn npy_interop_with_numpy_and_python_blosc2() {
    let Some(py) = python() else { return };
    let t = TmpDir::new("npy-py");
    let d = t.0.to_string_lossy().into_owned();
    run_py(
        &py,
        &format!(
            r#"
import numpy as np
rng = np.random.default_rng(0)
arrs = {{
    "f8": rng.random((300, 70)), "fort": np.asfortranarray(np.arange(60000, dtype="i4").reshape(200, 300)),
    "zero_d": np.array(3.5), "struct": np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
    "U": np.array(["ab", "xyz"] * 9), "c8": (rng.random((9, 4)) + 1j).astype("c8"),
}}
for k, a in arrs.items():
    np.save(f"{d}/{{k}}.npy", a)
"#
        ),
    );
    for k in ["f8", "fort", "zero_d", "struct", "U", "c8"] {
        let f = format!("{d}/{k}.npy");
        assert_eq!(oxblosc(&["compress", "-q", &f]).0, 0, "{k}");
        let (code, _, err) = oxblosc(&["decompress", "-q", &format!("{d}/{k}.b2nd"), &format!("{d}/{k}.back.npy")]);
        assert_eq!(code, 0, "{k}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), std::fs::read(format!("{d}/{k}.back.npy")).unwrap(), "{k}");
    }
    // python-blosc2 reads our .b2nd (a Fortran array as the same logical array) and writes one
    // we turn into .npy.
    let out = run_py(
        &py,
        &format!(
            r#"
import numpy as np, blosc2
for k in ["f8", "fort", "zero_d", "struct", "U", "c8"]:
    a = np.load(f"{d}/{{k}}.npy")
    b = blosc2.open(f"{d}/{{k}}.b2nd")[()]
    assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(b, a), k
x = np.arange(24000, dtype="<u2").reshape(40, 600)
blosc2.asarray(x, chunks=(7, 100), blocks=(3, 50), urlpath=f"{d}/theirs.b2nd", mode="w")
np.save(f"{d}/theirs.expect.npy", x)
print("ok")
"#
        ),
    );
    assert!(out.starts_with("ok"), "{out}");
    let (code, _, err) = oxblosc(&["decompress", &format!("{d}/theirs.b2nd")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(format!("{d}/theirs.npy")).unwrap(),
        std::fs::read(format!("{d}/theirs.expect.npy")).unwrap()
    );
}

#[test]
fn outputs_are_compact() {
    // Incompressible multi-chunk data: the file holds the chunks plus header, index and
    // trailer only (a live-written frame would carry dead space between chunk areas).
    let t = TmpDir::new("compact");
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let noise: Vec<u8> = (0..3_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(t.p("n"), &noise).unwrap();
    for chunk in ["64K", "1M"] {
        let f = t.p(&format!("n{chunk}.b2frame"));
        assert_eq!(oxblosc(&["compress", "--chunk-size", chunk, &t.p("n"), &f]).0, 0);
        let (_, json, _) = oxblosc(&["info", "--json", &f]);
        let cbytes = json_num(&json, "cbytes");
        let len = std::fs::metadata(&f).unwrap().len();
        assert!(cbytes >= noise.len() as u64 && len - cbytes < 2048, "{chunk}: file {len}, chunks {cbytes}");
    }
}

/// `oxblosc append F -` fed 1 MiB on stdin (kept open), returned once it has written new
/// chunks into the file (which grows); the caller interrupts it.
fn append_in_progress(f: &str, seed: u64) -> (std::process::Child, std::process::ChildStdin) {
    let before = std::fs::metadata(f).unwrap().len();
    let mut child = Command::new(bin())
        .args(["append", f, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&data(1 << 20, seed)).unwrap();
    stdin.flush().unwrap();
    for _ in 0..500 {
        if std::fs::metadata(f).unwrap().len() > before {
            return (child, stdin);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("append wrote nothing");
}

/// An append is one commit: killed (SIGKILL) or interrupted (SIGINT, exit 130) after writing
/// some of its chunks, the frame still holds exactly the old data; a later append works.
#[cfg(unix)]
#[test]
fn interrupted_append_leaves_the_old_frame() {
    for sig in ["-KILL", "-INT"] {
        let t = TmpDir::new(&format!("append{sig}"));
        let a = data(150_000, 3);
        std::fs::write(t.p("a"), &a).unwrap();
        let f = t.p("a.b2frame");
        assert_eq!(oxblosc(&["compress", "--chunk-size", "64K", &t.p("a"), &f]).0, 0);
        let (child, stdin) = append_in_progress(&f, 4);
        let status = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let done = child.wait_with_output().unwrap();
        drop(stdin);
        if sig == "-INT" {
            assert_eq!(done.status.code(), Some(130), "exit code after SIGINT");
        }
        let (code, so, err) = oxblosc(&["verify", &f]);
        assert_eq!(code, 0, "{sig}: {so}{err}");
        assert_eq!(oxblosc(&["decompress", "-f", &f, &t.p("out")]).0, 0);
        assert!(std::fs::read(t.p("out")).unwrap() == a, "{sig}: the interrupted append changed the data");
        let (code, _, err) = oxblosc_stdin(&["append", &f, "-"], &a);
        assert_eq!(code, 0, "{err}");
        assert_eq!(oxblosc(&["decompress", "-f", &f, &t.p("out")]).0, 0);
        assert!(std::fs::read(t.p("out")).unwrap() == [a.clone(), a].concat());
    }
}

/// Checksums are verified by default: a flipped byte in a stored chunk makes a plain
/// `decompress` fail (naming file and chunk); `--no-verify` skips the check; `--verify` of a
/// frame without checksums is refused rather than passing unchecked.
#[test]
fn decompress_verifies_checksums_by_default() {
    let t = TmpDir::new("verifydefault");
    std::fs::write(t.p("x"), data(4 * 16384, 8)).unwrap();
    let f = t.p("x.b2frame");
    assert_eq!(oxblosc(&["compress", "--chunk-size", "16K", "--codec", "lz4", &t.p("x"), &f]).0, 0);
    let mut bad = std::fs::read(&f).unwrap();
    let (at, len) = chunk_positions(&f)[2];
    bad[at + len / 2] ^= 0x10;
    std::fs::write(&f, &bad).unwrap();
    let (code, _, err) = oxblosc(&["decompress", "-f", &f, &t.p("out")]);
    assert_ne!(code, 0, "damaged chunk decompressed without complaint");
    one_error_line(&err);
    assert!(err.contains("chunk 2") && err.contains("x.b2frame") && err.contains("checksum"), "{err}");
    assert!(!Path::new(&t.p("out")).exists(), "no output left behind after a failure");
    let (code, _, err) = oxblosc(&["decompress", "--no-verify", "-f", &f, &t.p("out")]);
    assert!(code == 0 || !err.contains("checksum"), "--no-verify still checked checksums: {err}");
    let g = t.p("plain.b2frame");
    assert_eq!(oxblosc(&["compress", "--no-checksum", &t.p("x"), &g]).0, 0);
    let (code, _, err) = oxblosc(&["decompress", "--verify", "-f", &g, &t.p("out2")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no checksums") && err.contains("plain.b2frame"), "{err}");
    assert_eq!(oxblosc(&["decompress", "-f", &g, &t.p("out2")]).0, 0);
}

#[test]
fn fortran_npy_is_stored_as_its_logical_array() {
    let Some(py) = python() else { return };
    let t = TmpDir::new("npy-fortran");
    let d = t.0.to_string_lossy().into_owned();
    let names = ["f3", "sq", "one", "u"];
    run_py(
        &py,
        &format!(
            r#"
import numpy as np
rng = np.random.default_rng(1)
arrs = {{
    "f3": np.asfortranarray(rng.random((30, 70, 5))),
    "sq": np.asfortranarray(np.arange(64 * 64, dtype="<i4").reshape(64, 64)),
    "one": np.asfortranarray(np.arange(5000, dtype=">u2")),
    "u": np.asfortranarray(np.array([["ab", "c"], ["d", "efg"], ["h", "i"]])),
}}
for k, a in arrs.items():
    np.save(f"{d}/{{k}}.npy", a)
"#
        ),
    );
    for k in names {
        let f = format!("{d}/{k}.npy");
        // Small chunks: the array spans many, each a transposed piece of the file.
        let (code, _, err) = oxblosc(&["compress", "-q", "--chunk-size", "2K", &f]);
        assert_eq!(code, 0, "{k}: {err}");
        let b2nd = format!("{d}/{k}.b2nd");
        let (_, json, _) = oxblosc(&["info", "--json", &b2nd]);
        if k != "u" {
            assert!(json_num(&json, "nchunks") > 1, "{k}: {json}");
        }
        let (code, _, err) = oxblosc(&["decompress", "-q", &b2nd, &format!("{d}/{k}.back.npy")]);
        assert_eq!(code, 0, "{k}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), std::fs::read(format!("{d}/{k}.back.npy")).unwrap(), "{k}");
    }
    let (_, json, _) = oxblosc(&["info", "--json", &format!("{d}/f3.b2nd")]);
    assert!(json.contains("\"ndim\": 3, \"shape\": [30, 70, 5]"), "{json}");
    // python-blosc2 (and NumPy) see the same logical array; an array written by an older
    // oxblosc (the transpose, no order marker) still decompresses to its original file.
    let out = run_py(
        &py,
        &format!(
            r#"
import numpy as np, blosc2
for k in {names:?}:
    a = np.load(f"{d}/{{k}}.npy")
    b = blosc2.open(f"{d}/{{k}}.b2nd")
    assert b.shape == a.shape and b.dtype == a.dtype and np.array_equal(b[()], a), k
    assert np.array_equal(b[1:], a[1:]), k
a = np.load(f"{d}/sq.npy")
with open(f"{d}/sq.npy", "rb") as f:
    np.lib.format.read_magic(f)
    np.lib.format.read_array_header_1_0(f)
    n = f.tell()
    f.seek(0)
    head = f.read(n)
old = blosc2.asarray(np.ascontiguousarray(a.T), chunks=(16, 64), urlpath=f"{d}/old.b2nd", mode="w")
old.schunk.vlmeta["_oxblosc_npy_header"] = head
print("ok")
"#
        ),
    );
    assert!(out.starts_with("ok"), "{out}");
    let (code, _, err) = oxblosc(&["decompress", "-q", &format!("{d}/old.b2nd"), &format!("{d}/old.npy")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(format!("{d}/sq.npy")).unwrap(), std::fs::read(format!("{d}/old.npy")).unwrap());
}

#[test]
fn info_ratio_of_an_array_counts_its_items_not_the_padding() {
    let Some(py) = python() else { return };
    let t = TmpDir::new("info-ratio");
    let d = t.0.to_string_lossy().into_owned();
    // Chunks of 7 x 256 over 40 x 600: the edge chunks are mostly padding.
    let out = run_py(
        &py,
        &format!(
            r#"
import numpy as np, blosc2, os
x = (np.arange(40 * 600) % 97).astype("<f8").reshape(40, 600)
b = blosc2.asarray(x, chunks=(7, 256), blocks=(7, 64), urlpath=f"{d}/p.b2nd", mode="w")
print(b.nbytes, b.cbytes, b.schunk.nbytes, os.path.getsize(f"{d}/p.b2nd"))
"#
        ),
    );
    let v: Vec<u64> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let (nbytes, cbytes, padded, file) = (v[0], v[1], v[2], v[3]);
    assert!(padded > nbytes, "the case has padding");
    let (code, json, err) = oxblosc(&["info", "--json", &format!("{d}/p.b2nd")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_num(&json, "nbytes"), nbytes, "{json}");
    assert_eq!(json_num(&json, "cbytes"), cbytes, "{json}");
    assert_eq!(json_num(&json, "padded_nbytes"), padded, "{json}");
    assert_eq!(json_num(&json, "file_bytes"), file, "{json}");
    let at = json.find("\"ratio\": ").unwrap() + 9;
    let ratio: f64 = json[at..].split([',', '}']).next().unwrap().trim().parse().unwrap();
    assert!((ratio - nbytes as f64 / cbytes as f64).abs() < 0.006, "{ratio} vs {nbytes}/{cbytes}");
}

#[test]
fn npy_conversions_hold_a_few_chunks_not_the_array() {
    let Some(py) = python() else { return };
    let t = TmpDir::new("npy-rss");
    // 128 MiB arrays (C and Fortran order) of wide rows, 1 MiB chunks: the peak resident size
    // of each conversion must stay under 4 chunks + 64 MiB, i.e. well under the array.
    let (n_rows, width) = (64u64, 262_144u64);
    let row: Vec<u8> = (0..width).flat_map(|j| ((j % 251) as f64 * 0.5).to_le_bytes()).collect();
    let body: Vec<u8> = (0..n_rows).flat_map(|i| row.iter().map(move |&b| b ^ (i as u8 & 1))).collect();
    let limit_kib = (4 * 1024 + 64 * 1024) as u64;
    for fortran in [false, true] {
        let f = t.p(&format!("a{fortran}.npy"));
        std::fs::write(&f, npy_bytes("<f8", fortran, &[n_rows, width], &body, 1)).unwrap();
        let b2nd = t.p(&format!("a{fortran}.b2nd"));
        let back = t.p(&format!("a{fortran}.back.npy"));
        for args in [
            vec!["compress", "-q", "--chunk-size", "1M", f.as_str(), b2nd.as_str()],
            vec!["decompress", "-q", b2nd.as_str(), back.as_str()],
        ] {
            let out = Command::new(&py)
                .args([
                    "-c",
                    "import resource, subprocess, sys\n\
                     r = subprocess.run(sys.argv[1:])\n\
                     print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
                    bin(),
                ])
                .args(&args)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<u64> = text.split_whitespace().map(|x| x.parse().unwrap()).collect();
            assert_eq!(v[0], 0, "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(v[1] < limit_kib, "{args:?} fortran={fortran}: peak {} KiB, limit {limit_kib} KiB", v[1]);
        }
        assert!(std::fs::read(&back).unwrap() == std::fs::read(&f).unwrap(), "fortran={fortran}");
    }
}

// ------------------------------------------------------------------ zstd/gzip and Bloscpack habits

#[test]
fn zstd_style_flags_work() {
    let t = TmpDir::new("habits");
    let raw = data(300_000, 21);
    let f = t.p("d.bin");
    std::fs::write(&f, &raw).unwrap();
    // `oxblosc FILE` compresses and keeps the input (-k is the default and accepted).
    let (code, _, err) = oxblosc(&["-q", "-k", "-9", "-T", "1", &f]);
    assert_eq!(code, 0, "{err}");
    let frame = t.p("d.bin.b2frame");
    assert!(Path::new(&f).exists() && Path::new(&frame).exists());
    let (_, json, _) = oxblosc(&["info", "--json", &frame]);
    assert!(json.contains("\"clevel\": 9"), "{json}");
    // -dc: to stdout.
    let out = Command::new(bin()).args(["-dc", &frame]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, raw);
    // -o FILE, -T0 (all cores), -3 inside a subcommand.
    let (code, _, err) = oxblosc(&["compress", "-q", "-3", "-T0", "-o", &t.p("o.b2frame"), &f]);
    assert_eq!(code, 0, "{err}");
    let (_, json, _) = oxblosc(&["info", "--json", &t.p("o.b2frame")]);
    assert!(json.contains("\"clevel\": 3"), "{json}");
    // --rm removes the input only after success; -t tests (verify); -l lists (info).
    let (code, _, err) = oxblosc(&["-d", "--rm", "-q", "-o", &t.p("back.bin"), &frame]);
    assert_eq!(code, 0, "{err}");
    assert!(!Path::new(&frame).exists());
    assert_eq!(std::fs::read(t.p("back.bin")).unwrap(), raw);
    let (code, out, _) = oxblosc(&["-t", &t.p("o.b2frame")]);
    assert_eq!(code, 0);
    assert!(out.starts_with("ok:"), "{out}");
    let (code, out, _) = oxblosc(&["-l", &t.p("o.b2frame")]);
    assert_eq!(code, 0);
    assert!(out.contains("codec"), "{out}");
    // --rm is refused when it cannot be honoured, and a failed run keeps the input.
    let (code, _, err) = oxblosc(&["--rm", "-c", &f]);
    assert_eq!(code, 2);
    one_error_line(&err);
    let (code, _, _) = oxblosc(&["compress", "--rm", "-q", &f, &t.p("o.b2frame")]);
    assert_eq!(code, 2, "output exists");
    assert!(Path::new(&f).exists());
    // The output given twice is refused.
    let (code, _, err) = oxblosc(&["compress", "-c", &f, "x.b2frame"]);
    assert_eq!(code, 2);
    assert!(err.contains("given twice"), "{err}");
}

#[test]
fn look_alike_options_are_refused_with_a_hint() {
    let t = TmpDir::new("hints");
    let f = t.p("d.bin");
    std::fs::write(&f, data(1000, 2)).unwrap();
    for (args, hint) in [
        (vec!["compress", "-t", "4", f.as_str()], "--typesize"),
        (vec!["compress", "-t", "4", f.as_str()], "-T N"),
        (vec!["compress", "-t", "4", f.as_str()], "verify"),
        (vec!["decompress", "-t", "x"], "-T N"),
        (vec!["compress", "-c", "lz4", f.as_str()], "--codec"),
        (vec!["compress", "-k", "sha1", f.as_str()], "checksum"),
        (vec!["compress", "-l", "9", f.as_str()], "--clevel"),
        (vec!["compress", "-n", "4", f.as_str()], "-T N"),
        (vec!["-x", f.as_str()], "unknown option -x"),
        (vec!["-n", "4", "compress", f.as_str()], "-T N"),
        (vec!["-q", "compress", f.as_str()], "after the subcommand"),
    ] {
        let (code, out, err) = oxblosc(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty());
        one_error_line(&err);
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    // Nothing was written.
    assert_eq!(std::fs::read_dir(&t.0).unwrap().count(), 1);
}

#[test]
fn files_that_are_not_blosc_are_named() {
    let t = TmpDir::new("not-blosc");
    let npy = t.p("a.npy");
    std::fs::write(&npy, npy_bytes("<f8", false, &[10], &data(80, 1), 1)).unwrap();
    let h5 = t.p("a.h5");
    std::fs::write(&h5, b"\x89HDF\r\n\x1a\n\0\0\0\0\0\x08\x08\0\x04\0\x10\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    let rnd = t.p("r.bin");
    let mut noise = data(5000, 3);
    noise[0] = 0xA7; // not a chunk format version
    std::fs::write(&rnd, &noise).unwrap();
    for (f, what) in [(&npy, "NumPy .npy"), (&h5, "HDF5"), (&rnd, "not a Blosc2 frame or chunk")] {
        for cmd in ["decompress", "info", "verify", "chunk-info", "chunk-check"] {
            let (code, _, err) = oxblosc(&[cmd, f]);
            assert_eq!(code, 2, "{cmd} {f}: {err}");
            one_error_line(&err);
            assert!(err.contains("not a Blosc2 frame or chunk") && err.contains(what), "{cmd}: {err}");
        }
    }
    // A damaged chunk is damage (exit 1), not "not Blosc".
    let c = t.p("c.cdata");
    let chunk = std::fs::read(vector("blosc-1.11.1-zstd.cdata")).unwrap();
    std::fs::write(&c, &chunk[..chunk.len() - 7]).unwrap();
    let (code, _, err) = oxblosc(&["verify", &c]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("not a Blosc2"), "{err}");
}

#[test]
fn temporary_names_stay_out_of_messages() {
    let t = TmpDir::new("tmpnames");
    let f = t.p("d.bin");
    std::fs::write(&f, data(1000, 2)).unwrap();
    let npy = t.p("a.npy");
    std::fs::write(&npy, npy_bytes("<f8", false, &[10], &data(80, 1), 1)).unwrap();
    for args in [
        vec!["compress", f.as_str(), "/nonexistent-oxblosc-dir/x.b2frame"],
        vec!["compress", npy.as_str(), "/nonexistent-oxblosc-dir/x.b2nd"],
    ] {
        let (code, _, err) = oxblosc(&args);
        assert_eq!(code, 2);
        one_error_line(&err);
        assert!(!err.contains("oxtmp") && err.contains("/nonexistent-oxblosc-dir/x.b2"), "{err}");
    }
}

// ------------------------------------------------------------------ Bloscpack (.blp)

#[test]
fn bloscpack_files_convert() {
    let Some(py) = python() else { return };
    let t = TmpDir::new("blp");
    let d = t.0.to_string_lossy().into_owned();
    // Files made by the real bloscpack package (0.16 needs a Python >= 3.10 shim to import).
    let out = run_py(
        &py,
        &format!(
            r#"
import collections, collections.abc
collections.MutableMapping = collections.abc.MutableMapping
import bloscpack as bp, numpy as np
a = np.linspace(0, 1, 300_000)
bp.pack_ndarray_to_file(a, f"{d}/arr.blp")
a.tofile(f"{d}/arr.expect")
arrays = {{
    "fort": np.asfortranarray(np.arange(60_000, dtype="<i4").reshape(200, 300)),
    "rec": np.array([(1, 2.5), (3, 4.5)] * 50, dtype=[("a", "<i4"), ("b", "<f8")]),
    "u16": (np.arange(40 * 50 * 7) % 1000).astype(">u2").reshape(40, 50, 7),
}}
for k, v in arrays.items():
    bp.pack_ndarray_to_file(v, f"{d}/{{k}}.blp", chunk_size="16K")
    np.save(f"{d}/{{k}}.expect.npy", v)
raw = (np.arange(100_000, dtype="<u4") // 7).tobytes()
open(f"{d}/raw.bin", "wb").write(raw)
for name, ck, offs, codec in [("crc", "crc32", False, "lz4"), ("sha", "sha256", True, "zstd"), ("none", "None", True, "zlib")]:
    bp.pack_file_to_file(f"{d}/raw.bin", f"{d}/{{name}}.blp", chunk_size="64K",
        blosc_args=bp.BloscArgs(typesize=4, cname=codec),
        bloscpack_args=bp.BloscpackArgs(checksum=ck, offsets=offs))
open(f"{d}/empty.bin", "wb").close()
bp.pack_file_to_file(f"{d}/empty.bin", f"{d}/empty.blp")
print("ok")
"#
        ),
    );
    assert!(out.starts_with("ok"), "{out}");
    let (code, _, err) = oxblosc(&["decompress", "-q", &format!("{d}/arr.blp")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(format!("{d}/arr")).unwrap(), std::fs::read(format!("{d}/arr.expect")).unwrap());
    let raw = std::fs::read(format!("{d}/raw.bin")).unwrap();
    for name in ["crc", "sha", "none"] {
        let f = format!("{d}/{name}.blp");
        let (code, bytes, err) = {
            let o = Command::new(bin()).args(["decompress", &f, "-"]).output().unwrap();
            (o.status.code().unwrap(), o.stdout, String::from_utf8_lossy(&o.stderr).into_owned())
        };
        assert_eq!(code, 0, "{name}: {err}");
        assert!(bytes == raw, "{name}");
        let (code, out, _) = oxblosc(&["verify", &f]);
        assert_eq!(code, 0, "{name}: {out}");
        let (code, json, _) = oxblosc(&["info", "--json", &f]);
        assert_eq!(code, 0);
        assert!(json.contains("\"kind\": \"bloscpack\"") && json_num(&json, "nbytes") == raw.len() as u64, "{json}");
        assert_eq!(json_num(&json, "file_bytes"), std::fs::metadata(&f).unwrap().len());
    }
    let (_, json, _) = oxblosc(&["info", "--json", &format!("{d}/arr.blp")]);
    assert!(json.contains(r#"\"container\":\"numpy\""#), "metadata shown: {json}");
    assert!(json.contains("\"typesize\": 8"), "{json}");
    // compress: .blp -> .b2frame (typesize from the .blp), read by python-blosc2.
    let (code, _, err) = oxblosc(&["compress", "-q", &format!("{d}/crc.blp")]);
    assert_eq!(code, 0, "{err}");
    let (_, json, _) = oxblosc(&["info", "--json", &format!("{d}/crc.b2frame")]);
    assert!(json.contains("\"typesize\": 4") && json_num(&json, "nbytes") == raw.len() as u64, "{json}");
    let out = run_py(
        &py,
        &format!("import blosc2\ns = blosc2.open('{d}/crc.b2frame')\nprint(s[:] == open('{d}/raw.bin', 'rb').read())"),
    );
    assert!(out.starts_with("True"), "{out}");
    // compress of a .blp packed from a NumPy array: a .b2nd of that dtype and shape (Fortran
    // order kept as the logical array), which python-blosc2 reads and which decompresses to
    // the .npy NumPy writes.
    for k in ["arr", "fort", "rec", "u16"] {
        let (code, _, err) = oxblosc(&["compress", "-q", &format!("{d}/{k}.blp")]);
        assert_eq!(code, 0, "{k}: {err}");
        if k != "arr" {
            let (code, _, err) = oxblosc(&["decompress", "-q", &format!("{d}/{k}.b2nd"), &format!("{d}/{k}.back.npy")]);
            assert_eq!(code, 0, "{k}: {err}");
            assert!(
                std::fs::read(format!("{d}/{k}.back.npy")).unwrap()
                    == std::fs::read(format!("{d}/{k}.expect.npy")).unwrap(),
                "{k}"
            );
        }
    }
    let out = run_py(
        &py,
        &format!(
            r#"
import numpy as np, blosc2
assert np.array_equal(blosc2.open("{d}/arr.b2nd")[()], np.fromfile("{d}/arr.expect"))
for k in ["fort", "rec", "u16"]:
    want, got = np.load(f"{d}/{{k}}.expect.npy"), blosc2.open(f"{d}/{{k}}.b2nd")
    assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got[()], want), k
print("ok")
"#
        ),
    );
    assert!(out.starts_with("ok"), "{out}");
    // Empty input.
    let (code, _, err) = oxblosc(&["decompress", "-q", &format!("{d}/empty.blp"), &format!("{d}/empty.out")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::metadata(format!("{d}/empty.out")).unwrap().len(), 0);
    // A flipped byte in a chunk: the digest catches it (verify exit 1, decompress exit 2,
    // naming the byte); a truncated file is one line, exit 2.
    let mut bytes = std::fs::read(format!("{d}/crc.blp")).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x10;
    let bad = format!("{d}/bad.blp");
    std::fs::write(&bad, &bytes).unwrap();
    let (code, _, err) = oxblosc(&["verify", &bad]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("crc32 mismatch"), "{err}");
    let (code, _, err) = oxblosc(&["decompress", &bad, &format!("{d}/bad.out")]);
    assert_eq!(code, 2);
    one_error_line(&err);
    assert!(err.contains("at byte") && !Path::new(&format!("{d}/bad.out")).exists(), "{err}");
    std::fs::write(&bad, &std::fs::read(format!("{d}/arr.blp")).unwrap()[..5000]).unwrap();
    for cmd in ["decompress", "info", "verify"] {
        let (code, _, err) =
            oxblosc(&[cmd, &bad, &format!("{d}/trunc.out")][..if cmd == "decompress" { 3 } else { 2 }]);
        assert!(code == 2 || (cmd == "verify" && code == 1), "{cmd}: {err}");
        assert!(err.lines().next().unwrap_or("").contains("needs") || err.contains("ends"), "{cmd}: {err}");
    }
}

#[test]
fn paths_that_must_be_frames_are_named() {
    let t = TmpDir::new("not-frame");
    let npy = t.p("a.npy");
    std::fs::write(&npy, npy_bytes("<f8", false, &[10], &data(80, 1), 1)).unwrap();
    let more = t.p("more.bin");
    std::fs::write(&more, data(100, 2)).unwrap();
    let (code, _, err) = oxblosc(&["append", &npy, &more]);
    assert_eq!(code, 2);
    one_error_line(&err);
    assert!(err.contains("not a Blosc2 frame: this is a NumPy .npy file"), "{err}");
    // A directory that is not a sparse frame.
    let dir = t.p("d");
    std::fs::create_dir(&dir).unwrap();
    for args in [vec!["decompress", dir.as_str(), "x"], vec!["info", dir.as_str()], vec!["verify", dir.as_str()]] {
        let (code, _, err) = oxblosc(&args);
        assert_eq!(code, 2, "{args:?}");
        one_error_line(&err);
        assert!(err.contains("not a sparse Blosc2 frame") && err.contains("chunks.b2frame"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(&more).unwrap(), data(100, 2));
}

#[test]
fn tune_recommends_options_that_round_trip() {
    let t = TmpDir::new("tune");
    let input = t.p("in.bin");
    let orig = data(40_000, 9);
    std::fs::write(&input, &orig).unwrap();
    let (code, out, err) = oxblosc(&["tune", "--objective", "ratio", "--typesize", "4", &input]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with('*')), "the pick is marked: {out}");
    let opts = out.lines().find_map(|l| l.strip_prefix("compress options: ")).expect("options line");
    let frame = t.p("in.b2frame");
    let mut args = vec!["compress", "-q"];
    args.extend(opts.split(' '));
    args.extend([input.as_str(), frame.as_str()]);
    let (code, _, err) = oxblosc(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
    let back = t.p("back.bin");
    assert_eq!(oxblosc(&["decompress", "-q", &frame, &back]).0, 0);
    assert_eq!(std::fs::read(&back).unwrap(), orig);
    // A frame is tuned on its decoded chunks, with its own typesize.
    let (code, out, err) = oxblosc(&["tune", "--time-budget", "0", &frame]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("--typesize 4") && out.contains("time budget reached"), "{out}");
    let (code, _, err) = oxblosc(&["tune", "--objective", "fastest", &input]);
    assert_eq!(code, 2);
    one_error_line(&err);
}
