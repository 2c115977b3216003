//! The filters' auxiliary data (`cd_values`): what each slot means, how `set_local` completes
//! it from the dataset's type and chunk, and the compression parameters read back from it.
//!
//! Blosc2 (32026) slots, shared by PyTables and hdf5plugin: 0 filter revision (1), 1 block size
//! (0 = automatic), 2 type size, 3 chunk bytes, 4 clevel, 5 filter in the last pipeline slot,
//! 6 codec, then for chunk ranks 2..=8 only: 7 rank, 8.. chunk dims.
//!
//! Our extension (never written unless asked for, so plain datasets stay identical to
//! hdf5plugin's): the whole filter pipeline with its metas and the split mode, after a marker.
//! A front-end passes it at slot 7 (it does not know the chunk rank); `set_local` moves it after
//! the dims. Other readers ignore values after the dims (decoding needs only the frame), but
//! the C filter refuses to decode when slot 7 exists and is not a rank in 2..=8, so the
//! extension is refused for other chunk ranks (1-D datasets take one filter, as hdf5plugin).
//!
//! Blosc (32001) slots, as the original hdf5-blosc filter: 0 filter revision (2), 1 Blosc
//! format version (2), 2 type size, 3 chunk bytes, 4 clevel, 5 shuffle (0, 1, 2), 6 codec.

use crate::chunk::SplitMode;

/// Registered HDF5 filter ids.
pub const BLOSC2_ID: i32 = 32026;
pub const BLOSC_ID: i32 = 32001;

/// Marks the start of our pipeline extension ("OX", version 1).
pub const EXT_MARKER: u32 = 0x4F58_0001;
/// Marker, 6 filter ids, 6 filter metas, split mode.
pub const EXT_LEN: usize = 1 + 6 + 6 + 1;
/// The Blosc2 filter records chunk dims for these ranks only (PyTables' limit).
pub const MAX_RANK: usize = 8;
/// Type sizes above this are stored as 1 (neither filter shuffles wider elements).
pub const MAX_TYPESIZE: usize = 255;

/// Compression parameters of one dataset, from its cd_values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub typesize: usize,
    pub chunk_bytes: usize,
    pub blocksize: usize,
    pub clevel: u8,
    pub codec: u8,
    pub filters: [u8; 6],
    pub filters_meta: [u8; 6],
    pub splitmode: SplitMode,
    /// Chunk dims when recorded (ranks 2..=8 by PyTables/hdf5plugin, any rank with our extension).
    pub chunk_dims: Option<Vec<u64>>,
}

fn slot(cd: &[u32], i: usize) -> Option<u32> {
    cd.get(i).copied()
}

fn small(v: u32, name: &str) -> Result<u8, String> {
    u8::try_from(v).map_err(|_| format!("cd_values {name} = {v} does not fit in a byte"))
}

/// Where the rank/dims group ends and where our extension starts, if any.
fn layout(cd: &[u32]) -> (Option<Vec<u64>>, Option<usize>) {
    if slot(cd, 7) == Some(EXT_MARKER) {
        return (None, Some(7));
    }
    let Some(rank) = slot(cd, 7).map(|r| r as usize) else { return (None, None) };
    if rank == 0 || cd.len() < 8 + rank {
        return (None, None);
    }
    let dims = cd[8..8 + rank].iter().map(|&d| u64::from(d)).collect();
    let ext = (slot(cd, 8 + rank) == Some(EXT_MARKER)).then_some(8 + rank);
    (Some(dims), ext)
}

/// Read the Blosc2 filter's parameters (defaults as the C filter: clevel 5, shuffle, blosclz).
pub fn blosc2_params(cd: &[u32]) -> Result<Params, String> {
    if cd.len() < 4 {
        return Err(format!("{} cd_values, at least 4 needed (was set_local run?)", cd.len()));
    }
    let mut filters = [0u8; 6];
    filters[5] = small(slot(cd, 5).unwrap_or(1), "filter")?;
    let mut p = Params {
        typesize: (cd[2] as usize).max(1),
        chunk_bytes: cd[3] as usize,
        blocksize: cd[1] as usize,
        clevel: small(slot(cd, 4).unwrap_or(5), "clevel")?,
        codec: small(slot(cd, 6).unwrap_or(0), "codec")?,
        filters,
        filters_meta: [0; 6],
        splitmode: SplitMode::ForwardCompat,
        chunk_dims: None,
    };
    let (dims, ext) = layout(cd);
    p.chunk_dims = dims;
    if let Some(at) = ext {
        let e = cd.get(at..at + EXT_LEN).ok_or("cd_values: truncated oxblosc pipeline extension")?;
        for i in 0..6 {
            p.filters[i] = small(e[1 + i], "pipeline filter")?;
            p.filters_meta[i] = small(e[7 + i], "pipeline filter meta")?;
        }
        p.splitmode = SplitMode::from_id(small(e[13], "splitmode")?).map_err(|e| e.to_string())?;
    }
    Ok(p)
}

