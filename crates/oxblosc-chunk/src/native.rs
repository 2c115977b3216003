//! Compiled plugins: codecs and filters from shared libraries speaking oxblosc's C ABI.
//!
//! The ABI (`include/oxblosc_plugin.h`, docs/plugins.md) is one exported function,
//! `oxblosc_plugin_entry`, returning a static descriptor: the ABI version, then the codecs
//! and filters of the library with their ids, names, versions and two function pointers.
//! This module opens a library once (cached by its canonical path, never unloaded: the
//! registry hands out `'static` entries), checks the descriptor, copies it into Rust
//! values, and registers the entry for one id as a [`Codec`] or [`Filter`] whose calls
//! check every size the plugin reports before a byte of its output is used. Where to find
//! libraries (package metadata, search path) is the business of the front-ends.

#![allow(unsafe_code)]

use std::ffi::c_char;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::registry::{self, Codec, CodecParams, Filter, FilterParams, Kind, Origin};
use crate::{Error, Result};

/// The ABI version this build speaks (`OXBLOSC_PLUGIN_ABI_VERSION`).
pub const ABI_VERSION: u32 = 1;
/// The one symbol a plugin library exports.
pub const ENTRY_SYMBOL: &str = "oxblosc_plugin_entry";
/// Most dimensions of a block shape passed to plugins (`OXB_MAX_DIMS`).
pub const MAX_DIMS: usize = 8;
/// Most entries a descriptor may list (one per codec id and per filter id).
const MAX_PLUGINS: u32 = 512;
/// Longest plugin name read from a library.
const MAX_NAME: usize = 63;
/// Longest error text read from a library.
const MAX_MESSAGE: usize = 512;

/// `oxb_params`.
#[repr(C)]
struct RawParams {
    clevel: u8,
    meta: u8,
    reserved0: u16,
    typesize: u32,
    block: u64,
    ndim: u32,
    reserved1: u32,
    blockshape: [u64; MAX_DIMS],
}

/// `oxb_transform`.
type Transform = unsafe extern "C" fn(*const u8, usize, *mut u8, usize, *const RawParams) -> i64;
type ErrorMessage = unsafe extern "C" fn(i64) -> *const c_char;
type EntryFn = unsafe extern "C" fn() -> *const RawLibrary;

/// `oxb_plugin`.
#[repr(C)]
struct RawPlugin {
    kind: u8,
    id: u8,
    version: u8,
    reserved: u8,
    name: *const c_char,
    encode: Option<Transform>,
    decode: Option<Transform>,
}

/// `oxb_library` (version 1; `abi_version` is read alone first).
#[repr(C)]
struct RawLibrary {
    abi_version: u32,
    nplugins: u32,
    plugins: *const RawPlugin,
    error_message: Option<ErrorMessage>,
}

/// One codec or filter a library provides, as its descriptor lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provided {
    pub kind: Kind,
    pub id: u8,
    pub name: String,
    pub version: u8,
}

#[derive(Clone)]
struct Entry {
    info: Provided,
    encode: Transform,
    decode: Transform,
}

/// An opened, checked library (leaked: its code stays mapped for the process).
struct Library {
    path: PathBuf,
    entries: Vec<Entry>,
    error_message: Option<ErrorMessage>,
}

type Cache = Vec<(PathBuf, std::result::Result<&'static Library, String>)>;
static LIBRARIES: Mutex<Cache> = Mutex::new(Vec::new());

fn kind_name(kind: Kind) -> &'static str {
    if kind == Kind::Codec {
        "codec"
    } else {
        "filter"
    }
}

fn load_error(library: &Path, reason: String) -> Error {
    Error::PluginLoad { library: library.display().to_string(), reason }
}

