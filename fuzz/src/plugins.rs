//! Chunks decoded inside a b2nd array (with a block shape), so the b2nd plugin filters
//! (NDCELL 32, NDMEAN 33) run their decoders on arbitrary bytes.

use oxblosc_chunk::{decompress_with, ChunkContext, ChunkHeader, DParams};

use crate::MAX_FUZZ_NBYTES;

/// `data[0]` picks 1-3 dimensions, the next bytes their block extents (1-16); the rest is
/// the chunk. Never panic; 1 and 2 threads agree.
pub fn fuzz_nd_filters(data: &[u8]) {
    let Some(&first) = data.first() else { return };
    let nd = 1 + usize::from(first % 3);
    let Some(dims) = data.get(1..1 + nd) else { return };
    let ctx = ChunkContext { blockshape: dims.iter().map(|&b| 1 + usize::from(b % 16)).collect() };
    let chunk = &data[1 + nd..];
    match ChunkHeader::parse(chunk) {
        Ok(h) if h.nbytes <= MAX_FUZZ_NBYTES => {}
        _ => return,
    }
    let one = decompress_with(chunk, &DParams { nthreads: 1 }, &ctx);
    let two = decompress_with(chunk, &DParams { nthreads: 2 }, &ctx);
    match (&one, &two) {
        (Ok(a), Ok(b)) => assert!(a == b, "1 and 2 threads decode differently"),
        (Err(_), Err(_)) => {}
        _ => panic!("1 thread: {:?}, 2 threads: {:?}", one.map(|v| v.len()), two.map(|v| v.len())),
    }
}

#[cfg(test)]
mod tests {
    /// The seeds (python-blosc2 NDCELL/NDMEAN chunks) really reach the filter decoders.
    #[test]
    fn seeds_decode() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions/nd_filters");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let data = std::fs::read(e.unwrap().path()).unwrap();
            let nd = 1 + usize::from(data[0] % 3);
            let ctx = super::ChunkContext { blockshape: data[1..1 + nd].iter().map(|&b| 1 + usize::from(b)).collect() };
            let out = super::decompress_with(&data[1 + nd..], &super::DParams { nthreads: 1 }, &ctx).unwrap();
            assert!(!out.is_empty());
            n += 1;
        }
        assert!(n >= 3);
    }
}
