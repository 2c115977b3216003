//! Per-chunk checksums of the stored chunk bytes, kept in a vlmetalayer other readers ignore.
//!
//! No Blosc2 format checksums chunk bytes: a flipped bit in a chunk whose codec does not
//! notice (memcpyed blocks, BloscLZ literals, filters) decodes to wrong data silently. We keep
//! one XXH3-64 hash (seed 0) per chunk, over the chunk exactly as stored (its `cbytes` bytes;
//! a chunk kept as a special offset counts as the 32-byte special chunk it stands for), in the
//! vlmetalayer [`VLMETA_NAME`]: a msgpack map `{"alg": "xxh3-64", "sums": bin}` where `bin`
//! holds the hashes as little-endian `u64`, in chunk order (layout in docs/format-notes.md).
//! C-Blosc2 and python-blosc2 carry vlmetalayers along without interpreting them.
//!
//! The entry is not listed among the super-chunk's vlmetalayers: the frame layer owns it. It is
//! taken out when a frame is opened and added back (with the current hashes) whenever the
//! trailer is written, so the hashes are committed atomically with the offsets index they
//! describe. Appends, inserts, updates and deletes keep it current (cost: one hash of the new
//! chunk, plus re-encoding 8 bytes per chunk with every committed change). The super-chunk
//! (`schunk.rs`) drives this state: it checks reads against it (on by default for frames that
//! carry checksums) and keeps it aligned with its chunks; nothing here knows the super-chunk.

use xxhash_rust::xxh3::xxh3_64;

use crate::msgpack::{self, Value};

/// Name of the vlmetalayer holding the checksums.
pub const VLMETA_NAME: &str = "_oxblosc_checksums";
/// The hash algorithm, as named in the vlmetalayer.
pub const ALGORITHM: &str = "xxh3-64";

/// Checksum of a chunk's stored bytes.
pub fn chunk_checksum(stored: &[u8]) -> u64 {
    xxh3_64(stored)
}

/// What a super-chunk knows about its checksums.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// One hash per chunk when the super-chunk keeps checksums.
    sums: Option<Vec<u64>>,
    /// The entry could not be decoded: kept verbatim (written back unchanged), with the reason.
    unreadable: Option<(Vec<u8>, String)>,
    /// Check every chunk read against its hash.
    verify_on_read: bool,
    /// The frame's typesize and metalayers no longer match the digest stored with the hashes.
    head_mismatch: bool,
}

/// Checksum status of a super-chunk ([`SChunk::checksums`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No checksums kept.
    Off,
    /// One hash per chunk for the first `len` chunks (fewer than `nchunks` when another writer
    /// appended without updating them).
    On { len: usize },
    /// The checksum vlmetalayer exists but cannot be decoded.
    Unreadable(String),
}

/// Result of checking one chunk ([`SChunk::verify_chunk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hash matches and the chunk decodes.
    Ok,
    /// The chunk decodes but has no stored hash.
    NoChecksum,
}

impl State {
    /// Take the checksum entry out of a frame's vlmetalayers.
    pub(crate) fn take_from(vlmeta: &mut Vec<(String, Vec<u8>)>) -> State {
        let Some(k) = vlmeta.iter().position(|(n, _)| n == VLMETA_NAME) else { return State::default() };
        let (_, raw) = vlmeta.remove(k);
        match decode(&raw) {
            // A frame that carries checksums is checked on every read unless the caller opts out.
            Ok((sums, _)) => State { sums: Some(sums), verify_on_read: true, ..State::default() },
            Err(reason) => State { unreadable: Some((raw, reason)), ..State::default() },
        }
    }

    /// Trailer entries this state adds (counted against the vlmetalayer limit).
    pub(crate) fn entries(&self) -> usize {
        usize::from(self.sums.is_some() || self.unreadable.is_some())
    }

    /// The entry to write into the trailer, if any; `head` = [`header_digest`] of the frame.
    pub(crate) fn encoded(&self, head: u64) -> Option<Vec<u8>> {
        if let Some((raw, _)) = &self.unreadable {
            return Some(raw.clone());
        }
        self.sums.as_ref().map(|s| encode(s, head))
    }

    /// Compare the stored header digest (if the entry has one) with the frame's `head`.
    pub(crate) fn check_head(&mut self, raw: &[(String, Vec<u8>)], head: u64) {
        let stored = raw.iter().find(|(n, _)| n == VLMETA_NAME).and_then(|(_, r)| decode(r).ok()).and_then(|d| d.1);
        self.head_mismatch = stored.is_some_and(|h| h != head);
    }

    /// Whether the typesize or metalayers changed since the hashes were written.
    pub(crate) fn head_mismatch(&self) -> bool {
        self.head_mismatch
    }
}

/// Digest of what a frame header says about its data that no chunk repeats: the typesize
/// (items per chunk) and the metalayers (names and contents, e.g. an array's shape). Stored
/// with the chunk hashes so that a damaged header cannot silently change how data is read.
pub fn header_digest(typesize: usize, meta: &[(String, Vec<u8>)]) -> u64 {
    let mut buf = Vec::with_capacity(16 + meta.iter().map(|(n, c)| n.len() + c.len() + 8).sum::<usize>());
    buf.extend_from_slice(&(typesize as u64).to_le_bytes());
    for (n, c) in meta {
        buf.extend_from_slice(&(n.len() as u32).to_le_bytes());
        buf.extend_from_slice(n.as_bytes());
        buf.extend_from_slice(&(c.len() as u32).to_le_bytes());
        buf.extend_from_slice(c);
    }
    xxh3_64(&buf)
}

