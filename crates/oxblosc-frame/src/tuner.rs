//! The per-chunk tuner hook: something above this layer (the facade's tuner) picks the
//! compression parameters of each new chunk from that chunk's data. Only the chunk headers
//! record the choice; the frame keeps the super-chunk's own parameters, so any Blosc2 reader
//! decodes the result.

use oxblosc_chunk::CParams;

/// Picks compression parameters per chunk. A super-chunk calls it in chunk order, one chunk
/// at a time (writers that build chunks in parallel go sequential when a tuner is set, so
/// the picks do not depend on thread timing).
pub trait ChunkTuner: Send + Sync + std::fmt::Debug {
    /// Parameters for the chunk holding `data`, given the super-chunk's `base` (whose
    /// `typesize`, `nthreads` and `blocksize` the result keeps).
    fn choose(&self, data: &[u8], base: &CParams) -> CParams;

    /// The chunk just compressed with what [`ChunkTuner::choose`] returned: its sizes.
    fn compressed(&self, nbytes: usize, cbytes: usize);
}
