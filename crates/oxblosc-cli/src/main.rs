//! `oxblosc`: the command-line tool. Raw files <-> `.b2frame` (contiguous or sparse), `.npy`
//! <-> `.b2nd`, appends, `info` and `verify` with per-chunk checksums.
//!
//! Errors are one line `oxblosc: <what> (<file>, chunk N)`; exit codes: 0 ok, 1 verify
//! mismatch, 2 any error.
#![forbid(unsafe_code)]

mod args;
mod blp;
mod error;
mod habits;
mod info;
mod interrupt;
mod layout;
mod node;
mod npy;
mod output;
mod params;
mod progress;
mod raw;
mod sniff;
mod stream;
mod tune;
mod verify;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use oxblosc::chunk::{self, format::codec_name, ChunkHeader, DParams};

use args::{Cli, Cmd};
use error::{CliError, EXIT_ERROR, EXIT_MISMATCH};

fn main() -> ExitCode {
    interrupt::install();
    // Compiled plugins of installed packages (or OXBLOSC_PLUGIN_PATH), loaded by id on first need.
    oxblosc::plugins::enable();
    let runs = match habits::rewrite(std::env::args_os().collect()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("oxblosc: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    for argv in runs {
        let code = run(argv);
        if code != 0 {
            return ExitCode::from(code);
        }
    }
    ExitCode::SUCCESS
}

/// One command line: its exit code.
fn run(argv: Vec<std::ffi::OsString>) -> u8 {
    let mut cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { EXIT_ERROR } else { 0 };
            }
            // One line: clap's first message line, without its "error: " prefix.
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("oxblosc: {first} (see oxblosc --help)");
            return EXIT_ERROR;
        }
    };
    let r = args::settle_outputs(&mut cli.cmd).and_then(|()| dispatch(&cli.cmd));
    match r {
        Ok(true) => 0,
        Ok(false) => EXIT_MISMATCH,
        Err(e) => {
            eprintln!("oxblosc: {}", output::public(&e.to_string()));
            e.code
        }
    }
}

/// Run a parsed command: `Ok(false)` when verify found damage.
fn dispatch(cmd: &Cmd) -> Result<bool, CliError> {
    match cmd {
        Cmd::Compress(a) => {
            let input = Path::new(&a.input);
            if a.input != "-" && npy::is_npy(input) {
                npy::npy_to_b2nd(a, input)?
            } else if !(a.input != "-" && blp::is_blp(input) && blp::array_to_b2nd(a, input)?) {
                raw::compress(a)?
            }
            args::remove_input(&a.input, a.rm)?;
        }
        Cmd::Decompress(a) => {
            raw::decompress(a)?;
            args::remove_input(&a.input, a.rm)?;
        }
        Cmd::Append(a) => {
            sniff::require_frame(&a.file)?;
            raw::append(a)?
        }
        Cmd::Info(a) => info::info(a)?,
        Cmd::Tune(a) => tune::tune(a)?,
        Cmd::Verify(a) => return verify::verify(a),
        Cmd::ChunkInfo { file } => chunk_file(file, chunk_info)?,
        Cmd::ChunkCheck { file } => chunk_file(file, chunk_check)?,
    }
    Ok(true)
}

fn chunk_file(file: &Path, f: fn(&[u8]) -> Result<String, chunk::Error>) -> Result<(), CliError> {
    let bytes = sniff::read_chunk_file(file)?;
    let text = f(&bytes).map_err(|e| CliError::chunk_layer(e, file))?;
    print!("{text}");
    Ok(())
}

fn chunk_info(bytes: &[u8]) -> Result<String, chunk::Error> {
    let h = ChunkHeader::parse(bytes)?;
    let codec = h.compcode().map(|c| if c == 1 && h.udcompcode == 2 { "lz4hc" } else { codec_name(c) });
    let ratio = if h.cbytes > 0 { h.nbytes as f64 / h.cbytes as f64 } else { 0.0 };
    Ok(format!(
        "format version  {}\nheader          {} bytes\ncodec           {}\nfilters         {:?} (meta {:?})\n\
         typesize        {}\nnbytes          {}\ncbytes          {}\nratio           {:.2}\n\
         blocksize       {}\nblocks          {}\nsplit           {}\nspecial         {:?}\nmemcpyed        {}\n",
        h.version,
        h.header_len(),
        codec.unwrap_or("none"),
        h.filters,
        h.filters_meta,
        h.typesize,
        h.nbytes,
        h.cbytes,
        ratio,
        h.blocksize,
        h.nblocks(),
        !h.dont_split(),
        h.special()?,
        h.is_memcpyed(),
    ))
}

fn chunk_check(bytes: &[u8]) -> Result<String, chunk::Error> {
    let out = chunk::decompress(bytes, &DParams::default())?;
    Ok(format!("ok: {} bytes decoded\n", out.len()))
}
