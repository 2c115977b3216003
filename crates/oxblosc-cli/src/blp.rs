//! Bloscpack `.blp` files (read with `oxblosc::bloscpack`): `decompress` to raw bytes, `info`,
//! `verify`, and `compress` converts one into a `.b2frame`.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use oxblosc::bloscpack::{self, checksum_name, checksum_verified, Reader};
use oxblosc::chunk::format::codec_name;

use crate::args::{DecompressArgs, InfoArgs};
use crate::error::{CliError, Result};
use crate::node::Node;
use crate::output::Staged;
use crate::progress::Progress;
use crate::raw::{target, threads, Target};

/// Whether `path` is a Bloscpack file (by its magic).
pub fn is_blp(path: &Path) -> bool {
    let mut m = [0u8; 4];
    path.is_file() && File::open(path).and_then(|mut f| f.read_exact(&mut m)).is_ok() && &m == bloscpack::MAGIC
}

/// Open a `.blp` for reading its decompressed bytes.
pub fn open(path: &Path, nthreads: usize) -> Result<Reader<BufReader<File>>> {
    let f = File::open(path).map_err(|e| CliError::io(e, path))?;
    let len = f.metadata().map_err(|e| CliError::io(e, path))?.len();
    Reader::new(BufReader::with_capacity(1 << 20, f), len, nthreads).map_err(|e| bp_err(e, path))
}

fn bp_err(e: bloscpack::Error, path: &Path) -> CliError {
    CliError::at(e.to_string(), path)
}

/// `name.blp` -> `name` (what Bloscpack's own `decompress` writes).
pub fn default_raw_name(input: &str) -> Result<PathBuf> {
    crate::raw::strip(input, &[".blp"])
}

pub fn decompress(a: &DecompressArgs, path: &Path) -> Result<()> {
    let mut r = open(path, threads(&a.common))?;
    let target = target(a.output.as_deref(), &a.input, || default_raw_name(&a.input))?;
    let mut progress = Progress::new("decompress", r.header().nbytes(), a.common.quiet);
    let mut sink = |w: &mut dyn Write, name: &Path| -> Result<()> {
        while let Some(c) = r.next_chunk().map_err(|e| bp_err(e, path))? {
            crate::stream::write_all(w, &c, name)?;
            progress.add(c.len() as u64);
        }
        w.flush().map_err(|e| CliError::io(e, name))?;
        progress.finish();
        Ok(())
    };
    match target {
        Target::Stdout => sink(&mut crate::stream::binary_stdout()?, Path::new("<stdout>")),
        Target::File(out) => {
            let staged = Staged::new(&out, a.force)?;
            let f = File::create(staged.path()).map_err(|e| CliError::io(e, &out))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            sink(&mut w, &out)?;
            w.into_inner()
                .map_err(|e| CliError::io(e.into_error(), &out))?
                .sync_all()
                .map_err(|e| CliError::io(e, &out))?;
            staged.commit()
        }
    }
}

/// Every chunk decoded and its digest checked: Ok(false) (exit 1) on damage.
pub fn verify(path: &Path, nthreads: usize, quiet: bool) -> Result<bool> {
    let mut r = open(path, nthreads)?;
    let mut n = 0u64;
    loop {
        match r.next_chunk() {
            Ok(Some(_)) => n += 1,
            Ok(None) => break,
            Err(e) => {
                eprintln!("oxblosc: {}", bp_err(e, path));
                if !quiet {
                    println!("FAILED: damaged Bloscpack file ({})", path.display());
                }
                return Ok(false);
            }
        }
    }
    if !quiet {
        let id = r.header().checksum;
        let how = if checksum_verified(id) {
            format!("{} digests match", checksum_name(id))
        } else if id == 0 {
            "no digests".to_string()
        } else {
            format!("{} digests not checked", checksum_name(id))
        };
        println!("ok: Bloscpack, {n} chunks decoded, {how} ({})", path.display());
    }
    Ok(true)
}

