//! Read-only memory map of a frame file (`mmap_mode="r"`).
//!
//! Chunks are then borrowed straight from the page cache: opening touches only the pages
//! holding the header, trailer and offsets index, and `get_chunk` returns a slice of the map
//! without copying. Hazard: if another process truncates or rewrites the file in place while
//! it is mapped, reading the vanished pages raises SIGBUS (process abort) or shows bytes of a
//! newer state. So map only frames nobody writes while they are open; locking cannot protect
//! a map (readers touch pages without taking the lock), which is why `locking` and `mmap` are
//! refused together, as in python-blosc2. Our own writers never shrink a file below a
//! committed state except when closing (finalize) or recovering, and compaction replaces the
//! file by rename (a map keeps the old inode).

use std::fs::File;
use std::ops::Deref;

/// A file mapped read-only.
#[derive(Debug)]
pub(crate) struct Map {
    map: memmap2::Mmap,
}

impl Map {
    pub(crate) fn open(file: &File) -> std::io::Result<Map> {
        // SAFETY: the map is read-only and private to this handle; the file may be changed by
        // another process while mapped, which the module docs spell out (SIGBUS on truncation,
        // torn bytes on in-place rewrites) and which the caller accepts by asking for mmap.
        // Rust never sees a reference into the map outlive `Map` (slices borrow `&self`).
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(Map { map })
    }
}

impl Deref for Map {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}
