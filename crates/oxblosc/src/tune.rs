//! A parameter tuner: try compression parameters on samples of the user's data and keep
//! the ones that serve an objective best ("there is no substitute for experimentation").
//!
//! Search space: codecs x clevels 1..=9 x filter pipelines (none, shuffle, bitshuffle,
//! shuffle+bytedelta, delta+shuffle; trunc_prec+shuffle only when lossy filters are allowed)
//! x split modes x block sizes. The guided search measures a few dozen of those points:
//! 1. every (codec, pipeline) at a middle clevel, automatic split and blocks;
//! 2. clevels 1, 3, 5, 7, 9 for the best three, then the neighbours of the best clevel
//!    (`Ratio`: clevel 9, the slowest, only for the best of the three);
//! 3. split always/never x block sizes for the best one (`Ratio`: blocks from 64 KiB,
//!    ranked on a faster lower clevel when there is one, the best layout then measured at
//!    the leader's clevel) or, for the speed objectives, the best three;
//! 4. for the speed objectives, the four best points timed five more times (their best
//!    speeds kept), so the pick among near-equal finalists is not one run's noise.
//!
//! It stops early when `time_budget` is spent. [`exhaustive`] measures every point (for
//! benchmarking the guided search).
//!
//! Each point compresses the sample windows with one thread (the speeds are per core) and
//! decompresses them back, checking that lossless points round-trip. Scores:
//! * `Ratio`: the compression ratio.
//! * `CSpeed` / `DSpeed`: the throughput of "compress (or decompress) and move the compressed
//!   bytes over a 1 GB/s link", `1 / (1/speed + 1/(ratio * 1 GB/s))`: a codec that is slow
//!   or that barely compresses both lose, so storing raw never wins by default.
//! * `Balanced`: the harmonic mean of those two.
//!
//! With `Ratio` the result depends on the data and the seed only; the speed objectives also
//! depend on timings (the seed then fixes the samples and the search order, not the pick).

use std::time::{Duration, Instant};

use crate::chunk::format::codec_id;
use crate::chunk::{self, filter, CParams, DParams, SplitMode};

/// What the tuner optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    Balanced,
    Ratio,
    CSpeed,
    DSpeed,
}

impl std::str::FromStr for Objective {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "balanced" => Ok(Objective::Balanced),
            "ratio" => Ok(Objective::Ratio),
            "cspeed" => Ok(Objective::CSpeed),
            "dspeed" => Ok(Objective::DSpeed),
            other => Err(format!("objective {other:?} is not balanced, ratio, cspeed or dspeed")),
        }
    }
}

/// Options of one tuning run.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub objective: Objective,
    /// Stop starting new measurements after this long (at least one point is measured).
    pub time_budget: Duration,
    /// Element size of the data in bytes.
    pub typesize: usize,
    /// Consider lossy filters (trunc_prec) too.
    pub allow_lossy: bool,
    /// Picks the sample windows.
    pub seed: u64,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            objective: Objective::Balanced,
            time_budget: Duration::from_secs(5),
            typesize: 8,
            allow_lossy: false,
            seed: 0,
        }
    }
}

/// One point of the search space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub codec: u8,
    pub clevel: u8,
    pub filters: [u8; 6],
    pub filters_meta: [u8; 6],
    pub splitmode: SplitMode,
    /// 0 = automatic.
    pub blocksize: usize,
}

impl Candidate {
    /// The parameters to compress with (`nthreads` as the caller wants).
    pub fn cparams(&self, typesize: usize, nthreads: usize) -> CParams {
        CParams {
            codec: self.codec,
            clevel: self.clevel,
            typesize,
            nthreads,
            blocksize: self.blocksize,
            splitmode: self.splitmode,
            filters: self.filters,
            filters_meta: self.filters_meta,
            ..CParams::default()
        }
    }

