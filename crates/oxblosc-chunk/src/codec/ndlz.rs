//! NDLZ, the Blosc-registered codec 32: an LZ-style codec over the square cells of a 2-D
//! block of bytes (`codec_meta` 4: 4x4 cells, 8: 8x8 cells). Stream format as C-Blosc2's
//! plugin writes it (worked out from its output, python-blosc2 4.14.1):
//!
//! * header: `ndim` (always 2), then the block shape as two little-endian u32;
//! * one token per cell, cells in row-major order. References point back into the stream
//!   itself: `offset` (u16 LE) is the distance from the token byte to earlier literal bytes,
//!   and rows that are referenced lie there as consecutive rows of `cell` bytes.
//!   - `0x00`: literal cell (for a cell clipped by the block edge: its clipped rows, raw);
//!   - `0x40 b`: every byte of the cell is `b`;
//!   - `0xC0 off`: the whole cell;
//!   - 4x4 only: a triple (`0xE8`/`0xF0`/`0xF8`/`0xE0` for rows 012/013/023/123) or a pair
//!     (`0x88`/`0x90`/`0x98`/`0xB0`/`0xB8`/`0x80` for rows 01/02/03/12/13/23) of the cell's
//!     rows comes from consecutive earlier rows, the other rows follow literally; two pairs
//!     (`0x28`/`0x30`/`0x38` for 01+23 / 02+13 / 03+12) carry two offsets;
//!   - 8x8 only: `0xA8+i` rows i..i+2 and `0x88+i` rows i..i+1 come from consecutive
//!     earlier rows, the other rows follow literally.
//!
//! The encoder finds candidates with three hash tables (cells, triples, pairs; XXH32 seed 1,
//! 12 bits) filled from literal cells only, where a slot is written only if it was empty
//! before the cell. Only typesize 1 and 2-D blocks are supported, as in C-Blosc2.

use xxhash_rust::xxh32::xxh32;

use crate::registry::{Codec, CodecParams};

/// The Blosc-registered id of NDLZ.
pub const ID: u8 = 32;

const HASH_LOG: u32 = 12;
const MAX_DISTANCE: usize = u16::MAX as usize;
const LITERAL: u8 = 0x00;
const SAME: u8 = 0x40;
const CELL: u8 = 0xC0;

/// 4x4: new-cell rows taken by a reference -> token.
const TRIPLES4: [([usize; 3], u8); 4] = [([0, 1, 2], 0xE8), ([0, 1, 3], 0xF0), ([0, 2, 3], 0xF8), ([1, 2, 3], 0xE0)];
const PAIRS4: [([usize; 2], u8); 6] =
    [([0, 1], 0x88), ([0, 2], 0x90), ([0, 3], 0x98), ([1, 2], 0xB0), ([1, 3], 0xB8), ([2, 3], 0x80)];
const DOUBLES4: [([usize; 2], [usize; 2], u8); 3] =
    [([0, 1], [2, 3], 0x28), ([0, 2], [1, 3], 0x30), ([0, 3], [1, 2], 0x38)];

pub struct Ndlz;

impl Codec for Ndlz {
    fn name(&self) -> &str {
        "ndlz"
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        let (b0, b1) = geometry(p, src.len())?;
        Ok(encode(src, b0, b1, cell_size(p.meta)?, dst))
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        decode(src, cell_size(p.meta)?, dst)
    }
    /// A 2-byte token stands for at most one 8x8 cell.
    fn max_expansion(&self, csize: usize) -> Option<usize> {
        Some(csize.saturating_mul(32).saturating_add(1024))
    }
}

fn cell_size(meta: u8) -> Result<usize, String> {
    match meta {
        4 | 8 => Ok(meta as usize),
        m => Err(format!("NDLZ codec_meta must be 4 (4x4 cells) or 8 (8x8 cells), got {m}")),
    }
}

/// The block's two dimensions, checked as C-Blosc2 checks them.
fn geometry(p: &CodecParams, len: usize) -> Result<(usize, usize), String> {
    if p.typesize != 1 {
        return Err(format!("NDLZ works on 1-byte items only (typesize {})", p.typesize));
    }
    match p.blockshape {
        [b0, b1] if b0 * b1 == len => Ok((*b0, *b1)),
        [b0, b1] => Err(format!("NDLZ: block of {len} bytes does not match the block shape {b0}x{b1}")),
        [] => Err("NDLZ needs a 2-D b2nd array (no block shape: not an array chunk)".into()),
        s => Err(format!("NDLZ works on 2-D arrays only (block shape has {} dimensions)", s.len())),
    }
}

fn slot(bytes: &[u8]) -> usize {
    (xxh32(bytes, 1) >> (32 - HASH_LOG)) as usize
}

