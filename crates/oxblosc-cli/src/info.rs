//! `info`: what a file is and how it is stored, as aligned text or JSON.

use std::path::Path;

use oxblosc::chunk::format::codec_name;
use oxblosc::chunk::{ChunkHeader, SpecialKind};
use oxblosc::frame::{msgpack, ChecksumStatus, SChunk, SplitMode};

use crate::args::InfoArgs;
use crate::error::{CliError, Result};
use crate::node::{self, Node};
use crate::params::filter_name;
use crate::raw::looks_like_frame;

pub fn info(a: &InfoArgs) -> Result<()> {
    let path = &a.file;
    if !path.exists() {
        return Err(CliError::at("no such file or directory", path));
    }
    let (tree, table) = if crate::blp::is_blp(path) {
        (crate::blp::info(a)?, None)
    } else if looks_like_frame(path) {
        crate::sniff::require_frame(path)?;
        let s = oxblosc::frame::open(path, oxblosc::frame::Mode::Read).map_err(|e| CliError::frame(e, path))?;
        let tree = frame_node(&s, path)?;
        let table = if a.chunks { Some(chunk_table(&s, path)?) } else { None };
        (tree, table)
    } else {
        let bytes = crate::sniff::read_chunk_file(path)?;
        (chunk_node(&bytes).map_err(|e| CliError::chunk_layer(e, path))?, None)
    };
    let mut out = String::new();
    if a.json {
        let tree = match table {
            Some(t) => match tree {
                Node::Map(mut m) => {
                    m.push(("chunk_table".into(), t));
                    Node::Map(m)
                }
                n => n,
            },
            None => tree,
        };
        tree.json(&mut out);
        out.push('\n');
    } else {
        tree.text(0, &mut out);
        if let Some(Node::List(rows)) = table {
            out.push_str(&format!(
                "\n{:>8} {:>12} {:>12} {:>8}  {:<8} {}\n",
                "chunk", "nbytes", "cbytes", "ratio", "special", "checksum"
            ));
            for r in rows {
                let Node::Map(m) = r else { continue };
                let get = |k: &str| m.iter().find(|(n, _)| n == k).map(|(_, v)| v.inline()).unwrap_or_default();
                out.push_str(&format!(
                    "{:>8} {:>12} {:>12} {:>8}  {:<8} {}\n",
                    get("chunk"),
                    get("nbytes"),
                    get("cbytes"),
                    get("ratio"),
                    get("special"),
                    get("checksum")
                ));
            }
        }
    }
    print!("{out}");
    Ok(())
}

fn ratio(nbytes: u64, cbytes: u64) -> Node {
    if cbytes == 0 {
        Node::Null
    } else {
        Node::Float((nbytes as f64 / cbytes as f64 * 100.0).round() / 100.0)
    }
}

fn filters(ids: &[u8], metas: &[u8]) -> Node {
    Node::List(
        ids.iter()
            .zip(metas)
            .filter(|(id, _)| **id != 0)
            .map(|(id, m)| {
                Node::Str(if *m != 0 { format!("{}:{}", filter_name(*id), *m as i8) } else { filter_name(*id) })
            })
            .collect(),
    )
}

fn split_name(m: SplitMode) -> &'static str {
    match m {
        SplitMode::Always => "always",
        SplitMode::Never => "never",
        SplitMode::Auto => "auto",
        SplitMode::ForwardCompat => "forward",
    }
}

fn frame_node(s: &SChunk, path: &Path) -> Result<Node> {
    let cp = s.cparams();
    let sparse = path.is_dir();
    let b2nd = s.meta("b2nd");
    let kind = match (b2nd.is_some(), sparse) {
        (true, _) => "b2nd",
        (false, true) => "sparse",
        (false, false) => "frame",
    };
    let mut m: Vec<(String, Node)> = vec![
        ("kind".into(), kind.into()),
        ("storage".into(), (if sparse { "sparse directory" } else { "contiguous file" }).into()),
    ];
    if let Some(raw) = b2nd {
        m.push(("array".into(), b2nd_node(raw)));
    }
    let chunksize = match s.chunksize() {
        c if c > 0 => Node::UInt(c as u64),
        0 => "variable".into(),
        _ => Node::Null,
    };
    m.extend([
        ("codec".into(), codec_label(cp.codec).into()),
        ("clevel".into(), Node::UInt(cp.clevel.into())),
        ("filters".into(), filters(&cp.filters, &cp.filters_meta)),
        ("typesize".into(), s.typesize().into()),
        ("chunksize".into(), chunksize),
        ("blocksize".into(), if s.blocksize() > 0 { s.blocksize().into() } else { "automatic".into() }),
        ("splitmode".into(), split_name(cp.splitmode).into()),
        ("nchunks".into(), s.nchunks().into()),
    ]);
    // An array's chunks are padded to whole chunks at its edges: its data is its items
    // (python-blosc2's `NDArray.nbytes`), the padding is shown apart, and the ratio is data
    // over compressed chunk bytes (python-blosc2's `cratio` counts the padding as data).
    let nbytes = b2nd.and_then(|raw| array_nbytes(raw, s.typesize())).unwrap_or(s.nbytes());
    m.push(("nbytes".into(), nbytes.into()));
    if nbytes != s.nbytes() {
        m.push(("padded_nbytes".into(), s.nbytes().into()));
    }
    m.push(("cbytes".into(), s.cbytes().into()));
    m.push(("ratio".into(), ratio(nbytes, s.cbytes())));
    m.push(("file_bytes".into(), on_disk(path).map_or(Node::Null, Node::UInt)));
    let checks = match s.checksums() {
        ChecksumStatus::Off => Node::from("none"),
        ChecksumStatus::On { len } => {
            Node::from(format!("{} for {len} of {} chunks", oxblosc::frame::checksum::ALGORITHM, s.nchunks()))
        }
        ChecksumStatus::Unreadable(r) => Node::from(format!("unreadable: {r}")),
    };
    m.push(("checksums".into(), checks));
    let meta = s.meta_names().into_iter().map(|n| (n.to_string(), decoded(s.meta(n).unwrap_or_default()))).collect();
    m.push(("metalayers".into(), Node::Map(meta)));
    let vl = s
        .vlmeta_names()
        .into_iter()
        .map(|n| (n.to_string(), vlmeta_node(n, s.vlmeta(n).unwrap_or_default())))
        .collect();
    m.push(("vlmeta".into(), Node::Map(vl)));
    Ok(Node::Map(m))
}

