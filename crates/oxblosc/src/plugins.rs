//! Finding compiled plugins without Python: installed packages' metadata and a search path.
//!
//! A plugin package declares its compiled codecs and filters as entry points (docs/plugins.md):
//!
//! ```text
//! [oxblosc.compiled_codecs]
//! 252 = oxblosc_plugin_example.liboxblosc_example
//! ```
//!
//! The value names the shared library like a module, relative to the directory holding the
//! package's `*.dist-info` (site-packages): `oxblosc_plugin_example/liboxblosc_example.so`
//! (`.dylib` on macOS, `.dll` on Windows). This module reads those `entry_points.txt` files
//! as text (no interpreter runs) from the directories of [`search_dirs`], and loads the
//! library declaring an id the first time a chunk needs that id ([`enable`]): nothing else
//! is loaded, and nothing is ever taken from a file's bytes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use oxblosc_chunk::native;
use oxblosc_chunk::registry::{self, Kind, Origin};

/// Directories (site-packages, or venv roots) searched before the active environment.
pub const PATH_VAR: &str = "OXBLOSC_PLUGIN_PATH";
/// Entry point group of compiled codecs.
pub const CODEC_GROUP: &str = "oxblosc.compiled_codecs";
/// Entry point group of compiled filters.
pub const FILTER_GROUP: &str = "oxblosc.compiled_filters";

/// The file name ending of shared libraries on this platform.
pub const LIBRARY_SUFFIX: &str = if cfg!(windows) {
    ".dll"
} else if cfg!(target_os = "macos") {
    ".dylib"
} else {
    ".so"
};

/// One compiled codec or filter declared by an installed package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    pub kind: Kind,
    pub id: u8,
    /// The shared library, resolved from the entry point value.
    pub library: PathBuf,
    /// The distribution name (`Name:` of its METADATA).
    pub package: String,
}

/// The library an entry point value names, relative to `base` (the site-packages dir):
/// `pkg.sub.libname` -> `base/pkg/sub/libname.so`. `None` for a value that is not a dotted
/// name (paths, `..`, `module:attr` are refused, so metadata cannot point outside `base`).
pub fn library_path(base: &Path, value: &str) -> Option<PathBuf> {
    let value = value.split('[').next().unwrap_or("").trim();
    let parts: Vec<&str> = value.split('.').collect();
    let ident = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !parts.iter().all(ident) {
        return None;
    }
    let mut path = base.to_path_buf();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            path.push(format!("{p}{LIBRARY_SUFFIX}"));
        } else {
            path.push(p);
        }
    }
    Some(path)
}

/// The `site-packages` directories of a virtual environment (or Python prefix) at `root`.
fn site_packages(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("Lib").join("site-packages")];
    if let Ok(dir) = std::fs::read_dir(root.join("lib")) {
        let mut found: Vec<PathBuf> = dir
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path().join("site-packages"))
            .collect();
        found.sort();
        out.extend(found);
    }
    out.into_iter().filter(|p| p.is_dir()).collect()
}

/// A search path entry: a venv root (has `pyvenv.cfg`) stands for its site-packages.
fn expand(dir: PathBuf) -> Vec<PathBuf> {
    if dir.join("pyvenv.cfg").is_file() {
        site_packages(&dir)
    } else {
        vec![dir]
    }
}

/// Where compiled plugins are looked for, in order: each entry of `OXBLOSC_PLUGIN_PATH`, the
/// site-packages of `$VIRTUAL_ENV`, and of the venv the running program is installed in
/// (`VENV/bin/oxblosc`).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = path_var_dirs();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        dirs.extend(site_packages(Path::new(&venv)));
    }
    if let Some(venv) = std::env::current_exe().ok().and_then(|e| Some(e.parent()?.parent()?.to_path_buf())) {
        if venv.join("pyvenv.cfg").is_file() {
            dirs.extend(site_packages(&venv));
        }
    }
    let mut seen = HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// The entries of `OXBLOSC_PLUGIN_PATH` (venv roots expanded to their site-packages).
pub fn path_var_dirs() -> Vec<PathBuf> {
    std::env::var_os(PATH_VAR).map(|v| std::env::split_paths(&v).flat_map(expand).collect()).unwrap_or_default()
}

