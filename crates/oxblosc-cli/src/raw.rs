//! Raw bytes <-> frames: `compress`, `decompress` and `append`, streaming chunk by chunk.
//!
//! Compression appends each chunk to a frame opened live on a temporary name (the frame
//! layer persists every append), so memory is the reader's queue plus one chunk in flight.
//! Decompression writes chunk after chunk. Outputs are renamed into place when complete.

use std::io::Write;
use std::path::{Path, PathBuf};

use oxblosc::chunk::{self, CParams, DParams};
use oxblosc::frame::{self, Mode, SChunk};

use crate::args::{AppendArgs, CodecArgs, Common, CompressArgs, DecompressArgs};
use crate::error::{CliError, Result};
use crate::output::{Scratch, Staged};
use crate::params;
use crate::progress::Progress;
use crate::stream::{self, Chunks};

pub const DEFAULT_CHUNK: usize = 4 << 20;
pub const DEFAULT_TYPESIZE: usize = 8;

pub fn threads(c: &Common) -> usize {
    c.threads.filter(|&n| n > 0).unwrap_or_else(|| CParams::default().nthreads).max(1)
}

/// Compression parameters from the options (`typesize` when not given on the command line).
pub fn cparams(a: &CodecArgs, common: &Common, typesize: usize) -> Result<CParams> {
    let typesize = a.typesize.unwrap_or(typesize);
    let (codec, codec_meta) = params::codec(&a.codec).map_err(CliError::new)?;
    let mut cp = CParams {
        codec,
        codec_meta,
        clevel: a.clevel,
        typesize,
        nthreads: threads(common),
        splitmode: params::split(&a.split).map_err(CliError::new)?,
        ..CParams::default()
    };
    if let Some((ids, metas)) = params::filter_slots(&a.filters).map_err(CliError::new)? {
        cp.filters = ids;
        cp.filters_meta = metas;
    }
    if let Some(b) = &a.block_size {
        cp.blocksize = params::size(b).map_err(CliError::new)?;
    }
    cp.validate().map_err(|e| CliError::new(format!("invalid parameters: {e}")))?;
    Ok(cp)
}

/// The chunk size option (a multiple of the typesize).
pub fn chunk_size(a: &CodecArgs, typesize: usize) -> Result<usize> {
    let cs = match &a.chunk_size {
        Some(s) => params::size(s).map_err(CliError::new)?,
        None => DEFAULT_CHUNK.div_ceil(typesize) * typesize,
    };
    if cs == 0 || cs % typesize != 0 || cs > chunk::format::MAX_BUFFERSIZE {
        return Err(CliError::new(format!(
            "chunk size {cs} must be a positive multiple of the typesize {typesize} below 2 GiB"
        )));
    }
    Ok(cs)
}

/// Where a command's output goes.
pub enum Target {
    File(PathBuf),
    Stdout,
}

pub fn target(output: Option<&str>, input: &str, default: impl FnOnce() -> Result<PathBuf>) -> Result<Target> {
    match output {
        Some("-") => Ok(Target::Stdout),
        Some(p) => Ok(Target::File(p.into())),
        None if input == "-" => Ok(Target::Stdout),
        None => default().map(Target::File),
    }
}

pub fn compress(a: &CompressArgs) -> Result<()> {
    // A Bloscpack file is converted: its decompressed bytes go into the frame.
    let blp = a.input != "-" && crate::blp::is_blp(Path::new(&a.input));
    let (input, typesize) = if blp {
        let r = crate::blp::open(Path::new(&a.input), threads(&a.common))?;
        let ts = usize::from(r.header().typesize.max(1));
        let len = r.header().nbytes();
        (stream::Input { name: a.input.clone().into(), reader: Box::new(r), len }, ts)
    } else {
        (stream::open_input(&a.input)?, DEFAULT_TYPESIZE)
    };
    let cp = cparams(&a.codec, &a.common, typesize)?;
    let cs = chunk_size(&a.codec, cp.typesize)?;
    let target = target(a.output.as_deref(), &a.input, || {
        let base = if blp { a.input.strip_suffix(".blp").unwrap_or(&a.input) } else { &a.input };
        Ok(format!("{base}.b2frame").into())
    })?;
    let checksums = !a.codec.no_checksum;
    let dp = DParams { nthreads: cp.nthreads };
    match target {
        Target::Stdout => {
            if a.sparse {
                return Err(CliError::new("a sparse frame is a directory: it cannot go to stdout"));
            }
            stream::binary_stdout()?;
            let tmp = Scratch::new("stdout");
            write_frame(input, &tmp.0, true, cp, dp, cs, checksums, a.common.quiet)?;
            stream::copy_to_stdout(&tmp.0)
        }
        Target::File(out) => {
            let staged = Staged::new(&out, a.force)?;
            write_frame(input, staged.path(), !a.sparse, cp, dp, cs, checksums, a.common.quiet)
                .map_err(|e| e.file(&out))?;
            stream::fsync(staged.path())?;
            staged.commit()
        }
    }
}

