//! Compiled plugins through the C ABI: loading errors, size checks, collisions, threads.
//!
//! The libraries are built from `tests/native/misbehave.c` with the C compiler (`$CC`, or
//! `cc`) into the test's temporary directory. The registry is per process, so every test
//! uses its own ids.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use oxblosc_chunk::native::{self, Provided};
use oxblosc_chunk::registry::{self, Kind, Origin};
use oxblosc_chunk::{compress, decompress, CParams, DParams};

/// Build `misbehave.c` with `defines` into `NAME.so` (once per variant and test run).
fn build(name: &str, defines: &[&str]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("native-plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("lib{name}.so"));
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let tmp = dir.join(format!("lib{name}.{}.tmp", std::process::id()));
    let status = Command::new(&cc)
        .args(["-O1", "-shared", "-fPIC", "-Wall", "-Werror"])
        .arg(format!("-I{}", here.join("include").display()))
        .args(defines.iter().map(|d| format!("-D{d}")))
        .arg(here.join("tests/native/misbehave.c"))
        .arg("-o")
        .arg(&tmp)
        .status()
        .unwrap_or_else(|e| panic!("these tests need a C compiler ({cc}): {e}"));
    assert!(status.success(), "{cc} failed to build {name}");
    std::fs::rename(&tmp, &out).unwrap();
    out
}

fn good() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| build("misbehave", &[]))
}

fn origin() -> Origin {
    Origin::Package("misbehave-test".into())
}

/// Blocks of 16 KiB that start with 100 values and end in zeros (what `tail_zeros` strips).
fn data() -> Vec<u8> {
    (0..256 * 1024u32).map(|i| if i % 16384 < 100 { (i % 251) as u8 + 1 } else { 0 }).collect()
}

fn cparams(codec: u8, meta: u8, filter: u8, filter_meta: u8, nthreads: usize) -> CParams {
    let mut cp = CParams {
        codec,
        codec_meta: meta,
        clevel: 5,
        typesize: 4,
        nthreads,
        blocksize: 16 * 1024,
        ..CParams::default()
    };
    cp.filters = [0, 0, 0, 0, filter, 0];
    cp.filters_meta = [0, 0, 0, 0, filter_meta, 0];
    cp
}

fn codec_and_filter() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        native::register_from_library(Kind::Codec, 200, good(), origin()).unwrap();
        native::register_from_library(Kind::Filter, 201, good(), origin()).unwrap();
    });
}

#[test]
fn a_library_lists_what_it_provides_and_its_plugins_round_trip() {
    codec_and_filter();
    let all = native::library_contents(good()).unwrap();
    assert_eq!(all[0], Provided { kind: Kind::Codec, id: 200, name: "tail_zeros".into(), version: 3 });
    let row = registry::registered_codecs().into_iter().find(|r| r.id == 200).unwrap();
    assert_eq!((row.name, row.version, row.origin), ("tail_zeros", 3, origin()));
    let src = data();
    for nthreads in [1, 4] {
        let c = compress(&src, &cparams(200, 0, 201, 0, nthreads)).unwrap();
        assert!(c.len() < src.len() / 10, "{} bytes", c.len());
        assert_eq!((c[22], c[1], c[20]), (200, 3, 201), "codec id, its version, the filter id");
        assert_eq!(decompress(&c, &DParams { nthreads }).unwrap(), src);
    }
}

#[test]
fn wrong_sizes_and_error_codes_fail_the_chunk_with_the_library_named() {
    codec_and_filter();
    let src = data();
    let lib = good().display().to_string();
    let enc = |meta, fmeta| compress(&src, &cparams(200, meta, 201, fmeta, 2)).unwrap_err().to_string();
    let e = enc(1, 0);
    assert!(e.contains("encode reported 16385 bytes written, its output holds 16384") && e.contains(&lib), "{e}");
    assert!(e.contains("compiled codec 200 (tail_zeros)"), "{e}");
    let e = enc(2, 0);
    assert!(e.contains("encode failed with code -5: asked to fail"), "{e}");
    // The parameters reach the plugin: block index, typesize and the b2nd block shape.
    let ctx = oxblosc_chunk::ChunkContext { blockshape: vec![4, 16, 64] };
    let e = oxblosc_chunk::compress_with(&src, &cparams(200, 6, 201, 0, 1), &ctx).unwrap_err().to_string();
    assert!(e.contains("could not encode block 2") && e.contains("encode failed with code -130644"), "{e}");
    let e = enc(0, 1);
    assert!(e.contains("forward reported 16383 bytes written, the block holds 16384"), "{e}");
    // Decoding: the chunk is written with a codec_meta that makes the decoder lie.
    let dec = |meta, fmeta| {
        let c = compress(&src, &cparams(200, meta, 201, fmeta, 1)).unwrap();
        decompress(&c, &DParams { nthreads: 3 }).unwrap_err().to_string()
    };
    let e = dec(3, 0);
    assert!(e.contains("decode reported 16383 bytes written, the block holds 16384"), "{e}");
    let e = dec(4, 0);
    assert!(e.contains("decode failed with code -7") && !e.contains("code -7:"), "{e}");
    let e = dec(5, 0);
    assert!(e.contains(&format!("decode reported {} bytes", i64::MAX)), "{e}");
    let e = dec(0, 2);
    assert!(e.contains("backward failed with code -5: asked to fail") && e.contains("filter 201 (neg)"), "{e}");
}

