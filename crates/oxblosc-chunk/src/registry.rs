//! The one registry of codecs and filters, keyed by their Blosc2 IDs.
//!
//! Built-in codecs and filters register here exactly like user plugins do, and the chunk
//! engine finds every codec and filter through [`codec`] / [`filter`]: there is no other
//! table of IDs. Each ID has one slot that is written once and never freed, so a lookup is
//! an array index plus an atomic load (no lock), and what it returns lives for the whole
//! process (`&'static`). Compression and decompression resolve the IDs once per chunk.
//!
//! ID ranges (format spec 6.1): 0-31 Blosc-defined (built in), 32-159 Blosc-registered
//! global plugins, 160-255 user plugins. A second registration of a taken ID is refused
//! with an error naming who holds it.

use std::sync::{Mutex, Once, OnceLock};

pub use crate::blocks::BlockTuning;
use crate::codec::Dict;
use crate::{Error, Result};

/// First ID of the Blosc-registered (global) plugin range.
pub const FIRST_GLOBAL_ID: u8 = 32;
/// First ID of the user range.
pub const FIRST_USER_ID: u8 = 160;

/// What plugins may need to know about the container of a chunk. C-Blosc2 hands plugins
/// the super-chunk; the b2nd ones (NDCELL, NDMEAN, NDLZ, ZFP) read its block shape there.
/// Front-ends that hold b2nd arrays pass it with the `*_with` compress/decompress calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkContext {
    /// The b2nd block shape (items per dimension), empty when the chunk is not in an array.
    pub blockshape: Vec<usize>,
}

impl ChunkContext {
    /// No container information.
    pub const NONE: &'static ChunkContext = &ChunkContext { blockshape: Vec::new() };
}

/// What a codec sees of the chunk it works for.
#[derive(Clone, Copy)]
pub struct CodecParams<'a> {
    /// Compression level 0-9 (0 when decoding: not recorded in chunks).
    pub clevel: u8,
    /// The chunk's codec parameter (header byte 23, `codec_meta`).
    pub meta: u8,
    /// Element size of the chunk (as in its header: 1 when the real one exceeds 255).
    pub typesize: usize,
    /// Index of the block being coded.
    pub block: usize,
    /// The chunk dictionary, for codecs whose [`Codec::dict_kind`] is `Some`.
    pub dict: Option<&'a Dict<'a>>,
    /// The b2nd block shape ([`ChunkContext`]), empty outside arrays.
    pub blockshape: &'a [usize],
    /// Encoding a Blosc1 (version 2) chunk: BloscLZ then follows c-blosc 1.x's entropy probe.
    pub blosc1: bool,
}

/// A codec: turns one stream of a block into a payload and back.
///
/// Streams that do not compress are stored raw by the engine: `encode` returns 0 when the
/// payload does not fit `dst` (or would not be smaller), and `decode` is never asked for a
/// stream whose payload has the stream's size.
pub trait Codec: Send + Sync {
    /// Lower-case name, as in python-blosc2's `Codec` enum.
    fn name(&self) -> &str;
    /// Format version of the payloads (written to header byte 1).
    fn version(&self) -> u8 {
        1
    }
    /// Compress `src` into `dst`; the payload length, 0 when it does not fit.
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String>;
    /// Decode `src` into exactly `dst.len()` bytes.
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String>;
    /// The most a `csize`-byte payload can decode to, when the format bounds it: lets the
    /// engine refuse a lying chunk before allocating its output.
    fn max_expansion(&self, _csize: usize) -> Option<usize> {
        None
    }
    /// Which chunk dictionary this codec uses (format spec 1.11); `None`: no dictionaries.
    fn dict_kind(&self) -> Option<DictKind> {
        None
    }
    /// How the automatic block size and split treat this codec (read once, at registration).
    fn block_tuning(&self) -> BlockTuning {
        BlockTuning::PLUGIN
    }
}

/// The dictionary flavours of the built-in codecs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DictKind {
    /// Raw bytes used as LZ4 history.
    Lz4,
    /// A trained zstd dictionary.
    Zstd,
}

/// What a filter sees of the block it transforms.
#[derive(Clone, Copy)]
pub struct FilterParams<'a> {
    /// The slot's parameter (`filters_meta`).
    pub meta: u8,
    /// Element size of the chunk (as in its header: 1 when the real one exceeds 255).
    pub typesize: usize,
    /// Index of the block.
    pub block: usize,
    /// Block 0 of the chunk, unfiltered (for filters whose [`Filter::needs_block0`]).
    pub block0: &'a [u8],
    /// The chunk is a Blosc1 (version 2) chunk.
    pub blosc1: bool,
    /// The b2nd block shape ([`ChunkContext`]), empty outside arrays.
    pub blockshape: &'a [usize],
}