/// Stream `input` into a new frame at `path`.
#[allow(clippy::too_many_arguments)]
fn write_frame(
    input: stream::Input,
    path: &Path,
    contiguous: bool,
    cp: CParams,
    dp: DParams,
    chunk_size: usize,
    checksums: bool,
    quiet: bool,
) -> Result<()> {
    let name = input.name.clone();
    let mut progress = Progress::new("compress", input.len, quiet);
    let mut s = SChunk::create(path, contiguous, cp, dp).map_err(|e| CliError::frame(e, path))?;
    if checksums {
        s.enable_checksums().map_err(|e| CliError::frame(e, path))?;
    }
    let mut chunks = Chunks::new(input, chunk_size);
    while let Some(buf) = chunks.next_chunk()? {
        s.append_data(&buf).map_err(|e| CliError::frame(e, &name))?;
        progress.add(buf.len() as u64);
    }
    // Closing compacts a contiguous file written live (the frame layer's close).
    drop(s);
    progress.finish();
    Ok(())
}

/// Open a frame (or a copy of stdin) for reading.
pub fn open_frame(arg: &str) -> Result<(SChunk, PathBuf, Option<Scratch>)> {
    let (path, scratch) = if arg == "-" {
        let s = Scratch::new("stdin");
        stream::stdin_to_file(&s.0)?;
        (s.0.clone(), Some(s))
    } else {
        (PathBuf::from(arg), None)
    };
    crate::sniff::require_frame(&path)?;
    let s = frame::open(&path, Mode::Read).map_err(|e| CliError::frame(e, &path))?;
    Ok((s, path, scratch))
}

/// Whether the bytes at `path` start like a frame (else they may be a single chunk).
pub fn looks_like_frame(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let mut head = [0u8; 11];
    let n = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    n >= 11 && head[0] & 0xF0 == 0x90 && head[1] == 0xA8 && &head[2..10] == frame::header::MAGIC
}

pub fn decompress(a: &DecompressArgs) -> Result<()> {
    let input_path = PathBuf::from(&a.input);
    if a.input != "-" && crate::blp::is_blp(&input_path) {
        return crate::blp::decompress(a, &input_path);
    }
    if a.input != "-" && !looks_like_frame(&input_path) && input_path.is_file() {
        return decompress_chunk_file(a, &input_path);
    }
    let (mut s, path, _scratch) = open_frame(&a.input)?;
    let dp = DParams { nthreads: threads(&a.common) };
    s.set_dparams(dp);
    // Checksums are checked by default when the frame carries them (frame layer default).
    if a.no_verify {
        s.set_verify_checksums(false);
    } else if a.verify {
        s.require_checksums().map_err(|e| CliError::frame(e, &path))?;
    }
    if s.meta("b2nd").is_some() || s.meta("caterva").is_some() {
        return crate::npy::b2nd_to_npy(a, s, &path);
    }
    let target = target(a.output.as_deref(), &a.input, || strip(&a.input, &[".b2frame", ".b2f"]))?;
    let mut progress = Progress::new("decompress", Some(s.nbytes()), a.common.quiet);
    let sink = |w: &mut dyn Write, name: &Path| -> Result<()> {
        let mut total = 0u64;
        for i in 0..s.nchunks() {
            let buf = s.decompress_chunk(i).map_err(|e| CliError::frame(e, &path))?;
            stream::write_all(w, &buf, name)?;
            total += buf.len() as u64;
            progress.add(buf.len() as u64);
        }
        w.flush().map_err(|e| CliError::io(e, name))?;
        progress.finish();
        if total != s.nbytes() {
            return Err(CliError::at(
                format!("chunks hold {total} bytes, the frame header says {}", s.nbytes()),
                &path,
            ));
        }
        Ok(())
    };
    crate::output::write_stream(target, a.force, sink)
}

