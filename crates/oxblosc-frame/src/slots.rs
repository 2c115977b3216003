//! The compact chunk list of a super-chunk: one `u64` per chunk (8 bytes, so 10^7 chunks take
//! 80 MB), with chunks held in memory kept in a side pool.
//!
//! Encoding of a value `v`:
//! * bit 63 clear: `Stored(v)` - position in the backing (or sparse chunk file id);
//! * bits 63..62 = `10`: special chunk, kind in bits 32..39, nbytes in bits 0..31;
//! * bits 63..62 = `11`: chunk in memory, index into the pool in bits 0..31.
//!
//! A change in progress records its edits ([`Slots::begin`]) so that a failed commit can undo
//! them ([`Slots::rollback`]).
//!
//! When tracking is on (file-backed writable super-chunks) the list records which 2048-entry
//! blocks of the offsets index changed since the last [`Slots::take_dirty`], so the writer
//! re-encodes only those blocks.

use std::collections::HashSet;
use std::sync::Arc;

use oxblosc_chunk::SpecialKind;

/// Offsets-index entries per index block (16 KiB of i64, C-Blosc2's index blocksize).
pub(crate) const BLOCK_ENTRIES: usize = 2048;

const SPECIAL: u64 = 1 << 63;
const MEM: u64 = 3 << 62;

/// One chunk of a super-chunk (decoded view of a slot value).
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A complete chunk in memory.
    Mem(Arc<[u8]>),
    /// Zeros, NaN or uninitialised items, not stored.
    Special { kind: SpecialKind, nbytes: usize },
    /// In the backing: absolute position (buffer/file) or chunk id (sparse directory).
    Stored(u64),
}

/// Changes since the last [`Slots::take_dirty`]: index blocks touched, and the first block
/// from which everything shifted (inserts, deletes).
#[derive(Debug, Clone, Default)]
pub(crate) struct Dirty {
    pub blocks: Vec<usize>,
    pub from: Option<usize>,
}

/// One recorded edit, enough to undo it.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, Slot),
    Push,
    Insert(usize),
    Remove(usize, Slot),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Slots {
    v: Vec<u64>,
    pool: Vec<Option<Arc<[u8]>>>,
    free: Vec<u32>,
    track: bool,
    dirty: Dirty,
    /// Edits since [`Slots::begin`] (a change in progress that may be rolled back).
    journal: Option<Vec<Edit>>,
    /// Chunk count at [`Slots::begin`], and whether an insert or removal moved positions since.
    born: usize,
    shifted: bool,
    /// Positions whose value before the change is recorded in the journal already (only kept
    /// while no position moved): a later set of one needs no record, and one would keep the
    /// replaced chunk's bytes in memory until the commit.
    recorded: HashSet<usize>,
}

fn kind_from(b: u8) -> SpecialKind {
    match b {
        1 => SpecialKind::Zeros,
        2 => SpecialKind::Nan,
        3 => SpecialKind::Value,
        4 => SpecialKind::Uninit,
        _ => SpecialKind::None,
    }
}

impl Slots {
    pub(crate) fn from_values(v: Vec<u64>) -> Slots {
        Slots { v, ..Slots::default() }
    }

    /// Value for a stored position.
    pub(crate) fn stored(pos: u64) -> u64 {
        debug_assert!(pos < SPECIAL);
        pos
    }

    /// Value for a special chunk.
    pub(crate) fn special(kind: SpecialKind, nbytes: usize) -> u64 {
        SPECIAL | (u64::from(kind as u8) << 32) | (nbytes as u64 & 0xFFFF_FFFF)
    }

    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    fn decode(&self, v: u64) -> Slot {
        if v & SPECIAL == 0 {
            Slot::Stored(v)
        } else if v & MEM == MEM {
            Slot::Mem(self.pool[(v & 0xFFFF_FFFF) as usize].clone().expect("live pool entry"))
        } else {
            Slot::Special { kind: kind_from((v >> 32) as u8), nbytes: (v & 0xFFFF_FFFF) as usize }
        }
    }

