//! Contiguous frame files this process has open for writing, counted by (device, inode).
//!
//! Closing a writer tidies the file (moves the index next to the last chunk and cuts the
//! tail, or rewrites the file and renames it over the path), and opening one for append cuts
//! bytes past `frame_len`. Another writer of the same file in this process would lose its
//! ground: its spare index slot cut, or its file renamed away so that its later writes went
//! to an unlinked inode, silently. So both are skipped while another writer of the same file
//! is open here (`t = open(p, "a")` run twice keeps the first handle alive while the second
//! opens). Other processes need locking, as documented.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Mutex;

type Key = (u64, u64);

static OPEN: Mutex<Option<HashMap<Key, usize>>> = Mutex::new(None);

fn key_of(file: &File) -> Option<Key> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

fn count(key: Key) -> usize {
    OPEN.lock().map(|m| m.as_ref().and_then(|m| m.get(&key).copied()).unwrap_or(0)).unwrap_or(0)
}

/// Whether a writer of `file` is open in this process.
pub(crate) fn has_writer(file: &File) -> bool {
    key_of(file).is_some_and(|k| count(k) > 0)
}

/// One open writer of a file; counted until dropped.
#[derive(Debug)]
pub(crate) struct LiveWriter(Option<Key>);

impl LiveWriter {
    pub(crate) fn new(file: &File) -> LiveWriter {
        let key = key_of(file);
        if let (Some(k), Ok(mut m)) = (key, OPEN.lock()) {
            *m.get_or_insert_with(HashMap::new).entry(k).or_insert(0) += 1;
        }
        LiveWriter(key)
    }

    /// Whether another writer of the same file is open in this process.
    pub(crate) fn others(&self) -> bool {
        self.0.is_some_and(|k| count(k) > 1)
    }
}

impl Drop for LiveWriter {
    fn drop(&mut self) {
        if let (Some(k), Ok(mut m)) = (self.0, OPEN.lock()) {
            if let Some(m) = m.as_mut() {
                if let Some(n) = m.get_mut(&k) {
                    *n -= 1;
                    if *n == 0 {
                        m.remove(&k);
                    }
                }
            }
        }
    }
}
