//! The HDF5 filter plugin's chunk codec (`oxblosc_hdf5::codec`), what its callback runs on the
//! bytes HDF5 hands it: arbitrary stored chunks with arbitrary cd_values never panic, a decode
//! that succeeds returns exactly the chunk size slot 3 names, and whatever encodes decodes
//! back to the same bytes.
//!
//! Input: byte 0 picks the filter (bit 0: Blosc2 or Blosc), the direction (bit 7: encode then
//! decode) and the number of cd_values (bits 1-4); that many little-endian u32 follow, then
//! the chunk.

use crate::MAX_FUZZ_NBYTES;
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
