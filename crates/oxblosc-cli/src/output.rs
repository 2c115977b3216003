//! Where results go: never over an existing path without `-f`, and always through a temporary
//! name in the target's directory renamed into place at the end, so an interrupted run leaves
//! nothing under the final name. Temporary paths are registered with [`crate::interrupt`] so
//! Ctrl-C or SIGTERM removes them too (only SIGKILL or a power cut leaves a `.NAME.oxtmp-PID`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{CliError, Result};

/// A file or directory being written under a temporary name.
pub struct Staged {
    final_path: PathBuf,
    tmp: PathBuf,
    committed: bool,
}

/// Refuse an existing `path` unless `force`.
pub fn check_overwrite(path: &Path, force: bool) -> Result<()> {
    if path.symlink_metadata().is_ok() && !force {
        return Err(CliError::at("output exists; use -f to overwrite", path));
    }
    Ok(())
}

impl Staged {
    pub fn new(final_path: &Path, force: bool) -> Result<Staged> {
        check_overwrite(final_path, force)?;
        let name = final_path.file_name().ok_or_else(|| CliError::at("output has no file name", final_path))?;
        let tmp = final_path.with_file_name(format!(".{}.oxtmp-{}", name.to_string_lossy(), std::process::id()));
        remove_any(&tmp);
        crate::interrupt::register(&tmp);
        Ok(Staged { final_path: final_path.to_path_buf(), tmp, committed: false })
    }

    /// The temporary path to write to.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Move the finished output into place (replacing what `-f` allowed to replace).
    pub fn commit(mut self) -> Result<()> {
        let f = &self.final_path;
        let replacing_dir = f.is_dir() && !f.is_symlink();
        if replacing_dir || (f.exists() && self.tmp.is_dir()) {
            // rename() cannot replace a directory (or a file by one): remove it first.
            if replacing_dir { fs::remove_dir_all(f) } else { fs::remove_file(f) }.map_err(|e| CliError::io(e, f))?;
        }
        fs::rename(&self.tmp, f).map_err(|e| CliError::io(e, f))?;
        self.committed = true;
        crate::interrupt::unregister(&self.tmp);
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            remove_any(&self.tmp);
            crate::interrupt::unregister(&self.tmp);
        }
    }
}

pub(crate) fn remove_any(p: &Path) {
    if p.is_dir() {
        let _ = fs::remove_dir_all(p);
    } else {
        let _ = fs::remove_file(p);
    }
}

/// A scratch file in the system temp directory, removed when dropped (stdin frames,
/// frames built for stdout).
pub struct Scratch(pub PathBuf);

impl Scratch {
    fn path_for(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("oxblosc-{tag}-{}.b2frame", std::process::id()))
    }

    pub fn new(tag: &str) -> Scratch {
        let p = Scratch::path_for(tag);
        remove_any(&p);
        crate::interrupt::register(&p);
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_any(&self.0);
        crate::interrupt::unregister(&self.0);
    }
}

/// A message as the user should see it: temporary names (`.NAME.oxtmp-PID`, the scratch
/// copies of stdin/stdout) replaced by what they stand for.
pub fn public(msg: &str) -> String {
    let mut out = msg.to_string();
    for (tag, name) in [("stdin", "<stdin>"), ("stdout", "<stdout>")] {
        let scratch = Scratch::path_for(tag);
        out = out.replace(&*scratch.to_string_lossy(), name);
    }
    let marker = format!(".oxtmp-{}", std::process::id());
    while let Some(at) = out.find(&marker) {
        // The component starts after the last separator before the marker, with a '.'.
        let start = out[..at].rfind(['/', '(', ' ', '"', '\'']).map_or(0, |i| i + 1);
        let dot = out[start..].starts_with('.');
        out.replace_range(at..at + marker.len(), "");
        if dot {
            out.remove(start);
        }
    }
    out
}
