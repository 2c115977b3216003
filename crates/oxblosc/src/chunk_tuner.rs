//! The per-chunk tuner (`CParams.tuner = Tuner.BTUNE` in Python): a super-chunk or array
//! being written asks it for each chunk's parameters ([`crate::frame::ChunkTuner`]).
//!
//! Cheap by default: the quick search of [`crate::tune::tune_chunk`] runs on the first chunk,
//! and again only every `every` chunks or when a chunk's compression ratio drifts more than
//! `drift` (a fraction) from the ratio of the first chunk compressed with the current pick;
//! the chunks in between reuse the pick at no cost. Codec, clevel, filters and (for super-
//! chunks) the split mode come from the search; type size, threads and block size stay the
//! caller's. Lossy filters only when `allow_lossy`. With the `Ratio` objective the picks
//! depend on the data and the seed only; the speed objectives also depend on timings.

use std::sync::Mutex;
use std::time::Duration;

use crate::chunk::CParams;
use crate::tune::{tune_chunk, Candidate, Objective, TuneOptions};

/// Settings of a [`PerChunkTuner`].
#[derive(Debug, Clone)]
pub struct PerChunkOptions {
    pub objective: Objective,
    /// Search again after this many chunks (0: only on drift).
    pub every: usize,
    /// Search again when a chunk's ratio differs from the reference by more than this
    /// fraction of it (0: never on drift).
    pub drift: f64,
    /// Time budget of one search.
    pub time_budget: Duration,
    pub allow_lossy: bool,
    pub seed: u64,
}

impl Default for PerChunkOptions {
    fn default() -> Self {
        PerChunkOptions {
            objective: Objective::Balanced,
            every: 64,
            drift: 0.5,
            time_budget: Duration::from_millis(250),
            allow_lossy: false,
            seed: 0,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// The current pick (None: search on the next chunk).
    pick: Option<Candidate>,
    /// Chunks given the current pick so far.
    used: usize,
    /// Ratio of the first chunk compressed with the current pick.
    reference: Option<f64>,
    /// Searches run so far.
    searches: usize,
}

/// Picks each chunk's parameters with [`tune_chunk`], re-tuning as [`PerChunkOptions`] says.
#[derive(Debug)]
pub struct PerChunkTuner {
    opts: PerChunkOptions,
    state: Mutex<State>,
}

impl PerChunkTuner {
    pub fn new(opts: PerChunkOptions) -> Self {
        PerChunkTuner { opts, state: Mutex::new(State::default()) }
    }

    /// Searches run so far (for tests and reports).
    pub fn searches(&self) -> usize {
        self.lock().searches
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the state half-updated in a harmful way.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl crate::frame::ChunkTuner for PerChunkTuner {
    fn choose(&self, data: &[u8], base: &CParams) -> CParams {
        let mut st = self.lock();
        let due = self.opts.every > 0 && st.used >= self.opts.every;
        if st.pick.is_none() || due {
            let opts = TuneOptions {
                objective: self.opts.objective,
                time_budget: self.opts.time_budget,
                typesize: base.typesize,
                allow_lossy: self.opts.allow_lossy,
                // A different seed per search: windows move across the data.
                seed: self.opts.seed.wrapping_add(st.searches as u64),
            };
            // Data the search cannot sample (tiny, odd typesize) keeps the base parameters.
            let Ok(r) = tune_chunk(data, &opts, base.splitmode, base.blocksize) else { return base.clone() };
            st.pick = Some(r.best.candidate);
            (st.used, st.reference) = (0, None);
            st.searches += 1;
        }
        st.used += 1;
        let c = st.pick.expect("set above");
        CParams {
            codec: c.codec,
            codec_meta: 0,
            clevel: c.clevel,
            filters: c.filters,
            filters_meta: c.filters_meta,
            splitmode: c.splitmode,
            use_dict: false,
            ..base.clone()
        }
    }

    fn compressed(&self, nbytes: usize, cbytes: usize) {
        let ratio = nbytes as f64 / cbytes.max(1) as f64;
        let mut st = self.lock();
        match st.reference {
            None => st.reference = Some(ratio),
            Some(r) if self.opts.drift > 0.0 && (ratio - r).abs() > self.opts.drift * r => st.pick = None,
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{ChunkTuner, SChunk};

    fn smooth(n: usize, phase: f32) -> Vec<u8> {
        (0..n).flat_map(|i| ((i as f32 * 1e-3 + phase).sin() * 100.0).to_le_bytes()).collect()
    }

    fn noisy(n: usize) -> Vec<u8> {
        let mut x = 0x1234_5678u32;
        (0..n * 4)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    fn write(opts: &PerChunkOptions, chunks: &[Vec<u8>]) -> (Vec<Vec<u8>>, usize) {
        let cp = CParams { typesize: 4, ..CParams::default() };
        let mut s = SChunk::new(cp, Default::default()).unwrap();
        let t = std::sync::Arc::new(PerChunkTuner::new(opts.clone()));
        s.set_tuner(Some(t.clone()));
        for c in chunks {
            s.append_data(c).unwrap();
        }
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(&s.decompress_chunk(i).unwrap(), c, "chunk {i} round-trips");
        }
        ((0..chunks.len()).map(|i| s.get_chunk(i).unwrap().into_owned()).collect(), t.searches())
    }

    #[test]
    fn ratio_picks_are_deterministic_lossless_and_retuned_on_drift() {
        let opts =
            PerChunkOptions { objective: Objective::Ratio, every: 0, time_budget: Duration::MAX, ..Default::default() };
        let chunks = vec![smooth(1 << 18, 0.0), smooth(1 << 18, 1.0), noisy(1 << 18), noisy(1 << 18)];
        let (a, searches) = write(&opts, &chunks);
        let (b, _) = write(&opts, &chunks);
        assert_eq!(a, b, "same data and seed: same chunks");
        // Smooth data, then noise: the ratio drops far below the reference, so a new search.
        assert_eq!(searches, 2);
        let without_drift = write(&PerChunkOptions { drift: 0.0, ..opts.clone() }, &chunks).1;
        assert_eq!(without_drift, 1);
        let every_two = write(&PerChunkOptions { drift: 0.0, every: 2, ..opts }, &chunks).1;
        assert_eq!(every_two, 2);
    }

    #[test]
    fn never_lossy_unless_allowed_and_keeps_the_callers_layout() {
        let ratio = PerChunkOptions { objective: Objective::Ratio, time_budget: Duration::MAX, ..Default::default() };
        let t = PerChunkTuner::new(ratio.clone());
        let base = CParams { typesize: 4, blocksize: 64 << 10, nthreads: 3, ..CParams::default() };
        let cp = t.choose(&smooth(1 << 18, 0.0), &base);
        assert!(!cp.filters.contains(&crate::chunk::filter::TRUNC_PREC));
        assert_eq!((cp.typesize, cp.blocksize, cp.nthreads), (4, 64 << 10, 3));
        let lossy = PerChunkTuner::new(PerChunkOptions { allow_lossy: true, ..ratio });
        assert!(lossy.choose(&smooth(1 << 18, 0.0), &base).filters.contains(&crate::chunk::filter::TRUNC_PREC));
        // Too little data to sample: the base parameters as they are.
        let fresh = PerChunkTuner::new(PerChunkOptions::default());
        let tiny = CParams { typesize: 4, codec: crate::chunk::format::codec_id::ZLIB, ..CParams::default() };
        assert_eq!(fresh.choose(&[1, 2, 3, 4], &tiny), tiny);
        assert_eq!(fresh.searches(), 0);
    }
}