/// A filter: a transform of one block into a block of the same length and back.
pub trait Filter: Send + Sync {
    /// Lower-case name, as in python-blosc2's `Filter` enum.
    fn name(&self) -> &str;
    /// Format version of the transform.
    fn version(&self) -> u8 {
        1
    }
    /// Transform `src` into `dst` (same length; every byte of `dst` must be written).
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String>;
    /// Undo [`forward`](Self::forward). Not called for lossy filters.
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String>;
    /// Decoding is the identity (the filter drops information and cannot undo it).
    fn lossy(&self) -> bool {
        false
    }
    /// The filter reads block 0 of the chunk (so it is decoded before any other block).
    fn needs_block0(&self) -> bool {
        false
    }
    /// With these parameters the filter is the identity and can be skipped.
    fn is_identity(&self, _meta: u8, _typesize: usize) -> bool {
        false
    }
    /// Check parameters before any data is compressed.
    fn validate(&self, _meta: u8, _typesize: usize) -> Result<(), String> {
        Ok(())
    }
}

/// Where a registered codec or filter came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into oxblosc (IDs 0-31, and the Blosc2 plugins oxblosc implements).
    BuiltIn,
    /// Registered at run time by the program (IDs 160-255, or 32-159 for a program that
    /// supplies a Blosc-registered plugin itself).
    User,
    /// Loaded from an installed plugin package (named).
    Package(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::BuiltIn => f.write_str("built-in"),
            Origin::User => f.write_str("user"),
            Origin::Package(p) => write!(f, "package {p}"),
        }
    }
}

/// One row of [`registered_codecs`] / [`registered_filters`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub id: u8,
    pub name: &'static str,
    pub version: u8,
    pub origin: Origin,
}

/// A registered codec, as the engine uses it.
pub struct CodecEntry {
    pub id: u8,
    /// The codec's name, fixed at registration (so errors can carry it).
    pub name: &'static str,
    pub origin: Origin,
    /// The codec's [`Codec::block_tuning`], fixed at registration.
    pub tuning: BlockTuning,
    pub codec: Box<dyn Codec>,
}

/// A registered filter, as the engine uses it.
pub struct FilterEntry {
    pub id: u8,
    pub name: &'static str,
    pub origin: Origin,
    pub filter: Box<dyn Filter>,
}

type Slots<T> = [OnceLock<T>; 256];
static CODECS: Slots<CodecEntry> = [const { OnceLock::new() }; 256];
static FILTERS: Slots<FilterEntry> = [const { OnceLock::new() }; 256];
static BUILTINS: Once = Once::new();

/// Called when a chunk needs an ID nobody registered: may register it (dynamic plugins).
pub type Loader = fn(kind: Kind, id: u8);
static LOADER: OnceLock<Loader> = OnceLock::new();

/// Codec or filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Codec,
    Filter,
}

fn builtins() {
    BUILTINS.call_once(|| {
        for (id, c) in crate::codec::builtin::all() {
            let _ = CODECS[usize::from(id)].set(CodecEntry {
                id,
                name: leak(c.name()),
                origin: Origin::BuiltIn,
                tuning: c.block_tuning(),
                codec: c,
            });
        }
        for (id, f) in crate::filter::builtin::all() {
            let _ = FILTERS[usize::from(id)].set(FilterEntry {
                id,
                name: leak(f.name()),
                origin: Origin::BuiltIn,
                filter: f,
            });
        }
    });
}

/// Registered names live as long as their slot: for the whole process.
fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// Check that `id` may be registered by `origin`: user plugins take 160-255 (as in
/// C-Blosc2), plugin packages and oxblosc's own Blosc2 plugins also 32-159; 0-31 are Blosc's.
fn check_range(kind: &'static str, id: u8, origin: &Origin) -> Result<()> {
    let lowest = if *origin == Origin::User { FIRST_USER_ID } else { FIRST_GLOBAL_ID };
    if id < lowest {
        let range = if id < FIRST_GLOBAL_ID {
            "0-31 is reserved for Blosc's built-in"
        } else {
            "32-159 is reserved for Blosc-registered"
        };
        return Err(Error::InvalidParam {
            name: kind,
            reason: format!("{kind} id {id} cannot be registered: {range} {kind}s; user {kind}s take ids 160-255"),
        });
    }
    Ok(())
}

fn taken(kind: &'static str, id: u8, name: &str, holder: &str, origin: &Origin) -> Error {
    Error::InvalidParam {
        name: kind,
        reason: format!("cannot register {kind} '{name}' as id {id}: the id is already taken by '{holder}' ({origin})"),
    }
}