fn encode(sums: &[u64], head: u64) -> Vec<u8> {
    let bin: Vec<u8> = sums.iter().flat_map(|s| s.to_le_bytes()).collect();
    let v = Value::Map(vec![
        (Value::Str("alg".into()), Value::Str(ALGORITHM.into())),
        (Value::Str("sums".into()), Value::Bin(bin)),
        (Value::Str("head".into()), Value::Bin(head.to_le_bytes().to_vec())),
    ]);
    let mut out = Vec::with_capacity(sums.len() * 8 + 24);
    msgpack::encode(&v, &mut out);
    out
}

/// The hashes and, when present, the header digest.
fn decode(raw: &[u8]) -> std::result::Result<(Vec<u64>, Option<u64>), String> {
    let Value::Map(entries) = msgpack::decode(raw).map_err(|e| e.to_string())? else {
        return Err("not a msgpack map".into());
    };
    let get = |key: &str| entries.iter().find(|(k, _)| *k == Value::Str(key.into())).map(|(_, v)| v);
    match get("alg") {
        Some(Value::Str(a)) if a == ALGORITHM => {}
        Some(Value::Str(a)) => return Err(format!("unknown checksum algorithm {a:?}")),
        _ => return Err("no \"alg\" entry".into()),
    }
    let Some(Value::Bin(b)) = get("sums") else { return Err("no \"sums\" bytes".into()) };
    if b.len() % 8 != 0 {
        return Err(format!("{} bytes of sums is not a multiple of 8", b.len()));
    }
    let head = match get("head") {
        Some(Value::Bin(h)) if h.len() == 8 => Some(u64::from_le_bytes(h[..].try_into().expect("8 bytes"))),
        None => None,
        Some(_) => return Err("\"head\" is not 8 bytes".into()),
    };
    Ok((b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(), head))
}

/// How the chunk list changed (for keeping the hashes aligned).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change {
    /// A chunk now sits at this index (appended or inserted).
    Inserted(usize),
    /// The chunk at this index was replaced.
    Replaced(usize),
    /// The chunk at this index was removed.
    Removed(usize),
}

impl State {
    /// Whether hashes are kept (and readable).
    pub(crate) fn enabled(&self) -> bool {
        self.sums.is_some() && self.unreadable.is_none()
    }

    /// Keep these hashes from now on (replacing an unreadable entry).
    pub(crate) fn set_sums(&mut self, sums: Option<Vec<u64>>) {
        self.sums = sums;
        self.unreadable = None;
    }

    pub(crate) fn status(&self) -> Status {
        match (&self.unreadable, &self.sums) {
            (Some((_, reason)), _) => Status::Unreadable(reason.clone()),
            (None, Some(s)) => Status::On { len: s.len() },
            (None, None) => Status::Off,
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        self.sums.as_ref().and_then(|s| s.get(i).copied())
    }

    pub(crate) fn len(&self) -> Option<usize> {
        self.sums.as_ref().map(Vec::len)
    }

    pub(crate) fn verify_on_read(&self) -> bool {
        self.verify_on_read
    }

    pub(crate) fn set_verify_on_read(&mut self, on: bool) {
        self.verify_on_read = on;
    }

    /// Whether `change` (with the chunk list now `n` long) keeps the hashes aligned: hashes
    /// already out of step (another writer changed the frame) are left alone.
    pub(crate) fn follows(&self, change: Change, n: usize) -> bool {
        let Some(len) = self.len() else { return false };
        match change {
            Change::Inserted(_) => len + 1 == n,
            Change::Replaced(_) => len == n,
            Change::Removed(_) => len == n + 1,
        }
    }

    /// Apply a chunk-list change (`h`: hash of the new chunk; unused for removals); returns
    /// what undoes it.
    pub(crate) fn apply(&mut self, change: Change, h: u64) -> (Change, u64) {
        let sums = self.sums.as_mut().expect("checked by follows");
        match change {
            Change::Inserted(i) => {
                sums.insert(i, h);
                (Change::Removed(i), 0)
            }
            Change::Replaced(i) => (Change::Replaced(i), std::mem::replace(&mut sums[i], h)),
            Change::Removed(i) => (Change::Inserted(i), sums.remove(i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips_and_rejects_garbage() {
        let sums = vec![1u64, u64::MAX, 0x0123_4567_89AB_CDEF];
        let mut vl = vec![("a".to_string(), vec![0xC0]), (VLMETA_NAME.to_string(), encode(&sums, 42))];
        let raw = vl.clone();
        let mut st = State::take_from(&mut vl);
        assert_eq!(vl.len(), 1, "the entry is taken out of the user's vlmetalayers");
        assert_eq!(st.sums.as_deref(), Some(&sums[..]));
        assert_eq!(st.encoded(42), Some(encode(&sums, 42)));
        st.check_head(&raw, 42);
        assert!(!st.head_mismatch());
        st.check_head(&raw, 43);
        assert!(st.head_mismatch());

        for bad in [&b"\x81\xa3alg\xa3md5"[..], b"\x90", b"\xc1", b"\x82\xa3alg\xa7xxh3-64\xa4sums\xc4\x03abc"] {
            let mut vl = vec![(VLMETA_NAME.to_string(), bad.to_vec())];
            let st = State::take_from(&mut vl);
            assert!(st.sums.is_none() && st.unreadable.is_some(), "{bad:?} accepted");
            assert_eq!(st.encoded(0).as_deref(), Some(bad), "unreadable entries are written back verbatim");
        }
    }

    #[test]
    fn xxh3_known_value() {
        // XXH3-64 of the empty input with seed 0 (reference value of the algorithm).
        assert_eq!(chunk_checksum(b""), 0x2D06_8005_38D3_94C2);
    }
}