/// Every compiled codec and filter declared by the packages installed in `dir`.
pub fn declarations(dir: &Path) -> Vec<Declaration> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut infos: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "dist-info")).collect();
    infos.sort();
    let mut out = Vec::new();
    for info in infos {
        let Ok(text) = std::fs::read_to_string(info.join("entry_points.txt")) else { continue };
        out.extend(parse_entry_points(&text, dir, &package_name(&info)));
    }
    out
}

/// The distribution's name: `Name:` of its METADATA, else from `NAME-VERSION.dist-info`.
fn package_name(info: &Path) -> String {
    let metadata = std::fs::read_to_string(info.join("METADATA")).unwrap_or_default();
    if let Some(name) = metadata.lines().take_while(|l| !l.is_empty()).find_map(|l| l.strip_prefix("Name:")) {
        return name.trim().to_string();
    }
    let stem = info.file_stem().unwrap_or_default().to_string_lossy();
    stem.split('-').next().unwrap_or(&stem).to_string()
}

/// The compiled plugins one `entry_points.txt` declares (other groups and bad lines skipped).
fn parse_entry_points(text: &str, base: &Path, package: &str) -> Vec<Declaration> {
    let mut kind = None;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            kind = match line.trim_matches(|c| c == '[' || c == ']').trim() {
                CODEC_GROUP => Some(Kind::Codec),
                FILTER_GROUP => Some(Kind::Filter),
                _ => None,
            };
            continue;
        }
        let (Some(kind), Some((name, value))) = (kind, line.split_once('=')) else { continue };
        let (Ok(id), Some(library)) = (name.trim().parse::<u8>(), library_path(base, value)) else { continue };
        out.push(Declaration { kind, id, library, package: package.to_string() });
    }
    out
}

/// The first declaration of `kind` `id` in `dirs` (search order decides between packages).
pub fn find(kind: Kind, id: u8, dirs: &[PathBuf]) -> Option<Declaration> {
    dirs.iter().flat_map(|d| declarations(d)).find(|d| d.kind == kind && d.id == id)
}

static TRIED: Mutex<Vec<(Kind, u8)>> = Mutex::new(Vec::new());

/// Load the compiled plugin declared for `kind` `id` in `dirs`, once per process and id
/// (later calls do nothing). A failure is recorded in the registry, so the chunk's "not
/// available" error says what went wrong with which library.
pub fn load_once(kind: Kind, id: u8, dirs: &[PathBuf]) {
    let mut tried = TRIED.lock().unwrap_or_else(|e| e.into_inner());
    if tried.contains(&(kind, id)) {
        return;
    }
    tried.push((kind, id));
    if let Some(d) = find(kind, id, dirs) {
        let _ = native::register_from_library(kind, id, &d.library, Origin::Package(d.package));
    }
}

fn load_from_search_dirs(kind: Kind, id: u8) {
    load_once(kind, id, &search_dirs());
}

/// Install the registry loader that finds compiled plugins in [`search_dirs`] on the first
/// need of an id (the CLI does this at start; Rust programs call it to get the same
/// behaviour). Returns false when another loader was installed first.
pub fn enable() -> bool {
    registry::set_loader(load_from_search_dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_point_values_name_libraries_inside_the_base_only() {
        let base = Path::new("/sp");
        let p = library_path(base, " pkg.sub.libx ").unwrap();
        assert_eq!(p, Path::new("/sp/pkg/sub").join(format!("libx{LIBRARY_SUFFIX}")));
        for bad in ["", "pkg..x", "../x", "pkg/x", "pkg:obj", "/abs", "a. b"] {
            assert_eq!(library_path(base, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn entry_points_txt_groups_are_read_as_text() {
        let text = "[console_scripts]\n9 = a.b\n[oxblosc.compiled_codecs]\n252 = pkg.libp\nx = pkg.libq\n\
                    [oxblosc.codecs]\n251 = pkg:obj\n[ oxblosc.compiled_filters ]\n253=pkg.libp\n300 = pkg.libp\n";
        let got = parse_entry_points(text, Path::new("/sp"), "pkg");
        let ids: Vec<(Kind, u8)> = got.iter().map(|d| (d.kind, d.id)).collect();
        assert_eq!(ids, vec![(Kind::Codec, 252), (Kind::Filter, 253)]);
        assert!(got.iter().all(|d| d.package == "pkg" && d.library.starts_with("/sp/pkg")));
    }
}
