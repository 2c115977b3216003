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
//! chunk, plus re-encoding 8 bytes per chunk with every committed change). With
//! [`SChunk::set_verify_checksums`] every chunk read is checked against its hash.

use xxhash_rust::xxh3::xxh3_64;

use crate::msgpack::{self, Value};
use crate::schunk::SChunk;
use crate::{Error, Result};

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
            Ok(sums) => State { sums: Some(sums), ..State::default() },
            Err(reason) => State { unreadable: Some((raw, reason)), ..State::default() },
        }
    }

    /// The entry to write into the trailer, if any.
    pub(crate) fn encoded(&self) -> Option<Vec<u8>> {
        if let Some((raw, _)) = &self.unreadable {
            return Some(raw.clone());
        }
        self.sums.as_ref().map(|s| encode(s))
    }
}

fn encode(sums: &[u64]) -> Vec<u8> {
    let bin: Vec<u8> = sums.iter().flat_map(|s| s.to_le_bytes()).collect();
    let v = Value::Map(vec![
        (Value::Str("alg".into()), Value::Str(ALGORITHM.into())),
        (Value::Str("sums".into()), Value::Bin(bin)),
    ]);
    let mut out = Vec::with_capacity(sums.len() * 8 + 24);
    msgpack::encode(&v, &mut out);
    out
}