pub fn info(a: &InfoArgs) -> Result<Node> {
    let path = &a.file;
    let mut r = open(path, 1)?;
    let h = r.header().clone();
    let meta = r.metadata().map(|m| {
        Node::Map(vec![
            ("format".into(), m.format.clone().into()),
            ("codec".into(), (if m.codec == 1 { "zlib" } else { "none" }).into()),
            ("checksum".into(), checksum_name(m.checksum).into()),
            ("reserved".into(), Node::UInt(m.max_size.into())),
            ("content".into(), String::from_utf8_lossy(&m.data).into_owned().into()),
        ])
    });
    // Walk the stored chunks (digests checked, nothing decompressed) for sizes and codecs.
    let (mut nchunks, mut nbytes, mut cbytes) = (0u64, 0u64, 0u64);
    let mut codecs: Vec<&'static str> = Vec::new();
    while let Some(c) = r.next_raw_chunk().map_err(|e| bp_err(e, path))? {
        nchunks += 1;
        nbytes += u64::from(u32::from_le_bytes(c[4..8].try_into().expect("16-byte header")));
        cbytes += c.len() as u64;
        let codec = codec_name(c[2] >> 5);
        if !codecs.contains(&codec) {
            codecs.push(codec);
        }
    }
    let file_bytes = std::fs::metadata(path).map_err(|e| CliError::io(e, path))?.len();
    let signed = |v: i64| if v < 0 { Node::from("unknown") } else { Node::Int(v) };
    let mut m: Vec<(String, Node)> = vec![
        ("kind".into(), "bloscpack".into()),
        ("format_version".into(), Node::UInt(bloscpack::FORMAT_VERSION.into())),
        ("codec".into(), Node::List(codecs.into_iter().map(Node::from).collect())),
        ("typesize".into(), Node::UInt(h.typesize.into())),
        ("chunksize".into(), signed(h.chunk_size.into())),
        ("nchunks".into(), nchunks.into()),
        ("header_nchunks".into(), signed(h.nchunks)),
        ("nbytes".into(), nbytes.into()),
        ("cbytes".into(), cbytes.into()),
        (
            "ratio".into(),
            if cbytes == 0 { Node::Null } else { Node::Float((nbytes as f64 / cbytes as f64 * 100.0).round() / 100.0) },
        ),
        ("file_bytes".into(), file_bytes.into()),
        ("checksum".into(), checksum_name(h.checksum).into()),
        ("offsets".into(), h.has_offsets.into()),
        ("spare_offset_slots".into(), signed(h.max_app_chunks)),
    ];
    m.push(("metadata".into(), meta.unwrap_or(Node::Null)));
    m.push(("convert".into(), "oxblosc compress FILE -> .b2frame; oxblosc decompress FILE -> raw bytes".into()));
    Ok(Node::Map(m))
}

/// `compress` of a `.blp` that Bloscpack wrote from a NumPy array (JSON metadata with
/// `"container": "numpy"`, its dtype, shape and order): the array goes to `x.b2nd` with that
/// dtype and shape, and decompresses to an `.npy`. `Ok(false)` when the file holds plain bytes.
pub fn array_to_b2nd(a: &crate::args::CompressArgs, path: &Path) -> Result<bool> {
    let r = open(path, threads(&a.common))?;
    let Some(text) = r.metadata().map(|m| String::from_utf8_lossy(&m.data).into_owned()) else { return Ok(false) };
    if json_str(&text, "container").as_deref() != Some("numpy") {
        return Ok(false);
    }
    let bad = |what: &str| CliError::at(format!("Bloscpack numpy metadata: {what}"), path);
    let dtype = json_str(&text, "dtype").ok_or_else(|| bad("no dtype"))?;
    // The dtype is Python's repr: '<f8' for simple types, a list of tuples for structured ones.
    let descr = dtype.trim().trim_matches(['\'', '"']).to_string();
    let shape = json_uints(&text, "shape").ok_or_else(|| bad("no shape list"))?;
    let fortran = match json_str(&text, "order").as_deref() {
        Some("F") => true,
        Some("C") | None => false,
        Some(o) => return Err(bad(&format!("order {o:?} is neither C nor F"))),
    };
    let nbytes = r.header().nbytes().ok_or_else(|| bad("the header does not give the total size"))?;
    let raw = crate::npy::make_header(&descr, fortran, &shape);
    let h = crate::npy::read_header(&mut raw.as_slice(), path)?;
    let input = crate::stream::Input { name: path.to_path_buf(), reader: Box::new(r), len: Some(nbytes) };
    let base = a.input.strip_suffix(".blp").unwrap_or(&a.input);
    crate::npy::array_to_b2nd(a, &h, input, nbytes, Path::new(&format!("{base}.b2nd")))?;
    Ok(true)
}

/// The JSON string value of `"key"` in a flat object (Bloscpack's metadata), unescaped.
fn json_str(text: &str, key: &str) -> Option<String> {
    let rest = json_value(text, key)?.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

/// The JSON list of non-negative integers at `"key"`.
fn json_uints(text: &str, key: &str) -> Option<Vec<u64>> {
    let rest = json_value(text, key)?.strip_prefix('[')?;
    let body = &rest[..rest.find(']')?];
    body.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().ok()).collect()
}

fn json_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    text[at..].trim_start().strip_prefix(':').map(str::trim_start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_metadata_fields() {
        let t = r#"{"dtype":"[('a', '<i4'), ('b', '<f8')]","shape":[3, 4],"order":"F","container":"numpy","x":"q\"\u00e9"}"#;
        assert_eq!(json_str(t, "dtype").unwrap(), "[('a', '<i4'), ('b', '<f8')]");
        assert_eq!(json_uints(t, "shape").unwrap(), vec![3, 4]);
        assert_eq!(json_str(t, "order").unwrap(), "F");
        assert_eq!(json_str(t, "x").unwrap(), "q\"\u{e9}");
        assert_eq!(json_str(t, "missing"), None);
        assert_eq!(json_uints(r#"{"shape":[]}"#, "shape").unwrap(), Vec::<u64>::new());
        assert_eq!(json_uints(r#"{"shape":[-1]}"#, "shape"), None);
    }
}