    /// Does this point lose information?
    pub fn lossy(&self) -> bool {
        self.filters.iter().any(|&f| matches!(f, filter::TRUNC_PREC | filter::INT_TRUNC))
    }

    /// Short names of the filters, in pipeline order ("shuffle+bytedelta", "none").
    pub fn filter_names(&self) -> String {
        let names: Vec<String> = self
            .filters
            .iter()
            .zip(&self.filters_meta)
            .filter(|(&f, _)| f != filter::NOFILTER)
            .map(|(&f, &m)| match f {
                filter::SHUFFLE => "shuffle".into(),
                filter::BITSHUFFLE => "bitshuffle".into(),
                filter::DELTA => "delta".into(),
                filter::BYTEDELTA => "bytedelta".into(),
                filter::TRUNC_PREC => format!("trunc_prec:{}", m as i8),
                other => format!("filter{other}"),
            })
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join("+")
        }
    }
}

/// A measured point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub candidate: Candidate,
    pub ratio: f64,
    /// Bytes per second, one thread.
    pub cspeed: f64,
    pub dspeed: f64,
}

/// Reference link speed of the speed objectives (bytes per second).
const LINK: f64 = 1e9;

fn through_link(speed: f64, ratio: f64) -> f64 {
    1.0 / (1.0 / speed + 1.0 / (ratio * LINK))
}

impl Measured {
    /// Higher is better.
    pub fn score(&self, objective: Objective) -> f64 {
        let c = through_link(self.cspeed, self.ratio);
        let d = through_link(self.dspeed, self.ratio);
        match objective {
            Objective::Ratio => self.ratio,
            Objective::CSpeed => c,
            Objective::DSpeed => d,
            Objective::Balanced => 2.0 / (1.0 / c + 1.0 / d),
        }
    }
}

/// What a tuning run found.
#[derive(Debug, Clone)]
pub struct TuneResult {
    /// The best point for the objective.
    pub best: Measured,
    /// The Pareto front (ratio, cspeed, dspeed) of every measured point, highest ratio first.
    pub front: Vec<Measured>,
    /// Every measured point, in measuring order.
    pub measured: Vec<Measured>,
    /// Bytes compressed per point (the sample).
    pub sample_bytes: usize,
    /// Wall time of the search.
    pub elapsed: Duration,
    /// True when the time budget cut the search short.
    pub truncated: bool,
}

impl TuneResult {
    /// The Pareto front as a text table, the pick marked with `*` (and added when it is off
    /// the front, which a combined score, or a tie in ratio with a faster twin, allows).
    pub fn table(&self) -> String {
        let mut out = format!(
            "  {:7} {:>6} {:22} {:6} {:>9} {:>7} {:>7} {:>7}\n",
            "codec", "clevel", "filters", "split", "blocksize", "ratio", "cGB/s", "dGB/s"
        );
        let mut rows = self.front.clone();
        if !rows.iter().any(|m| m.candidate == self.best.candidate) {
            rows.push(self.best);
        }
        for m in rows {
            let c = &m.candidate;
            let bs = if c.blocksize == 0 { "auto".to_string() } else { format!("{}K", c.blocksize >> 10) };
            out += &format!(
                "{} {:7} {:>6} {:22} {:6} {:>9} {:>7.2} {:>7.2} {:>7.2}\n",
                if c == &self.best.candidate { '*' } else { ' ' },
                crate::chunk::format::codec_name(c.codec),
                c.clevel,
                c.filter_names(),
                split_name(c.splitmode),
                bs,
                m.ratio,
                m.cspeed / 1e9,
                m.dspeed / 1e9
            );
        }
        out
    }
}

/// The CLI's name of a split mode.
pub fn split_name(s: SplitMode) -> &'static str {
    match s {
        SplitMode::Always => "always",
        SplitMode::Never => "never",
        SplitMode::Auto => "auto",
        SplitMode::ForwardCompat => "forward",
    }
}