/// Register `codec` under `id` (user plugins: 160-255). Fails when the id is
/// taken: IDs are permanent for the life of the process, as chunks name codecs by id.
pub fn register_codec(id: u8, codec: Box<dyn Codec>, origin: Origin) -> Result<()> {
    builtins();
    check_range("codec", id, &origin)?;
    let name = leak(codec.name());
    let slot = &CODECS[usize::from(id)];
    let mut fresh = false;
    let entry = slot.get_or_init(|| {
        fresh = true;
        CodecEntry { id, name, origin, tuning: codec.block_tuning(), codec }
    });
    if fresh {
        Ok(())
    } else {
        Err(taken("codec", id, name, entry.name, &entry.origin))
    }
}

/// Register `filter` under `id` (user plugins: 160-255). Fails when the id is taken.
pub fn register_filter(id: u8, filter: Box<dyn Filter>, origin: Origin) -> Result<()> {
    builtins();
    check_range("filter", id, &origin)?;
    let name = leak(filter.name());
    let slot = &FILTERS[usize::from(id)];
    let mut fresh = false;
    let entry = slot.get_or_init(|| {
        fresh = true;
        FilterEntry { id, name, origin, filter }
    });
    if fresh {
        Ok(())
    } else {
        Err(taken("filter", id, name, entry.name, &entry.origin))
    }
}

/// Why loading the plugin for an id failed, shown in that id's "not available" error.
static LOAD_FAILURES: Mutex<Vec<(Kind, u8, String)>> = Mutex::new(Vec::new());

/// Remember why the plugin for `kind` `id` could not be loaded (loaders call this), so a
/// chunk that needs the id says why, not just that it is missing.
pub fn record_load_failure(kind: Kind, id: u8, why: String) {
    let mut all = LOAD_FAILURES.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|(k, i, _)| (*k, *i) != (kind, id));
    all.push((kind, id, why));
}

fn load_failure(kind: Kind, id: u8) -> Option<String> {
    let all = LOAD_FAILURES.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().find(|(k, i, _)| (*k, *i) == (kind, id)).map(|(_, _, w)| w.clone())
}

/// Install the hook that loads plugins on first need (once per process).
pub fn set_loader(loader: Loader) -> bool {
    LOADER.set(loader).is_ok()
}

fn find<T>(slots: &'static Slots<T>, kind: Kind, id: u8) -> Option<&'static T> {
    builtins();
    let slot = &slots[usize::from(id)];
    if let Some(e) = slot.get() {
        return Some(e);
    }
    if let Some(load) = LOADER.get() {
        load(kind, id);
    }
    slot.get()
}

/// The codec registered under `id`, or `Error::UnknownCodec` (whose message names the
/// booked plugin and its package when the id is a known one).
pub fn codec(id: u8) -> Result<&'static CodecEntry> {
    find(&CODECS, Kind::Codec, id).ok_or(Error::UnknownCodec { id })
}

/// The filter registered under `id` (found in `slot`), or `Error::UnknownFilter`.
pub fn filter(id: u8, slot: usize) -> Result<&'static FilterEntry> {
    find(&FILTERS, Kind::Filter, id).ok_or(Error::UnknownFilter { id, slot })
}

/// Every registered codec, by id.
pub fn registered_codecs() -> Vec<Registered> {
    builtins();
    CODECS
        .iter()
        .filter_map(|s| s.get())
        .map(|e| Registered { id: e.id, name: e.name, version: e.codec.version(), origin: e.origin.clone() })
        .collect()
}

/// Every registered filter, by id.
pub fn registered_filters() -> Vec<Registered> {
    builtins();
    FILTERS
        .iter()
        .filter_map(|s| s.get())
        .map(|e| Registered { id: e.id, name: e.name, version: e.filter.version(), origin: e.origin.clone() })
        .collect()
}

/// IDs booked by Blosc for plugins (format spec 6.3): (id, name, who provides it).
const BOOKED_CODECS: &[(u8, &str, &str)] = &[
    (3, "snappy", "c-blosc 1.x only; C-Blosc2 never supported it"),
    (32, "ndlz", "C-Blosc2's bundled plugins (python-blosc2)"),
    (33, "zfp_acc", "C-Blosc2's bundled plugins (python-blosc2)"),
    (34, "zfp_prec", "C-Blosc2's bundled plugins (python-blosc2)"),
    (35, "zfp_rate", "C-Blosc2's bundled plugins (python-blosc2)"),
    (36, "openhtj2k", "the blosc2-openhtj2k package"),
    (37, "grok", "the blosc2-grok package"),
    (38, "openzl", "the blosc2-openzl package"),
    (39, "j2k", "the blosc2-j2k package"),
    (40, "htj2k", "the blosc2-htj2k package"),
];
const BOOKED_FILTERS: &[(u8, &str, &str)] = &[
    (32, "ndcell", "C-Blosc2's bundled plugins (python-blosc2)"),
    (33, "ndmean", "C-Blosc2's bundled plugins (python-blosc2)"),
    (34, "bytedelta_buggy", "C-Blosc2's bundled plugins (python-blosc2)"),
    (35, "bytedelta", "C-Blosc2's bundled plugins (python-blosc2)"),
    (36, "int_trunc", "C-Blosc2's bundled plugins (python-blosc2)"),
];

