//! `.npy` files (NumPy format 1.0 / 2.0 / 3.0): the header is parsed here; the array goes to a
//! `.b2nd` through the n-d layer.
//!
//! Round trips are byte-identical: the original header bytes are kept in the vlmetalayer
//! [`HEADER_VLMETA`] and written back verbatim. A Fortran-order array is stored as its logical
//! array (same shape and items as NumPy shows; the b2nd is C-order as always), transposed
//! piece by piece on the way in and out ([`crate::layout`]), so `info`, `oxblosc.open` and
//! python-blosc2 see the array NumPy sees.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use oxblosc::chunk::DParams;
use oxblosc::frame::{msgpack, SChunk, Value};
use oxblosc::nd;

use crate::args::{CompressArgs, DecompressArgs};
use crate::error::{CliError, Result};
use crate::layout;
use crate::output::Staged;
use crate::progress::Progress;

pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// vlmetalayer holding the original `.npy` header (msgpack bin).
pub const HEADER_VLMETA: &str = "_oxblosc_npy_header";
/// vlmetalayer marking that a Fortran-order `.npy` was stored as its logical array (msgpack
/// str [`LOGICAL`]); without it, a Fortran header means the old transposed layout.
pub const ORDER_VLMETA: &str = "_oxblosc_npy_order";
const LOGICAL: &str = "logical";
/// Largest header we accept (NumPy itself refuses headers over 10 KiB unless told otherwise).
const MAX_HEADER: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Every byte before the data (magic, version, length, dict, padding).
    pub raw: Vec<u8>,
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
}

impl NpyHeader {
    /// Items in the array.
    pub fn nitems(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }

    /// Whether the array holds Python objects (descr `|O`, or an `O` field of a structured
    /// one): `np.save` pickles those.
    pub fn holds_objects(&self) -> bool {
        let d = self.descr.as_str();
        d.trim_start_matches(['|', '<', '>', '=']).starts_with('O') || d.starts_with('[') && d.contains("'|O'")
    }

    /// Item size from a simple descr (`<f8`, `|u1`, `<U10`, `<M8[ns]`); `None` for structured.
    pub fn itemsize(&self) -> Option<usize> {
        let d = self.descr.as_str();
        let body = d.strip_prefix(['<', '>', '|', '=']).unwrap_or(d);
        let mut chars = body.chars();
        let kind = chars.next()?;
        let digits: String = chars.take_while(|c| c.is_ascii_digit()).collect();
        let n: usize = digits.parse().ok()?;
        Some(if kind == 'U' { n.checked_mul(4)? } else { n })
    }
}

/// Read and parse the header at the start of `r`.
pub fn read_header(r: &mut dyn Read, name: &Path) -> Result<NpyHeader> {
    let err = |what: String| CliError::at(format!("not a valid .npy file: {what}"), name);
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre).map_err(|_| err("shorter than the 8-byte preamble".into()))?;
    if &pre[..6] != MAGIC {
        return Err(err("missing \\x93NUMPY magic".into()));
    }
    let (major, minor) = (pre[6], pre[7]);
    let len_bytes = match major {
        1 => 2,
        2 | 3 => 4,
        _ => return Err(err(format!("format version {major}.{minor} is not supported (1.0, 2.0, 3.0)"))),
    };
    let mut lb = [0u8; 4];
    r.read_exact(&mut lb[..len_bytes]).map_err(|_| err("truncated header length".into()))?;
    let hlen = u32::from_le_bytes(lb) as usize;
    if hlen > MAX_HEADER {
        return Err(err(format!("header of {hlen} bytes is too large")));
    }
    let mut dict = vec![0u8; hlen];
    r.read_exact(&mut dict).map_err(|_| err(format!("header needs {hlen} bytes")))?;
    let text = if major == 3 {
        String::from_utf8(dict.clone()).map_err(|_| err("header is not UTF-8".into()))?
    } else {
        if !dict.is_ascii() {
            return Err(err("header is not ASCII (needs format 3.0)".into()));
        }
        String::from_utf8(dict.clone()).expect("ascii")
    };
    let (descr, fortran_order, shape) = parse_dict(&text).map_err(err)?;
    let mut raw = pre.to_vec();
    raw.extend_from_slice(&lb[..len_bytes]);
    raw.extend_from_slice(&dict);
    Ok(NpyHeader { raw, descr, fortran_order, shape })
}