/// A single chunk file decompresses to its bytes (`OUTPUT` required unless it ends in `.cdata`).
fn decompress_chunk_file(a: &DecompressArgs, path: &Path) -> Result<()> {
    let bytes = crate::sniff::read_chunk_file(path)?;
    let dp = DParams { nthreads: threads(&a.common) };
    let out = chunk::decompress(&bytes, &dp).map_err(|e| CliError::chunk_layer(e, path))?;
    let target = target(a.output.as_deref(), &a.input, || strip(&a.input, &[".cdata", ".blosc"]))?;
    match target {
        Target::Stdout => {
            let mut w = stream::binary_stdout()?;
            stream::write_all(&mut w, &out, Path::new("<stdout>"))?;
            w.flush().map_err(|e| CliError::io(e, "<stdout>"))
        }
        Target::File(p) => {
            let staged = Staged::new(&p, a.force)?;
            std::fs::write(staged.path(), &out).map_err(|e| CliError::io(e, &p))?;
            staged.commit()
        }
    }
}

/// `name` without one of these suffixes, or an error asking for an explicit output.
pub fn strip(name: &str, suffixes: &[&str]) -> Result<PathBuf> {
    for s in suffixes {
        if let Some(base) = name.strip_suffix(s) {
            if !base.is_empty() && !base.ends_with('/') {
                return Ok(base.into());
            }
        }
    }
    Err(CliError::at(format!("cannot derive an output name (no {} suffix); give OUTPUT", suffixes.join(" or ")), name))
}

pub fn append(a: &AppendArgs) -> Result<()> {
    let path = &a.file;
    let ferr = |e| CliError::frame(e, path);
    let mut s = frame::open(path, Mode::Append).map_err(ferr)?;
    if s.meta("b2nd").is_some() {
        return Err(CliError::at("appending raw bytes to a b2nd array is not supported", path));
    }
    let mut cp = s.cparams().clone();
    cp.nthreads = threads(&a.common);
    s.set_cparams(cp).map_err(ferr)?;
    s.set_dparams(DParams { nthreads: threads(&a.common) });
    let fixed = s.chunksize() > 0;
    let ts = s.typesize().max(1);
    let cs = if fixed { s.chunksize() as usize } else { DEFAULT_CHUNK.div_ceil(ts) * ts };
    let input = stream::open_input(&a.input)?;
    let name = input.name.clone();
    let mut progress = Progress::new("append", input.len, a.common.quiet);
    let mut input = input;
    // One commit for the whole input: a failure, Ctrl-C or kill before the end leaves the
    // frame as it was (the chunks already written are unreferenced space until then).
    let mut failed: Option<CliError> = None;
    let mut keep = |e: CliError| {
        failed = Some(e);
        frame::Error::InvalidParam { name: "input", reason: "not read completely".into() }
    };
    let r = s.batch(|s| {
        let n = s.nchunks();
        if fixed && n > 0 {
            // Fill a short last chunk first, so the frame keeps one chunk size.
            let last = s.decompress_chunk(n - 1)?;
            if last.len() < cs {
                let more =
                    stream::read_full(&mut input.reader, cs - last.len()).map_err(|e| keep(CliError::io(e, &name)))?;
                if !more.is_empty() {
                    let mut buf = last;
                    buf.extend_from_slice(&more);
                    s.update_data(n - 1, &buf)?;
                    progress.add(more.len() as u64);
                }
            }
        }
        let mut chunks = Chunks::new(input, cs);
        while let Some(buf) = chunks.next_chunk().map_err(&mut keep)? {
            s.append_data(&buf)?;
            progress.add(buf.len() as u64);
        }
        Ok(())
    });
    if let Some(e) = failed {
        return Err(e);
    }
    r.map_err(ferr)?;
    drop(s);
    progress.finish();
    Ok(())
}
