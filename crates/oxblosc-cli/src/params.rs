//! Codec, filter and split names on the command line, and the sizes they take (`4M`, `256K`).
//!
//! Filters are given in the order they run, each `NAME` or `NAME:META`: `shuffle`,
//! `bitshuffle`, `delta`, `bytedelta[:STREAMS]`, `trunc_prec:BITS` (signed: > 0 keeps BITS
//! mantissa bits, < 0 zeroes -BITS), `int_trunc:BITS`, `ndcell:EDGE`, `ndmean:EDGE` (b2nd
//! arrays, i.e. `.npy` input), `none`, or a numeric id `ID[:META]`.

use oxblosc::chunk::format::codec_id;
use oxblosc::chunk::{filter, SplitMode};

/// One `--codec` value `NAME[:META]` as (compcode, codec_meta). `ndlz` is the Blosc-registered
/// 2-D codec (b2nd arrays of 1-byte items, i.e. `.npy` input; META 4 or 8, the cell edge,
/// default 4). `zfp_acc:EXP` (tolerance 10^EXP, EXP -128..127), `zfp_prec:BITS` and
/// `zfp_rate:PERCENT` are the lossy ZFP codecs (float32/float64 `.npy` input; META required).
/// A numeric `ID` names a plugin codec (e.g. one of an installed plugin package).
pub fn codec(spec: &str) -> Result<(u8, u8), String> {
    if let Some(id) = zfp_id(spec.split(':').next().unwrap_or("")) {
        return zfp_codec(spec, id);
    }
    let (name, meta) = match spec.split_once(':') {
        Some((n, m)) => (n, Some(m.parse::<u8>().map_err(|_| format!("codec meta {m:?} is not 0-255"))?)),
        None => (spec, None),
    };
    let id = match name.to_ascii_lowercase().as_str() {
        "blosclz" => codec_id::BLOSCLZ,
        "lz4" => codec_id::LZ4,
        "lz4hc" => codec_id::LZ4HC,
        "zlib" => codec_id::ZLIB,
        "zstd" => codec_id::ZSTD,
        "ndlz" => return Ok((oxblosc::chunk::codec::ndlz::ID, meta.unwrap_or(4))),
        n => n.parse::<u8>().map_err(|_| {
            format!(
                "unknown codec {name:?} (blosclz, lz4, lz4hc, zlib, zstd, ndlz[:4|8], zfp_acc:EXP, \
                 zfp_prec:BITS, zfp_rate:PERCENT, or an id 0-255)"
            )
        })?,
    };
    Ok((id, meta.unwrap_or(0)))
}

fn zfp_id(name: &str) -> Option<u8> {
    use oxblosc::chunk::codec::zfp;
    match name.to_ascii_lowercase().as_str() {
        "zfp_acc" => Some(zfp::ID_ACC),
        "zfp_prec" => Some(zfp::ID_PREC),
        "zfp_rate" => Some(zfp::ID_RATE),
        _ => None,
    }
}

/// `zfp_*:META`; the accuracy exponent is signed (stored as its byte, as python-blosc2 does).
fn zfp_codec(spec: &str, id: u8) -> Result<(u8, u8), String> {
    let Some((name, m)) = spec.split_once(':') else {
        return Err(format!("codec {spec:?} needs a META ({spec}:N; see --help)"));
    };
    let meta = if id == oxblosc::chunk::codec::zfp::ID_ACC {
        m.parse::<i8>().map(|v| v as u8).map_err(|_| format!("{name} META {m:?} is not an exponent -128..127"))?
    } else {
        m.parse::<u8>().map_err(|_| format!("{name} META {m:?} is not 0-255"))?
    };
    Ok((id, meta))
}

/// One `--filter` value as (id, meta).
pub fn filter(spec: &str) -> Result<(u8, u8), String> {
    let (name, meta) = match spec.split_once(':') {
        Some((n, m)) => (n, Some(m)),
        None => (spec, None),
    };
    let id = match name.to_ascii_lowercase().as_str() {
        "none" => filter::NOFILTER,
        "shuffle" => filter::SHUFFLE,
        "bitshuffle" => filter::BITSHUFFLE,
        "delta" => filter::DELTA,
        "trunc_prec" | "trunc-prec" => filter::TRUNC_PREC,
        "bytedelta" => filter::BYTEDELTA,
        "int_trunc" | "int-trunc" => filter::INT_TRUNC,
        "ndcell" => filter::NDCELL,
        "ndmean" => filter::NDMEAN,
        n => n.parse::<u8>().map_err(|_| {
            format!(
                "unknown filter {name:?} (none, shuffle, bitshuffle, delta, bytedelta[:N], trunc_prec:BITS, \
                 int_trunc:BITS, ndcell:EDGE, ndmean:EDGE or an id 0-255)"
            )
        })?,
    };
    let meta = match meta {
        None if id == filter::TRUNC_PREC || id == filter::INT_TRUNC => {
            return Err(format!("filter {name} needs a bit count, e.g. {name}:10"))
        }
        None if id == filter::NDCELL || id == filter::NDMEAN => {
            return Err(format!("filter {name} needs a cell edge, e.g. {name}:4"))
        }
        None => 0,
        Some(m) => {
            let v: i16 = m.parse().map_err(|_| format!("filter meta {m:?} is not a number"))?;
            if !(-128..=255).contains(&v) {
                return Err(format!("filter meta {v} does not fit a byte"));
            }
            if v < 0 {
                v as i8 as u8
            } else {
                v as u8
            }
        }
    };
    Ok((id, meta))
}