/// Parse `{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }`.
fn parse_dict(t: &str) -> std::result::Result<(String, bool, Vec<u64>), String> {
    let t = t.trim_end_matches(['\n', ' ', '\x20']).trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|s| s.trim_end().strip_suffix('}'))
        .ok_or_else(|| "header is not a {...} dict".to_string())?;
    let value_of = |key: &str| -> std::result::Result<&str, String> {
        let k1 = format!("'{key}'");
        let k2 = format!("\"{key}\"");
        let at = inner.find(&k1).or_else(|| inner.find(&k2)).ok_or_else(|| format!("no '{key}' key"))?;
        let rest = inner[at + k1.len()..].trim_start();
        rest.strip_prefix(':').map(str::trim_start).ok_or_else(|| format!("no ':' after '{key}'"))
    };
    let d = value_of("descr")?;
    let descr = match d.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let end = d[1..].find(q).ok_or("unterminated descr string")?;
            d[1..1 + end].to_string()
        }
        Some('[') => {
            // Structured dtype: keep the list text (only used for display and python-blosc2's dtype).
            let mut depth = 0i32;
            let mut end = 0;
            for (i, c) in d.char_indices() {
                match c {
                    '[' | '(' => depth += 1,
                    ']' | ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if end == 0 {
                return Err("unterminated descr list".into());
            }
            d[..end].to_string()
        }
        _ => return Err("descr is neither a string nor a list".into()),
    };
    let f = value_of("fortran_order")?;
    let fortran_order = if f.starts_with("True") {
        true
    } else if f.starts_with("False") {
        false
    } else {
        return Err("fortran_order is not True/False".into());
    };
    let s = value_of("shape")?;
    let s = s.strip_prefix('(').ok_or("shape is not a tuple")?;
    let s = &s[..s.find(')').ok_or("unterminated shape tuple")?];
    let shape = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('L').parse::<u64>().map_err(|_| format!("shape entry {p:?} is not a size")))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((descr, fortran_order, shape))
}

/// A version 1.0 header (2.0 when it does not fit) for an array without a stored header.
pub fn make_header(descr: &str, fortran_order: bool, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_txt = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let descr_txt = if descr.starts_with('[') { descr.to_string() } else { format!("'{descr}'") };
    let fo = if fortran_order { "True" } else { "False" };
    let dict = format!("{{'descr': {descr_txt}, 'fortran_order': {fo}, 'shape': {shape_txt}, }}");
    for (major, lenb) in [(1u8, 2usize), (2, 4)] {
        let pre = 6 + 2 + lenb;
        let total = (pre + dict.len() + 1).div_ceil(64) * 64;
        let hlen = total - pre;
        if major == 1 && hlen > u16::MAX as usize {
            continue;
        }
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[major, 0]);
        out.extend_from_slice(&(hlen as u32).to_le_bytes()[..lenb]);
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        return out;
    }
    unreachable!("a 2.0 header always fits")
}

pub fn is_npy(path: &Path) -> bool {
    let mut m = [0u8; 6];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut m)).is_ok() && &m == MAGIC
}

/// Stream an `.npy` file into a `.b2nd` of the same logical array (a Fortran-order file is
/// transposed piece by piece), one chunk in flight.
pub fn npy_to_b2nd(a: &CompressArgs, path: &Path) -> Result<()> {
    let mut f = std::fs::File::open(path).map_err(|e| CliError::io(e, path))?;
    let file_len = f.metadata().map_err(|e| CliError::io(e, path))?.len();
    let h = read_header(&mut f, path)?;
    let data_len = file_len - h.raw.len() as u64;
    let input = crate::stream::Input { name: path.to_path_buf(), reader: Box::new(f), len: Some(data_len) };
    array_to_b2nd(a, &h, input, data_len, &path.with_extension("b2nd"))
}