/// One hash table: stream positions of earlier literal bytes, 0 = empty.
struct Table(Vec<usize>);

impl Table {
    fn new() -> Self {
        Table(vec![0; 1 << HASH_LOG])
    }
    /// Distance from `anchor` back to an earlier copy of `key` in `out`, 0 when none.
    fn find(&self, key: &[u8], out: &[u8], anchor: usize) -> usize {
        let pos = self.0[slot(key)];
        if pos != 0 && anchor - pos <= MAX_DISTANCE && out[pos..pos + key.len()] == *key {
            anchor - pos
        } else {
            0
        }
    }
}

/// Compress one block; 0 when the stream does not fit `dst` (stored raw then).
pub fn encode(src: &[u8], b0: usize, b1: usize, n: usize, dst: &mut [u8]) -> usize {
    if src.len() < n * n || b0 > u32::MAX as usize || b1 > u32::MAX as usize {
        return 0;
    }
    let mut out = Vec::with_capacity(dst.len());
    out.push(2);
    out.extend_from_slice(&(b0 as u32).to_le_bytes());
    out.extend_from_slice(&(b1 as u32).to_le_bytes());
    let (mut cells, mut triples, mut pairs) = (Table::new(), Table::new(), Table::new());
    let mut cell = vec![0u8; n * n];
    let mut pending: Vec<(u8, usize, usize)> = Vec::new();
    for c0 in 0..b0.div_ceil(n) {
        for c1 in 0..b1.div_ceil(n) {
            if out.len() + n * n + 1 > dst.len() {
                return 0;
            }
            let (h, w) = ((b0 - c0 * n).min(n), (b1 - c1 * n).min(n));
            let orig = c0 * n * b1 + c1 * n;
            if h < n || w < n {
                out.push(LITERAL);
                for i in 0..h {
                    out.extend_from_slice(&src[orig + i * b1..][..w]);
                }
                continue;
            }
            for i in 0..n {
                cell[i * n..(i + 1) * n].copy_from_slice(&src[orig + i * b1..][..n]);
            }
            let anchor = out.len();
            if cell.iter().all(|&b| b == cell[0]) {
                out.extend_from_slice(&[SAME, cell[0]]);
                continue;
            }
            let d = cells.find(&cell, &out, anchor);
            if d != 0 {
                out.push(CELL);
                out.extend_from_slice(&(d as u16).to_le_bytes());
                continue;
            }
            let done = if n == 4 {
                reference4(&cell, &triples, &pairs, &mut out, anchor)
            } else {
                reference8(&cell, &triples, &pairs, &mut out, anchor)
            };
            if done {
                continue;
            }
            out.push(LITERAL);
            let lit = out.len();
            out.extend_from_slice(&cell);
            // Register the cell, its consecutive triples and pairs, each only where the
            // slot was empty before this cell.
            pending.clear();
            pending.push((0, slot(&cell), lit));
            for i in 0..=n - 3 {
                pending.push((1, slot(&cell[i * n..(i + 3) * n]), lit + i * n));
            }
            for i in 0..=n - 2 {
                pending.push((2, slot(&cell[i * n..(i + 2) * n]), lit + i * n));
            }
            let empty: Vec<bool> =
                pending.iter().map(|&(t, s, _)| [&cells, &triples, &pairs][t as usize].0[s] == 0).collect();
            for (&(t, s, pos), e) in pending.iter().zip(empty) {
                if e {
                    [&mut cells, &mut triples, &mut pairs][t as usize].0[s] = pos;
                }
            }
        }
    }
    if out.len() > dst.len() {
        return 0;
    }
    dst[..out.len()].copy_from_slice(&out);
    out.len()
}

fn rows_of(cell: &[u8], n: usize, rows: &[usize], key: &mut Vec<u8>) {
    key.clear();
    for &r in rows {
        key.extend_from_slice(&cell[r * n..(r + 1) * n]);
    }
}

/// Emit the references to earlier rows a 4x4 cell can use (two pairs, a triple, a pair).
fn reference4(cell: &[u8], triples: &Table, pairs: &Table, out: &mut Vec<u8>, anchor: usize) -> bool {
    let mut key = Vec::with_capacity(12);
    let mut pair_d = [0usize; 6];
    for (k, (rows, _)) in PAIRS4.iter().enumerate() {
        rows_of(cell, 4, rows, &mut key);
        pair_d[k] = pairs.find(&key, out, anchor);
    }
    let d_of = |rows: [usize; 2]| pair_d[PAIRS4.iter().position(|(r, _)| *r == rows).unwrap_or(0)];
    for (p, q, tok) in DOUBLES4 {
        let (dp, dq) = (d_of(p), d_of(q));
        if dp != 0 && dq != 0 {
            out.push(tok);
            out.extend_from_slice(&(dp as u16).to_le_bytes());
            out.extend_from_slice(&(dq as u16).to_le_bytes());
            return true;
        }
    }
    for (rows, tok) in TRIPLES4 {
        rows_of(cell, 4, &rows, &mut key);
        let d = triples.find(&key, out, anchor);
        if d != 0 {
            emit(out, tok, d, cell, 4, &rows);
            return true;
        }
    }
    for (k, (rows, tok)) in PAIRS4.iter().enumerate() {
        if pair_d[k] != 0 {
            emit(out, *tok, pair_d[k], cell, 4, rows);
            return true;
        }
    }
    false
}