/// Errors: bad options or data the tuner cannot sample.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("tune: {0}")]
    Invalid(String),
    #[error("tune: {0}")]
    Chunk(#[from] chunk::Error),
}

const CODECS: [u8; 5] = [codec_id::BLOSCLZ, codec_id::LZ4, codec_id::LZ4HC, codec_id::ZLIB, codec_id::ZSTD];
const BLOCKSIZES: [usize; 7] = [0, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20];
/// Largest sample window (one "chunk" of the sample) and the number of windows.
const WINDOW: usize = 1 << 20;
const WINDOWS: usize = 4;

/// The filter pipelines tried for `typesize`.
fn pipelines(typesize: usize, allow_lossy: bool) -> Vec<([u8; 6], [u8; 6])> {
    let (s, b, bd, d) = (filter::SHUFFLE, filter::BITSHUFFLE, filter::BYTEDELTA, filter::DELTA);
    let mut v = vec![([0; 6], [0; 6]), ([0, 0, 0, 0, 0, b], [0; 6])];
    if typesize > 1 {
        v.push(([0, 0, 0, 0, 0, s], [0; 6]));
        v.push(([0, 0, 0, 0, s, bd], [0, 0, 0, 0, 0, typesize.min(255) as u8]));
        v.push(([0, 0, 0, 0, d, s], [0; 6]));
    }
    if allow_lossy && matches!(typesize, 4 | 8) {
        // Keep 16 of f32's 23 mantissa bits, 32 of f64's 52 (relative error ~2e-5 / 2e-10).
        let keep = if typesize == 4 { 16 } else { 32 };
        v.push(([0, 0, 0, 0, filter::TRUNC_PREC, s], [0, 0, 0, 0, keep, 0]));
    }
    v
}

/// A small deterministic generator (xorshift64*) for the sample positions.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

/// Up to four windows of up to 1 MiB, one from each quarter of the data, at seeded
/// element-aligned offsets (the whole data when it is that small).
fn sample(data: &[u8], typesize: usize, seed: u64) -> Vec<&[u8]> {
    sample_windows(data, typesize, seed, WINDOW, WINDOWS)
}

/// `count` windows of `window` bytes, one from each of `count` equal strata of the data, at
/// seeded offsets that are multiples of `align` (the whole data when it is that small).
fn sample_windows(data: &[u8], align: usize, seed: u64, window: usize, count: usize) -> Vec<&[u8]> {
    if data.len() <= window * count {
        return data.chunks(window).collect();
    }
    let mut rng = Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1);
    let stratum = data.len() / count;
    (0..count)
        .map(|k| {
            let slack = (stratum - window) / align;
            let at = k * stratum + rng.below(slack + 1) * align;
            &data[at..at + window]
        })
        .collect()
}

/// Measures points on the sample, remembering each one.
struct Bench<'a> {
    windows: Vec<&'a [u8]>,
    typesize: usize,
    out: Vec<Vec<u8>>,
    back: Vec<u8>,
    measured: Vec<Measured>,
}

impl<'a> Bench<'a> {
    fn new(windows: Vec<&'a [u8]>, typesize: usize) -> Self {
        let out = windows.iter().map(|w| vec![0u8; chunk::max_compressed_len(w.len())]).collect();
        let back = vec![0u8; windows.iter().map(|w| w.len()).max().unwrap_or(0)];
        Bench { windows, typesize, out, back, measured: Vec::new() }
    }

    fn bytes(&self) -> usize {
        self.windows.iter().map(|w| w.len()).sum()
    }