    /// Chunk `i` (cheap: an `Arc` clone for chunks in memory).
    pub(crate) fn get(&self, i: usize) -> Slot {
        self.decode(self.v[i])
    }

    /// Borrow chunk `i` if it is in memory.
    pub(crate) fn mem(&self, i: usize) -> Option<&Arc<[u8]>> {
        let v = self.v[i];
        if v & MEM == MEM {
            self.pool[(v & 0xFFFF_FFFF) as usize].as_ref()
        } else {
            None
        }
    }

    pub(crate) fn is_special(&self, i: usize) -> bool {
        self.v[i] & MEM == SPECIAL
    }

    pub(crate) fn count_special(&self) -> usize {
        self.v.iter().filter(|&&v| v & MEM == SPECIAL).count()
    }

    fn encode(&mut self, s: Slot) -> u64 {
        match s {
            Slot::Stored(p) => Self::stored(p),
            Slot::Special { kind, nbytes } => Self::special(kind, nbytes),
            Slot::Mem(b) => {
                let k = match self.free.pop() {
                    Some(k) => {
                        self.pool[k as usize] = Some(b);
                        k
                    }
                    None => {
                        self.pool.push(Some(b));
                        (self.pool.len() - 1) as u32
                    }
                };
                MEM | u64::from(k)
            }
        }
    }

    fn release(&mut self, v: u64) {
        if v & MEM == MEM {
            let k = (v & 0xFFFF_FFFF) as u32;
            self.pool[k as usize] = None;
            self.free.push(k);
            if self.free.len() == self.pool.len() {
                self.pool.clear();
                self.free.clear();
            }
        }
    }

    fn touch(&mut self, i: usize) {
        let b = i / BLOCK_ENTRIES;
        if self.track && !matches!(self.dirty.from, Some(f) if b >= f) && self.dirty.blocks.last() != Some(&b) {
            self.dirty.blocks.push(b);
        }
    }

    fn touch_from(&mut self, i: usize) {
        if self.track {
            let b = i / BLOCK_ENTRIES;
            self.dirty.from = Some(self.dirty.from.map_or(b, |f| f.min(b)));
        }
    }

    fn record(&mut self, e: impl FnOnce(&Self) -> Edit) {
        if let Some(mut j) = self.journal.take() {
            j.push(e(self));
            self.journal = Some(j);
        }
    }

    /// Start recording edits (a change that may be rolled back).
    pub(crate) fn begin(&mut self) {
        self.journal = Some(Vec::new());
        (self.born, self.shifted) = (self.v.len(), false);
        self.recorded.clear();
    }

    /// Keep the edits since [`begin`](Self::begin).
    pub(crate) fn commit(&mut self) {
        self.journal = None;
        self.recorded.clear();
    }

    /// Undo the edits since [`begin`](Self::begin) (the touched index blocks stay dirty).
    pub(crate) fn rollback(&mut self) {
        let Some(j) = self.journal.take() else { return };
        self.recorded.clear();
        for e in j.into_iter().rev() {
            match e {
                Edit::Set(i, old) => self.set(i, old),
                Edit::Push => {
                    let i = self.v.len() - 1;
                    self.remove(i);
                }
                Edit::Insert(i) => self.remove(i),
                Edit::Remove(i, old) => self.insert(i, old),
            }
        }
    }

    pub(crate) fn set(&mut self, i: usize, s: Slot) {
        // Undo restores the earliest record of a position (records replay in reverse), so
        // while positions stay put only the first set of each needs one.
        if self.journal.is_some() && (self.shifted || self.recorded.insert(i)) {
            self.record(|me| Edit::Set(i, me.get(i)));
        }
        self.put(i, s);
    }

