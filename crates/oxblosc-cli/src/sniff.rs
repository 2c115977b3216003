//! Files that are not Blosc at all are named as what they are, before anything is decoded or
//! read whole (a 10 GB `.h5` given by mistake costs 32 bytes of reading).

use std::io::Read;
use std::path::Path;

use oxblosc::chunk::ChunkHeader;
use oxblosc::frame::SPARSE_INDEX;

use crate::error::{CliError, Result};

/// Largest file taken as a single chunk (a chunk's sizes are 31-bit, plus its header).
const MAX_CHUNK_FILE: u64 = (1 << 31) + 64;

/// What a file starting with `head` is, when it is a well-known non-Blosc format.
pub fn known_format(head: &[u8]) -> Option<&'static str> {
    let table: [(&[u8], &str); 10] = [
        (b"\x93NUMPY", "a NumPy .npy file (oxblosc compress turns it into a .b2nd)"),
        (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
        (b"blpk", "a Bloscpack .blp file (decompress, info, verify and compress read it)"),
        (b"\x28\xb5\x2f\xfd", "a zstd stream (use zstd -d)"),
        (b"\x1f\x8b", "a gzip stream (use gzip -d)"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\xfd7zXZ\x00", "an xz stream (use xz -d)"),
        (b"BZh", "a bzip2 stream (use bzip2 -d)"),
        (b"\x04\x22\x4d\x18", "an lz4 frame (use lz4 -d)"),
        (b"\x89PNG", "a PNG image"),
    ];
    table.iter().find(|(m, _)| head.starts_with(m)).map(|(_, what)| *what)
}

/// The error for a file that is neither a Blosc2 frame nor a chunk.
pub fn not_blosc(path: &Path, head: &[u8], why: &str) -> CliError {
    not_a(path, head, "a Blosc2 frame or chunk", why)
}

fn not_a(path: &Path, head: &[u8], expected: &str, why: &str) -> CliError {
    let what = match known_format(head) {
        Some(k) => format!("not {expected}: this is {k}"),
        None => format!("not {expected} (no frame magic; {why})"),
    };
    CliError::at(what, path)
}

/// Refuse, naming what it is, a path that must be a frame (a file with the frame magic, or a
/// sparse frame directory) and is not. A missing path is left to the caller's own error.
pub fn require_frame(path: &Path) -> Result<()> {
    if path.is_dir() {
        if !path.join(SPARSE_INDEX).is_file() {
            return Err(CliError::at(format!("not a sparse Blosc2 frame: the directory has no {SPARSE_INDEX}"), path));
        }
        return Ok(());
    }
    if !path.is_file() || crate::raw::looks_like_frame(path) {
        return Ok(());
    }
    let mut head = Vec::with_capacity(32);
    let f = std::fs::File::open(path).map_err(|e| CliError::io(e, path))?;
    f.take(32).read_to_end(&mut head).map_err(|e| CliError::io(e, path))?;
    Err(not_a(path, &head, "a Blosc2 frame", "a chunk file or other data"))
}

/// A file that is not a frame, read as one chunk: refused as "not Blosc" when its start is
/// not a chunk header, and never read whole when it cannot be one chunk.
pub fn read_chunk_file(path: &Path) -> Result<Vec<u8>> {
    let mut f = std::fs::File::open(path).map_err(|e| CliError::io(e, path))?;
    let len = f.metadata().map_err(|e| CliError::io(e, path))?.len();
    let mut head = Vec::with_capacity(32);
    (&mut f).take(32).read_to_end(&mut head).map_err(|e| CliError::io(e, path))?;
    // 32 bytes hold any chunk header; "truncated" only means the chunk goes on past them.
    match ChunkHeader::parse(&head) {
        Ok(_) | Err(oxblosc::chunk::Error::Truncated { .. }) => {}
        Err(e) => return Err(not_blosc(path, &head, &format!("not a chunk header: {e}"))),
    }
    if known_format(&head).is_some() {
        return Err(not_blosc(path, &head, ""));
    }
    if len > MAX_CHUNK_FILE {
        return Err(not_blosc(path, &head, &format!("{len} bytes is too large for one chunk")));
    }
    let mut bytes = head;
    f.read_to_end(&mut bytes).map_err(|e| CliError::io(e, path))?;
    Ok(bytes)
}
