//! Command-line syntax (clap derive): the commands, their options and `--help` examples.

use std::path::{Path, PathBuf};

use crate::error::CliError;

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

As zstd/gzip: `oxblosc FILE` compresses, -d decompresses, -t tests (verify), -l lists (info);
-c to stdout, -o FILE, -k keeps the input (always the default), --rm removes it after
success, -f, -q, -T N threads (0 = all cores), -0..-9 level. -t alone is not an option of the
subcommands (Bloscpack's typesize is --typesize).

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
    /// Find the codec, clevel, filters, split and block size that suit FILE's data
    #[command(after_help = "\
Examples:
  oxblosc tune temps.npy                          # balanced: speed and ratio
  oxblosc tune --objective ratio --typesize 4 data.f32
  oxblosc tune --objective dspeed array.b2nd      # decodes chunks of the array first")]
    Tune(TuneArgs),
    /// Describe one Blosc/Blosc2 chunk file (header, codec, filters, sizes)
    #[command(after_help = "Example:\n  oxblosc chunk-info data.cdata")]
    ChunkInfo { file: PathBuf },
    /// Decode one chunk file and report its size (exit 2 if it is corrupt)
    #[command(after_help = "Example:\n  oxblosc chunk-check data.cdata")]
    ChunkCheck { file: PathBuf },
}

#[derive(Args, Debug, Clone)]
pub struct CodecArgs {
    /// blosclz, lz4, lz4hc, zlib, zstd, ndlz[:4|8] (2-D uint8 .npy input), the lossy
    /// zfp_acc:EXP (tolerance 10^EXP), zfp_prec:BITS, zfp_rate:PERCENT (float .npy input), or
    /// ID[:META] (a plugin codec, e.g. the compiled codec of an installed plugin package)
    #[arg(long, default_value = "zstd")]
    pub codec: String,
    /// Compression level 0-9
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=9))]
    pub clevel: u8,
    /// Filter, repeatable, applied in the order given: shuffle, bitshuffle, delta,
    /// bytedelta[:STREAMS], trunc_prec:BITS, int_trunc:BITS, ndcell:EDGE, ndmean:EDGE (.npy
    /// input), none, or ID[:META]
    /// [default: shuffle]
    #[arg(long = "filter", value_name = "NAME[:META]")]
    pub filters: Vec<String>,
    /// Item size in bytes (shuffle granularity) [default: 8, or the .npy itemsize]
    #[arg(long)]
    pub typesize: Option<usize>,
    /// Uncompressed bytes per chunk (K/M/G suffixes) [default: 4M; for .npy the automatic
    /// chunk target, as whole trailing rows]
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
    /// Worker threads, 0 = all cores [default: all cores]
    #[arg(long, short = 'T')]
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
    /// Output file (the same as OUTPUT)
    #[arg(id = "output_file", short = 'o', long = "output", value_name = "FILE")]
    pub output_file: Option<String>,
    /// Write to standard output (the same as OUTPUT `-`)
    #[arg(short = 'c', long = "stdout")]
    pub stdout: bool,
    /// Keep the input (always the default; accepted for zstd/gzip habits)
    #[arg(short = 'k', long, overrides_with = "rm")]
    pub keep: bool,
    /// Remove the input after a successful run (only when the output is a file)
    #[arg(long, overrides_with = "keep")]
    pub rm: bool,
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
    /// Output file (the same as OUTPUT)
    #[arg(id = "output_file", short = 'o', long = "output", value_name = "FILE")]
    pub output_file: Option<String>,
    /// Write to standard output (the same as OUTPUT `-`)
    #[arg(short = 'c', long = "stdout")]
    pub stdout: bool,
    /// Keep the input (always the default; accepted for zstd/gzip habits)
    #[arg(short = 'k', long, overrides_with = "rm")]
    pub keep: bool,
    /// Remove the input after a successful run (only when the output is a file)
    #[arg(long, overrides_with = "keep")]
    pub rm: bool,
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
pub struct TuneArgs {
    /// A raw file, an .npy, a frame or a .b2nd (the first 256 MiB of data are sampled)
    pub file: PathBuf,
    /// balanced, ratio, cspeed (compression speed) or dspeed (decompression speed)
    #[arg(long, default_value = "balanced")]
    pub objective: String,
    /// Seconds to spend at most (at least one setting is always measured)
    #[arg(long, default_value_t = 5.0)]
    pub time_budget: f64,
    /// Item size in bytes [default: the file's, else 8]
    #[arg(long, value_parser = clap::value_parser!(usize))]
    pub typesize: Option<usize>,
    /// Also try lossy filters (trunc_prec)
    #[arg(long)]
    pub allow_lossy: bool,
    /// Picks the sampled parts of the data
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
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

/// Fold `-o FILE` and `-c` into `OUTPUT` (given once), and check `--rm` can be honoured.
pub fn settle_outputs(cmd: &mut Cmd) -> Result<(), CliError> {
    let (input, output, output_file, stdout, rm) = match cmd {
        Cmd::Compress(a) => (&a.input, &mut a.output, a.output_file.take(), a.stdout, a.rm),
        Cmd::Decompress(a) => (&a.input, &mut a.output, a.output_file.take(), a.stdout, a.rm),
        _ => return Ok(()),
    };
    let given: Vec<String> =
        [output.take(), output_file, stdout.then(|| "-".to_string())].into_iter().flatten().collect();
    if given.len() > 1 {
        return Err(CliError::new("the output is given twice: use one of OUTPUT, -o FILE or -c"));
    }
    *output = given.into_iter().next();
    if rm {
        let to_stdout = output.as_deref() == Some("-") || (output.is_none() && input == "-");
        if input == "-" || to_stdout {
            return Err(CliError::new("--rm needs an input file and an output file (not stdin/stdout)"));
        }
        if !Path::new(input).is_file() {
            return Err(CliError::at("--rm removes files only", input));
        }
        if let Some(o) = output.as_deref() {
            if std::fs::canonicalize(o).ok() == std::fs::canonicalize(input).ok() {
                return Err(CliError::at("--rm with the output in place of the input would lose it", input));
            }
        }
    }
    Ok(())
}

/// `--rm`: remove the input once its output is in place.
pub fn remove_input(input: &str, rm: bool) -> Result<(), CliError> {
    if rm {
        std::fs::remove_file(input).map_err(|e| CliError::io(e, input))?;
    }
    Ok(())
}
