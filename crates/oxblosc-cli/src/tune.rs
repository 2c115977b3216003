//! `oxblosc tune FILE`: which compression parameters suit the data in FILE (a raw file, an
//! `.npy`, or a frame / `.b2nd`, whose chunks are decoded first), by the engine's tuner
//! (`oxblosc::tune`), with the `compress` options that select the pick.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use oxblosc::chunk::format::codec_name;
use oxblosc::frame::{self, Mode};
use oxblosc::tune::{self, split_name, Objective, TuneOptions};

use crate::args::TuneArgs;
use crate::error::{CliError, Result};

/// At most this many bytes of data are read (the tuner samples 4 MiB of them).
const LIMIT: u64 = 256 << 20;
/// At most this many chunks of a frame are decoded, spread evenly over it.
const MAX_CHUNKS: usize = 16;

pub fn tune(a: &TuneArgs) -> Result<()> {
    let objective: Objective = a.objective.parse().map_err(CliError::new)?;
    let (data, file_typesize) = load(&a.file)?;
    let typesize = a.typesize.or(file_typesize).unwrap_or(8);
    let opts = TuneOptions {
        objective,
        time_budget: Duration::from_secs_f64(a.time_budget.max(0.0)),
        typesize,
        allow_lossy: a.allow_lossy,
        seed: a.seed,
    };
    let r = tune::tune(&data, &opts).map_err(|e| CliError::at(e.to_string(), &a.file))?;
    print!("{}", r.table());
    println!(
        "objective {}: {} points on {:.1} MiB in {:.2} s{}",
        a.objective.to_ascii_lowercase(),
        r.measured.len(),
        r.sample_bytes as f64 / (1 << 20) as f64,
        r.elapsed.as_secs_f64(),
        if r.truncated { " (time budget reached)" } else { "" }
    );
    let c = r.best.candidate;
    let mut opts = format!("--codec {} --clevel {} --typesize {typesize}", codec_name(c.codec), c.clevel);
    for (f, m) in c.filter_names().split('+').zip(c.filters.iter().zip(&c.filters_meta).filter(|(&f, _)| f != 0)) {
        opts += &match (f, m) {
            ("none", _) => " --filter none".to_string(),
            ("bytedelta", (_, &meta)) => format!(" --filter bytedelta:{meta}"),
            (name, _) => format!(" --filter {name}"),
        };
    }
    if c.filters.iter().all(|&f| f == 0) {
        opts += " --filter none";
    }
    if c.blocksize > 0 {
        opts += &format!(" --block-size {}K", c.blocksize >> 10);
    }
    if split_name(c.splitmode) != "auto" {
        opts += &format!(" --split {}", split_name(c.splitmode));
    }
    println!("compress options: {opts}");
    Ok(())
}

/// The data to tune on and the item size the file records, if any.
fn load(path: &Path) -> Result<(Vec<u8>, Option<usize>)> {
    if crate::raw::looks_like_frame(path) {
        let s = frame::open(path, Mode::Read).map_err(|e| CliError::frame(e, path))?;
        let n = s.nchunks();
        let step = n.div_ceil(MAX_CHUNKS).max(1);
        let mut data = Vec::new();
        for i in (0..n).step_by(step) {
            if data.len() as u64 >= LIMIT {
                break;
            }
            data.extend(s.decompress_chunk(i).map_err(|e| CliError::frame(e, path))?);
        }
        return Ok((data, Some(s.typesize())));
    }
    let mut f = std::fs::File::open(path).map_err(|e| CliError::io(e, path))?;
    let typesize = if crate::npy::is_npy(path) {
        let h = crate::npy::read_header(&mut f, path)?;
        Some(h.itemsize().filter(|&t| (1..=255).contains(&t)).unwrap_or(1))
    } else {
        None
    };
    let mut data = Vec::new();
    f.take(LIMIT).read_to_end(&mut data).map_err(|e| CliError::io(e, path))?;
    Ok((data, typesize))
}
