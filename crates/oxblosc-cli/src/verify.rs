//! `verify`: decode every chunk and check its checksum; exit 1 naming the damaged chunks.

use std::path::Path;

use oxblosc::chunk::DParams;
use oxblosc::frame::{self, ChecksumStatus, Mode, Verdict};

use crate::args::VerifyArgs;
use crate::error::{CliError, Result, EXIT_MISMATCH};
use crate::progress::Progress;
use crate::raw::{looks_like_frame, threads};

/// Whether every file is intact (damage is reported on stderr as it is found).
pub fn verify(a: &VerifyArgs) -> Result<bool> {
    let mut all_ok = true;
    for f in &a.files {
        all_ok &= verify_one(f, a)?;
    }
    Ok(all_ok)
}

fn report(e: CliError) {
    eprintln!("oxblosc: {e}");
}

fn verify_one(path: &Path, a: &VerifyArgs) -> Result<bool> {
    let dp = DParams { nthreads: threads(&a.common) };
    if crate::blp::is_blp(path) {
        return crate::blp::verify(path, dp.nthreads, a.common.quiet);
    }
    if path.is_file() && !looks_like_frame(path) {
        // Not Blosc at all is an error (exit 2), not damage (exit 1).
        let bytes = crate::sniff::read_chunk_file(path)?;
        return match oxblosc::chunk::decompress(&bytes, &dp) {
            Ok(out) => {
                if !a.common.quiet {
                    println!("ok: single chunk, {} bytes decoded, no checksum ({})", out.len(), path.display());
                }
                Ok(true)
            }
            Err(e) => {
                report(CliError { code: EXIT_MISMATCH, ..CliError::chunk_layer(e, path) });
                Ok(false)
            }
        };
    }
    crate::sniff::require_frame(path)?;
    let mut s = frame::open(path, Mode::Read).map_err(|e| CliError::frame(e, path))?;
    s.set_dparams(dp);
    let mut bad = Vec::new();
    let status = s.checksums();
    let mut checked = 0usize;
    let mut unchecked = 0usize;
    let mut decoded = 0u64;
    let mut progress = Progress::new("verify", Some(s.nbytes()), a.common.quiet);
    for i in 0..s.nchunks() {
        let r = match &status {
            ChecksumStatus::Unreadable(_) => s.decompress_chunk(i).map(|v| (Verdict::NoChecksum, v.len())),
            _ => s.verify_chunk(i),
        };
        let nbytes = match r {
            Ok((v, n)) => {
                if v == Verdict::Ok {
                    checked += 1;
                } else {
                    unchecked += 1;
                }
                n as u64
            }
            Err(e) => {
                report(CliError::frame(e, path));
                bad.push(i);
                0
            }
        };
        decoded += nbytes;
        progress.add(nbytes);
    }
    progress.finish();
    let mut ok = bad.is_empty();
    if let ChecksumStatus::Unreadable(r) = &status {
        report(CliError::at(format!("checksum vlmetalayer unreadable: {r}"), path));
        ok = false;
    }
    if let Some((n, c)) = s.checksum_count_mismatch() {
        report(CliError::at(format!("{n} checksums for {c} chunks: chunks were removed"), path));
        ok = false;
    }
    if ok && decoded != s.nbytes() {
        report(CliError::at(format!("chunks hold {decoded} bytes, the frame header says {}", s.nbytes()), path));
        ok = false;
    }
    if !a.common.quiet {
        if ok {
            let note = match status {
                ChecksumStatus::Off => " (file has no checksums)".to_string(),
                _ if unchecked > 0 => format!(", {unchecked} without checksum (appended by another writer)"),
                _ => String::new(),
            };
            println!("ok: {} chunks decoded, {checked} checksums match{note} ({})", s.nchunks(), path.display());
        } else {
            let list: Vec<String> = bad.iter().map(usize::to_string).collect();
            println!("FAILED: damaged chunks [{}] ({})", list.join(", "), path.display());
        }
    }
    Ok(ok)
}
