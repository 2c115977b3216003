//! Inputs and outputs as byte streams: files or `-` (stdin/stdout), read in whole chunks by a
//! reader thread so reading overlaps compression. At most two chunks wait in the queue, so
//! memory stays a few chunks whatever the input size.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use crate::error::{CliError, Result};

/// An opened input: its display name, reader and size when known.
pub struct Input {
    pub name: PathBuf,
    pub reader: Box<dyn Read + Send>,
    pub len: Option<u64>,
}

pub fn open_input(arg: &str) -> Result<Input> {
    if arg == "-" {
        return Ok(Input { name: "<stdin>".into(), reader: Box::new(io::stdin()), len: None });
    }
    let f = File::open(arg).map_err(|e| CliError::io(e, arg))?;
    let meta = f.metadata().map_err(|e| CliError::io(e, arg))?;
    if meta.is_dir() {
        return Err(CliError::at("input is a directory", arg));
    }
    Ok(Input { name: arg.into(), reader: Box::new(f), len: Some(meta.len()) })
}

/// Chunks of exactly `size` bytes (the last may be shorter, never empty) read on a thread.
pub struct Chunks {
    rx: Receiver<io::Result<Vec<u8>>>,
    handle: Option<JoinHandle<()>>,
    name: PathBuf,
}

impl Chunks {
    pub fn new(input: Input, size: usize) -> Chunks {
        Chunks::sized(input, std::iter::repeat(size))
    }

    /// Pieces of the given sizes in turn, until the sizes or the input run out (a piece is
    /// shorter than asked only at the end of the input).
    pub fn sized(input: Input, sizes: impl Iterator<Item = usize> + Send + 'static) -> Chunks {
        let (tx, rx) = sync_channel(2);
        let mut reader = input.reader;
        let handle = std::thread::spawn(move || {
            for size in sizes {
                match read_full(&mut reader, size) {
                    Ok(buf) if buf.is_empty() => break,
                    Ok(buf) => {
                        let last = buf.len() < size;
                        if tx.send(Ok(buf)).is_err() || last {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        Chunks { rx, handle: Some(handle), name: input.name }
    }

    /// The next chunk, `None` at the end of the input.
    pub fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        match self.rx.recv() {
            Ok(Ok(b)) => Ok(Some(b)),
            Ok(Err(e)) => Err(CliError::io(e, &self.name)),
            Err(_) => {
                if let Some(h) = self.handle.take() {
                    let _ = h.join();
                }
                Ok(None)
            }
        }
    }
}

/// Read up to `size` bytes (fewer only at the end of the input).
pub fn read_full(r: &mut dyn Read, size: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(size);
    r.take(size as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Stdout for binary output, refused when it is a terminal.
pub fn binary_stdout() -> Result<BufWriter<io::Stdout>> {
    if io::stdout().is_terminal() {
        return Err(CliError::new("refusing to write binary data to a terminal; give an output file or redirect"));
    }
    Ok(BufWriter::with_capacity(1 << 20, io::stdout()))
}

/// Copy a finished file to stdout.
pub fn copy_to_stdout(path: &Path) -> Result<()> {
    let mut out = binary_stdout()?;
    let mut f = File::open(path).map_err(|e| CliError::io(e, path))?;
    io::copy(&mut f, &mut out).map_err(|e| CliError::io(e, "<stdout>"))?;
    out.flush().map_err(|e| CliError::io(e, "<stdout>"))
}

/// Copy stdin to a file (frames need random access).
pub fn stdin_to_file(path: &Path) -> Result<()> {
    let mut f = File::create(path).map_err(|e| CliError::io(e, path))?;
    io::copy(&mut io::stdin().lock(), &mut f).map_err(|e| CliError::io(e, "<stdin>"))?;
    Ok(())
}

/// Flush a written file to disk (before it is renamed into place).
pub fn fsync(path: &Path) -> Result<()> {
    if path.is_dir() {
        for e in std::fs::read_dir(path).map_err(|e| CliError::io(e, path))? {
            let p = e.map_err(|e| CliError::io(e, path))?.path();
            File::open(&p).and_then(|f| f.sync_all()).map_err(|e| CliError::io(e, &p))?;
        }
        return Ok(());
    }
    File::open(path).and_then(|f| f.sync_all()).map_err(|e| CliError::io(e, path))
}

/// Write to a sink, naming it in errors.
pub fn write_all(w: &mut dyn Write, buf: &[u8], name: &Path) -> Result<()> {
    w.write_all(buf).map_err(|e| CliError::io(e, name))
}