    /// Measure `c` (or return the earlier measurement). Timings are the best of up to three
    /// runs when one run is short, to damp scheduling noise.
    fn measure(&mut self, c: Candidate) -> Result<Measured, TuneError> {
        if let Some(m) = self.measured.iter().find(|m| m.candidate == c) {
            return Ok(*m);
        }
        let dp = DParams { nthreads: 1 };
        let (mut tc, mut td, mut cbytes) = (f64::INFINITY, f64::INFINITY, 0usize);
        for rep in 0..3 {
            let (c1, d1, lens) = self.time_once(&c)?;
            (tc, td) = (tc.min(c1), td.min(d1));
            if rep == 0 {
                cbytes = lens.iter().sum();
                if !c.lossy() {
                    self.check_round_trip(&lens, &dp)?;
                }
            }
            if tc + td > 0.02 {
                break;
            }
        }
        let n = self.bytes() as f64;
        let m = Measured {
            candidate: c,
            ratio: n / cbytes.max(1) as f64,
            cspeed: n / tc.max(1e-9),
            dspeed: n / td.max(1e-9),
        };
        self.measured.push(m);
        Ok(m)
    }

    /// Compress then decompress the windows once with `c`: (seconds, seconds, lengths).
    fn time_once(&mut self, c: &Candidate) -> Result<(f64, f64, Vec<usize>), TuneError> {
        let cp = c.cparams(self.typesize, 1);
        let dp = DParams { nthreads: 1 };
        let t = Instant::now();
        let mut lens = Vec::with_capacity(self.windows.len());
        for (w, o) in self.windows.iter().zip(&mut self.out) {
            lens.push(chunk::compress_into(w, o, &cp)?);
        }
        let tc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for (o, &n) in self.out.iter().zip(&lens) {
            chunk::decompress_into(&o[..n], &mut self.back, &dp)?;
        }
        Ok((tc, t.elapsed().as_secs_f64(), lens))
    }

    /// Time an already measured point `reps` more times, keeping its best speeds: the
    /// finalists of a speed objective often differ by less than one run's scheduling noise.
    fn confirm(&mut self, c: Candidate, reps: usize) -> Result<(), TuneError> {
        let n = self.bytes() as f64;
        for _ in 0..reps {
            let (tc, td, _) = self.time_once(&c)?;
            if let Some(m) = self.measured.iter_mut().find(|m| m.candidate == c) {
                m.cspeed = m.cspeed.max(n / tc.max(1e-9));
                m.dspeed = m.dspeed.max(n / td.max(1e-9));
            }
        }
        Ok(())
    }

    fn check_round_trip(&mut self, lens: &[usize], dp: &DParams) -> Result<(), TuneError> {
        for ((w, o), &n) in self.windows.iter().zip(&self.out).zip(lens) {
            let k = chunk::decompress_into(&o[..n], &mut self.back, dp)?;
            if self.back[..k] != **w {
                return Err(TuneError::Invalid("a lossless candidate did not round-trip".into()));
            }
        }
        Ok(())
    }
}

fn check(data: &[u8], opts: &TuneOptions) -> Result<(), TuneError> {
    if opts.typesize == 0 || opts.typesize > 255 {
        return Err(TuneError::Invalid(format!("typesize {} is not in 1..=255", opts.typesize)));
    }
    if data.len() < opts.typesize.max(64) {
        return Err(TuneError::Invalid(format!("{} bytes are too few to tune on", data.len())));
    }
    Ok(())
}

fn base(codec: u8, clevel: u8, p: ([u8; 6], [u8; 6])) -> Candidate {
    Candidate { codec, clevel, filters: p.0, filters_meta: p.1, splitmode: SplitMode::Auto, blocksize: 0 }
}

/// The `k` best distinct measured points by `objective` (ties keep measuring order).
fn top(ms: &[Measured], objective: Objective, k: usize) -> Vec<Measured> {
    let mut v = ms.to_vec();
    v.sort_by(|a, b| b.score(objective).total_cmp(&a.score(objective)));
    v.truncate(k);
    v
}