/// Stream the items of the array `h` describes (`data_len` bytes in the file's order, from
/// `input`) into a new `.b2nd`: `a.output`, else `default_out`. The header is kept so the
/// array decompresses to an `.npy` with exactly these header bytes.
pub fn array_to_b2nd(
    a: &CompressArgs,
    h: &NpyHeader,
    input: crate::stream::Input,
    data_len: u64,
    default_out: &Path,
) -> Result<()> {
    let path = &input.name.clone();
    if h.holds_objects() {
        // NumPy pickles the Python objects: the bytes are not items of a fixed size.
        return Err(CliError::at(
            format!(
                "an array of Python objects (descr {}) holds pickled objects, not items of a fixed size: not supported",
                h.descr
            ),
            path,
        ));
    }
    let nitems = h.nitems().ok_or_else(|| CliError::at("shape overflows", path))?;
    let itemsize = match h.itemsize() {
        Some(n) => n as u64,
        None if nitems > 0 => data_len / nitems,
        None => 1,
    };
    if itemsize == 0 || nitems.checked_mul(itemsize) != Some(data_len) {
        return Err(CliError::at(
            format!("header says {nitems} items of {itemsize} bytes, the file holds {data_len} data bytes"),
            path,
        ));
    }
    let shape = h.shape.clone();
    let typesize = itemsize as usize;
    let cp = crate::raw::cparams(&a.codec, &a.common, typesize)?;
    if cp.typesize != typesize {
        return Err(CliError::at(
            format!("--typesize {} differs from the .npy itemsize {typesize}", cp.typesize),
            path,
        ));
    }
    // Chunks that are contiguous runs of the file (in its own order), so each is read once.
    let budget = match &a.codec.chunk_size {
        Some(c) => crate::params::size(c).map_err(CliError::new)?.max(1),
        None => chunk_budget(),
    };
    let file_view = FileView::new(&shape, h.fortran_order);
    let (chunks, blocks) = if nitems == 0 {
        nd::auto::choose(&shape, typesize, None, None)
    } else {
        let c = file_view.to_array(&layout::stream_chunks(&file_view.shape, typesize, budget));
        nd::auto::choose(&shape, typesize, Some(&c), None)
    };
    let geom = nd::Geometry::new(&shape, &chunks, &blocks, typesize).map_err(|e| nd_err(e, path))?;
    let out = match &a.output {
        Some(o) if o == "-" => return Err(CliError::new(".b2nd output cannot go to stdout; give a file name")),
        Some(o) => PathBuf::from(o),
        None => default_out.to_path_buf(),
    };
    let staged = Staged::new(&out, a.force)?;
    let tmp = staged.path();
    let dp = DParams { nthreads: cp.nthreads };
    let mut s = SChunk::create(tmp, !a.sparse, cp, dp).map_err(|e| CliError::frame(e, &out))?;
    if !a.codec.no_checksum {
        s.enable_checksums().map_err(|e| CliError::frame(e, &out))?;
    }
    s.set_vlmeta(HEADER_VLMETA, &header_vlmeta(&h.raw)).map_err(|e| CliError::frame(e, &out))?;
    if h.fortran_order {
        s.set_vlmeta(ORDER_VLMETA, &msgpack_str(LOGICAL)).map_err(|e| CliError::frame(e, &out))?;
    }
    let mut arr = nd::NdArray::create(s, geom, Some(&h.descr), nd::Fill::Zeros).map_err(|e| nd_err(e, &out))?;
    let mut progress = Progress::new("compress", Some(data_len), a.common.quiet);
    if shape.is_empty() {
        let mut item = Vec::new();
        input.reader.take(itemsize).read_to_end(&mut item).map_err(|e| CliError::io(e, path))?;
        arr.set_slice(&[], &item).map_err(|e| nd_err(e, path))?;
    } else {
        let file_chunks = file_view.to_file(&chunks);
        let pieces = layout::pieces(&file_view.shape, &file_chunks, typesize, budget);
        let sizes: Vec<usize> = pieces.iter().map(|p| sel_bytes(p, typesize)).collect();
        let mut reader = crate::stream::Chunks::sized(input, sizes.into_iter());
        for piece in &pieces {
            let want = sel_bytes(piece, typesize);
            let buf = reader.next_chunk()?.unwrap_or_default();
            if buf.len() != want {
                return Err(CliError::at("the file shrank while it was being read", path));
            }
            let (sel, buf) = file_view.piece_to_array(piece, buf, typesize);
            arr.set_slice(&sel, &buf).map_err(|e| nd_err(e, path))?;
            progress.add(want as u64);
        }
    }
    // Closing compacts a contiguous file written live (the frame layer's close).
    drop(arr);
    progress.finish();
    crate::stream::fsync(tmp)?;
    staged.commit()
}