/// Read the Blosc filter's parameters (defaults as hdf5-blosc: clevel 5, shuffle, blosclz).
pub fn blosc1_params(cd: &[u32]) -> Result<Params, String> {
    if cd.len() < 4 {
        return Err(format!("{} cd_values, at least 4 needed (was set_local run?)", cd.len()));
    }
    let mut filters = [0u8; 6];
    filters[5] = small(slot(cd, 5).unwrap_or(1), "shuffle")?;
    if filters[5] > 2 {
        return Err(format!("shuffle {} is not 0 (none), 1 (byte) or 2 (bit)", filters[5]));
    }
    Ok(Params {
        typesize: (cd[2] as usize).max(1),
        chunk_bytes: cd[3] as usize,
        blocksize: 0,
        clevel: small(slot(cd, 4).unwrap_or(5), "clevel")?,
        codec: small(slot(cd, 6).unwrap_or(0), "codec")?,
        filters,
        filters_meta: [0; 6],
        splitmode: SplitMode::Auto,
        chunk_dims: None,
    })
}

/// The type size both filters record: the base type's for HDF5 array types, 1 above 255.
pub fn recorded_typesize(base_typesize: usize) -> u32 {
    if base_typesize == 0 || base_typesize > MAX_TYPESIZE {
        1
    } else {
        base_typesize as u32
    }
}

/// Chunk bytes for slot 3: the full element size times the chunk's element count.
fn chunk_bytes(elem_size: usize, dims: &[u64]) -> Result<u32, String> {
    let n = dims.iter().try_fold(elem_size as u64, |a, &d| a.checked_mul(d));
    n.and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("a chunk of {dims:?} elements of {elem_size} bytes exceeds 4 GiB"))
}