/// Emit the references an 8x8 cell can use (three, then two consecutive rows).
fn reference8(cell: &[u8], triples: &Table, pairs: &Table, out: &mut Vec<u8>, anchor: usize) -> bool {
    for (k, table) in [(3usize, triples), (2, pairs)] {
        for i in 0..=8 - k {
            let d = table.find(&cell[i * 8..(i + k) * 8], out, anchor);
            if d != 0 {
                let tok = if k == 3 { 0xA8 } else { 0x88 } + i as u8;
                let rows: Vec<usize> = (i..i + k).collect();
                emit(out, tok, d, cell, 8, &rows);
                return true;
            }
        }
    }
    false
}

/// A token, its offset and the rows of the cell not in `taken`, literally.
fn emit(out: &mut Vec<u8>, tok: u8, d: usize, cell: &[u8], n: usize, taken: &[usize]) {
    out.push(tok);
    out.extend_from_slice(&(d as u16).to_le_bytes());
    for r in (0..n).filter(|r| !taken.contains(r)) {
        out.extend_from_slice(&cell[r * n..(r + 1) * n]);
    }
}

/// What a token says about the rows of a full cell.
enum Plan {
    Literal,
    Same,
    Cell,
    /// Rows taken from one earlier place (consecutive there), the rest literal.
    Rows(&'static [usize]),
    /// Two pairs from two earlier places.
    Two(&'static [usize; 2], &'static [usize; 2]),
}

/// 8x8: rows i..i+2 (tokens 0xA8+i) and i..i+1 (0x88+i).
const TRIPLES8: [[usize; 3]; 6] = [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6, 7]];
const PAIRS8: [[usize; 2]; 7] = [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7]];

fn plan(tok: u8, n: usize) -> Option<Plan> {
    match tok {
        LITERAL => return Some(Plan::Literal),
        SAME => return Some(Plan::Same),
        CELL => return Some(Plan::Cell),
        _ => {}
    }
    if n == 4 {
        if let Some((p, q, _)) = DOUBLES4.iter().find(|d| d.2 == tok) {
            return Some(Plan::Two(p, q));
        }
        if let Some((rows, _)) = TRIPLES4.iter().find(|t| t.1 == tok) {
            return Some(Plan::Rows(rows));
        }
        PAIRS4.iter().find(|t| t.1 == tok).map(|(rows, _)| Plan::Rows(rows))
    } else {
        match tok {
            0xA8..=0xAD => Some(Plan::Rows(&TRIPLES8[(tok - 0xA8) as usize])),
            0x88..=0x8E => Some(Plan::Rows(&PAIRS8[(tok - 0x88) as usize])),
            _ => None,
        }
    }
}

/// Reads a stream with bounds checks on every byte it takes.
struct Reader<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, k: usize) -> Result<&'a [u8], String> {
        let r = self.s.get(self.pos..self.pos + k).ok_or_else(|| {
            format!("NDLZ stream truncated: needs {k} bytes at offset {} of {}", self.pos, self.s.len())
        })?;
        self.pos += k;
        Ok(r)
    }
    fn u16(&mut self) -> Result<usize, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    }
    /// `len` earlier stream bytes `d` back from the token at `anchor`.
    fn back(&self, anchor: usize, d: usize, len: usize) -> Result<&'a [u8], String> {
        if d == 0 || d > anchor || anchor - d + len > anchor {
            return Err(format!("NDLZ reference at offset {anchor} points outside the earlier stream (distance {d})"));
        }
        Ok(&self.s[anchor - d..anchor - d + len])
    }
}