/// Bytes held per piece of a conversion: the automatic chunk target (1..16 MiB).
fn chunk_budget() -> usize {
    nd::auto::targets().0
}

fn sel_bytes(sel: &[nd::DimSlice], itemsize: usize) -> usize {
    sel.iter().map(nd::DimSlice::len).product::<u64>() as usize * itemsize
}

/// The `.npy` file's own view of an array: its shape in the order the items are stored
/// (reversed for Fortran order), and the conversions between that view and the array's.
struct FileView {
    shape: Vec<u64>,
    fortran: bool,
}

impl FileView {
    fn new(array_shape: &[u64], fortran: bool) -> FileView {
        let shape = if fortran { array_shape.iter().rev().copied().collect() } else { array_shape.to_vec() };
        FileView { shape, fortran }
    }

    /// Per-axis values (chunks, selections) from the file's axis order to the array's.
    fn to_array<T: Clone>(&self, v: &[T]) -> Vec<T> {
        if self.fortran {
            v.iter().rev().cloned().collect()
        } else {
            v.to_vec()
        }
    }

    /// The same, from the array's order to the file's (reversal is its own inverse).
    fn to_file<T: Clone>(&self, v: &[T]) -> Vec<T> {
        self.to_array(v)
    }

    /// A piece read from the file: its selection in the array and its bytes in C order.
    fn piece_to_array(&self, piece: &[nd::DimSlice], buf: Vec<u8>, itemsize: usize) -> (Vec<nd::DimSlice>, Vec<u8>) {
        if !self.fortran {
            return (piece.to_vec(), buf);
        }
        let pshape: Vec<u64> = piece.iter().map(nd::DimSlice::len).collect();
        (self.to_array(piece), layout::reverse_axes(&buf, &pshape, itemsize))
    }

    /// A piece of the array (C-order bytes of `sel`) as the bytes the file stores for it.
    fn array_to_piece(&self, sel: &[nd::DimSlice], buf: Vec<u8>, itemsize: usize) -> Vec<u8> {
        if !self.fortran {
            return buf;
        }
        let ashape: Vec<u64> = sel.iter().map(nd::DimSlice::len).collect();
        layout::reverse_axes(&buf, &ashape, itemsize)
    }
}

fn msgpack_str(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    msgpack::encode(&Value::Str(s.to_string()), &mut out);
    out
}

fn header_vlmeta(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 5);
    msgpack::encode(&Value::Bin(raw.to_vec()), &mut out);
    out
}

fn nd_err(e: nd::Error, path: &Path) -> CliError {
    match e {
        nd::Error::Frame(f) => CliError::frame(f, path),
        nd::Error::BadChunk { chunk, reason } => CliError { chunk: Some(chunk as usize), ..CliError::at(reason, path) },
        e => CliError::at(e.to_string(), path),
    }
}

/// The header to write for a b2nd array and whether its items go out in Fortran order: the
/// stored original if it matches the array, else a new C-order one from its dtype and shape.
/// Files from before [`ORDER_VLMETA`] stored a Fortran array as its transpose: their items
/// are written out as stored.
fn header_for(arr: &nd::NdArray) -> (Vec<u8>, bool) {
    let shape = arr.shape().to_vec();
    if let Some(Ok(Value::Bin(raw))) = arr.schunk().vlmeta(HEADER_VLMETA).map(msgpack::decode) {
        if let Ok(h) = read_header(&mut raw.as_slice(), Path::new("")) {
            let logical_order = matches!(
                arr.schunk().vlmeta(ORDER_VLMETA).map(msgpack::decode),
                Some(Ok(Value::Str(v))) if v == LOGICAL
            );
            let transposed = h.fortran_order && !logical_order;
            let stored: Vec<u64> = if transposed { h.shape.iter().rev().copied().collect() } else { h.shape.clone() };
            let size_ok = h.itemsize().is_none_or(|n| n == arr.typesize());
            if stored == shape && size_ok && h.raw.len() == raw.len() {
                return (raw, h.fortran_order && logical_order);
            }
        }
    }
    let descr = arr.dtype().map(str::to_owned).unwrap_or_else(|| format!("|V{}", arr.typesize()));
    (make_header(&descr, false, &shape), false)
}