/// Bytes of an array's items: the shape in its b2nd metalayer times the typesize.
fn array_nbytes(raw: &[u8], typesize: usize) -> Option<u64> {
    let m = oxblosc::nd::Meta::decode(raw).ok()?;
    let items = m.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(u64::try_from(d).ok()?))?;
    items.checked_mul(typesize as u64)
}

/// Size on disk: the file, or a sparse frame directory's files.
fn on_disk(path: &Path) -> Option<u64> {
    if !path.is_dir() {
        return std::fs::metadata(path).ok().map(|m| m.len());
    }
    std::fs::read_dir(path).ok()?.map(|e| e.ok()?.metadata().ok().map(|m| m.len())).sum()
}

fn codec_label(c: u8) -> String {
    match codec_name(c) {
        "plugin" => format!("plugin {c}"),
        n => n.into(),
    }
}

/// A metalayer's msgpack, decoded (or its size when it is not msgpack).
fn decoded(raw: &[u8]) -> Node {
    match msgpack::decode(raw) {
        Ok(v) => node::from_msgpack(&v),
        Err(_) => Node::Str(format!("<{} bytes, not msgpack>", raw.len())),
    }
}

/// The b2nd metalayer, decoded by the n-d layer.
fn b2nd_node(raw: &[u8]) -> Node {
    match oxblosc::nd::Meta::decode(raw) {
        Ok(m) => Node::Map(vec![
            ("ndim".into(), m.ndim().into()),
            ("shape".into(), Node::List(m.shape.iter().map(|&v| Node::Int(v)).collect())),
            ("chunks".into(), Node::List(m.chunkshape.iter().map(|&v| Node::Int(v.into())).collect())),
            ("blocks".into(), Node::List(m.blockshape.iter().map(|&v| Node::Int(v.into())).collect())),
            ("dtype".into(), m.dtype.map_or(Node::Null, Node::Str)),
        ]),
        Err(e) => Node::Str(format!("unreadable: {e}")),
    }
}

/// A vlmetalayer for display: the `.npy` header we keep is shown parsed.
fn vlmeta_node(name: &str, raw: &[u8]) -> Node {
    if name == crate::npy::HEADER_VLMETA {
        if let Ok(msgpack::Value::Bin(h)) = msgpack::decode(raw) {
            if let Ok(h) = crate::npy::read_header(&mut h.as_slice(), Path::new("")) {
                return Node::Map(vec![
                    ("descr".into(), h.descr.into()),
                    ("fortran_order".into(), h.fortran_order.into()),
                    ("shape".into(), Node::List(h.shape.iter().map(|&v| Node::UInt(v)).collect())),
                    ("header_bytes".into(), h.raw.len().into()),
                ]);
            }
        }
    }
    decoded(raw)
}

fn chunk_table(s: &SChunk, path: &Path) -> Result<Node> {
    let mut rows = Vec::with_capacity(s.nchunks());
    for i in 0..s.nchunks() {
        let ci = s.chunk_info(i).map_err(|e| CliError::frame(e, path))?;
        let special = match ci.special {
            SpecialKind::None => "",
            SpecialKind::Zeros => "zeros",
            SpecialKind::Nan => "nan",
            SpecialKind::Uninit => "uninit",
            SpecialKind::Value => "value",
        };
        rows.push(Node::Map(vec![
            ("chunk".into(), i.into()),
            ("nbytes".into(), ci.nbytes.into()),
            ("cbytes".into(), ci.cbytes.into()),
            ("ratio".into(), ratio(ci.nbytes as u64, ci.cbytes as u64)),
            ("special".into(), special.into()),
            ("checksum".into(), s.chunk_checksum(i).map_or(Node::Null, |c| Node::Str(format!("{c:016x}")))),
        ]));
    }
    Ok(Node::List(rows))
}

fn chunk_node(bytes: &[u8]) -> Result<Node, oxblosc::chunk::Error> {
    let h = ChunkHeader::parse(bytes)?;
    let codec = h.compcode().map(|c| if c == 1 && h.udcompcode == 2 { "lz4hc".to_string() } else { codec_label(c) });
    Ok(Node::Map(vec![
        ("kind".into(), "chunk".into()),
        ("format_version".into(), Node::UInt(h.version.into())),
        ("header_len".into(), h.header_len().into()),
        ("codec".into(), codec.unwrap_or_else(|_| "unknown".into()).into()),
        ("filters".into(), filters(&h.filters, &h.filters_meta)),
        ("typesize".into(), Node::UInt(u64::from(h.typesize))),
        ("nbytes".into(), h.nbytes.into()),
        ("cbytes".into(), h.cbytes.into()),
        ("ratio".into(), ratio(h.nbytes as u64, h.cbytes as u64)),
        ("blocksize".into(), h.blocksize.into()),
        ("nblocks".into(), h.nblocks().into()),
        ("split".into(), (!h.dont_split()).into()),
        ("special".into(), format!("{:?}", h.special()?).to_lowercase().into()),
        ("memcpyed".into(), h.is_memcpyed().into()),
    ]))
}
