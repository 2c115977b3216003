//! A Rust program using the example package's compiled plugins by id, found the way the CLI
//! finds them: `OXBLOSC_PLUGIN_PATH` -> a site-packages-like directory -> the package's
//! `*.dist-info/entry_points.txt` -> its library, loaded on the first need of an id only.
//!
//! The directory is laid out as `pip install --target` would: the library is built from
//! `examples/plugin-example/csrc/` with the C compiler and the entry points are taken from
//! the example's `pyproject.toml`, so this test follows the example.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use oxblosc::chunk::registry::{self, Kind, Origin};
use oxblosc::chunk::{compress, decompress, CParams, DParams};
use oxblosc::plugins;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `[project.entry-points."G"]` tables of the example's pyproject as entry_points.txt.
fn entry_points_txt(pyproject: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in pyproject.lines() {
        if let Some(group) = line.strip_prefix("[project.entry-points.\"") {
            inside = true;
            out += &format!("[{}]\n", group.trim_end_matches("\"]"));
        } else if line.starts_with('[') {
            inside = false;
        } else if inside && line.contains('=') {
            out += &line.replace('"', "");
            out.push('\n');
        }
    }
    out
}

/// A site-packages directory holding the example package (and one broken extra package
/// declaring codec 240), with `OXBLOSC_PLUGIN_PATH` pointing at it and discovery enabled.
fn site() -> &'static Path {
    static SITE: OnceLock<PathBuf> = OnceLock::new();
    SITE.get_or_init(|| {
        let site = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("site-{}", std::process::id()));
        let example = repo().join("examples/plugin-example");
        let pkg = site.join("oxblosc_plugin_example");
        std::fs::create_dir_all(&pkg).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-O1", "-shared", "-fPIC"])
            .arg(format!("-I{}", repo().join("crates/oxblosc-chunk/include").display()))
            .arg(example.join("csrc/example_plugins.c"))
            .arg("-o")
            .arg(pkg.join(format!("liboxblosc_example{}", plugins::LIBRARY_SUFFIX)))
            .status()
            .unwrap_or_else(|e| panic!("this test needs a C compiler ({cc}): {e}"));
        assert!(status.success());
        let info = site.join("oxblosc_plugin_example-0.1.0.dist-info");
        std::fs::create_dir_all(&info).unwrap();
        let pyproject = std::fs::read_to_string(example.join("pyproject.toml")).unwrap();
        std::fs::write(info.join("entry_points.txt"), entry_points_txt(&pyproject)).unwrap();
        std::fs::write(info.join("METADATA"), "Metadata-Version: 2.1\nName: oxblosc-plugin-example\n").unwrap();
        let broken = site.join("broken_plugin-1.0.dist-info");
        std::fs::create_dir_all(&broken).unwrap();
        std::fs::write(broken.join("entry_points.txt"), "[oxblosc.compiled_codecs]\n240 = broken_plugin.libgone\n")
            .unwrap();
        std::env::set_var(plugins::PATH_VAR, &site);
        plugins::enable();
        site
    })
}

fn data() -> Vec<u8> {
    (0..100_000i64).map(|i| (i / 7) * 3).flat_map(|v| v.to_le_bytes()).collect()
}

fn cparams(nthreads: usize) -> CParams {
    let mut cp = CParams { codec: 252, clevel: 5, typesize: 8, nthreads, ..CParams::default() };
    cp.filters = [0, 0, 0, 0, 253, 1]; // plus_one_c, then shuffle
    cp
}

#[test]
fn the_example_codec_and_filter_are_found_by_id_and_round_trip() {
    let site = site();
    let decl = plugins::find(Kind::Codec, 252, &plugins::path_var_dirs()).unwrap();
    assert_eq!(decl.package, "oxblosc-plugin-example");
    assert!(decl.library.starts_with(site));
    let src = data();
    for nthreads in [1, 3] {
        let c = compress(&src, &cparams(nthreads)).unwrap();
        assert!(c.len() < src.len() / 4, "{} bytes", c.len());
        assert_eq!((c[22], c[20], c[21]), (252, 253, 1));
        assert_eq!(decompress(&c, &DParams { nthreads }).unwrap(), src);
    }
    let origin = Origin::Package("oxblosc-plugin-example".into());
    let codec = registry::registered_codecs().into_iter().find(|r| r.id == 252).unwrap();
    assert_eq!((codec.name, codec.origin), ("rle_c", origin.clone()));
    let filter = registry::registered_filters().into_iter().find(|r| r.id == 253).unwrap();
    assert_eq!((filter.name, filter.origin), ("plus_one_c", origin));
    // The library's own error text for its negative codes.
    let e = compress(&src, &CParams { typesize: 4, ..cparams(1) }).unwrap_err().to_string();
    assert!(e.contains("forward failed with code -2: plus_one_c works on int64 data only"), "{e}");
}

#[test]
fn only_the_plugin_of_a_needed_id_is_loaded_and_a_broken_one_is_named() {
    site();
    let c = compress(&data(), &cparams(2)).unwrap();
    decompress(&c, &DParams { nthreads: 2 }).unwrap();
    assert!(registry::registered_codecs().iter().all(|r| r.id != 240), "codec 240 was not needed");
    let mut c = c;
    c[22] = 240;
    let e = decompress(&c, &DParams { nthreads: 1 }).unwrap_err().to_string();
    assert!(e.contains("codec 240") && e.contains("loading its plugin failed") && e.contains("libgone"), "{e}");
}

#[test]
fn several_threads_share_the_compiled_codec() {
    site();
    let threads: Vec<_> = (0..4i64)
        .map(|t| {
            std::thread::spawn(move || {
                let src: Vec<u8> = (0..50_000i64).map(|i| i / (t + 2)).flat_map(|v| v.to_le_bytes()).collect();
                for nthreads in [1, 2, 4] {
                    let c = compress(&src, &cparams(nthreads)).unwrap();
                    assert_eq!(decompress(&c, &DParams { nthreads }).unwrap(), src);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