/// Decode one block into exactly `dst.len()` bytes.
pub fn decode(src: &[u8], n: usize, dst: &mut [u8]) -> Result<(), String> {
    let mut r = Reader { s: src, pos: 0 };
    let head = r.take(9)?;
    if head[0] != 2 {
        return Err(format!("NDLZ stream says {} dimensions (only 2 are defined)", head[0]));
    }
    let b0 = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let b1 = u32::from_le_bytes([head[5], head[6], head[7], head[8]]) as usize;
    if b0.checked_mul(b1) != Some(dst.len()) {
        return Err(format!("NDLZ stream block {b0}x{b1} does not match the {} bytes expected", dst.len()));
    }
    let mut cell = vec![0u8; n * n];
    for c0 in 0..b0.div_ceil(n) {
        for c1 in 0..b1.div_ceil(n) {
            let anchor = r.pos;
            let tok = r.take(1)?[0];
            let (h, w) = ((b0 - c0 * n).min(n), (b1 - c1 * n).min(n));
            let orig = c0 * n * b1 + c1 * n;
            if h < n || w < n {
                if tok != LITERAL {
                    return Err(format!("NDLZ: token {tok:#04x} at offset {anchor} for a clipped cell"));
                }
                for i in 0..h {
                    dst[orig + i * b1..][..w].copy_from_slice(r.take(w)?);
                }
                continue;
            }
            let bad = || format!("NDLZ: unknown token {tok:#04x} at offset {anchor}");
            match plan(tok, n).ok_or_else(bad)? {
                Plan::Literal => cell.copy_from_slice(r.take(n * n)?),
                Plan::Same => cell.fill(r.take(1)?[0]),
                Plan::Cell => {
                    let d = r.u16()?;
                    cell.copy_from_slice(r.back(anchor, d, n * n)?);
                }
                Plan::Rows(rows) => {
                    let d = r.u16()?;
                    let from = r.back(anchor, d, rows.len() * n)?;
                    for (k, &row) in rows.iter().enumerate() {
                        cell[row * n..(row + 1) * n].copy_from_slice(&from[k * n..(k + 1) * n]);
                    }
                    for row in (0..n).filter(|x| !rows.contains(x)) {
                        cell[row * n..(row + 1) * n].copy_from_slice(r.take(n)?);
                    }
                }
                Plan::Two(p, q) => {
                    let (dp, dq) = (r.u16()?, r.u16()?);
                    for (rows, d) in [(p, dp), (q, dq)] {
                        let from = r.back(anchor, d, 2 * n)?;
                        for (k, &row) in rows.iter().enumerate() {
                            cell[row * n..(row + 1) * n].copy_from_slice(&from[k * n..(k + 1) * n]);
                        }
                    }
                }
            }
            for i in 0..n {
                dst[orig + i * b1..][..n].copy_from_slice(&cell[i * n..(i + 1) * n]);
            }
        }
    }
    if r.pos != src.len() {
        return Err(format!("NDLZ stream has {} bytes after the last cell", src.len() - r.pos));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(b0: usize, b1: usize, n: usize, data: &[u8]) -> usize {
        let mut dst = vec![0u8; data.len() + 64];
        let len = encode(data, b0, b1, n, &mut dst);
        if len > 0 {
            let mut back = vec![0u8; data.len()];
            decode(&dst[..len], n, &mut back).unwrap();
            assert_eq!(back, data, "{b0}x{b1} cells {n}");
        }
        len
    }

    #[test]
    fn structured_blocks_roundtrip_and_compress() {
        let rows: Vec<[u8; 8]> = (0..5u8).map(|k| [k, k * 3, 7, k ^ 5, 1, k, 9, k + 2]).collect();
        for n in [4, 8] {
            for (b0, b1) in [(16, 16), (13, 22), (40, 37), (8, 8), (64, 64)] {
                let data: Vec<u8> = (0..b0 * b1).map(|i| rows[(i / b1 * 7 + i % b1 / n * 3) % 5][i % n]).collect();
                let len = roundtrip(b0, b1, n, &data);
                assert!(len > 0 && (b0 * b1 < 256 || len < data.len()), "{b0}x{b1}/{n}: {len}");
            }
        }
    }

    #[test]
    fn bad_streams_are_errors_not_panics() {
        let mut dst = vec![0u8; 64];
        assert!(decode(&[2, 8, 0, 0, 0, 8, 0, 0, 0, 0xC0, 5, 0], 4, &mut dst).is_err());
        assert!(decode(&[3, 8, 0, 0, 0, 8, 0, 0, 0], 4, &mut dst).is_err());
        assert!(decode(&[2, 8, 0, 0, 0, 8, 0, 0, 0, 0x12], 4, &mut dst).is_err());
        assert!(decode(&[2, 8, 0, 0, 0, 8], 4, &mut dst).is_err());
        assert!(decode(&[2, 9, 0, 0, 0, 8, 0, 0, 0], 4, &mut dst).is_err());
        // Every token byte, on a stream too short for it: an error, whatever the token.
        for tok in 0..=255u8 {
            for n in [4, 8] {
                let mut s = vec![2, 8, 0, 0, 0, 8, 0, 0, 0, tok, 1, 0];
                s.resize(12 + 8, 0);
                let _ = decode(&s, n, &mut dst);
            }
        }
    }
}
