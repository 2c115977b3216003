//! The HDF5 filter plugin's chunk codec (`oxblosc_hdf5::codec`), what its callback runs on the
//! bytes HDF5 hands it: arbitrary stored chunks with arbitrary cd_values never panic, a decode
//! that succeeds returns exactly the chunk size slot 3 names, and whatever encodes decodes
//! back to the same bytes.
//!
//! Input: byte 0 picks the filter (bit 0: Blosc2 or Blosc), the direction (bit 7: encode then
//! decode) and the number of cd_values (bits 1-4); that many little-endian u32 follow, then
//! the chunk.

use crate::MAX_FUZZ_NBYTES;
use oxblosc::hdf5::lazy::{ChunkFile, PartSpec, ReadOpts, Stored};
use oxblosc::hdf5::read::read_part;
use oxblosc_hdf5::codec::{decode_blosc1, decode_blosc2, encode_blosc1, encode_blosc2};

pub fn fuzz_hdf5_decode(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let ncd = usize::from((sel >> 1) & 0x0F);
    if rest.len() < 4 * ncd {
        return;
    }
    let (cd_bytes, chunk) = rest.split_at(4 * ncd);
    let mut cd: Vec<u32> = cd_bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let blosc2 = sel & 1 == 0;
    if sel & 0x80 != 0 {
        // Encode: slot 3 is the chunk size HDF5 hands over; keep shapes small.
        if cd.len() < 4 || chunk.is_empty() {
            return;
        }
        cd[3] = chunk.len() as u32;
        for v in cd.iter_mut().skip(8) {
            *v %= 64;
        }
        let enc = if blosc2 { encode_blosc2(&cd, chunk) } else { encode_blosc1(&cd, chunk) };
        if let Ok(enc) = enc {
            let dec = if blosc2 { decode_blosc2(&cd, &enc) } else { decode_blosc1(&cd, &enc) };
            assert_eq!(dec.as_deref(), Ok(chunk), "encoded chunk does not decode back (cd {cd:?})");
        }
        return;
    }
    if claimed_too_big(blosc2, chunk) {
        return;
    }
    let out = if blosc2 { decode_blosc2(&cd, chunk) } else { decode_blosc1(&cd, chunk) };
    if let (Ok(out), Some(&want)) = (out, cd.get(3)) {
        assert!(want == 0 || out.len() == want as usize, "decoded {} bytes, cd_values say {want}", out.len());
    }
}

/// Inputs claiming more than the fuzz memory budget are only parsed (as in the other targets).
fn claimed_too_big(blosc2: bool, chunk: &[u8]) -> bool {
    if blosc2 {
        match oxblosc::frame::SChunk::from_cframe(chunk) {
            Ok(s) => s.nbytes() > MAX_FUZZ_NBYTES as u64 || s.chunksize() > MAX_FUZZ_NBYTES as i64,
            Err(_) => false,
        }
    } else {
        oxblosc_chunk::cbuffer_sizes(chunk).is_ok_and(|(n, _, _)| n > MAX_FUZZ_NBYTES)
    }
}

/// The lazy read path (`oxblosc::hdf5::lazy`) on arbitrary stored chunks in a file: it never
/// panics, reads at most the chunk (plus the headers it read before reading it whole), and
/// when both it and the in-memory `read_part` decode a box they give the same number of bytes
/// and blocks, with 1 and 2 threads; with `exact` (valid chunks, from the replay test) the same
/// bytes too. (A corrupt block stream that runs past its block's end decodes the next
/// block's bytes in memory and zeros lazily: both are garbage, not the same garbage.)
///
/// Input: byte 0 bit 0 picks the filter (Blosc2 or Blosc); byte 1 the type size (1 + b % 8);
/// byte 2 the rank (1 + b % 3); then per dim 3 bytes: chunk dim (1 + b % 64), selection start
/// and length (modulo the dim); then the stored chunk.
pub fn fuzz_hdf5_lazy(data: &[u8]) {
    hdf5_lazy(data, false)
}

/// [`fuzz_hdf5_lazy`]'s body; `exact`: the chunk is valid, the reads must be equal.
pub fn hdf5_lazy(data: &[u8], exact: bool) {
    let [sel, ts, rank, rest @ ..] = data else { return };
    let (typesize, rank) = (1 + usize::from(*ts % 8), 1 + usize::from(*rank % 3));
    if rest.len() < 3 * rank {
        return;
    }
    let (dims_bytes, chunk) = rest.split_at(3 * rank);
    let mut dims = Vec::new();
    let mut boxsel = Vec::new();
    for d in dims_bytes.chunks_exact(3) {
        let n = 1 + u64::from(d[0] % 64);
        let lo = u64::from(d[1]) % n;
        dims.push(n);
        boxsel.push((lo, lo + u64::from(d[2]) % (n - lo + 1)));
    }
    let id = if sel & 1 == 0 { 32026 } else { 32001 };
    if claimed_too_big(id == 32026, chunk) {
        return;
    }
    let path = std::env::temp_dir().join(format!("oxblosc-fuzz-hdf5-lazy-{}", std::process::id()));
    if std::fs::write(&path, [&[0x5Au8; 3][..], chunk].concat()).is_err() {
        return;
    }
    let at = Stored { offset: 3, size: chunk.len() };
    let spec = PartSpec { filter_id: id, chunk_dims: &dims, typesize, sel: &boxsel };
    let Ok(file) = ChunkFile::open(&path, None) else { return };
    let mem = read_part(id, chunk, &dims, typesize, &boxsel, 1);
    for nt in [1, 2] {
        // The second round reads with the layout cached by the first.
        let lazy = file.read_part(at, &spec, &ReadOpts { nthreads: nt, whole_below: 0 });
        if exact {
            let (l, m) = (lazy.as_ref().expect("a valid chunk reads lazily"), mem.as_ref().expect("and in memory"));
            assert_eq!(l.data, m.data, "lazy and in-memory reads differ (dims {dims:?}, box {boxsel:?})");
        }
        if let (Ok(l), Ok(m)) = (&lazy, &mem) {
            assert_eq!((l.data.len(), l.blocks_decoded), (m.data.len(), m.blocks_decoded));
            assert!(l.bytes_read <= 2 * chunk.len() as u64 + 256);
        }
    }
    let _ = std::fs::remove_file(&path);
}
