//! Compression and decompression parameters, with python-blosc2's defaults and checks.

use crate::format::{codec_id, MAX_BLOCKSIZE, MAX_FILTERS};
use crate::{filter, registry, Error, Result};

/// How blocks are split into per-byte-plane streams (C-Blosc2 `BLOSC_*_SPLIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SplitMode {
    Always = 1,
    Never = 2,
    Auto = 3,
    ForwardCompat = 4,
}

impl SplitMode {
    pub fn from_id(id: u8) -> Result<Self> {
        Ok(match id {
            1 => SplitMode::Always,
            2 => SplitMode::Never,
            3 => SplitMode::Auto,
            4 => SplitMode::ForwardCompat,
            _ => {
                return Err(Error::InvalidParam {
                    name: "splitmode",
                    reason: format!("{id} is not 1 (always), 2 (never), 3 (auto) or 4 (forward compat)"),
                })
            }
        })
    }
}

/// Parameters of one compression call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CParams {
    /// Compcode: 0 blosclz, 1 lz4, 2 lz4hc, 4 zlib, 5 zstd.
    pub codec: u8,
    pub codec_meta: u8,
    /// 0 (store) to 9.
    pub clevel: u8,
    pub use_dict: bool,
    /// Element size in bytes, 1..=536866816 (stored as 1 in the header above 255).
    pub typesize: usize,
    /// Worker threads; 1 runs everything on the calling thread.
    pub nthreads: usize,
    /// 0 picks the block size automatically.
    pub blocksize: usize,
    pub splitmode: SplitMode,
    /// Filter ids, slot 0 runs first.
    pub filters: [u8; MAX_FILTERS],
    pub filters_meta: [u8; MAX_FILTERS],
}

impl Default for CParams {
    /// python-blosc2 4.x defaults: zstd, clevel 5, typesize 8, shuffle in the last slot.
    fn default() -> Self {
        CParams {
            codec: codec_id::ZSTD,
            codec_meta: 0,
            clevel: 5,
            use_dict: false,
            typesize: 8,
            nthreads: crate::config::default_nthreads(),
            blocksize: 0,
            splitmode: SplitMode::Auto,
            filters: [0, 0, 0, 0, 0, filter::SHUFFLE],
            filters_meta: [0; MAX_FILTERS],
        }
    }
}

impl CParams {
    /// Reject anything C-Blosc2 would crash on or silently mis-store (pitfalls 6, Trap 40):
    /// [`validate_settings`](Self::validate_settings) plus the lossy filters' precision
    /// against the typesize. Every compression runs this.
    pub fn validate(&self) -> Result<()> {
        self.validate_settings()?;
        for (slot, (&id, &meta)) in self.filters.iter().zip(&self.filters_meta).enumerate() {
            if id != filter::NOFILTER {
                let entry = registry::filter(id, slot)?;
                entry
                    .filter
                    .validate(meta, self.typesize)
                    .map_err(|reason| Error::Filter { name: entry.name, reason })?;
            }
        }
        Ok(())
    }

    /// The checks that do not depend on the data's type: ids, ranges, filter ids. What a
    /// super-chunk checks when its parameters are set, as python-blosc2 accepts e.g.
    /// `TRUNC_PREC` with precision 0 there and fails only when a chunk is compressed.
    pub fn validate_settings(&self) -> Result<()> {
        let bad = |name, reason: String| Err(Error::InvalidParam { name, reason });
        if let Err(e) = registry::codec(self.codec) {
            return bad("codec", e.to_string());
        }
        if self.clevel > 9 {
            return bad("clevel", format!("{} is not in 0..=9", self.clevel));
        }
        if self.typesize == 0 || self.typesize > MAX_BLOCKSIZE {
            return bad("typesize", format!("{} is not in 1..=536866816", self.typesize));
        }
        if self.nthreads == 0 {
            return bad("nthreads", "must be at least 1".into());
        }
        if self.blocksize > MAX_BLOCKSIZE {
            return bad("blocksize", format!("{} exceeds 536866816", self.blocksize));
        }
        for (slot, &id) in self.filters.iter().enumerate() {
            if id != filter::NOFILTER && registry::filter(id, slot).is_err() {
                let why = registry::describe_missing(registry::Kind::Filter, id);
                return bad("filters", format!("slot {slot} holds {id}: {why}"));
            }
        }
        Ok(())
    }

    /// True when any slot holds `id`.
    pub fn has_filter(&self, id: u8) -> bool {
        self.filters.contains(&id)
    }
}

/// Parameters of one decompression call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DParams {
    pub nthreads: usize,
}

impl Default for DParams {
    fn default() -> Self {
        DParams { nthreads: crate::config::default_nthreads() }
    }
}