/// Blosc2 `set_local`: complete the application's values for a dataset whose elements take
/// `elem_size` bytes (base type `base_typesize`) and whose chunks are `dims`.
pub fn blosc2_set_local(
    given: &[u32],
    elem_size: usize,
    base_typesize: usize,
    dims: &[u64],
) -> Result<Vec<u32>, String> {
    let (_, ext) = layout(given);
    let ext = match ext {
        Some(at) => Some(given.get(at..at + EXT_LEN).ok_or("cd_values: truncated oxblosc pipeline extension")?),
        None => None,
    };
    if ext.is_some() && !(2..=MAX_RANK).contains(&dims.len()) {
        return Err(format!(
            "a filter pipeline, filters_meta or split mode needs chunks of rank 2 to {MAX_RANK} (these chunks have \
             rank {}): HDF5's Blosc2 readers refuse extra cd_values otherwise; use one filter",
            dims.len()
        ));
    }
    let plain = match ext {
        Some(_) => 7,
        None => given.len().clamp(4, 7),
    };
    let mut out: Vec<u32> = (0..plain).map(|i| slot(given, i).unwrap_or(0)).collect();
    out[0] = 1;
    out[2] = recorded_typesize(base_typesize);
    out[3] = chunk_bytes(elem_size, dims)?;
    let defaults = [(4, 5), (5, 1), (6, 0)];
    let record_dims = (2..=MAX_RANK).contains(&dims.len());
    for (i, v) in defaults {
        if i >= given.len() && (i < out.len() || record_dims) {
            if i >= out.len() {
                out.push(v);
            } else {
                out[i] = v;
            }
        }
    }
    if record_dims {
        out.push(dims.len() as u32);
        for &d in dims {
            out.push(u32::try_from(d).map_err(|_| format!("chunk dim {d} exceeds 2**32"))?);
        }
    }
    if let Some(e) = ext {
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// Blosc `set_local`: slots 0-3 (revision 2, format 2, type size, chunk bytes), the rest kept.
pub fn blosc1_set_local(
    given: &[u32],
    elem_size: usize,
    base_typesize: usize,
    dims: &[u64],
) -> Result<Vec<u32>, String> {
    let mut out: Vec<u32> = (0..given.len().max(4)).map(|i| slot(given, i).unwrap_or(0)).collect();
    out[0] = 2;
    out[1] = 2;
    out[2] = recorded_typesize(base_typesize);
    out[3] = chunk_bytes(elem_size, dims)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_local_matches_the_values_hdf5plugin_and_pytables_record() {
        // The verified final values of the research notes (section 1.2).
        assert_eq!(
            blosc2_set_local(&[0, 0, 0, 0, 3, 2, 5], 4, 4, &[20, 25, 30]).unwrap(),
            [1, 0, 4, 60000, 3, 2, 5, 3, 20, 25, 30]
        );
        assert_eq!(blosc2_set_local(&[0, 0, 0, 0, 5, 1, 0], 8, 8, &[500_000]).unwrap(), [1, 0, 8, 4_000_000, 5, 1, 0]);
        assert_eq!(blosc2_set_local(&[5, 32000, 7, 99, 5, 1], 32, 32, &[1000]).unwrap(), [1, 32000, 32, 32000, 5, 1]);
        assert_eq!(
            blosc2_set_local(&[5, 25600, 7, 99, 5, 1, 1], 8, 8, &[50, 64]).unwrap(),
            [1, 25600, 8, 25600, 5, 1, 1, 2, 50, 64]
        );
        // No codec given but rank 2: slot 6 gets the default so that slot 7 is the rank.
        assert_eq!(blosc2_set_local(&[0, 0, 0, 0, 5, 1], 8, 8, &[4, 4]).unwrap(), [1, 0, 8, 128, 5, 1, 0, 2, 4, 4]);
        // Rank 9: no dims, as the C filter.
        assert_eq!(blosc2_set_local(&[0, 0, 0, 0, 5, 1, 0], 1, 1, &[1; 9]).unwrap(), [1, 0, 1, 1, 5, 1, 0]);
    }

    #[test]
    fn the_extension_moves_after_the_dims_and_reads_back() {
        let mut given = vec![0, 0, 0, 0, 7, 35, 5, EXT_MARKER, 0, 0, 0, 0, 1, 35, 0, 0, 0, 0, 0, 0, 2];
        let out = blosc2_set_local(&given, 8, 8, &[10, 20]).unwrap();
        assert_eq!(&out[..10], &[1, 0, 8, 1600, 7, 35, 5, 2, 10, 20]);
        assert_eq!(&out[10..], &given[7..]);
        let p = blosc2_params(&out).unwrap();
        assert_eq!(p.filters, [0, 0, 0, 0, 1, 35]);
        assert_eq!(p.splitmode, SplitMode::Never);
        assert_eq!(p.chunk_dims, Some(vec![10, 20]));
        // Running set_local again (a copied creation property list) keeps everything.
        assert_eq!(blosc2_set_local(&out, 8, 8, &[10, 20]).unwrap(), out);
        // 1-D and rank 9 chunks cannot carry it (C readers would refuse every chunk).
        assert!(blosc2_set_local(&given, 8, 8, &[100]).unwrap_err().contains("rank 1"));
        assert!(blosc2_set_local(&given, 8, 8, &[2; 9]).is_err());
        given.truncate(10);
        assert!(blosc2_set_local(&given, 8, 8, &[10, 20]).is_err());
    }

    #[test]
    fn blosc1_set_local_and_params() {
        let out = blosc1_set_local(&[0, 0, 0, 0, 9, 2, 1], 300, 300, &[10, 10]).unwrap();
        assert_eq!(out, [2, 2, 1, 30000, 9, 2, 1]);
        let p = blosc1_params(&out).unwrap();
        assert_eq!((p.clevel, p.codec, p.filters[5], p.typesize), (9, 1, 2, 1));
        assert!(blosc1_params(&[2, 2, 4, 100, 5, 7]).is_err());
        assert!(blosc2_params(&[1, 0, 4]).is_err());
    }
}