/// Run the guided search on `data`.
pub fn tune(data: &[u8], opts: &TuneOptions) -> Result<TuneResult, TuneError> {
    check(data, opts)?;
    let start = Instant::now();
    let mut b = Bench::new(sample(data, opts.typesize, opts.seed), opts.typesize);
    let obj = opts.objective;
    let mut truncated = false;
    let mut plan: Vec<Candidate> = Vec::new();
    let mut run = |b: &mut Bench, plan: &mut Vec<Candidate>| -> Result<(), TuneError> {
        for c in plan.drain(..) {
            if !b.measured.is_empty() && start.elapsed() > opts.time_budget {
                truncated = true;
                return Ok(());
            }
            b.measure(c)?;
        }
        Ok(())
    };
    // 1. codec x pipeline at a middle clevel.
    for &codec in &CODECS {
        for p in pipelines(opts.typesize, opts.allow_lossy) {
            plan.push(base(codec, 5, p));
        }
    }
    run(&mut b, &mut plan)?;
    // 2. clevels for the best three, then around the best clevel. For the ratio, clevel 9
    // (the slowest point of most codecs: zstd's level 22, ~1 MB/s) is measured for the best
    // of the three only: the order of the three at clevels 1-7 holds at 9. (Their best
    // clevel may be lower: zstd's level 13 at clevel 7 can compress less than its level 9.)
    let lead = top(&b.measured, obj, 3);
    let clevels: &[u8] = if obj == Objective::Ratio { &[1, 3, 7] } else { &[1, 3, 7, 9] };
    for m in &lead {
        for &cl in clevels {
            plan.push(Candidate { clevel: cl, ..m.candidate });
        }
    }
    run(&mut b, &mut plan)?;
    if let Some(m) = top(&b.measured, obj, 1).first() {
        let c = m.candidate.clevel;
        for cl in [c.saturating_sub(1).max(1), (c + 1).min(9)] {
            plan.push(Candidate { clevel: cl, ..m.candidate });
        }
        if obj == Objective::Ratio {
            plan.push(Candidate { clevel: 9, ..m.candidate });
        }
    }
    run(&mut b, &mut plan)?;
    // 3. split always/never x block sizes for the best (automatic splitting is one of the
    // two, so it is not measured again).
    // For the ratio, blocks under 64 KiB are skipped: they cost ratio almost always, and at
    // the high clevels this objective ends on they are the slowest points to measure.
    // The speed objectives try the layouts on the best three: their speeds often differ by a
    // few percent only, and these points are quick to measure.
    let min_block = if obj == Objective::Ratio { 64 << 10 } else { 0 };
    let leaders = if obj == Objective::Ratio { 1 } else { 3 };
    for m in top(&b.measured, obj, leaders) {
        // The ratio's leader is often at clevel 9, the slowest point there is (zstd's level
        // 22, ~1 MB/s, 10-80x slower than its clevel 8): the layouts are then ranked on the
        // highest lower clevel measured of the same settings, and only the best one is
        // measured at clevel 9 (block size and split order the ratio alike at neighbouring
        // levels; the automatic layout is not compared there: its block size grows with the
        // clevel).
        let proxy = if obj == Objective::Ratio { ratio_proxy(&b.measured, &m) } else { None };
        let ranked_on = proxy.unwrap_or(m.candidate);
        let ranked: Vec<Candidate> = layouts(&b)
            .filter(|&(_, bs)| bs >= min_block)
            .map(|(split, bs)| Candidate { splitmode: split, blocksize: bs, ..ranked_on })
            .collect();
        plan.extend(&ranked);
        run(&mut b, &mut plan)?;
        if proxy.is_some() {
            let measured: Vec<Measured> =
                b.measured.iter().filter(|p| ranked.contains(&p.candidate)).copied().collect();
            for p in top(&measured, obj, LAYOUTS_CONFIRMED) {
                plan.push(Candidate { clevel: m.candidate.clevel, ..p.candidate });
            }
            run(&mut b, &mut plan)?;
        }
    }
    // 4. The speed objectives' finalists, timed again (the ratio does not depend on timing).
    if obj != Objective::Ratio {
        for m in top(&b.measured, obj, FINALISTS) {
            if start.elapsed() > opts.time_budget {
                truncated = true;
                break;
            }
            b.confirm(m.candidate, CONFIRM_REPS)?;
        }
    }
    Ok(finish(b, obj, start, truncated))
}