/// Read a NUL-terminated string of at most `max` bytes (`None`: null, unterminated or not UTF-8).
///
/// SAFETY (caller): `p` is null or points to readable memory up to its NUL or `max` bytes.
unsafe fn bounded_str(p: *const c_char, max: usize) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let mut bytes = Vec::new();
    for i in 0..=max {
        // SAFETY: within the caller's guarantee; stops at the first NUL.
        let b = unsafe { p.add(i).cast::<u8>().read() };
        if b == 0 {
            return String::from_utf8(bytes).ok();
        }
        bytes.push(b);
    }
    None
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// Open `path` and check its descriptor (no caching).
fn open(path: &Path) -> std::result::Result<Library, String> {
    // SAFETY: loading a library runs its initialisers: that is what loading a plugin means;
    // the caller chose this library from installed package metadata or the search path.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot be loaded: {e}"))?;
    // SAFETY: the symbol's type is the ABI's `oxb_entry_fn`.
    let entry: EntryFn = match unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) } {
        Ok(f) => *f,
        Err(_) => return Err(format!("does not export `{ENTRY_SYMBOL}`: it is not an oxblosc plugin library")),
    };
    // SAFETY: calling the plugin's entry point as the ABI defines it.
    let raw = unsafe { entry() };
    if raw.is_null() {
        return Err(format!("`{ENTRY_SYMBOL}` returned NULL"));
    }
    // SAFETY: every ABI version starts with `uint32_t abi_version`; read it alone first.
    let abi = unsafe { raw.cast::<u32>().read_unaligned() };
    if abi != ABI_VERSION {
        return Err(format!(
            "speaks oxblosc plugin ABI version {abi}, this oxblosc speaks version {ABI_VERSION} \
             (rebuild the plugin against this oxblosc's oxblosc_plugin.h)"
        ));
    }
    // SAFETY: version 1 descriptor: the layout of `RawLibrary`.
    let desc = unsafe { raw.read_unaligned() };
    if desc.nplugins > MAX_PLUGINS || (desc.nplugins > 0 && desc.plugins.is_null()) {
        return Err(format!("has a bad descriptor: {} entries at {:p}", desc.nplugins, desc.plugins));
    }
    let mut entries: Vec<Entry> = Vec::new();
    for i in 0..desc.nplugins as usize {
        // SAFETY: the descriptor promises `nplugins` entries at `plugins`.
        let p = unsafe { desc.plugins.add(i).read_unaligned() };
        let bad = |why: &str| format!("has a bad descriptor entry {i}: {why}");
        let kind = match p.kind {
            0 => Kind::Codec,
            1 => Kind::Filter,
            k => return Err(bad(&format!("kind {k} is neither 0 (codec) nor 1 (filter)"))),
        };
        // SAFETY: the ABI's `name` is a NUL-terminated string (read at most MAX_NAME + 1 bytes).
        let name = unsafe { bounded_str(p.name, MAX_NAME) }.filter(|n| valid_name(n)).ok_or_else(|| {
            bad(&format!("the name of {} {} is missing or not 1-63 of [A-Za-z0-9_.-]", kind_name(kind), p.id))
        })?;
        let (Some(encode), Some(decode)) = (p.encode, p.decode) else {
            return Err(bad(&format!("{} {} ({name}) has a NULL function", kind_name(kind), p.id)));
        };
        if entries.iter().any(|e| e.info.kind == kind && e.info.id == p.id) {
            return Err(bad(&format!("{} {} is listed twice", kind_name(kind), p.id)));
        }
        entries.push(Entry { info: Provided { kind, id: p.id, name, version: p.version }, encode, decode });
    }
    // The code must stay mapped: registered entries point into it for the whole process.
    std::mem::forget(lib);
    Ok(Library { path: path.to_path_buf(), entries, error_message: desc.error_message })
}

/// The library at `path`, opened once per process (failures are remembered too).
fn library(path: &Path) -> Result<&'static Library> {
    let key = std::fs::canonicalize(path).map_err(|e| load_error(path, format!("cannot be opened: {e}")))?;
    let mut cache = LIBRARIES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = cache.iter().find(|(p, _)| *p == key) {
        return r.clone().map_err(|reason| load_error(path, reason));
    }
    let r = open(&key).map(|l| &*Box::leak(Box::new(l)));
    cache.push((key, r.clone()));
    r.map_err(|reason| load_error(path, reason))
}

/// What the library at `path` provides (opens it, once per process).
pub fn library_contents(path: &Path) -> Result<Vec<Provided>> {
    Ok(library(path)?.entries.iter().map(|e| e.info.clone()).collect())
}

/// Register the `kind` `id` of the library at `path` under `origin`. Fails (naming the
/// library and the id) when the library cannot be loaded, speaks another ABI, does not
/// provide that id, or the id is already taken; the failure is also remembered for the
/// "not available" error of chunks that need the id.
pub fn register_from_library(kind: Kind, id: u8, path: &Path, origin: Origin) -> Result<()> {
    let r = register_one(kind, id, path, origin);
    if let Err(e) = &r {
        registry::record_load_failure(kind, id, e.to_string());
    }
    r
}