#[test]
fn abi_mismatch_missing_symbol_and_bad_descriptors_are_refused_naming_library_and_id() {
    let cases: [(&str, &[&str], &str); 4] = [
        ("abi2", &["ABI_VERSION=2"], "speaks oxblosc plugin ABI version 2, this oxblosc speaks version 1"),
        ("noentry", &["NO_ENTRY"], "does not export `oxblosc_plugin_entry`"),
        ("nulldesc", &["NULL_DESC"], "`oxblosc_plugin_entry` returned NULL"),
        ("badname", &["BAD_NAME"], "the name of codec 200 is missing or not 1-63 of [A-Za-z0-9_.-]"),
    ];
    for (name, defines, want) in cases {
        let lib = build(name, defines);
        let e = native::register_from_library(Kind::Codec, 210, &lib, origin()).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains(&lib.display().to_string()) && e.contains("codec 210"), "{e}");
        // Asked again (another id): the same answer, from the cache.
        let e = native::register_from_library(Kind::Filter, 211, &lib, origin()).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("filter 211"), "{e}");
    }
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-plugin.so");
    let e = native::register_from_library(Kind::Codec, 212, &missing, origin()).unwrap_err().to_string();
    assert!(e.contains("no-such-plugin.so") && e.contains("cannot be opened"), "{e}");
    // The chunk that needs the id says why its plugin is missing.
    let e = registry::codec(212).err().unwrap().to_string();
    assert!(
        e.contains("codec 212") && e.contains("loading its plugin failed") && e.contains("no-such-plugin.so"),
        "{e}"
    );
    let e = registry::codec(214).err().unwrap().to_string();
    assert!(e.contains("install a plugin package that declares it / put it on OXBLOSC_PLUGIN_PATH"), "{e}");
    let e = native::register_from_library(Kind::Codec, 213, good(), origin()).unwrap_err().to_string();
    assert!(e.contains("does not provide codec 213") && e.contains("codec 200 (tail_zeros)"), "{e}");
}

#[test]
fn collisions_with_builtin_registered_and_reserved_ids_are_refused() {
    let e = native::register_from_library(Kind::Filter, 35, good(), origin()).unwrap_err().to_string();
    assert!(e.contains("id 35") && e.contains("already taken by 'bytedelta' (built-in)"), "{e}");
    struct Nop;
    impl registry::Filter for Nop {
        fn name(&self) -> &str {
            "first"
        }
        fn forward(&self, _: &registry::FilterParams, s: &[u8], d: &mut [u8]) -> Result<(), String> {
            d.copy_from_slice(s);
            Ok(())
        }
        fn backward(&self, _: &registry::FilterParams, s: &[u8], d: &mut [u8]) -> Result<(), String> {
            d.copy_from_slice(s);
            Ok(())
        }
    }
    registry::register_filter(202, Box::new(Nop), Origin::User).unwrap();
    let e = native::register_from_library(Kind::Filter, 202, good(), origin()).unwrap_err().to_string();
    assert!(e.contains("cannot register filter 'late' as id 202") && e.contains("'first' (user)"), "{e}");
    assert_eq!(registry::filter(202, 0).unwrap().name, "first", "the first registration stays");
    let e = native::register_from_library(Kind::Codec, 9, good(), origin()).unwrap_err().to_string();
    assert!(e.contains("codec id 9 cannot be registered: 0-31 is reserved"), "{e}");
}

#[test]
fn several_threads_use_a_compiled_codec_at_once() {
    codec_and_filter();
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut src = data();
                src.iter_mut().step_by(997).for_each(|b| *b = b.wrapping_add(t + 1));
                for round in 0..5 {
                    let c = compress(&src, &cparams(200, 0, 201, 0, 1 + round % 3)).unwrap();
                    assert_eq!(decompress(&c, &DParams { nthreads: 1 + (round + 1) % 3 }).unwrap(), src);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