/// Layouts ranked on a faster clevel that are then measured at the ratio leader's clevel.
const LAYOUTS_CONFIRMED: usize = 1;

/// Where the ratio objective ranks block sizes and split modes when its leader is at clevel
/// 9 (see [`tune`], step 3): the highest lower clevel of the leader's settings (automatic
/// layout) that was measured. Chosen by clevel, not by measured speed, so that the ratio's
/// pick stays a function of the data and the seed.
fn ratio_proxy(measured: &[Measured], leader: &Measured) -> Option<Candidate> {
    if leader.candidate.clevel < 9 {
        return None;
    }
    measured
        .iter()
        .filter(|p| {
            p.candidate.clevel < leader.candidate.clevel
                && p.candidate == Candidate { clevel: p.candidate.clevel, ..leader.candidate }
        })
        .max_by_key(|p| p.candidate.clevel)
        .map(|p| p.candidate)
}

/// Points of a speed objective timed again at the end of [`tune`], and how many more times.
const FINALISTS: usize = 4;
const CONFIRM_REPS: usize = 5;

/// Bytes the quick search of [`tune_chunk`] samples: windows of whole blocks spread over
/// the chunk (several small windows rather than two large ones: a window that happens to
/// be constant compresses equally well with every codec and says nothing).
const CHUNK_SAMPLE: usize = 1 << 20;

/// A quick search for one chunk of a super-chunk being written (the per-chunk tuner):
/// every (codec, pipeline) at clevel 5, then clevels 1, 3, 7, 9 and the best one's
/// neighbours for the leader, on 2 to 8 windows of whole `blocksize` blocks (0: 128 KiB
/// windows) from equal strata of the chunk; split mode and block size stay the caller's
/// (`splitmode`, `blocksize`).
pub fn tune_chunk(
    data: &[u8],
    opts: &TuneOptions,
    splitmode: SplitMode,
    blocksize: usize,
) -> Result<TuneResult, TuneError> {
    check(data, opts)?;
    let start = Instant::now();
    let unit = if blocksize > 0 { blocksize } else { 128 << 10 };
    let window = unit * ((128 << 10) / unit).max(1);
    let count = (CHUNK_SAMPLE / window).clamp(2, 8);
    // Windows start on block boundaries, so they are compressed as the chunk's blocks are.
    let align = if data.len().is_multiple_of(unit) { unit } else { opts.typesize };
    let mut b = Bench::new(sample_windows(data, align, opts.seed, window, count), opts.typesize);
    let obj = opts.objective;
    let at = |c: Candidate| Candidate { splitmode, blocksize, ..c };
    let mut truncated = false;
    let mut run = |b: &mut Bench, plan: Vec<Candidate>| -> Result<(), TuneError> {
        for c in plan {
            if !b.measured.is_empty() && start.elapsed() > opts.time_budget {
                truncated = true;
                return Ok(());
            }
            b.measure(c)?;
        }
        Ok(())
    };
    // Pipelines outside, codecs inside, the usual best pipeline (shuffle) first: a search cut
    // short by its budget has still compared every codec with it.
    let mut ps = pipelines(opts.typesize, opts.allow_lossy);
    if opts.typesize > 1 {
        ps.swap(0, 2);
    }
    let first = ps.into_iter().flat_map(|p| CODECS.iter().map(move |&codec| base(codec, 5, p)));
    run(&mut b, first.map(at).collect())?;
    let lead = top(&b.measured, obj, 1)[0].candidate;
    run(&mut b, [1, 3, 7, 9].map(|cl| Candidate { clevel: cl, ..lead }).to_vec())?;
    let best = top(&b.measured, obj, 1)[0].candidate;
    let near = [best.clevel.saturating_sub(1).max(1), (best.clevel + 1).min(9)];
    run(&mut b, near.map(|cl| Candidate { clevel: cl, ..best }).to_vec())?;
    Ok(finish(b, obj, start, truncated))
}