/// The booked name and provider of a codec or filter id, if Blosc booked it.
pub fn booked(kind: Kind, id: u8) -> Option<(&'static str, &'static str)> {
    let table = if kind == Kind::Codec { BOOKED_CODECS } else { BOOKED_FILTERS };
    table.iter().find(|e| e.0 == id).map(|e| (e.1, e.2))
}

/// Why `id` is not available, for error messages: its name and provider when known, and
/// why its plugin failed to load when a loader tried.
pub(crate) fn describe_missing(kind: Kind, id: u8) -> String {
    let known = describe_unregistered(kind, id);
    match load_failure(kind, id) {
        Some(why) => format!("{known}; loading its plugin failed: {why}"),
        None => known,
    }
}

fn describe_unregistered(kind: Kind, id: u8) -> String {
    let what = if kind == Kind::Codec { "codec" } else { "filter" };
    let (register, ns) = if kind == Kind::Codec { ("register_codec", "Codec") } else { ("register_filter", "Filter") };
    if let Some((name, provider)) = booked(kind, id) {
        return format!(
            "{what} {id} ({name}) is not available in oxblosc: it is a Blosc-registered plugin provided by {provider}"
        );
    }
    match id {
        0..FIRST_GLOBAL_ID => format!("unknown or unsupported {what} {id}"),
        FIRST_GLOBAL_ID..FIRST_USER_ID => {
            format!("{what} {id} is in the Blosc-registered plugin range (32-159) but no plugin with that id is known")
        }
        _ => format!(
            "{what} {id} is a user-defined {what} that is not registered in this process \
             (register it with oxblosc.{register} or registry::{register} before use, {ns} ids 160-255, \
             or install a plugin package that declares it / put it on OXBLOSC_PLUGIN_PATH)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plus(u8);
    impl Filter for Plus {
        fn name(&self) -> &str {
            "plus"
        }
        fn forward(&self, _: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
            dst.iter_mut().zip(src).for_each(|(d, s)| *d = s.wrapping_add(self.0));
            Ok(())
        }
        fn backward(&self, _: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
            dst.iter_mut().zip(src).for_each(|(d, s)| *d = s.wrapping_sub(self.0));
            Ok(())
        }
    }

    #[test]
    fn builtins_are_listed_with_their_ids() {
        let codecs: Vec<(u8, &str)> = registered_codecs().iter().map(|r| (r.id, r.name)).collect();
        for want in [(0, "blosclz"), (1, "lz4"), (2, "lz4hc"), (4, "zlib"), (5, "zstd")] {
            assert!(codecs.contains(&want), "{want:?} missing from {codecs:?}");
        }
        let filters: Vec<(u8, &str)> = registered_filters().iter().map(|r| (r.id, r.name)).collect();
        for want in [(1, "shuffle"), (2, "bitshuffle"), (3, "delta"), (4, "trunc_prec"), (35, "bytedelta")] {
            assert!(filters.contains(&want), "{want:?} missing from {filters:?}");
        }
        assert!(registered_codecs().iter().all(|r| r.origin == Origin::BuiltIn || r.id >= FIRST_GLOBAL_ID));
    }

    #[test]
    fn collisions_and_reserved_ids_are_refused() {
        register_filter(201, Box::new(Plus(1)), Origin::User).unwrap();
        let e = register_filter(201, Box::new(Plus(2)), Origin::User).unwrap_err().to_string();
        assert!(e.contains("201") && e.contains("already taken by 'plus' (user)"), "{e}");
        let e = register_filter(1, Box::new(Plus(2)), Origin::User).unwrap_err().to_string();
        assert!(e.contains("reserved"), "{e}");
        let e = register_filter(40, Box::new(Plus(2)), Origin::User).unwrap_err().to_string();
        assert!(e.contains("32-159 is reserved") && e.contains("160-255"), "{e}");
        let e = register_filter(35, Box::new(Plus(2)), Origin::Package("p".into())).unwrap_err().to_string();
        assert!(e.contains("'bytedelta' (built-in)"), "{e}");
        assert_eq!(filter(201, 0).unwrap().name, "plus");
    }

    #[test]
    fn missing_ids_name_the_plugin_and_its_provider() {
        let e = codec(37).err().unwrap().to_string();
        assert!(e.contains("37") && e.contains("grok") && e.contains("blosc2-grok"), "{e}");
        let e = filter(199, 2).err().unwrap().to_string();
        assert!(e.contains("199") && e.contains("user-defined") && e.contains("slot 2"), "{e}");
    }
}