fn decode(raw: &[u8]) -> std::result::Result<Vec<u64>, String> {
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
    Ok(b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
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

impl SChunk {
    /// Start keeping checksums: hashes every existing chunk (reads them all) and keeps them
    /// current from now on. A no-op when checksums are already kept.
    pub fn enable_checksums(&mut self) -> Result<()> {
        if self.checksums.sums.is_some() && self.checksums.unreadable.is_none() {
            return Ok(());
        }
        let mut sums = Vec::with_capacity(self.nchunks());
        for i in 0..self.nchunks() {
            sums.push(chunk_checksum(&self.get_chunk_raw(i)?));
        }
        self.checksums.sums = Some(sums);
        self.checksums.unreadable = None;
        self.after_checksum_change()
    }

    /// Stop keeping checksums (the vlmetalayer is dropped with the next write).
    pub fn disable_checksums(&mut self) -> Result<()> {
        self.checksums.sums = None;
        self.checksums.unreadable = None;
        self.after_checksum_change()
    }

    fn after_checksum_change(&mut self) -> Result<()> {
        if self.writer.is_some() {
            if self.read_only {
                return Err(Error::ReadOnly);
            }
            self.sync()?;
        }
        Ok(())
    }

    /// Whether this super-chunk keeps checksums, and for how many chunks.
    pub fn checksums(&self) -> Status {
        match (&self.checksums.unreadable, &self.checksums.sums) {
            (Some((_, reason)), _) => Status::Unreadable(reason.clone()),
            (None, Some(s)) => Status::On { len: s.len() },
            (None, None) => Status::Off,
        }
    }

    /// The stored hash of chunk `i`, if there is one.
    pub fn chunk_checksum(&self, i: usize) -> Option<u64> {
        self.checksums.sums.as_ref().and_then(|s| s.get(i).copied())
    }

    /// Check every chunk against its hash when it is read ([`get_chunk`](Self::get_chunk) and
    /// everything that decompresses). Chunks without a hash pass.
    pub fn set_verify_checksums(&mut self, on: bool) {
        self.checksums.verify_on_read = on;
    }

    pub fn verify_checksums(&self) -> bool {
        self.checksums.verify_on_read
    }

    /// Compare chunk `i`'s stored bytes with its hash, then decode it: a mismatch is
    /// [`Error::Checksum`], a chunk that does not decode is the decoder's error. Chunks
    /// past the end of the hashes (another writer appended) give [`Verdict::NoChecksum`].
    pub fn verify_chunk(&self, i: usize) -> Result<Verdict> {
        let c = self.get_chunk_raw(i)?;
        let verdict = match self.chunk_checksum(i) {
            Some(expected) => {
                self.compare(i, expected, &c)?;
                Verdict::Ok
            }
            None => Verdict::NoChecksum,
        };
        if let Status::Unreadable(reason) = self.checksums() {
            return Err(self.in_backing_file(Error::param("checksums", reason)));
        }
        oxblosc_chunk::decompress(&c, self.dparams()).map_err(Error::chunk(i)).map_err(|e| self.in_backing_file(e))?;
        Ok(verdict)
    }

    /// More hashes than chunks: chunks were removed by a writer that does not keep them.
    pub fn checksum_count_mismatch(&self) -> Option<(usize, usize)> {
        let n = self.checksums.sums.as_ref()?.len();
        (n > self.nchunks()).then_some((n, self.nchunks()))
    }

    fn compare(&self, i: usize, expected: u64, stored: &[u8]) -> Result<()> {
        let found = chunk_checksum(stored);
        if found != expected {
            return Err(self.in_backing_file(Error::Checksum { chunk: i, expected, found }));
        }
        Ok(())
    }

    /// Hook of [`get_chunk`](Self::get_chunk): check chunk `i` when verifying on read.
    pub(crate) fn verify_read(&self, i: usize, stored: &[u8]) -> Result<()> {
        if !self.checksums.verify_on_read {
            return Ok(());
        }
        match self.chunk_checksum(i) {
            Some(expected) => self.compare(i, expected, stored),
            None => Ok(()),
        }
    }

    /// Hook of every chunk-list change: keep the hashes aligned with the chunks. Hashes that
    /// are already out of step (another writer changed the frame) are left alone.
    pub(crate) fn note_checksum(&mut self, change: Change) -> Result<()> {
        let Some(len) = self.checksums.sums.as_ref().map(Vec::len) else { return Ok(()) };
        let n = self.nchunks();
        let (aligned, i) = match change {
            Change::Inserted(i) => (len + 1 == n, i),
            Change::Replaced(i) => (len == n, i),
            Change::Removed(i) => (len == n + 1, i),
        };
        if !aligned {
            return Ok(());
        }
        let h = match change {
            Change::Removed(_) => 0,
            _ => chunk_checksum(&self.get_chunk_raw(i)?),
        };
        let sums = self.checksums.sums.as_mut().expect("checked above");
        match change {
            Change::Inserted(i) => sums.insert(i, h),
            Change::Replaced(i) => sums[i] = h,
            Change::Removed(i) => {
                sums.remove(i);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips_and_rejects_garbage() {
        let sums = vec![1u64, u64::MAX, 0x0123_4567_89AB_CDEF];
        let mut vl = vec![("a".to_string(), vec![0xC0]), (VLMETA_NAME.to_string(), encode(&sums))];
        let st = State::take_from(&mut vl);
        assert_eq!(vl.len(), 1, "the entry is taken out of the user's vlmetalayers");
        assert_eq!(st.sums.as_deref(), Some(&sums[..]));
        assert_eq!(st.encoded(), Some(encode(&sums)));

        for bad in [&b"\x81\xa3alg\xa3md5"[..], b"\x90", b"\xc1", b"\x82\xa3alg\xa7xxh3-64\xa4sums\xc4\x03abc"] {
            let mut vl = vec![(VLMETA_NAME.to_string(), bad.to_vec())];
            let st = State::take_from(&mut vl);
            assert!(st.sums.is_none() && st.unreadable.is_some(), "{bad:?} accepted");
            assert_eq!(st.encoded().as_deref(), Some(bad), "unreadable entries are written back verbatim");
        }
    }

    #[test]
    fn xxh3_known_value() {
        // XXH3-64 of the empty input with seed 0 (reference value of the algorithm).
        assert_eq!(chunk_checksum(b""), 0x2D06_8005_38D3_94C2);
    }
}