/// Measure every point of the search space (slow: for judging [`tune`]).
pub fn exhaustive(data: &[u8], opts: &TuneOptions) -> Result<TuneResult, TuneError> {
    check(data, opts)?;
    let start = Instant::now();
    let mut b = Bench::new(sample(data, opts.typesize, opts.seed), opts.typesize);
    for &codec in &CODECS {
        for clevel in 1..=9 {
            for p in pipelines(opts.typesize, opts.allow_lossy) {
                b.measure(base(codec, clevel, p))?;
                for (split, bs) in layouts(&b).collect::<Vec<_>>() {
                    b.measure(Candidate { splitmode: split, blocksize: bs, ..base(codec, clevel, p) })?;
                }
            }
        }
    }
    Ok(finish(b, opts.objective, start, false))
}

/// (split, block size) pairs beyond the automatic ones: always/never x every block size
/// smaller than the sample windows (automatic splitting equals one of the two).
fn layouts(b: &Bench) -> impl Iterator<Item = (SplitMode, usize)> {
    let largest = b.windows.iter().map(|w| w.len()).max().unwrap_or(0);
    [SplitMode::Always, SplitMode::Never]
        .into_iter()
        .flat_map(move |split| BLOCKSIZES.iter().filter(move |&&bs| bs < largest).map(move |&bs| (split, bs)))
}

fn finish(b: Bench, obj: Objective, start: Instant, truncated: bool) -> TuneResult {
    let sample_bytes = b.bytes();
    let best = top(&b.measured, obj, 1)[0];
    TuneResult {
        best,
        front: pareto(&b.measured),
        measured: b.measured,
        sample_bytes,
        elapsed: start.elapsed(),
        truncated,
    }
}