/// Bytes held per piece when writing an array out: two of its chunks, within 1..64 MiB
/// unless one chunk is larger (a piece, its decoded chunks and, for Fortran, its transpose
/// are in memory at once).
fn read_budget(arr: &nd::NdArray) -> usize {
    let cb = arr.geometry().chunk_bytes();
    (cb * 2).clamp(1 << 20, 64 << 20).max(cb)
}

/// Write a b2nd array as `.npy`, a bounded piece at a time.
pub fn b2nd_to_npy(a: &DecompressArgs, s: SChunk, path: &Path) -> Result<()> {
    let arr = nd::NdArray::from_schunk(s).map_err(|e| nd_err(e, path))?;
    let target = crate::raw::target(a.output.as_deref(), &a.input, || {
        crate::raw::strip(&a.input, &[".b2nd"]).map(|p| p.with_extension("npy"))
    })?;
    let (header, fortran) = header_for(&arr);
    let shape = arr.shape().to_vec();
    let ts = arr.typesize();
    let nbytes = shape.iter().product::<u64>() * ts as u64;
    let view = FileView::new(&shape, fortran);
    let mut progress = Progress::new("decompress", Some(nbytes), a.common.quiet);
    let sink = |w: &mut dyn Write, name: &Path| -> Result<()> {
        crate::stream::write_all(w, &header, name)?;
        if shape.is_empty() {
            let item = arr.get_slice(&[]).map_err(|e| nd_err(e, path))?;
            crate::stream::write_all(w, &item, name)?;
        } else {
            let file_chunks = view.to_file(arr.chunks());
            for piece in layout::pieces(&view.shape, &file_chunks, ts, read_budget(&arr)) {
                let sel = view.to_array(&piece);
                let buf = arr.get_slice(&sel).map_err(|e| nd_err(e, path))?;
                let buf = view.array_to_piece(&sel, buf, ts);
                crate::stream::write_all(w, &buf, name)?;
                progress.add(buf.len() as u64);
            }
        }
        w.flush().map_err(|e| CliError::io(e, name))?;
        progress.finish();
        Ok(())
    };
    crate::output::write_stream(target, a.force, sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        for (descr, fo, shape) in [("<f8", false, vec![3u64, 4]), ("|u1", true, vec![7]), ("<U3", false, vec![])] {
            let h = make_header(descr, fo, &shape);
            assert_eq!(h.len() % 64, 0);
            let p = read_header(&mut &h[..], Path::new("x")).unwrap();
            assert_eq!((p.descr.as_str(), p.fortran_order, &p.shape), (descr, fo, &shape));
            assert_eq!(p.raw, h);
        }
        let h = read_header(&mut &make_header("<U3", false, &[2])[..], Path::new("x")).unwrap();
        assert_eq!(h.itemsize(), Some(12));
        let s = "{'descr': [('a', '<i4'), ('b', '<f8', (2,))], 'fortran_order': False, 'shape': (5,), }";
        let (d, _, shape) = parse_dict(s).unwrap();
        assert_eq!(d, "[('a', '<i4'), ('b', '<f8', (2,))]");
        assert_eq!(shape, vec![5]);
        for bad in ["", "{'descr': '<f8'}", "{'descr': '<f8', 'fortran_order': 1, 'shape': ()}"] {
            assert!(parse_dict(bad).is_err(), "{bad}");
        }
        assert!(read_header(&mut &b"\x93NUMPY\x09\x00"[..], Path::new("x")).is_err());
    }
}