    /// [`set`](Self::set) for a chunk just written to unreferenced space. One appended by
    /// the change in progress needs no undo record (undoing its append removes it), nor does
    /// one replaced earlier in the change (its old value is recorded); such a record would
    /// keep the staged bytes in memory until the commit: a batch writing a large array to a
    /// file would hold all of it.
    pub(crate) fn set_staged(&mut self, i: usize, s: Slot) {
        if self.journal.is_some() && i >= self.born && !self.shifted {
            self.put(i, s);
        } else {
            self.set(i, s);
        }
    }

    fn put(&mut self, i: usize, s: Slot) {
        let v = self.encode(s);
        let old = std::mem::replace(&mut self.v[i], v);
        self.release(old);
        self.touch(i);
    }

    pub(crate) fn push(&mut self, s: Slot) {
        self.record(|_| Edit::Push);
        let v = self.encode(s);
        self.v.push(v);
        self.touch(self.v.len() - 1);
    }

    pub(crate) fn insert(&mut self, i: usize, s: Slot) {
        self.record(|_| Edit::Insert(i));
        self.shifted = true;
        let v = self.encode(s);
        self.v.insert(i, v);
        self.touch_from(i);
    }

    pub(crate) fn remove(&mut self, i: usize) {
        self.record(|me| Edit::Remove(i, me.get(i)));
        self.shifted = true;
        let old = self.v.remove(i);
        self.release(old);
        self.touch_from(i);
    }

    /// Start or stop recording changed index blocks (forgets what was recorded).
    pub(crate) fn set_tracking(&mut self, on: bool) {
        self.track = on;
        self.dirty = Dirty::default();
    }

    /// Index blocks changed since the last call (sorted, deduplicated).
    pub(crate) fn take_dirty(&mut self) -> Dirty {
        let mut d = std::mem::take(&mut self.dirty);
        d.blocks.sort_unstable();
        d.blocks.dedup();
        if let Some(f) = d.from {
            d.blocks.retain(|&b| b < f);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_an_appended_chunk_lets_its_bytes_go() {
        let mut s = Slots::from_values(vec![Slots::stored(7)]);
        s.begin();
        let bytes: Arc<[u8]> = Arc::from(vec![1u8; 64]);
        s.push(Slot::Mem(bytes.clone()));
        assert_eq!(Arc::strong_count(&bytes), 2);
        s.set_staged(1, Slot::Stored(100));
        assert_eq!(Arc::strong_count(&bytes), 1, "the undo journal still holds the staged chunk");
        s.rollback();
        assert_eq!(s.len(), 1);
        assert!(matches!(s.get(0), Slot::Stored(7)));
    }

    #[test]
    fn staging_keeps_undo_records_for_older_or_moved_chunks() {
        let old: Arc<[u8]> = Arc::from(vec![2u8; 8]);
        let mut s = Slots::default();
        s.push(Slot::Mem(old.clone()));
        s.begin();
        s.set_staged(0, Slot::Stored(5)); // a chunk from before the change
        s.insert(0, Slot::Stored(9));
        s.push(Slot::Stored(11));
        s.set_staged(2, Slot::Stored(12)); // positions moved: recorded
        s.rollback();
        assert_eq!(s.len(), 1);
        assert!(matches!(s.get(0), Slot::Mem(b) if b[..] == old[..]));
    }

    #[test]
    fn a_position_set_twice_is_recorded_once() {
        let mut s = Slots::from_values(vec![Slots::stored(7), Slots::stored(8)]);
        s.begin();
        let first: Arc<[u8]> = Arc::from(vec![1u8; 16]);
        s.set(1, Slot::Mem(first.clone()));
        s.set(1, Slot::Stored(40)); // staged: the replaced bytes are not kept for undo
        assert_eq!(Arc::strong_count(&first), 1, "the journal holds an intermediate value");
        s.insert(0, Slot::Stored(50));
        s.set(2, Slot::Stored(60)); // positions moved: recorded again
        s.rollback();
        assert_eq!(s.len(), 2);
        assert!(matches!((s.get(0), s.get(1)), (Slot::Stored(7), Slot::Stored(8))));
    }
}