/// Points no other point beats on all of ratio, cspeed and dspeed, highest ratio first.
pub fn pareto(ms: &[Measured]) -> Vec<Measured> {
    let dominates = |a: &Measured, b: &Measured| {
        a.ratio >= b.ratio
            && a.cspeed >= b.cspeed
            && a.dspeed >= b.dspeed
            && (a.ratio > b.ratio || a.cspeed > b.cspeed || a.dspeed > b.dspeed)
    };
    let mut front: Vec<Measured> = ms.iter().filter(|m| !ms.iter().any(|o| dominates(o, m))).copied().collect();
    front.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: usize) -> Vec<u8> {
        (0..n).flat_map(|i| ((i as f32 * 0.001).sin() * 100.0 + (i % 7) as f32 * 0.01).to_le_bytes()).collect()
    }

    fn opts(objective: Objective) -> TuneOptions {
        TuneOptions { objective, typesize: 4, time_budget: Duration::from_secs(3600), ..TuneOptions::default() }
    }

    #[test]
    fn ratio_objective_is_deterministic_and_round_trips() {
        let data = field(1 << 16);
        let a = tune(&data, &opts(Objective::Ratio)).unwrap();
        let b = tune(&data, &opts(Objective::Ratio)).unwrap();
        assert_eq!(a.best.candidate, b.best.candidate);
        let pts = |r: &TuneResult| r.measured.iter().map(|m| m.candidate).collect::<Vec<_>>();
        assert_eq!(pts(&a), pts(&b), "same seed, same points in the same order");
        assert!(!a.truncated && a.measured.len() < 120);
        let cp = a.best.candidate.cparams(4, 2);
        let chunk = chunk::compress(&data, &cp).unwrap();
        assert_eq!(chunk::decompress(&chunk, &DParams::default()).unwrap(), data);
        // The pick is the best ratio measured, and it beats storing the data raw.
        assert!(a.measured.iter().all(|m| m.ratio <= a.best.ratio));
        assert!(a.best.ratio > 1.5);
        assert!(a.table().lines().filter(|l| l.starts_with('*')).count() == 1);
    }

    #[test]
    fn lossy_only_when_allowed() {
        let data = field(1 << 14);
        for obj in [Objective::Ratio, Objective::Balanced] {
            let r = tune(&data, &opts(obj)).unwrap();
            assert!(r.measured.iter().all(|m| !m.candidate.lossy()));
        }
        let r = tune(&data, &TuneOptions { allow_lossy: true, ..opts(Objective::Ratio) }).unwrap();
        assert!(r.measured.iter().any(|m| m.candidate.lossy()));
    }

    #[test]
    fn samples_follow_the_seed() {
        let data = field(5 << 20);
        let s = |seed| sample(&data, 4, seed).iter().map(|w| w.as_ptr() as usize).collect::<Vec<_>>();
        assert_eq!(s(1), s(1));
        assert_ne!(s(1), s(2));
        assert!(sample(&data, 4, 3)
            .iter()
            .all(|w| w.len() == WINDOW && (w.as_ptr() as usize - data.as_ptr() as usize).is_multiple_of(4)));
    }

    #[test]
    fn budget_and_bad_input() {
        let data = field(1 << 14);
        let r = tune(&data, &TuneOptions { time_budget: Duration::ZERO, ..opts(Objective::Balanced) }).unwrap();
        assert!(r.truncated && r.measured.len() == 1);
        assert!(tune(&data[..10], &opts(Objective::Ratio)).is_err());
        assert!(tune(&data, &TuneOptions { typesize: 0, ..opts(Objective::Ratio) }).is_err());
        assert!("fast".parse::<Objective>().is_err());
        assert_eq!("DSpeed".parse::<Objective>(), Ok(Objective::DSpeed));
    }

    #[test]
    fn pareto_keeps_only_undominated_points() {
        let c = base(1, 5, ([0; 6], [0; 6]));
        let m = |ratio, cspeed, dspeed| Measured { candidate: c, ratio, cspeed, dspeed };
        let f = pareto(&[m(2.0, 1.0, 1.0), m(1.0, 2.0, 1.0), m(1.0, 1.0, 1.0), m(3.0, 0.5, 0.5)]);
        assert_eq!(f.iter().map(|m| m.ratio).collect::<Vec<_>>(), vec![3.0, 2.0, 1.0]);
    }

    /// The ratio's layouts are ranked on the highest lower clevel of a clevel-9 leader's own
    /// settings that was measured (whatever its speed); none below clevel 9.
    #[test]
    fn ratio_proxy_is_the_highest_lower_clevel_of_the_same_settings() {
        let zstd = |clevel, cspeed| Measured {
            candidate: base(5, clevel, ([0, 0, 0, 0, 0, 1], [0; 6])),
            ratio: 2.0,
            cspeed,
            dspeed: 1.0,
        };
        let leader = zstd(9, 1.0);
        let other_filter =
            Measured { candidate: base(5, 8, ([0, 0, 0, 0, 0, 2], [0; 6])), ratio: 2.0, cspeed: 50.0, dspeed: 1.0 };
        let split = Measured {
            candidate: Candidate { splitmode: SplitMode::Never, ..zstd(8, 50.0).candidate },
            ..zstd(8, 50.0)
        };
        let ms = [leader, zstd(5, 90.0), zstd(7, 40.0), other_filter, split];
        // The other-filter and other-split clevel-8 points are other settings.
        assert_eq!(ratio_proxy(&ms, &leader).map(|c| c.clevel), Some(7));
        assert_eq!(ratio_proxy(&[leader, zstd(8, 1.1)], &leader).map(|c| c.clevel), Some(8));
        assert_eq!(ratio_proxy(&[leader], &leader), None);
        assert_eq!(ratio_proxy(&[zstd(8, 1.0), zstd(5, 9.0)], &zstd(8, 1.0)), None, "leader below clevel 9");
    }
}