/// Filter ids and metas for the six pipeline slots.
pub type Slots = ([u8; 6], [u8; 6]);

/// The six filter slots for these `--filter` values (in order from slot 0); `None` keeps the
/// default (shuffle).
pub fn filter_slots(specs: &[String]) -> Result<Option<Slots>, String> {
    if specs.is_empty() {
        return Ok(None);
    }
    let parsed = specs.iter().map(|s| filter(s)).collect::<Result<Vec<_>, _>>()?;
    let parsed: Vec<_> = parsed.into_iter().filter(|(id, _)| *id != filter::NOFILTER).collect();
    if parsed.len() > 6 {
        return Err(format!("at most 6 filters, {} given", parsed.len()));
    }
    let (mut ids, mut metas) = ([0u8; 6], [0u8; 6]);
    for (k, (id, meta)) in parsed.into_iter().enumerate() {
        ids[k] = id;
        metas[k] = meta;
    }
    Ok(Some((ids, metas)))
}

pub fn filter_name(id: u8) -> String {
    match id {
        filter::NOFILTER => "none".into(),
        filter::SHUFFLE => "shuffle".into(),
        filter::BITSHUFFLE => "bitshuffle".into(),
        filter::DELTA => "delta".into(),
        filter::TRUNC_PREC => "trunc_prec".into(),
        filter::BYTEDELTA_V1 | filter::BYTEDELTA => "bytedelta".into(),
        filter::INT_TRUNC => "int_trunc".into(),
        filter::NDCELL => "ndcell".into(),
        filter::NDMEAN => "ndmean".into(),
        n => format!("filter{n}"),
    }
}

pub fn split(name: &str) -> Result<SplitMode, String> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "always" => SplitMode::Always,
        "never" => SplitMode::Never,
        "auto" => SplitMode::Auto,
        "forward" => SplitMode::ForwardCompat,
        _ => return Err(format!("unknown split mode {name:?} (always, never, auto, forward)")),
    })
}

/// A byte size: plain bytes or with a K/M/G suffix (powers of 1024).
pub fn size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let unit = t[i..].to_ascii_uppercase();
            let mul = match unit.as_str() {
                "B" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => return Err(format!("size {s:?}: unit must be K, M or G")),
            };
            (&t[..i], mul)
        }
        _ => (t, 1),
    };
    let n: usize = num.parse().map_err(|_| format!("size {s:?} is not a number"))?;
    n.checked_mul(mul).ok_or_else(|| format!("size {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_specs() {
        assert_eq!(filter("shuffle"), Ok((1, 0)));
        assert_eq!(filter("trunc_prec:-3"), Ok((4, 0xFD)));
        assert_eq!(filter("bytedelta:4"), Ok((35, 4)));
        assert_eq!(filter("ndcell:4"), Ok((32, 4)));
        assert_eq!(filter("NDMEAN:2"), Ok((33, 2)));
        assert!(filter("ndcell").unwrap_err().contains("cell edge"));
        assert_eq!(filter("200:255"), Ok((200, 255)));
        assert!(filter("trunc_prec").is_err());
        assert!(filter("shufle").is_err());
        assert!(filter("delta:300").is_err());
        let specs = ["shuffle".to_string(), "bytedelta".to_string()];
        let (ids, _) = filter_slots(&specs).unwrap().unwrap();
        assert_eq!(ids, [1, 35, 0, 0, 0, 0]);
        assert_eq!(filter_slots(&["none".to_string()]).unwrap(), Some(([0; 6], [0; 6])));
    }

    #[test]
    fn zfp_codec_specs() {
        assert_eq!(codec("zfp_acc:-3"), Ok((33, 0xFD)));
        assert_eq!(codec("ZFP_PREC:12"), Ok((34, 12)));
        assert_eq!(codec("zfp_rate:50"), Ok((35, 50)));
        assert!(codec("zfp_rate").unwrap_err().contains("needs a META"));
        assert!(codec("zfp_acc:200").is_err());
        assert!(codec("zfp_prec:-1").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(size("4M"), Ok(4 << 20));
        assert_eq!(size("256k"), Ok(256 << 10));
        assert_eq!(size("1000"), Ok(1000));
        assert!(size("4X").is_err() && size("M").is_err());
    }
}