fn register_one(kind: Kind, id: u8, path: &Path, origin: Origin) -> Result<()> {
    let what = kind_name(kind);
    let lib = library(path).map_err(|e| match e {
        Error::PluginLoad { library, reason } => {
            Error::PluginLoad { library, reason: format!("{reason} ({what} {id})") }
        }
        e => e,
    })?;
    let Some(entry) = lib.entries.iter().find(|e| e.info.kind == kind && e.info.id == id) else {
        let has: Vec<String> =
            lib.entries.iter().map(|e| format!("{} {} ({})", kind_name(e.info.kind), e.info.id, e.info.name)).collect();
        return Err(load_error(path, format!("does not provide {what} {id} (it provides: {})", has.join(", "))));
    };
    let plugin = Native { lib, entry: entry.clone() };
    match kind {
        Kind::Codec => registry::register_codec(id, Box::new(plugin), origin),
        Kind::Filter => registry::register_filter(id, Box::new(plugin), origin),
    }
}

/// One registered entry of a library.
struct Native {
    lib: &'static Library,
    entry: Entry,
}

impl Native {
    /// `what` of the plugin, for error messages: "compiled codec 252 (rle) of /x/lib.so".
    fn who(&self) -> String {
        let i = &self.entry.info;
        format!("compiled {} {} ({}) of {}", kind_name(i.kind), i.id, i.name, self.lib.path.display())
    }

    fn params(
        &self,
        clevel: u8,
        meta: u8,
        typesize: usize,
        block: usize,
        shape: &[usize],
    ) -> Result<RawParams, String> {
        if shape.len() > MAX_DIMS {
            return Err(format!(
                "{}: a {}-d block shape exceeds the ABI's {MAX_DIMS} dimensions",
                self.who(),
                shape.len()
            ));
        }
        let mut blockshape = [0u64; MAX_DIMS];
        blockshape.iter_mut().zip(shape).for_each(|(d, &s)| *d = s as u64);
        Ok(RawParams {
            clevel,
            meta,
            reserved0: 0,
            typesize: u32::try_from(typesize).unwrap_or(u32::MAX),
            block: block as u64,
            ndim: shape.len() as u32,
            reserved1: 0,
            blockshape,
        })
    }

    /// Call one direction and return the size it reports (negative codes become errors).
    fn call(&self, f: Transform, what: &str, src: &[u8], dst: &mut [u8], p: &RawParams) -> Result<usize, String> {
        // SAFETY: both buffers are valid for the lengths passed and do not overlap; the
        // ABI forbids the plugin to write past `dst_cap` or keep the pointers.
        let r = unsafe { f(src.as_ptr(), src.len(), dst.as_mut_ptr(), dst.len(), p) };
        if r < 0 {
            let text = self.lib.error_message.and_then(|m| {
                // SAFETY: the ABI's `error_message` returns NULL or a static NUL-terminated string.
                unsafe { bounded_str(m(r), MAX_MESSAGE) }
            });
            let text = text.map(|t| format!(": {t}")).unwrap_or_default();
            return Err(format!("{}: {what} failed with code {r}{text}", self.who()));
        }
        Ok(r as u64 as usize)
    }

    /// Check a size that must equal the output's (decode, filters).
    fn exact(&self, what: &str, n: usize, cap: usize) -> Result<(), String> {
        if n == cap {
            Ok(())
        } else {
            Err(format!("{}: {what} reported {n} bytes written, the block holds {cap}", self.who()))
        }
    }
}

impl Codec for Native {
    fn name(&self) -> &str {
        &self.entry.info.name
    }
    fn version(&self) -> u8 {
        self.entry.info.version
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        let raw = self.params(p.clevel, p.meta, p.typesize, p.block, p.blockshape)?;
        let n = self.call(self.entry.encode, "encode", src, dst, &raw)?;
        if n > dst.len() {
            return Err(format!("{}: encode reported {n} bytes written, its output holds {}", self.who(), dst.len()));
        }
        Ok(n)
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let raw = self.params(0, p.meta, p.typesize, p.block, p.blockshape)?;
        let n = self.call(self.entry.decode, "decode", src, dst, &raw)?;
        self.exact("decode", n, dst.len())
    }
}

impl Filter for Native {
    fn name(&self) -> &str {
        &self.entry.info.name
    }
    fn version(&self) -> u8 {
        self.entry.info.version
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let raw = self.params(0, p.meta, p.typesize, p.block, p.blockshape)?;
        let n = self.call(self.entry.encode, "forward", src, dst, &raw)?;
        self.exact("forward", n, dst.len())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let raw = self.params(0, p.meta, p.typesize, p.block, p.blockshape)?;
        let n = self.call(self.entry.decode, "backward", src, dst, &raw)?;
        self.exact("backward", n, dst.len())
    }
}
