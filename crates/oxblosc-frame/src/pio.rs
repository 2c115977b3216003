//! Positioned reads and writes of whole buffers (the lock file, frame files).

use std::fs::File;

#[cfg(unix)]
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, pos)
}

#[cfg(windows)]
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut pos: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, pos) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                pos += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(unix)]
pub(crate) fn write_all_at(file: &File, buf: &[u8], pos: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(buf, pos)
}

#[cfg(windows)]
pub(crate) fn write_all_at(file: &File, mut buf: &[u8], mut pos: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, pos) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                pos += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether `path` still names the open `file` (not removed, nor replaced by a new file, e.g.
/// a frame created again at the same path while an old handle is still open).
#[cfg(unix)]
pub(crate) fn names_file(path: &std::path::Path, file: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (file.metadata()?, std::fs::metadata(path)?);
    Ok((a.dev(), a.ino()) == (b.dev(), b.ino()))
}

/// Windows: a file open here cannot be removed or replaced by another one.
#[cfg(windows)]
pub(crate) fn names_file(_path: &std::path::Path, _file: &File) -> std::io::Result<bool> {
    Ok(true)
}
