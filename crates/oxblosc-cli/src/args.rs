//! Command-line syntax (clap derive): the commands, their options and `--help` examples.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub const EXAMPLES: &str = "\
Examples:
  oxblosc compress data.bin                      # -> data.bin.b2frame
  oxblosc compress --codec lz4 --filter shuffle --filter bytedelta data.f32 out.b2frame
  oxblosc compress array.npy                     # -> array.b2nd (dtype, shape, order kept)
  cat data.bin | oxblosc compress - - > data.b2frame
  oxblosc decompress data.bin.b2frame            # -> data.bin
  oxblosc append data.bin.b2frame more.bin
  oxblosc info --chunks data.bin.b2frame
  oxblosc verify data.bin.b2frame                # exit 1 on a damaged chunk

Exit status: 0 ok, 1 verify found damage, 2 any error (one line on stderr).";

#[derive(Parser, Debug)]
#[command(
    name = "oxblosc",
    version,
    about = "Blosc2-compatible compression for numerical data: files <-> .b2frame / .b2nd",
    after_help = EXAMPLES,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Compress a raw file into a .b2frame (or a sparse frame directory), an .npy into a .b2nd
    #[command(after_help = "\
Examples:
  oxblosc compress data.bin                       # -> data.bin.b2frame
  oxblosc compress -f --codec zstd --clevel 9 data.bin data.b2frame
  oxblosc compress --typesize 4 --filter shuffle --filter bytedelta temps.f32
  oxblosc compress --filter trunc_prec:12 --filter shuffle --typesize 8 doubles.bin
  oxblosc compress --sparse data.bin data.b2frame  # a directory with one file per chunk
  oxblosc compress array.npy                      # -> array.b2nd
  producer | oxblosc compress - out.b2frame")]
    Compress(CompressArgs),
    /// Decompress a .b2frame / sparse frame / single chunk to raw bytes, a .b2nd to .npy
    #[command(after_help = "\
Examples:
  oxblosc decompress data.bin.b2frame             # -> data.bin
  oxblosc decompress data.b2frame out.bin         # checksums checked when present
  oxblosc decompress --no-verify data.b2frame out.bin
  oxblosc decompress data.b2frame - | consumer
  oxblosc decompress array.b2nd                   # -> array.npy")]
    Decompress(DecompressArgs),
    /// Append raw data to an existing frame (same codec and parameters; checksums kept)
    #[command(after_help = "\
Examples:
  oxblosc append data.b2frame more.bin
  producer | oxblosc append data.b2frame -")]
    Append(AppendArgs),
    /// Describe a chunk, frame, sparse frame or b2nd array (ours or python-blosc2's)
    #[command(after_help = "\
Examples:
  oxblosc info data.b2frame
  oxblosc info --chunks array.b2nd
  oxblosc info --json data.b2frame | jq .ratio")]
    Info(InfoArgs),
    /// Decode every chunk and check its checksum: exit 1 naming the damaged chunks
    #[command(after_help = "\
Examples:
  oxblosc verify data.b2frame && echo intact
  oxblosc verify -q archive/*.b2frame")]
    Verify(VerifyArgs),
    /// Describe one Blosc/Blosc2 chunk file (header, codec, filters, sizes)
    #[command(after_help = "Example:\n  oxblosc chunk-info data.cdata")]
    ChunkInfo { file: PathBuf },
    /// Decode one chunk file and report its size (exit 2 if it is corrupt)
    #[command(after_help = "Example:\n  oxblosc chunk-check data.cdata")]
    ChunkCheck { file: PathBuf },
}

#[derive(Args, Debug, Clone)]
pub struct CodecArgs {
    /// blosclz, lz4, lz4hc, zlib or zstd
    #[arg(long, default_value = "zstd")]
    pub codec: String,
    /// Compression level 0-9
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=9))]
    pub clevel: u8,
    /// Filter, repeatable, applied in the order given: shuffle, bitshuffle, delta,
    /// bytedelta[:STREAMS], trunc_prec:BITS, int_trunc:BITS, none, or ID[:META]
    /// [default: shuffle]
    #[arg(long = "filter", value_name = "NAME[:META]")]
    pub filters: Vec<String>,
    /// Item size in bytes (shuffle granularity) [default: 8, or the .npy itemsize]
    #[arg(long)]
    pub typesize: Option<usize>,
    /// Uncompressed bytes per chunk (K/M/G suffixes) [default: 4M]
    #[arg(long, value_name = "SIZE")]
    pub chunk_size: Option<String>,
    /// Bytes per block inside a chunk (K/M/G suffixes) [default: automatic]
    #[arg(long, value_name = "SIZE")]
    pub block_size: Option<String>,
    /// Split blocks into per-byte streams: always, never, auto, forward
    #[arg(long, default_value = "auto")]
    pub split: String,
    /// Store per-chunk checksums (the default)
    #[arg(long, overrides_with = "no_checksum")]
    pub checksum: bool,
    /// Do not store checksums
    #[arg(long)]
    pub no_checksum: bool,
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Worker threads [default: all cores]
    #[arg(long, short = 't')]
    pub threads: Option<usize>,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct CompressArgs {
    /// File to compress, `-` for stdin
    pub input: String,
    /// Output [default: INPUT.b2frame, INPUT.b2nd for .npy; stdout when INPUT is `-`]
    pub output: Option<String>,
    #[command(flatten)]
    pub codec: CodecArgs,
    /// Write a sparse frame (a directory: index + one file per chunk)
    #[arg(long)]
    pub sparse: bool,
    /// Overwrite an existing output
    #[arg(long, short = 'f')]
    pub force: bool,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct DecompressArgs {
    /// .b2frame / .b2nd file, sparse frame directory or chunk; `-` for stdin
    pub input: String,
    /// Output [default: INPUT without .b2frame, .b2nd -> .npy; stdout when INPUT is `-`]
    pub output: Option<String>,
    /// Require checksums and check every chunk against them (checked by default whenever the
    /// file carries them; an error if it has none)
    #[arg(long, conflicts_with = "no_verify")]
    pub verify: bool,
    /// Skip the checksum check (faster; damage that still decodes goes unnoticed)
    #[arg(long)]
    pub no_verify: bool,
    /// Overwrite an existing output
    #[arg(long, short = 'f')]
    pub force: bool,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct AppendArgs {
    /// Existing frame file or sparse frame directory
    pub file: PathBuf,
    /// Raw data to add, `-` for stdin
    pub input: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    pub file: PathBuf,
    /// A table of every chunk (sizes, ratio, special kind, checksum)
    #[arg(long)]
    pub chunks: bool,
    /// Machine-readable JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}
