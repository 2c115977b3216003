//! Runs the real binary.

use std::path::PathBuf;
use std::process::Command;

fn oxblosc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_oxblosc")).args(args).output().expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn vector(name: &str) -> String {
    let shared = std::env::var_os("OXBLOSC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("vectors/c-blosc2-compat").join(name).to_string_lossy().into_owned()
}

#[test]
fn help_and_version() {
    let (code, out, _) = oxblosc(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("chunk-info") && out.contains("Examples"));
    let (code, out, _) = oxblosc(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("oxblosc "));
}

#[test]
fn chunk_info_describes_a_c_blosc2_chunk() {
    let (code, out, err) = oxblosc(&["chunk-info", &vector("blosc-zstd-3.0.0.cdata")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("codec           zstd"), "{out}");
    assert!(out.contains("nbytes          4000000"), "{out}");
}

#[test]
fn corrupt_input_is_one_line_and_exit_2() {
    let path = std::env::temp_dir().join(format!("oxblosc-cli-garbage-{}", std::process::id()));
    std::fs::write(&path, b"\x05\x01\x05\x04\xff\xff\xff\x7f\x00\x01\x00\x00\x30\x00\x00\x00 not a chunk at all......")
        .unwrap();
    let (code, out, err) = oxblosc(&["chunk-check", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oxblosc: ") && err.contains(path.to_str().unwrap()), "{err}");
    let (code, _, err) = oxblosc(&["frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("oxblosc: "));
}
