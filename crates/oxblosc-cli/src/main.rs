//! `oxblosc`: the command-line tool (skeleton).
//!
//! For now it inspects single chunks; frames, `.b2nd`, compress/decompress/append/verify
//! come with the frame layer. Errors are one line `oxblosc: <what> (<file>)`; exit codes:
//! 0 ok, 1 verify mismatch, 2 any error.

use std::process::ExitCode;

use oxblosc::chunk::{self, format::codec_name, ChunkHeader, DParams};

const HELP: &str = "\
oxblosc - Blosc2-compatible compression for numerical data

Usage:
  oxblosc chunk-info FILE     describe one Blosc/Blosc2 chunk (header, codec, filters, sizes)
  oxblosc chunk-check FILE    decode one chunk and report its size (exit 2 if it is corrupt)
  oxblosc --version | --help

Examples:
  oxblosc chunk-info data.cdata
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["-h" | "--help" | "help"] => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        ["-V" | "--version"] => {
            println!("oxblosc {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        ["chunk-info", file] => run(file, chunk_info),
        ["chunk-check", file] => run(file, chunk_check),
        _ => {
            eprintln!("oxblosc: unknown command or wrong arguments: {} (see oxblosc --help)", args.join(" "));
            ExitCode::from(2)
        }
    }
}

fn run(file: &str, f: fn(&[u8]) -> Result<String, chunk::Error>) -> ExitCode {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("oxblosc: cannot read: {e} ({file})");
            return ExitCode::from(2);
        }
    };
    match f(&bytes) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("oxblosc: {e} ({file})");
            ExitCode::from(2)
        }
    }
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
